/* tests/fakecuda/fake_memory.c -- memory: device blocks and pinned host
 * buffers backed by host memory with guard zones, and the copies and sets
 * between them.
 *
 * Every allocation counts the queued operations that use it. Freeing one
 * while a queued operation still uses it (cuMemFreeHost under a pending
 * DMA; a stream-ordered free that runs while another stream's copy still
 * reads the block) is a violation; its memory is then poisoned (0xdd) and
 * kept until those operations are gone, so they read garbage instead of
 * freed memory. A copy's ranges are checked when it is enqueued (out of
 * bounds, freed, or another device's memory without a pool grant) and
 * again when it runs (freed meanwhile). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

#define GUARD FAKE_GUARD
#define GUARD_BYTE 0xfd
#define POISON_BYTE 0xdd

static alloc *allocs;    /* live allocations */
static alloc *graveyard; /* released while still used: freed when unused */
static size_t device_used[MAX_DEVICES];

size_t fake_device_limit(void) { return (size_t)fake_env_int("FAKE_CUDA_MEM_MIB", 1024) << 20; }

uint64_t fake_device_used(int device) {
  return device >= 0 && device < MAX_DEVICES ? device_used[device] : 0;
}

uint64_t fake_allocs_on(int kind, int device, bool pooled) {
  uint64_t n = 0;
  for (const alloc *a = allocs; a; a = a->next)
    n += a->kind == kind && a->device == device && (a->state == A_CACHED) == pooled;
  return n;
}

static alloc *alloc_init(alloc *a, size_t bytes, int kind, int device) {
  memset(a->base, GUARD_BYTE, GUARD);
  memset(a->base + GUARD + bytes, GUARD_BYTE, GUARD);
  memset(a->base + GUARD, 0xa5, bytes); /* never zero: tests must write what they read */
  a->bytes = bytes;
  a->kind = kind;
  a->device = device;
  a->next = allocs;
  allocs = a;
  fake_live[kind == MEM_DEVICE ? LIVE_DEVICE : LIVE_HOST]++;
  if (kind == MEM_DEVICE)
    device_used[device] += bytes;
  return a;
}

alloc *fake_alloc_new(size_t bytes, int kind, int device) {
  alloc *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  if (posix_memalign((void **)&a->base, 4096, bytes + 2 * GUARD) != 0) {
    free(a);
    return NULL;
  }
  return alloc_init(a, bytes, kind, device);
}

alloc *fake_alloc_new_at(char *base, size_t bytes, int device) {
  alloc *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->base = base;
  return alloc_init(a, bytes, MEM_DEVICE, device);
}

alloc *fake_alloc_imported(char *p, size_t bytes, int device) {
  alloc *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->base = p - GUARD; /* the exporter's guard zones */
  a->bytes = bytes;
  a->kind = MEM_DEVICE;
  a->device = device;
  a->imported = true;
  a->next = allocs;
  allocs = a;
  fake_live[LIVE_DEVICE]++;
  return a;
}

/* The caller's memory, registered: no guard zones of ours around it, never
 * freed or poisoned by the fake. */
alloc *fake_alloc_register(void *p, size_t bytes, int device, unsigned flags) {
  alloc *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->base = (char *)p - GUARD; /* never dereferenced outside [p, p + bytes) */
  a->bytes = bytes;
  a->kind = MEM_HOST;
  a->device = device;
  a->flags = flags;
  a->registered = true;
  a->next = allocs;
  allocs = a;
  fake_live[LIVE_HOST]++;
  return a;
}

alloc *fake_alloc_find(const void *p, size_t n, int kind) {
  const char *c = p;
  for (alloc *a = allocs; a; a = a->next) {
    const char *u = a->base + GUARD;
    if (a->kind == kind && c >= u && c < u + a->bytes + (a->bytes == 0))
      return (size_t)(u + a->bytes - c) >= n ? a : NULL;
  }
  return NULL;
}

alloc *fake_alloc_at(const void *p, int kind) {
  for (alloc *a = allocs; a; a = a->next)
    if (a->kind == kind && a->base + GUARD == p)
      return a;
  return NULL;
}

bool fake_alloc_was_freed(const void *p) {
  const char *c = p;
  for (alloc *a = graveyard; a; a = a->next)
    if (c >= a->base + GUARD && c < a->base + GUARD + a->bytes)
      return true;
  return false;
}

bool fake_alloc_accessible(const alloc *a, int dev) {
  if (a->kind == MEM_DEVICE && a->imported) /* only where the importer granted access */
    return a->pool && (a->pool->access & (1u << dev)) != 0;
  return a->kind != MEM_DEVICE || a->device == dev ||
         (a->pool && (a->pool->access & (1u << dev)) != 0);
}

