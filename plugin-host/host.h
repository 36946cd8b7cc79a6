/* plugin-host/host.h -- the host backend's runtime: one in-order queue
 * (queue.h) and the state of each subsystem, embedded by value behind the
 * backend-core/rtable head. Every field after the head is guarded by the head's
 * lock (t4a__hrt_lock / t4a__hrt_unlock); the worker thread reads only the
 * queue's ring and writes only its timeline.
 *
 * Subsystems: memory.c (the pool, the block cache, buffers), pinned.c (host
 * buffers), retire.c (what waits for the queue before it is released),
 * transfer.c / copy2d.c / cross.c (copies), witness.c (completion),
 * graph.c (captures), external.c and dlpack.c (interop), kernel.h (the
 * kernels: compile, modules, launches, the pool, the device's fault). */
#ifndef T4A_PLUGIN_HOST_HOST_H
#define T4A_PLUGIN_HOST_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "backend-core/alog.h"
#include "backend-core/budget.h"
#include "backend-core/fork.h"
#include "backend-core/handle.h"
#include "backend-core/kinds.h"
#include "backend-core/rtable.h"
#include "backend-core/sizeclass.h"
#include "plugin-host/kernel.h"
#include "plugin-host/queue.h"
#include "t4a/gpu_backend_v1.h"

/* ---- memory.c: the pool and the block cache -------------------------- */

/* A mapping the pool reserved: blocks are carved from it in order; it is
 * unmapped once every block carved from it went back to the pool. */
typedef struct t4a__chunk {
  char *base;
  uint64_t size, used; /* bytes mapped, bytes carved so far */
  uint64_t live;       /* bytes of blocks carved and not given back (buffers, cache) */
  struct t4a__chunk *next;
  /* Checked mode (check.c): a buffer's own mapping, a PROT_NONE guard page
   * (page bytes) at each end, the data [data, +bytes) against the upper
   * guard as far as the 256-byte alignment allows, the rest of the data
   * pages canaries; on check.c's watch list (wprev, wnext). */
  bool guarded;
  uint32_t page;
  char *data;
  uint64_t bytes;
  struct t4a__chunk *wprev, *wnext;
} t4a__chunk;

typedef struct t4a__block {
  char *ptr;
  t4a__chunk *chunk;
} t4a__block;

typedef struct t4a__hbin {
  t4a__block *blocks;
  uint32_t count, cap;
} t4a__hbin;

typedef struct t4a__ext t4a__ext;
typedef struct t4a__hrt t4a__hrt;

typedef struct t4a__hbuf {
  t4a__hslot h;
  uint64_t size, cap; /* requested, allocated (its size class; 0 when empty or external) */
  t4a__block blk;
  /* Another runtime's copy read this buffer (cross.c): its timeline and
   * the position after that copy. The block is not reused before it. */
  t4a__timeline *reader;
  uint64_t reader_seq;
  /* Memory the runtime did not allocate (external.c), else NULL: never
   * cached; once its uses completed, ext_released(rt, ext) (through the
   * retirements, as data) gives it back to the consumer. */
  t4a__ext *ext;
  void (*ext_released)(t4a__hrt *rt, void *ext, uint64_t bytes, bool final);
} t4a__hbuf;

typedef struct t4a__hmem {
  t4a__htable bufs; /* of t4a__hbuf */
  t4a__chunk *chunks;
  t4a__hbin bins[T4A__NUM_CLASSES];
  uint64_t cache_entries, cache_bytes;
  uint64_t reserved, used,
      high_water;               /* the pool's bytes mapped, carved (live + cached), most used */
  uint64_t limit;               /* most bytes the pool may map */
  t4a__budget budget;           /* v1.2: the bound on `used`, and the out-of-memory callback */
  t4a__alog *log;               /* v1.2: the allocation log, NULL without T4A_RUNTIME_ALLOC_LOG */
  t4a__chunk *dead, *dead_tail; /* checked mode: freed guarded buffers, PROT_NONE, oldest first */
  uint32_t dead_count;
} t4a__hmem;

/* ---- guard.c, check.c: guarded buffers (checked mode, kernel.h) ------- */

/* A buffer of `bytes` in a guarded mapping of its own (false: over the
 * pool's limit, or no memory); its end (behind the queued work) into the
 * quarantine; the quarantine unmapped (runtime_destroy). */
bool t4a__hguard_alloc(t4a__hrt *rt, uint64_t bytes, t4a__block *out);
void t4a__hguard_free(t4a__hrt *rt, const t4a__block *b);
void t4a__hguard_fini(t4a__hrt *rt);

