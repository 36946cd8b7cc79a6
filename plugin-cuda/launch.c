/* plugin-cuda/launch.c -- launching a runtime's functions: dynamic shared
 * memory limits, geometry checked against the device's and the kernel's
 * limits before the driver sees it, the launch itself, and the raw
 * CUfunction. */
#include "config.h"

#include "backend-core/geometry.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

int t4a__slot_function_set_max_dynamic_shared(t4a_runtime h, t4a_function fh, uint32_t bytes) {
  t4a__runtime *rt;
  t4a__function *f;
  int rc = t4a__rt_lock(h, "function_set_max_dynamic_shared", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__function_get(rt, fh, "function_set_max_dynamic_shared", &f)))
    goto out;
  int64_t limit =
      (int64_t)t4a__be.devices[rt->ordinal].info.max_shared_per_block_optin - f->static_shared;
  if ((int64_t)bytes > limit) {
    rc = t4a__fail(T4A_EINVAL,
                   "function_set_max_dynamic_shared: %u bytes exceeds the device's "
                   "opt-in limit of %lld for '%s' (after %d static); ask for less",
                   bytes, (long long)limit, f->name, (int)f->static_shared);
    goto out;
  }
  t4a__CUresult r = t4a__be.cu.cuFuncSetAttribute(
      f->fn, T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
  if (r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "function_set_max_dynamic_shared: cuFuncSetAttribute failed");
  else
    f->max_dynamic = (int32_t)bytes;
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__check_geometry(const t4a__runtime *rt, const t4a__function *f, const uint32_t grid[3],
                        const uint32_t block[3], uint32_t shared, const char *what) {
  t4a__limits l = {&t4a__be.devices[rt->ordinal].info, f->name, f->max_threads, f->max_dynamic};
  return t4a__check_launch(&l, grid, block, shared, what); /* backend-core/geometry.c */
}

int t4a__slot_launch(t4a_runtime h, t4a_function fh, const t4a_launch_config *cfg, void **args) {
  int rc = t4a__check_struct(cfg, T4A_LAUNCH_CONFIG_V1_0_SIZE, "t4a_launch_config");
  t4a__runtime *rt;
  t4a__function *f;
  if (rc || (rc = t4a__rt_lock(h, "launch", &rt)))
    return rc;
  if ((rc = t4a__function_get(rt, fh, "launch", &f)) ||
      (rc = t4a__check_geometry(rt, f, cfg->grid, cfg->block, cfg->shared_bytes, "launch")))
    goto out;
  uint64_t not_counted = 0; /* counted ahead of the call (runtime.h) */
  t4a__rt_ahead ahead = t4a__rt_launch_ahead(rt, &not_counted);
  /* no context made current unless the driver asks for it (runtime.h) */
  t4a__CUresult r;
  T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc,
                              t4a__be.cu.cuLaunchKernel(f->fn, cfg->grid[0], cfg->grid[1],
                                                        cfg->grid[2], cfg->block[0], cfg->block[1],
                                                        cfg->block[2], cfg->shared_bytes,
                                                        rt->stream, args, NULL));
  if (rc == T4A_OK && r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "launch of '%s' failed", f->name);
  if (rc) {
    t4a__rt_count_undo(rt, &ahead);
    goto out;
  }
  if (rt->cap.active)
    t4a__capture_kernel(rt, fh.bits, f->fn, cfg->grid, cfg->block, cfg->shared_bytes);
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_raw_function(t4a_runtime h, t4a_function fh, void **cufunction) {
  if (!cufunction)
    return t4a__fail(T4A_EINVAL, "raw_function: cufunction is NULL; pass a pointer");
  t4a__runtime *rt;
  t4a__function *f;
  int rc = t4a__rt_lock(h, "raw_function", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__function_get(rt, fh, "raw_function", &f)) == T4A_OK)
    *cufunction = f->fn;
  t4a__rt_unlock(rt);
  return rc;
}
