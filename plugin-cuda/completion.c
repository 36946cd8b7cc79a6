/* plugin-cuda/completion.c -- seals, witnesses, pooled events and deferred
 * retirement.
 *
 * Work enqueued on a runtime belongs to an epoch numbered by the seal that
 * will cover it (next_seq). seal() records one event for the epoch when it
 * has work (`dirty`), or none when nothing was enqueued since the previous
 * seal. Stream order makes completion monotonic: when the event of seal n
 * completed, so did every seal before it; completed_seq tracks that.
 *
 * A witness is a reference-counted slot in a process-wide table holding
 * (runtime slot, runtime generation, seq). Queries go to the runtime; once
 * the runtime is destroyed the witness keeps the final status that destroy
 * stored in it (T4A_OK after a drained stream, T4A_EDEVICEFAULT otherwise).
 *
 * Retirement: resources whose release must wait for the GPU are queued with
 * the seq they wait for and released at natural points (alloc/free of host
 * memory, seal, query, wait, destroy): no polling thread. If the runtime
 * faults, queued resources are quarantined: kept and counted, never reused. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "plugin-cuda/runtime.h"

/* ---- events -------------------------------------------------------------- */

int t4a__event_get(t4a__runtime *rt, int32_t dev, t4a__event **out) {
  if (dev < 0 || dev >= T4A__MAX_DEVICES || dev >= t4a__be.device_count)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "events for device %d are not supported (at most %d "
                     "devices)",
                     (int)dev, T4A__MAX_DEVICES);
  t4a__event *e = rt->free_events[dev];
  if (e) {
    rt->free_events[dev] = e->next_free;
    *out = e;
    return T4A_OK;
  }
  if (rt->event_count == rt->event_cap) {
    uint32_t cap = rt->event_cap ? rt->event_cap * 2 : 8;
    t4a__event **p = realloc(rt->events, cap * sizeof(void *));
    if (!p)
      return t4a__fail(T4A_ENOMEM, "out of host memory for events");
    rt->events = p;
    rt->event_cap = cap;
  }
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__CUcontext ctx = rt->ctx;
  t4a__CUresult r;
  if (dev != rt->ordinal) { /* an event in another device's context */
    if ((r = cu->cuDevicePrimaryCtxRetain(&ctx, t4a__be.devices[dev].dev)) != T4A__CUDA_SUCCESS)
      return t4a__rt_cu_fail(rt, r, "retaining device %d's context failed", (int)dev);
    if (rt->foreign_ctx & (1ull << dev))
      cu->cuDevicePrimaryCtxRelease(t4a__be.devices[dev].dev); /* already held once */
    rt->foreign_ctx |= 1ull << dev;
  }
  e = calloc(1, sizeof *e);
  if (!e)
    return t4a__fail(T4A_ENOMEM, "out of host memory for events");
  t4a__CUcontext saved = NULL;
  r = cu->cuCtxGetCurrent(&saved);
  if (r == T4A__CUDA_SUCCESS && saved != ctx)
    r = cu->cuCtxSetCurrent(ctx);
  if (r == T4A__CUDA_SUCCESS)
    r = cu->cuEventCreate(&e->ev, T4A__CU_EVENT_DISABLE_TIMING);
  if (saved && saved != ctx)
    cu->cuCtxSetCurrent(saved);
  if (r != T4A__CUDA_SUCCESS) {
    free(e);
    return t4a__rt_cu_fail(rt, r, "cuEventCreate failed; free resources and retry");
  }
  e->dev = dev;
  rt->events[rt->event_count++] = e;
  rt->c.events_created++;
  *out = e;
  return T4A_OK;
}

void t4a__event_put(t4a__runtime *rt, t4a__event *e) {
  if (e->pins) {
    e->orphaned = true; /* the last unpin recycles it */
    return;
  }
  e->orphaned = false;
  e->next_free = rt->free_events[e->dev];
  rt->free_events[e->dev] = e;
}

#define event_get(rt, out) t4a__event_get((rt), (rt)->ordinal, (out))
#define event_put t4a__event_put

static void event_unpin(t4a__runtime *rt, t4a__event *e) {
  if (--e->pins == 0 && e->orphaned)
    event_put(rt, e);
}

