/* backend-core/artifact.c -- artifacts (artifact.h): code and a log,
 * compiled by a plugin or handed in by the consumer (checked by the
 * plugin), reference counted and shared by the runtimes that load them;
 * and the memory cache of compiled artifacts (256 entries, least recently
 * used evicted), which holds a reference to each. One lock guards both.
 * Each plugin links its own copy (its own table and cache). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-core/fork.h"
#include "backend-core/artifact.h"
#include "backend-core/diskcache.h"
#include "backend-core/handle.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "common/checked.h"
#include "common/error.h"
#include "common/str.h"

typedef struct art {
  t4a__hslot h;
  uint32_t refs;
  t4a_artifact_kind kind;
  char *data; /* PTX has a NUL after size bytes */
  uint64_t size;
  char *log;
  uint64_t log_size;
  int compiler_version;
  char name[64];
} art;

static const t4a__hkind artifact_kind = {T4A__TAG_ARTIFACT, "artifact",
                                         "artifact_compile or artifact_from_bytes", NULL,
                                         "the artifact was released; keep it until you are done"};

static pthread_mutex_t alock = PTHREAD_MUTEX_INITIALIZER;
static t4a__htable arts = {.item_size = sizeof(art)};

static uint32_t aindex(const art *a) {
  return (uint32_t)(((const char *)a - arts.items) / arts.item_size);
}

/* ---- the table ------------------------------------------------------------- */

static int aget(t4a_artifact a, const char *what, art **out) {
  int rc;
  *out = t4a__htable_find(&arts, &artifact_kind, 0, a.bits, what, &rc);
  return rc;
}

/* Adds an artifact owning data and log (alock held); one reference. */
static int anew(t4a_artifact_kind kind, char *data, uint64_t size, char *log, uint64_t log_size,
                int compiler_version, const char *name, t4a_artifact *out) {
  uint32_t i;
  int rc = t4a__htable_take(&arts, "artifact", &i);
  if (rc)
    return rc;
  art *a = t4a__htable_at(&arts, i);
  a->refs = 1;
  a->kind = kind;
  a->data = data;
  a->size = size;
  a->log = log;
  a->log_size = log_size;
  a->compiler_version = compiler_version;
  t4a__strcopy(a->name, sizeof a->name, name);
  out->bits = t4a__htable_publish(&arts, i, &artifact_kind, 0);
  return T4A_OK;
}

/* Drops a reference (alock held). */
static void aunref(art *a) {
  if (--a->refs)
    return;
  free(a->data);
  free(a->log);
  a->data = a->log = NULL;
  t4a__htable_release(&arts, aindex(a));
}

int t4a__artifact_get(t4a_artifact h, const char *what, t4a__code *out) {
  pthread_mutex_lock(&alock);
  art *a;
  int rc = aget(h, what, &a);
  if (rc == T4A_OK && !a->data)
    rc = t4a__fail(T4A_EINVAL,
                   "%s: the artifact holds no code (its compile failed); read its "
                   "log and fix the source",
                   what);
  if (rc == T4A_OK && !t4a__ref_take(&a->refs))
    rc = t4a__fail(T4A_EINVAL,
                   "%s: the artifact holds %u references, the most it can; "
                   "unload modules or release artifacts first",
                   what, a->refs);
  if (rc == T4A_OK) {
    *out = (t4a__code){.index = aindex(a),
                       .kind = a->kind,
                       .data = a->data,
                       .size = a->size,
                       .compiler_version = a->compiler_version};
    t4a__strcopy(out->name, sizeof out->name, a->name);
  }
  pthread_mutex_unlock(&alock);
  return rc;
}

void t4a__artifact_put(const t4a__code *code) {
  pthread_mutex_lock(&alock);
  aunref(t4a__htable_at(&arts, code->index));
  pthread_mutex_unlock(&alock);
}

/* ---- the memory cache ------------------------------------------------------ */

#define MEM_ENTRIES 256u

typedef struct mentry {
  uint8_t key[32];
  t4a_artifact art;
  uint64_t last_use;
  bool used;
} mentry;

static mentry mcache[MEM_ENTRIES];
static uint64_t mclock, mhits;

/* The cached artifact for key with a new reference, or a null handle
 * (alock held). */
