/* bench/scaling.c -- how costs grow with threads, runtimes, live buffers and
 * pending retirements (the "scaling" report): a change that breaks scaling
 * shows here, paired with the raw driver in the same run.
 *
 * (a) each of T threads its own runtime (ours) or its own stream (raw),
 *     empty launches and 4 KiB pageable H2D copies: the aggregate rate;
 * (b) all T threads on one runtime (ours) or one stream (raw);
 * (c) alloc+free of a 256-byte buffer with 1, 10^3, 10^5, 10^6 buffers live;
 * (d) seal+wait after a launch with 1 or 10^4 retirements pending (pinned
 *     host buffers freed while a copy from each is queued).
 * Rates are medians of RUNS runs, the sides alternating; every thread
 * starts at one barrier and the time runs from it to the last thread's
 * end (its work synchronised). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* 3 runs left the 1-2 thread rows swinging 0.78-1.12 between calls */
enum { RUNS = 7, MAX_T = 16 };
enum side { OURS_OWN, RAW_OWN, OURS_SHARED, RAW_SHARED };
enum op { OP_LAUNCH, OP_COPY };

static const char empty_source[] = "extern \"C\" __global__ void t4a_empty() {}\n";

typedef struct sc_shared {
  t4a_artifact art;
  t4a__CUmodule raw_mod;
  t4a__CUfunction raw_fn;
  t4a_module mod; /* in E.rt, for the shared side */
  t4a_function fn;
  t4a_buffer buf; /* in E.rt */
  t4a__CUdeviceptr raw_dev;
  pthread_barrier_t start;
} sc_shared;

typedef struct sc_thread {
  pthread_t th;
  sc_shared *sh;
  enum side side;
  enum op op;
  int n;
  t4a_runtime rt; /* OURS_OWN: its own */
  t4a_module mod;
  t4a_function fn;
  t4a_buffer buf;
  t4a__CUstream stream; /* RAW_OWN: its own */
  t4a__CUdeviceptr dev;
  unsigned char host[4096];
  double end;
} sc_thread;

