/* tools/conform_completion.c -- conformance checks of completion: seal and
 * witnesses (reference counts, query, wait, timeouts on work held back by a
 * gate), waits across runtimes, a destroy that times out, and the frees and
 * unloads the header defers behind enqueued work. */
#include "config.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "tools/conform.h"

#define WAIT_MS(ms) ((uint64_t)(ms)*1000 * 1000)

static void witness_basics(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  if (!rt.bits)
    return;
  CF_EXPECT(t->seal(rt, NULL), T4A_EINVAL);
  t4a_witness w = t4a__cf_seal(c, rt); /* nothing enqueued: ready at once */
  if (!w.bits)
    return;
  CF_EXPECT(t->witness_query(w), T4A_OK);
  CF_EXPECT(t->witness_wait(w, 0), T4A_OK);
  CF_EXPECT(t->witness_wait(w, T4A_WAIT_FOREVER), T4A_OK);
  /* "The last release frees the witness; using it afterwards is T4A_EHANDLE" */
  CF_OK(t->witness_retain(w));
  CF_OK(t->witness_retain(w));
  t4a__cf_forget(c, w.bits);
  for (int i = 0; i < 3; i++)
    CF_OK(t->witness_release(w));
  CF_EXPECT(t->witness_query(w), T4A_EHANDLE);
  CF_EXPECT(t->witness_wait(w, 0), T4A_EHANDLE);
  CF_EXPECT(t->witness_retain(w), T4A_EHANDLE);
  CF_EXPECT(t->witness_release(w), T4A_EHANDLE);
  /* the caller owns one reference per seal: two seals, two witnesses */
  t4a_witness a = t4a__cf_seal(c, rt), b = t4a__cf_seal(c, rt);
  if (a.bits && b.bits)
    CF_TRUE(a.bits != b.bits, "two seals returned the same witness handle");
}

typedef struct waiter {
  const t4a_gpu_backend_v1 *t;
  t4a_witness w;
  int rc;
} waiter;

static void *wait_forever(void *p) {
  waiter *x = p;
  x->rc = x->t->witness_wait(x->w, T4A_WAIT_FOREVER);
  return NULL;
}

typedef struct side_call {
  const t4a_gpu_backend_v1 *t;
  t4a_runtime rt;
  t4a_buffer b;
  uint64_t size;
  int rc;
} side_call;

static void do_side_call(void *p) { /* a call on the runtime a waiter is blocked on */
  side_call *s = p;
  t4a_buffer x = {0};
  s->rc = s->t->buffer_size(s->rt, s->b, &s->size);
  if (s->rc == T4A_OK && (s->rc = s->t->buffer_alloc(s->rt, 256, &x)) == T4A_OK)
    s->rc = s->t->buffer_free(s->rt, x);
}

static void gated_witness(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels k;
  t4a_buffer b = t4a__cf_buffer(c, rt, 4096);
  if (!b.bits || !t4a__cf_kernels_load(c, rt, &k))
    return;
  t4a_witness before = t4a__cf_seal(c, rt);
  t4a__cf_gate *g = t4a__cf_gate_close(c, rt, &k);
  if (!g || !before.bits || !CF_OK(t4a__cf_fill(c, rt, &k, b, 7, 1024)))
    return;
  t4a_witness w = t4a__cf_seal(c, rt), again = t4a__cf_seal(c, rt);
  if (!w.bits || !again.bits)
    return;
  /* "witness_query: T4A_ENOTREADY when not yet. Never blocks." */
  CF_EXPECT(t->witness_query(w), T4A_ENOTREADY);
  CF_EXPECT(t->witness_query(again), T4A_ENOTREADY);         /* no new work: the same point */
  CF_EXPECT(t->witness_wait(before, WAIT_MS(1000)), T4A_OK); /* earlier work is done */
  CF_EXPECT(t->witness_wait(w, 0), T4A_ETIMEOUT);
  uint64_t start = t4a__cf_now_ns();
  CF_EXPECT(t->witness_wait(w, WAIT_MS(20)), T4A_ETIMEOUT);
  CF_TRUE(t4a__cf_now_ns() - start >= WAIT_MS(20), "witness_wait(20 ms) timed out early");
  /* "witness_wait does not hold its runtime while it blocks" */
  waiter x = {t, w, T4A_EINTERNAL};
  pthread_t th;
  if (!CF_TRUE(pthread_create(&th, NULL, wait_forever, &x) == 0, "cannot start a thread"))
    return;
  struct timespec pause = {0, 20L * 1000 * 1000}; /* let it block */
  nanosleep(&pause, NULL);
  side_call s = {t, rt, b, 0, T4A_EINTERNAL};
  if (t4a__cf_within(c, 5, do_side_call, &s, "a call on a runtime a witness_wait blocks on"))
    CF_TRUE(s.rc == T4A_OK && s.size == 4096,
            "buffer_size/alloc/free while another thread "
            "waits: %s",
            t4a_status_name(s.rc));
  CF_EXPECT(t->witness_query(w), T4A_ENOTREADY);
  t4a__cf_gate_open(c, g);
  pthread_join(th, NULL);
  CF_STATUS(x.rc, T4A_OK);
  CF_EXPECT(t->witness_query(w), T4A_OK);
  CF_EXPECT(t->witness_wait(again, 0), T4A_OK);
  uint32_t back[1024];
  if (CF_OK(t->copy_d2h(rt, back, b, 0, sizeof back)))
    CF_TRUE(back[0] == 7 && back[1023] == 7, "the gated fill did not run");
}

