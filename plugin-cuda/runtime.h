/* plugin-cuda/runtime.h -- the runtime core (runtime.c): the runtime struct,
 * the table of runtimes, locking, context enter/leave, failure recording,
 * and what is kept for good (kept handles, quarantined runtimes).
 *
 * A runtime is one device, one stream and the state of each subsystem,
 * embedded by value; each subsystem's header declares its state and the
 * subsystem alone reads and writes it. Creating and destroying a runtime
 * (lifecycle.c) calls each subsystem's init and fini in one order.
 *
 * Locking: every field of a runtime is guarded by its `slot.lock` (the
 * head backend-core/rtable.h keeps for every backend), taken by t4a__rt_lock() from
 * a handle and released by t4a__rt_unlock(). Runtime structs are never
 * freed while the plugin is loaded (a destroyed runtime's slot is reused
 * with a new generation), so a stale handle can always be checked safely. */
#ifndef T4A_PLUGIN_CUDA_RUNTIME_H
#define T4A_PLUGIN_CUDA_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend-core/keep.h"
#include "backend-core/rtable.h"
#include "plugin-cuda/backend.h"
#include "plugin-cuda/capture.h"
#include "plugin-cuda/completion.h"
#include "backend-core/handle.h"
#include "plugin-cuda/ipc.h"
#include "plugin-cuda/memory.h"
#include "plugin-cuda/module.h"
#include "plugin-cuda/pinned.h"
#include "plugin-cuda/staging.h"

struct t4a__runtime {
  /* Identity and lock (backend-core/rtable.h), kept across the slot's reuse; first,
   * so that the table's head is the runtime. */
  t4a__rtslot slot;

  /* State: everything from here on is zeroed when the slot is reused. */
  int fault; /* sticky cause (a CUresult), or 0 */
  /* The first release call that failed during destroy (reported by it). */
  t4a__CUresult release_r;
  const char *release_what;

  int32_t ordinal;
  t4a__CUdevice dev;
  t4a__CUcontext ctx;
  t4a__CUstream stream;
  t4a_runtime_options opts; /* normalised */
  t4a_runtime_counters c;   /* every subsystem counts here */
  /* The device's stream priority range, asked at creation (priority.c);
   * both 0 when the driver cannot say. */
  int32_t priority_least, priority_greatest;

  t4a__completion done; /* completion.h */
  t4a__memory mem;      /* memory.h */
  t4a__pinned pin;      /* pinned.h */
  t4a__staging stage;   /* staging.h */
  t4a__modules code;    /* module.h */
  t4a__capture cap;     /* capture.h: the capture in progress */
  t4a__htable graphs;   /* capture.h: of t4a__graph */
  t4a__ipc ipc;         /* ipc.h: what it shares with other processes (v1.2) */
};

/* Looks up and locks the runtime of a handle; T4A_EHANDLE (stale, foreign,
 * forged) or T4A_EDEVICEFAULT (sticky) otherwise, with `what` naming the
 * call in the detail. */
int t4a__rt_lock(t4a_runtime h, const char *what, t4a__runtime **out);

/* As t4a__rt_lock but lets a faulted runtime through (destroy, counters,
 * queries that report the fault themselves). */
int t4a__rt_lock_any(t4a_runtime h, const char *what, t4a__runtime **out);

/* Unlocks rt, then runs the calls that became due meanwhile (backend-core/rtable.h
 * says when a thread may). */
static inline void t4a__rt_unlock(t4a__runtime *rt) { t4a__rtable_unlock(&rt->slot); }

/* Queues c to run once rt's lock is let go (rt locked). */
static inline void t4a__rt_defer(t4a__runtime *rt, t4a__call *c) {
  t4a__rtable_defer(&rt->slot, c);
}

/* Lets rt's lock go for a moment, keeping its due calls (backend-core/rtable.h). */
static inline void t4a__rt_unlock_keep(t4a__runtime *rt, t4a__calls *kept) {
  t4a__rtable_unlock_keep(&rt->slot, kept);
}
static inline void t4a__rt_relock(t4a__runtime *rt, const t4a__calls *kept) {
  t4a__rtable_relock(&rt->slot, kept);
}

/* The runtime struct of a slot index (never freed), or NULL. */
static inline t4a__runtime *t4a__rt_slot(uint32_t index) {
  return (t4a__runtime *)t4a__rtable_slot(index); /* the head is the first member */
}

