/* tools/conform_memory.c -- conformance checks of what ABI 1.2 added for
 * memory and processes: the memory budget and its out-of-memory callback,
 * the allocation log, the process slots' promises, and fork() detection. A backend of an older
 * minor skips them (saying so). */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/conform.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Skips a check on a backend older than ABI 1.2; true when it may run. */
static bool v1_2(t4a__cf *c, const char *what) {
  if (c->t->abi_minor >= 2)
    return true;
  t4a__cf_skip(c, "the backend speaks ABI 1.%u: %s came with 1.2", c->t->abi_minor, what);
  return false;
}

/* ---- the memory budget ---------------------------------------------------------- */

typedef struct oom {
  const t4a_gpu_backend_v1 *t;
  int calls;
  t4a_out_of_memory_info info;
  pthread_t self;
  bool same_thread;
  int other_rc; /* what another thread's runtime_counters returned meanwhile */
  int other_done;
} oom;

static void *oom_other(void *arg) {
  oom *o = arg;
  t4a_runtime_counters k = {.struct_size = sizeof k};
  o->other_rc = o->t->runtime_counters(o->info.runtime, &k);
  __atomic_store_n(&o->other_done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* Refuses; checks that another thread can call the runtime meanwhile (5 s:
 * a runtime lock held across the callback would block it until after). */
static int oom_refuse(const t4a_out_of_memory_info *info, void *user) {
  oom *o = user;
  o->calls++;
  o->info = *info;
  o->same_thread = pthread_equal(pthread_self(), o->self) != 0;
  pthread_t th;
  if (pthread_create(&th, NULL, oom_other, o) == 0) {
    for (int i = 0; i < 5000 && !__atomic_load_n(&o->other_done, __ATOMIC_SEQ_CST); i++)
      pause_ms(1);
    pthread_detach(th); /* done, or blocked until the callback returns */
  }
  return T4A_OUT_OF_MEMORY_FAIL;
}

static void budget(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!v1_2(c, "the budget"))
    return;
  static oom o; /* static: a helper thread blocked past the check still has it */
  memset(&o, 0, sizeof o);
  o.t = t;
  o.self = pthread_self();
  t4a_runtime_options opts;
  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.pool_limit_bytes = MIB;
  opts.out_of_memory = oom_refuse;
  opts.out_of_memory_user = &o;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, &opts);
  t4a_buffer x = rt.bits ? t4a__cf_buffer(c, rt, 768 * KIB) : (t4a_buffer){0};
  if (!x.bits)
    return;
  t4a_buffer y = {0};
  CF_EXPECT(t->buffer_alloc(rt, 512 * KIB, &y), T4A_ENOMEM);
  for (int i = 0; i < 5000 && o.calls && !__atomic_load_n(&o.other_done, __ATOMIC_SEQ_CST); i++)
    pause_ms(1);
  CF_TRUE(o.calls == 1, "the out-of-memory callback was called %d times, want once", o.calls);
  CF_TRUE(!o.calls || (o.info.reason == T4A_OUT_OF_MEMORY_LIMIT && o.info.runtime.bits == rt.bits &&
                       o.info.bytes_wanted == 512 * KIB && o.info.limit_bytes == MIB),
          "the callback was told reason %u, %llu bytes wanted, limit %llu; want "
          "T4A_OUT_OF_MEMORY_LIMIT, 524288, 1048576",
          o.info.reason, (unsigned long long)o.info.bytes_wanted,
          (unsigned long long)o.info.limit_bytes);
  CF_TRUE(!o.calls || o.same_thread, "the callback ran on another thread than buffer_alloc's");
  CF_TRUE(!o.calls || (o.other_done && o.other_rc == T4A_OK),
          "another thread's runtime_counters %s while the callback ran (a lock held across it?)",
          o.other_done ? "failed" : "blocked");
  /* the cache is trimmed before anything is refused: a freed block makes room */
  if (!t4a__cf_free(c, rt, x))
    return;
  y = t4a__cf_buffer(c, rt, 1000 * KIB);
  if (y.bits)
    t4a__cf_round_trip(c, rt, y, 0, 1000 * KIB);
  CF_TRUE(o.calls == 1, "the callback was called for an allocation the cache made room for");
}

/* ---- the allocation log --------------------------------------------------------- */

