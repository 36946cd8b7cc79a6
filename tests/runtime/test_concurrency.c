/* tests/runtime/test_concurrency.c -- 16 threads, each with its own
 * runtimes (alloc, copies, launches, seal, wait, destroy), and threads
 * opening and closing the backend through the loader, for a bounded time:
 * no deadlock (the Check timeout), no data race (the TSan lane runs this),
 * correct data and counters that add up. Every slot claims thread safety;
 * this exercises them together (on the host backend the runtimes' launches
 * share its one pool of threads). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/runtime/rtutil.h"

#define WORKERS 16
#define OPENERS 2

static atomic_bool stop;
static t4a_artifact kernels;

typedef struct result {
  unsigned index, rounds, launches, failures;
  char why[160];
} result;

static void failed(result *r, const char *why) {
  if (!r->failures++)
    snprintf(r->why, sizeof r->why, "%s: %s", why, t4a_test_backend_error(T));
}

static void *worker(void *arg) {
  result *r = arg;
  uint64_t n = 4096 + r->index % 7;
  uint32_t *host = malloc(n * 4);
  while (!atomic_load(&stop)) {
    t4a_runtime rt;
    if (T->runtime_create(0, NULL, &rt)) {
      failed(r, "runtime_create");
      break;
    }
    t4a_module m = {0};
    t4a_function f = {0};
    t4a_buffer a = {0}, b = {0};
    unsigned launches = 0;
    if (T->module_load(rt, kernels, &m) || T->function_get(rt, m, "t4a_fill_u32", &f) ||
        T->buffer_alloc(rt, n * 4, &a) || T->buffer_alloc(rt, n * 4, &b))
      failed(r, "setup");
    for (int i = 0; i < 8 && !r->failures; i++) {
      uint64_t pa;
      uint32_t value = (uint32_t)(r->rounds * 131u + (unsigned)i);
      T->buffer_device_address(rt, a, &pa);
      void *args[] = {&pa, &value, &n};
      t4a_launch_config c = {.struct_size = sizeof c, .grid = {4, 1, 1}, .block = {128, 1, 1}};
      if (T->launch(rt, f, &c, args) || T->copy_d2d(rt, b, 0, a, 0, n * 4))
        failed(r, "launch/copy");
      launches++;
      t4a_witness w;
      if (T->seal(rt, &w) || T->witness_wait(w, T4A_WAIT_FOREVER) || T->witness_release(w))
        failed(r, "seal/wait");
      memset(host, 0, n * 4);
      if (T->copy_d2h(rt, host, b, 0, n * 4))
        failed(r, "copy_d2h");
      for (uint64_t k = 0; k < n && !r->failures; k++)
        if (host[k] != value)
          failed(r, "wrong data");
    }
    t4a_runtime_counters cnt = {.struct_size = sizeof cnt};
    if (T->runtime_counters(rt, &cnt) || cnt.launches != launches || cnt.copies_d2d != launches ||
        cnt.seals != launches || cnt.seal_events_recorded != launches)
      failed(r, "counters do not add up");
    if (T->runtime_destroy(rt, T4A_WAIT_FOREVER))
      failed(r, "runtime_destroy");
    r->launches += launches;
    r->rounds++;
    if (r->failures)
      break;
  }
  free(host);
  return NULL;
}

static void *opener(void *arg) {
  result *r = arg;
  while (!atomic_load(&stop)) {
    t4a_gpu_backend *b = NULL;
    int32_t n = 0;
    if (t4a_gpu_open_path(rt_plugin_path(), &b) || t4a_gpu_backend_table(b)->init() ||
        t4a_gpu_backend_table(b)->device_count(&n) || n < 1 || t4a_gpu_close(b)) {
      r->failures++;
      break;
    }
    r->rounds++;
  }
  return NULL;
}

START_TEST(sixteen_threads_with_their_own_runtimes) {
  kernels = rt_test_artifact();
  pthread_t th[WORKERS + OPENERS];
  result res[WORKERS + OPENERS];
  uint64_t streams = rt_fake_calls("cuStreamCreate"), kernels_run = rt_fake_calls("cuLaunchKernel");
  uint64_t streams_gone = rt_fake_calls("cuStreamDestroy");
  memset(res, 0, sizeof res);
  for (int i = 0; i < WORKERS + OPENERS; i++) {
    res[i].index = (unsigned)i;
    ck_assert_int_eq(pthread_create(&th[i], NULL, i < WORKERS ? worker : opener, &res[i]), 0);
  }
  struct timespec ts = {2, 0}; /* bounded: two seconds of churn */
  nanosleep(&ts, NULL);
  atomic_store(&stop, true);
  uint64_t rounds = 0, runtimes = 0, launches = 0;
  for (int i = 0; i < WORKERS + OPENERS; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(res[i].failures == 0, "thread %d: %s", i, res[i].why);
    ck_assert_uint_gt(res[i].rounds, 0);
    rounds += res[i].rounds;
    if (i < WORKERS) { /* each round: one runtime, eight launches, all counted */
      ck_assert_uint_eq(res[i].launches, 8ull * res[i].rounds);
      runtimes += res[i].rounds;
      launches += res[i].launches;
    }
  }
  if (rt_on_fake()) { /* the rounds really happened: the driver saw each */
    /* Each runtime made its stream or took a destroyed runtime's (a spare
     * part, plugin-cuda/spare.c): no more streams than runtimes, and every
     * stream made was destroyed or is held as one of the bounded spares
     * (4 per device, T4A__SPARES_PER_DEVICE).  */
    int64_t made = (int64_t)(rt_fake_calls("cuStreamCreate") - streams);
    int64_t gone = (int64_t)(rt_fake_calls("cuStreamDestroy") - streams_gone);
    ck_assert_int_ge(made, 1);
    ck_assert_int_le(made, (int64_t)runtimes);
    ck_assert_int_le(made - gone, 4); /* the workers use device 0 only */
    ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel") - kernels_run, launches);
  }
  RT_OK(T->artifact_release(kernels));
  printf("%llu rounds in 2 s: %llu runtimes, %llu launches\n", (unsigned long long)rounds,
         (unsigned long long)runtimes, (unsigned long long)launches);
}
END_TEST

int main(void) {
  Suite *s = rt_suite("concurrency");
  TCase *tc = tcase_create("threads");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, sixteen_threads_with_their_own_runtimes);
  suite_add_tcase(s, tc);
  return rt_run(s, 1);
}
