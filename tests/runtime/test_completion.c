/* tests/runtime/test_completion.c -- completion: seal and its one event,
 * witnesses (query, wait, timeout, lifetime, waits across runtimes),
 * retirement of resources behind pending work, and the raw seam whose work
 * seals cover. Fake and GPU lanes (see test_runtime.c). */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin-cuda/cuda_decls.h"

#include "tests/runtime/rtutil.h"

#define KiB 1024ull
#define MiB (1ull << 20)

/* ---- seal ---------------------------------------------------------------------- */

START_TEST(one_seal_records_one_event) {
  t4a_runtime rt = rt_create();
  t4a_buffer a, b;
  RT_OK(T->buffer_alloc(rt, MiB, &a));
  RT_OK(T->buffer_alloc(rt, MiB, &b));
  RT_OK(T->memset(rt, a, 0, 0x11, 1, MiB)); /* defined bytes (the initcheck lane) */
  RT_OK(T->memset(rt, b, 0, 0x22, 1, MiB));
  rt_sync(rt); /* the pageable copies' staging is not what we count */
  t4a_runtime_counters before = rt_counters(rt);
  uint64_t records = rt_fake_calls("cuEventRecord");
  for (int i = 0; i < 100; i++)
    RT_OK(T->copy_d2d(rt, i & 1 ? a : b, 0, i & 1 ? b : a, 0, MiB));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  t4a_runtime_counters after = rt_counters(rt);
  ck_assert_uint_eq(after.seal_events_recorded - before.seal_events_recorded, 1);
  if (rt_on_fake()) /* the counter's claim, against the driver's own count */
    ck_assert_uint_eq(rt_fake_calls("cuEventRecord") - records, 1);
  ck_assert_uint_eq(after.seals - before.seals, 1);
  /* nothing new: no event, and the witness covers the previous point */
  t4a_witness w2;
  RT_OK(T->seal(rt, &w2));
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, after.seal_events_recorded);
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_calls("cuEventRecord") - records, 1);
  RT_OK(T->witness_query(w2));
  ck_assert_uint_le(rt_counters(rt).events_created, after.events_created);
  RT_OK(T->witness_release(w));
  RT_OK(T->witness_release(w2));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* A timing runtime's completion records outlive their witnesses and the
 * next seal while the work before them is queued (behind a gate): each
 * seal's witness released at once, the next seal made before the queue
 * reached the record (the host backend's queued time stamp once wrote into
 * its freed record: ASan and valgrind see that, in CI). The last witness
 * still times what came before it. */
START_TEST(completion_records_outlive_their_witnesses_while_queued) {
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = T4A_RUNTIME_TIMING};
  t4a_runtime rt;
  RT_OK(T->runtime_create(0, &o, &rt));
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, MiB, &b));
  t4a_witness start, w, end;
  RT_OK(T->seal(rt, &start));
  rt_gate g;
  rt_gate_close(&g, rt);
  for (int i = 0; i < 8; i++) {
    RT_OK(T->memset(rt, b, 0, (uint32_t)i, 1, MiB));
    RT_OK(T->seal(rt, &w)); /* a record, queued behind the gate */
    RT_OK(T->witness_release(w));
  }
  RT_OK(T->memset(rt, b, 0, 0x77, 1, MiB));
  RT_OK(T->seal(rt, &end));
  RT_EXPECT(T->witness_query(end), T4A_ENOTREADY);
  rt_gate_open(&g);
  RT_OK(T->witness_wait(end, T4A_WAIT_FOREVER));
  uint64_t ns = 0;
  RT_OK(T->witness_elapsed(start, end, &ns));
  ck_assert_uint_gt(ns, 0);
  unsigned char back[64];
  RT_OK(T->copy_d2h(rt, back, b, MiB - sizeof back, sizeof back));
  for (size_t i = 0; i < sizeof back; i++)
    ck_assert_uint_eq(back[i], 0x77);
  RT_OK(T->witness_release(start));
  RT_OK(T->witness_release(end));
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* Completion events are recycled: a runtime that keeps two seals in flight,
 * round after round, makes at most the two events it needs at once (the
 * counter, and on the fake the driver's own count). */
START_TEST(events_are_recycled) {
  t4a_runtime rt = rt_create();
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, 4096, &b));
  uint64_t created = rt_counters(rt).events_created, made = rt_fake_calls("cuEventCreate");
  for (int round = 0; round < 50; round++) {
    t4a_witness w1, w2;
    RT_OK(T->memset(rt, b, 0, (uint32_t)round & 0xff, 1, 4096));
    RT_OK(T->seal(rt, &w1));
    RT_OK(T->memset(rt, b, 0, 0x5a, 1, 4096));
    RT_OK(T->seal(rt, &w2));
    RT_OK(T->witness_wait(w2, T4A_WAIT_FOREVER)); /* both seals complete: their events return */
    RT_OK(T->witness_release(w1));
    RT_OK(T->witness_release(w2));
  }
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, 100);
  ck_assert_uint_le(rt_counters(rt).events_created - created, 2);
  if (rt_on_fake())
    ck_assert_uint_le(rt_fake_calls("cuEventCreate") - made, 2);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(seal_with_nothing_enqueued_is_ready) {
  t4a_runtime rt = rt_create();
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_query(w));
  RT_OK(T->witness_wait(w, 0));
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, 0);
  RT_OK(T->witness_release(w));
  RT_EXPECT(T->seal(rt, NULL), T4A_EINVAL);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- witnesses ----------------------------------------------------------------- */

