/* bench/t4a_stages.c -- where a small call's time goes: the CUDA plugin's
 * hot paths cut into their stages, each timed in situ (right after the
 * driver call the path makes, as between a consumer's calls), so that the
 * part of a launch or a small copy that is not the driver's own call can be
 * told apart stage by stage.
 *
 *   t4a_stages [--samples N] [--json FILE]
 *
 * It links the CUDA plugin's core (plugin-cuda/libt4a_cuda_core.la) and
 * calls the plugin's internals directly, on device 0 of the driver the
 * plugin finds (T4A_CUDA_LIBRARY: the fake driver too, whose numbers mean
 * nothing). Each variant repeats "the driver call alone, then one prefix of
 * the slot's own work" in batches of 200 (launches of an empty kernel, 1
 * block of 32; or 64-byte pageable cuMemcpyHtoDAsync on the runtime's
 * stream), the stream drained between samples, the variants alternating
 * sample by sample in a rotating order. A stage's cost is the difference of
 * the medians of two variants; "the slot" is the whole table call in place
 * of the driver call alone.
 *
 *   launch:  driver alone | + the config's struct check | + lock, unlock
 *            (init check, handle, device fault) | + the function's handle
 *            | + the geometry checks | the slot (launch)
 *   64 B H2D: driver alone | + lock, unlock | + the buffer's handle and
 *            range | + the context's enter and leave | the slot (copy_h2d)
 *   alloc+free 256 B: the slots in steady state, next to lock+unlock pairs
 *            alone (the same count) and the handle table's insert+remove
 *
 * Exit status: 0 done, 1 a call failed, 2 usage, 4 no usable driver. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "bench/bench.h"
#include "plugin-cuda/runtime.h"

enum { BATCH = 200, MAX_VARIANTS = 6 };

/* Prints the failure and exits: 4 for what the host lacks, else 1. */
static void ok(int rc, const char *what) {
  if (rc == T4A_OK)
    return;
  t4a_error_info e = {.struct_size = sizeof e};
  t4a__slot_last_error(&e);
  fprintf(stderr, "t4a_stages: %s: %s: %s\n", what, t4a_status_name(rc), e.message);
  exit(bench_unusable(rc) ? 4 : 1);
}

static void cu(t4a__CUresult r, const char *what) {
  if (r != T4A__CUDA_SUCCESS) {
    fprintf(stderr, "t4a_stages: %s: CUresult %d\n", what, (int)r);
    exit(1);
  }
}

typedef struct world {
  t4a_runtime h;
  t4a__runtime *rt; /* its struct (read once, unlocked, to reach the stream) */
  t4a_function fh;
  t4a__CUfunction fn;
  t4a_buffer bh;
  t4a__CUdeviceptr dptr;
  unsigned char host[64];
  t4a_launch_config cfg;
} world;

static world W;

static const char empty_source[] = "extern \"C\" __global__ void t4a_empty() {}\n";

static void setup(void) {
  ok(t4a__slot_init(), "init");
  ok(t4a__slot_runtime_create(0, NULL, &W.h), "runtime_create");
  t4a_compile_options o = {.struct_size = sizeof o, .source = empty_source, .name = "empty.cu"};
  t4a_artifact art;
  t4a_module mod;
  ok(t4a__slot_artifact_compile(&o, &art), "artifact_compile");
  ok(t4a__slot_module_load(W.h, art, &mod), "module_load");
  ok(t4a__slot_function_get(W.h, mod, "t4a_empty", &W.fh), "function_get");
  ok(t4a__slot_buffer_alloc(W.h, 4096, &W.bh), "buffer_alloc");
  t4a__function *f;
  t4a__buffer *b;
  ok(t4a__rt_lock(W.h, "setup", &W.rt), "lock");
  ok(t4a__function_get(W.rt, W.fh, "setup", &f), "function");
  ok(t4a__buffer_get(W.rt, W.bh, "setup", &b), "buffer");
  W.fn = f->fn;
  W.dptr = b->ptr;
  t4a__rt_unlock(W.rt);
  W.cfg = (t4a_launch_config){.struct_size = sizeof W.cfg, .grid = {1, 1, 1}, .block = {32, 1, 1}};
  memset(W.host, 7, sizeof W.host);
}

