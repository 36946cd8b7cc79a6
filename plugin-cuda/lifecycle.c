/* plugin-cuda/lifecycle.c -- runtime_create, runtime_destroy and
 * runtime_counters: a runtime's life, calling each subsystem's init and fini
 * in one order.
 *
 * Create: slot, primary context and stream, then memory (the pool), pinned,
 * completion, modules, staging; the context reference, stream, pool and
 * staging come from a destroyed runtime's spare parts when there are some
 * (spare.c). Destroy, idle (the stream drained): memory (frees blocks;
 * the pool is trimmed and kept), modules, completion (final retirements,
 * events), pinned; then context reference, stream, pool and staging become
 * spare parts, or are released when the spares are full. Destroy after a
 * fault: each subsystem releases only what is provably idle and keeps the
 * rest with its bookkeeping, and the whole state is quarantined. No
 * subsystem's memory is freed here. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "backend-core/options.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"
#include "plugin-cuda/spare.h"
#include "plugin-cuda/witness.h"

/* Enables peer access, both ways, between a new runtime's device and every
 * device that already has a live runtime (both primary contexts are then
 * active), once per pair. Done at creation, when no work of ours is in
 * flight, rather than at the first peer copy (that stalled behind running
 * kernels). Failures are remembered and reported by copy_from_peer. Called
 * with no runtime locked. */
static void enable_peers(int32_t ordinal, t4a__CUcontext ctx) {
  if (!t4a__be.has_peer)
    return;
  for (uint32_t i = 0; i < T4A__MAX_RUNTIMES; i++) {
    t4a__runtime *o = t4a__rt_slot(i);
    if (!o)
      break;
    t4a__lock_take(&o->slot.lock);
    bool peer = o->slot.alive && o->ordinal != ordinal;
    int32_t dev = o->ordinal;
    t4a__CUcontext octx = o->ctx;
    t4a__lock_give(&o->slot.lock);
    if (peer) {
      t4a__peer_enable(ordinal, dev, ctx, octx);
      t4a__peer_enable(dev, ordinal, octx, ctx);
    }
  }
}

int t4a__slot_runtime_create(int32_t ordinal, const t4a_runtime_options *opts, t4a_runtime *out) {
  int rc;
  t4a_runtime_options o;
  if ((rc = t4a__require_init()) || (rc = t4a__check_ordinal(ordinal, "runtime_create")) ||
      (rc = t4a__options_normalise(opts, &o)))
    return rc;
  if (!out)
    return t4a__fail(T4A_EINVAL, "runtime_create: out is NULL; pass a pointer");
  out->bits = 0;
  t4a__device *dv = &t4a__be.devices[ordinal];
  if (!(dv->info.flags & T4A_DEVICE_MEMORY_POOLS))
    return t4a__fail(T4A_EUNSUPPORTED,
                     "runtime_create: device %d (%s) lacks stream-ordered "
                     "memory pools; use a device and driver that support them",
                     (int)ordinal, dv->info.name);
  if (atomic_load(&dv->fault))
    return t4a__fail(T4A_EDEVICEFAULT,
                     "runtime_create: device %d faulted earlier in this "
                     "process; restart the process to use it again",
                     (int)ordinal);
  t4a__runtime *rt = t4a__rt_take_slot();
  if (!rt)
    return t4a__fail(T4A_ENOMEM,
                     "runtime_create: %u runtimes exist or host memory ran out; "
                     "destroy runtimes you no longer use",
                     T4A__MAX_RUNTIMES);
  rt->ordinal = ordinal;
  rt->dev = dv->dev;
  rt->opts = o;
  rt->c.struct_size = sizeof rt->c;
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__CUresult r;
  t4a__CUcontext saved = NULL;
  t4a__spare sp;
  /* an IPC runtime's pool is shareable: it neither takes nor leaves spares */
  bool warm = !(o.flags & T4A_RUNTIME_IPC) &&
              t4a__spare_take(ordinal, o.staging_bytes, o.stream_priority, &sp);
  if (warm) { /* a destroyed runtime's parts: context reference, stream, pool, staging */
    rt->ctx = sp.ctx;
    rt->stream = sp.stream;
  } else if ((r = cu->cuDevicePrimaryCtxRetain(&rt->ctx, rt->dev)) != T4A__CUDA_SUCCESS) {
    rc = t4a__cu_fail(r,
                      "runtime_create: cuDevicePrimaryCtxRetain failed on device %d; check "
                      "that the device is not in exclusive use",
                      (int)ordinal);
    goto fail_slot;
  }
  if ((rc = t4a__ipc_init(rt)) || (rc = t4a__ctx_enter(rt, &saved))) {
    if (warm) {
      t4a__staging_release(&sp.stage);
      t4a__release_or_keep(cu->cuMemPoolDestroy(sp.pool), sp.pool);
    }
    goto fail_stream;
  }
  if ((rc = t4a__priority_range(rt)) || (rc = t4a__priority_check(rt, o.stream_priority)) ||
      (!warm && (rc = t4a__stream_create(rt, o.stream_priority)))) {
    if (warm) {
      t4a__staging_release(&sp.stage);
      cu->cuMemPoolDestroy(sp.pool);
    }
    goto fail_enter;
  }
  if ((rc = t4a__memory_init(rt, warm ? sp.pool : NULL, warm ? sp.pool_access : 0))) {
    if (warm)
      t4a__staging_release(&sp.stage);
    goto fail_enter;
  }
  t4a__pinned_init(rt);
  t4a__modules_init(rt);
  t4a__capture_init(rt);
  if ((rc = t4a__completion_init(rt, (o.flags & T4A_RUNTIME_TIMING) != 0))) {
    if (warm)
      t4a__staging_release(&sp.stage);
    goto fail_memory;
  }
  rt->done.on_time = t4a__witness_time; /* completion tells witnesses seal times */
  if ((rc = t4a__staging_init(rt, warm ? &sp.stage : NULL)))
    goto fail_memory;
  t4a__ctx_leave(rt, saved);
  rt->slot.gen = t4a__gen_next(rt->slot.gen);
  rt->slot.alive = true;
  rt->slot.reserved = false;
  *out = t4a__rt_handle(rt);
  t4a__CUcontext ctx = rt->ctx;
  t4a__rt_unlock(rt);
  if (t4a__be.device_count > 1)
    enable_peers(ordinal, ctx);
  t4a__log(T4A__LOG_DEBUG, "cuda", "runtime %u created on device %d%s", rt->slot.index,
           (int)ordinal, warm ? " (from a destroyed runtime's parts)" : "");
  return T4A_OK;

fail_memory: /* nothing was enqueued: everything is idle */
  t4a__modules_fini(rt, true);
  t4a__completion_fini(rt, true);
  t4a__pinned_fini(rt, true);
  t4a__memory_fini(rt, true, false);
fail_enter:
  t4a__ctx_leave(rt, saved);
fail_stream:
  if (rt->stream)
    t4a__release_or_keep(cu->cuStreamDestroy(rt->stream), rt->stream);
  t4a__release_or_keep(cu->cuDevicePrimaryCtxRelease(rt->dev), rt->ctx);
fail_slot:
  rt->slot.reserved = false;
  t4a__rt_unlock(rt);
  return rc;
}

