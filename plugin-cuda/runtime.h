/* plugin-cuda/runtime.h -- a runtime: one device, one stream, one memory pool,
 * one block cache, one pinned staging area, its handles and its counters.
 *
 * Locking: every field of a runtime is guarded by its `lock`, taken by
 * t4a__rt_lock() from a handle and released by t4a__rt_unlock(). Runtime
 * structs are never freed (a destroyed runtime's slot is reused with a new
 * generation), so a stale handle can always be checked safely. */
#ifndef T4A_PLUGIN_CUDA_RUNTIME_H
#define T4A_PLUGIN_CUDA_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"

/* ---- handles: tag 4 bits | runtime 12 | index 20 | generation 28 -------- */
enum t4a__tag {
  T4A__TAG_RUNTIME = 1,
  T4A__TAG_BUFFER = 2,
  T4A__TAG_HOST = 3,
  T4A__TAG_WITNESS = 4,
  T4A__TAG_ARTIFACT = 5,
  T4A__TAG_MODULE = 6,
  T4A__TAG_FUNCTION = 7
};

#define T4A__MAX_RUNTIMES 4096u
#define T4A__MAX_INDEX (1u << 20)
#define T4A__GEN_MASK ((1u << 28) - 1)

static inline uint64_t t4a__h_make(unsigned tag, uint32_t rt, uint32_t index, uint32_t gen) {
  return (uint64_t)tag << 60 | (uint64_t)(rt & 0xfffu) << 48 |
         (uint64_t)(index & (T4A__MAX_INDEX - 1)) << 28 | (uint64_t)(gen & T4A__GEN_MASK);
}
static inline unsigned t4a__h_tag(uint64_t h) { return (unsigned)(h >> 60); }
static inline uint32_t t4a__h_rt(uint64_t h) { return (uint32_t)(h >> 48) & 0xfffu; }
static inline uint32_t t4a__h_index(uint64_t h) {
  return (uint32_t)(h >> 28) & (T4A__MAX_INDEX - 1);
}
static inline uint32_t t4a__h_gen(uint64_t h) { return (uint32_t)h & T4A__GEN_MASK; }

/* Next generation of a slot: never 0, so no live handle is all-zero. */
static inline uint32_t t4a__gen_next(uint32_t gen) {
  gen = (gen + 1) & T4A__GEN_MASK;
  return gen ? gen : 1;
}

/* Takes one more reference on a 32-bit count; false (nothing changed) when
 * the count is saturated, so it can never wrap to a premature free. */
static inline bool t4a__ref_take(uint32_t *refs) {
  if (*refs == UINT32_MAX)
    return false;
  ++*refs;
  return true;
}

/* ---- size classes: 8 per power of two, at least 256 bytes -------------- */
#define T4A__MAX_ALLOC (1ull << 46) /* 64 TiB: beyond any device */
#define T4A__NUM_CLASSES (1u + (46u - 8u) * 8u)

/* Class of a size in (0, T4A__MAX_ALLOC]; *cap is its capacity. */
static inline unsigned t4a__size_class(uint64_t size, uint64_t *cap) {
  if (size <= 256) {
    *cap = 256;
    return 0;
  }
  unsigned k = 63u - (unsigned)__builtin_clzll(size - 1); /* size in (2^k, 2^(k+1)] */
  uint64_t base = 1ull << k, step = base >> 3;
  uint64_t j = (size - base + step - 1) / step; /* 1..8 */
  *cap = base + j * step;
  return 1u + (k - 8u) * 8u + (unsigned)(j - 1);
}

/* Capacity of a size class (the inverse of t4a__size_class). */
static inline uint64_t t4a__class_cap(unsigned cls) {
  if (cls == 0)
    return 256;
  unsigned k = (cls - 1) / 8 + 8, j = (cls - 1) % 8 + 1;
  return (1ull << k) + (uint64_t)j * ((1ull << k) >> 3);
}

/* ---- completion ---------------------------------------------------------- */

