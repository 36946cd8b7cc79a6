/* tests/fakecuda/fake_pool.c -- stream-ordered memory pools, as CUDA's:
 *
 *  - a block freed by cuMemFreeAsync returns to its pool when the free runs
 *    in stream order; the pool keeps it reserved (counted against the
 *    device) and hands it out again: at once to an allocation of the same
 *    size on the stream that freed it (stream order separates the uses),
 *    to any stream once the free ran;
 *  - on a stream or event synchronisation a pool releases cached memory
 *    above its release threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; 0 by
 *    default: all of it); cuMemPoolTrimTo releases down to a size;
 *  - an allocation short of device memory first releases the pool's own
 *    cached blocks, then those of the device's other pools (the H200's
 *    driver 580 does: an allocation succeeded while another pool held the
 *    memory unused under a release threshold of UINT64_MAX), then fails
 *    with CUDA_ERROR_OUT_OF_MEMORY;
 *  - only the pool's device, and devices granted access with
 *    cuMemPoolSetAccess, may access its memory (cuCtxEnablePeerAccess does
 *    not cover pool memory);
 *  - cuMemPoolDestroy returns at once; blocks still allocated are released
 *    when freed.
 * A free that runs while operations queued on other streams still use the
 * block is a violation (the block is then freed under them). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

static struct CUmemPoolHandle_st *pools; /* every pool ever made (tombstones too) */

/* Releases one cached block of p to the OS (G held). */
static void release(struct CUmemPoolHandle_st *p, alloc *a) {
  alloc **pp = &p->blocks;
  while (*pp != a)
    pp = &(*pp)->pool_next;
  *pp = a->pool_next;
  p->reserved -= a->bytes;
  a->pool = NULL;
  fake_alloc_release(a);
}

/* Releases p's cached blocks, largest first, until at most keep bytes are
 * reserved or none is left (G held). */
static void trim(struct CUmemPoolHandle_st *p, uint64_t keep) {
  while (p->reserved > keep) {
    alloc *big = NULL;
    for (alloc *a = p->blocks; a; a = a->pool_next)
      if (a->state == A_CACHED && (!big || a->bytes > big->bytes))
        big = a;
    if (!big)
      return;
    release(p, big);
  }
}

void fake_pool_freed(alloc *a) {
  if (a->queued)
    fake_violation("a stream-ordered free of %p ran while %u operation(s) queued on other "
                   "streams still use the block",
                   (void *)(a->base + FAKE_GUARD), a->queued);
  a->state = A_CACHED;
  a->free_stream = NULL;
  if (a->pool->o.dead || a->pool->imported) /* the pool is gone, or the block is an import */
    release(a->pool, a);
  pthread_cond_broadcast(&fake_changed);
}

void fake_pools_synchronised(void) {
  for (struct CUmemPoolHandle_st *p = pools; p; p = p->next)
    if (!p->o.dead)
      trim(p, p->threshold);
}

static R pool_get(t4a__CUmemoryPool p, const char *what) {
  return fake_obj_check(p, OBJ_POOL, what);
}

