/* tests/fakecuda/fake_control.c -- what tests steer and read in the fake
 * driver: call counts and fault injection, sticky device faults, the
 * violation count, the registry of driver objects, and the live-object
 * counts. Tests reach the exported fake_cuda_* functions with dlsym on the
 * library the plugin loaded. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

pthread_mutex_t fake_G = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t fake_changed = PTHREAD_COND_INITIALIZER;

uint64_t fake_live[LIVE_KINDS];
uint64_t fake_guard_violations, fake_oob_attempts;

/* ---- call counts and fault injection ------------------------------------------ */

typedef struct counter {
  char name[48];
  uint64_t calls;
  uint64_t fail_at; /* 0 = never */
  R fail_code;
} counter;

static counter counters[128];
static int ncounters;
static int env_parsed;

/* The schedule (fault sweep): every call of any entry point is numbered
 * 1, 2, ... in the order the fake sees them; FAKE_CUDA_FAIL_CALL fails
 * calls by that number, and the trace keeps which entry point each call
 * was (fake_cuda_call_total, fake_cuda_call_name). With FAKE_CUDA_SERIAL
 * the numbering is deterministic for a single-threaded caller. */
#define FAIL_CALLS 4
static uint64_t total_calls;
static uint64_t fail_call[FAIL_CALLS];
static R fail_call_code[FAIL_CALLS];
static unsigned char *trace; /* call k: counter index at trace[2k - 2], current device + 1 next */
static size_t trace_cap;
static bool tracing; /* only with a schedule: other tests make millions of calls */
bool fake_serial;
unsigned fake_host_waiters[MAX_DEVICES];

static counter *counter_of(const char *name) {
  for (int i = 0; i < ncounters; i++)
    if (strcmp(counters[i].name, name) == 0)
      return &counters[i];
  if (ncounters == (int)(sizeof counters / sizeof counters[0]))
    return NULL;
  counter *c = &counters[ncounters++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  return c;
}

/* FAKE_CUDA_FAIL_CALL="N:code,M:code": the Nth (Mth) call counted over all
 * entry points fails; FAKE_CUDA_SERIAL: every enqueue returns once its
 * operation ran (fake_stream.c). */
static void parse_schedule(void) {
  const char *v = getenv("FAKE_CUDA_SERIAL");
  fake_serial = v && *v && strcmp(v, "0") != 0;
  v = getenv("FAKE_CUDA_FAIL_CALL");
  for (unsigned i = 0; v && *v && i < FAIL_CALLS; i++) {
    unsigned long long nth;
    unsigned code;
    if (sscanf(v, "%llu:%u", &nth, &code) != 2)
      break;
    fail_call[i] = nth;
    fail_call_code[i] = code;
    v = strchr(v, ',');
    v = v ? v + 1 : NULL;
  }
  tracing = fake_serial || fail_call[0];
}

/* FAKE_CUDA_FAIL="name:N:code,name:N:code": the Nth call of name fails. */
static void parse_env(void) {
  const char *v = getenv("FAKE_CUDA_FAIL");
  env_parsed = 1;
  parse_schedule();
  if (!v)
    return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", v);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char name[48];
    unsigned long long nth;
    unsigned code;
    if (sscanf(item, "%47[^:]:%llu:%u", name, &nth, &code) == 3) {
      counter *c = counter_of(name);
      if (c) {
        c->fail_at = nth;
        c->fail_code = code;
      }
    }
  }
}

static R device_fault[MAX_DEVICES];

R fake_device_fault(int device) {
  return device >= 0 && device < MAX_DEVICES ? device_fault[device] : 0;
}

void fake_fault_device(int device, R r) { /* G held */
  device_fault[device >= 0 && device < MAX_DEVICES ? device : 0] = r;
  pthread_cond_broadcast(&fake_changed);
}

/* An injected sticky code (an illegal address, a launch failure, ...)
 * poisons the calling thread's current device, as it would on a GPU: its
 * streams run no further work and later calls in it report the fault. */
static bool sticky(R r) {
  return r == T4A__CUDA_ERROR_ILLEGAL_ADDRESS || r == T4A__CUDA_ERROR_LAUNCH_FAILED;
}

R fake_enter(const char *name, bool needs_init) { return fake_enter_on(name, needs_init, -1); }

