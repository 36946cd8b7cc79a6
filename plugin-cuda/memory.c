/* plugin-cuda/memory.c -- device buffers: stream-ordered allocation from the
 * runtime's pool through a host-side cache of freed blocks.
 *
 * A freed block goes to the cache bin of its size class (8 classes per power
 * of two, at most 12.5% slack). A later allocation of that class takes it
 * back without a driver call: its previous uses were all enqueued on the
 * runtime's stream before the free, and every new use is enqueued after the
 * allocation, so stream order already separates them. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "backend-core/cachestats.h"
#include "backend-core/fill.h"
#include "common/log.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

int t4a__buffer_get(t4a__runtime *rt, t4a_buffer h, const char *what, t4a__buffer **out) {
  int rc;
  *out = t4a__htable_find(&rt->mem.bufs, &t4a__buffer_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

/* ---- the pool ------------------------------------------------------------------ */

int t4a__memory_grant(t4a__runtime *rt, int32_t dev, const char *what) {
  uint64_t bit = 1ull << dev;
  if (rt->mem.pool_access & bit)
    return T4A_OK;
  t4a__CUmemAccessDesc desc = {{T4A__CU_MEM_LOCATION_TYPE_DEVICE, dev},
                               T4A__CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  t4a__CUresult r = t4a__be.cu.cuMemPoolSetAccess(rt->mem.pool, &desc, 1);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r,
                           "%s: granting device %d access to device %d's pool failed; check the "
                           "driver, or use copy_from_peer_via_host",
                           what, (int)dev, (int)rt->ordinal);
  rt->mem.pool_access |= bit;
  return T4A_OK;
}

/* Lets every device that can reach this one read the pool's memory, while
 * the pool is still empty: granting access later maps existing allocations
 * and can wait for the device (a peer copy would then stall behind a
 * running kernel). A failure here is retried, and reported, by the first
 * peer copy. */
static void grant_peers(t4a__runtime *rt) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  if (!t4a__be.has_peer)
    return;
  for (int32_t d = 0; d < t4a__be.device_count && d < T4A__MAX_DEVICES; d++) {
    int can = 0;
    if (d == rt->ordinal ||
        cu->cuDeviceCanAccessPeer(&can, t4a__be.devices[d].dev, rt->dev) != T4A__CUDA_SUCCESS ||
        !can)
      continue;
    if (t4a__memory_grant(rt, d, "runtime_create") != T4A_OK)
      t4a__log(T4A__LOG_WARN, "cuda", "granting device %d access to device %d's pool failed",
               (int)d, (int)rt->ordinal);
  }
}

int t4a__memory_init(t4a__runtime *rt, t4a__CUmemoryPool pool, uint64_t pool_access) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__memory *m = &rt->mem;
  memset(m, 0, sizeof *m);
  t4a__htable_init(&m->bufs, sizeof(t4a__buffer));
  t4a__budget_init(&m->budget, &rt->opts);
  t4a__CUresult r;
  if (pool) { /* an empty, trimmed pool of a destroyed runtime */
    m->pool = pool;
    m->pool_access = pool_access;
  } else {
    t4a__CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = T4A__CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = T4A__CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = T4A__CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = rt->ordinal;
    if ((r = cu->cuMemPoolCreate(&m->pool, &props)) != T4A__CUDA_SUCCESS)
      return t4a__cu_fail(r,
                          "runtime_create: cuMemPoolCreate failed on device %d; free resources "
                          "and retry",
                          (int)rt->ordinal);
  }
  uint64_t threshold = rt->opts.pool_release_threshold;
  if ((r = cu->cuMemPoolSetAttribute(m->pool, T4A__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                     &threshold)) != T4A__CUDA_SUCCESS) {
    t4a__release_or_keep(cu->cuMemPoolDestroy(m->pool), m->pool);
    m->pool = NULL;
    return t4a__cu_fail(r, "runtime_create: setting the pool's release threshold failed; check "
                           "the driver");
  }
  if ((rt->opts.flags & T4A_RUNTIME_ALLOC_LOG) &&
      !(m->log = t4a__alog_new(rt->opts.alloc_log_events))) {
    t4a__release_or_keep(cu->cuMemPoolDestroy(m->pool), m->pool);
    m->pool = NULL;
    return t4a__fail(T4A_ENOMEM,
                     "runtime_create: no host memory for the allocation log of %u "
                     "events; free memory or ask for fewer (alloc_log_events)",
                     rt->opts.alloc_log_events);
  }
  grant_peers(rt);
  return T4A_OK;
}

