/* tests/runtime/test_v1_1.c -- the slots ABI 1.1 added, in both lanes (fake
 * driver, real GPU), with random sizes and odd offsets, bit-exact against a
 * CPU reference: memset, the five 2D copies, runtime_memory_info,
 * host_register/unregister, timed witnesses. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/runtime/rtutil.h"

#define MiB (1ull << 20)

/* A deterministic generator for sizes and offsets (the seed is printed). */
static uint64_t rng = 1;
static uint64_t next(uint64_t n) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return n ? (rng >> 33) % n : 0;
}

static void download(t4a_runtime rt, t4a_buffer b, void *out, uint64_t n) {
  RT_OK(T->copy_d2h(rt, out, b, 0, n));
}

START_TEST(memset_fills_exactly_its_range) {
  rng = t4a_test_seed();
  t4a_runtime rt = rt_create();
  const uint64_t n = 3 * MiB + 77;
  unsigned char *ref = malloc(n), *got = malloc(n);
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, n, &b));
  t4a_test_fill_random(ref, n, t4a_test_seed());
  RT_OK(T->copy_h2d(rt, b, 0, ref, n));
  static const uint32_t sizes[] = {1, 2, 4};
  for (int round = 0; round < 24; round++) {
    uint32_t es = sizes[round % 3];
    uint64_t off = next(n / 2) / es * es;
    uint64_t count = next((n - off) / es + 1);
    uint32_t pattern = (uint32_t)next(1ull << 32) >> (32 - 8 * es);
    RT_OK(T->memset(rt, b, off, pattern, es, count));
    for (uint64_t i = 0; i < count; i++)
      memcpy(ref + off + i * es, &pattern, es); /* little-endian: the low bytes */
  }
  download(rt, b, got, n);
  ck_assert(memcmp(ref, got, n) == 0);
  /* what is refused */
  RT_EXPECT(T->memset(rt, b, 1, 0, 2, 1), T4A_EINVAL);     /* misaligned */
  RT_EXPECT(T->memset(rt, b, 0, 0, 3, 1), T4A_EINVAL);     /* element size */
  RT_EXPECT(T->memset(rt, b, 0, 0x1ff, 1, 1), T4A_EINVAL); /* pattern too wide */
  RT_EXPECT(T->memset(rt, b, n - 3, 0, 4, 1), T4A_EINVAL);
  RT_EXPECT(T->memset(rt, b, (n / 4 - 1) * 4, 0, 4, 2), T4A_ERANGE); /* runs past the end */
  RT_EXPECT(T->memset(rt, b, 0, 0, 4, UINT64_MAX / 2), T4A_ERANGE);  /* overflow */
  /* counts whose byte size wraps to a few bytes (2^63 + 1 elements of 2 bytes
   * are 2 bytes, 2^62 + 1 of 4 are 4, modulo 2^64), which the range check
   * alone would let through: refused before the driver sees them */
  uint64_t d16 = rt_fake_calls("cuMemsetD16Async"), d32 = rt_fake_calls("cuMemsetD32Async");
  RT_EXPECT(T->memset(rt, b, 0, 0, 2, UINT64_MAX / 2 + 2), T4A_ERANGE);
  RT_DETAIL("overflow");
  RT_EXPECT(T->memset(rt, b, 0, 0, 4, UINT64_MAX / 4 + 2), T4A_ERANGE);
  RT_DETAIL("overflow");
  RT_EXPECT(T->memset(rt, b, 4, 0, 4, UINT64_MAX / 4 + 3), T4A_ERANGE); /* 8 bytes at 4 */
  if (rt_on_fake()) {
    ck_assert_uint_eq(rt_fake_calls("cuMemsetD16Async"), d16);
    ck_assert_uint_eq(rt_fake_calls("cuMemsetD32Async"), d32);
  }
  t4a_runtime_counters c = rt_counters(rt);
  RT_OK(T->memset(rt, b, 0, 0, 4, 0)); /* nothing enqueued */
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, c.seal_events_recorded);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(ref);
  free(got);
}
END_TEST

