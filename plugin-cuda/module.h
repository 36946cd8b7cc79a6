/* plugin-cuda/module.h -- a runtime's loaded modules and the functions looked
 * up in them (module.c); launches (launch.c, launch_ex.c) and occupancy
 * (occupancy.c). */
#ifndef T4A_PLUGIN_CUDA_MODULE_H
#define T4A_PLUGIN_CUDA_MODULE_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"
#include "backend-core/handle.h"

typedef struct t4a__runtime t4a__runtime;

typedef struct t4a__module {
  t4a__hslot h;
  t4a__CUmodule mod;
  char name[64];
} t4a__module;

/* Occupancy answers for the last configuration asked (occupancy.c), so a
 * repeated launch_ex asks the driver nothing but the launch. A key of 0
 * threads is empty. */
typedef struct t4a__occupancy {
  uint32_t threads, shared; /* blocks per multiprocessor */
  int32_t blocks;
  uint32_t cl_threads, cl_shared; /* largest cluster (portable or not) */
  bool cl_nonportable;
  int32_t cl_max;
  uint32_t ac_threads, ac_shared, ac_cluster[3]; /* co-resident clusters */
  int32_t ac_clusters;
  bool nonportable_allowed; /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED set on the function */
} t4a__occupancy;

typedef struct t4a__function {
  t4a__hslot h;
  t4a__CUfunction fn;
  uint32_t module;     /* index of its module */
  int32_t max_threads; /* per block, for this kernel */
  int32_t static_shared;
  int32_t max_dynamic; /* dynamic shared memory allowed now */
  char name[64];
  t4a__occupancy occ; /* v1.1 */
} t4a__function;

typedef struct t4a__modules {
  t4a__htable mods;  /* of t4a__module */
  t4a__htable funcs; /* of t4a__function */
} t4a__modules;

void t4a__modules_init(t4a__runtime *rt);

/* Destroy: idle unloads every module and frees the bookkeeping; after a
 * fault modules are kept (kernels may still run). */
void t4a__modules_fini(t4a__runtime *rt, bool idle);

/* Validates a function handle of rt. */
int t4a__function_get(t4a__runtime *rt, t4a_function h, const char *what, t4a__function **out);

/* launch.c: launch geometry against the device's and f's limits
 * (T4A_EINVAL naming the bad value; `what` names the call). */
int t4a__check_geometry(const t4a__runtime *rt, const t4a__function *f, const uint32_t grid[3],
                        const uint32_t block[3], uint32_t shared, const char *what);

/* occupancy.c: the driver's occupancy answers for f, cached per
 * configuration (t4a__occupancy); T4A_EUNSUPPORTED without the entry
 * point. blocks: per multiprocessor for `threads` threads per block and
 * `shared` dynamic bytes. cluster_max: the largest cluster of such blocks
 * (non-portable sizes allowed on f when `nonportable`). clusters: how many
 * clusters of `cluster` such blocks can be co-resident. */
int t4a__occ_blocks(t4a__runtime *rt, t4a__function *f, uint32_t threads, uint32_t shared,
                    int32_t *out);
int t4a__occ_cluster_max(t4a__runtime *rt, t4a__function *f, const uint32_t block[3],
                         uint32_t shared, bool nonportable, int32_t *out);
int t4a__occ_clusters(t4a__runtime *rt, t4a__function *f, const uint32_t block[3], uint32_t shared,
                      const uint32_t cluster[3], int32_t *out);

#endif