__attribute__((cold, noinline)) void t4a__memory_note(t4a__runtime *rt, uint32_t kind,
                                                      uint32_t detail, uint64_t buffer,
                                                      uint64_t address, uint64_t bytes) {
  t4a__alog_note(rt->mem.log, kind, detail, buffer, address, bytes, rt->mem.held,
                 rt->done.next_seq);
}

/* ---- the cache ----------------------------------------------------------------- */

/* Takes a block of class `cls` from the cache; false when the bin is empty. */
static bool cache_take(t4a__runtime *rt, unsigned cls, uint64_t cap, t4a__CUdeviceptr *ptr) {
  t4a__bin *bin = &rt->mem.bins[cls];
  if (!bin->count)
    return false;
  *ptr = bin->ptrs[--bin->count];
  rt->mem.cache_entries--;
  rt->mem.cache_bytes -= cap;
  return true;
}

/* Puts a block in its bin; false when the cache is full or the bin cannot
 * grow (the caller then frees it to the pool). */
static bool cache_put(t4a__runtime *rt, t4a__CUdeviceptr ptr, uint64_t cap) {
  uint64_t cls_cap;
  unsigned cls = t4a__size_class(cap, &cls_cap);
  if (rt->mem.cache_bytes + cap > rt->opts.cache_limit_bytes || rt->mem.cache_bytes + cap < cap)
    return false;
  t4a__bin *bin = &rt->mem.bins[cls];
  if (bin->count == bin->cap) {
    uint64_t n;
    size_t bytes;
    if (!t4a__grow(bin->cap, 8, UINT32_MAX, sizeof *bin->ptrs, &n, &bytes))
      return false; /* the bin is full: freed to the pool */
    t4a__CUdeviceptr *p = realloc(bin->ptrs, bytes);
    if (!p)
      return false;
    bin->ptrs = p;
    bin->cap = (uint32_t)n;
  }
  bin->ptrs[bin->count++] = ptr;
  rt->mem.cache_entries++;
  rt->mem.cache_bytes += cap;
  return true;
}

/* Stream-ordered free to the pool of a block of `cap` bytes. Needs rt's
 * context current. */
static int pool_free(t4a__runtime *rt, t4a__CUdeviceptr ptr, uint64_t cap) {
  t4a__CUresult r = t4a__be.cu.cuMemFreeAsync(ptr, rt->stream);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "cuMemFreeAsync failed; the runtime may be unusable");
  rt->c.driver_frees++;
  rt->mem.held -= cap;
  return T4A_OK;
}

int t4a__cache_trim_locked(t4a__runtime *rt, uint64_t keep) {
  t4a__CUcontext saved; /* the pool is trimmed even when the cache holds nothing to return */
  int rc = t4a__ctx_enter(rt, &saved);
  if (rc)
    return rc;
  uint64_t before = rt->mem.cache_bytes;
  /* largest blocks first: fewest frees for the bytes returned */
  for (unsigned cls = T4A__NUM_CLASSES; cls-- > 0 && rt->mem.cache_bytes > keep && !rc;) {
    t4a__bin *bin = &rt->mem.bins[cls];
    uint64_t cap = t4a__class_cap(cls);
    while (bin->count && rt->mem.cache_bytes > keep) {
      if ((rc = pool_free(rt, bin->ptrs[bin->count - 1], cap)))
        break;
      bin->count--;
      rt->mem.cache_entries--;
      rt->mem.cache_bytes -= cap;
      t4a__rt_dirty(rt); /* the frees are the stream's work: the next seal covers them */
    }
  }
  if (!rc) {
    t4a__CUresult r = t4a__be.cu.cuMemPoolTrimTo(rt->mem.pool, 0);
    if (r != T4A__CUDA_SUCCESS)
      rc = t4a__rt_cu_fail(rt, r, "cuMemPoolTrimTo failed; check the driver");
  }
  t4a__ctx_leave(rt, saved);
  if (rt->mem.log && rt->mem.cache_bytes < before)
    t4a__memory_note(rt, T4A_ALLOC_EVENT_TRIM, 0, 0, 0, before - rt->mem.cache_bytes);
  return rc;
}

