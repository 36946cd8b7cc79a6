/* tests/fakecuda/fake_interop.c -- what the fake driver needs for interop
 * (ABI 1.1 external memory, consumer streams, DLPack):
 *
 *  - cuPointerGetAttributes over the fake's allocations (memory type, device
 *    ordinal, allocation range, device pointer), so that the plugin can
 *    vouch for memory it did not allocate; an address no allocation holds
 *    gets the driver's "default NULL values" and success;
 *  - the default stream handles CU_STREAM_LEGACY and CU_STREAM_PER_THREAD,
 *    which consumers (PyTorch's default stream, the DLPack stream protocol)
 *    pass: each stands for one stream per device, made on first use in the
 *    current context (one fake stream serves both: the fake's streams never
 *    synchronise implicitly, like the plugin's non-blocking ones).
 *
 * It reaches the state of fake_runtime.c only through the hooks declared in
 * fake_internal.h (fake_mem_find, fake_current_device) and, for streams,
 * through the exported cuStreamCreate. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

#define OK T4A__CUDA_SUCCESS
#define MAX_DEVICES 8

EXPORT R fake_sym_cuPointerGetAttributes(unsigned int n, t4a__CUpointer_attribute *attributes,
                                         void **data,
                                         t4a__CUdeviceptr ptr) __asm__("cuPointerGetAttributes");
R fake_sym_cuPointerGetAttributes(unsigned int n, t4a__CUpointer_attribute *attributes, void **data,
                                  t4a__CUdeviceptr ptr) {
  FAKE_ENTER("cuPointerGetAttributes");
  if (!n || !attributes || !data)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  int kind = 0, device = -1;
  const void *start = NULL;
  size_t bytes = 0;
  bool known = fake_mem_find((const void *)(uintptr_t)ptr, &kind, &device, &start, &bytes);
  for (unsigned int i = 0; i < n; i++) {
    if (!data[i])
      return T4A__CUDA_ERROR_INVALID_VALUE;
    switch (attributes[i]) {
    case T4A__CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
      unsigned type = !known      ? 0
                      : kind == 1 ? (unsigned)T4A__CU_MEMORYTYPE_DEVICE
                                  : (unsigned)T4A__CU_MEMORYTYPE_HOST;
      memcpy(data[i], &type, sizeof type);
      break;
    }
    case T4A__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
      int ordinal = known && kind == 1 ? device : -2;
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

/* ---- default streams ---------------------------------------------------------------- */

EXPORT R fake_sym_cuStreamCreate(t4a__CUstream *s, unsigned flags) __asm__("cuStreamCreate");

static pthread_mutex_t defaults_lock = PTHREAD_MUTEX_INITIALIZER;
static t4a__CUstream defaults[MAX_DEVICES];

t4a__CUstream fake_stream_alias(t4a__CUstream s) {
  if (s != (t4a__CUstream)(uintptr_t)1 && s != (t4a__CUstream)(uintptr_t)2)
    return s;
  int device = fake_current_device();
  if (device < 0 || device >= MAX_DEVICES)
    return NULL; /* no current context: an invalid handle, as the driver says */
  pthread_mutex_lock(&defaults_lock);
  if (!defaults[device] && fake_sym_cuStreamCreate(&defaults[device], 0) != OK)
    defaults[device] = NULL;
  t4a__CUstream d = defaults[device];
  pthread_mutex_unlock(&defaults_lock);
  return d;
}
