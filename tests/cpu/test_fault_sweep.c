/* tests/cpu/test_fault_sweep.c -- fault injection on every driver call, on a
 * deterministic schedule, checking what each failure yields.
 *
 * The schedule. The fake driver runs serialised (FAKE_CUDA_SERIAL: every
 * enqueue returns once its operation ran, so no poll depends on timing)
 * and numbers every call of every entry point in the order it sees them;
 * FAKE_CUDA_FAIL_CALL="N:code,M:code" fails the Nth and Mth. The scenario
 * (runtimes on two devices, memory, pinned memory, every kind of copy,
 * memset and a 2D copy, code and launch, seal and wait, free, destroy, and
 * the plugin's unload) makes the same calls in the same order in every
 * run: the test asserts that two clean runs trace the same calls and that
 * every run up to its first failure traces the clean run's prefix.
 *
 * Each run is a fresh process (a device fault is for the life of the
 * process). In each, every table call of the scenario is a step whose
 * status is checked:
 *   - the step during which an injected call failed returns the status
 *     docs/design.md's failure table maps the code to (999 -> T4A_EDRIVER,
 *     2 -> T4A_ENOMEM, 700 -> T4A_EDEVICEFAULT), and last_error names the
 *     native code; the exceptions are the failures the design absorbs
 *     (`absorbed` below, each with its reason);
 *   - after a non-sticky failure every later step returns T4A_OK, and a
 *     fresh round trip on every runtime (h2d, d2d, a kernel writing half,
 *     d2h) is bit-exact;
 *   - after a sticky one (700), every runtime of the faulted device
 *     reports T4A_EDEVICEFAULT (probed after each step through raw_runtime,
 *     which makes no driver call), runtimes of the other device stay OK;
 *   - leaks, every run: before and after each runtime_destroy and after the
 *     plugin's unload the test reads the fake's live objects per device. A
 *     quarantined runtime (destroyed after a fault, or whose drain failed)
 *     releases exactly its idle pinned cache and its completion events and
 *     keeps its device memory, stream, pool, modules and the rest of its
 *     pinned memory; what the quarantined runtimes of a device keep matches
 *     their counters (staging, live host buffers, pending retirements,
 *     modules held); a device without a quarantined runtime ends with
 *     nothing live but the spare parts of idle destroys (when the plugin
 *     stays loaded) and the object of each failed release; the plugin
 *     stays loaded exactly when something was kept; the fake saw no
 *     violation.
 *
 * Which calls fail. Phase 1: every call N of the clean run, with each of
 * 999, 2 and 700. Phase 2, two failures per run: for every phase-1 run, its
 * first failure N together with each call M that followed N within the
 * failing step (the undo path) and with every call that run made beyond
 * the clean run's count of that entry point (error-path-only calls: extra
 * synchronisations, the round trip's work, releases after a fault, ...),
 * with the same code. Phase 2 is sampled to keep `make check` within its
 * budget (about 60 s on CI's two cores): per (entry point, code) pair at
 * most SAMPLE second failures, the ones at the start of each undo path
 * first; T4A_SWEEP_FULL=1 runs every pair (several minutes).
 *
 * Reproduce one run: T4A_SWEEP_ONE=1 FAKE_CUDA_FAIL_CALL=N:code[,M:code]
 * tests/cpu/test_fault_sweep (it prints each step). */
#include "config.h"

#include <dlfcn.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/runtime/rtutil.h"

#define MAX_CALLS 4096 /* of one run; the clean run makes a few hundred */
#define MAX_NAMES 128
#define SAMPLE 12 /* phase 2: second failures per (entry point, code) pair */

/* ---- the fake driver's controls (in a run's process) --------------------------------- */

static struct {
  uint64_t (*total)(void);
  const char *(*name)(uint64_t);
  int (*device)(uint64_t);
  uint64_t (*live_on)(const char *, int);
  unsigned (*device_fault)(int);
  uint64_t (*violations)(void);
} F;

static void controls(void) {
  void *h = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    return;
  *(void **)&F.total = dlsym(h, "fake_cuda_call_total");
  *(void **)&F.name = dlsym(h, "fake_cuda_call_name");
  *(void **)&F.device = dlsym(h, "fake_cuda_call_device");
  *(void **)&F.live_on = dlsym(h, "fake_cuda_live_on");
  *(void **)&F.device_fault = dlsym(h, "fake_cuda_device_fault");
  *(void **)&F.violations = dlsym(h, "fake_cuda_violations");
  dlclose(h);
}

/* Driver objects the fake counts, per device. */
#define KINDS 8
static const char *const kinds[KINDS] = {"device", "host",   "stream",  "event",
                                         "pool",   "module", "context", "pooled"};
enum { K_DEVICE, K_HOST, K_STREAM, K_EVENT, K_POOL, K_MODULE, K_CONTEXT, K_POOLED };
#define DEVS 2
typedef struct ledger {
  int64_t n[DEVS][KINDS];
} ledger;

static ledger ledger_now(void) {
  ledger l;
  for (int d = 0; d < DEVS; d++)
    for (int k = 0; k < KINDS; k++)
      l.n[d][k] = F.live_on ? (int64_t)F.live_on(kinds[k], d) : 0;
  return l;
}

static int64_t ledger_all(const ledger *l, int k) { return l->n[0][k] + l->n[1][k]; }

/* The parts a spare keeps (spare.c): its stream, its empty pool, its
 * staging block with one event per chunk (2: 256 KiB in two chunks) and
 * its context reference. */
static const int64_t spare_parts[KINDS] = {0, 1, 1, 2, 1, 0, 1, 0};
#define STAGING_EVENTS 2

/* A release call that fails keeps its object (the design's failure table);
 * which kind each releases. */
static int released_kind(const char *entry) {
  static const struct {
    const char *name;
    int kind;
  } r[] = {{"cuMemFreeAsync", K_DEVICE},
           {"cuMemFree", K_DEVICE},
           {"cuMemFreeHost", K_HOST},
           {"cuMemHostUnregister", K_HOST},
           {"cuStreamDestroy", K_STREAM},
           {"cuEventDestroy", K_EVENT},
           {"cuMemPoolDestroy", K_POOL},
           {"cuModuleUnload", K_MODULE},
           {"cuDevicePrimaryCtxRelease", K_CONTEXT}};
  for (size_t i = 0; entry && i < sizeof r / sizeof r[0]; i++)
    if (strcmp(entry, r[i].name) == 0)
      return r[i].kind;
  return -1;
}

/* ---- one run ------------------------------------------------------------------------- */

enum { RA, RB, RC, NRT }; /* runtimes: a and b on device 0, c on device 1 */
static const int rt_dev[NRT] = {0, 0, 1};