/* Allocates `cap` bytes from the pool; on exhaustion trims the cache, waits
 * for the stream (so freed blocks return to the pool) and retries once. */
static int pool_alloc(t4a__runtime *rt, uint64_t cap, t4a__CUdeviceptr *ptr) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__CUcontext saved;
  int rc = t4a__ctx_enter(rt, &saved);
  if (rc)
    return rc;
  t4a__CUresult r = cu->cuMemAllocFromPoolAsync(ptr, (size_t)cap, rt->mem.pool, rt->stream);
  if (r == T4A__CUDA_ERROR_OUT_OF_MEMORY) {
    t4a__ctx_leave(rt, saved);
    if ((rc = t4a__cache_trim_locked(rt, 0)))
      return rc;
    if ((rc = t4a__ctx_enter(rt, &saved)))
      return rc;
    r = cu->cuStreamSynchronize(rt->stream);
    if (r == T4A__CUDA_SUCCESS)
      r = cu->cuMemPoolTrimTo(rt->mem.pool, 0);
    if (r == T4A__CUDA_SUCCESS)
      r = cu->cuMemAllocFromPoolAsync(ptr, (size_t)cap, rt->mem.pool, rt->stream);
  }
  t4a__ctx_leave(rt, saved);
  if (r == T4A__CUDA_ERROR_OUT_OF_MEMORY)
    return t4a__cu_fail(r,
                        "buffer_alloc: device %d has no room for %llu bytes, even after "
                        "trimming this runtime's cache; free buffers or trim other runtimes",
                        (int)rt->ordinal, (unsigned long long)cap);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "buffer_alloc: cuMemAllocFromPoolAsync of %llu bytes failed",
                           (unsigned long long)cap);
  rt->c.driver_allocations++;
  rt->mem.held += cap;
  return T4A_OK;
}

/* A new block of cap bytes for buffer_alloc (the cache had none of its
 * class): from the pool within the budget, the cache trimmed first when the
 * budget is short (all of it when that is not enough). T4A_ENOMEM for lack
 * of memory sets *reason (T4A_OUT_OF_MEMORY_*). Off the fast path (the
 * cache hit is buffer_alloc's own). */
static __attribute__((noinline)) int block_new(t4a__runtime *rt, uint64_t cap,
                                               t4a__CUdeviceptr *ptr, uint32_t *reason) {
  t4a__memory *m = &rt->mem;
  uint64_t short_by = t4a__budget_shortfall(&m->budget, m->held, cap);
  if (short_by) {
    int rc = t4a__cache_trim_locked(rt, short_by <= m->cache_bytes ? m->cache_bytes - short_by : 0);
    if (rc)
      return rc;
    if (!t4a__budget_fits(&m->budget, m->held, cap)) {
      *reason = T4A_OUT_OF_MEMORY_LIMIT;
      if (m->log)
        t4a__memory_note(rt, T4A_ALLOC_EVENT_OUT_OF_MEMORY, *reason, 0, 0, cap);
      return t4a__fail(T4A_ENOMEM,
                       "buffer_alloc: %llu bytes would pass this runtime's pool_limit_bytes "
                       "(%llu held of %llu, its cache trimmed); free buffers, raise the limit "
                       "or give the runtime an out_of_memory callback",
                       (unsigned long long)cap, (unsigned long long)m->held,
                       (unsigned long long)m->budget.limit);
    }
  }
  int rc = pool_alloc(rt, cap, ptr);
  if (rc == T4A_ENOMEM) {
    *reason = T4A_OUT_OF_MEMORY_DEVICE;
    if (m->log)
      t4a__memory_note(rt, T4A_ALLOC_EVENT_OUT_OF_MEMORY, *reason, 0, 0, cap);
  }
  return rc;
}

/* The out-of-memory callback, once, then one more try when it asks
 * (t4a_out_of_memory_fn). T4A_OK with *ptr; else the status (T4A_EHANDLE:
 * the callback destroyed rt; its slot stays locked, budget.h). */