bool t4a__events_release_all(t4a__runtime *rt) {
  bool kept = false;
  for (uint32_t i = 0; i < rt->event_count; i++) {
    t4a__event *e = rt->events[i];
    if (e->pins) {
      /* A waiter outside the lock still uses it (after a fault destroy
       * does not wait for pins): keep the event, and the contexts it lives
       * in, for good. */
      t4a__keep(e);
      kept = true;
      continue;
    }
    t4a__released(rt, t4a__be.cu.cuEventDestroy(e->ev), e->ev, "cuEventDestroy");
    free(e);
  }
  rt->event_count = 0;
  memset(rt->free_events, 0, sizeof rt->free_events);
  rt->pending_count = 0;
  for (int d = 0; d < T4A__MAX_DEVICES; d++)
    if ((rt->foreign_ctx & (1ull << d)) && !kept)
      t4a__released(rt, t4a__be.cu.cuDevicePrimaryCtxRelease(t4a__be.devices[d].dev), NULL,
                    "cuDevicePrimaryCtxRelease");
  rt->foreign_ctx = 0;
  return kept;
}

/* ---- pending seals (a ring) ---------------------------------------------- */

static t4a__seal *pending_at(t4a__runtime *rt, uint32_t i) {
  return &rt->pending[(rt->pending_head + i) % rt->pending_cap];
}

static int pending_push(t4a__runtime *rt, uint64_t seq, t4a__event *e) {
  if (rt->pending_count == rt->pending_cap) {
    uint32_t cap = rt->pending_cap ? rt->pending_cap * 2 : 16;
    t4a__seal *p = malloc(cap * sizeof *p);
    if (!p)
      return t4a__fail(T4A_ENOMEM, "seal: out of host memory for pending seals");
    for (uint32_t i = 0; i < rt->pending_count; i++)
      p[i] = *pending_at(rt, i);
    free(rt->pending);
    rt->pending = p;
    rt->pending_cap = cap;
    rt->pending_head = 0;
  }
  *pending_at(rt, rt->pending_count++) = (t4a__seal){seq, e};
  return T4A_OK;
}

/* The pending seal with this seq, or NULL. */
static t4a__seal *pending_find(t4a__runtime *rt, uint64_t seq) {
  for (uint32_t i = 0; i < rt->pending_count; i++)
    if (pending_at(rt, i)->seq == seq)
      return pending_at(rt, i);
  return NULL;
}

/* ---- retirement ------------------------------------------------------------ */

static int retire_push(t4a__runtime *rt, t4a__retire r) {
  if (rt->retire_count == rt->retire_cap) {
    uint32_t n = rt->retire_cap ? rt->retire_cap * 2 : 16;
    t4a__retire *p = realloc(rt->retire, n * sizeof *p);
    if (!p)
      return t4a__fail(T4A_ENOMEM, "out of host memory for the retirement queue");
    rt->retire = p;
    rt->retire_cap = n;
  }
  rt->retire[rt->retire_count++] = r;
  return T4A_OK;
}

int t4a__retire_host(t4a__runtime *rt, uint64_t seq, void *ptr, uint64_t cap, uint32_t flags) {
  return retire_push(rt, (t4a__retire){seq, ptr, cap, flags, NULL});
}

int t4a__retire_module(t4a__runtime *rt, uint64_t seq, t4a__CUmodule mod) {
  return retire_push(rt, (t4a__retire){seq, NULL, 0, 0, mod});
}

/* Unloads a module (cuModuleUnload acts on the current context). */
static void unload(t4a__runtime *rt, t4a__CUmodule mod) {
  t4a__CUcontext saved;
  if (t4a__ctx_enter(rt, &saved) == T4A_OK) {
    t4a__be.cu.cuModuleUnload(mod);
    t4a__ctx_leave(rt, saved);
  }
}

static void retire_process(t4a__runtime *rt) {
  if (rt->fault) {
    rt->quarantined = rt->retire_count; /* kept, never reused */
    return;
  }
  for (uint32_t i = 0; i < rt->retire_count;) {
    t4a__retire *r = &rt->retire[i];
    if (r->seq <= rt->completed_seq) {
      if (r->host)
        t4a__pinned_release(rt, r->host, r->cap, r->flags);
      else
        unload(rt, r->module);
      *r = rt->retire[--rt->retire_count];
    } else {
      i++;
    }
  }
}

/* ---- progress ----------------------------------------------------------------- */