static struct run {
  const t4a_gpu_backend_v1 *t;
  bool verbose;
  unsigned code;     /* injected code (0: the clean run) */
  uint64_t inj[2];   /* global call numbers that fail (0: none) */
  uint64_t fail_end; /* the last call of the step during which inj[0] failed */
  t4a_runtime rt[NRT];
  bool faulted[NRT];      /* the plugin reports T4A_EDEVICEFAULT for it */
  bool failed;            /* a step failed by injection */
  bool peer_absorbed;     /* a failure setting up peer access, remembered for copy_from_peer */
  bool no_spare;          /* this destroy's pool could not be trimmed: no spare parts */
  bool kept_any;          /* the plugin kept an object whose release failed */
  ledger kept;            /* those objects, by device */
  bool dev_faulted[DEVS]; /* a runtime of the device reported a fault */
  bool dev_maybe[DEVS];   /* a runtime_create there failed with T4A_EDEVICEFAULT */
  struct snap {           /* taken just before a step's call */
    uint64_t calls;
    bool fake_fault[DEVS];
  } snap;
  int round_trips;
  t4a_artifact art;
  unsigned modules[NRT]; /* modules loaded and not unloaded, per runtime */
  int errors;
  char first_error[512];
} R;

__attribute__((format(printf, 1, 2))) static void bad(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!R.errors++)
    snprintf(R.first_error, sizeof R.first_error, "%s", msg);
  fprintf(stderr, "sweep: %s\n", msg);
}

static int mapped(unsigned code) {
  return code == 2 ? T4A_ENOMEM : code == 700 ? T4A_EDEVICEFAULT : T4A_EDRIVER;
}

/* entry may be NULL: a call past the fake's trace */
static bool is(const char *entry, const char *name) { return entry && strcmp(entry, name) == 0; }

/* Injected failures the design absorbs: the step still returns T4A_OK.
 * Each is a failure of something the step does besides its own work. */
static bool absorbed(const char *entry, unsigned code, const char *step) {
  /* device memory exhausted: buffer_alloc trims its cache, waits for its
   * stream and retries once (failure table, "Device memory exhausted") */
  if (code == 2 && is(entry, "cuMemAllocFromPoolAsync") && strstr(step, "buffer_alloc"))
    return true;
  /* peer access set up at runtime_create (lifecycle.c enable_peers,
   * memory.c grant_peers): a failure is remembered, or retried, and
   * reported by copy_from_peer */
  if (strstr(step, "runtime_create") &&
      (is(entry, "cuDeviceCanAccessPeer") || is(entry, "cuMemPoolSetAccess") ||
       is(entry, "cuCtxEnablePeerAccess") || is(entry, "cuCtxGetCurrent") ||
       is(entry, "cuCtxSetCurrent"))) {
    R.peer_absorbed = true;
    return true;
  }
  /* naming a driver error: the plugin names the code itself */
  if (is(entry, "cuGetErrorName"))
    return true;
  /* restoring the caller's context once the work is enqueued: the work
   * stands (an enter that failed would be reported, and one ignored would
   * run calls in the wrong context, which the strict fake counts as a
   * violation, checked at the end of every run) */
  if (is(entry, "cuCtxSetCurrent"))
    return true;
  /* runtime_destroy trims the pool it hands on as a spare part; when that
   * fails it destroys the pool (and releases the rest) instead */
  if (strstr(step, "runtime_destroy") && is(entry, "cuMemPoolTrimTo")) {
    R.no_spare = true;
    return true;
  }
  /* runtime_destroy orders its stream after other runtimes' copies from
   * its buffers; when that fails it waits for them on the host */
  if (strstr(step, "runtime_destroy") && is(entry, "cuStreamWaitEvent"))
    return true;
  /* a poll for completed work made in passing (retiring what it released):
   * the next call polls again; only the witness slots report completion */
  if (is(entry, "cuEventQuery") && !strstr(step, "witness_"))
    return true;
  /* a deferred module unload run in passing that could not make the
   * module's context current: the module is kept (counted by step) */
  if (is(entry, "cuCtxGetCurrent"))
    return true;
  /* a deferred release (a pinned block or module retired behind its work,
   * host_free, host_unregister, module_unload with work pending) run in
   * passing: the object is kept (counted by step) */
  if (is(entry, "cuModuleUnload") || is(entry, "cuMemFreeHost") || is(entry, "cuMemHostUnregister"))
    return true;
  return false;
}

static bool injected_in(uint64_t before, uint64_t after, uint64_t *which) {
  for (int i = 0; i < 2; i++)
    if (R.inj[i] > before && R.inj[i] <= after) {
      *which = R.inj[i];
      return true;
    }
  return false;
}

/* Probes every runtime for the plugin's view of faults (raw_runtime makes
 * no driver call and reports a fault like every runtime slot). Faults are
 * sticky, per device. */
static void probe(void) {
  for (int i = 0; i < NRT; i++) {
    if (!R.rt[i].bits)
      continue;
    t4a_raw_runtime raw = {.struct_size = sizeof raw};
    int rc = R.t->raw_runtime(R.rt[i], &raw);
    if (rc != T4A_OK && rc != T4A_EDEVICEFAULT)
      bad("probe of runtime %c: %s", 'a' + i, t4a_status_name(rc));
    if (R.faulted[i] && rc != T4A_EDEVICEFAULT)
      bad("runtime %c faulted, then raw_runtime returned %s: not sticky", 'a' + i,
          t4a_status_name(rc));
    R.faulted[i] = rc == T4A_EDEVICEFAULT;
    R.dev_faulted[rt_dev[i]] |= R.faulted[i];
  }
  for (int i = 0; i < NRT; i++)
    for (int j = 0; j < NRT; j++)
      if (R.rt[i].bits && R.rt[j].bits && rt_dev[i] == rt_dev[j] && R.faulted[i] != R.faulted[j])
        bad("runtime %c faulted and runtime %c of the same device not", 'a' + i, 'a' + j);
  for (int i = 0; i < NRT; i++)
    if (R.faulted[i] && F.device_fault && !F.device_fault(rt_dev[i]) && R.code != 700)
      bad("runtime %c reports a fault the driver never had", 'a' + i);
}

static bool touches_faulted(unsigned touch) {
  for (int i = 0; i < NRT; i++)
    if ((touch & (1u << i)) && R.faulted[i])
      return true;
  return false;
}

static int device_of(unsigned touch) {
  for (int i = 0; i < NRT; i++)
    if (touch & (1u << i))
      return rt_dev[i];
  return 0;
}

