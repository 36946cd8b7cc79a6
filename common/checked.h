/* common/checked.h -- checked size arithmetic. */
#ifndef T4A_COMMON_CHECKED_H
#define T4A_COMMON_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
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

/* The next capacity of a growing array of `size`-byte items that holds
 * `cap` of them: `first` when empty, else twice `cap`, at most `max`;
 * *bytes = that many items' size. False, *next and *bytes untouched, when
 * the array cannot grow: `cap` is `max` already, or the bytes overflow
 * size_t. Every array that doubles grows through this, so that a 32-bit
 * capacity never wraps (doubling 2^31 gives 0, and realloc(p, 0) frees p). */
static inline bool t4a__grow(uint64_t cap, uint64_t first, uint64_t max, uint64_t size,
                             uint64_t *next, size_t *bytes) {
  uint64_t n = cap ? (cap > UINT64_MAX / 2 ? UINT64_MAX : cap * 2) : first;
  if (n > max)
    n = max;
  uint64_t b;
  if (n <= cap || !t4a__mul_u64(n, size, &b) || b > SIZE_MAX)
    return false;
  *next = n;
  *bytes = (size_t)b;
  return true;
}

#endif