/* A seal records at most one event; with nothing new it covers the previous
 * point (counted by the runtime's counters). */
static void seal_same_point(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, 100);
  unsigned char data[100] = {1};
  t4a_runtime_counters k[3];
  for (int i = 0; i < 3; i++) {
    memset(&k[i], 0, sizeof k[i]);
    k[i].struct_size = sizeof k[i];
  }
  if (!b.bits || !CF_OK(t->copy_h2d(rt, b, 0, data, sizeof data)) ||
      !CF_OK(t->runtime_counters(rt, &k[0])))
    return;
  t4a_witness w1 = t4a__cf_seal(c, rt);
  CF_OK(t->runtime_counters(rt, &k[1]));
  t4a_witness w2 = t4a__cf_seal(c, rt), w3 = t4a__cf_seal(c, rt);
  CF_OK(t->runtime_counters(rt, &k[2]));
  if (!w1.bits || !w2.bits || !w3.bits)
    return;
  CF_TRUE(k[1].seal_events_recorded - k[0].seal_events_recorded <= 1,
          "one seal recorded %llu events (\"at most one\")",
          (unsigned long long)(k[1].seal_events_recorded - k[0].seal_events_recorded));
  CF_TRUE(k[2].seal_events_recorded == k[1].seal_events_recorded,
          "seals with nothing enqueued since the previous one recorded %llu events",
          (unsigned long long)(k[2].seal_events_recorded - k[1].seal_events_recorded));
  CF_TRUE(k[2].seals == k[0].seals + 3, "seals counted %llu, want 3",
          (unsigned long long)(k[2].seals - k[0].seals));
  t4a__cf_wait(c, w1);
  CF_EXPECT(t->witness_query(w3), T4A_OK); /* covers the same point as w1 */
}

static void wait_across(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels k;
  t4a_buffer xb = t4a__cf_buffer(c, b, 64);
  void *p;
  t4a_host_buffer h = t4a__cf_host(c, b, 64, &p); /* pinned: nothing on b may wait */
  if (!xb.bits || !h.bits || !t4a__cf_kernels_load(c, a, &k))
    return;
  t4a__cf_gate *g = t4a__cf_gate_close(c, a, &k);
  t4a_witness wa = t4a__cf_seal(c, a);
  if (!g || !wa.bits)
    return;
  /* "work rt enqueues after this call starts only after w's work completed
   * (GPU-side wait, the host does not block)" */
  CF_OK(t->runtime_wait_witness(b, wa));
  CF_OK(t->copy_h2d_pinned(b, xb, 0, h, 0, 64));
  t4a_witness wb = t4a__cf_seal(c, b);
  if (!wb.bits)
    return;
  CF_EXPECT(t->witness_query(wb), T4A_ENOTREADY);
  t4a__cf_gate_open(c, g);
  t4a__cf_wait(c, wb);
  CF_EXPECT(t->witness_query(wa), T4A_OK);
  /* a witness of a destroyed runtime (complete) costs nothing to wait on */
  t4a__cf_destroy(c, a);
  CF_OK(t->runtime_wait_witness(b, wa));
  if (c->device_count >= 2) { /* "w may come from any runtime of this backend, on any device" */
    t4a_runtime o = t4a__cf_runtime(c, (c->device + 1) % c->device_count, NULL);
    t4a_witness wo = t4a__cf_seal(c, o);
    if (wo.bits) {
      CF_OK(t->runtime_wait_witness(b, wo));
      CF_OK(t->runtime_wait_witness(o, wb));
      t4a__cf_sync(c, b);
    }
  }
  t4a_witness dead = t4a__cf_seal(c, b);
  if (dead.bits && t4a__cf_release(c, dead))
    CF_EXPECT(t->runtime_wait_witness(b, dead), T4A_EHANDLE);
}