START_TEST(witness_query_wait_and_timeout) {
  t4a_runtime rt = rt_create();
  rt_gate g;
  rt_gate_close(&g, rt);
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 4096, &d));
  uint32_t v = 0xabcdef01, back = 0;
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, 4, 0, &h, &p));
  memcpy(p, &v, 4);
  RT_OK(T->copy_h2d_pinned(rt, d, 0, h, 0, 4));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_EXPECT(T->witness_query(w), T4A_ENOTREADY);
  RT_EXPECT(T->witness_wait(w, 2000000), T4A_ETIMEOUT); /* 2 ms */
  RT_DETAIL("not complete after");
  RT_EXPECT(T->witness_query(w), T4A_ENOTREADY);
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_query(w));
  RT_OK(T->copy_d2h(rt, &back, d, 0, 4));
  ck_assert_uint_eq(back, v);
  RT_OK(T->witness_release(w));
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(witness_outlives_its_runtime) {
  t4a_runtime rt = rt_create();
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 1024, &d));
  char x[1024] = {1};
  RT_OK(T->copy_h2d(rt, d, 0, x, sizeof x));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_retain(w)); /* two references */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->witness_query(w));
  RT_OK(T->witness_wait(w, 0));
  RT_OK(T->witness_release(w));
  RT_OK(T->witness_query(w)); /* one reference left */
  RT_OK(T->witness_release(w));
  RT_EXPECT(T->witness_query(w), T4A_EHANDLE);
  RT_EXPECT(T->witness_release(w), T4A_EHANDLE);
  t4a_witness null = {0}, forged = {rt.bits};
  RT_EXPECT(T->witness_query(null), T4A_EINVAL);
  RT_EXPECT(T->witness_wait(forged, 0), T4A_EHANDLE);
}
END_TEST

START_TEST(a_runtime_waits_for_another_runtimes_witness) {
  t4a_runtime a = rt_create(), b = rt_create();
  rt_gate g;
  rt_gate_close(&g, a);
  t4a_witness wa, wb;
  RT_OK(T->seal(a, &wa));
  RT_EXPECT(T->witness_query(wa), T4A_ENOTREADY);
  RT_OK(T->runtime_wait_witness(b, wa)); /* GPU-side: returns at once */
  t4a_buffer d;
  RT_OK(T->buffer_alloc(b, 64, &d));
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(b, 64, 0, &h, &p));
  RT_OK(T->copy_h2d_pinned(b, d, 0, h, 0, 64));
  RT_OK(T->seal(b, &wb));
  RT_EXPECT(T->witness_wait(wb, 5000000), T4A_ETIMEOUT); /* b is held behind a */
  rt_gate_open(&g);
  RT_OK(T->witness_wait(wb, T4A_WAIT_FOREVER));
  RT_OK(T->witness_query(wa));
  /* waiting on a completed witness, or one's own, costs nothing */
  RT_OK(T->runtime_wait_witness(b, wa));
  RT_OK(T->runtime_wait_witness(a, wa));
  RT_OK(T->witness_release(wa));
  RT_OK(T->witness_release(wb));
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

