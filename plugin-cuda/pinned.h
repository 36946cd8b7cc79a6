/* plugin-cuda/pinned.h -- pinned host buffers of a runtime and its small
 * cache of released pinned blocks (pinned.c). */
#ifndef T4A_PLUGIN_CUDA_PINNED_H
#define T4A_PLUGIN_CUDA_PINNED_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"
#include "backend-core/handle.h"

typedef struct t4a__runtime t4a__runtime;

typedef struct t4a__host {
  t4a__hslot h;
  uint32_t flags;  /* host_alloc's T4A_HOST_*, or host_register's T4A_HOST_REGISTER_* */
  bool registered; /* the consumer's memory, pinned by host_register */
  uint64_t size, cap;
  void *ptr;
  uint64_t last_use; /* epoch of the last copy using it, 0 = none */
} t4a__host;

/* A pinned block kept for reuse. */
typedef struct t4a__pinned_block {
  void *ptr;
  uint64_t cap;
  uint32_t flags;
} t4a__pinned_block;

#define T4A__PINNED_CACHE_ENTRIES 16u
#define T4A__PINNED_CACHE_BYTES (256ull << 20)

typedef struct t4a__pinned {
  t4a__htable hosts; /* of t4a__host */
  t4a__pinned_block cache[T4A__PINNED_CACHE_ENTRIES];
  uint32_t cache_count;
  uint64_t cache_bytes;
} t4a__pinned;

#include "backend-core/kinds.h" /* t4a__host_kind */

void t4a__pinned_init(t4a__runtime *rt);

/* Destroy. Frees the cached blocks; idle also frees the live host buffers
 * and the bookkeeping, after a fault those are kept (quarantine). */
void t4a__pinned_fini(t4a__runtime *rt, bool idle);

/* Validates a host buffer handle of rt. */
int t4a__host_get(t4a__runtime *rt, t4a_host_buffer h, const char *what, t4a__host **out);

/* T4A_EINVAL when the device may not write hb (registered read-only). */
int t4a__host_check_writable(const t4a__host *hb, const char *what);

#endif
