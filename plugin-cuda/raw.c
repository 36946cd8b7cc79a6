/* plugin-cuda/raw.c -- the raw seam: the driver objects behind a runtime, for
 * consumers' own CUDA work ordered with the runtime's. */
#include "config.h"

#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

int t4a__slot_raw_runtime(t4a_runtime h, t4a_raw_runtime *out) {
  int rc = t4a__check_struct(out, T4A_RAW_RUNTIME_V1_0_SIZE, "t4a_raw_runtime");
  t4a__runtime *rt;
  if (rc || (rc = t4a__rt_lock(h, "raw_runtime", &rt)))
    return rc;
  t4a_raw_runtime r = {.struct_size = sizeof r,
                       .device_ordinal = rt->ordinal,
                       .context = rt->ctx,
                       .stream = rt->stream,
                       .device = rt->dev};
  t4a__rt_unlock(rt);
  t4a__fill_struct(out, &r, sizeof r);
  return T4A_OK;
}

int t4a__slot_raw_begin(t4a_runtime h, t4a_raw_section *section) {
  int rc = t4a__check_struct(section, T4A_RAW_SECTION_V1_0_SIZE, "t4a_raw_section");
  t4a__runtime *rt;
  if (rc || (rc = t4a__rt_lock(h, "raw_begin", &rt)))
    return rc;
  t4a__CUcontext cur = NULL;
  t4a__CUresult r = t4a__be.cu.cuCtxGetCurrent(&cur);
  if (r == T4A__CUDA_SUCCESS && cur != rt->ctx)
    r = t4a__be.cu.cuCtxSetCurrent(rt->ctx);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "raw_begin: making the runtime's context current failed");
  } else {
    section->saved_context = cur;
    section->runtime_bits = h.bits;
  }
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_raw_end(t4a_runtime h, const t4a_raw_section *section) {
  int rc = t4a__check_struct(section, T4A_RAW_SECTION_V1_0_SIZE, "t4a_raw_section");
  t4a__runtime *rt;
  if (rc || (rc = t4a__rt_lock_any(h, "raw_end", &rt)))
    return rc;
  if (section->runtime_bits != h.bits) {
    t4a__rt_unlock(rt);
    return t4a__fail(T4A_EINVAL, "raw_end: the section was begun on another runtime; end it "
                                 "with the runtime given to raw_begin");
  }
  t4a__CUresult r = t4a__be.cu.cuCtxSetCurrent((t4a__CUcontext)section->saved_context);
  t4a__rt_dirty(rt); /* the consumer's work is covered by the next seal */
  rt->c.raw_sections++;
  if (r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "raw_end: restoring the previous context failed");
  t4a__rt_unlock(rt);
  return rc;
}