/* The CPU's version of a 2D copy. */
static void rect_ref(unsigned char *dst, const unsigned char *src, const t4a_copy_2d *g) {
  for (uint64_t r = 0; r < g->rows; r++)
    memcpy(dst + g->dst_offset + r * g->dst_pitch, src + g->src_offset + r * g->src_pitch,
           g->width);
}

static t4a_copy_2d random_rect(uint64_t size) {
  t4a_copy_2d g = {.struct_size = sizeof g};
  g.width = 1 + next(5000);
  g.rows = 1 + next(300);
  g.dst_pitch = g.width + next(300);
  g.src_pitch = g.width + next(300);
  uint64_t dspan = (g.rows - 1) * g.dst_pitch + g.width,
           sspan = (g.rows - 1) * g.src_pitch + g.width;
  ck_assert_uint_le(dspan, size);
  ck_assert_uint_le(sspan, size);
  g.dst_offset = next(size - dspan + 1);
  g.src_offset = next(size - sspan + 1);
  return g;
}

START_TEST(copies_2d_of_every_kind_are_exact) {
  rng = t4a_test_seed();
  t4a_runtime rt = rt_create_with(1 * MiB, 0); /* small: pageable rectangles take several chunks */
  const uint64_t n = 2 * MiB;
  unsigned char *host = malloc(n), *ref = malloc(n), *got = malloc(n);
  t4a_buffer a, b;
  t4a_host_buffer hb;
  void *pinned;
  RT_OK(T->buffer_alloc(rt, n, &a));
  RT_OK(T->buffer_alloc(rt, n, &b));
  RT_OK(T->host_alloc(rt, n, 0, &hb, &pinned));
  for (int round = 0; round < 10; round++) {
    t4a_copy_2d g = random_rect(n);
    /* pageable H2D into a, whose old content is known */
    t4a_test_fill_random(ref, n, t4a_test_seed() + (uint64_t)round);
    RT_OK(T->copy_h2d(rt, a, 0, ref, n));
    t4a_test_fill_random(host, n, t4a_test_seed() + 100 + (uint64_t)round);
    RT_OK(T->copy_2d_h2d(rt, a, host, &g));
    rect_ref(ref, host, &g);
    download(rt, a, got, n);
    ck_assert_msg(memcmp(ref, got, n) == 0, "copy_2d_h2d round %d", round);
    /* d2d: a -> b */
    t4a_copy_2d h = random_rect(n);
    unsigned char *bref = malloc(n);
    t4a_test_fill_random(bref, n, t4a_test_seed() + 200 + (uint64_t)round);
    RT_OK(T->copy_h2d(rt, b, 0, bref, n));
    RT_OK(T->copy_2d_d2d(rt, b, a, &h));
    rect_ref(bref, ref, &h);
    download(rt, b, got, n);
    ck_assert_msg(memcmp(bref, got, n) == 0, "copy_2d_d2d round %d", round);
    /* pinned both ways: b -> pinned, pinned -> a */
    t4a_copy_2d p = random_rect(n);
    memset(pinned, 0x3c, n);
    unsigned char *pref = malloc(n);
    memset(pref, 0x3c, n);
    RT_OK(T->copy_2d_d2h_pinned(rt, hb, b, &p));
    rt_sync(rt);
    rect_ref(pref, bref, &p);
    ck_assert_msg(memcmp(pref, pinned, n) == 0, "copy_2d_d2h_pinned round %d", round);
    t4a_copy_2d q = random_rect(n);
    RT_OK(T->copy_2d_h2d_pinned(rt, a, hb, &q));
    rect_ref(ref, pinned, &q);
    download(rt, a, got, n);
    ck_assert_msg(memcmp(ref, got, n) == 0, "copy_2d_h2d_pinned round %d", round);
    /* pageable D2H out of a */
    t4a_copy_2d d = random_rect(n);
    memset(got, 0x77, n);
    unsigned char *dref = malloc(n);
    memset(dref, 0x77, n);
    RT_OK(T->copy_2d_d2h(rt, got, a, &d));
    rect_ref(dref, ref, &d);
    ck_assert_msg(memcmp(dref, got, n) == 0, "copy_2d_d2h round %d", round);
    free(bref);
    free(pref);
    free(dref);
  }
  /* rows wider than a staging chunk go row by row: still exact */
  t4a_copy_2d wide = {.struct_size = sizeof wide,
                      .width = (uint64_t)700 * 1024,
                      .rows = 2,
                      .dst_pitch = (uint64_t)800 * 1024,
                      .src_pitch = (uint64_t)900 * 1024};
  t4a_test_fill_random(host, n, t4a_test_seed() + 999);
  RT_OK(T->copy_h2d(rt, a, 0, ref, n));
  RT_OK(T->copy_2d_h2d(rt, a, host, &wide));
  rect_ref(ref, host, &wide);
  download(rt, a, got, n);
  ck_assert(memcmp(ref, got, n) == 0);
  /* what is refused, naming the row */
  t4a_copy_2d bad = {
      .struct_size = sizeof bad, .width = 100, .rows = 10, .dst_pitch = 1000, .src_pitch = 100};
  bad.dst_offset = n - (uint64_t)5 * 1000 - 50; /* rows 0..4 fit, row 5 does not */
  RT_EXPECT(T->copy_2d_d2d(rt, b, a, &bad), T4A_ERANGE);
  RT_DETAIL("row 5");
  bad.dst_offset = 0;
  bad.dst_pitch = 99; /* below the width */
  RT_EXPECT(T->copy_2d_d2d(rt, b, a, &bad), T4A_EINVAL);
  RT_DETAIL("pitch");
  bad.dst_pitch = 100;
  bad.src_offset = UINT64_MAX - 10; /* overflow */
  RT_EXPECT(T->copy_2d_h2d(rt, a, host, &bad), T4A_ERANGE);
  t4a_copy_2d overlap = {.struct_size = sizeof overlap,
                         .width = 64,
                         .rows = 4,
                         .dst_pitch = 128,
                         .src_pitch = 128,
                         .src_offset = 64};
  RT_EXPECT(T->copy_2d_d2d(rt, a, a, &overlap), T4A_EINVAL);
  RT_OK(T->host_free(rt, hb));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(host);
  free(ref);
  free(got);
}
END_TEST

