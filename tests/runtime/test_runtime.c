/* tests/runtime/test_runtime.c -- the runtime core: runtimes, buffers and
 * their cache, pinned memory, transfers with bounded staging, seal/witness,
 * retirement, counters, handle validation.
 *
 * The same source runs against the fake driver (tests/cpu/test_runtime_fake,
 * under make check and CI) and the real GPU (tests/gpu/test_runtime_gpu,
 * under make check-gpu): behaviour must agree. */
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
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = 0x80}; /* unknown */
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

/* ---- transfers ------------------------------------------------------------------ */

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
  ck_assert_uint_eq(c.staging_peak_bytes, c.staging_bytes); /* used it all, never more */
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
  uint64_t n = rt_on_fake() ? 100 * MiB : 300 * MiB;
  roundtrip(rt, n, 5, false, false, t4a_test_seed());
  roundtrip(rt, n, 3, true, true, t4a_test_seed() + 1);
  t4a_runtime_counters c = rt_counters(rt);
  ck_assert_uint_eq(c.staging_peak_bytes, 64 * MiB);
  ck_assert_uint_eq(c.bytes_h2d, 2 * n);
  ck_assert_uint_eq(c.bytes_d2h, 2 * n);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

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
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(src);
  free(dst);
}
END_TEST

START_TEST(ranges_and_arguments_are_checked) {
  t4a_runtime rt = rt_create(), other = rt_create();
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 100, &d));
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, 100, 0, &h, &p));
  char buf[128];
  RT_EXPECT(T->copy_h2d(rt, d, 1, buf, 100), T4A_ERANGE);
  RT_DETAIL("exceeds its 100 bytes");
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

/* ---- seal and witness -------------------------------------------------------------- */

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

static Suite *suite(void) {
  Suite *s = suite_create(rt_on_fake() ? "runtime-fake" : "runtime-gpu");
  TCase *tc = tcase_create("runtime");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, runtime_create_and_destroy);
  tcase_add_test(tc, runtime_options_are_checked);
  tcase_add_test(tc, buffers_and_handle_validation);
  tcase_add_test(tc, steady_state_allocation_makes_no_driver_call);
  tcase_add_test(tc, trimming_one_runtime_leaves_the_other);
  tcase_add_test(tc, out_of_memory_trims_retries_and_recovers);
  tcase_add_test(tc, transfers_are_bit_exact);
  tcase_add_test(tc, large_transfers_through_default_staging);
  tcase_add_test(tc, device_to_device_copies);
  tcase_add_test(tc, ranges_and_arguments_are_checked);
  tcase_add_test(tc, write_combined_pinned_memory_works);
  tcase_add_test(tc, one_seal_records_one_event);
  tcase_add_test(tc, seal_with_nothing_enqueued_is_ready);
  tcase_add_test(tc, witness_query_wait_and_timeout);
  tcase_add_test(tc, witness_outlives_its_runtime);
  tcase_add_test(tc, a_runtime_waits_for_another_runtimes_witness);
  tcase_add_test(tc, pinned_buffer_is_not_reused_while_a_copy_is_pending);
  tcase_add_test(tc, destroy_waits_for_outstanding_work);
  tcase_add_test(tc, raw_seam_work_is_ordered_and_sealed);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
#ifdef T4A_TEST_FAKE
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  return t4a_test_run(suite());
#else
  return t4a_test_gpu_main(suite(), 1);
#endif
}
