/* tests/cpu/test_cli.c -- t4a-gpu info, selftest and bench: output and the
 * documented exit codes, with the fake driver (and fake NVRTC), with faults
 * injected, without a driver, and without a backend. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/testutil.h"

static char output[1 << 16];

/* Runs t4a-gpu with args; returns its exit status, output in `output`. */
static int run(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", t4a_test_build_path("loader/t4a-gpu"), args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(output, 1, sizeof output - 1, p);
  output[n] = '\0';
  int st = pclose(p);
  ck_assert(WIFEXITED(st));
  return WEXITSTATUS(st);
}

#define ASSERT_OUT(needle)                                                                         \
  ck_assert_msg(strstr(output, needle), "output lacks '%s':\n%s", needle, output)

START_TEST(info_lists_fake_devices) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  ck_assert_int_eq(run("info"), 0);
  ASSERT_OUT("backend:      cuda");
  ASSERT_OUT("driver:       CUDA 12.8");
  ASSERT_OUT("device 0:     Fake GPU 0");
  ASSERT_OUT("device 1:     Fake GPU 1");
  ASSERT_OUT("compute capability: 9.0");
  ASSERT_OUT("peer access");
  ASSERT_OUT("installed backends:");
  ck_assert_int_eq(run("info --json"), 0);
  ASSERT_OUT("\"status\":\"T4A_OK\"");
  ASSERT_OUT("\"name\":\"Fake GPU 1\"");
  ASSERT_OUT("\"peer_access\":[[true,true],[true,true]]");
}
END_TEST

START_TEST(info_without_driver_says_why) {
  setenv("T4A_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  ck_assert_int_eq(run("info"), 4);
  ASSERT_OUT("unusable (T4A_ENODRIVER)");
  ASSERT_OUT("install the NVIDIA driver");
  ck_assert_int_eq(run("--json info"), 4);
  ASSERT_OUT("\"status\":\"T4A_ENODRIVER\"");
}
END_TEST

START_TEST(info_without_gpu_says_why) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("FAKE_CUDA_MODE", "nodevice", 1);
  ck_assert_int_eq(run("info"), 4);
  ASSERT_OUT("unusable (T4A_ENODEVICE)");
}
END_TEST

START_TEST(info_without_backend_says_why) {
  setenv("T4A_GPU_BACKEND_PATH", "/nonexistent", 1);
  ck_assert_int_eq(run("info"), 3);
  ASSERT_OUT("backend:      unavailable: backend 'cuda' not found");
  ck_assert_int_eq(run("info --backend /nonexistent/libt4a_x.so"), 3);
}
END_TEST

START_TEST(usage_errors) {
  ck_assert_int_eq(run("frobnicate"), 2);
  ASSERT_OUT("unknown command");
  ck_assert_int_eq(run("info --bogus"), 2);
  ck_assert_int_eq(run("--help"), 0);
  ASSERT_OUT("usage: t4a-gpu info");
  ck_assert_int_eq(run("--version"), 0);
  ASSERT_OUT(PACKAGE_VERSION);
}
END_TEST

static void use_fakes(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
}

START_TEST(selftest_passes_on_every_fake_device) {
  use_fakes();
  ck_assert_int_eq(run("selftest"), 0);
  ASSERT_OUT("device 0: Fake GPU 0");
  ASSERT_OUT("device 0: passed (29 checks)");
  ASSERT_OUT("device 1: passed (29 checks)");
  ASSERT_OUT("ok    verify: 1048579 of 1048579 elements match the CPU");
  ASSERT_OUT("ok    runtime_destroy");
  ASSERT_OUT("selftest: passed");
  ck_assert_ptr_null(strstr(output, "FAIL"));
  ck_assert_int_eq(run("selftest --json --device 1"), 0);
  ASSERT_OUT("\"devices\":[{\"ordinal\":1,\"name\":\"Fake GPU 1\"");
  ASSERT_OUT("],\"passed\":true}],\"passed\":true}}\n");
  ck_assert_ptr_null(strstr(output, "\"ordinal\":0"));
}
END_TEST