static t4a_artifact mlookup(const uint8_t key[32]) {
  t4a_artifact none = {0};
  for (uint32_t i = 0; i < MEM_ENTRIES; i++) {
    mentry *e = &mcache[i];
    if (e->used && memcmp(e->key, key, 32) == 0) {
      art *a;
      if (aget(e->art, "cache", &a) != T4A_OK || !t4a__ref_take(&a->refs))
        return none; /* a saturated count: served as a miss */
      e->last_use = ++mclock;
      mhits++;
      return e->art;
    }
  }
  return none;
}

/* Caches an artifact, taking a reference; evicts the least recently used
 * entry when full (alock held). */
static void minsert(const uint8_t key[32], t4a_artifact h) {
  mentry *slot = NULL;
  for (uint32_t i = 0; i < MEM_ENTRIES && (!slot || slot->used); i++)
    if (!slot || !mcache[i].used || mcache[i].last_use < slot->last_use)
      slot = &mcache[i];
  art *a;
  if (slot->used && aget(slot->art, "cache", &a) == T4A_OK)
    aunref(a);
  slot->used = false; /* its reference is gone, whatever follows */
  if (aget(h, "cache", &a) != T4A_OK || !t4a__ref_take(&a->refs))
    return;
  memcpy(slot->key, key, 32);
  slot->art = h;
  slot->used = true;
  slot->last_use = ++mclock;
}

static void mclear(void) {
  for (uint32_t i = 0; i < MEM_ENTRIES; i++) {
    art *a;
    if (mcache[i].used && aget(mcache[i].art, "cache", &a) == T4A_OK)
      aunref(a);
    mcache[i].used = false;
  }
}

int t4a__artifact_add(t4a_artifact_kind kind, char *data, uint64_t size, char *log,
                      uint64_t log_size, int compiler_version, const char *name, const uint8_t *key,
                      t4a_artifact *out) {
  t4a__fork_used(NULL); /* an artifact is this process's, init or not */
  pthread_mutex_lock(&alock);
  int rc = anew(kind, data, size, log, log_size, compiler_version, name, out);
  if (rc == T4A_OK && key)
    minsert(key, *out);
  pthread_mutex_unlock(&alock);
  return rc;
}

bool t4a__artifact_cached(const uint8_t key[32], t4a_artifact *out) {
  pthread_mutex_lock(&alock);
  *out = mlookup(key);
  pthread_mutex_unlock(&alock);
  return out->bits != 0;
}

void t4a__artifact_cache_stats(uint64_t *entries, uint64_t *hits) {
  pthread_mutex_lock(&alock);
  *entries = 0;
  for (uint32_t i = 0; i < MEM_ENTRIES; i++)
    *entries += mcache[i].used;
  *hits = mhits;
  pthread_mutex_unlock(&alock);
}

void t4a__artifact_cache_clear(void) {
  pthread_mutex_lock(&alock);
  mclear();
  pthread_mutex_unlock(&alock);
}

int t4a__artifact_from_copy(t4a_artifact_kind kind, const void *data, uint64_t size,
                            const char *name, t4a_artifact *out) {
  char *copy = malloc((size_t)size + 1);
  char *log = calloc(1, 1);
  if (!copy || !log) {
    free(copy);
    free(log);
    return t4a__fail(T4A_ENOMEM, "artifact_from_bytes: out of host memory");
  }
  memcpy(copy, data, (size_t)size);
  copy[size] = '\0';
  pthread_mutex_lock(&alock);
  int rc = anew(kind, copy, size, log, 0, 0, name ? name : "bytes", out);
  pthread_mutex_unlock(&alock);
  if (rc) {
    free(copy);
    free(log);
  }
  return rc;
}

int t4a__slot_artifact_log(t4a_artifact h, const char **log, uint64_t *length) {
  T4A__FORK_CHECK("artifact_log");
  if (!log)
    return t4a__fail(T4A_EINVAL, "artifact_log: log is NULL; pass a pointer");
  pthread_mutex_lock(&alock);
  art *a;
  int rc = aget(h, "artifact_log", &a);
  if (rc == T4A_OK) {
    *log = a->log;
    if (length)
      *length = a->log_size;
  }
  pthread_mutex_unlock(&alock);
  return rc;
}

int t4a__slot_artifact_data(t4a_artifact h, t4a_artifact_kind *kind, const void **data,
                            uint64_t *size) {
  T4A__FORK_CHECK("artifact_data");
  if (!data || !size)
    return t4a__fail(T4A_EINVAL, "artifact_data: data and size must not be NULL");
  pthread_mutex_lock(&alock);
  art *a;
  int rc = aget(h, "artifact_data", &a);
  if (rc == T4A_OK) {
    if (kind)
      *kind = a->kind;
    *data = a->data;
    *size = a->size;
  }
  pthread_mutex_unlock(&alock);
  return rc;
}