static int ask_then_retry(t4a__runtime *rt, t4a_runtime h, uint64_t bytes, unsigned cls,
                          uint64_t cap, t4a__CUdeviceptr *ptr, uint32_t reason) {
  t4a_out_of_memory_info info = {sizeof info,         reason, h, bytes, cap, rt->mem.held,
                                 rt->mem.budget.limit};
  rt->c.out_of_memory_calls++;
  bool retry = false;
  int rc = t4a__budget_ask(&rt->slot, h, &rt->mem.budget, &info, &retry);
  if (rc)
    return rc; /* gone */
  if ((rc = t4a__capture_refuse(&rt->cap, "buffer_alloc",
                                "would hand out memory the graph cannot own")))
    return rc; /* the callback began a capture */
  uint32_t again = 0;
  if (!retry)
    rc = t4a__fail(T4A_ENOMEM,
                   "buffer_alloc: %llu bytes do not fit (%s) and the out-of-memory callback "
                   "asked for no retry; free buffers or trim caches",
                   (unsigned long long)cap,
                   reason == T4A_OUT_OF_MEMORY_LIMIT ? "the pool_limit_bytes budget"
                                                     : "the device is full");
  else if (cache_take(rt, cls, cap, ptr)) /* the retry: the same allocation, not counted again */
    rt->c.cache_hits++;
  else if ((rc = block_new(rt, cap, ptr, &again)) && !again)
    return rc; /* not for lack of memory */
  if (rc)
    rt->c.out_of_memory_failures++;
  return rc;
}

/* buffer_alloc when the cache has no block of the class: a new one, the
 * budget and the out-of-memory callback (T4A_EHANDLE: the callback
 * destroyed rt). A function of its own: the hit path stays as lean. */
static __attribute__((noinline)) int alloc_miss(t4a__runtime *rt, t4a_runtime h, uint64_t bytes,
                                                unsigned cls, uint64_t cap, t4a__CUdeviceptr *ptr) {
  rt->c.cache_misses++;
  uint32_t reason = 0;
  int rc = block_new(rt, cap, ptr, &reason);
  if (rc && reason) {
    if (!t4a__budget_can_ask(&rt->mem.budget))
      rt->c.out_of_memory_failures++;
    else
      rc = ask_then_retry(rt, h, bytes, cls, cap, ptr, reason);
  }
  return rc;
}

int t4a__slot_buffer_alloc(t4a_runtime h, uint64_t bytes, t4a_buffer *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "buffer_alloc: out is NULL; pass a pointer");
  out->bits = 0;
  if (bytes > T4A__MAX_ALLOC)
    return t4a__fail(T4A_ENOMEM, "buffer_alloc: %llu bytes exceeds any device; allocate less",
                     (unsigned long long)bytes);
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "buffer_alloc", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__capture_refuse(&rt->cap, "buffer_alloc",
                                "would hand out memory the graph cannot own")))
    goto out;
  uint64_t cap = 0;
  t4a__CUdeviceptr ptr = 0;
  if (bytes) {
    unsigned cls = t4a__size_class(bytes, &cap);
    if (cache_take(rt, cls, cap, &ptr))
      rt->c.cache_hits++;
    else if ((rc = alloc_miss(rt, h, bytes, cls, cap, &ptr)))
      goto out; /* T4A_EHANDLE: rt is gone, its slot locked (touch nothing but unlock) */
  }
  uint32_t i = 0;
  if ((rc = t4a__htable_take(&rt->mem.bufs, "buffer_alloc", &i))) {
    if (cap && !cache_put(rt, ptr, cap)) {
      t4a__CUcontext saved;
      if (t4a__ctx_enter(rt, &saved) == T4A_OK) {
        pool_free(rt, ptr, cap);
        t4a__ctx_leave(rt, saved);
      }
    }
    if (rt->mem.log) /* that hit made no buffer: the next allocation's event must not say so */
      rt->mem.log->hits = rt->c.cache_hits;
    goto out;
  }
  t4a__buffer *b = t4a__htable_at(&rt->mem.bufs, i);
  b->size = bytes;
  b->cap = cap;
  b->ptr = ptr;
  rt->c.live_buffers++;
  out->bits = t4a__htable_publish(&rt->mem.bufs, i, &t4a__buffer_kind, rt->slot.index);
  if (__builtin_expect(rt->mem.log != NULL, 0)) /* the log off costs this test */
    t4a__memory_note(rt, t4a__alog_alloc_kind(rt->mem.log, rt->c.cache_hits), 0, out->bits, ptr,
                     bytes);
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__buffer_wait_reader(t4a__runtime *rt, t4a__buffer *b) {
  if (!b->reader)
    return T4A_OK;
  t4a__CUcontext saved;
  int rc = t4a__ctx_enter(rt, &saved);
  if (rc)
    return rc;
  t4a__CUresult r = t4a__be.cu.cuStreamWaitEvent(rt->stream, b->reader->ev, 0);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "ordering after another runtime's copy failed");
  t4a__event_put(rt, b->reader);
  b->reader = NULL;
  return T4A_OK;
}

