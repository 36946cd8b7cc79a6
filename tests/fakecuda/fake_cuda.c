/* tests/fakecuda/fake_cuda.c -- a test-only libcuda.so.1 stand-in; see
 * README beside this file: initialisation, device queries, error names and
 * cuGetProcAddress. The functional part is in the other fake_*.c files. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

int fake_env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static int mode_is(const char *m) {
  const char *v = getenv("FAKE_CUDA_MODE");
  return v && strcmp(v, m) == 0;
}

static int initialised;
static int init_calls;

bool fake_initialised(void) { return __atomic_load_n(&initialised, __ATOMIC_SEQ_CST) != 0; }

/* Test control: how many times cuInit was called in this process. */
EXPORT int fake_cuda_init_calls(void);
int fake_cuda_init_calls(void) { return init_calls; }

int fake_device_count(void) { return fake_env_int("FAKE_CUDA_DEVICES", 2); }
#define device_count fake_device_count

static R check_device(t4a__CUdevice d) {
  return d >= 0 && d < device_count() ? T4A__CUDA_SUCCESS : T4A__CUDA_ERROR_INVALID_DEVICE;
}

/* FAKE_CUDA_NO_PEER: set (to anything but pairs) no device reaches
 * another; "A>B,C>D" removes only those directions (device A cannot
 * access device B's memory). */
bool fake_can_access_peer(int from, int to) {
  const char *v = getenv("FAKE_CUDA_NO_PEER");
  if (from == to)
    return true;
  if (!v)
    return true;
  if (!strchr(v, '>'))
    return false;
  for (const char *p = v; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    int a, b;
    if (sscanf(p, "%d>%d", &a, &b) == 2 && a == from && b == to)
      return false;
  }
  return true;
}

/* The entry points resolved by name before cuGetProcAddress (cuda.h
 * declares them when the fake is built with it). */
#ifndef FAKE_CUDA_HEADERS
EXPORT R cuDriverGetVersion(int *v);
EXPORT R cuInit(unsigned int flags);
EXPORT R cuGetProcAddress_v2(const char *symbol, void **pfn, int version, t4a__cuuint64_t flags,
                             t4a__CUdriverProcAddressQueryResult *status);
#endif
R cuDriverGetVersion(int *v) {
  if (mode_is("stub"))
    return T4A__CUDA_ERROR_STUB_LIBRARY;
  if (!v)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  *v = fake_env_int("FAKE_CUDA_VERSION", 12080);
  return T4A__CUDA_SUCCESS;
}

R cuInit(unsigned int flags) {
  __atomic_add_fetch(&init_calls, 1, __ATOMIC_SEQ_CST);
  if (flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (mode_is("stub"))
    return T4A__CUDA_ERROR_STUB_LIBRARY;
  if (mode_is("nodevice"))
    return T4A__CUDA_ERROR_NO_DEVICE;
  if (mode_is("insufficient"))
    return T4A__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
  if (mode_is("initfail"))
    return T4A__CUDA_ERROR_UNKNOWN;
  __atomic_store_n(&initialised, 1, __ATOMIC_SEQ_CST);
  return T4A__CUDA_SUCCESS;
}

static const struct {
  R code;
  const char *name;
} names[] = {
#define FAKE_NAME(n, v) {v, #n},
    T4A__CUDA_DECL_CONSTANTS(FAKE_NAME)
#undef FAKE_NAME
};

static R error_name(R e, const char **s) {
  if (!s)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].code == e && strncmp(names[i].name, "CUDA_", 5) == 0) {
      *s = names[i].name;
      return T4A__CUDA_SUCCESS;
    }
  *s = NULL;
  return T4A__CUDA_ERROR_INVALID_VALUE;
}

/* Every entry point can fail by injection, the device queries and error
 * names included (they work before cuInit, as in CUDA). */
R fake_sym_cuGetErrorName(R e, const char **s) {
  R r = fake_enter("cuGetErrorName", false);
  return r ? r : error_name(e, s);
}

R fake_sym_cuGetErrorString(R e, const char **s) {
  R r = fake_enter("cuGetErrorString", false);
  return r ? r : error_name(e, s);
}

R fake_sym_cuDeviceGetCount(int *n) {
  FAKE_ENTER("cuDeviceGetCount");
  if (!n)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  *n = device_count();
  return T4A__CUDA_SUCCESS;
}