int t4a__slot_artifact_release(t4a_artifact h) {
  T4A__FORK_CHECK("artifact_release");
  pthread_mutex_lock(&alock);
  art *a;
  int rc = aget(h, "artifact_release", &a);
  if (rc == T4A_OK)
    aunref(a);
  pthread_mutex_unlock(&alock);
  return rc;
}

/* The plugin is being unloaded: the caches' references and any artifact
 * the consumer did not release go with it. */
void t4a__artifacts_unload(void) {
  for (uint32_t i = 0; i < arts.count; i++) {
    art *a = t4a__htable_at(&arts, i);
    if (a->h.live) {
      free(a->data);
      free(a->log);
    }
  }
  t4a__htable_fini(&arts);
  memset(mcache, 0, sizeof mcache);
}

/* ---- the compile caches' slots --------------------------------------------------- */

int t4a__compile_cache_stats_slot(t4a_compile_cache_stats *out, const t4a__disk *disk,
                                  uint64_t misses) {
  T4A__FORK_CHECK("compile_cache_stats");
  int rc = t4a__check_struct(out, T4A_COMPILE_CACHE_STATS_V1_0_SIZE, "t4a_compile_cache_stats");
  if (rc)
    return rc;
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  t4a__artifact_cache_stats(&s.memory_entries, &s.memory_hits);
  s.misses = misses;
  t4a__disk_stats(disk, &s.disk_entries, &s.disk_bytes, &s.disk_limit_bytes);
  s.disk_hits = t4a__disk_hits();
  s.disk_rejected = t4a__disk_rejected();
  t4a__fill_struct(out, &s, sizeof s);
  return T4A_OK;
}

int t4a__compile_cache_clear_slot(uint32_t which, const t4a__disk *disk) {
  T4A__FORK_CHECK("compile_cache_clear");
  if (!which || (which & ~(uint32_t)(T4A_CACHE_MEMORY | T4A_CACHE_DISK)))
    return t4a__fail(T4A_EINVAL,
                     "compile_cache_clear: which = 0x%x; use T4A_CACHE_MEMORY "
                     "and/or T4A_CACHE_DISK",
                     which);
  if (which & T4A_CACHE_MEMORY)
    t4a__artifact_cache_clear();
  if (which & T4A_CACHE_DISK)
    t4a__disk_clear(disk);
  return T4A_OK;
}

int t4a__compile_request_check(const t4a_compile_options *o, uint64_t *size) {
  int rc = t4a__check_struct(o, T4A_COMPILE_OPTIONS_V1_0_SIZE, "t4a_compile_options");
  if (rc)
    return rc;
  if (o->flags & ~(uint32_t)(T4A_COMPILE_PTX | T4A_COMPILE_NO_CACHE))
    return t4a__fail(T4A_EINVAL,
                     "artifact_compile: unknown flags 0x%x; use T4A_COMPILE_PTX "
                     "and T4A_COMPILE_NO_CACHE",
                     o->flags);
  if (!o->source)
    return t4a__fail(T4A_EINVAL, "artifact_compile: source is NULL; pass CUDA C source");
  *size = o->source_size ? o->source_size : strlen(o->source);
  if (!*size)
    return t4a__fail(T4A_EINVAL, "artifact_compile: the source is empty; pass CUDA C source");
  const char *nul = memchr(o->source, 0, (size_t)*size);
  if (nul)
    return t4a__fail(T4A_EINVAL,
                     "artifact_compile: the source has a NUL byte at offset %zu of "
                     "%llu; pass text only (or the right source_size)",
                     (size_t)(nul - o->source), (unsigned long long)*size);
  if (o->option_count > 256 || (o->option_count && !o->options))
    return t4a__fail(T4A_EINVAL,
                     "artifact_compile: %u options with options %s; pass at most "
                     "256 options in a non-NULL array",
                     o->option_count, o->options ? "set" : "NULL");
  for (uint32_t i = 0; i < o->option_count; i++)
    if (!o->options[i] || strlen(o->options[i]) > 4096)
      return t4a__fail(T4A_EINVAL,
                       "artifact_compile: option %u is NULL or longer than 4096 "
                       "bytes; pass valid strings",
                       i);
  return T4A_OK;
}
