/* examples/warm_chain.c -- what a chain of small dependent launches costs.
 *
 * N launches of axpy on 4096 elements, then one seal and one wait; prints
 * the launches, completion events recorded and pending retirements, and
 * the same chain submitted straight through the Driver API in the same
 * process (its own stream, the same CUBIN), with both times and their
 * ratio (medians of several alternating repetitions).
 *
 * With --graph the runtime's chain is captured once (graph_begin, N
 * launches, graph_end: the capture and instantiation are timed apart) and
 * each repetition is one graph_launch of it, then the seal and wait: the
 * graph replays the chain without N submissions, which is how it beats
 * the raw per-launch loop it is compared with.
 *
 * A backend without the raw seam (the host backend: no CUDA stream to
 * submit to) runs the runtime's chain alone and says so.
 *
 *   cc warm_chain.c $(pkg-config --cflags --libs t4a-gpu) -ldl -lm -o warm_chain
 *   ./warm_chain [--graph] [N]      (default 10000)
 *
 * Exit status, as t4a-gpu's: 0 done and the result verified, 1 a call
 * failed or the result is wrong, 2 usage error, 3 no backend found, 4 the
 * backend or the driver cannot be used here (no driver, no GPU, no
 * compiler, no graphs for --graph: the reason is printed). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <t4a/gpu_loader.h>

static const char source[] =
    "extern \"C\" __global__ void axpy(unsigned long long n, float a, const float *x, float *y) {\n"
    "  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static const t4a_gpu_backend_v1 *t;

/* Prints the failure and exits: 4 for what the host lacks, else 1. */
static void check(int rc, const char *what) {
  if (rc == T4A_OK)
    return;
  t4a_error_info e = {.struct_size = sizeof e};
  t->last_error(&e);
  fprintf(stderr, "warm_chain: %s: %s: %s\n", what, t4a_status_name(rc), e.message);
  int unusable = rc == T4A_ENODRIVER || rc == T4A_ESTUBDRIVER || rc == T4A_ENODEVICE ||
                 rc == T4A_EDRIVEROLD || rc == T4A_EDRIVERMISMATCH || rc == T4A_ENOCOMPILER;
  exit(unusable ? 4 : 1);
}

static void usage(FILE *f) {
  fputs("usage: warm_chain [--graph] [N]   (N >= 1 launches, default 10000)\n"
        "       warm_chain --help\n"
        "A chain of N small dependent launches and one seal and wait, against the same chain\n"
        "through the Driver API; --graph replays the runtime's chain as one captured graph.\n"
        "exit status: 0 verified, 1 a call failed or the result is wrong, 2 usage error,\n"
        "             3 no backend found, 4 the backend cannot be used here (reason printed)\n",
        f);
}

