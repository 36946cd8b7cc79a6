/* plugin-host/memory.c -- a runtime's device memory on the host: the pool
 * (chunks mapped with mmap, 256-byte aligned blocks carved from them), the
 * cache of freed blocks by size class (backend-core/sizeclass.h), the buffer slots
 * and memset.
 *
 * Stream-ordered reuse comes free: the queue is in order, so a block freed
 * now is only touched again by work enqueued later, after the work that
 * used it. A block another runtime's copy read (cross.c) is reused only
 * behind a wait for that copy, in the queue (t4a__hbuf_wait_reader).
 *
 * The pool maps chunks of CHUNK bytes (MADV_HUGEPAGE) and carves them in
 * order; a chunk is remapped from its start once every block carved from it
 * came back, and unmapped by cache_trim. A block larger than CHUNK / 8 gets
 * a mapping of its own. T4A_HOST_POOL_LIMIT (bytes) bounds what a pool maps
 * (default: the physical memory), for tests of T4A_ENOMEM. */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/checked.h"
#include "common/env.h"
#include "backend-core/cachestats.h"
#include "backend-core/fill.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "plugin-host/host.h"

#define CHUNK (64ull << 20)
#define ALIGN 256u

int t4a__hbuf_get(t4a__hrt *rt, t4a_buffer h, const char *what, t4a__hbuf **out) {
  int rc;
  *out = t4a__htable_find(&rt->mem.bufs, &t4a__buffer_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

/* T4A_HOST_POOL_LIMIT, read at each runtime_create (tests set it between
 * runtimes). The secure-mode check of t4a__getenv asks the kernel for four
 * ids each time; whether the process runs setuid is decided once. */
static const char *pool_limit_env(void) {
  static atomic_int secure = -1;
  int s = atomic_load_explicit(&secure, memory_order_relaxed);
  if (s < 0)
    atomic_store_explicit(&secure, s = t4a__env_is_secure(), memory_order_relaxed);
  return s ? NULL : getenv("T4A_HOST_POOL_LIMIT");
}

int t4a__hmem_init(t4a__hrt *rt) {
  if ((rt->opts.flags & T4A_RUNTIME_ALLOC_LOG) &&
      !(rt->mem.log = t4a__alog_new(rt->opts.alloc_log_events)))
    return t4a__fail(T4A_ENOMEM,
                     "runtime_create: no host memory for the allocation log of %u events; "
                     "free memory or ask for fewer (alloc_log_events)",
                     rt->opts.alloc_log_events);
  t4a__htable_init(&rt->mem.bufs, sizeof(t4a__hbuf));
  const char *env = pool_limit_env();
  char *end = NULL;
  unsigned long long limit = env && *env ? strtoull(env, &end, 0) : 0;
  rt->mem.limit = limit && end && !*end ? (uint64_t)limit : t4a__host_device.total_memory;
  if (!rt->mem.limit)
    rt->mem.limit = T4A__MAX_ALLOC;
  t4a__budget_init(&rt->mem.budget, &rt->opts);
  return T4A_OK;
}

__attribute__((cold, noinline)) void t4a__hmem_note(t4a__hrt *rt, uint32_t kind, uint32_t detail,
                                                    uint64_t buffer, uint64_t address,
                                                    uint64_t bytes) {
  t4a__alog_note(rt->mem.log, kind, detail, buffer, address, bytes, rt->mem.used,
                 t4a__queue_tail(&rt->q));
}

static void unmap(t4a__hrt *rt, t4a__chunk **link) {
  t4a__chunk *c = *link;
  *link = c->next;
  if (c->guarded)
    t4a__hcheck_unwatch(c);
  rt->mem.reserved -= c->size;
  munmap(c->base, c->size);
  free(c);
  rt->c.driver_frees++;
}

static t4a__chunk *map(t4a__hrt *rt, uint64_t size) {
  if (size > rt->mem.limit || rt->mem.reserved > rt->mem.limit - size)
    return NULL;
  t4a__chunk *c = calloc(1, sizeof *c);
  void *p =
      c ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
  if (p == MAP_FAILED) {
    free(c);
    return NULL;
  }
#ifdef MADV_HUGEPAGE
  if (size >= (2u << 20))
    madvise(p, size, MADV_HUGEPAGE); /* a hint: fewer TLB misses in large copies */
#endif
  c->base = p;
  c->size = size;
  c->next = rt->mem.chunks;
  rt->mem.chunks = c;
  rt->mem.reserved += size;
  rt->c.driver_allocations++;
  return c;
}

/* A new block of `cap` bytes from the pool; false when the pool is full. */
static bool carve(t4a__hrt *rt, uint64_t cap, t4a__block *out) {
  uint64_t need = (cap + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
  uint64_t chunk = rt->mem.limit < CHUNK ? rt->mem.limit : CHUNK;
  t4a__chunk *c = NULL;
  if (need > chunk / 8) {
    uint64_t size = (need + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
    c = map(rt, size);
  } else {
    for (c = rt->mem.chunks; c && c->size - c->used < need; c = c->next)
      ;
    if (!c)
      c = map(rt, chunk);
  }
  if (!c)
    return false;
  out->ptr = c->base + c->used;
  out->chunk = c;
  c->used += need;
  c->live += need;
  rt->mem.used += cap;
  if (rt->mem.used > rt->mem.high_water)
    rt->mem.high_water = rt->mem.used;
  return true;
}

/* Gives a block back to the pool: its chunk is carved again from the start
 * once all of its blocks came back (later work only: the queue is in order). */
static void give(t4a__hrt *rt, const t4a__block *b, uint64_t cap) {
  uint64_t need = (cap + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
  b->chunk->live -= need;
  if (!b->chunk->live)
    b->chunk->used = 0;
  rt->mem.used -= cap;
}

/* Gives cached blocks back until at most keep bytes are cached, largest
 * classes first. */
static void evict(t4a__hrt *rt, uint64_t keep) {
  uint64_t before = rt->mem.cache_bytes;
  for (unsigned cls = T4A__NUM_CLASSES; cls-- > 0 && rt->mem.cache_bytes > keep;) {
    t4a__hbin *bin = &rt->mem.bins[cls];
    uint64_t cap = t4a__class_cap(cls);
    while (bin->count && rt->mem.cache_bytes > keep) {
      give(rt, &bin->blocks[--bin->count], cap);
      rt->mem.cache_entries--;
      rt->mem.cache_bytes -= cap;
    }
  }
  if (rt->mem.log && rt->mem.cache_bytes < before)
    t4a__hmem_note(rt, T4A_ALLOC_EVENT_TRIM, 0, 0, 0, before - rt->mem.cache_bytes);
}

/* Unmaps the chunks no block is carved from (the queue is drained). */
static void unmap_empty(t4a__hrt *rt) {
  for (t4a__chunk **l = &rt->mem.chunks; *l;)
    if (!(*l)->live)
      unmap(rt, l);
    else
      l = &(*l)->next;
}

void t4a__hmem_sync(t4a__hrt *rt) {
  if (rt->mem.reserved <= rt->opts.pool_release_threshold || !t4a__queue_idle(&rt->q))
    return;
  for (t4a__chunk **l = &rt->mem.chunks; *l && rt->mem.reserved > rt->opts.pool_release_threshold;)
    if (!(*l)->live)
      unmap(rt, l);
    else
      l = &(*l)->next;
}

/* Caches a freed block, or gives it back when the cache would pass its
 * limit (or its bin cannot grow). */
static void cache_put(t4a__hrt *rt, const t4a__block *b, uint64_t cap) {
  uint64_t ignored;
  unsigned cls = t4a__size_class(cap, &ignored);
  t4a__hbin *bin = &rt->mem.bins[cls];
  if (rt->mem.cache_bytes + cap > rt->opts.cache_limit_bytes)
    evict(rt, rt->opts.cache_limit_bytes > cap ? rt->opts.cache_limit_bytes - cap : 0);
  if (rt->mem.cache_bytes + cap > rt->opts.cache_limit_bytes) {
    give(rt, b, cap);
    return;
  }
  if (bin->count == bin->cap) {
    uint64_t n;
    size_t bytes;
    t4a__block *p = t4a__grow(bin->cap, 8, UINT32_MAX, sizeof *p, &n, &bytes)
                        ? realloc(bin->blocks, bytes)
                        : NULL;
    if (!p) {
      give(rt, b, cap);
      return;
    }
    bin->blocks = p;
    bin->cap = (uint32_t)n;
  }
  bin->blocks[bin->count++] = *b;
  rt->mem.cache_entries++;
  rt->mem.cache_bytes += cap;
}

int t4a__hbuf_wrap(t4a__hrt *rt, const char *what, uint64_t address, uint64_t bytes, t4a__ext *ext,
                   void (*released)(t4a__hrt *, void *, uint64_t, bool), t4a_buffer *out) {
  uint32_t i;
  int rc = t4a__htable_take(&rt->mem.bufs, what, &i);
  if (rc)
    return rc;
  t4a__hbuf *b = t4a__htable_at(&rt->mem.bufs, i);
  b->size = bytes;
  b->blk.ptr = (char *)(uintptr_t)address;
  b->ext = ext;
  b->ext_released = released;
  out->bits =
      t4a__htable_publish_seq(&rt->mem.bufs, i, &t4a__buffer_kind, rt->slot.index, &rt->slot.seq);
  rt->c.live_buffers++;
  return T4A_OK;
}

/* The consumer's memory goes back to it behind the work queued so far. */
static void ext_retire(t4a__hrt *rt, t4a__hbuf *b) {
  t4a__hretire r = {t4a__queue_tail(&rt->q), b->ext_released, b->ext, 0};
  b->ext = NULL;
  t4a__retire_add(rt, &r);
}

/* A new block of `cap` bytes for buffer_alloc within the budget (on `used`):
 * the cache is trimmed first when the budget is short (all of it when that
 * is not enough), and when the pool cannot carve it (the queue drained and
 * empty chunks unmapped, once). False when it still does not fit, with
 * *reason (T4A_OUT_OF_MEMORY_*) and the failure recorded. */
static bool fresh(t4a__hrt *rt, uint64_t bytes, uint64_t cap, t4a__block *out, uint32_t *reason) {
  t4a__hmem *m = &rt->mem;
  uint64_t short_by = t4a__budget_shortfall(&m->budget, m->used, cap);
  if (short_by) {
    evict(rt, short_by <= m->cache_bytes ? m->cache_bytes - short_by : 0);
    if (!t4a__budget_fits(&m->budget, m->used, cap)) {
      *reason = T4A_OUT_OF_MEMORY_LIMIT;
      if (m->log)
        t4a__hmem_note(rt, T4A_ALLOC_EVENT_OUT_OF_MEMORY, *reason, 0, 0, cap);
      t4a__fail(T4A_ENOMEM,
                "buffer_alloc: %llu bytes would pass this runtime's pool_limit_bytes (%llu held "
                "of %llu, its cache trimmed); free buffers, raise the limit or give the runtime "
                "an out_of_memory callback",
                (unsigned long long)cap, (unsigned long long)m->used,
                (unsigned long long)m->budget.limit);
      return false;
    }
  }
  if (carve(rt, cap, out))
    return true;
  evict(rt, 0); /* trim the cache and try once more */
  t4a__hrt_drain(rt, t4a__queue_tail(&rt->q));
  unmap_empty(rt);
  if (carve(rt, cap, out))
    return true;
  *reason = T4A_OUT_OF_MEMORY_DEVICE;
  if (m->log)
    t4a__hmem_note(rt, T4A_ALLOC_EVENT_OUT_OF_MEMORY, *reason, 0, 0, cap);
  t4a__fail(T4A_ENOMEM,
            "buffer_alloc: %llu bytes: the pool is out of memory (%llu of at most %llu bytes "
            "mapped; T4A_HOST_POOL_LIMIT sets the bound); free buffers",
            (unsigned long long)bytes, (unsigned long long)m->reserved,
            (unsigned long long)m->limit);
  return false;
}

/* A block of class cls: from the cache, else fresh. */
static bool block_for(t4a__hrt *rt, uint64_t bytes, unsigned cls, uint64_t cap, t4a__block *out,
                      uint32_t *reason) {
  t4a__hbin *bin = &rt->mem.bins[cls];
  if (!bin->count)
    return fresh(rt, bytes, cap, out, reason);
  *out = bin->blocks[--bin->count];
  rt->mem.cache_entries--;
  rt->mem.cache_bytes -= cap;
  rt->c.cache_hits++;
  return true;
}

/* The out-of-memory callback, once, and one more try when it asks for it
 * (t4a_out_of_memory_fn); rt's buffer entry was given back before. T4A_OK
 * with *out filled; else the status (T4A_EHANDLE: the callback destroyed
 * rt; its slot stays locked, budget.h). */
static int ask_then_retry(t4a__hrt *rt, t4a_runtime h, uint64_t bytes, unsigned cls, uint64_t cap,
                          t4a__block *out, uint32_t reason) {
  t4a_out_of_memory_info info = {sizeof info,         reason, h, bytes, cap, rt->mem.used,
                                 rt->mem.budget.limit};
  rt->c.out_of_memory_calls++;
  bool retry = false;
  int rc = t4a__budget_ask(&rt->slot, h, &rt->mem.budget, &info, &retry);
  if (rc)
    return rc; /* gone */
  if ((rc = t4a__hrt_refuse(rt, "buffer_alloc", "would change memory the graph may use")))
    return rc; /* the callback began a capture */
  if (!retry)
    rc = t4a__fail(T4A_ENOMEM,
                   "buffer_alloc: %llu bytes do not fit (%s) and the out-of-memory callback "
                   "asked for no retry; free buffers or trim caches",
                   (unsigned long long)cap,
                   reason == T4A_OUT_OF_MEMORY_LIMIT ? "the pool_limit_bytes budget"
                                                     : "the pool is full");
  else if (!block_for(rt, bytes, cls, cap, out, &reason))
    rc = T4A_ENOMEM; /* block_for said why */
  if (rc)
    rt->c.out_of_memory_failures++;
  return rc;
}

/* buffer_alloc when the cache has no block of the class (entry *i taken,
 * its size and cap set): a fresh block; else the entry goes back while the
 * out-of-memory callback runs and is taken again (*i) for the retry's
 * block. T4A_EHANDLE: the callback destroyed rt (its slot stays locked,
 * budget.h; touch nothing). A function of its own: the hit path stays as
 * lean as it was. */
static __attribute__((noinline)) int alloc_miss(t4a__hrt *rt, t4a_runtime h, uint64_t bytes,
                                                unsigned cls, uint32_t *i) {
  rt->c.cache_misses++;
  t4a__hbuf *e = t4a__htable_at(&rt->mem.bufs, *i);
  uint64_t cap = e->cap;
  uint32_t reason = 0;
  if (fresh(rt, bytes, cap, &e->blk, &reason))
    return T4A_OK;
  t4a__htable_untake(&rt->mem.bufs, *i); /* the callback may use the table */
  if (!t4a__budget_can_ask(&rt->mem.budget)) {
    rt->c.out_of_memory_failures++;
    return T4A_ENOMEM; /* fresh said why */
  }
  t4a__block blk;
  int rc = ask_then_retry(rt, h, bytes, cls, cap, &blk, reason);
  if (rc)
    return rc;
  if ((rc = t4a__htable_take(&rt->mem.bufs, "buffer_alloc", i))) {
    give(rt, &blk, cap); /* no entry for it after all (cache_put has one caller: inlined) */
    return rc;
  }
  t4a__hbuf *b = t4a__htable_at(&rt->mem.bufs, *i);
  b->size = bytes;
  b->cap = cap;
  b->blk = blk;
  return T4A_OK;
}

int t4a__slot_buffer_alloc(t4a_runtime h, uint64_t bytes, t4a_buffer *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "buffer_alloc: out is NULL; pass a pointer");
  out->bits = 0; /* the null handle on any failure, as on CUDA */
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "buffer_alloc", &rt)))
    return rc;
  if ((rc = t4a__hrt_refuse(rt, "buffer_alloc", "would change memory the graph may use")))
    goto out;
  if (bytes > T4A__MAX_ALLOC) {
    rc = t4a__fail(T4A_ENOMEM,
                   "buffer_alloc: %llu bytes is more than any pool holds (64 TiB); ask for less",
                   (unsigned long long)bytes);
    goto out;
  }
  /* The entry first, filled in place (take zeroes it): the hit path copies
   * no struct and zeroes nothing twice. Nothing below touches the table. */
  uint32_t i;
  if ((rc = t4a__htable_take(&rt->mem.bufs, "buffer_alloc", &i)))
    goto out;
  t4a__hbuf *b = t4a__htable_at(&rt->mem.bufs, i);
  b->size = bytes;
  if (bytes && rt->checked) { /* no cache: each buffer its own guarded mapping */
    rt->c.cache_misses++;
    if (!t4a__budget_fits(&rt->mem.budget, rt->mem.used, bytes)) { /* no callback asked here */
      t4a__htable_untake(&rt->mem.bufs, i);
      rc = t4a__fail(T4A_ENOMEM,
                     "buffer_alloc: %llu bytes: past the runtime's pool_limit_bytes budget "
                     "(%llu bytes; checked mode, T4A_HOST_CHECK=1, asks no out-of-memory "
                     "callback); free buffers",
                     (unsigned long long)bytes, (unsigned long long)rt->mem.budget.limit);
      goto out;
    }
    if (!t4a__hguard_alloc(rt, bytes, &b->blk)) {
      t4a__htable_untake(&rt->mem.bufs, i);
      rc = t4a__fail(T4A_ENOMEM,
                     "buffer_alloc: %llu bytes: no memory for a guarded mapping (checked mode, "
                     "T4A_HOST_CHECK=1; %llu of at most %llu bytes mapped); free buffers",
                     (unsigned long long)bytes, (unsigned long long)rt->mem.reserved,
                     (unsigned long long)rt->mem.limit);
      goto out;
    }
  } else if (bytes) {
    unsigned cls = t4a__size_class(bytes, &b->cap);
    t4a__hbin *bin = &rt->mem.bins[cls];
    if (bin->count) {
      b->blk = bin->blocks[--bin->count];
      rt->mem.cache_entries--;
      rt->mem.cache_bytes -= b->cap;
      rt->c.cache_hits++;
    } else if ((rc = alloc_miss(rt, h, bytes, cls, &i))) {
      goto out; /* T4A_EHANDLE: rt is gone, its slot locked (touch nothing but unlock) */
    } else {
      b = t4a__htable_at(&rt->mem.bufs, i);
    }
  }
  out->bits =
      t4a__htable_publish_seq(&rt->mem.bufs, i, &t4a__buffer_kind, rt->slot.index, &rt->slot.seq);
  rt->c.live_buffers++;
  if (__builtin_expect(rt->mem.log != NULL, 0)) /* the log off costs this test */
    t4a__hmem_note(rt, t4a__alog_alloc_kind(rt->mem.log, rt->c.cache_hits), 0, out->bits,
                   (uint64_t)(uintptr_t)b->blk.ptr, bytes);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

void t4a__hbuf_wait_reader(t4a__hrt *rt, t4a__hbuf *b) {
  if (!b->reader)
    return;
  if (t4a__timeline_reached(b->reader, b->reader_seq)) {
    t4a__timeline_release(b->reader);
  } else { /* the wait takes the buffer's reference on the reader's timeline */
    t4a__op w = {.kind = T4A__OP_WAIT, .rows = 1};
    w.u.wait.tl = b->reader;
    w.u.wait.seq = b->reader_seq;
    t4a__queue_push(&rt->q, &w);
  }
  b->reader = NULL;
}

/* The FREE event of b: cached when its block is the newest of its bin
 * (cache_put just pushed it), so the free path keeps no flag for it. */
static __attribute__((cold, noinline)) void note_free(t4a__hrt *rt, const t4a__hbuf *b,
                                                      t4a_buffer buf) {
  uint64_t cls_cap;
  const t4a__hbin *bin = b->cap ? &rt->mem.bins[t4a__size_class(b->cap, &cls_cap)] : NULL;
  bool cached = bin && bin->count && bin->blocks[bin->count - 1].ptr == b->blk.ptr;
  t4a__hmem_note(rt, T4A_ALLOC_EVENT_FREE, cached, buf.bits, (uint64_t)(uintptr_t)b->blk.ptr,
                 b->size);
}

int t4a__slot_buffer_free(t4a_runtime h, t4a_buffer buf) {
  t4a__hrt *rt;
  t4a__hbuf *b;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "buffer_free", &rt)))
    return rc;
  if ((rc = t4a__hrt_refuse(rt, "buffer_free", "would change memory the graph may use")) ||
      (rc = t4a__hbuf_get(rt, buf, "buffer_free", &b)))
    goto out;
  t4a__hbuf_wait_reader(rt, b);
  bool ext = b->ext != NULL;
  if (ext)
    ext_retire(rt, b);
  else if (b->cap)
    cache_put(rt, &b->blk, b->cap);
  else if (b->blk.chunk && b->blk.chunk->guarded)
    t4a__hguard_free(rt, &b->blk);
  if (__builtin_expect(rt->mem.log != NULL, 0) && !ext) /* the log off costs this test */
    note_free(rt, b, buf);
  t4a__htable_release(&rt->mem.bufs, (uint32_t)(b - (t4a__hbuf *)t4a__htable_at(&rt->mem.bufs, 0)));
  rt->c.live_buffers--;
  if (rt->retire_count) /* the common case, nothing waiting, costs no call */
    t4a__retire_due(rt);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_buffer_size(t4a_runtime h, t4a_buffer buf, uint64_t *bytes) {
  if (!bytes)
    return t4a__fail(T4A_EINVAL, "buffer_size: bytes is NULL; pass a pointer");
  t4a__hrt *rt;
  t4a__hbuf *b;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock_any(h, "buffer_size", &rt)))
    return rc;
  if ((rc = t4a__hbuf_get(rt, buf, "buffer_size", &b)) == T4A_OK)
    *bytes = b->size;
  t4a__hrt_unlock(rt);
  return rc;
}

