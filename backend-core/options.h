/* backend-core/options.h -- runtime_create's options, checked and with their
 * defaults filled in (options.c), the same for every backend. */
#ifndef T4A_CORE_OPTIONS_H
#define T4A_CORE_OPTIONS_H

#include "t4a/gpu_backend_v1.h"

#define T4A__DEFAULT_STAGING (64ull << 20)
#define T4A__MIN_STAGING (64ull << 10)
#define T4A__MAX_STAGING (16ull << 30)
#define T4A__DEFAULT_CACHE_LIMIT (1ull << 30)

/* *o = in (NULL: all defaults) as the header's t4a_runtime_options says:
 * T4A_EINVAL naming the field for an unknown flag, a reserved field not 0,
 * staging outside [64 KiB, 16 GiB] or more than 64 copy threads. The
 * stream priority is copied unchecked (the device's range decides); the
 * budget's fields (v1.2) as given (0: no limit, NULL: no callback). */
int t4a__options_normalise(const t4a_runtime_options *in, t4a_runtime_options *o);

#endif
