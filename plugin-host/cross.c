/* plugin-host/cross.c -- copies between runtimes. copy_from_runtime runs on
 * the destination's queue behind a wait for the work the source enqueued
 * before the call (a WAIT operation: the destination's worker waits, the
 * caller does not), and marks the source buffer read until the copy ran
 * (memory.c reuses its block only behind a wait for that). The host has
 * one device, so copy_from_peer and copy_from_peer_via_host have no two
 * devices to copy between: T4A_EUNSUPPORTED, naming copy_from_runtime. */
#include "config.h"

#include "common/checked.h"
#include "backend-core/slots.h"
#include "plugin-host/host.h"

/* Locks both runtimes, lower slot first. One runtime is T4A_EINVAL (a copy
 * within one is copy_d2d, as on CUDA); two handles of one slot are two
 * generations, at most one live: locking the slot twice would deadlock. */
static int lock_two(const char *what, t4a_runtime dh, t4a_runtime sh, t4a__hrt **d, t4a__hrt **s) {
  if (dh.bits == sh.bits)
    return t4a__fail(T4A_EINVAL, "%s: source and destination are one runtime; use copy_d2d", what);
  int rc;
  if (t4a__h_tag(dh.bits) == T4A__TAG_RUNTIME && t4a__h_tag(sh.bits) == T4A__TAG_RUNTIME &&
      t4a__h_rt(dh.bits) == t4a__h_rt(sh.bits)) {
    if ((rc = t4a__hrt_lock(dh, what, d))) /* the destination's error first */
      return rc;
    t4a__hrt_unlock(*d);
    return t4a__fail(T4A_EHANDLE,
                     "%s: the source runtime was destroyed (its slot is reused by the "
                     "destination); pass a live runtime handle",
                     what);
  }
  bool dst_first = t4a__h_rt(dh.bits) < t4a__h_rt(sh.bits);
  if ((rc = t4a__hrt_lock(dst_first ? dh : sh, what, dst_first ? d : s)))
    return rc;
  if ((rc = t4a__hrt_lock(dst_first ? sh : dh, what, dst_first ? s : d)))
    t4a__hrt_unlock(dst_first ? *d : *s);
  return rc;
}

static void unlock_two(t4a__hrt *d, t4a__hrt *s) {
  t4a__hrt_unlock(s);
  t4a__hrt_unlock(d);
}

static int check(t4a__hrt *d, t4a__hrt *s, t4a_buffer db, uint64_t doff, t4a_buffer sb,
                 uint64_t soff, uint64_t n, t4a__hbuf **dbuf, t4a__hbuf **sbuf) {
  const char *what = "copy_from_runtime";
  int rc;
  if ((rc = t4a__hrt_refuse(d, what, "copies between runtimes")) ||
      (rc = t4a__hrt_refuse(s, what, "copies between runtimes")) ||
      (rc = t4a__hbuf_get(d, db, what, dbuf)) || (rc = t4a__hbuf_get(s, sb, what, sbuf)))
    return rc;
  if (!t4a__range_ok(doff, n, (*dbuf)->size) || !t4a__range_ok(soff, n, (*sbuf)->size))
    return t4a__fail(T4A_ERANGE,
                     "copy_from_runtime: %llu bytes at destination offset %llu (of %llu) or "
                     "source offset %llu (of %llu) run past the buffer; shorten the copy",
                     (unsigned long long)n, (unsigned long long)doff,
                     (unsigned long long)(*dbuf)->size, (unsigned long long)soff,
                     (unsigned long long)(*sbuf)->size);
  if (t4a__spans_overlap((uint64_t)(uintptr_t)(*dbuf)->blk.ptr + doff, n,
                         (uint64_t)(uintptr_t)(*sbuf)->blk.ptr + soff, n))
    return t4a__fail(T4A_EINVAL,
                     "copy_from_runtime: the ranges overlap (memory both runtimes wrap); copy "
                     "through a temporary buffer");
  return T4A_OK;
}

int t4a__slot_copy_from_runtime(t4a_runtime dh, t4a_buffer db, uint64_t doff, t4a_runtime sh,
                                t4a_buffer sb, uint64_t soff, uint64_t n) {
  t4a__hrt *d, *s;
  t4a__hbuf *dbuf, *sbuf;
  int rc = t4a__host_require_init();
  if (rc || (rc = lock_two("copy_from_runtime", dh, sh, &d, &s)))
    return rc;
  if ((rc = check(d, s, db, doff, sb, soff, n, &dbuf, &sbuf)) || !n)
    goto out;
  t4a__op op = {.kind = T4A__OP_COPY,
                .dst = dbuf->blk.ptr + doff,
                .src = sbuf->blk.ptr + soff,
                .bytes = n,
                .rows = 1};
  {
    uint64_t after = t4a__queue_tail(&s->q);
    if (!t4a__timeline_reached(s->q.tl, after)) {
      t4a__op w = {.kind = T4A__OP_WAIT, .rows = 1};
      w.u.wait.tl = s->q.tl;
      w.u.wait.seq = after;
      t4a__timeline_retain(s->q.tl); /* the operation's (queue.h) */
      t4a__queue_push(&d->q, &w);
    }
    t4a__hrt_enqueue(d, &op, 0, 0);
    /* the source's block waits for this copy before its reuse; an older
     * reader on another runtime is waited for first (by the source queue) */
    if (sbuf->reader && sbuf->reader != d->q.tl)
      t4a__hbuf_wait_reader(s, sbuf);
    if (!sbuf->reader) {
      t4a__timeline_retain(d->q.tl);
      sbuf->reader = d->q.tl;
    }
    sbuf->reader_seq = t4a__queue_tail(&d->q);
  }
  d->c.copies_cross_runtime++;
  d->c.bytes_d2d += n;
out:
  unlock_two(d, s);
  return rc;
}

static int no_peer(const char *what, t4a_runtime dh, t4a_runtime sh) {
  t4a__hrt *d, *s;
  int rc = t4a__host_require_init();
  if (rc || (rc = lock_two(what, dh, sh, &d, &s)))
    return rc;
  /* refused during a capture of either side first, as every copy between
   * runtimes (the header's graph_begin) */
  if ((rc = t4a__hrt_refuse(d, what, "orders work of another runtime")) ||
      (rc = t4a__hrt_refuse(s, what, "(on the source runtime) is read by another runtime"))) {
    unlock_two(d, s);
    return rc;
  }
  unlock_two(d, s);
  return t4a__fail(T4A_EUNSUPPORTED,
                   "%s: the host backend has one device, so both runtimes are on it and there "
                   "is no peer to copy from; use copy_from_runtime",
                   what);
}

int t4a__slot_copy_from_peer(t4a_runtime dh, t4a_buffer db, uint64_t doff, t4a_runtime sh,
                             t4a_buffer sb, uint64_t soff, uint64_t n) {
  (void)db, (void)doff, (void)sb, (void)soff, (void)n;
  return no_peer("copy_from_peer", dh, sh);
}

int t4a__slot_copy_from_peer_via_host(t4a_runtime dh, t4a_buffer db, uint64_t doff, t4a_runtime sh,
                                      t4a_buffer sb, uint64_t soff, uint64_t n) {
  (void)db, (void)doff, (void)sb, (void)soff, (void)n;
  return no_peer("copy_from_peer_via_host", dh, sh);
}
