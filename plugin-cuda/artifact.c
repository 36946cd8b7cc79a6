/* plugin-cuda/artifact.c -- artifacts: CUDA C compiled by NVRTC (CUBIN for the
 * target device by default, PTX on request) or consumer bytes (PTX, CUBIN,
 * fatbin), reference counted and shared by the runtimes that load them.
 *
 * Compiles go through two caches keyed by SHA-256 over everything in the
 * request that decides the output: source, name (it is __FILE__), options,
 * target, output kind, NVRTC version and driver version. Files NVRTC reads
 * while compiling are not in the key (NVRTC cannot say which it read), so a
 * compile that could read any is not cached at all: see reads_files. The
 * memory cache (per backend, 256 entries, least recently used evicted)
 * holds a reference to each artifact; the disk cache is diskcache.c.
 * Failed compiles are never cached. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/str.h"
#include "plugin-cuda/artifact.h"
#include "plugin-cuda/nvrtc.h"
#include "plugin-cuda/handle.h"
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
  return t4a__htable_get(&arts, &artifact_kind, 0, a.bits, what, (void **)out);
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
static uint64_t mclock, mhits, misses, uncached;

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

/* ---- compile ---------------------------------------------------------------------- */

static bool names_arch(const char *opt) {
  return strncmp(opt, "-arch", 5) == 0 || strncmp(opt, "--gpu-architecture", 18) == 0;
}

/* Checks the request and fills the target option (or finds it). */
static int check_request(const t4a_compile_options *o, uint64_t *size, char *target, size_t tsize,
                         int *driver_version) {
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
  bool arch = false;
  for (uint32_t i = 0; i < o->option_count; i++) {
    if (!o->options[i] || strlen(o->options[i]) > 4096)
      return t4a__fail(T4A_EINVAL,
                       "artifact_compile: option %u is NULL or longer than 4096 "
                       "bytes; pass valid strings",
                       i);
    arch |= names_arch(o->options[i]);
  }
  target[0] = '\0';
  *driver_version = 0;
  if (o->device_ordinal == -1) {
    if (!arch)
      return t4a__fail(T4A_EINVAL, "artifact_compile: device_ordinal is -1 but no option names "
                                   "an architecture; add \"-arch=sm_XY\" or pick a device");
    return T4A_OK;
  }
  if ((rc = t4a__require_init()) ||
      (rc = t4a__check_ordinal(o->device_ordinal, "artifact_compile")))
    return rc;
  if (arch)
    return t4a__fail(T4A_EINVAL, "artifact_compile: the options name an architecture and "
                                 "device_ordinal picks one too; set device_ordinal = -1 to use "
                                 "the options' choice");
  const t4a_device_info *d = &t4a__be.devices[o->device_ordinal].info;
  snprintf(target, tsize, "-arch=%s_%d%d", (o->flags & T4A_COMPILE_PTX) ? "compute" : "sm",
           (int)d->cc_major, (int)d->cc_minor);
  *driver_version = t4a__be.driver_version;
  return T4A_OK;
}

/* Refuses output the driver could not load. */
static int gate_versions(const t4a__nvrtc *n, int driver_version, bool ptx) {
  int nv = 1000 * n->major + 10 * n->minor;
  if (!driver_version)
    return T4A_OK;
  if (ptx && nv > driver_version)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "artifact_compile: NVRTC %d.%d emits PTX the driver (CUDA %d.%d) cannot "
                     "load; compile to CUBIN (drop T4A_COMPILE_PTX) or point T4A_NVRTC_LIBRARY "
                     "at an NVRTC no newer than the driver",
                     n->major, n->minor, driver_version / 1000, driver_version % 1000 / 10);
  if (n->major > driver_version / 1000)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "artifact_compile: NVRTC %d.%d is a newer major than the driver (CUDA "
                     "%d.%d) and its output would not load; update the driver or point "
                     "T4A_NVRTC_LIBRARY at NVRTC %d.x",
                     n->major, n->minor, driver_version / 1000, driver_version % 1000 / 10,
                     driver_version / 1000);
  return T4A_OK;
}

/* v2: the name joined the key (v1 keys ignored it). */
static void cache_key(const t4a_compile_options *o, uint64_t size, const char *target,
                      const t4a__nvrtc *n, int driver_version, uint8_t key[32]) {
  t4a__sha256 s;
  t4a__sha256_init(&s);
  char head[160];
  int len = snprintf(head, sizeof head, "t4a-artifact-v2|%s|%s|nvrtc %d.%d|driver %d|%u|",
                     (o->flags & T4A_COMPILE_PTX) ? "ptx" : "cubin", target, n->major, n->minor,
                     driver_version, o->option_count);
  t4a__sha256_update(&s, head, (size_t)len);
  const char *name = o->name ? o->name : "t4a.cu";
  t4a__sha256_update(&s, name, strlen(name) + 1);
  for (uint32_t i = 0; i < o->option_count; i++)
    t4a__sha256_update(&s, o->options[i], strlen(o->options[i]) + 1);
  t4a__sha256_update(&s, o->source, (size_t)size);
  t4a__sha256_final(&s, key);
}

