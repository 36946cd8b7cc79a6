/* plugin-cuda/cross.c -- copies between runtimes: on one device, between
 * devices through peer access, and between devices through host memory.
 *
 * Ordering: the copy runs on the destination's stream after all work the
 * source runtime enqueued before the call: an event recorded on the source's
 * stream, waited on by the destination's stream (GPU-side, the host never
 * blocks). Retirement: an event of the source runtime, recorded on the
 * destination's stream after the copy, becomes the source buffer's "reader";
 * before the source block is reused (buffer_free) or released (destroy), the
 * source's stream waits on it. The two runtimes are locked in index order. */
#include "config.h"

#include "common/checked.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

typedef struct pair {
  t4a__runtime *dst, *src;
  t4a__buffer *d, *s;
} pair;

static void unlock_pair(pair *p) {
  t4a__rt_unlock(p->dst);
  t4a__rt_unlock(p->src);
}

/* Locks both runtimes (lower slot first) and resolves both ranges. */
static int lock_pair(const char *what, t4a_runtime dh, t4a_buffer db, uint64_t doff, t4a_runtime sh,
                     t4a_buffer sb, uint64_t soff, uint64_t n, pair *p) {
  if (dh.bits == sh.bits)
    return t4a__fail(T4A_EINVAL, "%s: source and destination are one runtime; use copy_d2d", what);
  if (t4a__h_tag(dh.bits) == T4A__TAG_RUNTIME && t4a__h_tag(sh.bits) == T4A__TAG_RUNTIME &&
      t4a__h_rt(dh.bits) == t4a__h_rt(sh.bits)) {
    /* one slot, two generations: at most one handle is live, and locking
     * the slot twice would deadlock. Report the destination's error, or the
     * source as stale. */
    t4a__runtime *rt;
    int rc = t4a__rt_lock(dh, what, &rt);
    if (rc)
      return rc;
    t4a__rt_unlock(rt);
    return t4a__fail(T4A_EHANDLE,
                     "%s: the source runtime was destroyed (its slot is reused by the "
                     "destination); pass a live runtime handle",
                     what);
  }
  bool dst_first = t4a__h_rt(dh.bits) < t4a__h_rt(sh.bits);
  t4a__runtime *first, *second;
  int rc = t4a__rt_lock(dst_first ? dh : sh, what, &first);
  if (rc)
    return rc;
  if ((rc = t4a__rt_lock(dst_first ? sh : dh, what, &second))) {
    t4a__rt_unlock(first);
    return rc;
  }
  p->dst = dst_first ? first : second;
  p->src = dst_first ? second : first;
  if ((rc = t4a__buffer_get(p->dst, db, what, &p->d)) ||
      (rc = t4a__buffer_get(p->src, sb, what, &p->s))) {
    unlock_pair(p);
    return rc;
  }
  const char *bad = !t4a__range_ok(doff, n, p->d->size)   ? "destination"
                    : !t4a__range_ok(soff, n, p->s->size) ? "source"
                                                          : NULL;
  int refused = t4a__capture_refuse(&p->dst->cap, what, "orders work of another runtime");
  if (!refused)
    refused = t4a__capture_refuse(&p->src->cap, what, "(on the source runtime) records an event");
  if (refused) {
    unlock_pair(p);
    return refused;
  }
  if (bad) {
    uint64_t off = bad[0] == 'd' ? doff : soff, size = bad[0] == 'd' ? p->d->size : p->s->size;
    unlock_pair(p);
    return t4a__fail(T4A_ERANGE,
                     "%s: %s range [%llu, +%llu) exceeds its %llu bytes; check the "
                     "offset and length",
                     what, bad, (unsigned long long)off, (unsigned long long)n,
                     (unsigned long long)size);
  }
  return T4A_OK;
}

/* Makes dst's stream wait for everything src enqueued so far. */
static int order_after_source(pair *p, const char *what) {
  t4a__event *e = NULL;
  t4a__CUcontext saved;
  int rc = t4a__event_get(p->src, p->src->ordinal, &e);
  if (rc || (rc = t4a__ctx_enter(p->src, &saved))) {
    if (e)
      t4a__event_put(p->src, e);
    return rc;
  }
  t4a__CUresult r = t4a__be.cu.cuEventRecord(e->ev, p->src->stream);
  t4a__ctx_leave(p->src, saved);
  if (r == T4A__CUDA_SUCCESS && (rc = t4a__ctx_enter(p->dst, &saved)) == T4A_OK) {
    r = t4a__be.cu.cuStreamWaitEvent(p->dst->stream, e->ev, 0);
    t4a__ctx_leave(p->dst, saved);
  }
  t4a__event_put(p->src, e); /* the wait captured the record: reusable */
  if (rc)
    return rc;
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(p->dst, r, "%s: ordering after the source runtime failed", what);
  return T4A_OK;
}

/* The copy is enqueued but its completion cannot be tracked: wait for it
 * here, or, if even that fails, never reuse or free the source block. */
static void untracked(pair *p) {
  t4a__CUcontext saved;
  if (t4a__ctx_enter(p->dst, &saved) != T4A_OK) {
    t4a__buffer_unproven(p->src, p->s);
    return;
  }
  if (t4a__be.cu.cuStreamSynchronize(p->dst->stream) != T4A__CUDA_SUCCESS)
    t4a__buffer_unproven(p->src, p->s);
  t4a__ctx_leave(p->dst, saved);
}

