/* plugin-cuda/completion.c -- epochs, pending seals and deferred retirement
 * of one runtime (see completion.h).
 *
 * Retirement: resources whose release must wait for the GPU are queued with
 * the epoch they wait for and released at natural points (alloc/free of
 * host memory, seal, query, wait, destroy): no polling thread. If the
 * runtime faults, queued resources are quarantined: kept and counted, never
 * reused. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "plugin-cuda/runtime.h"

int t4a__completion_init(t4a__runtime *rt, bool timing) {
  memset(&rt->done, 0, sizeof rt->done);
  rt->done.next_seq = 1;
  rt->done.timing = timing;
  if (!timing)
    return T4A_OK;
  if (!t4a__be.cu.cuEventElapsedTime)
    return t4a__fail(T4A_EUNSUPPORTED, "runtime_create: T4A_RUNTIME_TIMING needs "
                                       "cuEventElapsedTime, which the driver lacks; update it");
  t4a__event *base = NULL; /* time 0: seal 0, the runtime's creation */
  int rc = t4a__event_get(rt, rt->ordinal, &base);
  if (rc)
    return rc;
  t4a__CUresult r = t4a__be.cu.cuEventRecord(base->ev, rt->stream);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "runtime_create: recording the timing base event failed");
  rt->done.time_prev = base;
  return T4A_OK;
}

/* A timing runtime's seal completed: its time from the previous one's. */
static void time_seal(t4a__runtime *rt, t4a__seal *s) {
  t4a__completion *d = &rt->done;
  float ms = 0;
  t4a__CUresult r = d->time_error
                        ? d->time_error
                        : t4a__be.cu.cuEventElapsedTime(&ms, d->time_prev->ev, s->event->ev);
  if (r != T4A__CUDA_SUCCESS || ms < 0) {
    if (!d->time_error)
      d->time_error = r ? r : T4A__CUDA_ERROR_UNKNOWN;
    t4a__event_put(rt, s->event);
    return;
  }
  t4a__event_put(rt, d->time_prev);
  d->time_prev = s->event; /* kept for the next span */
  d->time_prev_ns += (uint64_t)((double)ms * 1e6 + 0.5);
  d->time_prev_seq = s->seq;
  if (d->on_time)
    d->on_time(rt, s->seq, d->time_prev_ns);
}

/* ---- pending seals (a ring) ---------------------------------------------- */

static t4a__seal *pending_at(t4a__completion *d, uint32_t i) {
  return &d->pending[(d->pending_head + i) % d->pending_cap];
}

static int pending_push(t4a__completion *d, uint64_t seq, t4a__event *e) {
  if (d->pending_count == d->pending_cap) {
    uint64_t cap;
    size_t bytes;
    if (!t4a__grow(d->pending_cap, 16, UINT32_MAX, sizeof(t4a__seal), &cap, &bytes))
      return t4a__fail(T4A_ENOMEM,
                       "seal: %u seals are pending, the most a runtime tracks; wait "
                       "for some (witness_wait) before sealing again",
                       d->pending_count);
    t4a__seal *p = malloc(bytes);
    if (!p)
      return t4a__fail(T4A_ENOMEM, "seal: out of host memory for pending seals");
    for (uint32_t i = 0; i < d->pending_count; i++)
      p[i] = *pending_at(d, i);
    free(d->pending);
    d->pending = p;
    d->pending_cap = (uint32_t)cap;
    d->pending_head = 0;
  }
  *pending_at(d, d->pending_count++) = (t4a__seal){seq, e};
  return T4A_OK;
}

t4a__event *t4a__epoch_event(t4a__runtime *rt, uint64_t seq) {
  t4a__completion *d = &rt->done;
  for (uint32_t i = 0; i < d->pending_count; i++)
    if (pending_at(d, i)->seq == seq)
      return pending_at(d, i)->event;
  return NULL;
}

/* ---- retirement ------------------------------------------------------------ */

int t4a__retire_push(t4a__runtime *rt, const t4a__retire *r) {
  t4a__completion *d = &rt->done;
  if (d->retire_count == d->retire_cap) {
    uint64_t n;
    size_t bytes;
    if (!t4a__grow(d->retire_cap, 16, UINT32_MAX, sizeof *d->retire, &n, &bytes))
      return t4a__fail(T4A_ENOMEM,
                       "%u releases wait for the GPU, the most a runtime queues; seal "
                       "and wait for the work, then free again",
                       d->retire_count);
    t4a__retire *p = realloc(d->retire, bytes);
    if (!p)
      return t4a__fail(T4A_ENOMEM, "out of host memory for the retirement queue");
    d->retire = p;
    d->retire_cap = (uint32_t)n;
  }
  d->retire[d->retire_count++] = *r;
  return T4A_OK;
}

