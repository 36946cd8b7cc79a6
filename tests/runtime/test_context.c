/* tests/runtime/test_context.c -- calls work whatever context the calling
 * thread has current, and leave that context as it was (both lanes):
 * launch (whose hot path makes no context current), copies and seal, from a
 * thread with no current context, with another device's context current,
 * and with the runtime's own. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-cuda/cuda_decls.h"
#include "tests/runtime/rtutil.h"

typedef struct ctxapi {
  t4a__CUresult (*get)(t4a__CUcontext *);
  t4a__CUresult (*set)(t4a__CUcontext);
} ctxapi;

static ctxapi api(void) {
  const char *lib = getenv("T4A_CUDA_LIBRARY");
  void *dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(dl);
  ctxapi a = {0};
  *(void **)&a.get = dlsym(dl, "cuCtxGetCurrent");
  *(void **)&a.set = dlsym(dl, "cuCtxSetCurrent");
  ck_assert(a.get && a.set);
  return a;
}

typedef struct job {
  t4a_runtime rt;
  t4a_function fill;
  t4a__CUcontext current; /* made current on the thread first (may be NULL) */
  t4a__CUcontext own;     /* the runtime's: may stay current when none was */
  uint32_t value;
  int ok;
} job;

enum { N = 100003 };

/* On its own thread: fill a buffer with a kernel, copy, seal, read back;
 * the thread's current context must be the same afterwards. */
static void *work(void *arg) {
  job *j = arg;
  ctxapi a = api();
  if (a.set(j->current) != T4A__CUDA_SUCCESS)
    return NULL;
  t4a_buffer b;
  uint32_t *host = malloc(N * sizeof *host);
  if (!host || T->buffer_alloc(j->rt, N * sizeof *host, &b) != T4A_OK) {
    free(host);
    return NULL;
  }
  uint64_t addr = 0, n = N;
  T->buffer_device_address(j->rt, b, &addr);
  void *args[] = {&addr, &j->value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {64, 1, 1}, .block = {256, 1, 1}};
  t4a_witness w = {0};
  int ok = T->launch(j->rt, j->fill, &cfg, args) == T4A_OK && T->seal(j->rt, &w) == T4A_OK &&
           T->witness_wait(w, T4A_WAIT_FOREVER) == T4A_OK &&
           T->copy_d2h(j->rt, host, b, 0, N * sizeof *host) == T4A_OK;
  for (size_t i = 0; ok && i < N; i++)
    ok = host[i] == j->value;
  t4a__CUcontext after = (t4a__CUcontext)1;
  /* another context is restored; with none, the runtime's may stay (the
   * design's context policy, as the CUDA runtime API would leave it) */
  ok = ok && a.get(&after) == T4A__CUDA_SUCCESS &&
       (after == j->current || (!j->current && after == j->own));
  if (w.bits)
    T->witness_release(w);
  T->buffer_free(j->rt, b);
  free(host);
  j->ok = ok;
  return NULL;
}

static void run(job *j) {
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, work, j), 0);
  pthread_join(th, NULL);
}

START_TEST(calls_work_whatever_context_is_current) {
  t4a_runtime rt = rt_create();
  t4a_artifact art;
  const char *ptx = rt_test_ptx();
  RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "test.ptx", &art));
  t4a_module m;
  RT_OK(T->module_load(rt, art, &m));
  t4a_function fill;
  RT_OK(T->function_get(rt, m, "t4a_fill_u32", &fill));
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  job none = {rt, fill, NULL, raw.context, 0x1234567u, 0};
  run(&none);
  ck_assert_msg(none.ok, "with no context current");
  job own = {rt, fill, raw.context, raw.context, 0x89abcdefu, 0};
  run(&own);
  ck_assert_msg(own.ok, "with the runtime's own context current");
  int32_t count = 0;
  RT_OK(T->device_count(&count));
  if (count > 1) {
    t4a_runtime other;
    RT_OK(T->runtime_create(1, NULL, &other));
    t4a_raw_runtime r1 = {.struct_size = sizeof r1};
    RT_OK(T->raw_runtime(other, &r1));
    job foreign = {rt, fill, r1.context, raw.context, 0xdeadbeefu, 0};
    run(&foreign);
    ck_assert_msg(foreign.ok, "with another device's context current");
    RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  }
  RT_OK(T->module_unload(rt, m));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

