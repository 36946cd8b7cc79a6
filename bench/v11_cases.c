/* bench/v11_cases.c -- the ABI 1.1 slots, each paired with the Driver API
 * call that does the same work on the raw side's own stream and pool:
 *
 *   memset            cuMemsetD32Async            (1 GiB, 32-bit pattern)
 *   copy_2d_*_pinned  cuMemcpy2DAsync             (4096 rows of 16 KiB, pitch 20 KiB)
 *   copy_2d_d2d       cuMemcpy2DAsync             (same rectangle)
 *   copy_2d_h2d       cuMemcpy2DAsync from pageable memory (staged on our side)
 *   host_register     cuMemHostRegister + cuMemHostUnregister (64 MiB)
 *   register + pinned H2D + unregister against the staged copy_h2d (where
 *                     registering pays), 4 MiB to 512 MiB
 *   witness_elapsed   against cuEventElapsedTime of raw events bracketing
 *                     the seals (bench_report_elapsed: within 1%)
 *
 * Every case ends with the work complete on both sides (seal + wait,
 * stream synchronize), so the numbers are what a caller waits for. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define MiB (1ull << 20)
#define ROWS 4096ull
#define WIDTH (16ull << 10)
#define PITCH (20ull << 10)
#define RECT (ROWS * PITCH) /* bytes each side of a 2D copy spans */

static void seal_wait(t4a_runtime rt) {
  t4a_witness w;
  bench_check(E.t->seal(rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void raw_sync(void) { bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize"); }

typedef struct v11 {
  uint64_t bytes;
  t4a_buffer dev, dev2;
  t4a_host_buffer host;
  void *host_ptr;
  t4a__CUdeviceptr raw_dev, raw_dev2;
  void *raw_host;          /* pinned */
  unsigned char *pageable; /* shared by both sides */
  t4a_copy_2d g;
} v11;

static void *v11_setup(const bench_case *c) {
  v11 *x = calloc(1, sizeof *x);
  x->bytes = c->arg;
  bench_check(E.t->buffer_alloc(E.rt, x->bytes, &x->dev), "buffer_alloc");
  bench_check(E.t->buffer_alloc(E.rt, x->bytes, &x->dev2), "buffer_alloc");
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&x->raw_dev, (size_t)x->bytes, E.pool, E.stream), "alloc");
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&x->raw_dev2, (size_t)x->bytes, E.pool, E.stream), "alloc");
  raw_sync();
  bench_check(E.t->host_alloc(E.rt, x->bytes, 0, &x->host, &x->host_ptr), "host_alloc");
  bench_cu(E.cu.cuMemHostAlloc(&x->raw_host, (size_t)x->bytes, T4A__CU_MEMHOSTALLOC_PORTABLE),
           "cuMemHostAlloc");
  x->pageable = malloc(x->bytes);
  for (uint64_t i = 0; i < x->bytes; i++)
    x->pageable[i] = (unsigned char)(i * 131 + 7);
  memset(x->host_ptr, 0x5a, x->bytes);
  memset(x->raw_host, 0x5a, x->bytes);
  x->g = (t4a_copy_2d){.struct_size = sizeof x->g,
                       .dst_pitch = PITCH,
                       .src_pitch = PITCH,
                       .width = WIDTH,
                       .rows = ROWS};
  return x;
}

static void v11_teardown(void *s) {
  v11 *x = s;
  seal_wait(E.rt);
  raw_sync();
  bench_check(E.t->buffer_free(E.rt, x->dev), "buffer_free");
  bench_check(E.t->buffer_free(E.rt, x->dev2), "buffer_free");
  bench_check(E.t->host_free(E.rt, x->host), "host_free");
  bench_cu(E.cu.cuMemFreeAsync(x->raw_dev, E.stream), "free");
  bench_cu(E.cu.cuMemFreeAsync(x->raw_dev2, E.stream), "free");
  raw_sync();
  E.cu.cuMemFreeHost(x->raw_host);
  free(x->pageable);
  free(x);
}

/* ---- memset ------------------------------------------------------------------- */

static void memset_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->memset(E.rt, x->dev, 0, 0x3f800000u, 4, x->bytes / 4), "memset");
  seal_wait(E.rt);
}

static void memset_raw(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemsetD32Async(x->raw_dev, 0x3f800000u, (size_t)(x->bytes / 4), E.stream),
             "cuMemsetD32Async");
  raw_sync();
}

