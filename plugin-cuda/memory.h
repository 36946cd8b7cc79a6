/* plugin-cuda/memory.h -- device buffers of a runtime: its memory pool, the
 * buffer table, and the host-side cache of freed blocks (memory.c). */
#ifndef T4A_PLUGIN_CUDA_MEMORY_H
#define T4A_PLUGIN_CUDA_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/completion.h"
#include "backend-core/alog.h"
#include "backend-core/budget.h"
#include "backend-core/handle.h"
#include "backend-core/sizeclass.h"

typedef struct t4a__buffer {
  t4a__hslot h;
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
  /* Memory the runtime did not allocate (external.c): never given to the
   * pool or the cache; once its last use completed, `ext_release` (through
   * the retirement queue, as data) lets the consumer have it back. NULL for
   * the runtime's own blocks. */
  t4a__retire_fn ext_release;
  void *ext;
} t4a__buffer;

/* Marks b (of rt) unproven: kept for good, counted in `quarantined` from
 * now on, and its pool is never handed on as a spare part. */
void t4a__buffer_unproven(t4a__runtime *rt, t4a__buffer *b);

/* A stack of cached free blocks of one size class. */
typedef struct t4a__bin {
  t4a__CUdeviceptr *ptrs;
  uint32_t count, cap;
} t4a__bin;

typedef struct t4a__memory {
  t4a__CUmemoryPool pool;
  uint64_t pool_access; /* devices granted access to the pool (peer copies) */
  t4a__htable bufs;     /* of t4a__buffer */
  t4a__bin bins[T4A__NUM_CLASSES];
  uint64_t cache_entries, cache_bytes;
  uint64_t unproven_blocks; /* device blocks kept because a reader was untracked */
  /* The budget (v1.2): bytes of the pool's blocks the runtime holds (live
   * and cached, at size class; from cuMemAllocFromPoolAsync to
   * cuMemFreeAsync), and its limit and callback. */
  uint64_t held;
  t4a__budget budget;
  /* The allocation log (v1.2), NULL without T4A_RUNTIME_ALLOC_LOG: each
   * place that records tests this pointer only. */
  t4a__alog *log;
} t4a__memory;

#include "backend-core/kinds.h" /* t4a__buffer_kind */

/* Creates the pool, or adopts `pool` (an empty, trimmed pool of a destroyed
 * runtime on this device, with the devices in pool_access granted), sets
 * its release threshold from the options and lets the devices that can
 * reach this one read it; makes the allocation log when the options ask.
 * rt's context is current. */
int t4a__memory_init(t4a__runtime *rt, t4a__CUmemoryPool pool, uint64_t pool_access);

/* Destroy. Idle: frees every block (cached and live) to the pool, waits for
 * the stream and frees the bookkeeping; the pool is trimmed and returned
 * when `keep_pool` (and it provably holds nothing), else destroyed (NULL
 * returned). After a fault: keeps everything (quarantine), returns NULL. */
t4a__CUmemoryPool t4a__memory_fini(t4a__runtime *rt, bool idle, bool keep_pool);

/* Validates a buffer handle of rt; T4A_EHANDLE naming `what` otherwise. */
int t4a__buffer_get(t4a__runtime *rt, t4a_buffer h, const char *what, t4a__buffer **out);

/* Before the buffer's block is reused or freed: orders rt's stream after its
 * last foreign reader (GPU-side) and drops the reader. */
int t4a__buffer_wait_reader(t4a__runtime *rt, t4a__buffer *b);

/* Orders rt's stream after every live buffer's foreign reader (destroy,
 * before draining, rt's context current); where the GPU-side wait fails the host waits, and where
 * that fails too the block is kept (unproven) and the failure noted as a
 * failed release. */
void t4a__memory_wait_readers(t4a__runtime *rt);

/* Returns cached device blocks to the pool until at most keep bytes remain
 * cached, and trims the pool. */
int t4a__cache_trim_locked(t4a__runtime *rt, uint64_t keep);

/* Records an allocation-log event of rt (its log exists), at rt's current
 * stream position, with what rt holds now. */
void t4a__memory_note(t4a__runtime *rt, uint32_t kind, uint32_t detail, uint64_t buffer,
                      uint64_t address, uint64_t bytes);

/* Grants device `dev` access to rt's pool once (peer copies); `what`
 * names the call in a failure's detail. */
int t4a__memory_grant(t4a__runtime *rt, int32_t dev, const char *what);

#endif
