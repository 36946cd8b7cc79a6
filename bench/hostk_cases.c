/* bench/hostk_cases.c -- the host backend's kernel rows: CUDA C kernels
 * compiled by the host backend (the prelude, the host C++ compiler) and
 * launched through the table, each paired in this process with hand-written
 * C doing the same work over as many threads as the backend's kernel pool
 * runs (T4A_HOST_THREADS, else one per online CPU; plugin-host/pool.c):
 *  - saxpy 64 Mi floats: a loop-mode kernel, 256-thread blocks; against a C
 *    loop, one slice per thread;
 *  - block reduction 64 Mi floats: 256-thread blocks of contiguous 64 KiB
 *    tiles, a __shared__ tree with __syncthreads; against a C sum, one slice
 *    per thread;
 *  - warp-shuffle reduction: the same tiles, __shfl_down_sync in each warp,
 *    one __syncthreads; against the same C sum;
 *  - one barrier per thread: a 256-thread block passing 1000 __syncthreads,
 *    two call sites in its loop (as a loop body with two barriers has, or a
 *    loop the compiler unrolled), per thread and barrier; against a C loop
 *    of as many steps (what the loop itself costs);
 *  - the host costs of an empty launch, and compiles (cold, memory and disk
 *    cache hits).
 *
 * The reductions write one partial sum per block (the C side one per
 * thread); both leave a few thousand partials, which cost nothing to add.
 * Their tiles are contiguous per block with the block's threads striding
 * through them: each cache line is read by 16 fibers one after another
 * while it is still in cache (a grid-stride loop over the whole array
 * would read every line 16 times from memory on a CPU; see
 * docs/performance.md). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define N (64u << 20) /* floats */
#define TILE (16384u) /* floats per block of the reductions: 64 KiB */
#define BARRIERS 1000

static const char source[] =
    "extern \"C\" __global__ void b_saxpy(int n, float a, const float *__restrict__ x,\n"
    "                                     float *__restrict__ y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "#define TILE 16384\n"
    "extern \"C\" __global__ void b_block_sum(const float *x, float *out) {\n"
    "  __shared__ float s[256];\n"
    "  const float *t = x + (unsigned long long)blockIdx.x * TILE;\n"
    "  float v = 0.0f;\n"
    "  for (int i = threadIdx.x; i < TILE; i += 256)\n"
    "    v += t[i];\n"
    "  s[threadIdx.x] = v;\n"
    "  __syncthreads();\n"
    "  for (int w = 128; w > 0; w >>= 1) {\n"
    "    if ((int)threadIdx.x < w)\n"
    "      s[threadIdx.x] += s[threadIdx.x + w];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0)\n"
    "    out[blockIdx.x] = s[0];\n"
    "}\n"
    "__device__ float warp_sum(float v) {\n"
    "  for (int o = 16; o > 0; o >>= 1)\n"
    "    v += __shfl_down_sync(0xffffffffu, v, o);\n"
    "  return v;\n"
    "}\n"
    "extern \"C\" __global__ void b_warp_sum(const float *x, float *out) {\n"
    "  __shared__ float w[8];\n"
    "  const float *t = x + (unsigned long long)blockIdx.x * TILE;\n"
    "  float v = 0.0f;\n"
    "  for (int i = threadIdx.x; i < TILE; i += 256)\n"
    "    v += t[i];\n"
    "  v = warp_sum(v);\n"
    "  if ((threadIdx.x & 31) == 0)\n"
    "    w[threadIdx.x / 32] = v;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x < 32) {\n"
    "    v = warp_sum(threadIdx.x < 8 ? w[threadIdx.x] : 0.0f);\n"
    "    if (threadIdx.x == 0)\n"
    "      out[blockIdx.x] = v;\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void b_barriers(int k, int *out) {\n"
    "  for (int i = 0; i < k; i += 2) {\n"
    "    __syncthreads();\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0)\n"
    "    out[blockIdx.x] = k;\n"
    "}\n"
    "extern \"C\" __global__ void b_empty(int unused) {}\n";

/* What the compile rows build: a small kernel of its own (not the source
 * above, which the other rows' setups compile and cache). */
static const char small_source[] =
    "extern \"C\" __global__ void b_small(int n, float a, const float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

/* The pool's size, as plugin-host/pool.c chooses it. */
static unsigned kernel_threads(void) {
  const char *v = getenv("T4A_HOST_THREADS");
  long n = v && *v ? atol(v) : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1u : n > 256 ? 256u : (unsigned)n;
}

/* ---- the C side: slices over kernel_threads() threads -------------------------------- */