/* The runtime struct a handle names, unchecked and unlocked, or NULL: only
 * for prefetching (t4a__rt_lock checks the handle). A slot is never freed
 * while the plugin is loaded, and a prefetch never faults. */
static inline t4a__runtime *t4a__rt_peek(t4a_runtime h) { return t4a__rt_slot(t4a__h_rt(h.bits)); }

/* Warms the lines a hot slot is about to use before it takes the lock: after
 * the consumer's (or the driver's) last call they have left the nearest
 * caches, and fetched one after another, each behind the lock's atomic
 * operation and the loads before it, they cost more than the call's own
 * work (bench/t4a_stages measures the stages in situ). Prefetched first, the
 * misses overlap each other and the lock. Measured paired (bench/t4a_ab, the
 * H200 host, three runs): a 64-byte copy_h2d 0.988, 0.988, 0.993x of the
 * build without; a launch 1.014, 0.994, 1.002x (not kept there). */
static inline void t4a__rt_warm(const void *a, const void *b, const void *c, const void *d,
                                const void *e) {
  __builtin_prefetch(a, 1);
  __builtin_prefetch(b, 1);
  __builtin_prefetch(c, 1);
  __builtin_prefetch(d, 1);
  __builtin_prefetch(e, 1);
}

static inline t4a_runtime t4a__rt_handle(const t4a__runtime *rt) {
  return t4a__rtable_handle(&rt->slot);
}

/* Takes a dead slot (or a new one) for a runtime being created, locked,
 * reserved and with its state cleared; NULL when none is left. */
t4a__runtime *t4a__rt_take_slot(void);

/* Clears a slot's state (everything after its identity); lock held. */
void t4a__rt_reset(t4a__runtime *rt);

/* Makes rt's context current on this thread for a driver call. If another
 * context was current, t4a__ctx_leave restores it; if none was, ours stays
 * current (as the CUDA runtime API would leave it). */
int t4a__ctx_enter(t4a__runtime *rt, t4a__CUcontext *saved);
void t4a__ctx_leave(t4a__runtime *rt, t4a__CUcontext saved);

/* The hot path's driver calls that name their context through a stream or
 * a function (cuLaunchKernel, cuLaunchKernelEx, cuGraphLaunch, a seal's
 * cuEventRecord, a small pageable cuMemcpyHtoDAsync, copy_d2d's
 * cuMemcpyDtoDAsync, the memsets): `r = call` with no
 * context made current first (measured on driver 580.159.04: they succeed
 * with another context current, or none, and leave it alone), saving a
 * cuCtxGetCurrent each. A driver that wants the context current after all
 * says so (an invalid context or handle), and one that objects to the
 * caller's current context having been destroyed (CONTEXT_IS_DESTROYED,
 * which would otherwise read as this device's fault): then the call is made
 * again with rt's context current, and a failure then is the call's own.
 * `rc` (an int, T4A_OK before) gets the failure of making it current; r is
 * the first call's then. */
#define T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc, call)                                               \
  do {                                                                                             \
    (r) = (call);                                                                                  \
    if ((r) != T4A__CUDA_SUCCESS &&                                                                \
        ((r) == T4A__CUDA_ERROR_INVALID_CONTEXT || (r) == T4A__CUDA_ERROR_INVALID_HANDLE ||        \
         (r) == T4A__CUDA_ERROR_CONTEXT_IS_DESTROYED)) {                                           \
      t4a__CUcontext t4a__saved_;                                                                  \
      if (((rc) = t4a__ctx_enter((rt), &t4a__saved_)) == T4A_OK) {                                 \
        (r) = (call);                                                                              \
        t4a__ctx_leave((rt), t4a__saved_);                                                         \
      }                                                                                            \
    }                                                                                              \
  } while (0)

/* Records a failed driver call on rt: like t4a__cu_fail, and a device
 * fault also marks rt (and its device) faulted. */
int t4a__rt_cu_record(t4a__runtime *rt, t4a__CUresult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define t4a__rt_cu_fail(rt, r, ...) t4a__failed(t4a__rt_cu_record((rt), (r), __VA_ARGS__))

/* Whether the driver has the memset of element_size (1, 2 or 4) bytes: the
 * 8-bit one is required, the 16- and 32-bit ones are not. */
static inline bool t4a__rt_has_memset(unsigned element_size) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  return element_size == 1 ||
         (element_size == 2 ? cu->cuMemsetD16Async != NULL : cu->cuMemsetD32Async != NULL);
}