static void raw_launch(void) {
  cu(t4a__be.cu.cuLaunchKernel(W.fn, 1, 1, 1, 32, 1, 1, 0, W.rt->stream, NULL, NULL),
     "cuLaunchKernel");
}

static void raw_h2d(void) {
  cu(t4a__be.cu.cuMemcpyHtoDAsync(W.dptr, W.host, sizeof W.host, W.rt->stream),
     "cuMemcpyHtoDAsync");
}

/* The prefixes: each runs the stages up to its own, as the slot runs them. */
static void launch_stages(int upto) {
  raw_launch();
  if (upto >= 1)
    ok(t4a__check_struct(&W.cfg, T4A_LAUNCH_CONFIG_V1_0_SIZE, "t4a_launch_config"), "struct");
  if (upto < 2)
    return;
  t4a__runtime *rt;
  t4a__function *f;
  ok(t4a__rt_lock(W.h, "launch", &rt), "lock");
  if (upto >= 3)
    ok(t4a__function_get(rt, W.fh, "launch", &f), "function");
  if (upto >= 4)
    ok(t4a__check_geometry(rt, f, W.cfg.grid, W.cfg.block, W.cfg.shared_bytes, "launch"),
       "geometry");
  t4a__rt_unlock(rt);
}

static void launch_v0(void) { launch_stages(0); }
static void launch_v1(void) { launch_stages(1); }
static void launch_v2(void) { launch_stages(2); }
static void launch_v3(void) { launch_stages(3); }
static void launch_v4(void) { launch_stages(4); }
static void launch_slot(void) { ok(t4a__slot_launch(W.h, W.fh, &W.cfg, NULL), "launch"); }

static void h2d_stages(int upto) {
  raw_h2d();
  if (upto < 1)
    return;
  t4a__runtime *rt;
  t4a__buffer *b;
  ok(t4a__rt_lock(W.h, "copy_h2d", &rt), "lock");
  if (upto >= 2) {
    ok(t4a__buffer_get(rt, W.bh, "copy_h2d", &b), "buffer");
    if (sizeof W.host > b->size)
      ok(T4A_ERANGE, "range");
  }
  if (upto >= 3) {
    t4a__CUcontext saved;
    ok(t4a__ctx_enter(rt, &saved), "ctx_enter");
    t4a__ctx_leave(rt, saved);
  }
  t4a__rt_unlock(rt);
}

static void h2d_v0(void) { h2d_stages(0); }
static void h2d_v1(void) { h2d_stages(1); }
static void h2d_v2(void) { h2d_stages(2); }
static void h2d_v3(void) { h2d_stages(3); }
static void h2d_slot(void) {
  ok(t4a__slot_copy_h2d(W.h, W.bh, 0, W.host, sizeof W.host), "copy_h2d");
}

static void alloc_free(void) {
  t4a_buffer b;
  ok(t4a__slot_buffer_alloc(W.h, 256, &b), "buffer_alloc");
  ok(t4a__slot_buffer_free(W.h, b), "buffer_free");
}
static void lock_pairs(void) {
  for (int i = 0; i < 2; i++) {
    t4a__runtime *rt;
    ok(t4a__rt_lock(W.h, "lock", &rt), "lock");
    t4a__rt_unlock(rt);
  }
}
static void nothing(void) {}

typedef struct variant {
  const char *name;
  void (*op)(void);
} variant;

typedef struct path {
  const char *name;
  bool drain; /* the stream is synchronised after each sample, untimed */
  int n;
  variant v[MAX_VARIANTS];
  const char *stage[MAX_VARIANTS]; /* stage[i]: what v[i] adds to v[i - 1] */
} path;

