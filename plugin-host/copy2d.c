/* plugin-host/copy2d.c -- rectangle copies (ABI 1.1), checked by
 * backend-core/rect.c, run as one operation of `rows` rows (split by rows over the
 * copy threads when large). Pinned and device-to-device ones are queued;
 * pageable ones go as the 1D pageable copies do (t4a__hrt_pageable). */
#include "config.h"

#include "common/checked.h"
#include "backend-core/readonly.h"
#include "backend-core/directions.h"
#include "backend-core/rect.h"
#include "backend-core/slots.h"
#include "plugin-host/host.h"

static t4a__op rect_op(const t4a_copy_2d *g, char *dst, const char *src) {
  t4a__op op = {.kind = T4A__OP_COPY,
                .dst = dst + g->dst_offset,
                .src = src + g->src_offset,
                .bytes = g->width,
                .rows = g->rows,
                .dst_pitch = g->dst_pitch,
                .src_pitch = g->src_pitch};
  return op;
}

/* The counters of a copy of `n` bytes in one direction. */
static void count(t4a__hrt *rt, int dir, bool is_pinned, uint64_t n) {
  if (dir > 0) {
    (*(is_pinned ? &rt->c.copies_h2d_pinned : &rt->c.copies_h2d_pageable))++;
    rt->c.bytes_h2d += n;
  } else if (dir < 0) {
    (*(is_pinned ? &rt->c.copies_d2h_pinned : &rt->c.copies_d2h_pageable))++;
    rt->c.bytes_d2h += n;
  } else {
    rt->c.copies_d2d++;
    rt->c.bytes_d2d += n;
  }
}

static int pinned_2d(t4a_runtime h, bool to_device, t4a_buffer bh, t4a_host_buffer hh,
                     const t4a_copy_2d *g) {
  const char *what = to_device ? "copy_2d_h2d_pinned" : "copy_2d_d2h_pinned";
  t4a__hrt *rt;
  t4a__hbuf *b;
  t4a__hhost *hb;
  bool empty;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if ((rc = t4a__hbuf_get(rt, bh, what, &b)) || (rc = t4a__hhost_get(rt, hh, what, &hb)) ||
      (rc = t4a__rect_check(what, g, to_device ? b->size : hb->bytes,
                            to_device ? hb->bytes : b->size, t4a__host_device.max_pitch, &empty)))
    goto out;
  if (!to_device && (rc = t4a__read_only_refuse_write(hb->read_only, what)))
    goto out;
  if (empty)
    goto out;
  t4a__op op = to_device ? rect_op(g, b->blk.ptr, hb->ptr) : rect_op(g, hb->ptr, b->blk.ptr);
  t4a__hrt_enqueue(rt, &op, bh.bits, hh.bits);
  count(rt, to_device ? 1 : -1, true, g->rows * g->width);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

T4A__PINNED_2D_SLOTS(pinned_2d)

int t4a__slot_copy_2d_d2d(t4a_runtime h, t4a_buffer dst, t4a_buffer src, const t4a_copy_2d *g) {
  t4a__hrt *rt;
  t4a__hbuf *d, *s;
  bool empty;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "copy_2d_d2d", &rt)))
    return rc;
  if ((rc = t4a__hbuf_get(rt, dst, "copy_2d_d2d", &d)) ||
      (rc = t4a__hbuf_get(rt, src, "copy_2d_d2d", &s)) ||
      (rc = t4a__rect_check("copy_2d_d2d", g, d->size, s->size, t4a__host_device.max_pitch,
                            &empty)) ||
      empty ||
      (rc = t4a__rect_overlap_refused("copy_2d_d2d", g,
                                      (uint64_t)(uintptr_t)d->blk.ptr + g->dst_offset,
                                      (uint64_t)(uintptr_t)s->blk.ptr + g->src_offset, d == s)))
    goto out;
  t4a__op op = rect_op(g, d->blk.ptr, s->blk.ptr);
  t4a__hrt_enqueue(rt, &op, dst.bits, src.bits);
  count(rt, 0, false, g->rows * g->width);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

static int pageable_2d(t4a_runtime h, bool to_device, t4a_buffer bh, void *host,
                       const t4a_copy_2d *g) {
  const char *what = to_device ? "copy_2d_h2d" : "copy_2d_d2h";
  t4a__hrt *rt;
  t4a__hbuf *b;
  bool empty;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if ((rc = t4a__hrt_refuse(rt, what, "blocks the host until the copy ran")) ||
      (rc = t4a__hbuf_get(rt, bh, what, &b)) ||
      (rc =
           t4a__rect_check(what, g, to_device ? b->size : UINT64_MAX,
                           to_device ? UINT64_MAX : b->size, t4a__host_device.max_pitch, &empty)) ||
      empty)
    goto out;
  if (!host) {
    rc = t4a__fail(T4A_EINVAL, "%s: the host pointer is NULL; pass memory", what);
    goto out;
  }
  t4a__op op = to_device ? rect_op(g, b->blk.ptr, host) : rect_op(g, host, b->blk.ptr);
  if ((rc = t4a__hrt_pageable(rt, &op)))
    goto out;
  count(rt, to_device ? 1 : -1, false, g->rows * g->width);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

T4A__PAGEABLE_2D_SLOTS(pageable_2d)
