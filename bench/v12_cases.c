/* bench/v12_cases.c -- what ABI 1.2 added, each row paired with what it is
 * measured against:
 *
 *   alloc+free, the allocation log on    the same runtime kind with the log
 *                                        off (the row "alloc+free 256 B"
 *                                        is the log off against the raw
 *                                        driver, as before 1.2)
 *   host: the same on the host backend   (and "host: alloc+free 4 KiB")
 *
 * The log off costs one test of a NULL pointer per allocation and free (no
 * call, no store); these rows show what turning it on costs. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* A runtime like E.rt (the host one: its copy threads) with the log on. */
static void *log_setup(const bench_case *c) {
  t4a_runtime *rt = calloc(1, sizeof *rt);
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_ALLOC_LOG;
  o.copy_threads = bench_host_threads; /* 0 on CUDA: the default */
  (void)c;
  bench_check(E.t->runtime_create(0, &o, rt), "runtime_create (allocation log)");
  return rt;
}

static void alloc_free(t4a_runtime rt, uint64_t bytes, int batch) {
  for (int i = 0; i < batch; i++) {
    t4a_buffer b;
    E.t->buffer_alloc(rt, bytes, &b);
    E.t->buffer_free(rt, b);
  }
}

static void log_on(void *s, int batch) { alloc_free(*(t4a_runtime *)s, 256, batch); }
static void log_off(void *s, int batch) {
  (void)s;
  alloc_free(E.rt, 256, batch);
}
static void host_log_on(void *s, int batch) { alloc_free(*(t4a_runtime *)s, 4096, batch); }
static void host_log_off(void *s, int batch) {
  (void)s;
  alloc_free(E.rt, 4096, batch);
}

static void log_teardown(void *s) {
  bench_check(E.t->runtime_destroy(*(t4a_runtime *)s, T4A_WAIT_FOREVER), "runtime_destroy");
  free(s);
}

const bench_case bench_v12_cases[] = {
    {.name = "alloc+free 256 B, allocation log on (raw: log off)",
     .batch = 1000,
     .samples = 101,
     .warmup = 3,
     .target_kind = TARGET_NONE,
     .setup = log_setup,
     .ours = log_on,
     .raw = log_off,
     .teardown = log_teardown},
    {.name = NULL},
};

const bench_case bench_v12_host_cases[] = {
    {.name = "host: alloc+free 4 KiB, allocation log on (raw: log off)",
     .batch = 10000,
     .samples = 41,
     .warmup = 3,
     .target_kind = TARGET_NONE,
     .setup = log_setup,
     .ours = host_log_on,
     .raw = host_log_off,
     .teardown = log_teardown},
    {.name = NULL},
};
