/* plugin-cuda/witness.c -- seal and witnesses.
 *
 * A witness is a reference-counted entry in a process-wide table holding
 * (runtime slot, runtime generation, epoch). Queries go to the runtime; once
 * the runtime is destroyed the witness keeps the final status that destroy
 * stored in it (T4A_OK after a drained stream, T4A_EDEVICEFAULT otherwise).
 *
 * Locks: the table has its own lock (wlock), taken inside a runtime's lock
 * only by destroy (t4a__witness_finalise); no runtime lock is taken while
 * wlock is held. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"
#include "plugin-cuda/witness.h"

typedef struct wslot {
  t4a__hslot h;
  uint32_t refs;
  uint32_t rt_index, rt_gen;
  uint64_t seq;
  int final;              /* status once the runtime is gone; 1 = runtime alive */
  int32_t ordinal;        /* the runtime's device */
  bool timed, time_known; /* of a T4A_RUNTIME_TIMING runtime; its time is known */
  uint64_t time_ns;       /* when its seal completed, since the runtime's creation */
} wslot;

static const t4a__hkind witness_kind = {
    T4A__TAG_WITNESS, "witness", "seal", NULL,
    "the witness was released; keep a reference (witness_retain) while you use it"};

static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER;
static t4a__htable wtable = {.item_size = sizeof(wslot)};

/* Resolves a witness handle (wlock held). */
static int wget(t4a_witness w, const char *what, wslot **out) {
  int rc;
  *out = t4a__htable_find(&wtable, &witness_kind, 0, w.bits, what, &rc);
  return rc;
}

/* A new witness with one reference (wlock not held). */
static int wnew(t4a__runtime *rt, uint64_t seq, t4a_witness *out) {
  pthread_mutex_lock(&wlock);
  uint32_t i;
  int rc = t4a__htable_take(&wtable, "seal", &i);
  if (rc == T4A_OK) {
    wslot *s = t4a__htable_at(&wtable, i);
    s->refs = 1;
    s->rt_index = rt->slot.index;
    s->rt_gen = rt->slot.gen;
    s->seq = seq;
    s->final = 1;
    s->ordinal = rt->ordinal;
    s->timed = rt->done.timing;
    /* a seal with nothing new covers the previous point, whose time may be
     * known already (seq 0, before any work, is the creation: time 0) */
    if (s->timed && (seq == rt->done.time_prev_seq)) {
      s->time_known = true;
      s->time_ns = rt->done.time_prev_ns;
    }
    out->bits = t4a__htable_publish(&wtable, i, &witness_kind, 0);
  }
  pthread_mutex_unlock(&wlock);
  return rc;
}

void t4a__witness_finalise(t4a__runtime *rt, int status) {
  pthread_mutex_lock(&wlock);
  for (uint32_t i = 0; i < wtable.count; i++) {
    wslot *s = t4a__htable_at(&wtable, i);
    if (s->h.live && s->final == 1 && s->rt_index == rt->slot.index && s->rt_gen == rt->slot.gen)
      s->final = s->seq <= rt->done.completed_seq ? T4A_OK : status;
  }
  pthread_mutex_unlock(&wlock);
}

void t4a__witness_time(t4a__runtime *rt, uint64_t seq, uint64_t ns) {
  pthread_mutex_lock(&wlock);
  for (uint32_t i = 0; i < wtable.count; i++) {
    wslot *s = t4a__htable_at(&wtable, i);
    if (s->h.live && s->seq == seq && s->rt_index == rt->slot.index && s->rt_gen == rt->slot.gen) {
      s->time_known = true;
      s->time_ns = ns;
    }
  }
  pthread_mutex_unlock(&wlock);
}

void t4a__witnesses_unload(void) { t4a__htable_fini(&wtable); }

/* What a witness refers to, read under wlock. */
typedef struct wref {
  uint32_t rt_index, rt_gen;
  uint64_t seq;
  int final;
  int32_t ordinal;
} wref;

static int wread(t4a_witness w, const char *what, wref *out) {
  pthread_mutex_lock(&wlock);
  wslot *s = NULL;
  int rc = wget(w, what, &s);
  if (rc == T4A_OK && !s)
    rc = T4A_EINTERNAL; /* never: wget sets s on success (clang's analyzer cannot see it) */
  if (rc == T4A_OK)
    *out = (wref){s->rt_index, s->rt_gen, s->seq, s->final, s->ordinal};
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
  t4a__lock_take(&rt->slot.lock);
  if (rt->slot.alive && rt->slot.gen == ref->rt_gen) {
    *out = rt;
    return T4A_OK;
  }
  t4a__lock_give(&rt->slot.lock);
  /* destroyed after wread: destroy stored the final status first */
  rc = wread(w, what, ref);
  return rc ? rc : ref->final;
}

