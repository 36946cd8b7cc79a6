/* tests/cpu/test_compat_v10.c -- a consumer built against the frozen ABI 1.0
 * header (tests/abi/v1_0, the header as it was published) running against
 * today's plugin on the fake driver: the plugin is newer, so every struct
 * it fills must stop at the caller's v1.0 struct_size, every v1.0 slot must
 * behave as 1.0 documented, and the table the loader hands out must be the
 * size this consumer was built with. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

#define COMPAT_FROZEN "v1.0"
#include "tests/cpu/compat_filled.h"

/* Built against the frozen header, not the current one. */
_Static_assert(T4A_GPU_BACKEND_ABI_MINOR == 0, "test_compat_v10 must see the v1.0 header");
_Static_assert(sizeof(t4a_gpu_backend_v1) == T4A_GPU_BACKEND_V1_0_SIZE,
               "the v1.0 table ends at raw_end");

START_TEST(the_newer_plugin_serves_a_v1_0_consumer) {
  uint16_t major = 0, minor = 0;
  ck_assert_int_eq(t4a_gpu_backend_abi(B, &major, &minor), T4A_OK);
  ck_assert_uint_eq(major, 1);
  ck_assert_uint_ge(minor, 1); /* the plugin is newer than this consumer */
  /* the table says how far the plugin's reaches (past this consumer's
   * raw_end, which the loader's copy stops at); every v1.0 slot is there */
  ck_assert_uint_gt(T->struct_size, T4A_GPU_BACKEND_V1_0_SIZE);
  ck_assert(T4A_GPU_BACKEND_V1_HAS(T, raw_end));
  ck_assert_ptr_nonnull(T->raw_end);
  ck_assert_ptr_nonnull(T->copy_h2d);
}
END_TEST

/* Each info struct of 1.0, given with v1.0's sizeof and poison behind it:
 * the newer plugin writes no byte past it and says it filled all of it. */
START_TEST(info_structs_stop_at_the_v1_0_size) {
  FILLED_EXACTLY(t4a_device_info, T->device_info(0, p_));
  t4a_device_info d = {.struct_size = sizeof d};
  RT_OK(T->device_info(0, &d));
  ck_assert_str_eq(d.name, DEV.name);
  ck_assert_int_eq(d.warp_size, 32);
  FILLED_EXACTLY(t4a_backend_info, T->get_info(p_));
  t4a_runtime rt = rt_create();
  FILLED_EXACTLY(t4a_runtime_counters, T->runtime_counters(rt, p_));
  FILLED_EXACTLY(t4a_cache_stats, T->cache_stats(rt, p_));
  FILLED_EXACTLY(t4a_compile_cache_stats, T->compile_cache_stats(p_));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(v1_0_options_and_transfers_work) {
  /* v1.0 options: the word after struct_size was "reserved, must be 0" */
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.staging_bytes = 1u << 20;
  t4a_runtime rt;
  RT_OK(T->runtime_create(0, &o, &rt));
  size_t n = (3u << 20) + 5; /* larger than the staging: several chunks */
  unsigned char *in = malloc(n), *out = malloc(n);
  t4a_test_fill_random(in, n, t4a_test_seed());
  memset(out, 0x5c, n);
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, n, &b));
  RT_OK(T->copy_h2d(rt, b, 0, in, n));
  RT_OK(T->copy_d2h(rt, out, b, 0, n));
  ck_assert(memcmp(in, out, n) == 0);
  t4a_host_buffer hb;
  void *hp;
  RT_OK(T->host_alloc(rt, 4096, 0, &hb, &hp));
  memset(hp, 0, 4096);
  RT_OK(T->copy_d2h_pinned(rt, hb, 0, b, 4096, 4096));
  rt_sync(rt);
  ck_assert(memcmp(hp, in + 4096, 4096) == 0);
  RT_OK(T->host_free(rt, hb));
  RT_OK(T->buffer_free(rt, b));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(in);
  free(out);
}
END_TEST

int main(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  Suite *s = suite_create("compat_v10");
  TCase *tc = tcase_create("compat_v10");
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, the_newer_plugin_serves_a_v1_0_consumer);
  tcase_add_test(tc, info_structs_stop_at_the_v1_0_size);
  tcase_add_test(tc, v1_0_options_and_transfers_work);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
