/* plugin-host/kernel.h -- kernels on the host backend: CUDA C compiled by
 * the host C++ compiler into a shared object (a kernel module, the
 * interface of kernel_abi.h), loaded into a runtime, launched over the
 * process-wide thread pool.
 *
 *   compile.c   artifact_compile, the compile caches, artifact_from_bytes
 *   cxx.c, cxxrun.c, cxxopts.c   the compiler: finding, running, options
 *   module.c    module_load / _unload, function_get, the function slots,
 *               occupancy
 *   launch.c    launch, launch_ex: the checks and the parameter copy (a
 *               launch record), captured launches and their arguments
 *   pool.c      running a launch: its blocks over the pool's threads
 *   fault.c     the device's sticky fault
 *   check.c     checked mode (T4A_HOST_CHECK=1): the memory-fault handler,
 *               the guarded buffers' canaries (their mappings: memory.c)
 *
 * The kernel_abi.h types are the plugin's side of the fixed interface. */
#ifndef T4A_PLUGIN_HOST_KERNEL_H
#define T4A_PLUGIN_HOST_KERNEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend-core/handle.h"
#include "plugin-host/kernel_abi.h"
#include "t4a/gpu_backend_v1.h"

typedef struct t4a__hrt t4a__hrt;

/* ---- compile.c / cxxopts.c ------------------------------------------------ */

/* The host compiler's arguments for a compile: fixed ones, then the
 * consumer's mapped options. */
#define T4A__CXXARGS_MAX 600u
typedef struct t4a__cxxargs {
  const char *v[T4A__CXXARGS_MAX + 1];
  uint32_t count;
  char *owned[T4A__CXXARGS_MAX]; /* strings made for v, freed by t4a__cxxargs_free */
  uint32_t owned_count;
} t4a__cxxargs;

/* Appends the host compiler's arguments for `count` NVRTC options (see
 * cxxopts.c). T4A_OK; T4A_ECOMPILE (an option the host cannot honour) or
 * T4A_EINVAL (one it does not know), each with a line in *log (malloc'd,
 * appended to); T4A_ENOMEM. */
int t4a__cxxargs_map(t4a__cxxargs *a, const char *name, const char *const *options, uint32_t count,
                     char **log);
void t4a__cxxargs_free(t4a__cxxargs *a);

/* ---- module.c --------------------------------------------------------------- */

typedef struct t4a__hmodule {
  t4a__hslot h;
  void *dl; /* dlopen's handle */
  int fd;   /* the memfd it was opened from, open while it is loaded (module.c); -1: none */
  const t4a_hk_module *m;
  char name[64];
} t4a__hmodule;

typedef struct t4a__hfunc {
  t4a__hslot h;
  const t4a_hk_kernel *k;
  uint32_t module;      /* index of its module */
  uint32_t max_dynamic; /* dynamic shared memory allowed now (the same in every handle of k) */
  uint32_t args_bytes;  /* a launch record's parameter bytes (each parameter aligned) */
  char name[64];
} t4a__hfunc;

void t4a__hkernels_init(t4a__hrt *rt);
/* Destroy (the queue has stopped): dlcloses every module. */
void t4a__hkernels_fini(t4a__hrt *rt);
/* Validates a function handle of rt. */
int t4a__hfunc_get(t4a__hrt *rt, t4a_function h, const char *what, t4a__hfunc **out);

/* ---- launch.c: a launch record ----------------------------------------------- */

/* One launch as the queue runs it: the kernel, the geometry, and the
 * parameters copied at the call. One allocation: the record, then
 * param_count pointers (l.args), then the parameter bytes. A queued launch
 * owns its record (the worker frees it once run); a captured one belongs to
 * its graph. */
typedef struct t4a__hklaunch {
  const t4a_hk_kernel *k;
  t4a_hk_launch l;
  int32_t stop;    /* l.stop points here; reset before each run */
  uint64_t blocks; /* grid.x * grid.y * grid.z */
  uint64_t bytes;  /* of the whole allocation */
  char name[64];   /* the kernel's, for the fault message */
  /* Launched on a checked runtime: its threads' memory faults go to the
   * module's fault_here (check.c), the canaries are checked after it. */
  bool checked;
  void (*fault_here)(int32_t kind, const char *message);
} t4a__hklaunch;

/* A copy of r (for a graph whose replays are still queued); NULL when
 * memory is short. */
t4a__hklaunch *t4a__hklaunch_clone(const t4a__hklaunch *r);

/* Replaces r's parameters with copies of *args[i] (graph_set_kernel_args;
 * T4A_EINVAL naming `what` for a missing one, nothing changed). */
int t4a__hklaunch_set_args(t4a__hklaunch *r, void **args, const char *what);

/* ---- pool.c ------------------------------------------------------------------ */

/* Runs every block of r (on the caller, the runtime's worker, and the
 * pool's threads) and returns once all ran: T4A_OK, or T4A_EDEVICEFAULT
 * after a block faulted (the device's fault is set, fault.c). */
int t4a__hk_execute(t4a__hklaunch *r);

/* Plugin teardown: the pool's threads leave and are joined; every
 * thread's stacks and shared memory are unmapped. */
void t4a__hk_pool_unload(void);

/* The pool's threads (started or not): T4A_HOST_THREADS, else the online
 * CPUs less one (the runtime's worker runs blocks too). */
uint32_t t4a__hk_pool_size(void);

/* ---- check.c: checked mode (T4A_HOST_CHECK=1) ----------------------------------- */

/* Whether T4A_HOST_CHECK is "1" (never in setuid processes): read at each
 * runtime_create (the runtime's buffers and launches) and artifact_compile
 * (kernels built with -DT4A_HK_CHECKED, under their own cache key). */
bool t4a__hcheck_env(void);
/* The SIGSEGV/SIGBUS handler, installed once; false if sigaction failed. */
bool t4a__hcheck_install(void);
/* Plugin unload: the previous handlers back (if ours is still installed). */
void t4a__hcheck_unload(void);
/* The calling thread runs blocks of a checked launch from now on (faults
 * on it go to fault_here), on its signal stack *alt (mapped on first use,
 * freed by t4a__hcheck_free_alt); _leave: no longer. */
void t4a__hcheck_enter(void **alt, void (*fault_here)(int32_t kind, const char *message));
void t4a__hcheck_leave(void);
void t4a__hcheck_free_alt(void *alt);
/* true when every watched buffer's canaries are intact, else false with
 * what was overwritten in message. */
bool t4a__hcheck_canaries(char *message, size_t n);

/* ---- fault.c: the device's sticky fault ---------------------------------------- */

/* Nonzero once a kernel faulted: every runtime's slots return
 * T4A_EDEVICEFAULT from then on (plugin-host/host.h, t4a__hrt_lock). */
extern atomic_int t4a__hfaulted;

/* Records the first fault's message (later ones are dropped) and makes the
 * device faulted. */
void t4a__hfault_set(const char *message);
/* The first fault's message ("" when none). */
const char *t4a__hfault_message(void);

#endif
