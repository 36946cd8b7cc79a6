/* tests/gpu/test_fault_gpu.c -- GPU lane: device faults on the real driver.
 *
 * A kernel that traps, or one that writes to an unmapped address, poisons
 * the device's primary context, which every runtime on that device shares.
 * The contract (docs/design.md, "Failure model"): the fault is reported as
 * T4A_EDEVICEFAULT (sticky) by the faulting runtime, by every other runtime
 * of the context and by runtime_create on that device; destroy still
 * completes (reporting the fault, quarantining what cannot be proven idle);
 * witnesses remember the fault; another process on the same GPU keeps
 * working; and the loader can close and reopen the backend without a crash.
 *
 * Each test runs in its own forked process (Check's default; the parent
 * never touches CUDA), so one test's poisoned context never leaks into the
 * next. Not run under compute-sanitizer (it would report the intended
 * faults). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/runtime/rtutil.h"

/* Runs examples/saxpy in a fresh process on the same GPU; returns its exit
 * status, its output in out. */
static int second_process(char *out, size_t size) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "'%s' 2>&1", t4a_test_build_path("examples/saxpy"));
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, size - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The fault is sticky everywhere on the context, destroy works, and the
 * rest of the system does not notice. `kernel` faults when launched with
 * `args`. */
static void fault_scenario(const char *kernel, void **args, const char *native, int code) {
  t4a_runtime a = rt_create(), b = rt_create();
  t4a_buffer keep;
  RT_OK(T->buffer_alloc(b, 1 << 20, &keep));
  unsigned char host[256];
  t4a_test_fill_random(host, sizeof host, t4a_test_seed());
  RT_OK(T->copy_h2d(b, keep, 0, host, sizeof host));
  rt_sync(b);

  void *module = NULL;
  rt_raw_launch(a, &module, kernel, args);
  t4a_witness w;
  RT_OK(T->seal(a, &w));
  RT_EXPECT(T->witness_wait(w, 30ull * 1000 * 1000 * 1000), T4A_EDEVICEFAULT);
  RT_DETAIL(native);
  t4a_error_info e = {.struct_size = sizeof e};
  RT_OK(T->last_error(&e));
  ck_assert_int_eq(e.native_code, code);
  ck_assert_str_eq(e.native_name, native);
  RT_EXPECT(T->witness_query(w), T4A_EDEVICEFAULT);

  /* sticky: the faulting runtime, its sibling on the context, new runtimes */
  t4a_buffer d;
  RT_EXPECT(T->buffer_alloc(a, 16, &d), T4A_EDEVICEFAULT);
  RT_DETAIL("sticky");
  RT_EXPECT(T->copy_d2h(b, host, keep, 0, sizeof host), T4A_EDEVICEFAULT);
  t4a_runtime fresh = {1};
  RT_EXPECT(T->runtime_create(0, NULL, &fresh), T4A_EDEVICEFAULT);
  ck_assert(fresh.bits == 0);
  t4a_runtime_counters c = rt_counters(a); /* still readable */
  ck_assert_uint_eq(c.launches, 0);        /* the faulting kernel came through the raw seam */
  ck_assert_uint_eq(c.raw_sections, 1);    /* (rt_raw_launch: one raw_begin/raw_end pair) */

  /* another process on the same GPU works while this one is poisoned */
  char out[4096];
  int rc = second_process(out, sizeof out);
  ck_assert_msg(rc == 0 && strstr(out, " 0 wrong"), "second process: exit %d: %s", rc, out);

  /* destroy completes, reports the fault, and the handles become stale */
  RT_EXPECT(T->runtime_destroy(a, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_EXPECT(T->buffer_alloc(a, 16, &d), T4A_EHANDLE);
  RT_EXPECT(T->runtime_destroy(b, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_EXPECT(T->buffer_free(b, keep), T4A_EHANDLE);
  RT_EXPECT(T->witness_query(w), T4A_EDEVICEFAULT); /* the witness remembers */
  RT_OK(T->witness_release(w));

  /* the loader closes and reopens the backend; the poisoned context is
   * the process's for good (CUDA's rule), and it is reported, typed */
  ck_assert_int_eq(t4a_gpu_close(B), T4A_OK);
  B = t4a_test_open_cuda(&T);
  RT_OK(T->init());
  int32_t count = 0;
  RT_OK(T->device_count(&count));
  ck_assert_int_ge(count, 1);
  /* The quarantine pinned the plugin (it stays loaded, with the device's
   * fault recorded) and kept the poisoned primary context alive: a new
   * runtime on the device is refused, typed, never half made. */
  fresh.bits = 1;
  RT_EXPECT(T->runtime_create(0, NULL, &fresh), T4A_EDEVICEFAULT);
  RT_DETAIL("faulted earlier");
  ck_assert(fresh.bits == 0);
}

/* A trap ends the kernel with an unspecified launch failure. */
START_TEST(trapping_kernel_faults_the_context) {
  fault_scenario("t4a_fault", NULL, "CUDA_ERROR_LAUNCH_FAILED", 719);
}
END_TEST

START_TEST(out_of_bounds_write_faults_the_context) {
  uint64_t bad = 0x10; /* never mapped */
  uint32_t value = 7;
  uint64_t n = 1;
  void *args[] = {&bad, &value, &n};
  fault_scenario("t4a_fill_u32", args, "CUDA_ERROR_ILLEGAL_ADDRESS", 700);
}
END_TEST

int main(void) {
  Suite *s = suite_create("gpu-fault");
  TCase *tc = tcase_create("fault");
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, trapping_kernel_faults_the_context);
  tcase_add_test(tc, out_of_bounds_write_faults_the_context);
  suite_add_tcase(s, tc);
  return t4a_test_gpu_main(s, 1);
}