/* ---- destroy ---------------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Waits for the stream to drain within timeout_ns; T4A_ETIMEOUT, a fault,
 * or T4A_OK. */
static int drain(t4a__runtime *rt, uint64_t timeout_ns) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__CUresult r;
  if (timeout_ns == T4A_WAIT_FOREVER) {
    r = cu->cuStreamSynchronize(rt->stream);
  } else {
    uint64_t deadline = now_ns() + timeout_ns, sleep_ns = 1000;
    while ((r = cu->cuStreamQuery(rt->stream)) == T4A__CUDA_ERROR_NOT_READY) {
      if (now_ns() >= deadline)
        return t4a__fail(T4A_ETIMEOUT,
                         "runtime_destroy: the runtime's work did not finish "
                         "within %llu ns; nothing was released, wait longer or "
                         "call again",
                         (unsigned long long)timeout_ns);
      struct timespec ts = {0, (long)sleep_ns};
      nanosleep(&ts, NULL);
      sleep_ns = sleep_ns < 1000000 ? sleep_ns * 2 : sleep_ns;
    }
  }
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "runtime_destroy: the runtime's work failed");
  return T4A_OK;
}

int t4a__slot_runtime_destroy(t4a_runtime h, uint64_t timeout_ns) {
  t4a__runtime *rt;
  int rc = t4a__rt_lock_any(h, "runtime_destroy", &rt);
  if (rc)
    return rc;
  t4a__CUcontext saved = NULL;
  const t4a__cuda_api *cu = &t4a__be.cu;
  bool idle = false;
  /* a context that cannot be entered leaves the work unproven (quarantined),
   * with that failure's status */
  if (!rt->fault && (rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
    t4a__capture_abort(rt);       /* a capture in progress is discarded */
    t4a__memory_wait_readers(rt); /* other runtimes' copies from our buffers */
    rc = drain(rt, timeout_ns);
    if (rc == T4A_ETIMEOUT) {
      t4a__ctx_leave(rt, saved);
      t4a__rt_unlock(rt);
      return rc;
    }
    idle = rc == T4A_OK;
    if (idle) {
      t4a__completion_drained(rt);
      /* waiters blocked on our events hold pins: they wake as the stream
       * drained; wait for them to let go before events go away */
      t4a__events_wait_unpinned(rt);
    }
  }
  int fault = rt->fault, failure = rc;
  t4a__witness_finalise(rt, idle ? T4A_OK : T4A_EDEVICEFAULT);
  if (rt->cap.active) /* faulted: the driver's capture is left, our record freed */
    t4a__recorded_free(&rt->cap.rec);
  uint64_t pool_access = rt->mem.pool_access;
  bool ipc = rt->ipc.on;
  t4a__CUmemoryPool pool = t4a__memory_fini(rt, idle, idle && !ipc);
  t4a__ipc_fini(rt, idle);    /* after the imports went and the stream drained */
  t4a__graphs_fini(rt, idle); /* before the modules their kernels are in */
  t4a__modules_fini(rt, idle);
  bool events_kept = t4a__completion_fini(rt, idle);
  t4a__pinned_fini(rt, idle);
  /* an idle runtime whose releases all succeeded leaves its parts for the
   * next runtime_create on this device (spare.c) */
  bool spared = false;
  if (pool && !rt->release_r && !events_kept) {
    t4a__spare sp = {rt->ordinal,
                     rt->dev,
                     rt->ctx,
                     rt->stream,
                     pool,
                     pool_access,
                     t4a__staging_take(rt),
                     rt->opts.stream_priority};
    spared = t4a__spare_give(&sp);
    if (!spared) {
      rt->stage = sp.stage; /* released below, like any other */
      t4a__released(rt, cu->cuMemPoolDestroy(pool), pool, "cuMemPoolDestroy");
    }
  } else if (pool) {
    t4a__released(rt, cu->cuMemPoolDestroy(pool), pool, "cuMemPoolDestroy");
  }
  if (!spared) {
    t4a__staging_fini(rt, idle);
    if (idle)
      t4a__released(rt, cu->cuStreamDestroy(rt->stream), rt->stream, "cuStreamDestroy");
  }
  if (saved)
    t4a__ctx_leave(rt, saved);
  if (events_kept)
    t4a__keep(rt->ctx); /* a kept event lives in it */
  else if (!spared)
    t4a__released(rt, cu->cuDevicePrimaryCtxRelease(rt->dev), rt->ctx, "cuDevicePrimaryCtxRelease");
  t4a__CUresult release_r = rt->release_r;
  const char *release_what = rt->release_what;
  if (!idle) {
    t4a__rt_quarantine(rt);
    t4a__log(T4A__LOG_WARN, "cuda", "runtime %u destroyed after a fault: its memory is quarantined",
             rt->slot.index);
  }
  t4a__log(T4A__LOG_DEBUG, "cuda", "runtime %u on device %d destroyed%s", rt->slot.index,
           (int)rt->ordinal, idle ? "" : " (memory quarantined)");
  t4a__rt_reset(rt);
  rt->slot.gen = t4a__gen_next(rt->slot.gen); /* every handle of the old runtime is now stale */
  rt->slot.alive = false;
  t4a__rt_unlock(rt);
  if (idle && release_r)
    return t4a__cu_fail(release_r,
                        "runtime_destroy: %s failed; the runtime is gone, that "
                        "resource was leaked",
                        release_what);
  if (idle)
    return T4A_OK;
  if (fault || !failure) {
    char buf[32];
    return t4a__fail_native(T4A_EDEVICEFAULT, fault,
                            fault ? t4a__cu_name((t4a__CUresult)fault, buf, sizeof buf) : "",
                            "runtime_destroy: the device faulted; the runtime is gone, its "
                            "device memory and pending pinned blocks were quarantined (kept, not "
                            "reused)");
  }
  return failure; /* its detail says what failed; memory was quarantined likewise */
}

/* ---- counters ---------------------------------------------------------------- */

int t4a__slot_runtime_counters(t4a_runtime h, t4a_runtime_counters *out) {
  int rc = t4a__check_struct(out, T4A_RUNTIME_COUNTERS_V1_0_SIZE, "t4a_runtime_counters");
  t4a__runtime *rt;
  if (rc || (rc = t4a__rt_lock_any(h, "runtime_counters", &rt)))
    return rc;
  t4a_runtime_counters c = rt->c;
  c.struct_size = sizeof c;
  c.pending_retirements = rt->done.retire_count;
  c.quarantined = rt->done.quarantined + rt->mem.unproven_blocks;
  c.staging_bytes = rt->stage.bytes;
  c.staging_peak_bytes = rt->stage.peak_bytes;
  t4a__rt_unlock(rt);
  t4a__fill_struct(out, &c, sizeof c);
  return T4A_OK;
}
