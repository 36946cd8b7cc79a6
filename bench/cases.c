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

/* ---- launches ------------------------------------------------------------------------ */

static const char empty_source[] = "extern \"C\" __global__ void t4a_empty() {}\n";

typedef struct launch_state {
  t4a_artifact art;
  t4a_module mod;
  t4a_function fn;
  t4a__CUmodule raw_mod;
  t4a__CUfunction raw_fn;
  t4a_launch_config cfg;
} launch_state;

static void *launch_setup(const bench_case *c) {
  (void)c;
  launch_state *s = calloc(1, sizeof *s);
  t4a_compile_options o = {.struct_size = sizeof o, .source = empty_source, .name = "empty.cu"};
  bench_check(E.t->artifact_compile(&o, &s->art), "artifact_compile");
  bench_check(E.t->module_load(E.rt, s->art, &s->mod), "module_load");
  bench_check(E.t->function_get(E.rt, s->mod, "t4a_empty", &s->fn), "function_get");
  const void *cubin;
  uint64_t size;
  bench_check(E.t->artifact_data(s->art, NULL, &cubin, &size), "artifact_data");
  bench_cu(E.cu.cuModuleLoadData(&s->raw_mod, cubin), "cuModuleLoadData");
  bench_cu(E.cu.cuModuleGetFunction(&s->raw_fn, s->raw_mod, "t4a_empty"), "cuModuleGetFunction");
  s->cfg =
      (t4a_launch_config){.struct_size = sizeof s->cfg, .grid = {1, 1, 1}, .block = {32, 1, 1}};
  return s;
}

static void launch_teardown(void *p) {
  launch_state *s = p;
  seal_wait();
  raw_sync();
  bench_check(E.t->module_unload(E.rt, s->mod), "module_unload");
  bench_check(E.t->artifact_release(s->art), "artifact_release");
  E.cu.cuModuleUnload(s->raw_mod);
  free(s);
}

static void raw_launch(launch_state *s) {
  bench_cu(E.cu.cuLaunchKernel(s->raw_fn, 1, 1, 1, 32, 1, 1, 0, E.stream, NULL, NULL),
           "cuLaunchKernel");
}

/* Host cost of a launch: a batch of launches, the queue drained between
 * samples (untimed) so that it never fills. */
static void launch_ours(void *p, int batch) {
  launch_state *s = p;
  for (int i = 0; i < batch; i++)
    E.t->launch(E.rt, s->fn, &s->cfg, NULL);
}

static void launch_raw(void *p, int batch) {
  launch_state *s = p;
  for (int i = 0; i < batch; i++)
    raw_launch(s);
}

static void drain_both(void *p) {
  (void)p;
  seal_wait();
  raw_sync();
}

#define CHAIN 10000

/* One chain per operation: CHAIN launches, then one seal and wait. */
static void chain_ours(void *p, int batch) {
  launch_state *s = p;
  for (int b = 0; b < batch; b++) {
    for (int i = 0; i < CHAIN; i++)
      E.t->launch(E.rt, s->fn, &s->cfg, NULL);
    seal_wait();
  }
}

static void chain_raw(void *p, int batch) {
  launch_state *s = p;
  for (int b = 0; b < batch; b++) {
    for (int i = 0; i < CHAIN; i++)
      raw_launch(s);
    raw_sync();
  }
}

static void roundtrip_launch_ours(void *p, int batch) {
  launch_state *s = p;
  for (int i = 0; i < batch; i++) {
    E.t->launch(E.rt, s->fn, &s->cfg, NULL);
    seal_wait();
  }
}

static void roundtrip_launch_raw(void *p, int batch) {
  launch_state *s = p;
  for (int i = 0; i < batch; i++) {
    raw_launch(s);
    raw_sync();
  }
}

/* ---- the artifact cache ------------------------------------------------------------ */

static const char cache_source[] =
    "extern \"C\" __global__ void scale(float *x, float a, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] *= a;\n"
    "}\n";

