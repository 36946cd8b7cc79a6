/* plugin-cuda/transfer.c -- copies within one runtime and memset, on its
 * stream, in call order. Every range is bounds-checked with overflow-safe
 * arithmetic before the driver sees it; a zero-length copy enqueues
 * nothing. */
#include "config.h"

#include "backend-core/fill.h"
#include "common/checked.h"
#include "backend-core/directions.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

static int range(const char *what, const char *which, uint64_t off, uint64_t n, uint64_t size) {
  if (t4a__range_ok(off, n, size))
    return T4A_OK;
  return t4a__fail(T4A_ERANGE,
                   "%s: %s range [%llu, +%llu) exceeds its %llu bytes; check the "
                   "offset and length",
                   what, which, (unsigned long long)off, (unsigned long long)n,
                   (unsigned long long)size);
}

/* Common prologue: lock the runtime, resolve the device buffer, check its
 * range. */
static int begin(t4a_runtime h, const char *what, t4a_buffer bh, uint64_t off, uint64_t n,
                 const char *which, t4a__runtime **rt, t4a__buffer **b) {
  int rc = t4a__rt_lock(h, what, rt);
  if (rc)
    return rc;
  if ((rc = t4a__buffer_get(*rt, bh, what, b)) || (rc = range(what, which, off, n, (*b)->size)))
    t4a__rt_unlock(*rt);
  return rc;
}

static void count(t4a__runtime *rt, uint64_t *copies, uint64_t *bytes_kind, uint64_t n) {
  (*copies)++;
  *bytes_kind += n;
  t4a__rt_dirty(rt);
}

static int pinned_copy(t4a_runtime h, bool to_device, t4a_buffer bh, uint64_t boff,
                       t4a_host_buffer hh, uint64_t hoff, uint64_t n) {
  const char *what = to_device ? "copy_h2d_pinned" : "copy_d2h_pinned";
  t4a__runtime *rt;
  t4a__buffer *b;
  t4a__host *hb;
  int rc = begin(h, what, bh, boff, n, to_device ? "destination" : "source", &rt, &b);
  if (rc)
    return rc;
  if ((rc = t4a__host_get(rt, hh, what, &hb)) ||
      (!to_device && (rc = t4a__host_check_writable(hb, what))) ||
      (rc = range(what, to_device ? "source" : "destination", hoff, n, hb->size)) || !n)
    goto out;
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUresult r = to_device ? t4a__be.cu.cuMemcpyHtoDAsync(b->ptr + boff, (char *)hb->ptr + hoff,
                                                             (size_t)n, rt->stream)
                              : t4a__be.cu.cuMemcpyDtoHAsync((char *)hb->ptr + hoff, b->ptr + boff,
                                                             (size_t)n, rt->stream);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "%s of %llu bytes failed", what, (unsigned long long)n);
    goto out;
  }
  hb->last_use = rt->done.next_seq;
  if (rt->cap.active)
    t4a__capture_copy(rt, bh.bits, 0, hh.bits);
  if (to_device)
    count(rt, &rt->c.copies_h2d_pinned, &rt->c.bytes_h2d, n);
  else
    count(rt, &rt->c.copies_d2h_pinned, &rt->c.bytes_d2h, n);
out:
  t4a__rt_unlock(rt);
  return rc;
}

T4A__PINNED_COPY_SLOTS(pinned_copy)

/* Runs a staged copy with rt's context current. A small host-to-device
 * copy that goes to the driver's own pageable call (or a scalar's memset)
 * names its context through the stream, as a launch does: it is made with
 * no context made current first (a cuCtxGetCurrent saved on every small
 * copy), and again with rt's current if the driver refuses
 * (T4A__RT_CALL_IN_ITS_CONTEXT). */
static int staged(t4a__runtime *rt, bool to_device, t4a__CUdeviceptr dptr, void *host, uint64_t n) {
  if (to_device && t4a__staging_direct(&rt->stage, n))
    return t4a__direct_h2d(rt, dptr, host, n);
  t4a__CUcontext saved;
  int rc = t4a__ctx_enter(rt, &saved);
  if (rc)
    return rc;
  rc = to_device ? t4a__staged_h2d(rt, dptr, host, n) : t4a__staged_d2h(rt, host, dptr, n);
  t4a__ctx_leave(rt, saved);
  return rc;
}

