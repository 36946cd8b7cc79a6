/* tests/fakecuda/fake_launch_ex.c -- the fake driver's extended launches
 * (cuLaunchKernelEx with cluster, cooperative and priority attributes),
 * its occupancy calculator, stream priorities, and the kernels that need
 * them, run on the CPU like fake_runtime.c's.
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
 * Kernels (x dimension only, as the fake's geometry is):
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

#define OK T4A__CUDA_SUCCESS
#define SMS 4
#define LOCK() pthread_mutex_lock(&fake_G)
#define UNLOCK() pthread_mutex_unlock(&fake_G)

#define FAKE_DECLARE(name, sym, req, params) EXPORT R fake_sym_##name params __asm__(sym);
T4A__CUDA_FUNCS(FAKE_DECLARE)
#undef FAKE_DECLARE

/* ---- kernels ---------------------------------------------------------------------- */

static void k_mix(const unsigned char *a, geometry g) {
  uint32_t *y, k;
  const uint32_t *x;
  uint64_t n;
  memcpy(&y, a, 8);
  memcpy(&x, a + 8, 8);
  memcpy(&k, a + 16, 4);
  memcpy(&n, a + 24, 8);
  if (!kernel_may_touch(y, n * 4, g.device) || !kernel_may_touch(x, n * 4, g.device))
    return;
  for (uint64_t i = 0; i < n; i++)
    y[i] = (y[i] ^ x[i]) * 2654435761u + k;
}

static void k_cluster_rotate(const unsigned char *a, geometry g) {
  const uint32_t *in;
  uint32_t *out;
  memcpy(&in, a, 8);
  memcpy(&out, a + 8, 8);
  uint64_t n = (uint64_t)g.grid * g.block;
  if (!kernel_may_touch(in, n * 4, g.device) || !kernel_may_touch(out, n * 4, g.device))
    return;
  unsigned size = g.cluster ? g.cluster : 1; /* without clusters: each block its own */
  for (uint64_t b = 0; b < g.grid; b++) {
    unsigned rank = (unsigned)(b % size), next = (rank + 1) % size;
    uint64_t peer = b - rank + next;
    for (uint64_t t = 0; t < g.block; t++)
      out[b * g.block + t] = (in[peer * g.block + t] * 2u + next) ^ (rank << 24);
  }
}

static void k_grid_sum(const unsigned char *a, geometry g) {
  const uint32_t *in;
  uint32_t *scratch, *out;
  uint64_t n;
  memcpy(&in, a, 8);
  memcpy(&scratch, a + 8, 8);
  memcpy(&out, a + 16, 8);
  memcpy(&n, a + 24, 8);
  if (!kernel_may_touch(in, n * 4, g.device) ||
      !kernel_may_touch(scratch, (g.grid + 1) * 4ull, g.device) ||
      !kernel_may_touch(out, g.grid * 4ull, g.device))
    return;
  uint32_t *count = scratch, *partial = scratch + 1;
  uint64_t chunk = (n + g.grid - 1) / g.grid;
  uint32_t total = 0;
  for (uint64_t b = 0; b < g.grid; b++) {
    uint32_t s = 0;
    for (uint64_t i = b * chunk; i < (b + 1) * chunk && i < n; i++)
      s += in[i];
    partial[b] = s;
    total += s;
  }
  *count += g.grid;
  for (uint64_t b = 0; b < g.grid; b++)
    out[b] = g.cooperative ? total : 0xdeadbeefu;
}

static const kdesc ext_kernels[] = {
    {"t4a_mix_u32", k_mix, 4, {0, 8, 16, 24}, {8, 8, 4, 8}},
    {"t4a_cluster_rotate", k_cluster_rotate, 2, {0, 8}, {8, 8}},
    {"t4a_grid_sum", k_grid_sum, 4, {0, 8, 16, 24}, {8, 8, 8, 8}},
};

void fake_ext_kernels_scan(t4a__CUmodule m, const char *text, size_t size, bool ptx) {
  for (size_t k = 0; k < sizeof ext_kernels / sizeof ext_kernels[0]; k++) {
    size_t n = strlen(ext_kernels[k].name);
    bool found = false;
    for (const char *p = text; !found && p + n <= text + size;) {
      const char *hit = memmem(p, (size_t)(text + size - p), ext_kernels[k].name, n);
      if (!hit)
        break;
      int after = hit + n < text + size ? hit[n] : 0;
      /* as fake_runtime.c: PTX ".entry NAME(", binaries the NUL-terminated name */
      found = ptx ? hit >= text + 7 && strncmp(hit - 7, ".entry ", 7) == 0 &&
                        (after == '(' || after == ' ' || after == '\n')
                  : after == '\0' && (hit == text || hit[-1] == '\0');
      p = hit + n;
    }
    if (found && m->nfuncs < 8)
      m->funcs[m->nfuncs++] = (struct CUfunc_st){&ext_kernels[k], m, 48 * 1024, false};
  }
}

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

static int blocks_per_sm(t4a__CUfunction f, int threads, size_t shared) {
  if (threads <= 0 || threads > 1024 || (long long)shared > f->max_dynamic_shared)
    return 0;
  int warps = (threads + 31) / 32, n = 2048 / (warps * 32);
  if (n > 32)
    n = 32;
  int by_shared = (int)((228u << 10) / (shared + 1024));
  return n < by_shared ? n : by_shared;
}