static void retire_process(t4a__runtime *rt) {
  t4a__completion *d = &rt->done;
  if (rt->fault) {
    d->quarantined = d->retire_count; /* kept, never reused */
    return;
  }
  for (uint32_t i = 0; i < d->retire_count;) {
    if (d->retire[i].seq <= d->completed_seq) {
      t4a__retire r = d->retire[i];
      d->retire[i] = d->retire[--d->retire_count];
      r.release(rt, &r, false);
    } else {
      i++;
    }
  }
}

/* ---- progress ----------------------------------------------------------------- */

/* Seals up to `known` completed (their event was waited for): no query. */
static int progress(t4a__runtime *rt, uint64_t known) {
  t4a__completion *d = &rt->done;
  int rc = T4A_OK;
  while (d->pending_count && !rt->fault) {
    t4a__seal *s = pending_at(d, 0);
    t4a__CUresult r = s->seq <= known ? T4A__CUDA_SUCCESS : t4a__be.cu.cuEventQuery(s->event->ev);
    if (r == T4A__CUDA_ERROR_NOT_READY)
      break;
    if (r != T4A__CUDA_SUCCESS) {
      rc = t4a__rt_cu_fail(rt, r, "the runtime's work failed (seal %llu)",
                           (unsigned long long)s->seq);
      break;
    }
    d->completed_seq = s->seq;
    if (d->timing)
      time_seal(rt, s);
    else
      t4a__event_put(rt, s->event);
    d->pending_head = (d->pending_head + 1) % d->pending_cap;
    d->pending_count--;
  }
  retire_process(rt);
  return rc;
}

int t4a__rt_progress(t4a__runtime *rt) { return progress(rt, 0); }

int t4a__rt_progress_known(t4a__runtime *rt, uint64_t seq) { return progress(rt, seq); }

int t4a__seal_epoch(t4a__runtime *rt, uint64_t *seq) {
  t4a__completion *d = &rt->done;
  if (d->dirty) {
    t4a__event *e = NULL;
    int rc = t4a__event_get(rt, rt->ordinal, &e);
    if (rc)
      return rc;
    /* as a launch: no context made current unless the driver asks for it */
    t4a__CUresult r;
    T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc, t4a__be.cu.cuEventRecord(e->ev, rt->stream));
    if (rc) {
      t4a__event_put(rt, e);
      return rc;
    }
    if (r != T4A__CUDA_SUCCESS) {
      t4a__event_put(rt, e);
      return t4a__rt_cu_fail(rt, r, "seal: cuEventRecord failed");
    }
    if ((rc = pending_push(d, d->next_seq, e))) {
      /* recorded but untracked: wait for it so the event can be reused */
      t4a__be.cu.cuEventSynchronize(e->ev);
      t4a__event_put(rt, e);
      return rc;
    }
    rt->c.seal_events_recorded++;
    d->sealed_seq = d->next_seq++;
    d->dirty = false;
  }
  *seq = d->sealed_seq;
  return T4A_OK;
}

int t4a__epoch_state(t4a__runtime *rt, uint64_t seq) {
  if (seq <= rt->done.completed_seq)
    return T4A_OK;
  int rc = t4a__rt_progress(rt);
  if (seq <= rt->done.completed_seq)
    return T4A_OK;
  if (rt->fault && !rc) { /* name the native fault, whoever saw it first */
    char buf[32];
    rc = t4a__fail_native(T4A_EDEVICEFAULT, rt->fault,
                          t4a__cu_name((t4a__CUresult)rt->fault, buf, sizeof buf),
                          "the runtime faulted before this witness's work completed; destroy "
                          "the runtime");
  }
  /* a poll that failed is the caller's failure (mapped, nothing changed:
   * ask again), not "not ready": an error that persists must end a wait */
  return rc ? rc : T4A_ENOTREADY;
}

/* ---- destroy ------------------------------------------------------------------ */

void t4a__completion_drained(t4a__runtime *rt) {
  t4a__completion *d = &rt->done;
  d->completed_seq = d->sealed_seq; /* everything sealed is done */
  t4a__rt_progress(rt);
}

bool t4a__completion_fini(t4a__runtime *rt, bool idle) {
  t4a__completion *d = &rt->done;
  if (idle) {
    for (uint32_t i = 0; i < d->retire_count; i++)
      d->retire[i].release(rt, &d->retire[i], true);
    free(d->retire);
    d->retire = NULL;
    d->retire_count = d->retire_cap = 0;
  }
  /* after a fault the retirement queue stays with what it lists (quarantine) */
  free(d->pending);
  d->pending = NULL;
  d->pending_count = d->pending_cap = 0;
  return t4a__events_fini(rt);
}
