/* tools/conform_util.c -- what the conformance checks share: results, data,
 * tracked objects (released exactly once whatever happens), the kernels and
 * the gates that hold a runtime's work back. Public table only. */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/checked.h"
#include "tools/conform.h"

#define WAIT_NS (60ull * 1000 * 1000 * 1000) /* a witness or destroy that takes longer hangs */
#define GATE_WATCHDOG_S 20                   /* a gate no one opens by then is opened */

/* ---- results ------------------------------------------------------------------------ */

__attribute__((format(printf, 2, 0))) static void vrecord(t4a__cf *c, const char *fmt, va_list ap) {
  if (c->failures == 0)
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
  else if (c->failures <= 4)
    vsnprintf(c->also[c->failures - 1], sizeof c->also[0], fmt, ap);
  c->failures++;
  c->result = T4A__CF_FAIL;
}

bool t4a__cf_fail(t4a__cf *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vrecord(c, fmt, ap);
  va_end(ap);
  return false;
}

void t4a__cf_skip(t4a__cf *c, const char *fmt, ...) {
  if (c->result == T4A__CF_FAIL)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->detail, sizeof c->detail, fmt, ap);
  va_end(ap);
  c->result = T4A__CF_SKIP;
}

bool t4a__cf_status(t4a__cf *c, int rc, int want, const char *what) {
  if (rc == want)
    return true;
  return t4a__cf_fail(c, "%s: got %s, want %s", what, t4a_status_name(rc), t4a_status_name(want));
}

bool t4a__cf_true(t4a__cf *c, bool cond, const char *fmt, ...) {
  if (cond)
    return true;
  va_list ap;
  va_start(ap, fmt);
  vrecord(c, fmt, ap);
  va_end(ap);
  return false;
}

int t4a__cf_last_error(const t4a_gpu_backend_v1 *t, char *buf, size_t size) {
  t4a_error_info e;
  memset(&e, 0, sizeof e);
  e.struct_size = sizeof e;
  buf[0] = '\0';
  if (t->last_error(&e) != T4A_OK)
    return T4A_EINTERNAL;
  if (e.message)
    snprintf(buf, size, "%.*s", (int)(size - 1), e.message); /* the plugin's need not end */
  return e.status;
}

bool t4a__cf_ok(t4a__cf *c, int rc, const char *what) {
  if (rc == T4A_OK)
    return true;
  char why[512];
  t4a__cf_last_error(c->t, why, sizeof why);
  return t4a__cf_fail(c, "%s: %s (%s)", what, t4a_status_name(rc), why);
}

bool t4a__cf_expect(t4a__cf *c, int rc, int want, int also, const char *what) {
  char why[512];
  if (rc != want && rc != also) {
    if (rc != T4A_OK)
      t4a__cf_last_error(c->t, why, sizeof why);
    else
      why[0] = '\0';
    if (want == also)
      return t4a__cf_fail(c, "%s: got %s, want %s%s%s%s", what, t4a_status_name(rc),
                          t4a_status_name(want), *why ? " (" : "", why, *why ? ")" : "");
    return t4a__cf_fail(c, "%s: got %s, want %s or %s%s%s%s", what, t4a_status_name(rc),
                        t4a_status_name(want), t4a_status_name(also), *why ? " (" : "", why,
                        *why ? ")" : "");
  }
  /* T4A_ENOTREADY is witness_query's "not yet", an answer rather than a
   * failure (polled on hot paths): no detail is promised for it. */
  if (rc == T4A_OK || rc == T4A_ENOTREADY)
    return true;
  /* "After a failing call, last_error() on the same thread returns a detail
   * string "<what failed>; <what to do>"" */
  int status = t4a__cf_last_error(c->t, why, sizeof why);
  if (status != rc)
    return t4a__cf_fail(c, "%s returned %s but last_error reports %s", what, t4a_status_name(rc),
                        t4a_status_name(status));
  if (!strstr(why, "; "))
    return t4a__cf_fail(c,
                        "%s returned %s but last_error's message '%s' is not \"<what failed>; "
                        "<what to do>\"",
                        what, t4a_status_name(rc), why);
  return true;
}