static void alloc_log(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!v1_2(c, "the allocation log"))
    return;
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_ALLOC_LOG;
  o.alloc_log_events = 16;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, &o), plain = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer a = rt.bits ? t4a__cf_buffer(c, rt, 1000) : (t4a_buffer){0};
  if (!a.bits || !plain.bits || !t4a__cf_free(c, rt, a))
    return;
  t4a_buffer b = t4a__cf_buffer(c, rt, 1000); /* the same class: from the cache */
  if (!b.bits)
    return;
  t4a_alloc_event ev[8];
  uint32_t n = 0;
  uint64_t next = 0;
  if (!CF_OK(t->alloc_log_read(rt, 0, ev, 8, &n, &next)))
    return;
  CF_TRUE(n == 3 && next == 3, "%u events read (next %llu) after alloc, free, alloc; want 3", n,
          (unsigned long long)next);
  if (n == 3)
    CF_TRUE(ev[0].seq == 0 && ev[0].kind == T4A_ALLOC_EVENT_ALLOC && ev[0].buffer == a.bits &&
                ev[0].bytes == 1000 && ev[1].kind == T4A_ALLOC_EVENT_FREE &&
                ev[1].buffer == a.bits && ev[2].kind == T4A_ALLOC_EVENT_REUSE &&
                ev[2].buffer == b.bits && ev[2].seq == 2 && ev[2].time_ns >= ev[0].time_ns,
            "the events are not ALLOC, FREE, REUSE of the two buffers, numbered 0..2 in time "
            "order (kinds %u %u %u)",
            ev[0].kind, ev[1].kind, ev[2].kind);
  CF_EXPECT(t->alloc_log_read(plain, 0, ev, 8, &n, &next), T4A_EUNSUPPORTED);
}

/* ---- processes ------------------------------------------------------------------ */

static void processes(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!v1_2(c, "processes"))
    return;
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_IPC;
  t4a_runtime ipc = {0};
  int rc = t->runtime_create(c->device, &o, &ipc);
  if (rc == T4A_OK)
    t4a__cf_track(c, T4A__CF_RUNTIME, 0, ipc.bits, NULL);
  if (!t->buffer_export_ipc || !t->buffer_import_ipc || !t->witness_export_ipc ||
      !t->runtime_wait_ipc_witness) { /* "leaves the four slots NULL and refuses" the flag */
    CF_TRUE(!t->buffer_export_ipc && !t->buffer_import_ipc && !t->witness_export_ipc &&
                !t->runtime_wait_ipc_witness,
            "the backend fills some process slots and leaves others NULL");
    CF_EXPECT(rc, T4A_EUNSUPPORTED);
    return;
  }
  t4a_runtime plain = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = plain.bits ? t4a__cf_buffer(c, plain, 4096) : (t4a_buffer){0};
  if (!b.bits)
    return;
  t4a_ipc_buffer x;
  t4a_ipc_witness xw;
  int fd = 7;
  CF_EXPECT(t->buffer_export_ipc(plain, b, &x, &fd), T4A_EUNSUPPORTED);
  CF_TRUE(fd == -1, "a refused buffer_export_ipc left *pool_fd %d, want -1", fd);
  memset(&x, 0x5a, sizeof x);
  memset(&xw, 0x5a, sizeof xw);
  t4a_buffer out;
  CF_EXPECT(t->buffer_import_ipc(plain, &x, -1, &out), T4A_EINVAL);
  CF_EXPECT(t->runtime_wait_ipc_witness(plain, &xw), T4A_EINVAL);
  if (rc == T4A_EUNSUPPORTED) {
    t4a__cf_skip(c, "runtime_create refuses T4A_RUNTIME_IPC here (the device or driver cannot "
                    "share pools); the refusals were checked");
    return;
  }
  if (!CF_OK(rc))
    return;
  t4a_buffer a = t4a__cf_buffer(c, ipc, 4096);
  if (!a.bits || !CF_OK(t->buffer_export_ipc(ipc, a, &x, &fd)))
    return;
  CF_TRUE(fd >= 0, "buffer_export_ipc gave no pool descriptor (%d)", fd);
  if (fd >= 0)
    close(fd);
  t4a__cf_round_trip(c, ipc, a, 0, 4096);
  t4a_witness w = t4a__cf_seal(c, ipc);
  if (!w.bits || !t4a__cf_wait(c, w) || !CF_OK(t->witness_export_ipc(w, &xw)))
    return;
  /* a completed witness's export: nothing to wait for, in any runtime */
  CF_OK(t->runtime_wait_ipc_witness(plain, &xw));
  t4a__cf_round_trip(c, plain, b, 0, 4096);
}

/* ---- fork() ------------------------------------------------------------------- */