static const path paths[] = {
    {"launch, empty kernel",
     true,
     6,
     {{"cuLaunchKernel alone", launch_v0},
      {"+ struct check", launch_v1},
      {"+ lock, unlock", launch_v2},
      {"+ function handle", launch_v3},
      {"+ geometry checks", launch_v4},
      {"the slot (launch)", launch_slot}},
     {"", "the config's struct check", "lock+unlock (init, handle, device fault)",
      "the function's handle lookup", "the geometry checks",
      "the rest (driver call through the slot, capture check, counters, dirty flag)"}},
    {"pageable H2D 64 B",
     true,
     5,
     {{"cuMemcpyHtoDAsync alone", h2d_v0},
      {"+ lock, unlock", h2d_v1},
      {"+ buffer handle, range", h2d_v2},
      {"+ context enter, leave", h2d_v3},
      {"the slot (copy_h2d)", h2d_slot}},
     {"", "lock+unlock (init, handle, device fault)", "the buffer's handle lookup and range",
      "cuCtxGetCurrent (enter and leave)",
      "the rest (capture check, the staging's size test, counters)"}},
    {"alloc+free 256 B",
     false,
     3,
     {{"nothing", nothing},
      {"two lock+unlock pairs", lock_pairs},
      {"buffer_alloc+free", alloc_free}},
     {"", "the locks of the two calls", "the rest (handles, size class, block cache, counters)"}},
};

#define USAGE "usage: t4a_stages [--samples N] [--json FILE]\n"

int main(int argc, char **argv) {
  int samples = 101;
  const char *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
      samples = atoi(argv[++i]);
    else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json = argv[++i];
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(USAGE, stdout);
      return 0;
    } else {
      fputs(USAGE, stderr);
      return 2;
    }
  }
  if (samples < 3 || samples > 100001) {
    fputs("t4a_stages: --samples: 3 to 100001\n", stderr);
    return 2;
  }
  setup();
  FILE *js = json ? fopen(json, "w") : NULL;
  if (json && !js) {
    perror(json);
    return 1;
  }
  if (js)
    fprintf(js, "{\"paths\":[");
  double *t = malloc(sizeof *t * (size_t)samples * MAX_VARIANTS);
  if (!t)
    return 1;
  for (size_t p = 0; p < sizeof paths / sizeof *paths; p++) {
    const path *P = &paths[p];
    for (int w = 0; w < 5; w++) /* warm-up */
      for (int v = 0; v < P->n; v++)
        for (int i = 0; i < BATCH; i++)
          P->v[v].op();
    cu(t4a__be.cu.cuStreamSynchronize(W.rt->stream), "cuStreamSynchronize");
    for (int s = 0; s < samples; s++)
      for (int k = 0; k < P->n; k++) {
        int v = (k + s) % P->n;
        double t0 = bench_now();
        for (int i = 0; i < BATCH; i++)
          P->v[v].op();
        t[(size_t)v * (size_t)samples + (size_t)s] = (bench_now() - t0) / BATCH * 1e9;
        if (P->drain)
          cu(t4a__be.cu.cuStreamSynchronize(W.rt->stream), "cuStreamSynchronize");
      }
    double med[MAX_VARIANTS] = {0}, p99[MAX_VARIANTS] = {0};
    for (int v = 0; v < P->n; v++)
      bench_stats(&t[(size_t)v * (size_t)samples], samples, false, &med[v], &p99[v]);
    printf("\n%s: ns per call, median and p99 of %d samples of %d; the stage each adds\n", P->name,
           samples, BATCH);
    printf("  %-26s %9.1f %9.1f\n", P->v[0].name, med[0], p99[0]);
    if (js)
      fprintf(js, "%s{\"path\":\"%s\",\"samples\":%d,\"stages\":[", p ? "," : "", P->name, samples);
    for (int v = 1; v < P->n; v++) {
      double d = med[v] - med[v - 1];
      printf("  %-26s %9.1f %9.1f  %+7.1f  %s\n", P->v[v].name, med[v], p99[v], d, P->stage[v]);
      if (js)
        fprintf(js,
                "%s{\"variant\":\"%s\",\"median_ns\":%.4g,\"p99_ns\":%.4g,\"stage\":\"%s\","
                "\"stage_ns\":%.4g}",
                v > 1 ? "," : "", P->v[v].name, med[v], p99[v], P->stage[v], d);
    }
    double total = med[P->n - 1] - med[0];
    if (P->drain)
      printf("  the slot's own cost: %+.1f ns over the driver's %.1f (%.3fx)\n", total, med[0],
             med[P->n - 1] / med[0]);
    if (js)
      fprintf(js, "],\"base_ns\":%.4g,\"slot_ns\":%.4g}", med[0], med[P->n - 1]);
  }
  if (js) {
    fprintf(js, "]}\n");
    fclose(js);
  }
  free(t);
  return 0;
}
