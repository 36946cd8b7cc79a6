/*
 * t4a/gpu_backend_v1.h -- the t4a GPU backend ABI, version 1.
 *
 * This header is the contract between a GPU backend plugin (for example
 * libt4a_cuda.so) and its consumers (tensor libraries, C/C++ programs, Python
 * through ctypes, Rust through FFI; the Python and Rust bindings are generated
 * from this header by bindgen/t4a_bindgen.py). It is self-contained: it
 * needs only <stdint.h>, <stddef.h> and <stdbool.h>, compiles as C99 and as
 * C++, and names no CUDA type. Raw driver objects cross it as opaque pointers
 * or fixed-width integers.
 *
 * ------------------------------------------------------------------------
 * Versioning
 * ------------------------------------------------------------------------
 * A plugin exports exactly one symbol, T4A_GPU_BACKEND_V1_ENTRY_NAME, of type
 * t4a_gpu_backend_v1_entry_fn. The caller passes the ABI version it was
 * compiled against; the plugin answers with a pointer to its function table
 * or refuses with T4A_EABI when the majors differ. Any minor is accepted in
 * both directions:
 *   - The table begins with its own struct_size, abi_major and abi_minor.
 *     struct_size counts the bytes up to the end of the last field the
 *     producer knows. Fields are only ever appended (in a new minor); none
 *     is removed, reordered or retyped within a major.
 *   - A reader touches a slot only when struct_size covers it: use
 *     T4A_GPU_BACKEND_V1_HAS(table, slot). A NULL slot means "unsupported":
 *     a backend leaves a slot NULL when what it takes or hands out does
 *     not exist there (the host backend, "host": the raw seam and the
 *     slots taking CUDA streams or events), and returns T4A_EUNSUPPORTED
 *     with the reason from a slot it fills but cannot serve (one device: no
 *     peer copies; no clusters, cooperative launches or priorities). Each
 *     slot's comment says which, after "A backend without ...".
 *   - Argument and info structs that may grow carry their own struct_size as
 *     their first field, set by the caller to sizeof(the struct it was
 *     compiled with). A callee accepts any struct_size at least as large as
 *     the struct's first published (v1.0) size, reads only the fields that
 *     size covers (fields beyond it take their documented defaults), and
 *     rejects a smaller one with T4A_EINVAL. It never aborts. Info structs
 *     filled by the callee get at most struct_size bytes written; on return
 *     their struct_size holds the number of bytes the callee filled.
 *
 * ------------------------------------------------------------------------
 * Status codes and errors
 * ------------------------------------------------------------------------
 * Every action slot returns int: T4A_OK (0) on success, a negative
 * T4A_E* code on failure. Codes come from one list, T4A_STATUS_MAP, which
 * also yields their names and messages (t4a_status_name/_message below).
 * After a failing call, last_error() on the same thread returns a detail
 * string "<what failed>; <what to do>" plus the native (driver/compiler)
 * code and name when there is one. A failed call leaves the backend and the
 * runtime usable unless the status is T4A_EDEVICEFAULT, which is sticky.
 *
 * ------------------------------------------------------------------------
 * Objects, ownership and lifetime
 * ------------------------------------------------------------------------
 * Handles are small structs holding a 64-bit value; all-zero is the null
 * handle. A handle carries a type tag, a slot index and a generation, so a
 * stale (freed/destroyed), foreign (another runtime's) or forged handle is
 * rejected with T4A_EHANDLE, never dereferenced.
 *
 *   backend     -- process-wide, initialised by init(); lives until the
 *                  plugin is unloaded.
 *   runtime     -- one device, one stream, one memory pool, one block cache,
 *                  one pinned staging area, one set of counters. Created by
 *                  runtime_create, released by runtime_destroy. Runtimes never
 *                  share streams, pools, caches or counters, even on one GPU.
 *   buffer      -- device memory owned by one runtime.
 *   host buffer -- page-locked host memory owned by one runtime.
 *   witness     -- a reference-counted completion token returned by seal;
 *                  valid until its last release, even after its runtime is
 *                  destroyed.
 *   artifact    -- compiled or loaded GPU code owned by the backend,
 *                  reference counted, shared by runtimes that load it.
 *   module      -- an artifact loaded into one runtime.
 *   function    -- a kernel of a module; invalid once its module unloads.
 *   graph       -- work captured from one runtime (graph_begin/graph_end),
 *                  replayed on it by graph_launch, released by
 *                  graph_release (v1.1).
 *
 * Destroying a runtime invalidates every buffer, host buffer, module and
 * function it owns (their handles become stale) after its outstanding work
 * completed; witnesses it produced stay valid.
 *
 * ------------------------------------------------------------------------
 * Ordering
 * ------------------------------------------------------------------------
 * All GPU work a runtime enqueues (copies, launches, frees) runs on its one
 * stream in the order of the calls that enqueued it. Work submitted by the
 * consumer on the raw stream (see the raw seam) takes its place in that same
 * order, and so does each replay of a graph (graph_launch). Host-side waits
 * happen only where a slot's contract says so (the staged pageable
 * transfers, witness_wait, runtime_destroy).
 *
 * ------------------------------------------------------------------------
 * Threading
 * ------------------------------------------------------------------------
 * Every slot is thread-safe unless its comment says otherwise. Calls on one
 * runtime are serialised by that runtime (a blocking call such as a pageable
 * device-to-host copy delays other calls on the same runtime, never calls on
 * other runtimes). witness_wait does not hold its runtime while it blocks.
 * last_error is per thread.
 *
 * ------------------------------------------------------------------------
 * fork() (v1.2)
 * ------------------------------------------------------------------------
 * A backend belongs to the process that set it up: once init was called
 * (or an artifact was made without init), a child made by fork() cannot use
 * it. There every slot but last_error and get_info returns T4A_EFORKED (init
 * and runtime_create too, and every slot given a runtime, buffer, witness,
 * artifact or other object made before the fork), touching nothing: no
 * driver call, no lock one of the parent's threads may have held, no GPU
 * state of the parent's. The parent is unaffected. A child that needs the
 * device execs (or is spawned: posix_spawn, Python's "spawn" start method)
 * and sets up a backend of its own. A backend the parent only loaded (no
 * init) works in the child as in any process. When the child exits, the
 * plugin's teardown releases nothing of the parent's. The check costs the
 * slots nothing: the fork (pthread_atfork) makes the init gate every slot
 * passes fail. A backend of ABI 1.1 or older does not know T4A_EFORKED:
 * what it does in a forked child is undefined (the CUDA driver's state does
 * not survive fork()).
 */
#ifndef T4A_GPU_BACKEND_V1_H
#define T4A_GPU_BACKEND_V1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version of this header. */
#define T4A_GPU_BACKEND_ABI_MAJOR 1
#define T4A_GPU_BACKEND_ABI_MINOR 2

/* The one symbol every v1 plugin exports. */
#define T4A_GPU_BACKEND_V1_ENTRY_NAME "t4a_gpu_backend_v1_entry"

/* ------------------------------------------------------------------------
 * Status codes: X(NAME, value, message). 0 is success; every error is < 0.
 * Values are part of the ABI: never renumbered, only appended.
 * ------------------------------------------------------------------------ */
#define T4A_STATUS_MAP(X)                                                                          \
  X(OK, 0, "success")                                                                              \
  X(EINVAL, -1, "invalid argument")                                                                \
  X(EHANDLE, -2, "invalid, stale or foreign handle")                                               \
  X(ENOMEM, -3, "out of memory")                                                                   \
  X(ENODRIVER, -4, "no GPU driver library")                                                        \
  X(ESTUBDRIVER, -5, "stub GPU driver library")                                                    \
  X(ENODEVICE, -6, "no GPU device")                                                                \
  X(EDRIVEROLD, -7, "GPU driver too old")                                                          \
  X(EDRIVERMISMATCH, -8, "insufficient or mismatched GPU driver")                                  \
  X(ENOCOMPILER, -9, "run-time compiler unavailable")                                              \
  X(ECOMPILE, -10, "compile error")                                                                \
  X(ENOTFOUND, -11, "symbol or function not found")                                                \
  X(ENOTREADY, -12, "not ready")                                                                   \
  X(ETIMEOUT, -13, "timed out")                                                                    \
  X(EUNSUPPORTED, -14, "unsupported")                                                              \
  X(EABI, -15, "ABI version mismatch")                                                             \
  X(EBUSY, -16, "busy")                                                                            \
  X(EDEVICEFAULT, -17, "device fault (sticky)")                                                    \
  X(ENOBACKEND, -18, "backend not found")                                                          \
  X(EDRIVER, -19, "GPU driver error")                                                              \
  X(ERANGE, -20, "offset or length out of bounds")                                                 \
  X(EFOREIGNDEVICE, -21, "buffer belongs to another device")                                       \
  X(ENOTINIT, -22, "backend not initialised")                                                      \
  X(EINTERNAL, -23, "internal error")                                                              \
  X(EFORKED, -24, "backend used in a child after fork()")

enum t4a_status {
#define T4A__STATUS_ENUM(name, value, msg) T4A_##name = value,
  T4A_STATUS_MAP(T4A__STATUS_ENUM)
#undef T4A__STATUS_ENUM
};

/* Name of a status ("T4A_EINVAL"), or "T4A_UNKNOWN" for a value not in the
 * list. Never NULL; the string is static. */
static inline const char *t4a_status_name(int status) {
  switch (status) {
#define T4A__STATUS_NAME(name, value, msg)                                                         \
  case value: return "T4A_" #name;
    T4A_STATUS_MAP(T4A__STATUS_NAME)
#undef T4A__STATUS_NAME
  default: return "T4A_UNKNOWN";
  }
}

/* One-line message of a status ("invalid argument"). Never NULL; static. */
static inline const char *t4a_status_message(int status) {
  switch (status) {
#define T4A__STATUS_MSG(name, value, msg)                                                          \
  case value: return msg;
    T4A_STATUS_MAP(T4A__STATUS_MSG)
#undef T4A__STATUS_MSG
  default: return "unknown status";
  }
}

/* ------------------------------------------------------------------------
 * Handles
 * ------------------------------------------------------------------------ */
typedef struct t4a_runtime {
  uint64_t bits;
} t4a_runtime;
typedef struct t4a_buffer {
  uint64_t bits;
} t4a_buffer;
typedef struct t4a_host_buffer {
  uint64_t bits;
} t4a_host_buffer;
typedef struct t4a_witness {
  uint64_t bits;
} t4a_witness;
typedef struct t4a_artifact {
  uint64_t bits;
} t4a_artifact;
typedef struct t4a_module {
  uint64_t bits;
} t4a_module;
typedef struct t4a_function {
  uint64_t bits;
} t4a_function;
typedef struct t4a_graph {
  uint64_t bits;
} t4a_graph; /* v1.1 */

/* Timeout value meaning "wait without limit". */
#define T4A_WAIT_FOREVER UINT64_MAX

/* ------------------------------------------------------------------------
 * Argument and info structs. Each begins with struct_size (see Versioning).
 * ------------------------------------------------------------------------ */

/* Detail of the calling thread's most recent failure in this backend. The
 * strings stay valid until the thread's next call into the backend. */
typedef struct t4a_error_info {
  uint32_t struct_size;
  int32_t status;          /* the T4A_E* status returned */
  int64_t native_code;     /* CUresult / nvrtcResult etc.; 0 when none */
  const char *native_name; /* "CUDA_ERROR_OUT_OF_MEMORY"; "" when none */
  const char *message;     /* "<what failed>; <what to do>"; "" when none */
} t4a_error_info;

typedef struct t4a_backend_info {
  uint32_t struct_size;
  uint16_t abi_major; /* the plugin's ABI version */
  uint16_t abi_minor;
  char name[32];          /* "cuda" */
  char version[32];       /* plugin version, "0.1.0" */
  int32_t driver_version; /* e.g. 12080 for CUDA 12.8; 0 when unknown */
  int32_t device_count;   /* 0 before a successful init */
  char driver_path[256];  /* file the driver library was loaded from */
} t4a_backend_info;

