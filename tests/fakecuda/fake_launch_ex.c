/* tests/fakecuda/fake_launch_ex.c -- the fake driver's extended launches
 * (cuLaunchKernelEx with cluster, cooperative and priority attributes),
 * its occupancy calculator, stream priorities, and the kernels that need
 * them, run on the CPU like fake_kernels.c's (every pointer checked with
 * fake_touch).
 *
 * The device it describes: 4 multiprocessors of 2048 threads, 32 blocks and
 * 228 KiB of shared memory each (1 KiB reserved per block), clusters of at
 * most 8 blocks (16 with the non-portable attribute), cooperative launches,
 * stream priorities -5 (highest) .. 0. Launch attributes are checked as the
 * driver checks them: a cluster must divide the grid and fit the limit
 * (CUDA_ERROR_INVALID_CLUSTER_SIZE), a cooperative grid must be
 * co-resident (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).
 *
 *   FAKE_CUDA_NO_CLUSTERS       the device has no clusters (pre-Hopper)
 *   FAKE_CUDA_NO_COOPERATIVE    ... and no cooperative launches
 *
 * Kernels (over the grid's x dimension; clusters of cluster.x blocks):
 *   t4a_mix_u32(uint32_t *y, const uint32_t *x, uint32_t k, uint64_t n):
 *       y[i] = (y[i] ^ x[i]) * 2654435761 + k
 *   t4a_cluster_rotate(const uint32_t *in, uint32_t *out): each block puts
 *       in * 2 + its cluster rank in shared memory; each thread then reads
 *       the next block's (rank + 1 mod cluster size) through distributed
 *       shared memory and writes it XOR rank << 24
 *   t4a_grid_sum(const uint32_t *in, uint32_t *scratch, uint32_t *out,
 *       uint64_t n): block b sums its chunk of in into scratch[1 + b], a
 *       grid-wide barrier (counting in scratch[0], zero before), then every
 *       block writes the total to out[b]; without a cooperative launch the
 *       result is undefined (here: 0xdeadbeef, so a test sees it) */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

#define SMS 4 /* multiprocessors, as fake_cuda.c reports */

/* ---- kernels ---------------------------------------------------------------------- */

static void k_mix(const unsigned char *a, kctx *k) {
  uint32_t *y, key;
  const uint32_t *x;
  uint64_t n;
  memcpy(&y, a, 8);
  memcpy(&x, a + 8, 8);
  memcpy(&key, a + 16, 4);
  memcpy(&n, a + 24, 8);
  if (!fake_touch(k, y, n * 4) || !fake_touch(k, x, n * 4))
    return;
  for (uint64_t i = 0; i < n; i++)
    y[i] = (y[i] ^ x[i]) * 2654435761u + key;
}

static void k_cluster_rotate(const unsigned char *a, kctx *k) {
  const uint32_t *in;
  uint32_t *out;
  memcpy(&in, a, 8);
  memcpy(&out, a + 8, 8);
  uint64_t grid = k->g.grid[0], block = k->g.block[0], n = grid * block;
  if (!fake_touch(k, in, n * 4) || !fake_touch(k, out, n * 4))
    return;
  unsigned size = k->g.cluster[0] ? k->g.cluster[0] : 1; /* without clusters: each block its own */
  for (uint64_t b = 0; b < grid; b++) {
    unsigned rank = (unsigned)(b % size), next = (rank + 1) % size;
    uint64_t peer = b - rank + next;
    for (uint64_t t = 0; t < block; t++)
      out[b * block + t] = (in[peer * block + t] * 2u + next) ^ (rank << 24);
  }
}

static void k_grid_sum(const unsigned char *a, kctx *k) {
  const uint32_t *in;
  uint32_t *scratch, *out;
  uint64_t n, grid = k->g.grid[0];
  memcpy(&in, a, 8);
  memcpy(&scratch, a + 8, 8);
  memcpy(&out, a + 16, 8);
  memcpy(&n, a + 24, 8);
  if (!fake_touch(k, in, n * 4) || !fake_touch(k, scratch, (grid + 1) * 4) ||
      !fake_touch(k, out, grid * 4))
    return;
  uint32_t *count = scratch, *partial = scratch + 1;
  uint64_t chunk = (n + grid - 1) / grid;
  uint32_t total = 0;
  for (uint64_t b = 0; b < grid; b++) {
    uint32_t sum = 0;
    for (uint64_t i = b * chunk; i < (b + 1) * chunk && i < n; i++)
      sum += in[i];
    partial[b] = sum;
    total += sum;
  }
  *count += (uint32_t)grid;
  for (uint64_t b = 0; b < grid; b++)
    out[b] = k->g.cooperative ? total : 0xdeadbeefu;
}

/* name, function, arguments (offsets, sizes), pointer arguments, max
 * threads per block (0: the device's), static shared bytes (the CUDA C's),
 * waits for the host */
