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

/* FAKE_CUDA_FAIL="name:N:code,name:N:code": the Nth call of name fails. */
static void parse_env(void) {
  const char *v = getenv("FAKE_CUDA_FAIL");
  env_parsed = 1;
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

R fake_enter(const char *name, bool needs_init) {
  if (needs_init && !fake_initialised())
    return T4A__CUDA_ERROR_NOT_INITIALIZED;
  LOCK();
  if (!env_parsed)
    parse_env();
  counter *c = counter_of(name);
  R r = OK;
  if (c && ++c->calls == c->fail_at)
    r = c->fail_code;
  struct CUctx_st *cur = fake_current();
  if (sticky(r) && cur)
    fake_fault_device(cur->device, r);
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
