/* common/str.h -- bounded string copy. */
#ifndef T4A_COMMON_STR_H
#define T4A_COMMON_STR_H

#include <stddef.h>
#include <string.h>

/* Copies src into dst[size], truncating, always NUL-terminating. */
static inline void t4a__strcopy(char *dst, size_t size, const char *src) {
  if (size == 0)
    return;
  size_t n = 0;
  while (n + 1 < size && src[n])
    n++;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Puts a NUL in the last byte of the char array `a`: a string another
 * library filled (a plugin's info struct) may use every byte of its array.
 * Arrays only: a pointer argument does not compile. */
#define t4a__terminate(a)                                                                          \
  ((void)sizeof(char[1 - 2 * __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0]))]),   \
   (a)[sizeof(a) - 1] = '\0')

#endif
