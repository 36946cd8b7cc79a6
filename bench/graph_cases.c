/* bench/graph_cases.c -- graphs and extended launches (ABI 1.1, issue #15),
 * each paired with the Driver API in the same process, on the raw side's
 * own stream, with the same CUBIN:
 *
 *   warm chain of 10,000 empty launches as one graph replay (graph_launch +
 *       seal + wait)           vs the raw cuLaunchKernel loop + synchronize:
 *                                 goal <= 0.4 (beating the per-launch path)
 *   100 small kernels captured, replayed 1,000 times
 *                              vs cuGraphLaunch of an identical raw graph: <= 1.03
 *   capture + instantiate of 100 launches
 *                              vs raw capture + cuGraphInstantiateWithFlags (reported)
 *   graph_set_kernel_args of 100 kernels
 *                              vs cuGraphExecKernelNodeSetParams of 100 nodes (reported)
 *                              vs raw capture + re-instantiation (reported: what an
 *                                 update saves)
 *   cluster launch (2-block clusters, empty kernel)
 *                              vs cuLaunchKernelEx with the same attribute: <= 1.03
 *                                 (compute capability 9.0 only)
 *
 * Every timed sample ends with the work complete on both sides. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define CHAIN 10000
#define SMALL 100
#define WORDS 4096ull

static const char source[] =
    "extern \"C\" __global__ void t4a_empty() {}\n"
    "extern \"C\" __global__ void t4a_mix_u32(unsigned *y, const unsigned *x, unsigned k,\n"
    "                                         unsigned long long n) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = (y[i] ^ x[i]) * 2654435761u + k;\n"
    "}\n";

static void seal_wait(void) {
  t4a_witness w;
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void raw_sync(void) { bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize"); }

typedef struct gstate {
  t4a_artifact art;
  t4a_module mod;
  t4a_function empty, mix;
  t4a__CUmodule raw_mod;
  t4a__CUfunction raw_empty, raw_mix;
  t4a_buffer y, x;         /* ours */
  t4a__CUdeviceptr ry, rx; /* the raw side's */
  uint64_t py, px, n;
  uint32_t key;
  void *args[4], *raw_args[4];
  t4a_graph graph;        /* the case's graph */
  t4a__CUgraph raw_graph; /* and the raw one */
  t4a__CUgraphExec raw_exec;
  t4a__CUgraphNode raw_nodes[SMALL];
} gstate;

static const t4a_launch_config ONE = {
    .struct_size = sizeof ONE, .grid = {1, 1, 1}, .block = {32, 1, 1}};
static const t4a_launch_config SMALL_CFG = {
    .struct_size = sizeof SMALL_CFG, .grid = {16, 1, 1}, .block = {256, 1, 1}};

static void *common_setup(void) {
  gstate *s = calloc(1, sizeof *s);
  t4a_compile_options o = {.struct_size = sizeof o, .source = source, .name = "graph_bench.cu"};
  bench_check(E.t->artifact_compile(&o, &s->art), "artifact_compile");
  bench_check(E.t->module_load(E.rt, s->art, &s->mod), "module_load");
  bench_check(E.t->function_get(E.rt, s->mod, "t4a_empty", &s->empty), "function_get");
  bench_check(E.t->function_get(E.rt, s->mod, "t4a_mix_u32", &s->mix), "function_get");
  const void *cubin;
  uint64_t size;
  bench_check(E.t->artifact_data(s->art, NULL, &cubin, &size), "artifact_data");
  bench_cu(E.cu.cuModuleLoadData(&s->raw_mod, cubin), "cuModuleLoadData");
  bench_cu(E.cu.cuModuleGetFunction(&s->raw_empty, s->raw_mod, "t4a_empty"), "get t4a_empty");
  bench_cu(E.cu.cuModuleGetFunction(&s->raw_mix, s->raw_mod, "t4a_mix_u32"), "get t4a_mix_u32");
  bench_check(E.t->buffer_alloc(E.rt, WORDS * 4, &s->y), "buffer_alloc");
  bench_check(E.t->buffer_alloc(E.rt, WORDS * 4, &s->x), "buffer_alloc");
  bench_check(E.t->memset(E.rt, s->y, 0, 1, 1, WORDS * 4), "memset");
  bench_check(E.t->memset(E.rt, s->x, 0, 2, 1, WORDS * 4), "memset");
  bench_check(E.t->buffer_device_address(E.rt, s->y, &s->py), "address");
  bench_check(E.t->buffer_device_address(E.rt, s->x, &s->px), "address");
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&s->ry, WORDS * 4, E.pool, E.stream), "alloc");
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&s->rx, WORDS * 4, E.pool, E.stream), "alloc");
  bench_cu(E.cu.cuMemsetD8Async(s->ry, 1, WORDS * 4, E.stream), "memset");
  bench_cu(E.cu.cuMemsetD8Async(s->rx, 2, WORDS * 4, E.stream), "memset");
  s->n = WORDS;
  s->key = 12345;
  s->args[0] = &s->py;
  s->args[1] = &s->px;
  s->args[2] = &s->key;
  s->args[3] = &s->n;
  s->raw_args[0] = &s->ry;
  s->raw_args[1] = &s->rx;
  s->raw_args[2] = &s->key;
  s->raw_args[3] = &s->n;
  seal_wait();
  raw_sync();
  return s;
}

