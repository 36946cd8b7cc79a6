/* tests/cpu/test_real_stub.c -- the CUDA toolkit's own link stub
 * (lib64/stubs/libcuda.so) is recognised as a stub, not taken for a driver.
 * Skipped, with the reason, where the toolkit is not installed. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

static const char *stub_path(void) {
  const char *env = getenv("T4A_TEST_CUDA_STUB");
  return env && *env ? env : "/usr/local/cuda/lib64/stubs/libcuda.so";
}

START_TEST(toolkit_stub_is_a_stub) {
  setenv("T4A_CUDA_LIBRARY", stub_path(), 1);
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = t4a_test_open_cuda(&t);
  ck_assert_int_eq(t->init(), T4A_ESTUBDRIVER);
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "stub library"));
  /* named even though the stub cannot name its own errors (#12) */
  ck_assert_msg(strstr(t4a_test_backend_error(t), "CUDA_ERROR_STUB_LIBRARY"), "detail: %s",
                t4a_test_backend_error(t));
  t4a_gpu_close(b);
}
END_TEST

int main(void) {
  if (access(stub_path(), R_OK) != 0) {
    printf("SKIP: no CUDA toolkit stub at %s (set T4A_TEST_CUDA_STUB)\n", stub_path());
    return T4A_TEST_SKIP;
  }
  Suite *s = suite_create("real-stub");
  TCase *tc = tcase_create("stub");
  tcase_add_test(tc, toolkit_stub_is_a_stub);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
