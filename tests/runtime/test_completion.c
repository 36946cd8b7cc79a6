/* tests/runtime/test_completion.c -- completion: seal and its one event,
 * witnesses (query, wait, timeout, lifetime, waits across runtimes),
 * retirement of resources behind pending work, and the raw seam whose work
 * seals cover. Fake and GPU lanes (see test_runtime.c). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

#define KiB 1024ull
#define MiB (1ull << 20)

/* ---- seal ---------------------------------------------------------------------- */

START_TEST(one_seal_records_one_event) {
  t4a_runtime rt = rt_create();
  t4a_buffer a, b;
  RT_OK(T->buffer_alloc(rt, MiB, &a));
  RT_OK(T->buffer_alloc(rt, MiB, &b));
  rt_sync(rt); /* the pageable copies' staging is not what we count */
  t4a_runtime_counters before = rt_counters(rt);
  for (int i = 0; i < 100; i++)
    RT_OK(T->copy_d2d(rt, i & 1 ? a : b, 0, i & 1 ? b : a, 0, MiB));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  t4a_runtime_counters after = rt_counters(rt);
  ck_assert_uint_eq(after.seal_events_recorded - before.seal_events_recorded, 1);
  ck_assert_uint_eq(after.seals - before.seals, 1);
  /* nothing new: no event, and the witness covers the previous point */
  t4a_witness w2;
  RT_OK(T->seal(rt, &w2));
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, after.seal_events_recorded);
  RT_OK(T->witness_query(w2));
  ck_assert_uint_le(rt_counters(rt).events_created, after.events_created);
  RT_OK(T->witness_release(w));
  RT_OK(T->witness_release(w2));
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
  ck_assert_uint_ge(s.pinned_entries, 1); /* released blocks went to the pinned cache */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
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

int main(void) {
  Suite *s = rt_suite("completion");
  TCase *tc;
  tc = rt_tcase(s, "seal", 60);
  tcase_add_test(tc, one_seal_records_one_event);
  tcase_add_test(tc, seal_with_nothing_enqueued_is_ready);
  tc = rt_tcase(s, "witness", 60);
  tcase_add_test(tc, witness_query_wait_and_timeout);
  tcase_add_test(tc, witness_outlives_its_runtime);
  tcase_add_test(tc, a_runtime_waits_for_another_runtimes_witness);
  tc = rt_tcase(s, "retirement", 60);
  tcase_add_test(tc, pinned_buffer_is_not_reused_while_a_copy_is_pending);
  tc = rt_tcase(s, "raw-seam", 60);
  tcase_add_test(tc, raw_seam_work_is_ordered_and_sealed);
  return rt_run(s, 1);
}
