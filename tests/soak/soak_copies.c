/* tests/soak/soak_copies.c -- device and pinned memory and every kind of
 * copy, each checked against the shadows (see soak.h).
 *
 * Ordering rules the shadow model relies on, all from the ABI:
 *  - a runtime's work runs in call order on its stream, so a shadow is
 *    updated when the write is enqueued, and copy_d2h (which waits for the
 *    work ahead of it) must return exactly the shadow;
 *  - copy_from_runtime / copy_from_peer read the source after all work its
 *    runtime enqueued before the call, but work the source runtime enqueues
 *    later may overwrite the source first: before the owner writes a buffer
 *    that another runtime may still be reading, it is ordered after that
 *    reader (seal the reader, runtime_wait_witness on the owner);
 *    copy_from_peer_via_host returns once the data left the source;
 *  - a pinned host buffer is not touched by the host while copies using it
 *    are pending: the soak waits for a witness first;
 *  - freeing (buffer_free, host_free) needs no ordering from the consumer:
 *    the backend must keep the block until the work using it completed, and
 *    the soak frees with work pending on purpose, then reuses the memory. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/soak/soak.h"

#define WC_MAX (64u << 10) /* write-combined host buffers stay small: host reads are slow */

void soak_fill_random(uint8_t *p, uint64_t n, soak_rng *r) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = soak_next(r);
    memcpy(p + i, &v, 8);
  }
  if (i < n) {
    uint64_t v = soak_next(r);
    memcpy(p + i, &v, n - i);
  }
}

int soak_compare(soak_thread *th, const char *what, const uint8_t *got, const uint8_t *want,
                 uint64_t n) {
  if (!n || memcmp(got, want, n) == 0)
    return 0;
  uint64_t first = n, differ = 0;
  for (uint64_t i = 0; i < n; i++)
    if (got[i] != want[i]) {
      if (first == n)
        first = i;
      differ++;
    }
  atomic_fetch_add(&G.mismatches, 1);
  return soak_fail(th,
                   "MISMATCH in %s: %llu of %llu bytes differ, first at byte %llu (got 0x%02x, "
                   "want 0x%02x)",
                   what, (unsigned long long)differ, (unsigned long long)n,
                   (unsigned long long)first, got[first], want[first]);
}

/* A size: 0 now and then, otherwise spread evenly over the powers of two up
 * to max, odd sizes included. */
static uint64_t pick_size(soak_rng *r, uint64_t max) {
  if (max == 0 || soak_one_in(r, 16))
    return 0;
  unsigned bits = 0;
  while (bits < 63 && (2ull << bits) <= max)
    bits++;
  uint64_t lo = 1ull << soak_below(r, bits + 1);
  uint64_t v = lo + soak_below(r, lo);
  return v > max ? max : v;
}

/* A range of a buffer of `size` bytes: the whole of it now and then, else
 * any offset (odd ones included) and any length that fits, 0 included. */
static void pick_range(soak_rng *r, uint64_t size, uint64_t *off, uint64_t *n) {
  if (soak_one_in(r, 4)) {
    *off = 0;
    *n = size;
    return;
  }
  *off = soak_below(r, size + 1);
  *n = soak_below(r, size - *off + 1);
}

void soak_drop_buffer(soak_rt *rt, unsigned k) {
  free(rt->b[k].shadow);
  rt->b[k] = rt->b[--rt->nb];
}

void soak_drop_host(soak_rt *rt, unsigned k) {
  free(rt->hb[k].shadow);
  rt->hb[k] = rt->hb[--rt->nh];
}

int soak_before_write(soak_thread *th, unsigned i, soak_buf *b) {
  for (unsigned q = 0; q < th->nrt && b->readers; q++)
    if ((b->readers >> q) & 1u) {
      if (soak_order(th, i, q))
        return -1;
    }
  b->readers = 0;
  return 0;
}

/* Copies random bytes to [off, off + n) of buffer k of runtime i through
 * copy_h2d, from an address with a random misalignment. */
