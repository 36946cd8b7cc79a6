/* plugin-cuda/nvrtc.c -- loading NVRTC lazily, on first compile only.
 *
 * $T4A_NVRTC_LIBRARY when set (and only it: an override that fails is
 * reported, never silently replaced), else in order libnvrtc.so.13, .12,
 * .11.2, then libnvrtc.so. A missing compiler affects compile calls only. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/env.h"
#include "common/log.h"
#include "plugin-cuda/backend.h"
#include "common/str.h"
#include "plugin-cuda/nvrtc.h"
#include "plugin-cuda/slots.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static t4a__nvrtc nvrtc;
static int loaded;         /* 1 when usable */
static t4a__error failure; /* why not, replayed to callers */

typedef struct nsym {
  const char *name;
  size_t offset;
  int required;
} nsym;

static const nsym nsyms[] = {
#define T4A__NSYM(name, req, ret, params) {#name, offsetof(t4a__nvrtc_api, name), req},
    T4A__NVRTC_FUNCS(T4A__NSYM)
#undef T4A__NSYM
};

static int try_file(const char *file, char *tried, size_t tried_size) {
  void *dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    size_t n = strlen(tried);
    snprintf(tried + n, tried_size - n, "%s%s", n ? ", " : "", file);
    return 0;
  }
  for (size_t i = 0; i < sizeof nsyms / sizeof nsyms[0]; i++) {
    void *p = dlsym(dl, nsyms[i].name);
    if (!p && nsyms[i].required) {
      t4a__fail(T4A_ENOCOMPILER,
                "%s lacks %s; install NVRTC 11.2 or newer, or set "
                "T4A_NVRTC_LIBRARY",
                file, nsyms[i].name);
      dlclose(dl);
      return -1;
    }
    memcpy((char *)&nvrtc.fn + nsyms[i].offset, &p, sizeof p);
  }
  if (nvrtc.fn.nvrtcVersion(&nvrtc.major, &nvrtc.minor) != T4A__NVRTC_SUCCESS) {
    t4a__fail(T4A_ENOCOMPILER, "nvrtcVersion failed in %s; reinstall NVRTC", file);
    dlclose(dl);
    return -1;
  }
  t4a__strcopy(nvrtc.path, sizeof nvrtc.path, file);
  t4a__log(T4A__LOG_INFO, "cuda", "NVRTC %d.%d from %s", nvrtc.major, nvrtc.minor, file);
  return 1; /* kept loaded for the life of the process */
}

static void load_once(void) {
  static const char *const candidates[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                                           "libnvrtc.so"};
  char tried[512] = "";
  /* nvrtc.path is reported (compiler_info): a path it cannot hold is refused
   * rather than shown as another, shortened name */
  const char *env = NULL;
  int r = 0;
  if (t4a__getenv_path("T4A_NVRTC_LIBRARY", sizeof nvrtc.path, T4A_ENOCOMPILER, &env) != T4A_OK)
    r = -1; /* refused, the failure recorded */
  else if (env)
    r = try_file(env, tried, sizeof tried);
  else
    for (size_t i = 0; r == 0 && i < sizeof candidates / sizeof candidates[0]; i++)
      r = try_file(candidates[i], tried, sizeof tried);
  if (r == 1) {
    loaded = 1;
    return;
  }
  if (r == 0)
    t4a__fail(T4A_ENOCOMPILER,
              "NVRTC not found (tried %s); install the CUDA run-time compiler (libnvrtc) or set "
              "T4A_NVRTC_LIBRARY to its path",
              tried);
  failure = *t4a__error_get();
}

const t4a__nvrtc *t4a__nvrtc_get(void) {
  pthread_once(&once, load_once);
  if (loaded)
    return &nvrtc;
  t4a__error_set(&failure);
  return NULL;
}

int t4a__slot_compiler_info(t4a_compiler_info *info) {
  T4A__FORK_CHECK("compiler_info");
  int rc = t4a__check_struct(info, T4A_COMPILER_INFO_V1_0_SIZE, "t4a_compiler_info");
  if (rc)
    return rc;
  t4a_compiler_info out;
  memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  const t4a__nvrtc *n = t4a__nvrtc_get();
  if (n) {
    out.status = T4A_OK;
    out.version_major = n->major;
    out.version_minor = n->minor;
    t4a__strcopy(out.path, sizeof out.path, n->path);
  } else {
    out.status = failure.status;
    t4a__strcopy(out.reason, sizeof out.reason, failure.message);
  }
  t4a__fill_struct(info, &out, sizeof out);
  return T4A_OK;
}
