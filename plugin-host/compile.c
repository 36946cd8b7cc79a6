/* plugin-host/compile.c -- artifact_compile on the host backend: CUDA C
 * through the translator (ktranslate.h: the prelude, #line, the kernels'
 * registration) and the host C++ compiler (cxx.h) into a shared object, an
 * artifact of kind T4A_ARTIFACT_HOST; served from the memory cache
 * (backend-core/artifact.c) and the disk cache (backend-core/diskcache.c,
 * the "host" subdirectory) when possible. Also the caches' slots and
 * artifact_from_bytes.
 *
 * The key is SHA-256 over everything that decides the output: a format
 * tag, the compiler's identity (its path and the first line of its
 * --version, asked again when the file changes: cxx.c), the prelude's
 * identity (t4a__kprelude_id), the fixed arguments, the name (it is
 * __FILE__ and the #line name), the options and the source. A compile that
 * could read other files is not cached (backend-core/srcscan.c, the CUDA
 * plugin's rule), nor is a failed one.
 *
 * The compile itself: the unit is written into a fresh private directory
 * (mkdtemp: 0700) and the compiler runs there with a fixed argument list
 * and environment (cxxrun.c), its temporary files there too; the directory
 * and everything in it are removed whatever happens. A failed compile
 * returns T4A_ECOMPILE and an artifact whose log is the compiler's output
 * (its line numbers are the consumer's: the unit carries #line), as NVRTC
 * does. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend-core/fork.h"
#include "backend-core/artifact.h"
#include "backend-core/diskcache.h"
#include "backend-core/slots.h"
#include "backend-core/srcscan.h"
#include "backend-core/structs.h"
#include "common/env.h"
#include "common/log.h"
#include "common/sha256.h"
#include "plugin-host/cxx.h"
#include "plugin-host/host.h"
#include "plugin-host/keymemo.h"
#include "plugin-host/ktranslate.h"

static const t4a__disk disk = {"host", "host"}; /* its own subdirectory of the cache */
static pthread_mutex_t clock_ = PTHREAD_MUTEX_INITIALIZER;
static uint64_t misses, uncached;

/* The arguments every compile starts with; argv[0] is replaced by the
 * compiler's path, "-o" is followed by the output and the unit. */
static const char *const fixed[] = {"c++",         "-std=c++17",      "-O2",
                                    "-fPIC",       "-shared",         "-fno-exceptions",
                                    "-fno-rtti",   "-fno-math-errno", "-fvisibility=hidden",
                                    "-Wl,-z,defs", "-pthread"};
/* g++ marks some inline statics STB_GNU_UNIQUE, which makes dlclose keep
 * the module loaded for good; clang++ has no such symbols (nor the option). */
static const char no_unique[] = "-fno-gnu-unique";
/* A frame larger than a page (a kernel's big local array) probes each page
 * as it grows, so that a fiber whose stack is too small hits its guard page
 * (a contained fault in checked mode) instead of reaching past it into the
 * next fiber's stack (g++ 8 and clang++ 11 have the option). */
static const char clash[] = "-fstack-clash-protection";

/* ---- the request ---------------------------------------------------------------------- */

static int check_request(const t4a_compile_options *o, uint64_t *size) {
  int rc = t4a__compile_request_check(o, size); /* backend-core/artifact.c */
  if (rc)
    return rc;
  if (o->device_ordinal != -1 &&
      (rc = t4a__host_check_ordinal(o->device_ordinal, "artifact_compile")))
    return rc; /* a compile for a device needs init, as everywhere */
  if (o->flags & T4A_COMPILE_PTX)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "artifact_compile: T4A_COMPILE_PTX asks for NVIDIA GPU code, which the host "
                     "backend neither makes nor runs; drop the flag (the host compiles to a "
                     "host shared object)");
  return T4A_OK;
}

