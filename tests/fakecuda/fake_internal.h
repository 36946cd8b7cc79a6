/* tests/fakecuda/fake_internal.h -- shared state of the fake driver. One
 * global lock (G) guards it all: the fake is about behaviour, not speed.
 *
 * The fake is as strict as CUDA where CUDA defines an error, and stricter
 * where CUDA leaves a misuse undefined: every such misuse (a handle of a
 * destroyed object, a context mismatch, memory freed under queued work, a
 * module unloaded under its queued kernels) is refused the way CUDA reports
 * it, or made visible, and counted as a violation (fake_cuda_violations,
 * which the fake-lane tests assert stays 0). Destroyed objects are kept as
 * tombstones, never freed, so a stale handle is detected instead of
 * touching freed memory. */
#ifndef T4A_FAKE_INTERNAL_H
#define T4A_FAKE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef FAKE_CUDA_HEADERS
#include <cuda.h>
/* The definitions use the plugin's T4A__CUDA_* constants with cuda.h's
 * enumerations (returned as CUresult, compared with CUmemLocationType...):
 * their values are checked equal to cuda.h's (tests/cpu/test_decls.c). */
#pragma GCC diagnostic ignored "-Wenum-compare"
#if defined(__clang__) || __GNUC__ >= 10
#pragma GCC diagnostic ignored "-Wenum-conversion"
#endif
/* cuda.h of CUDA 12.3 and later maps cuStreamGetCaptureInfo to _v3 and
 * declares _v2, the one the plugin resolves (cudaVersion 12000), only in
 * its internal section: the fake defines _v2, as tests/cpu/test_decls.c
 * checks the plugin's declaration against. */
CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out);
#undef cuStreamGetCaptureInfo
#define cuStreamGetCaptureInfo cuStreamGetCaptureInfo_v2
#endif
#include "plugin-cuda/cuda_decls.h"

#define EXPORT __attribute__((visibility("default")))
#ifdef FAKE_CUDA_HEADERS
/* The definitions take and return cuda.h's enumerations, as its prototypes
 * say (GCC 13's -Wenum-int-mismatch tells an enum from the plugin's
 * unsigned stand-ins). */
typedef CUresult R;
#define t4a__CUdevice_attribute CUdevice_attribute
#define t4a__CUfunction_attribute CUfunction_attribute
#define t4a__CUmemPool_attribute CUmemPool_attribute
#define t4a__CUdriverProcAddressQueryResult CUdriverProcAddressQueryResult
#define t4a__CUpointer_attribute CUpointer_attribute
#define t4a__CUmemAllocationHandleType CUmemAllocationHandleType
typedef CUstreamCaptureMode fake_capture_mode;     /* fake_graph.c */
typedef CUstreamCaptureStatus fake_capture_status; /* ... */
#else
typedef t4a__CUresult R;
typedef unsigned fake_capture_mode;
typedef unsigned fake_capture_status;
#endif
#define OK T4A__CUDA_SUCCESS
#define LOCK() pthread_mutex_lock(&fake_G)
#define UNLOCK() pthread_mutex_unlock(&fake_G)
#define MAX_DEVICES 8

/* Every entry point the plugin resolves, as fake_sym_<name> exported under
 * its versioned symbol. With the real CUDA headers (configure found them)
 * the prototype and the symbol come from cuda.h, which maps each name to
 * its versioned symbol (cuStreamDestroy -> cuStreamDestroy_v2): a fake
 * definition that disagrees with cuda.h does not compile, so the fake and
 * plugin-cuda/cuda_decls.h cannot share a mistake. Without them, the
 * plugin's declarations are used. Entry points no file defines resolve to
 * the weak "not supported" stubs of fake_stubs.c. */
#define FAKE_STR_(x) #x
#define FAKE_STR(x) FAKE_STR_(x)
#ifdef FAKE_CUDA_HEADERS
#define FAKE_DECLARE(name, sym, req, params)                                                       \
  EXPORT __typeof__(name) fake_sym_##name __asm__(FAKE_STR(name));
