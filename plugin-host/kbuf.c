/* plugin-host/kbuf.c -- the translator's growing texts and arrays (ktr.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-host/ktr.h"

void t4a__kput(buf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void t4a__kputs(buf *b, const char *s) { t4a__kput(b, s, strlen(s)); }

void t4a__kputf(buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    t4a__kput(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void *t4a__kgrow(void *p, size_t *cap, size_t n, size_t each, int *oom) {
  if (n < *cap)
    return p;
  size_t c = *cap ? *cap * 2 : 16;
  void *q = realloc(p, c * each);
  if (!q) {
    *oom = 1;
    return NULL;
  }
  *cap = c;
  return q;
}
