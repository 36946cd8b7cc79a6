/* tests/runtime/test_transfer.c -- transfers within one runtime: pinned and
 * pageable copies both ways, the staging bound, device-to-device copies,
 * range and argument checks. Fake and GPU lanes (see test_runtime.c). */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/runtime/rtutil.h"

#define KiB 1024ull
#define MiB (1ull << 20)

/* ---- pinned and pageable round trips ---------------------------------------------- */

/* Uploads random bytes at an odd offset with one method, downloads them with
 * another into a poisoned destination, and compares. */
static void roundtrip(t4a_runtime rt, uint64_t n, uint64_t off, bool pinned_up, bool pinned_down,
                      uint64_t seed) {
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n + off + 3, &d));
  unsigned char *src = malloc(n + 1), *dst = malloc(n + 1);
  ck_assert(src && dst);
  t4a_test_fill_random(src, n + 1, seed);
  memset(dst, 0xee, n + 1);
  t4a_host_buffer hup = {0}, hdown = {0};
  void *pup = NULL, *pdown = NULL;
  if (pinned_up) {
    RT_OK(T->host_alloc(rt, n + 1, 0, &hup, &pup));
    memcpy((char *)pup + 1, src, n);
    RT_OK(T->copy_h2d_pinned(rt, d, off, hup, 1, n));
  } else {
    RT_OK(T->copy_h2d(rt, d, off, src, n));
  }
  if (pinned_down) {
    RT_OK(T->host_alloc(rt, n + 1, 0, &hdown, &pdown));
    memset(pdown, 0xee, n + 1);
    RT_OK(T->copy_d2h_pinned(rt, hdown, 1, d, off, n));
    rt_sync(rt);
    memcpy(dst, (char *)pdown + 1, n);
  } else {
    RT_OK(T->copy_d2h(rt, dst, d, off, n));
  }
  ck_assert_msg(memcmp(src, dst, n) == 0, "%llu bytes at offset %llu (%s up, %s down) differ",
                (unsigned long long)n, (unsigned long long)off, pinned_up ? "pinned" : "pageable",
                pinned_down ? "pinned" : "pageable");
  ck_assert_uint_eq(dst[n], 0xee); /* nothing written past the end */
  if (pinned_up)
    RT_OK(T->host_free(rt, hup));
  if (pinned_down)
    RT_OK(T->host_free(rt, hdown));
  RT_OK(T->buffer_free(rt, d));
  free(src);
  free(dst);
}

