/* core/structs.c -- the struct_size rules of the header's Versioning
 * section, for every backend. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "core/structs.h"
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