/* cuMemsetD8/D16/D32Async of `count` elements of element_size bytes with
 * `value` on rt's stream (t4a__rt_has_memset first; made through
 * T4A__RT_CALL_IN_ITS_CONTEXT: the stream names the context). */
static inline t4a__CUresult t4a__rt_memset(const t4a__runtime *rt, t4a__CUdeviceptr p,
                                           uint32_t value, unsigned element_size, size_t count) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  return element_size == 1   ? cu->cuMemsetD8Async(p, (unsigned char)value, count, rt->stream)
         : element_size == 2 ? cu->cuMemsetD16Async(p, (unsigned short)value, count, rt->stream)
                             : cu->cuMemsetD32Async(p, value, count, rt->stream);
}

/* Marks work as enqueued since the last seal. */
static inline void t4a__rt_dirty(t4a__runtime *rt) { rt->done.dirty = true; }

/* A hot enqueue's bookkeeping done ahead of its driver call (rt locked):
 * the count, the bytes (may be NULL) and the dirty flag are written while
 * their lines are warm, and put back if the call fails. After the call they
 * would be cold (the driver's work evicts them), and the lock's release, a
 * locked instruction, waits for every store before it: each line written
 * after the call is a miss on the call's critical path. */
typedef struct t4a__rt_ahead {
  uint64_t *count, *bytes;
  uint64_t count_was, bytes_was;
  bool dirty_was;
} t4a__rt_ahead;

static inline t4a__rt_ahead t4a__rt_count_ahead(t4a__runtime *rt, uint64_t *count, uint64_t *bytes,
                                                uint64_t n) {
  t4a__rt_ahead a = {count, bytes, *count, bytes ? *bytes : 0, rt->done.dirty};
  (*count)++;
  if (bytes)
    *bytes += n;
  rt->done.dirty = true;
  return a;
}

static inline void t4a__rt_count_undo(t4a__runtime *rt, const t4a__rt_ahead *a) {
  *a->count = a->count_was;
  if (a->bytes)
    *a->bytes = a->bytes_was;
  rt->done.dirty = a->dirty_was;
}

/* A launch's (launch, launch_ex): one captured into a graph is recorded,
 * not run, and not counted (its count goes to the caller's *scratch). */
static inline t4a__rt_ahead t4a__rt_launch_ahead(t4a__runtime *rt, uint64_t *scratch) {
  return t4a__rt_count_ahead(rt, rt->cap.active ? scratch : &rt->c.launches, NULL, 0);
}

/* The result of a release call that has no status to report it (an undo
 * path, the spare parts): on failure the handle is kept. True if released. */
static inline bool t4a__release_or_keep(t4a__CUresult r, const void *handle) {
  if (r != T4A__CUDA_SUCCESS)
    t4a__keep(handle);
  return r == T4A__CUDA_SUCCESS;
}

/* Notes the result of a release call made by destroy: on failure the handle
 * is kept (t4a__keep) and the first failure is what runtime_destroy
 * reports. */
static inline void t4a__released(t4a__runtime *rt, t4a__CUresult r, const void *handle,
                                 const char *what) {
  if (r == T4A__CUDA_SUCCESS)
    return;
  t4a__keep(handle);
  if (!rt->release_r) {
    rt->release_r = r;
    rt->release_what = what;
  }
}

/* A runtime destroyed after a fault: its state (every handle and block it
 * owned, with the subsystems' bookkeeping listing them) is copied to a
 * process-wide list and never freed; the plugin pins itself loaded. */
void t4a__rt_quarantine(const t4a__runtime *rt);

/* Plugin teardown: frees the structs of destroyed runtimes (live ones are
 * left: their driver objects cannot be released from a destructor). */
static inline void t4a__runtimes_unload(void) { t4a__rtable_unload(); }

/* ---- priority.c (v1.1): stream priority, with rt's context current ---- */

/* Asks the device's priority range into rt (0 .. 0 without the call). */
int t4a__priority_range(t4a__runtime *rt);

/* T4A_ERANGE / T4A_EUNSUPPORTED unless `priority` (0 = default) is one the
 * device has. */
int t4a__priority_check(const t4a__runtime *rt, int32_t priority);

/* Creates rt->stream (non-blocking) at `priority`. */
int t4a__stream_create(t4a__runtime *rt, int32_t priority);

#endif