/* Bits of t4a_device_info.flags. */
#define T4A_DEVICE_MEMORY_POOLS 0x1u /* stream-ordered pools supported */
#define T4A_DEVICE_INTEGRATED 0x2u   /* shares memory with the host */
#define T4A_DEVICE_UNIFIED_ADDRESSING 0x4u

typedef struct t4a_device_info {
  uint32_t struct_size;
  int32_t ordinal;
  char name[256];
  uint8_t uuid[16];
  int32_t cc_major; /* compute capability */
  int32_t cc_minor;
  uint64_t total_memory; /* bytes */
  char pci_bus_id[32];   /* "0000:3b:00.0" */
  int32_t multiprocessors;
  uint32_t flags; /* T4A_DEVICE_* */
  int32_t max_threads_per_block;
  int32_t max_block_dim[3];
  int32_t max_grid_dim[3];
  int32_t max_shared_per_block;       /* bytes, without opt-in */
  int32_t max_shared_per_block_optin; /* bytes, with opt-in */
  int32_t warp_size;
  /* -- v1.1 -- */
  uint64_t max_pitch; /* largest row pitch of a 2D copy, bytes (v1.1) */
} t4a_device_info;
/* On the host backend ("host") device 0 is the machine's CPUs: name = the
 * CPU model (/proc/cpuinfo), total_memory = physical RAM, multiprocessors =
 * online CPUs, flags = T4A_DEVICE_MEMORY_POOLS | T4A_DEVICE_INTEGRATED |
 * T4A_DEVICE_UNIFIED_ADDRESSING (its buffers are host memory, and
 * buffer_device_address is a host address); cc 0.0, uuid all zero,
 * pci_bus_id "", warp_size 32 (its kernels run warps of 32 threads, as on
 * CUDA); the launch limits a CUDA device has (1024 threads per block,
 * blocks 1024 x 1024 x 64, grids 2^31-1 x 65535 x 65535, 48 KiB of shared
 * memory, 227 KiB with opt-in as on an H100), which its launches check;
 * and max_pitch 2^46 (its largest buffer). */

typedef struct t4a_compiler_info {
  uint32_t struct_size;
  int32_t status;        /* T4A_OK when the compiler is available */
  int32_t version_major; /* nvrtcVersion; 0 when unavailable */
  int32_t version_minor;
  char path[256];   /* file it was loaded from, or "" */
  char reason[256]; /* why it is unavailable, or "" */
} t4a_compiler_info;

/* ------------------------------------------------------------------------
 * The memory budget (v1.2): what buffer_alloc tells the out-of-memory
 * callback of t4a_runtime_options.
 * ------------------------------------------------------------------------ */

/* Why an allocation did not fit (t4a_out_of_memory_info.reason, v1.2). */
#define T4A_OUT_OF_MEMORY_LIMIT 1u  /* it would pass the runtime's pool_limit_bytes */
#define T4A_OUT_OF_MEMORY_DEVICE 2u /* the device (host: the pool's mappings) is full */

/* What an out-of-memory callback returns (v1.2). */
#define T4A_OUT_OF_MEMORY_FAIL 0  /* give up: buffer_alloc returns T4A_ENOMEM */
#define T4A_OUT_OF_MEMORY_RETRY 1 /* memory was freed: try the allocation once more */

/* The allocation that did not fit (v1.2). Read-only, valid during the call. */
typedef struct t4a_out_of_memory_info {
  uint32_t struct_size;  /* bytes the backend filled: read no field beyond */
  uint32_t reason;       /* T4A_OUT_OF_MEMORY_* */
  t4a_runtime runtime;   /* the allocating runtime */
  uint64_t bytes_wanted; /* buffer_alloc's bytes */
  uint64_t bytes_needed; /* what it would hold: its size class (at most 12.5% more) */
  uint64_t bytes_held;   /* what the runtime holds now, its cache already trimmed */
  uint64_t limit_bytes;  /* its pool_limit_bytes; UINT64_MAX when it has none */
} t4a_out_of_memory_info;

/* An out-of-memory callback (t4a_runtime_options.out_of_memory, v1.2).
 * When an allocation would pass the runtime's pool_limit_bytes, or the
 * device is full, buffer_alloc first trims the runtime's own cache (and on
 * a full device waits for the runtime's stream, so that its frees return to
 * the pool); if the allocation still does not fit it calls the callback
 * once, then tries once more if the callback returned
 * T4A_OUT_OF_MEMORY_RETRY, else (any other value) returns T4A_ENOMEM.
 * At most one call per buffer_alloc, on the thread calling buffer_alloc,
 * with nothing of the backend held: no runtime lock (other threads may use
 * every runtime meanwhile, this one included), no pinned event.
 * It may call any slot of any backend: free buffers (buffer_free: a freed
 * block goes to its runtime's cache, where the retry finds it for this
 * runtime; another runtime's frees reach the device only through its
 * cache_trim, and only once that runtime's stream ran them: seal and
 * witness_wait it), trim caches, wait, destroy other runtimes. An
 * allocation it makes that does not fit gets T4A_ENOMEM without a nested
 * call. It must not destroy `info->runtime` (buffer_alloc then returns
 * T4A_EHANDLE, and the handle is stale) or unwind (longjmp, C++ throw)
 * through the backend. */
typedef int (*t4a_out_of_memory_fn)(const t4a_out_of_memory_info *info, void *user);

/* Runtime creation options. NULL means all defaults. */
typedef struct t4a_runtime_options {
  uint32_t struct_size;
  uint32_t flags; /* T4A_RUNTIME_* (v1.1); 0 in ABI 1.0 */
  /* Bytes of pinned staging for pageable transfers (allocated once at
   * creation, never exceeded). 0 = default (64 MiB). Minimum 64 KiB. */
  uint64_t staging_bytes;
  /* Bytes the memory pool keeps reserved across synchronisations.
   * 0 = default (UINT64_MAX: never give memory back implicitly). The
   * driver may still hand reserved memory the pool is not using to an
   * allocation on the device that would otherwise fail. */
  uint64_t pool_release_threshold;
  /* Upper bound on bytes held in the host-side cache of freed device
   * blocks. 0 = default (1 GiB); UINT64_MAX = unbounded. */
  uint64_t cache_limit_bytes;
  /* Host threads used for the memcpy of large pageable transfers.
   * 0 = default (the larger of min(8, online CPUs) and min(16, three
   * quarters of the online CPUs): 12 on 16 CPUs, 16 on 32); 1 = only the
   * calling thread. */
  uint32_t copy_threads;
  uint32_t reserved; /* must be 0 */
  /* -- v1.1 -- */
  /* Priority of the runtime's stream, in the driver's convention: lower
   * numbers run first. 0 = the default (the device's least priority);
   * otherwise within [priority_greatest, priority_least] of runtime_info
   * (e.g. -5 .. 0 on an H200), else T4A_ERANGE. Not clamped. */
  int32_t stream_priority;
  uint32_t reserved_v1_1; /* must be 0 */
  /* -- v1.2 -- */
  /* The memory budget: the most bytes the runtime holds from its pool at
   * once, its live buffers and its cache, each block counted at its size
   * class (t4a_memory_info.held_bytes). An allocation that would pass it is
   * refused as one that finds the device full is (buffer_alloc,
   * t4a_out_of_memory_fn). Buffers the runtime did not allocate (wrapped,
   * DLPack-imported, IPC-imported) are not counted. 0 = no limit. */
  uint64_t pool_limit_bytes;
  /* Called when an allocation does not fit: a t4a_out_of_memory_fn; NULL:
   * none, buffer_alloc returns T4A_ENOMEM after trimming the cache. */
  int (*out_of_memory)(const t4a_out_of_memory_info *info, void *user);
  void *out_of_memory_user; /* passed to out_of_memory */
  /* Events the allocation log keeps (with T4A_RUNTIME_ALLOC_LOG): the
   * newest this many, rounded up to a power of two; 0 = default (4096),
   * at most 1048576 (else T4A_EINVAL). Without the flag: must be 0. */
  uint32_t alloc_log_events;
  uint32_t reserved_v1_2; /* must be 0 */
} t4a_runtime_options;

/* Bits of t4a_runtime_options.flags (v1.1). */
#define T4A_RUNTIME_TIMING 0x1u /* completion events record time: witness_elapsed */
/* v1.2: the runtime keeps an allocation log (alloc_log_read). Without it
 * the runtime records nothing and pays nothing for it. */
#define T4A_RUNTIME_ALLOC_LOG 0x2u
/* v1.2: the runtime shares memory and completion with other processes
 * (buffer_export_ipc, witness_export_ipc; see "processes" in the table):
 * its pool is created shareable (it takes and leaves no spare parts, so
 * its creation is a cold one). A device or driver without shareable
 * pools, or a backend without processes (host): runtime_create returns
 * T4A_EUNSUPPORTED. */
#define T4A_RUNTIME_IPC 0x4u

/* Kinds of allocation-log events (t4a_alloc_event.kind, v1.2). */
#define T4A_ALLOC_EVENT_ALLOC 1u         /* buffer_alloc given a new block from the pool */
#define T4A_ALLOC_EVENT_REUSE 2u         /* buffer_alloc served from the runtime's cache */
#define T4A_ALLOC_EVENT_FREE 3u          /* buffer_free (detail 1: the block went to the cache) */
#define T4A_ALLOC_EVENT_TRIM 4u          /* cached blocks given back (bytes: how many) */
#define T4A_ALLOC_EVENT_OUT_OF_MEMORY 5u /* an allocation did not fit (detail: the reason) */
#define T4A_ALLOC_EVENT_IPC_EXPORT 6u    /* buffer_export_ipc */
#define T4A_ALLOC_EVENT_IPC_IMPORT 7u    /* buffer_import_ipc */

/* One allocation-log event (v1.2). Fixed: 64 bytes, never grows (a later
 * minor adds kinds, not fields). */
typedef struct t4a_alloc_event {
  uint64_t seq;        /* the runtime's event number: 0, 1, 2, ... (a gap: events dropped) */
  uint64_t time_ns;    /* when, on the monotonic clock (CLOCK_MONOTONIC), in ns */
  uint64_t stream_seq; /* where in the runtime's stream order (see alloc_log_read) */
  uint64_t buffer;     /* the buffer handle's bits; 0 for TRIM and OUT_OF_MEMORY */
  uint64_t address;    /* the block's device address (host: host address); 0 when none */
  uint64_t bytes;      /* the buffer's size; TRIM: bytes given back; OUT_OF_MEMORY: wanted */
  uint64_t held_bytes; /* what the runtime holds after the event (t4a_memory_info.held_bytes) */
  uint32_t kind;       /* T4A_ALLOC_EVENT_* */
  uint32_t detail;     /* FREE: 1 cached, 0 not; OUT_OF_MEMORY: T4A_OUT_OF_MEMORY_*; else 0 */
} t4a_alloc_event;