static int cluster_limit(t4a__CUfunction f) {
  return getenv("FAKE_CUDA_NO_CLUSTERS") ? 1 : f->nonportable ? 16 : 8;
}

R fake_sym_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, t4a__CUfunction f, int block,
                                                       size_t shared) {
  FAKE_ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!n || !f || block <= 0)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  *n = blocks_per_sm(f, block, shared);
  return OK;
}

R fake_sym_cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, t4a__CUfunction f,
                                            t4a__CUoccupancyB2DSize cb, size_t shared, int limit) {
  FAKE_ENTER("cuOccupancyMaxPotentialBlockSize");
  if (!min_grid || !block || !f || limit < 0)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  int top = limit && limit < 1024 ? limit : 1024, best = 0, best_threads = -1;
  for (int b = 32; b <= top; b += 32) {
    int threads = blocks_per_sm(f, b, cb ? cb(b) : shared) * b;
    if (threads >= best_threads) {
      best_threads = threads;
      best = b;
    }
  }
  if (top < 32)
    best = top;
  *block = best;
  *min_grid = blocks_per_sm(f, best, cb ? cb(best) : shared) * SMS;
  return OK;
}

/* The block, cluster and cooperative flag of a config; an error for an
 * attribute the fake does not know or a malformed cluster. */
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
  if (!size || !f || !c)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  int per = blocks_per_sm(f, (int)(c->blockDimX * c->blockDimY * c->blockDimZ), c->sharedMemBytes);
  int limit = cluster_limit(f), fit = per * SMS;
  *size = fit < limit ? fit : limit;
  return OK;
}

R fake_sym_cuOccupancyMaxActiveClusters(int *n, t4a__CUfunction f, const t4a__CUlaunchConfig *c) {
  FAKE_ENTER("cuOccupancyMaxActiveClusters");
  unsigned cluster[3];
  bool coop;
  R r;
  if (!n || !f || !c)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if ((r = parse(c, cluster, &coop)))
    return r;
  uint64_t size = (uint64_t)cluster[0] * cluster[1] * cluster[2];
  if (!size || size > (uint64_t)cluster_limit(f))
    return T4A__CUDA_ERROR_INVALID_CLUSTER_SIZE;
  int per = blocks_per_sm(f, (int)(c->blockDimX * c->blockDimY * c->blockDimZ), c->sharedMemBytes);
  *n = (int)((uint64_t)per * SMS / size);
  return OK;
}

/* ---- cuLaunchKernelEx ------------------------------------------------------------------- */

R fake_sym_cuLaunchKernelEx(const t4a__CUlaunchConfig *c, t4a__CUfunction f, void **params,
                            void **extra) {
  FAKE_ENTER("cuLaunchKernelEx");
  if (!c || !f || extra || !c->gridDimX || !c->gridDimY || !c->gridDimZ || !c->blockDimX ||
      !c->blockDimY || !c->blockDimZ ||
      (unsigned long)c->blockDimX * c->blockDimY * c->blockDimZ > 1024 || c->gridDimY > 65535 ||
      c->gridDimZ > 65535 || (int)c->sharedMemBytes > f->max_dynamic_shared ||
      (f->k->nargs && !params))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  unsigned cluster[3];
  bool coop;
  R r = parse(c, cluster, &coop);
  if (r)
    return r;
  uint64_t size = (uint64_t)cluster[0] * cluster[1] * cluster[2];
  if (size && (c->gridDimX % cluster[0] || c->gridDimY % cluster[1] || c->gridDimZ % cluster[2]))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (size > (uint64_t)cluster_limit(f))
    return T4A__CUDA_ERROR_INVALID_CLUSTER_SIZE;
  if (coop && getenv("FAKE_CUDA_NO_COOPERATIVE"))
    return T4A__CUDA_ERROR_NOT_SUPPORTED;
  int per = blocks_per_sm(f, (int)(c->blockDimX * c->blockDimY * c->blockDimZ), c->sharedMemBytes);
  if (coop && (uint64_t)c->gridDimX * c->gridDimY * c->gridDimZ > (uint64_t)per * SMS)
    return T4A__CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  t4a__CUstream s = c->hStream;
  op o = {
      .kind = OP_KERNEL,
      .kernel = f->k->fn,
      .geom = {c->gridDimX, c->blockDimX, c->sharedMemBytes, s ? s->device : 0, cluster[0], coop}};
  for (unsigned i = 0; i < f->k->nargs; i++)
    memcpy(o.args + f->k->offsets[i], params[i], f->k->sizes[i]);
  return fake_enqueue(s, &o);
}

/* ---- stream priorities --------------------------------------------------------------------- */

R fake_sym_cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  FAKE_ENTER("cuCtxGetStreamPriorityRange");
  if (least)
    *least = 0;
  if (greatest)
    *greatest = -5;
  return OK;
}

R fake_sym_cuStreamCreateWithPriority(t4a__CUstream *s, unsigned flags, int priority) {
  FAKE_ENTER("cuStreamCreateWithPriority");
  R r = fake_sym_cuStreamCreate(s, flags);
  if (r)
    return r;
  (*s)->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority; /* clamped, as CUDA does */
  return OK;
}

R fake_sym_cuStreamGetPriority(t4a__CUstream s, int *priority) {
  FAKE_ENTER("cuStreamGetPriority");
  if (!s || !priority)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  *priority = s->priority;
  return OK;
}
