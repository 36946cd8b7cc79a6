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

#endif
