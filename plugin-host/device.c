/* plugin-host/device.c -- the backend and its one device, the host: init,
 * get_info, device_count, device_info, peer access (compiler_info: cxx.c).
 *
 * The device's facts (docs/design.md, "The host backend", and the header's
 * t4a_device_info comment): name = the CPU model (/proc/cpuinfo), memory =
 * the physical RAM, multiprocessors = the online CPUs, flags = integrated
 * and unified addressing (device memory is host memory), compute
 * capability 0.0, stream-ordered pools (memory.c), no UUID or PCI address (zeros / ""), warp size
 * 32 (the prelude's warps), the launch limits of a CUDA device (which launches check: 1024
 * threads, 48 KiB of dynamic shared memory, 227 KiB with opt-in), max_pitch = 2^46 (the largest
 * buffer). */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend-core/fork.h"
#include "backend-core/structs.h"
#include "plugin-host/host.h"
#include "backend-core/slots.h"

t4a_device_info t4a__host_device;
static atomic_int ready;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void cpu_name(char *out, size_t size) {
  snprintf(out, size, "host CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    const char *colon = strchr(line, ':');
    if (colon && strncmp(line, "model name", 10) == 0) {
      colon++;
      while (*colon == ' ' || *colon == '\t')
        colon++;
      snprintf(out, size, "%.*s", (int)strcspn(colon, "\n"), colon);
      break;
    }
  }
  fclose(f);
}

/* In a forked child (fork.h): the gate's fast path fails there. */
static void forked(void) { atomic_store_explicit(&ready, 0, memory_order_relaxed); }

static void discover(void) {
  t4a_device_info *d = &t4a__host_device;
  memset(d, 0, sizeof *d);
  d->struct_size = sizeof *d;
  cpu_name(d->name, sizeof d->name);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  d->total_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  d->multiprocessors = cpus > 0 ? (int32_t)cpus : 1;
  d->flags = T4A_DEVICE_MEMORY_POOLS | T4A_DEVICE_INTEGRATED | T4A_DEVICE_UNIFIED_ADDRESSING;
  d->max_threads_per_block = 1024;
  d->max_block_dim[0] = d->max_block_dim[1] = 1024;
  d->max_block_dim[2] = 64;
  d->max_grid_dim[0] = 0x7fffffff;
  d->max_grid_dim[1] = d->max_grid_dim[2] = 65535;
  /* 48 KiB by default, opt-in up to an H100's or H200's 227 KiB: a kernel
   * written for those opts in unchanged (shared memory is heap here) */
  d->max_shared_per_block = 48 << 10;
  d->max_shared_per_block_optin = 227 << 10;
  d->warp_size = 32; /* the prelude runs warps of 32 threads, as CUDA's */
  d->max_pitch = T4A__MAX_ALLOC;
  atomic_store(&ready, 1);
}

int t4a__slot_init(void) {
  T4A__FORK_CHECK("init");
  t4a__fork_used(forked); /* this process's now: a forked child gets none of it */
  /* buffer, host buffer and graph generations from 2^27 (the CUDA plugin's
   * copy of core starts at 1): one backend's handles are T4A_EHANDLE in the
   * other, as runtime and witness handles are (lifecycle.c, witness.c) */
  t4a__htable_gen_start(1u << 27);
  pthread_once(&once, discover);
  return T4A_OK;
}

int t4a__host_require_init(void) {
  if (atomic_load_explicit(&ready, memory_order_acquire))
    return T4A_OK;
  if (t4a__fork_child())
    return t4a__fork_fail(NULL);
  return t4a__fail(T4A_ENOTINIT, "the host backend is not initialised; call init() first");
}

int t4a__slot_get_info(t4a_backend_info *info) {
  int rc = t4a__check_struct(info, T4A_BACKEND_INFO_V1_0_SIZE, "t4a_backend_info");
  if (rc)
    return rc;
  t4a_backend_info out = {.struct_size = sizeof out,
                          .abi_major = T4A_GPU_BACKEND_ABI_MAJOR,
                          .abi_minor = T4A_GPU_BACKEND_ABI_MINOR,
                          .device_count = atomic_load(&ready) ? 1 : 0};
  snprintf(out.name, sizeof out.name, "host");
  snprintf(out.version, sizeof out.version, "%s", PACKAGE_VERSION);
  t4a__fill_struct(info, &out, sizeof out);
  return T4A_OK;
}

int t4a__slot_device_count(int32_t *count) {
  if (!count)
    return t4a__fail(T4A_EINVAL, "device_count: count is NULL; pass a pointer");
  int rc = t4a__host_require_init();
  if (rc)
    return rc;
  *count = 1;
  return T4A_OK;
}

int t4a__host_check_ordinal(int32_t ordinal, const char *what) {
  int rc = t4a__host_require_init();
  if (rc)
    return rc;
  if (ordinal != 0)
    return t4a__fail(T4A_EINVAL,
                     "%s: device %d does not exist: the host backend has one device, 0 (the "
                     "host); pass 0",
                     what, (int)ordinal);
  return T4A_OK;
}

int t4a__slot_device_info(int32_t ordinal, t4a_device_info *info) {
  int rc = t4a__check_struct(info, T4A_DEVICE_INFO_V1_0_SIZE, "t4a_device_info");
  if (rc || (rc = t4a__host_check_ordinal(ordinal, "device_info")))
    return rc;
  t4a__fill_struct(info, &t4a__host_device, sizeof t4a__host_device);
  return T4A_OK;
}

int t4a__slot_peer_access_supported(int32_t src, int32_t dst, bool *supported) {
  if (!supported)
    return t4a__fail(T4A_EINVAL, "peer_access_supported: supported is NULL; pass a pointer");
  int rc = t4a__host_check_ordinal(src, "peer_access_supported");
  if (rc || (rc = t4a__host_check_ordinal(dst, "peer_access_supported")))
    return rc;
  *supported = false; /* one device: there is no peer */
  return T4A_OK;
}
