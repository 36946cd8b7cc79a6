/* plugin-cuda/runtime.c -- the runtime table, locking, context handling,
 * and runtime_create / runtime_destroy / runtime_counters. */
#include "config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "plugin-cuda/runtime.h"

/* Runtime structs by slot. A slot is filled once and never freed: a
 * destroyed runtime's struct stays, dead, until a new runtime reuses it
 * with the next generation. */
static t4a__runtime *_Atomic slots[T4A__MAX_RUNTIMES];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t slots_used;

t4a__runtime *t4a__rt_slot(uint32_t index) {
  return index < T4A__MAX_RUNTIMES ? atomic_load_explicit(&slots[index], memory_order_acquire)
                                   : NULL;
}

static int lock_handle(t4a_runtime h, const char *what, t4a__runtime **out, bool any) {
  if (t4a__h_tag(h.bits) != T4A__TAG_RUNTIME)
    return t4a__fail(h.bits ? T4A_EHANDLE : T4A_EINVAL,
                     "%s: %s is not a runtime handle; pass one from runtime_create", what,
                     h.bits ? "the handle" : "a null handle");
  t4a__runtime *rt = t4a__rt_slot(t4a__h_rt(h.bits));
  if (!rt)
    return t4a__fail(T4A_EHANDLE, "%s: unknown runtime handle; pass one from runtime_create", what);
  pthread_mutex_lock(&rt->lock);
  if (!rt->alive || rt->gen != t4a__h_gen(h.bits)) {
    pthread_mutex_unlock(&rt->lock);
    return t4a__fail(T4A_EHANDLE, "%s: the runtime was destroyed; create a new one", what);
  }
  unsigned dev_fault = atomic_load(&t4a__be.devices[rt->ordinal].fault);
  if (!rt->fault && dev_fault)
    rt->fault = (int)dev_fault;
  if (rt->fault && !any) {
    char buf[32];
    int rc = t4a__fail_native(T4A_EDEVICEFAULT, rt->fault,
                              t4a__cu_name((t4a__CUresult)rt->fault, buf, sizeof buf),
                              "%s: device %d faulted earlier (sticky for every runtime on it); "
                              "destroy the runtimes on it and create new ones",
                              what, (int)rt->ordinal);
    pthread_mutex_unlock(&rt->lock);
    return rc;
  }
  *out = rt;
  return T4A_OK;
}

int t4a__rt_lock(t4a_runtime h, const char *what, t4a__runtime **out) {
  return lock_handle(h, what, out, false);
}

int t4a__rt_lock_any(t4a_runtime h, const char *what, t4a__runtime **out) {
  return lock_handle(h, what, out, true);
}

int t4a__ctx_enter(t4a__runtime *rt, t4a__CUcontext *saved) {
  t4a__CUcontext cur = NULL;
  t4a__CUresult r = t4a__be.cu.cuCtxGetCurrent(&cur);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "cuCtxGetCurrent failed; check the driver");
  *saved = cur;
  if (cur != rt->ctx && (r = t4a__be.cu.cuCtxSetCurrent(rt->ctx)) != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "cuCtxSetCurrent failed for device %d; check the driver",
                           (int)rt->ordinal);
  return T4A_OK;
}

void t4a__ctx_leave(t4a__runtime *rt, t4a__CUcontext saved) {
  if (saved && saved != rt->ctx)
    t4a__be.cu.cuCtxSetCurrent(saved);
}

