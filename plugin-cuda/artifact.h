/* plugin-cuda/artifact.h -- GPU code: artifacts (compiled or consumer bytes),
 * their memory and disk caches. */
#ifndef T4A_PLUGIN_CUDA_ARTIFACT_H
#define T4A_PLUGIN_CUDA_ARTIFACT_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/backend.h"

/* A reference to an artifact's code, taken for module_load: the bytes stay
 * valid until t4a__artifact_put. */
typedef struct t4a__code {
  uint32_t index;
  t4a_artifact_kind kind;
  const char *data; /* PTX is NUL-terminated */
  uint64_t size;
  int nvrtc_version; /* 1000 * major + 10 * minor when compiled here, else 0 */
  char name[64];
} t4a__code;

int t4a__artifact_get(t4a_artifact a, const char *what, t4a__code *out);
void t4a__artifact_put(const t4a__code *code);

/* Plugin teardown: artifacts the consumer did not release go. */
void t4a__artifacts_unload(void);

/* A new artifact owning data and log (malloc'd; freed by the caller on
 * failure), with one reference for the caller; also put in the memory
 * cache under key when key is not NULL. */
int t4a__artifact_add(t4a_artifact_kind kind, char *data, uint64_t size, char *log,
                      uint64_t log_size, int nvrtc_version, const char *name, const uint8_t *key,
                      t4a_artifact *out);

/* The memory cache's artifact for key, with a new reference; false when
 * there is none. */
bool t4a__artifact_cached(const uint8_t key[32], t4a_artifact *out);

/* The memory cache's entry count and hits; emptying it. */
void t4a__artifact_cache_stats(uint64_t *entries, uint64_t *hits);
void t4a__artifact_cache_clear(void);

/* ---- the disk cache (diskcache.c) ----------------------------------------- */

typedef struct t4a__disk_entry {
  t4a_artifact_kind kind;
  char *data; /* malloc'd; PTX gets a NUL after `size` bytes */
  uint64_t size;
  char *log; /* malloc'd, NUL-terminated */
  uint64_t log_size;
} t4a__disk_entry;

/* Looks the key up; true and a filled entry on a valid hit. A corrupt,
 * truncated or foreign entry is counted as rejected, removed, and missed. */
bool t4a__disk_lookup(const uint8_t key[32], t4a__disk_entry *out);

/* Stores an entry atomically (write to a temporary file, then rename), then
 * evicts the least recently used entries above the size limit. Failures
 * only cost the cache. */
void t4a__disk_store(const uint8_t key[32], t4a_artifact_kind kind, const void *data, uint64_t size,
                     const char *log, uint64_t log_size);

/* Entry count and bytes on disk; the limit. */
void t4a__disk_stats(uint64_t *entries, uint64_t *bytes, uint64_t *limit);
uint64_t t4a__disk_hits(void);
uint64_t t4a__disk_rejected(void);

/* Removes every entry. */
void t4a__disk_clear(void);

#endif
