/* plugin-host/dlpack.c -- dlpack_export and dlpack_import on the host:
 * which buffer a handle names and which device a tensor is on. The checks,
 * the order, the export block and its deleters are backend-core/dlpack.c's.
 *
 * Devices: the host's memory is the CPU's, so a buffer (pool or external)
 * exports as kDLCPU, device 0: what NumPy's from_dlpack, PyTorch's and
 * JAX's CPU tensors take, without a copy. An import takes kDLCPU and
 * kDLCUDAHost (page-locked host memory is host memory too): an external
 * buffer over the tensor's bytes (external.c, which refuses read-only
 * registrations), released through the tensor's deleter. The queue runs
 * off the caller's thread: a consumer reading an export synchronises first
 * (seal and wait, as for any host read of a buffer). */
#include "config.h"

#include "backend-core/dlpack.h"
#include "backend-core/slots.h"
#include "plugin-host/host.h"

/* The buffer's memory, under its runtime's lock: host memory, kDLCPU. */
static int find(t4a_runtime h, t4a_buffer bh, t4a__dl_where *w) {
  t4a__hrt *rt;
  t4a__hbuf *b;
  int rc = t4a__hrt_lock(h, "dlpack_export", &rt);
  if (rc)
    return rc;
  if (!(rc = t4a__hbuf_get(rt, bh, "dlpack_export", &b)))
    *w = (t4a__dl_where){(uint64_t)(uintptr_t)b->blk.ptr, b->size, T4A_DL_CPU, 0};
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_dlpack_export(t4a_runtime h, t4a_buffer bh, const t4a_dlpack_export *req,
                            void **out) {
  return t4a__dl_export_slot(t4a__host_require_init(), h, bh, req, out, find);
}

static int device(const t4a_dl_tensor *t) {
  int32_t type = t->device.device_type;
  if (type == T4A_DL_CPU || type == T4A_DL_CUDA_HOST)
    return T4A_OK;
  return t4a__fail(T4A_EUNSUPPORTED,
                   "dlpack_import: the tensor's device type is %d; the host backend imports "
                   "host memory (kDLCPU %d, kDLCUDAHost %d): copy it to the host first",
                   (int)type, T4A_DL_CPU, T4A_DL_CUDA_HOST);
}

static int wrap(t4a_runtime h, void *tensor, const t4a__dl_import *imp, t4a_buffer *out) {
  t4a__hrt *rt;
  int rc = t4a__hrt_lock(h, "dlpack_import", &rt);
  if (rc)
    return rc;
  rc = t4a__host_wrap(rt, "dlpack_import", imp->start, imp->bytes, imp->release, tensor, out);
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_dlpack_import(t4a_runtime h, void *tensor, uint32_t flags, t4a_buffer *out,
                            uint64_t *offset) {
  return t4a__dl_import_slot(t4a__host_require_init(), h, tensor, flags, out, offset, device, wrap);
}