typedef struct ref {
  unsigned threads;
  float a, *x, *y, *partial; /* partial: one per thread */
  volatile unsigned sink;
  uint64_t steps;
  void (*fn)(struct ref *r, unsigned i);
} ref;

typedef struct ref_arg {
  ref *r;
  unsigned i;
} ref_arg;

static void saxpy_slice(ref *r, unsigned i) {
  size_t b = (size_t)N * i / r->threads, e = (size_t)N * (i + 1) / r->threads;
  float a = r->a, *x = r->x, *y = r->y;
  for (size_t k = b; k < e; k++)
    y[k] = a * x[k] + y[k];
}

static void sum_slice(ref *r, unsigned i) {
  size_t b = (size_t)N * i / r->threads, e = (size_t)N * (i + 1) / r->threads;
  float s = 0.0f;
  for (size_t k = b; k < e; k++)
    s += r->x[k];
  r->partial[i] = s;
}

static void *ref_main(void *v) {
  ref_arg *a = v;
  a->r->fn(a->r, a->i);
  return NULL;
}

/* Runs fn on every slice, the caller taking slice 0. Threads are made per
 * run: a few tens of microseconds against runs of tens of milliseconds. */
static void ref_run(ref *r, void (*fn)(ref *, unsigned)) {
  pthread_t th[256] = {0};
  ref_arg args[256];
  r->fn = fn;
  for (unsigned i = 1; i < r->threads; i++) {
    args[i] = (ref_arg){r, i};
    if (pthread_create(&th[i], NULL, ref_main, &args[i])) {
      fprintf(stderr, "t4a_bench: pthread_create failed\n");
      exit(1);
    }
  }
  fn(r, 0);
  for (unsigned i = 1; i < r->threads; i++)
    pthread_join(th[i], NULL);
}

/* ---- ours: the kernels through the table --------------------------------------------- */

typedef struct kstate {
  ref r;
  t4a_artifact art;
  t4a_module mod;
  t4a_function f;
  t4a_buffer bx, by, bout;
  uint64_t x, y, out;
  const char *kernel;
} kstate;

static void sync_rt(void) {
  t4a_witness w;
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void *kernel_setup(const bench_case *c) {
  kstate *s = calloc(1, sizeof *s);
  if (!s) {
    fprintf(stderr, "t4a_bench: out of memory for the kernel cases\n");
    exit(1);
  }
  s->kernel = c->arg == 0   ? "b_saxpy"
              : c->arg == 1 ? "b_block_sum"
              : c->arg == 2 ? "b_warp_sum"
                            : "b_barriers";
  t4a_compile_options o = {
      .struct_size = sizeof o, .source = source, .name = "bench.cu", .device_ordinal = 0};
  bench_check(E.t->artifact_compile(&o, &s->art), "artifact_compile (host)");
  bench_check(E.t->module_load(E.rt, s->art, &s->mod), "module_load");
  bench_check(E.t->function_get(E.rt, s->mod, s->kernel, &s->f), "function_get");
  bench_check(E.t->buffer_alloc(E.rt, (uint64_t)N * 4, &s->bx), "buffer_alloc");
  bench_check(E.t->buffer_alloc(E.rt, (uint64_t)N * 4, &s->by), "buffer_alloc");
  bench_check(E.t->buffer_alloc(E.rt, (uint64_t)N / TILE * 4 + 4096, &s->bout), "buffer_alloc");
  bench_check(E.t->buffer_device_address(E.rt, s->bx, &s->x), "buffer_device_address");
  bench_check(E.t->buffer_device_address(E.rt, s->by, &s->y), "buffer_device_address");
  bench_check(E.t->buffer_device_address(E.rt, s->bout, &s->out), "buffer_device_address");
  /* both sides work on the same (touched) memory */
  bench_check(E.t->memset(E.rt, s->bx, 0, 0x3f800000u, 4, N), "memset");
  bench_check(E.t->memset(E.rt, s->by, 0, 0x40000000u, 4, N), "memset");
  bench_check(E.t->memset(E.rt, s->bout, 0, 0, 1, (uint64_t)N / TILE * 4 + 4096), "memset");
  sync_rt();
  s->r.threads = kernel_threads();
  s->r.a = 0.5f;
  s->r.x = (float *)(uintptr_t)s->x;
  s->r.y = (float *)(uintptr_t)s->y;
  s->r.partial = (float *)(uintptr_t)s->out;
  return s;
}

static void kernel_teardown(void *v) {
  kstate *s = v;
  bench_check(E.t->buffer_free(E.rt, s->bx), "buffer_free");
  bench_check(E.t->buffer_free(E.rt, s->by), "buffer_free");
  bench_check(E.t->buffer_free(E.rt, s->bout), "buffer_free");
  bench_check(E.t->module_unload(E.rt, s->mod), "module_unload");
  bench_check(E.t->artifact_release(s->art), "artifact_release");
  sync_rt();
  free(s);
}

static void launch(kstate *s, uint32_t grid, uint32_t block, void **args) {
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {grid, 1, 1}, .block = {block, 1, 1}};
  bench_check(E.t->launch(E.rt, s->f, &c, args), "launch");
}