int t4a__witness_locate(t4a_witness w, const char *what, uint64_t *seq, int32_t *ordinal,
                        t4a__runtime **rt) {
  wref ref = {0}; /* (read on failure too: zeros) */
  int rc = wlock_runtime(w, what, &ref, rt);
  *seq = ref.seq;
  *ordinal = ref.ordinal;
  return rc;
}

bool t4a__witness_live(t4a_witness w) {
  uint32_t i = t4a__h_index(w.bits);
  bool live = false;
  pthread_mutex_lock(&wlock); /* a lookup that records no failure (the caller's is its own) */
  if (t4a__h_tag(w.bits) == T4A__TAG_WITNESS && t4a__h_rt(w.bits) == 0 && i < wtable.count) {
    const t4a__hslot *h = t4a__htable_at(&wtable, i);
    live = h->live && h->gen == t4a__h_gen(w.bits);
  }
  pthread_mutex_unlock(&wlock);
  return live;
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
  if ((rc = t4a__capture_refuse(&rt->cap, "seal", "records a completion event"))) {
    t4a__rt_unlock(rt);
    return rc;
  }
  rt->c.seals++;
  uint64_t seq;
  if ((rc = t4a__seal_epoch(rt, &seq)) == T4A_OK) {
    rc = wnew(rt, seq, out);
    t4a__rt_progress(rt);
  }
  t4a__rt_unlock(rt);
  return rc;
}

/* ---- query and wait -------------------------------------------------------------- */

