/* plugin-host/keymemo.c -- the cache keys of recent compile requests (see
 * keymemo.h). */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-host/keymemo.h"

#define KEYMEMO 16
#define KEYMEMO_BYTES (256u << 10)

typedef struct memo {
  uint64_t hash, len, used; /* used: when last found or put (0: empty) */
  char *bytes;              /* the request, serialised (walk) */
  uint8_t key[32];
  bool cacheable;
} memo;

static pthread_mutex_t mlock = PTHREAD_MUTEX_INITIALIZER;
static memo memos[KEYMEMO]; /* mlock */
static uint64_t clock_;     /* mlock */

/* The request's pieces in order, each given to fn (strings with their
 * NUL, so that no two requests serialise alike). */
typedef void (*piece_fn)(void *ctx, const void *p, uint64_t n);

static void walk(const t4a__keyreq *r, piece_fn fn, void *ctx) {
  const t4a_compile_options *o = r->o;
  fn(ctx, r->c->path, strlen(r->c->path) + 1);
  fn(ctx, r->c->version, strlen(r->c->version) + 1);
  fn(ctx, r->checked ? "C" : "-", 1);
  const char *name = o->name ? o->name : "t4a.cu";
  fn(ctx, name, strlen(name) + 1);
  fn(ctx, &o->option_count, sizeof o->option_count);
  for (uint32_t i = 0; i < o->option_count; i++)
    fn(ctx, o->options[i], strlen(o->options[i]) + 1);
  fn(ctx, &r->size, sizeof r->size);
  fn(ctx, o->source, r->size);
}

/* A fast hash (not a cryptographic one: the bytes are compared after). */
typedef struct hasher {
  uint64_t h, len;
} hasher;

static void hash_piece(void *ctx, const void *p, uint64_t n) {
  hasher *s = ctx;
  const unsigned char *b = p;
  uint64_t h = s->h;
  for (; n >= 8; n -= 8, b += 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  for (; n; n--, b++)
    h = (h ^ *b) * 0x100000001B3ull;
  s->h = h;
  s->len += (uint64_t)(b - (const unsigned char *)p);
}

typedef struct comparer {
  const char *at, *end;
  bool same;
} comparer;

static void compare_piece(void *ctx, const void *p, uint64_t n) {
  comparer *s = ctx;
  if (!s->same || (uint64_t)(s->end - s->at) < n || memcmp(s->at, p, (size_t)n) != 0)
    s->same = false;
  else
    s->at += n;
}

static void copy_piece(void *ctx, const void *p, uint64_t n) {
  char **at = ctx;
  memcpy(*at, p, (size_t)n);
  *at += n;
}

static hasher hash_of(const t4a__keyreq *r) {
  hasher s = {0xCBF29CE484222325ull, 0};
  walk(r, hash_piece, &s);
  return s;
}

bool t4a__keymemo_find(const t4a__keyreq *r, uint8_t key[32], bool *cacheable) {
  hasher h = hash_of(r);
  if (h.len > KEYMEMO_BYTES)
    return false;
  bool found = false;
  pthread_mutex_lock(&mlock);
  for (int i = 0; i < KEYMEMO && !found; i++) {
    memo *m = &memos[i];
    if (!m->used || m->hash != h.h || m->len != h.len)
      continue;
    comparer c = {m->bytes, m->bytes + m->len, true};
    walk(r, compare_piece, &c);
    if (c.same && c.at == c.end) {
      memcpy(key, m->key, 32);
      *cacheable = m->cacheable;
      m->used = ++clock_;
      found = true;
    }
  }
  pthread_mutex_unlock(&mlock);
  return found;
}

void t4a__keymemo_put(const t4a__keyreq *r, const uint8_t key[32], bool cacheable) {
  hasher h = hash_of(r);
  if (h.len > KEYMEMO_BYTES)
    return;
  char *bytes = malloc((size_t)h.len), *at = bytes;
  if (!bytes)
    return; /* only a memo: the next request hashes again */
  walk(r, copy_piece, &at);
  pthread_mutex_lock(&mlock);
  memo *m = &memos[0];
  for (int i = 1; i < KEYMEMO && m->used; i++)
    if (memos[i].used < m->used)
      m = &memos[i];
  char *old = m->bytes;
  *m = (memo){.hash = h.h, .len = h.len, .used = ++clock_, .bytes = bytes, .cacheable = cacheable};
  memcpy(m->key, key, 32);
  pthread_mutex_unlock(&mlock);
  free(old);
}

void t4a__keymemo_unload(void) {
  pthread_mutex_lock(&mlock);
  for (int i = 0; i < KEYMEMO; i++) {
    free(memos[i].bytes);
    memos[i] = (memo){0};
  }
  pthread_mutex_unlock(&mlock);
}