/* A pitch above the device's max_pitch is T4A_EINVAL even when every row is
 * otherwise in range, on either side; max_pitch itself is fine. Pageable
 * memory has no end the plugin knows, so two rows at max_pitch + 1 apart
 * are in range: they lie in a mapping reserved for them (only the pages
 * the rows touch are ever backed). */
START_TEST(pitch_above_max_pitch_is_refused) {
  ck_assert_uint_gt(DEV.max_pitch, 0); /* the fake says 2^31 - 1, as the H200 does */
  const uint64_t mp = DEV.max_pitch, width = 64;
  const size_t span = (size_t)(mp + 1 + width);
  unsigned char *host =
      mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ck_assert(host != MAP_FAILED);
  t4a_runtime rt = rt_create();
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, 4096, &b));
  unsigned char rows[2 * 64], back[2 * 64];
  t4a_test_fill_random(rows, sizeof rows, t4a_test_seed());
  memcpy(host, rows, width);
  memcpy(host + mp, rows + width, width); /* row 1 at pitch max_pitch */
  t4a_copy_2d g = {.struct_size = sizeof g, .width = width, .rows = 2, .dst_pitch = width};
  /* the source side: host rows max_pitch + 1 apart */
  g.src_pitch = mp + 1;
  RT_EXPECT(T->copy_2d_h2d(rt, b, host, &g), T4A_EINVAL);
  RT_DETAIL("max_pitch");
  g.src_pitch = mp;
  RT_OK(T->copy_2d_h2d(rt, b, host, &g));
  RT_OK(T->copy_d2h(rt, back, b, 0, sizeof back));
  ck_assert(memcmp(back, rows, sizeof rows) == 0);
  /* the destination side, likewise */
  t4a_copy_2d h = {.struct_size = sizeof h, .width = width, .rows = 2, .src_pitch = width};
  h.dst_pitch = mp + 1;
  memset(host + mp + 1, 0x5a, width);
  RT_EXPECT(T->copy_2d_d2h(rt, host, b, &h), T4A_EINVAL);
  RT_DETAIL("max_pitch");
  for (uint64_t i = 0; i < width; i++) /* nothing was written */
    ck_assert_uint_eq(host[mp + 1 + i], 0x5a);
  h.dst_pitch = mp;
  memset(host, 0, width);
  memset(host + mp, 0, width);
  RT_OK(T->copy_2d_d2h(rt, host, b, &h));
  ck_assert(memcmp(host, rows, width) == 0);
  ck_assert(memcmp(host + mp, rows + width, width) == 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  munmap(host, span);
}
END_TEST

