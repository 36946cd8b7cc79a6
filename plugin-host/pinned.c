/* plugin-host/pinned.c -- host buffers: host_alloc/host_free and
 * host_register/host_unregister.
 *
 * On the host every page is as reachable as "pinned" memory: host_alloc
 * maps anonymous, page-aligned memory (not locked: mlock would only spend
 * the RLIMIT_MEMLOCK budget) and ignores T4A_HOST_WRITE_COMBINED (there is
 * no bus to combine writes for); host_register pins nothing and records the
 * range, so that the pinned copies accept it and a read-only registration
 * is enforced (backend-core/readonly: copies into it and wraps of it are refused). */
#include "config.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "common/checked.h"
#include "common/env.h"
#include "backend-core/readonly.h"
#include "backend-core/slots.h"
#include "plugin-host/host.h"
#include "plugin-host/test_gate.h"

int t4a__hhost_get(t4a__hrt *rt, t4a_host_buffer h, const char *what, t4a__hhost **out) {
  int rc;
  *out = t4a__htable_find(&rt->hosts, &t4a__host_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

static uint32_t index_of(t4a__hrt *rt, const t4a__hhost *e) {
  return (uint32_t)(e - (const t4a__hhost *)t4a__htable_at(&rt->hosts, 0));
}

static void unmap_host(t4a__hrt *rt, void *ptr, uint64_t bytes, bool final) {
  (void)rt, (void) final;
  munmap(ptr, bytes);
}

/* A plain registration pins nothing on the host: its end still waits for
 * the work queued before it (a retirement, counted like CUDA's unpinning). */
static void unregistered(t4a__hrt *rt, void *ptr, uint64_t bytes, bool final) {
  (void)rt, (void)ptr, (void)bytes, (void) final;
}

static void unlist_read_only(t4a__hrt *rt, void *ptr, uint64_t bytes, bool final) {
  (void)rt, (void)bytes, (void) final;
  t4a__read_only_remove((uint64_t)(uintptr_t)ptr);
}

static int publish(t4a__hrt *rt, const t4a__hhost *h, const char *what, t4a_host_buffer *out) {
  uint32_t i;
  int rc = t4a__htable_take(&rt->hosts, what, &i);
  if (rc)
    return rc;
  t4a__hhost *e = t4a__htable_at(&rt->hosts, i);
  t4a__hslot head = e->h;
  *e = *h;
  e->h = head;
  out->bits = t4a__htable_publish(&rt->hosts, i, &t4a__host_kind, rt->slot.index);
  rt->c.live_host_buffers++;
  return T4A_OK;
}

int t4a__slot_host_alloc(t4a_runtime h, uint64_t bytes, uint32_t flags, t4a_host_buffer *out,
                         void **ptr) {
  if (!out || !ptr)
    return t4a__fail(T4A_EINVAL, "host_alloc: out or ptr is NULL; pass pointers");
  if (!bytes)
    return t4a__fail(T4A_EINVAL, "host_alloc: bytes is 0; ask for at least one byte");
  if (flags & ~T4A_HOST_WRITE_COMBINED)
    return t4a__fail(T4A_EINVAL, "host_alloc: unknown flags 0x%x; use T4A_HOST_WRITE_COMBINED or 0",
                     flags & ~T4A_HOST_WRITE_COMBINED);
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "host_alloc", &rt)))
    return rc;
  void *p = bytes <= T4A__MAX_ALLOC
                ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                : MAP_FAILED;
  if (p == MAP_FAILED) {
    rc = t4a__fail(T4A_ENOMEM, "host_alloc: %llu bytes could not be mapped; free host memory",
                   (unsigned long long)bytes);
  } else {
    t4a__hhost e = {.ptr = p, .bytes = bytes};
    if ((rc = publish(rt, &e, "host_alloc", out)))
      munmap(p, bytes);
    else
      *ptr = p;
  }
  t4a__hrt_unlock(rt);
  return rc;
}

/* Ends a host buffer: stale at once, released behind the work queued so far. */
static int end(t4a__hrt *rt, t4a_host_buffer hb, bool registered, const char *what) {
  t4a__hhost *e;
  int rc = t4a__hhost_get(rt, hb, what, &e);
  if (rc)
    return rc;
  if (e->registered != registered)
    return t4a__fail(T4A_EINVAL, "%s: the host buffer came from %s; release it with %s", what,
                     registered ? "host_alloc" : "host_register",
                     registered ? "host_free" : "host_unregister");
  bool listed = e->read_only;
  t4a__hretire r = {t4a__queue_tail(&rt->q),
                    !registered ? unmap_host
                    : listed    ? unlist_read_only
                                : unregistered,
                    e->ptr, e->bytes};
  t4a__htable_release(&rt->hosts, index_of(rt, e));
  rt->c.live_host_buffers--;
  t4a__retire_add(rt, &r);
  t4a__retire_due(rt);
  return T4A_OK;
}