static void seal_wait_rt(t4a_runtime rt) {
  t4a_witness w;
  bench_check(E.t->seal(rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void *sc_main(void *p) {
  sc_thread *t = p;
  sc_shared *sh = t->sh;
  bool ours = t->side == OURS_OWN || t->side == OURS_SHARED;
  t4a_runtime rt = t->side == OURS_OWN ? t->rt : E.rt;
  t4a_function fn = t->side == OURS_OWN ? t->fn : sh->fn;
  t4a_buffer buf = t->side == OURS_OWN ? t->buf : sh->buf;
  t4a__CUstream st = t->side == RAW_OWN ? t->stream : E.stream;
  t4a__CUdeviceptr dev = t->side == RAW_OWN ? t->dev : sh->raw_dev;
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {32, 1, 1}};
  if (!ours)
    bench_cu(E.cu.cuCtxSetCurrent(E.ctx), "cuCtxSetCurrent");
  pthread_barrier_wait(&sh->start);
  for (int i = 0; i < t->n; i++) {
    if (ours && t->op == OP_LAUNCH)
      bench_check(E.t->launch(rt, fn, &cfg, NULL), "launch");
    else if (ours)
      bench_check(E.t->copy_h2d(rt, buf, 0, t->host, sizeof t->host), "copy_h2d");
    else if (t->op == OP_LAUNCH)
      bench_cu(E.cu.cuLaunchKernel(sh->raw_fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL),
               "cuLaunchKernel");
    else
      bench_cu(E.cu.cuMemcpyHtoDAsync(dev, t->host, sizeof t->host, st), "cuMemcpyHtoDAsync");
  }
  if (ours)
    seal_wait_rt(rt);
  else
    bench_cu(E.cu.cuStreamSynchronize(st), "cuStreamSynchronize");
  t->end = bench_now();
  return NULL;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Operations per second of T threads on `side`. */
static double rate(sc_shared *sh, sc_thread *ts, int nthreads, enum side side, enum op op) {
  int n = op == OP_LAUNCH ? 20000 : 4000;
  bench_check(pthread_barrier_init(&sh->start, NULL, (unsigned)nthreads + 1) ? T4A_ENOMEM : 0,
              "pthread_barrier_init");
  for (int i = 0; i < nthreads; i++) {
    ts[i].side = side, ts[i].op = op, ts[i].n = n, ts[i].sh = sh;
    if (pthread_create(&ts[i].th, NULL, sc_main, &ts[i]))
      bench_check(T4A_ENOMEM, "pthread_create");
  }
  pthread_barrier_wait(&sh->start);
  double t0 = bench_now(), last = t0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(ts[i].th, NULL);
    if (ts[i].end > last)
      last = ts[i].end;
  }
  pthread_barrier_destroy(&sh->start);
  return (double)n * nthreads / (last - t0);
}

static void thread_rows(FILE *json, sc_shared *sh, sc_thread *ts) {
  static const int counts[] = {1, 2, 4, 8, 16};
  static const char *const what[] = {"own runtime / own stream, empty launches",
                                     "own runtime / own stream, 4 KiB pageable H2D",
                                     "one shared runtime / one stream, empty launches",
                                     "one shared runtime / one stream, 4 KiB pageable H2D"};
  printf("\nscaling with threads: aggregate operations/s (median of %d), ours/raw\n", RUNS);
  fprintf(json, ",\n\"scaling_threads\":[");
  for (int row = 0; row < 4; row++) {
    bool shared = row >= 2;
    enum op op = row % 2 ? OP_COPY : OP_LAUNCH;
    printf("  %s\n", what[row]);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      int T = counts[k];
      double o[RUNS], r[RUNS];
      for (int run = 0; run < RUNS; run++) {
        enum side so = shared ? OURS_SHARED : OURS_OWN, sr = shared ? RAW_SHARED : RAW_OWN;
        if (run % 2) {
          r[run] = rate(sh, ts, T, sr, op);
          o[run] = rate(sh, ts, T, so, op);
        } else {
          o[run] = rate(sh, ts, T, so, op);
          r[run] = rate(sh, ts, T, sr, op);
        }
      }
      qsort(o, RUNS, sizeof o[0], by_value);
      qsort(r, RUNS, sizeof r[0], by_value);
      double mo = o[RUNS / 2], mr = r[RUNS / 2];
      printf("    %2d threads: ours %10.0f/s  raw %10.0f/s  ratio %.3f\n", T, mo, mr, mo / mr);
      fprintf(json, "%s{\"what\":\"%s\",\"threads\":%d,\"ours\":%.6g,\"raw\":%.6g,\"ratio\":%.4f}",
              row || k ? "," : "", what[row], T, mo, mr, mo / mr);
    }
  }
  fprintf(json, "]");
}

/* (c): alloc+free of 256 bytes, microseconds each, with `live` buffers live. */
static void live_rows(FILE *json) {
  static const uint32_t lives[] = {1, 1000, 100000, 1000000};
  enum { N = 100000 };
  t4a_buffer *held = malloc(sizeof *held * 1000000);
  if (!held) {
    bench_check(T4A_ENOMEM, "malloc"); /* exits */
    return;
  }
  uint32_t have = 0;
  double base = 0;
  printf("\nalloc+free of 256 B with N buffers live (median of %d x %d), us\n", RUNS, N);
  fprintf(json, ",\n\"scaling_live_buffers\":[");
  for (size_t k = 0; k < sizeof lives / sizeof lives[0]; k++) {
    while (have < lives[k])
      bench_check(E.t->buffer_alloc(E.rt, 256, &held[have++]), "buffer_alloc");
    double v[RUNS];
    for (int run = 0; run < RUNS; run++) {
      double t0 = bench_now();
      for (int i = 0; i < N; i++) {
        t4a_buffer b;
        bench_check(E.t->buffer_alloc(E.rt, 256, &b), "buffer_alloc");
        bench_check(E.t->buffer_free(E.rt, b), "buffer_free");
      }
      v[run] = (bench_now() - t0) / N * 1e6;
    }
    qsort(v, RUNS, sizeof v[0], by_value);
    double m = v[RUNS / 2];
    if (k == 0)
      base = m;
    printf("  %7u live: %.4f us (%.3fx the 1 row)\n", lives[k], m, m / base);
    fprintf(json, "%s{\"live\":%u,\"us\":%.5g,\"vs_one\":%.4f}", k ? "," : "", lives[k], m,
            m / base);
  }
  fprintf(json, "]");
  for (uint32_t i = 0; i < have; i++)
    bench_check(E.t->buffer_free(E.rt, held[i]), "buffer_free");
  free(held);
  seal_wait_rt(E.rt);
}

/* (d): seal+wait after one launch, with `pending` pinned host buffers freed
 * behind a copy each (retirements the seal releases). */
static void retire_rows(FILE *json, sc_shared *sh) {
  static const uint32_t pendings[] = {1, 10000};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {32, 1, 1}};
  printf("\nseal+wait after one launch with N retirements pending (median of %d), us\n", RUNS);
  fprintf(json, ",\n\"scaling_retirements\":[");
  for (size_t k = 0; k < 2; k++) {
    double v[RUNS];
    for (int run = 0; run < RUNS; run++) {
      for (uint32_t i = 0; i < pendings[k]; i++) {
        t4a_host_buffer h;
        void *ptr;
        bench_check(E.t->host_alloc(E.rt, 256, 0, &h, &ptr), "host_alloc");
        bench_check(E.t->copy_h2d_pinned(E.rt, sh->buf, 0, h, 0, 256), "copy_h2d_pinned");
        bench_check(E.t->host_free(E.rt, h), "host_free");
      }
      bench_check(E.t->launch(E.rt, sh->fn, &cfg, NULL), "launch");
      double t0 = bench_now();
      seal_wait_rt(E.rt);
      v[run] = (bench_now() - t0) * 1e6;
    }
    qsort(v, RUNS, sizeof v[0], by_value);
    printf("  %5u pending: %.1f us\n", pendings[k], v[RUNS / 2]);
    fprintf(json, "%s{\"pending\":%u,\"us\":%.5g}", k ? "," : "", pendings[k], v[RUNS / 2]);
  }
  fprintf(json, "]");
}