/* ---- 2D copies ------------------------------------------------------------------- */

static t4a__CUDA_MEMCPY2D raw_rect(unsigned src_type, const void *src_host,
                                   t4a__CUdeviceptr src_dev, unsigned dst_type, void *dst_host,
                                   t4a__CUdeviceptr dst_dev) {
  t4a__CUDA_MEMCPY2D m;
  memset(&m, 0, sizeof m);
  m.srcMemoryType = src_type;
  m.srcHost = src_host;
  m.srcDevice = src_dev;
  m.srcPitch = PITCH;
  m.dstMemoryType = dst_type;
  m.dstHost = dst_host;
  m.dstDevice = dst_dev;
  m.dstPitch = PITCH;
  m.WidthInBytes = WIDTH;
  m.Height = ROWS;
  return m;
}

#define HOST T4A__CU_MEMORYTYPE_HOST
#define DEVICE T4A__CU_MEMORYTYPE_DEVICE

static void h2d_2d_pinned_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_2d_h2d_pinned(E.rt, x->dev, x->host, &x->g), "copy_2d_h2d_pinned");
  seal_wait(E.rt);
}

static void h2d_2d_pinned_raw(void *s, int batch) {
  v11 *x = s;
  t4a__CUDA_MEMCPY2D m = raw_rect(HOST, x->raw_host, 0, DEVICE, NULL, x->raw_dev);
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpy2DAsync(&m, E.stream), "cuMemcpy2DAsync");
  raw_sync();
}

static void d2h_2d_pinned_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_2d_d2h_pinned(E.rt, x->host, x->dev, &x->g), "copy_2d_d2h_pinned");
  seal_wait(E.rt);
}

static void d2h_2d_pinned_raw(void *s, int batch) {
  v11 *x = s;
  t4a__CUDA_MEMCPY2D m = raw_rect(DEVICE, NULL, x->raw_dev, HOST, x->raw_host, 0);
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpy2DAsync(&m, E.stream), "cuMemcpy2DAsync");
  raw_sync();
}

static void d2d_2d_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_2d_d2d(E.rt, x->dev2, x->dev, &x->g), "copy_2d_d2d");
  seal_wait(E.rt);
}

static void d2d_2d_raw(void *s, int batch) {
  v11 *x = s;
  t4a__CUDA_MEMCPY2D m = raw_rect(DEVICE, NULL, x->raw_dev, DEVICE, NULL, x->raw_dev2);
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpy2DAsync(&m, E.stream), "cuMemcpy2DAsync");
  raw_sync();
}

static void h2d_2d_pageable_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_2d_h2d(E.rt, x->dev, x->pageable, &x->g), "copy_2d_h2d");
  seal_wait(E.rt);
}

static void h2d_2d_pageable_raw(void *s, int batch) {
  v11 *x = s;
  t4a__CUDA_MEMCPY2D m = raw_rect(HOST, x->pageable, 0, DEVICE, NULL, x->raw_dev);
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpy2DAsync(&m, E.stream), "cuMemcpy2DAsync");
  raw_sync();
}

static void d2h_2d_pageable_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_2d_d2h(E.rt, x->pageable, x->dev, &x->g), "copy_2d_d2h");
}

static void d2h_2d_pageable_raw(void *s, int batch) {
  v11 *x = s;
  t4a__CUDA_MEMCPY2D m = raw_rect(DEVICE, NULL, x->raw_dev, HOST, x->pageable, 0);
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpy2DAsync(&m, E.stream), "cuMemcpy2DAsync");
  raw_sync();
}

/* ---- host_register ----------------------------------------------------------------- */

static void register_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++) {
    t4a_host_buffer hb;
    bench_check(E.t->host_register(E.rt, x->pageable, x->bytes, 0, &hb), "host_register");
    bench_check(E.t->host_unregister(E.rt, hb), "host_unregister");
    seal_wait(E.rt); /* retires the registration: the memory is unpinned here */
  }
}

static void register_raw(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++) {
    bench_cu(E.cu.cuMemHostRegister(x->pageable, (size_t)x->bytes, 0), "cuMemHostRegister");
    bench_cu(E.cu.cuMemHostUnregister(x->pageable), "cuMemHostUnregister");
  }
}

/* ---- registering against staging ------------------------------------------------------ */