/* Fills [from, to) with canaries. */
void t4a__hcheck_fill(char *from, char *to);
/* A guarded buffer's canaries are checked after each checked launch
 * (watch, once filled), no longer (unwatch, before it is unmapped). */
void t4a__hcheck_watch(t4a__chunk *c);
void t4a__hcheck_unwatch(t4a__chunk *c);
/* ---- pinned.c: host buffers ------------------------------------------- */

typedef struct t4a__hhost {
  t4a__hslot h;
  char *ptr;
  uint64_t bytes;
  bool registered; /* host_register: the consumer's memory */
  bool read_only;  /* T4A_HOST_REGISTER_READ_ONLY */
} t4a__hhost;

/* ---- retire.c: releases behind the queue ------------------------------ */

/* Something released once the queue reached `seq` and a seal covered it
 * (the library never seals behind the caller's back). `final`: the runtime
 * is being destroyed. */
typedef struct t4a__hretire {
  uint64_t seq;
  void (*release)(t4a__hrt *rt, void *ptr, uint64_t bytes, bool final);
  void *ptr;
  uint64_t bytes;
} t4a__hretire;

/* ---- graph.c: the capture in progress --------------------------------- */

typedef struct t4a__hcapture {
  bool active;
  int error;    /* the first failure to record: graph_end discards the capture */
  t4a__op *ops; /* recorded, in call order */
  uint32_t count, cap;
  uint64_t *named; /* handle bits of the buffers and host buffers the ops name */
  uint32_t named_count, named_cap;
} t4a__hcapture;

/* A graph (graph.c): its operations and what they name. */
typedef struct t4a__hgraph {
  t4a__hslot h;
  t4a__graph_ops *ops; /* its own allocation: queued GRAPH operations point at it */
  uint64_t *named;     /* handle bits, checked live at each replay */
  uint32_t named_count;
  uint64_t last_use; /* queue position after its last replay, 0 = never replayed */
  uint64_t replays;
} t4a__hgraph;

/* ---- the runtime ------------------------------------------------------- */

struct t4a__hrt {
  t4a__rtslot slot; /* backend-core/rtable: identity and lock; must be first */
  /* State: zeroed when the slot is reused. */
  t4a_runtime_options opts; /* normalised */
  t4a_runtime_counters c;
  t4a__queue q;
  uint64_t sealed;      /* queue position the last seal covered */
  t4a__mark *last_mark; /* timing: the mark of the last seal (or creation) */
  t4a__hmem mem;
  t4a__htable hosts; /* of t4a__hhost */
  t4a__hretire *retire;
  uint32_t retire_count, retire_cap;
  t4a__hcapture cap;
  t4a__htable graphs; /* graph.c */
  t4a__htable mods;   /* of t4a__hmodule (module.c) */
  t4a__htable funcs;  /* of t4a__hfunc */
  bool checked;       /* T4A_HOST_CHECK=1 at its creation: guarded buffers, checked launches */
};

/* Looks up and locks a runtime (T4A_EHANDLE naming `what`), whatever the
 * device's state: for the slots that still serve after a fault (destroy,
 * counters, info, sizes and the releases, as on CUDA). */
static inline int t4a__hrt_lock_any(t4a_runtime h, const char *what, t4a__hrt **out) {
  t4a__rtslot *s;
  int rc = t4a__rtable_lock(h, what, &s);
  *out = rc ? NULL : (t4a__hrt *)(void *)s;
  return rc;
}

/* T4A_EDEVICEFAULT naming `what` and the device's first fault (fault.c). */
int t4a__hrt_faulted(const char *what);

/* t4a__hrt_lock_any, and T4A_EDEVICEFAULT once the device faulted (sticky
 * for every runtime: fault.c). */
static inline int t4a__hrt_lock(t4a_runtime h, const char *what, t4a__hrt **out) {
  if (atomic_load_explicit(&t4a__hfaulted, memory_order_relaxed)) {
    int rc = t4a__hrt_lock_any(h, what, out); /* a bad handle is still T4A_EHANDLE */
    if (rc)
      return rc;
    t4a__rtable_unlock(&(*out)->slot);
    *out = NULL;
    (void)t4a__hrt_faulted(what); /* records the message */
    return T4A_EDEVICEFAULT;      /* visibly nonzero: callers never see a NULL runtime */
  }
  return t4a__hrt_lock_any(h, what, out);
}
static inline void t4a__hrt_unlock(t4a__hrt *rt) { t4a__rtable_unlock(&rt->slot); }