/* How a slot treats a faulted runtime. */
enum how {
  LOCK,    /* T4A_EDEVICEFAULT */
  ANY,     /* lock_any slots (frees, unloads, counters): OK or the fault */
  WITNESS, /* OK when the covered work completed before the fault */
  CREATE,  /* runtime_create on device `touch`: the fault when the device has one */
  NONE     /* no runtime: OK */
};

static void round_trips(void);

/* Checks a step's status; returns whether it succeeded. */
static bool step(const char *what, enum how how, unsigned touch, int rc) {
  struct snap pre = R.snap; /* before nested steps (round trips) take theirs */
  uint64_t before = pre.calls, after = F.total(), at = 0;
  bool injected = injected_in(before, after, &at);
  bool fault_before = how == CREATE ? pre.fake_fault[touch] || R.dev_faulted[touch]
                                    : touches_faulted(touch) && how != NONE;
  bool fault_unseen = false; /* the driver faulted the device, the plugin was not told yet */
  for (int i = 0; i < NRT; i++)
    fault_unseen |=
        how != NONE && how != CREATE && (touch & (1u << i)) && pre.fake_fault[rt_dev[i]];
  fault_unseen &= !fault_before;
  const char *entry = injected ? F.name(at) : NULL;
  if (R.verbose)
    printf("  %-40s calls %4llu..%-4llu %s%s%s\n", what, (unsigned long long)before + 1,
           (unsigned long long)after, t4a_status_name(rc), injected ? " <- " : "",
           entry ? entry : "");
  if (injected && at == R.inj[0])
    R.fail_end = after;
  for (uint64_t k = before + 1; R.verbose && injected && k <= after; k++)
    printf("      call %llu %s%s\n", (unsigned long long)k, F.name(k),
           k == R.inj[0] || k == R.inj[1] ? " (fails)" : "");
  bool absorb = injected && rc == T4A_OK && absorbed(entry, R.code, what);
  /* a second failure in the same step: what it implies (no spare parts,
   * a peer path unproven) is noted too */
  if (injected && rc == T4A_OK && at == R.inj[0] && R.inj[1] > before && R.inj[1] <= after)
    (void)absorbed(F.name(R.inj[1]), R.code, what);
  /* an injected release that failed in runtime_destroy, in runtime_create's
   * undo path or in passing keeps its object (a slot's own release that
   * fails is undone: the object stays with its owner); so does a block
   * whose reader destroy could not wait for, on the GPU or on the host */
  if (strstr(what, "runtime_destroy") && R.inj[1] > before && R.inj[1] <= after &&
      is(F.name(R.inj[1]), "cuEventSynchronize") && is(F.name(R.inj[0]), "cuStreamWaitEvent") &&
      R.inj[0] > before) {
    R.kept.n[device_of(touch)][K_DEVICE]++;
    R.kept_any = true;
  }
  for (int j = 0; j < 2; j++)
    if (R.inj[j] > before && R.inj[j] <= after && released_kind(F.name(R.inj[j])) >= 0 &&
        (absorb || strstr(what, "runtime_destroy") || strstr(what, "runtime_create"))) {
      int d = F.device(R.inj[j]);
      R.kept.n[d >= 0 && d < DEVS ? d : device_of(touch)][released_kind(F.name(R.inj[j]))]++;
      R.kept_any = true;
    }
  /* a deferred module unload run in passing that cannot make the module's
   * context current (cuCtxGetCurrent, or the entering cuCtxSetCurrent
   * right after it, failed) keeps the module */
  if (absorb && how != CREATE && !strstr(what, "runtime_create") &&
      (is(entry, "cuCtxGetCurrent") ||
       (is(entry, "cuCtxSetCurrent") && at > 1 && is(F.name(at - 1), "cuCtxGetCurrent")))) {
    R.kept.n[device_of(touch)][K_MODULE]++;
    R.kept_any = true;
  }
  /* module_unload that fails keeps the module (its functions are gone) */
  if (injected && rc != T4A_OK && strstr(what, "module_unload") && !fault_before) {
    R.kept.n[device_of(touch)][K_MODULE]++;
    R.kept_any = true;
  }
  if (how == CREATE && rc == T4A_EDEVICEFAULT)
    R.dev_maybe[touch] = true; /* marked faulted by the plugin, or not */
  bool ok;
  if (fault_before && how == CREATE)
    ok = rc == T4A_EDEVICEFAULT;
  else if (how == CREATE && R.dev_maybe[touch] && rc == T4A_EDEVICEFAULT)
    ok = true;
  else if (fault_before)
    ok = rc == T4A_EDEVICEFAULT || (how != LOCK && rc == T4A_OK) ||
         (injected && rc == mapped(R.code));
  else if (injected)
    ok = rc == mapped(R.code) || absorb || (fault_unseen && rc == T4A_EDEVICEFAULT);
  else
    ok = rc == T4A_OK || (fault_unseen && rc == T4A_EDEVICEFAULT) ||
         (R.peer_absorbed && strcmp(what, "copy_from_peer") == 0 && rc == mapped(R.code));
  if (!ok)
    bad("%s: %s, want %s%s (call %llu %s failed with %u)", what, t4a_status_name(rc),
        fault_before ? "T4A_EDEVICEFAULT (a faulted runtime)"
        : injected   ? t4a_status_name(mapped(R.code))
                     : "T4A_OK",
        injected && !fault_before ? " (mapped from the injected code)" : "", (unsigned long long)at,
        entry ? entry : "-", R.code);
  if (injected && rc != T4A_OK && !fault_before && rc == mapped(R.code)) {
    t4a_error_info e = {.struct_size = sizeof e};
    R.t->last_error(&e);
    if (e.status != rc || e.native_code != (int64_t)R.code)
      bad("%s: last_error says %s native %lld, want %s native %u (%s)", what,
          t4a_status_name(e.status), (long long)e.native_code, t4a_status_name(rc), R.code,
          e.message);
  }
  if (rc == T4A_EDEVICEFAULT || (injected && R.code == 700))
    probe();
  if (injected && rc != T4A_OK) {
    R.failed = true;
    if (rc != T4A_EDEVICEFAULT)
      round_trips();
  }
  return rc == T4A_OK;
}

static int snap_take(void) {
  R.snap.calls = F.total();
  for (int d = 0; d < DEVS; d++)
    R.snap.fake_fault[d] = F.device_fault(d) != 0;
  return 0;
}

/* A step: the snapshot, then the call (the comma operator orders them). */
#define STEP(what, how, touch, call) step(what, how, touch, (snap_take(), (call)))

enum { A = 1u << RA, B_ = 1u << RB, C = 1u << RC };

/* A fresh round trip on every live runtime that did not fault: h2d of a
 * pattern, d2d into a second buffer, a kernel filling its first half, d2h;
 * bit-exact. At most two per run (one per injected failure). */