/* Per-runtime counters, monotonic unless marked "current". */
typedef struct t4a_runtime_counters {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t launches;
  uint64_t copies_h2d_pinned;
  uint64_t copies_d2h_pinned;
  uint64_t copies_h2d_pageable;
  uint64_t copies_d2h_pageable;
  uint64_t copies_d2d;
  uint64_t copies_cross_runtime;
  uint64_t copies_peer;
  uint64_t copies_via_host;
  uint64_t bytes_h2d;
  uint64_t bytes_d2h;
  uint64_t bytes_d2d; /* in-runtime, cross-runtime and peer */
  uint64_t seals;
  uint64_t seal_events_recorded; /* completion events: at most one per seal */
  uint64_t staging_events_recorded;
  uint64_t events_created;      /* driver events created (pooled) */
  uint64_t pending_retirements; /* current */
  uint64_t quarantined;         /* current */
  uint64_t staging_bytes;       /* the bound */
  uint64_t staging_peak_bytes;  /* most staging ever in use at once */
  uint64_t cache_hits;
  uint64_t cache_misses;
  uint64_t driver_allocations; /* device allocations made by the driver */
  uint64_t driver_frees;
  uint64_t live_buffers;      /* current */
  uint64_t live_host_buffers; /* current */
  uint64_t raw_sections;      /* raw_begin/raw_end pairs */
  /* -- v1.1 -- */
  uint64_t graphs_captured; /* graph_end calls that returned a graph */
  uint64_t graph_launches;  /* graph_launch calls (replays enqueued) */
  uint64_t graph_updates;   /* graph_set_kernel_args calls */
  uint64_t live_graphs;     /* current */
  /* -- v1.2 -- */
  uint64_t out_of_memory_calls;    /* out-of-memory callbacks called */
  uint64_t out_of_memory_failures; /* buffer_alloc calls that returned T4A_ENOMEM for lack
                                      of memory (the budget or the device) */
} t4a_runtime_counters;

/* Host-side cache of freed device blocks of one runtime. */
typedef struct t4a_cache_stats {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t entries; /* blocks held */
  uint64_t bytes;   /* bytes held */
  uint64_t hits;
  uint64_t misses;
  uint64_t limit_bytes;
  uint64_t pinned_entries; /* pinned host blocks held for reuse */
  uint64_t pinned_bytes;
} t4a_cache_stats;

/* Bits of host_alloc's flags. */
#define T4A_HOST_WRITE_COMBINED 0x1u /* fast H2D, very slow host reads */

/* Artifact kinds. T4A_ARTIFACT_HOST (appended in the 1.2 minor): a host
 * shared object, a kernel module the host backend ("host") compiled from
 * CUDA C with the host C++ compiler (artifact_compile there makes only
 * this kind; artifact_data hands out its bytes, and artifact_from_bytes
 * takes them back, checked when loaded). It runs only on the host backend,
 * on a machine of the same architecture: the cuda backend refuses it
 * (artifact_from_bytes: T4A_EUNSUPPORTED with the reason), as the host
 * backend refuses PTX, CUBIN and fatbin. */
typedef enum t4a_artifact_kind {
  T4A_ARTIFACT_PTX = 1,
  T4A_ARTIFACT_CUBIN = 2,
  T4A_ARTIFACT_FATBIN = 3,
  T4A_ARTIFACT_HOST = 4
} t4a_artifact_kind;

/* NVRTC compile request. */
typedef struct t4a_compile_options {
  uint32_t struct_size;
  uint32_t flags;             /* T4A_COMPILE_* */
  const char *source;         /* CUDA C, non-empty */
  uint64_t source_size;       /* bytes of source; 0 = NUL-terminated. A NUL byte
                                 inside source_size bytes is refused (T4A_EINVAL). */
  const char *name;           /* file name for diagnostics; NULL = "t4a.cu" */
  const char *const *options; /* NVRTC options, e.g. "-default-device" */
  uint32_t option_count;
  /* Target: the architecture of this device (init required). -1: the
   * options name it ("-arch=sm_90" / "--gpu-architecture=compute_90"), and
   * compiling needs no driver or GPU. */
  int32_t device_ordinal;
} t4a_compile_options;

#define T4A_COMPILE_PTX 0x1u      /* produce PTX instead of CUBIN */
#define T4A_COMPILE_NO_CACHE 0x2u /* bypass the memory and disk caches */

typedef struct t4a_compile_cache_stats {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t memory_entries;
  uint64_t memory_hits;
  uint64_t disk_entries;
  uint64_t disk_bytes;
  uint64_t disk_hits;
  uint64_t disk_rejected; /* entries ignored: corrupt, truncated, foreign,
                             not a regular file, not this user's alone
                             (owner, group/other write, hard links), or
                             larger than the limit */
  uint64_t misses;        /* compiles performed */
  uint64_t disk_limit_bytes;
} t4a_compile_cache_stats;

#define T4A_CACHE_MEMORY 0x1u
#define T4A_CACHE_DISK 0x2u

typedef struct t4a_function_attributes {
  uint32_t struct_size;
  int32_t max_threads_per_block;
  int32_t num_registers;
  int32_t static_shared_bytes;
  int32_t max_dynamic_shared_bytes;
  int32_t local_bytes;
  int32_t ptx_version;
  int32_t binary_version;
} t4a_function_attributes;

typedef struct t4a_launch_config {
  uint32_t struct_size;
  uint32_t grid[3];      /* blocks; every dimension >= 1 */
  uint32_t block[3];     /* threads; every dimension >= 1 */
  uint32_t shared_bytes; /* dynamic shared memory per block */
} t4a_launch_config;

/* The raw seam: the driver objects behind a runtime. */
typedef struct t4a_raw_runtime {
  uint32_t struct_size;
  int32_t device_ordinal;
  void *context;  /* CUcontext: the device's primary context */
  void *stream;   /* CUstream: the runtime's stream */
  int32_t device; /* CUdevice */
} t4a_raw_runtime;

/* Saved context state for raw_begin/raw_end. Opaque to the consumer. */
typedef struct t4a_raw_section {
  uint32_t struct_size;
  uint32_t reserved;
  void *saved_context;
  uint64_t runtime_bits;
} t4a_raw_section;

/* A rectangle copy (v1.1): `rows` rows of `width` bytes; row r starts at
 * byte offset + r * pitch of its side. Pitches are at least width (when
 * rows > 1) and at most the device's max_pitch. */
typedef struct t4a_copy_2d {
  uint32_t struct_size;
  uint32_t reserved;   /* must be 0 */
  uint64_t dst_offset; /* bytes from the start of the destination to its first row */
  uint64_t dst_pitch;  /* bytes from one destination row to the next */
  uint64_t src_offset;
  uint64_t src_pitch;
  uint64_t width; /* bytes per row */
  uint64_t rows;
} t4a_copy_2d;

/* Memory of a runtime and its device (v1.1). */
typedef struct t4a_memory_info {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t device_free;     /* the device's free memory now, as the driver says (all processes) */
  uint64_t device_total;    /* the device's memory */
  uint64_t pool_reserved;   /* device memory the runtime's pool holds */
  uint64_t pool_used;       /* of it, allocated (live buffers and cached blocks) */
  uint64_t pool_high_water; /* most pool_used ever (since creation) */
  uint64_t cache_bytes;     /* of pool_used, freed blocks in the runtime's cache */
  uint64_t staging_bytes;   /* pinned host memory of the runtime's staging */
  /* -- v1.2 -- */
  uint64_t held_bytes;  /* what the budget counts: live buffers and cache, at size class */
  uint64_t limit_bytes; /* the budget (pool_limit_bytes); UINT64_MAX when none */
} t4a_memory_info;

/* Bits of host_register's flags (v1.1). */
#define T4A_HOST_REGISTER_READ_ONLY 0x1u /* the device only reads it: H2D copies only */

/* Bits of t4a_launch_ex_config.flags (v1.1). */
#define T4A_LAUNCH_COOPERATIVE 0x1u          /* every block co-resident: grid-wide sync allowed */
#define T4A_LAUNCH_CLUSTER_NON_PORTABLE 0x2u /* clusters above the portable 8 blocks */
#define T4A_LAUNCH_PRIORITY 0x4u             /* `priority` applies to this launch */

/* An extended launch (v1.1): launch's geometry plus thread block clusters,
 * a cooperative launch and a per-launch priority. */
typedef struct t4a_launch_ex_config {
  uint32_t struct_size;
  uint32_t flags;        /* T4A_LAUNCH_* */
  uint32_t grid[3];      /* blocks; every dimension >= 1 */
  uint32_t block[3];     /* threads; every dimension >= 1 */
  uint32_t shared_bytes; /* dynamic shared memory per block */
  /* Blocks per cluster in each dimension, each dividing the grid's; all
   * 0 = no clusters. Needs T4A_EXEC_CLUSTERS (compute capability 9.0). */
  uint32_t cluster[3];
  int32_t priority;  /* with T4A_LAUNCH_PRIORITY: like stream_priority */
  uint32_t reserved; /* must be 0 */
} t4a_launch_ex_config;

/* Bits of t4a_runtime_info.exec_flags (v1.1): what the device and driver
 * can do for launch_ex and the graph slots. */
#define T4A_EXEC_CLUSTERS 0x1u    /* thread block clusters */
#define T4A_EXEC_COOPERATIVE 0x2u /* cooperative launches */
#define T4A_EXEC_GRAPHS 0x4u      /* stream capture and graph replay */
#define T4A_EXEC_PRIORITIES 0x8u  /* stream and launch priorities */

/* Facts of one runtime (v1.1). */
typedef struct t4a_runtime_info {
  uint32_t struct_size;
  uint32_t flags; /* the runtime's T4A_RUNTIME_* */
  int32_t device_ordinal;
  int32_t stream_priority;   /* its stream's priority */
  int32_t priority_least;    /* the device's range: the lowest priority (usually 0) */
  int32_t priority_greatest; /* the highest (a lower number, e.g. -5) */
  uint32_t exec_flags;       /* T4A_EXEC_* */
  uint32_t capturing;        /* 1 between graph_begin and graph_end, else 0 */
} t4a_runtime_info;

/* A captured graph (v1.1). */
typedef struct t4a_graph_info {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t nodes;   /* nodes of the graph as the driver counts them (raw-seam work included) */
  uint64_t kernels; /* launches captured through launch/launch_ex: graph_set_kernel_args
                       indices 0 .. kernels - 1, in call order */
  uint64_t copies;  /* copies and memsets captured through the table */
  uint64_t replays; /* graph_launch calls so far */
} t4a_graph_info;

/* ------------------------------------------------------------------------
 * Interop (v1.1): memory the runtime did not allocate, and DLPack.
 * ------------------------------------------------------------------------ */

/* Memory the runtime did not allocate, wrapped as a buffer
 * (buffer_wrap_external): device memory of the runtime's device (from
 * cuMemAlloc, another runtime, PyTorch, CuPy, JAX ...), or with
 * T4A_EXTERNAL_HOST page-locked host memory the device can address. The
 * runtime never frees it; it calls `release(user)` exactly once, after the
 * last work enqueued on it completed (see buffer_wrap_external). */
typedef struct t4a_external_memory {
  uint32_t struct_size;
  uint32_t flags;         /* T4A_EXTERNAL_* */
  uint64_t address;       /* first byte: a CUdeviceptr, or a host address with T4A_EXTERNAL_HOST */
  uint64_t bytes;         /* 0 is valid (nothing is checked or accessed) */
  int32_t device_ordinal; /* the runtime's device; -1 with T4A_EXTERNAL_HOST */
  uint32_t reserved;      /* must be 0 */
  /* Called once when the runtime lets go of the memory; NULL: nothing to
   * call. Called while the backend holds nothing (no lock, no pinned
   * event): it may call any slot, runtime_destroy of its own runtime
   * included (see buffer_wrap_external for when and where). */
  void (*release)(void *user);
  void *user; /* passed to release */
} t4a_external_memory;

/* Bits of t4a_external_memory.flags (v1.1). */
#define T4A_EXTERNAL_HOST 0x1u /* page-locked host memory (cuMemHostAlloc/-Register) */

/* Stream arguments of the interop slots: a CUstream of the runtime's
 * device's primary context, or one of these, passed as (void *)(uintptr_t)
 * value. NULL means the legacy default stream too (as in the driver API). */
#define T4A_STREAM_LEGACY 0x1u     /* CU_STREAM_LEGACY: the legacy default stream */
#define T4A_STREAM_PER_THREAD 0x2u /* CU_STREAM_PER_THREAD */