int t4a__slot_witness_query(t4a_witness w) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  wref ref;
  t4a__runtime *rt;
  int rc = wlock_runtime(w, "witness_query", &ref, &rt);
  if (!rt)
    return rc;
  rc = t4a__epoch_state(rt, ref.seq);
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
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
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
    rc = t4a__epoch_state(rt, ref.seq);
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
    if (rt->slot.due) {
      /* release callbacks became due: they run now, before anything is
       * pinned (one may destroy the runtime, which waits for pins), then
       * look again */
      t4a__rt_unlock(rt);
      continue;
    }
    t4a__event *e = t4a__epoch_event(rt, ref.seq);
    if (deadline == UINT64_MAX && e) {
      /* Block in the driver without holding the runtime, after the spin:
       * a short round trip sees its completion sooner through the polls
       * above than through cuEventSynchronize (measured on the H200 host,
       * bench/t4a_ab, seal+wait after a launch: blocking at once 1.4-2.2%
       * slower than polling first; polling the pinned event alone, without
       * the locks, no better than this). The pin keeps ev alive, even
       * through a destroy after a fault (nothing is due: the unlock runs no
       * callback while the pin is held). */
      t4a__CUevent ev = e->ev;
      e->pins++;
      t4a__rt_unlock(rt);
      t4a__CUresult r = t4a__be.cu.cuEventSynchronize(ev);
      t4a__lock_take(&rt->slot.lock);
      if (rt->slot.alive && rt->slot.gen == ref.rt_gen) { /* else destroyed after a fault */
        t4a__event_unpin(rt, e);
        if (r == T4A__CUDA_SUCCESS) {
          /* seal ref.seq completed: no query to learn it again */
          t4a__rt_progress_known(rt, ref.seq);
          if ((rc = t4a__epoch_state(rt, ref.seq)) != T4A_ENOTREADY) {
            t4a__rt_unlock(rt);
            return rc;
          }
        } else if (r != T4A__CUDA_ERROR_NOT_READY) {
          t4a__rt_cu_fail(rt, r, "witness_wait: the runtime's work failed");
        }
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
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
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
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  pthread_mutex_lock(&wlock);
  wslot *s;
  int rc = wget(w, "witness_release", &s);
  if (rc == T4A_OK && --s->refs == 0)
    t4a__htable_release(&wtable, t4a__h_index(w.bits));
  pthread_mutex_unlock(&wlock);
  return rc;
}

/* ---- GPU-side waits for a witness ------------------------------------------------ */

int t4a__witness_pin(t4a_witness w, const char *what, t4a__wpin *p) {
  memset(p, 0, sizeof *p);
  for (;;) {
    wref ref;
    t4a__runtime *src;
    int rc = wlock_runtime(w, what, &ref, &src);
    if (!src)
      return rc; /* the witness's runtime is gone: completed (OK) or failed */
    rc = t4a__epoch_state(src, ref.seq);
    if (rc == T4A_ENOTREADY && src->slot.due) {
      /* release callbacks became due: they run now, with nothing pinned
       * (one may destroy src, which waits for pins), then look again */
      t4a__rt_unlock(src);
      continue;
    }
    if (rc == T4A_ENOTREADY) {
      /* The pin keeps the event and its record for seq until the wait is
       * enqueued: destroy waits for pins, or after a fault keeps pinned
       * events for good. Only ev is used once src is unlocked. */
      t4a__event *e = t4a__epoch_event(src, ref.seq);
      if (e) {
        e->pins++;
        *p = (t4a__wpin){src, ref.rt_gen, e, e->ev, src->ordinal};
      }
      rc = T4A_OK;
    }
    t4a__rt_unlock(src); /* nothing due when a pin was taken */
    return rc;
  }
}

int t4a__witness_pin_check(const t4a__wpin *p, const char *what) {
  unsigned fault = p->e ? atomic_load(&t4a__be.devices[p->ordinal].fault) : 0;
  if (!fault)
    return T4A_OK;
  /* The witness's device faulted meanwhile: its work never completes, and
   * nothing may wait for it. */
  char buf[32];
  return t4a__fail_native(T4A_EDEVICEFAULT, fault,
                          t4a__cu_name((t4a__CUresult)fault, buf, sizeof buf),
                          "%s: the witness's device %d faulted; its work will never complete, "
                          "nothing was enqueued",
                          what, (int)p->ordinal);
}

void t4a__witness_unpin(t4a__wpin *p) {
  if (!p->e)
    return;
  t4a__lock_take(&p->src->slot.lock);
  if (p->src->slot.alive && p->src->slot.gen == p->gen)
    t4a__event_unpin(p->src, p->e);
  t4a__rt_unlock(p->src);
  p->e = NULL;
}

int t4a__slot_runtime_wait_witness(t4a_runtime h, t4a_witness w) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  t4a__wpin p;
  int rc = t4a__witness_pin(w, "runtime_wait_witness", &p);
  if (rc)
    return rc;
  t4a__runtime *rt;
  if ((rc = t4a__rt_lock(h, "runtime_wait_witness", &rt)) == T4A_OK) {
    if ((rc = t4a__witness_pin_check(&p, "runtime_wait_witness"))) {
      /* the witness's device faulted: nothing enqueued */
    } else if ((rc = t4a__capture_refuse(&rt->cap, "runtime_wait_witness",
                                         "waits for work outside the capture"))) {
      /* refused: nothing enqueued */
    } else if (p.e && rt != p.src) {
      t4a__CUcontext saved;
      if ((rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
        t4a__CUresult r = t4a__be.cu.cuStreamWaitEvent(rt->stream, p.ev, 0);
        t4a__ctx_leave(rt, saved);
        if (r != T4A__CUDA_SUCCESS)
          rc = t4a__rt_cu_fail(rt, r, "runtime_wait_witness: cuStreamWaitEvent failed");
      }
    }
    t4a__rt_unlock(rt);
  }
  t4a__witness_unpin(&p);
  return rc;
}

/* ---- v1.1: time between witnesses ----------------------------------------------- */

typedef struct wtime {
  uint32_t rt_index, rt_gen;
  bool timed, known;
  uint64_t ns;
} wtime;

static int wtime_read(t4a_witness w, wtime *out) {
  pthread_mutex_lock(&wlock);
  wslot *s;
  int rc = wget(w, "witness_elapsed", &s);
  if (rc == T4A_OK)
    *out = (wtime){s->rt_index, s->rt_gen, s->timed, s->time_known, s->time_ns};
  pthread_mutex_unlock(&wlock);
  return rc;
}

/* Makes w's runtime look at its completed seals (which times them). */
static int wtime_progress(t4a_witness w) {
  wref ref;
  t4a__runtime *rt;
  int rc = wlock_runtime(w, "witness_elapsed", &ref, &rt);
  if (!rt)
    return rc;
  rc = t4a__epoch_state(rt, ref.seq);
  t4a__CUresult err = rt->done.time_error;
  t4a__rt_unlock(rt);
  if (rc == T4A_OK && err)
    return t4a__cu_fail(err, "witness_elapsed: timing the runtime's seals failed");
  return rc;
}

int t4a__slot_witness_elapsed(t4a_witness start, t4a_witness end, uint64_t *ns) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  if (!ns)
    return t4a__fail(T4A_EINVAL, "witness_elapsed: ns is NULL; pass a pointer");
  wtime a, b;
  int rc;
  if ((rc = wtime_read(start, &a)) || (rc = wtime_read(end, &b)))
    return rc;
  if (a.rt_index != b.rt_index || a.rt_gen != b.rt_gen)
    return t4a__fail(T4A_EINVAL, "witness_elapsed: the witnesses come from two runtimes; time "
                                 "spans within one runtime");
  if (!a.timed)
    return t4a__fail(T4A_EUNSUPPORTED, "witness_elapsed: the runtime was created without "
                                       "T4A_RUNTIME_TIMING; set it in t4a_runtime_options.flags");
  if ((!a.known && (rc = wtime_progress(start))) || (!b.known && (rc = wtime_progress(end))))
    return rc;
  if ((rc = wtime_read(start, &a)) || (rc = wtime_read(end, &b)))
    return rc;
  if (!a.known || !b.known)
    return T4A_ENOTREADY; /* completed in the stream, not yet timed: later */
  if (b.ns < a.ns)
    return t4a__fail(T4A_EINVAL,
                     "witness_elapsed: end completed %llu ns before start; pass "
                     "them in order",
                     (unsigned long long)(a.ns - b.ns));
  *ns = b.ns - a.ns;
  return T4A_OK;
}