static void raw_graph_free(gstate *s) {
  if (s->raw_exec)
    E.cu.cuGraphExecDestroy(s->raw_exec);
  if (s->raw_graph)
    E.cu.cuGraphDestroy(s->raw_graph);
  s->raw_exec = NULL;
  s->raw_graph = NULL;
}

static void common_teardown(void *p) {
  gstate *s = p;
  seal_wait();
  raw_sync();
  if (s->graph.bits)
    bench_check(E.t->graph_release(E.rt, s->graph), "graph_release");
  raw_graph_free(s);
  bench_check(E.t->buffer_free(E.rt, s->y), "buffer_free");
  bench_check(E.t->buffer_free(E.rt, s->x), "buffer_free");
  bench_cu(E.cu.cuMemFreeAsync(s->ry, E.stream), "free");
  bench_cu(E.cu.cuMemFreeAsync(s->rx, E.stream), "free");
  raw_sync();
  bench_check(E.t->module_unload(E.rt, s->mod), "module_unload");
  bench_check(E.t->artifact_release(s->art), "artifact_release");
  E.cu.cuModuleUnload(s->raw_mod);
  free(s);
}

/* Our graph of `count` launches (the empty kernel, or mix on 4096 words). */
static t4a_graph capture_ours(gstate *s, int count, bool small) {
  t4a_graph g;
  bench_check(E.t->graph_begin(E.rt), "graph_begin");
  for (int i = 0; i < count; i++)
    bench_check(small ? E.t->launch(E.rt, s->mix, &SMALL_CFG, s->args)
                      : E.t->launch(E.rt, s->empty, &ONE, NULL),
                "launch (captured)");
  bench_check(E.t->graph_end(E.rt, &g), "graph_end");
  return g;
}

/* The same graph, captured with the Driver API on the raw stream. */
static void capture_raw(gstate *s, int count, bool small) {
  bench_cu(E.cu.cuStreamBeginCapture(E.stream, T4A__CU_STREAM_CAPTURE_MODE_RELAXED),
           "cuStreamBeginCapture");
  for (int i = 0; i < count; i++) {
    bench_cu(
        small ? E.cu.cuLaunchKernel(s->raw_mix, 16, 1, 1, 256, 1, 1, 0, E.stream, s->raw_args, NULL)
              : E.cu.cuLaunchKernel(s->raw_empty, 1, 1, 1, 32, 1, 1, 0, E.stream, NULL, NULL),
        "cuLaunchKernel (captured)");
    if (small && i < SMALL) {
      unsigned st;
      const t4a__CUgraphNode *deps;
      size_t nd;
      bench_cu(E.cu.cuStreamGetCaptureInfo(E.stream, &st, NULL, NULL, &deps, &nd),
               "cuStreamGetCaptureInfo");
      s->raw_nodes[i] = deps[0];
    }
  }
  bench_cu(E.cu.cuStreamEndCapture(E.stream, &s->raw_graph), "cuStreamEndCapture");
  bench_cu(E.cu.cuGraphInstantiateWithFlags(&s->raw_exec, s->raw_graph, 0), "instantiate");
}

/* ---- the warm chain as one replay ------------------------------------------------- */

static void *chain_setup(const bench_case *c) {
  (void)c;
  gstate *s = common_setup();
  s->graph = capture_ours(s, CHAIN, false);
  return s;
}

static void chain_graph_ours(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++) {
    bench_check(E.t->graph_launch(E.rt, s->graph), "graph_launch");
    seal_wait();
  }
}

static void chain_loop_raw(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++) {
    for (int i = 0; i < CHAIN; i++)
      bench_cu(E.cu.cuLaunchKernel(s->raw_empty, 1, 1, 1, 32, 1, 1, 0, E.stream, NULL, NULL),
               "cuLaunchKernel");
    raw_sync();
  }
}

/* ---- 100 small kernels, replayed ----------------------------------------------------- */

static void *small_setup(const bench_case *c) {
  (void)c;
  gstate *s = common_setup();
  s->graph = capture_ours(s, SMALL, true);
  capture_raw(s, SMALL, true);
  return s;
}

static void small_ours(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++)
    bench_check(E.t->graph_launch(E.rt, s->graph), "graph_launch");
  seal_wait();
}