static void unlink_from(alloc **list, alloc *a) {
  alloc **pp = list;
  while (*pp && *pp != a)
    pp = &(*pp)->next;
  if (*pp)
    *pp = a->next;
}

static void destroy(alloc *a) {
  if (a->region)
    fake_region_free(a); /* a shareable pool's block: its region takes it back */
  else if (!a->registered && !a->imported)
    free(a->base);
  free(a);
}

void fake_alloc_release(alloc *a) {
  for (size_t i = 0; i < GUARD && !a->registered; i++)
    if ((unsigned char)a->base[i] != GUARD_BYTE ||
        (unsigned char)a->base[GUARD + a->bytes + i] != GUARD_BYTE) {
      fake_guard_violations++;
      break;
    }
  unlink_from(&allocs, a);
  fake_live[a->kind == MEM_DEVICE ? LIVE_DEVICE : LIVE_HOST]--;
  if (a->kind == MEM_DEVICE && !a->imported)
    device_used[a->device] -= a->bytes;
  a->released = true;
  if (a->queued || a->busy) {           /* still used: poisoned, freed when unused */
    if (!a->registered && !a->imported) /* (the caller's or exporter's memory stays theirs) */
      memset(a->base + GUARD, POISON_BYTE, a->bytes);
    a->next = graveyard;
    graveyard = a;
    return;
  }
  destroy(a);
}

static void maybe_destroy(alloc *a) {
  if (a->released && !a->queued && !a->busy) {
    unlink_from(&graveyard, a);
    destroy(a);
  }
}

void fake_alloc_unqueue(alloc *a) {
  a->queued--;
  maybe_destroy(a);
}

void fake_alloc_unpin(alloc *a) {
  a->busy--;
  maybe_destroy(a);
}

/* ---- pinned host memory ------------------------------------------------------------- */

R fake_sym_cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  FAKE_ENTER("cuMemHostAlloc");
  R r = fake_need_ctx();
  if (r)
    return r;
  if (!p || !bytes || (flags & ~7u))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (bytes > ((size_t)fake_env_int("FAKE_CUDA_PINNED_MIB", 4096) << 20))
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  LOCK();
  alloc *a = fake_alloc_new(bytes, MEM_HOST, fake_current()->device);
  if (a)
    a->flags = flags;
  UNLOCK();
  if (!a)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  *p = a->base + GUARD;
  return OK;
}

R fake_sym_cuMemFreeHost(void *p) {
  FAKE_ENTER_ON("cuMemFreeHost", fake_alloc_device(p, MEM_HOST));
  LOCK();
  alloc *a = fake_alloc_at(p, MEM_HOST);
  R r = OK;
  if (!a)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost(%p): no pinned allocation%s", p,
                    fake_alloc_was_freed(p) ? " (freed already)" : "");
  else if (a->queued || a->busy)
    fake_violation("cuMemFreeHost(%p) while %u queued operation(s) still use it", p,
                   a->queued + a->busy);
  if (a)
    fake_alloc_release(a);
  UNLOCK();
  return r;
}

/* The flags a pinned allocation was made with (not resolved by the
 * plugin: tests read them). */
#ifndef FAKE_CUDA_HEADERS
EXPORT R cuMemHostGetFlags(unsigned *flags, void *p);
#endif
R cuMemHostGetFlags(unsigned *flags, void *p) {
  R r = fake_enter("cuMemHostGetFlags", true);
  if (r)
    return r;
  LOCK();
  alloc *a = fake_alloc_find(p, 1, MEM_HOST);
  if (a && flags)
    *flags = a->flags;
  UNLOCK();
  return a && flags ? OK : T4A__CUDA_ERROR_INVALID_VALUE;
}

/* ---- copies --------------------------------------------------------------------------- */

/* Checks a device range a copy on a stream of device `dev` touches (G
 * held) and adds it to o's refs. */
static R device_range(op *o, t4a__CUdeviceptr p, size_t n, int dev, const char *what) {
  alloc *a = fake_alloc_find((void *)(uintptr_t)p, n, MEM_DEVICE);
  if (!a || a->state == A_CACHED) {
    fake_oob_attempts++;
    if (!a && fake_alloc_was_freed((void *)(uintptr_t)p))
      fake_violation("%s: device memory %p was freed", what, (void *)(uintptr_t)p);
    return T4A__CUDA_ERROR_INVALID_VALUE;
  }
  if (a->state == A_FREEING)
    return fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                       "%s: device memory %p is used after its stream-ordered free", what,
                       (void *)(uintptr_t)p);
  if (!fake_alloc_accessible(a, dev))
    return fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                       "%s: a stream of device %d touches device %d's pool memory, which the "
                       "pool did not grant it (cuMemPoolSetAccess)",
                       what, dev, a->device);
  if (o->nrefs < OP_MAX_REFS)
    o->refs[o->nrefs++] = a;
  return OK;
}

