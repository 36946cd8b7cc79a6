/* plugin-host/external.c -- memory the runtime did not allocate, wrapped
 * as a buffer (buffer_wrap_external). On the host, "device memory" is host
 * memory: with or without T4A_EXTERNAL_HOST the range is an address range
 * of this process (device_ordinal 0 without the flag, -1 with it), which
 * the backend cannot verify further (there is no driver to ask): the
 * consumer vouches that it is mapped, readable and writable. Read-only
 * registrations (host_register, any runtime) are refused (backend-core/readonly).
 * release(user) is called once, after buffer_free (or destroy) and the
 * completion of the work queued before it, after the runtime's lock was
 * let go (a deferred call, backend-core/rtable). */
#include "config.h"

#include <stdlib.h>

#include "common/checked.h"
#include "backend-core/readonly.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "plugin-host/host.h"

struct t4a__ext {
  void (*release)(void *user);
  void *user;
  t4a__call call; /* the deferred release */
};

static void ext_call(void *arg) {
  t4a__ext *e = arg;
  void (*release)(void *) = e->release;
  void *user = e->user;
  free(e);
  if (release)
    release(user);
}

static void ext_retired(t4a__hrt *rt, void *ptr, uint64_t bytes, bool final) {
  (void)bytes, (void) final;
  t4a__ext *e = ptr;
  e->call.fn = ext_call;
  e->call.arg = e;
  t4a__rtable_defer(&rt->slot, &e->call);
}

int t4a__host_wrap(t4a__hrt *rt, const char *what, uint64_t address, uint64_t bytes,
                   void (*release)(void *), void *user, t4a_buffer *out) {
  uint64_t end;
  if (bytes && !address)
    return t4a__fail(T4A_EINVAL, "%s: the address is 0 for %llu bytes; pass the memory", what,
                     (unsigned long long)bytes);
  if (!t4a__add_u64(address, bytes, &end)) /* no memory at all: EINVAL, as on CUDA */
    return t4a__fail(T4A_EINVAL, "%s: the range wraps around the address space; pass a valid range",
                     what);
  int rc = t4a__read_only_refuse_wrap(what, address, bytes);
  if (rc)
    return rc;
  t4a__ext *e = calloc(1, sizeof *e);
  if (!e)
    return t4a__fail(T4A_ENOMEM, "%s: out of host memory; free some and retry", what);
  e->release = release;
  e->user = user;
  rc = t4a__hbuf_wrap(rt, what, address, bytes, e, ext_retired, out);
  if (rc)
    free(e);
  return rc;
}

int t4a__slot_buffer_wrap_external(t4a_runtime h, const t4a_external_memory *mem, t4a_buffer *out) {
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__check_struct(mem, T4A_EXTERNAL_MEMORY_V1_1_SIZE, "t4a_external_memory")))
    return rc;
  if (!out)
    return t4a__fail(T4A_EINVAL, "buffer_wrap_external: out is NULL; pass a pointer");
  if ((mem->flags & ~T4A_EXTERNAL_HOST) || mem->reserved)
    return t4a__fail(T4A_EINVAL,
                     "buffer_wrap_external: unknown flags 0x%x or reserved 0x%x; use "
                     "T4A_EXTERNAL_HOST or 0 and clear reserved",
                     mem->flags & ~T4A_EXTERNAL_HOST, mem->reserved);
  bool host = (mem->flags & T4A_EXTERNAL_HOST) != 0;
  if (mem->device_ordinal != (host ? -1 : 0))
    return t4a__fail(host ? T4A_EINVAL : T4A_EFOREIGNDEVICE,
                     "buffer_wrap_external: device_ordinal %d; the host backend's device is 0 "
                     "(pass -1 with T4A_EXTERNAL_HOST)",
                     (int)mem->device_ordinal);
  t4a__hrt *rt;
  if ((rc = t4a__hrt_lock(h, "buffer_wrap_external", &rt)))
    return rc;
  rc = t4a__host_wrap(rt, "buffer_wrap_external", mem->address, mem->bytes, mem->release, mem->user,
                      out);
  t4a__hrt_unlock(rt);
  return rc;
}
