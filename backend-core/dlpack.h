/* backend-core/dlpack.h -- dlpack_export and dlpack_import (dlpack.c), written
 * once for every backend: the checks of a request or a producer's tensor,
 * the span its elements occupy, the export block with its deleters, and
 * the order of it all. What stays with a backend is what only it knows,
 * handed in as two or three small functions: which buffer a handle names
 * (its memory, size and device), which devices it imports from, and how it
 * wraps a tensor's bytes as a buffer. So each plugin's dlpack.c holds those
 * and a slot of one call each. */
#ifndef T4A_CORE_DLPACK_H
#define T4A_CORE_DLPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

/* Where the bytes of the buffer an export names lie, and on which device:
 * a backend's answer, read under its runtime's lock (find, below). */
typedef struct t4a__dl_where {
  uint64_t address, size;
  int32_t device_type, device_id;
} t4a__dl_where;

/* dlpack_export: `ready` is the backend's init status (its T4A_ENOTINIT
 * comes first, as in every runtime slot); then out and the request
 * (struct_size, flags, dtype, shape, strides); then find(rt, b, &where),
 * which looks the buffer up under rt's lock (T4A_EHANDLE and the like,
 * with its message) and lets the lock go; then the elements must lie in
 * the buffer (T4A_ERANGE). On success *out is the tensor, whose deleters
 * are this plugin's code (it stays loaded from then on); on failure *out is
 * NULL and nothing was made. */
int t4a__dl_export_slot(int ready, t4a_runtime rt, t4a_buffer b, const t4a_dlpack_export *req,
                        void **out, int (*find)(t4a_runtime, t4a_buffer, t4a__dl_where *));

/* A producer's tensor, checked: where its elements lie and how to let it go. */
typedef struct t4a__dl_import {
  const t4a_dl_tensor *t;
  uint64_t start, bytes;         /* the lowest byte any element occupies, and the span */
  uint64_t below;                /* bytes from start to element 0 (negative strides) */
  void (*release)(void *tensor); /* calls the tensor's deleter (legacy or versioned) */
} t4a__dl_import;

/* dlpack_import: `ready` first (as above); then tensor, flags and out
 * (out->bits = 0 from here on), the tensor's form (version, read-only),
 * shape and strides; then device(imp->t), the backend's rule for the
 * tensor's device (T4A_EUNSUPPORTED for one it does not import: a wrong
 * device is reported before bad data); then the data against the span;
 * then wrap(rt, tensor, imp, out), which locks rt and wraps [imp->start,
 * +imp->bytes) as a buffer whose release is imp->release(tensor) (checking
 * what else the backend must: the device's ordinal, the memory). On success
 * rt owns the tensor and *offset (may be NULL) is imp->below. */
int t4a__dl_import_slot(int ready, t4a_runtime rt, void *tensor, uint32_t flags, t4a_buffer *out,
                        uint64_t *offset, int (*device)(const t4a_dl_tensor *),
                        int (*wrap)(t4a_runtime, void *, const t4a__dl_import *, t4a_buffer *));

#endif
