/* backend-core/diskcache.h -- the on-disk artifact cache (diskcache.c says
 * where it lives and what it believes), written once for the plugins. Each
 * plugin's cache is its own: the CUDA plugin's entries lie in the cache
 * directory itself (where they always were), another plugin's in a
 * subdirectory named after it, checked like the directory; so stats, the
 * size limit, eviction and clear of one never touch the other's. */
#ifndef T4A_CORE_DISKCACHE_H
#define T4A_CORE_DISKCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

/* Which plugin's cache: `who` names it in log lines, `sub` is its
 * subdirectory (NULL: the cache directory itself). */
typedef struct t4a__disk {
  const char *who, *sub;
} t4a__disk;

typedef struct t4a__disk_entry {
  t4a_artifact_kind kind;
  char *data; /* malloc'd; a NUL after `size` bytes */
  uint64_t size;
  char *log; /* malloc'd, NUL-terminated */
  uint64_t log_size;
} t4a__disk_entry;

/* Looks the key up; true and a filled entry on a valid hit of kind
 * `expect`. A corrupt, truncated or foreign entry (another kind included)
 * is counted as rejected, removed, and missed. */
bool t4a__disk_lookup(const t4a__disk *dc, const uint8_t key[32], t4a_artifact_kind expect,
                      t4a__disk_entry *out);

/* Stores an entry atomically (write to a temporary file, then rename), then
 * evicts the least recently used entries above the size limit. Failures
 * only cost the cache. */
void t4a__disk_store(const t4a__disk *dc, const uint8_t key[32], t4a_artifact_kind kind,
                     const void *data, uint64_t size, const char *log, uint64_t log_size);

/* Entry count and bytes on disk; the limit. */
void t4a__disk_stats(const t4a__disk *dc, uint64_t *entries, uint64_t *bytes, uint64_t *limit);
uint64_t t4a__disk_hits(void);
uint64_t t4a__disk_rejected(void);

/* Removes every entry. */
void t4a__disk_clear(const t4a__disk *dc);

#endif
