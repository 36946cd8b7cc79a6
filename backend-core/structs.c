/* backend-core/structs.c -- the struct_size rules of the header's Versioning
 * section, for every backend. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "t4a/gpu_backend_v1.h"

int t4a__check_struct(const void *s, size_t min_size, const char *what) {
  if (!s)
    return t4a__fail(T4A_EINVAL, "%s pointer is NULL; pass a struct with struct_size set", what);
  uint32_t size;
  memcpy(&size, s, sizeof size);
  if (size < min_size)
    return t4a__fail(T4A_EINVAL,
                     "%s.struct_size is %u, below its v1.0 size %zu; set struct_size = "
                     "sizeof(%s)",
                     what, size, min_size, what);
  return T4A_OK;
}

void t4a__fill_struct(void *dst, const void *src, size_t src_size) {
  uint32_t caller;
  memcpy(&caller, dst, sizeof caller);
  uint32_t n = caller < src_size ? caller : (uint32_t)src_size;
  memcpy(dst, src, n);
  memcpy(dst, &n, sizeof n);
}

/* The last_error slot of every backend (backend-core/slots.h): the calling thread's record (each
 * plugin has its own copy of common/), filled as the struct rules say. */
int t4a__slot_last_error(t4a_error_info *info) {
  int rc = t4a__check_struct(info, T4A_ERROR_INFO_V1_0_SIZE, "t4a_error_info");
  if (rc)
    return rc;
  const t4a__error *e = t4a__error_get();
  t4a_error_info out = {.struct_size = sizeof out,
                        .status = e->status,
                        .native_code = e->native_code,
                        .native_name = e->native_name,
                        .message = e->message};
  t4a__fill_struct(info, &out, sizeof out);
  return T4A_OK;
}