/* On the host a buffer's device address is its host address: a pointer
 * any host code (part 2's kernels, a consumer's) can use directly. */
int t4a__slot_buffer_device_address(t4a_runtime h, t4a_buffer buf, uint64_t *address) {
  if (!address)
    return t4a__fail(T4A_EINVAL, "buffer_device_address: address is NULL; pass a pointer");
  t4a__hrt *rt;
  t4a__hbuf *b;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "buffer_device_address", &rt)))
    return rc;
  if ((rc = t4a__hbuf_get(rt, buf, "buffer_device_address", &b)) == T4A_OK)
    *address = (uint64_t)(uintptr_t)b->blk.ptr;
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_cache_trim(t4a_runtime h, uint64_t keep_bytes) {
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "cache_trim", &rt)))
    return rc;
  if (!(rc = t4a__hrt_refuse(rt, "cache_trim", "would change memory the graph may use"))) {
    evict(rt, keep_bytes);
    t4a__hrt_drain(rt, t4a__queue_tail(&rt->q)); /* queued work may still use what it unmaps */
    unmap_empty(rt);
  }
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_cache_stats(t4a_runtime h, t4a_cache_stats *out) {
  int rc = t4a__check_struct(out, T4A_CACHE_STATS_V1_0_SIZE, "t4a_cache_stats");
  t4a__hrt *rt;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock_any(h, "cache_stats", &rt)))
    return rc;
  t4a_cache_stats s = t4a__cache_stats_of(&rt->c, rt->mem.cache_entries, rt->mem.cache_bytes,
                                          rt->opts.cache_limit_bytes, 0, 0);
  t4a__hrt_unlock(rt);
  t4a__fill_struct(out, &s, sizeof s);
  return T4A_OK;
}