int t4a__slot_copy_h2d(t4a_runtime h, t4a_buffer dst, uint64_t dst_offset, const void *src,
                       uint64_t bytes) {
  t4a__runtime *rt;
  t4a__buffer *b;
  if (!src && bytes)
    return t4a__fail(T4A_EINVAL, "copy_h2d: src is NULL; pass the host data");
  const t4a__runtime *p = t4a__rt_peek(h);
  if (p) /* the stream's line, the buffer table, the staging's sizes, the counters */
    t4a__rt_warm(&p->stream, &p->mem.bufs, &p->stage.direct_h2d, &p->c.copies_h2d_pageable,
                 &p->done.dirty);
  int rc = begin(h, "copy_h2d", dst, dst_offset, bytes, "destination", &rt, &b);
  if (rc)
    return rc;
  if ((rc = t4a__capture_refuse(&rt->cap, "copy_h2d",
                                "goes through the staging and waits on the host"))) {
    t4a__rt_unlock(rt);
    return rc;
  }
  if (bytes) {
    /* Counted before the driver's call and undone if it fails: the lines
     * are warm now (prefetched above); after the driver's pageable call,
     * which sweeps the caches, each write would be a miss that the lock's
     * release waits for (t4a__rt_ahead). */
    t4a__rt_ahead ahead =
        t4a__rt_count_ahead(rt, &rt->c.copies_h2d_pageable, &rt->c.bytes_h2d, bytes);
    if ((rc = staged(rt, true, b->ptr + dst_offset, (void *)(uintptr_t)src, bytes)))
      t4a__rt_count_undo(rt, &ahead);
  }
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_copy_d2h(t4a_runtime h, void *dst, t4a_buffer src, uint64_t src_offset,
                       uint64_t bytes) {
  t4a__runtime *rt;
  t4a__buffer *b;
  if (!dst && bytes)
    return t4a__fail(T4A_EINVAL, "copy_d2h: dst is NULL; pass the host destination");
  int rc = begin(h, "copy_d2h", src, src_offset, bytes, "source", &rt, &b);
  if (rc)
    return rc;
  if ((rc = t4a__capture_refuse(&rt->cap, "copy_d2h",
                                "goes through the staging and waits on the host"))) {
    t4a__rt_unlock(rt);
    return rc;
  }
  if (bytes && (rc = staged(rt, false, b->ptr + src_offset, dst, bytes)) == 0)
    count(rt, &rt->c.copies_d2h_pageable, &rt->c.bytes_d2h, bytes);
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_copy_d2d(t4a_runtime h, t4a_buffer dst, uint64_t dst_offset, t4a_buffer src,
                       uint64_t src_offset, uint64_t bytes) {
  t4a__runtime *rt;
  t4a__buffer *d, *sb;
  int rc = begin(h, "copy_d2d", dst, dst_offset, bytes, "destination", &rt, &d);
  if (rc)
    return rc;
  if ((rc = t4a__buffer_get(rt, src, "copy_d2d", &sb)) ||
      (rc = range("copy_d2d", "source", src_offset, bytes, sb->size)))
    goto out;
  /* By address, not by handle: one memory may be two buffers (a wrap of an
   * own buffer, a DLPack round trip), and the driver's copy of overlapping
   * ranges is undefined. */
  if (t4a__spans_overlap(d->ptr + dst_offset, bytes, sb->ptr + src_offset, bytes)) {
    rc = t4a__fail(T4A_EINVAL,
                   "copy_d2d: source [0x%llx, +%llu) and destination [0x%llx, +%llu) "
                   "overlap%s; copy through a temporary buffer",
                   (unsigned long long)(sb->ptr + src_offset), (unsigned long long)bytes,
                   (unsigned long long)(d->ptr + dst_offset), (unsigned long long)bytes,
                   d == sb ? " in one buffer" : " (two buffers of the same memory)");
    goto out;
  }
  if (!bytes)
    goto out;
  /* Counted ahead of the call, and no context made current unless the
   * driver asks for it, as a launch (runtime.h): the driver's copy between
   * two device addresses names its context through the stream. */
  t4a__rt_ahead ahead = t4a__rt_count_ahead(rt, &rt->c.copies_d2d, &rt->c.bytes_d2d, bytes);
  t4a__CUresult r;
  T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc,
                              t4a__be.cu.cuMemcpyDtoDAsync(d->ptr + dst_offset,
                                                           sb->ptr + src_offset, (size_t)bytes,
                                                           rt->stream));
  if (rc == T4A_OK && r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "copy_d2d of %llu bytes failed", (unsigned long long)bytes);
  if (rc)
    t4a__rt_count_undo(rt, &ahead);
  else if (rt->cap.active)
    t4a__capture_copy(rt, dst.bits, src.bits, 0);
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* ---- memset (v1.1) ------------------------------------------------------------ */

int t4a__slot_memset(t4a_runtime h, t4a_buffer bh, uint64_t offset, uint32_t pattern,
                     uint32_t element_size, uint64_t count) {
  uint64_t bytes;
  t4a__runtime *rt;
  t4a__buffer *b;
  int rc = t4a__fill_check(offset, pattern, element_size, count, &bytes);
  if (rc || (rc = t4a__rt_lock(h, "memset", &rt)))
    return rc;
  if ((rc = t4a__buffer_get(rt, bh, "memset", &b)) ||
      (rc = t4a__fill_range(offset, bytes, b->size)))
    goto out;
  if (!count)
    goto out;
  if (!t4a__rt_has_memset(element_size)) {
    rc = t4a__fail(T4A_EUNSUPPORTED, "memset: the driver lacks cuMemsetD%uAsync; update it",
                   element_size * 8);
    goto out;
  }
  /* a block starts 256-byte aligned and offset is a multiple of the
   * element: the address is aligned as the driver requires */
  t4a__CUdeviceptr p = b->ptr + offset;
  t4a__CUresult r; /* the memsets name their context through the stream (runtime.h) */
  T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc,
                              t4a__rt_memset(rt, p, pattern, element_size, (size_t)count));
  if (rc == T4A_OK && r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "memset of %llu bytes failed", (unsigned long long)bytes);
  else if (rc == T4A_OK) {
    if (rt->cap.active)
      t4a__capture_copy(rt, bh.bits, 0, 0);
    t4a__rt_dirty(rt);
  }
out:
  t4a__rt_unlock(rt);
  return rc;
}