START_TEST(selftest_reports_each_failure) {
  use_fakes();
  setenv("T4A_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
  ck_assert_int_eq(run("selftest --device 0"), 1);
  ASSERT_OUT("FAIL  artifact_compile: axpy, NVRTC -- T4A_ENOCOMPILER: NVRTC not found");
  ASSERT_OUT("ok    runtime_destroy"); /* what was made is still released */
  ASSERT_OUT("device 0: FAILED (1 of 14 checks)");
  ASSERT_OUT("selftest: FAILED");
  use_fakes();
  setenv("FAKE_CUDA_FAIL", "cuLaunchKernel:1:700", 1); /* the kernel faults */
  ck_assert_int_eq(run("selftest --json --device 0"), 1);
  ASSERT_OUT("{\"check\":\"launch\",\"status\":\"T4A_EDEVICEFAULT\"");
  ASSERT_OUT("\"passed\":false");
  unsetenv("FAKE_CUDA_FAIL");
}
END_TEST

START_TEST(selftest_exit_codes) {
  setenv("T4A_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  ck_assert_int_eq(run("selftest"), 4);
  ASSERT_OUT("selftest: not run: T4A_ENODRIVER");
  ck_assert_int_eq(run("selftest --json"), 4);
  ASSERT_OUT("\"status\":\"T4A_ENODRIVER\"");
  ASSERT_OUT("\"passed\":false}}\n");
  ck_assert_int_eq(run("selftest --backend /nonexistent/libt4a_x.so"), 3);
  ASSERT_OUT("T4A_ENOBACKEND");
  use_fakes();
  ck_assert_int_eq(run("selftest --device 2"), 2);
  ASSERT_OUT("there are 2 devices");
  ck_assert_int_eq(run("selftest --device x"), 2);
  ck_assert_int_eq(run("bench"), 0);
  ASSERT_OUT("make bench");
}
END_TEST

/* Finding 7 of issue #19: library paths from the environment longer than the
 * backend's fixed fields were reported cut short (a different file name). */
START_TEST(overlong_library_paths_are_refused_not_truncated) {
  static char longer[1024];
  /* the fake driver itself, named with 300 leading slashes (so a 255-byte cut names no file) */
  memset(longer, '/', 300);
  snprintf(longer + 300, sizeof longer - 300, "%s", t4a_test_build_path(T4A_TEST_FAKE_CUDA));
  use_fakes();
  setenv("T4A_CUDA_LIBRARY", longer, 1);
  ck_assert_int_eq(run("info"), 4);
  ASSERT_OUT("unusable (T4A_ENODRIVER): T4A_CUDA_LIBRARY is ");
  ASSERT_OUT("not truncated");
  memset(longer, '/', 300);
  snprintf(longer + 300, sizeof longer - 300, "%s", t4a_test_build_path(T4A_TEST_FAKE_NVRTC));
  use_fakes();
  setenv("T4A_NVRTC_LIBRARY", longer, 1);
  ck_assert_int_eq(run("info"), 0);
  ASSERT_OUT("NVRTC:        unavailable: T4A_NVRTC_LIBRARY is ");
}
END_TEST

/* T4A_LOG: off by default; one "t4a[component] level: message" line per event. */
START_TEST(log_levels) {
  use_fakes();
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ck_assert_ptr_null(strstr(output, "t4a["));
  setenv("T4A_LOG", "debug", 1);
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ASSERT_OUT("t4a[loader] info: loaded ");
  ASSERT_OUT("t4a[cuda] info: driver ");
  ASSERT_OUT("t4a[cuda] debug: runtime 0 created on device 0\n");
  ASSERT_OUT("t4a[cuda] debug: runtime 0 on device 0 destroyed\n");
  ASSERT_OUT("t4a[loader] debug: unloading ");
  setenv("T4A_LOG", "warn", 1);
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ck_assert_ptr_null(strstr(output, "t4a["));
  ck_assert_int_eq(run("info --backend nope"), 3);
  ASSERT_OUT("t4a[loader] warn: backend 'nope' not found");
  /* a relative directory is ignored, and the log says so and why */
  setenv("T4A_GPU_BACKEND_PATH", "plugin-cuda/.libs:/nonexistent", 1);
  ck_assert_int_eq(run("info"), 3);
  ASSERT_OUT("t4a[loader] warn: T4A_GPU_BACKEND_PATH entry 'plugin-cuda/.libs' ignored: it is "
             "relative");
  /* T4A_GPU_BACKEND as a relative path: refused, saying why */
  unsetenv("T4A_LOG");
  setenv("T4A_GPU_BACKEND", "./plugin-cuda/.libs/libt4a_cuda.so", 1);
  ck_assert_int_eq(run("info"), 3);
  ASSERT_OUT("backend:      unavailable: T4A_GPU_BACKEND './plugin-cuda/.libs/libt4a_cuda.so' is "
             "a relative path");
  unsetenv("T4A_GPU_BACKEND");
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, info_lists_fake_devices);
  tcase_add_test(tc, info_without_driver_says_why);
  tcase_add_test(tc, info_without_gpu_says_why);
  tcase_add_test(tc, info_without_backend_says_why);
  tcase_add_test(tc, usage_errors);
  tcase_add_test(tc, selftest_passes_on_every_fake_device);
  tcase_add_test(tc, selftest_reports_each_failure);
  tcase_add_test(tc, selftest_exit_codes);
  tcase_add_test(tc, overlong_library_paths_are_refused_not_truncated);
  tcase_add_test(tc, log_levels);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