/* Checks a host range (G held): pinned memory must hold it all and is
 * added to o's refs; pageable memory is left to the caller. */
static R host_range(op *o, const void *p, size_t n, const char *what, bool *pinned) {
  *pinned = false;
  if (fake_alloc_was_freed(p))
    return fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE, "%s: pinned memory %p was freed", what, p);
  for (alloc *a = allocs; a; a = a->next) {
    const char *u = a->base + GUARD, *c = p;
    if (a->kind == MEM_HOST && c >= u && c < u + a->bytes) {
      if ((size_t)(u + a->bytes - c) < n) {
        fake_oob_attempts++;
        return T4A__CUDA_ERROR_INVALID_VALUE;
      }
      *pinned = true;
      if (o->nrefs < OP_MAX_REFS)
        o->refs[o->nrefs++] = a;
      return OK;
    }
  }
  return OK;
}

typedef enum { H2D, D2H, D2D } direction;

/* The check of a call that names its context through its stream (G held):
 * fake_refuse_uncurrent, then a faulted device refuses, as every call that
 * wants a current context does. */
static R by_stream_locked(t4a__CUstream s) {
  R r = fake_refuse_uncurrent(s->o.ctx);
  return r ? r : fake_device_fault(s->device);
}

/* Validates and enqueues one copy. Like CUDA, a copy from pageable memory
 * takes the source at once (the caller may reuse it on return) and a copy
 * into pageable memory returns only once it is done. */
/* A host-to-device copy from pageable memory, and cuMemcpyDtoDAsync, name
 * their context through the stream, as a launch does (fake_module.c): the
 * real driver (580.159.04, measured on an H200) makes them with no context
 * current, or another one, and leaves it alone; FAKE_CUDA_LAUNCH_NEEDS_CONTEXT=1
 * models a driver that refuses (a plain CUDA_ERROR_INVALID_CONTEXT). Every
 * other copy (pinned sources, the staging's chunks included, device to
 * host, between contexts) keeps wanting a current context: the plugin makes
 * its own current for those, and this checks that it does. `by_stream`
 * says a copy is of the first kind (a host-to-device one until its source
 * is known to be pinned). */
static R copy(direction dir, void *dst, const void *src, size_t n, t4a__CUstream s,
              const char *what, bool by_stream) {
  R r = by_stream ? T4A__CUDA_SUCCESS : fake_need_ctx();
  if (r)
    return r;
  op o = {.kind = OP_COPY, .dst = dst, .src = src, .bytes = n};
  bool pinned = true;
  LOCK();
  if ((r = fake_stream_get(&s, what)))
    goto out;
  if (by_stream && (r = by_stream_locked(s)))
    goto out;
  int dev = s->device;
  if (dir == D2D) {
    if (!(r = device_range(&o, (uintptr_t)dst, n, dev, what)))
      r = device_range(&o, (uintptr_t)src, n, dev, what);
  } else if (dir == H2D) {
    if (!(r = device_range(&o, (uintptr_t)dst, n, dev, what)))
      r = host_range(&o, src, n, what, &pinned);
  } else if (!(r = device_range(&o, (uintptr_t)src, n, dev, what))) {
    r = host_range(&o, dst, n, what, &pinned);
    alloc *h = pinned ? o.refs[o.nrefs - 1] : NULL;
    if (!r && h && h->registered && (h->flags & T4A__CU_MEMHOSTREGISTER_READ_ONLY))
      r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                      "%s: writes host memory %p registered read-only", what, dst);
  }
  if (!r && dir == H2D && pinned)
    r = fake_need_ctx_locked();
  if (r)
    goto out;
  if (dir == H2D && !pinned) {
    if (!(o.owned = malloc(n ? n : 1))) {
      r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
      goto out;
    }
    memcpy(o.owned, src, n);
    o.src = o.owned;
  }
  r = fake_enqueue(s, &o);
  if (!r && dir == D2H && !pinned)
    fake_stream_wait_op(s, s->enqueued);
  if (r)
    free(o.owned);
out:
  UNLOCK();
  return r;
}

