/* plugin-cuda/compile.c -- artifact_compile: CUDA C through NVRTC to CUBIN
 * for the target device (PTX on request), served from the memory cache
 * (backend-core/artifact.c) and the disk cache (backend-core/diskcache.c)
 * when possible.
 *
 * Both caches are keyed by SHA-256 over everything in the request that
 * decides the output: source, name (it is __FILE__), options, target,
 * output kind, NVRTC version and driver version. Files NVRTC reads while
 * compiling are not in the key (NVRTC cannot say which it read), so a
 * compile that could read any is not cached at all (backend-core/srcscan.c).
 * Failed compiles are never cached. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sha256.h"
#include "backend-core/srcscan.h"
#include "plugin-cuda/artifact.h"
#include "plugin-cuda/nvrtc.h"
#include "plugin-cuda/slots.h"

static const t4a__disk disk = {"cuda", NULL}; /* the cache directory itself */
static pthread_mutex_t clock_ = PTHREAD_MUTEX_INITIALIZER;
static uint64_t misses, uncached; /* compiles performed; of those, not cacheable */

/* ---- compile ---------------------------------------------------------------------- */

static bool names_arch(const char *opt) {
  return strncmp(opt, "-arch", 5) == 0 || strncmp(opt, "--gpu-architecture", 18) == 0;
}

/* Checks the request and fills the target option (or finds it). */
static int check_request(const t4a_compile_options *o, uint64_t *size, char *target, size_t tsize,
                         int *driver_version) {
  int rc = t4a__compile_request_check(o, size); /* backend-core/artifact.c */
  if (rc)
    return rc;
  bool arch = false;
  for (uint32_t i = 0; i < o->option_count; i++)
    arch |= names_arch(o->options[i]);
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
  T4A__FORK_CHECK("artifact_compile");
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
  const char *why = cached ? t4a__compile_reads_files(o, size) : NULL;
  if (why) {
    cached = false;
    pthread_mutex_lock(&clock_);
    uint64_t count = ++uncached;
    pthread_mutex_unlock(&clock_);
    t4a__log(T4A__LOG_INFO, "cuda",
             "artifact_compile: '%s' is compiled without the caches: %s (%llu such compiles)", name,
             why, (unsigned long long)count);
  }
  if (cached) {
    cache_key(o, size, target, n, driver_version, key);
    if (t4a__artifact_cached(key, out))
      return T4A_OK;
    t4a__disk_entry e;
    if (t4a__disk_lookup(&disk, key, kind, &e)) {
      rc = t4a__artifact_add(kind, e.data, e.size, e.log, e.log_size, nv, name, key, out);
      if (rc) {
        free(e.data);
        free(e.log);
      }
      return rc;
    }
  }
  char *data = NULL, *log = NULL;
  uint64_t dsize = 0, log_size = 0;
  pthread_mutex_lock(&clock_);
  misses++;
  pthread_mutex_unlock(&clock_);
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
  rc = t4a__artifact_add(kind, data, crc ? 0 : dsize, log, log_size, nv, name,
                         crc == T4A_OK && cached ? key : NULL, out);
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
    t4a__disk_store(&disk, key, kind, data, dsize, log, log_size);
  return T4A_OK;
}

int t4a__slot_compile_cache_stats(t4a_compile_cache_stats *out) {
  pthread_mutex_lock(&clock_);
  uint64_t n = misses;
  pthread_mutex_unlock(&clock_);
  return t4a__compile_cache_stats_slot(out, &disk, n);
}

int t4a__slot_compile_cache_clear(uint32_t which) {
  return t4a__compile_cache_clear_slot(which, &disk);
}
