/* plugin-cuda/errors.c -- CUresult to t4a status, failure records, and the
 * last_error slot. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugin-cuda/backend.h"
#include "plugin-cuda/cu_names.h"
#include "plugin-cuda/slots.h"

bool t4a__cu_is_fault(t4a__CUresult r) {
  switch (r) {
  case T4A__CUDA_ERROR_ILLEGAL_ADDRESS:
  case T4A__CUDA_ERROR_LAUNCH_TIMEOUT:
  case T4A__CUDA_ERROR_ASSERT:
  case T4A__CUDA_ERROR_HARDWARE_STACK_ERROR:
  case T4A__CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case T4A__CUDA_ERROR_MISALIGNED_ADDRESS:
  case T4A__CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case T4A__CUDA_ERROR_INVALID_PC:
  case T4A__CUDA_ERROR_LAUNCH_FAILED:
  case T4A__CUDA_ERROR_ECC_UNCORRECTABLE:
  case T4A__CUDA_ERROR_NVLINK_UNCORRECTABLE:
  case T4A__CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case T4A__CUDA_ERROR_DEINITIALIZED: return true;
  default: return false;
  }
}

int t4a__cu_status(t4a__CUresult r) {
  if (t4a__cu_is_fault(r))
    return T4A_EDEVICEFAULT;
  switch (r) {
  case T4A__CUDA_SUCCESS: return T4A_OK;
  case T4A__CUDA_ERROR_OUT_OF_MEMORY: return T4A_ENOMEM;
  case T4A__CUDA_ERROR_NOT_READY: return T4A_ENOTREADY;
  case T4A__CUDA_ERROR_INVALID_VALUE:
  case T4A__CUDA_ERROR_INVALID_IMAGE:
  case T4A__CUDA_ERROR_INVALID_PTX:
  case T4A__CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
  case T4A__CUDA_ERROR_INVALID_CLUSTER_SIZE:
  case T4A__CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE: return T4A_EINVAL;
  case T4A__CUDA_ERROR_NOT_FOUND: return T4A_ENOTFOUND;
  case T4A__CUDA_ERROR_NOT_SUPPORTED:
  case T4A__CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
  case T4A__CUDA_ERROR_NO_BINARY_FOR_GPU:
  case T4A__CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case T4A__CUDA_ERROR_TOO_MANY_PEERS: return T4A_EUNSUPPORTED;
  case T4A__CUDA_ERROR_TIMEOUT: return T4A_ETIMEOUT;
  case T4A__CUDA_ERROR_STUB_LIBRARY: return T4A_ESTUBDRIVER;
  case T4A__CUDA_ERROR_NO_DEVICE: return T4A_ENODEVICE;
  case T4A__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case T4A__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return T4A_EDRIVERMISMATCH;
  case T4A__CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: return T4A_EDRIVEROLD;
  default: return T4A_EDRIVER;
  }
}

/* Our own name of r, for a driver that cannot name it; NULL if unknown. */
static const char *known_name(t4a__CUresult r) {
  switch ((unsigned)r) {
#define T4A__CU_NAME(name, value)                                                                  \
  case value: return #name;
    T4A__CURESULT_NAMES(T4A__CU_NAME)
#undef T4A__CU_NAME
  default: return NULL;
  }
}

const char *t4a__cu_name(t4a__CUresult r, char *buf, size_t size) {
  const char *s = NULL;
  if (t4a__be.cu.cuGetErrorName && t4a__be.cu.cuGetErrorName(r, &s) == T4A__CUDA_SUCCESS && s)
    return s;
  if ((s = known_name(r)))
    return s;
  snprintf(buf, size, "CUDA_ERROR_%u", r);
  return buf;
}

int t4a__cu_record(t4a__CUresult r, const char *fmt, ...) {
  char msg[T4A__ERROR_MESSAGE_MAX - 96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char buf[32];
  return t4a__fail_native(t4a__cu_status(r), (int64_t)r, t4a__cu_name(r, buf, sizeof buf), "%s",
                          msg);
}
