/* plugin-host/witness.c -- seal and the witnesses (one process-wide table).
 *
 * A witness is a position in its runtime's queue and the queue's timeline
 * (a reference on it: the witness outlives the runtime). Ready means the
 * timeline reached the position, so a query is one load. A seal records
 * one completion record when work was enqueued since the previous seal (a
 * timing runtime's: a MARK operation that stores the time it ran) and none
 * when not (the witness covers the previous point, its mark included).
 *
 * Witness handles carry the owner OWNER in their runtime field (the CUDA
 * plugin's carry 0), so that a witness of the other backend never passes
 * for one of ours: T4A_EHANDLE. */
#include "config.h"

#include <pthread.h>

#include "backend-core/slots.h"
#include "plugin-host/host.h"

#define OWNER 0xfffu

typedef struct wit {
  t4a__hslot h;
  t4a__timeline *tl;
  uint64_t seq;
  uint32_t refs;
  t4a__mark *mark; /* timing runtimes */
} wit;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static t4a__htable table = {.item_size = sizeof(wit)};

/* What a witness names, read under the table's lock (tl retained). */
typedef struct seen {
  t4a__timeline *tl;
  uint64_t seq;
  t4a__mark *mark;
} seen;

static int look(t4a_witness w, const char *what, seen *out) {
  int rc = t4a__host_require_init();
  if (rc)
    return rc;
  pthread_mutex_lock(&lock);
  wit *e = t4a__htable_find(&table, &t4a__witness_kind, OWNER, w.bits, what, &rc);
  if (e) {
    out->tl = e->tl;
    out->seq = e->seq;
    out->mark = e->mark;
    t4a__timeline_retain(e->tl);
    if (e->mark)
      t4a__mark_retain(e->mark);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

static void unsee(seen *s) {
  t4a__timeline_release(s->tl);
  t4a__mark_release(s->mark);
}

/* A natural point for the witness's runtime (the header's list: seal,
 * witness_query, witness_wait, witness_elapsed, runtime_wait_witness, for a
 * witness of it, whatever the witness's own state): its releases that
 * became due. Called with no runtime locked, before the call's own failure
 * is recorded (a release callback's calls must not be its last error). */
static void natural_point(t4a__timeline *tl) {
  if (!atomic_load_explicit(&tl->retiring, memory_order_relaxed))
    return;
  t4a_runtime h = {t4a__h_make(T4A__TAG_RUNTIME, tl->rt_index, 0, tl->rt_gen)};
  t4a__hrt *rt;
  t4a__error saved = *t4a__error_get(); /* a destroyed runtime's lookup is no failure */
  if (t4a__hrt_lock(h, "witness", &rt) == T4A_OK) {
    t4a__retire_due(rt);
    t4a__hrt_unlock(rt);
  } else {
    t4a__error_set(&saved);
  }
}

int t4a__slot_seal(t4a_runtime h, t4a_witness *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "seal: out is NULL; pass a pointer");
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "seal", &rt)))
    return rc;
  if ((rc = t4a__hrt_refuse(rt, "seal", "waits for work outside the capture")))
    goto out;
  bool timing = rt->q.tl->timing;
  t4a__mark *m = NULL;
  if (t4a__queue_tail(&rt->q) != rt->sealed && timing) {
    if (!(m = t4a__mark_new())) {
      rc = t4a__fail(T4A_ENOMEM, "seal: out of host memory for the completion record; free memory");
      goto out;
    }
  }
  uint32_t i;
  pthread_mutex_lock(&lock);
  rc = t4a__htable_take(&table, "seal", &i);
  pthread_mutex_unlock(&lock);
  if (rc) {
    t4a__mark_release(m);
    goto out;
  }
  if (t4a__queue_tail(&rt->q) != rt->sealed) { /* work since the last seal: one record */
    if (m) {
      t4a__op op = {.kind = T4A__OP_MARK, .rows = 1};
      /* a reference for the operation (dropped once it ran): last_mark's
       * goes with the next seal, its witnesses' with their release, and the
       * queue may not have reached it by then */
      t4a__mark_retain(m);
      op.u.mark = m;
      if (!t4a__queue_inline(&rt->q, &op, 0))
        t4a__queue_push(&rt->q, &op);
      t4a__mark_release(rt->last_mark);
      rt->last_mark = m;
    }
    rt->sealed = t4a__queue_tail(&rt->q);
    rt->c.seal_events_recorded++;
  }
  rt->c.seals++;
  t4a__hmem_sync(rt);
  pthread_mutex_lock(&lock);
  wit *e = t4a__htable_at(&table, i);
  e->tl = rt->q.tl;
  e->seq = rt->sealed;
  e->refs = 1;
  e->mark = rt->last_mark;
  t4a__timeline_retain(e->tl);
  if (e->mark)
    t4a__mark_retain(e->mark);
  out->bits = t4a__htable_publish(&table, i, &t4a__witness_kind, OWNER);
  pthread_mutex_unlock(&lock);
  t4a__retire_due(rt);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_witness_query(t4a_witness w) {
  seen s;
  int rc = look(w, "witness_query", &s);
  if (rc)
    return rc;
  /* not reached: the fault if any, else not ready (a 0 here is no success) */
  bool reached = t4a__timeline_reached(s.tl, s.seq);
  rc = reached ? T4A_OK : atomic_load(&s.tl->fault);
  natural_point(s.tl);
  unsee(&s);
  if (reached)
    return T4A_OK;
  return rc ? t4a__fail(rc, "witness_query: the work it covers failed (%s); destroy the runtime",
                        t4a__hfault_message())
            : t4a__fail(T4A_ENOTREADY, "witness_query: the covered work has not completed yet; "
                                       "query again or wait (witness_wait)");
}

