/* backend-core/alog.h -- a runtime's allocation log (alog.c), the same for
 * every backend: a ring of the newest t4a_alloc_event records, numbered
 * from 0, written and read under the runtime's lock.
 *
 * A runtime without T4A_RUNTIME_ALLOC_LOG has no log (a NULL pointer): each
 * place that would record tests that pointer and nothing else, so the log
 * costs nothing when it is off. */
#ifndef T4A_CORE_ALOG_H
#define T4A_CORE_ALOG_H

#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

#define T4A__ALOG_DEFAULT 4096u
#define T4A__ALOG_MAX (1u << 20)

typedef struct t4a__alog {
  t4a_alloc_event *ring;
  uint64_t mask; /* ring size - 1 (a power of two) */
  uint64_t next; /* the number of the next event */
  uint64_t hits; /* the runtime's cache_hits at its last allocation event */
} t4a__alog;

/* A log of `events` (normalised options: 1 .. T4A__ALOG_MAX, rounded up to
 * a power of two here); NULL when memory is short. */
t4a__alog *t4a__alog_new(uint32_t events);
void t4a__alog_free(t4a__alog *l);

/* Records one event, the time taken now. */
void t4a__alog_note(t4a__alog *l, uint32_t kind, uint32_t detail, uint64_t buffer, uint64_t address,
                    uint64_t bytes, uint64_t held, uint64_t stream_seq);

/* The kind of an allocation's event: REUSE when the runtime's cache_hits
 * moved since the last allocation event (every served allocation makes
 * one, so the allocation path keeps no flag of its own), else ALLOC. */
static inline uint32_t t4a__alog_alloc_kind(t4a__alog *l, uint64_t cache_hits) {
  uint32_t kind = cache_hits != l->hits ? T4A_ALLOC_EVENT_REUSE : T4A_ALLOC_EVENT_ALLOC;
  l->hits = cache_hits;
  return kind;
}

/* alloc_log_read's copy (see the header), on a log that exists. */
void t4a__alog_read(const t4a__alog *l, uint64_t from, t4a_alloc_event *out, uint32_t capacity,
                    uint32_t *count, uint64_t *next);

/* alloc_log_read's argument checks and its refusal for a runtime without a
 * log (l NULL): T4A_OK when the read may go ahead. */
int t4a__alog_check(const t4a__alog *l, const t4a_alloc_event *events, uint32_t capacity,
                    const uint32_t *count, const uint64_t *next);

#endif
