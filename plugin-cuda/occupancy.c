/* plugin-cuda/occupancy.c -- what the driver's occupancy calculator says of a
 * kernel (v1.1): blocks per multiprocessor, a suggested block size, the
 * largest cluster and how many clusters fit at once.
 *
 * launch_ex checks clusters and cooperative grids against these answers
 * before the driver sees the launch; each function keeps the answer for the
 * last configuration asked (t4a__occupancy in module.h), so repeating a
 * launch asks the driver nothing but the launch itself. The queries run
 * with the runtime's context current. */
#include "config.h"

#include <string.h>

#include "backend-core/geometry.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

/* A launch configuration for the occupancy calls: block and shared memory
 * (the grid does not matter to them; 1 block), and optionally clusters. */
static void config_of(t4a__CUlaunchConfig *c, t4a__CUlaunchAttribute *attr, t4a__runtime *rt,
                      const uint32_t block[3], uint32_t shared, const uint32_t cluster[3]) {
  memset(c, 0, sizeof *c);
  c->gridDimX = cluster ? cluster[0] : 1;
  c->gridDimY = cluster ? cluster[1] : 1;
  c->gridDimZ = cluster ? cluster[2] : 1;
  c->blockDimX = block[0];
  c->blockDimY = block[1];
  c->blockDimZ = block[2];
  c->sharedMemBytes = shared;
  c->hStream = rt->stream;
  if (cluster) {
    memset(attr, 0, sizeof *attr);
    attr->id = T4A__CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr->value.clusterDim.x = cluster[0];
    attr->value.clusterDim.y = cluster[1];
    attr->value.clusterDim.z = cluster[2];
    c->attrs = attr;
    c->numAttrs = 1;
  }
}

static int lacks(const char *what, const char *entry) {
  return t4a__fail(T4A_EUNSUPPORTED, "%s: the driver lacks %s; update it", what, entry);
}

/* Runs one occupancy call with rt's context current; its failure named. */
#define OCC_CALL(rt, call, what)                                                                   \
  do {                                                                                             \
    t4a__CUcontext saved_;                                                                         \
    int rc_ = t4a__ctx_enter((rt), &saved_);                                                       \
    if (rc_)                                                                                       \
      return rc_;                                                                                  \
    t4a__CUresult r_ = (call);                                                                     \
    t4a__ctx_leave((rt), saved_);                                                                  \
    if (r_ != T4A__CUDA_SUCCESS)                                                                   \
      return t4a__rt_cu_fail((rt), r_, "%s failed for '%s'", (what), f->name);                     \
  } while (0)

