/* tests/runtime/test_launch_ex.c -- extended launches, occupancy and stream
 * priority (ABI 1.1), in every lane (on the host backend, which has no
 * clusters, cooperative launches or priorities, each refused typed, and a
 * CPU's occupancy answers): a cluster kernel exchanging data
 * through distributed shared memory and a cooperative kernel with a
 * grid-wide barrier, checked bit for bit against the CPU (on the GPU lane
 * they need compute capability 9.0: an H200 runs them, an older GPU must
 * refuse them with T4A_EUNSUPPORTED); every geometry and attribute error,
 * refused before the driver sees the launch; the occupancy answers and their
 * cache; stream priorities and the struct sizes of 1.1. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

static const char source[] =
    "extern \"C\" __global__ void t4a_grid_sum(const unsigned *in, unsigned *scratch,\n"
    "                                          unsigned *out, unsigned long long n) {\n"
    "  __shared__ unsigned acc;\n"
    "  unsigned long long chunk = (n + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * chunk;\n"
    "  unsigned long long hi = lo + chunk < n ? lo + chunk : n;\n"
    "  if (threadIdx.x == 0) acc = 0;\n"
    "  __syncthreads();\n"
    "  unsigned v = 0;\n"
    "  for (unsigned long long i = lo + threadIdx.x; i < hi; i += blockDim.x) v += in[i];\n"
    "  atomicAdd(&acc, v);\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) {\n" /* the grid-wide barrier: every block co-resident */
    "    scratch[1 + blockIdx.x] = acc;\n"
    "    __threadfence();\n"
    "    atomicAdd(&scratch[0], 1u);\n"
    "    while (((volatile unsigned *)scratch)[0] < gridDim.x) {}\n"
    "    __threadfence();\n"
    "  }\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) acc = 0;\n"
    "  __syncthreads();\n"
    "  unsigned t = 0;\n"
    "  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)\n"
    "    t += ((volatile unsigned *)scratch)[1 + b];\n"
    "  atomicAdd(&acc, t);\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) out[blockIdx.x] = acc;\n"
    "}\n"
    "extern \"C\" __global__ void t4a_mix_u32(unsigned *y, const unsigned *x, unsigned k,\n"
    "                                         unsigned long long n) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = (y[i] ^ x[i]) * 2654435761u + k;\n"
    "}\n";

/* Needs compute capability 9.0 (sm_90): compiled only where clusters are. */
static const char cluster_source[] =
    "extern \"C\" __global__ void t4a_cluster_rotate(const unsigned *in, unsigned *out) {\n"
    "  __shared__ unsigned s[1024];\n"
    "  unsigned rank, size, remote, v;\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(rank));\n"
    "  asm volatile(\"mov.u32 %0, %%cluster_nctarank;\" : \"=r\"(size));\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  s[threadIdx.x] = in[i] * 2u + rank;\n"
    "  asm volatile(\"barrier.cluster.arrive;\\n\\tbarrier.cluster.wait;\" ::: \"memory\");\n"
    "  unsigned long long generic;\n" /* the next block's word, through DSMEM */
    "  asm volatile(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(generic) : \"l\"(&s[threadIdx.x]));\n"
    "  asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\"\n"
    "               : \"=r\"(remote) : \"r\"((unsigned)generic), \"r\"((rank + 1) % size));\n"
    "  asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(v) : \"r\"(remote) : "
    "\"memory\");\n"
    "  asm volatile(\"barrier.cluster.arrive;\\n\\tbarrier.cluster.wait;\" ::: \"memory\");\n"
    "  out[i] = v ^ (rank << 24);\n"
    "}\n";

static uint64_t rng = 1;
static uint32_t next32(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng >> 32);
}

static uint64_t fake_calls(const char *entry) {
  if (!rt_on_fake())
    return 0;
  void *dl = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(dl);
  uint64_t (*calls)(const char *);
  *(void **)&calls = dlsym(dl, "fake_cuda_calls");
  ck_assert_ptr_nonnull(calls);
  return calls(entry);
}

static t4a_module load(t4a_runtime rt, const char *src) {
  t4a_compile_options o = {.struct_size = sizeof o, .source = src, .name = "ex.cu"};
  t4a_artifact a;
  t4a_module m;
  RT_OK(T->artifact_compile(&o, &a));
  RT_OK(T->module_load(rt, a, &m));
  RT_OK(T->artifact_release(a));
  return m;
}