/* ---- data ------------------------------------------------------------------------------ */

void t4a__cf_random(void *p, size_t n, uint64_t *seed) {
  unsigned char *b = p;
  uint64_t x = *seed ? *seed : 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; i += 8) {
    x ^= x >> 12; /* xorshift64* */
    x ^= x << 25;
    x ^= x >> 27;
    uint64_t v = x * 0x2545f4914f6cdd1dull;
    memcpy(b + i, &v, n - i < 8 ? n - i : 8);
  }
  *seed = x;
}

size_t t4a__cf_diff(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i])
      return i;
  return n;
}

uint64_t t4a__cf_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- tracked objects ----------------------------------------------------------------- */

typedef struct t4a__cf_obj {
  int kind;
  uint64_t rt, h; /* owning runtime (0: none), handle */
  void *p;        /* T4A__CF_MEM: the memory; T4A__CF_GATE: the gate */
} t4a__cf_obj;

struct t4a__cf_gate {
  t4a_runtime rt;
  t4a_host_buffer hb;
  uint32_t *flag;
  pthread_t dog;
  pthread_mutex_t lock;
  pthread_cond_t changed;
  bool opened, forced;
};

static void release_one(t4a__cf *c, const t4a__cf_obj *o);
static bool gate_open(t4a__cf_gate *g, bool forced);

bool t4a__cf_track(t4a__cf *c, int kind, uint64_t rt, uint64_t h, void *p) {
  t4a__cf_obj o = {kind, rt, h, p};
  if (c->nobjs == c->capobjs) {
    uint64_t cap;
    size_t bytes;
    t4a__cf_obj *n = t4a__grow(c->capobjs, 32, SIZE_MAX, sizeof *n, &cap, &bytes)
                         ? realloc(c->objs, bytes)
                         : NULL;
    if (!n) { /* release it now rather than lose it */
      t4a__cf_fail(c, "out of host memory for the list of objects to release");
      release_one(c, &o);
      return false;
    }
    c->objs = n;
    c->capobjs = (size_t)cap;
  }
  c->objs[c->nobjs++] = o;
  return true;
}

static void drop(t4a__cf *c, size_t i) {
  memmove(&c->objs[i], &c->objs[i + 1], (c->nobjs - i - 1) * sizeof c->objs[0]);
  c->nobjs--;
}

static void gate_free(t4a__cf_gate *g) {
  pthread_join(g->dog, NULL);
  pthread_mutex_destroy(&g->lock);
  pthread_cond_destroy(&g->changed);
  free(g);
}

void t4a__cf_forget(t4a__cf *c, uint64_t h) {
  for (size_t i = c->nobjs; i-- > 0;)
    if (c->objs[i].h == h && c->objs[i].kind != T4A__CF_MEM && c->objs[i].kind != T4A__CF_GATE) {
      drop(c, i);
      return;
    }
}

void *t4a__cf_mem(t4a__cf *c, size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    t4a__cf_fail(c, "out of host memory (%zu bytes)", n);
    return NULL;
  }
  return t4a__cf_track(c, T4A__CF_MEM, 0, 0, p) ? p : NULL;
}

t4a_runtime t4a__cf_runtime(t4a__cf *c, int32_t device, const t4a_runtime_options *o) {
  t4a_runtime rt = {0};
  if (t4a__cf_ok(c, c->t->runtime_create(device, o, &rt), "runtime_create") &&
      t4a__cf_true(c, rt.bits != 0, "runtime_create returned T4A_OK and a null handle") &&
      t4a__cf_track(c, T4A__CF_RUNTIME, 0, rt.bits, NULL))
    return rt;
  rt.bits = 0;
  return rt;
}