#else
#define FAKE_DECLARE(name, sym, req, params) EXPORT R fake_sym_##name params __asm__(sym);
#endif
T4A__CUDA_FUNCS(FAKE_DECLARE)
#undef FAKE_DECLARE

extern pthread_mutex_t fake_G;
extern pthread_cond_t fake_changed; /* broadcast on every state change */

/* ---- fake_cuda.c: environment ------------------------------------------ */

int fake_env_int(const char *name, int dflt);
int fake_device_count(void);
bool fake_initialised(void);
/* Whether device `from` may access device `to`'s memory (FAKE_CUDA_NO_PEER). */
bool fake_can_access_peer(int from, int to);

/* ---- fake_control.c: injection, violations, handles, counts ------------- */

/* Every entry point starts with FAKE_ENTER(name): it fails if the driver is
 * not initialised (needs_init), counts the call and applies fault
 * injection (FAKE_CUDA_FAIL or fake_cuda_fail). Returns the injected or
 * error code, or 0. */
R fake_enter(const char *name, bool needs_init);
/* The same for a call on an object of device `object_device` (-1: unknown):
 * a release, or an enqueue that names its context through its stream (the
 * launches, the seal's record, the pageable and device-to-device copies, the
 * memsets: FAKE_ENTER_STREAM). The schedule's trace names that device
 * (fake_cuda_call_device), and an injected sticky fault poisons it, not the
 * current context's (which may be another device's, or none). */
R fake_enter_on(const char *name, bool needs_init, int object_device);
#define FAKE_ENTER_ON(name, device)                                                                \
  do {                                                                                             \
    R fake_r_ = fake_enter_on(name, true, device);                                                 \
    if (fake_r_)                                                                                   \
      return fake_r_;                                                                              \
  } while (0)
#define FAKE_ENTER_STREAM(name, stream) FAKE_ENTER_ON(name, fake_object_device(stream, OBJ_STREAM))
#define FAKE_ENTER(name)                                                                           \
  do {                                                                                             \
    R fake_r_ = fake_enter(name, true);                                                            \
    if (fake_r_)                                                                                   \
      return fake_r_;                                                                              \
  } while (0)

/* FAKE_CUDA_SERIAL: each enqueue returns once its operation ran. */
extern bool fake_serial;

/* The sticky fault of a device (a CUresult), 0 when none; setting one
 * (G held) stops that device's streams, as on a GPU. */
R fake_device_fault(int device);
void fake_fault_device(int device, R r);

/* Records a violation (G may be held): counted, and printed on stderr so a
 * failing test shows what the plugin did. */