R fake_enter_on(const char *name, bool needs_init, int object_device) {
  if (needs_init && !fake_initialised())
    return T4A__CUDA_ERROR_NOT_INITIALIZED;
  LOCK();
  if (!env_parsed)
    parse_env();
  counter *c = counter_of(name);
  R r = OK;
  if (c && ++c->calls == c->fail_at)
    r = c->fail_code;
  uint64_t k = ++total_calls;
  for (unsigned i = 0; i < FAIL_CALLS; i++)
    if (fail_call[i] == k)
      r = fail_call_code[i];
  struct CUctx_st *cur = fake_current();
  if (tracing && k > trace_cap && trace_cap < (1u << 24)) {
    size_t cap = trace_cap ? trace_cap * 2 : 4096;
    unsigned char *t = realloc(trace, 2 * cap);
    if (t) {
      trace = t;
      trace_cap = cap;
    }
  }
  if (k <= trace_cap) {
    trace[2 * k - 2] = c ? (unsigned char)(c - counters) : 0xff;
    trace[2 * k - 1] = object_device >= 0 ? (unsigned char)(object_device + 1)
                       : cur              ? (unsigned char)(cur->device + 1)
                                          : 0;
  }
  int dev = object_device >= 0 ? object_device : cur ? cur->device : -1;
  if (sticky(r) && dev >= 0)
    fake_fault_device(dev, r);
  UNLOCK();
  return r;
}

EXPORT void fake_cuda_fail(const char *name, uint64_t nth, unsigned code);
void fake_cuda_fail(const char *name, uint64_t nth, unsigned code) {
  LOCK();
  if (!env_parsed)
    parse_env();
  counter *c = counter_of(name);
  if (c) {
    c->fail_at = nth ? c->calls + nth : 0; /* the nth call from now */
    c->fail_code = code;
  }
  UNLOCK();
}

/* Calls of all entry points so far, and the entry point of call k (1-based;
 * NULL past the end). */
EXPORT uint64_t fake_cuda_call_total(void);
uint64_t fake_cuda_call_total(void) {
  LOCK();
  uint64_t n = total_calls;
  UNLOCK();
  return n;
}

EXPORT const char *fake_cuda_call_name(uint64_t k);
const char *fake_cuda_call_name(uint64_t k) {
  LOCK();
  const char *name = k >= 1 && k <= total_calls && k <= trace_cap && trace[2 * k - 2] != 0xff
                         ? counters[trace[2 * k - 2]].name
                         : NULL;
  UNLOCK();
  return name;
}

/* The device whose context was current at call k, -1 when none. */
EXPORT int fake_cuda_call_device(uint64_t k);
int fake_cuda_call_device(uint64_t k) {
  LOCK();
  int d = k >= 1 && k <= total_calls && k <= trace_cap ? (int)trace[2 * k - 1] - 1 : -1;
  UNLOCK();
  return d;
}

EXPORT uint64_t fake_cuda_calls(const char *name);
uint64_t fake_cuda_calls(const char *name) {
  LOCK();
  counter *c = counter_of(name);
  uint64_t n = c ? c->calls : 0;
  UNLOCK();
  return n;
}

/* ---- violations ------------------------------------------------------------------ */

static uint64_t violations;
static char last_violation[256];

__attribute__((format(printf, 1, 0))) static void vrecord(const char *fmt, va_list ap) {
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  __atomic_add_fetch(&violations, 1, __ATOMIC_SEQ_CST);
  snprintf(last_violation, sizeof last_violation, "%s", msg);
  fprintf(stderr, "fake-cuda: violation: %s\n", msg);
}

void fake_violation(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vrecord(fmt, ap);
  va_end(ap);
}

R fake_misuse(R code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vrecord(fmt, ap);
  va_end(ap);
  return code;
}

/* Misuses and hazards seen so far (tests of the plugin assert 0), and the
 * last one's description. */
EXPORT uint64_t fake_cuda_violations(void);
uint64_t fake_cuda_violations(void) { return __atomic_load_n(&violations, __ATOMIC_SEQ_CST); }

EXPORT const char *fake_cuda_last_violation(void);
const char *fake_cuda_last_violation(void) { return last_violation; }

/* ---- the object registry: a set of pointers ----------------------------------------- */

static const void **objs;
static size_t objs_cap, objs_count;

static size_t slot_of(const void *p, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 32) & (cap - 1);
}

static bool registered(const void *p) {
  if (!objs_cap || !p)
    return false;
  for (size_t i = slot_of(p, objs_cap);; i = (i + 1) & (objs_cap - 1)) {
    if (objs[i] == p)
      return true;
    if (!objs[i])
      return false;
  }
}

static void insert(const void **table, size_t cap, const void *p) {
  size_t i = slot_of(p, cap);
  while (table[i])
    i = (i + 1) & (cap - 1);
  table[i] = p;
}

void fake_obj_register(fake_obj *o, obj_kind kind, struct CUctx_st *ctx) {
  o->kind = kind;
  o->dead = false;
  o->ctx = ctx;
  o->ctx_epoch = ctx ? ctx->epoch : 0;
  if (2 * (objs_count + 1) > objs_cap) {
    size_t cap = objs_cap ? objs_cap * 2 : 1024;
    const void **t = calloc(cap, sizeof *t);
    if (!t)
      abort(); /* a test double out of memory: nothing sensible is left */
    for (size_t i = 0; i < objs_cap; i++)
      if (objs[i])
        insert(t, cap, objs[i]);
    free(objs);
    objs = t;
    objs_cap = cap;
  }
  insert(objs, objs_cap, o);
  objs_count++;
}