void t4a__buffer_unproven(t4a__runtime *rt, t4a__buffer *b) {
  if (!b->unproven)
    rt->mem.unproven_blocks++;
  b->unproven = true;
}

/* External memory leaves once everything enqueued so far completed: its
 * release is retired behind the current epoch (a foreign reader's wait,
 * just enqueued, belongs to it too). */
static int release_external(t4a__runtime *rt, t4a__buffer *b, bool had_reader) {
  if (had_reader)
    t4a__rt_dirty(rt);
  t4a__rt_progress(rt);
  t4a__retire r = {t4a__epoch_current(&rt->done), b->ext_release, b->ext, b->size, 0};
  if (r.seq > rt->done.completed_seq)
    return t4a__retire_push(rt, &r);
  r.release(rt, &r, false);
  return T4A_OK;
}

/* The FREE event of b: cached when its block is the newest of its bin
 * (cache_put just pushed it), so the free path keeps no flag for it. */
static __attribute__((cold, noinline)) void note_free(t4a__runtime *rt, const t4a__buffer *b,
                                                      t4a_buffer buf) {
  uint64_t cls_cap;
  const t4a__bin *bin = b->cap ? &rt->mem.bins[t4a__size_class(b->cap, &cls_cap)] : NULL;
  bool cached = bin && bin->count && bin->ptrs[bin->count - 1] == b->ptr;
  t4a__memory_note(rt, T4A_ALLOC_EVENT_FREE, cached, buf.bits, b->ptr, b->size);
}

int t4a__slot_buffer_free(t4a_runtime h, t4a_buffer buf) {
  t4a__runtime *rt;
  t4a__buffer *b;
  int rc = t4a__rt_lock(h, "buffer_free", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__capture_refuse(&rt->cap, "buffer_free",
                                "would let memory the graph may use be reused")) ||
      (rc = t4a__buffer_get(rt, buf, "buffer_free", &b)))
    goto out;
  bool had_reader = b->reader != NULL;
  if ((rc = t4a__buffer_wait_reader(rt, b)))
    goto out;
  if (b->unproven) { /* may still be read elsewhere: kept, never reused (counted) */
    t4a__keep((const void *)(uintptr_t)b->ptr);
  } else if (b->ext_release) {
    if ((rc = release_external(rt, b, had_reader)))
      goto out;
  } else if (b->cap && !cache_put(rt, b->ptr, b->cap)) {
    t4a__CUcontext saved;
    if ((rc = t4a__ctx_enter(rt, &saved)))
      goto out;
    rc = pool_free(rt, b->ptr, b->cap);
    t4a__ctx_leave(rt, saved);
    if (rc)
      goto out;
  }
  if (__builtin_expect(rt->mem.log != NULL, 0) && !b->ext_release) /* the log off: this test */
    note_free(rt, b, buf);
  t4a__htable_release(&rt->mem.bufs, t4a__h_index(buf.bits));
  rt->c.live_buffers--;
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_buffer_size(t4a_runtime h, t4a_buffer buf, uint64_t *bytes) {
  t4a__runtime *rt;
  t4a__buffer *b;
  if (!bytes)
    return t4a__fail(T4A_EINVAL, "buffer_size: bytes is NULL; pass a pointer");
  int rc = t4a__rt_lock_any(h, "buffer_size", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__buffer_get(rt, buf, "buffer_size", &b)) == T4A_OK)
    *bytes = b->size;
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_buffer_device_address(t4a_runtime h, t4a_buffer buf, uint64_t *address) {
  t4a__runtime *rt;
  t4a__buffer *b;
  if (!address)
    return t4a__fail(T4A_EINVAL, "buffer_device_address: address is NULL; pass a pointer");
  int rc = t4a__rt_lock(h, "buffer_device_address", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__buffer_get(rt, buf, "buffer_device_address", &b)) == T4A_OK)
    *address = b->ptr;
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_cache_trim(t4a_runtime h, uint64_t keep_bytes) {
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "cache_trim", &rt);
  if (rc)
    return rc;
  if (!(rc = t4a__capture_refuse(&rt->cap, "cache_trim", "frees memory on the stream")))
    rc = t4a__cache_trim_locked(rt, keep_bytes);
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_cache_stats(t4a_runtime h, t4a_cache_stats *out) {
  int rc = t4a__check_struct(out, T4A_CACHE_STATS_V1_0_SIZE, "t4a_cache_stats");
  t4a__runtime *rt;
  if (rc || (rc = t4a__rt_lock_any(h, "cache_stats", &rt)))
    return rc;
  t4a_cache_stats s =
      t4a__cache_stats_of(&rt->c, rt->mem.cache_entries, rt->mem.cache_bytes,
                          rt->opts.cache_limit_bytes, rt->pin.cache_count, rt->pin.cache_bytes);
  t4a__rt_unlock(rt);
  t4a__fill_struct(out, &s, sizeof s);
  return T4A_OK;
}