typedef struct waiter {
  t4a_witness w;
  int rc;
} waiter;

/* A witness in x whose work waits behind the closed gate g. */
static void seal_behind_gate(t4a_runtime rt, rt_gate *g, waiter *x) {
  rt_gate_close(g, rt);
  *x = (waiter){{0}, -1};
  RT_OK(T->seal(rt, &x->w));
}

static void *wait_forever(void *arg) {
  waiter *x = arg;
  x->rc = T->witness_wait(x->w, T4A_WAIT_FOREVER);
  return NULL;
}

/* A finite timeout so large that now + timeout overflows: it waits. */
static void *wait_very_long(void *arg) {
  waiter *x = arg;
  x->rc = T->witness_wait(x->w, UINT64_MAX - 1);
  return NULL;
}

typedef struct same_runtime {
  t4a_runtime rt;
  uint64_t seed;
  t4a_buffer d;
  t4a_host_buffer h;
  void *p;
  t4a_witness w;
  int failures;
} same_runtime;

static void *calls_on_the_runtime(void *arg) {
  same_runtime *c = arg;
  if (T->buffer_alloc(c->rt, 4096, &c->d) || T->host_alloc(c->rt, 4096, 0, &c->h, &c->p))
    c->failures++;
  if (c->failures)
    return NULL;
  t4a_test_fill_random(c->p, 4096, c->seed);
  t4a_runtime_counters k = {.struct_size = sizeof k};
  if (T->copy_h2d_pinned(c->rt, c->d, 0, c->h, 0, 4096) || T->runtime_counters(c->rt, &k) ||
      k.copies_h2d_pinned != 1 || T->seal(c->rt, &c->w))
    c->failures++;
  return NULL;
}

/* witness_wait blocks without holding its runtime: while one thread waits
 * (without limit) on a witness held back by a gate, another thread's calls
 * on the same runtime complete (within a bound: a regression fails here
 * instead of deadlocking). */
