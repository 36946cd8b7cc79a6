/* common/checked.h -- checked size arithmetic. */
#ifndef T4A_COMMON_CHECKED_H
#define T4A_COMMON_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* *out = a + b; false on overflow. */
static inline bool t4a__add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

/* *out = a * b; false on overflow. */
static inline bool t4a__mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

/* Whether [offset, offset + length) lies inside [0, size). */
static inline bool t4a__range_ok(uint64_t offset, uint64_t length, uint64_t size) {
  uint64_t end;
  return t4a__add_u64(offset, length, &end) && end <= size;
}

/* Whether [a, a + a_len) and [b, b + b_len) share a byte: empty ranges
 * share none. Both ranges must be addressable (their ends do not wrap). */
static inline bool t4a__spans_overlap(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len) {
  return a_len && b_len && a < b + b_len && b < a + a_len;
}

/* Rounds v up to a multiple of the power of two `align`; false on overflow. */
static inline bool t4a__align_up_u64(uint64_t v, uint64_t align, uint64_t *out) {
  uint64_t t;
  if (!t4a__add_u64(v, align - 1, &t))
    return false;
  *out = t & ~(align - 1);
  return true;
}

#endif