/* DLPack (https://dmlc.github.io/dlpack/latest/c_api.html), version 1.1:
 * the structs below have the layout of dlpack.h's DLPackVersion, DLDevice,
 * DLDataType, DLTensor, DLManagedTensor and DLManagedTensorVersioned (the
 * ABI tests assert every offset), under t4a_ names so that this header
 * never collides with a dlpack.h the consumer includes: cast between them.
 * Enumerations are int32_t and uint8_t fields with the constants below. */
#define T4A_DLPACK_MAJOR 1 /* DLPACK_MAJOR_VERSION this header follows */
#define T4A_DLPACK_MINOR 1 /* DLPACK_MINOR_VERSION this header follows */

/* DLDeviceType values (t4a_dl_device.device_type) t4a takes or makes. */
#define T4A_DL_CPU 1
#define T4A_DL_CUDA 2          /* device memory; device_id is the CUDA ordinal */
#define T4A_DL_CUDA_HOST 3     /* page-locked host memory (cudaMallocHost) */
#define T4A_DL_CUDA_MANAGED 13 /* managed memory (not imported by t4a) */

/* DLDataTypeCode values (t4a_dl_data_type.code). */
#define T4A_DL_INT 0
#define T4A_DL_UINT 1
#define T4A_DL_FLOAT 2
#define T4A_DL_OPAQUE_HANDLE 3
#define T4A_DL_BFLOAT 4
#define T4A_DL_COMPLEX 5
#define T4A_DL_BOOL 6
#define T4A_DL_FLOAT8_E3M4 7
#define T4A_DL_FLOAT8_E4M3 8
#define T4A_DL_FLOAT8_E4M3B11FNUZ 9
#define T4A_DL_FLOAT8_E4M3FN 10
#define T4A_DL_FLOAT8_E4M3FNUZ 11
#define T4A_DL_FLOAT8_E5M2 12
#define T4A_DL_FLOAT8_E5M2FNUZ 13
#define T4A_DL_FLOAT8_E8M0FNU 14
#define T4A_DL_FLOAT6_E2M3FN 15
#define T4A_DL_FLOAT6_E3M2FN 16
#define T4A_DL_FLOAT4_E2M1FN 17

/* Bits of t4a_dl_managed_tensor_versioned.flags (DLPACK_FLAG_BITMASK_*). */
#define T4A_DL_FLAG_READ_ONLY 0x1ull              /* consumers must not write the data */
#define T4A_DL_FLAG_IS_COPIED 0x2ull              /* the producer made a copy for the consumer */
#define T4A_DL_FLAG_IS_SUBBYTE_TYPE_PADDED 0x4ull /* sub-byte elements are padded, not packed */

/* DLPackVersion. */
typedef struct t4a_dl_pack_version {
  uint32_t major; /* a consumer refuses another major (the layout changed) */
  uint32_t minor; /* a newer minor only adds enumeration values */
} t4a_dl_pack_version;

/* DLDevice. */
typedef struct t4a_dl_device {
  int32_t device_type; /* T4A_DL_CUDA, T4A_DL_CUDA_HOST, ... (DLDeviceType) */
  int32_t device_id;   /* the CUDA ordinal for T4A_DL_CUDA; 0 for host kinds */
} t4a_dl_device;

/* DLDataType: `lanes` elements of `bits` bits each, of kind `code`. */
typedef struct t4a_dl_data_type {
  uint8_t code; /* T4A_DL_INT, T4A_DL_FLOAT, ... (DLDataTypeCode) */
  uint8_t bits;
  uint16_t lanes; /* 1 for scalars */
} t4a_dl_data_type;

/* DLTensor: element (i0, i1, ...) is at byte data + byte_offset +
 * (i0 * strides[0] + i1 * strides[1] + ...) * bits * lanes / 8. */
typedef struct t4a_dl_tensor {
  void *data; /* device address (T4A_DL_CUDA) or host address */
  t4a_dl_device device;
  int32_t ndim;
  t4a_dl_data_type dtype;
  int64_t *shape;       /* ndim extents */
  int64_t *strides;     /* ndim strides in elements; NULL: compact row-major */
  uint64_t byte_offset; /* bytes from data to element 0 */
} t4a_dl_tensor;

/* DLManagedTensor (the legacy, unversioned form). The consumer calls
 * deleter(self) exactly once when it no longer needs the tensor; deleter
 * may be NULL (nothing to release). */
typedef struct t4a_dl_managed_tensor {
  t4a_dl_tensor dl_tensor;
  void *manager_ctx; /* the producer's */
  void (*deleter)(struct t4a_dl_managed_tensor *managed);
} t4a_dl_managed_tensor;

/* DLManagedTensorVersioned (DLPack 1.0 and later): as the legacy form, with
 * a version first and flags (T4A_DL_FLAG_*). */
typedef struct t4a_dl_managed_tensor_versioned {
  t4a_dl_pack_version version;
  void *manager_ctx; /* the producer's */
  void (*deleter)(struct t4a_dl_managed_tensor_versioned *managed);
  uint64_t flags; /* T4A_DL_FLAG_* */
  t4a_dl_tensor dl_tensor;
} t4a_dl_managed_tensor_versioned;

/* Most dimensions dlpack_export and dlpack_import take. */
#define T4A_DLPACK_MAX_NDIM 64

/* A buffer range seen as a tensor, for dlpack_export (v1.1). Element
 * (i0, i1, ...) is at byte offset + (i0 * strides[0] + ...) * element size
 * of the buffer, where the element size is dtype.bits * dtype.lanes / 8
 * (whole bytes: sub-byte types are T4A_EUNSUPPORTED). Every element of a
 * tensor with no zero extent must lie in the buffer. */
typedef struct t4a_dlpack_export {
  uint32_t struct_size;
  uint32_t flags;  /* T4A_DLPACK_* */
  uint64_t offset; /* bytes from the buffer's start to element 0 */
  t4a_dl_data_type dtype;
  int32_t ndim;           /* 0 .. T4A_DLPACK_MAX_NDIM */
  const int64_t *shape;   /* ndim extents, each >= 0 (may be NULL when ndim is 0) */
  const int64_t *strides; /* ndim strides in elements (negative allowed); NULL: compact
                             row-major */
  /* Called once by the tensor's deleter, after the export's own memory was
   * freed; NULL: nothing to call. */
  void (*on_delete)(void *user);
  void *user; /* passed to on_delete */
} t4a_dlpack_export;

/* Bits of t4a_dlpack_export.flags and of dlpack_import's flags (v1.1). */
#define T4A_DLPACK_VERSIONED 0x1u /* t4a_dl_managed_tensor_versioned, not the legacy form */
#define T4A_DLPACK_READ_ONLY 0x2u /* export: set T4A_DL_FLAG_READ_ONLY (versioned only) */
/* export: data is the buffer's start and byte_offset the offset (the form
 * the spec describes); without it data is element 0's address and
 * byte_offset 0, the form PyTorch and CuPy make and read (PyTorch ignores
 * byte_offset on import). */
#define T4A_DLPACK_BYTE_OFFSET 0x4u
/* import: accept a read-only tensor (you promise not to write it) */
#define T4A_DLPACK_ALLOW_READ_ONLY 0x8u

/* ------------------------------------------------------------------------
 * Processes (v1.2): what one process hands another to share a buffer or a
 * witness (buffer_export_ipc, witness_export_ipc). Plain bytes: send them
 * by any channel (a pipe, a socket, shared memory). The pool's file
 * descriptor, which a buffer's importer needs once per exporting runtime,
 * goes over a Unix socket (SCM_RIGHTS: t4a/gpu_ipc.h has a helper).
 * ------------------------------------------------------------------------ */
#define T4A_IPC_BUFFER_BYTES 128
#define T4A_IPC_WITNESS_BYTES 128

/* One exported buffer (v1.2): opaque; names the exporting runtime's pool,
 * the device (by UUID) and the buffer's size. Fixed: never grows. */
typedef struct t4a_ipc_buffer {
  uint8_t bytes[T4A_IPC_BUFFER_BYTES];
} t4a_ipc_buffer;

/* One exported witness (v1.2): opaque, fixed. */
typedef struct t4a_ipc_witness {
  uint8_t bytes[T4A_IPC_WITNESS_BYTES];
} t4a_ipc_witness;

/* ------------------------------------------------------------------------
 * The function table.
 * ------------------------------------------------------------------------ */
typedef struct t4a_gpu_backend_v1 t4a_gpu_backend_v1;

struct t4a_gpu_backend_v1 {
  /* -- header (v1.0) ---------------------------------------------------- */
  uint32_t struct_size; /* bytes the producer knows, see Versioning */
  uint16_t abi_major;   /* T4A_GPU_BACKEND_ABI_MAJOR of the producer */
  uint16_t abi_minor;
  const char *name;    /* short backend name, "cuda"; static */
  const char *version; /* plugin version string; static */

  /* -- errors (v1.0, required) ------------------------------------------
   * last_error: fills *info with the calling thread's most recent failure
   * in this backend (status T4A_OK and empty strings when none). Pure; any
   * thread; never fails except T4A_EINVAL for NULL or a too-small info. */
  int (*last_error)(t4a_error_info *info);

  /* -- backend (v1.0, required) -----------------------------------------
   * init: loads and initialises the driver. Idempotent and thread-safe:
   * concurrent callers see one initialisation. After a failure it returns
   * the same status and detail at once (no retry storm, nothing leaked);
   * the failure is final for the life of the loaded plugin. Returns
   * T4A_ENODRIVER, T4A_ESTUBDRIVER, T4A_ENODEVICE, T4A_EDRIVEROLD,
   * T4A_EDRIVERMISMATCH or T4A_EDRIVER with a detail naming the cause.
   * Every other slot returns T4A_ENOTINIT until init succeeded, except the
   * ones that need no driver: last_error, get_info, compiler_info, and the
   * artifact slots for code compiled or given without a device
   * (artifact_compile with device_ordinal -1, artifact_from_bytes,
   * artifact_log, artifact_data, artifact_release, compile_cache_stats and
   * compile_cache_clear). */
  int (*init)(void);

  /* get_info: backend name, version and driver facts. Callable before
   * init (driver fields are then 0/empty). */
  int (*get_info)(t4a_backend_info *info);

  /* device_count: number of devices the driver exposes (>= 1 after init). */
  int (*device_count)(int32_t *count);

  /* device_info: facts of device `ordinal` (0 .. count-1). */
  int (*device_info)(int32_t ordinal, t4a_device_info *info);

  /* compiler_info: whether the run-time compiler can be loaded, its
   * version, or why not. Loads the compiler library if not yet loaded;
   * does not fail when it is missing (info->status says so). On the host
   * backend: the host C++ compiler artifact_compile would run now (path,
   * major.minor of its --version), or T4A_ENOCOMPILER and why. */
  int (*compiler_info)(t4a_compiler_info *info);

  /* peer_access_supported: *supported = whether device `src` can read and
   * write device `dst`'s memory directly (direction src -> dst). */
  int (*peer_access_supported)(int32_t src, int32_t dst, bool *supported);

  /* -- runtime (v1.0) ---------------------------------------------------
   * runtime_create: retains the device's primary context, creates one
   * non-blocking stream, one memory pool and the pinned staging area, and
   * returns a new runtime. opts may be NULL (defaults). */
  int (*runtime_create)(int32_t device_ordinal, const t4a_runtime_options *opts, t4a_runtime *out);

  /* runtime_destroy: waits up to timeout_ns for the runtime's outstanding
   * work, then releases everything it owns exactly once: buffers, host
   * buffers, modules and functions the consumer still holds become stale.
   * Witnesses it produced stay valid and report ready (or the fault).
   * On T4A_ETIMEOUT nothing is released and the runtime stays usable; call
   * again. After a device fault it releases what can be proven idle and
   * quarantines (leaks, counted) the rest; the handle becomes stale in
   * either case and T4A_EDEVICEFAULT is returned. Must not race with other
   * calls on the same runtime (they may see T4A_EHANDLE). */
  int (*runtime_destroy)(t4a_runtime rt, uint64_t timeout_ns);