static void small_raw(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++)
    bench_cu(E.cu.cuGraphLaunch(s->raw_exec, E.stream), "cuGraphLaunch");
  raw_sync();
}

/* ---- capture + instantiate ----------------------------------------------------------------- */

static void *plain_setup(const bench_case *c) {
  (void)c;
  return common_setup();
}

static void capture_ours_case(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++) {
    t4a_graph g = capture_ours(s, SMALL, true);
    bench_check(E.t->graph_release(E.rt, g), "graph_release");
  }
}

static void capture_raw_case(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++) {
    capture_raw(s, SMALL, true);
    raw_graph_free(s);
  }
}

/* ---- updates ------------------------------------------------------------------------------ */

static void update_ours(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++)
    for (uint64_t k = 0; k < SMALL; k++)
      bench_check(E.t->graph_set_kernel_args(E.rt, s->graph, k, s->args), "graph_set_kernel_args");
}

static void update_raw(void *p, int batch) {
  gstate *s = p;
  t4a__CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = s->raw_mix;
  kp.gridDimX = 16;
  kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = 256;
  kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = s->raw_args;
  for (int b = 0; b < batch; b++)
    for (int k = 0; k < SMALL; k++)
      bench_cu(E.cu.cuGraphExecKernelNodeSetParams(s->raw_exec, s->raw_nodes[k], &kp),
               "cuGraphExecKernelNodeSetParams");
}

static void reinstantiate_raw(void *p, int batch) {
  gstate *s = p;
  for (int b = 0; b < batch; b++) {
    raw_graph_free(s);
    capture_raw(s, SMALL, true);
  }
}

/* ---- cluster launches ---------------------------------------------------------------------- */

static const t4a_launch_ex_config CLUSTER = {
    .struct_size = sizeof CLUSTER, .grid = {2, 1, 1}, .block = {32, 1, 1}, .cluster = {2, 1, 1}};

static void cluster_ours(void *p, int batch) {
  gstate *s = p;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->launch_ex(E.rt, s->empty, &CLUSTER, NULL), "launch_ex");
}

static void cluster_raw(void *p, int batch) {
  gstate *s = p;
  t4a__CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = T4A__CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = 2;
  attr.value.clusterDim.y = attr.value.clusterDim.z = 1;
  t4a__CUlaunchConfig c;
  memset(&c, 0, sizeof c);
  c.gridDimX = 2;
  c.gridDimY = c.gridDimZ = 1;
  c.blockDimX = 32;
  c.blockDimY = c.blockDimZ = 1;
  c.hStream = E.stream;
  c.attrs = &attr;
  c.numAttrs = 1;
  for (int i = 0; i < batch; i++)
    bench_cu(E.cu.cuLaunchKernelEx(&c, s->raw_empty, NULL, NULL), "cuLaunchKernelEx");
}

static void drain_both(void *p) {
  (void)p;
  seal_wait();
  raw_sync();
}

/* ---- the table ------------------------------------------------------------------------------ */

#define GCASE(label, n, samples_, kind, goal, setup_, ours_, raw_, between_)                       \
  {                                                                                                \
    .name = label, .batch = n, .samples = samples_, .warmup = 2, .target_kind = kind,              \
    .target = goal, .setup = setup_, .ours = ours_, .raw = raw_, .teardown = common_teardown,      \
    .between = between_                                                                            \
  }

const bench_case bench_graph_cases[] = {
    GCASE("graph: warm chain 10000 (raw: launch loop)", 1, 15, TARGET_RATIO_MAX, 0.4, chain_setup,
          chain_graph_ours, chain_loop_raw, NULL),
    GCASE("graph: 100 kernels x1000 (raw: cuGraphLaunch)", 1000, 11, TARGET_RATIO_MAX, 1.03,
          small_setup, small_ours, small_raw, NULL),
    GCASE("graph: capture+instantiate 100 launches", 1, 21, TARGET_NONE, 0, plain_setup,
          capture_ours_case, capture_raw_case, NULL),
    GCASE("graph: update 100 kernels (raw: node params)", 1, 21, TARGET_NONE, 0, small_setup,
          update_ours, update_raw, NULL),
    GCASE("graph: update 100 kernels (raw: re-instantiate)", 1, 21, TARGET_NONE, 0, small_setup,
          update_ours, reinstantiate_raw, NULL),
    {.name = "cluster launch 2x1x1 (raw: cuLaunchKernelEx)",
     .batch = 200,
     .samples = 101,
     .warmup = 2,
     .target_kind = TARGET_RATIO_MAX,
     .target = 1.03,
     .setup = plain_setup,
     .ours = cluster_ours,
     .raw = cluster_raw,
     .teardown = common_teardown,
     .between = drain_both,
     .min_cc_major = 9},
    {.name = NULL},
};
