/* backend-core/cachestats.h -- cache_stats' answer, made the same way by
 * every backend from its block cache's figures and the runtime's counters
 * (hits and misses); a backend without a pinned-block cache (the host's:
 * its host buffers are plain pages) passes 0 for the pinned figures. */
#ifndef T4A_CORE_CACHESTATS_H
#define T4A_CORE_CACHESTATS_H

#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

static inline t4a_cache_stats t4a__cache_stats_of(const t4a_runtime_counters *c, uint64_t entries,
                                                  uint64_t bytes, uint64_t limit_bytes,
                                                  uint64_t pinned_entries, uint64_t pinned_bytes) {
  t4a_cache_stats s = {.struct_size = sizeof s,
                       .entries = entries,
                       .bytes = bytes,
                       .hits = c->cache_hits,
                       .misses = c->cache_misses,
                       .limit_bytes = limit_bytes,
                       .pinned_entries = pinned_entries,
                       .pinned_bytes = pinned_bytes};
  return s;
}

#endif