  /* runtime_counters: snapshot of the runtime's counters. */
  int (*runtime_counters)(t4a_runtime rt, t4a_runtime_counters *out);

  /* -- device memory (v1.0) ---------------------------------------------
   * buffer_alloc: stream-ordered allocation of `bytes` (0 is valid) from
   * the runtime's pool, served from the runtime's cache of freed blocks
   * when possible (no driver call). The memory is usable by work enqueued
   * on the runtime's stream after this call; its content is undefined.
   * On exhaustion the cache is trimmed and the allocation retried once,
   * then T4A_ENOMEM (the runtime stays usable). v1.2: an allocation that
   * would pass the runtime's pool_limit_bytes is exhaustion too; before
   * T4A_ENOMEM the runtime's out-of-memory callback, if it has one, is
   * called once and may ask for one more try (t4a_out_of_memory_fn). */
  int (*buffer_alloc)(t4a_runtime rt, uint64_t bytes, t4a_buffer *out);

  /* buffer_free: stream-ordered free: the handle is stale at once; the
   * block is reused only by work ordered after everything already
   * enqueued that may use it (including other runtimes' copies from it). */
  int (*buffer_free)(t4a_runtime rt, t4a_buffer buf);

  /* buffer_size: the size requested at allocation. */
  int (*buffer_size)(t4a_runtime rt, t4a_buffer buf, uint64_t *bytes);

  /* cache_trim: returns cached free blocks to the pool until at most
   * keep_bytes remain cached, and trims the pool. Touches only this
   * runtime. The blocks go back in stream order (cuMemFreeAsync): their
   * memory is the device's once the runtime's stream ran the frees, which
   * the next seal covers. */
  int (*cache_trim)(t4a_runtime rt, uint64_t keep_bytes);

  /* cache_stats: statistics of the runtime's block cache. */
  int (*cache_stats)(t4a_runtime rt, t4a_cache_stats *out);

  /* -- pinned host memory (v1.0) ----------------------------------------
   * host_alloc: page-locked host memory of `bytes` (> 0), portable across
   * contexts, write-combined only with T4A_HOST_WRITE_COMBINED. *ptr is
   * the host address, valid until host_free. */
  int (*host_alloc)(t4a_runtime rt, uint64_t bytes, uint32_t flags, t4a_host_buffer *out,
                    void **ptr);

  /* host_free: the handle is stale at once; the memory is reused or
   * released only after all enqueued work that uses it completed (it is
   * retired behind the next seal covering that work). */
  int (*host_free)(t4a_runtime rt, t4a_host_buffer hb);

  /* -- transfers (v1.0); all on the runtime's stream, in call order -----
   * Every offset+length is bounds-checked (T4A_ERANGE). Length 0 is a
   * valid no-op that enqueues nothing.
   *
   * copy_h2d_pinned / copy_d2h_pinned: asynchronous; the host buffer must
   * not be touched by the host until a witness covering the copy is ready. */
  int (*copy_h2d_pinned)(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, t4a_host_buffer src,
                         uint64_t src_offset, uint64_t bytes);
  int (*copy_d2h_pinned)(t4a_runtime rt, t4a_host_buffer dst, uint64_t dst_offset, t4a_buffer src,
                         uint64_t src_offset, uint64_t bytes);

  /* copy_h2d: from pageable host memory through the runtime's bounded
   * staging. Returns once `src` has been consumed (may be reused); the
   * device write completes in stream order. */
  int (*copy_h2d)(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, const void *src,
                  uint64_t bytes);

  /* copy_d2h: into pageable host memory through the staging. Returns once
   * `dst` holds the data (it waits for the work ahead of it). */
  int (*copy_d2h)(t4a_runtime rt, void *dst, t4a_buffer src, uint64_t src_offset, uint64_t bytes);

  /* copy_d2d: within one runtime (regions may be in the same buffer but
   * must not overlap: T4A_EINVAL). Overlap is decided by device address,
   * not by handle: two buffers of the same memory (a wrap of an own buffer,
   * a DLPack round trip) overlap too. */
  int (*copy_d2d)(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, t4a_buffer src,
                  uint64_t src_offset, uint64_t bytes);

  /* copy_from_runtime: from a buffer of runtime `src_rt` into a buffer of
   * `dst_rt`, both on the same device (else T4A_EFOREIGNDEVICE). Runs on
   * dst_rt's stream after all work src_rt enqueued before this call (GPU-
   * side wait, no host block). src's block is not reused by src_rt before
   * the copy completed. Ranges that overlap by device address (memory both
   * runtimes wrap) are T4A_EINVAL. */
  int (*copy_from_runtime)(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                           t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset, uint64_t bytes);

  /* copy_from_peer: like copy_from_runtime for runtimes on two different
   * devices, through direct peer access (enabled once per device pair).
   * T4A_EUNSUPPORTED with the reason when peer access is impossible; there
   * is no silent fallback. A backend without a second device (host: one
   * device, every runtime on it): T4A_EUNSUPPORTED saying to use
   * copy_from_runtime. */
  int (*copy_from_peer)(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset, t4a_runtime src_rt,
                        t4a_buffer src, uint64_t src_offset, uint64_t bytes);

  /* copy_from_peer_via_host: the explicit, slower route between devices
   * without peer access: through both runtimes' staging. Returns once the
   * data has left src (the device write completes in dst_rt's order). A
   * backend without a second device: T4A_EUNSUPPORTED, as copy_from_peer. */
  int (*copy_from_peer_via_host)(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                                 t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                                 uint64_t bytes);

  /* -- completion (v1.0) -------------------------------------------------
   * seal: returns a witness covering all work enqueued on the runtime so
   * far. Records at most one completion event; when nothing was enqueued
   * since the previous seal it records none and the witness covers the
   * previous point. The caller owns one reference to *out. */
  int (*seal)(t4a_runtime rt, t4a_witness *out);

  /* witness_query: T4A_OK when the covered work completed, T4A_ENOTREADY
   * when not yet, T4A_EDEVICEFAULT when it failed. Never blocks. */
  int (*witness_query)(t4a_witness w);

  /* witness_wait: spins briefly, then blocks until ready, failed, or
   * timeout_ns elapsed (T4A_ETIMEOUT). T4A_WAIT_FOREVER waits without limit.
   * Does not hold the runtime while blocking. */
  int (*witness_wait)(t4a_witness w, uint64_t timeout_ns);

  /* witness_retain / witness_release: reference counting. The last
   * release frees the witness; using it afterwards is T4A_EHANDLE. */
  int (*witness_retain)(t4a_witness w);
  int (*witness_release)(t4a_witness w);

  /* runtime_wait_witness: work rt enqueues after this call starts only
   * after w's work completed (GPU-side wait, the host does not block).
   * w may come from any runtime of this backend, on any device. */
  int (*runtime_wait_witness)(t4a_runtime rt, t4a_witness w);

  /* -- code (v1.0) -------------------------------------------------------
   * artifact_compile: CUDA C -> CUBIN for the target device's architecture
   * (or PTX with T4A_COMPILE_PTX) through NVRTC, served from the memory and
   * disk caches when possible. On T4A_ECOMPILE the artifact is still
   * returned (*out non-null) so its log can be read; release it.
   * The caches are keyed by the request: source, name (it is __FILE__),
   * options, target, output kind, NVRTC and driver versions. Files NVRTC
   * reads while compiling are not in the key (NVRTC cannot report which it
   * read), so a compile that could read one is never cached, in memory or
   * on disk: an option naming include directories, pre-included or
   * precompiled headers (-I, --include-path, -include, --pre-include,
   * -isystem, any *pch* option), or a source that mentions "include"
   * anywhere except in a line `#include <relative/name>` (such a line, with
   * no include directory given, can only reach NVRTC's built-in headers),
   * mentions import or embed, or uses __DATE__, __TIME__ or __TIMESTAMP__.
   * #include "x.h" is never cached: NVRTC looks for it next to `name`, in
   * the current directory for a bare name. The check errs towards
   * compiling (a comment saying "include" costs caching); T4A_LOG=info
   * names each such compile. Self-contained sources are cached.
   * On the host backend the same source is compiled by the host C++
   * compiler into a T4A_ARTIFACT_HOST artifact: $T4A_HOST_CXX (an absolute
   * path; a relative one is refused), else the first of c++, g++, clang++
   * in the absolute directories of PATH (never the current directory;
   * the environment is ignored in setuid/setgid processes); without one,
   * T4A_ENOCOMPILER saying "install g++ (or clang++) or set T4A_HOST_CXX"
   * (compiler_info reports the compiler, its version and status). The
   * log on failure is the compiler's output, with the source's name and
   * line numbers. NVRTC's options are mapped (-D, -U, -I, -include passed
   * on; --use_fast_math -> -ffast-math; -G -> -O0 -g; -std=c++17/20; the
   * target and GPU-only options ignored); one it cannot honour (-rdc=true)
   * is T4A_ECOMPILE, an unknown one T4A_EINVAL, each with a log line (the
   * artifact is returned, as on T4A_ECOMPILE). T4A_COMPILE_PTX is
   * T4A_EUNSUPPORTED there. Its keys also cover the compiler's identity
   * (path and version) and the prelude's; the inclusion rule above holds
   * for it too. device_ordinal -1 or 0; any architecture option is
   * ignored. */
  int (*artifact_compile)(const t4a_compile_options *opts, t4a_artifact *out);

  /* artifact_from_bytes: wraps consumer-provided PTX text, CUBIN or fatbin
   * bytes (copied). The host backend takes T4A_ARTIFACT_HOST bytes (from
   * artifact_data of a host compile), checked when loaded, and refuses
   * PTX, CUBIN and fatbin (T4A_EUNSUPPORTED: GPU code); the cuda backend
   * refuses T4A_ARTIFACT_HOST likewise. */
  int (*artifact_from_bytes)(t4a_artifact_kind kind, const void *data, uint64_t size,
                             const char *name, t4a_artifact *out);

  /* artifact_log: the compile log (NUL-terminated, possibly empty), valid
   * until the artifact's release. */
  int (*artifact_log)(t4a_artifact a, const char **log, uint64_t *length);

  /* artifact_data: the artifact's code bytes and kind, valid until release. */
  int (*artifact_data)(t4a_artifact a, t4a_artifact_kind *kind, const void **data, uint64_t *size);

  /* artifact_release: drops the caller's reference. Modules loaded from it
   * stay loaded. */
  int (*artifact_release)(t4a_artifact a);

  /* compile_cache_stats / compile_cache_clear: the compiled-artifact
   * caches shared by the whole backend. compile_cache_stats fills entries,
   * hits, bytes and rejected disk entries.
   * compile_cache_clear empties the memory cache (T4A_CACHE_MEMORY), the
   * disk cache (T4A_CACHE_DISK) or both; artifacts already returned stay
   * valid. Any other bit is T4A_EINVAL. */
  int (*compile_cache_stats)(t4a_compile_cache_stats *out);
  int (*compile_cache_clear)(uint32_t which);

  /* module_load: loads the artifact into rt (rt owns the module). The
   * driver may synchronise the device's context to load code, so the call
   * can wait for work already running there, any runtime's or framework's:
   * never load while a kernel on that device waits for this thread (a flag
   * the host sets later), or it waits forever. Load before launching.
   * On the host backend the shared object is opened with dlopen from a
   * sealed memfd (else a private 0700 directory, unlinked at once), never
   * from a file another user could replace; bytes that are not a host
   * shared object of this machine are T4A_EINVAL, a module of another
   * module ABI (another prelude) T4A_EABI naming both. It waits for
   * nothing. */
  int (*module_load)(t4a_runtime rt, t4a_artifact a, t4a_module *out);