int t4a__slot_memset(t4a_runtime h, t4a_buffer buf, uint64_t offset, uint32_t pattern,
                     uint32_t element_size, uint64_t count) {
  t4a__hrt *rt;
  t4a__hbuf *b;
  uint64_t bytes;
  int rc = t4a__fill_check(offset, pattern, element_size, count, &bytes);
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock(h, "memset", &rt)))
    return rc;
  if ((rc = t4a__hbuf_get(rt, buf, "memset", &b)) || (rc = t4a__fill_range(offset, bytes, b->size)))
    goto out;
  if (!count)
    goto out;
  t4a__op op = {.kind = T4A__OP_FILL,
                .fill = (uint8_t)element_size,
                .pattern = pattern,
                .dst = b->blk.ptr + offset,
                .bytes = bytes,
                .rows = 1};
  t4a__hrt_enqueue(rt, &op, buf.bits, 0);
out:
  t4a__hrt_unlock(rt);
  return rc;
}

void t4a__hmem_fini(t4a__hrt *rt) {
  for (uint32_t i = 0; i < rt->mem.bufs.count; i++) {
    t4a__hbuf *b = t4a__htable_at(&rt->mem.bufs, i);
    if (!b->h.live)
      continue;
    if (b->reader)
      t4a__timeline_release(b->reader);
    if (b->ext)
      ext_retire(rt, b);
  }
  for (unsigned cls = 0; cls < T4A__NUM_CLASSES; cls++)
    if (rt->mem.bins[cls].cap) /* most never grew: no call for them */
      free(rt->mem.bins[cls].blocks);
  while (rt->mem.chunks)
    unmap(rt, &rt->mem.chunks);
  t4a__hguard_fini(rt);
  t4a__htable_fini(&rt->mem.bufs);
  t4a__alog_free(rt->mem.log);
  rt->mem.log = NULL;
}
