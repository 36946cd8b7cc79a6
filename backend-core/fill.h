/* backend-core/fill.h -- memset's argument checks (fill.c), the same for every
 * backend: what a plugin's memset checks before it looks anything up, and
 * the range within the buffer once it found it. */
#ifndef T4A_CORE_FILL_H
#define T4A_CORE_FILL_H

#include <stdint.h>

/* T4A_EINVAL for an element_size other than 1, 2 or 4, an offset not a
 * multiple of it or a pattern wider than it; T4A_ERANGE when count
 * elements overflow. *bytes: the bytes to fill. */
int t4a__fill_check(uint64_t offset, uint32_t pattern, uint32_t element_size, uint64_t count,
                    uint64_t *bytes);

/* T4A_ERANGE unless [offset, +bytes) lies within a buffer of `size` bytes. */
int t4a__fill_range(uint64_t offset, uint64_t bytes, uint64_t size);

#endif
