/* tools/conform_threads.c -- conformance checks of the threading rules:
 * "Every slot is thread-safe"; "Calls on one runtime are serialised by that
 * runtime". Threads each with their own runtime, threads sharing one, and
 * one witness waited on by several. Each thread releases what it made (the
 * check's object list is not shared across threads); the first failure of
 * a thread is reported after the join. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/conform.h"

#define THREADS 4
#define ROUNDS 8
#define WAIT_NS (60ull * 1000 * 1000 * 1000)
#define OWN_BYTES (1024ull * 1024 + 7) /* each thread's own buffer */

typedef struct worker {
  const t4a_gpu_backend_v1 *t;
  int32_t device;
  t4a_runtime rt;       /* shared runtime (null: make an own one) */
  t4a_buffer shared;    /* shared buffer: this worker's window */
  uint64_t window, off; /* its size and offset */
  unsigned char *last;  /* what this worker last wrote to its window */
  uint64_t seed;
  char error[512]; /* the first failure */
} worker;

/* Records the first failure of a worker; returns false. */
static bool wfail(worker *w, const char *what, int rc) {
  if (!w->error[0]) {
    char why[300];
    t4a__cf_last_error(w->t, why, sizeof why);
    snprintf(w->error, sizeof w->error, "%s: %s (%s)", what, t4a_status_name(rc), why);
  }
  return false;
}

static bool w_ok(worker *w, int rc, const char *what) { return rc == T4A_OK || wfail(w, what, rc); }
#define W_OK(call) w_ok(w, (call), #call)

/* Round trips through pageable and pinned memory on w's runtime. */
static void rounds(worker *w, t4a_runtime rt, t4a_buffer b, uint64_t base, uint64_t room) {
  const t4a_gpu_backend_v1 *t = w->t;
  unsigned char *src = malloc((size_t)room), *back = malloc((size_t)room);
  void *pin = NULL;
  t4a_host_buffer h = {0};
  if (!src || !back) {
    snprintf(w->error, sizeof w->error, "out of host memory");
    goto out;
  }
  if (!W_OK(t->host_alloc(rt, room, 0, &h, &pin)))
    goto out;
  for (int r = 0; r < ROUNDS && !w->error[0]; r++) {
    uint64_t pick[2];
    t4a__cf_random(pick, sizeof pick, &w->seed);
    uint64_t n = 1 + pick[0] % (room - 1), off = pick[1] % (room - n + 1);
    t4a__cf_random(src, (size_t)n, &w->seed);
    memset(back, 0, (size_t)n);
    if (!W_OK(t->copy_h2d(rt, b, base + off, src, n)) ||
        !W_OK(t->copy_d2h(rt, back, b, base + off, n)))
      break;
    if (memcmp(src, back, (size_t)n) != 0) {
      uint64_t at = base + off;
      snprintf(w->error, sizeof w->error, "round %d: %llu bytes at %llu came back different", r,
               (unsigned long long)n, (unsigned long long)at);
      break;
    }
    t4a_witness wit = {0};
    memset(pin, 0, (size_t)n);
    if (!W_OK(t->copy_d2h_pinned(rt, h, 0, b, base + off, n)) || !W_OK(t->seal(rt, &wit)))
      break;
    int waited = t->witness_wait(wit, WAIT_NS);
    int released = t->witness_release(wit);
    if (!W_OK(waited) || !W_OK(released))
      break;
    if (memcmp(src, pin, (size_t)n) != 0) {
      snprintf(w->error, sizeof w->error, "round %d: the pinned copy differs", r);
      break;
    }
    if (w->last) { /* the window ends with what was written last */
      memcpy(w->last + off, src, (size_t)n);
    }
  }
out:
  if (h.bits)
    W_OK(t->host_free(rt, h));
  free(src);
  free(back);
}

static void *own_runtime(void *p) {
  worker *w = p;
  const t4a_gpu_backend_v1 *t = w->t;
  t4a_runtime rt = {0};
  t4a_buffer b = {0};
  if (W_OK(t->runtime_create(w->device, NULL, &rt)) && W_OK(t->buffer_alloc(rt, OWN_BYTES, &b)))
    rounds(w, rt, b, 0, OWN_BYTES);
  if (b.bits)
    W_OK(t->buffer_free(rt, b));
  if (rt.bits)
    W_OK(t->runtime_destroy(rt, WAIT_NS));
  return NULL;
}

static void *shared_runtime(void *p) {
  worker *w = p;
  const t4a_gpu_backend_v1 *t = w->t;
  rounds(w, w->rt, w->shared, w->off, w->window);
  for (int i = 0; i < 16 && !w->error[0]; i++) { /* allocation churn on the shared runtime */
    t4a_buffer b = {0};
    if (W_OK(t->buffer_alloc(w->rt, 4096 + (uint64_t)i * 512, &b)))
      W_OK(t->buffer_free(w->rt, b));
  }
  return NULL;
}

/* Runs fn on THREADS workers; reports the first worker failure. */
static void run_workers(t4a__cf *c, worker *w, void *(*fn)(void *)) {
  pthread_t th[THREADS];
  int started = 0;
  for (int i = 0; i < THREADS && pthread_create(&th[i], NULL, fn, &w[i]) == 0; i++)
    started++;
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  CF_TRUE(started == THREADS, "cannot start %d threads", THREADS);
  for (int i = 0; i < started; i++)
    CF_TRUE(!w[i].error[0], "thread %d: %s", i, w[i].error);
}