START_TEST(memory_info_tells_the_device_and_the_pool) {
  t4a_runtime rt = rt_create();
  t4a_memory_info m = {.struct_size = sizeof m};
  RT_OK(T->runtime_memory_info(rt, &m));
  ck_assert_uint_gt(m.device_total, 0);
  ck_assert_uint_le(m.device_free, m.device_total);
  ck_assert_uint_eq(m.device_total, DEV.total_memory);
  /* the host allocates no staging (its pageable copies are direct): 0 */
  ck_assert_uint_eq(m.staging_bytes, rt_on_host() ? 0 : rt_counters(rt).staging_bytes);
  uint64_t used0 = m.pool_used;
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, 64 * MiB, &b));
  rt_sync(rt);
  RT_OK(T->runtime_memory_info(rt, &m));
  ck_assert_uint_ge(m.pool_used, used0 + 64 * MiB);
  ck_assert_uint_ge(m.pool_reserved, m.pool_used);
  ck_assert_uint_ge(m.pool_high_water, m.pool_used);
  RT_OK(T->buffer_free(rt, b)); /* to the runtime's cache: still used in the pool */
  RT_OK(T->runtime_memory_info(rt, &m));
  ck_assert_uint_ge(m.cache_bytes, 64 * MiB);
  ck_assert_uint_ge(m.pool_used, m.cache_bytes);
  RT_OK(T->cache_trim(rt, 0));
  rt_sync(rt);
  RT_OK(T->runtime_memory_info(rt, &m));
  ck_assert_uint_eq(m.cache_bytes, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(registered_memory_serves_pinned_copies) {
  t4a_runtime rt = rt_create();
  const uint64_t n = 1 * MiB + 13;
  unsigned char *mem = malloc(n + 64), *back = malloc(n);
  unsigned char *p = mem + 7; /* not aligned: any address may be registered */
  t4a_test_fill_random(p, n, t4a_test_seed());
  t4a_host_buffer hb;
  RT_OK(T->host_register(rt, p, n, 0, &hb));
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n, &d));
  RT_OK(T->copy_h2d_pinned(rt, d, 0, hb, 0, n));
  download(rt, d, back, n);
  ck_assert(memcmp(p, back, n) == 0);
  RT_OK(T->memset(rt, d, 0, 0x5a, 1, n));
  RT_OK(T->copy_d2h_pinned(rt, hb, 3, d, 3, n - 3));
  rt_sync(rt);
  /* assert only a mismatch: each passing ck_assert sends Check a message (slow under TSan) */
  for (uint64_t i = 3; i < n; i++)
    if (p[i] != 0x5a)
      ck_assert_uint_eq(p[i], 0x5a);
  /* refused: an overlapping range, host_free, a copy into a read-only one */
  t4a_host_buffer other;
  RT_EXPECT(T->host_register(rt, p + 100, 10, 0, &other), T4A_EINVAL);
  RT_DETAIL("overlaps");
  RT_EXPECT(T->host_free(rt, hb), T4A_EINVAL);
  RT_DETAIL("host_unregister");
  unsigned char *ro = malloc(4096);
  memset(ro, 0x11, 4096);
  t4a_host_buffer rob;
  RT_OK(T->host_register(rt, ro, 4096, T4A_HOST_REGISTER_READ_ONLY, &rob));
  RT_OK(T->copy_h2d_pinned(rt, d, 0, rob, 0, 4096)); /* reading is fine */
  RT_EXPECT(T->copy_d2h_pinned(rt, rob, 0, d, 0, 16), T4A_EINVAL);
  RT_DETAIL("read-only");
  /* unregistering waits for the copies that use it: a gate holds one back */
  rt_gate g;
  rt_gate_close(&g, rt);
  RT_OK(T->copy_d2h_pinned(rt, hb, 0, d, 0, n));
  RT_OK(T->host_unregister(rt, hb)); /* stale at once, unpinned later */
  ck_assert_uint_eq(rt_counters(rt).pending_retirements, 1);
  RT_EXPECT(T->copy_h2d_pinned(rt, d, 0, hb, 0, 1), T4A_EHANDLE);
  rt_gate_open(&g);
  rt_gate_free(&g);
  ck_assert_uint_eq(rt_counters(rt).pending_retirements, 0);
  /* the held-back copy ran before the unpinning (d's head came from ro) */
  for (uint64_t i = 0; i < n; i++)
    if (p[i] != (i < 4096 ? 0x11 : 0x5a))
      ck_assert_uint_eq(p[i], i < 4096 ? 0x11 : 0x5a);
  RT_OK(T->host_unregister(rt, rob));
  RT_OK(T->host_register(rt, p, n, 0, &hb)); /* unpinned: registrable again */
  RT_OK(T->host_unregister(rt, hb));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(mem);
  free(back);
  free(ro);
}
END_TEST