R fake_obj_check(const void *p, obj_kind kind, const char *what) {
  static const char *const names[] = {"",     "stream", "event",      "module",          "function",
                                      "pool", "graph",  "graph node", "executable graph"};
  if (!registered(p))
    return fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE, "%s: %p is no %s handle", what, p,
                       names[kind]);
  const fake_obj *o = p;
  if (o->kind != kind)
    return fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE, "%s: %p is a %s, not a %s", what, p,
                       names[o->kind], names[kind]);
  if (o->dead)
    return fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE, "%s: the %s %p was destroyed", what,
                       names[kind], p);
  if (o->ctx && !fake_ctx_alive(o->ctx, o->ctx_epoch))
    return fake_misuse(T4A__CUDA_ERROR_CONTEXT_IS_DESTROYED,
                       "%s: the %s %p belongs to device %d's primary context, destroyed since",
                       what, names[kind], p, o->ctx->device);
  return OK;
}

int fake_object_device(const void *p, obj_kind kind) {
  LOCK();
  int dev = -1;
  if (registered(p) && ((const fake_obj *)p)->kind == kind) {
    const fake_obj *o = p;
    dev = kind == OBJ_POOL     ? ((const struct CUmemPoolHandle_st *)p)->device
          : kind == OBJ_MODULE ? ((const struct CUmod_st *)p)->device
          : o->ctx             ? o->ctx->device
                               : -1;
  }
  UNLOCK();
  return dev;
}

int fake_alloc_device(const void *p, int kind) {
  LOCK();
  alloc *a = fake_alloc_at(p, kind);
  int dev = a ? a->device : -1;
  UNLOCK();
  return dev;
}

/* ---- counts tests read ------------------------------------------------------------ */

/* Live objects of a kind: "device", "host", "stream", "event", "pool",
 * "module". */
EXPORT uint64_t fake_cuda_live(const char *what);
uint64_t fake_cuda_live(const char *what) {
  static const char *const names[LIVE_KINDS] = {"device", "host", "stream",
                                                "event",  "pool", "module"};
  uint64_t n = UINT64_MAX;
  LOCK();
  for (int i = 0; i < LIVE_KINDS; i++)
    if (strcmp(what, names[i]) == 0)
      n = fake_live[i];
  UNLOCK();
  return n;
}

/* Live objects of a kind on one device: the kinds of fake_cuda_live, but
 * "device" counts blocks in use and "pooled" blocks freed into their pool's
 * cache (pinned host memory counts for the device current at its
 * allocation); and "context": the references held on the device's primary
 * context. */
EXPORT uint64_t fake_cuda_live_on(const char *what, int device);
uint64_t fake_cuda_live_on(const char *what, int device) {
  static const char *const names[] = {"stream", "event", "module", "pool"};
  static const obj_kind kinds[] = {OBJ_STREAM, OBJ_EVENT, OBJ_MODULE, OBJ_POOL};
  uint64_t n = UINT64_MAX;
  LOCK();
  if (strcmp(what, "device") == 0 || strcmp(what, "host") == 0)
    n = fake_allocs_on(what[0] == 'd' ? MEM_DEVICE : MEM_HOST, device, false);
  else if (strcmp(what, "pooled") == 0)
    n = fake_allocs_on(MEM_DEVICE, device, true);
  else if (strcmp(what, "context") == 0)
    n = fake_ctx_refs(device);
  for (int i = 0; i < 4; i++)
    if (strcmp(what, names[i]) == 0) {
      n = 0;
      for (size_t j = 0; j < objs_cap; j++) {
        const fake_obj *o = objs[j];
        if (!o || o->dead || o->kind != kinds[i])
          continue;
        int dev = o->kind == OBJ_POOL ? ((const struct CUmemPoolHandle_st *)(const void *)o)->device
                                      : o->ctx->device;
        n += dev == device;
      }
    }
  UNLOCK();
  return n;
}

/* The sticky fault of a device (a CUresult), 0 when none. */
EXPORT unsigned fake_cuda_device_fault(int device);
unsigned fake_cuda_device_fault(int device) {
  LOCK();
  unsigned r = (unsigned)fake_device_fault(device);
  UNLOCK();
  return r;
}

/* Guard zones found overwritten at free, and accesses refused as out of
 * bounds. */
EXPORT uint64_t fake_cuda_guard_violations(void);
uint64_t fake_cuda_guard_violations(void) {
  LOCK();
  uint64_t n = fake_guard_violations;
  UNLOCK();
  return n;
}

EXPORT uint64_t fake_cuda_oob_attempts(void);
uint64_t fake_cuda_oob_attempts(void) {
  LOCK();
  uint64_t n = fake_oob_attempts;
  UNLOCK();
  return n;
}

/* Device bytes reserved on a device (allocations in use and pool caches). */
EXPORT uint64_t fake_cuda_device_used(int device);
uint64_t fake_cuda_device_used(int device) {
  LOCK();
  uint64_t n = fake_device_used(device);
  UNLOCK();
  return n;
}
