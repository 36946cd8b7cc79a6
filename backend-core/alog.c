/* backend-core/alog.c -- the allocation log (see alog.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend-core/alog.h"
#include "common/error.h"

t4a__alog *t4a__alog_new(uint32_t events) {
  uint64_t n = 1;
  while (n < events)
    n <<= 1;
  t4a__alog *l = calloc(1, sizeof *l);
  if (l && !(l->ring = calloc((size_t)n, sizeof *l->ring))) {
    free(l);
    return NULL;
  }
  if (l)
    l->mask = n - 1;
  return l;
}

void t4a__alog_free(t4a__alog *l) {
  if (l)
    free(l->ring);
  free(l);
}

void t4a__alog_note(t4a__alog *l, uint32_t kind, uint32_t detail, uint64_t buffer, uint64_t address,
                    uint64_t bytes, uint64_t held, uint64_t stream_seq) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  t4a_alloc_event *e = &l->ring[l->next & l->mask];
  e->seq = l->next++;
  e->time_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  e->stream_seq = stream_seq;
  e->buffer = buffer;
  e->address = address;
  e->bytes = bytes;
  e->held_bytes = held;
  e->kind = kind;
  e->detail = detail;
}

void t4a__alog_read(const t4a__alog *l, uint64_t from, t4a_alloc_event *out, uint32_t capacity,
                    uint32_t *count, uint64_t *next) {
  uint64_t oldest = l->next > l->mask + 1 ? l->next - (l->mask + 1) : 0;
  uint64_t first = from < oldest ? oldest : from, n = 0;
  for (uint64_t s = first; s < l->next && n < capacity; s++, n++)
    out[n] = l->ring[s & l->mask];
  *count = (uint32_t)n;
  *next = !capacity ? l->next : n ? first + n : from;
}

int t4a__alog_check(const t4a__alog *l, const t4a_alloc_event *events, uint32_t capacity,
                    const uint32_t *count, const uint64_t *next) {
  if (!count || !next || (capacity && !events))
    return t4a__fail(T4A_EINVAL, "alloc_log_read: %s is NULL; pass a pointer",
                     !count  ? "count"
                     : !next ? "next"
                             : "events (with a capacity)");
  if (!l)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "alloc_log_read: the runtime keeps no allocation log; "
                     "create it with T4A_RUNTIME_ALLOC_LOG in its options' flags");
  return T4A_OK;
}