START_TEST(witness_wait_does_not_hold_the_runtime) {
  t4a_runtime rt = rt_create();
  rt_gate g;
  waiter x;
  seal_behind_gate(rt, &g, &x);
  rt_thread waiting, calling;
  rt_thread_start(&waiting, wait_forever, &x);
  ck_assert_msg(!rt_thread_wait(&waiting, 0.1), "the wait returned early"); /* now blocked */
  same_runtime c = {.rt = rt, .seed = t4a_test_seed()};
  rt_thread_start(&calling, calls_on_the_runtime, &c);
  bool finished = rt_thread_wait(&calling, 10);
  bool still_waiting = !__atomic_load_n(&waiting.done, __ATOMIC_SEQ_CST);
  rt_gate_open(&g);
  rt_thread_join(&waiting);
  if (!finished)
    rt_thread_join(&calling);
  ck_assert_msg(finished, "calls on the runtime waited for witness_wait");
  ck_assert_int_eq(c.failures, 0);
  ck_assert(still_waiting);
  ck_assert_int_eq(x.rc, T4A_OK);
  RT_OK(T->witness_wait(c.w, T4A_WAIT_FOREVER));
  unsigned char back[4096];
  RT_OK(T->copy_d2h(rt, back, c.d, 0, sizeof back));
  ck_assert(memcmp(back, c.p, sizeof back) == 0);
  RT_OK(T->witness_release(x.w));
  RT_OK(T->witness_release(c.w));
  RT_OK(T->host_free(rt, c.h));
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* A wait without a timeout that outlasts its spin blocks in the driver
 * (the pinned event's cuEventSynchronize), without polling meanwhile; once
 * the driver says the event completed, the seal is known complete without
 * a query to learn it again (t4a__rt_progress_known). On the fake driver
 * its calls are counted; elsewhere the wait's result is checked. */
START_TEST(a_long_wait_blocks_in_the_driver_and_asks_no_more) {
  t4a_runtime rt = rt_create();
  rt_gate g;
  waiter x;
  seal_behind_gate(rt, &g, &x);
  uint64_t syncs = rt_fake_calls("cuEventSynchronize");
  rt_thread waiting;
  rt_thread_start(&waiting, wait_forever, &x);
  ck_assert_msg(!rt_thread_wait(&waiting, 0.1), "the wait returned before the gate opened");
  /* 100 ms: far past the 20 us spin, so the waiter is in the driver */
  uint64_t queries = rt_fake_calls("cuEventQuery");
  ck_assert_msg(!rt_thread_wait(&waiting, 0.05), "the wait returned before the gate opened");
  if (rt_on_fake()) /* blocked: no polling */
    ck_assert_uint_eq(rt_fake_calls("cuEventQuery"), queries);
  rt_gate_open(&g);
  rt_thread_join(&waiting);
  ck_assert_int_eq(x.rc, T4A_OK);
  if (rt_on_fake()) {
    ck_assert_uint_eq(rt_fake_calls("cuEventQuery"), queries);
    ck_assert_uint_eq(rt_fake_calls("cuEventSynchronize") - syncs, 1);
  }
  RT_OK(T->witness_query(x.w)); /* complete, and known so */
  RT_OK(T->witness_release(x.w));
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* A finite timeout whose deadline overflows (UINT64_MAX - 1 ns from now,
 * some 584 years) waits like T4A_WAIT_FOREVER: it neither times out at
 * once nor returns before the work is done. */
START_TEST(a_deadline_that_overflows_still_waits) {
  t4a_runtime rt = rt_create();
  rt_gate g;
  waiter x;
  seal_behind_gate(rt, &g, &x);
  rt_thread waiting;
  rt_thread_start(&waiting, wait_very_long, &x);
  bool returned = rt_thread_wait(&waiting, 0.2);
  rt_gate_open(&g);
  if (!returned)
    rt_thread_join(&waiting);
  ck_assert_msg(!returned, "witness_wait(w, UINT64_MAX - 1) returned %s before the work ran",
                t4a_status_name(x.rc));
  ck_assert_int_eq(x.rc, T4A_OK);
  RT_OK(T->witness_query(x.w));
  RT_OK(T->witness_release(x.w));
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- retirement ------------------------------------------------------------------- */

START_TEST(pinned_buffer_is_not_reused_while_a_copy_is_pending) {
  t4a_runtime rt = rt_create();
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, (64 * KiB), &d));
  rt_gate g;
  rt_gate_close(&g, rt);
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, (64 * KiB), 0, &h, &p));
  t4a_test_fill_random(p, (64 * KiB), 99);
  RT_OK(T->copy_h2d_pinned(rt, d, 0, h, 0, (64 * KiB)));
  RT_OK(T->host_free(rt, h)); /* the copy has not run: the block must wait */
  ck_assert_uint_eq(rt_counters(rt).pending_retirements, 1);
  t4a_host_buffer h2;
  void *p2;
  RT_OK(T->host_alloc(rt, (64 * KiB), 0, &h2, &p2));
  ck_assert_ptr_ne(p2, p); /* not handed out again */
  memset(p2, 0, (64 * KiB));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  ck_assert_uint_eq(rt_counters(rt).pending_retirements, 1);
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  ck_assert_uint_eq(rt_counters(rt).pending_retirements, 0);
  /* the device got the data the block held when the copy ran */
  unsigned char *back = malloc((64 * KiB)), *want = malloc((64 * KiB));
  t4a_test_fill_random(want, (64 * KiB), 99);
  RT_OK(T->copy_d2h(rt, back, d, 0, (64 * KiB)));
  ck_assert(memcmp(back, want, (64 * KiB)) == 0);
  free(back);
  free(want);
  RT_OK(T->witness_release(w));
  RT_OK(T->host_free(rt, h2));
  rt_gate_free(&g);
  t4a_cache_stats s = rt_cache(rt);
  if (rt_on_host()) /* no pinned cache: released host buffers are unmapped */
    ck_assert_uint_eq(s.pinned_entries, 0);
  else
    ck_assert_uint_ge(s.pinned_entries, 1); /* released blocks went to the pinned cache */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

static void count_release(void *user) { __atomic_add_fetch((int *)user, 1, __ATOMIC_SEQ_CST); }

/* A retirement waits for a seal covering its work, not only for the work:
 * the library never seals behind the consumer's back (design.md). A host
 * buffer and an external buffer (another runtime's memory) are freed with
 * queued work on them (behind a gate); the work then runs (a pageable copy
 * behind it returned) and natural points pass, without a seal: both stay
 * pending. A seal releases them. */
START_TEST(a_retirement_waits_for_a_seal_covering_its_work) {
  const uint64_t n = 64 * KiB;
  t4a_runtime owner = rt_create(), rt = rt_create();
  t4a_buffer d, mem, ext, tmp;
  RT_OK(T->buffer_alloc(rt, n, &d));
  RT_OK(T->buffer_alloc(owner, n, &mem));
  RT_OK(T->memset(owner, mem, 0, 0, 1, n));
  rt_sync(owner);
  uint64_t address = 0;
  RT_OK(T->buffer_device_address(owner, mem, &address));
  int released = 0;
  t4a_external_memory m = {.struct_size = sizeof m,
                           .address = address,
                           .bytes = n,
                           .device_ordinal = 0,
                           .release = count_release,
                           .user = &released};
  RT_OK(T->buffer_wrap_external(rt, &m, &ext));
  t4a_witness before;
  RT_OK(T->seal(rt, &before)); /* covers nothing of what follows */
  RT_OK(T->witness_wait(before, T4A_WAIT_FOREVER));
  rt_gate g;
  rt_gate_close(&g, rt);
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, n, 0, &h, &p));
  t4a_test_fill_random(p, n, 7);
  RT_OK(T->copy_h2d_pinned(rt, d, 0, h, 0, n));
  RT_OK(T->memset(rt, ext, 0, 0x5a, 1, n));
  RT_OK(T->host_free(rt, h));
  RT_OK(T->buffer_free(rt, ext));
  ck_assert_uint_ge(rt_counters(rt).pending_retirements, 1);
  rt_gate_open(&g);
  unsigned char *back = malloc(n), *want = malloc(n);
  RT_OK(T->copy_d2h(rt, back, d, 0, n)); /* returns after the work ahead of it ran */
  t4a_test_fill_random(want, n, 7);
  ck_assert(memcmp(back, want, n) == 0);
  /* natural points, none a seal: nothing is released */
  for (int i = 0; i < 3; i++) {
    RT_OK(T->witness_query(before));
    RT_OK(T->witness_wait(before, 0));
    RT_OK(T->buffer_alloc(rt, 64, &tmp));
    RT_OK(T->buffer_free(rt, tmp));
  }
  ck_assert_int_eq(__atomic_load_n(&released, __ATOMIC_SEQ_CST), 0);
  ck_assert_uint_ge(rt_counters(rt).pending_retirements, 1);
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  ck_assert_uint_eq(rt_counters(rt).pending_retirements, 0);
  ck_assert_int_eq(__atomic_load_n(&released, __ATOMIC_SEQ_CST), 1);
  RT_OK(T->copy_d2h(owner, back, mem, 0, n)); /* the memset ran before the release */
  memset(want, 0x5a, n);
  ck_assert(memcmp(back, want, n) == 0);
  RT_OK(T->witness_release(w));
  RT_OK(T->witness_release(before));
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  ck_assert_int_eq(__atomic_load_n(&released, __ATOMIC_SEQ_CST), 1);
  RT_OK(T->runtime_destroy(owner, T4A_WAIT_FOREVER));
  free(back);
  free(want);
}
END_TEST