/* A pooled completion event. While a waiter blocks on it outside the lock it
 * is pinned and not recycled; `orphaned` marks one popped while pinned. */
typedef struct t4a__event {
  t4a__CUevent ev;
  int32_t dev; /* the device whose primary context it was created in */
  uint32_t pins;
  bool orphaned;
  struct t4a__event *next_free;
} t4a__event;

/* Devices a runtime can keep events in (for peer copies). */
#define T4A__MAX_DEVICES 64

/* A seal whose completion is not yet observed. */
typedef struct t4a__seal {
  uint64_t seq;
  t4a__event *event;
} t4a__seal;

/* Something released once the work of `seq` completed: a pinned host block,
 * or (host NULL) a module. */
typedef struct t4a__retire {
  uint64_t seq;
  void *host;
  uint64_t cap;
  uint32_t flags;
  t4a__CUmodule module;
} t4a__retire;

/* ---- memory -------------------------------------------------------------- */
typedef struct t4a__buffer {
  uint32_t gen;
  uint32_t next_free; /* index + 1 of the next free slot, 0 = none */
  bool live;
  uint64_t size; /* as requested */
  uint64_t cap;  /* as allocated (its size class), 0 for empty buffers */
  t4a__CUdeviceptr ptr;
  /* An event (of this runtime, recorded on another runtime's stream) after
   * the last copy that read this buffer from elsewhere; the block is not
   * reused before it completed. NULL when none. */
  t4a__event *reader;
  /* A copy from this buffer was enqueued elsewhere but neither its
   * completion event nor a wait for it succeeded: the block may still be
   * read, so it is never reused or freed (quarantined at buffer_free and
   * destroy). */
  bool unproven;
} t4a__buffer;

typedef struct t4a__host {
  uint32_t gen;
  uint32_t next_free;
  bool live;
  uint32_t flags;
  uint64_t size, cap;
  void *ptr;
  uint64_t last_use; /* seq of the epoch of the last copy using it, 0 = none */
} t4a__host;

/* A stack of cached free blocks of one size class. */
typedef struct t4a__bin {
  t4a__CUdeviceptr *ptrs;
  uint32_t count, cap;
} t4a__bin;

/* A pinned block kept for reuse. */
typedef struct t4a__pinned {
  void *ptr;
  uint64_t cap;
  uint32_t flags;
} t4a__pinned;

/* A loaded module and the functions looked up in it. */
typedef struct t4a__module {
  uint32_t gen;
  uint32_t next_free;
  bool live;
  t4a__CUmodule mod;
  char name[64];
} t4a__module;

typedef struct t4a__function {
  uint32_t gen;
  uint32_t next_free;
  bool live;
  t4a__CUfunction fn;
  uint32_t module;     /* index of its module */
  int32_t max_threads; /* per block, for this kernel */
  int32_t static_shared;
  int32_t max_dynamic; /* dynamic shared memory allowed now */
  char name[64];
} t4a__function;

#define T4A__PINNED_CACHE_ENTRIES 16u
#define T4A__PINNED_CACHE_BYTES (256ull << 20)

/* ---- staging --------------------------------------------------------------- */
typedef struct t4a__chunk {
  char *ptr;
  t4a__CUevent ev;
  bool busy; /* a copy was recorded on ev and not yet seen complete */
} t4a__chunk;

typedef struct t4a__staging {
  char *base; /* one pinned allocation of `bytes` */
  uint64_t bytes, chunk_bytes;
  uint32_t count, next; /* chunks, and the next to use (round robin) */
  t4a__chunk *chunks;
  uint64_t peak_bytes;
} t4a__staging;

