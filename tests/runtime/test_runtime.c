/* tests/runtime/test_runtime.c -- runtimes and their memory: create and
 * destroy, options, device buffers and handle validation, the block cache,
 * pinned host buffers.
 *
 * Every suite in tests/runtime runs twice: against the fake driver
 * (tests/cpu/test_<suite>_fake, under make check and CI) and on the GPU
 * (tests/gpu/test_<suite>_gpu, under make check-gpu): behaviour must agree. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

#define KiB 1024ull
#define MiB (1ull << 20)

/* ---- runtimes --------------------------------------------------------------- */

START_TEST(runtime_create_and_destroy) {
  t4a_runtime a = rt_create(), b = rt_create();
  ck_assert(a.bits != b.bits);
  t4a_raw_runtime ra = {.struct_size = sizeof ra}, rb = {.struct_size = sizeof rb};
  RT_OK(T->raw_runtime(a, &ra));
  RT_OK(T->raw_runtime(b, &rb));
  ck_assert_ptr_nonnull(ra.stream);
  ck_assert_ptr_ne(ra.stream, rb.stream);   /* one stream each */
  ck_assert_ptr_eq(ra.context, rb.context); /* the device's primary context */
  ck_assert_int_eq(ra.device_ordinal, 0);
  t4a_runtime_counters c = rt_counters(a);
  ck_assert_uint_eq(c.struct_size, sizeof c);
  ck_assert_uint_eq(c.staging_bytes, 64 * MiB);
  ck_assert_uint_eq(c.seals, 0);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_EXPECT(T->runtime_destroy(a, T4A_WAIT_FOREVER), T4A_EHANDLE);
  RT_DETAIL("destroyed");
  RT_OK(T->runtime_destroy(b, 0));
}
END_TEST