int t4a__rt_progress(t4a__runtime *rt) {
  int rc = T4A_OK;
  while (rt->pending_count && !rt->fault) {
    t4a__seal *s = pending_at(rt, 0);
    t4a__CUresult r = t4a__be.cu.cuEventQuery(s->event->ev);
    if (r == T4A__CUDA_ERROR_NOT_READY)
      break;
    if (r != T4A__CUDA_SUCCESS) {
      rc = t4a__rt_cu_fail(rt, r, "the runtime's work failed (seal %llu)",
                           (unsigned long long)s->seq);
      break;
    }
    rt->completed_seq = s->seq;
    event_put(rt, s->event);
    rt->pending_head = (rt->pending_head + 1) % rt->pending_cap;
    rt->pending_count--;
  }
  if (!rt->pending_count && rt->completed_seq < rt->sealed_seq)
    rt->completed_seq = rt->sealed_seq; /* set by destroy's drain */
  retire_process(rt);
  return rc;
}

/* ---- the witness table ------------------------------------------------------- */

typedef struct wslot {
  uint32_t gen;
  uint32_t next_free;
  uint32_t refs; /* 0 = free */
  uint32_t rt_index, rt_gen;
  uint64_t seq;
  int final; /* status once the runtime is gone; 1 = runtime alive */
} wslot;

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static wslot *wslots;
static uint32_t wcount, wcap, wfree;

/* Resolves a witness handle (wlock held). */
static int wget(t4a_witness w, const char *what, wslot **out) {
  if (t4a__h_tag(w.bits) != T4A__TAG_WITNESS)
    return t4a__fail(w.bits ? T4A_EHANDLE : T4A_EINVAL,
                     "%s: %s is not a witness handle; pass one from seal", what,
                     w.bits ? "the handle" : "a null handle");
  uint32_t i = t4a__h_index(w.bits);
  if (i >= wcount || !wslots[i].refs || wslots[i].gen != t4a__h_gen(w.bits))
    return t4a__fail(T4A_EHANDLE,
                     "%s: the witness was released; keep a reference "
                     "(witness_retain) while you use it",
                     what);
  *out = &wslots[i];
  return T4A_OK;
}

/* A new witness with one reference (wlock not held). */
static int wnew(t4a__runtime *rt, uint64_t seq, t4a_witness *out) {
  pthread_mutex_lock(&wlock);
  uint32_t i;
  if (wfree) {
    i = wfree - 1;
    wfree = wslots[i].next_free;
  } else {
    if (wcount == wcap) {
      uint32_t cap = wcap ? wcap * 2 : 64;
      wslot *p = cap <= T4A__MAX_INDEX ? realloc(wslots, cap * sizeof *p) : NULL;
      if (!p) {
        pthread_mutex_unlock(&wlock);
        return t4a__fail(T4A_ENOMEM, "seal: too many live witnesses or out of host memory; "
                                     "release witnesses you no longer need");
      }
      wslots = p;
      wcap = cap;
    }
    i = wcount;
    wslots[wcount++] = (wslot){0};
  }
  wslot *s = &wslots[i];
  s->gen = t4a__gen_next(s->gen);
  s->refs = 1;
  s->rt_index = rt->index;
  s->rt_gen = rt->gen;
  s->seq = seq;
  s->final = 1;
  out->bits = t4a__h_make(T4A__TAG_WITNESS, 0, i, s->gen);
  pthread_mutex_unlock(&wlock);
  return T4A_OK;
}

void t4a__witness_finalise(t4a__runtime *rt, int status) {
  pthread_mutex_lock(&wlock);
  for (uint32_t i = 0; i < wcount; i++) {
    wslot *s = &wslots[i];
    if (s->refs && s->final == 1 && s->rt_index == rt->index && s->rt_gen == rt->gen)
      s->final = s->seq <= rt->completed_seq ? T4A_OK : status;
  }
  pthread_mutex_unlock(&wlock);
}

/* What a witness refers to, read under wlock. */
typedef struct wref {
  uint32_t rt_index, rt_gen;
  uint64_t seq;
  int final;
} wref;

static int wread(t4a_witness w, const char *what, wref *out) {
  pthread_mutex_lock(&wlock);
  wslot *s;
  int rc = wget(w, what, &s);
  if (rc == T4A_OK)
    *out = (wref){s->rt_index, s->rt_gen, s->seq, s->final};
  pthread_mutex_unlock(&wlock);
  return rc;
}

/* Locks the witness's runtime if it is still alive. Returns T4A_OK with
 * *rt set, or the witness's final status with *rt NULL. */
