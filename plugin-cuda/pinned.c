/* plugin-cuda/pinned.c -- pinned (page-locked) host buffers.
 *
 * Allocated with cuMemHostAlloc(PORTABLE), write-combined only on request.
 * A freed block is released only after all enqueued work using it completed:
 * each async copy stamps the block with the epoch (next seal number) it
 * belongs to; host_free of a block whose epoch has not completed queues it
 * for retirement behind that seal. Released blocks go to a small cache (at
 * most 16 blocks and 256 MiB per runtime) before cuMemFreeHost. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "backend-core/readonly.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

#define HOST_FLAGS_KNOWN T4A_HOST_WRITE_COMBINED

int t4a__host_get(t4a__runtime *rt, t4a_host_buffer h, const char *what, t4a__host **out) {
  int rc;
  *out = t4a__htable_find(&rt->pin.hosts, &t4a__host_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

void t4a__pinned_init(t4a__runtime *rt) {
  memset(&rt->pin, 0, sizeof rt->pin);
  t4a__htable_init(&rt->pin.hosts, sizeof(t4a__host));
}

/* A cached block of exactly this capacity and flags, or NULL. */
static void *pinned_take(t4a__runtime *rt, uint64_t cap, uint32_t flags) {
  t4a__pinned *p = &rt->pin;
  for (uint32_t i = 0; i < p->cache_count; i++) {
    if (p->cache[i].cap == cap && p->cache[i].flags == flags) {
      void *ptr = p->cache[i].ptr;
      p->cache_bytes -= cap;
      p->cache[i] = p->cache[--p->cache_count];
      return ptr;
    }
  }
  return NULL;
}

/* Caches or frees a pinned block no work uses any more. */
static void pinned_release(t4a__runtime *rt, void *ptr, uint64_t cap, uint32_t flags) {
  t4a__pinned *p = &rt->pin;
  if (p->cache_count < T4A__PINNED_CACHE_ENTRIES &&
      p->cache_bytes + cap <= T4A__PINNED_CACHE_BYTES) {
    p->cache[p->cache_count++] = (t4a__pinned_block){ptr, cap, flags};
    p->cache_bytes += cap;
    return;
  }
  t4a__be.cu.cuMemFreeHost(ptr);
}

/* A retired block whose work completed (completion.c calls this). */
static void retired(t4a__runtime *rt, const t4a__retire *r, bool final) {
  if (final)
    t4a__released(rt, t4a__be.cu.cuMemFreeHost(r->ptr), r->ptr, "cuMemFreeHost");
  else
    pinned_release(rt, r->ptr, r->bytes, r->flags);
}