static int h2d_random(soak_thread *th, unsigned i, soak_buf *b, uint64_t off, uint64_t n,
                      soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  uint8_t *src = th->src + soak_below(r, 16);
  soak_fill_random(src, n, r);
  if (soak_before_write(th, i, b) || SOAK_OK(th, t->copy_h2d(rt->h, b->h, off, src, n)))
    return -1;
  memcpy(b->shadow + off, src, n);
  if (n) {
    rt->x.h2d++;
    rt->x.bytes_h2d += n;
  }
  soak_count(th, K_H2D, n);
  return 0;
}

int soak_op_alloc(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (rt->nb == SOAK_MAX_BUFS)
    return soak_op_free(th, i, r);
  uint64_t size = pick_size(r, G.o.max_bytes), got = ~0ull, addr = ~0ull;
  t4a_buffer h = {0};
  if (SOAK_OK(th, t->buffer_alloc(rt->h, size, &h)) ||
      SOAK_OK(th, t->buffer_size(rt->h, h, &got)) ||
      SOAK_OK(th, t->buffer_device_address(rt->h, h, &addr)))
    return -1;
  soak_note(th, "alloc rt%u %llu bytes", i, (unsigned long long)size);
  if (got != size || (size == 0) != (addr == 0))
    return soak_fail(th, "buffer_alloc(%llu): buffer_size says %llu, device address 0x%llx",
                     (unsigned long long)size, (unsigned long long)got, (unsigned long long)addr);
  unsigned k = rt->nb;
  rt->b[k] = (soak_buf){h, size, malloc(size ? size : 1), 0};
  if (!rt->b[k].shadow)
    return soak_fail(th, "out of host memory for a %llu-byte shadow", (unsigned long long)size);
  rt->nb++;
  soak_count(th, K_ALLOC, size);
  /* its content is undefined: give it one, by a launch or a copy */
  if (size >= 4 && size % 4 == 0 && (rt->nm || !G.kernels) && soak_one_in(r, 2))
    return soak_launch_fill(th, i, k, 0, size / 4, (uint32_t)soak_next(r), r);
  return h2d_random(th, i, &rt->b[k], 0, size, r);
}

int soak_op_free(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (rt->nb == 0)
    return soak_op_alloc(th, i, r);
  unsigned k = (unsigned)soak_below(r, rt->nb);
  t4a_buffer h = rt->b[k].h;
  soak_note(th, "free rt%u buffer of %llu bytes (readers 0x%llx)", i,
            (unsigned long long)rt->b[k].size, (unsigned long long)rt->b[k].readers);
  if (SOAK_OK(th, t->buffer_free(rt->h, h)))
    return -1;
  soak_drop_buffer(rt, k);
  soak_count(th, K_FREE, 0);
  if (soak_one_in(r, 8)) { /* the handle went stale at once */
    if (SOAK_CALL(th, T4A_EHANDLE, t->buffer_free(rt->h, h)))
      return -1;
    soak_count(th, K_REFUSED, 0);
  }
  if (soak_one_in(r, 8)) {
    uint64_t keep = soak_one_in(r, 2) ? 0 : (1ull << 20);
    t4a_cache_stats s = {.struct_size = sizeof s};
    if (SOAK_OK(th, t->cache_trim(rt->h, keep)) || SOAK_OK(th, t->cache_stats(rt->h, &s)))
      return -1;
    if (s.bytes > keep)
      return soak_fail(th, "cache_trim(%llu) left %llu bytes cached", (unsigned long long)keep,
                       (unsigned long long)s.bytes);
    soak_count(th, K_TRIM, 0);
  }
  return 0;
}

static soak_buf *any_buffer(soak_thread *th, unsigned i, soak_rng *r) {
  soak_rt *rt = &th->rt[i];
  if (rt->nb == 0 && soak_op_alloc(th, i, r))
    return NULL;
  return rt->nb ? &rt->b[soak_below(r, rt->nb)] : NULL;
}

int soak_op_h2d(soak_thread *th, unsigned i, soak_rng *r) {
  soak_buf *b = any_buffer(th, i, r);
  if (!b)
    return th->failed ? -1 : 0;
  uint64_t off, n;
  pick_range(r, b->size, &off, &n);
  soak_note(th, "copy_h2d rt%u [%llu, +%llu) of %llu", i, (unsigned long long)off,
            (unsigned long long)n, (unsigned long long)b->size);
  return h2d_random(th, i, b, off, n, r);
}