#ifdef T4A_TEST_FAKE
/* A driver that wants the function's context current for a launch (the
 * fake on request: a plain CUDA_ERROR_INVALID_CONTEXT) gets it: the plugin
 * makes the context current, launches again, and restores the caller's. */
START_TEST(a_driver_wanting_the_context_gets_it) {
  setenv("FAKE_CUDA_LAUNCH_NEEDS_CONTEXT", "1", 1);
  t4a_runtime rt = rt_create();
  t4a_artifact art;
  const char *ptx = rt_test_ptx();
  RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "test.ptx", &art));
  t4a_module m;
  RT_OK(T->module_load(rt, art, &m));
  t4a_function fill;
  RT_OK(T->function_get(rt, m, "t4a_fill_u32", &fill));
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  enum { M = 4099 };
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, M * sizeof(uint32_t), &b));
  uint64_t addr = 0, n = M;
  uint32_t value = 0x5a5a5a5au;
  RT_OK(T->buffer_device_address(rt, b, &addr));
  void *args[] = {&addr, &value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {17, 1, 1}, .block = {256, 1, 1}};
  ctxapi a = api();
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  uint64_t before = rt_fake_calls("cuLaunchKernel");
  RT_OK(T->launch(rt, fill, &cfg, args));
  /* refused once, then launched with the context current ... */
  ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel") - before, 2);
  /* ... and the caller's (none) left as the context policy says: none, or
   * the runtime's (as the CUDA runtime API would leave it) */
  t4a__CUcontext after = (t4a__CUcontext)1;
  ck_assert_int_eq(a.get(&after), T4A__CUDA_SUCCESS);
  ck_assert(after == NULL || after == raw.context);
  /* with the context current no retry is needed */
  ck_assert_int_eq(a.set(raw.context), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuLaunchKernel");
  RT_OK(T->launch(rt, fill, &cfg, args));
  ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel") - before, 1);
  uint32_t *host = malloc(M * sizeof *host);
  ck_assert_ptr_nonnull(host);
  memset(host, 0, M * sizeof *host);
  RT_OK(T->copy_d2h(rt, host, b, 0, M * sizeof *host));
  for (size_t i = 0; i < M; i++)
    ck_assert_uint_eq(host[i], value);
  /* launch_ex (cuLaunchKernelEx) and graph_launch (cuGraphLaunch) follow
   * the same rule: refused once with no context current, made again */
  t4a_launch_ex_config ex = {.struct_size = sizeof ex, .grid = {17, 1, 1}, .block = {256, 1, 1}};
  value = 0x17171717u;
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuLaunchKernelEx");
  RT_OK(T->launch_ex(rt, fill, &ex, args));
  ck_assert_uint_eq(rt_fake_calls("cuLaunchKernelEx") - before, 2);
  RT_OK(T->copy_d2h(rt, host, b, 0, M * sizeof *host));
  for (size_t i = 0; i < M; i++)
    ck_assert_uint_eq(host[i], value);
  t4a_graph g;
  RT_OK(T->graph_begin(rt));
  value = 0x2e2e2e2eu; /* captured: the value of this launch */
  RT_OK(T->launch(rt, fill, &cfg, args));
  RT_OK(T->graph_end(rt, &g));
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuGraphLaunch");
  RT_OK(T->graph_launch(rt, g));
  ck_assert_uint_eq(rt_fake_calls("cuGraphLaunch") - before, 2);
  RT_OK(T->copy_d2h(rt, host, b, 0, M * sizeof *host));
  for (size_t i = 0; i < M; i++)
    ck_assert_uint_eq(host[i], 0x2e2e2e2eu);
  RT_OK(T->graph_release(rt, g));
  free(host);
  RT_OK(T->buffer_free(rt, b));
  RT_OK(T->module_unload(rt, m));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST
#endif

static Suite *suite(void) {
  Suite *s = suite_create("context");
  TCase *tc = tcase_create("context");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, calls_work_whatever_context_is_current);
#ifdef T4A_TEST_FAKE
  tcase_add_test(tc, a_driver_wanting_the_context_gets_it);
#endif
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
