/* backend-core/sizeclass.h -- size classes of cached blocks: 8 per power of
 * two (at most 12.5% slack), at least 256 bytes. Pure functions. */
#ifndef T4A_CORE_SIZECLASS_H
#define T4A_CORE_SIZECLASS_H

#include <stdint.h>

#define T4A__MAX_ALLOC (1ull << 46) /* 64 TiB: beyond any device */
#define T4A__NUM_CLASSES (1u + (46u - 8u) * 8u)

/* Class of a size in (0, T4A__MAX_ALLOC]; *cap is its capacity. */
static inline unsigned t4a__size_class(uint64_t size, uint64_t *cap) {
  if (size <= 256) {
    *cap = 256;
    return 0;
  }
  unsigned k = 63u - (unsigned)__builtin_clzll(size - 1); /* size in (2^k, 2^(k+1)] */
  uint64_t base = 1ull << k, step = base >> 3;
  /* a shift, not a division by step (a power of two): a 64-bit divide is
   * tens of cycles, and every buffer_alloc and free takes this */
  uint64_t j = (size - base + step - 1) >> (k - 3); /* 1..8 */
  *cap = base + j * step;
  return 1u + (k - 8u) * 8u + (unsigned)(j - 1);
}

/* Capacity of a size class (the inverse of t4a__size_class). */
static inline uint64_t t4a__class_cap(unsigned cls) {
  if (cls == 0)
    return 256;
  unsigned k = (cls - 1) / 8 + 8, j = (cls - 1) % 8 + 1;
  return (1ull << k) + (uint64_t)j * ((1ull << k) >> 3);
}

#endif