static void compile_with(uint32_t flags) {
  t4a_compile_options o = {
      .struct_size = sizeof o, .flags = flags, .source = cache_source, .name = "scale.cu"};
  t4a_artifact a;
  bench_check(E.t->artifact_compile(&o, &a), "artifact_compile");
  bench_check(E.t->artifact_release(a), "artifact_release");
}

static void *cache_setup(const bench_case *c) {
  (void)c;
  compile_with(0); /* fills both caches */
  return NULL;
}

static void memory_hit(void *p, int batch) {
  (void)p;
  for (int i = 0; i < batch; i++)
    compile_with(0);
}

static void disk_hit(void *p, int batch) {
  (void)p;
  for (int i = 0; i < batch; i++) {
    bench_check(E.t->compile_cache_clear(T4A_CACHE_MEMORY), "compile_cache_clear");
    compile_with(0);
  }
}

static void no_cache(void *p, int batch) {
  (void)p;
  for (int i = 0; i < batch; i++)
    compile_with(T4A_COMPILE_NO_CACHE);
}

/* ---- copies between runtimes ------------------------------------------------------- */

typedef struct cross {
  uint64_t bytes;
  t4a_runtime other; /* the destination runtime */
  t4a_buffer src, dst, dst_same;
  t4a__CUdeviceptr raw_src, raw_dst;
  t4a__CUmemoryPool raw_pool1;
  t4a__CUstream raw_stream1;
  t4a__CUcontext ctx0, ctx1;
} cross;