static t4a_function fn(t4a_runtime rt, t4a_module m, const char *name) {
  t4a_function f;
  RT_OK(T->function_get(rt, m, name, &f));
  return f;
}

static t4a_runtime_info runtime_info(t4a_runtime rt) {
  t4a_runtime_info i = {.struct_size = sizeof i};
  RT_OK(T->runtime_info(rt, &i));
  return i;
}

static uint64_t addr(t4a_runtime rt, t4a_buffer b) {
  uint64_t a = 0;
  RT_OK(T->buffer_device_address(rt, b, &a));
  return a;
}

static t4a_launch_ex_config ex(uint32_t grid, uint32_t block, uint32_t cluster, uint32_t flags) {
  t4a_launch_ex_config c = {.struct_size = sizeof c,
                            .flags = flags,
                            .grid = {grid, 1, 1},
                            .block = {block, 1, 1},
                            .cluster = {cluster, cluster ? 1 : 0, cluster ? 1 : 0}};
  return c;
}

/* Whether this device must have clusters and cooperative launches. */
static bool hopper(void) { return rt_on_fake() || DEV.cc_major >= 9; }

/* The CPU's t4a_cluster_rotate. */
static void rotate_ref(const uint32_t *in, uint32_t *out, uint32_t grid, uint32_t block,
                       uint32_t cs) {
  for (uint32_t b = 0; b < grid; b++) {
    uint32_t rank = b % cs, next = (rank + 1) % cs, peer = b - rank + next;
    for (uint32_t t = 0; t < block; t++)
      out[b * block + t] = (in[peer * block + t] * 2u + next) ^ (rank << 24);
  }
}

START_TEST(cluster_kernel_shares_distributed_shared_memory) {
  rng = t4a_test_seed();
  t4a_runtime rt = rt_create();
  t4a_runtime_info ri = runtime_info(rt);
  if (!(ri.exec_flags & T4A_EXEC_CLUSTERS)) {
    ck_assert_msg(!hopper(), "a compute capability %d.%d device must have clusters",
                  (int)DEV.cc_major, (int)DEV.cc_minor);
    /* older GPUs: refused, typed, before the driver */
    t4a_module m = load(rt, "extern \"C\" __global__ void t4a_empty() {}\n");
    t4a_launch_ex_config c = ex(8, 32, 2, 0);
    RT_EXPECT(T->launch_ex(rt, fn(rt, m, "t4a_empty"), &c, NULL), T4A_EUNSUPPORTED);
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    return;
  }
  t4a_module m = load(rt, cluster_source);
  t4a_function f = fn(rt, m, "t4a_cluster_rotate");
  const uint32_t grid = 64, block = 256;
  const uint64_t n = (uint64_t)grid * block;
  uint32_t *in = malloc(n * 4), *got = malloc(n * 4), *ref = malloc(n * 4);
  for (uint64_t i = 0; i < n; i++)
    in[i] = next32();
  t4a_buffer bin, bout, bout2;
  RT_OK(T->buffer_alloc(rt, n * 4, &bin));
  RT_OK(T->buffer_alloc(rt, n * 4, &bout));
  RT_OK(T->buffer_alloc(rt, n * 4, &bout2));
  RT_OK(T->copy_h2d(rt, bin, 0, in, n * 4));
  uint64_t pin = addr(rt, bin), pout = addr(rt, bout), pout2 = addr(rt, bout2);
  void *args[] = {&pin, &pout};
  static const uint32_t sizes[] = {1, 2, 4, 8};
  for (int s = 0; s < 4; s++) {
    t4a_launch_ex_config c = ex(grid, block, sizes[s], 0);
    RT_OK(T->memset(rt, bout, 0, 0xa5, 1, n * 4));
    RT_OK(T->launch_ex(rt, f, &c, args));
    RT_OK(T->copy_d2h(rt, got, bout, 0, n * 4));
    rotate_ref(in, ref, grid, block, sizes[s]);
    ck_assert_msg(memcmp(got, ref, n * 4) == 0, "cluster of %u: the blocks' exchange differs",
                  sizes[s]);
  }
  uint32_t clusters = 0;
  t4a_launch_ex_config c8 = ex(grid, block, 8, 0);
  RT_OK(T->occupancy_max_active_clusters(rt, f, &c8, &clusters));
  ck_assert_uint_ge(clusters, 1);

  /* captured in a graph, replayed, and its arguments replaced: the
   * cluster shape stays */
  t4a_launch_ex_config c4 = ex(grid, block, 4, 0);
  t4a_graph g;
  RT_OK(T->graph_begin(rt));
  RT_OK(T->launch_ex(rt, f, &c4, args));
  RT_OK(T->graph_end(rt, &g));
  RT_OK(T->memset(rt, bout, 0, 0xa5, 1, n * 4));
  RT_OK(T->graph_launch(rt, g));
  RT_OK(T->copy_d2h(rt, got, bout, 0, n * 4));
  rotate_ref(in, ref, grid, block, 4);
  ck_assert_msg(memcmp(got, ref, n * 4) == 0, "the replayed cluster launch differs");
  void *args2[] = {&pin, &pout2};
  RT_OK(T->memset(rt, bout2, 0, 0x5a, 1, n * 4));
  RT_OK(T->graph_set_kernel_args(rt, g, 0, args2));
  RT_OK(T->graph_launch(rt, g));
  RT_OK(T->copy_d2h(rt, got, bout2, 0, n * 4));
  ck_assert_msg(memcmp(got, ref, n * 4) == 0, "the updated cluster launch differs");
  RT_OK(T->graph_release(rt, g));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(in);
  free(got);
  free(ref);
}
END_TEST