/* Registering pays when pinning the caller's memory once and copying it
 * pinned beats the staged pageable copy_h2d: ours registers, copies and
 * unregisters; the "raw" side here is our own pageable copy_h2d. */
static void register_copy_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++) {
    t4a_host_buffer hb;
    bench_check(E.t->host_register(E.rt, x->pageable, x->bytes, T4A_HOST_REGISTER_READ_ONLY, &hb),
                "host_register");
    bench_check(E.t->copy_h2d_pinned(E.rt, x->dev, 0, hb, 0, x->bytes), "copy_h2d_pinned");
    bench_check(E.t->host_unregister(E.rt, hb), "host_unregister");
    seal_wait(E.rt);
  }
}

static void pageable_copy_ours(void *s, int batch) {
  v11 *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_h2d(E.rt, x->dev, 0, x->pageable, x->bytes), "copy_h2d");
  seal_wait(E.rt);
}

/* ---- timed witnesses: witness_elapsed against cuEventElapsedTime ------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void record_raw(t4a_runtime rt, t4a__CUevent ev) {
  t4a_raw_runtime r = {.struct_size = sizeof r};
  t4a_raw_section sec = {.struct_size = sizeof sec};
  bench_check(E.t->raw_runtime(rt, &r), "raw_runtime");
  bench_check(E.t->raw_begin(rt, &sec), "raw_begin");
  bench_cu(E.cu.cuEventRecord(ev, (t4a__CUstream)r.stream), "cuEventRecord");
  bench_check(E.t->raw_end(rt, &sec), "raw_end");
}

/* On a runtime created with T4A_RUNTIME_TIMING, all on the runtime's
 * stream: raw event o0, seal w0, raw event i0, a 4 GiB D2D, raw event i1,
 * seal w1, raw event o1. The witnesses' events lie between the outer and
 * the inner raw events, so witness_elapsed(w0, w1) must lie between
 * cuEventElapsedTime(i0, i1) and (o0, o1); the report gives its ratio to
 * each, 31 times (a few microseconds of event records against ~2 ms). */
void bench_report_elapsed(FILE *json) {
  const uint64_t bytes = 4096 * MiB;
  enum { N = 31 };
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = T4A_RUNTIME_TIMING};
  t4a_runtime rt;
  bench_check(E.t->runtime_create(0, &o, &rt), "runtime_create (timing)");
  t4a_buffer a, b;
  bench_check(E.t->buffer_alloc(rt, bytes, &a), "buffer_alloc");
  bench_check(E.t->buffer_alloc(rt, bytes, &b), "buffer_alloc");
  t4a__CUevent ev[4]; /* o0, i0, i1, o1 */
  for (int k = 0; k < 4; k++)
    bench_cu(E.cu.cuEventCreate(&ev[k], 0), "cuEventCreate");
  double inner[N], outer[N], ours_us[N], inner_us[N];
  int within = 0;
  for (int i = 0; i < N; i++) {
    t4a_witness w0, w1;
    record_raw(rt, ev[0]);
    bench_check(E.t->seal(rt, &w0), "seal");
    record_raw(rt, ev[1]);
    bench_check(E.t->copy_d2d(rt, b, 0, a, 0, bytes), "copy_d2d");
    record_raw(rt, ev[2]);
    bench_check(E.t->seal(rt, &w1), "seal");
    record_raw(rt, ev[3]);
    bench_check(E.t->witness_wait(w1, T4A_WAIT_FOREVER), "witness_wait");
    bench_cu(E.cu.cuEventSynchronize(ev[3]), "cuEventSynchronize");
    uint64_t ns;
    float in_ms, out_ms;
    bench_check(E.t->witness_elapsed(w0, w1, &ns), "witness_elapsed");
    bench_cu(E.cu.cuEventElapsedTime(&in_ms, ev[1], ev[2]), "cuEventElapsedTime");
    bench_cu(E.cu.cuEventElapsedTime(&out_ms, ev[0], ev[3]), "cuEventElapsedTime");
    ours_us[i] = (double)ns / 1e3;
    inner_us[i] = (double)in_ms * 1e3;
    inner[i] = ours_us[i] / inner_us[i];
    outer[i] = ours_us[i] / ((double)out_ms * 1e3);
    /* between the brackets (float milliseconds: 0.1% slack) and within 1% of each */
    within += inner[i] >= 0.999 && outer[i] <= 1.001 && inner[i] <= 1.01 && outer[i] >= 0.99;
    bench_check(E.t->witness_release(w0), "witness_release");
    bench_check(E.t->witness_release(w1), "witness_release");
  }
  qsort(inner, N, sizeof inner[0], cmp_double);
  qsort(outer, N, sizeof outer[0], cmp_double);
  qsort(ours_us, N, sizeof ours_us[0], cmp_double);
  qsort(inner_us, N, sizeof inner_us[0], cmp_double);
  printf("witness_elapsed vs cuEventElapsedTime (4 GiB D2D, %d runs): median %.1f us vs inner "
         "%.1f us; ratio to inner %.4f..%.4f, to outer %.4f..%.4f; %d of %d within 1%% and "
         "between the brackets (%s)\n",
         N, ours_us[N / 2], inner_us[N / 2], inner[0], inner[N - 1], outer[0], outer[N - 1], within,
         N, within == N ? "yes" : "NO");
  fprintf(json,
          ",\n\"elapsed\":{\"bytes\":%llu,\"runs\":%d,\"t4a_median_us\":%.3f,"
          "\"inner_median_us\":%.3f,\"ratio_inner_min\":%.5f,\"ratio_inner_max\":%.5f,"
          "\"ratio_outer_min\":%.5f,\"ratio_outer_max\":%.5f,\"within\":%d}",
          (unsigned long long)bytes, N, ours_us[N / 2], inner_us[N / 2], inner[0], inner[N - 1],
          outer[0], outer[N - 1], within);
  bench_check(E.t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  for (int k = 0; k < 4; k++)
    E.cu.cuEventDestroy(ev[k]);
}