int t4a__slot_host_free(t4a_runtime h, t4a_host_buffer hb) {
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock_any(h, "host_free", &rt)))
    return rc;
  rc = end(rt, hb, false, "host_free");
  t4a__hrt_unlock(rt);
  return rc;
}

/* The test gate (test_gate.h): whether T4A_HOST_TEST_GATE=1 lets flags ask for it. */
static bool test_gate(uint32_t flags) {
  if (!(flags & T4A__HOST_REGISTER_TEST_GATE))
    return false;
  const char *env = t4a__getenv(T4A__HOST_TEST_GATE_ENV);
  return env && strcmp(env, "1") == 0;
}

/* Whether rt may take a gate on [word, +bytes) now (T4A_OK), else why not. */
static int gate_refused(const t4a__hrt *rt, const void *word, uint64_t bytes) {
  if (bytes < 4 || (uintptr_t)word % 4)
    return t4a__fail(T4A_EINVAL, "host_register: the test gate needs an aligned 32-bit word");
  return t4a__hrt_refuse(rt, "host_register (the test gate)", "holds the queue");
}

int t4a__slot_host_register(t4a_runtime h, void *ptr, uint64_t bytes, uint32_t flags,
                            t4a_host_buffer *out) {
  if (!ptr || !bytes || !out)
    return t4a__fail(T4A_EINVAL, "host_register: ptr, bytes or out is NULL/0; pass memory and "
                                 "a pointer for the handle");
  bool gate = test_gate(flags);
  if (gate)
    flags &= ~T4A__HOST_REGISTER_TEST_GATE;
  if (flags & ~T4A_HOST_REGISTER_READ_ONLY)
    return t4a__fail(T4A_EINVAL,
                     "host_register: unknown flags 0x%x; use T4A_HOST_REGISTER_READ_ONLY or 0",
                     flags & ~T4A_HOST_REGISTER_READ_ONLY);
  uint64_t start = (uint64_t)(uintptr_t)ptr, end_;
  if (!t4a__add_u64(start, bytes, &end_))
    return t4a__fail(T4A_ERANGE,
                     "host_register: the range wraps around the address space; pass a valid range");
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "host_register", &rt)))
    return rc;
  for (uint32_t i = 0; i < rt->hosts.count; i++) {
    const t4a__hhost *e = t4a__htable_at(&rt->hosts, i);
    if (e->h.live && e->registered &&
        t4a__spans_overlap(start, bytes, (uint64_t)(uintptr_t)e->ptr, e->bytes)) {
      rc = t4a__fail(T4A_EINVAL,
                     "host_register: [%p, +%llu) overlaps a range this runtime registered "
                     "already; unregister it first or use that host buffer",
                     ptr, (unsigned long long)bytes);
      goto out;
    }
  }
  if (gate && (rc = gate_refused(rt, ptr, bytes)))
    goto out;
  bool ro = (flags & T4A_HOST_REGISTER_READ_ONLY) != 0;
  t4a__hhost e = {.ptr = ptr, .bytes = bytes, .registered = true, .read_only = ro};
  if (ro && (rc = t4a__read_only_add(start, bytes)))
    goto out;
  if ((rc = publish(rt, &e, "host_register", out)) && ro)
    t4a__read_only_remove(start);
  if (!rc && gate) { /* on the worker, never inline: it waits for *ptr != 0 */
    t4a__op op = {.kind = T4A__OP_GATE, .src = ptr};
    t4a__queue_push(&rt->q, &op);
  }
out:
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_host_unregister(t4a_runtime h, t4a_host_buffer hb) {
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock_any(h, "host_unregister", &rt)))
    return rc;
  rc = end(rt, hb, true, "host_unregister");
  t4a__hrt_unlock(rt);
  return rc;
}

void t4a__hhost_fini(t4a__hrt *rt) {
  for (uint32_t i = 0; i < rt->hosts.count; i++) {
    t4a__hhost *e = t4a__htable_at(&rt->hosts, i);
    if (!e->h.live)
      continue;
    if (!e->registered)
      munmap(e->ptr, e->bytes);
    else if (e->read_only)
      t4a__read_only_remove((uint64_t)(uintptr_t)e->ptr);
  }
  t4a__htable_fini(&rt->hosts);
}