/* The few Driver API entry points the raw chain needs (CUDA 12 ABI). */
typedef int (*fn_load)(void **, const void *);
typedef int (*fn_get)(void **, void *, const char *);
typedef int (*fn_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
typedef int (*fn_stream)(void **, unsigned);
typedef int (*fn_sync)(void *);
typedef int (*fn_ctx)(void *);

static void raw_check(int r, const char *what) {
  if (r) {
    fprintf(stderr, "warm_chain: %s failed (CUresult %d)\n", what, r);
    exit(1);
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int graph_mode = 0;
  long chain = 10000;
  const char *count = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--graph") == 0 && !graph_mode) {
      graph_mode = 1;
    } else if (argv[i][0] != '-' && !count) {
      char *end;
      count = argv[i];
      chain = strtol(count, &end, 10);
      if (*end || end == count || chain < 1) {
        fprintf(stderr, "warm_chain: N must be a number of launches >= 1, not '%s'\n", count);
        usage(stderr);
        return 2;
      }
    } else {
      fprintf(stderr, "warm_chain: unexpected argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  t4a_gpu_backend *backend;
  if (t4a_gpu_open(NULL, &backend) != T4A_OK) {
    fprintf(stderr, "warm_chain: %s\n", t4a_gpu_last_error());
    return 3;
  }
  t = t4a_gpu_backend_table(backend);
  check(t->init(), "init");
  t4a_runtime rt;
  check(t->runtime_create(0, NULL, &rt), "runtime_create");
  t4a_compile_options opts = {.struct_size = sizeof opts, .source = source, .name = "axpy.cu"};
  t4a_artifact code;
  check(t->artifact_compile(&opts, &code), "artifact_compile");
  t4a_module module;
  t4a_function axpy;
  check(t->module_load(rt, code, &module), "module_load");
  check(t->function_get(rt, module, "axpy", &axpy), "function_get");

  unsigned long long n = 4096;
  float a = 1.0f / 1024, x[4096], y[4096];
  for (unsigned i = 0; i < n; i++) {
    x[i] = 1.0f;
    y[i] = 0.0f;
  }
  t4a_buffer dx, dy;
  check(t->buffer_alloc(rt, sizeof x, &dx), "buffer_alloc");
  check(t->buffer_alloc(rt, sizeof y, &dy), "buffer_alloc");
  check(t->copy_h2d(rt, dx, 0, x, sizeof x), "copy_h2d");
  uint64_t px, py;
  check(t->buffer_device_address(rt, dx, &px), "buffer_device_address");
  check(t->buffer_device_address(rt, dy, &py), "buffer_device_address");
  void *args[] = {&n, &a, &px, &py};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {16, 1, 1}, .block = {256, 1, 1}};

  /* The raw side: the same CUBIN, loaded by the Driver API on its own
   * stream; none on a backend without the raw seam (the host's). */
  int raw_side = t->raw_runtime != NULL;
  fn_launch launch = NULL;
  fn_sync sync = NULL;
  void *raw_axpy = NULL, *raw_stream = NULL;
  if (raw_side) {
    const char *lib = getenv("T4A_CUDA_LIBRARY");
    void *dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
      fprintf(stderr, "warm_chain: cannot load the driver for the raw chain: %s\n", dlerror());
      return 4;
    }
    fn_load load = (fn_load)dlsym(dl, "cuModuleLoadData");
    fn_get get = (fn_get)dlsym(dl, "cuModuleGetFunction");
    launch = (fn_launch)dlsym(dl, "cuLaunchKernel");
    fn_stream stream_create = (fn_stream)dlsym(dl, "cuStreamCreate");
    sync = (fn_sync)dlsym(dl, "cuStreamSynchronize");
    fn_ctx set_ctx = (fn_ctx)dlsym(dl, "cuCtxSetCurrent");
    if (!load || !get || !launch || !stream_create || !sync || !set_ctx) {
      fprintf(stderr, "warm_chain: the driver lacks an entry point the raw chain needs\n");
      return 4;
    }
    t4a_raw_runtime raw = {.struct_size = sizeof raw};
    check(t->raw_runtime(rt, &raw), "raw_runtime");
    raw_check(set_ctx(raw.context), "cuCtxSetCurrent");
    const void *cubin;
    uint64_t cubin_size;
    check(t->artifact_data(code, NULL, &cubin, &cubin_size), "artifact_data");
    void *raw_module;
    raw_check(load(&raw_module, cubin), "cuModuleLoadData");
    raw_check(get(&raw_axpy, raw_module, "axpy"), "cuModuleGetFunction");
    raw_check(stream_create(&raw_stream, 1), "cuStreamCreate");
  }
  check(t->artifact_release(code), "artifact_release");

  enum { REPS = 7 };
  double ours[REPS], direct[REPS], capture = 0;
  t4a_graph graph = {0};
  if (graph_mode) {
    if (!t->graph_begin) {
      fprintf(stderr, "warm_chain: this backend has no graphs (ABI 1.0)\n");
      return 4;
    }
    double t0 = now();
    check(t->graph_begin(rt), "graph_begin");
    for (long i = 0; i < chain; i++)
      check(t->launch(rt, axpy, &cfg, args), "launch (captured)");
    check(t->graph_end(rt, &graph), "graph_end");
    capture = now() - t0;
  }
  t4a_runtime_counters before = {.struct_size = sizeof before};
  check(t->runtime_counters(rt, &before), "runtime_counters");
  for (int r = 0; r < REPS; r++) {
    double t0 = now();
    if (graph_mode)
      check(t->graph_launch(rt, graph), "graph_launch");
    else
      for (long i = 0; i < chain; i++)
        check(t->launch(rt, axpy, &cfg, args), "launch");
    t4a_witness w;
    check(t->seal(rt, &w), "seal");
    check(t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
    check(t->witness_release(w), "witness_release");
    ours[r] = now() - t0;

    direct[r] = 0;
    if (!raw_side)
      continue;
    t0 = now();
    for (long i = 0; i < chain; i++)
      raw_check(launch(raw_axpy, 16, 1, 1, 256, 1, 1, 0, raw_stream, args, NULL), "cuLaunchKernel");
    raw_check(sync(raw_stream), "cuStreamSynchronize");
    direct[r] = now() - t0;
  }
  t4a_runtime_counters after = {.struct_size = sizeof after};
  check(t->runtime_counters(rt, &after), "runtime_counters");
  check(t->copy_d2h(rt, y, dy, 0, sizeof y), "copy_d2h");
  /* both chains (or the runtime's alone) added a*x to y: 2 * REPS * chain /
   * 1024 in every element (REPS * chain / 1024) */
  double want = (raw_side ? 2.0 : 1.0) * REPS * (double)chain / 1024.0;
  int wrong =
      fabs((double)y[0] - want) > 1e-3 * want || fabs((double)y[n - 1] - want) > 1e-3 * want;

  qsort(ours, REPS, sizeof *ours, cmp);
  qsort(direct, REPS, sizeof *direct, cmp);
  double mo = ours[REPS / 2], md = direct[REPS / 2];
  printf("chain of %ld launches + 1 seal/wait, %d repetitions (medians)%s:\n", chain, REPS,
         graph_mode ? ", the runtime's chain replayed as one graph" : "");
  printf("  launches:                  %llu\n",
         (unsigned long long)(after.launches - before.launches));
  if (graph_mode) {
    printf("  graph launches:            %llu (a graph of %ld kernels, captured and instantiated "
           "in %.3f ms)\n",
           (unsigned long long)(after.graph_launches - before.graph_launches), chain,
           capture * 1e3);
    printf("  live graphs:               %llu\n", (unsigned long long)after.live_graphs);
  }
  printf("  completion events recorded: %llu (%d seals)\n",
         (unsigned long long)(after.seal_events_recorded - before.seal_events_recorded), REPS);
  printf("  pending retirements:       %llu\n", (unsigned long long)after.pending_retirements);
  printf("  %s %9.3f ms  (%.3f us per launch)\n",
         graph_mode ? "t4a graph:    " : "t4a runtime:  ", mo * 1e3, mo * 1e6 / (double)chain);
  if (raw_side) {
    printf("  Driver API:    %9.3f ms  (%.3f us per launch)\n", md * 1e3, md * 1e6 / (double)chain);
    printf("  ratio t4a/raw: %9.3f\n", mo / md);
  } else {
    printf("  Driver API:    none (backend %s has no raw seam to compare with)\n", t->name);
  }
  printf("  result:        %s (y = %g, want %g)\n", wrong ? "WRONG" : "verified", (double)y[0],
         want);
  if (graph_mode)
    check(t->graph_release(rt, graph), "graph_release");
  check(t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  t4a_gpu_close(backend);
  return wrong ? 1 : 0;
}
