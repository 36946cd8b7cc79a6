/* backend-core/fill.c -- memset's argument checks (see fill.h). */
#include "config.h"

#include "common/checked.h"
#include "common/error.h"
#include "backend-core/fill.h"
#include "t4a/gpu_backend_v1.h"

int t4a__fill_check(uint64_t offset, uint32_t pattern, uint32_t element_size, uint64_t count,
                    uint64_t *bytes) {
  if (element_size != 1 && element_size != 2 && element_size != 4)
    return t4a__fail(T4A_EINVAL, "memset: element_size %u; use 1, 2 or 4", element_size);
  if (offset % element_size)
    return t4a__fail(T4A_EINVAL,
                     "memset: offset %llu is not a multiple of element_size %u; align it",
                     (unsigned long long)offset, element_size);
  if (element_size < 4 && (pattern >> (8 * element_size)))
    return t4a__fail(T4A_EINVAL,
                     "memset: pattern 0x%x does not fit in %u byte(s); pass the "
                     "element's value",
                     pattern, element_size);
  if (!t4a__mul_u64(count, element_size, bytes))
    return t4a__fail(T4A_ERANGE, "memset: %llu elements of %u bytes overflow; fill less",
                     (unsigned long long)count, element_size);
  return T4A_OK;
}

int t4a__fill_range(uint64_t offset, uint64_t bytes, uint64_t size) {
  if (t4a__range_ok(offset, bytes, size))
    return T4A_OK;
  return t4a__fail(T4A_ERANGE,
                   "memset: range [%llu, +%llu) exceeds the buffer's %llu bytes; check the "
                   "offset and count",
                   (unsigned long long)offset, (unsigned long long)bytes, (unsigned long long)size);
}