/* ---- raw seam -------------------------------------------------------------------- */

START_TEST(raw_seam_work_is_ordered_and_sealed) {
  t4a_runtime rt = rt_create();
  uint64_t n = 1 << 20;
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n * 4, &d));
  uint32_t *host = malloc(n * 4);
  for (uint64_t i = 0; i < n; i++)
    host[i] = (uint32_t)i;
  RT_OK(T->copy_h2d(rt, d, 0, host, n * 4));
  rt_sync(rt);
  uint64_t before = rt_counters(rt).seal_events_recorded;
  /* consumer work on the raw stream, between runtime copies */
  uint64_t addr;
  RT_OK(T->buffer_device_address(rt, d, &addr));
  uint32_t value = 0xc0ffee;
  uint64_t half = n / 2;
  void *args[] = {&addr, &value, &half};
  void *module = NULL;
  rt_raw_launch(rt, &module, "t4a_fill_u32", args);
  t4a_witness w;
  RT_OK(T->seal(rt, &w)); /* covers the raw work */
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, before + 1);
  ck_assert_uint_eq(rt_counters(rt).raw_sections, 1);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->copy_d2h(rt, host, d, 0, n * 4));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(host[i], i < half ? value : (uint32_t)i);
  RT_OK(T->witness_release(w));
  rt_raw_unload(rt, module);
  free(host);
  t4a_raw_section s = {.struct_size = sizeof s};
  RT_OK(T->raw_begin(rt, &s));
  t4a_runtime other = rt_create();
  RT_EXPECT(T->raw_end(other, &s), T4A_EINVAL);
  RT_OK(T->raw_end(rt, &s));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

