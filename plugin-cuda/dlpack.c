/* plugin-cuda/dlpack.c -- dlpack_export and dlpack_import on CUDA: which
 * buffer a handle names and which device a tensor is on. The checks, the
 * export block and its deleters are backend-core/dlpack.c's.
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

int t4a__slot_dlpack_export(t4a_runtime h, t4a_buffer bh, const t4a_dlpack_export *req,
                            void **out) {
  int rc = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  t4a__dl_export x;
  if (rc || (rc = t4a__dl_export_prepare(req, out, &x)))
    return rc;
  t4a__runtime *rt;
  t4a__buffer *buf;
  if ((rc = t4a__rt_lock(h, "dlpack_export", &rt)))
    return t4a__dl_export_end(&x, rc);
  if (!(rc = t4a__buffer_get(rt, bh, "dlpack_export", &buf)) &&
      !(rc = t4a__dl_export_fits(&x, buf->size))) {
    uint64_t host_address = 0;
    bool host = t4a__external_host(buf, &host_address);
    t4a__dl_export_finish(&x, host ? host_address : buf->ptr, host ? T4A_DL_CUDA_HOST : T4A_DL_CUDA,
                          host ? 0 : rt->ordinal, out);
  }
  t4a__rt_unlock(rt);
  return t4a__dl_export_end(&x, rc);
}

int t4a__slot_dlpack_import(t4a_runtime h, void *tensor, uint32_t flags, t4a_buffer *out,
                            uint64_t *offset) {
  int rc = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  t4a__dl_import imp;
  if (rc || (rc = t4a__dl_import_prepare(tensor, flags, out, &imp)))
    return rc;
  int32_t type = imp.t->device.device_type;
  bool host = type == T4A_DL_CUDA_HOST;
  if (type != T4A_DL_CUDA && !host)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "dlpack_import: the tensor's device type is %d; t4a imports CUDA device "
                     "memory (%d) and page-locked host memory (%d): copy it there first",
                     (int)type, T4A_DL_CUDA, T4A_DL_CUDA_HOST);
  t4a__runtime *rt;
  if ((rc = t4a__dl_import_locate(&imp)) || (rc = t4a__rt_lock(h, "dlpack_import", &rt)))
    return rc;
  if (!host && imp.t->device.device_id != rt->ordinal)
    rc = t4a__fail(T4A_EFOREIGNDEVICE,
                   "dlpack_import: the tensor is on device %d, the runtime on device %d; import "
                   "it into a runtime of device %d",
                   (int)imp.t->device.device_id, (int)rt->ordinal, (int)imp.t->device.device_id);
  else
    rc = t4a__external_wrap(rt, "dlpack_import", imp.start, imp.bytes, host, imp.release, tensor,
                            out);
  t4a__rt_unlock(rt);
  if (rc == T4A_OK && offset)
    *offset = imp.below;
  return rc;
}