typedef struct destroy_call {
  const t4a_gpu_backend_v1 *t;
  t4a_runtime rt;
  uint64_t timeout;
  int rc;
} destroy_call;

static void do_destroy(void *p) {
  destroy_call *d = p;
  d->rc = d->t->runtime_destroy(d->rt, d->timeout);
}

static void destroy_timeout(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels k;
  t4a_buffer b = t4a__cf_buffer(c, rt, 4096);
  if (!b.bits || !t4a__cf_kernels_load(c, rt, &k))
    return;
  t4a__cf_gate *g = t4a__cf_gate_close(c, rt, &k);
  if (!g || !CF_OK(t4a__cf_fill(c, rt, &k, b, 5, 1024)))
    return;
  /* "On T4A_ETIMEOUT nothing is released and the runtime stays usable" */
  destroy_call d = {t, rt, WAIT_MS(10), T4A_EINTERNAL};
  if (!t4a__cf_within(c, 5, do_destroy, &d, "runtime_destroy(10 ms)"))
    return;
  if (d.rc == T4A_OK) { /* it is gone: nothing left to release */
    t4a__cf_destroy(c, rt);
    t4a__cf_fail(c, "runtime_destroy(10 ms) returned T4A_OK with its work held back");
    return;
  }
  CF_STATUS(d.rc, T4A_ETIMEOUT);
  d.timeout = 0;
  if (t4a__cf_within(c, 5, do_destroy, &d, "runtime_destroy(0)"))
    CF_STATUS(d.rc, T4A_ETIMEOUT);
  uint64_t size = 0;
  if (CF_OK(t->buffer_size(rt, b, &size)))
    CF_TRUE(size == 4096, "buffer_size after a timed-out destroy: %llu", (unsigned long long)size);
  t4a_witness w = t4a__cf_seal(c, rt);
  t4a__cf_gate_open(c, g);
  uint32_t back[1024];
  if (w.bits && t4a__cf_wait(c, w) && CF_OK(t->copy_d2h(rt, back, b, 0, sizeof back)))
    CF_TRUE(back[0] == 5 && back[1023] == 5,
            "the gated fill did not complete after the timed-out destroys");
  if (t4a__cf_destroy(c, rt))
    CF_EXPECT(t->witness_query(w), T4A_OK);
}

static void deferred_host_free(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  const uint64_t N = 65536;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels k;
  t4a_buffer b = t4a__cf_buffer(c, rt, N);
  void *p1, *p2;
  t4a_host_buffer h1 = t4a__cf_host(c, rt, N, &p1);
  if (!b.bits || !h1.bits || !t4a__cf_kernels_load(c, rt, &k) ||
      !CF_OK(t4a__cf_fill(c, rt, &k, b, 0xabababab, N / 4)) || !t4a__cf_sync(c, rt))
    return;
  t4a__cf_gate *g = t4a__cf_gate_close(c, rt, &k);
  if (!g || !CF_OK(t->copy_d2h_pinned(rt, h1, 0, b, 0, N)))
    return;
  /* "the handle is stale at once; the memory is reused or released only
   * after all enqueued work that uses it completed" */
  t4a__cf_forget(c, h1.bits);
  CF_OK(t->host_free(rt, h1));
  CF_EXPECT(t->host_free(rt, h1), T4A_EHANDLE);
  CF_EXPECT(t->copy_d2h_pinned(rt, h1, 0, b, 0, 16), T4A_EHANDLE);
  t4a_host_buffer h2 = t4a__cf_host(c, rt, N, &p2);
  if (!h2.bits)
    return;
  memset(p2, 0x5c, (size_t)N); /* the pending copy must not land here */
  t4a_witness w = t4a__cf_seal(c, rt);
  t4a__cf_gate_open(c, g);
  if (!w.bits || !t4a__cf_wait(c, w))
    return;
  const unsigned char *q = p2;
  size_t i = 0;
  while (i < N && q[i] == 0x5c)
    i++;
  CF_TRUE(i == N,
          "a new host buffer's byte %zu changed: the freed one was reused before the "
          "copy into it completed",
          i);
}