/* After the copy is enqueued on dst's stream: the source buffer's block is
 * not reused before it completed. */
static int note_reader(pair *p, const char *what) {
  t4a__event *e = NULL;
  int rc = t4a__event_get(p->src, p->dst->ordinal, &e); /* in dst's context */
  if (rc)
    goto wait_copy;
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(p->dst, &saved)))
    goto put;
  t4a__CUresult r = t4a__be.cu.cuEventRecord(e->ev, p->dst->stream);
  t4a__ctx_leave(p->dst, saved);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(p->dst, r, "%s: recording the copy's completion failed", what);
    goto put;
  }
  /* one reader is tracked: an earlier one is ordered before the source now */
  if ((rc = t4a__buffer_wait_reader(p->src, p->s)))
    goto put;
  p->s->reader = e;
  return T4A_OK;
put:
  t4a__event_put(p->src, e);
wait_copy:
  untracked(p);
  return rc;
}

static int copy_between(t4a_runtime dh, t4a_buffer db, uint64_t doff, t4a_runtime sh, t4a_buffer sb,
                        uint64_t soff, uint64_t n, bool peer) {
  const char *what = peer ? "copy_from_peer" : "copy_from_runtime";
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  pair p;
  int rc = lock_pair(what, dh, db, doff, sh, sb, soff, n, &p);
  if (rc)
    return rc;
  bool same = p.dst->ordinal == p.src->ordinal;
  if (!peer && !same) {
    rc = t4a__fail(T4A_EFOREIGNDEVICE,
                   "copy_from_runtime: the source is on device %d, the "
                   "destination on device %d; use copy_from_peer",
                   (int)p.src->ordinal, (int)p.dst->ordinal);
    goto out;
  }
  if (peer && same) {
    rc = t4a__fail(T4A_EINVAL,
                   "copy_from_peer: both runtimes are on device %d; use "
                   "copy_from_runtime",
                   (int)p.dst->ordinal);
    goto out;
  }
  if (peer) {
    if ((rc = t4a__peer_enable(p.dst->ordinal, p.src->ordinal, p.dst->ctx, p.src->ctx)))
      goto out;
    /* memory from the source's pool, readable by dst's device */
    if ((rc = t4a__memory_grant(p.src, p.dst->ordinal, what)))
      goto out;
  }
  if (same && t4a__spans_overlap(p.d->ptr + doff, n, p.s->ptr + soff, n)) {
    /* one memory wrapped by both runtimes (buffer_wrap_external, DLPack) */
    rc = t4a__fail(T4A_EINVAL,
                   "%s: source [0x%llx, +%llu) and destination [0x%llx, +%llu) overlap (two "
                   "buffers of the same memory); copy through a temporary buffer",
                   what, (unsigned long long)(p.s->ptr + soff), (unsigned long long)n,
                   (unsigned long long)(p.d->ptr + doff), (unsigned long long)n);
    goto out;
  }
  if (!n)
    goto out;
  if ((rc = order_after_source(&p, what)))
    goto out;
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(p.dst, &saved)))
    goto out;
  t4a__CUdeviceptr d = p.d->ptr + doff, s = p.s->ptr + soff;
  t4a__CUresult r =
      peer ? t4a__be.cu.cuMemcpyPeerAsync(d, p.dst->ctx, s, p.src->ctx, (size_t)n, p.dst->stream)
           : t4a__be.cu.cuMemcpyDtoDAsync(d, s, (size_t)n, p.dst->stream);
  t4a__ctx_leave(p.dst, saved);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(p.dst, r, "%s of %llu bytes failed", what, (unsigned long long)n);
    goto out;
  }
  t4a__rt_dirty(p.dst);
  if (peer)
    p.dst->c.copies_peer++;
  else
    p.dst->c.copies_cross_runtime++;
  p.dst->c.bytes_d2d += n;
  rc = note_reader(&p, what);
out:
  unlock_pair(&p);
  return rc;
}

int t4a__slot_copy_from_runtime(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                                t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                                uint64_t bytes) {
  return copy_between(dst_rt, dst, dst_offset, src_rt, src, src_offset, bytes, false);
}

int t4a__slot_copy_from_peer(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                             t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                             uint64_t bytes) {
  return copy_between(dst_rt, dst, dst_offset, src_rt, src, src_offset, bytes, true);
}

int t4a__slot_copy_from_peer_via_host(t4a_runtime dh, t4a_buffer db, uint64_t doff, t4a_runtime sh,
                                      t4a_buffer sb, uint64_t soff, uint64_t n) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  pair p;
  int rc = lock_pair("copy_from_peer_via_host", dh, db, doff, sh, sb, soff, n, &p);
  if (rc)
    return rc;
  if (n && (rc = t4a__staged_peer(p.dst, p.src, p.d->ptr + doff, p.s->ptr + soff, n)) == 0) {
    t4a__rt_dirty(p.dst);
    p.dst->c.copies_via_host++;
    p.dst->c.bytes_d2d += n;
  }
  unlock_pair(&p);
  return rc;
}