  /* module_unload: waits for nothing; the module is unloaded after the
   * runtime's enqueued work completed. Its functions become stale. Other
   * runtimes' modules of the same artifact are untouched. */
  int (*module_unload)(t4a_runtime rt, t4a_module m);

  /* function_get: kernel by name (T4A_ENOTFOUND naming the symbol). With
   * the driver's lazy loading (CUDA's default) a kernel's code is loaded on
   * its first lookup, so the module_load rule holds here too: look up every
   * kernel before launching anything that waits for this thread. */
  int (*function_get)(t4a_runtime rt, t4a_module m, const char *name, t4a_function *out);

  /* function_attributes: the attributes of f as the driver reports them:
   * max_threads_per_block (launch limit of f on this device), num_registers
   * (per thread), static_shared_bytes, max_dynamic_shared_bytes (the
   * current limit, see function_set_max_dynamic_shared), local_bytes (per
   * thread), and the ptx_version and binary_version it was built for
   * (major * 10 + minor). On the host backend: max_threads_per_block from
   * __launch_bounds__ (else 1024), max_dynamic_shared_bytes the current
   * limit, every other field 0 (a CPU has no registers to count; the
   * module does not report its static shared memory). */
  int (*function_attributes)(t4a_runtime rt, t4a_function f, t4a_function_attributes *out);

  /* function_set_max_dynamic_shared: opt in to more dynamic shared memory
   * than the default 48 KiB, up to the device's opt-in limit (227 KiB on
   * the host backend). */
  int (*function_set_max_dynamic_shared)(t4a_runtime rt, t4a_function f, uint32_t bytes);

  /* launch: enqueues f on rt's stream. args is an array of pointers to the
   * kernel's arguments, as cuLaunchKernel takes them (a buffer argument is
   * a pointer to the uint64_t from buffer_device_address). Geometry is
   * checked against the device's limits before the driver sees it
   * (T4A_EINVAL naming the bad value). The parameters are copied at the
   * call (their sizes from the kernel), so args may change as soon as it
   * returns. On the host backend the grid's blocks run on a process-wide
   * pool of threads, one per CPU (T4A_HOST_THREADS sets how many), after
   * everything the runtime enqueued before and before anything after; the
   * threads of a block run as a loop, or as fibers when the kernel
   * synchronises. A kernel that calls __trap() or fails an assert faults
   * the device, as on CUDA: the launch stops, and every runtime of the
   * backend in the process reports T4A_EDEVICEFAULT from then on (the
   * detail names the kernel, the block, the thread and the fault), each
   * runtime's queued work is not run (witnesses of it report the fault;
   * those of work completed before stay ready), runtime_create is
   * refused, runtime_destroy completes (releasing everything: nothing of
   * it can still run) and returns T4A_EDEVICEFAULT; the process lives on.
   * A kernel's unchecked access outside its buffers does what it does in
   * any C program: it may corrupt the process's memory or kill it with
   * SIGSEGV. In checked mode (the environment variable T4A_HOST_CHECK=1,
   * read at each runtime_create and artifact_compile) each buffer has its
   * own mapping between PROT_NONE guard pages and freed buffers stay
   * inaccessible, so a kernel's access to a guard page, a freed buffer or
   * unmapped memory faults the device the same way (the detail names the
   * kernel, block, thread and address), and a write into the few bytes
   * between a buffer's end and its guard (the 256-byte alignment's slack,
   * filled with canaries) is found after the launch and faults it naming
   * the kernel and the buffer. An access that lands in other mapped memory
   * is not caught. Checked mode turns the buffer cache off. */
  int (*launch)(t4a_runtime rt, t4a_function f, const t4a_launch_config *cfg, void **args);

  /* -- raw seam (v1.0) ---------------------------------------------------
   * raw_runtime: the runtime's CUcontext, CUstream and device. Valid until
   * runtime_destroy. The consumer may enqueue work on the stream but must
   * not destroy it, change its flags, or synchronise other runtimes on it.
   * A backend without CUDA objects (host) leaves raw_runtime, raw_function,
   * raw_begin and raw_end NULL: there is no context, stream or CUfunction
   * to hand out; its buffers' addresses (buffer_device_address) are host
   * pointers any host code may use.
   */
  int (*raw_runtime)(t4a_runtime rt, t4a_raw_runtime *out);

  /* buffer_device_address: the buffer's CUdeviceptr; valid until the
   * buffer is freed (then only for work already enqueued). */
  int (*buffer_device_address)(t4a_runtime rt, t4a_buffer buf, uint64_t *address);

  /* raw_function: the CUfunction behind f; valid until its module unloads. */
  int (*raw_function)(t4a_runtime rt, t4a_function f, void **cufunction);

  /* raw_begin: makes rt's context current on the calling thread, saving
   * the previous one in *section. raw_end: restores it and notes that the
   * consumer enqueued work on the raw stream, so the next seal records an
   * event covering it. Pairs nest per thread in LIFO order. Work enqueued
   * on the raw stream outside a raw_begin/raw_end pair is still ordered,
   * but a seal only covers it if it records an event for other work. */
  int (*raw_begin)(t4a_runtime rt, t4a_raw_section *section);
  int (*raw_end)(t4a_runtime rt, const t4a_raw_section *section);

  /* -- memory (v1.1) -----------------------------------------------------
   * memset: fills `count` elements of `element_size` bytes (1, 2 or 4)
   * from byte `offset` of buf with the value `pattern`, on the runtime's
   * stream in call order. pattern must fit in element_size bytes, offset
   * must be a multiple of element_size (both T4A_EINVAL) and the range
   * must lie in the buffer (T4A_ERANGE; overflow-checked). count 0
   * enqueues nothing. */
  int (*memset)(t4a_runtime rt, t4a_buffer buf, uint64_t offset, uint32_t pattern,
                uint32_t element_size, uint64_t count);

  /* copy_2d_h2d_pinned / copy_2d_d2h_pinned / copy_2d_d2d /
   * copy_2d_h2d / copy_2d_d2h: the rectangle `g` (see t4a_copy_2d) from
   * src to dst, on the stream in call order, as the 1D copy of the same
   * kind does: the pinned ones are asynchronous (the host buffer must not
   * be touched until a witness covering the copy is ready); the pageable
   * ones go through the bounded staging (copy_2d_h2d returns once src was
   * consumed, copy_2d_d2h once dst holds the data); copy_2d_d2d is within
   * one runtime (rectangles whose spans overlap by device address, in one
   * buffer or two of the same memory: T4A_EINVAL). Every
   * row is bounds-checked: T4A_ERANGE names the first row out of range. A
   * pitch below width (rows > 1) or above the device's max_pitch is
   * T4A_EINVAL. rows or width 0 enqueue nothing. */
  int (*copy_2d_h2d_pinned)(t4a_runtime rt, t4a_buffer dst, t4a_host_buffer src,
                            const t4a_copy_2d *g);
  int (*copy_2d_d2h_pinned)(t4a_runtime rt, t4a_host_buffer dst, t4a_buffer src,
                            const t4a_copy_2d *g);
  int (*copy_2d_d2d)(t4a_runtime rt, t4a_buffer dst, t4a_buffer src, const t4a_copy_2d *g);
  int (*copy_2d_h2d)(t4a_runtime rt, t4a_buffer dst, const void *src, const t4a_copy_2d *g);
  int (*copy_2d_d2h)(t4a_runtime rt, void *dst, t4a_buffer src, const t4a_copy_2d *g);

  /* runtime_memory_info: the device's free and total memory and the
   * runtime's pool, cache and staging (see t4a_memory_info). */
  int (*runtime_memory_info)(t4a_runtime rt, t4a_memory_info *out);

  /* host_register: pins the consumer's host memory [ptr, ptr + bytes) and
   * returns it as a host buffer every pinned copy accepts (offsets from
   * ptr). The consumer keeps owning the memory and must not free it
   * before host_unregister. A range overlapping another registered one of
   * this runtime is T4A_EINVAL. With T4A_HOST_REGISTER_READ_ONLY the
   * device only reads it: a copy into it is T4A_EINVAL, and so is wrapping
   * any of it as a buffer (buffer_wrap_external, DLPack import) in any
   * runtime until it is unpinned. host_free refuses
   * a registered buffer (use host_unregister). */
  int (*host_register)(t4a_runtime rt, void *ptr, uint64_t bytes, uint32_t flags,
                       t4a_host_buffer *out);

  /* host_unregister: the handle is stale at once; the memory is unpinned
   * only after all enqueued work that uses it completed (as host_free). */
  int (*host_unregister)(t4a_runtime rt, t4a_host_buffer hb);

  /* -- completion (v1.1) ------------------------------------------------
   * witness_elapsed: *ns = GPU time from start's completion point to
   * end's, as the completion events recorded it (negative spans are
   * T4A_EINVAL). Both witnesses must come from one runtime created with
   * T4A_RUNTIME_TIMING (else T4A_EUNSUPPORTED; from two runtimes:
   * T4A_EINVAL); T4A_ENOTREADY until both completed; valid after the
   * runtime is destroyed. */
  int (*witness_elapsed)(t4a_witness start, t4a_witness end, uint64_t *ns);

  /* -- execution and graphs (v1.1) ----------------------------------------
   * runtime_info: the runtime's device, flags, stream priority, the
   * device's priority range, what launch_ex and graphs can do here
   * (T4A_EXEC_*), and whether a capture is in progress. */
  int (*runtime_info)(t4a_runtime rt, t4a_runtime_info *out);

  /* launch_ex: launch with clusters, cooperatively, or at a priority,
   * through cuLaunchKernelEx, on rt's stream (captured like launch between
   * graph_begin and graph_end). Checked before the driver sees it, naming
   * the bad value: launch's geometry checks; each cluster dimension >= 1
   * and dividing the grid's (T4A_EINVAL); a cluster larger than the
   * occupancy API allows for this kernel, block and shared memory (8
   * blocks portably, more only with T4A_LAUNCH_CLUSTER_NON_PORTABLE where
   * the device can: T4A_EINVAL); a cooperative grid larger than the blocks
   * that can be co-resident (occupancy_max_active_blocks times the
   * multiprocessors, or clusters times cluster size: T4A_EINVAL); a
   * priority outside the device's range (T4A_ERANGE); unknown flags or
   * reserved != 0 (T4A_EINVAL). A device or driver without clusters,
   * cooperative launches or cuLaunchKernelEx: T4A_EUNSUPPORTED. The
   * occupancy answers are cached per function and configuration, so a
   * repeated launch asks the driver nothing but the launch. The host
   * backend has no clusters or cooperative launches and one priority, 0
   * (its runtime_info reports exec_flags T4A_EXEC_GRAPHS only and the
   * range 0 .. 0): clusters and T4A_LAUNCH_COOPERATIVE are
   * T4A_EUNSUPPORTED with the reason after launch's checks, a priority
   * other than 0 T4A_ERANGE; anything else is a launch. */
  int (*launch_ex)(t4a_runtime rt, t4a_function f, const t4a_launch_ex_config *cfg, void **args);

  /* occupancy_max_active_blocks: *blocks_per_sm = how many blocks of f
   * with block_threads threads and shared_bytes of dynamic shared memory
   * one multiprocessor holds at once (0 when none fits). block_threads
   * must be 1 .. f's limit (T4A_EINVAL). On the host backend a
   * multiprocessor is a CPU, which runs one block at a time: 1. */
  int (*occupancy_max_active_blocks)(t4a_runtime rt, t4a_function f, uint32_t block_threads,
                                     uint32_t shared_bytes, uint32_t *blocks_per_sm);