/* ---- what may be cached ------------------------------------------------------------- */

/* NVRTC reads files besides the source: headers from include directories,
 * from the directory of `name` (the current directory for a bare name) for
 * #include "x.h", absolute #include paths, pre-included headers,
 * precompiled headers. NVRTC 13 cannot report which files it read (it has
 * no dependency output), so their contents cannot join the key; a compile
 * that could read any is therefore not cached, in memory or on disk. The
 * checks below are deliberately coarse: a false alarm costs one compile, a
 * missed include would return stale code. */

/* Options that make NVRTC read files, matched on the name without its
 * dashes and by prefix, so "-I/x", "--include-path=/x", "-I" "/x",
 * "-include" and "--pre-include=h" all count. */
static bool option_reads_files(const char *opt) {
  static const char *const prefixes[] = {"I",          "include",   "pre-include",
                                         "preinclude", "isystem",   "system-include",
                                         "iquote",     "idirafter", "imacros"};
  while (*opt == '-')
    opt++;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(opt, prefixes[i], strlen(prefixes[i])) == 0)
      return true;
  return strstr(opt, "pch") != NULL; /* --pch, --use-pch=f, --pch-dir=d, ... */
}

/* Characters that line splicing can remove from between two letters of a
 * word: backslash-newline (NVRTC also takes backslash-CR-LF), its trigraph
 * ??/ (-std=c++11/14), and blanks, which cost only false alarms. */
