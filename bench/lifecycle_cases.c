/* bench/lifecycle_cases.c -- runtime creation and the pageable size sweep,
 * each paired with the raw Driver API doing the same work.
 *
 * Creation: ours is runtime_create + runtime_destroy with the default
 * options; the raw side makes and releases what a runtime holds: a stream,
 * a pool with its release threshold, 64 MiB of pinned staging and its eight
 * chunk events. "Cold" turns the spare parts off (T4A_RUNTIME_SPARES=0),
 * so every cycle makes everything; "warm" is the default, where a destroyed
 * runtime's parts serve the next create. The device's primary context is
 * held by the bench's own runtime and the raw side throughout, as in any
 * process that keeps one runtime alive.
 *
 * The sweeps: copy_h2d (+ seal and wait) and copy_d2h against the driver's
 * own pageable cuMemcpyHtoDAsync / cuMemcpyDtoHAsync (+ synchronize), from
 * 1 B to 1 GiB, as GB/s; and the pinned copies against the same driver
 * calls from pinned memory, 4 KiB to 1 GiB. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define MiB (1ull << 20)
#define STAGING (64ull << 20)
#define CHUNKS 8

static void *create_setup(const bench_case *c) {
  if (c->arg) /* cold */
    setenv("T4A_RUNTIME_SPARES", "0", 1);
  return NULL;
}

static void create_teardown(void *s) {
  (void)s;
  unsetenv("T4A_RUNTIME_SPARES");
}