START_TEST(transfers_are_bit_exact) {
  /* a small staging bound, so that large copies cycle through it */
  t4a_runtime rt = rt_create_with(1 * MiB, 0);
  static const uint64_t sizes[] = {0, 1, 3, 4097, 1 * MiB, 64 * MiB + 7};
  uint64_t seed = t4a_test_seed();
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int mode = 0; mode < 4; mode++)
      roundtrip(rt, sizes[i], 2 * i + 1, mode & 1, mode & 2, seed + i * 4 + (uint64_t)mode);
  t4a_runtime_counters c = rt_counters(rt);
  ck_assert_uint_le(c.staging_peak_bytes, c.staging_bytes);
  if (rt_on_host()) { /* the host copies pageable memory directly: no staging in use, ever */
    ck_assert_uint_eq(c.staging_peak_bytes, 0);
    ck_assert_uint_eq(c.staging_events_recorded, 0);
  } else {
    ck_assert_uint_eq(c.staging_peak_bytes, c.staging_bytes); /* used it all, never more */
  }
  ck_assert_uint_eq(c.staging_bytes, 1 * MiB);
  ck_assert_uint_gt(c.copies_h2d_pageable, 0);
  ck_assert_uint_gt(c.copies_h2d_pinned, 0);
  ck_assert_uint_gt(c.copies_d2h_pageable, 0);
  ck_assert_uint_gt(c.copies_d2h_pinned, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(large_transfers_through_default_staging) {
  t4a_runtime rt = rt_create();
  /* several times the 64 MiB staging; under a sanitizer (or on the fake)
   * the smallest size that still wraps it */
  uint64_t n = rt_on_fake() || rt_scaled(2) < 2 ? 100 * MiB : 300 * MiB;
  roundtrip(rt, n, 5, false, false, t4a_test_seed());
  roundtrip(rt, n, 3, true, true, t4a_test_seed() + 1);
  t4a_runtime_counters c = rt_counters(rt);
  ck_assert_uint_eq(c.staging_peak_bytes, rt_on_host() ? 0 : 64 * MiB); /* host: no staging */
  ck_assert_uint_eq(c.bytes_h2d, 2 * n);
  ck_assert_uint_eq(c.bytes_d2h, 2 * n);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- device to device ------------------------------------------------------------ */

START_TEST(device_to_device_copies) {
  t4a_runtime rt = rt_create();
  uint64_t n = 3 * MiB + 11;
  unsigned char *src = malloc(n), *dst = malloc(n);
  t4a_test_fill_random(src, n, t4a_test_seed());
  t4a_buffer a, b;
  RT_OK(T->buffer_alloc(rt, n, &a));
  RT_OK(T->buffer_alloc(rt, n + 100, &b));
  RT_OK(T->copy_h2d(rt, a, 0, src, n));
  RT_OK(T->copy_d2d(rt, b, 99, a, 0, n));
  RT_OK(T->copy_d2h(rt, dst, b, 99, n));
  ck_assert(memcmp(src, dst, n) == 0);
  /* within one buffer, disjoint regions are fine, overlapping ones refused */
  RT_OK(T->copy_d2d(rt, a, 0, a, n / 2, n / 2));
  RT_EXPECT(T->copy_d2d(rt, a, 0, a, 10, 100), T4A_EINVAL);
  RT_DETAIL("overlap");
  RT_OK(T->copy_d2h(rt, dst, a, 0, n / 2));
  ck_assert(memcmp(src + n / 2, dst, n / 2) == 0);
  ck_assert_uint_eq(rt_counters(rt).copies_d2d, 2);
  /* one shared byte is an overlap, either way round; regions that only
   * touch are not (a now holds src's second half at its start) */
  RT_EXPECT(T->copy_d2d(rt, a, 0, a, 99, 100), T4A_EINVAL); /* byte 99 is in both */
  RT_DETAIL("overlap");
  RT_EXPECT(T->copy_d2d(rt, a, 99, a, 0, 100), T4A_EINVAL);
  RT_DETAIL("overlap");
  RT_OK(T->copy_d2d(rt, a, 0, a, 100, 100));
  RT_OK(T->copy_d2d(rt, a, 300, a, 200, 100));
  RT_OK(T->copy_d2h(rt, dst, a, 0, 400));
  ck_assert(memcmp(dst, src + n / 2 + 100, 100) == 0);
  ck_assert(memcmp(dst + 100, src + n / 2 + 100, 200) == 0);
  ck_assert(memcmp(dst + 300, src + n / 2 + 200, 100) == 0);
  ck_assert_uint_eq(rt_counters(rt).copies_d2d, 4);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(src);
  free(dst);
}
END_TEST

/* Large operations on an idle runtime keep their order with what follows:
 * on the host backend they start on the caller's thread over the copy
 * threads and finish on the worker (queue.h, t4a__queue_early), so the
 * work enqueued right behind them (a copy out of what a fill writes, a
 * fill over it, another runtime's copy, a pageable copy into a block
 * freed and taken again, a destroy) must wait for them. Checked bit for
 * bit against the CPU. */
START_TEST(large_operations_on_an_idle_runtime_keep_their_order) {
  t4a_runtime rt = rt_create(), other = rt_create();
  const uint64_t n = 16 * MiB + 36;
  unsigned char *ref = malloc(n), *got = malloc(n), *in = malloc(n);
  t4a_test_fill_random(in, n, t4a_test_seed());
  t4a_buffer a, b, c;
  RT_OK(T->buffer_alloc(rt, n, &a));
  RT_OK(T->buffer_alloc(rt, n, &b));
  RT_OK(T->buffer_alloc(other, n, &c));
  RT_OK(T->copy_h2d(rt, b, 0, in, n));
  rt_sync(rt);
  RT_OK(T->memset(rt, a, 0, 0x1234abcdu, 4, n / 4)); /* idle: the large fill */
  RT_OK(T->copy_d2d(rt, b, 4, a, 0, n - 4));         /* right behind it */
  RT_OK(T->memset(rt, a, 4096, 0x3c, 1, 8 * MiB));   /* over what the copy reads */
  RT_OK(T->copy_from_runtime(other, c, 0, rt, a, 0, n));
  for (uint64_t i = 0; i + 4 <= n; i += 4)
    memcpy(ref + i, &(uint32_t){0x1234abcdu}, 4);
  RT_OK(T->copy_d2h(rt, got, b, 4, n - 4));
  ck_assert_msg(memcmp(got, ref, n - 4) == 0, "the copy behind the fill");
  memset(ref + 4096, 0x3c, 8 * MiB);
  RT_OK(T->copy_d2h(rt, got, a, 0, n));
  ck_assert_msg(memcmp(got, ref, n) == 0, "the second fill");
  rt_sync(other);
  RT_OK(T->copy_d2h(other, got, c, 0, n));
  ck_assert_msg(memcmp(got, ref, n) == 0, "the other runtime's copy");
  /* a block freed under a large fill and taken again: what is written next wins */
  rt_sync(rt);
  RT_OK(T->memset(rt, b, 0, 0x77, 1, n));
  RT_OK(T->buffer_free(rt, b));
  RT_OK(T->buffer_alloc(rt, n, &b));
  RT_OK(T->copy_h2d(rt, b, 0, in, n));
  RT_OK(T->copy_d2h(rt, got, b, 0, n));
  ck_assert_msg(memcmp(got, in, n) == 0, "a block taken again after a large fill");
  /* a large copy, then the destroy */
  rt_sync(rt);
  RT_OK(T->copy_d2d(rt, a, 0, b, 0, n));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  free(ref);
  free(got);
  free(in);
}
END_TEST

/* ---- ranges and arguments -------------------------------------------------------- */

START_TEST(ranges_and_arguments_are_checked) {
  t4a_runtime rt = rt_create(), other = rt_create();
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 100, &d));
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, 100, 0, &h, &p));
  char buf[128];
  RT_EXPECT(T->copy_h2d(rt, d, 1, buf, 100), T4A_ERANGE);
  RT_DETAIL(rt_on_host() ? "run past its 100 bytes" : "exceeds its 100 bytes");
  RT_EXPECT(T->copy_d2h(rt, buf, d, 100, 1), T4A_ERANGE);
  RT_EXPECT(T->copy_d2h(rt, buf, d, UINT64_MAX, 2), T4A_ERANGE); /* overflow */
  RT_EXPECT(T->copy_h2d_pinned(rt, d, 0, h, 50, 51), T4A_ERANGE);
  RT_EXPECT(T->copy_d2h_pinned(rt, h, 0, d, 0, 101), T4A_ERANGE);
  RT_EXPECT(T->copy_d2d(rt, d, 0, d, 60, 41), T4A_ERANGE);
  RT_EXPECT(T->copy_h2d(rt, d, 0, NULL, 1), T4A_EINVAL);
  RT_EXPECT(T->copy_d2h(rt, NULL, d, 0, 1), T4A_EINVAL);
  RT_OK(T->copy_h2d(rt, d, 100, NULL, 0)); /* zero bytes at the end: a no-op */
  RT_EXPECT(T->copy_h2d_pinned(other, d, 0, h, 0, 1), T4A_EHANDLE);
  t4a_host_buffer h2;
  RT_OK(T->host_alloc(other, 8, 0, &h2, &p));
  RT_EXPECT(T->copy_h2d_pinned(rt, d, 0, h2, 0, 1), T4A_EHANDLE);
  RT_DETAIL("belongs to runtime");
  RT_EXPECT(T->host_alloc(rt, 0, 0, &h2, &p), T4A_EINVAL);
  RT_EXPECT(T->host_alloc(rt, 8, 0x80, &h2, &p), T4A_EINVAL);
  RT_EXPECT(T->host_alloc(rt, 8, 0, NULL, &p), T4A_EINVAL);
  RT_OK(T->host_free(rt, h));
  RT_EXPECT(T->host_free(rt, h), T4A_EHANDLE);
  ck_assert_uint_eq(rt_counters(rt).copies_h2d_pageable, 0); /* the no-op was not counted */
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- what a pageable copy promises ------------------------------------------------ */

