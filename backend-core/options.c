/* backend-core/options.c -- runtime_create's options (see options.h), for both
 * plugins' lifecycle.c. */
#include "config.h"

#include <string.h>

#include "common/error.h"
#include "backend-core/alog.h"
#include "backend-core/copypool.h"
#include "backend-core/options.h"
#include "backend-core/structs.h"

#define KNOWN_FLAGS (T4A_RUNTIME_TIMING | T4A_RUNTIME_ALLOC_LOG)

int t4a__options_normalise(const t4a_runtime_options *in, t4a_runtime_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  if (in) {
    int rc = t4a__check_struct(in, T4A_RUNTIME_OPTIONS_V1_0_SIZE, "t4a_runtime_options");
    if (rc)
      return rc;
    if ((in->flags & ~KNOWN_FLAGS) || in->reserved)
      return t4a__fail(T4A_EINVAL,
                       "t4a_runtime_options: unknown flags 0x%x or reserved 0x%x; use "
                       "T4A_RUNTIME_TIMING, T4A_RUNTIME_ALLOC_LOG or 0, and clear reserved",
                       in->flags & ~KNOWN_FLAGS, in->reserved);
    o->flags = in->flags;
    o->staging_bytes = in->staging_bytes;
    o->pool_release_threshold = in->pool_release_threshold;
    o->cache_limit_bytes = in->cache_limit_bytes;
    o->copy_threads = in->copy_threads;
    if (in->struct_size >= T4A_RUNTIME_OPTIONS_V1_1_SIZE) {
      if (in->reserved_v1_1)
        return t4a__fail(T4A_EINVAL,
                         "t4a_runtime_options.reserved_v1_1 = 0x%x; clear it (it must be 0)",
                         in->reserved_v1_1);
      o->stream_priority = in->stream_priority; /* checked against the device at creation */
    }
    if (in->struct_size >= T4A_RUNTIME_OPTIONS_V1_2_SIZE) {
      o->pool_limit_bytes = in->pool_limit_bytes; /* 0: none (budget.c) */
      o->out_of_memory = in->out_of_memory;
      o->out_of_memory_user = in->out_of_memory_user;
      if (in->reserved_v1_2)
        return t4a__fail(T4A_EINVAL,
                         "t4a_runtime_options.reserved_v1_2 = 0x%x; clear it (it must be 0)",
                         in->reserved_v1_2);
      if (in->alloc_log_events && !(in->flags & T4A_RUNTIME_ALLOC_LOG))
        return t4a__fail(T4A_EINVAL,
                         "t4a_runtime_options.alloc_log_events = %u without "
                         "T4A_RUNTIME_ALLOC_LOG; set the flag or pass 0",
                         in->alloc_log_events);
      if (in->alloc_log_events > T4A__ALOG_MAX)
        return t4a__fail(T4A_EINVAL,
                         "t4a_runtime_options.alloc_log_events = %u; the log keeps at most "
                         "%u events (0 = %u)",
                         in->alloc_log_events, T4A__ALOG_MAX, T4A__ALOG_DEFAULT);
      o->alloc_log_events = in->alloc_log_events;
    }
  }
  if (!o->staging_bytes)
    o->staging_bytes = T4A__DEFAULT_STAGING;
  if (o->staging_bytes < T4A__MIN_STAGING || o->staging_bytes > T4A__MAX_STAGING)
    return t4a__fail(T4A_EINVAL,
                     "t4a_runtime_options.staging_bytes = %llu is outside [64 KiB, 16 GiB]; pick "
                     "a bound in that range (0 = 64 MiB)",
                     (unsigned long long)o->staging_bytes);
  if (!o->pool_release_threshold)
    o->pool_release_threshold = UINT64_MAX;
  if ((o->flags & T4A_RUNTIME_ALLOC_LOG) && !o->alloc_log_events)
    o->alloc_log_events = T4A__ALOG_DEFAULT;
  if (!o->cache_limit_bytes)
    o->cache_limit_bytes = T4A__DEFAULT_CACHE_LIMIT;
  if (!o->copy_threads)
    o->copy_threads = t4a__copy_threads_default();
  if (o->copy_threads > 64)
    return t4a__fail(T4A_EINVAL, "t4a_runtime_options.copy_threads = %u; use 1..64 (0 = default)",
                     o->copy_threads);
  return T4A_OK;
}