const kdesc fake_ext_kernels[] = {
    {"t4a_mix_u32", k_mix, 4, {0, 8, 16, 24}, {8, 8, 4, 8}, 0x3, 0, 0, false},
    {"t4a_cluster_rotate", k_cluster_rotate, 2, {0, 8}, {8, 8}, 0x3, 0, 4096, false},
    {"t4a_grid_sum", k_grid_sum, 4, {0, 8, 16, 24}, {8, 8, 8, 8}, 0x7, 0, 4, false},
};
const unsigned fake_ext_kernel_count = sizeof fake_ext_kernels / sizeof fake_ext_kernels[0];

/* ---- attributes ------------------------------------------------------------------------ */

R fake_ext_device_attribute(t4a__CUdevice_attribute a, int *v) {
  switch (a) {
  case T4A__CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    *v = !getenv("FAKE_CUDA_NO_COOPERATIVE");
    return OK;
  case T4A__CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *v = !getenv("FAKE_CUDA_NO_CLUSTERS"); return OK;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; return OK;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; return OK;
  default: return T4A__CUDA_ERROR_INVALID_VALUE;
  }
}

R fake_ext_func_attribute(t4a__CUfunction f, t4a__CUfunction_attribute a, int v) {
  if (a != T4A__CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED || (v != 0 && v != 1))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (getenv("FAKE_CUDA_NO_CLUSTERS"))
    return T4A__CUDA_ERROR_NOT_SUPPORTED;
  f->nonportable = v;
  return OK;
}

/* ---- occupancy -------------------------------------------------------------------------- */

/* Blocks of f with `threads` threads and `shared` dynamic shared bytes one
 * multiprocessor holds (G held, f checked). */
static int blocks_per_sm(t4a__CUfunction f, long long threads, size_t shared) {
  int limit = f->k->max_threads ? f->k->max_threads : 1024;
  if (threads <= 0 || threads > limit || (long long)shared > f->max_dynamic_shared)
    return 0;
  int warps = (int)(threads + 31) / 32, n = 2048 / (warps * 32);
  if (n > 32)
    n = 32;
  int by_shared = (int)((228u << 10) / (shared + (size_t)f->k->static_shared + 1024));
  return n < by_shared ? n : by_shared;
}

static int cluster_limit(t4a__CUfunction f) {
  return getenv("FAKE_CUDA_NO_CLUSTERS") ? 1 : f->nonportable ? 16 : 8;
}

static long long config_threads(const t4a__CUlaunchConfig *c) {
  return (long long)c->blockDimX * c->blockDimY * c->blockDimZ;
}

/* The occupancy calls ask about a function of the current context (G not
 * held): the context, then the function (G held on success). */
static R occupancy_begin(t4a__CUfunction f, const char *what) {
  R r = fake_need_ctx();
  if (r)
    return r;
  LOCK();
  if ((r = fake_obj_check(f, OBJ_FUNCTION, what)) != OK)
    UNLOCK();
  return r;
}

R fake_sym_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, t4a__CUfunction f, int block,
                                                       size_t shared) {
  FAKE_ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!n || block <= 0)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  R r = occupancy_begin(f, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (r)
    return r;
  *n = blocks_per_sm(f, block, shared);
  UNLOCK();
  return OK;
}

R fake_sym_cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, t4a__CUfunction f,
                                            t4a__CUoccupancyB2DSize cb, size_t shared, int limit) {
  FAKE_ENTER("cuOccupancyMaxPotentialBlockSize");
  if (!min_grid || !block || limit < 0)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  R r = occupancy_begin(f, "cuOccupancyMaxPotentialBlockSize");
  if (r)
    return r;
  struct CUfunc_st fn = *f; /* the caller's callback runs without G */
  UNLOCK();
  int top = limit && limit < 1024 ? limit : 1024, best = 0, best_threads = -1;
  for (int b = 32; b <= top; b += 32) {
    int threads = blocks_per_sm(&fn, b, cb ? cb(b) : shared) * b;
    if (threads >= best_threads) {
      best_threads = threads;
      best = b;
    }
  }
  if (top < 32)
    best = top;
  *block = best;
  *min_grid = blocks_per_sm(&fn, best, cb ? cb(best) : shared) * SMS;
  return OK;
}

/* The cluster and cooperative flag of a config; an error for an attribute
 * the fake does not know or a malformed cluster. */
static R parse(const t4a__CUlaunchConfig *c, unsigned cluster[3], bool *cooperative) {
  cluster[0] = cluster[1] = cluster[2] = 0;
  *cooperative = false;
  if (c->numAttrs && !c->attrs)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const t4a__CUlaunchAttribute *a = &c->attrs[i];
    switch (a->id) {
    case 0: break; /* CU_LAUNCH_ATTRIBUTE_IGNORE */
    case T4A__CU_LAUNCH_ATTRIBUTE_COOPERATIVE: *cooperative = a->value.cooperative != 0; break;
    case T4A__CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      cluster[0] = a->value.clusterDim.x;
      cluster[1] = a->value.clusterDim.y;
      cluster[2] = a->value.clusterDim.z;
      if (!cluster[0] || !cluster[1] || !cluster[2])
        return T4A__CUDA_ERROR_INVALID_VALUE;
      break;
    case T4A__CU_LAUNCH_ATTRIBUTE_PRIORITY: break; /* any value: clamped */
    default: return T4A__CUDA_ERROR_INVALID_VALUE;
    }
  }
  return OK;
}

