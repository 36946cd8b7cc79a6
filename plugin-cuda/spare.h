/* plugin-cuda/spare.h -- the parts of destroyed runtimes kept for the next
 * runtime_create on the same device (spare.c): what makes creating a runtime
 * expensive (a primary-context reference, the stream, the pool, the pinned
 * staging and its events) is reused instead of made again.
 *
 * Bounded: at most T4A__SPARES_PER_DEVICE spares per device and
 * T4A__SPARE_STAGING_BYTES of pinned staging in all. A spare holds no device
 * memory (its pool is trimmed) and nothing of a runtime's data. Spares are
 * released when the plugin is unloaded or the process exits (before the
 * driver's own teardown). */
#ifndef T4A_PLUGIN_CUDA_SPARE_H
#define T4A_PLUGIN_CUDA_SPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"
#include "plugin-cuda/staging.h"

#define T4A__SPARES_PER_DEVICE 4u
#define T4A__SPARE_STAGING_BYTES (512ull << 20)

typedef struct t4a__spare {
  int32_t ordinal;
  t4a__CUdevice dev;
  t4a__CUcontext ctx; /* one reference to the device's primary context */
  t4a__CUstream stream;
  t4a__CUmemoryPool pool; /* empty and trimmed */
  uint64_t pool_access;   /* devices granted access to the pool */
  t4a__staging stage;     /* idle: no chunk busy */
  int32_t priority;       /* the stream's priority (v1.1) */
} t4a__spare;

/* Takes a spare of device `ordinal` whose stream has `priority`, preferring
 * one whose staging has `staging_bytes`; false when there is none. */
bool t4a__spare_take(int32_t ordinal, uint64_t staging_bytes, int32_t priority, t4a__spare *out);

/* Keeps s for a later runtime_create; false (nothing kept) when the bounds
 * are reached: the caller releases the parts then. */
bool t4a__spare_give(const t4a__spare *s);

#endif
