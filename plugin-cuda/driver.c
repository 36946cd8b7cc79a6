/* plugin-cuda/driver.c -- loading libcuda at run time and initialising it.
 *
 * The driver is opened with dlopen("libcuda.so.1") (never the bare
 * libcuda.so, which on many hosts is the toolkit's link stub), or the file
 * named by T4A_CUDA_LIBRARY. Entry points are resolved through
 * cuGetProcAddress with cudaVersion 12000, so the driver hands out the
 * variants whose signatures cuda_decls.h declares. Only when the driver has
 * no cuGetProcAddress are the versioned names looked up with dlsym; when it
 * has one, its answer is final (dlsym could return another variant). Once cuInit succeeded the
 * library stays loaded for the life of the process: the driver has no
 * finaliser, and unloading it under live contexts is unsafe. */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "common/log.h"
#include "common/str.h"
#include "plugin-cuda/backend.h"
#include "plugin-cuda/slots.h"

typedef struct symbol {
  const char *name;      /* base name for cuGetProcAddress */
  const char *versioned; /* exported name for dlsym */
  size_t offset;         /* in t4a__cuda_api */
  int required;
} symbol;

static const symbol symbols[] = {
#define T4A__SYMBOL(name, sym, req, params) {#name, sym, offsetof(t4a__cuda_api, name), req},
    T4A__CUDA_FUNCS(T4A__SYMBOL)
#undef T4A__SYMBOL
};

static void *dlsym_fn(void *dl, const char *name) { return dlsym(dl, name); }

/* Resolves every entry point; T4A_EDRIVEROLD naming the first missing
 * required one. */
static int resolve(void *dl) {
  t4a__pfn_cuGetProcAddress_v2 gpa2;
  t4a__pfn_cuGetProcAddress gpa1;
  *(void **)&gpa2 = dlsym_fn(dl, "cuGetProcAddress_v2");
  *(void **)&gpa1 = gpa2 ? NULL : dlsym_fn(dl, "cuGetProcAddress");
  if (!gpa2 && !gpa1)
    t4a__log(T4A__LOG_DEBUG, "cuda", "no cuGetProcAddress: resolving with dlsym");
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    const symbol *s = &symbols[i];
    void *p = NULL;
    t4a__CUdriverProcAddressQueryResult st = 0;
    if (gpa2) { /* the driver knows best: no dlsym second guess */
      if (gpa2(s->name, &p, T4A__CUDA_API_VERSION, T4A__CU_GET_PROC_ADDRESS_DEFAULT, &st) !=
              T4A__CUDA_SUCCESS ||
          st != T4A__CU_GET_PROC_ADDRESS_SUCCESS)
        p = NULL;
    } else if (gpa1) {
      if (gpa1(s->name, &p, T4A__CUDA_API_VERSION, T4A__CU_GET_PROC_ADDRESS_DEFAULT) !=
          T4A__CUDA_SUCCESS)
        p = NULL;
    } else {
      p = dlsym_fn(dl, s->versioned);
    }
    if (!p && s->required)
      return t4a__fail(T4A_EDRIVEROLD,
                       "the CUDA driver %s (CUDA %d.%d) lacks %s; update the NVIDIA driver to one "
                       "supporting CUDA 12.0 or newer",
                       t4a__be.driver_path, t4a__be.driver_version / 1000,
                       t4a__be.driver_version % 1000 / 10, s->name);
    if (!p)
      t4a__log(T4A__LOG_INFO, "cuda", "optional %s missing: its feature is disabled", s->name);
    memcpy((char *)&t4a__be.cu + s->offset, &p, sizeof p);
  }
  t4a__be.has_peer = t4a__be.cu.cuDeviceCanAccessPeer && t4a__be.cu.cuCtxEnablePeerAccess &&
                     t4a__be.cu.cuMemPoolSetAccess && t4a__be.cu.cuMemcpyPeerAsync;
  return T4A_OK;
}

static int init_failure(t4a__CUresult r, const char *file) {
  switch (r) {
  case T4A__CUDA_ERROR_STUB_LIBRARY:
    return t4a__cu_fail(r,
                        "%s is the CUDA toolkit's stub library, not the driver; install the "
                        "NVIDIA driver or point T4A_CUDA_LIBRARY at its libcuda.so.1",
                        file);
  case T4A__CUDA_ERROR_NO_DEVICE:
    return t4a__cu_fail(r, "cuInit found no CUDA device; check that a GPU is present and "
                           "visible (nvidia-smi, CUDA_VISIBLE_DEVICES)");
  case T4A__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case T4A__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return t4a__cu_fail(r,
                        "cuInit failed: the driver library %s does not match the kernel "
                        "module or device; reinstall one consistent NVIDIA driver",
                        file);
  default:
    return t4a__cu_fail(r, "cuInit failed; check the driver installation (nvidia-smi) and the "
                           "kernel log");
  }
}