/* Reads [off, off + n) of b back through copy_d2h, into an address with a
 * random misalignment, and compares it with the shadow. */
static int read_back(soak_thread *th, unsigned i, soak_buf *b, uint64_t off, uint64_t n, bool whole,
                     soak_rng *r) {
  soak_rt *rt = &th->rt[i];
  uint8_t *dst = th->dst + soak_below(r, 16);
  /* every byte starts different from what must arrive: a byte the copy
   * does not write cannot pass */
  for (uint64_t k = 0; k < n; k++)
    dst[k] = (uint8_t)~b->shadow[off + k];
  soak_note(th, "copy_d2h rt%u [%llu, +%llu) of %llu", i, (unsigned long long)off,
            (unsigned long long)n, (unsigned long long)b->size);
  if (SOAK_OK(th, G.t->copy_d2h(rt->h, dst, b->h, off, n)))
    return -1;
  if (n) {
    rt->x.d2h++;
    rt->x.bytes_d2h += n;
  }
  soak_count(th, whole ? K_VERIFY : K_D2H, n);
  return soak_compare(th, whole ? "a whole buffer read back" : "copy_d2h", dst, b->shadow + off, n);
}

int soak_op_d2h(soak_thread *th, unsigned i, soak_rng *r, bool whole) {
  soak_buf *b = any_buffer(th, i, r);
  if (!b)
    return th->failed ? -1 : 0;
  uint64_t off = 0, n = b->size;
  if (!whole)
    pick_range(r, b->size, &off, &n);
  return read_back(th, i, b, off, n, whole, r);
}

int soak_verify_buffer(soak_thread *th, unsigned i, unsigned k, soak_rng *r) {
  soak_buf *b = &th->rt[i].b[k];
  return read_back(th, i, b, 0, b->size, true, r);
}

int soak_op_host_alloc(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (rt->nh == SOAK_MAX_HOSTS)
    return soak_op_host_free(th, i, r);
  uint64_t size = pick_size(r, G.o.max_bytes / 2);
  size = size ? size : 1;
  uint32_t flags = size <= WC_MAX && soak_one_in(r, 8) ? T4A_HOST_WRITE_COMBINED : 0;
  t4a_host_buffer h = {0};
  void *p = NULL;
  if (SOAK_OK(th, t->host_alloc(rt->h, size, flags, &h, &p)))
    return -1;
  if (!p)
    return soak_fail(th, "host_alloc returned a NULL address");
  soak_host *hb = &rt->hb[rt->nh];
  *hb = (soak_host){h, size, p, malloc(size), false};
  if (!hb->shadow)
    return soak_fail(th, "out of host memory for a pinned buffer's shadow");
  rt->nh++;
  /* the host writes it at once: a block still in use by earlier work would
   * be overwritten by that work later, and caught by the next check */
  soak_fill_random(hb->ptr, size, r);
  memcpy(hb->shadow, hb->ptr, size);
  soak_note(th, "host_alloc rt%u %llu bytes%s", i, (unsigned long long)size,
            flags ? " write-combined" : "");
  soak_count(th, K_HOST_ALLOC, size);
  return 0;
}

int soak_op_host_free(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (rt->nh == 0)
    return soak_op_host_alloc(th, i, r);
  unsigned k = (unsigned)soak_below(r, rt->nh);
  t4a_host_buffer h = rt->hb[k].h;
  bool pending = rt->hb[k].dirty;
  soak_note(th, "host_free rt%u%s", i, pending ? " with copies pending" : "");
  if (SOAK_OK(th, t->host_free(rt->h, h)))
    return -1;
  soak_drop_host(rt, k);
  soak_count(th, pending ? K_HOST_FREE_PENDING : K_HOST_FREE, 0);
  if (soak_one_in(r, 8)) {
    if (SOAK_CALL(th, T4A_EHANDLE, t->host_free(rt->h, h)))
      return -1;
    soak_count(th, K_REFUSED, 0);
  }
  return 0;
}

