/* plugin-cuda/artifact.c -- artifacts: code (PTX, CUBIN or fatbin) and a log,
 * compiled here (compile.c) or handed in by the consumer (checked here),
 * reference counted and shared by the runtimes that load them; and the
 * memory cache of compiled artifacts (256 entries, least recently used
 * evicted), which holds a reference to each. One lock guards both. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/str.h"
#include "plugin-cuda/artifact.h"
#include "backend-core/handle.h"
#include "plugin-cuda/slots.h"

typedef struct art {
  t4a__hslot h;
  uint32_t refs;
  t4a_artifact_kind kind;
  char *data; /* PTX has a NUL after size bytes */
  uint64_t size;
  char *log;
  uint64_t log_size;
  int nvrtc_version;
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
                int nvrtc_version, const char *name, t4a_artifact *out) {
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
  a->nvrtc_version = nvrtc_version;
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
                       .nvrtc_version = a->nvrtc_version};
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
                      uint64_t log_size, int nvrtc_version, const char *name, const uint8_t *key,
                      t4a_artifact *out) {
  t4a__fork_used(t4a__backend_forked); /* an artifact is this process's, init or not */
  pthread_mutex_lock(&alock);
  int rc = anew(kind, data, size, log, log_size, nvrtc_version, name, out);
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

/* ---- consumer bytes ------------------------------------------------------------------ */

/* The driver's module load takes no length: it finds a CUBIN's or fatbin's
 * extent in the image's own headers. So every extent those headers name is
 * checked against `size` first, or a truncated image would make the driver
 * read past the copy. */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) {
  return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}
static uint64_t rd64(const unsigned char *p) {
  return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* True when [off, off + count * each) lies within size bytes. */
static bool table_fits(uint64_t off, uint64_t count, uint64_t each, uint64_t size) {
  uint64_t bytes;
  return t4a__mul_u64(count, each, &bytes) && t4a__range_ok(off, bytes, size);
}

#define ELF_HEADER 64u /* ELF64 */
#define ELF_SHT_NOBITS 8u

/* NULL when the ELF64 image's header, section and program tables and every
 * section's and segment's bytes lie within size; else what is wrong. */
static const char *elf_check(const unsigned char *b, uint64_t size) {
  if (size < ELF_HEADER || memcmp(b,
                                  "\x7f"
                                  "ELF",
                                  4) != 0)
    return "does not start with an ELF header (\\x7fELF); pass nvcc -cubin output";
  if (b[4] != 2 || b[5] != 1)
    return "is not a 64-bit little-endian ELF file; pass nvcc -cubin output";
  uint64_t phoff = rd64(b + 32), shoff = rd64(b + 40);
  uint16_t phentsize = rd16(b + 54), phnum = rd16(b + 56);
  uint16_t shentsize = rd16(b + 58), shnum = rd16(b + 60);
  if ((phnum && phentsize < 56) || (shnum && shentsize < 64))
    return "has ELF table entries smaller than ELF64's; the file is damaged";
  if (!table_fits(phoff, phnum, phentsize, size) || !table_fits(shoff, shnum, shentsize, size))
    return "is truncated: its ELF section or program table lies past the end";
  for (uint32_t i = 0; i < shnum; i++) {
    const unsigned char *sh = b + shoff + (uint64_t)i * shentsize;
    if (rd32(sh + 4) != ELF_SHT_NOBITS && !t4a__range_ok(rd64(sh + 24), rd64(sh + 32), size))
      return "is truncated: an ELF section lies past the end";
  }
  for (uint32_t i = 0; i < phnum; i++) {
    const unsigned char *ph = b + phoff + (uint64_t)i * phentsize;
    if (!t4a__range_ok(rd64(ph + 8), rd64(ph + 32), size))
      return "is truncated: an ELF segment lies past the end";
  }
  return NULL;
}

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_HEADER 16u /* magic, version, header size, size of the entries */
#define FATBIN_ENTRY 16u  /* kind, version, header size, payload size, ... */

/* NULL when the fatbin's header and its chain of entries lie within size. */
static const char *fatbin_check(const unsigned char *b, uint64_t size) {
  if (size < FATBIN_HEADER || rd32(b) != FATBIN_MAGIC)
    return "does not start with the fatbin magic 0xBA55ED50; pass nvcc -fatbin output";
  uint64_t at = rd16(b + 6), end;
  if (at < FATBIN_HEADER || !t4a__add_u64(at, rd64(b + 8), &end) || end > size)
    return "is truncated: its fatbin header names more bytes than were passed";
  while (at < end) {
    uint64_t next;
    if (end - at < FATBIN_ENTRY || rd32(b + at + 4) < FATBIN_ENTRY ||
        !t4a__add_u64(at + rd32(b + at + 4), rd64(b + at + 8), &next) || next > end)
      return "is truncated or damaged: a fatbin entry lies past the end";
    at = next;
  }
  return NULL;
}

int t4a__slot_artifact_from_bytes(t4a_artifact_kind kind, const void *data, uint64_t size,
                                  const char *name, t4a_artifact *out) {
  T4A__FORK_CHECK("artifact_from_bytes");
  if (!out)
    return t4a__fail(T4A_EINVAL, "artifact_from_bytes: out is NULL; pass a pointer");
  out->bits = 0;
  if (!data || !size || size > (1ull << 31))
    return t4a__fail(T4A_EINVAL, "artifact_from_bytes: %s; pass 1 byte to 2 GiB of code",
                     data ? "the size is 0 or above 2 GiB" : "data is NULL");
  const unsigned char *b = data;
  switch (kind) {
  case T4A_ARTIFACT_PTX:
    if (memchr(b, 0, (size_t)size) && strnlen(data, (size_t)size) + 1 != size)
      return t4a__fail(T4A_EINVAL, "artifact_from_bytes: PTX text has a NUL byte inside; pass "
                                   "the text (a final NUL is fine)");
    if (b[size - 1] == 0)
      size--; /* keep the text; we add our own NUL */
    break;
  case T4A_ARTIFACT_CUBIN:
  case T4A_ARTIFACT_FATBIN: {
    const char *bad = kind == T4A_ARTIFACT_CUBIN ? elf_check(b, size) : fatbin_check(b, size);
    if (bad)
      return t4a__fail(T4A_EINVAL, "artifact_from_bytes: the %s of %llu bytes %s",
                       kind == T4A_ARTIFACT_CUBIN ? "CUBIN" : "fatbin", (unsigned long long)size,
                       bad);
    break;
  }
  default:
    return t4a__fail(T4A_EINVAL,
                     "artifact_from_bytes: unknown kind %d; use T4A_ARTIFACT_PTX, "
                     "_CUBIN or _FATBIN",
                     (int)kind);
  }
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