int t4a__rt_cu_record(t4a__runtime *rt, t4a__CUresult r, const char *fmt, ...) {
  char msg[T4A__ERROR_MESSAGE_MAX - 96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (t4a__cu_is_fault(r)) {
    rt->fault = (int)r;
    unsigned none = 0;
    atomic_compare_exchange_strong(&t4a__be.devices[rt->ordinal].fault, &none, r);
    t4a__log(T4A__LOG_ERROR, "cuda", "device %d faulted: %s", (int)rt->ordinal, msg);
  }
  return t4a__cu_record(r, "%s", msg);
}

/* The plugin is being unloaded: free the structs of destroyed runtimes.
 * Runtimes still alive are left as they are (their driver objects cannot be
 * released safely from a destructor): destroy runtimes before closing. */
__attribute__((destructor)) static void t4a__runtime_unload(void) {
  for (uint32_t i = 0; i < slots_used; i++) {
    t4a__runtime *rt = atomic_load(&slots[i]);
    if (rt && !rt->alive && !rt->reserved) {
      atomic_store(&slots[i], NULL);
      pthread_mutex_destroy(&rt->lock);
      free(rt);
    }
  }
}

/* ---- create ---------------------------------------------------------------- */

#define DEFAULT_STAGING (64ull << 20)
#define MIN_STAGING (64ull << 10)
#define MAX_STAGING (16ull << 30)
#define DEFAULT_CACHE_LIMIT (1ull << 30)

static int normalise_options(const t4a_runtime_options *in, t4a_runtime_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  if (in) {
    int rc = t4a__check_struct(in, T4A_RUNTIME_OPTIONS_V1_0_SIZE, "t4a_runtime_options");
    if (rc)
      return rc;
    if (in->flags || in->reserved)
      return t4a__fail(T4A_EINVAL,
                       "t4a_runtime_options: flags (0x%x) and reserved (0x%x) must be "
                       "0 in ABI 1.0; clear them",
                       in->flags, in->reserved);
    o->staging_bytes = in->staging_bytes;
    o->pool_release_threshold = in->pool_release_threshold;
    o->cache_limit_bytes = in->cache_limit_bytes;
    o->copy_threads = in->copy_threads;
  }
  if (!o->staging_bytes)
    o->staging_bytes = DEFAULT_STAGING;
  if (o->staging_bytes < MIN_STAGING || o->staging_bytes > MAX_STAGING)
    return t4a__fail(T4A_EINVAL,
                     "t4a_runtime_options.staging_bytes = %llu is outside [64 KiB, 16 GiB]; pick "
                     "a bound in that range (0 = 64 MiB)",
                     (unsigned long long)o->staging_bytes);
  if (!o->pool_release_threshold)
    o->pool_release_threshold = UINT64_MAX;
  if (!o->cache_limit_bytes)
    o->cache_limit_bytes = DEFAULT_CACHE_LIMIT;
  if (!o->copy_threads)
    o->copy_threads = t4a__copy_threads_default();
  if (o->copy_threads > 64)
    return t4a__fail(T4A_EINVAL, "t4a_runtime_options.copy_threads = %u; use 1..64 (0 = default)",
                     o->copy_threads);
  return T4A_OK;
}

/* Takes a dead slot (or a new one) for a runtime being created; NULL when
 * none is left. */
static t4a__runtime *take_slot(void) {
  pthread_mutex_lock(&slots_lock);
  t4a__runtime *rt = NULL;
  for (uint32_t i = 0; i < slots_used && !rt; i++) {
    t4a__runtime *s = atomic_load(&slots[i]);
    pthread_mutex_lock(&s->lock);
    if (!s->alive && !s->reserved) {
      rt = s;
      rt->reserved = true;
    }
    pthread_mutex_unlock(&s->lock);
  }
  if (!rt && slots_used < T4A__MAX_RUNTIMES) {
    rt = calloc(1, sizeof *rt);
    if (rt) {
      pthread_mutex_init(&rt->lock, NULL);
      rt->index = slots_used;
      rt->reserved = true;
      atomic_store_explicit(&slots[slots_used], rt, memory_order_release);
      slots_used++;
    }
  }
  pthread_mutex_unlock(&slots_lock);
  return rt;
}

/* Clears a slot's state for reuse; its identity (lock, index, generation,
 * flags) stays. Called with the lock held. */
static void reset_slot(t4a__runtime *rt) {
  size_t from = offsetof(t4a__runtime, fault);
  memset((char *)rt + from, 0, sizeof *rt - from);
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
    t4a__CUmemAccessDesc desc = {{T4A__CU_MEM_LOCATION_TYPE_DEVICE, d},
                                 T4A__CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if (cu->cuMemPoolSetAccess(rt->pool, &desc, 1) == T4A__CUDA_SUCCESS)
      rt->pool_access |= 1ull << d;
    else
      t4a__log(T4A__LOG_WARN, "cuda", "granting device %d access to device %d's pool failed",
               (int)d, (int)rt->ordinal);
  }
}

/* Enables peer access, both ways, between a new runtime's device and every
 * device that already has a live runtime (both primary contexts are then
 * active), once per pair. Done at creation, when no work of ours is in
 * flight, rather than at the first peer copy. Failures are remembered and
 * reported by copy_from_peer. Called with no runtime locked. */
static void enable_peers(int32_t ordinal, t4a__CUcontext ctx) {
  if (!t4a__be.has_peer)
    return;
  for (uint32_t i = 0; i < T4A__MAX_RUNTIMES; i++) {
    t4a__runtime *o = t4a__rt_slot(i);
    if (!o)
      break;
    pthread_mutex_lock(&o->lock);
    bool peer = o->alive && o->ordinal != ordinal;
    int32_t dev = o->ordinal;
    t4a__CUcontext octx = o->ctx;
    pthread_mutex_unlock(&o->lock);
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
      (rc = normalise_options(opts, &o)))
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
  t4a__runtime *rt = take_slot();
  if (!rt)
    return t4a__fail(T4A_ENOMEM,
                     "runtime_create: %u runtimes exist or host memory ran out; "
                     "destroy runtimes you no longer use",
                     T4A__MAX_RUNTIMES);
  pthread_mutex_lock(&rt->lock);
  reset_slot(rt);
  rt->ordinal = ordinal;
  rt->dev = dv->dev;
  rt->opts = o;
  rt->next_seq = 1;
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__CUresult r;
  t4a__CUcontext saved = NULL;
  if ((r = cu->cuDevicePrimaryCtxRetain(&rt->ctx, rt->dev)) != T4A__CUDA_SUCCESS) {
    rc = t4a__cu_fail(r,
                      "runtime_create: cuDevicePrimaryCtxRetain failed on device %d; check "
                      "that the device is not in exclusive use",
                      (int)ordinal);
    goto fail_slot;
  }
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto fail_ctx;
  if ((r = cu->cuStreamCreate(&rt->stream, T4A__CU_STREAM_NON_BLOCKING)) != T4A__CUDA_SUCCESS) {
    rc = t4a__cu_fail(r, "runtime_create: cuStreamCreate failed; free resources and retry");
    goto fail_enter;
  }
  t4a__CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = T4A__CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = T4A__CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = T4A__CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ordinal;
  if ((r = cu->cuMemPoolCreate(&rt->pool, &props)) != T4A__CUDA_SUCCESS) {
    rc = t4a__cu_fail(r,
                      "runtime_create: cuMemPoolCreate failed on device %d; free resources "
                      "and retry",
                      (int)ordinal);
    goto fail_stream;
  }
  uint64_t threshold = o.pool_release_threshold;
  if ((r = cu->cuMemPoolSetAttribute(rt->pool, T4A__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                     &threshold)) != T4A__CUDA_SUCCESS) {
    rc = t4a__cu_fail(r, "runtime_create: setting the pool's release threshold failed; check "
                         "the driver");
    goto fail_pool;
  }
  grant_peers(rt);
  if ((rc = t4a__staging_init(rt)))
    goto fail_pool;
  t4a__ctx_leave(rt, saved);
  rt->c.struct_size = sizeof rt->c;
  rt->c.staging_bytes = rt->staging.bytes;
  rt->gen = t4a__gen_next(rt->gen);
  rt->alive = true;
  rt->reserved = false;
  *out = t4a__rt_handle(rt);
  t4a__CUcontext ctx = rt->ctx;
  pthread_mutex_unlock(&rt->lock);
  if (t4a__be.device_count > 1)
    enable_peers(ordinal, ctx);
  t4a__log(T4A__LOG_DEBUG, "cuda", "runtime %u created on device %d", rt->index, (int)ordinal);
  return T4A_OK;

fail_pool:
  cu->cuMemPoolDestroy(rt->pool);
fail_stream:
  cu->cuStreamDestroy(rt->stream);
fail_enter:
  t4a__ctx_leave(rt, saved);
fail_ctx:
  cu->cuDevicePrimaryCtxRelease(rt->dev);
fail_slot:
  rt->reserved = false;
  pthread_mutex_unlock(&rt->lock);
  return rc;
}

/* ---- quarantine ----------------------------------------------------------------
 * A runtime destroyed after a fault cannot prove that its device and pinned
 * memory are idle. Its state (every handle and block it owned) is kept, in a
 * process-wide list, never freed; the plugin pins itself loaded so that the
 * list stays reachable. quarantined_runtimes() reports the count. */

static t4a__runtime **quarantine;
static uint32_t quarantine_count;
static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;

static void pin_plugin(void) {
  Dl_info info;
  if (dladdr((void *)(uintptr_t)pin_plugin, &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static const void **kept;
static uint32_t kept_count;

void t4a__keep(const void *handle) {
  pthread_mutex_lock(&quarantine_lock);
  const void **list = realloc(kept, (kept_count + 1) * sizeof *list);
  if (list) {
    kept = list;
    kept[kept_count++] = handle;
  }
  pthread_mutex_unlock(&quarantine_lock);
  pin_plugin();
}

static void quarantine_keep(const t4a__runtime *rt) {
  t4a__runtime *copy = malloc(sizeof *copy);
  pthread_mutex_lock(&quarantine_lock);
  t4a__runtime **list = copy ? realloc(quarantine, (quarantine_count + 1) * sizeof(void *)) : NULL;
  if (list) {
    memcpy(copy, rt, sizeof *copy);
    quarantine = list;
    quarantine[quarantine_count++] = copy;
  }
  pthread_mutex_unlock(&quarantine_lock);
  if (!list)
    free(copy); /* out of memory: the blocks are leaked rather than freed */
  pin_plugin();
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
  bool idle = false, keep_ctx = false;
  if (!rt->fault && t4a__ctx_enter(rt, &saved) == T4A_OK) {
    t4a__memory_wait_readers(rt); /* other runtimes' copies from our buffers */
    rc = drain(rt, timeout_ns);
    if (rc == T4A_ETIMEOUT) {
      t4a__ctx_leave(rt, saved);
      t4a__rt_unlock(rt);
      return rc;
    }
    idle = rc == T4A_OK;
    if (idle) {
      rt->completed_seq = rt->sealed_seq; /* everything sealed is done */
      t4a__rt_progress(rt);
    }
  }
  /* Waiters blocked on our events (witness_wait) hold pins: they wake as
   * the stream drained; wait for them to let go before events go away. */
  for (int spins = 0; idle; spins++) {
    bool pinned = false;
    for (uint32_t i = 0; i < rt->event_count; i++)
      pinned |= rt->events[i]->pins != 0;
    if (!pinned)
      break;
    t4a__rt_unlock(rt);
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&rt->lock);
  }
  int final = idle ? T4A_OK : T4A_EDEVICEFAULT;
  int fault = rt->fault, failure = rc;
  t4a__witness_finalise(rt, final);
  if (idle) {
    t4a__memory_release_all(rt);
    t4a__modules_release_all(rt);
    t4a__pinned_release_all(rt, true);
    t4a__staging_release(rt, true);
    t4a__events_release_all(rt);
    t4a__released(rt, cu->cuMemPoolDestroy(rt->pool), rt->pool, "cuMemPoolDestroy");
    t4a__released(rt, cu->cuStreamDestroy(rt->stream), rt->stream, "cuStreamDestroy");
    t4a__ctx_leave(rt, saved);
  } else {
    /* Retirement cannot be proven: keep (quarantine) device and pinned
     * memory that pending work may use; release only host bookkeeping. */
    t4a__pinned_release_all(rt, false); /* only the idle cached blocks */
    /* events hold no memory the GPU could touch; pinned ones are kept */
    keep_ctx = t4a__events_release_all(rt);
    if (saved)
      t4a__ctx_leave(rt, saved);
    t4a__log(T4A__LOG_WARN, "cuda",
             "runtime %u destroyed after a fault: its memory is "
             "quarantined",
             rt->index);
  }
  if (keep_ctx)
    t4a__keep(rt->ctx); /* a kept event lives in it */
  else
    t4a__released(rt, cu->cuDevicePrimaryCtxRelease(rt->dev), rt->ctx, "cuDevicePrimaryCtxRelease");
  t4a__CUresult release_r = rt->release_r;
  const char *release_what = rt->release_what;
  if (idle) {
    free(rt->bufs);
    free(rt->hosts);
    free(rt->pending);
    free(rt->events);
    free(rt->retire);
    free(rt->mods);
    free(rt->funcs);
    for (unsigned i = 0; i < T4A__NUM_CLASSES; i++)
      free(rt->bins[i].ptrs);
  } else {
    quarantine_keep(rt);
  }
  t4a__log(T4A__LOG_DEBUG, "cuda", "runtime %u on device %d destroyed%s", rt->index,
           (int)rt->ordinal, idle ? "" : " (memory quarantined)");
  reset_slot(rt);
  rt->gen = t4a__gen_next(rt->gen); /* every handle of the old runtime is now stale */
  rt->alive = false;
  t4a__rt_unlock(rt);
  if (idle && release_r)
    return t4a__cu_fail(release_r,
                        "runtime_destroy: %s failed; the runtime is gone, that "
                        "resource was leaked",
                        release_what);
  if (idle)
    return T4A_OK;
  if (fault || !failure)
    return t4a__fail(T4A_EDEVICEFAULT, "runtime_destroy: the device faulted; the runtime is "
                                       "gone, its device memory and pending pinned blocks were "
                                       "quarantined (kept, not reused)");
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
  c.pending_retirements = rt->retire_count;
  c.quarantined = rt->quarantined + rt->unproven_blocks;
  c.staging_bytes = rt->staging.bytes;
  c.staging_peak_bytes = rt->staging.peak_bytes;
  t4a__rt_unlock(rt);
  t4a__fill_struct(out, &c, sizeof c);
  return T4A_OK;
}
