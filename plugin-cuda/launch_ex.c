/* plugin-cuda/launch_ex.c -- extended launches (v1.1): thread block
 * clusters, cooperative launches and per-launch priorities through
 * cuLaunchKernelEx, and the co-resident cluster count.
 *
 * Everything the driver would refuse is refused first, naming the value:
 * launch's geometry checks, cluster dimensions that do not divide the grid,
 * a cluster larger than the occupancy calculator allows for this kernel,
 * block and shared memory (8 blocks unless non-portable sizes are asked
 * for), a cooperative grid with more blocks than can be co-resident, a
 * priority outside the device's range. The occupancy answers are cached
 * per function (occupancy.c), so a repeated launch is the launch alone. */
#include "config.h"

#include <string.h>

#include "backend-core/geometry.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

static const char axis[3] = {'x', 'y', 'z'};

/* The struct and its flags (backend-core/geometry.c). */
static int check_config(const t4a_launch_ex_config *c, const char *what) {
  return t4a__check_launch_ex_config(c, what);
}

static bool has_cluster(const t4a_launch_ex_config *c) { return t4a__has_cluster(c); }

/* Cluster dimensions against the grid, the device and the kernel. */
static int check_cluster(t4a__runtime *rt, t4a__function *f, const t4a_launch_ex_config *c,
                         const char *what) {
  const t4a__device *dv = &t4a__be.devices[rt->ordinal];
  if (!dv->clusters || !t4a__be.cu.cuLaunchKernelEx)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "%s: device %d (compute capability %d.%d) or its driver has no thread block "
                     "clusters (they need 9.0 and cuLaunchKernelEx); launch without clusters",
                     what, (int)rt->ordinal, (int)dv->info.cc_major, (int)dv->info.cc_minor);
  for (int i = 0; i < 3; i++) {
    if (c->cluster[i] == 0)
      return t4a__fail(T4A_EINVAL,
                       "%s: cluster.%c = 0 while another cluster dimension is set; give every "
                       "dimension (1 for none), or all 0 for no clusters",
                       what, axis[i]);
    if (c->grid[i] % c->cluster[i])
      return t4a__fail(T4A_EINVAL,
                       "%s: cluster.%c = %u does not divide grid.%c = %u; make the grid a "
                       "multiple of the cluster",
                       what, axis[i], c->cluster[i], axis[i], c->grid[i]);
  }
  uint64_t size = (uint64_t)c->cluster[0] * c->cluster[1] * c->cluster[2];
  bool nonportable = (c->flags & T4A_LAUNCH_CLUSTER_NON_PORTABLE) != 0;
  int32_t max = 0;
  int rc = t4a__occ_cluster_max(rt, f, c->block, c->shared_bytes, nonportable, &max);
  if (rc)
    return rc;
  if (size > (uint64_t)(max > 0 ? max : 0))
    return t4a__fail(T4A_EINVAL,
                     "%s: a cluster of %llu blocks (%u x %u x %u) exceeds the %d the occupancy "
                     "calculator allows for '%s' with %u x %u x %u threads and %u shared "
                     "bytes%s; use smaller clusters%s",
                     what, (unsigned long long)size, c->cluster[0], c->cluster[1], c->cluster[2],
                     (int)max, f->name, c->block[0], c->block[1], c->block[2], c->shared_bytes,
                     nonportable ? "" : " (portable limit)",
                     nonportable ? "" : " or set T4A_LAUNCH_CLUSTER_NON_PORTABLE");
  return T4A_OK;
}

/* A cooperative grid: every block co-resident. */
static int check_cooperative(t4a__runtime *rt, t4a__function *f, const t4a_launch_ex_config *c,
                             const char *what) {
  const t4a__device *dv = &t4a__be.devices[rt->ordinal];
  if (!dv->cooperative || !t4a__be.cu.cuLaunchKernelEx)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "%s: device %d or its driver has no cooperative launches (cuLaunchKernelEx "
                     "and the COOPERATIVE_LAUNCH attribute); launch without T4A_LAUNCH_COOPERATIVE",
                     what, (int)rt->ordinal);
  uint64_t blocks = (uint64_t)c->grid[0] * c->grid[1] * c->grid[2], max;
  int32_t n = 0;
  int rc;
  if (has_cluster(c)) {
    if ((rc = t4a__occ_clusters(rt, f, c->block, c->shared_bytes, c->cluster, &n)))
      return rc;
    max = (uint64_t)(n > 0 ? n : 0) * c->cluster[0] * c->cluster[1] * c->cluster[2];
  } else {
    if ((rc = t4a__occ_blocks(rt, f, c->block[0] * c->block[1] * c->block[2], c->shared_bytes, &n)))
      return rc;
    max = (uint64_t)(n > 0 ? n : 0) * (uint64_t)dv->info.multiprocessors;
  }
  if (blocks > max)
    return t4a__fail(T4A_EINVAL,
                     "%s: a cooperative grid of %llu blocks (%u x %u x %u) exceeds the %llu that "
                     "can be co-resident for '%s' on device %d; launch at most %llu blocks",
                     what, (unsigned long long)blocks, c->grid[0], c->grid[1], c->grid[2],
                     (unsigned long long)max, f->name, (int)rt->ordinal, (unsigned long long)max);
  return T4A_OK;
}