static void *cross_setup(const bench_case *c) {
  cross *x = calloc(1, sizeof *x);
  x->bytes = c->arg;
  int32_t dev = c->min_devices >= 2 ? 1 : 0;
  bench_check(E.t->runtime_create(dev, NULL, &x->other), "runtime_create");
  bench_check(E.t->buffer_alloc(E.rt, x->bytes, &x->src), "buffer_alloc");
  bench_check(E.t->buffer_alloc(E.rt, x->bytes, &x->dst_same), "buffer_alloc");
  bench_check(E.t->buffer_alloc(x->other, x->bytes, &x->dst), "buffer_alloc");
  if (dev == 1) { /* the raw side: pools on both devices, peer access, device 1's stream */
    t4a_raw_runtime r = {.struct_size = sizeof r};
    bench_check(E.t->raw_runtime(x->other, &r), "raw_runtime");
    x->ctx1 = r.context;
    x->ctx0 = E.ctx;
    x->raw_src = raw_alloc(x->bytes);
    bench_cu(E.cu.cuCtxSetCurrent(x->ctx1), "cuCtxSetCurrent");
    t4a__CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = T4A__CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = T4A__CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 1;
    bench_cu(E.cu.cuMemPoolCreate(&x->raw_pool1, &props), "cuMemPoolCreate");
    bench_cu(E.cu.cuStreamCreate(&x->raw_stream1, T4A__CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    bench_cu(
        E.cu.cuMemAllocFromPoolAsync(&x->raw_dst, (size_t)x->bytes, x->raw_pool1, x->raw_stream1),
        "raw alloc on device 1");
    t4a__CUresult r1 = E.cu.cuCtxEnablePeerAccess(x->ctx0, 0);
    if (r1 != T4A__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
      bench_cu(r1, "cuCtxEnablePeerAccess");
    t4a__CUmemAccessDesc d = {{T4A__CU_MEM_LOCATION_TYPE_DEVICE, 1},
                              T4A__CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    bench_cu(E.cu.cuMemPoolSetAccess(E.pool, &d, 1), "cuMemPoolSetAccess");
    bench_cu(E.cu.cuStreamSynchronize(x->raw_stream1), "cuStreamSynchronize");
    bench_cu(E.cu.cuCtxSetCurrent(x->ctx0), "cuCtxSetCurrent");
  }
  return x;
}

static void cross_teardown(void *p) {
  cross *x = p;
  seal_wait();
  bench_check(E.t->runtime_destroy(x->other, T4A_WAIT_FOREVER), "runtime_destroy");
  bench_check(E.t->buffer_free(E.rt, x->src), "buffer_free");
  bench_check(E.t->buffer_free(E.rt, x->dst_same), "buffer_free");
  if (x->raw_stream1) {
    raw_free(x->raw_src);
    bench_cu(E.cu.cuCtxSetCurrent(x->ctx1), "cuCtxSetCurrent");
    E.cu.cuMemFreeAsync(x->raw_dst, x->raw_stream1);
    E.cu.cuStreamSynchronize(x->raw_stream1);
    E.cu.cuStreamDestroy(x->raw_stream1);
    E.cu.cuMemPoolDestroy(x->raw_pool1);
    bench_cu(E.cu.cuCtxSetCurrent(x->ctx0), "cuCtxSetCurrent");
  }
  free(x);
}

static void other_seal_wait(t4a_runtime rt) {
  t4a_witness w;
  bench_check(E.t->seal(rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void cross_runtime_ours(void *p, int batch) {
  cross *x = p;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_from_runtime(x->other, x->dst, 0, E.rt, x->src, 0, x->bytes),
                "copy_from_runtime");
  other_seal_wait(x->other);
}

static void in_runtime_d2d(void *p, int batch) { /* the reference: a D2D within one runtime */
  cross *x = p;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_d2d(E.rt, x->dst_same, 0, x->src, 0, x->bytes), "copy_d2d");
  seal_wait();
}

static void peer_ours(void *p, int batch) {
  cross *x = p;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_from_peer(x->other, x->dst, 0, E.rt, x->src, 0, x->bytes),
                "copy_from_peer");
  other_seal_wait(x->other);
}

static void peer_raw(void *p, int batch) {
  cross *x = p;
  bench_cu(E.cu.cuCtxSetCurrent(x->ctx1), "cuCtxSetCurrent");
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuMemcpyPeerAsync(x->raw_dst, x->ctx1, x->raw_src, x->ctx0, (size_t)x->bytes,
                                    x->raw_stream1),
             "cuMemcpyPeerAsync");
  bench_cu(E.cu.cuStreamSynchronize(x->raw_stream1), "cuStreamSynchronize");
  bench_cu(E.cu.cuCtxSetCurrent(x->ctx0), "cuCtxSetCurrent");
}

/* ---- the table --------------------------------------------------------------------------- */

#define ALLOC(label, size)                                                                         \
  {                                                                                                \
    .name = label, .batch = 1000, .samples = 101, .warmup = 3, .target_kind = TARGET_ABS_MAX,      \
    .target = 0.10, .arg = size, .setup = alloc_setup, .ours = alloc_ours, .raw = alloc_raw,       \
    .teardown = alloc_teardown                                                                     \
  }
#define XFER(label, per_op_bytes, n, samples_, kind, goal, size, ours_, raw_)                      \
  {                                                                                                \
    .name = label, .bytes = per_op_bytes, .batch = n, .samples = samples_, .warmup = 2,            \
    .target_kind = kind, .target = goal, .arg = size, .setup = xfer_setup, .ours = ours_,          \
    .raw = raw_, .teardown = xfer_teardown                                                         \
  }
/* The same with a p99 goal as well (issue #17's pageable H2D). */
#define XFER_P99(label, per_op_bytes, n, samples_, kind, goal, p99_goal, size, ours_, raw_)        \
  {                                                                                                \
    .name = label, .bytes = per_op_bytes, .batch = n, .samples = samples_, .warmup = 2,            \
    .target_kind = kind, .target = goal, .p99_target = p99_goal, .arg = size, .setup = xfer_setup, \
    .ours = ours_, .raw = raw_, .teardown = xfer_teardown                                          \
  }
#define LAUNCH(label, n, samples_, goal, ours_, raw_, between_)                                    \
  {                                                                                                \
    .name = label, .batch = n, .samples = samples_, .warmup = 2, .target_kind = TARGET_RATIO_MAX,  \
    .target = goal, .setup = launch_setup, .ours = ours_, .raw = raw_,                             \
    .teardown = launch_teardown, .between = between_                                               \
  }
#define CACHE(label, n, goal, ours_)                                                               \
  {                                                                                                \
    .name = label, .batch = n, .samples = 11, .warmup = 2, .target_kind = TARGET_ABS_MAX,          \
    .target = goal, .setup = cache_setup, .ours = ours_, .raw = no_cache, .raw_batch = 1           \
  }

const bench_case bench_cases[] = {
    ALLOC("alloc+free 256 B", 256),
    ALLOC("alloc+free 1 MiB", MiB),
    ALLOC("alloc+free 64 MiB", 64 * MiB),
    XFER("seal+wait after a 4 B copy", 0, 200, 51, TARGET_RATIO_MAX, 1.00, 4096,
         roundtrip_copy_ours, roundtrip_copy_raw),
    XFER("pinned H2D 256 MiB", 256 * MiB, 1, 21, TARGET_RATIO_MIN, 0.97, 256 * MiB, h2d_pinned_ours,
         h2d_pinned_raw),
    XFER("pinned D2H 256 MiB", 256 * MiB, 1, 21, TARGET_RATIO_MIN, 0.97, 256 * MiB, d2h_pinned_ours,
         d2h_pinned_raw),
    XFER_P99("pageable H2D 512 MiB", 512 * MiB, 1, 21, TARGET_ABS_MIN, 42.0, 35.0, 512 * MiB,
             h2d_pageable_ours, h2d_pageable_raw),
    XFER("pageable D2H 512 MiB", 512 * MiB, 1, 11, TARGET_ABS_MIN, 45.0, 512 * MiB,
         d2h_pageable_ours, d2h_pageable_raw),
    XFER("pageable H2D 4 KiB", 0, 200, 51, TARGET_NONE, 0, 4096, h2d_pageable_ours,
         h2d_pageable_raw),
    XFER("pageable D2H 4 KiB", 0, 200, 51, TARGET_NONE, 0, 4096, d2h_pageable_ours,
         d2h_pageable_raw),
    XFER("D2D 1 GiB", 1024 * MiB, 1, 21, TARGET_NONE, 0, 1024 * MiB, d2d_ours, d2d_raw),
    LAUNCH("launch (empty kernel), per launch", 200, 101, 1.01, launch_ours, launch_raw,
           drain_both),
    LAUNCH("seal+wait after one empty launch", 200, 51, 1.00, roundtrip_launch_ours,
           roundtrip_launch_raw, NULL),
    LAUNCH("warm chain 10000 launches + seal", 1, 15, 1.03, chain_ours, chain_raw, NULL),
    CACHE("artifact cache: memory hit (raw: compile)", 100, 5.0, memory_hit),
    CACHE("artifact cache: disk hit (raw: compile)", 10, 1000.0, disk_hit),
    {.name = "cross-runtime copy 1 GiB (raw: in-runtime D2D)",
     .bytes = 1024 * MiB,
     .batch = 1,
     .samples = 21,
     .warmup = 2,
     .target_kind = TARGET_RATIO_MIN,
     .target = 0.97,
     .arg = 1024 * MiB,
     .setup = cross_setup,
     .ours = cross_runtime_ours,
     .raw = in_runtime_d2d,
     .teardown = cross_teardown},
    {.name = "peer copy 1 GiB, device 0 -> 1",
     .bytes = 1024 * MiB,
     .batch = 1,
     .samples = 21,
     .warmup = 2,
     .target_kind = TARGET_RATIO_MIN,
     .target = 0.95,
     .arg = 1024 * MiB,
     .setup = cross_setup,
     .ours = peer_ours,
     .raw = peer_raw,
     .teardown = cross_teardown,
     .min_devices = 2},
    {.name = NULL},
};