R fake_sym_cuDeviceGet(t4a__CUdevice *d, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  R r = check_device(ordinal);
  if (r)
    return r;
  *d = ordinal;
  return T4A__CUDA_SUCCESS;
}

R fake_sym_cuDeviceGetName(char *name, int len, t4a__CUdevice d) {
  FAKE_ENTER("cuDeviceGetName");
  R r = check_device(d);
  if (r)
    return r;
  snprintf(name, (size_t)len, "Fake GPU %d", d);
  return T4A__CUDA_SUCCESS;
}

R fake_sym_cuDeviceGetUuid(t4a__CUuuid *u, t4a__CUdevice d) {
  FAKE_ENTER("cuDeviceGetUuid");
  R r = check_device(d);
  if (r)
    return r;
  for (int i = 0; i < 16; i++)
    u->bytes[i] = (char)(0xf0 + d * 16 + i);
  return T4A__CUDA_SUCCESS;
}

R fake_sym_cuDeviceTotalMem(size_t *bytes, t4a__CUdevice d) {
  FAKE_ENTER("cuDeviceTotalMem");
  R r = check_device(d);
  if (r)
    return r;
  *bytes = (size_t)fake_env_int("FAKE_CUDA_MEM_MIB", 1024) << 20;
  return T4A__CUDA_SUCCESS;
}

R fake_sym_cuDeviceGetPCIBusId(char *id, int len, t4a__CUdevice d) {
  FAKE_ENTER("cuDeviceGetPCIBusId");
  R r = check_device(d);
  if (r)
    return r;
  snprintf(id, (size_t)len, "0000:%02x:00.0", 0x10 + d);
  return T4A__CUDA_SUCCESS;
}

R fake_sym_cuDeviceGetAttribute(int *v, t4a__CUdevice_attribute a, t4a__CUdevice d) {
  FAKE_ENTER("cuDeviceGetAttribute");
  R r = check_device(d);
  if (r)
    return r;
  switch (a) {
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
  case T4A__CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
  case T4A__CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
  case T4A__CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
  case T4A__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case T4A__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 1; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
  case T4A__CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: /* fake_ipc.c; off for tests */
    *v = getenv("FAKE_CUDA_NO_IPC") ? 0 : (int)T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    break;
  default: return fake_ext_device_attribute(a, v); /* hook: fake_launch_ex.c */
  }
  return T4A__CUDA_SUCCESS;
}

R fake_sym_cuDeviceCanAccessPeer(int *can, t4a__CUdevice d, t4a__CUdevice p) {
  FAKE_ENTER("cuDeviceCanAccessPeer");
  R r;
  if ((r = check_device(d)) || (r = check_device(p)))
    return r;
  *can = d != p && fake_can_access_peer(d, p); /* CUDA: 0 for a device and itself */
  return T4A__CUDA_SUCCESS;
}

typedef struct entry {
  const char *name;
  void *fn;
} entry;

static const entry entries[] = {
#define FAKE_ENTRY(name, sym, req, params) {#name, (void *)fake_sym_##name},
    T4A__CUDA_FUNCS(FAKE_ENTRY)
#undef FAKE_ENTRY
};

static int hidden(const char *name) {
  const char *h = getenv("FAKE_CUDA_HIDE");
  if (!h)
    return 0;
  size_t n = strlen(name);
  for (const char *p = h; (p = strstr(p, name)) != NULL; p += n)
    if ((p == h || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
      return 1;
  return 0;
}

__attribute__((unused)) static void *lookup(const char *name) {
  if (hidden(name))
    return NULL;
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(entries[i].name, name) == 0)
      return entries[i].fn;
  return NULL;
}

#ifndef FAKE_NO_GETPROC
R cuGetProcAddress_v2(const char *symbol, void **pfn, int version, t4a__cuuint64_t flags,
                      t4a__CUdriverProcAddressQueryResult *status) {
  if (mode_is("stub"))
    return T4A__CUDA_ERROR_STUB_LIBRARY;
  if (!symbol || !pfn || version < 12000 || flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  *pfn = lookup(symbol);
  if (status)
    *status = *pfn ? 0 : 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return *pfn ? T4A__CUDA_SUCCESS : T4A__CUDA_ERROR_NOT_FOUND;
}
#endif