static void deferred_unload(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels gate, work;
  t4a_buffer b = t4a__cf_buffer(c, rt, 4ull * 4099);
  if (!b.bits || !t4a__cf_kernels_load(c, rt, &gate) || !t4a__cf_kernels_load(c, rt, &work))
    return;
  t4a__cf_gate *g = t4a__cf_gate_close(c, rt, &gate);
  if (!g || !CF_OK(t4a__cf_fill(c, rt, &work, b, 0x600d, 4099)))
    return;
  /* "module_unload: waits for nothing; the module is unloaded after the
   * runtime's enqueued work completed. Its functions become stale." */
  t4a__cf_forget(c, work.module.bits);
  CF_OK(t->module_unload(rt, work.module));
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  t4a_function f;
  CF_EXPECT(t->launch(rt, work.fill, &cfg, NULL), T4A_EHANDLE);
  CF_EXPECT(t->function_get(rt, work.module, "t4a_fill_u32", &f), T4A_EHANDLE);
  CF_EXPECT(t->module_unload(rt, work.module), T4A_EHANDLE);
  t4a_witness w = t4a__cf_seal(c, rt);
  t4a__cf_gate_open(c, g);
  uint32_t back[4099];
  if (w.bits && t4a__cf_wait(c, w) && CF_OK(t->copy_d2h(rt, back, b, 0, sizeof back)))
    CF_TRUE(back[0] == 0x600d && back[4098] == 0x600d,
            "a kernel enqueued before its module_unload did not run");
}

#define DEV T4A__CF_DEVICE
#define BASE "runtime_create runtime_destroy buffer_alloc buffer_free copy_h2d copy_d2h "
#define WIT "seal witness_query witness_wait witness_retain witness_release "
#define CODE "host_alloc host_free module_load module_unload function_get launch "

const t4a__cf_check t4a__cf_completion_checks[] = {
    {"completion.witness_basics",
     "seal: a witness covering all work enqueued so far; the caller owns one reference; the last "
     "release frees the witness, using it afterwards is T4A_EHANDLE",
     BASE WIT, DEV, witness_basics},
    {"completion.seal_same_point",
     "seal: records at most one completion event; when nothing was enqueued since the previous "
     "seal it records none and the witness covers the previous point",
     BASE WIT "runtime_counters", DEV, seal_same_point},
    {"completion.gated_witness",
     "witness_query: T4A_ENOTREADY when not yet, never blocks; witness_wait: T4A_ETIMEOUT when "
     "timeout_ns elapsed; does not hold the runtime while blocking",
     BASE WIT CODE "buffer_size", DEV, gated_witness},
    {"completion.wait_across_runtimes",
     "runtime_wait_witness: work rt enqueues after this call starts only after w's work "
     "completed (GPU-side wait); w may come from any runtime, on any device",
     BASE WIT CODE "runtime_wait_witness copy_h2d_pinned", DEV, wait_across},
    {"completion.destroy_timeout",
     "runtime_destroy: waits up to timeout_ns; on T4A_ETIMEOUT nothing is released and the "
     "runtime stays usable; call again",
     BASE WIT CODE "buffer_size", DEV, destroy_timeout},
    {"completion.deferred_host_free",
     "host_free: the handle is stale at once; the memory is reused or released only after all "
     "enqueued work that uses it completed",
     BASE WIT CODE "copy_d2h_pinned", DEV, deferred_host_free},
    {"completion.deferred_module_unload",
     "module_unload: waits for nothing; the module is unloaded after the runtime's enqueued work "
     "completed; its functions become stale",
     BASE WIT CODE, DEV, deferred_unload},
};
const size_t t4a__cf_completion_count =
    sizeof t4a__cf_completion_checks / sizeof t4a__cf_completion_checks[0];