  /* occupancy_suggest_block_size: the block size that maximises f's
   * occupancy with shared_bytes of dynamic shared memory per block, at
   * most block_limit threads (0 = f's limit), and the smallest grid that
   * fills the device at that size. On the host backend: 256 threads (or
   * the limits below it) and one block per CPU. */
  int (*occupancy_suggest_block_size)(t4a_runtime rt, t4a_function f, uint32_t shared_bytes,
                                      uint32_t block_limit, uint32_t *block_threads,
                                      uint32_t *min_grid);

  /* occupancy_max_active_clusters: *clusters = how many clusters of
   * cfg's shape (cfg->cluster must be set; grid ignored beyond its
   * checks) can be resident on the device at once. A device without
   * clusters (the host backend): T4A_EUNSUPPORTED. */
  int (*occupancy_max_active_clusters)(t4a_runtime rt, t4a_function f,
                                       const t4a_launch_ex_config *cfg, uint32_t *clusters);

  /* graph_begin: starts capturing rt's stream: until graph_end, the work
   * rt enqueues (launch, launch_ex, the pinned and device copies, memset,
   * work on the raw stream) is recorded into a graph instead of running.
   * Refused during a capture, with T4A_EBUSY naming the call and leaving
   * the runtime and the capture as they were: what blocks the host or
   * cannot be captured (copy_h2d, copy_d2h and their 2D forms, which go
   * through the staging; seal; runtime_wait_witness; copies between
   * runtimes (copy_from_runtime, copy_from_peer, copy_from_peer_via_host,
   * whichever of the two captures), and what would change memory the
   * graph may use (buffer_alloc, buffer_free, cache_trim): allocate before
   * graph_begin, free after graph_end. A second graph_begin is
   * T4A_EBUSY. Capture is the driver's relaxed mode: other runtimes and
   * threads are unaffected. runtime_destroy ends a capture in progress and
   * discards it. */
  int (*graph_begin)(t4a_runtime rt);

  /* graph_end: ends the capture and instantiates what it recorded; *out
   * is a graph of rt (rt owns it). The recorded work has not run. When a
   * captured call failed, or instantiation fails, the capture ends all
   * the same, nothing is returned, and the status says why; capture
   * again. A capture records at most 16,777,216 (2^24) launches, and as
   * many distinct buffers, host buffers and functions that its copies and
   * launches name: the call that would exceed that still succeeds (its
   * work is in the driver's capture), but the capture has failed and
   * graph_end returns T4A_ENOMEM, saying so; capture the work as several
   * smaller graphs. Not capturing: T4A_EINVAL. */
  int (*graph_end)(t4a_runtime rt, t4a_graph *out);

  /* graph_launch: replays g on rt's stream, in call order with everything
   * else rt enqueues (the next seal covers it: one event). Arguments and
   * addresses are those captured (or set by graph_set_kernel_args); the
   * buffers, host buffers and functions the captured work names must
   * still be live: T4A_EHANDLE naming the first one released since the
   * capture (a buffer named only inside a kernel argument cannot be
   * checked: keep those until graph_release). g of another runtime:
   * T4A_EHANDLE. During a capture: T4A_EBUSY. One driver call. */
  int (*graph_launch)(t4a_runtime rt, t4a_graph g);

  /* graph_set_kernel_args: replaces the arguments of captured kernel
   * `kernel` (0-based, in capture order: see t4a_graph_info.kernels) for
   * replays enqueued after this call, without re-instantiating (replays
   * already enqueued keep the old ones). args is as for launch: the values
   * are copied now. Out of range: T4A_ERANGE. A graph naming something
   * released since the capture: T4A_EHANDLE, as graph_launch. */
  int (*graph_set_kernel_args)(t4a_runtime rt, t4a_graph g, uint64_t kernel, void **args);

  /* graph_info: what g holds and how often it was replayed. */
  int (*graph_info)(t4a_runtime rt, t4a_graph g, t4a_graph_info *out);

  /* graph_release: the handle is stale at once; the executable graph is
   * destroyed after its last replay completed (retired behind the seal
   * covering it; kept, counted as quarantined, if the runtime faults).
   * runtime_destroy releases the graphs left. */
  int (*graph_release)(t4a_runtime rt, t4a_graph g);

  /* -- interop (v1.1) -----------------------------------------------------
   * Memory and streams the runtime does not own, and DLPack. Consumer
   * streams (`stream` arguments) are CUstreams of rt's device's primary
   * context, NULL or T4A_STREAM_LEGACY (the legacy default stream), or
   * T4A_STREAM_PER_THREAD. None of these slots blocks the host on the GPU.
   *
   * buffer_wrap_external: wraps memory the runtime did not allocate (see
   * t4a_external_memory) as a buffer of rt that every copy, memset, launch
   * (through buffer_device_address) and DLPack export accepts. The range
   * must lie in one allocation (or contiguous mappings) of rt's device, as
   * the driver reports it: another device's memory is T4A_EFOREIGNDEVICE
   * (also with peer access), unknown or freed memory T4A_EINVAL, a range
   * running past the allocation T4A_ERANGE; with T4A_EXTERNAL_HOST it must
   * be page-locked host memory the device can address, throughout: every
   * registration or allocation the range touches is checked, and a range
   * with a page that is not page-locked (a hole between two registrations)
   * is T4A_ERANGE (such a page would fault the device for every runtime on
   * it). Host memory registered read-only through this backend
   * (T4A_HOST_REGISTER_READ_ONLY, by any runtime) is T4A_EINVAL: the device
   * may not write it, and a buffer could be written by a kernel. (Memory
   * the consumer registered read-only through CUDA itself is the
   * consumer's to keep unwritten.) The runtime never
   * frees the memory. mem->release(mem->user) is called exactly once: after
   * buffer_free (or runtime_destroy) and the completion of every use
   * enqueued before it (work on rt's stream, and other runtimes' copies
   * from it), observed at a later natural point of rt: seal, witness_query,
   * witness_wait, witness_elapsed, stream_wait_witness and
   * runtime_wait_witness (for a witness of rt), buffer_free of an external
   * buffer, host_free, host_unregister, module_unload, graph_release and
   * runtime_destroy (at its end, once rt is gone); at once (in buffer_free)
   * when that work had completed. It runs on the thread of that call,
   * before the call returns, while the backend holds nothing (no lock of
   * any runtime, no pinned event), so it may call any slot on any runtime,
   * rt included, and may destroy rt: the call that ran it still returns
   * its own status (a wait goes on as for any destroyed runtime: its
   * witness's final status). A release that runtime_destroy runs finds
   * rt gone already (destroying it again: T4A_EHANDLE). Like host_free, it
   * waits for a seal covering the work: the library never seals behind the
   * caller's back. After a device fault the memory is quarantined with the
   * runtime's own (the GPU may still touch it) and release is never called.
   * On failure nothing is called (the memory stays the caller's). */
  int (*buffer_wrap_external)(t4a_runtime rt, const t4a_external_memory *mem, t4a_buffer *out);

  /* stream_wait_witness: work the consumer enqueues on `stream` after this
   * call runs after w's work (cuStreamWaitEvent: GPU-side). rt names the
   * context `stream` lives in (its own stream is untouched); w may come
   * from any runtime of this backend. A completed witness enqueues
   * nothing; one whose device faulted is T4A_EDEVICEFAULT (nothing
   * enqueued). A backend without CUDA streams (host) leaves it NULL: its
   * consumers order themselves with witness_wait or runtime_wait_witness. */
  int (*stream_wait_witness)(t4a_runtime rt, void *stream, t4a_witness w);

  /* runtime_wait_event: work rt enqueues after this call runs after the
   * consumer's CUevent `event` (its most recent cuEventRecord at the time of
   * this call; never recorded: nothing to wait for), GPU-side. The event
   * may belong to any context; the consumer keeps owning it. During a
   * capture (graph_begin): T4A_EBUSY, as runtime_wait_witness (a wait for
   * work outside the capture). A backend without CUDA events (host) leaves
   * it NULL. */
  int (*runtime_wait_event)(t4a_runtime rt, void *event);

  /* runtime_wait_stream: work rt enqueues after this call runs after all
   * work the consumer enqueued on `stream` so far, GPU-side (an event of
   * rt's pool recorded on `stream`, waited on by rt's stream). During a
   * capture: T4A_EBUSY, as runtime_wait_event. A backend without CUDA
   * streams (host) leaves it NULL. */
  int (*runtime_wait_stream)(t4a_runtime rt, void *stream);

  /* dlpack_export: *out = a new DLManagedTensor (req->flags without
   * T4A_DLPACK_VERSIONED: t4a_dl_managed_tensor *) or
   * DLManagedTensorVersioned (t4a_dl_managed_tensor_versioned *, version
   * T4A_DLPACK_MAJOR.T4A_DLPACK_MINOR) viewing a range of buf as
   * req->dtype, shape and strides (see t4a_dlpack_export; strides are
   * always filled in, row-major when req->strides is NULL). Device
   * T4A_DL_CUDA and rt's ordinal (an external host buffer: T4A_DL_CUDA_HOST,
   * 0); on the host backend T4A_DL_CPU, 0 (what NumPy, PyTorch CPU and JAX
   * CPU take). No copy, nothing enqueued: order the consumer's work after
   * rt's with stream_wait_witness (host: seal and witness_wait first).
   * The tensor borrows the memory: it stays valid until buf is freed or
   * rt destroyed; the consumer must be done with it (its GPU work
   * included) by then. The tensor's deleter frees what the
   * export allocated, then calls req->on_delete(req->user); it touches no
   * runtime, so it may run on any thread, at any time, even after rt is
   * destroyed (the plugin stays loaded once it exported a tensor). Bad
   * dtype, ndim, shape or strides are T4A_EINVAL, elements outside the
   * buffer T4A_ERANGE (overflow-checked). */
  int (*dlpack_export)(t4a_runtime rt, t4a_buffer buf, const t4a_dlpack_export *req, void **out);

  /* dlpack_import: wraps the tensor a DLPack producer made (flags with
   * T4A_DLPACK_VERSIONED: a t4a_dl_managed_tensor_versioned *, else a
   * t4a_dl_managed_tensor *) as an external buffer of rt
   * (buffer_wrap_external) spanning exactly its elements; *offset (may be
   * NULL) = bytes from the buffer's start to element 0 (non-zero only with
   * negative strides). Device T4A_DL_CUDA with rt's ordinal (another
   * ordinal: T4A_EFOREIGNDEVICE) or T4A_DL_CUDA_HOST (on the host backend
   * T4A_DL_CPU or T4A_DL_CUDA_HOST, both host memory); other devices, a
   * DLPack major other than T4A_DLPACK_MAJOR and sub-byte types are
   * T4A_EUNSUPPORTED; a read-only tensor is T4A_EINVAL unless flags has
   * T4A_DLPACK_ALLOW_READ_ONLY. On success rt owns the tensor: its deleter
   * is the buffer's release, called as buffer_wrap_external's release is
   * (once, after the buffer's last use completed, at a later natural point,
   * with nothing of the backend held: it may call any slot, and destroy
   * rt); on failure the caller still owns it (call its deleter). */
  int (*dlpack_import)(t4a_runtime rt, void *tensor, uint32_t flags, t4a_buffer *out,
                       uint64_t *offset);