static int init_locked(void) {
  /* driver_path is reported (get_info, messages): a path it cannot hold is
   * refused rather than shown as another, shortened name */
  const char *env = NULL;
  int rc = t4a__getenv_path("T4A_CUDA_LIBRARY", sizeof t4a__be.driver_path, T4A_ENODRIVER, &env);
  if (rc)
    return rc;
  const char *file = env ? env : "libcuda.so.1";
  t4a__strcopy(t4a__be.driver_path, sizeof t4a__be.driver_path, file);
  dlerror();
  void *dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    return t4a__fail(T4A_ENODRIVER,
                     "cannot load the CUDA driver library %s (%s); install the "
                     "NVIDIA driver, or set T4A_CUDA_LIBRARY to its libcuda.so.1",
                     file, dlerror());
  *(void **)&t4a__be.cu.cuDriverGetVersion = dlsym_fn(dl, "cuDriverGetVersion");
  *(void **)&t4a__be.cu.cuInit = dlsym_fn(dl, "cuInit");
  *(void **)&t4a__be.cu.cuGetErrorName = dlsym_fn(dl, "cuGetErrorName");
  if (!t4a__be.cu.cuDriverGetVersion || !t4a__be.cu.cuInit) {
    rc = t4a__fail(T4A_ENODRIVER,
                   "%s is not a CUDA driver library (no cuDriverGetVersion or "
                   "cuInit); point T4A_CUDA_LIBRARY at the driver's libcuda.so.1",
                   file);
    goto fail;
  }
  int version = 0;
  t4a__CUresult r = t4a__be.cu.cuDriverGetVersion(&version);
  if (r != T4A__CUDA_SUCCESS) {
    rc = init_failure(r, file);
    goto fail;
  }
  t4a__be.driver_version = version;
  if (version < T4A__CUDA_MIN_DRIVER) {
    rc = t4a__fail(T4A_EDRIVEROLD,
                   "the CUDA driver %s supports CUDA %d.%d, t4a needs %d.%d or newer; update the "
                   "NVIDIA driver",
                   file, version / 1000, version % 1000 / 10, T4A__CUDA_MIN_DRIVER / 1000,
                   T4A__CUDA_MIN_DRIVER % 1000 / 10);
    goto fail;
  }
  if ((rc = resolve(dl)) != T4A_OK)
    goto fail;
  r = t4a__be.cu.cuInit(0);
  if (r != T4A__CUDA_SUCCESS) {
    rc = init_failure(r, file);
    goto fail;
  }
  t4a__be.dl = dl;
  if ((rc = t4a__devices_discover()) != T4A_OK) {
    t4a__be.dl = NULL; /* cuInit ran: keep the library loaded, see above */
    return rc;
  }
  t4a__log(T4A__LOG_INFO, "cuda", "driver %s (CUDA %d.%d), %d device(s)", file, version / 1000,
           version % 1000 / 10, t4a__be.device_count);
  return T4A_OK;
fail:
  memset(&t4a__be.cu, 0, sizeof t4a__be.cu);
  dlclose(dl);
  return rc;
}

int t4a__slot_init(void) {
  T4A__FORK_CHECK("init");
  t4a__fork_used(t4a__backend_forked); /* this process's now: a forked child gets none of it */
  int state = atomic_load_explicit(&t4a__be.state, memory_order_acquire);
  if (state == T4A__INIT_NONE) {
    pthread_mutex_lock(&t4a__be.lock);
    state = atomic_load_explicit(&t4a__be.state, memory_order_relaxed);
    if (state == T4A__INIT_NONE) {
      int rc = init_locked();
      if (rc != T4A_OK) {
        t4a__be.init_error = *t4a__error_get();
        t4a__log(T4A__LOG_ERROR, "cuda", "init: %s", t4a__be.init_error.message);
      }
      state = rc == T4A_OK ? T4A__INIT_READY : T4A__INIT_FAILED;
      atomic_store_explicit(&t4a__be.state, state, memory_order_release);
    }
    pthread_mutex_unlock(&t4a__be.lock);
  }
  if (state == T4A__INIT_READY)
    return T4A_OK;
  t4a__error_set(&t4a__be.init_error); /* replay the detail for this thread */
  return t4a__be.init_error.status;
}

int t4a__slot_get_info(t4a_backend_info *info) {
  int rc = t4a__check_struct(info, T4A_BACKEND_INFO_V1_0_SIZE, "t4a_backend_info");
  if (rc)
    return rc;
  t4a_backend_info out;
  memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.abi_major = T4A_GPU_BACKEND_ABI_MAJOR;
  out.abi_minor = T4A_GPU_BACKEND_ABI_MINOR;
  snprintf(out.name, sizeof out.name, "cuda");
  t4a__strcopy(out.version, sizeof out.version, PACKAGE_VERSION);
  int state = atomic_load_explicit(&t4a__be.state, memory_order_acquire);
  if (state != T4A__INIT_NONE) {
    out.driver_version = t4a__be.driver_version;
    t4a__strcopy(out.driver_path, sizeof out.driver_path, t4a__be.driver_path);
  }
  if (state == T4A__INIT_READY)
    out.device_count = t4a__be.device_count;
  t4a__fill_struct(info, &out, sizeof out);
  return T4A_OK;
}