static void saxpy_ours(void *v, int batch) {
  kstate *s = v;
  int n = (int)N;
  float a = 0.5f;
  void *args[] = {&n, &a, &s->x, &s->y};
  for (int i = 0; i < batch; i++)
    launch(s, N / 256, 256, args);
  sync_rt();
}

static void saxpy_raw(void *v, int batch) {
  kstate *s = v;
  for (int i = 0; i < batch; i++)
    ref_run(&s->r, saxpy_slice);
}

static void sum_ours(void *v, int batch) {
  kstate *s = v;
  void *args[] = {&s->x, &s->out};
  for (int i = 0; i < batch; i++)
    launch(s, N / TILE, 256, args);
  sync_rt();
}

static void sum_raw(void *v, int batch) {
  kstate *s = v;
  for (int i = 0; i < batch; i++)
    ref_run(&s->r, sum_slice);
}

/* batch thread-barriers: one 256-thread block passing batch / 256 of them
 * (one pool thread runs it: the cost on one CPU). */
static void barrier_ours(void *v, int batch) {
  kstate *s = v;
  int k = batch / 256;
  void *args[] = {&k, &s->out};
  launch(s, 1, 256, args);
  sync_rt();
}

static void barrier_raw(void *v, int batch) {
  kstate *s = v;
  for (int i = 0; i < batch; i++)
    s->r.sink = s->r.sink + 1;
}

/* ---- the host costs of an empty launch and of compiles -------------------------------- */

typedef struct lstate {
  t4a_artifact art;
  t4a_module mod;
  t4a_function f;
  volatile unsigned sink;
} lstate;

static void *empty_setup(const bench_case *c) {
  (void)c;
  lstate *s = calloc(1, sizeof *s);
  if (!s) {
    fprintf(stderr, "t4a_bench: out of memory for the launch case\n");
    exit(1);
  }
  t4a_compile_options o = {.struct_size = sizeof o, .source = source, .name = "bench.cu"};
  bench_check(E.t->artifact_compile(&o, &s->art), "artifact_compile (host)");
  bench_check(E.t->module_load(E.rt, s->art, &s->mod), "module_load");
  bench_check(E.t->function_get(E.rt, s->mod, "b_empty", &s->f), "function_get");
  return s;
}

static void empty_teardown(void *v) {
  lstate *s = v;
  bench_check(E.t->module_unload(E.rt, s->mod), "module_unload");
  bench_check(E.t->artifact_release(s->art), "artifact_release");
  sync_rt();
  free(s);
}

/* batch launches of an empty kernel (one block of 32 threads), then one
 * seal and wait: the caller's cost per launch, the worker running them
 * meanwhile. */
static void empty_ours(void *v, int batch) {
  lstate *s = v;
  int k = 0;
  void *args[] = {&k};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {32, 1, 1}};
  for (int i = 0; i < batch; i++)
    bench_check(E.t->launch(E.rt, s->f, &c, args), "launch");
  sync_rt();
}

/* The raw side: what the loop itself costs (no launch has a CPU equivalent). */
static void empty_raw(void *v, int batch) {
  lstate *s = v;
  for (int i = 0; i < batch; i++)
    s->sink = s->sink + 1;
}

static void *compile_setup(const bench_case *c) {
  lstate *s = calloc(1, sizeof *s);
  if (!s) {
    fprintf(stderr, "t4a_bench: out of memory for the compile cases\n");
    exit(1);
  }
  /* one compile through the caches first: the entry the hit rows find */
  t4a_compile_options o = {.struct_size = sizeof o, .source = small_source, .name = "small.cu"};
  bench_check(E.t->artifact_compile(&o, &s->art), "artifact_compile (host)");
  bench_check(E.t->artifact_release(s->art), "artifact_release");
  (void)c;
  return s;
}

static void compile_teardown(void *v) { free(v); }

/* arg 0: cold (T4A_COMPILE_NO_CACHE: the translator and the C++ compiler,
 * every time); 1: a memory-cache hit; 2: a disk-cache hit (the memory cache
 * emptied first, which the row's time includes). */