START_TEST(timed_witnesses_measure_gpu_time) {
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = T4A_RUNTIME_TIMING};
  t4a_runtime rt, plain = rt_create(), other;
  RT_OK(T->runtime_create(0, &o, &rt));
  RT_OK(T->runtime_create(0, &o, &other));
  t4a_witness w0, w1, w2, wp, wo;
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, 64 * MiB, &b));
  RT_OK(T->memset(rt, b, 0, 1, 4, 16 * MiB));
  RT_OK(T->seal(rt, &w0));
  rt_gate g;
  rt_gate_close(&g, rt); /* holds the next span back */
  RT_OK(T->memset(rt, b, 0, 2, 4, 16 * MiB));
  RT_OK(T->seal(rt, &w1));
  uint64_t ns = 0;
  RT_EXPECT(T->witness_elapsed(w0, w1, &ns), T4A_ENOTREADY);
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w1, T4A_WAIT_FOREVER));
  RT_OK(T->witness_elapsed(w0, w1, &ns));
  ck_assert_uint_gt(ns, 0); /* the gate and a 64 MiB memset take time */
  uint64_t self = 1;
  RT_OK(T->witness_elapsed(w1, w1, &self));
  ck_assert_uint_eq(self, 0);
  RT_OK(T->seal(rt, &w2)); /* nothing new since w1: the same point */
  uint64_t same = 1;
  RT_OK(T->witness_elapsed(w1, w2, &same));
  ck_assert_uint_eq(same, 0);
  RT_EXPECT(T->witness_elapsed(w1, w0, &ns), T4A_EINVAL); /* end before start */
  RT_OK(T->seal(plain, &wp));
  RT_EXPECT(T->witness_elapsed(wp, wp, &ns), T4A_EUNSUPPORTED);
  RT_OK(T->seal(other, &wo));
  RT_EXPECT(T->witness_elapsed(w0, wo, &ns), T4A_EINVAL); /* two runtimes */
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  uint64_t after = 0;
  RT_OK(T->witness_elapsed(w0, w1, &after)); /* kept after the runtime is gone */
  ck_assert_uint_eq(after, ns);
  t4a_witness all[] = {w0, w1, w2, wp, wo};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    RT_OK(T->witness_release(all[i]));
  RT_OK(T->runtime_destroy(plain, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
}
END_TEST

static Suite *suite(void) {
  Suite *s = rt_suite("v1.1"); /* "v1.1-<lane>", the lane's environment */
  TCase *tc = tcase_create("v1.1");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, memset_fills_exactly_its_range);
  tcase_add_test(tc, copies_2d_of_every_kind_are_exact);
  tcase_add_test(tc, pitch_above_max_pitch_is_refused);
  tcase_add_test(tc, memory_info_tells_the_device_and_the_pool);
  tcase_add_test(tc, registered_memory_serves_pinned_copies);
  tcase_add_test(tc, timed_witnesses_measure_gpu_time);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run(suite(), 1); }
