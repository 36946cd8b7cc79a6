/* bench/cases.c -- the benchmark cases: each pairs a runtime operation with
 * the raw Driver API calls that do the same work. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define MiB (1ull << 20)

/* ---- helpers --------------------------------------------------------------------- */

static void seal_wait(void) {
  t4a_witness w;
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void raw_sync(void) { bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize"); }

static t4a__CUdeviceptr raw_alloc(uint64_t bytes) {
  t4a__CUdeviceptr p;
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&p, (size_t)bytes, E.pool, E.stream), "raw alloc");
  raw_sync();
  return p;
}

static void raw_free(t4a__CUdeviceptr p) {
  bench_cu(E.cu.cuMemFreeAsync(p, E.stream), "raw free");
  raw_sync();
}

/* Everything a transfer case needs on both sides. */
typedef struct xfer {
  uint64_t bytes;
  t4a_buffer ours_dev, ours_dev2;
  t4a_host_buffer ours_host;
  void *ours_host_ptr;
  t4a__CUdeviceptr raw_dev, raw_dev2;
  void *raw_host;          /* pinned */
  unsigned char *pageable; /* shared by both sides, touched before timing */
} xfer;

static void *xfer_setup(const bench_case *c) {
  xfer *x = calloc(1, sizeof *x);
  x->bytes = c->arg;
  bench_check(E.t->buffer_alloc(E.rt, x->bytes, &x->ours_dev), "buffer_alloc");
  bench_check(E.t->buffer_alloc(E.rt, x->bytes, &x->ours_dev2), "buffer_alloc");
  x->raw_dev = raw_alloc(x->bytes);
  x->raw_dev2 = raw_alloc(x->bytes);
  bench_check(E.t->host_alloc(E.rt, x->bytes, 0, &x->ours_host, &x->ours_host_ptr), "host_alloc");
  bench_cu(E.cu.cuMemHostAlloc(&x->raw_host, (size_t)x->bytes, T4A__CU_MEMHOSTALLOC_PORTABLE),
           "cuMemHostAlloc");
  x->pageable = malloc(x->bytes);
  for (uint64_t i = 0; i < x->bytes; i++) /* fault every page in, with non-zero data */
    x->pageable[i] = (unsigned char)(i * 131 + 7);
  memset(x->ours_host_ptr, 0x5a, x->bytes);
  memset(x->raw_host, 0x5a, x->bytes);
  return x;
}

static void xfer_teardown(void *s) {
  xfer *x = s;
  seal_wait();
  raw_sync();
  bench_check(E.t->buffer_free(E.rt, x->ours_dev), "buffer_free");
  bench_check(E.t->buffer_free(E.rt, x->ours_dev2), "buffer_free");
  bench_check(E.t->host_free(E.rt, x->ours_host), "host_free");
  raw_free(x->raw_dev);
  raw_free(x->raw_dev2);
  E.cu.cuMemFreeHost(x->raw_host);
  free(x->pageable);
  free(x);
}

/* ---- allocation -------------------------------------------------------------------- */

static void *alloc_setup(const bench_case *c) { return (void *)(uintptr_t)c->arg; }

static void alloc_ours(void *s, int batch) {
  uint64_t bytes = (uint64_t)(uintptr_t)s;
  for (int i = 0; i < batch; i++) {
    t4a_buffer b;
    E.t->buffer_alloc(E.rt, bytes, &b);
    E.t->buffer_free(E.rt, b);
  }
}

static void alloc_raw(void *s, int batch) {
  size_t bytes = (size_t)(uintptr_t)s;
  for (int i = 0; i < batch; i++) {
    t4a__CUdeviceptr p;
    E.cu.cuMemAllocFromPoolAsync(&p, bytes, E.pool, E.stream);
    E.cu.cuMemFreeAsync(p, E.stream);
  }
}

static void alloc_teardown(void *s) {
  (void)s;
  raw_sync();
}

/* ---- seal + wait round trip -------------------------------------------------------- */

static void roundtrip_copy_ours(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++) {
    E.t->copy_d2d(E.rt, x->ours_dev2, 0, x->ours_dev, 0, 4);
    seal_wait();
  }
}

static void roundtrip_copy_raw(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++) {
    E.cu.cuMemcpyDtoDAsync(x->raw_dev2, x->raw_dev, 4, E.stream);
    raw_sync();
  }
}