R fake_sym_cuMemPoolCreate(t4a__CUmemoryPool *p, const t4a__CUmemPoolProps *props) {
  FAKE_ENTER("cuMemPoolCreate");
  if (!p || !props || props->allocType != T4A__CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != T4A__CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
      props->location.id >= fake_device_count() ||
      (props->handleTypes != T4A__CU_MEM_HANDLE_TYPE_NONE &&
       props->handleTypes != T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  t4a__CUmemoryPool n = calloc(1, sizeof *n);
  if (!n)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  n->device = props->location.id;
  n->access = 1u << n->device;
  if (props->handleTypes == T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
      fake_ipc_pool_init(n) != OK) { /* shareable: blocks from shared memory (fake_ipc.c) */
    free(n);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  LOCK();
  fake_obj_register(&n->o, OBJ_POOL, NULL);
  n->next = pools;
  pools = n;
  fake_live[LIVE_POOL]++;
  UNLOCK();
  *p = n;
  return OK;
}

R fake_sym_cuMemPoolDestroy(t4a__CUmemoryPool p) {
  FAKE_ENTER_ON("cuMemPoolDestroy", fake_object_device(p, OBJ_POOL));
  LOCK();
  R r = pool_get(p, "cuMemPoolDestroy");
  if (!r) { /* returns at once: blocks still allocated go when they are freed */
    p->o.dead = true;
    fake_live[LIVE_POOL]--;
    trim(p, 0);
  }
  UNLOCK();
  return r;
}

R fake_sym_cuMemPoolSetAttribute(t4a__CUmemoryPool p, t4a__CUmemPool_attribute a, void *v) {
  FAKE_ENTER("cuMemPoolSetAttribute");
  if (!v || a != T4A__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = pool_get(p, "cuMemPoolSetAttribute");
  if (!r)
    memcpy(&p->threshold, v, sizeof p->threshold);
  UNLOCK();
  return r;
}

R fake_sym_cuMemPoolTrimTo(t4a__CUmemoryPool p, size_t keep) {
  FAKE_ENTER("cuMemPoolTrimTo");
  LOCK();
  R r = pool_get(p, "cuMemPoolTrimTo");
  if (!r)
    trim(p, keep);
  UNLOCK();
  return r;
}

R fake_sym_cuMemPoolSetAccess(t4a__CUmemoryPool p, const t4a__CUmemAccessDesc *map, size_t count) {
  FAKE_ENTER("cuMemPoolSetAccess");
  if (!map)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = pool_get(p, "cuMemPoolSetAccess");
  for (size_t i = 0; i < count && !r; i++) {
    int d = map[i].location.id;
    if (map[i].location.type != T4A__CU_MEM_LOCATION_TYPE_DEVICE || d < 0 ||
        d >= fake_device_count() || (map[i].flags != 0 && map[i].flags != 3))
      r = T4A__CUDA_ERROR_INVALID_VALUE;
    else if (p->imported && map[i].flags) /* an importer grants its own devices access */
      p->access |= 1u << d;
    else if (p->imported)
      p->access &= ~(1u << d);
    else if (d != p->device && !fake_can_access_peer(d, p->device))
      r = T4A__CUDA_ERROR_INVALID_DEVICE; /* no peer path */
    else if (d != p->device && map[i].flags)
      p->access |= 1u << d;
    else if (d != p->device)
      p->access &= ~(1u << d);
  }
  UNLOCK();
  return r;
}

/* Bytes of the pool's blocks not cached (in use or with their free still
 * queued: CUDA counts them as used until the free runs). G held. */
static uint64_t pool_used(const struct CUmemPoolHandle_st *p) {
  uint64_t n = 0;
  for (const alloc *b = p->blocks; b; b = b->pool_next)
    if (b->state != A_CACHED)
      n += b->bytes;
  return n;
}

R fake_sym_cuMemPoolGetAttribute(t4a__CUmemoryPool p, t4a__CUmemPool_attribute a, void *v) {
  FAKE_ENTER("cuMemPoolGetAttribute");
  if (!v)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = pool_get(p, "cuMemPoolGetAttribute");
  uint64_t x = 0;
  if (!r) {
    switch ((int)a) {
    case T4A__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: x = p->threshold; break;
    case T4A__CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: x = p->reserved; break;
    case T4A__CU_MEMPOOL_ATTR_USED_MEM_CURRENT: x = pool_used(p); break;
    case T4A__CU_MEMPOOL_ATTR_USED_MEM_HIGH: x = p->used_high; break;
    default: r = T4A__CUDA_ERROR_INVALID_VALUE;
    }
  }
  UNLOCK();
  if (!r)
    memcpy(v, &x, sizeof x);
  return r;
}

R fake_sym_cuMemAllocFromPoolAsync(t4a__CUdeviceptr *ptr, size_t bytes, t4a__CUmemoryPool p,
                                   t4a__CUstream s) {
  FAKE_ENTER("cuMemAllocFromPoolAsync");
  if (!ptr || !bytes)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = pool_get(p, "cuMemAllocFromPoolAsync");
  if (!r && p->imported)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                    "cuMemAllocFromPoolAsync: the pool is imported (another process's)");
  if (!r)
    r = fake_stream_get(&s, "cuMemAllocFromPoolAsync");
  if (!r && s->capture) /* hook: the fake has no allocation nodes (fake_graph.c) */
    r = fake_capture_illegal(s, "cuMemAllocFromPoolAsync");
  alloc *a = NULL;
  if (!r) { /* a cached block of this size whose free ran, or was queued on s */
    for (alloc *b = p->blocks; b && !a; b = b->pool_next)
      if (b->bytes == bytes &&
          (b->state == A_CACHED || (b->state == A_FREEING && b->free_stream == s)))
        a = b;
    if (a) {
      a->state = A_LIVE;
      a->free_stream = NULL;
      a->gen++; /* a queued free of its previous use no longer applies */
    }
  }
  if (!r && !a) {
    uint64_t used = fake_device_used(p->device), limit = fake_device_limit();
    if (used + bytes > limit) { /* short: first give back what the pool holds unused */
      uint64_t need = used + bytes - limit;
      trim(p, p->reserved > need ? p->reserved - need : 0);
      for (struct CUmemPoolHandle_st *o = pools; o; o = o->next) {
        used = fake_device_used(p->device);
        if (used + bytes <= limit)
          break;
        if (o != p && !o->o.dead && o->device == p->device) {
          need = used + bytes - limit;
          trim(o, o->reserved > need ? o->reserved - need : 0);
        }
      }
    }
    if (fake_device_used(p->device) + bytes > fake_device_limit())
      r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
    else if (!(a = p->region ? fake_region_alloc(p, bytes, p->device)
                             : fake_alloc_new(bytes, MEM_DEVICE, p->device)))
      r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
    else {
      a->pool = p;
      a->state = A_LIVE;
      a->pool_next = p->blocks;
      p->blocks = a;
      p->reserved += bytes;
    }
  }
  if (!r) {
    uint64_t used = pool_used(p);
    if (used > p->used_high)
      p->used_high = used;
  }
  UNLOCK();
  if (r)
    return r;
  *ptr = (t4a__CUdeviceptr)(uintptr_t)(a->base + FAKE_GUARD);
  return OK;
}

R fake_sym_cuMemFreeAsync(t4a__CUdeviceptr ptr, t4a__CUstream s) {
  FAKE_ENTER_ON("cuMemFreeAsync", fake_alloc_device((void *)(uintptr_t)ptr, MEM_DEVICE));
  LOCK();
  R r = fake_stream_get(&s, "cuMemFreeAsync");
  alloc *a = r ? NULL : fake_alloc_at((void *)(uintptr_t)ptr, MEM_DEVICE);
  if (!r && (!a || a->state != A_LIVE || !a->pool))
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE, "cuMemFreeAsync(%p): %s", (void *)(uintptr_t)ptr,
                    a ? "freed already" : "no pool allocation");
  /* a is set when r is 0 (fake_misuse returns its nonzero code) */
  if (!r && a) {
    a->state = A_FREEING; /* a second free of the same block is an error */
    a->free_stream = s;
    op o = {.kind = OP_FREE, .target = a, .gen = a->gen};
    r = fake_enqueue(s, &o);
    if (r)
      a->state = A_LIVE;
  }
  UNLOCK();
  return r;
}