/* ---- the runtime ------------------------------------------------------------ */
typedef struct t4a__runtime {
  /* Identity: kept across the slot's reuse (see reset in runtime.c). */
  pthread_mutex_t lock;
  uint32_t index, gen;
  bool alive;
  bool reserved; /* taken by a runtime_create in progress */

  /* State: everything from here on is zeroed when the slot is reused. */
  int fault; /* sticky cause (a CUresult), or 0 */
  /* The first release call that failed during destroy (reported by it). */
  t4a__CUresult release_r;
  const char *release_what;

  int32_t ordinal;
  t4a__CUdevice dev;
  t4a__CUcontext ctx;
  t4a__CUstream stream;
  t4a__CUmemoryPool pool;
  t4a_runtime_options opts; /* normalised */

  /* completion: seals are numbered 1, 2, ...; work enqueued since the last
   * seal belongs to next_seq. */
  uint64_t next_seq, sealed_seq, completed_seq;
  bool dirty; /* work enqueued since the last seal */
  t4a__seal *pending;
  uint32_t pending_head, pending_count, pending_cap;
  t4a__event *free_events[T4A__MAX_DEVICES]; /* by the device of their context */
  uint64_t foreign_ctx; /* devices whose primary context we retained for events */
  uint64_t pool_access; /* devices granted access to our pool (peer copies) */
  t4a__event **events;  /* every event created, for destroy */
  uint32_t event_count, event_cap;

  t4a__retire *retire;
  uint32_t retire_count, retire_cap;
  uint64_t quarantined;
  uint64_t unproven_blocks; /* device blocks kept because a reader was untracked */

  t4a__buffer *bufs;
  uint32_t buf_count, buf_cap, buf_free; /* buf_free: index + 1, 0 = none */
  t4a__bin bins[T4A__NUM_CLASSES];
  uint64_t cache_entries, cache_bytes;

  t4a__host *hosts;
  uint32_t host_count, host_cap, host_free;
  t4a__pinned pinned[T4A__PINNED_CACHE_ENTRIES];
  uint32_t pinned_count;
  uint64_t pinned_bytes;

  t4a__module *mods;
  uint32_t mod_count, mod_cap, mod_free;
  t4a__function *funcs;
  uint32_t func_count, func_cap, func_free;

  t4a__staging staging;
  t4a_runtime_counters c;
} t4a__runtime;

/* Looks up and locks the runtime of a handle; T4A_EHANDLE (stale, foreign,
 * forged) or T4A_EDEVICEFAULT (sticky) otherwise, with `what` naming the
 * call in the detail. */
int t4a__rt_lock(t4a_runtime h, const char *what, t4a__runtime **out);

/* As t4a__rt_lock but lets a faulted runtime through (destroy, counters,
 * queries that report the fault themselves). */
int t4a__rt_lock_any(t4a_runtime h, const char *what, t4a__runtime **out);

static inline void t4a__rt_unlock(t4a__runtime *rt) { pthread_mutex_unlock(&rt->lock); }

/* The runtime struct of a slot index (never freed), or NULL. */
t4a__runtime *t4a__rt_slot(uint32_t index);

static inline t4a_runtime t4a__rt_handle(const t4a__runtime *rt) {
  t4a_runtime h = {t4a__h_make(T4A__TAG_RUNTIME, rt->index, 0, rt->gen)};
  return h;
}

/* Makes rt's context current on this thread for a driver call. If another
 * context was current, t4a__ctx_leave restores it; if none was, ours stays
 * current (as the CUDA runtime API would leave it). */
int t4a__ctx_enter(t4a__runtime *rt, t4a__CUcontext *saved);
void t4a__ctx_leave(t4a__runtime *rt, t4a__CUcontext saved);

/* Records a failed driver call on rt: like t4a__cu_fail, and a device
 * fault also marks rt (and its device) faulted. */