int soak_op_pinned(soak_thread *th, unsigned i, soak_rng *r, bool to_device) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (rt->nh == 0)
    return soak_op_host_alloc(th, i, r);
  soak_buf *b = any_buffer(th, i, r);
  if (!b)
    return th->failed ? -1 : 0;
  unsigned k = (unsigned)soak_below(r, rt->nh);
  soak_host *hb = &rt->hb[k];
  uint64_t boff = soak_below(r, b->size + 1), hoff = soak_below(r, hb->size + 1);
  uint64_t room = b->size - boff < hb->size - hoff ? b->size - boff : hb->size - hoff;
  uint64_t n = soak_one_in(r, 4) ? room : soak_below(r, room + 1);
  soak_note(th, "copy_%s_pinned rt%u buf[%llu, +%llu) host[%llu]", to_device ? "h2d" : "d2h", i,
            (unsigned long long)boff, (unsigned long long)n, (unsigned long long)hoff);
  if (to_device) {
    if (hb->dirty && soak_host_wait(th, i, r)) /* the host may write it only when idle */
      return -1;
    soak_fill_random(hb->ptr + hoff, n, r);
    memcpy(hb->shadow + hoff, hb->ptr + hoff, n);
    if (soak_before_write(th, i, b) ||
        SOAK_OK(th, t->copy_h2d_pinned(rt->h, b->h, boff, hb->h, hoff, n)))
      return -1;
    memcpy(b->shadow + boff, hb->shadow + hoff, n);
    rt->x.h2d_pinned += n != 0;
    rt->x.bytes_h2d += n;
  } else {
    if (SOAK_OK(th, t->copy_d2h_pinned(rt->h, hb->h, hoff, b->h, boff, n)))
      return -1;
    memcpy(hb->shadow + hoff, b->shadow + boff, n);
    rt->x.d2h_pinned += n != 0;
    rt->x.bytes_d2h += n;
  }
  hb->dirty |= n != 0;
  soak_count(th, to_device ? K_H2D_PINNED : K_D2H_PINNED, n);
  if (soak_one_in(r, 4)) { /* freed while the copy may still be pending */
    unsigned now = (unsigned)(hb - rt->hb);
    bool pending = hb->dirty;
    if (SOAK_OK(th, t->host_free(rt->h, hb->h)))
      return -1;
    soak_drop_host(rt, now);
    soak_count(th, pending ? K_HOST_FREE_PENDING : K_HOST_FREE, 0);
  }
  return 0;
}

int soak_op_d2d(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  soak_buf *x = any_buffer(th, i, r);
  if (!x)
    return th->failed ? -1 : 0;
  soak_buf *y = &rt->b[soak_below(r, rt->nb)];
  bool same = x == y;
  uint64_t lim = x->size < y->size ? x->size : y->size;
  uint64_t n = soak_below(r, (same ? lim / 2 : lim) + 1);
  uint64_t xoff = soak_below(r, x->size - n + 1), yoff = soak_below(r, y->size - n + 1);
  if (same && n && xoff < yoff + n && yoff < xoff + n) {
    if (soak_one_in(r, 2)) { /* overlapping regions of one buffer are refused */
      if (SOAK_CALL(th, T4A_EINVAL, t->copy_d2d(rt->h, y->h, yoff, x->h, xoff, n)))
        return -1;
      soak_count(th, K_REFUSED, 0);
      return 0;
    }
    xoff = 0;
    yoff = n;
  }
  soak_note(th, "copy_d2d rt%u [%llu] <- [%llu] +%llu%s", i, (unsigned long long)yoff,
            (unsigned long long)xoff, (unsigned long long)n, same ? " (one buffer)" : "");
  if (soak_before_write(th, i, y) || SOAK_OK(th, t->copy_d2d(rt->h, y->h, yoff, x->h, xoff, n)))
    return -1;
  memmove(y->shadow + yoff, x->shadow + xoff, n);
  rt->x.d2d += n != 0;
  rt->x.bytes_d2d += n;
  soak_count(th, K_D2D, n);
  return 0;
}

/* Two different runtimes of this thread: on one device (peer false) or on
 * two (peer true); false when there is no such pair. */
static bool pick_pair(soak_thread *th, soak_rng *r, bool peer, unsigned *dst, unsigned *src) {
  for (int tries = 0; tries < 16; tries++) {
    unsigned a = (unsigned)soak_below(r, th->nrt), b = (unsigned)soak_below(r, th->nrt);
    if (a != b && (th->rt[a].dev != th->rt[b].dev) == peer) {
      *dst = a;
      *src = b;
      return true;
    }
  }
  return false;
}

