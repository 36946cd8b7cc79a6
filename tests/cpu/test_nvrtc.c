/* tests/cpu/test_nvrtc.c -- the real NVRTC, loaded by the plugin without a
 * GPU or driver. Skipped, with the reason, where libnvrtc is absent. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tests/testutil.h"

static t4a_compiler_info info;

static int probe(void) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b) != T4A_OK)
    return -1;
  t = t4a_gpu_backend_table(b);
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  int rc = t->compiler_info(&info);
  t4a_gpu_close(b);
  return rc;
}

START_TEST(nvrtc_loads_and_reports_its_version) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = t4a_test_open_cuda(&t);
  t4a_compiler_info c = {.struct_size = sizeof c};
  ck_assert_int_eq(t->compiler_info(&c), T4A_OK);
  ck_assert_int_eq(c.status, T4A_OK);
  ck_assert(c.version_major > 11 || (c.version_major == 11 && c.version_minor >= 2));
  ck_assert_str_ne(c.path, "");
  ck_assert_str_eq(c.reason, "");
  printf("NVRTC %d.%d from %s\n", c.version_major, c.version_minor, c.path);
  t4a_gpu_close(b);
}
END_TEST

int main(void) {
  if (probe() != T4A_OK || info.status != T4A_OK) {
    printf("SKIP: NVRTC unavailable here: %s\n", info.reason);
    return T4A_TEST_SKIP;
  }
  Suite *s = suite_create("nvrtc");
  TCase *tc = tcase_create("nvrtc");
  tcase_add_test(tc, nvrtc_loads_and_reports_its_version);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