static void round_trip(int i) {
  const t4a_gpu_backend_v1 *t = R.t;
  t4a_runtime r = R.rt[i];
  unsigned me = 1u << i;
  enum { WORDS = 3001 }; /* not a multiple of anything */
  static uint32_t pat[WORDS], back[WORDS];
  for (uint32_t k = 0; k < WORDS; k++) {
    pat[k] = (k * 2654435761u) ^ (uint32_t)R.round_trips;
    back[k] = 0xdeadbeef;
  }
  t4a_buffer u = {0}, v = {0};
  t4a_module m = {0};
  t4a_function f = {0};
  bool all = STEP("round trip: buffer_alloc u", LOCK, me, t->buffer_alloc(r, sizeof pat, &u));
  all &= STEP("round trip: buffer_alloc v", LOCK, me, t->buffer_alloc(r, sizeof pat, &v));
  if (!all)
    goto out;
  all &= STEP("round trip: copy_h2d", LOCK, me, t->copy_h2d(r, u, 0, pat, sizeof pat));
  all &= STEP("round trip: copy_d2d", LOCK, me, t->copy_d2d(r, v, 0, u, 0, sizeof pat));
  if (R.art.bits && STEP("round trip: module_load", LOCK, me, t->module_load(r, R.art, &m))) {
    R.modules[i]++;
    uint64_t addr = 0, n = WORDS / 2;
    uint32_t value = 0x5eed0000u + (uint32_t)R.round_trips;
    void *args[] = {&addr, &value, &n};
    t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {2, 1, 1}, .block = {64, 1, 1}};
    all &= STEP("round trip: function_get", LOCK, me, t->function_get(r, m, "t4a_fill_u32", &f));
    all &=
        STEP("round trip: buffer_device_address", LOCK, me, t->buffer_device_address(r, v, &addr));
    if (f.bits && addr)
      all &= STEP("round trip: launch", LOCK, me, t->launch(r, f, &cfg, args));
    all &= STEP("round trip: copy_d2h", LOCK, me, t->copy_d2h(r, back, v, 0, sizeof pat));
    STEP("round trip: module_unload", ANY, me, t->module_unload(r, m));
    R.modules[i]--; /* the handle goes whatever the status */
    for (uint32_t k = 0; all && k < WORDS; k++)
      if (back[k] != (k < n ? value : pat[k])) {
        bad("round trip on runtime %c: word %u is %08x, want %08x", 'a' + i, k, back[k],
            k < n ? value : pat[k]);
        break;
      }
  }
out:
  if (u.bits)
    STEP("round trip: buffer_free u", LOCK, me, t->buffer_free(r, u));
  if (v.bits)
    STEP("round trip: buffer_free v", LOCK, me, t->buffer_free(r, v));
}

static void round_trips(void) {
  if (R.round_trips >= 2)
    return;
  R.round_trips++;
  for (int i = 0; i < NRT; i++)
    if (R.rt[i].bits && !R.faulted[i])
      round_trip(i);
}

/* The scenario: a bit of every area, each call a step. */
enum { SIZE = 256 * 1024 + 3 }; /* two staging chunks and a bit */
static unsigned char page[SIZE], want[SIZE];

static void scenario(void) {
  const t4a_gpu_backend_v1 *t = R.t;
  t4a_runtime *rt = R.rt;
  t4a_runtime_options o = {.struct_size = sizeof o, .staging_bytes = (uint64_t)256 * 1024};
  STEP("artifact_from_bytes", NONE, 0,
       t->artifact_from_bytes(T4A_ARTIFACT_PTX, rt_test_ptx(), strlen(rt_test_ptx()), "t", &R.art));
  for (int i = 0; i < NRT; i++)
    if (!STEP("runtime_create", CREATE, (unsigned)rt_dev[i],
              t->runtime_create(rt_dev[i], &o, &rt[i])))
      rt[i].bits = 0;
  t4a_runtime a = rt[RA], b = rt[RB], c = rt[RC];
  t4a_buffer x = {0}, y = {0}, z = {0}, w = {0};
  t4a_host_buffer h = {0}, reg = {0};
  void *p = NULL;
  static uint64_t registered[512];
  if (a.bits) {
    STEP("buffer_alloc x", LOCK, A, t->buffer_alloc(a, SIZE, &x));
    STEP("buffer_alloc y", LOCK, A, t->buffer_alloc(a, SIZE, &y));
    STEP("host_alloc", LOCK, A, t->host_alloc(a, SIZE, 0, &h, &p));
  }
  if (b.bits)
    STEP("buffer_alloc z", LOCK, B_, t->buffer_alloc(b, SIZE, &z));
  if (c.bits)
    STEP("buffer_alloc w", LOCK, C, t->buffer_alloc(c, SIZE, &w));
  for (size_t i = 0; i < SIZE; i++)
    page[i] = (unsigned char)(i * 131u + 7u);
  memcpy(want, page, SIZE);
  if (x.bits)
    STEP("copy_h2d", LOCK, A, t->copy_h2d(a, x, 0, page, SIZE));
  if (y.bits && h.bits) {
    memset(p, 0x3c, 4096);
    STEP("copy_h2d_pinned", LOCK, A, t->copy_h2d_pinned(a, y, 0, h, 0, 4096));
  }
  if (x.bits && h.bits)
    STEP("copy_d2h_pinned", LOCK, A, t->copy_d2h_pinned(a, h, 0, x, 0, 4096));
  if (x.bits && y.bits)
    STEP("copy_d2d", LOCK, A, t->copy_d2d(a, y, 0, x, 0, SIZE));
  if (y.bits)
    STEP("memset", LOCK, A, t->memset(a, y, 8, 0x01020304u, 4, 16));
  if (x.bits && y.bits) {
    t4a_copy_2d g = {.struct_size = sizeof g,
                     .dst_offset = 64,
                     .dst_pitch = 256,
                     .src_offset = 0,
                     .src_pitch = 128,
                     .width = 100,
                     .rows = 5};
    STEP("copy_2d_d2d", LOCK, A, t->copy_2d_d2d(a, y, x, &g));
  }
  if (a.bits &&
      STEP("host_register", LOCK, A, t->host_register(a, registered, sizeof registered, 0, &reg)) &&
      y.bits)
    STEP("copy_d2h_pinned (registered)", LOCK, A,
         t->copy_d2h_pinned(a, reg, 0, y, 0, sizeof registered));
  if (z.bits && x.bits)
    STEP("copy_from_runtime", LOCK, A | B_, t->copy_from_runtime(b, z, 0, a, x, 0, SIZE));
  if (w.bits && x.bits)
    STEP("copy_from_peer", LOCK, A | C, t->copy_from_peer(c, w, 0, a, x, 0, SIZE));
  if (w.bits && z.bits)
    STEP("copy_from_peer_via_host", LOCK, B_ | C,
         t->copy_from_peer_via_host(c, w, 0, b, z, 0, SIZE));
  /* a copy from y, which stays live: a's destroy orders itself after it */
  if (z.bits && y.bits)
    STEP("copy_from_runtime (y, live at destroy)", LOCK, A | B_,
         t->copy_from_runtime(b, z, 0, a, y, 0, 4096));
  t4a_module m = {0};
  t4a_function f = {0};
  if (a.bits && R.art.bits && STEP("module_load", LOCK, A, t->module_load(a, R.art, &m)))
    R.modules[RA]++;
  if (m.bits)
    STEP("function_get", LOCK, A, t->function_get(a, m, "t4a_fill_u32", &f));
  uint64_t addr = 0, n = 1024;
  uint32_t v = 7;
  if (x.bits)
    STEP("buffer_device_address", LOCK, A, t->buffer_device_address(a, x, &addr));
  void *args[] = {&addr, &v, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {64, 1, 1}};
  if (f.bits && addr)
    STEP("launch", LOCK, A, t->launch(a, f, &cfg, args));
  for (size_t i = 0; i < n * 4; i += 4)
    memcpy(want + i, &v, 4);
  t4a_witness wa = {0}, wc = {0};
  if (a.bits)
    STEP("seal a", LOCK, A, t->seal(a, &wa));
  if (c.bits && wa.bits)
    STEP("runtime_wait_witness", LOCK, A | C, t->runtime_wait_witness(c, wa));
  if (c.bits)
    STEP("seal c", LOCK, C, t->seal(c, &wc));
  if (wa.bits)
    STEP("witness_wait a", WITNESS, A, t->witness_wait(wa, T4A_WAIT_FOREVER));
  /* nothing of a's pending now: cuModuleUnload at once, not deferred; the
   * handle goes whatever the status (a failed unload keeps the module) */
  if (m.bits) {
    STEP("module_unload", ANY, A, t->module_unload(a, m));
    R.modules[RA]--;
  }
  if (wc.bits)
    STEP("witness_wait c", WITNESS, C, t->witness_wait(wc, T4A_WAIT_FOREVER));
  memset(page, 0, SIZE);
  if (x.bits && STEP("copy_d2h", LOCK, A, t->copy_d2h(a, page, x, 0, SIZE)) && !R.failed &&
      memcmp(page, want, SIZE) != 0)
    bad("the scenario's data differs (no step failed)");
  if (wa.bits)
    STEP("witness_release a", NONE, 0, t->witness_release(wa));
  if (wc.bits)
    STEP("witness_release c", NONE, 0, t->witness_release(wc));
  if (R.art.bits)
    STEP("artifact_release", NONE, 0, t->artifact_release(R.art));
  R.art.bits = 0;
  if (reg.bits)
    STEP("host_unregister", ANY, A, t->host_unregister(a, reg));
  if (h.bits)
    STEP("host_free", ANY, A, t->host_free(a, h));
  if (x.bits)
    STEP("buffer_free x", LOCK, A, t->buffer_free(a, x));
  if (z.bits)
    STEP("buffer_free z", LOCK, B_, t->buffer_free(b, z));
  if (a.bits)
    STEP("cache_trim", LOCK, A, t->cache_trim(a, 0));
}