  /* -- memory (v1.2) ------------------------------------------------------
   * alloc_log_read: copies the events of rt's allocation log numbered
   * `from` and later, oldest first, at most `capacity` of them, into
   * events; *count = how many; *next = the number to pass next time: one
   * past the last copied, or `from` when none was (capacity 0, events may
   * then be NULL: the number the next event will get, whatever `from`).
   * The log keeps the newest alloc_log_events events: older ones are gone,
   * so the first copied may be numbered above `from` (the gap is what was
   * dropped). Reading removes nothing (several readers may read).
   * stream_seq places an event in rt's stream order: work enqueued after
   * the event is covered by a witness of a later seal (CUDA: the seal
   * epoch the work belongs to, numbered like seals; host: the queue
   * position). The log is the runtime's and goes with it. What is
   * recorded: every buffer_alloc (ALLOC or REUSE) and buffer_free of rt's
   * own buffers (not wrapped or imported memory, except IPC imports), each
   * trim that gave cached blocks back (cache_trim, a budget's or a full
   * device's trim, the cache's own bound), each allocation that did not
   * fit (before its out-of-memory callback), each IPC export and import.
   * A runtime created without T4A_RUNTIME_ALLOC_LOG: T4A_EUNSUPPORTED
   * saying so; every backend of 1.2 fills this slot. */
  int (*alloc_log_read)(t4a_runtime rt, uint64_t from, t4a_alloc_event *events, uint32_t capacity,
                        uint32_t *count, uint64_t *next);

  /* -- processes (v1.2) -----------------------------------------------------
   * Buffers and witnesses shared with another process on the same device:
   * CUDA IPC over stream-ordered pools (a pool made shareable with POSIX
   * file descriptors, cuMemPoolExportPointer / ImportPointer: legacy
   * cuIpcGetMemHandle does not work on pool memory) and interprocess events.
   * The exporting runtime is one created with T4A_RUNTIME_IPC; any runtime
   * of this backend on the same device (by UUID) imports. Start the other
   * process with exec or spawn: in a child of fork() alone every runtime
   * made before the fork refuses (T4A_EFORKED, see fork() above).
   *
   * Who frees what, when:
   *  - An exported buffer stays the exporter's: it must stay allocated (no
   *    buffer_free, no runtime_destroy of its runtime) until every importer
   *    freed its import and that free completed; an importer says so with a
   *    witness it exports after its buffer_free (the exporter waits for it,
   *    runtime_wait_ipc_witness, before its own free), or with a message
   *    sent after its witness_wait. Freeing it earlier lets the pool hand
   *    the memory to another allocation the importer still sees.
   *  - An import is the importer's buffer: buffer_free unmaps it after the
   *    work enqueued on it (stream-ordered), runtime_destroy unmaps what is
   *    left. It is not counted in the importer's budget or cache.
   *  - An exported witness can be waited on while the exporter holds a
   *    reference to it and its runtime lives: release it only after every
   *    importer's wait completed (again: a witness it sends back after).
   *  - The pool's file descriptor (buffer_export_ipc's *pool_fd): a new one
   *    each time it is asked for, the caller's to send and to close; an
   *    importer needs it once per exporting runtime (buffer_import_ipc does
   *    not keep it: close it after).
   *
   * When a process dies (SIGKILL) the other keeps working: its runtimes,
   * buffers and witnesses are its own. An importer's buffers of a dead
   * exporter stay mapped and keep what they held until it frees them (the
   * memory lives while any process maps it); its copies, memsets and
   * kernels on them go on. A dead exporter's witness that had completed
   * stays complete (a wait enqueues nothing). One whose work had not
   * completed is the driver's to signal or not, and CUDA does not say (the
   * fake driver never does): a runtime waiting on it may stall for good (its
   * destroy then times out: T4A_ETIMEOUT), so wait for a witness of a
   * process that may die only once a message says its work is done, or in
   * a runtime you can abandon. An exporter whose importer died frees its
   * buffers as usual.
   *
   * A backend without processes (host: its buffers are host memory, which
   * processes share with memfd or shm_open and buffer_wrap_external, and
   * order with their own means and witness_wait) leaves the four slots NULL
   * and refuses T4A_RUNTIME_IPC with T4A_EUNSUPPORTED.
   *
   * buffer_export_ipc: fills *out for buf, a buffer rt allocated (not an
   * empty, wrapped or imported one: T4A_EINVAL), rt created with
   * T4A_RUNTIME_IPC (else T4A_EUNSUPPORTED saying so); pool_fd may be NULL,
   * else *pool_fd = a new file descriptor of rt's pool (close-on-exec), or
   * -1 on failure. The importer may use the memory only after the exporter's
   * allocation and writes completed: send a witness sealed after them. The
   * buffer is not cached by rt again (its free returns it to the pool). */
  int (*buffer_export_ipc)(t4a_runtime rt, t4a_buffer buf, t4a_ipc_buffer *out, int *pool_fd);

  /* buffer_import_ipc: maps the buffer `in` names as a buffer of rt (rt's
   * device must be the exporter's: T4A_EFOREIGNDEVICE) that every copy,
   * memset, launch (buffer_device_address) and DLPack export accepts, of
   * the exported size. pool_fd: the exporter's pool descriptor the first
   * time rt imports from that pool (rt keeps the pool until it is
   * destroyed), -1 after (T4A_EINVAL "pass the pool's descriptor" when rt
   * does not know the pool yet). Bytes that are no export: T4A_EINVAL. */
  int (*buffer_import_ipc)(t4a_runtime rt, const t4a_ipc_buffer *in, int pool_fd, t4a_buffer *out);

  /* witness_export_ipc: fills *out for w, a witness of a T4A_RUNTIME_IPC
   * runtime (else T4A_EUNSUPPORTED saying so), covering exactly w's work (no
   * later work of its runtime). A witness whose work completed exports as
   * complete; one whose work failed: T4A_EDEVICEFAULT. Exporting a witness
   * again gives the same bytes. */
  int (*witness_export_ipc)(t4a_witness w, t4a_ipc_witness *out);

  /* runtime_wait_ipc_witness: work rt enqueues after this call runs after
   * the work the exported witness covers, GPU-side (the host does not
   * block), as runtime_wait_witness; w may come from any process on rt's
   * device (another device: T4A_EFOREIGNDEVICE), rt need not be an IPC
   * runtime. A witness exported complete enqueues nothing. During a capture:
   * T4A_EBUSY. Bytes that are no export: T4A_EINVAL. */
  int (*runtime_wait_ipc_witness)(t4a_runtime rt, const t4a_ipc_witness *w);
};

/* True when `table` is non-null and its struct_size covers `slot`. */
#define T4A_GPU_BACKEND_V1_HAS(table, slot)                                                        \
  ((table) != NULL &&                                                                              \
   (table)->struct_size >= offsetof(t4a_gpu_backend_v1, slot) + sizeof((table)->slot))

/* The plugin entry point. `caller_major`/`caller_minor` are the ABI the
 * caller was compiled against. On success *table points to the plugin's
 * static table (valid until the plugin is unloaded) and T4A_OK is returned.
 * A different major gets T4A_EABI (and *table NULL). It may be called more
 * than once per load, from several threads at once, and may call back into
 * the loader. */
typedef int (*t4a_gpu_backend_v1_entry_fn)(uint16_t caller_major, uint16_t caller_minor,
                                           const t4a_gpu_backend_v1 **table);

/* Bytes from the start of `type` to the end of `field`. */
#define T4A_SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Sizes of the v1.0 versions of the table and of the growing structs: a
 * callee rejects a struct_size below these with T4A_EINVAL. Frozen: a later
 * minor appends fields but never changes these values. */
#define T4A_GPU_BACKEND_V1_0_SIZE T4A_SIZE_THROUGH(t4a_gpu_backend_v1, raw_end)
#define T4A_ERROR_INFO_V1_0_SIZE T4A_SIZE_THROUGH(t4a_error_info, message)
#define T4A_BACKEND_INFO_V1_0_SIZE T4A_SIZE_THROUGH(t4a_backend_info, driver_path)
#define T4A_DEVICE_INFO_V1_0_SIZE T4A_SIZE_THROUGH(t4a_device_info, warp_size)
#define T4A_COMPILER_INFO_V1_0_SIZE T4A_SIZE_THROUGH(t4a_compiler_info, reason)
#define T4A_RUNTIME_OPTIONS_V1_0_SIZE T4A_SIZE_THROUGH(t4a_runtime_options, reserved)
#define T4A_RUNTIME_COUNTERS_V1_0_SIZE T4A_SIZE_THROUGH(t4a_runtime_counters, raw_sections)
#define T4A_CACHE_STATS_V1_0_SIZE T4A_SIZE_THROUGH(t4a_cache_stats, pinned_bytes)
#define T4A_COMPILE_OPTIONS_V1_0_SIZE T4A_SIZE_THROUGH(t4a_compile_options, device_ordinal)
#define T4A_COMPILE_CACHE_STATS_V1_0_SIZE                                                          \
  T4A_SIZE_THROUGH(t4a_compile_cache_stats, disk_limit_bytes)
#define T4A_FUNCTION_ATTRIBUTES_V1_0_SIZE T4A_SIZE_THROUGH(t4a_function_attributes, binary_version)
#define T4A_LAUNCH_CONFIG_V1_0_SIZE T4A_SIZE_THROUGH(t4a_launch_config, shared_bytes)
#define T4A_RAW_RUNTIME_V1_0_SIZE T4A_SIZE_THROUGH(t4a_raw_runtime, device)
#define T4A_RAW_SECTION_V1_0_SIZE T4A_SIZE_THROUGH(t4a_raw_section, runtime_bits)

/* Sizes of what ABI 1.1 added: the table as of 1.1, the first published
 * size of each struct 1.1 introduced, and the 1.1 size of each struct it
 * grew (device info, runtime options, counters). Frozen likewise. */
#define T4A_GPU_BACKEND_V1_1_SIZE T4A_SIZE_THROUGH(t4a_gpu_backend_v1, dlpack_import)
#define T4A_DEVICE_INFO_V1_1_SIZE T4A_SIZE_THROUGH(t4a_device_info, max_pitch)
#define T4A_COPY_2D_V1_1_SIZE T4A_SIZE_THROUGH(t4a_copy_2d, rows)
#define T4A_MEMORY_INFO_V1_1_SIZE T4A_SIZE_THROUGH(t4a_memory_info, staging_bytes)
#define T4A_RUNTIME_OPTIONS_V1_1_SIZE T4A_SIZE_THROUGH(t4a_runtime_options, reserved_v1_1)
#define T4A_RUNTIME_COUNTERS_V1_1_SIZE T4A_SIZE_THROUGH(t4a_runtime_counters, live_graphs)
#define T4A_LAUNCH_EX_CONFIG_V1_1_SIZE T4A_SIZE_THROUGH(t4a_launch_ex_config, reserved)
#define T4A_RUNTIME_INFO_V1_1_SIZE T4A_SIZE_THROUGH(t4a_runtime_info, capturing)
#define T4A_GRAPH_INFO_V1_1_SIZE T4A_SIZE_THROUGH(t4a_graph_info, replays)
#define T4A_EXTERNAL_MEMORY_V1_1_SIZE T4A_SIZE_THROUGH(t4a_external_memory, user)
#define T4A_DLPACK_EXPORT_V1_1_SIZE T4A_SIZE_THROUGH(t4a_dlpack_export, user)

/* Sizes of what ABI 1.2 added: the table as of 1.2, the first published
 * size of each struct 1.2 introduced, and the 1.2 size of each struct it
 * grew (runtime options, counters, memory info). Frozen likewise. */
#define T4A_GPU_BACKEND_V1_2_SIZE T4A_SIZE_THROUGH(t4a_gpu_backend_v1, runtime_wait_ipc_witness)
#define T4A_RUNTIME_OPTIONS_V1_2_SIZE T4A_SIZE_THROUGH(t4a_runtime_options, reserved_v1_2)
#define T4A_RUNTIME_COUNTERS_V1_2_SIZE                                                             \
  T4A_SIZE_THROUGH(t4a_runtime_counters, out_of_memory_failures)
#define T4A_MEMORY_INFO_V1_2_SIZE T4A_SIZE_THROUGH(t4a_memory_info, limit_bytes)
#define T4A_OUT_OF_MEMORY_INFO_V1_2_SIZE T4A_SIZE_THROUGH(t4a_out_of_memory_info, limit_bytes)

#ifdef __cplusplus
}
#endif

#endif /* T4A_GPU_BACKEND_V1_H */