START_TEST(cooperative_kernel_syncs_the_whole_grid) {
  rng = t4a_test_seed();
  t4a_runtime rt = rt_create();
  t4a_module m = load(rt, source);
  t4a_function f = fn(rt, m, "t4a_grid_sum");
  if (!(runtime_info(rt).exec_flags & T4A_EXEC_COOPERATIVE)) {
    ck_assert_msg(!hopper(), "this device must have cooperative launches");
    t4a_launch_ex_config c = ex(1, 32, 0, T4A_LAUNCH_COOPERATIVE);
    RT_EXPECT(T->launch_ex(rt, f, &c, NULL), T4A_EUNSUPPORTED);
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    return;
  }
  const uint32_t block = 256;
  uint32_t per_sm = 0;
  RT_OK(T->occupancy_max_active_blocks(rt, f, block, 0, &per_sm));
  ck_assert_uint_ge(per_sm, 1);
  const uint32_t grid = per_sm * (uint32_t)DEV.multiprocessors; /* every block co-resident */
  ck_assert_uint_ge(grid, 1);
  const uint64_t n = 1000000 + next32() % 100000;
  uint32_t *in = malloc(n * 4), *out = malloc(grid * 4ull), *scratch = malloc((grid + 1) * 4ull);
  uint32_t total = 0;
  for (uint64_t i = 0; i < n; i++)
    total += in[i] = next32();
  t4a_buffer bin, bscratch, bout;
  RT_OK(T->buffer_alloc(rt, n * 4, &bin));
  RT_OK(T->buffer_alloc(rt, (grid + 1) * 4ull, &bscratch));
  RT_OK(T->buffer_alloc(rt, grid * 4ull, &bout));
  RT_OK(T->copy_h2d(rt, bin, 0, in, n * 4));
  uint64_t pin = addr(rt, bin), ps = addr(rt, bscratch), po = addr(rt, bout), nn = n;
  void *args[] = {&pin, &ps, &po, &nn};
  for (int round = 0; round < 3; round++) {
    RT_OK(T->memset(rt, bscratch, 0, 0, 1, (grid + 1) * 4ull));
    RT_OK(T->memset(rt, bout, 0, 0xa5, 1, grid * 4ull));
    t4a_launch_ex_config c = ex(grid, block, 0, T4A_LAUNCH_COOPERATIVE);
    RT_OK(T->launch_ex(rt, f, &c, args));
    RT_OK(T->copy_d2h(rt, out, bout, 0, grid * 4ull));
    RT_OK(T->copy_d2h(rt, scratch, bscratch, 0, (grid + 1) * 4ull));
    ck_assert_uint_eq(scratch[0], grid); /* every block passed the barrier */
    uint64_t chunk = (n + grid - 1) / grid;
    for (uint32_t b = 0; b < grid; b++) {
      uint32_t part = 0;
      for (uint64_t i = b * chunk; i < (b + 1) * chunk && i < n; i++)
        part += in[i];
      ck_assert_uint_eq(scratch[1 + b], part);
      ck_assert_msg(out[b] == total, "block %u saw %08x after the grid barrier, want %08x", b,
                    out[b], total);
    }
  }
  /* one block more than can be co-resident: refused before the driver */
  uint64_t before = fake_calls("cuLaunchKernelEx");
  t4a_launch_ex_config big = ex(grid + 1, block, 0, T4A_LAUNCH_COOPERATIVE);
  RT_EXPECT(T->launch_ex(rt, f, &big, args), T4A_EINVAL);
  RT_DETAIL("can be co-resident");
  ck_assert_uint_eq(fake_calls("cuLaunchKernelEx"), before);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(in);
  free(out);
  free(scratch);
}
END_TEST