R fake_sym_cuMemcpyHtoDAsync(t4a__CUdeviceptr dst, const void *src, size_t n, t4a__CUstream s) {
  FAKE_ENTER_STREAM("cuMemcpyHtoDAsync", s);
  return copy(H2D, (void *)(uintptr_t)dst, src, n, s, "cuMemcpyHtoDAsync", true);
}

R fake_sym_cuMemcpyDtoHAsync(void *dst, t4a__CUdeviceptr src, size_t n, t4a__CUstream s) {
  FAKE_ENTER("cuMemcpyDtoHAsync");
  return copy(D2H, dst, (const void *)(uintptr_t)src, n, s, "cuMemcpyDtoHAsync", false);
}

R fake_sym_cuMemcpyDtoDAsync(t4a__CUdeviceptr dst, t4a__CUdeviceptr src, size_t n,
                             t4a__CUstream s) {
  FAKE_ENTER_STREAM("cuMemcpyDtoDAsync", s);
  return copy(D2D, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s, "cuMemcpyDtoDAsync",
              true);
}

/* A copy between two contexts' memory: each pointer must belong to its
 * context's device; the stream's device reads and writes both, so a block
 * of another device needs its pool's grant (the fake treats the copy as a
 * direct peer access, which is what the plugin asks for). */
R fake_sym_cuMemcpyPeerAsync(t4a__CUdeviceptr dst, t4a__CUcontext dctx, t4a__CUdeviceptr src,
                             t4a__CUcontext sctx, size_t n, t4a__CUstream s) {
  FAKE_ENTER("cuMemcpyPeerAsync");
  if (!dctx || !sctx || !fake_ctx_valid(dctx) || !fake_ctx_valid(sctx))
    return T4A__CUDA_ERROR_INVALID_CONTEXT;
  LOCK();
  alloc *d = fake_alloc_find((void *)(uintptr_t)dst, n, MEM_DEVICE);
  alloc *c = fake_alloc_find((void *)(uintptr_t)src, n, MEM_DEVICE);
  R r = OK;
  if ((d && d->device != dctx->device) || (c && c->device != sctx->device))
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                    "cuMemcpyPeerAsync: a pointer is not in its context's device memory");
  else if (dctx->refs == 0 || sctx->refs == 0)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT, "cuMemcpyPeerAsync: a context was released");
  UNLOCK();
  return r ? r
           : copy(D2D, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, s,
                  "cuMemcpyPeerAsync", false);
}

/* The memsets name their context through the stream too (the real driver,
 * 580.159.04 on an H200: with no context current, or another one, each
 * sets the right bytes and leaves the current one alone). */
R fake_sym_cuMemsetD8Async(t4a__CUdeviceptr dst, unsigned char v, size_t n, t4a__CUstream s) {
  FAKE_ENTER_STREAM("cuMemsetD8Async", s);
  op o = {.kind = OP_SET, .dst = (void *)(uintptr_t)dst, .bytes = n, .value = v};
  LOCK();
  R r = fake_stream_get(&s, "cuMemsetD8Async");
  if (!r && !(r = by_stream_locked(s)) &&
      !(r = device_range(&o, dst, n, s->device, "cuMemsetD8Async")))
    r = fake_enqueue(s, &o);
  UNLOCK();
  return r;
}

/* ---- ABI 1.1's calls: 16/32-bit memsets, 2D copies, registration, info ----- */

static R memset_wide(t4a__CUdeviceptr dst, uint32_t v, unsigned width, size_t n, t4a__CUstream s,
                     const char *what) {
  R r;
  if (dst % width) /* CUDA wants the address aligned to the element */
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (n > SIZE_MAX / width)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  op o = {.kind = OP_SET,
          .dst = (void *)(uintptr_t)dst,
          .bytes = n * width,
          .width = (unsigned char)width,
          .value32 = v};
  LOCK();
  if (!(r = fake_stream_get(&s, what)) && !(r = by_stream_locked(s)) &&
      !(r = device_range(&o, dst, n * width, s->device, what)))
    r = fake_enqueue(s, &o);
  UNLOCK();
  return r;
}

R fake_sym_cuMemsetD16Async(t4a__CUdeviceptr dst, unsigned short v, size_t n, t4a__CUstream s) {
  FAKE_ENTER_STREAM("cuMemsetD16Async", s);
  return memset_wide(dst, v, 2, n, s, "cuMemsetD16Async");
}

R fake_sym_cuMemsetD32Async(t4a__CUdeviceptr dst, unsigned int v, size_t n, t4a__CUstream s) {
  FAKE_ENTER_STREAM("cuMemsetD32Async", s);
  return memset_wide(dst, v, 4, n, s, "cuMemsetD32Async");
}