/* In the child: slots on the parent's runtime, witness and backend. */
static int forked_child(const t4a_gpu_backend_v1 *t, t4a_runtime rt, t4a_buffer b, t4a_witness w) {
  t4a_runtime r2;
  t4a_witness w2;
  uint64_t size;
  unsigned char byte = 0;
  int got[] = {t->init(),
               t->runtime_create(0, NULL, &r2),
               t->buffer_size(rt, b, &size),
               t->copy_h2d(rt, b, 0, &byte, 1),
               t->seal(rt, &w2),
               t->witness_wait(w, 0),
               t->witness_release(w),
               t->runtime_destroy(rt, 0)};
  for (size_t i = 0; i < sizeof got / sizeof got[0]; i++)
    if (got[i] != T4A_EFORKED)
      return 10 + (int)i;
  t4a_error_info e = {.struct_size = sizeof e};
  if (t->last_error(&e) != T4A_OK || e.status != T4A_EFORKED || !strstr(e.message, "fork()"))
    return 2;
  return 0;
}

static void fork_refused(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!v1_2(c, "fork detection"))
    return;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = rt.bits ? t4a__cf_buffer(c, rt, 4096) : (t4a_buffer){0};
  if (!b.bits || !t4a__cf_round_trip(c, rt, b, 0, 4096))
    return;
  t4a_witness w = t4a__cf_seal(c, rt);
  if (!w.bits || !t4a__cf_wait(c, w))
    return;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    t4a__cf_fail(c, "fork failed");
    return;
  }
  if (pid == 0) {
    /* the child's own stderr goes nowhere: what a sanitizer's exit check
     * says of the threads the child lacks must not land in the parent's
     * output (a --json document among it) */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
      (void)dup2(null, 2);
    exit(forked_child(t, rt, b, w)); /* exit: the plugin's teardown runs in the child too */
  }
  int status = 0;
  pid_t r = 0;
  for (int i = 0; i < 20000 && (r = waitpid(pid, &status, WNOHANG)) == 0; i++)
    pause_ms(1);
  if (r == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  CF_TRUE(r != 0, "a slot called in a forked child (or its exit) hung for 20 s");
  CF_TRUE(r == 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "in a forked child %s (exit %d: 10 + the call's index in init, runtime_create, "
          "buffer_size, copy_h2d, seal, witness_wait, witness_release, runtime_destroy; 2: "
          "last_error; a signal: >= 128)",
          "a slot did not return T4A_EFORKED naming fork()",
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  /* the parent is unaffected */
  t4a__cf_round_trip(c, rt, b, 0, 4096);
  CF_OK(t->witness_wait(w, 0));
}

#define DEV T4A__CF_DEVICE

const t4a__cf_check t4a__cf_memory_checks[] = {
    {"memory.budget",
     "pool_limit_bytes (v1.2): an allocation that would pass it is T4A_ENOMEM after the "
     "runtime's cache was trimmed and its out-of-memory callback called once, on the "
     "allocating thread, with no lock held",
     "runtime_create runtime_destroy buffer_alloc buffer_free copy_h2d copy_d2h", DEV, budget},
    {"memory.alloc_log",
     "alloc_log_read (v1.2): the events of a T4A_RUNTIME_ALLOC_LOG runtime's allocations and "
     "frees, numbered from 0, oldest first; a runtime without the flag: T4A_EUNSUPPORTED",
     "runtime_create runtime_destroy buffer_alloc buffer_free alloc_log_read", DEV, alloc_log},
    {"processes.refusals",
     "processes (v1.2): buffer_export_ipc of a runtime without T4A_RUNTIME_IPC is "
     "T4A_EUNSUPPORTED (*pool_fd -1); bytes that are no export are T4A_EINVAL; an IPC runtime "
     "exports a buffer with its pool's descriptor and a completed witness, which any runtime "
     "waits on at once; a backend without processes leaves the four slots NULL and refuses "
     "the flag",
     "runtime_create runtime_destroy buffer_alloc buffer_free copy_h2d copy_d2h seal "
     "witness_wait witness_release",
     DEV, processes},
    {"backend.fork",
     "fork() (v1.2): in a child every slot but last_error and get_info on a backend the parent "
     "set up returns T4A_EFORKED, touching nothing; the parent is unaffected",
     "init runtime_create runtime_destroy buffer_alloc buffer_size copy_h2d copy_d2h seal "
     "witness_wait witness_release last_error",
     DEV, fork_refused},
};
const size_t t4a__cf_memory_count = sizeof t4a__cf_memory_checks / sizeof t4a__cf_memory_checks[0];