int t4a__rt_cu_record(t4a__runtime *rt, t4a__CUresult r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define t4a__rt_cu_fail(rt, r, ...) t4a__failed(t4a__rt_cu_record((rt), (r), __VA_ARGS__))

/* ---- buffers (memory.c) ------------------------------------------------- */

/* Validates a buffer handle of rt; T4A_EHANDLE naming `what` otherwise. */
int t4a__buffer_get(t4a__runtime *rt, t4a_buffer h, const char *what, t4a__buffer **out);

/* Validates a host buffer handle of rt. */
int t4a__host_get(t4a__runtime *rt, t4a_host_buffer h, const char *what, t4a__host **out);

/* Returns every cached device block to the pool until at most keep bytes
 * remain cached. */
int t4a__cache_trim_locked(t4a__runtime *rt, uint64_t keep);

/* Orders rt's stream after every live buffer's foreign reader (destroy,
 * before draining). */
void t4a__memory_wait_readers(t4a__runtime *rt);

/* Releases all device memory of rt (destroy). */
void t4a__memory_release_all(t4a__runtime *rt);

/* Releases all pinned host memory of rt (destroy); `idle` false leaves
 * blocks that pending work may use (quarantine). */
void t4a__pinned_release_all(t4a__runtime *rt, bool idle);

/* Frees or caches a pinned block whose work completed. */
void t4a__pinned_release(t4a__runtime *rt, void *ptr, uint64_t cap, uint32_t flags);

/* ---- completion (completion.c) -------------------------------------------- */

/* A pooled event in the context of device `dev` (retaining that device's
 * primary context the first time, when it is not rt's own). */
int t4a__event_get(t4a__runtime *rt, int32_t dev, t4a__event **out);
void t4a__event_put(t4a__runtime *rt, t4a__event *e);

/* Before the buffer's block is reused or freed: orders rt's stream after its
 * last foreign reader (GPU-side) and drops the reader. */
int t4a__buffer_wait_reader(t4a__runtime *rt, t4a__buffer *b);

/* Keeps a driver handle whose release failed: it is never freed or reused,
 * stays reachable (the plugin then stays loaded), and is counted. */
void t4a__keep(const void *handle);

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

/* Marks work as enqueued since the last seal. */
static inline void t4a__rt_dirty(t4a__runtime *rt) { rt->dirty = true; }

/* Polls pending seals in order, advancing completed_seq; processes
 * retirements. A failed event makes rt faulted. */
int t4a__rt_progress(t4a__runtime *rt);

/* Queues a pinned block for release after the work of `seq`. */
int t4a__retire_host(t4a__runtime *rt, uint64_t seq, void *ptr, uint64_t cap, uint32_t flags);

/* Queues a module for unloading after the work of `seq`. */
int t4a__retire_module(t4a__runtime *rt, uint64_t seq, t4a__CUmodule mod);

/* Unloads every module of rt (destroy, idle). */
void t4a__modules_release_all(t4a__runtime *rt);

/* Destroys every event of rt. A pinned event (a waiter outside the lock
 * uses it: only after a fault, when destroy does not wait for pins) is kept
 * for good instead, with the contexts it lives in; returns true then. */
bool t4a__events_release_all(t4a__runtime *rt);

/* Sets the final status of every witness of rt (destroy). */
void t4a__witness_finalise(t4a__runtime *rt, int status);

/* ---- staging (staging.c) ------------------------------------------------- */
int t4a__staging_init(t4a__runtime *rt);
void t4a__staging_release(t4a__runtime *rt, bool idle);
int t4a__staged_h2d(t4a__runtime *rt, t4a__CUdeviceptr dst, const void *src, uint64_t bytes);
int t4a__staged_d2h(t4a__runtime *rt, void *dst, t4a__CUdeviceptr src, uint64_t bytes);

/* From src's device memory to dst's through dst's staging chunks, without
 * peer access: src's DMA into a chunk (in src's stream order), dst's DMA out
 * of it after an event edge (in dst's order). Returns once the data left the
 * source. Both runtimes locked. */
int t4a__staged_peer(t4a__runtime *dst, t4a__runtime *src, t4a__CUdeviceptr dptr,
                     t4a__CUdeviceptr sptr, uint64_t bytes);

/* ---- parallel host copies (copypool.c) ------------------------------------ */

/* memcpy split over up to `threads` threads (the caller is one of them);
 * `stream`: the destination is not read again soon (non-temporal stores). */
void t4a__parallel_memcpy(void *dst, const void *src, size_t bytes, unsigned threads, bool stream);

/* Default thread count for large host copies: min(8, online CPUs). */
unsigned t4a__copy_threads_default(void);

/* ---- slots ------------------------------------------------------------------- */
int t4a__slot_runtime_create(int32_t ordinal, const t4a_runtime_options *opts, t4a_runtime *out);
int t4a__slot_runtime_destroy(t4a_runtime rt, uint64_t timeout_ns);
int t4a__slot_runtime_counters(t4a_runtime rt, t4a_runtime_counters *out);
int t4a__slot_buffer_alloc(t4a_runtime rt, uint64_t bytes, t4a_buffer *out);
int t4a__slot_buffer_free(t4a_runtime rt, t4a_buffer buf);
int t4a__slot_buffer_size(t4a_runtime rt, t4a_buffer buf, uint64_t *bytes);
int t4a__slot_cache_trim(t4a_runtime rt, uint64_t keep_bytes);
int t4a__slot_cache_stats(t4a_runtime rt, t4a_cache_stats *out);
int t4a__slot_host_alloc(t4a_runtime rt, uint64_t bytes, uint32_t flags, t4a_host_buffer *out,
                         void **ptr);
int t4a__slot_host_free(t4a_runtime rt, t4a_host_buffer hb);
int t4a__slot_copy_h2d_pinned(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset,
                              t4a_host_buffer src, uint64_t src_offset, uint64_t bytes);
int t4a__slot_copy_d2h_pinned(t4a_runtime rt, t4a_host_buffer dst, uint64_t dst_offset,
                              t4a_buffer src, uint64_t src_offset, uint64_t bytes);
int t4a__slot_copy_h2d(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, const void *src,
                       uint64_t bytes);
int t4a__slot_copy_d2h(t4a_runtime rt, void *dst, t4a_buffer src, uint64_t src_offset,
                       uint64_t bytes);
int t4a__slot_copy_d2d(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, t4a_buffer src,
                       uint64_t src_offset, uint64_t bytes);
int t4a__slot_seal(t4a_runtime rt, t4a_witness *out);
int t4a__slot_witness_query(t4a_witness w);
int t4a__slot_witness_wait(t4a_witness w, uint64_t timeout_ns);
int t4a__slot_witness_retain(t4a_witness w);
int t4a__slot_witness_release(t4a_witness w);
int t4a__slot_runtime_wait_witness(t4a_runtime rt, t4a_witness w);
int t4a__slot_module_load(t4a_runtime rt, t4a_artifact a, t4a_module *out);
int t4a__slot_module_unload(t4a_runtime rt, t4a_module m);
int t4a__slot_function_get(t4a_runtime rt, t4a_module m, const char *name, t4a_function *out);
int t4a__slot_function_attributes(t4a_runtime rt, t4a_function f, t4a_function_attributes *out);
int t4a__slot_function_set_max_dynamic_shared(t4a_runtime rt, t4a_function f, uint32_t bytes);
int t4a__slot_launch(t4a_runtime rt, t4a_function f, const t4a_launch_config *cfg, void **args);
int t4a__slot_raw_function(t4a_runtime rt, t4a_function f, void **cufunction);
int t4a__slot_raw_runtime(t4a_runtime rt, t4a_raw_runtime *out);
int t4a__slot_copy_from_runtime(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                                t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                                uint64_t bytes);
int t4a__slot_copy_from_peer(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                             t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                             uint64_t bytes);
int t4a__slot_copy_from_peer_via_host(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                                      t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                                      uint64_t bytes);
int t4a__slot_buffer_device_address(t4a_runtime rt, t4a_buffer buf, uint64_t *address);
int t4a__slot_raw_begin(t4a_runtime rt, t4a_raw_section *section);
int t4a__slot_raw_end(t4a_runtime rt, const t4a_raw_section *section);

#endif
