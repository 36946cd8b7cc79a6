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

#include "plugin-cuda/runtime.h"

#define HOST_FLAGS_KNOWN T4A_HOST_WRITE_COMBINED

int t4a__host_get(t4a__runtime *rt, t4a_host_buffer h, const char *what, t4a__host **out) {
  uint64_t b = h.bits;
  if (t4a__h_tag(b) != T4A__TAG_HOST)
    return t4a__fail(b ? T4A_EHANDLE : T4A_EINVAL,
                     "%s: %s is not a host buffer handle; pass one from host_alloc", what,
                     b ? "the handle" : "a null handle");
  if (t4a__h_rt(b) != rt->index)
    return t4a__fail(T4A_EHANDLE,
                     "%s: the host buffer belongs to runtime #%u, not #%u; use it "
                     "with its own runtime",
                     what, t4a__h_rt(b), rt->index);
  uint32_t i = t4a__h_index(b);
  if (i >= rt->host_count || !rt->hosts[i].live || rt->hosts[i].gen != t4a__h_gen(b))
    return t4a__fail(T4A_EHANDLE,
                     "%s: the host buffer was freed (or its runtime destroyed); "
                     "allocate a new one",
                     what);
  *out = &rt->hosts[i];
  return T4A_OK;
}

static int take_host_slot(t4a__runtime *rt, uint32_t *index) {
  if (rt->host_free) {
    *index = rt->host_free - 1;
    rt->host_free = rt->hosts[*index].next_free;
    return T4A_OK;
  }
  if (rt->host_count == rt->host_cap) {
    uint32_t cap = rt->host_cap ? rt->host_cap * 2 : 16;
    if (cap > T4A__MAX_INDEX)
      return t4a__fail(T4A_ENOMEM, "host_alloc: %u live host buffers in one runtime; free some",
                       T4A__MAX_INDEX);
    t4a__host *p = realloc(rt->hosts, cap * sizeof *p);
    if (!p)
      return t4a__fail(T4A_ENOMEM, "host_alloc: out of host memory for the handle table");
    rt->hosts = p;
    rt->host_cap = cap;
  }
  *index = rt->host_count;
  rt->hosts[rt->host_count++] = (t4a__host){0};
  return T4A_OK;
}

/* A cached block of exactly this capacity and flags, or NULL. */
static void *pinned_take(t4a__runtime *rt, uint64_t cap, uint32_t flags) {
  for (uint32_t i = 0; i < rt->pinned_count; i++) {
    if (rt->pinned[i].cap == cap && rt->pinned[i].flags == flags) {
      void *p = rt->pinned[i].ptr;
      rt->pinned_bytes -= cap;
      rt->pinned[i] = rt->pinned[--rt->pinned_count];
      return p;
    }
  }
  return NULL;
}

void t4a__pinned_release(t4a__runtime *rt, void *ptr, uint64_t cap, uint32_t flags) {
  if (rt->pinned_count < T4A__PINNED_CACHE_ENTRIES &&
      rt->pinned_bytes + cap <= T4A__PINNED_CACHE_BYTES) {
    rt->pinned[rt->pinned_count++] = (t4a__pinned){ptr, cap, flags};
    rt->pinned_bytes += cap;
    return;
  }
  t4a__be.cu.cuMemFreeHost(ptr);
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
  if ((rc = take_host_slot(rt, &i))) {
    t4a__pinned_release(rt, p, cap, flags);
    goto out;
  }
  t4a__host *hb = &rt->hosts[i];
  hb->live = true;
  hb->gen = t4a__gen_next(hb->gen);
  hb->flags = flags;
  hb->size = bytes;
  hb->cap = cap;
  hb->ptr = p;
  hb->last_use = 0;
  rt->c.live_host_buffers++;
  out->bits = t4a__h_make(T4A__TAG_HOST, rt->index, i, hb->gen);
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
  t4a__rt_progress(rt);
  if (hb->last_use > rt->completed_seq) {
    if ((rc = t4a__retire_host(rt, hb->last_use, hb->ptr, hb->cap, hb->flags)))
      goto out;
  } else {
    t4a__pinned_release(rt, hb->ptr, hb->cap, hb->flags);
  }
  uint32_t i = (uint32_t)(hb - rt->hosts);
  hb->live = false;
  hb->gen = t4a__gen_next(hb->gen);
  hb->next_free = rt->host_free;
  rt->host_free = i + 1;
  rt->c.live_host_buffers--;
out:
  t4a__rt_unlock(rt);
  return rc;
}

void t4a__pinned_release_all(t4a__runtime *rt, bool idle) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  for (uint32_t i = 0; i < rt->pinned_count; i++)
    t4a__released(rt, cu->cuMemFreeHost(rt->pinned[i].ptr), rt->pinned[i].ptr, "cuMemFreeHost");
  rt->pinned_count = 0;
  rt->pinned_bytes = 0;
  if (!idle) /* retired and live blocks may still be read or written: keep them */
    return;
  for (uint32_t i = 0; i < rt->retire_count; i++)
    if (rt->retire[i].host)
      t4a__released(rt, cu->cuMemFreeHost(rt->retire[i].host), rt->retire[i].host, "cuMemFreeHost");
    else
      t4a__released(rt, cu->cuModuleUnload(rt->retire[i].module), rt->retire[i].module,
                    "cuModuleUnload");
  rt->retire_count = 0;
  for (uint32_t i = 0; i < rt->host_count; i++)
    if (rt->hosts[i].live)
      t4a__released(rt, cu->cuMemFreeHost(rt->hosts[i].ptr), rt->hosts[i].ptr, "cuMemFreeHost");
}