/* T4A_ENOTINIT before init (device.c). */
int t4a__host_require_init(void);
/* T4A_ENOTINIT before init, T4A_EINVAL for an ordinal other than 0. */
int t4a__host_check_ordinal(int32_t ordinal, const char *what);

/* The runtime's own handle. */
static inline t4a_runtime t4a__hrt_handle(const t4a__hrt *rt) {
  return t4a__rtable_handle(&rt->slot);
}

/* Enqueues op on rt: recorded into the capture when one is in progress,
 * run at once when the queue is idle and op small, started over the copy
 * threads when the queue is idle and op large (t4a__queue_early), else
 * pushed. `a`, `b`: the buffer handles it names (0: none), for the capture. */
void t4a__hrt_enqueue(t4a__hrt *rt, const t4a__op *op, uint64_t a, uint64_t b);

/* A pageable copy: on the caller's thread when the queue is idle (over
 * the copy threads when large), else queued and waited for: it returns
 * once the host memory was read or written (T4A_OK), or T4A_EDEVICEFAULT
 * when a kernel ahead of it faulted (the copy never ran). */
int t4a__hrt_pageable(t4a__hrt *rt, const t4a__op *op);

/* T4A_EBUSY when rt captures: `what` cannot be captured, because `why`. */
int t4a__hrt_refuse(const t4a__hrt *rt, const char *what, const char *why);

/* Waits (rt locked) until rt's queue reached seq. */
void t4a__hrt_drain(t4a__hrt *rt, uint64_t seq);

/* memory.c */
int t4a__hbuf_get(t4a__hrt *rt, t4a_buffer h, const char *what, t4a__hbuf **out);
/* The pool's bookkeeping, and the allocation log when the options ask
 * (T4A_ENOMEM, nothing made, when it cannot be had). */
int t4a__hmem_init(t4a__hrt *rt);
void t4a__hmem_fini(t4a__hrt *rt);
/* Makes a buffer of external memory (external.c): [address, +bytes), whose
 * release `released` (a retirement) gets `ext`. */
int t4a__hbuf_wrap(t4a__hrt *rt, const char *what, uint64_t address, uint64_t bytes, t4a__ext *ext,
                   void (*released)(t4a__hrt *, void *, uint64_t, bool), t4a_buffer *out);
/* A synchronisation point (seal): with the queue drained, unmaps chunks no
 * block uses until the pool holds at most pool_release_threshold bytes
 * (the option's "reserved across synchronisations"; default: keep all). */
void t4a__hmem_sync(t4a__hrt *rt);
/* Orders rt's queue after b's foreign reader, if any (before reuse). */
void t4a__hbuf_wait_reader(t4a__hrt *rt, t4a__hbuf *b);
/* Records an allocation-log event of rt (its log exists) at its queue's
 * position, with what rt holds now. */
void t4a__hmem_note(t4a__hrt *rt, uint32_t kind, uint32_t detail, uint64_t buffer, uint64_t address,
                    uint64_t bytes);

/* pinned.c */
int t4a__hhost_get(t4a__hrt *rt, t4a_host_buffer h, const char *what, t4a__hhost **out);
void t4a__hhost_fini(t4a__hrt *rt);

/* retire.c */
int t4a__retire_add(t4a__hrt *rt, const t4a__hretire *r);
/* Releases what is due (a natural point: see retire.c). */
void t4a__retire_due(t4a__hrt *rt);
/* Destroy (the queue is drained): releases everything left. */
void t4a__retire_fini(t4a__hrt *rt);

/* capture.c: records op (naming buffer or host buffer handles a, b; 0:
 * none) into rt's capture; frees a recording. */
void t4a__capture_note(t4a__hrt *rt, const t4a__op *op, uint64_t a, uint64_t b);
void t4a__capture_free(t4a__hcapture *c);

/* graph.c */
void t4a__graphs_fini(t4a__hrt *rt);

/* external.c: wraps [address, +bytes) as a buffer of rt whose release is release(user). */
int t4a__host_wrap(t4a__hrt *rt, const char *what, uint64_t address, uint64_t bytes,
                   void (*release)(void *), void *user, t4a_buffer *out);

/* witness.c: plugin teardown. */
void t4a__hwitnesses_unload(void);

/* device.c */
extern t4a_device_info t4a__host_device;

#endif