void bench_report_scaling(FILE *json) {
  sc_shared sh = {0};
  sc_thread *ts = calloc(MAX_T, sizeof *ts);
  if (!ts) {
    bench_check(T4A_ENOMEM, "calloc"); /* exits */
    return;
  }
  t4a_compile_options o = {.struct_size = sizeof o, .source = empty_source, .name = "empty.cu"};
  bench_check(E.t->artifact_compile(&o, &sh.art), "artifact_compile");
  bench_check(E.t->module_load(E.rt, sh.art, &sh.mod), "module_load");
  bench_check(E.t->function_get(E.rt, sh.mod, "t4a_empty", &sh.fn), "function_get");
  bench_check(E.t->buffer_alloc(E.rt, 4096, &sh.buf), "buffer_alloc");
  const void *cubin;
  uint64_t size;
  bench_check(E.t->artifact_data(sh.art, NULL, &cubin, &size), "artifact_data");
  bench_cu(E.cu.cuModuleLoadData(&sh.raw_mod, cubin), "cuModuleLoadData");
  bench_cu(E.cu.cuModuleGetFunction(&sh.raw_fn, sh.raw_mod, "t4a_empty"), "cuModuleGetFunction");
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&sh.raw_dev, 4096, E.pool, E.stream), "raw alloc");
  for (int i = 0; i < MAX_T; i++) {
    sc_thread *t = &ts[i];
    bench_check(E.t->runtime_create(0, NULL, &t->rt), "runtime_create");
    bench_check(E.t->module_load(t->rt, sh.art, &t->mod), "module_load");
    bench_check(E.t->function_get(t->rt, t->mod, "t4a_empty", &t->fn), "function_get");
    bench_check(E.t->buffer_alloc(t->rt, 4096, &t->buf), "buffer_alloc");
    bench_cu(E.cu.cuStreamCreate(&t->stream, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
    bench_cu(E.cu.cuMemAllocFromPoolAsync(&t->dev, 4096, E.pool, t->stream), "raw alloc");
    memset(t->host, i, sizeof t->host);
  }
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  thread_rows(json, &sh, ts);
  live_rows(json);
  retire_rows(json, &sh);
  for (int i = 0; i < MAX_T; i++) {
    sc_thread *t = &ts[i];
    bench_cu(E.cu.cuMemFreeAsync(t->dev, t->stream), "raw free");
    bench_cu(E.cu.cuStreamSynchronize(t->stream), "cuStreamSynchronize");
    bench_cu(E.cu.cuStreamDestroy(t->stream), "cuStreamDestroy");
    bench_check(E.t->runtime_destroy(t->rt, T4A_WAIT_FOREVER), "runtime_destroy");
  }
  bench_cu(E.cu.cuMemFreeAsync(sh.raw_dev, E.stream), "raw free");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  E.cu.cuModuleUnload(sh.raw_mod);
  bench_check(E.t->buffer_free(E.rt, sh.buf), "buffer_free");
  seal_wait_rt(E.rt);
  bench_check(E.t->module_unload(E.rt, sh.mod), "module_unload");
  bench_check(E.t->artifact_release(sh.art), "artifact_release");
  free(ts);
}