void t4a__memory_wait_readers(t4a__runtime *rt) {
  for (uint32_t i = 0; i < rt->mem.bufs.count; i++) {
    t4a__buffer *b = t4a__htable_live(&rt->mem.bufs, i) ? t4a__htable_at(&rt->mem.bufs, i) : NULL;
    if (!b || !b->reader)
      continue;
    /* rt's context is current (destroy): order the stream after the
     * reader; if that fails, wait on the host; if that fails too, the
     * block may still be read: kept, never freed (destroy reports it) */
    t4a__CUresult r = t4a__be.cu.cuStreamWaitEvent(rt->stream, b->reader->ev, 0);
    if (r != T4A__CUDA_SUCCESS)
      r = t4a__be.cu.cuEventSynchronize(b->reader->ev);
    if (r != T4A__CUDA_SUCCESS) {
      t4a__buffer_unproven(rt, b);
      t4a__released(rt, r, NULL, "waiting for another runtime's copy from a buffer");
    }
    t4a__event_put(rt, b->reader);
    b->reader = NULL;
  }
}

t4a__CUmemoryPool t4a__memory_fini(t4a__runtime *rt, bool idle, bool keep_pool) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__memory *m = &rt->mem;
  t4a__alog_free(m->log); /* host memory no GPU work touches */
  m->log = NULL;
  if (!idle) /* blocks may still be read or written: keep them, and what lists them */
    return NULL;
  for (unsigned cls = 0; cls < T4A__NUM_CLASSES; cls++)
    for (uint32_t i = 0; i < m->bins[cls].count; i++)
      t4a__released(rt, cu->cuMemFreeAsync(m->bins[cls].ptrs[i], rt->stream),
                    (void *)(uintptr_t)m->bins[cls].ptrs[i], "cuMemFreeAsync");
  for (uint32_t i = 0; i < m->bufs.count; i++) {
    const t4a__buffer *b = t4a__htable_at(&m->bufs, i);
    if (b->h.live && b->unproven) /* may still be read elsewhere */
      t4a__keep((const void *)(uintptr_t)b->ptr);
    else if (b->h.live && b->ext_release) /* the stream drained: let it go now */
      b->ext_release(rt, &(t4a__retire){0, b->ext_release, b->ext, b->size, 0}, true);
    else if (b->h.live && b->cap)
      t4a__released(rt, cu->cuMemFreeAsync(b->ptr, rt->stream), (void *)(uintptr_t)b->ptr,
                    "cuMemFreeAsync");
  }
  t4a__released(rt, cu->cuStreamSynchronize(rt->stream), NULL, "cuStreamSynchronize");
  t4a__CUmemoryPool kept = NULL;
  /* a pool handed on must hold no memory: trimmed, and nothing unproven in it */
  if (keep_pool && m->pool && !m->unproven_blocks && !rt->release_r &&
      cu->cuMemPoolTrimTo(m->pool, 0) == T4A__CUDA_SUCCESS)
    kept = m->pool;
  else if (m->pool)
    t4a__released(rt, cu->cuMemPoolDestroy(m->pool), m->pool, "cuMemPoolDestroy");
  for (unsigned cls = 0; cls < T4A__NUM_CLASSES; cls++)
    free(m->bins[cls].ptrs);
  t4a__htable_fini(&m->bufs);
  memset(m, 0, sizeof *m);
  return kept;
}