int soak_op_between(soak_thread *th, soak_rng *r, bool peer) {
  const t4a_gpu_backend_v1 *t = G.t;
  unsigned di, si;
  if (!pick_pair(th, r, peer, &di, &si))
    return soak_op_d2d(th, (unsigned)soak_below(r, th->nrt), r);
  soak_rt *d = &th->rt[di], *s = &th->rt[si];
  soak_buf *x = any_buffer(th, si, r), *y = x ? any_buffer(th, di, r) : NULL;
  if (!x || !y)
    return th->failed ? -1 : 0;
  uint64_t lim = x->size < y->size ? x->size : y->size, n = soak_below(r, lim + 1);
  uint64_t xoff = soak_below(r, x->size - n + 1), yoff = soak_below(r, y->size - n + 1);
  if (soak_one_in(r, 32)) { /* the wrong slot for the pair is refused, naming the right one */
    /* (the host backend has one device and no peer copy: T4A_EUNSUPPORTED) */
    int want = peer ? T4A_EFOREIGNDEVICE : G.host_backend ? T4A_EUNSUPPORTED : T4A_EINVAL;
    int rc = peer ? t->copy_from_runtime(d->h, y->h, yoff, s->h, x->h, xoff, n)
                  : t->copy_from_peer(d->h, y->h, yoff, s->h, x->h, xoff, n);
    if (soak_status(th, peer ? "copy_from_runtime across devices" : "copy_from_peer on one device",
                    rc, want, want))
      return -1;
    soak_count(th, K_REFUSED, 0);
    return 0;
  }
  bool direct = !peer || (G.peer[d->dev][s->dev] && !soak_one_in(r, 3));
  soak_note(th, "%s rt%u [%llu] <- rt%u [%llu] +%llu",
            !peer    ? "copy_from_runtime"
            : direct ? "copy_from_peer"
                     : "copy_from_peer_via_host",
            di, (unsigned long long)yoff, si, (unsigned long long)xoff, (unsigned long long)n);
  if (soak_before_write(th, di, y))
    return -1;
  int rc;
  if (!peer)
    rc = SOAK_OK(th, t->copy_from_runtime(d->h, y->h, yoff, s->h, x->h, xoff, n));
  else if (direct)
    rc = SOAK_OK(th, t->copy_from_peer(d->h, y->h, yoff, s->h, x->h, xoff, n));
  else
    rc = SOAK_OK(th, t->copy_from_peer_via_host(d->h, y->h, yoff, s->h, x->h, xoff, n));
  if (rc)
    return -1;
  memcpy(y->shadow + yoff, x->shadow + xoff, n);
  if (n && direct) /* read later, on d's stream: s must not overwrite it before */
    x->readers |= 1ull << di;
  if (n) {
    uint64_t *c = !peer ? &d->x.cross : direct ? &d->x.peer : &d->x.via_host;
    (*c)++;
    d->x.bytes_d2d += n;
  }
  soak_count(th, !peer ? K_CROSS : direct ? K_PEER : K_VIA_HOST, n);
  return 0;
}

int soak_large_round_trip(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  const uint64_t n = (4ull << 20) + 3; /* above the size where copy threads join in */
  t4a_buffer b = {0};
  uint8_t *src = th->src + 1, *dst = th->dst + 3;
  soak_fill_random(src, n, r);
  memset(dst, 0, n);
  if (SOAK_OK(th, t->buffer_alloc(rt->h, n, &b)))
    return -1;
  int rc = SOAK_OK(th, t->copy_h2d(rt->h, b, 0, src, n));
  if (!rc)
    rc = SOAK_OK(th, t->copy_d2h(rt->h, dst, b, 0, n));
  if (!rc) {
    rt->x.h2d++;
    rt->x.d2h++;
    rt->x.bytes_h2d += n;
    rt->x.bytes_d2h += n;
    soak_count(th, K_H2D, n);
    soak_count(th, K_D2H, n);
    rc = soak_compare(th, "a 4 MiB round trip", dst, src, n);
  }
  if (SOAK_OK(th, t->buffer_free(rt->h, b)))
    rc = -1;
  return rc;
}