int t4a__slot_witness_wait(t4a_witness w, uint64_t timeout_ns) {
  seen s;
  int rc = look(w, "witness_wait", &s);
  if (rc)
    return rc;
  rc = t4a__timeline_wait(s.tl, s.seq, timeout_ns);
  natural_point(s.tl);
  unsee(&s);
  if (rc == T4A_ETIMEOUT)
    return t4a__fail(T4A_ETIMEOUT,
                     "witness_wait: the covered work was not complete after %llu ns; wait "
                     "again or longer",
                     (unsigned long long)timeout_ns);
  return rc ? t4a__fail(rc, "witness_wait: the work it covers failed (%s); destroy the runtime",
                        t4a__hfault_message())
            : 0;
}

int t4a__slot_witness_retain(t4a_witness w) {
  int rc = t4a__host_require_init();
  if (rc)
    return rc;
  pthread_mutex_lock(&lock);
  wit *e = t4a__htable_find(&table, &t4a__witness_kind, OWNER, w.bits, "witness_retain", &rc);
  if (e && !t4a__ref_take(&e->refs))
    rc = t4a__fail(T4A_EINVAL, "witness_retain: the witness has 2^32-1 references; release "
                               "some first");
  pthread_mutex_unlock(&lock);
  return rc;
}

int t4a__slot_witness_release(t4a_witness w) {
  t4a__timeline *tl = NULL;
  t4a__mark *m = NULL;
  int rc = t4a__host_require_init();
  if (rc)
    return rc;
  pthread_mutex_lock(&lock);
  wit *e = t4a__htable_find(&table, &t4a__witness_kind, OWNER, w.bits, "witness_release", &rc);
  if (e && --e->refs == 0) {
    tl = e->tl;
    m = e->mark;
    t4a__htable_release(&table, t4a__h_index(w.bits));
  }
  pthread_mutex_unlock(&lock);
  if (tl)
    t4a__timeline_release(tl);
  t4a__mark_release(m);
  return rc;
}

int t4a__slot_runtime_wait_witness(t4a_runtime h, t4a_witness w) {
  t4a__hrt *rt;
  seen s;
  int rc = t4a__host_require_init();
  if (rc || (rc = look(w, "runtime_wait_witness", &s)))
    return rc;
  t4a__mark_release(s.mark);
  if ((rc = t4a__hrt_lock(h, "runtime_wait_witness", &rt))) {
    t4a__timeline_release(s.tl);
    return rc;
  }
  if ((rc = t4a__hrt_refuse(rt, "runtime_wait_witness", "waits for work outside the capture")) ||
      s.tl == rt->q.tl || t4a__timeline_reached(s.tl, s.seq)) {
    /* refused, or its own queue's order covers it, or it completed */
  } else {
    t4a__op op = {.kind = T4A__OP_WAIT, .rows = 1};
    op.u.wait.tl = s.tl; /* a reference of its own goes to the operation */
    op.u.wait.seq = s.seq;
    t4a__timeline_retain(s.tl);
    t4a__queue_push(&rt->q, &op);
  }
  t4a__hrt_unlock(rt);
  if (!rc) /* a natural point of the witness's runtime (rt is unlocked: it may be rt) */
    natural_point(s.tl);
  t4a__timeline_release(s.tl);
  return rc;
}

int t4a__slot_witness_elapsed(t4a_witness start, t4a_witness end, uint64_t *ns) {
  if (!ns)
    return t4a__fail(T4A_EINVAL, "witness_elapsed: ns is NULL; pass a pointer");
  seen a, b;
  int rc = look(start, "witness_elapsed", &a);
  if (rc)
    return rc;
  if ((rc = look(end, "witness_elapsed", &b))) {
    unsee(&a);
    return rc;
  }
  natural_point(a.tl); /* first: a release's calls are never the call's last error */
  if (b.tl != a.tl)
    natural_point(b.tl);
  if (a.tl != b.tl)
    rc = t4a__fail(T4A_EINVAL, "witness_elapsed: the witnesses come from two runtimes; time "
                               "two seals of one runtime");
  else if (!a.tl->timing || !a.mark || !b.mark)
    rc = t4a__fail(T4A_EUNSUPPORTED, "witness_elapsed: the runtime was created without "
                                     "T4A_RUNTIME_TIMING; create it with that flag");
  else if (!t4a__timeline_reached(a.tl, a.seq) || !t4a__timeline_reached(b.tl, b.seq))
    rc = t4a__fail(T4A_ENOTREADY, "witness_elapsed: the work of a witness has not completed "
                                  "yet; wait for both first");
  else if (atomic_load(&b.mark->ns) < atomic_load(&a.mark->ns))
    rc = t4a__fail(T4A_EINVAL, "witness_elapsed: end completed before start; swap them");
  else
    *ns = atomic_load(&b.mark->ns) - atomic_load(&a.mark->ns);
  unsee(&a);
  unsee(&b);
  return rc;
}

/* Plugin teardown: the witnesses the consumer did not release. */
void t4a__hwitnesses_unload(void) {
  for (uint32_t i = 0; i < table.count; i++) {
    wit *e = t4a__htable_at(&table, i);
    if (!e->h.live)
      continue;
    t4a__timeline_release(e->tl);
    t4a__mark_release(e->mark);
  }
  t4a__htable_fini(&table);
}
