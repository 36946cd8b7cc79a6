/* tools/conform.h -- the conformance suite of `t4a-gpu conform`: the promises
 * of abi/t4a/gpu_backend_v1.h checked through the public table only, so that
 * any backend (CUDA, HIP, Metal, a CPU backend) can run it.
 *
 * Files, top to bottom (none calls one above it, see test_layering.sh):
 *   conform.c             the runner: phases, the registry of checks, the report
 *   conform_backend.c     the table, get_info, the init gate, init, devices
 *   conform_runtime.c     runtimes, device and pinned memory, the raw seam
 *   conform_transfer.c    copies within and between runtimes
 *   conform_completion.c  seal, witnesses, deferred frees and unloads
 *   conform_code.c        artifacts from bytes and from the compiler
 *   conform_launch.c      modules, functions, launch geometry
 *   conform_errors.c      handles, last_error, struct_size rules
 *   conform_threads.c     several threads at once
 *   conform_memory.c      ABI 1.2: the memory budget, fork() detection
 *   conform_kernels.c     the kernels (PTX or compiled) the checks run
 *   conform_util.c        what checks share: results, tracked objects, gates
 *
 * A check is a function with a name ("transfer.pageable_round_trip"), the
 * header promise it checks, the slots it needs (a NULL one skips it) and the
 * phase it runs in. It reports through the helpers below: the first failure
 * is its detail; a skip says why. Every object a check creates is tracked and
 * released exactly once when the check ends, failed or not. */
#ifndef T4A_TOOLS_CONFORM_H
#define T4A_TOOLS_CONFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/cli.h"

/* When a check runs. */
enum {
  T4A__CF_PRE_INIT,    /* before init(): the uninitialised backend */
  T4A__CF_INIT_FAILED, /* after init() failed: the failure is final and replayed */
  T4A__CF_INIT,        /* after init() succeeded, before any runtime exists */
  T4A__CF_DEVICE       /* with runtimes on the chosen device */
};

enum { T4A__CF_PASS, T4A__CF_FAIL, T4A__CF_SKIP };

typedef struct t4a__cf t4a__cf;

typedef struct t4a__cf_check {
  const char *name;    /* "area.what" */
  const char *promise; /* the header's words (quoted or paraphrased) */
  const char *needs;   /* the slots it calls, space-separated */
  int phase;           /* T4A__CF_* */
  void (*fn)(t4a__cf *c);
} t4a__cf_check;

/* Kernels every backend that runs code gets, from PTX bytes or compiled:
 * t4a_spin(const volatile uint32_t *flag) returns once *flag != 0;
 * t4a_fill_u32(uint32_t *p, uint32_t value, uint64_t n) sets p[0 .. n). */
typedef struct t4a__cf_kernels {
  t4a_module module;
  t4a_function spin, fill;
} t4a__cf_kernels;

/* A closed gate: t4a_spin on a runtime's stream, so that work enqueued after
 * it waits until the gate opens. A watchdog opens it after a while, so a
 * backend that blocks where the header says it must not makes the check
 * fail instead of hanging the suite. */
typedef struct t4a__cf_gate t4a__cf_gate;

/* The run, shared by every check. */
struct t4a__cf {
  const t4a_gpu_backend_v1 *t;
  const options *o;
  int32_t device;                  /* the device checked */
  int32_t device_count;            /* after init */
  t4a_device_info dev;             /* of `device` */
  t4a_compiler_info ci;            /* read after init */
  bool compiler;                   /* ci says the compiler is available */
  t4a_artifact code;               /* the kernels' artifact (null: no way to run code) */
  char code_why[512];              /* how code was obtained, or why there is none */
  int init_status;                 /* what the first init() returned */
  char init_detail[512];           /* and its detail */
  char init_disagree[300];         /* how the first init's concurrent calls disagreed, or "" */
  t4a_artifact deferred;           /* a pre-init artifact its backend releases only after init */
  t4a_artifact_kind deferred_kind; /* its kind: PTX, or the backend's own (host) */
  /* the current check */
  const t4a__cf_check *check;
  int result;
  unsigned failures;
  char detail[1024];
  char also[4][300]; /* the next failures after the first */
  uint64_t seed;
  struct t4a__cf_obj *objs;
  size_t nobjs, capobjs;
};

