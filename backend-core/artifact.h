/* backend-core/artifact.h -- artifacts (code compiled here or handed in by
 * the consumer, and its log), reference counted and shared by the runtimes
 * that load them, and the memory cache of compiled artifacts; the disk
 * cache is backend-core/diskcache.h. What an artifact's code is (PTX,
 * CUBIN, fatbin, a host shared object) and how it is checked is each
 * plugin's; the bookkeeping, the caches and the artifact_log, _data and
 * _release slots are written once, here. */
#ifndef T4A_CORE_ARTIFACT_H
#define T4A_CORE_ARTIFACT_H

#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

/* A reference to an artifact's code, taken for module_load: the bytes stay
 * valid until t4a__artifact_put. */
typedef struct t4a__code {
  uint32_t index;
  t4a_artifact_kind kind;
  const char *data; /* NUL after `size` bytes (PTX is text) */
  uint64_t size;
  int compiler_version; /* the compiler's (NVRTC: 1000 * major + 10 * minor) when compiled here,
                           else 0 */
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
                      uint64_t log_size, int compiler_version, const char *name, const uint8_t *key,
                      t4a_artifact *out);

/* artifact_from_bytes' end, once the plugin checked the bytes: a new
 * artifact holding a copy of size bytes of data (and a NUL after them) and
 * an empty log. */
int t4a__artifact_from_copy(t4a_artifact_kind kind, const void *data, uint64_t size,
                            const char *name, t4a_artifact *out);

/* The memory cache's artifact for key, with a new reference; false when
 * there is none. */
bool t4a__artifact_cached(const uint8_t key[32], t4a_artifact *out);

/* The memory cache's entry count and hits; emptying it. */
void t4a__artifact_cache_stats(uint64_t *entries, uint64_t *hits);
void t4a__artifact_cache_clear(void);

/* artifact_compile's request checks, the same for every plugin: the struct,
 * the flags, the source (not NULL, not empty, no NUL byte within its size),
 * the option array (at most 256, each a string of at most 4096 bytes).
 * Sets *size to the source's size. What depends on the backend (the device,
 * the architecture, the flags it cannot honour) the plugin checks after. */
int t4a__compile_request_check(const t4a_compile_options *o, uint64_t *size);

/* The compile caches' two slots, the same for every plugin: a plugin hands
 * in its disk cache (diskcache.h) and its count of compiles performed. */
struct t4a__disk;
int t4a__compile_cache_stats_slot(t4a_compile_cache_stats *out, const struct t4a__disk *disk,
                                  uint64_t misses);
int t4a__compile_cache_clear_slot(uint32_t which, const struct t4a__disk *disk);

#endif