void fake_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A misuse CUDA reports: counted as a violation, and `code` returned. */
R fake_misuse(R code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Live driver objects by kind (G held to change). */
enum { LIVE_DEVICE, LIVE_HOST, LIVE_STREAM, LIVE_EVENT, LIVE_POOL, LIVE_MODULE, LIVE_KINDS };
extern uint64_t fake_live[LIVE_KINDS];
extern uint64_t fake_guard_violations, fake_oob_attempts;

/* The head of every object a handle points to. Objects are registered when
 * created and never freed: destroying one marks it dead. */
typedef enum {
  OBJ_STREAM = 1,
  OBJ_EVENT,
  OBJ_MODULE,
  OBJ_FUNCTION,
  OBJ_POOL,
  OBJ_GRAPH,      /* fake_graph.c: a graph (template), context-free */
  OBJ_GRAPH_NODE, /* ... one of its nodes */
  OBJ_GRAPH_EXEC  /* ... an executable graph, of the context it was instantiated in */
} obj_kind;
typedef struct fake_obj {
  obj_kind kind;
  bool dead;
  struct CUctx_st *ctx; /* the owning context, NULL for pools */
  uint64_t ctx_epoch;   /* the context's epoch at creation */
} fake_obj;

/* Registers o (G held). */
void fake_obj_register(fake_obj *o, obj_kind kind, struct CUctx_st *ctx);
/* Checks a handle (G held) without dereferencing an unknown pointer:
 * CUDA_ERROR_INVALID_HANDLE (counted) for a pointer that is no object of
 * this kind or one destroyed, CUDA_ERROR_CONTEXT_IS_DESTROYED for an object
 * whose context was destroyed since; `what` names the call. */
R fake_obj_check(const void *p, obj_kind kind, const char *what);
/* The device of a live object or allocation, -1 if it is none (G not
 * held). */
int fake_object_device(const void *p, obj_kind kind);
int fake_alloc_device(const void *p, int kind);

/* ---- fake_context.c: primary contexts ----------------------------------- */

struct CUctx_st {
  int device;
  int refs;       /* primary context retains */
  uint64_t epoch; /* advances each time the context is destroyed (refs -> 0) */
  unsigned peers; /* bit d: cuCtxEnablePeerAccess to device d's context */
};

/* The calling thread's current context, or NULL. */
struct CUctx_st *fake_current(void);
/* A current, live context whose device has not faulted (G not held). */
R fake_need_ctx(void);
R fake_need_ctx_locked(void); /* the same, G held */
/* A call that names its context `ctx` through its stream or function (a
 * launch, a record, a pageable or device-to-device copy, a memset) is made
 * whatever is current, as the real driver does; FAKE_CUDA_LAUNCH_NEEDS_CONTEXT=1
 * models a driver that wants ctx current after all: then this is a plain
 * CUDA_ERROR_INVALID_CONTEXT (not a misuse) unless it is. */
R fake_refuse_uncurrent(const struct CUctx_st *ctx);
/* Whether ctx is alive in the epoch an object recorded (G held). */
bool fake_ctx_alive(const struct CUctx_st *ctx, uint64_t epoch);
/* Whether p is one of the primary contexts. */
bool fake_ctx_valid(const struct CUctx_st *ctx);
/* References held on device d's primary context (G held). */
uint64_t fake_ctx_refs(int device);

/* ---- fake_memory.c: device and pinned memory ----------------------------- */

enum { MEM_DEVICE = 1, MEM_HOST = 2 };
enum { A_LIVE, A_FREEING, A_CACHED }; /* device blocks: in use, free queued, in the pool */

#define FAKE_GUARD ((size_t)64) /* guard zone bytes on each side of an allocation */

typedef struct alloc {
  char *base; /* user pointer - FAKE_GUARD */
  size_t bytes;
  int kind, device;
  unsigned flags;                  /* pinned: the cuMemHostAlloc flags */
  struct CUmemPoolHandle_st *pool; /* device: its pool */
  int state;                       /* device: A_* */
  t4a__CUstream free_stream;       /* A_FREEING: the stream whose free is queued */
  uint64_t gen;                    /* advances at each reuse from the pool */
  unsigned queued;                 /* queued operations that use it */
  unsigned busy;                   /* operations using it right now */
  bool released;                   /* freed (host) or released to the OS (device) */
  bool registered;                 /* host: the caller's memory (cuMemHostRegister), not ours */
  bool imported;                   /* device: another process's block (fake_ipc.c), not ours */
  struct fake_region *region;      /* device: carved from a shareable pool's region (fake_ipc.c) */
  size_t region_off, region_len;   /* ... where, how much */
  struct alloc *next;              /* in the live list (or the graveyard) */
  struct alloc *pool_next;         /* in its pool's list */
} alloc;

/* All G held. */
alloc *fake_alloc_new(size_t bytes, int kind, int device);
/* A device block at base (guard zones included: bytes + 2 * FAKE_GUARD),
 * memory the caller provides (a shareable pool's region). */
alloc *fake_alloc_new_at(char *base, size_t bytes, int device);
/* Another process's device block, mapped at p (its guard zones around it):
 * not this process's memory, never counted, freed or poisoned here. */
alloc *fake_alloc_imported(char *p, size_t bytes, int device);
/* The live allocation holding [p, p + n) (any state), NULL if none or if
 * the range runs past its end. */
alloc *fake_alloc_find(const void *p, size_t n, int kind);
alloc *fake_alloc_at(const void *p, int kind); /* by its user pointer */
/* Whether p lies in an allocation already freed (use after free). */
bool fake_alloc_was_freed(const void *p);
/* Releases an allocation: its memory is freed once no queued or running
 * operation uses it any more (until then it is poisoned). */
void fake_alloc_release(alloc *a);
/* Drops a queued use / a running use. */
void fake_alloc_unqueue(alloc *a);
void fake_alloc_unpin(alloc *a);
/* Whether device memory `a` may be accessed from device `dev`: its own
 * device, or a device its pool granted access to (cuMemPoolSetAccess;
 * pool memory ignores cuCtxEnablePeerAccess, as in CUDA). */
bool fake_alloc_accessible(const alloc *a, int dev);
uint64_t fake_device_used(int device);
/* Live allocations of a kind (MEM_*) on a device (G held): device blocks
 * in use, or (pooled) freed into their pool's cache. */
uint64_t fake_allocs_on(int kind, int device, bool pooled);
/* Registers the caller's host memory [p, p + bytes) as pinned (G held). */
alloc *fake_alloc_register(void *p, size_t bytes, int device, unsigned flags);
size_t fake_device_limit(void);

/* ---- fake_stream.c: streams and events ----------------------------------- */

struct fake_ipc_page;

struct CUevent_st {
  fake_obj o;
  unsigned flags; /* cuEventCreate's */
  double ms;      /* host clock when its last record completed (timing events) */
  uint64_t recorded, completed;
  R failed; /* the work it follows faulted */
  /* Interprocess events (fake_ipc.c): their state is also in a shared page,
   * which an importing process maps; `imported`: opened from a handle, its
   * state is only the page. */
  struct fake_ipc_page *ipc;
  int ipc_fd; /* the exporter's descriptor of the page */
  bool imported;
};

typedef struct kdesc kdesc;

/* Launch geometry of a kernel; cuLaunchKernelEx adds clusters (blocks per
 * cluster, all 0 without) and cooperative launches (fake_launch_ex.c). */
typedef struct geometry {
  unsigned grid[3], block[3], shared;
  int device;
  unsigned cluster[3];
  bool cooperative;
} geometry;

#define OP_MAX_REFS 8

typedef struct op {
  enum { OP_COPY, OP_SET, OP_RECORD, OP_WAIT, OP_FREE, OP_KERNEL } kind;
  void *dst;
  const void *src;
  size_t bytes;
  unsigned char value;
  unsigned char width; /* OP_SET: 1, 2 or 4 bytes per element (0 = 1) */
  uint32_t value32;    /* OP_SET with width 2 or 4 */
  void *owned;         /* a snapshot of pageable source memory, freed after the copy */
  t4a__CUevent event;
  uint64_t gen, seq;
  alloc *target; /* OP_FREE */
  alloc *refs[OP_MAX_REFS];
  unsigned nrefs;
  struct CUfunc_st *func; /* OP_KERNEL */
  geometry geom;
  unsigned char args[128];
  struct op *next;
} op;

struct fake_capture; /* fake_graph.c */

struct CUstream_st {
  fake_obj o;
  int device;
  unsigned flags;
  int priority; /* cuStreamCreateWithPriority (fake_launch_ex.c), clamped */
  op *head, *tail;
  uint64_t enqueued, done; /* operations */
  bool executing, stop;
  R failed;                     /* sticky: a fault in this stream's work */
  struct fake_capture *capture; /* non-NULL while capturing (fake_graph.c) */
};

/* Resolves a stream handle (G held): checks it, and replaces a default
 * stream handle (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) by the stream it
 * stands for. */
R fake_stream_get(t4a__CUstream *s, const char *what);
/* A new stream of ctx (G held), its worker started; NULL when out of
 * memory. Not counted live: fake_stream_create counts its own. */
t4a__CUstream fake_stream_new(struct CUctx_st *ctx, unsigned flags, int priority);
/* Creates a stream of the current context (G not held): cuStreamCreate's
 * work, and cuStreamCreateWithPriority's. */
R fake_stream_create(t4a__CUstream *s, unsigned flags, int priority);
/* Appends a copy of *o to s (G held, s checked); takes a queued use of each
 * of o's refs (and of its kernel's module). On a capturing stream the
 * operation is recorded into the capture instead (fake_capture_op). */
R fake_enqueue(t4a__CUstream s, const op *o);
/* Waits (G held) until operation seq of s ran or s failed. */
void fake_stream_wait_op(t4a__CUstream s, uint64_t seq);

/* ---- fake_interop.c: what the interop slots meet ------------------------- */

/* Whether s is a default stream handle: CU_STREAM_LEGACY (0x1) or
 * CU_STREAM_PER_THREAD (0x2), which consumers pass (PyTorch's default
 * stream, the DLPack stream protocol). */
bool fake_stream_is_default(t4a__CUstream s);
/* Replaces the default stream handle *s by the stream it stands for in the
 * current context (G held): one per primary context, made on first use and
 * again after the context was destroyed; driver-owned, so never counted
 * live. CUDA_ERROR_INVALID_CONTEXT without a current, live context. */
R fake_stream_default(t4a__CUstream *s, const char *what);

/* ---- fake_pool.c: memory pools ------------------------------------------- */

struct CUmemPoolHandle_st {
  fake_obj o;
  int device;
  /* Shareable (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) pools carve their
   * blocks from a region of shared memory; an imported pool maps another
   * process's region (fake_ipc.c). NULL for the others. */
  struct fake_region *region;
  bool imported;
  unsigned access;    /* bit d: device d may access the pool's memory */
  uint64_t threshold; /* bytes kept reserved across synchronisations */
  alloc *blocks;      /* its blocks, in use or cached */
  uint64_t reserved;  /* their bytes */
  uint64_t used_high; /* the most bytes in use (not cached) at once */
  struct CUmemPoolHandle_st *next;
};

/* A block's free ran (G held): it returns to its pool (or to the OS when
 * the pool is gone). */
void fake_pool_freed(alloc *a);
/* After a synchronisation (G held): each pool releases cached memory above
 * its release threshold, as CUDA does on stream/event synchronisation. */
void fake_pools_synchronised(void);

/* ---- fake_ipc.c: processes (ABI 1.2) --------------------------------------- */

/* A shareable pool's region of shared memory (G held): created for a pool,
 * or mapped from another process's descriptor. */
struct fake_region *fake_region_new(void);
/* A block of `bytes` from a shareable pool (G held), NULL when full. */
alloc *fake_region_alloc(struct CUmemPoolHandle_st *p, size_t bytes, int device);
/* The block's region goes back (G held): a region outlives its pool. */
void fake_region_free(alloc *a);
/* An interprocess event's record completed (G held), or failed. */
void fake_ipc_event_done(t4a__CUevent e, uint64_t gen, R failed);
/* An interprocess event's record was enqueued (G held). */
void fake_ipc_event_recorded(t4a__CUevent e);
/* A wait on an imported event (G held at entry and exit; let go while it
 * polls the shared page: another process completes it). */
void fake_ipc_event_wait(t4a__CUevent e, uint64_t gen);
/* The record a wait on an imported event waits for, now (G held). */
uint64_t fake_ipc_event_recorded_now(t4a__CUevent e);
/* cuEventCreate with CU_EVENT_INTERPROCESS: the shared page (G held). */
R fake_ipc_event_init(t4a__CUevent e);
/* cuMemPoolCreate with a POSIX file descriptor handle type (G held). */
R fake_ipc_pool_init(struct CUmemPoolHandle_st *p);

/* ---- fake_module.c and fake_kernels.c: code ------------------------------- */

/* What a running kernel sees: its geometry and the allocations it touched
 * (pinned until it returns). */
typedef struct kctx {
  geometry g;
  alloc *pins[OP_MAX_REFS];
  unsigned npins;
} kctx;

typedef void (*kernel_fn)(const unsigned char *args, kctx *k);

/* A kernel the fake implements on the CPU, by entry name. */
struct kdesc {
  const char *name;
  kernel_fn fn;
  unsigned nargs;
  unsigned offsets[4], sizes[4];
  unsigned pointers; /* bit i: argument i is a pointer */
  int max_threads;   /* per block (the PTX .maxntid), 0 = the device's */
  int static_shared; /* bytes */
  /* It runs until the host writes memory it polls (t4a_spin, the tests'
   * gate): while one is queued or running on a device, loading code there
   * is a violation (fake_host_waiters). */
  bool waits_for_host;
};

/* Launches of waits_for_host kernels queued or running, per device (G held).
 * Loading a module while one is counted is a violation: the real driver may
 * synchronise the context to load code (lazy loading's documented hazard, seen
 * on an H200: cuModuleLoadData under a closed gate never returned), so a
 * program that loads code while a kernel waits for the host can deadlock. */
extern unsigned fake_host_waiters[MAX_DEVICES];

extern const kdesc fake_kernels[];
extern const unsigned fake_kernel_count;
/* fake_launch_ex.c's kernels (clusters, grid-wide barriers), found in
 * module images like fake_kernels.c's. */
extern const kdesc fake_ext_kernels[];
extern const unsigned fake_ext_kernel_count;

/* Whether a kernel may touch [p, p + n): inside one device allocation its
 * device may access, or one pinned host allocation, neither freed. On
 * success the allocation stays pinned until the kernel returns; otherwise
 * the kernel's device faults (CUDA_ERROR_ILLEGAL_ADDRESS, sticky), as a
 * GPU would, instead of crashing the process. */
bool fake_touch(kctx *k, const void *p, size_t n);

struct CUfunc_st {
  fake_obj o;
  const kdesc *k;
  struct CUmod_st *module;
  int max_dynamic_shared;
  bool nonportable; /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
  bool loaded;      /* lazy loading: its code is loaded (fake_function_load) */
};

#define MODULE_MAX_FUNCS 16

struct CUmod_st {
  fake_obj o;
  int device;
  int ptx_arch;    /* the PTX .target (sm_XX -> XX), or the device's for binaries */
  unsigned queued; /* launches of its kernels not yet run */
  struct CUfunc_st funcs[MODULE_MAX_FUNCS];
  unsigned nfuncs;
};

/* The host clock in milliseconds (timing events). */
double fake_now_ms(void);

/* Runs a queued launch (G not held): a kernel of an unloaded module faults
 * its device instead of running freed code. */
void fake_run_kernel(op *o);

/* What cuLaunchKernel and cuLaunchKernelEx check alike (G held): the
 * function and the stream (live, one context), the context rule
 * (FAKE_CUDA_LAUNCH_NEEDS_CONTEXT), the device's fault, and the geometry
 * within the device's and the function's limits. Sets g->device, and *s
 * to the stream a default stream handle stands for. */
R fake_launch_check(const char *what, t4a__CUfunction f, t4a__CUstream *s, geometry *g,
                    void **params, void **extra);
/* Enqueues a checked launch (G held): its arguments packed, queued uses of
 * the allocations its pointer arguments name (fake_kernel_refs). */
R fake_launch_enqueue(t4a__CUfunction f, t4a__CUstream s, const geometry *g, void **params);
/* Sets o's refs to the allocations its kernel's pointer arguments name. */
void fake_kernel_refs(op *o);
void fake_function_load(t4a__CUfunction f, const char *what, bool loads); /* lock held */

/* ---- hooks into fake_graph.c and fake_launch_ex.c ------------------------- */

/* fake_graph.c (G held): an operation enqueued on a capturing stream is
 * recorded into its graph (copies between device and pinned memory,
 * memsets, kernels), or refused (event records and waits, frees, pageable
 * copies: a misuse) and the capture invalidated. */
R fake_capture_op(t4a__CUstream s, const op *o);
/* fake_graph.c (G held): a call illegal on a capturing stream (query,
 * synchronize, stream-ordered allocation): a misuse; invalidates the
 * capture, as CUDA does. */
R fake_capture_illegal(t4a__CUstream s, const char *what);
/* fake_launch_ex.c: device attributes beyond fake_cuda.c's. */
R fake_ext_device_attribute(t4a__CUdevice_attribute a, int *v);
/* fake_launch_ex.c (G held, f checked): function attributes other than the
 * dynamic shared limit. */
R fake_ext_func_attribute(t4a__CUfunction f, t4a__CUfunction_attribute a, int v);

#endif
