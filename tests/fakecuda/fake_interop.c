/* tests/fakecuda/fake_interop.c -- what the interop slots (ABI 1.1 external
 * memory, consumer streams, DLPack) meet in the driver:
 *
 *  - cuPointerGetAttributes over the fake's allocations (memory type, device
 *    ordinal, allocation range, device pointer), so that the plugin can
 *    vouch for memory it did not allocate; an address no live allocation
 *    holds gets the driver's "default NULL values" and success, as CUDA
 *    documents for memory it does not know;
 *  - the default stream handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD,
 *    which consumers pass (PyTorch's default stream, the DLPack stream
 *    protocol): each stands for one stream per primary context, made on
 *    first use (one fake stream serves both: the fake's streams never
 *    synchronise implicitly, like the plugin's non-blocking ones).
 *    fake_stream_get (fake_stream.c) resolves them for every stream call.
 *
 * As everywhere in the fake, G guards the state. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

/* ---- pointer attributes -------------------------------------------------------------- */

R fake_sym_cuPointerGetAttributes(unsigned int n, t4a__CUpointer_attribute *attributes, void **data,
                                  t4a__CUdeviceptr ptr) {
  FAKE_ENTER("cuPointerGetAttributes");
  if (!n || !attributes || !data)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  const void *p = (const void *)(uintptr_t)ptr;
  LOCK();
  alloc *a = fake_alloc_find(p, 1, MEM_DEVICE);
  if (!a)
    a = fake_alloc_find(p, 1, MEM_HOST);
  if (a && a->released)
    a = NULL; /* freed: the driver no longer knows it */
  bool known = a != NULL;
  int kind = known ? a->kind : 0, device = known ? a->device : -1;
  const void *start = known ? a->base + FAKE_GUARD : NULL;
  size_t bytes = known ? a->bytes : 0;
  UNLOCK();
  for (unsigned int i = 0; i < n; i++) {
    if (!data[i])
      return T4A__CUDA_ERROR_INVALID_VALUE;
    switch (attributes[i]) {
    case T4A__CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
      unsigned type = !known               ? 0
                      : kind == MEM_DEVICE ? (unsigned)T4A__CU_MEMORYTYPE_DEVICE
                                           : (unsigned)T4A__CU_MEMORYTYPE_HOST;
      memcpy(data[i], &type, sizeof type);
      break;
    }
    case T4A__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
      int ordinal = known && kind == MEM_DEVICE ? device : -2;
      memcpy(data[i], &ordinal, sizeof ordinal);
      break;
    }
    case T4A__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
      t4a__CUdeviceptr v = known ? (t4a__CUdeviceptr)(uintptr_t)start : 0;
      memcpy(data[i], &v, sizeof v);
      break;
    }
    case T4A__CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
      size_t v = known ? bytes : 0;
      memcpy(data[i], &v, sizeof v);
      break;
    }
    case T4A__CU_POINTER_ATTRIBUTE_DEVICE_POINTER: { /* unified addressing: the same value */
      t4a__CUdeviceptr v = known ? ptr : 0;
      memcpy(data[i], &v, sizeof v);
      break;
    }
    default: return T4A__CUDA_ERROR_INVALID_VALUE;
    }
  }
  return OK;
}

/* ---- default streams ----------------------------------------------------------------- */

static t4a__CUstream defaults[MAX_DEVICES]; /* G */

bool fake_stream_is_default(t4a__CUstream s) {
  return s == (t4a__CUstream)(uintptr_t)1 || s == (t4a__CUstream)(uintptr_t)2;
}

R fake_stream_default(t4a__CUstream *s, const char *what) {
  struct CUctx_st *ctx = fake_current();
  if (!ctx || ctx->refs == 0)
    return fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT,
                       "%s: a default stream handle (%p) with no current, live context", what,
                       (void *)*s);
  int d = ctx->device;
  t4a__CUstream old = defaults[d];
  if (!old || !fake_ctx_alive(ctx, old->o.ctx_epoch)) { /* first use, or the context was remade */
    t4a__CUstream n = fake_stream_new(ctx, 0, 0);
    if (!n)
      return T4A__CUDA_ERROR_OUT_OF_MEMORY;
    if (old) { /* it went with its context: its worker ends once drained */
      old->o.dead = true;
      old->stop = true;
      pthread_cond_broadcast(&fake_changed);
    }
    defaults[d] = n;
  }
  *s = defaults[d];
  return OK;
}