/* ---- transfers -------------------------------------------------------------------------- */

static void h2d_pinned_ours(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_h2d_pinned(E.rt, x->ours_dev, 0, x->ours_host, 0, x->bytes), "h2d");
  seal_wait();
}

static void h2d_pinned_raw(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyHtoDAsync(x->raw_dev, x->raw_host, (size_t)x->bytes, E.stream), "h2d");
  raw_sync();
}

static void d2h_pinned_ours(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_d2h_pinned(E.rt, x->ours_host, 0, x->ours_dev, 0, x->bytes), "d2h");
  seal_wait();
}

static void d2h_pinned_raw(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyDtoHAsync(x->raw_host, x->raw_dev, (size_t)x->bytes, E.stream), "d2h");
  raw_sync();
}

static void h2d_pageable_ours(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_h2d(E.rt, x->ours_dev, 0, x->pageable, x->bytes), "copy_h2d");
  seal_wait(); /* count the device write too, as the raw side does */
}

static void h2d_pageable_raw(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyHtoDAsync(x->raw_dev, x->pageable, (size_t)x->bytes, E.stream), "h2d");
  raw_sync();
}

static void d2h_pageable_ours(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_d2h(E.rt, x->pageable, x->ours_dev, 0, x->bytes), "copy_d2h");
}

static void d2h_pageable_raw(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyDtoHAsync(x->pageable, x->raw_dev, (size_t)x->bytes, E.stream), "d2h");
  raw_sync();
}

static void d2d_ours(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_d2d(E.rt, x->ours_dev2, 0, x->ours_dev, 0, x->bytes), "copy_d2d");
  seal_wait();
}

static void d2d_raw(void *s, int batch) {
  xfer *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyDtoDAsync(x->raw_dev2, x->raw_dev, (size_t)x->bytes, E.stream), "d2d");
  raw_sync();
}

/* ---- the table --------------------------------------------------------------------------- */

#define ALLOC(name, size)                                                                          \
  {                                                                                                \
    name, 0, 1000, 101, 3, TARGET_ABS_MAX, 0.10, size, alloc_setup, alloc_ours, alloc_raw,         \
        alloc_teardown                                                                             \
  }
#define XFER(name, bytes, batch, samples, kind, target, size, ours, raw)                           \
  { name, bytes, batch, samples, 2, kind, target, size, xfer_setup, ours, raw, xfer_teardown }

const bench_case bench_cases[] = {
    ALLOC("alloc+free 256 B", 256),
    ALLOC("alloc+free 1 MiB", MiB),
    ALLOC("alloc+free 64 MiB", 64 * MiB),
    XFER("seal+wait after a 4 B copy", 0, 200, 51, TARGET_RATIO_MAX, 1.05, 4096,
         roundtrip_copy_ours, roundtrip_copy_raw),
    XFER("pinned H2D 256 MiB", 256 * MiB, 1, 21, TARGET_RATIO_MIN, 0.97, 256 * MiB, h2d_pinned_ours,
         h2d_pinned_raw),
    XFER("pinned D2H 256 MiB", 256 * MiB, 1, 21, TARGET_RATIO_MIN, 0.97, 256 * MiB, d2h_pinned_ours,
         d2h_pinned_raw),
    XFER("pageable H2D 512 MiB", 512 * MiB, 1, 11, TARGET_ABS_MIN, 26.0, 512 * MiB,
         h2d_pageable_ours, h2d_pageable_raw),
    XFER("pageable D2H 512 MiB", 512 * MiB, 1, 11, TARGET_ABS_MIN, 30.0, 512 * MiB,
         d2h_pageable_ours, d2h_pageable_raw),
    XFER("pageable H2D 4 KiB", 0, 200, 51, TARGET_NONE, 0, 4096, h2d_pageable_ours,
         h2d_pageable_raw),
    XFER("pageable D2H 4 KiB", 0, 200, 51, TARGET_NONE, 0, 4096, d2h_pageable_ours,
         d2h_pageable_raw),
    XFER("D2D 1 GiB", 1024 * MiB, 1, 21, TARGET_NONE, 0, 1024 * MiB, d2d_ours, d2d_raw),
    {NULL, 0, 0, 0, 0, TARGET_NONE, 0, 0, NULL, NULL, NULL, NULL},
};
