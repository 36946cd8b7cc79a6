/* plugin-host/kernel_abi.h -- the interface between the host backend and a
 * kernel module it compiled (a shared object built from a consumer's CUDA C
 * by the host C++ compiler, with the prelude host_kernel.h in front).
 *
 * Plain C, no includes beyond <stdint.h>: the plugin (C11) and the prelude
 * (C++17, compiled into every module) both include it, so both sides agree
 * on the layout by construction. A module exports exactly one symbol the
 * plugin looks up, T4A_HK_MODULE_SYMBOL, a t4a_hk_module; its abi_version
 * must equal T4A_HK_ABI_VERSION (an artifact from another prelude is
 * refused at module_load with both versions named).
 *
 * Who owns what: the plugin owns every thread, the fiber stacks, the
 * dynamic shared memory and the launch's parameter copy (all in
 * t4a_hk_worker / t4a_hk_launch); the module owns only its code and its
 * static data (static __shared__ arrays are thread_local in the module: a
 * worker thread runs one block at a time, so they are per block). A module
 * keeps no state between run calls except that, and registers no thread
 * exit handlers (so dlclose unloads it). */
#ifndef T4A_PLUGIN_HOST_KERNEL_ABI_H
#define T4A_PLUGIN_HOST_KERNEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define T4A_HK_ABI_VERSION 2u
#define T4A_HK_MODULE_SYMBOL "t4a_hk_module_v1"

typedef struct t4a_hk_dim3 {
  uint32_t x, y, z;
} t4a_hk_dim3;

/* What a kernel stopped with (t4a_hk_fault.kind). */
enum t4a_hk_fault_kind {
  T4A_HK_FAULT_NONE = 0,
  T4A_HK_FAULT_TRAP = 1,    /* __trap() */
  T4A_HK_FAULT_ASSERT = 2,  /* a failed assert() */
  T4A_HK_FAULT_BARRIER = 3, /* a barrier or warp operation some threads never reached */
  T4A_HK_FAULT_MEMORY = 4   /* checked mode: an access outside the live buffers */
};

/* The first fault of a run call: where, and a one-line message (e.g.
 * "assert(i < n) failed at k.cu:12"). */
typedef struct t4a_hk_fault {
  int32_t kind; /* enum t4a_hk_fault_kind */
  t4a_hk_dim3 block, thread;
  char message[256];
} t4a_hk_fault;

/* One launch, as the plugin hands it to every worker that runs blocks of
 * it. Immutable during the launch except *stop. */
typedef struct t4a_hk_launch {
  t4a_hk_dim3 grid, block;
  uint32_t dynamic_shared; /* bytes of extern __shared__ per block */
  uint32_t reserved;
  void *const *args; /* one pointer per parameter, to the launch's own copy */
  /* Nonzero once any block of this launch faulted: run returns at the next
   * block boundary (read with __atomic_load_n, relaxed). */
  int32_t *stop;
} t4a_hk_launch;

/* What the calling worker thread lends a run call. */
typedef struct t4a_hk_worker {
  void *stacks;         /* stack_count fiber stacks of stack_bytes each, contiguous, each
                           with a PROT_NONE guard page below it (not counted in stack_bytes):
                           stack i is [stacks + i * (stack_bytes + page), + stack_bytes),
                           page = the system page size (getpagesize()); the prelude wants
                           stack_bytes >= 4096 + 4096 and starts stack i up to 4096 bytes
                           below its top */
  uint64_t stack_bytes; /* usable bytes of one stack, a multiple of the page size */
  uint32_t stack_count; /* >= the block's thread count */
  uint32_t reserved;
  void *shared; /* the block's dynamic shared memory: shared_bytes, 256-byte aligned */
  uint64_t shared_bytes;
  void *fibers; /* stack_count * T4A_HK_FIBER_BYTES bytes, 64-byte aligned, for the prelude's
                   scheduler state: one record per thread of a block, laid out from the start
                   (a record is at most T4A_HK_FIBER_BYTES; the prelude checks both) */
} t4a_hk_worker;

/* The bytes of one fiber record (t4a_hk_worker.fibers): at least the
 * prelude's record (it checks). */
#define T4A_HK_FIBER_BYTES 256u

/* A kernel of a module: one `extern "C" __global__` function. */
typedef struct t4a_hk_kernel {
  const char *name;
  uint32_t param_count;
  const uint32_t *param_sizes;  /* param_count entries (sizeof of each parameter) */
  const uint32_t *param_aligns; /* alignof of each */
  uint32_t flags;               /* T4A_HK_KERNEL_* */
  uint32_t max_threads;         /* __launch_bounds__'s first value, else 1024 */
  /* Runs blocks first .. first + count - 1 of l's grid (linear index, x
   * fastest) on the calling thread, using w. Returns 0, or nonzero with
   * *fault filled: the first fault; the rest of the call's blocks are not
   * run. Checks *l->stop before each block. */
  int (*run)(const t4a_hk_launch *l, uint64_t first, uint64_t count, const t4a_hk_worker *w,
             t4a_hk_fault *fault);
} t4a_hk_kernel;

/* The kernel synchronises (barriers, warp operations): its threads run as
 * fibers; without it they run as a loop (no stacks needed). */
#define T4A_HK_KERNEL_FIBERS 0x1u

typedef struct t4a_hk_module {
  uint32_t abi_version; /* T4A_HK_ABI_VERSION */
  uint32_t kernel_count;
  const t4a_hk_kernel *kernels;
  const char *prelude_id; /* the prelude's identity (its version and hash) */
  /* For the plugin's SIGSEGV/SIGBUS handler in checked mode, on a thread
   * inside run: records a T4A_HK_FAULT_MEMORY fault at the current block
   * and thread with `message`, and leaves the kernel (does not return).
   * It leaves by longjmp, restoring no signal mask: install the handler
   * with SA_NODEFER (or unblock the signal before calling it). It returns
   * only when the calling thread is not inside a run call of this module. */
  void (*fault_here)(int32_t kind, const char *message);
} t4a_hk_module;

#ifdef __cplusplus
}
#endif

#endif