/* Destroys the runtimes, unloads the plugin and checks the ledger. */
static void teardown(t4a_gpu_backend *backend) {
  const t4a_gpu_backend_v1 *t = R.t;
  int spares[DEVS] = {0}, quarantined_count[DEVS] = {0};
  bool quarantined_on[DEVS] = {false}, quarantined_any = false;
  /* what the quarantined runtimes of a device hold besides device memory,
   * streams, pools and events, by their counters */
  int64_t held[DEVS] = {0};
  for (int i = 0; i < NRT; i++) {
    if (!R.rt[i].bits)
      continue;
    int d = rt_dev[i];
    t4a_runtime_counters cn = {.struct_size = sizeof cn};
    t4a_cache_stats cs = {.struct_size = sizeof cs};
    if (t->runtime_counters(R.rt[i], &cn) != T4A_OK || t->cache_stats(R.rt[i], &cs) != T4A_OK)
      bad("runtime %c: counters unreadable before destroy", 'a' + i); /* no driver call */
    ledger before = ledger_now(), kept_before = R.kept;
    snap_take();
    R.no_spare = false;
    int rc = t->runtime_destroy(R.rt[i], T4A_WAIT_FOREVER);
    t4a_error_info e = {.struct_size = sizeof e};
    t->last_error(&e); /* its strings last until the next call: read them now */
    bool leaked = rc != T4A_OK && e.message && strstr(e.message, "leaked");
    ledger after = ledger_now();
    if (R.verbose && rc)
      printf("  runtime_destroy of %c: %s (%s)\n", 'a' + i, t4a_status_name(rc), e.message);
    R.rt[i].bits = 0;                           /* stale now: no round trip on it */
    step("runtime_destroy", LOCK, 1u << i, rc); /* its status, as any step's */
    if (rc == T4A_OK || leaked) {
      /* idle: its parts are a spare now (unless its pool was not empty or
       * a release failed: its object was counted by step), and blocks a
       * copy to another runtime may still have read are kept (counted as
       * quarantined) */
      spares[d] += rc == T4A_OK && !R.no_spare && !cn.quarantined;
      R.kept.n[d][K_DEVICE] += (int64_t)cn.quarantined;
      R.kept_any |= leaked || cn.quarantined;
      continue;
    }
    /* quarantined (a fault, or a drain that failed): releases its idle
     * pinned cache and its completion events, keeps the rest */
    quarantined_on[d] = quarantined_any = true;
    quarantined_count[d]++;
    int64_t kept_events = ledger_all(&R.kept, K_EVENT) - ledger_all(&kept_before, K_EVENT);
    int64_t freed_host = before.n[d][K_HOST] - after.n[d][K_HOST];
    int64_t freed_events = ledger_all(&before, K_EVENT) - ledger_all(&after, K_EVENT);
    static const int same[] = {K_DEVICE, K_POOLED, K_STREAM, K_POOL, K_MODULE};
    for (int k = 0; k < 5; k++)
      if (before.n[d][same[k]] != after.n[d][same[k]])
        bad("quarantined runtime %c released %s objects: %lld -> %lld", 'a' + i, kinds[same[k]],
            (long long)before.n[d][same[k]], (long long)after.n[d][same[k]]);
    int64_t kept_host = ledger_all(&R.kept, K_HOST) - ledger_all(&kept_before, K_HOST);
    if (freed_host != (int64_t)cs.pinned_entries - kept_host)
      bad("quarantined runtime %c released %lld pinned blocks, its idle cache held %llu (%lld "
          "failed to release)",
          'a' + i, (long long)freed_host, (unsigned long long)cs.pinned_entries,
          (long long)kept_host);
    if (freed_events != (int64_t)cn.events_created - STAGING_EVENTS - kept_events)
      bad("quarantined runtime %c destroyed %lld events, it made %lld for completion (%lld "
          "failed to release)",
          'a' + i, (long long)freed_events, (long long)cn.events_created - STAGING_EVENTS,
          (long long)kept_events);
    /* its counters: staging, live host buffers, pending retirements
     * (pinned blocks and deferred module unloads) and held modules */
    held[d] +=
        1 + (int64_t)cn.live_host_buffers + (int64_t)cn.pending_retirements + (int64_t)R.modules[i];
    if (cn.quarantined > cn.pending_retirements + cn.live_buffers)
      bad("runtime %c: %llu quarantined, more than its %llu pending retirements and %llu "
          "buffers",
          'a' + i, (unsigned long long)cn.quarantined, (unsigned long long)cn.pending_retirements,
          (unsigned long long)cn.live_buffers);
  }
  ledger destroyed = ledger_now();
  for (int d = 0; d < DEVS; d++) {
    if (!quarantined_on[d]) { /* idle destroys: the spares and the failed releases */
      for (int k = 0; k < KINDS; k++) {
        if (k == K_POOLED && R.kept.n[d][K_POOL])
          continue; /* a pool whose destroy failed keeps the blocks cached in it */
        int64_t expect = spares[d] * spare_parts[k] + R.kept.n[d][k];
        if (destroyed.n[d][k] != expect)
          bad("device %d: %lld %s objects live after the destroys, want %lld (%d spare(s), %lld "
              "kept)",
              d, (long long)destroyed.n[d][k], kinds[k], (long long)expect, spares[d],
              (long long)R.kept.n[d][k]);
      }
      continue;
    }
    bool mixed = false; /* a runtime destroyed idle beside the quarantined ones */
    for (int i = 0; i < NRT; i++)
      mixed |= rt_dev[i] == d && spares[d];
    if (mixed)
      continue; /* the quarantined ones were checked above; see the file's comment */
    int64_t got = destroyed.n[d][K_HOST] + destroyed.n[d][K_MODULE];
    int64_t want_kept = held[d] + R.kept.n[d][K_HOST] + R.kept.n[d][K_MODULE];
    if (got != want_kept)
      bad("device %d keeps %lld pinned blocks and modules; the quarantined runtimes' counters "
          "and the failed releases say %lld",
          d, (long long)got, (long long)want_kept);
    if (destroyed.n[d][K_EVENT] !=
        (int64_t)STAGING_EVENTS * quarantined_count[d] + R.kept.n[d][K_EVENT])
      bad("device %d keeps %lld events, want the staging events of its %d quarantined "
          "runtimes and %lld kept",
          d, (long long)destroyed.n[d][K_EVENT], quarantined_count[d],
          (long long)R.kept.n[d][K_EVENT]);
  }
  /* unload: releases the spare parts, unless something kept pins the
   * plugin; then exactly what was kept stays */
  uint64_t b0 = F.total();
  t4a_gpu_close(backend);
  uint64_t b1 = F.total();
  void *self = dlopen(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), RTLD_NOW | RTLD_NOLOAD);
  bool pinned = self != NULL;
  if (self)
    dlclose(self);
  /* the plugin pins itself when it keeps something: always then, and
   * never in a run without a failure */
  bool kept_any = quarantined_any || R.kept_any;
  if (kept_any && !pinned)
    bad("the plugin was unloaded though it kept objects");
  if (pinned && !R.failed && !kept_any)
    bad("the plugin stays loaded after close, though nothing failed");
  ledger closed = ledger_now();
  ledger at_close = {{{0}}}; /* releases that failed during the unload */
  for (int j = 0; j < 2; j++)
    if (R.inj[j] > b0 && R.inj[j] <= b1 && released_kind(F.name(R.inj[j])) >= 0)
      at_close.n[0][released_kind(F.name(R.inj[j]))]++;
  for (int k = 0; k < KINDS; k++) {
    int64_t released = pinned ? 0 : (spares[0] + spares[1]) * spare_parts[k] - at_close.n[0][k];
    if (ledger_all(&closed, k) != ledger_all(&destroyed, k) - released)
      bad("the unload left %lld %s objects of %lld, want %lld (%d spare(s) %s, %lld release(s) "
          "failed)",
          (long long)ledger_all(&closed, k), kinds[k], (long long)ledger_all(&destroyed, k),
          (long long)(ledger_all(&destroyed, k) - released), spares[0] + spares[1],
          pinned ? "kept: the plugin is pinned" : "released", (long long)at_close.n[0][k]);
  }
  if (F.violations && F.violations())
    bad("the fake driver saw %llu violation(s)", (unsigned long long)F.violations());
}

