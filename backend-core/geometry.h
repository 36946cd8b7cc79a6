/* backend-core/geometry.h -- the checks of a launch written once for every
 * backend (geometry.c): the grid and block against the device's limits and
 * the kernel's, the dynamic shared memory against the kernel's current
 * limit, launch_ex's flags, and the block the occupancy slots are asked
 * about. Each returns T4A_EINVAL naming the bad value, `what` (the call)
 * and `name` (the kernel). */
#ifndef T4A_CORE_GEOMETRY_H
#define T4A_CORE_GEOMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

/* What a launch is checked against: the device's limits and the kernel's. */
typedef struct t4a__limits {
  const t4a_device_info *dev;
  const char *name;    /* the kernel's */
  int32_t max_threads; /* per block, for this kernel */
  int32_t max_dynamic; /* dynamic shared memory allowed now */
} t4a__limits;

int t4a__check_launch(const t4a__limits *l, const uint32_t grid[3], const uint32_t block[3],
                      uint32_t shared, const char *what);

/* An occupancy question's block: 1 .. the kernel's threads, shared memory
 * within its current limit. */
int t4a__check_occupancy_block(const t4a__limits *l, uint32_t threads, uint32_t shared,
                               const char *what);

/* launch_ex's config: its struct_size, flags (T4A_LAUNCH_*) and reserved. */
int t4a__check_launch_ex_config(const t4a_launch_ex_config *c, const char *what);

/* Whether cfg asks for clusters (any cluster dimension set). */
static inline bool t4a__has_cluster(const t4a_launch_ex_config *c) {
  return c->cluster[0] || c->cluster[1] || c->cluster[2];
}

#endif