t4a_buffer t4a__cf_buffer(t4a__cf *c, t4a_runtime rt, uint64_t bytes) {
  t4a_buffer b = {0};
  if (rt.bits && t4a__cf_ok(c, c->t->buffer_alloc(rt, bytes, &b), "buffer_alloc") &&
      t4a__cf_true(c, b.bits != 0, "buffer_alloc returned T4A_OK and a null handle") &&
      t4a__cf_track(c, T4A__CF_BUFFER, rt.bits, b.bits, NULL))
    return b;
  b.bits = 0;
  return b;
}

t4a_host_buffer t4a__cf_host(t4a__cf *c, t4a_runtime rt, uint64_t bytes, void **ptr) {
  t4a_host_buffer h = {0};
  *ptr = NULL;
  if (rt.bits && t4a__cf_ok(c, c->t->host_alloc(rt, bytes, 0, &h, ptr), "host_alloc") &&
      t4a__cf_true(c, h.bits != 0 && *ptr,
                   "host_alloc returned T4A_OK and a null handle or pointer") &&
      t4a__cf_track(c, T4A__CF_HOST, rt.bits, h.bits, NULL))
    return h;
  h.bits = 0;
  *ptr = NULL;
  return h;
}

t4a_witness t4a__cf_seal(t4a__cf *c, t4a_runtime rt) {
  t4a_witness w = {0};
  if (rt.bits && t4a__cf_ok(c, c->t->seal(rt, &w), "seal") &&
      t4a__cf_true(c, w.bits != 0, "seal returned T4A_OK and a null witness") &&
      t4a__cf_track(c, T4A__CF_WITNESS, 0, w.bits, NULL))
    return w;
  w.bits = 0;
  return w;
}

bool t4a__cf_destroy(t4a__cf *c, t4a_runtime rt) {
  for (size_t i = 0; i < c->nobjs; i++) /* destroy waits for gated work */
    if (c->objs[i].kind == T4A__CF_GATE && c->objs[i].rt == rt.bits)
      gate_open(c->objs[i].p, false);
  bool ok = t4a__cf_ok(c, c->t->runtime_destroy(rt, WAIT_NS), "runtime_destroy");
  for (size_t i = c->nobjs; i-- > 0;) /* what it owned is gone with it */
    if (c->objs[i].h == rt.bits || c->objs[i].rt == rt.bits) {
      if (c->objs[i].kind == T4A__CF_GATE)
        gate_free(c->objs[i].p);
      drop(c, i);
    }
  return ok;
}

bool t4a__cf_free(t4a__cf *c, t4a_runtime rt, t4a_buffer b) {
  t4a__cf_forget(c, b.bits);
  return t4a__cf_ok(c, c->t->buffer_free(rt, b), "buffer_free");
}

bool t4a__cf_release(t4a__cf *c, t4a_witness w) {
  t4a__cf_forget(c, w.bits);
  return t4a__cf_ok(c, c->t->witness_release(w), "witness_release");
}

bool t4a__cf_wait(t4a__cf *c, t4a_witness w) {
  return t4a__cf_ok(c, c->t->witness_wait(w, WAIT_NS), "witness_wait");
}

bool t4a__cf_sync(t4a__cf *c, t4a_runtime rt) {
  t4a_witness w = t4a__cf_seal(c, rt);
  if (!w.bits)
    return false;
  bool ok = t4a__cf_wait(c, w);
  return t4a__cf_release(c, w) && ok;
}

bool t4a__cf_round_trip(t4a__cf *c, t4a_runtime rt, t4a_buffer b, uint64_t off, uint64_t bytes) {
  unsigned char *src = t4a__cf_mem(c, (size_t)bytes), *back = t4a__cf_mem(c, (size_t)bytes);
  if (!src || !back)
    return false;
  t4a__cf_random(src, (size_t)bytes, &c->seed);
  memset(back, 0x5a, (size_t)bytes);
  if (!t4a__cf_ok(c, c->t->copy_h2d(rt, b, off, src, bytes), "copy_h2d") ||
      !t4a__cf_ok(c, c->t->copy_d2h(rt, back, b, off, bytes), "copy_d2h"))
    return false;
  size_t at = t4a__cf_diff(src, back, (size_t)bytes);
  return t4a__cf_true(c, at == bytes,
                      "%llu bytes at offset %llu came back different from byte %zu on",
                      (unsigned long long)bytes, (unsigned long long)off, at);
}