static void cache_key(const t4a_compile_options *o, uint64_t size, const t4a__hcxx *c,
                      const t4a__cxxargs *a, uint8_t key[32]) {
  t4a__sha256 s;
  t4a__sha256_init(&s);
  const char *head = "t4a-host-artifact-v1";
  t4a__sha256_update(&s, head, strlen(head) + 1);
  t4a__sha256_update(&s, c->path, strlen(c->path) + 1);
  t4a__sha256_update(&s, c->version, strlen(c->version) + 1);
  const char *prelude = t4a__kprelude_id();
  t4a__sha256_update(&s, prelude, strlen(prelude) + 1);
  for (uint32_t i = 0; i < a->count; i++) /* the fixed arguments and the mapped options */
    t4a__sha256_update(&s, a->v[i], strlen(a->v[i]) + 1);
  const char *name = o->name ? o->name : "t4a.cu";
  t4a__sha256_update(&s, name, strlen(name) + 1);
  char n[32];
  int len = snprintf(n, sizeof n, "%u|", o->option_count);
  t4a__sha256_update(&s, n, (size_t)len);
  for (uint32_t i = 0; i < o->option_count; i++)
    t4a__sha256_update(&s, o->options[i], strlen(o->options[i]) + 1);
  t4a__sha256_update(&s, o->source, (size_t)size);
  t4a__sha256_final(&s, key);
}

/* ---- the private directory ------------------------------------------------------------ */

/* Removes dir and what the compiler left in it (one level: it makes no
 * subdirectories). */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
        continue;
      char path[4400];
      snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

static bool write_file(const char *path, const char *data, uint64_t size) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return false;
  bool ok = true;
  while (size && ok) {
    ssize_t w = write(fd, data, size > (1u << 30) ? (1u << 30) : (size_t)size);
    if (w < 0 && errno == EINTR)
      continue;
    ok = w > 0;
    if (ok) {
      data += w;
      size -= (uint64_t)w;
    }
  }
  return close(fd) == 0 && ok;
}

/* The whole regular file at path (malloc'd, a NUL after it). */
static char *read_file(const char *path, uint64_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0)
    return NULL;
  char *buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint64_t)st.st_size <= (1ull << 31) && (buf = malloc((size_t)st.st_size + 1))) {
    size_t n = 0;
    while (n < (size_t)st.st_size) {
      ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      n += (size_t)r;
    }
    if (n != (size_t)st.st_size) {
      free(buf);
      buf = NULL;
    } else {
      buf[n] = '\0';
      *size = n;
    }
  }
  close(fd);
  return buf;
}

/* Compiles the unit with the arguments a. T4A_OK with *so; T4A_ECOMPILE
 * with the compiler's output in *log; T4A_ENOCOMPILER / T4A_ENOMEM. */
static int run_compile(const t4a__hcxx *c, t4a__cxxargs *a, const t4a__ktu *unit, const char *name,
                       char **so, uint64_t *so_size, char **log, uint64_t *log_size) {
  const char *base = t4a__getenv("TMPDIR");
  char dir[4096], src[4200], out[4200];
  if (snprintf(dir, sizeof dir, "%s/t4a-compile-XXXXXX", base && base[0] == '/' ? base : "/tmp") >=
      (int)sizeof dir - 32)
    snprintf(dir, sizeof dir, "/tmp/t4a-compile-XXXXXX"); /* never a cut path */
  if (!mkdtemp(dir))
    return t4a__fail(T4A_ECOMPILE,
                     "artifact_compile: no private directory for the compile (mkdtemp %s: errno "
                     "%d); set TMPDIR to a writable directory",
                     dir, errno);
  snprintf(src, sizeof src, "%s/unit.cc", dir);
  snprintf(out, sizeof out, "%s/module.so", dir);
  int rc = T4A_OK, status = 0;
  uint32_t base_count = a->count;
  if (!write_file(src, unit->text, unit->size)) {
    rc = t4a__fail(T4A_ECOMPILE, "artifact_compile: writing the unit to %s failed (errno %d)", src,
                   errno);
    goto out;
  }
  a->v[a->count++] = "-o";
  a->v[a->count++] = out;
  a->v[a->count++] = src;
  a->v[a->count++] = "-lm";
  a->v[a->count] = NULL;
  rc = t4a__hcxx_run(c, a->v, dir, log, log_size, &status);
  if (rc)
    goto out;
  if (status != 0) {
    const char *first = **log ? *log : "(no output)";
    const char *err = strstr(first, "error");
    const char *line = err ? err : first;
    while (err && line > first && line[-1] != '\n')
      line--;
    int len = (int)strcspn(line, "\n");
    rc = t4a__fail(T4A_ECOMPILE,
                   "compiling '%s' failed (%s exited %d): %.*s; fix it (the full log is in "
                   "artifact_log)",
                   name, c->path, status, len > 300 ? 300 : len, line);
    goto out;
  }
  if (!(*so = read_file(out, so_size)))
    rc = t4a__fail(T4A_ECOMPILE,
                   "artifact_compile: %s made no shared object at %s; check the "
                   "compiler",
                   c->path, out);
out:
  a->count = base_count;
  remove_dir(dir);
  return rc;
}