R fake_sym_cuOccupancyMaxPotentialClusterSize(int *size, t4a__CUfunction f,
                                              const t4a__CUlaunchConfig *c) {
  FAKE_ENTER("cuOccupancyMaxPotentialClusterSize");
  if (!size || !c)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  R r = occupancy_begin(f, "cuOccupancyMaxPotentialClusterSize");
  if (r)
    return r;
  int per = blocks_per_sm(f, config_threads(c), c->sharedMemBytes);
  int limit = cluster_limit(f), fit = per * SMS;
  *size = fit < limit ? fit : limit;
  UNLOCK();
  return OK;
}

R fake_sym_cuOccupancyMaxActiveClusters(int *n, t4a__CUfunction f, const t4a__CUlaunchConfig *c) {
  FAKE_ENTER("cuOccupancyMaxActiveClusters");
  unsigned cluster[3];
  bool coop;
  if (!n || !c)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  R r = parse(c, cluster, &coop);
  if (r || (r = occupancy_begin(f, "cuOccupancyMaxActiveClusters")))
    return r;
  uint64_t size = (uint64_t)cluster[0] * cluster[1] * cluster[2];
  if (!size || size > (uint64_t)cluster_limit(f))
    r = T4A__CUDA_ERROR_INVALID_CLUSTER_SIZE;
  else
    *n = (int)((uint64_t)blocks_per_sm(f, config_threads(c), c->sharedMemBytes) * SMS / size);
  UNLOCK();
  return r;
}

/* ---- cuLaunchKernelEx ------------------------------------------------------------------- */

/* cuLaunchKernel's checks and rules (fake_launch_check: the function's and
 * the stream's context, whatever is current), then the attributes. */
R fake_sym_cuLaunchKernelEx(const t4a__CUlaunchConfig *c, t4a__CUfunction f, void **params,
                            void **extra) {
  FAKE_ENTER_STREAM("cuLaunchKernelEx", c ? c->hStream : NULL);
  if (!c)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  geometry g = {.grid = {c->gridDimX, c->gridDimY, c->gridDimZ},
                .block = {c->blockDimX, c->blockDimY, c->blockDimZ},
                .shared = c->sharedMemBytes};
  t4a__CUstream s = c->hStream;
  LOCK();
  R r = fake_launch_check("cuLaunchKernelEx", f, &s, &g, params, extra);
  if (!r)
    r = parse(c, g.cluster, &g.cooperative);
  if (r)
    goto out;
  uint64_t size = (uint64_t)g.cluster[0] * g.cluster[1] * g.cluster[2];
  uint64_t blocks = (uint64_t)g.grid[0] * g.grid[1] * g.grid[2];
  if (size && (g.grid[0] % g.cluster[0] || g.grid[1] % g.cluster[1] || g.grid[2] % g.cluster[2]))
    r = T4A__CUDA_ERROR_INVALID_VALUE;
  else if (size > (uint64_t)cluster_limit(f))
    r = T4A__CUDA_ERROR_INVALID_CLUSTER_SIZE;
  else if (g.cooperative && getenv("FAKE_CUDA_NO_COOPERATIVE"))
    r = T4A__CUDA_ERROR_NOT_SUPPORTED;
  else if (g.cooperative &&
           blocks > (uint64_t)blocks_per_sm(f, config_threads(c), c->sharedMemBytes) * SMS)
    r = T4A__CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  else
    r = fake_launch_enqueue(f, s, &g, params);
out:
  UNLOCK();
  return r;
}

/* ---- stream priorities --------------------------------------------------------------------- */

R fake_sym_cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  FAKE_ENTER("cuCtxGetStreamPriorityRange");
  R r = fake_need_ctx(); /* the current context's range */
  if (r)
    return r;
  if (least)
    *least = 0;
  if (greatest)
    *greatest = -5;
  return OK;
}

R fake_sym_cuStreamCreateWithPriority(t4a__CUstream *s, unsigned flags, int priority) {
  FAKE_ENTER("cuStreamCreateWithPriority");
  /* clamped to the range, as CUDA does */
  return fake_stream_create(s, flags, priority < -5 ? -5 : priority > 0 ? 0 : priority);
}

R fake_sym_cuStreamGetPriority(t4a__CUstream s, int *priority) {
  FAKE_ENTER("cuStreamGetPriority");
  if (!priority)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = fake_stream_get(&s, "cuStreamGetPriority");
  if (!r)
    *priority = s->priority;
  UNLOCK();
  return r;
}