bool t4a__cf_filled(t4a__cf *c, t4a_runtime rt, t4a_buffer b, uint32_t value, uint64_t n) {
  uint32_t *back = t4a__cf_mem(c, (size_t)n * 4);
  if (!back || !CF_OK(c->t->copy_d2h(rt, back, b, 0, n * 4)))
    return false;
  for (uint64_t i = 0; i < n; i++)
    if (back[i] != value)
      return t4a__cf_fail(c, "word %llu of %llu is %#x after a fill with %#x",
                          (unsigned long long)i, (unsigned long long)n, back[i], value);
  return true;
}

static void release_one(t4a__cf *c, const t4a__cf_obj *o) {
  const t4a_gpu_backend_v1 *t = c->t;
  int rc = T4A_OK;
  const char *what = "";
  switch (o->kind) {
  case T4A__CF_RUNTIME:
    what = "runtime_destroy";
    rc = t->runtime_destroy((t4a_runtime){o->h}, WAIT_NS);
    break;
  case T4A__CF_BUFFER:
    what = "buffer_free";
    rc = t->buffer_free ? t->buffer_free((t4a_runtime){o->rt}, (t4a_buffer){o->h}) : T4A_OK;
    break;
  case T4A__CF_HOST:
    what = "host_free";
    rc = t->host_free ? t->host_free((t4a_runtime){o->rt}, (t4a_host_buffer){o->h}) : T4A_OK;
    break;
  case T4A__CF_WITNESS:
    what = "witness_release";
    rc = t->witness_release ? t->witness_release((t4a_witness){o->h}) : T4A_OK;
    break;
  case T4A__CF_ARTIFACT:
    what = "artifact_release";
    rc = t->artifact_release ? t->artifact_release((t4a_artifact){o->h}) : T4A_OK;
    break;
  case T4A__CF_MODULE:
    what = "module_unload";
    rc = t->module_unload ? t->module_unload((t4a_runtime){o->rt}, (t4a_module){o->h}) : T4A_OK;
    break;
  case T4A__CF_MEM: free(o->p); break;
  case T4A__CF_GATE: {
    t4a__cf_gate *g = o->p;
    gate_open(g, false); /* (open already, but for an object never tracked) */
    what = "host_free (the gate's flag)";
    rc = t->host_free ? t->host_free(g->rt, g->hb) : T4A_OK;
    gate_free(g);
    break;
  }
  default: break;
  }
  if (rc != T4A_OK)
    t4a__cf_ok(c, rc, what);
}

void t4a__cf_cleanup(t4a__cf *c) {
  for (size_t i = 0; i < c->nobjs; i++) /* first let every gated stream run */
    if (c->objs[i].kind == T4A__CF_GATE)
      gate_open(c->objs[i].p, false);
  while (c->nobjs > 0) {
    t4a__cf_obj o = c->objs[c->nobjs - 1];
    c->nobjs--;
    release_one(c, &o);
  }
}

/* ---- running a call on another thread, bounded ------------------------------------------ */

typedef struct within {
  void (*fn)(void *);
  void *arg;
  pthread_mutex_t lock;
  pthread_cond_t done_cv;
  bool done;
} within;