/* ---- artifact_compile ------------------------------------------------------------------- */

/* The artifact of a failed compile: no code, the log (NUL-terminated). */
static int failed(int status, char *log, const char *name, t4a_artifact *out) {
  t4a__error detail = *t4a__error_get();
  if (!log && !(log = calloc(1, 1)))
    return t4a__fail(T4A_ENOMEM, "artifact_compile: out of host memory");
  int rc = t4a__artifact_add(T4A_ARTIFACT_HOST, NULL, 0, log, strlen(log), 0, name, NULL, out);
  if (rc) {
    free(log);
    return rc;
  }
  t4a__error_set(&detail);
  return status;
}

int t4a__slot_artifact_compile(const t4a_compile_options *o, t4a_artifact *out) {
  T4A__FORK_CHECK("artifact_compile");
  if (!out)
    return t4a__fail(T4A_EINVAL, "artifact_compile: out is NULL; pass a pointer");
  out->bits = 0;
  uint64_t size = 0;
  int rc = check_request(o, &size);
  if (rc)
    return rc;
  const char *name = o->name ? o->name : "t4a.cu";
  bool checked = t4a__hcheck_env();
  uint8_t key[32] = {0};
  t4a__hcxx c;
  t4a__keyreq kr = {&c, checked, o, size};
  bool memo_cacheable = false, memo_hit = false;
  /* The memory cache first, without a system call: the compiler as last
   * found (cxx.h), the key of a request seen lately (keymemo.h). */
  if (!(o->flags & T4A_COMPILE_NO_CACHE) && t4a__hcxx_last(&c) &&
      t4a__keymemo_find(&kr, key, &memo_cacheable) && memo_cacheable &&
      t4a__artifact_cached(key, out))
    return T4A_OK;
  if ((rc = t4a__hcxx_find(&c, "artifact_compile")))
    return rc;
  memo_hit = !(o->flags & T4A_COMPILE_NO_CACHE) && t4a__keymemo_find(&kr, key, &memo_cacheable);
  t4a__cxxargs a;
  a.count = a.owned_count = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    a.v[a.count++] = fixed[i];
  if (!c.clang)
    a.v[a.count++] = no_unique;
  if (c.major >= (c.clang ? 11 : 8))
    a.v[a.count++] = clash;
  if (checked) /* loop-mode threads keep their index for fault_here (a key of its own) */
    a.v[a.count++] = "-DT4A_HK_CHECKED=1";
  char *log = NULL;
  int mrc = t4a__cxxargs_map(&a, name, o->options, o->option_count, &log);
  if (mrc == T4A_ENOMEM) {
    t4a__cxxargs_free(&a);
    free(log);
    return t4a__fail(T4A_ENOMEM, "artifact_compile: out of host memory for the options");
  }
  if (mrc) {
    t4a__cxxargs_free(&a);
    (void)t4a__fail(mrc, "artifact_compile: '%s': %s; see artifact_log", name,
                    mrc == T4A_EINVAL ? "an option is not one the host backend knows"
                                      : "an option asks for what the host backend cannot do");
    return failed(mrc, log, name, out);
  }
  bool cached = !(o->flags & T4A_COMPILE_NO_CACHE);
  const char *why =
      cached && !(memo_hit && memo_cacheable) ? t4a__compile_reads_files(o, size) : NULL;
  if (why) {
    cached = false;
    pthread_mutex_lock(&clock_);
    uint64_t count = ++uncached;
    pthread_mutex_unlock(&clock_);
    t4a__log(T4A__LOG_INFO, "host",
             "artifact_compile: '%s' is compiled without the caches: %s (%llu such compiles)", name,
             why, (unsigned long long)count);
  }
  int version = 1000 * c.major + 10 * c.minor;
  if (cached && !memo_hit)
    cache_key(o, size, &c, &a, key);
  if (!memo_hit && !(o->flags & T4A_COMPILE_NO_CACHE)) /* remembered, cacheable or not */
    t4a__keymemo_put(&kr, key, cached);
  if (cached) {
    if (t4a__artifact_cached(key, out)) {
      t4a__cxxargs_free(&a);
      return T4A_OK;
    }
    t4a__disk_entry e;
    if (t4a__disk_lookup(&disk, key, T4A_ARTIFACT_HOST, &e)) {
      t4a__cxxargs_free(&a);
      rc = t4a__artifact_add(T4A_ARTIFACT_HOST, e.data, e.size, e.log, e.log_size, version, name,
                             key, out);
      if (rc) {
        free(e.data);
        free(e.log);
      }
      return rc;
    }
  }
  pthread_mutex_lock(&clock_);
  misses++;
  pthread_mutex_unlock(&clock_);
  t4a__ktu unit;
  rc = t4a__ktranslate(o->source, size, name, &unit);
  if (rc) {
    t4a__cxxargs_free(&a);
    char *tlog = unit.log;
    unit.log = NULL;
    t4a__ktu_free(&unit);
    if (rc != T4A_ECOMPILE) {
      free(tlog);
      return t4a__fail(rc, "artifact_compile: translating '%s' failed (out of host memory)", name);
    }
    const char *first = tlog ? tlog : "";
    (void)t4a__fail(T4A_ECOMPILE,
                    "compiling '%s' failed: %.*s; fix it (the full log is in "
                    "artifact_log)",
                    name, (int)strcspn(first, "\n") > 300 ? 300 : (int)strcspn(first, "\n"), first);
    return failed(T4A_ECOMPILE, tlog, name, out);
  }
  char *so = NULL;
  uint64_t so_size = 0, log_size = 0;
  rc = run_compile(&c, &a, &unit, name, &so, &so_size, &log, &log_size);
  t4a__ktu_free(&unit);
  t4a__cxxargs_free(&a);
  if (rc == T4A_ECOMPILE)
    return failed(rc, log, name, out);
  if (rc) {
    free(log);
    return rc;
  }
  if (!log && !(log = calloc(1, 1))) {
    free(so);
    return t4a__fail(T4A_ENOMEM, "artifact_compile: out of host memory");
  }
  log_size = strlen(log);
  if ((rc = t4a__artifact_add(T4A_ARTIFACT_HOST, so, so_size, log, log_size, version, name,
                              cached ? key : NULL, out))) {
    free(so);
    free(log);
    return rc;
  }
  if (cached)
    t4a__disk_store(&disk, key, T4A_ARTIFACT_HOST, so, so_size, log, log_size);
  return T4A_OK;
}