START_TEST(geometry_and_attributes_are_checked_before_the_driver) {
  t4a_runtime rt = rt_create();
  t4a_module m = load(rt, source);
  t4a_function mixf = fn(rt, m, "t4a_mix_u32");
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, 1 << 16, &b));
  RT_OK(T->memset(rt, b, 0, 0x3c, 1, 1 << 16)); /* defined bytes (the initcheck lane) */
  uint64_t p = addr(rt, b), n = 1 << 14;
  uint32_t key = 7;
  void *args[] = {&p, &p, &key, &n};
  t4a_runtime_info ri = runtime_info(rt);
  bool clusters = (ri.exec_flags & T4A_EXEC_CLUSTERS) != 0;
  uint64_t before = fake_calls("cuLaunchKernelEx");
#define BAD(cfgexpr, status, detail)                                                               \
  do {                                                                                             \
    t4a_launch_ex_config c_ = cfgexpr;                                                             \
    RT_EXPECT(T->launch_ex(rt, mixf, &c_, args), status);                                          \
    RT_DETAIL(detail);                                                                             \
  } while (0)
  t4a_launch_ex_config c = ex(16, 128, 0, 0);
  c.flags = 0x80;
  BAD(c, T4A_EINVAL, "unknown flags 0x80");
  c = ex(16, 128, 0, 0);
  c.reserved = 1;
  BAD(c, T4A_EINVAL, "reserved 0x1");
  c = ex(16, 128, 0, 0);
  c.struct_size = T4A_LAUNCH_EX_CONFIG_V1_1_SIZE - 4;
  BAD(c, T4A_EINVAL, "struct_size");
  BAD(ex(0, 128, 0, 0), T4A_EINVAL, "grid.x = 0");
  BAD(ex(16, 2048, 0, 0), T4A_EINVAL, "block.x = 2048");
  c = ex(16, 128, 0, 0);
  c.shared_bytes = 1u << 30;
  BAD(c, T4A_EINVAL, "dynamic shared memory");
  BAD(ex(16, 128, 0, T4A_LAUNCH_CLUSTER_NON_PORTABLE), T4A_EINVAL,
      "T4A_LAUNCH_CLUSTER_NON_PORTABLE without a cluster");
  c = ex(16, 128, 0, T4A_LAUNCH_PRIORITY);
  c.priority = ri.priority_greatest - 1;
  BAD(c, T4A_ERANGE, "is outside the device's range");
  c.priority = ri.priority_least + 1;
  BAD(c, T4A_ERANGE, "is outside the device's range");
  if (clusters) {
    BAD(ex(16, 128, 3, 0), T4A_EINVAL, "cluster.x = 3 does not divide grid.x = 16");
    c = ex(16, 128, 2, 0);
    c.cluster[1] = 0;
    BAD(c, T4A_EINVAL, "cluster.y = 0 while another cluster dimension is set");
    c = ex(32, 128, 16, 0);
    BAD(c, T4A_EINVAL, "(portable limit)");
    c = ex(64, 128, 32, T4A_LAUNCH_CLUSTER_NON_PORTABLE);
    BAD(c, T4A_EINVAL, "a cluster of 32 blocks");
    c = ex(16, 128, 8, 0);
    c.grid[1] = 3;
    c.cluster[1] = 2;
    BAD(c, T4A_EINVAL, "cluster.y = 2 does not divide grid.y = 3");
  } else {
    BAD(ex(16, 128, 2, 0), T4A_EUNSUPPORTED, "clusters");
  }
  ck_assert_uint_eq(fake_calls("cuLaunchKernelEx"), before); /* none reached the driver */
  /* and the runtime works: the same launches, made right */
  c = ex(16, 128, 0, 0);
  RT_OK(T->launch_ex(rt, mixf, &c, args));
  c = ex(16, 128, 0, T4A_LAUNCH_PRIORITY);
  c.priority = ri.priority_greatest;
  if (ri.exec_flags & T4A_EXEC_PRIORITIES)
    RT_OK(T->launch_ex(rt, mixf, &c, args));
  if (clusters) {
    c = ex(16, 128, 8, 0);
    RT_OK(T->launch_ex(rt, mixf, &c, args));
    c = ex(32, 128, 16, T4A_LAUNCH_CLUSTER_NON_PORTABLE);
    if (rt_on_fake()) /* the fake allows 16 non-portably */
      RT_OK(T->launch_ex(rt, mixf, &c, args));
  }
  /* a larger struct from a newer caller: what we know is read */
  unsigned char raw[sizeof(t4a_launch_ex_config) + 16];
  memset(raw, 0x77, sizeof raw);
  t4a_launch_ex_config big = ex(16, 128, 0, 0);
  big.struct_size = sizeof raw;
  memcpy(raw, &big, sizeof big);
  RT_OK(T->launch_ex(rt, mixf, (const t4a_launch_ex_config *)raw, args));
  rt_sync(rt);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(occupancy_answers_and_their_cache) {
  t4a_runtime rt = rt_create();
  t4a_module m = load(rt, source);
  t4a_function f = fn(rt, m, "t4a_mix_u32");
  uint32_t per_sm = 0, block = 0, grid = 0, at_block = 0;
  RT_OK(T->occupancy_max_active_blocks(rt, f, 256, 0, &per_sm));
  ck_assert_uint_ge(per_sm, 1);
  if (rt_on_fake())
    ck_assert_uint_eq(per_sm, 8); /* 2048 threads per multiprocessor */
  /* dynamic shared memory counts: 32 KiB a block leaves room for fewer blocks
   * than the 8 the threads allow, and the cached answer for 0 bytes is not
   * given for it (nor the other way round) */
  uint32_t with_shared = 0, again = 0;
  RT_OK(T->occupancy_max_active_blocks(rt, f, 256, 32 * 1024, &with_shared));
  if (rt_on_host()) /* a CPU runs one block at a time, whatever its shared memory */
    ck_assert(per_sm == 1 && with_shared == 1);
  else
    ck_assert_uint_lt(with_shared, per_sm);
  if (rt_on_fake())
    ck_assert_uint_eq(with_shared, 6); /* 228 KiB / (32 + 1 KiB reserved) */
  RT_OK(T->occupancy_max_active_blocks(rt, f, 256, 0, &again));
  ck_assert_uint_eq(again, per_sm);
  RT_OK(T->occupancy_suggest_block_size(rt, f, 0, 0, &block, &grid));
  ck_assert_uint_ge(block, 32);
  ck_assert_uint_le(block, (uint32_t)DEV.max_threads_per_block);
  RT_OK(T->occupancy_max_active_blocks(rt, f, block, 0, &at_block));
  ck_assert_uint_eq(grid, (uint64_t)at_block * (uint32_t)DEV.multiprocessors);
  RT_OK(T->occupancy_suggest_block_size(rt, f, 0, 64, &block, &grid));
  ck_assert_uint_le(block, 64);
  /* what is refused */
  RT_EXPECT(T->occupancy_max_active_blocks(rt, f, 0, 0, &per_sm), T4A_EINVAL);
  RT_EXPECT(T->occupancy_max_active_blocks(rt, f, 4096, 0, &per_sm), T4A_EINVAL);
  RT_DETAIL("a block of 4096 threads is outside");
  RT_EXPECT(T->occupancy_max_active_blocks(rt, f, 256, 1u << 30, &per_sm), T4A_EINVAL);
  RT_EXPECT(T->occupancy_max_active_blocks(rt, f, 256, 0, NULL), T4A_EINVAL);
  RT_EXPECT(T->occupancy_suggest_block_size(rt, f, 0, 4096, &block, &grid), T4A_EINVAL);
  RT_EXPECT(T->occupancy_suggest_block_size(rt, f, 0, 0, NULL, &grid), T4A_EINVAL);
  RT_EXPECT(T->occupancy_max_active_blocks(rt, (t4a_function){0}, 256, 0, &per_sm), T4A_EINVAL);
  t4a_launch_ex_config nc = {.struct_size = sizeof nc, .grid = {8, 1, 1}, .block = {64, 1, 1}};
  uint32_t clusters;
  RT_EXPECT(T->occupancy_max_active_clusters(rt, f, &nc, &clusters), T4A_EINVAL);
  RT_DETAIL("cfg->cluster is not set");
  /* repeated cooperative launches ask the occupancy calculator once */
  t4a_module m2 = load(rt, source);
  t4a_function gs = fn(rt, m2, "t4a_grid_sum");
  if (rt_on_fake()) {
    t4a_buffer b;
    RT_OK(T->buffer_alloc(rt, 4096, &b));
    uint64_t p = addr(rt, b), n = 16;
    void *args[] = {&p, &p, &p, &n};
    uint64_t asked = fake_calls("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    t4a_launch_ex_config c = ex(4, 64, 0, T4A_LAUNCH_COOPERATIVE);
    for (int i = 0; i < 10; i++)
      RT_OK(T->launch_ex(rt, gs, &c, args));
    ck_assert_uint_eq(fake_calls("cuOccupancyMaxActiveBlocksPerMultiprocessor"), asked + 1);
    rt_sync(rt);
  }
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* The driver's own view of a stream's priority. */
static int raw_priority(t4a_runtime rt) {
  const char *lib = getenv("T4A_CUDA_LIBRARY");
  void *dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(dl);
  int (*get)(void *, int *);
  *(void **)&get = dlsym(dl, "cuStreamGetPriority");
  ck_assert_ptr_nonnull(get);
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  int p = 99;
  ck_assert_int_eq(get(raw.stream, &p), 0);
  dlclose(dl);
  return p;
}

START_TEST(stream_priority_is_an_option_and_reported) {
  t4a_runtime rt = rt_create();
  t4a_runtime_info ri = runtime_info(rt);
  ck_assert_int_eq(ri.stream_priority, 0);
  ck_assert_int_eq(ri.device_ordinal, 0);
  if (!rt_on_host()) /* no stream to ask (the raw seam is NULL there) */
    ck_assert_int_eq(raw_priority(rt), 0);
  ck_assert_int_le(ri.priority_greatest, ri.priority_least);
  if (!(ri.exec_flags & T4A_EXEC_PRIORITIES)) {
    ck_assert_msg(!rt_on_fake() && DEV.cc_major < 7, "this device must have priorities");
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    return;
  }
  ck_assert_int_lt(ri.priority_greatest, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));

  t4a_runtime_options o = {.struct_size = sizeof o, .stream_priority = ri.priority_greatest};
  t4a_runtime hi;
  RT_OK(T->runtime_create(0, &o, &hi));
  ck_assert_int_eq(runtime_info(hi).stream_priority, ri.priority_greatest);
  ck_assert_int_eq(raw_priority(hi), ri.priority_greatest);
  /* it runs work like any other */
  uint32_t v[1024], back[1024];
  for (int i = 0; i < 1024; i++)
    v[i] = (uint32_t)i * 77u;
  t4a_buffer b;
  RT_OK(T->buffer_alloc(hi, sizeof v, &b));
  RT_OK(T->copy_h2d(hi, b, 0, v, sizeof v));
  RT_OK(T->copy_d2h(hi, back, b, 0, sizeof back));
  ck_assert(memcmp(v, back, sizeof v) == 0);
  RT_OK(T->runtime_destroy(hi, T4A_WAIT_FOREVER));
  /* a default runtime made after it (perhaps of its parts) has the default */
  t4a_runtime plain = rt_create();
  ck_assert_int_eq(raw_priority(plain), 0);
  ck_assert_int_eq(runtime_info(plain).stream_priority, 0);
  RT_OK(T->runtime_destroy(plain, T4A_WAIT_FOREVER));

  t4a_runtime bad;
  o.stream_priority = ri.priority_greatest - 1;
  RT_EXPECT(T->runtime_create(0, &o, &bad), T4A_ERANGE);
  RT_DETAIL("stream_priority");
  o.stream_priority = ri.priority_least + 1;
  RT_EXPECT(T->runtime_create(0, &o, &bad), T4A_ERANGE);
  o.stream_priority = 0;
  o.reserved_v1_1 = 1;
  RT_EXPECT(T->runtime_create(0, &o, &bad), T4A_EINVAL);
  RT_DETAIL("reserved_v1_1");
  /* a v1.0 caller's options end before the priority: junk there is not read */
  unsigned char raw[sizeof(t4a_runtime_options)];
  memset(raw, 0x7f, sizeof raw);
  t4a_runtime_options old = {.struct_size = T4A_RUNTIME_OPTIONS_V1_0_SIZE};
  memcpy(raw, &old, T4A_RUNTIME_OPTIONS_V1_0_SIZE);
  t4a_runtime r10;
  RT_OK(T->runtime_create(0, (const t4a_runtime_options *)raw, &r10));
  ck_assert_int_eq(runtime_info(r10).stream_priority, 0);
  RT_OK(T->runtime_destroy(r10, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(v1_1_structs_accept_older_and_newer_sizes) {
  t4a_runtime rt = rt_create();
  unsigned char raw[128];
  /* runtime_info: too small refused, larger filled to what we know */
  memset(raw, 0x5a, sizeof raw);
  t4a_runtime_info *ri = (t4a_runtime_info *)raw;
  ri->struct_size = T4A_RUNTIME_INFO_V1_1_SIZE - 4;
  RT_EXPECT(T->runtime_info(rt, ri), T4A_EINVAL);
  ri->struct_size = sizeof raw;
  RT_OK(T->runtime_info(rt, ri));
  ck_assert_uint_eq(ri->struct_size, T4A_RUNTIME_INFO_V1_1_SIZE);
  for (size_t i = T4A_RUNTIME_INFO_V1_1_SIZE; i < sizeof raw; i++)
    ck_assert_uint_eq(raw[i], 0x5a);
  /* counters: a v1.0 caller gets v1.0's fields and nothing past them */
  memset(raw, 0x5a, sizeof raw);
  unsigned char craw[sizeof(t4a_runtime_counters) + 16];
  memset(craw, 0x5a, sizeof craw);
  t4a_runtime_counters *c = (t4a_runtime_counters *)craw;
  c->struct_size = T4A_RUNTIME_COUNTERS_V1_0_SIZE;
  RT_OK(T->runtime_counters(rt, c));
  ck_assert_uint_eq(c->struct_size, T4A_RUNTIME_COUNTERS_V1_0_SIZE);
  for (size_t i = T4A_RUNTIME_COUNTERS_V1_0_SIZE; i < sizeof craw; i++)
    ck_assert_uint_eq(craw[i], 0x5a);
  /* a newer caller's: filled to what this ABI knows (v1.2's counters), not past it */
  memset(craw, 0x5a, sizeof craw);
  c->struct_size = sizeof craw;
  RT_OK(T->runtime_counters(rt, c));
  ck_assert_uint_eq(c->struct_size, T4A_RUNTIME_COUNTERS_V1_2_SIZE);
  ck_assert_uint_eq(c->live_graphs, 0);
  for (size_t i = T4A_RUNTIME_COUNTERS_V1_2_SIZE; i < sizeof craw; i++)
    ck_assert_uint_eq(craw[i], 0x5a);
  RT_EXPECT(T->runtime_info(rt, NULL), T4A_EINVAL);
  RT_EXPECT(T->runtime_info((t4a_runtime){0}, ri), T4A_EINVAL);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_EXPECT(T->runtime_info(rt, ri), T4A_EHANDLE);
}
END_TEST

/* Reopens the backend with an environment variable set (the plugin reads
 * the devices again at init). */
static void reopen_with(const char *name, const char *value) {
  t4a_gpu_close(B);
  setenv(name, value, 1);
  rt_setup();
}

START_TEST(without_clusters_or_the_entry_points_launch_ex_says_so) {
  reopen_with("FAKE_CUDA_NO_CLUSTERS", "1");
  t4a_runtime rt = rt_create();
  ck_assert(!(runtime_info(rt).exec_flags & T4A_EXEC_CLUSTERS));
  ck_assert(runtime_info(rt).exec_flags & T4A_EXEC_COOPERATIVE);
  t4a_module m = load(rt, source);
  t4a_function f = fn(rt, m, "t4a_mix_u32");
  t4a_launch_ex_config c = ex(16, 128, 2, 0);
  RT_EXPECT(T->launch_ex(rt, f, &c, NULL), T4A_EUNSUPPORTED);
  RT_DETAIL("no thread block clusters");
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  unsetenv("FAKE_CUDA_NO_CLUSTERS");
  reopen_with("FAKE_CUDA_HIDE", "cuLaunchKernelEx,cuStreamBeginCapture,cuStreamCreateWithPriority");
  rt = rt_create();
  t4a_runtime_info ri = runtime_info(rt);
  ck_assert_uint_eq(ri.exec_flags & (T4A_EXEC_CLUSTERS | T4A_EXEC_COOPERATIVE | T4A_EXEC_GRAPHS |
                                     T4A_EXEC_PRIORITIES),
                    0);
  m = load(rt, source);
  f = fn(rt, m, "t4a_mix_u32");
  c = ex(16, 128, 0, 0);
  RT_EXPECT(T->launch_ex(rt, f, &c, NULL), T4A_EUNSUPPORTED);
  RT_DETAIL("cuLaunchKernelEx");
  RT_EXPECT(T->graph_begin(rt), T4A_EUNSUPPORTED);
  RT_DETAIL("cuStreamBeginCapture");
  t4a_runtime_options o = {.struct_size = sizeof o, .stream_priority = -1};
  t4a_runtime p;
  RT_EXPECT(T->runtime_create(0, &o, &p), T4A_EUNSUPPORTED);
  /* everything else works */
  rt_sync(rt);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(launch_ex_driver_failures_are_typed) {
  void *dl = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  void (*inject)(const char *, uint64_t, unsigned);
  *(void **)&inject = dlsym(dl, "fake_cuda_fail");
  t4a_runtime rt = rt_create();
  t4a_module m = load(rt, source);
  t4a_function f = fn(rt, m, "t4a_mix_u32");
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, 1 << 16, &b));
  uint64_t p = addr(rt, b), n = 1 << 14;
  uint32_t key = 7;
  void *args[] = {&p, &p, &key, &n};
  t4a_launch_ex_config c = ex(16, 128, 2, 0);
  inject("cuLaunchKernelEx", 1, 999);
  RT_EXPECT(T->launch_ex(rt, f, &c, args), T4A_EDRIVER);
  inject("cuOccupancyMaxActiveBlocksPerMultiprocessor", 1, 999);
  uint32_t per_sm;
  RT_EXPECT(T->occupancy_max_active_blocks(rt, f, 96, 0, &per_sm), T4A_EDRIVER);
  inject("cuOccupancyMaxPotentialClusterSize", 1, 999);
  c = ex(16, 96, 4, 0); /* a configuration not asked yet */
  RT_EXPECT(T->launch_ex(rt, f, &c, args), T4A_EDRIVER);
  inject("cuOccupancyMaxPotentialBlockSize", 1, 2);
  uint32_t bs, mg;
  RT_EXPECT(T->occupancy_suggest_block_size(rt, f, 0, 0, &bs, &mg), T4A_ENOMEM);
  inject("cuCtxGetStreamPriorityRange", 1, 999);
  t4a_runtime other;
  RT_EXPECT(T->runtime_create(0, NULL, &other), T4A_EDRIVER);
  /* usable after each */
  RT_OK(T->launch_ex(rt, f, &c, args));
  RT_OK(T->occupancy_max_active_blocks(rt, f, 96, 0, &per_sm));
  rt_sync(rt);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create(rt_on_host()   ? "launch-ex-host"
                          : rt_on_fake() ? "launch-ex-fake"
                                         : "launch-ex-gpu");
  TCase *tc = tcase_create("launch_ex");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, cluster_kernel_shares_distributed_shared_memory);
  tcase_add_test(tc, cooperative_kernel_syncs_the_whole_grid);
  tcase_add_test(tc, geometry_and_attributes_are_checked_before_the_driver);
  tcase_add_test(tc, occupancy_answers_and_their_cache);
  tcase_add_test(tc, stream_priority_is_an_option_and_reported);
  tcase_add_test(tc, v1_1_structs_accept_older_and_newer_sizes);
  if (rt_on_fake()) /* fault injection and driver variants: the fake's */
    tcase_add_test(tc, without_clusters_or_the_entry_points_launch_ex_says_so);
  if (rt_on_fake()) /* fault injection and driver variants: the fake's */
    tcase_add_test(tc, launch_ex_driver_failures_are_typed);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
#if defined(T4A_TEST_HOST)
  Suite *s = rt_suite("launch-ex"); /* the host lane's environment (its run's cache) */
  srunner_free(srunner_create(s));
  return rt_run(suite(), 1);
#elif defined(T4A_TEST_FAKE)
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
  setenv("T4A_CACHE_DIR", "", 1);
  return t4a_test_run(suite());
#else
  setenv("T4A_CACHE_DIR", "", 1);
  return t4a_test_gpu_main(suite(), 1);
#endif
}
