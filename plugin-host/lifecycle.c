/* plugin-host/lifecycle.c -- runtime_create and runtime_destroy: each
 * subsystem's init and fini, in one order. */
#include "config.h"

#include <string.h>

#include "backend-core/options.h"
#include "backend-core/slots.h"
#include "plugin-host/host.h"

/* Clears a slot's state (everything after its head). */
static void reset(t4a__hrt *rt) {
  memset((char *)rt + sizeof rt->slot, 0, sizeof *rt - sizeof rt->slot);
}

int t4a__slot_runtime_create(int32_t ordinal, const t4a_runtime_options *opts, t4a_runtime *out) {
  int rc = t4a__host_check_ordinal(ordinal, "runtime_create");
  if (rc)
    return rc;
  if (!out)
    return t4a__fail(T4A_EINVAL, "runtime_create: out is NULL; pass a pointer");
  if (atomic_load(&t4a__hfaulted)) /* as on a CUDA device whose context a fault poisoned */
    return t4a__hrt_faulted("runtime_create");
  t4a_runtime_options o;
  if ((rc = t4a__options_normalise(opts, &o)))
    return rc;
  if (o.flags & T4A_RUNTIME_IPC)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "runtime_create: the host backend shares nothing between processes "
                     "(T4A_RUNTIME_IPC): its buffers are host memory; share it with memfd or "
                     "shm_open and buffer_wrap_external, and order with witness_wait");
  if (o.stream_priority)
    return t4a__fail(T4A_ERANGE,
                     "runtime_create: stream_priority %d is outside the host's range [0, 0] "
                     "(runtime_info's priority_greatest .. priority_least): its queue has one "
                     "priority; pass 0",
                     (int)o.stream_priority);
  bool checked = t4a__hcheck_env();
  if (checked && !t4a__hcheck_install())
    return t4a__fail(T4A_EUNSUPPORTED,
                     "runtime_create: T4A_HOST_CHECK=1 asks for checked mode, but its SIGSEGV "
                     "and SIGBUS handler could not be installed; unset T4A_HOST_CHECK");
  t4a__rtslot *s = t4a__rtable_take(sizeof(t4a__hrt));
  if (!s)
    return t4a__fail(T4A_ENOMEM,
                     "runtime_create: no runtime slot left (at most %u live runtimes) or out of "
                     "host memory; destroy runtimes you no longer need",
                     T4A__MAX_RUNTIMES);
  t4a__hrt *rt = (t4a__hrt *)(void *)s;
  reset(rt);
  /* Generations from 2^27 up (the CUDA plugin's start at 1): a runtime
   * handle of the other plugin never passes for one of ours. */
  uint32_t gen = t4a__gen_next(s->gen) | (1u << 27);
  bool timing = (o.flags & T4A_RUNTIME_TIMING) != 0;
  if (timing && !(rt->last_mark = t4a__mark_new()))
    rc = t4a__fail(T4A_ENOMEM, "runtime_create: out of host memory; free memory");
  else if (timing)
    atomic_store(&rt->last_mark->ns, t4a__host_now_ns()); /* the base of witness_elapsed */
  if (rc || (rc = t4a__queue_init(&rt->q, s->index, gen, timing, o.copy_threads))) {
    t4a__mark_release(rt->last_mark);
    reset(rt);
    s->reserved = false;
    t4a__lock_give(&s->lock);
    return rc;
  }
  rt->opts = o;
  rt->checked = checked;
  rt->c.struct_size = sizeof rt->c;
  rt->c.staging_bytes = o.staging_bytes;
  if ((rc = t4a__hmem_init(rt))) { /* nothing of the pool made: the queue goes */
    t4a__queue_fini(&rt->q);
    t4a__mark_release(rt->last_mark);
    reset(rt);
    s->reserved = false;
    t4a__lock_give(&s->lock);
    return rc;
  }
  t4a__htable_init(&rt->hosts, sizeof(t4a__hhost));
  t4a__htable_init(&rt->graphs, sizeof(t4a__hgraph));
  t4a__hkernels_init(rt);
  s->gen = gen;
  s->alive = true;
  s->reserved = false;
  *out = t4a__hrt_handle(rt);
  t4a__hrt_unlock(rt);
  return T4A_OK;
}

/* Waits for the buffers' foreign readers (other runtimes' copies from
 * them) until deadline; false on a timeout. */
static bool readers_done(t4a__hrt *rt, uint64_t timeout_ns) {
  for (uint32_t i = 0; i < rt->mem.bufs.count; i++) {
    t4a__hbuf *b = t4a__htable_at(&rt->mem.bufs, i);
    if (b->h.live && b->reader &&
        t4a__timeline_wait(b->reader, b->reader_seq, timeout_ns) == T4A_ETIMEOUT)
      return false;
  }
  return true;
}

int t4a__slot_runtime_destroy(t4a_runtime h, uint64_t timeout_ns) {
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock_any(h, "runtime_destroy", &rt)))
    return rc;
  uint64_t start = t4a__host_now_ns();
  if (t4a__timeline_wait(rt->q.tl, t4a__queue_tail(&rt->q), timeout_ns) == T4A_ETIMEOUT) {
    t4a__hrt_unlock(rt);
    return t4a__fail(T4A_ETIMEOUT,
                     "runtime_destroy: the runtime's work did not complete within %llu ns; "
                     "nothing was released and the runtime stays usable; call again",
                     (unsigned long long)timeout_ns);
  }
  uint64_t spent = t4a__host_now_ns() - start;
  if (!readers_done(rt, timeout_ns == T4A_WAIT_FOREVER || spent >= timeout_ns
                            ? (timeout_ns == T4A_WAIT_FOREVER ? T4A_WAIT_FOREVER : 0)
                            : timeout_ns - spent)) {
    t4a__hrt_unlock(rt);
    return t4a__fail(T4A_ETIMEOUT,
                     "runtime_destroy: another runtime's copy from this runtime's buffers did "
                     "not complete within %llu ns; nothing was released; call again",
                     (unsigned long long)timeout_ns);
  }
  /* Idle (or stopped by a device fault: nothing runs any more, so
   * everything is provably unused): everything is released now, in the
   * reverse order of creation. A capture in progress is discarded with the
   * graphs. */
  bool fault = atomic_load(&t4a__hfaulted) != 0;
  t4a__graphs_fini(rt);
  t4a__hkernels_fini(rt);
  t4a__hhost_fini(rt);
  t4a__hmem_fini(rt); /* external buffers' releases join the retirements */
  t4a__retire_fini(rt);
  t4a__queue_fini(&rt->q);
  t4a__mark_release(rt->last_mark);
  reset(rt);
  rt->slot.alive = false;
  rt->slot.gen = t4a__gen_next(rt->slot.gen); /* its handles are stale from now on */
  t4a__hrt_unlock(rt);                        /* runs the external memory's release calls */
  if (fault) /* the runtime is gone all the same, as on CUDA after a fault */
    return t4a__fail(T4A_EDEVICEFAULT,
                     "runtime_destroy: the host device faulted (%s); the runtime is gone and "
                     "everything it owned released (nothing of it could still run)",
                     t4a__hfault_message());
  return T4A_OK;
}
