/* plugin-cuda/copy2d.c -- rectangle copies (ABI 1.1): rows of `width` bytes
 * at a pitch on each side, pinned (cuMemcpy2DAsync), within a runtime, and
 * pageable through the bounded staging (staging.c packs the rows). Every
 * row is bounds-checked with overflow-safe arithmetic before the driver
 * sees it. */
#include "config.h"

#include "common/checked.h"
#include "backend-core/directions.h"
#include "backend-core/rect.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

/* The request's struct and both sides (backend-core/rect.c); T4A_OK with *empty
 * set when the rectangle has no bytes (nothing to enqueue). */
static int rect_ok(const char *what, const t4a__runtime *rt, const t4a_copy_2d *g, uint64_t dsize,
                   uint64_t ssize, bool *empty) {
  return t4a__rect_check(what, g, dsize, ssize, t4a__be.devices[rt->ordinal].info.max_pitch, empty);
}

/* One cuMemcpy2DAsync between host (pinned) or device memory, with rt's
 * context current. */
static int dma_2d(t4a__runtime *rt, const char *what, const t4a_copy_2d *g, void *dhost,
                  t4a__CUdeviceptr ddev, const void *shost, t4a__CUdeviceptr sdev) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  if (!cu->cuMemcpy2DAsync)
    return t4a__fail(T4A_EUNSUPPORTED, "%s: the driver lacks cuMemcpy2DAsync; update it", what);
  t4a__CUDA_MEMCPY2D c = {0};
  c.srcMemoryType = shost ? T4A__CU_MEMORYTYPE_HOST : T4A__CU_MEMORYTYPE_DEVICE;
  c.srcHost = shost;
  c.srcDevice = sdev;
  c.srcPitch = (size_t)g->src_pitch;
  c.dstMemoryType = dhost ? T4A__CU_MEMORYTYPE_HOST : T4A__CU_MEMORYTYPE_DEVICE;
  c.dstHost = dhost;
  c.dstDevice = ddev;
  c.dstPitch = (size_t)g->dst_pitch;
  c.WidthInBytes = (size_t)g->width;
  c.Height = (size_t)g->rows;
  if (g->rows == 1) /* one row: any pitch will do, and the driver wants it >= width */
    c.srcPitch = c.dstPitch = c.WidthInBytes;
  t4a__CUcontext saved; /* the driver wants a context current: the runtime's */
  int rc = t4a__ctx_enter(rt, &saved);
  if (rc)
    return rc;
  t4a__CUresult r = cu->cuMemcpy2DAsync(&c, rt->stream);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "%s of %llu rows of %llu bytes failed", what,
                           (unsigned long long)g->rows, (unsigned long long)g->width);
  return T4A_OK;
}

static uint64_t area(const t4a_copy_2d *g) { return g->rows * g->width; /* rect_ok bounded it */ }

static int pinned_2d(t4a_runtime h, bool to_device, t4a_buffer bh, t4a_host_buffer hh,
                     const t4a_copy_2d *g) {
  const char *what = to_device ? "copy_2d_h2d_pinned" : "copy_2d_d2h_pinned";
  t4a__runtime *rt;
  t4a__buffer *b;
  t4a__host *hb;
  bool empty = false;
  int rc = t4a__rt_lock(h, what, &rt);
  if (rc)
    return rc;
  if ((rc = t4a__buffer_get(rt, bh, what, &b)) || (rc = t4a__host_get(rt, hh, what, &hb)) ||
      (!to_device && (rc = t4a__host_check_writable(hb, what))) ||
      (rc = rect_ok(what, rt, g, to_device ? b->size : hb->size, to_device ? hb->size : b->size,
                    &empty)) ||
      empty)
    goto out;
  char *host = hb->ptr;
  rc = to_device ? dma_2d(rt, what, g, NULL, b->ptr + g->dst_offset, host + g->src_offset, 0)
                 : dma_2d(rt, what, g, host + g->dst_offset, 0, NULL, b->ptr + g->src_offset);
  if (rc)
    goto out;
  hb->last_use = rt->done.next_seq;
  if (rt->cap.active)
    t4a__capture_copy(rt, bh.bits, 0, hh.bits);
  t4a__rt_dirty(rt);
  if (to_device) {
    rt->c.copies_h2d_pinned++;
    rt->c.bytes_h2d += area(g);
  } else {
    rt->c.copies_d2h_pinned++;
    rt->c.bytes_d2h += area(g);
  }
out:
  t4a__rt_unlock(rt);
  return rc;
}

T4A__PINNED_2D_SLOTS(pinned_2d)

int t4a__slot_copy_2d_d2d(t4a_runtime h, t4a_buffer dst, t4a_buffer src, const t4a_copy_2d *g) {
  const char *what = "copy_2d_d2d";
  t4a__runtime *rt;
  t4a__buffer *d, *s;
  bool empty = false;
  int rc = t4a__rt_lock(h, what, &rt);
  if (rc)
    return rc;
  if ((rc = t4a__buffer_get(rt, dst, what, &d)) || (rc = t4a__buffer_get(rt, src, what, &s)) ||
      (rc = rect_ok(what, rt, g, d->size, s->size, &empty)) || empty ||
      (rc = t4a__rect_overlap_refused(what, g, d->ptr + g->dst_offset, s->ptr + g->src_offset,
                                      d == s)))
    goto out;
  if ((rc = dma_2d(rt, what, g, NULL, d->ptr + g->dst_offset, NULL, s->ptr + g->src_offset)))
    goto out;
  if (rt->cap.active)
    t4a__capture_copy(rt, dst.bits, src.bits, 0);
  t4a__rt_dirty(rt);
  rt->c.copies_d2d++;
  rt->c.bytes_d2d += area(g);
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* Pageable rectangles through the staging, with rt's context current. */
static int pageable_2d(t4a_runtime h, bool to_device, t4a_buffer bh, void *host,
                       const t4a_copy_2d *g) {
  const char *what = to_device ? "copy_2d_h2d" : "copy_2d_d2h";
  if (!host)
    return t4a__fail(T4A_EINVAL, "%s: the host pointer is NULL; pass the host %s", what,
                     to_device ? "source" : "destination");
  t4a__runtime *rt;
  t4a__buffer *b;
  bool empty = false;
  int rc = t4a__rt_lock(h, what, &rt);
  if (rc)
    return rc;
  if ((rc =
           t4a__capture_refuse(&rt->cap, what, "goes through the staging and waits on the host")) ||
      (rc = t4a__buffer_get(rt, bh, what, &b)) ||
      (rc = rect_ok(what, rt, g, to_device ? b->size : UINT64_MAX, to_device ? UINT64_MAX : b->size,
                    &empty)) ||
      empty)
    goto out;
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__rect r = {g->width, g->rows, g->dst_pitch, g->src_pitch};
  rc = to_device
           ? t4a__staged_h2d_2d(rt, b->ptr + g->dst_offset, (const char *)host + g->src_offset, &r)
           : t4a__staged_d2h_2d(rt, (char *)host + g->dst_offset, b->ptr + g->src_offset, &r);
  t4a__ctx_leave(rt, saved);
  if (rc)
    goto out;
  t4a__rt_dirty(rt);
  if (to_device) {
    rt->c.copies_h2d_pageable++;
    rt->c.bytes_h2d += area(g);
  } else {
    rt->c.copies_d2h_pageable++;
    rt->c.bytes_d2h += area(g);
  }
out:
  t4a__rt_unlock(rt);
  return rc;
}

T4A__PAGEABLE_2D_SLOTS(pageable_2d)