/* What a run reports to the parent (a file): its result and its calls. */
static uint64_t clean_counts[MAX_NAMES];
static const char *clean_names[MAX_NAMES];
static unsigned n_clean_names;

static unsigned name_index(const char *name) {
  for (unsigned i = 0; i < n_clean_names; i++)
    if (strcmp(clean_names[i], name) == 0)
      return i;
  return MAX_NAMES;
}

static int run(FILE *report) {
  memset(&R, 0, sizeof R);
  R.verbose = getenv("T4A_SWEEP_ONE") != NULL;
  const char *plan = getenv("FAKE_CUDA_FAIL_CALL");
  if (plan) {
    unsigned long long n = 0, m = 0;
    unsigned c2 = 0;
    sscanf(plan, "%llu:%u,%llu:%u", &n, &R.code, &m, &c2);
    R.inj[0] = n;
    R.inj[1] = m;
  }
  t4a_gpu_backend *backend = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &backend))
    return 12;
  R.t = t4a_gpu_backend_table(backend);
  int rc = R.t->init(); /* loads the fake */
  controls();
  if (!F.total || !F.live_on)
    return 12;
  if (rc == T4A_OK) {
    scenario();
    teardown(backend);
  } else {
    uint64_t at = R.inj[0];
    if (!at || at > F.total() || rc != mapped(R.code))
      bad("init: %s, want %s (call %llu failed)", t4a_status_name(rc),
          at ? t4a_status_name(mapped(R.code)) : "T4A_OK", (unsigned long long)at);
    R.fail_end = F.total();
    t4a_gpu_close(backend);
    ledger l = ledger_now();
    for (int k = 0; k < KINDS; k++)
      if (ledger_all(&l, k))
        bad("init failed and left %lld %s objects", (long long)ledger_all(&l, k), kinds[k]);
  }
  uint64_t total = F.total();
  if (report) {
    fprintf(report, "total %llu\nend %llu\n", (unsigned long long)total,
            (unsigned long long)R.fail_end);
    if (!R.code) /* the clean run: its whole trace */
      for (uint64_t k = 1; k <= total; k++)
        fprintf(report, "name %s\n", F.name(k));
    else {
      const char *at = F.name(R.inj[0]);
      fprintf(report, "at %s\n", at ? at : "-");
      for (uint64_t k = R.inj[0] + 1; k <= R.fail_end && k <= total; k++)
        fprintf(report, "undo %llu %s\n", (unsigned long long)k, F.name(k));
      /* calls beyond the clean run's count of their entry point */
      uint64_t seen[MAX_NAMES + 1] = {0};
      for (uint64_t k = 1; k <= total; k++) {
        unsigned i = name_index(F.name(k));
        if (++seen[i] > (i < MAX_NAMES ? clean_counts[i] : 0) && k > R.inj[0])
          fprintf(report, "extra %llu %s\n", (unsigned long long)k, F.name(k));
      }
    }
    if (R.errors)
      fprintf(report, "error %s\n", R.first_error);
  }
  return R.errors ? 1 : 0;
}