int t4a__slot_host_alloc(t4a_runtime h, uint64_t bytes, uint32_t flags, t4a_host_buffer *out,
                         void **ptr) {
  if (!out || !ptr)
    return t4a__fail(T4A_EINVAL, "host_alloc: out and ptr must not be NULL; pass pointers");
  out->bits = 0;
  *ptr = NULL;
  if (!bytes || bytes > T4A__MAX_ALLOC)
    return t4a__fail(bytes ? T4A_ENOMEM : T4A_EINVAL,
                     "host_alloc: %llu bytes; ask for 1 byte to 64 TiB", (unsigned long long)bytes);
  if (flags & ~HOST_FLAGS_KNOWN)
    return t4a__fail(T4A_EINVAL,
                     "host_alloc: unknown flags 0x%x; use 0 or "
                     "T4A_HOST_WRITE_COMBINED",
                     flags & ~HOST_FLAGS_KNOWN);
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "host_alloc", &rt);
  if (rc)
    return rc;
  uint64_t cap;
  t4a__size_class(bytes < 4096 ? 4096 : bytes, &cap);
  void *p = pinned_take(rt, cap, flags);
  if (!p) {
    unsigned cu_flags =
        T4A__CU_MEMHOSTALLOC_PORTABLE |
        ((flags & T4A_HOST_WRITE_COMBINED) ? T4A__CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
    t4a__CUcontext saved;
    if ((rc = t4a__ctx_enter(rt, &saved)))
      goto out;
    t4a__CUresult r = t4a__be.cu.cuMemHostAlloc(&p, (size_t)cap, cu_flags);
    t4a__ctx_leave(rt, saved);
    if (r != T4A__CUDA_SUCCESS) {
      rc = t4a__rt_cu_fail(rt, r,
                           "host_alloc: cuMemHostAlloc of %llu bytes failed; free "
                           "pinned memory or allocate less",
                           (unsigned long long)cap);
      goto out;
    }
  }
  uint32_t i = 0;
  if ((rc = t4a__htable_take(&rt->pin.hosts, "host_alloc", &i))) {
    pinned_release(rt, p, cap, flags);
    goto out;
  }
  t4a__host *hb = t4a__htable_at(&rt->pin.hosts, i);
  hb->flags = flags;
  hb->size = bytes;
  hb->cap = cap;
  hb->ptr = p;
  rt->c.live_host_buffers++;
  out->bits = t4a__htable_publish(&rt->pin.hosts, i, &t4a__host_kind, rt->slot.index);
  *ptr = p;
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_host_free(t4a_runtime h, t4a_host_buffer hbh) {
  t4a__runtime *rt;
  t4a__host *hb;
  int rc = t4a__rt_lock_any(h, "host_free", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__host_get(rt, hbh, "host_free", &hb)))
    goto out;
  if (hb->registered) {
    rc = t4a__fail(T4A_EINVAL, "host_free: the host buffer is registered consumer memory; "
                               "release it with host_unregister");
    goto out;
  }
  t4a__rt_progress(rt);
  if (hb->last_use > rt->done.completed_seq) {
    t4a__retire r = {hb->last_use, retired, hb->ptr, hb->cap, hb->flags};
    if ((rc = t4a__retire_push(rt, &r)))
      goto out;
  } else {
    pinned_release(rt, hb->ptr, hb->cap, hb->flags);
  }
  t4a__htable_release(&rt->pin.hosts, t4a__h_index(hbh.bits));
  rt->c.live_host_buffers--;
out:
  t4a__rt_unlock(rt);
  return rc;
}

void t4a__pinned_fini(t4a__runtime *rt, bool idle) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__pinned *p = &rt->pin;
  for (uint32_t i = 0; i < p->cache_count; i++)
    t4a__released(rt, cu->cuMemFreeHost(p->cache[i].ptr), p->cache[i].ptr, "cuMemFreeHost");
  p->cache_count = 0;
  p->cache_bytes = 0;
  if (!idle) /* live blocks may still be read or written: keep them, and what lists them */
    return;
  for (uint32_t i = 0; i < p->hosts.count; i++) {
    const t4a__host *hb = t4a__htable_at(&p->hosts, i);
    if (hb->h.live && hb->registered) {
      t4a__CUresult r = cu->cuMemHostUnregister(hb->ptr);
      if (r == T4A__CUDA_SUCCESS)
        t4a__read_only_remove((uint64_t)(uintptr_t)hb->ptr);
      t4a__released(rt, r, hb->ptr, "cuMemHostUnregister");
    } else if (hb->h.live)
      t4a__released(rt, cu->cuMemFreeHost(hb->ptr), hb->ptr, "cuMemFreeHost");
  }
  t4a__htable_fini(&p->hosts);
}

/* ---- v1.1: the consumer's memory, registered ---------------------------------- */

int t4a__host_check_writable(const t4a__host *hb, const char *what) {
  return t4a__read_only_refuse_write(hb->registered && (hb->flags & T4A_HOST_REGISTER_READ_ONLY),
                                     what);
}

#define REGISTER_FLAGS_KNOWN T4A_HOST_REGISTER_READ_ONLY

/* A registered block whose work completed: unpinned (never cached). */
static void unregistered(t4a__runtime *rt, const t4a__retire *r, bool final) {
  t4a__CUresult res = t4a__be.cu.cuMemHostUnregister(r->ptr);
  if (res == T4A__CUDA_SUCCESS) /* unpinned: no longer the device's read-only memory */
    t4a__read_only_remove((uint64_t)(uintptr_t)r->ptr);
  if (final)
    t4a__released(rt, res, r->ptr, "cuMemHostUnregister");
  else if (res != T4A__CUDA_SUCCESS)
    t4a__keep(r->ptr);
}