/* copy_h2d returns once the source was consumed: overwriting it right
 * after the call must not change what the device gets, both while the
 * device write is still held back (a gate) and for a copy several times the
 * staging bound. The host has no staging to consume the source into: its
 * copy_h2d behind a closed gate waits for the work ahead (the header allows
 * a staged pageable copy to wait), so there the gate is opened by another
 * thread 50 ms later and the copy must have waited for it. */
START_TEST(h2d_source_is_reusable_on_return) {
  t4a_runtime rt = rt_create_with(1 * MiB, 0);
  uint64_t small = 256 * KiB + 3, large = 5 * MiB + 7; /* small fits the staging */
  unsigned char *src = malloc(large), *want = malloc(large), *back = malloc(large);
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, large, &d));
  rt_gate g;
  rt_gate_close(&g, rt);
  t4a_test_fill_random(want, small, t4a_test_seed());
  memcpy(src, want, small);
  if (rt_on_host())
    rt_gate_open_later(&g, 50);
  RT_OK(T->copy_h2d(rt, d, 0, src, small));
  if (rt_on_host())
    ck_assert_msg(rt_gate_is_open(&g), "copy_h2d ran ahead of the gate");
  memset(src, 0, small); /* the device write has not even started (CUDA) */
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  if (!rt_on_host())
    RT_EXPECT(T->witness_query(w), T4A_ENOTREADY);
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  memset(back, 0xee, small);
  RT_OK(T->copy_d2h(rt, back, d, 0, small));
  ck_assert(memcmp(back, want, small) == 0);
  rt_gate_free(&g);
  t4a_test_fill_random(want, large, t4a_test_seed() + 1);
  memcpy(src, want, large);
  RT_OK(T->copy_h2d(rt, d, 0, src, large));
  t4a_test_fill_random(src, large, t4a_test_seed() + 2); /* new data, at once */
  memset(back, 0xee, large);
  RT_OK(T->copy_d2h(rt, back, d, 0, large));
  ck_assert(memcmp(back, want, large) == 0);
  /* a source in pinned memory (the runtime's own host buffer) is no
   * different: consumed on return, even while the device is held back */
  t4a_host_buffer hb;
  void *pinned;
  RT_OK(T->host_alloc(rt, small, 0, &hb, &pinned));
  t4a_test_fill_random(want, small, t4a_test_seed() + 3);
  memcpy(pinned, want, small);
  rt_gate_close(&g, rt);
  if (rt_on_host())
    rt_gate_open_later(&g, 50);
  RT_OK(T->copy_h2d(rt, d, 0, pinned, small));
  if (rt_on_host())
    ck_assert(rt_gate_is_open(&g));
  memset(pinned, 0, small);
  rt_gate_open(&g);
  memset(back, 0xee, small);
  RT_OK(T->copy_d2h(rt, back, d, 0, small));
  ck_assert(memcmp(back, want, small) == 0);
  RT_OK(T->host_free(rt, hb));
  rt_gate_free(&g);
  free(src);
  free(want);
  free(back);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

