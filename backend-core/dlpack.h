/* backend-core/dlpack.h -- the backend-neutral half of dlpack_export and
 * dlpack_import (dlpack.c): the checks of a request or a producer's tensor,
 * the span its elements occupy, and the export block with its deleters.
 * What stays with a backend is which buffer a handle names and the device
 * a tensor says (plugin-cuda: kDLCUDA / kDLCUDAHost; plugin-host: kDLCPU),
 * so each plugin's dlpack.c is the slot's few lines of glue:
 *
 *   export: t4a__dl_export_prepare, lock, find the buffer,
 *           t4a__dl_export_fits, t4a__dl_export_finish, unlock,
 *           t4a__dl_export_end;
 *   import: t4a__dl_import_prepare, check the device, t4a__dl_import_locate,
 *           lock, wrap [start, +bytes) releasing through imp.release,
 *           unlock. */
#ifndef T4A_CORE_DLPACK_H
#define T4A_CORE_DLPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

/* Bytes a tensor's elements span relative to element 0: [lo, hi), lo <= 0;
 * both 0 when an extent is 0 (no element). */
typedef struct t4a__dl_span {
  uint64_t element; /* bytes per element */
  int64_t lo, hi;
} t4a__dl_span;

typedef struct t4a__dl_block t4a__dl_block;

/* An export being made: the request as copied, its span, and the block
 * the consumer will own (shape and strides already in it). */
typedef struct t4a__dl_export {
  t4a_dlpack_export q;
  t4a__dl_span span;
  t4a__dl_block *block;
} t4a__dl_export;

/* Checks out, req (struct_size, flags, dtype, shape, strides) and
 * allocates the block; *out is NULL from here on until done. */
int t4a__dl_export_prepare(const t4a_dlpack_export *req, void **out, t4a__dl_export *x);

/* T4A_ERANGE (the standard message) unless the elements at x's offset lie
 * in a buffer of `size` bytes. */
int t4a__dl_export_fits(const t4a__dl_export *x, uint64_t size);

/* Fills the tensor: element 0 at address + offset, on device
 * (device_type, device_id); sets *out to the block. */
void t4a__dl_export_finish(t4a__dl_export *x, uint64_t address, int32_t device_type,
                           int32_t device_id, void **out);

/* The end of an export, rc its status so far: on failure frees the block
 * (no on_delete runs; *out stays NULL) and returns rc; on success (after
 * finish) pins this plugin loaded, since the deleters are its code. */
int t4a__dl_export_end(t4a__dl_export *x, int rc);

/* A producer's tensor, checked: where its elements lie and how to let it go. */
typedef struct t4a__dl_import {
  const t4a_dl_tensor *t;
  t4a__dl_span span;
  uint64_t start, bytes;         /* (locate) the lowest byte any element occupies, and the span */
  uint64_t below;                /* bytes from start to element 0 (negative strides) */
  void (*release)(void *tensor); /* calls the tensor's deleter (legacy or versioned) */
} t4a__dl_import;

/* Checks tensor, flags and out (out->bits = 0 from here on), the tensor's
 * form (version, read-only), shape and strides. The device is the
 * backend's to check next (a wrong device is reported before bad data). */
int t4a__dl_import_prepare(void *tensor, uint32_t flags, t4a_buffer *out, t4a__dl_import *imp);

/* Checks the tensor's data and byte_offset against its span: sets start,
 * bytes and below. */
int t4a__dl_import_locate(t4a__dl_import *imp);

#endif