/* ---- the sweep (parent) -------------------------------------------------------------- */

typedef struct result {
  int exit;
  uint64_t total, end;
  char at[64];
  char error[512];
  uint64_t *extra; /* calls after the first failure worth failing too */
  bool *undo;      /* in the failing step (else: beyond the clean run's count) */
  char (*extra_name)[48];
  unsigned n_extra;
} result;

typedef struct job {
  pid_t pid;
  FILE *out;
  uint64_t n, m;
  unsigned code;
} job;

static void parse(FILE *f, result *r, char (*names)[48], uint64_t max_names) {
  rewind(f);
  char line[640];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    unsigned long long v;
    char s[48];
    if (sscanf(line, "total %llu", &v) == 1)
      r->total = v;
    else if (sscanf(line, "end %llu", &v) == 1)
      r->end = v;
    else if (sscanf(line, "at %63s", r->at) == 1)
      continue;
    else if (sscanf(line, "name %47s", s) == 1 && names && max_names--)
      snprintf(*names++, 48, "%s", s);
    else if ((sscanf(line, "extra %llu %47s", &v, s) == 2 ||
              sscanf(line, "undo %llu %47s", &v, s) == 2) &&
             r->extra && r->n_extra < 256) {
      r->undo[r->n_extra] = line[0] == 'u';
      r->extra[r->n_extra] = v;
      snprintf(r->extra_name[r->n_extra++], 48, "%s", s);
    } else if (strncmp(line, "error ", 6) == 0)
      snprintf(r->error, sizeof r->error, "%.500s", line + 6);
  }
}

static job start(uint64_t n, uint64_t m, unsigned code) {
  job j = {0, tmpfile(), n, m, code};
  ck_assert_ptr_nonnull(j.out);
  fflush(stdout);
  fflush(stderr);
  j.pid = fork();
  ck_assert_int_ge(j.pid, 0);
  if (j.pid == 0) {
    char plan[96] = "";
    if (n && m)
      snprintf(plan, sizeof plan, "%llu:%u,%llu:%u", (unsigned long long)n, code,
               (unsigned long long)m, code);
    else if (n)
      snprintf(plan, sizeof plan, "%llu:%u", (unsigned long long)n, code);
    if (*plan)
      setenv("FAKE_CUDA_FAIL_CALL", plan, 1);
    if (!getenv("T4A_SWEEP_VERBOSE"))
      if (!freopen("/dev/null", "w", stderr)) /* the plugin's failure logs */
        exit(3);
    int code_ = run(j.out);
    fclose(j.out);
    exit(code_); /* exit, not _exit: LeakSanitizer checks at exit */
  }
  return j;
}

static int finish(job *j, result *r, char (*names)[48], uint64_t max_names) {
  int status = 0;
  waitpid(j->pid, &status, 0);
  r->exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  parse(j->out, r, names, max_names);
  fclose(j->out);
  return r->exit;
}

static char clean[MAX_CALLS][48];
static uint64_t clean_total;

static unsigned jobs(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 8 ? 8 : (unsigned)n;
}

/* Phase-2 candidates, gathered from phase-1 runs. */
typedef struct pair {
  uint64_t n, m;
  unsigned code;
  unsigned rank; /* 0: the first call of an undo path, larger: later */
  char entry[48];
} pair;
static pair *pairs;
static size_t n_pairs, cap_pairs;

static void add_pair(uint64_t n, uint64_t m, unsigned code, unsigned rank, const char *entry) {
  if (n_pairs == cap_pairs) {
    size_t cap = cap_pairs ? 2 * cap_pairs : 1024;
    pair *grown = realloc(pairs, cap * sizeof *pairs);
    ck_assert_ptr_nonnull(grown); /* the test ends here: nothing to free */
    pairs = grown;
    cap_pairs = cap;
  }
  pairs[n_pairs++] = (pair){n, m, code, rank, ""};
  snprintf(pairs[n_pairs - 1].entry, sizeof pairs->entry, "%.47s", entry);
}

static int by_rank(const void *x, const void *y) {
  const pair *a = x, *b = y;
  int c = strcmp(a->entry, b->entry);
  if (c)
    return c;
  if (a->code != b->code)
    return a->code < b->code ? -1 : 1;
  if ((a->rank >= 1000) != (b->rank >= 1000))
    return a->rank < b->rank ? -1 : 1;
  if (a->n != b->n)
    return a->n < b->n ? -1 : 1;
  return a->m < b->m ? -1 : a->m > b->m ? 1 : 0;
}

static unsigned failures;

static void report_failure(const job *j, const result *r) {
  static int show = -1;
  if (show < 0) {
    const char *v = getenv("T4A_SWEEP_SHOW");
    show = v ? atoi(v) : 20;
  }
  if ((int)failures++ >= show)
    return;
  char plan[96];
  if (j->m)
    snprintf(plan, sizeof plan, "%llu:%u,%llu:%u", (unsigned long long)j->n, j->code,
             (unsigned long long)j->m, j->code);
  else
    snprintf(plan, sizeof plan, "%llu:%u", (unsigned long long)j->n, j->code);
  fprintf(stderr,
          "FAILED: calls %s (call %llu is %s): exit %d: %s\n"
          "  reproduce: T4A_SWEEP_ONE=1 FAKE_CUDA_FAIL_CALL=%s tests/cpu/test_fault_sweep\n",
          plan, (unsigned long long)j->n, j->n <= clean_total ? clean[j->n - 1] : "?", r->exit,
          r->exit >= 128 ? "crashed" : r->error, plan);
}