typedef struct blocked_copy {
  t4a_runtime rt;
  t4a_buffer src;
  unsigned char *dst;
  uint64_t n;
  int rc;
} blocked_copy;

static void *copy_d2h_thread(void *arg) {
  blocked_copy *c = arg;
  c->rc = T->copy_d2h(c->rt, c->dst, c->src, 0, c->n); /* waits behind a's gate */
  return NULL;
}

typedef struct other_work {
  t4a_runtime rt;
  uint64_t n, seed;
  int failures;
} other_work;

/* A round of everything on runtime b: alloc, both pageable copies, a
 * device-to-device copy, seal and wait, free. */
static void *other_runtime_round(void *arg) {
  other_work *o = arg;
  unsigned char *x = malloc(o->n), *y = malloc(o->n);
  t4a_test_fill_random(x, o->n, o->seed);
  memset(y, 0, o->n);
  t4a_buffer d = {0}, e = {0};
  t4a_witness w = {0};
  if (T->buffer_alloc(o->rt, o->n, &d) || T->buffer_alloc(o->rt, o->n, &e) ||
      T->copy_h2d(o->rt, d, 0, x, o->n) || T->copy_d2d(o->rt, e, 0, d, 0, o->n) ||
      T->copy_d2h(o->rt, y, e, 0, o->n) || memcmp(x, y, o->n) != 0 || T->seal(o->rt, &w) ||
      T->witness_wait(w, T4A_WAIT_FOREVER) || T->witness_release(w) || T->buffer_free(o->rt, d) ||
      T->buffer_free(o->rt, e))
    o->failures++;
  free(x);
  free(y);
  return NULL;
}