static void create_ours(void *s, int batch) {
  (void)s;
  for (int i = 0; i < batch; i++) {
    t4a_runtime rt;
    bench_check(E.t->runtime_create(0, NULL, &rt), "runtime_create");
    bench_check(E.t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  }
}

static void create_raw(void *s, int batch) {
  (void)s;
  for (int i = 0; i < batch; i++) {
    t4a__CUstream stream;
    t4a__CUmemoryPool pool;
    void *staging;
    t4a__CUevent ev[CHUNKS];
    bench_cu(E.cu.cuStreamCreate(&stream, T4A__CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    t4a__CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = T4A__CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = T4A__CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    bench_cu(E.cu.cuMemPoolCreate(&pool, &props), "cuMemPoolCreate");
    uint64_t threshold = UINT64_MAX;
    bench_cu(E.cu.cuMemPoolSetAttribute(pool, T4A__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
             "cuMemPoolSetAttribute");
    bench_cu(E.cu.cuMemHostAlloc(&staging, STAGING, T4A__CU_MEMHOSTALLOC_PORTABLE),
             "cuMemHostAlloc");
    for (int k = 0; k < CHUNKS; k++)
      bench_cu(E.cu.cuEventCreate(&ev[k], T4A__CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    for (int k = 0; k < CHUNKS; k++)
      bench_cu(E.cu.cuEventDestroy(ev[k]), "cuEventDestroy");
    bench_cu(E.cu.cuMemFreeHost(staging), "cuMemFreeHost");
    bench_cu(E.cu.cuMemPoolDestroy(pool), "cuMemPoolDestroy");
    bench_cu(E.cu.cuStreamDestroy(stream), "cuStreamDestroy");
  }
}

/* ---- the pageable sweep ------------------------------------------------------------ */

typedef struct pageable {
  uint64_t bytes;
  t4a_buffer dev;
  t4a_host_buffer hb; /* the pinned sweep's host memory */
  t4a__CUdeviceptr raw_dev;
  unsigned char *host;
} pageable;

static void *pageable_setup(const bench_case *c) {
  pageable *x = calloc(1, sizeof *x);
  x->bytes = c->arg;
  bench_check(E.t->buffer_alloc(E.rt, x->bytes, &x->dev), "buffer_alloc");
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&x->raw_dev, (size_t)x->bytes, E.pool, E.stream),
           "raw alloc");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  x->host = malloc(x->bytes);
  for (uint64_t i = 0; i < x->bytes; i++) /* fault every page in, with non-zero data */
    x->host[i] = (unsigned char)(i * 131 + 7);
  return x;
}

static void pageable_teardown(void *s) {
  pageable *x = s;
  t4a_witness w;
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
  bench_check(E.t->buffer_free(E.rt, x->dev), "buffer_free");
  bench_cu(E.cu.cuMemFreeAsync(x->raw_dev, E.stream), "raw free");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  free(x->host);
  free(x);
}

static void h2d_ours(void *s, int batch) {
  pageable *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_h2d(E.rt, x->dev, 0, x->host, x->bytes), "copy_h2d");
  t4a_witness w; /* the device write counts too, as the raw side's synchronize does */
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void h2d_raw(void *s, int batch) {
  pageable *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyHtoDAsync(x->raw_dev, x->host, (size_t)x->bytes, E.stream), "h2d");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
}

/* Pinned copies of the same sizes: our copy_*_pinned against the driver's
 * own from pinned memory (one pinned block serves both sides: only the
 * calls differ). */
static void *pinned_setup(const bench_case *c) {
  pageable *x = pageable_setup(c);
  free(x->host);
  x->host = NULL;
  bench_check(E.t->host_alloc(E.rt, x->bytes, 0, &x->hb, (void **)&x->host), "host_alloc");
  memset(x->host, 0x5a, x->bytes);
  return x;
}

static void pinned_teardown(void *s) {
  pageable *x = s;
  t4a_host_buffer hb = x->hb;
  x->host = malloc(1); /* pageable_teardown frees it */
  pageable_teardown(x);
  bench_check(E.t->host_free(E.rt, hb), "host_free");
}

static void pinned_h2d_ours(void *s, int batch) {
  pageable *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_h2d_pinned(E.rt, x->dev, 0, x->hb, 0, x->bytes), "copy_h2d_pinned");
  t4a_witness w;
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void pinned_d2h_ours(void *s, int batch) {
  pageable *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_d2h_pinned(E.rt, x->hb, 0, x->dev, 0, x->bytes), "copy_d2h_pinned");
  t4a_witness w;
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

#define pinned_h2d_raw h2d_raw /* the driver's call is the same; the memory is pinned */
#define pinned_d2h_raw d2h_raw

static void d2h_ours(void *s, int batch) {
  pageable *x = s;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_d2h(E.rt, x->host, x->dev, 0, x->bytes), "copy_d2h");
}

static void d2h_raw(void *s, int batch) {
  pageable *x = s;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyDtoHAsync(x->host, x->raw_dev, (size_t)x->bytes, E.stream), "d2h");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
}

#define CREATE(label, cold, kind, goal)                                                            \
  {                                                                                                \
    .name = label, .batch = 1, .samples = 31, .warmup = 2, .target_kind = kind, .target = goal,    \
    .arg = cold, .setup = create_setup, .ours = create_ours, .raw = create_raw,                    \
    .teardown = create_teardown                                                                    \
  }
/* Batches keep a sample near a millisecond or more: small copies repeat. */
#define SWEEP(dir, label, size, n, samples_)                                                       \
  {                                                                                                \
    .name = "pageable " #dir " sweep " label, .bytes = size, .batch = n, .samples = samples_,      \
    .warmup = 2, .target_kind = TARGET_RATIO_MIN, .target = 1.0, .arg = size,                      \
    .setup = pageable_setup, .ours = dir##_ours, .raw = dir##_raw, .teardown = pageable_teardown   \
  }
#define SWEEP_BOTH(label, size, n, samples_)                                                       \
  SWEEP(h2d, label, size, n, samples_), SWEEP(d2h, label, size, n, samples_)
#define PINNED(dir, label, size, n)                                                                \
  {                                                                                                \
    .name = "pinned " #dir " sweep " label, .bytes = size, .batch = n, .samples = 11, .warmup = 2, \
    .target_kind = TARGET_RATIO_MIN, .target = 0.97, .arg = size, .setup = pinned_setup,           \
    .ours = pinned_##dir##_ours, .raw = pinned_##dir##_raw, .teardown = pinned_teardown            \
  }
#define PINNED_BOTH(label, size, n) PINNED(h2d, label, size, n), PINNED(d2h, label, size, n)

const bench_case bench_lifecycle_cases[] = {
    CREATE("runtime create+destroy, cold", 1, TARGET_RATIO_MAX, 1.0),
    CREATE("runtime create+destroy, warm", 0, TARGET_ABS_MAX, 1000.0),
    SWEEP_BOTH("1 B", 1, 500, 31),
    SWEEP_BOTH("64 B", 64, 500, 31),
    SWEEP_BOTH("1 KiB", 1024, 500, 31),
    SWEEP_BOTH("4 KiB", 4096, 500, 31),
    SWEEP_BOTH("16 KiB", 16384, 200, 31),
    SWEEP_BOTH("64 KiB", 65536, 100, 31),
    SWEEP_BOTH("256 KiB", 256 << 10, 50, 31),
    SWEEP_BOTH("1 MiB", MiB, 20, 21),
    SWEEP_BOTH("4 MiB", 4 * MiB, 5, 21),
    SWEEP_BOTH("16 MiB", 16 * MiB, 2, 15),
    SWEEP_BOTH("64 MiB", 64 * MiB, 1, 11),
    SWEEP_BOTH("256 MiB", 256 * MiB, 1, 9),
    SWEEP_BOTH("1 GiB", 1024 * MiB, 1, 7),
    PINNED_BOTH("4 KiB", 4096, 500),
    PINNED_BOTH("64 KiB", 65536, 100),
    PINNED_BOTH("1 MiB", MiB, 20),
    PINNED_BOTH("16 MiB", 16 * MiB, 2),
    PINNED_BOTH("256 MiB", 256 * MiB, 1),
    PINNED_BOTH("1 GiB", 1024 * MiB, 1),
    {.name = NULL},
};
