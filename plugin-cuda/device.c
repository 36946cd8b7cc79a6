/* plugin-cuda/device.c -- device discovery and the device query slots. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-cuda/backend.h"
#include "plugin-cuda/slots.h"

static int attr(t4a__CUdevice d, t4a__CUdevice_attribute a, int32_t *out) {
  int v = 0;
  t4a__CUresult r = t4a__be.cu.cuDeviceGetAttribute(&v, a, d);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__cu_fail(r, "cuDeviceGetAttribute(%u) failed for device %d; check the driver", a,
                        (int)d);
  *out = v;
  return T4A_OK;
}

static int describe(int ordinal, t4a__device *dv) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a_device_info *i = &dv->info;
  memset(i, 0, sizeof *i);
  i->struct_size = sizeof *i;
  i->ordinal = ordinal;
  t4a__CUresult r = cu->cuDeviceGet(&dv->dev, ordinal);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__cu_fail(r, "cuDeviceGet(%d) failed; check the driver", ordinal);
  t4a__CUuuid uuid;
  size_t total = 0;
  if ((r = cu->cuDeviceGetName(i->name, (int)sizeof i->name, dv->dev)) != T4A__CUDA_SUCCESS ||
      (r = cu->cuDeviceGetUuid(&uuid, dv->dev)) != T4A__CUDA_SUCCESS ||
      (r = cu->cuDeviceTotalMem(&total, dv->dev)) != T4A__CUDA_SUCCESS ||
      (r = cu->cuDeviceGetPCIBusId(i->pci_bus_id, (int)sizeof i->pci_bus_id, dv->dev)) !=
          T4A__CUDA_SUCCESS)
    return t4a__cu_fail(r, "querying device %d failed; check the driver", ordinal);
  i->name[sizeof i->name - 1] = '\0';
  i->pci_bus_id[sizeof i->pci_bus_id - 1] = '\0';
  memcpy(i->uuid, uuid.bytes, sizeof i->uuid);
  i->total_memory = total;
  int32_t pools = 0, integrated = 0, unified = 0;
  int rc;
  if ((rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &i->cc_major)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &i->cc_minor)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &i->multiprocessors)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                 &i->max_threads_per_block)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &i->max_block_dim[0])) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &i->max_block_dim[1])) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &i->max_block_dim[2])) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &i->max_grid_dim[0])) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &i->max_grid_dim[1])) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &i->max_grid_dim[2])) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                 &i->max_shared_per_block)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                 &i->max_shared_per_block_optin)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_WARP_SIZE, &i->warp_size)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &pools)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_INTEGRATED, &integrated)) ||
      (rc = attr(dv->dev, T4A__CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, &unified)))
    return rc;
  i->flags = (pools ? T4A_DEVICE_MEMORY_POOLS : 0u) | (integrated ? T4A_DEVICE_INTEGRATED : 0u) |
             (unified ? T4A_DEVICE_UNIFIED_ADDRESSING : 0u);
  /* v1.1: a driver that cannot say leaves it 0 (no limit checked here;
   * the driver still refuses what it cannot do) rather than failing init */
  int pitch = 0;
  if (cu->cuDeviceGetAttribute(&pitch, T4A__CU_DEVICE_ATTRIBUTE_MAX_PITCH, dv->dev) ==
          T4A__CUDA_SUCCESS &&
      pitch > 0)
    i->max_pitch = (uint64_t)pitch;
  int cooperative = 0, clusters = 0;
  dv->cooperative =
      cu->cuDeviceGetAttribute(&cooperative, T4A__CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH,
                               dv->dev) == T4A__CUDA_SUCCESS &&
      cooperative;
  dv->clusters = cu->cuDeviceGetAttribute(&clusters, T4A__CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH,
                                          dv->dev) == T4A__CUDA_SUCCESS &&
                 clusters;
  return T4A_OK;
}

int t4a__devices_discover(void) {
  int n = 0;
  t4a__CUresult r = t4a__be.cu.cuDeviceGetCount(&n);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__cu_fail(r, "cuDeviceGetCount failed; check the driver installation");
  if (n <= 0)
    return t4a__fail(T4A_ENODEVICE, "the CUDA driver reports no device; check that a GPU is "
                                    "present and visible (nvidia-smi, CUDA_VISIBLE_DEVICES)");
  t4a__device *devs = calloc((size_t)n, sizeof *devs);
  if (!devs)
    return t4a__fail(T4A_ENOMEM, "out of host memory describing %d devices; free memory", n);
  for (int i = 0; i < n; i++) {
    int rc = describe(i, &devs[i]);
    if (rc) {
      free(devs);
      return rc;
    }
  }
  t4a__be.peer_state = calloc((size_t)n * (size_t)n, sizeof *t4a__be.peer_state);
  if (!t4a__be.peer_state) {
    free(devs);
    return t4a__fail(T4A_ENOMEM, "out of host memory describing %d devices; free memory", n);
  }
  t4a__be.devices = devs;
  t4a__be.device_count = n;
  return T4A_OK;
}