static void *within_main(void *p) {
  within *w = p;
  w->fn(w->arg);
  pthread_mutex_lock(&w->lock);
  w->done = true;
  pthread_cond_signal(&w->done_cv);
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

static struct timespec deadline_in(double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long long ns = (long long)ts.tv_nsec + (long long)(seconds * 1e9);
  ts.tv_sec += (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  return ts;
}

bool t4a__cf_within(t4a__cf *c, double seconds, void (*fn)(void *), void *arg, const char *what) {
  within w = {.fn = fn, .arg = arg};
  pthread_mutex_init(&w.lock, NULL);
  pthread_cond_init(&w.done_cv, NULL);
  pthread_t th;
  bool ok = true;
  if (pthread_create(&th, NULL, within_main, &w) != 0) {
    fn(arg); /* no thread: run it here, unbounded */
  } else {
    struct timespec until = deadline_in(seconds);
    pthread_mutex_lock(&w.lock);
    while (!w.done && pthread_cond_timedwait(&w.done_cv, &w.lock, &until) == 0)
      ;
    ok = w.done;
    pthread_mutex_unlock(&w.lock);
    if (!ok) { /* it is stuck behind gated work: let the work run so it can return */
      for (size_t i = 0; i < c->nobjs; i++)
        if (c->objs[i].kind == T4A__CF_GATE)
          gate_open(c->objs[i].p, true);
      t4a__cf_fail(c, "%s did not return within %.0f s while other work was held back", what,
                   seconds);
    }
    pthread_join(th, NULL);
  }
  pthread_mutex_destroy(&w.lock);
  pthread_cond_destroy(&w.done_cv);
  return ok;
}

/* ---- gates -------------------------------------------------------------------------------- */

static bool gate_open(t4a__cf_gate *g, bool forced) {
  pthread_mutex_lock(&g->lock);
  bool was_open = g->opened;
  if (!g->opened) {
    g->opened = true;
    g->forced = forced;
    __atomic_store_n(g->flag, 1u, __ATOMIC_SEQ_CST);
    pthread_cond_signal(&g->changed);
  }
  bool clean = !g->forced;
  pthread_mutex_unlock(&g->lock);
  (void)was_open;
  return clean;
}

static void *watchdog(void *p) {
  t4a__cf_gate *g = p;
  struct timespec until = deadline_in(GATE_WATCHDOG_S);
  pthread_mutex_lock(&g->lock);
  while (!g->opened && pthread_cond_timedwait(&g->changed, &g->lock, &until) == 0)
    ;
  bool late = !g->opened;
  pthread_mutex_unlock(&g->lock);
  if (late)
    gate_open(g, true);
  return NULL;
}

t4a__cf_gate *t4a__cf_gate_close(t4a__cf *c, t4a_runtime rt, const t4a__cf_kernels *k) {
  t4a__cf_gate *g = calloc(1, sizeof *g);
  if (!g) {
    t4a__cf_fail(c, "out of host memory for a gate");
    return NULL;
  }
  void *p = NULL;
  if (!t4a__cf_ok(c, c->t->host_alloc(rt, sizeof(uint32_t), 0, &g->hb, &p), "host_alloc (gate)")) {
    free(g);
    return NULL;
  }
  g->rt = rt;
  g->flag = p;
  __atomic_store_n(g->flag, 0u, __ATOMIC_SEQ_CST);
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->changed, NULL);
  if (pthread_create(&g->dog, NULL, watchdog, g) != 0) {
    t4a__cf_fail(c, "cannot start a thread");
    c->t->host_free(rt, g->hb);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->changed);
    free(g);
    return NULL;
  }
  if (!t4a__cf_track(c, T4A__CF_GATE, rt.bits, g->hb.bits, g))
    return NULL;                          /* released */
  uint64_t addr = (uint64_t)(uintptr_t)p; /* pinned memory the device reads directly */
  void *args[] = {&addr};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  if (!t4a__cf_ok(c, c->t->launch(rt, k->spin, &cfg, args), "launch (t4a_spin, the gate)")) {
    gate_open(g, false);
    return NULL;
  }
  return g;
}

bool t4a__cf_gate_open(t4a__cf *c, t4a__cf_gate *g) {
  if (gate_open(g, false))
    return true;
  return t4a__cf_fail(c,
                      "the gate's watchdog opened it after %d s: a call blocked behind gated "
                      "work where the header says it must not",
                      GATE_WATCHDOG_S);
}