/* One side of a rectangle: its first byte and whether each row is in one
 * allocation of the right kind (pageable host memory is the caller's). */
static R rect_side(unsigned type, const void *host, t4a__CUdeviceptr dev, size_t x, size_t y,
                   size_t pitch, size_t width, size_t rows, uintptr_t *first) {
  if (type == T4A__CU_MEMORYTYPE_HOST)
    *first = (uintptr_t)host + y * pitch + x;
  else if (type == T4A__CU_MEMORYTYPE_DEVICE)
    *first = (uintptr_t)dev + y * pitch + x;
  else
    return T4A__CUDA_ERROR_INVALID_VALUE; /* arrays and unified: not simulated */
  if (rows > 1 && pitch < width)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  for (size_t r = 0; r < rows && type == T4A__CU_MEMORYTYPE_DEVICE; r++)
    if (!fake_alloc_find((const void *)(*first + r * pitch), width, MEM_DEVICE)) {
      fake_oob_attempts++;
      return T4A__CUDA_ERROR_INVALID_VALUE;
    }
  return OK;
}

/* As CUDA: every row checked before any moves, then the rows in order (one
 * copy each: the same rules as the 1D copies, pageable included). */
R fake_sym_cuMemcpy2DAsync(const t4a__CUDA_MEMCPY2D *c, t4a__CUstream s) {
  FAKE_ENTER("cuMemcpy2DAsync");
  R r = fake_need_ctx();
  if (r)
    return r;
  if (!c || c->WidthInBytes == 0 || c->Height == 0)
    return c ? OK : T4A__CUDA_ERROR_INVALID_VALUE;
  uintptr_t src, dst;
  LOCK();
  if (!(r = rect_side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY,
                      c->srcPitch, c->WidthInBytes, c->Height, &src)))
    r = rect_side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY, c->dstPitch,
                  c->WidthInBytes, c->Height, &dst);
  UNLOCK();
  if (r)
    return r;
  direction dir = c->srcMemoryType == T4A__CU_MEMORYTYPE_HOST   ? H2D
                  : c->dstMemoryType == T4A__CU_MEMORYTYPE_HOST ? D2H
                                                                : D2D;
  if (dir == H2D && c->dstMemoryType == T4A__CU_MEMORYTYPE_HOST)
    return T4A__CUDA_ERROR_INVALID_VALUE; /* host to host: not the plugin's */
  for (size_t row = 0; row < c->Height && !r; row++)
    r = copy(dir, (void *)(dst + row * c->dstPitch), (const void *)(src + row * c->srcPitch),
             c->WidthInBytes, s, "cuMemcpy2DAsync", dir == H2D);
  return r;
}

R fake_sym_cuMemHostRegister(void *p, size_t bytes, unsigned int flags) {
  FAKE_ENTER("cuMemHostRegister");
  R r = fake_need_ctx();
  if (r)
    return r;
  if (!p || !bytes || (flags & ~15u))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  for (alloc *a = allocs; a && !r; a = a->next) {
    const char *u = a->base + GUARD, *c = p;
    if (a->kind == MEM_HOST && c < u + a->bytes && u < c + bytes)
      r = T4A__CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; /* overlaps pinned memory */
  }
  if (!r && !fake_alloc_register(p, bytes, fake_current()->device, flags))
    r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
  UNLOCK();
  return r;
}

R fake_sym_cuMemHostUnregister(void *p) {
  FAKE_ENTER_ON("cuMemHostUnregister", fake_alloc_device(p, MEM_HOST));
  LOCK();
  alloc *a = fake_alloc_at(p, MEM_HOST);
  R r = OK;
  if (!a || !a->registered)
    r = T4A__CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  else if (a->queued || a->busy)
    fake_violation("cuMemHostUnregister(%p) while %u queued operation(s) still use it", p,
                   a->queued + a->busy);
  if (!r)
    fake_alloc_release(a);
  UNLOCK();
  return r;
}

/* Free and total memory of the current context's device. */
R fake_sym_cuMemGetInfo(size_t *free_bytes, size_t *total) {
  FAKE_ENTER("cuMemGetInfo");
  R r = fake_need_ctx();
  if (r)
    return r;
  if (!free_bytes || !total)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  size_t limit = fake_device_limit(), used = (size_t)fake_device_used(fake_current()->device);
  UNLOCK();
  *total = limit;
  *free_bytes = used < limit ? limit - used : 0;
  return OK;
}