int t4a__peer_enable(int32_t to, int32_t from, t4a__CUcontext ctx_to, t4a__CUcontext ctx_from) {
  if (!t4a__be.has_peer)
    return t4a__fail(T4A_EUNSUPPORTED, "the CUDA driver lacks the peer-access entry points; "
                                       "update the driver, or use copy_from_peer_via_host");
  int *state = &t4a__be.peer_state[to * t4a__be.device_count + from];
  pthread_mutex_lock(&t4a__be.peer_lock);
  int s = *state;
  if (s == 0) {
    const t4a__cuda_api *cu = &t4a__be.cu;
    int can = 0;
    t4a__CUresult r =
        cu->cuDeviceCanAccessPeer(&can, t4a__be.devices[to].dev, t4a__be.devices[from].dev);
    if (r != T4A__CUDA_SUCCESS) {
      s = t4a__cu_fail(r, "cuDeviceCanAccessPeer(%d, %d) failed", (int)to, (int)from);
    } else if (!can) {
      s = T4A_EUNSUPPORTED;
    } else {
      t4a__CUcontext saved = NULL;
      r = cu->cuCtxGetCurrent(&saved);
      if (r == T4A__CUDA_SUCCESS && saved != ctx_to)
        r = cu->cuCtxSetCurrent(ctx_to);
      if (r == T4A__CUDA_SUCCESS) {
        r = cu->cuCtxEnablePeerAccess(ctx_from, 0);
        if (r == T4A__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
          r = T4A__CUDA_SUCCESS; /* enabled by the consumer's own code: fine */
      }
      if (saved && saved != ctx_to)
        cu->cuCtxSetCurrent(saved);
      s = r == T4A__CUDA_SUCCESS
              ? 1
              : t4a__cu_fail(r, "enabling peer access %d -> %d failed", (int)to, (int)from);
    }
    *state = s;
  }
  pthread_mutex_unlock(&t4a__be.peer_lock);
  if (s == 1)
    return T4A_OK;
  if (s == T4A_EUNSUPPORTED)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "device %d cannot access device %d's memory directly (no peer path); use "
                     "copy_from_peer_via_host for the slower copy through host memory",
                     (int)to, (int)from);
  return t4a__fail(s,
                   "peer access %d -> %d could not be enabled earlier (%s); use "
                   "copy_from_peer_via_host",
                   (int)to, (int)from, t4a_status_name(s));
}

int t4a__check_ordinal(int32_t ordinal, const char *what) {
  if (ordinal < 0 || ordinal >= t4a__be.device_count)
    return t4a__fail(T4A_EINVAL, "%s: device ordinal %d is out of range; use 0..%d", what,
                     (int)ordinal, t4a__be.device_count - 1);
  return T4A_OK;
}

int t4a__slot_device_count(int32_t *count) {
  int rc = t4a__require_init();
  if (rc)
    return rc;
  if (!count)
    return t4a__fail(T4A_EINVAL, "device_count: count is NULL; pass a pointer");
  *count = t4a__be.device_count;
  return T4A_OK;
}

int t4a__slot_device_info(int32_t ordinal, t4a_device_info *info) {
  int rc;
  if ((rc = t4a__require_init()) || (rc = t4a__check_ordinal(ordinal, "device_info")) ||
      (rc = t4a__check_struct(info, T4A_DEVICE_INFO_V1_0_SIZE, "t4a_device_info")))
    return rc;
  t4a__fill_struct(info, &t4a__be.devices[ordinal].info, sizeof(t4a_device_info));
  return T4A_OK;
}

int t4a__slot_peer_access_supported(int32_t src, int32_t dst, bool *supported) {
  int rc;
  if ((rc = t4a__require_init()) || (rc = t4a__check_ordinal(src, "peer_access_supported")) ||
      (rc = t4a__check_ordinal(dst, "peer_access_supported")))
    return rc;
  if (!supported)
    return t4a__fail(T4A_EINVAL, "peer_access_supported: supported is NULL; pass a pointer");
  if (!t4a__be.has_peer)
    return t4a__fail(T4A_EUNSUPPORTED, "the CUDA driver lacks the peer-access entry points "
                                       "(cuDeviceCanAccessPeer and friends); update the driver");
  if (src == dst) {
    *supported = true;
    return T4A_OK;
  }
  int can = 0;
  t4a__CUresult r =
      t4a__be.cu.cuDeviceCanAccessPeer(&can, t4a__be.devices[src].dev, t4a__be.devices[dst].dev);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__cu_fail(r, "cuDeviceCanAccessPeer(%d, %d) failed; check the driver", (int)src,
                        (int)dst);
  *supported = can != 0;
  return T4A_OK;
}