static void runtime_per_thread(t4a__cf *c) {
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++)
    w[i] = (worker){.t = c->t, .device = c->device, .seed = c->seed + (uint64_t)i * 7919};
  run_workers(c, w, own_runtime);
}

static void one_runtime(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const uint64_t window = 256 * 1024 + 3;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, window * THREADS);
  unsigned char *model = t4a__cf_mem(c, (size_t)(window * THREADS));
  if (!b.bits || !model)
    return;
  t4a__cf_random(model, (size_t)(window * THREADS), &c->seed);
  if (!CF_OK(t->copy_h2d(rt, b, 0, model, window * THREADS)))
    return;
  t4a_runtime_counters k0 = {.struct_size = sizeof k0}, k1 = {.struct_size = sizeof k1};
  if (t->runtime_counters)
    CF_OK(t->runtime_counters(rt, &k0));
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++)
    w[i] = (worker){.t = t,
                    .rt = rt,
                    .shared = b,
                    .window = window,
                    .off = window * (uint64_t)i,
                    .last = model + window * (uint64_t)i,
                    .seed = c->seed + (uint64_t)i * 104729};
  run_workers(c, w, shared_runtime);
  if (c->result == T4A__CF_FAIL)
    return;
  /* each window holds its thread's writes, nothing of the others' */
  unsigned char *back = t4a__cf_mem(c, (size_t)(window * THREADS));
  if (!back || !CF_OK(t->copy_d2h(rt, back, b, 0, window * THREADS)))
    return;
  size_t at = t4a__cf_diff(back, model, (size_t)(window * THREADS));
  CF_TRUE(at == window * THREADS, "the shared buffer differs at byte %zu (thread %zu's window)", at,
          at / (size_t)window);
  if (t->runtime_counters && CF_OK(t->runtime_counters(rt, &k1)))
    CF_TRUE(k1.live_buffers == k0.live_buffers && k1.live_host_buffers == k0.live_host_buffers,
            "live buffers %llu -> %llu after every thread freed what it made",
            (unsigned long long)k0.live_buffers, (unsigned long long)k1.live_buffers);
}

typedef struct shared_witness {
  const t4a_gpu_backend_v1 *t;
  t4a_witness w;
  int retain, wait, release;
} shared_witness;

static void *use_witness(void *p) {
  shared_witness *s = p;
  s->retain = s->t->witness_retain(s->w);
  s->wait = s->t->witness_wait(s->w, WAIT_NS);
  s->release = s->retain == T4A_OK ? s->t->witness_release(s->w) : T4A_OK;
  return NULL;
}

static void witness_shared(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels k;
  t4a__cf_gate *g = NULL;
  if (!rt.bits)
    return;
  if (c->code.bits) { /* with code, the witness is pending while they wait */
    if (!t4a__cf_kernels_load(c, rt, &k) || !(g = t4a__cf_gate_close(c, rt, &k)))
      return;
  }
  t4a_witness w = t4a__cf_seal(c, rt);
  if (!w.bits)
    return;
  shared_witness s[THREADS];
  pthread_t th[THREADS];
  int started = 0;
  for (int i = 0; i < THREADS; i++) {
    s[i] = (shared_witness){t, w, T4A_EINTERNAL, T4A_EINTERNAL, T4A_EINTERNAL};
    if (pthread_create(&th[i], NULL, use_witness, &s[i]) != 0)
      break;
    started++;
  }
  if (g)
    t4a__cf_gate_open(c, g);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  CF_TRUE(started == THREADS, "cannot start %d threads", THREADS);
  for (int i = 0; i < started; i++)
    CF_TRUE(s[i].retain == T4A_OK && s[i].wait == T4A_OK && s[i].release == T4A_OK,
            "thread %d: retain %s, wait %s, release %s", i, t4a_status_name(s[i].retain),
            t4a_status_name(s[i].wait), t4a_status_name(s[i].release));
  /* every thread's reference is gone: the check's own is the last */
  if (t4a__cf_release(c, w))
    CF_EXPECT(t->witness_query(w), T4A_EHANDLE);
}

#define DEV T4A__CF_DEVICE
#define BASE "runtime_create runtime_destroy buffer_alloc buffer_free copy_h2d copy_d2h "
#define PIN "host_alloc host_free copy_d2h_pinned seal witness_wait witness_release "

const t4a__cf_check t4a__cf_threads_checks[] = {
    {"threads.runtime_per_thread",
     "Every slot is thread-safe; calls on other runtimes are never delayed by a runtime's calls",
     BASE PIN, DEV, runtime_per_thread},
    {"threads.shared_runtime",
     "Calls on one runtime are serialised by that runtime (several threads, one runtime, data "
     "exact)",
     BASE PIN, DEV, one_runtime},
    {"threads.witness_shared",
     "witness_retain / witness_release: reference counting, thread-safe; witness_wait from "
     "several threads",
     BASE "seal witness_query witness_wait witness_retain witness_release", DEV, witness_shared},
};
const size_t t4a__cf_threads_count =
    sizeof t4a__cf_threads_checks / sizeof t4a__cf_threads_checks[0];