static t4a__CUcontext current_context(void) {
  t4a__CUresult (*get)(t4a__CUcontext *);
  *(void **)&get = rt_driver("cuCtxGetCurrent");
  t4a__CUcontext c = (t4a__CUcontext)(uintptr_t)1;
  ck_assert_int_eq(get(&c), 0);
  return c;
}

static void set_context(t4a__CUcontext c) {
  t4a__CUresult (*set)(t4a__CUcontext);
  *(void **)&set = rt_driver("cuCtxSetCurrent");
  ck_assert_int_eq(set(c), 0);
}

/* raw_begin makes the runtime's context current and raw_end restores the
 * previous one, whatever it was (none, or another device's); pairs nest,
 * last begun first ended. */
START_TEST(raw_sections_restore_the_context_and_nest) {
  int32_t count = 0;
  RT_OK(T->device_count(&count));
  t4a_runtime a = rt_create(), b = {0};
  if (count >= 2)
    RT_OK(T->runtime_create(1, NULL, &b));
  else
    b = rt_create();
  t4a_raw_runtime ra = {.struct_size = sizeof ra}, rb = {.struct_size = sizeof rb};
  RT_OK(T->raw_runtime(a, &ra));
  RT_OK(T->raw_runtime(b, &rb));
  /* from no context */
  set_context(NULL);
  t4a_raw_section outer = {.struct_size = sizeof outer}, inner = {.struct_size = sizeof inner};
  RT_OK(T->raw_begin(a, &outer));
  ck_assert_ptr_eq(current_context(), ra.context);
  RT_OK(T->raw_begin(b, &inner));
  ck_assert_ptr_eq(current_context(), rb.context);
  RT_OK(T->raw_end(b, &inner));
  ck_assert_ptr_eq(current_context(), ra.context);
  RT_OK(T->raw_end(a, &outer));
  ck_assert_ptr_null(current_context());
  /* from another context: b's (another device's when there are two) */
  set_context(rb.context);
  RT_OK(T->raw_begin(a, &outer));
  ck_assert_ptr_eq(current_context(), ra.context);
  RT_OK(T->raw_end(a, &outer));
  ck_assert_ptr_eq(current_context(), rb.context);
  ck_assert_uint_eq(rt_counters(a).raw_sections, 2);
  ck_assert_uint_eq(rt_counters(b).raw_sections, 1);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

int main(void) {
  Suite *s = rt_suite("completion");
  TCase *tc;
  tc = rt_tcase(s, "seal", 60);
  tcase_add_test(tc, one_seal_records_one_event);
  tcase_add_test(tc, seal_with_nothing_enqueued_is_ready);
  tcase_add_test(tc, events_are_recycled);
  tcase_add_test(tc, completion_records_outlive_their_witnesses_while_queued);
  tc = rt_tcase(s, "witness", 60);
  tcase_add_test(tc, witness_query_wait_and_timeout);
  tcase_add_test(tc, witness_outlives_its_runtime);
  tcase_add_test(tc, a_runtime_waits_for_another_runtimes_witness);
  tcase_add_test(tc, witness_wait_does_not_hold_the_runtime);
  tcase_add_test(tc, a_deadline_that_overflows_still_waits);
  tcase_add_test(tc, a_long_wait_blocks_in_the_driver_and_asks_no_more);
  tc = rt_tcase(s, "retirement", 60);
  tcase_add_test(tc, pinned_buffer_is_not_reused_while_a_copy_is_pending);
  tcase_add_test(tc, a_retirement_waits_for_a_seal_covering_its_work);
  tc = rt_tcase(s, "raw-seam", 60);
  RT_CUDA_ONLY(tc, raw_seam_work_is_ordered_and_sealed,
               "a consumer kernel on the raw CUstream; the host's raw-seam slots are NULL");
  RT_CUDA_ONLY(tc, raw_sections_restore_the_context_and_nest,
               "CUDA contexts made current by raw_begin; the host's raw-seam slots are NULL");
  return rt_run(s, 1);
}