START_TEST(runtime_options_are_checked) {
  t4a_runtime rt = {0};
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = 1};
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("flags");
  o.flags = 0;
  o.struct_size = 8;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("struct_size is 8");
  o.struct_size = sizeof o;
  o.staging_bytes = 1024;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("staging_bytes");
  o.staging_bytes = 0;
  o.copy_threads = 1000;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_EXPECT(T->runtime_create(-1, NULL, &rt), T4A_EINVAL);
  RT_EXPECT(T->runtime_create(64, NULL, &rt), T4A_EINVAL);
  RT_EXPECT(T->runtime_create(0, NULL, NULL), T4A_EINVAL);
  ck_assert(rt.bits == 0);
  /* a newer caller's bigger options struct is fine */
  struct {
    t4a_runtime_options v1;
    uint64_t future;
  } big;
  memset(&big, 0, sizeof big);
  big.v1.struct_size = sizeof big;
  big.v1.staging_bytes = 1 * MiB;
  RT_OK(T->runtime_create(0, &big.v1, &rt));
  ck_assert_uint_eq(rt_counters(rt).staging_bytes, 1 * MiB);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(destroy_waits_for_outstanding_work) {
  t4a_runtime rt = rt_create();
  rt_gate g;
  rt_gate_close(&g, rt);
  RT_EXPECT(T->runtime_destroy(rt, 1000000), T4A_ETIMEOUT); /* 1 ms */
  RT_DETAIL("nothing was released");
  t4a_buffer d; /* still usable */
  RT_OK(T->buffer_alloc(rt, 16, &d));
  rt_gate_open(&g);
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- buffers and handles ------------------------------------------------------ */

START_TEST(buffers_and_handle_validation) {
  t4a_runtime a = rt_create(), b = rt_create();
  t4a_buffer x, z;
  RT_OK(T->buffer_alloc(a, 1000, &x));
  RT_OK(T->buffer_alloc(a, 0, &z)); /* zero bytes is valid */
  uint64_t n = 1;
  RT_OK(T->buffer_size(a, z, &n));
  ck_assert_uint_eq(n, 0);
  RT_OK(T->buffer_size(a, x, &n));
  ck_assert_uint_eq(n, 1000);
  uint64_t addr = 0;
  RT_OK(T->buffer_device_address(a, x, &addr));
  ck_assert(addr != 0);
  /* foreign: a's buffer through b */
  RT_EXPECT(T->buffer_size(b, x, &n), T4A_EHANDLE);
  RT_DETAIL("belongs to runtime");
  RT_EXPECT(T->buffer_free(b, x), T4A_EHANDLE);
  /* wrong type, null, forged */
  t4a_buffer as_buffer = {a.bits};
  RT_EXPECT(T->buffer_size(a, as_buffer, &n), T4A_EHANDLE);
  t4a_buffer null = {0};
  RT_EXPECT(T->buffer_size(a, null, &n), T4A_EINVAL);
  t4a_buffer forged = {x.bits ^ (1ull << 30)};
  RT_EXPECT(T->buffer_size(a, forged, &n), T4A_EHANDLE);
  t4a_runtime as_runtime = {x.bits};
  RT_EXPECT(T->buffer_size(as_runtime, x, &n), T4A_EHANDLE);
  RT_EXPECT(T->buffer_size(a, x, NULL), T4A_EINVAL);
  /* freed: stale, and a double free is refused */
  RT_OK(T->buffer_free(a, x));
  RT_EXPECT(T->buffer_size(a, x, &n), T4A_EHANDLE);
  RT_DETAIL("freed");
  RT_EXPECT(T->buffer_free(a, x), T4A_EHANDLE);
  /* the slot's next buffer gets a new generation: the old handle stays stale */
  t4a_buffer y;
  RT_OK(T->buffer_alloc(a, 1000, &y));
  ck_assert(y.bits != x.bits);
  RT_EXPECT(T->buffer_size(a, x, &n), T4A_EHANDLE);
  RT_OK(T->buffer_free(a, z));
  /* destroy with y still held: it is released and its handle goes stale */
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_EXPECT(T->buffer_size(a, y, &n), T4A_EHANDLE);
  RT_EXPECT(T->buffer_alloc(a, 1, &y), T4A_EHANDLE);
  ck_assert(y.bits == 0);
  /* b is untouched */
  RT_OK(T->buffer_alloc(b, 1, &y));
  RT_OK(T->buffer_free(b, y));
  RT_EXPECT(T->buffer_alloc(b, 1ull << 50, &y), T4A_ENOMEM);
  RT_EXPECT(T->buffer_alloc(b, 1, NULL), T4A_EINVAL);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(steady_state_allocation_makes_no_driver_call) {
  t4a_runtime rt = rt_create();
  static const uint64_t sizes[] = {256, 1000, 1 * MiB, 3 * MiB + 5, 64 * MiB};
  for (int warm = 0; warm < 2; warm++) {
    t4a_runtime_counters before = rt_counters(rt);
    for (int round = 0; round < 100; round++) {
      t4a_buffer b[5];
      for (int i = 0; i < 5; i++)
        RT_OK(T->buffer_alloc(rt, sizes[i], &b[i]));
      for (int i = 0; i < 5; i++)
        RT_OK(T->buffer_free(rt, b[i]));
    }
    t4a_runtime_counters after = rt_counters(rt);
    if (warm) { /* every pair after the first round is served by the cache */
      ck_assert_uint_eq(after.driver_allocations, before.driver_allocations);
      ck_assert_uint_eq(after.driver_frees, before.driver_frees);
      ck_assert_uint_eq(after.cache_hits - before.cache_hits, 500);
    }
  }
  t4a_cache_stats s = rt_cache(rt);
  ck_assert_uint_eq(s.entries, 5);
  ck_assert_uint_ge(s.bytes, 256 + 1000 + 4 * MiB + 64 * MiB);
  ck_assert_uint_le(s.bytes, (256 + 1000 + 4 * MiB + 64 * MiB) * 9 / 8 + 512);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(out_of_memory_trims_retries_and_recovers) {
  t4a_runtime rt = rt_create_with(0, UINT64_MAX); /* an unbounded cache */
  uint64_t big = DEV.total_memory / 10 * 6;
  t4a_buffer a, b;
  RT_OK(T->buffer_alloc(rt, big, &a));
  RT_OK(T->buffer_free(rt, a)); /* cached: the pool cannot give it to others */
  ck_assert_uint_eq(rt_cache(rt).entries, 1);
  /* a different class that fits only once the cache is trimmed */
  RT_OK(T->buffer_alloc(rt, big - big / 5, &b));
  ck_assert_uint_eq(rt_cache(rt).entries, 0);
  RT_OK(T->buffer_free(rt, b));
  /* beyond the device: T4A_ENOMEM, and the runtime keeps working */
  RT_EXPECT(T->buffer_alloc(rt, DEV.total_memory * 2, &a), T4A_ENOMEM);
  RT_DETAIL("no room");
  RT_OK(T->buffer_alloc(rt, MiB, &a));
  uint32_t v = 0x12345678, back = 0;
  RT_OK(T->copy_h2d(rt, a, 12, &v, 4));
  RT_OK(T->copy_d2h(rt, &back, a, 12, 4));
  ck_assert_uint_eq(back, v);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- the block cache ------------------------------------------------------------ */

START_TEST(trimming_one_runtime_leaves_the_other) {
  t4a_runtime a = rt_create(), b = rt_create();
  t4a_buffer x;
  RT_OK(T->buffer_alloc(a, 4 * MiB, &x));
  RT_OK(T->buffer_free(a, x));
  RT_OK(T->buffer_alloc(b, 4 * MiB, &x));
  RT_OK(T->buffer_free(b, x));
  ck_assert_uint_eq(rt_cache(a).entries, 1);
  ck_assert_uint_eq(rt_cache(b).entries, 1);
  RT_OK(T->cache_trim(a, 0));
  ck_assert_uint_eq(rt_cache(a).entries, 0);
  ck_assert_uint_eq(rt_cache(a).bytes, 0);
  ck_assert_uint_eq(rt_cache(b).entries, 1);
  /* destroying a leaves b's memory and work alone */
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->buffer_alloc(b, 4 * MiB, &x));
  ck_assert_uint_eq(rt_counters(b).cache_hits, 1);
  unsigned char *h = malloc(4 * MiB), *back = malloc(4 * MiB);
  t4a_test_fill_random(h, 4 * MiB, t4a_test_seed());
  RT_OK(T->copy_h2d(b, x, 0, h, 4 * MiB));
  memset(back, 0, 4 * MiB);
  RT_OK(T->copy_d2h(b, back, x, 0, 4 * MiB));
  ck_assert_mem_eq(h, back, 4 * MiB);
  free(h);
  free(back);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- pinned host buffers -------------------------------------------------------- */

START_TEST(write_combined_pinned_memory_works) {
  t4a_runtime rt = rt_create();
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, 4096, T4A_HOST_WRITE_COMBINED, &h, &p));
  t4a_test_fill_random(p, 4096, 7);
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 4096, &d));
  RT_OK(T->copy_h2d_pinned(rt, d, 0, h, 0, 4096));
  unsigned char back[4096], want[4096];
  t4a_test_fill_random(want, 4096, 7);
  RT_OK(T->copy_d2h(rt, back, d, 0, 4096));
  ck_assert(memcmp(back, want, 4096) == 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

int main(void) {
  Suite *s = rt_suite("runtime");
  TCase *tc;
  tc = rt_tcase(s, "runtimes", 60);
  tcase_add_test(tc, runtime_create_and_destroy);
  tcase_add_test(tc, runtime_options_are_checked);
  tcase_add_test(tc, destroy_waits_for_outstanding_work);
  tc = rt_tcase(s, "buffers", 120);
  tcase_add_test(tc, buffers_and_handle_validation);
  tcase_add_test(tc, steady_state_allocation_makes_no_driver_call);
  tcase_add_test(tc, out_of_memory_trims_retries_and_recovers);
  tc = rt_tcase(s, "cache", 60);
  tcase_add_test(tc, trimming_one_runtime_leaves_the_other);
  tc = rt_tcase(s, "pinned", 60);
  tcase_add_test(tc, write_combined_pinned_memory_works);
  return rt_run(s, 1);
}