/* ---- results ----------------------------------------------------------------- */

/* Records a failure (the first one is the check's detail). Returns false. */
bool t4a__cf_fail(t4a__cf *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Marks the check skipped, saying why (unless it already failed). */
void t4a__cf_skip(t4a__cf *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whether `rc` is T4A_OK; else a failure naming `what` and the backend's
 * detail. */
bool t4a__cf_ok(t4a__cf *c, int rc, const char *what);

/* Whether `rc` is `want` or `also` (pass the same twice for one status).
 * For a failure status it also checks the header's error rules: last_error
 * on this thread reports that status with a "<what failed>; <what to do>"
 * message (T4A_ENOTREADY, witness_query's "not yet", is an answer, not a
 * failure). */
bool t4a__cf_expect(t4a__cf *c, int rc, int want, int also, const char *what);

/* Whether `rc` is `want`, nothing more: for a status returned on another
 * thread (whose last_error this thread cannot read). */
bool t4a__cf_status(t4a__cf *c, int rc, int want, const char *what);

/* Whether cond holds; else the failure fmt. */
bool t4a__cf_true(t4a__cf *c, bool cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CF_OK(call) t4a__cf_ok(c, (call), #call)
#define CF_EXPECT(call, status) t4a__cf_expect(c, (call), (status), (status), #call)
#define CF_EXPECT2(call, s1, s2) t4a__cf_expect(c, (call), (s1), (s2), #call)
#define CF_STATUS(rc, status) t4a__cf_status(c, (rc), (status), #rc)
#define CF_TRUE(cond, ...) t4a__cf_true(c, (cond), __VA_ARGS__)

/* The calling thread's last_error (message copied into buf). */
int t4a__cf_last_error(const t4a_gpu_backend_v1 *t, char *buf, size_t size);

/* ---- data ---------------------------------------------------------------------- */

/* Deterministic pseudo-random bytes from *seed (advanced). */
void t4a__cf_random(void *p, size_t n, uint64_t *seed);

/* Index of the first byte where a and b differ, or n. */
size_t t4a__cf_diff(const void *a, const void *b, size_t n);

/* Monotonic clock, nanoseconds. */
uint64_t t4a__cf_now_ns(void);

/* Host memory freed when the check ends (a failure when it cannot be had). */
void *t4a__cf_mem(t4a__cf *c, size_t n);

/* ---- tracked objects --------------------------------------------------------------
 * Made here, released when the check ends, in reverse order, each once. A
 * check that releases one itself (to check the status) says so with
 * t4a__cf_forget; destroying a runtime forgets what it owned. */
enum {
  T4A__CF_RUNTIME = 1,
  T4A__CF_BUFFER,
  T4A__CF_HOST,
  T4A__CF_WITNESS,
  T4A__CF_ARTIFACT,
  T4A__CF_MODULE,
  T4A__CF_MEM,
  T4A__CF_GATE
};

/* Whether it is tracked; if not (no memory), it was released at once. */
bool t4a__cf_track(t4a__cf *c, int kind, uint64_t rt, uint64_t h, void *p);
void t4a__cf_forget(t4a__cf *c, uint64_t h);

/* Creating: null handles (and a recorded failure) when the call fails. */
t4a_runtime t4a__cf_runtime(t4a__cf *c, int32_t device, const t4a_runtime_options *o);
t4a_buffer t4a__cf_buffer(t4a__cf *c, t4a_runtime rt, uint64_t bytes);
t4a_host_buffer t4a__cf_host(t4a__cf *c, t4a_runtime rt, uint64_t bytes, void **ptr);
t4a_witness t4a__cf_seal(t4a__cf *c, t4a_runtime rt);

/* Releasing now (status checked), and forgetting. */
bool t4a__cf_destroy(t4a__cf *c, t4a_runtime rt);
bool t4a__cf_free(t4a__cf *c, t4a_runtime rt, t4a_buffer b);
bool t4a__cf_release(t4a__cf *c, t4a_witness w);

/* Waits for w (at most a minute: a hang is a failure, not a stuck suite). */
bool t4a__cf_wait(t4a__cf *c, t4a_witness w);

/* Seals rt, waits and releases the witness. */
bool t4a__cf_sync(t4a__cf *c, t4a_runtime rt);

/* Writes `bytes` of data at `off` of b (pageable) and reads them back;
 * whether they came back bit-exact. */
bool t4a__cf_round_trip(t4a__cf *c, t4a_runtime rt, t4a_buffer b, uint64_t off, uint64_t bytes);

/* Reads n 32-bit words of b back; whether every one is `value`. */
bool t4a__cf_filled(t4a__cf *c, t4a_runtime rt, t4a_buffer b, uint32_t value, uint64_t n);

/* Releases everything the check still holds (gates opened first). */
void t4a__cf_cleanup(t4a__cf *c);

/* ---- code ------------------------------------------------------------------------ */

/* Whether the run has kernels; else skips the check (saying why). */
bool t4a__cf_need_code(t4a__cf *c);

/* Loads the kernels into rt (a tracked module). */
bool t4a__cf_kernels_load(t4a__cf *c, t4a_runtime rt, t4a__cf_kernels *k);

/* Enqueues t4a_fill_u32 over the first n words of b. Returns the status. */
int t4a__cf_fill(t4a__cf *c, t4a_runtime rt, const t4a__cf_kernels *k, t4a_buffer b, uint32_t value,
                 uint64_t n);

/* Closes a gate on rt (NULL on failure). */
t4a__cf_gate *t4a__cf_gate_close(t4a__cf *c, t4a_runtime rt, const t4a__cf_kernels *k);

/* Opens it; whether it was still closed (false: the watchdog had to open it,
 * a failure recorded: something blocked behind the gated work). */
bool t4a__cf_gate_open(t4a__cf *c, t4a__cf_gate *g);

/* Runs fn(arg) on another thread and waits at most `seconds` for it;
 * whether it returned in time. If it did not, opens every gate of the check
 * (so it can finish), joins it and records a failure naming `what`. */
bool t4a__cf_within(t4a__cf *c, double seconds, void (*fn)(void *), void *arg, const char *what);

/* Finds a way to run code on c->device, for the whole run: the kernels as PTX
 * through artifact_from_bytes, else compiled (artifact_compile); sets c->code
 * and c->code_why. t4a__cf_code_release releases it at the end. */
void t4a__cf_code_setup(t4a__cf *c);
void t4a__cf_code_release(t4a__cf *c);

/* The PTX text of the kernels (for artifact_from_bytes). */
const char *t4a__cf_ptx(void);

/* CUDA C source of the same kernels and of t4a_axpy_f32 (for artifact_compile). */
const char *t4a__cf_source(void);

/* The first init(), called on several threads at once ("concurrent callers
 * see one initialisation"): sets init_status, init_detail, init_disagree
 * (conform_backend.c). Returns init_status. */
int t4a__cf_first_init(t4a__cf *c);

/* ---- the checks of each area ------------------------------------------------------ */

extern const t4a__cf_check t4a__cf_backend_checks[];
extern const size_t t4a__cf_backend_count;
extern const t4a__cf_check t4a__cf_runtime_checks[];
extern const size_t t4a__cf_runtime_count;
extern const t4a__cf_check t4a__cf_transfer_checks[];
extern const size_t t4a__cf_transfer_count;
extern const t4a__cf_check t4a__cf_completion_checks[];
extern const size_t t4a__cf_completion_count;
extern const t4a__cf_check t4a__cf_code_checks[];
extern const size_t t4a__cf_code_count;
extern const t4a__cf_check t4a__cf_launch_checks[];
extern const size_t t4a__cf_launch_count;
extern const t4a__cf_check t4a__cf_errors_checks[];
extern const size_t t4a__cf_errors_count;
extern const t4a__cf_check t4a__cf_threads_checks[];
extern const size_t t4a__cf_threads_count;
extern const t4a__cf_check t4a__cf_memory_checks[];
extern const size_t t4a__cf_memory_count;

#endif