static void compile_ours_with(int how, int batch) {
  t4a_compile_options o = {.struct_size = sizeof o,
                           .source = small_source,
                           .name = "small.cu",
                           .flags = how == 0 ? T4A_COMPILE_NO_CACHE : 0};
  for (int i = 0; i < batch; i++) {
    t4a_artifact a;
    if (how == 2)
      bench_check(E.t->compile_cache_clear(T4A_CACHE_MEMORY), "compile_cache_clear");
    bench_check(E.t->artifact_compile(&o, &a), "artifact_compile (host)");
    bench_check(E.t->artifact_release(a), "artifact_release");
  }
}

static void compile_cold(void *v, int batch) {
  (void)v;
  compile_ours_with(0, batch);
}
static void compile_memory_hit(void *v, int batch) {
  (void)v;
  compile_ours_with(1, batch);
}
static void compile_disk_hit(void *v, int batch) {
  (void)v;
  compile_ours_with(2, batch);
}

static void compile_raw(void *v, int batch) { empty_raw(v, batch); }

/* The disk-hit row needs a disk cache ($T4A_CACHE_DIR empty turns it off):
 * a compile after the memory cache was emptied must be a disk hit. */
static const char *no_disk_cache(const bench_case *c) {
  (void)c;
  t4a_compile_cache_stats before = {.struct_size = sizeof before}, after = before;
  bench_check(E.t->compile_cache_stats(&before), "compile_cache_stats");
  compile_ours_with(1, 1); /* the entry, in both caches */
  compile_ours_with(2, 1);
  bench_check(E.t->compile_cache_stats(&after), "compile_cache_stats");
  if (after.disk_hits == before.disk_hits)
    return "no disk-cache hit here (T4A_CACHE_DIR is empty, or its directory is unusable)";
  return NULL;
}

/* A kernel row (ratio to the C side over the same threads, or an absolute
 * cost), and a compile row (an absolute cost: the raw side is the loop). */
#define KROW(label, bytes_, batch_, samples_, kind, goal, arg_, setup_, ours_, raw_, teardown_)    \
  {                                                                                                \
    .name = label, .bytes = bytes_, .batch = batch_, .samples = samples_, .warmup = 2,             \
    .target_kind = kind, .target = goal, .arg = arg_, .setup = setup_, .ours = ours_, .raw = raw_, \
    .teardown = teardown_                                                                          \
  }
#define CROW(label, batch_, samples_, goal, ours_)                                                 \
  KROW(label, 0, batch_, samples_, TARGET_ABS_MAX, goal, 0, compile_setup, ours_, compile_raw,     \
       compile_teardown)

const bench_case bench_hostk_cases[] = {
    KROW("host kernel: saxpy 64 Mi floats", 3ull * N * 4, 1, 15, TARGET_RATIO_MIN, 0.8, 0,
         kernel_setup, saxpy_ours, saxpy_raw, kernel_teardown),
    KROW("host kernel: block reduction 64 Mi floats", (uint64_t)N * 4, 1, 15, TARGET_RATIO_MIN, 0.1,
         1, kernel_setup, sum_ours, sum_raw, kernel_teardown),
    KROW("host kernel: warp-shuffle reduction 64 Mi floats", (uint64_t)N * 4, 1, 15,
         TARGET_RATIO_MIN, 0.1, 2, kernel_setup, sum_ours, sum_raw, kernel_teardown),
    KROW("host kernel: one __syncthreads per thread", 0, 256 * BARRIERS, 21, TARGET_ABS_MAX, 0.010,
         3, kernel_setup, barrier_ours, barrier_raw, kernel_teardown),
    KROW("host kernel: empty launch, host cost", 0, 2000, 21, TARGET_ABS_MAX, 5.0, 0, empty_setup,
         empty_ours, empty_raw, empty_teardown),
    /* cold: 5 samples of one compile (0.1-0.4 s each) */
    KROW("host compile: small kernel, cold", 0, 1, 5, TARGET_ABS_MAX, 400000.0, 0, compile_setup,
         compile_cold, compile_raw, compile_teardown),
    CROW("host compile: memory-cache hit", 1000, 21, 5.0, compile_memory_hit),
    {.name = "host compile: disk-cache hit",
     .batch = 50,
     .samples = 21,
     .warmup = 2,
     .target_kind = TARGET_ABS_MAX,
     .target = 1000.0,
     .setup = compile_setup,
     .ours = compile_disk_hit,
     .raw = compile_raw,
     .teardown = compile_teardown,
     .skip = no_disk_cache},
    {.name = NULL}};
