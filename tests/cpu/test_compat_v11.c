/* tests/cpu/test_compat_v11.c -- a consumer built against the frozen ABI 1.1
 * header (tests/abi/v1_1, the header as it was published) running against
 * today's plugin (1.2) on the fake driver: every struct the plugin fills
 * stops at the caller's v1.1 struct_size, v1.1 options are read only as far
 * as 1.1 knew them (bytes after them are never taken for the 1.2 fields),
 * every v1.1 slot behaves as 1.1 documented, and the table the loader
 * hands out is the size this consumer was built with. (The other direction,
 * a 1.2 consumer and a plugin that says it is 1.1, is tests/cpu/test_compat.) */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

#define COMPAT_FROZEN "v1.1"
#include "tests/cpu/compat_filled.h"

/* Built against the frozen header, not the current one. */
_Static_assert(T4A_GPU_BACKEND_ABI_MINOR == 1, "test_compat_v11 must see the v1.1 header");
_Static_assert(sizeof(t4a_gpu_backend_v1) == T4A_GPU_BACKEND_V1_1_SIZE,
               "the v1.1 table ends at dlpack_import");
_Static_assert(sizeof(t4a_runtime_options) == T4A_RUNTIME_OPTIONS_V1_1_SIZE &&
                   sizeof(t4a_memory_info) == T4A_MEMORY_INFO_V1_1_SIZE &&
                   sizeof(t4a_runtime_counters) == T4A_RUNTIME_COUNTERS_V1_1_SIZE,
               "the v1.1 structs");

START_TEST(the_newer_plugin_serves_a_v1_1_consumer) {
  uint16_t major = 0, minor = 0;
  ck_assert_int_eq(t4a_gpu_backend_abi(B, &major, &minor), T4A_OK);
  ck_assert_uint_eq(major, 1);
  ck_assert_uint_ge(minor, 2); /* the plugin is newer than this consumer */
  /* every v1.1 slot is there */
  ck_assert(T4A_GPU_BACKEND_V1_HAS(T, dlpack_import));
  ck_assert_ptr_nonnull(T->dlpack_import);
  ck_assert_ptr_nonnull(T->memset);
  t4a_backend_info bi = {.struct_size = sizeof bi};
  RT_OK(T->get_info(&bi));
  ck_assert_uint_eq(bi.abi_minor, minor);
}
END_TEST

/* An info struct of 1.1, given with v1.1's sizeof and poison behind it: the
 * newer plugin writes no byte past it and says it filled all of it. */
START_TEST(info_structs_stop_at_the_v1_1_size) {
  t4a_runtime rt = rt_create();
  FILLED_EXACTLY(t4a_runtime_counters, T->runtime_counters(rt, p_));
  FILLED_EXACTLY(t4a_memory_info, T->runtime_memory_info(rt, p_));
  FILLED_EXACTLY(t4a_device_info, T->device_info(0, p_));
  FILLED_EXACTLY(t4a_runtime_info, T->runtime_info(rt, p_));
  t4a_memory_info m = {.struct_size = sizeof m};
  RT_OK(T->runtime_memory_info(rt, &m));
  ck_assert_uint_gt(m.device_total, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

static int never_called(const void *info, void *user) {
  (void)info;
  (void)user;
  ck_abort_msg("a v1.1 caller's bytes after its options were taken for a callback");
  return 0;
}

START_TEST(v1_1_options_are_read_as_far_as_1_1_knew_them) {
  /* v1.1 options inside a larger block whose bytes after them look like
   * 1.2's budget (a limit of one byte, a callback): the plugin must read no
   * byte past the caller's struct_size */
  struct {
    t4a_runtime_options o;
    uint64_t limit;
    int (*fn)(const void *, void *);
    void *user;
  } raw;
  memset(&raw, 0, sizeof raw);
  raw.o.struct_size = sizeof raw.o;
  raw.o.staging_bytes = 1u << 20;
  raw.limit = 1;
  raw.fn = never_called;
  t4a_runtime rt;
  RT_OK(T->runtime_create(0, &raw.o, &rt));
  size_t n = (3u << 20) + 5;
  unsigned char *in = malloc(n), *out = malloc(n);
  t4a_test_fill_random(in, n, t4a_test_seed());
  memset(out, 0x5c, n);
  t4a_buffer b, c;
  RT_OK(T->buffer_alloc(rt, n, &b)); /* no budget: it fits */
  RT_OK(T->copy_h2d(rt, b, 0, in, n));
  RT_OK(T->memset(rt, b, 8, 0x7fu, 1, 3)); /* a v1.1 slot */
  memset(in + 8, 0x7f, 3);
  RT_OK(T->buffer_alloc(rt, n, &c));
  RT_OK(T->copy_d2d(rt, c, 0, b, 0, n));
  RT_OK(T->copy_d2h(rt, out, c, 0, n));
  ck_assert(memcmp(in, out, n) == 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(in);
  free(out);
}
END_TEST

int main(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  Suite *s = suite_create("compat_v11");
  TCase *tc = tcase_create("compat_v11");
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, the_newer_plugin_serves_a_v1_1_consumer);
  tcase_add_test(tc, info_structs_stop_at_the_v1_1_size);
  tcase_add_test(tc, v1_1_options_are_read_as_far_as_1_1_knew_them);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