int t4a__slot_host_register(t4a_runtime h, void *ptr, uint64_t bytes, uint32_t flags,
                            t4a_host_buffer *out) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  if (!out || !ptr)
    return t4a__fail(T4A_EINVAL, "host_register: ptr and out must not be NULL; pass the "
                                 "memory and a pointer");
  out->bits = 0;
  uint64_t end;
  if (!bytes || !t4a__add_u64((uint64_t)(uintptr_t)ptr, bytes, &end))
    return t4a__fail(T4A_EINVAL,
                     "host_register: %llu bytes at %p; register 1 byte or more "
                     "of addressable memory",
                     (unsigned long long)bytes, ptr);
  if (flags & ~REGISTER_FLAGS_KNOWN)
    return t4a__fail(T4A_EINVAL,
                     "host_register: unknown flags 0x%x; use 0 or T4A_HOST_REGISTER_READ_ONLY",
                     flags & ~REGISTER_FLAGS_KNOWN);
  const t4a__cuda_api *cu = &t4a__be.cu;
  if (!cu->cuMemHostRegister || !cu->cuMemHostUnregister)
    return t4a__fail(T4A_EUNSUPPORTED, "host_register: the driver lacks cuMemHostRegister; "
                                       "update it");
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "host_register", &rt);
  if (rc)
    return rc;
  uint64_t start = (uint64_t)(uintptr_t)ptr;
  for (uint32_t i = 0; i < rt->pin.hosts.count; i++) {
    const t4a__host *o = t4a__htable_at(&rt->pin.hosts, i);
    uint64_t os = (uint64_t)(uintptr_t)o->ptr;
    if (o->h.live && o->registered && t4a__spans_overlap(start, bytes, os, o->size)) {
      rc = t4a__fail(T4A_EINVAL,
                     "host_register: [%p, +%llu) overlaps the registered [%p, +%llu); "
                     "unregister that first or register a disjoint range",
                     ptr, (unsigned long long)bytes, o->ptr, (unsigned long long)o->size);
      goto out;
    }
  }
  unsigned cu_flags =
      T4A__CU_MEMHOSTREGISTER_PORTABLE |
      ((flags & T4A_HOST_REGISTER_READ_ONLY) ? T4A__CU_MEMHOSTREGISTER_READ_ONLY : 0u);
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUresult r = cu->cuMemHostRegister(ptr, (size_t)bytes, cu_flags);
  t4a__ctx_leave(rt, saved);
  if (r == T4A__CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
    rc = t4a__fail_native(T4A_EINVAL, r, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
                          "host_register: [%p, +%llu) is already registered (by another "
                          "runtime or CUDA code of the process); register each range once",
                          ptr, (unsigned long long)bytes);
    goto out;
  }
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "host_register: cuMemHostRegister of %llu bytes failed",
                         (unsigned long long)bytes);
    goto out;
  }
  uint32_t i = 0;
  if ((rc = t4a__htable_take(&rt->pin.hosts, "host_register", &i))) {
    t4a__release_or_keep(cu->cuMemHostUnregister(ptr), ptr);
    goto out;
  }
  if ((flags & T4A_HOST_REGISTER_READ_ONLY) && (rc = t4a__read_only_add(start, bytes))) {
    t4a__htable_untake(&rt->pin.hosts, i);
    t4a__release_or_keep(cu->cuMemHostUnregister(ptr), ptr);
    goto out;
  }
  t4a__host *hb = t4a__htable_at(&rt->pin.hosts, i);
  hb->flags = flags;
  hb->registered = true;
  hb->size = bytes;
  hb->ptr = ptr;
  rt->c.live_host_buffers++;
  out->bits = t4a__htable_publish(&rt->pin.hosts, i, &t4a__host_kind, rt->slot.index);
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_host_unregister(t4a_runtime h, t4a_host_buffer hbh) {
  t4a__runtime *rt;
  t4a__host *hb;
  int rc = t4a__rt_lock_any(h, "host_unregister", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__host_get(rt, hbh, "host_unregister", &hb)))
    goto out;
  if (!hb->registered) {
    rc = t4a__fail(T4A_EINVAL, "host_unregister: the host buffer came from host_alloc; "
                               "release it with host_free");
    goto out;
  }
  t4a__rt_progress(rt);
  t4a__retire r = {hb->last_use, unregistered, hb->ptr, hb->size, 0};
  if (hb->last_use > rt->done.completed_seq) {
    if ((rc = t4a__retire_push(rt, &r)))
      goto out;
  } else {
    unregistered(rt, &r, false);
  }
  t4a__htable_release(&rt->pin.hosts, t4a__h_index(hbh.bits));
  rt->c.live_host_buffers--;
out:
  t4a__rt_unlock(rt);
  return rc;
}