static bool splice_char(char c) {
  return c == '\\' || c == '?' || c == '/' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* If word occurs at s[i] with only splice characters between its letters,
 * the index just past it; else 0. */
static size_t word_at(const char *s, size_t n, size_t i, const char *word) {
  for (const char *w = word; *w; w++) {
    if (w != word)
      while (i < n && splice_char(s[i]))
        i++;
    if (i >= n || s[i] != *w)
      return 0;
    i++;
  }
  return i;
}

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether s[from, to) is a line `#include <name>` whose name is relative.
 * With no include directory given, NVRTC's list for <...> is empty ("no
 * directories in search list"), so such a name can only be one of NVRTC's
 * built-in headers, which its version (in the key) pins; "..." would search
 * the directory of `name`, and an absolute name is opened as is. */
static bool builtin_include_line(const char *s, size_t from, size_t to) {
  size_t i = from;
  while (i < to && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (i >= to || s[i++] != '#')
    return false;
  while (i < to && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (to - i < 7 || memcmp(s + i, "include", 7) != 0)
    return false;
  i += 7;
  while (i < to && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (i >= to || s[i++] != '<' || i >= to || s[i] == '/')
    return false;
  size_t name = i;
  while (i < to && (ident_char(s[i]) || s[i] == '.' || s[i] == '/' || s[i] == '-' || s[i] == '+'))
    i++;
  if (i == name || i >= to || s[i++] != '>')
    return false;
  while (i < to && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
    i++;
  return i == to;
}

/* Why this compile must not be cached, or NULL when it may be. */
static const char *reads_files(const t4a_compile_options *o, uint64_t size) {
  for (uint32_t i = 0; i < o->option_count; i++)
    if (option_reads_files(o->options[i]))
      return "an option names include directories, pre-included or precompiled headers";
  const char *s = o->source;
  size_t n = (size_t)size;
  for (size_t i = 0; i < n; i++) {
    size_t end;
    /* #include, #include_next, __has_include: every occurrence must sit in
     * a `#include <relative>` line (so a comment mentioning "include"
     * costs caching: the preprocessor is NVRTC's, not re-implemented). */
    if ((end = word_at(s, n, i, "include"))) {
      size_t from = i, to = end;
      while (from > 0 && s[from - 1] != '\n')
        from--;
      while (to < n && s[to] != '\n')
        to++;
      if (memchr(s + i, '\n', end - i) || !builtin_include_line(s, from, to))
        return "the source may include a file from disk (any \"include\" outside a plain "
               "#include <relative> line counts)";
    }
    /* #import / import (modules) and #embed, __has_embed: refused by
     * NVRTC 13, but they would read files */
    if (((end = word_at(s, n, i, "import")) || (end = word_at(s, n, i, "embed"))) &&
        (i == 0 || !ident_char(s[i - 1]) || s[i - 1] == '_') && (end == n || !ident_char(s[end])))
      return "the source mentions import or embed, which can read files";
    /* the time of the compile is part of the output */
    if (word_at(s, n, i, "__TIME") || word_at(s, n, i, "__DATE__"))
      return "the source uses __DATE__, __TIME__ or __TIMESTAMP__";
  }
  return NULL;
}

/* Runs NVRTC. On success *data and *dsize hold the output (PTX NUL-terminated);
 * the log is returned either way. */
static int nvrtc_compile(const t4a__nvrtc *n, const t4a_compile_options *o, uint64_t size,
                         const char *target, char **data, uint64_t *dsize, char **log,
                         uint64_t *log_size) {
  const t4a__nvrtc_api *f = &n->fn;
  char *src = malloc((size_t)size + 1);
  const char **opts = calloc(o->option_count + 1u, sizeof *opts);
  if (!src || !opts) {
    free(src);
    free(opts);
    return t4a__fail(T4A_ENOMEM, "artifact_compile: out of host memory");
  }
  memcpy(src, o->source, (size_t)size);
  src[size] = '\0';
  uint32_t nopts = 0;
  for (uint32_t i = 0; i < o->option_count; i++)
    opts[nopts++] = o->options[i];
  if (*target)
    opts[nopts++] = target;
  t4a__nvrtcProgram prog = NULL;
  int rc = T4A_OK;
  t4a__nvrtcResult r =
      f->nvrtcCreateProgram(&prog, src, o->name ? o->name : "t4a.cu", 0, NULL, NULL);
  if (r != T4A__NVRTC_SUCCESS) {
    rc = t4a__fail_native(r == T4A__NVRTC_ERROR_OUT_OF_MEMORY ? T4A_ENOMEM : T4A_ECOMPILE, r,
                          f->nvrtcGetErrorString(r),
                          "nvrtcCreateProgram failed; check the "
                          "source");
    goto out;
  }
  t4a__nvrtcResult cr = f->nvrtcCompileProgram(prog, (int)nopts, opts);
  size_t lsize = 0;
  if (f->nvrtcGetProgramLogSize(prog, &lsize) == T4A__NVRTC_SUCCESS && lsize) {
    *log = malloc(lsize);
    if (*log && f->nvrtcGetProgramLog(prog, *log) == T4A__NVRTC_SUCCESS)
      *log_size = strnlen(*log, lsize);
    else if (*log)
      (*log)[0] = '\0';
  }
  if (cr != T4A__NVRTC_SUCCESS) {
    const char *first = *log && **log ? *log : "(empty log)";
    int len = (int)strcspn(first, "\n");
    rc = t4a__fail_native(cr == T4A__NVRTC_ERROR_INVALID_OPTION ? T4A_EINVAL : T4A_ECOMPILE, cr,
                          f->nvrtcGetErrorString(cr),
                          "compiling '%s' failed: %.*s; fix it (the full log is in "
                          "artifact_log)",
                          o->name ? o->name : "t4a.cu", len > 300 ? 300 : len, first);
    goto out;
  }
  bool ptx = (o->flags & T4A_COMPILE_PTX) != 0;
  size_t osize = 0;
  r = ptx ? f->nvrtcGetPTXSize(prog, &osize) : f->nvrtcGetCUBINSize(prog, &osize);
  if (r != T4A__NVRTC_SUCCESS || osize == 0) {
    rc = t4a__fail(T4A_ECOMPILE,
                   "artifact_compile: NVRTC produced no %s; for CUBIN name a "
                   "real architecture (-arch=sm_XY), or ask for PTX",
                   ptx ? "PTX" : "CUBIN");
    goto out;
  }
  *data = malloc(osize + 1);
  if (!*data) {
    rc = t4a__fail(T4A_ENOMEM, "artifact_compile: out of host memory");
    goto out;
  }
  r = ptx ? f->nvrtcGetPTX(prog, *data) : f->nvrtcGetCUBIN(prog, *data);
  if (r != T4A__NVRTC_SUCCESS) {
    free(*data);
    *data = NULL;
    rc = t4a__fail_native(T4A_ECOMPILE, r, f->nvrtcGetErrorString(r),
                          "artifact_compile: reading NVRTC's output failed");
    goto out;
  }
  (*data)[osize] = '\0';
  *dsize = ptx ? strnlen(*data, osize) : osize; /* PTX size excludes its NUL */
out:
  if (prog)
    f->nvrtcDestroyProgram(&prog);
  free(src);
  free(opts);
  return rc;
}

int t4a__slot_artifact_compile(const t4a_compile_options *o, t4a_artifact *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "artifact_compile: out is NULL; pass a pointer");
  out->bits = 0;
  uint64_t size = 0;
  char target[32];
  int driver_version, rc;
  if ((rc = check_request(o, &size, target, sizeof target, &driver_version)))
    return rc;
  const t4a__nvrtc *n = t4a__nvrtc_get();
  if (!n)
    return t4a__error_get()->status;
  bool ptx = (o->flags & T4A_COMPILE_PTX) != 0;
  if ((rc = gate_versions(n, driver_version, ptx)))
    return rc;
  int nv = 1000 * n->major + 10 * n->minor;
  t4a_artifact_kind kind = ptx ? T4A_ARTIFACT_PTX : T4A_ARTIFACT_CUBIN;
  const char *name = o->name ? o->name : "t4a.cu";
  uint8_t key[32];
  bool cached = !(o->flags & T4A_COMPILE_NO_CACHE);
  const char *why = cached ? reads_files(o, size) : NULL;
  if (why) {
    cached = false;
    pthread_mutex_lock(&alock);
    uint64_t count = ++uncached;
    pthread_mutex_unlock(&alock);
    t4a__log(T4A__LOG_INFO, "cuda",
             "artifact_compile: '%s' is compiled without the caches: %s (%llu such compiles)", name,
             why, (unsigned long long)count);
  }
  if (cached) {
    cache_key(o, size, target, n, driver_version, key);
    pthread_mutex_lock(&alock);
    *out = mlookup(key);
    pthread_mutex_unlock(&alock);
    if (out->bits)
      return T4A_OK;
    t4a__disk_entry e;
    if (t4a__disk_lookup(key, &e)) {
      pthread_mutex_lock(&alock);
      rc = anew(kind, e.data, e.size, e.log, e.log_size, nv, name, out);
      if (rc == T4A_OK)
        minsert(key, *out);
      pthread_mutex_unlock(&alock);
      if (rc) {
        free(e.data);
        free(e.log);
      }
      return rc;
    }
  }
  char *data = NULL, *log = NULL;
  uint64_t dsize = 0, log_size = 0;
  pthread_mutex_lock(&alock);
  misses++;
  pthread_mutex_unlock(&alock);
  int crc = nvrtc_compile(n, o, size, target, &data, &dsize, &log, &log_size);
  if (crc != T4A_OK && crc != T4A_ECOMPILE && crc != T4A_EINVAL) {
    free(data);
    free(log);
    return crc;
  }
  if (!log && !(log = calloc(1, 1))) {
    free(data);
    return t4a__fail(T4A_ENOMEM, "artifact_compile: out of host memory");
  }
  t4a__error detail = *t4a__error_get();
  pthread_mutex_lock(&alock);
  rc = anew(kind, data, crc ? 0 : dsize, log, log_size, nv, name, out);
  if (rc == T4A_OK && crc == T4A_OK && cached)
    minsert(key, *out);
  pthread_mutex_unlock(&alock);
  if (rc) {
    free(data);
    free(log);
    return rc;
  }
  if (crc) { /* a failed compile: the artifact carries the log */
    t4a__error_set(&detail);
    return crc;
  }
  if (cached)
    t4a__disk_store(key, kind, data, dsize, log, log_size);
  return T4A_OK;
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
  pthread_mutex_lock(&alock);
  art *a;
  int rc = aget(h, "artifact_release", &a);
  if (rc == T4A_OK)
    aunref(a);
  pthread_mutex_unlock(&alock);
  return rc;
}

int t4a__slot_compile_cache_stats(t4a_compile_cache_stats *out) {
  int rc = t4a__check_struct(out, T4A_COMPILE_CACHE_STATS_V1_0_SIZE, "t4a_compile_cache_stats");
  if (rc)
    return rc;
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  pthread_mutex_lock(&alock);
  for (uint32_t i = 0; i < MEM_ENTRIES; i++)
    s.memory_entries += mcache[i].used;
  s.memory_hits = mhits;
  s.misses = misses;
  pthread_mutex_unlock(&alock);
  t4a__disk_stats(&s.disk_entries, &s.disk_bytes, &s.disk_limit_bytes);
  s.disk_hits = t4a__disk_hits();
  s.disk_rejected = t4a__disk_rejected();
  t4a__fill_struct(out, &s, sizeof s);
  return T4A_OK;
}

int t4a__slot_compile_cache_clear(uint32_t which) {
  if (!which || (which & ~(uint32_t)(T4A_CACHE_MEMORY | T4A_CACHE_DISK)))
    return t4a__fail(T4A_EINVAL,
                     "compile_cache_clear: which = 0x%x; use T4A_CACHE_MEMORY "
                     "and/or T4A_CACHE_DISK",
                     which);
  if (which & T4A_CACHE_MEMORY) {
    pthread_mutex_lock(&alock);
    mclear();
    pthread_mutex_unlock(&alock);
  }
  if (which & T4A_CACHE_DISK)
    t4a__disk_clear();
  return T4A_OK;
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
