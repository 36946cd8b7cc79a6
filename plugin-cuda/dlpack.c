/* plugin-cuda/dlpack.c -- dlpack_export and dlpack_import on CUDA: which
 * buffer a handle names and which device a tensor is on. The checks, the
 * order, the export block and its deleters are backend-core/dlpack.c's.
 *
 * Devices: a buffer exports as kDLCUDA with the runtime's ordinal, or as
 * kDLCUDAHost when it wraps page-locked host memory (T4A_EXTERNAL_HOST);
 * an import takes kDLCUDA of the runtime's device and kDLCUDAHost, checked
 * with the driver by the external wrap (external.c). */
#include "config.h"

#include "backend-core/dlpack.h"
#include "plugin-cuda/external.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

/* The buffer's memory and device, under its runtime's lock. */
static int find(t4a_runtime h, t4a_buffer bh, t4a__dl_where *w) {
  t4a__runtime *rt;
  t4a__buffer *buf;
  int rc = t4a__rt_lock(h, "dlpack_export", &rt);
  if (rc)
    return rc;
  if (!(rc = t4a__buffer_get(rt, bh, "dlpack_export", &buf))) {
    uint64_t host_address = 0;
    bool host = t4a__external_host(buf, &host_address);
    *w = (t4a__dl_where){host ? host_address : buf->ptr, buf->size,
                         host ? T4A_DL_CUDA_HOST : T4A_DL_CUDA, host ? 0 : rt->ordinal};
  }
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_dlpack_export(t4a_runtime h, t4a_buffer bh, const t4a_dlpack_export *req,
                            void **out) {
  return t4a__dl_export_slot(t4a__require_init(), h, bh, req, out, find);
}

static int device(const t4a_dl_tensor *t) {
  int32_t type = t->device.device_type;
  if (type == T4A_DL_CUDA || type == T4A_DL_CUDA_HOST)
    return T4A_OK;
  return t4a__fail(T4A_EUNSUPPORTED,
                   "dlpack_import: the tensor's device type is %d; t4a imports CUDA device "
                   "memory (%d) and page-locked host memory (%d): copy it there first",
                   (int)type, T4A_DL_CUDA, T4A_DL_CUDA_HOST);
}

/* kDLCUDA of rt's device (another: T4A_EFOREIGNDEVICE) or kDLCUDAHost. */
static int wrap(t4a_runtime h, void *tensor, const t4a__dl_import *imp, t4a_buffer *out) {
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "dlpack_import", &rt);
  if (rc)
    return rc;
  bool host = imp->t->device.device_type == T4A_DL_CUDA_HOST;
  int32_t id = imp->t->device.device_id;
  if (!host && id != rt->ordinal)
    rc = t4a__fail(T4A_EFOREIGNDEVICE,
                   "dlpack_import: the tensor is on device %d, the runtime on device %d; import "
                   "it into a runtime of device %d",
                   (int)id, (int)rt->ordinal, (int)id);
  else
    rc = t4a__external_wrap(rt, "dlpack_import", imp->start, imp->bytes, host, imp->release, tensor,
                            out);
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_dlpack_import(t4a_runtime h, void *tensor, uint32_t flags, t4a_buffer *out,
                            uint64_t *offset) {
  return t4a__dl_import_slot(t4a__require_init(), h, tensor, flags, out, offset, device, wrap);
}
