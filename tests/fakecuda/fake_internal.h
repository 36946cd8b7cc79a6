/* tests/fakecuda/fake_internal.h -- shared state of the fake driver. One
 * global lock (G) guards it all: the fake is about behaviour, not speed. */
#ifndef T4A_FAKE_INTERNAL_H
#define T4A_FAKE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/cuda_decls.h"

#define EXPORT __attribute__((visibility("default")))
typedef t4a__CUresult R;

extern pthread_mutex_t fake_G;
extern pthread_cond_t fake_changed; /* broadcast on every state change */

/* Environment helpers. */
int fake_env_int(const char *name, int dflt);
int fake_device_count(void);
bool fake_initialised(void);

/* Every entry point starts with FAKE_ENTER(name): it fails if the driver is
 * not initialised, and applies fault injection (FAKE_CUDA_FAIL or
 * fake_cuda_fail). Returns the injected or error code, or 0. */
R fake_enter(const char *name, bool needs_init);
#define FAKE_ENTER(name)                                                                           \
  do {                                                                                             \
    R fake_r_ = fake_enter(name, true);                                                            \
    if (fake_r_)                                                                                   \
      return fake_r_;                                                                              \
  } while (0)

/* The device a sticky fault hit (CUresult), 0 when none. */
R fake_device_fault(int device);

/* ---- streams and kernels (fake_runtime.c), shared with fake_graph.c and
 * fake_launch_ex.c ------------------------------------------------------- */

typedef struct alloc alloc; /* fake_runtime.c's device and pinned allocations */

/* A kernel: its packed arguments and the launch geometry (x only; cluster
 * is the x size of its clusters, 0 without, and cooperative says the
 * launch was cooperative: cuLaunchKernelEx). */
typedef struct geometry {
  unsigned grid, block, shared;
  int device;
  unsigned cluster;
  bool cooperative;
} geometry;
typedef void (*kernel_fn)(const unsigned char *args, geometry g);

typedef struct op {
  enum { OP_COPY, OP_SET, OP_RECORD, OP_WAIT, OP_FREE, OP_KERNEL } kind;
  void *dst;
  const void *src;
  size_t bytes;
  unsigned char value;
  void *owned; /* freed after the op ran: a pageable source's snapshot */
  t4a__CUevent event;
  uint64_t gen;
  alloc *target;
  kernel_fn kernel;
  geometry geom;
  unsigned char args[128];
  struct op *next;
} op;

struct fake_capture; /* fake_graph.c */

struct CUstream_st {
  int device;
  op *head, *tail;
  bool executing, stop;
  R failed; /* sticky: a fault in this stream's work */
  pthread_t thread;
  int priority;                 /* cuStreamCreateWithPriority (fake_launch_ex.c) */
  struct fake_capture *capture; /* non-NULL while capturing (fake_graph.c) */
};

typedef struct kdesc {
  const char *name;
  kernel_fn fn;
  unsigned nargs;
  unsigned offsets[4], sizes[4];
} kdesc;

struct CUfunc_st {
  const kdesc *k;
  t4a__CUmodule module;
  int max_dynamic_shared;
  bool nonportable; /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
};

struct CUmod_st {
  int device;
  struct CUfunc_st funcs[8];
  unsigned nfuncs;
};

/* Queues o (copied) on s, or records it when s is capturing. */
R fake_enqueue(t4a__CUstream s, op *o);

/* Whether a kernel may touch [p, p + n); else faults `device` (sticky). */
#define kernel_may_touch fake_kernel_may_touch
bool fake_kernel_may_touch(const void *p, size_t n, int device);

/* ---- hooks: fake_runtime.c and fake_cuda.c call these ----------------------- */

/* fake_graph.c: an operation enqueued on a capturing stream is recorded
 * (copies, memsets, kernels) or refused and the capture invalidated (event
 * records and waits, frees, pageable copies), as the driver does. */
R fake_capture_op(t4a__CUstream s, const op *o);
/* fake_graph.c: a call illegal on a capturing stream (query, synchronize,
 * stream-ordered allocation): invalidates the capture. */
R fake_capture_illegal(t4a__CUstream s);
/* fake_launch_ex.c: the kernels only it implements, found in a module
 * image like fake_runtime.c's own. */
void fake_ext_kernels_scan(t4a__CUmodule m, const char *text, size_t size, bool ptx);
/* fake_launch_ex.c: device attributes beyond fake_cuda.c's. */
R fake_ext_device_attribute(t4a__CUdevice_attribute a, int *v);
/* fake_launch_ex.c: function attributes other than the dynamic shared limit. */
R fake_ext_func_attribute(t4a__CUfunction f, t4a__CUfunction_attribute a, int v);

#endif