/* ---- the caches' slots, artifact_from_bytes ----------------------------------------- */

int t4a__slot_compile_cache_stats(t4a_compile_cache_stats *out) {
  pthread_mutex_lock(&clock_);
  uint64_t n = misses;
  pthread_mutex_unlock(&clock_);
  return t4a__compile_cache_stats_slot(out, &disk, n);
}

int t4a__slot_compile_cache_clear(uint32_t which) {
  return t4a__compile_cache_clear_slot(which, &disk);
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
  switch (kind) {
  case T4A_ARTIFACT_HOST: break; /* checked when loaded (module.c) */
  case T4A_ARTIFACT_PTX:
  case T4A_ARTIFACT_CUBIN:
  case T4A_ARTIFACT_FATBIN:
    return t4a__fail(T4A_EUNSUPPORTED,
                     "artifact_from_bytes: PTX, CUBIN and fatbin are NVIDIA GPU code, which a CPU "
                     "cannot run; compile the CUDA C source with artifact_compile (the host "
                     "backend builds it with the host C++ compiler), or pass "
                     "T4A_ARTIFACT_HOST bytes");
  default:
    return t4a__fail(T4A_EINVAL,
                     "artifact_from_bytes: unknown kind %d; use T4A_ARTIFACT_HOST (or, on the cuda "
                     "backend, _PTX, _CUBIN or _FATBIN)",
                     (int)kind);
  }
  return t4a__artifact_from_copy(kind, data, size, name, out);
}