/* Runs a list of plans, `jobs()` at a time; phase 1 gathers pairs. */
static void sweep(const pair *plans, size_t count, bool gather) {
  unsigned width = jobs();
  job *running = calloc(width, sizeof *running);
  size_t next = 0, done = 0;
  unsigned active = 0;
  uint64_t extra[256];
  bool undo[256];
  char extra_name[256][48];
  while (done < count) {
    while (active < width && next < count) {
      for (unsigned s = 0; s < width; s++)
        if (!running[s].pid) {
          running[s] = start(plans[next].n, plans[next].m, plans[next].code);
          next++;
          active++;
          break;
        }
    }
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      poll(NULL, 0, 1);
      continue;
    }
    for (unsigned s = 0; s < width; s++) {
      if (running[s].pid != pid)
        continue;
      job *j = &running[s];
      result r = {.extra = extra, .undo = undo, .extra_name = extra_name};
      r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      parse(j->out, &r, NULL, 0);
      fclose(j->out);
      /* determinism: the run saw the clean run's calls up to its failure */
      if (r.exit == 0 && j->n <= clean_total && strcmp(r.at, clean[j->n - 1]) != 0) {
        snprintf(r.error, sizeof r.error, "call %llu is %s here, %s in the clean run",
                 (unsigned long long)j->n, r.at, clean[j->n - 1]);
        r.exit = 13;
      }
      if (r.exit)
        report_failure(j, &r);
      if (gather && !r.exit)
        for (unsigned e = 0; e < r.n_extra; e++)
          add_pair(j->n, r.extra[e], j->code,
                   undo[e] ? (unsigned)(r.extra[e] - j->n - 1) : 1000 + e, extra_name[e]);
      j->pid = 0;
      active--;
      done++;
    }
  }
  free(running);
}

START_TEST(every_call_fails_cleanly_on_a_deterministic_schedule) {
  /* the clean run, twice: the schedule is deterministic */
  for (int pass = 0; pass < 2; pass++) {
    static char again[MAX_CALLS][48];
    job j = start(0, 0, 0);
    result r = {0};
    ck_assert_int_eq(finish(&j, &r, pass ? again : clean, MAX_CALLS), 0);
    ck_assert_msg(r.error[0] == 0, "the clean run: %s", r.error);
    ck_assert_uint_gt(r.total, 100);
    ck_assert_uint_lt(r.total, MAX_CALLS);
    if (pass == 0)
      clean_total = r.total;
    else
      for (uint64_t k = 0; k < clean_total; k++)
        ck_assert_msg(r.total == clean_total && strcmp(clean[k], again[k]) == 0,
                      "two clean runs differ at call %llu: %s, then %s (of %llu, %llu)",
                      (unsigned long long)k + 1, clean[k], again[k],
                      (unsigned long long)clean_total, (unsigned long long)r.total);
  }
  for (uint64_t k = 0; k < clean_total; k++) {
    unsigned i = name_index(clean[k]);
    if (i == MAX_NAMES && n_clean_names < MAX_NAMES) {
      i = n_clean_names++;
      clean_names[i] = clean[k];
    }
    if (i < MAX_NAMES)
      clean_counts[i]++;
  }
  /* phase 1: every call, each code */
  static const unsigned codes[] = {999, 2, 700};
  size_t n1 = 3 * clean_total;
  pair *p1 = calloc(n1 ? n1 : 1, sizeof *p1); /* n1 > 300 (asserted above), for the analyzer */
  ck_assert_ptr_nonnull(p1);
  for (unsigned c = 0; c < 3; c++)
    for (uint64_t k = 1; k <= clean_total; k++)
      p1[c * clean_total + k - 1] = (pair){k, 0, codes[c], 0, ""};
  sweep(p1, n1, true);
  free(p1);
  unsigned phase1_failures = failures;
  /* phase 2: the second failures, sampled per (entry point, code): spread
   * evenly over the group (undo paths first, then the later error-path
   * calls, each in the order of the first failure) */
  bool full = getenv("T4A_SWEEP_FULL") != NULL;
  qsort(pairs, n_pairs, sizeof *pairs, by_rank);
  size_t kept = 0;
  char error_only[64][48]; /* entry points called only after a failure */
  unsigned n_error_only = 0;
  for (size_t g0 = 0, g1; g0 < n_pairs; g0 = g1) {
    for (g1 = g0 + 1; g1 < n_pairs && strcmp(pairs[g1].entry, pairs[g0].entry) == 0 &&
                      pairs[g1].code == pairs[g0].code;
         g1++)
      ;
    size_t size = g1 - g0, take = full || size <= SAMPLE ? size : SAMPLE;
    for (size_t i = 0; i < take; i++)
      pairs[kept++] = pairs[g0 + i * size / take];
    if (name_index(pairs[kept - 1].entry) == MAX_NAMES && n_error_only < 64 &&
        (!n_error_only || strcmp(error_only[n_error_only - 1], pairs[kept - 1].entry) != 0))
      snprintf(error_only[n_error_only++], 48, "%.47s", pairs[kept - 1].entry);
  }
  printf("entry points only error paths call (each failed in phase 2):");
  for (unsigned i = 0; i < n_error_only; i++)
    printf(" %s", error_only[i]);
  printf("\n");
  sweep(pairs, kept, false);
  printf("fault sweep: %llu calls in the clean run; %zu single failures (999, 2, 700), %zu "
         "pairs of failures (%zu candidates%s), %u failed\n",
         (unsigned long long)clean_total, n1, kept, n_pairs, full ? ", all run" : ", sampled",
         failures);
  ck_assert_msg(failures == 0, "%u runs failed (%u in phase 1); see above", failures,
                phase1_failures);
  free(pairs);
}
END_TEST

int main(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_CACHE_DIR", "", 1);
  setenv("FAKE_CUDA_SERIAL", "1", 1);
  unsetenv("T4A_STAGING_CHUNK"); /* 256 KiB of staging in two chunks */
  unsetenv("T4A_RUNTIME_SPARES");
  if (getenv("T4A_SWEEP_ONE")) { /* reproduce one run */
    clean_total = 0;
    int rc = run(NULL);
    printf("%s\n", rc ? R.first_error : "clean");
    return rc;
  }
  Suite *s = suite_create("fault-sweep");
  TCase *tc = tcase_create("sweep");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, every_call_fails_cleanly_on_a_deterministic_schedule);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