static int wlock_runtime(t4a_witness w, const char *what, wref *ref, t4a__runtime **out) {
  *out = NULL;
  int rc = wread(w, what, ref);
  if (rc)
    return rc;
  if (ref->final != 1)
    return ref->final;
  t4a__runtime *rt = t4a__rt_slot(ref->rt_index);
  pthread_mutex_lock(&rt->lock);
  if (rt->alive && rt->gen == ref->rt_gen) {
    *out = rt;
    return T4A_OK;
  }
  pthread_mutex_unlock(&rt->lock);
  /* destroyed after wread: destroy stored the final status first */
  rc = wread(w, what, ref);
  return rc ? rc : ref->final;
}

/* ---- seal --------------------------------------------------------------------- */

int t4a__slot_seal(t4a_runtime h, t4a_witness *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "seal: out is NULL; pass a pointer");
  out->bits = 0;
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "seal", &rt);
  if (rc)
    return rc;
  rt->c.seals++;
  if (rt->dirty) {
    t4a__event *e = NULL;
    t4a__CUcontext saved;
    if ((rc = event_get(rt, &e)))
      goto out;
    if ((rc = t4a__ctx_enter(rt, &saved))) {
      event_put(rt, e);
      goto out;
    }
    t4a__CUresult r = t4a__be.cu.cuEventRecord(e->ev, rt->stream);
    t4a__ctx_leave(rt, saved);
    if (r != T4A__CUDA_SUCCESS) {
      event_put(rt, e);
      rc = t4a__rt_cu_fail(rt, r, "seal: cuEventRecord failed");
      goto out;
    }
    if ((rc = pending_push(rt, rt->next_seq, e))) {
      /* recorded but untracked: wait for it so the event can be reused */
      t4a__be.cu.cuEventSynchronize(e->ev);
      event_put(rt, e);
      goto out;
    }
    rt->c.seal_events_recorded++;
    rt->sealed_seq = rt->next_seq++;
    rt->dirty = false;
  }
  rc = wnew(rt, rt->sealed_seq, out);
  t4a__rt_progress(rt);
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* ---- query and wait -------------------------------------------------------------- */

/* The witness's state with its runtime locked: OK, ENOTREADY or a fault. */
static int state_locked(t4a__runtime *rt, uint64_t seq) {
  if (seq <= rt->completed_seq)
    return T4A_OK;
  int rc = t4a__rt_progress(rt);
  if (seq <= rt->completed_seq)
    return T4A_OK;
  if (rt->fault)
    return rc ? rc
              : t4a__fail(T4A_EDEVICEFAULT, "the runtime faulted before this witness's work "
                                            "completed; destroy the runtime");
  return T4A_ENOTREADY;
}