int t4a__occ_blocks(t4a__runtime *rt, t4a__function *f, uint32_t threads, uint32_t shared,
                    int32_t *out) {
  t4a__occupancy *o = &f->occ;
  if (o->threads == threads && o->shared == shared && threads) {
    *out = o->blocks;
    return T4A_OK;
  }
  if (!t4a__be.cu.cuOccupancyMaxActiveBlocksPerMultiprocessor)
    return lacks("occupancy", "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  int n = 0;
  OCC_CALL(rt,
           t4a__be.cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f->fn, (int)threads, shared),
           "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  o->threads = threads;
  o->shared = shared;
  o->blocks = n;
  *out = n;
  return T4A_OK;
}

int t4a__occ_cluster_max(t4a__runtime *rt, t4a__function *f, const uint32_t block[3],
                         uint32_t shared, bool nonportable, int32_t *out) {
  t4a__occupancy *o = &f->occ;
  uint32_t threads = block[0] * block[1] * block[2]; /* checked against f's limit */
  if (o->cl_threads == threads && o->cl_shared == shared && o->cl_nonportable == nonportable &&
      threads) {
    *out = o->cl_max;
    return T4A_OK;
  }
  const t4a__cuda_api *cu = &t4a__be.cu;
  if (!cu->cuOccupancyMaxPotentialClusterSize)
    return lacks("launch_ex", "cuOccupancyMaxPotentialClusterSize");
  if (nonportable && !o->nonportable_allowed) {
    OCC_CALL(
        rt,
        cu->cuFuncSetAttribute(f->fn, T4A__CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
        "allowing non-portable cluster sizes");
    o->nonportable_allowed = true;
  }
  t4a__CUlaunchConfig c;
  config_of(&c, NULL, rt, block, shared, NULL);
  int n = 0;
  OCC_CALL(rt, cu->cuOccupancyMaxPotentialClusterSize(&n, f->fn, &c),
           "cuOccupancyMaxPotentialClusterSize");
  if (!nonportable && n > 8) /* without the flag, the portable limit */
    n = 8;
  o->cl_threads = threads;
  o->cl_shared = shared;
  o->cl_nonportable = nonportable;
  o->cl_max = n;
  *out = n;
  return T4A_OK;
}

int t4a__occ_clusters(t4a__runtime *rt, t4a__function *f, const uint32_t block[3], uint32_t shared,
                      const uint32_t cluster[3], int32_t *out) {
  t4a__occupancy *o = &f->occ;
  uint32_t threads = block[0] * block[1] * block[2];
  if (o->ac_threads == threads && o->ac_shared == shared && threads &&
      memcmp(o->ac_cluster, cluster, sizeof o->ac_cluster) == 0) {
    *out = o->ac_clusters;
    return T4A_OK;
  }
  if (!t4a__be.cu.cuOccupancyMaxActiveClusters)
    return lacks("launch_ex", "cuOccupancyMaxActiveClusters");
  t4a__CUlaunchConfig c;
  t4a__CUlaunchAttribute attr;
  config_of(&c, &attr, rt, block, shared, cluster);
  int n = 0;
  OCC_CALL(rt, t4a__be.cu.cuOccupancyMaxActiveClusters(&n, f->fn, &c),
           "cuOccupancyMaxActiveClusters");
  o->ac_threads = threads;
  o->ac_shared = shared;
  memcpy(o->ac_cluster, cluster, sizeof o->ac_cluster);
  o->ac_clusters = n;
  *out = n;
  return T4A_OK;
}

/* ---- slots --------------------------------------------------------------------- */

/* The block an occupancy question names (backend-core/geometry.c). */
static int check_block(const t4a__function *f, const char *what, uint32_t threads,
                       uint32_t shared) {
  t4a__limits l = {NULL, f->name, f->max_threads, f->max_dynamic};
  return t4a__check_occupancy_block(&l, threads, shared, what);
}

int t4a__slot_occupancy_max_active_blocks(t4a_runtime h, t4a_function fh, uint32_t block_threads,
                                          uint32_t shared_bytes, uint32_t *blocks_per_sm) {
  const char *what = "occupancy_max_active_blocks";
  if (!blocks_per_sm)
    return t4a__fail(T4A_EINVAL, "%s: blocks_per_sm is NULL; pass a pointer", what);
  t4a__runtime *rt;
  t4a__function *f;
  int32_t n = 0;
  int rc = t4a__rt_lock(h, what, &rt);
  if (rc)
    return rc;
  if (!(rc = t4a__function_get(rt, fh, what, &f)) &&
      !(rc = check_block(f, what, block_threads, shared_bytes)) &&
      !(rc = t4a__occ_blocks(rt, f, block_threads, shared_bytes, &n)))
    *blocks_per_sm = n > 0 ? (uint32_t)n : 0;
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_occupancy_suggest_block_size(t4a_runtime h, t4a_function fh, uint32_t shared_bytes,
                                           uint32_t block_limit, uint32_t *block_threads,
                                           uint32_t *min_grid) {
  const char *what = "occupancy_suggest_block_size";
  if (!block_threads || !min_grid)
    return t4a__fail(T4A_EINVAL, "%s: block_threads and min_grid must not be NULL; pass pointers",
                     what);
  t4a__runtime *rt;
  t4a__function *f;
  int rc = t4a__rt_lock(h, what, &rt);
  if (rc)
    return rc;
  if ((rc = t4a__function_get(rt, fh, what, &f)) ||
      (rc = check_block(f, what, block_limit ? block_limit : 1, shared_bytes)))
    goto out;
  if (!t4a__be.cu.cuOccupancyMaxPotentialBlockSize) {
    rc = lacks(what, "cuOccupancyMaxPotentialBlockSize");
    goto out;
  }
  int grid = 0, block = 0;
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUresult r = t4a__be.cu.cuOccupancyMaxPotentialBlockSize(
      &grid, &block, f->fn, NULL, shared_bytes, block_limit ? (int)block_limit : f->max_threads);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "%s: cuOccupancyMaxPotentialBlockSize failed for '%s'", what,
                         f->name);
    goto out;
  }
  *block_threads = block > 0 ? (uint32_t)block : 0;
  *min_grid = grid > 0 ? (uint32_t)grid : 0;
out:
  t4a__rt_unlock(rt);
  return rc;
}