/* A call blocked on one runtime (a pageable copy_d2h waiting for a gate)
 * delays calls on the same runtime, never calls on another one: b's round
 * must end while a's copy is still blocked (within a bound, so that a
 * regression fails here instead of deadlocking). */
START_TEST(a_blocked_runtime_never_delays_another) {
  t4a_runtime a = rt_create(), b = rt_create();
  uint64_t n = 64 * KiB;
  unsigned char *want = malloc(n), *got = malloc(n);
  t4a_test_fill_random(want, n, t4a_test_seed());
  t4a_buffer src;
  RT_OK(T->buffer_alloc(a, n, &src));
  RT_OK(T->copy_h2d(a, src, 0, want, n));
  rt_gate g;
  rt_gate_close(&g, a);
  memset(got, 0xee, n);
  blocked_copy c = {a, src, got, n, -1};
  rt_thread blocked, other;
  rt_thread_start(&blocked, copy_d2h_thread, &c);
  ck_assert_msg(!rt_thread_wait(&blocked, 0.1), "a's copy did not wait for its gate");
  other_work o = {b, n, t4a_test_seed() + 1, 0};
  rt_thread_start(&other, other_runtime_round, &o);
  bool finished = rt_thread_wait(&other, 10);
  bool still_blocked = !__atomic_load_n(&blocked.done, __ATOMIC_SEQ_CST);
  rt_gate_open(&g);
  rt_thread_join(&blocked);
  if (!finished)
    rt_thread_join(&other);
  ck_assert_msg(finished, "runtime b was delayed by runtime a's blocked copy");
  ck_assert_int_eq(o.failures, 0);
  ck_assert(still_blocked);
  ck_assert_int_eq(c.rc, T4A_OK);
  ck_assert(memcmp(want, got, n) == 0);
  rt_gate_free(&g);
  free(want);
  free(got);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

int main(void) {
  Suite *s = rt_suite("transfer");
  TCase *tc;
  tc = rt_tcase(s, "roundtrips", 300);
  tcase_add_test(tc, transfers_are_bit_exact);
  tcase_add_test(tc, large_transfers_through_default_staging);
  tc = rt_tcase(s, "device-to-device", 60);
  tcase_add_test(tc, device_to_device_copies);
  tcase_add_test(tc, large_operations_on_an_idle_runtime_keep_their_order);
  tc = rt_tcase(s, "pageable-promises", 60);
  tcase_add_test(tc, h2d_source_is_reusable_on_return);
  tcase_add_test(tc, a_blocked_runtime_never_delays_another);
  tc = rt_tcase(s, "arguments", 60);
  tcase_add_test(tc, ranges_and_arguments_are_checked);
  return rt_run(s, 1);
}