static int check_priority(const t4a__runtime *rt, int32_t p, const char *what) {
  if (!t4a__be.cu.cuLaunchKernelEx || rt->priority_least == rt->priority_greatest)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "%s: device %d or its driver has no launch priorities; launch without "
                     "T4A_LAUNCH_PRIORITY",
                     what, (int)rt->ordinal);
  if (p > rt->priority_least || p < rt->priority_greatest)
    return t4a__fail(T4A_ERANGE,
                     "%s: priority %d is outside the device's range %d (highest) .. %d (lowest); "
                     "pick one in it",
                     what, (int)p, (int)rt->priority_greatest, (int)rt->priority_least);
  return T4A_OK;
}

/* Everything checked; the attributes in attrs[3], their count returned. */
static int check_all(t4a__runtime *rt, t4a__function *f, const t4a_launch_ex_config *c,
                     const char *what, t4a__CUlaunchAttribute attrs[3], unsigned *n) {
  int rc;
  *n = 0;
  if ((rc = t4a__check_geometry(rt, f, c->grid, c->block, c->shared_bytes, what)))
    return rc;
  if (has_cluster(c)) {
    if ((rc = check_cluster(rt, f, c, what)))
      return rc;
    memset(&attrs[*n], 0, sizeof attrs[*n]);
    attrs[*n].id = T4A__CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[*n].value.clusterDim.x = c->cluster[0];
    attrs[*n].value.clusterDim.y = c->cluster[1];
    attrs[*n].value.clusterDim.z = c->cluster[2];
    ++*n;
  } else if (c->flags & T4A_LAUNCH_CLUSTER_NON_PORTABLE) {
    return t4a__fail(T4A_EINVAL,
                     "%s: T4A_LAUNCH_CLUSTER_NON_PORTABLE without a cluster; set "
                     "cluster or drop the flag",
                     what);
  }
  if (c->flags & T4A_LAUNCH_COOPERATIVE) {
    if ((rc = check_cooperative(rt, f, c, what)))
      return rc;
    memset(&attrs[*n], 0, sizeof attrs[*n]);
    attrs[*n].id = T4A__CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[*n].value.cooperative = 1;
    ++*n;
  }
  if (c->flags & T4A_LAUNCH_PRIORITY) {
    if ((rc = check_priority(rt, c->priority, what)))
      return rc;
    memset(&attrs[*n], 0, sizeof attrs[*n]);
    attrs[*n].id = T4A__CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[*n].value.priority = c->priority;
    ++*n;
  }
  if (!t4a__be.cu.cuLaunchKernelEx)
    return t4a__fail(T4A_EUNSUPPORTED, "%s: the driver lacks cuLaunchKernelEx; update it", what);
  return T4A_OK;
}

int t4a__slot_launch_ex(t4a_runtime h, t4a_function fh, const t4a_launch_ex_config *cfg,
                        void **args) {
  int rc = check_config(cfg, "launch_ex");
  t4a__runtime *rt;
  t4a__function *f;
  if (rc || (rc = t4a__rt_lock(h, "launch_ex", &rt)))
    return rc;
  t4a__CUlaunchAttribute attrs[3];
  unsigned n = 0;
  if ((rc = t4a__function_get(rt, fh, "launch_ex", &f)) ||
      (rc = check_all(rt, f, cfg, "launch_ex", attrs, &n)))
    goto out;
  t4a__CUlaunchConfig c = {.gridDimX = cfg->grid[0],
                           .gridDimY = cfg->grid[1],
                           .gridDimZ = cfg->grid[2],
                           .blockDimX = cfg->block[0],
                           .blockDimY = cfg->block[1],
                           .blockDimZ = cfg->block[2],
                           .sharedMemBytes = cfg->shared_bytes,
                           .hStream = rt->stream,
                           .attrs = n ? attrs : NULL,
                           .numAttrs = n};
  /* as launch: counted ahead of the call, and no context made current
   * unless the driver asks for it */
  uint64_t not_counted = 0;
  t4a__rt_ahead ahead = t4a__rt_launch_ahead(rt, &not_counted);
  t4a__CUresult r;
  T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc, t4a__be.cu.cuLaunchKernelEx(&c, f->fn, args, NULL));
  if (rc == T4A_OK && r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "launch_ex of '%s' failed", f->name);
  if (rc) {
    t4a__rt_count_undo(rt, &ahead);
    goto out;
  }
  if (rt->cap.active)
    t4a__capture_kernel(rt, fh.bits, f->fn, cfg->grid, cfg->block, cfg->shared_bytes);
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_occupancy_max_active_clusters(t4a_runtime h, t4a_function fh,
                                            const t4a_launch_ex_config *cfg, uint32_t *clusters) {
  const char *what = "occupancy_max_active_clusters";
  if (!clusters)
    return t4a__fail(T4A_EINVAL, "%s: clusters is NULL; pass a pointer", what);
  int rc = check_config(cfg, what);
  t4a__runtime *rt;
  t4a__function *f;
  if (rc || (rc = t4a__rt_lock(h, what, &rt)))
    return rc;
  int32_t n = 0;
  if ((rc = t4a__function_get(rt, fh, what, &f)) ||
      (rc = t4a__check_geometry(rt, f, cfg->grid, cfg->block, cfg->shared_bytes, what)))
    goto out;
  if (!has_cluster(cfg)) {
    rc = t4a__fail(T4A_EINVAL, "%s: cfg->cluster is not set; give the cluster shape to ask about",
                   what);
    goto out;
  }
  if (!(rc = check_cluster(rt, f, cfg, what)) &&
      !(rc = t4a__occ_clusters(rt, f, cfg->block, cfg->shared_bytes, cfg->cluster, &n)))
    *clusters = n > 0 ? (uint32_t)n : 0;
out:
  t4a__rt_unlock(rt);
  return rc;
}