int t4a__slot_witness_query(t4a_witness w) {
  wref ref;
  t4a__runtime *rt;
  int rc = wlock_runtime(w, "witness_query", &ref, &rt);
  if (!rt)
    return rc;
  rc = state_locked(rt, ref.seq);
  t4a__rt_unlock(rt);
  return rc;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define SPIN_NS 20000ull /* busy-poll this long before blocking */

int t4a__slot_witness_wait(t4a_witness w, uint64_t timeout_ns) {
  uint64_t start = now_ns();
  uint64_t deadline = timeout_ns == T4A_WAIT_FOREVER || start + timeout_ns < start
                          ? UINT64_MAX
                          : start + timeout_ns;
  uint64_t sleep_ns = 2000;
  for (;;) {
    wref ref;
    t4a__runtime *rt;
    int rc = wlock_runtime(w, "witness_wait", &ref, &rt);
    if (!rt)
      return rc;
    rc = state_locked(rt, ref.seq);
    if (rc != T4A_ENOTREADY) {
      t4a__rt_unlock(rt);
      return rc;
    }
    uint64_t now = now_ns();
    if (now >= deadline) {
      t4a__rt_unlock(rt);
      return t4a__fail(T4A_ETIMEOUT, "witness_wait: not complete after %llu ns; wait longer",
                       (unsigned long long)timeout_ns);
    }
    if (now - start < SPIN_NS) { /* spin: a short round trip should not sleep */
      t4a__rt_unlock(rt);
      continue;
    }
    t4a__seal *s = pending_find(rt, ref.seq);
    if (deadline == UINT64_MAX && s) {
      /* block in the driver without holding the runtime */
      t4a__event *e = s->event;
      t4a__CUevent ev = e->ev; /* the pin keeps ev alive, even through a destroy */
      e->pins++;
      t4a__rt_unlock(rt);
      t4a__CUresult r = t4a__be.cu.cuEventSynchronize(ev);
      pthread_mutex_lock(&rt->lock);
      if (rt->alive && rt->gen == ref.rt_gen) { /* else destroyed after a fault */
        event_unpin(rt, e);
        if (r != T4A__CUDA_SUCCESS && r != T4A__CUDA_ERROR_NOT_READY)
          t4a__rt_cu_fail(rt, r, "witness_wait: the runtime's work failed");
      }
      t4a__rt_unlock(rt);
      continue; /* re-evaluate under the lock */
    }
    t4a__rt_unlock(rt);
    uint64_t left = deadline - now;
    struct timespec ts = {0, (long)(sleep_ns < left ? sleep_ns : left)};
    nanosleep(&ts, NULL);
    sleep_ns = sleep_ns < 1000000 ? sleep_ns * 2 : sleep_ns; /* back off to 1 ms */
  }
}

int t4a__slot_witness_retain(t4a_witness w) {
  pthread_mutex_lock(&wlock);
  wslot *s;
  int rc = wget(w, "witness_retain", &s);
  if (rc == T4A_OK && !t4a__ref_take(&s->refs))
    rc = t4a__fail(T4A_EINVAL,
                   "witness_retain: the witness holds %u references, the most it "
                   "can; release some first",
                   s->refs);
  pthread_mutex_unlock(&wlock);
  return rc;
}

int t4a__slot_witness_release(t4a_witness w) {
  pthread_mutex_lock(&wlock);
  wslot *s;
  int rc = wget(w, "witness_release", &s);
  if (rc == T4A_OK && --s->refs == 0) {
    s->gen = t4a__gen_next(s->gen);
    s->next_free = wfree;
    wfree = (uint32_t)(s - wslots) + 1;
  }
  pthread_mutex_unlock(&wlock);
  return rc;
}

int t4a__slot_runtime_wait_witness(t4a_runtime h, t4a_witness w) {
  wref ref;
  t4a__runtime *src;
  int rc = wlock_runtime(w, "runtime_wait_witness", &ref, &src);
  if (!src && rc != T4A_OK)
    return rc; /* the witness's runtime is gone and its work failed */
  t4a__event *e = NULL;
  t4a__CUevent ev = NULL;
  int32_t src_ordinal = -1;
  if (src) {
    rc = state_locked(src, ref.seq);
    if (rc == T4A_ENOTREADY) {
      t4a__seal *s = pending_find(src, ref.seq);
      if (s) {
        /* The pin keeps the event and its record for seq until the wait is
         * enqueued: destroy waits for pins, or after a fault keeps pinned
         * events for good. Only ev is used once src is unlocked. */
        e = s->event;
        e->pins++;
        ev = e->ev;
        src_ordinal = src->ordinal;
      }
      rc = T4A_OK;
    }
    t4a__rt_unlock(src);
    if (rc)
      return rc;
  }
  t4a__runtime *rt;
  if ((rc = t4a__rt_lock(h, "runtime_wait_witness", &rt)) == T4A_OK) {
    unsigned src_fault = e ? atomic_load(&t4a__be.devices[src_ordinal].fault) : 0;
    if (src_fault) {
      /* The witness's device faulted while we waited for rt: its work
       * never completes, and rt must not wait for it. */
      char buf[32];
      rc = t4a__fail_native(T4A_EDEVICEFAULT, src_fault,
                            t4a__cu_name((t4a__CUresult)src_fault, buf, sizeof buf),
                            "runtime_wait_witness: the witness's device %d faulted; its work "
                            "will never complete, nothing was enqueued",
                            (int)src_ordinal);
    } else if (e && rt != src) {
      t4a__CUcontext saved;
      if ((rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
        t4a__CUresult r = t4a__be.cu.cuStreamWaitEvent(rt->stream, ev, 0);
        t4a__ctx_leave(rt, saved);
        if (r != T4A__CUDA_SUCCESS)
          rc = t4a__rt_cu_fail(rt, r, "runtime_wait_witness: cuStreamWaitEvent failed");
      }
    }
    t4a__rt_unlock(rt);
  }
  if (e) {
    pthread_mutex_lock(&src->lock);
    if (src->alive && src->gen == ref.rt_gen)
      event_unpin(src, e);
    t4a__rt_unlock(src);
  }
  return rc;
}

/* The plugin is being unloaded: witnesses the consumer did not release go
 * with it. */
__attribute__((destructor)) static void t4a__witness_unload(void) {
  free(wslots);
  wslots = NULL;
  wcount = wcap = wfree = 0;
}
