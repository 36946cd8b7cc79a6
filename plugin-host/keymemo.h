/* plugin-host/keymemo.h -- the cache keys of recent compile requests.
 *
 * A compile served from the memory cache must cost a few microseconds, and
 * its key is a SHA-256 of everything that decides the artifact (the
 * compiler's path and version, the prelude, the arguments, the name, the
 * options, the source: compile.c), which alone took about 1.7 of the 5.9
 * us a hit cost here, with the scan for #include (srcscan) another 0.4.
 * So the last KEYMEMO requests are remembered whole: what decides their key
 * (the compiler's path and version, whether checked mode was on, the name,
 * the options, the source), the key, and whether the request may be cached
 * at all. A request whose bytes are the same as a remembered one's (a fast
 * hash picks the candidate, a byte-for-byte comparison decides) takes that
 * key without hashing or scanning. Requests of more than KEYMEMO_BYTES are
 * not remembered (they hash as before). Thread-safe; freed at unload. */
#ifndef T4A_PLUGIN_HOST_KEYMEMO_H
#define T4A_PLUGIN_HOST_KEYMEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-host/cxx.h"
#include "t4a/gpu_backend_v1.h"

/* The request as the memo compares it; size: the source's bytes. */
typedef struct t4a__keyreq {
  const t4a__hcxx *c;
  bool checked;
  const t4a_compile_options *o;
  uint64_t size;
} t4a__keyreq;

/* Whether r was remembered: then key and *cacheable are its. */
bool t4a__keymemo_find(const t4a__keyreq *r, uint8_t key[32], bool *cacheable);
/* Remembers r's key (the oldest entry makes room). */
void t4a__keymemo_put(const t4a__keyreq *r, const uint8_t key[32], bool cacheable);
void t4a__keymemo_unload(void);

#endif
