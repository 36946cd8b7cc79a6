/* backend-core/geometry.c -- the launch checks of geometry.h, shared by the
 * CUDA plugin (before the driver sees a launch) and the host backend
 * (before a launch is queued), so that a bad launch reads the same on
 * either. */
#include "config.h"

#include "backend-core/geometry.h"
#include "backend-core/structs.h"
#include "common/error.h"

int t4a__check_launch(const t4a__limits *l, const uint32_t grid[3], const uint32_t block[3],
                      uint32_t shared, const char *what) {
  const t4a_device_info *d = l->dev;
  static const char axis[3] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; i++) {
    if (grid[i] == 0 || grid[i] > (uint32_t)d->max_grid_dim[i])
      return t4a__fail(T4A_EINVAL, "%s: grid.%c = %u is outside 1..%d; fix the grid of '%s'", what,
                       axis[i], grid[i], (int)d->max_grid_dim[i], l->name);
    if (block[i] == 0 || block[i] > (uint32_t)d->max_block_dim[i])
      return t4a__fail(T4A_EINVAL, "%s: block.%c = %u is outside 1..%d; fix the block of '%s'",
                       what, axis[i], block[i], (int)d->max_block_dim[i], l->name);
  }
  uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
  if (threads > (uint64_t)l->max_threads)
    return t4a__fail(T4A_EINVAL,
                     "%s: a block of %llu threads (%u x %u x %u) exceeds the %d that '%s' "
                     "allows; use smaller blocks",
                     what, (unsigned long long)threads, block[0], block[1], block[2],
                     (int)l->max_threads, l->name);
  if (shared > (uint32_t)l->max_dynamic)
    return t4a__fail(T4A_EINVAL,
                     "%s: %u bytes of dynamic shared memory exceed the %d allowed for '%s'; "
                     "ask for less or raise the limit with function_set_max_dynamic_shared",
                     what, shared, (int)l->max_dynamic, l->name);
  return T4A_OK;
}

int t4a__check_occupancy_block(const t4a__limits *l, uint32_t threads, uint32_t shared,
                               const char *what) {
  if (threads == 0 || threads > (uint32_t)l->max_threads)
    return t4a__fail(T4A_EINVAL,
                     "%s: a block of %u threads is outside 1..%d for '%s'; ask for "
                     "a block '%s' can run",
                     what, threads, (int)l->max_threads, l->name, l->name);
  if (shared > (uint32_t)l->max_dynamic)
    return t4a__fail(T4A_EINVAL,
                     "%s: %u bytes of dynamic shared memory exceed the %d allowed for '%s'; "
                     "ask for less or raise the limit with function_set_max_dynamic_shared",
                     what, shared, (int)l->max_dynamic, l->name);
  return T4A_OK;
}

#define LAUNCH_FLAGS                                                                               \
  (T4A_LAUNCH_COOPERATIVE | T4A_LAUNCH_CLUSTER_NON_PORTABLE | T4A_LAUNCH_PRIORITY)

int t4a__check_launch_ex_config(const t4a_launch_ex_config *c, const char *what) {
  int rc = t4a__check_struct(c, T4A_LAUNCH_EX_CONFIG_V1_1_SIZE, "t4a_launch_ex_config");
  if (rc)
    return rc;
  if ((c->flags & ~LAUNCH_FLAGS) || c->reserved)
    return t4a__fail(T4A_EINVAL,
                     "%s: unknown flags 0x%x or reserved 0x%x; use T4A_LAUNCH_* flags and clear "
                     "reserved",
                     what, c->flags & ~LAUNCH_FLAGS, c->reserved);
  return T4A_OK;
}
