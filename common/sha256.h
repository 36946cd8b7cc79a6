/* common/sha256.h -- SHA-256 (FIPS 180-4), for cache keys and integrity. */
#ifndef T4A_COMMON_SHA256_H
#define T4A_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct t4a__sha256 {
  uint32_t h[8];
  uint64_t bytes;
  uint8_t block[64];
  size_t used;
} t4a__sha256;

void t4a__sha256_init(t4a__sha256 *s);
void t4a__sha256_update(t4a__sha256 *s, const void *data, size_t n);
void t4a__sha256_final(t4a__sha256 *s, uint8_t out[32]);

/* One-shot digest. */
void t4a__sha256_digest(const void *data, size_t n, uint8_t out[32]);

#endif
