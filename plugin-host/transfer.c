/* plugin-host/transfer.c -- the 1D copies of one runtime: pinned (queued,
 * asynchronous), pageable (on the caller's thread when the queue is idle,
 * else queued and waited for: see t4a__hrt_pageable), device to device. */
#include "config.h"

#include "common/checked.h"
#include "backend-core/directions.h"
#include "backend-core/readonly.h"
#include "backend-core/slots.h"
#include "plugin-host/host.h"

static int range(const char *what, const char *side, uint64_t off, uint64_t n, uint64_t size) {
  if (t4a__range_ok(off, n, size))
    return T4A_OK;
  return t4a__fail(
      T4A_ERANGE, "%s: %llu bytes at %s offset %llu run past its %llu bytes; shorten the copy",
      what, (unsigned long long)n, side, (unsigned long long)off, (unsigned long long)size);
}

static t4a__op copy_op(void *dst, const void *src, uint64_t n) {
  t4a__op op = {.kind = T4A__OP_COPY, .dst = dst, .src = src, .bytes = n, .rows = 1};
  return op;
}

static int pinned(t4a_runtime h, bool to_device, t4a_buffer bh, uint64_t boff, t4a_host_buffer hh,
                  uint64_t hoff, uint64_t n) {
  const char *what = to_device ? "copy_h2d_pinned" : "copy_d2h_pinned";
  t4a__hrt *rt;
  t4a__hbuf *b;
  t4a__hhost *hb;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if ((rc = t4a__hbuf_get(rt, bh, what, &b)) || (rc = t4a__hhost_get(rt, hh, what, &hb)) ||
      (rc = range(what, "the buffer's", boff, n, b->size)) ||
      (rc = range(what, "the host buffer's", hoff, n, hb->bytes)))
    goto out;
  if (!to_device && (rc = t4a__read_only_refuse_write(hb->read_only, what)))
    goto out;
  if (!n)
    goto out;
  t4a__op op = to_device ? copy_op(b->blk.ptr + boff, hb->ptr + hoff, n)
                         : copy_op(hb->ptr + hoff, b->blk.ptr + boff, n);
  t4a__hrt_enqueue(rt, &op, bh.bits, hh.bits);
  if (to_device) {
    rt->c.copies_h2d_pinned++;
    rt->c.bytes_h2d += n;
  } else {
    rt->c.copies_d2h_pinned++;
    rt->c.bytes_d2h += n;
  }
out:
  t4a__hrt_unlock(rt);
  return rc;
}

T4A__PINNED_COPY_SLOTS(pinned)

static int pageable(t4a_runtime h, bool to_device, t4a_buffer bh, uint64_t boff, void *host,
                    uint64_t n) {
  const char *what = to_device ? "copy_h2d" : "copy_d2h";
  if (!host && n)
    return t4a__fail(T4A_EINVAL, "%s: the host pointer is NULL; pass memory", what);
  t4a__hrt *rt;
  t4a__hbuf *b;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if ((rc = t4a__hrt_refuse(rt, what, "blocks the host until the copy ran")) ||
      (rc = t4a__hbuf_get(rt, bh, what, &b)) ||
      (rc = range(what, "the buffer's", boff, n, b->size)) || !n)
    goto out;
  t4a__op op =
      to_device ? copy_op(b->blk.ptr + boff, host, n) : copy_op(host, b->blk.ptr + boff, n);
  if ((rc = t4a__hrt_pageable(rt, &op)))
    goto out;
  if (to_device) {
    rt->c.copies_h2d_pageable++;
    rt->c.bytes_h2d += n;
  } else {
    rt->c.copies_d2h_pageable++;
    rt->c.bytes_d2h += n;
  }
out:
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_copy_h2d(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, const void *src,
                       uint64_t bytes) {
  return pageable(rt, true, dst, dst_offset, (void *)(uintptr_t)src, bytes);
}

int t4a__slot_copy_d2h(t4a_runtime rt, void *dst, t4a_buffer src, uint64_t src_offset,
                       uint64_t bytes) {
  return pageable(rt, false, src, src_offset, dst, bytes);
}

int t4a__slot_copy_d2d(t4a_runtime h, t4a_buffer dst, uint64_t dst_offset, t4a_buffer src,
                       uint64_t src_offset, uint64_t bytes) {
  t4a__hrt *rt;
  t4a__hbuf *d, *s;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "copy_d2d", &rt)))
    return rc;
  if ((rc = t4a__hbuf_get(rt, dst, "copy_d2d", &d)) ||
      (rc = t4a__hbuf_get(rt, src, "copy_d2d", &s)) ||
      (rc = range("copy_d2d", "the destination's", dst_offset, bytes, d->size)) ||
      (rc = range("copy_d2d", "the source's", src_offset, bytes, s->size)) || !bytes)
    goto out;
  if (t4a__spans_overlap((uint64_t)(uintptr_t)d->blk.ptr + dst_offset, bytes,
                         (uint64_t)(uintptr_t)s->blk.ptr + src_offset, bytes)) {
    rc = t4a__fail(T4A_EINVAL,
                   "copy_d2d: the source and destination ranges overlap (in one buffer or two "
                   "of the same memory); copy through a temporary buffer");
    goto out;
  }
  t4a__op op = copy_op(d->blk.ptr + dst_offset, s->blk.ptr + src_offset, bytes);
  t4a__hrt_enqueue(rt, &op, dst.bits, src.bits);
  rt->c.copies_d2d++;
  rt->c.bytes_d2d += bytes;
out:
  t4a__hrt_unlock(rt);
  return rc;
}