/* ---- the table ----------------------------------------------------------------------- */

#define V11(label, per_op_bytes, n, samples_, kind, goal, size, ours_, raw_)                       \
  {                                                                                                \
    .name = label, .bytes = per_op_bytes, .batch = n, .samples = samples_, .warmup = 2,            \
    .target_kind = kind, .target = goal, .arg = size, .setup = v11_setup, .ours = ours_,           \
    .raw = raw_, .teardown = v11_teardown                                                          \
  }

/* register + pinned H2D + unregister against our own pageable copy_h2d */
#define REG(label, size, n)                                                                        \
  {                                                                                                \
    .name = "register+pinned H2D " label " (raw: copy_h2d)", .bytes = size, .batch = n,            \
    .samples = 11, .warmup = 1, .target_kind = TARGET_NONE, .arg = size, .setup = v11_setup,       \
    .ours = register_copy_ours, .raw = pageable_copy_ours, .teardown = v11_teardown                \
  }

const bench_case bench_v11_cases[] = {
    V11("memset 1 GiB (32-bit)", 1024 * MiB, 1, 21, TARGET_RATIO_MIN, 0.97, 1024 * MiB, memset_ours,
        memset_raw),
    V11("2D pinned H2D 4096x16KiB", ROWS *WIDTH, 1, 21, TARGET_RATIO_MIN, 0.97, RECT,
        h2d_2d_pinned_ours, h2d_2d_pinned_raw),
    V11("2D pinned D2H 4096x16KiB", ROWS *WIDTH, 1, 21, TARGET_RATIO_MIN, 0.97, RECT,
        d2h_2d_pinned_ours, d2h_2d_pinned_raw),
    V11("2D D2D 4096x16KiB", ROWS *WIDTH, 1, 21, TARGET_RATIO_MIN, 0.97, RECT, d2d_2d_ours,
        d2d_2d_raw),
    V11("2D pageable H2D 4096x16KiB", ROWS *WIDTH, 1, 15, TARGET_RATIO_MIN, 1.0, RECT,
        h2d_2d_pageable_ours, h2d_2d_pageable_raw),
    V11("2D pageable D2H 4096x16KiB", ROWS *WIDTH, 1, 15, TARGET_RATIO_MIN, 1.0, RECT,
        d2h_2d_pageable_ours, d2h_2d_pageable_raw),
    V11("host_register+unregister 64 MiB", 0, 1, 21, TARGET_RATIO_MAX, 1.05, 64 * MiB,
        register_ours, register_raw),
    REG("4 MiB", 4 * MiB, 5),
    REG("64 MiB", 64 * MiB, 1),
    REG("512 MiB", 512 * MiB, 1),
    {.name = NULL},
};
