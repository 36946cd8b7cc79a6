/* plugin-cuda/completion.h -- what a runtime knows about the completion of its
 * work: pooled events (events.c), epochs, pending seals and deferred
 * retirement (completion.c). Witnesses and seal() are above this
 * (witness.c).
 *
 * Work enqueued on a runtime belongs to an epoch numbered by the seal that
 * will cover it (next_seq). A seal records one event for its epoch when the
 * epoch has work (`dirty`). Stream order makes completion monotonic: when
 * the event of seal n completed, so did every seal before it; completed_seq
 * tracks that.
 *
 * Retirement is data: an entry says which epoch it waits for and which
 * function releases it. Completion knows nothing of what it releases. */
#ifndef T4A_PLUGIN_CUDA_COMPLETION_H
#define T4A_PLUGIN_CUDA_COMPLETION_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"

typedef struct t4a__runtime t4a__runtime;

/* Devices a runtime can keep events in (for peer copies). */
#define T4A__MAX_DEVICES 64

/* A pooled completion event. While a waiter uses it outside the runtime's
 * lock it is pinned and not recycled; `orphaned` marks one returned to the
 * pool while pinned (the last unpin recycles it). */
typedef struct t4a__event {
  t4a__CUevent ev;
  int32_t dev; /* the device whose primary context it was created in */
  uint32_t pins;
  bool orphaned;
  struct t4a__event *next_free;
} t4a__event;

/* A seal whose completion is not yet observed. */
typedef struct t4a__seal {
  uint64_t seq;
  t4a__event *event;
} t4a__seal;

typedef struct t4a__retire t4a__retire;

/* Releases a retired resource: `final` is false when its epoch completed in
 * normal operation (the owner may recycle it), true when the runtime is
 * being destroyed idle (it must be released now). */
typedef void (*t4a__retire_fn)(t4a__runtime *rt, const t4a__retire *r, bool final);

/* Something released once the work of epoch `seq` completed. */
struct t4a__retire {
  uint64_t seq;
  t4a__retire_fn release;
  void *ptr; /* the resource, and what its owner needs to release it */
  uint64_t bytes;
  uint32_t flags;
};

typedef struct t4a__completion {
  /* seals are numbered 1, 2, ...; work enqueued since the last seal
   * belongs to next_seq */
  uint64_t next_seq, sealed_seq, completed_seq;
  bool dirty;         /* work enqueued since the last seal */
  t4a__seal *pending; /* a ring, oldest first */
  uint32_t pending_head, pending_count, pending_cap;
  t4a__event *free_events[T4A__MAX_DEVICES]; /* by the device of their context */
  uint64_t foreign_ctx;                      /* devices whose primary context we retained */
  t4a__event **events;                       /* every event created, for destroy */
  uint32_t event_count, event_cap;
  t4a__retire *retire;
  uint32_t retire_count, retire_cap;
  uint64_t quarantined; /* retirements kept after a fault */
  /* Timing (T4A_RUNTIME_TIMING): the event of the last completed seal (or
   * the base recorded at creation) is kept, and each seal's time is that
   * one's plus the GPU time between the two events: short spans, so the
   * float milliseconds of cuEventElapsedTime lose nothing. */
  bool timing;
  t4a__event *time_prev;
  uint64_t time_prev_ns, time_prev_seq;
  t4a__CUresult time_error; /* the first failed cuEventElapsedTime, 0 = none */
  /* Told each completed seal's time (lifecycle.c connects witness.c): data,
   * not a call up by name. */
  void (*on_time)(t4a__runtime *rt, uint64_t seq, uint64_t ns);
} t4a__completion;

/* ---- events.c ------------------------------------------------------------ */

/* A pooled event in the context of device `dev` (retaining that device's
 * primary context the first time, when it is not rt's own). */
int t4a__event_get(t4a__runtime *rt, int32_t dev, t4a__event **out);
void t4a__event_put(t4a__runtime *rt, t4a__event *e);
void t4a__event_unpin(t4a__runtime *rt, t4a__event *e);

/* Waits (unlocking rt meanwhile) until no waiter pins an event of rt. */
void t4a__events_wait_unpinned(t4a__runtime *rt);

/* Destroys every event of rt. A pinned event (a waiter outside the lock
 * uses it: only after a fault, when destroy does not wait for pins) is kept
 * for good instead, with the contexts it lives in; returns true then. */
bool t4a__events_fini(t4a__runtime *rt);

/* ---- completion.c -------------------------------------------------------- */

/* Timing runtimes record a base event on the stream (rt's context current). */
int t4a__completion_init(t4a__runtime *rt, bool timing);

/* Polls pending seals in order, advancing completed_seq, and runs due
 * retirements. A failed event makes rt faulted (its status returned). */
int t4a__rt_progress(t4a__runtime *rt);

/* The same, knowing that seal seq completed (a cuEventSynchronize of its
 * event succeeded): by stream order, so did every seal before it; those
 * complete without a query. */
int t4a__rt_progress_known(t4a__runtime *rt, uint64_t seq);

/* Records an event closing the current epoch (when it has work) and
 * returns the epoch the caller's witness covers. */
int t4a__seal_epoch(t4a__runtime *rt, uint64_t *seq);

/* OK when epoch seq completed, T4A_ENOTREADY when not yet, else the fault. */
int t4a__epoch_state(t4a__runtime *rt, uint64_t seq);

/* The event of pending seal seq, or NULL (completed, or never recorded). */
t4a__event *t4a__epoch_event(t4a__runtime *rt, uint64_t seq);

/* The epoch that work enqueued so far belongs to (retire behind it). */
static inline uint64_t t4a__epoch_current(const t4a__completion *c) {
  return c->dirty ? c->next_seq : c->sealed_seq;
}

/* Queues r for release after its epoch completed. */
int t4a__retire_push(t4a__runtime *rt, const t4a__retire *r);

/* Destroy: everything sealed is done (the stream drained). */
void t4a__completion_drained(t4a__runtime *rt);

/* Destroy: idle runs every queued retirement (final) and frees the
 * bookkeeping; after a fault queued retirements are kept (quarantined)
 * with the bookkeeping that lists them. Then the events (t4a__events_fini);
 * returns its result. */
bool t4a__completion_fini(t4a__runtime *rt, bool idle);

#endif
