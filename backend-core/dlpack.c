/* backend-core/dlpack.c -- the backend-neutral half of DLPack (see dlpack.h):
 * tensors out of buffers (dlpack_export) and into external buffers
 * (dlpack_import), as every backend makes and takes them.
 *
 * Export: one allocation holds the managed tensor (legacy or versioned),
 * its shape and strides and the consumer's on_delete; the deleter frees it
 * and calls on_delete. The deleter is plugin code the consumer may call at
 * any time, so the first export pins the plugin loaded (t4a__plugin_pin).
 * Nothing is enqueued and nothing is copied.
 *
 * Import: the tensor's elements, from the lowest byte any of them occupies
 * to the highest, become an external buffer (the backend's wrap) whose
 * release is the tensor's deleter. Shapes, strides and sizes are
 * overflow-checked in 64-bit signed arithmetic before anything is wrapped. */
#include "config.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/error.h"
#include "backend-core/dlpack.h"
#include "backend-core/keep.h"
#include "backend-core/structs.h"

/* Bytes a tensor's elements span relative to element 0: [lo, hi), lo <= 0;
 * both 0 when an extent is 0 (no element). */
typedef struct dl_span {
  uint64_t element; /* bytes per element */
  int64_t lo, hi;
} dl_span;

typedef struct dl_block dl_block;

/* An export being made: the request as copied, its span, and the block
 * the consumer will own (shape and strides already in it). */
typedef struct dl_export {
  t4a_dlpack_export q;
  dl_span span;
  dl_block *block;
} dl_export;

/* ---- the shape of a tensor ------------------------------------------------------------ */

static int span_of(const char *what, t4a_dl_data_type dt, int32_t ndim, const int64_t *shape,
                   const int64_t *strides, int64_t *row_major, dl_span *s) {
  memset(s, 0, sizeof *s);
  if (ndim < 0 || ndim > T4A_DLPACK_MAX_NDIM)
    return t4a__fail(T4A_EINVAL, "%s: ndim %d; use 0 to %d dimensions", what, (int)ndim,
                     T4A_DLPACK_MAX_NDIM);
  if (ndim && !shape)
    return t4a__fail(T4A_EINVAL, "%s: shape is NULL with ndim %d; pass ndim extents", what,
                     (int)ndim);
  if (!dt.bits || !dt.lanes)
    return t4a__fail(T4A_EINVAL, "%s: dtype has %u bits and %u lanes; both must be at least 1",
                     what, (unsigned)dt.bits, (unsigned)dt.lanes);
  if ((uint32_t)dt.bits * dt.lanes % 8)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "%s: elements of %u bits x %u lanes are not whole bytes; sub-byte types "
                     "are not supported, pack them into a byte type",
                     what, (unsigned)dt.bits, (unsigned)dt.lanes);
  s->element = (uint32_t)dt.bits * dt.lanes / 8;
  bool empty = false;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return t4a__fail(T4A_EINVAL, "%s: shape[%d] is %lld; extents are >= 0", what, (int)i,
                       (long long)shape[i]);
    empty |= shape[i] == 0;
  }
  /* Compact row-major strides, for a NULL strides (and to fill them in).
   * Only then can their product overflow: with explicit strides the span
   * below, from the strides used, is what must fit (a stride-0 broadcast
   * of 2^32 x 2^32 elements spans one). An empty tensor has no element, so
   * any stride describes it: a compact stride past 64 bits is 0, never a
   * wrapped product. */
  int64_t step = 1;
  bool wrapped = false;
  for (int32_t i = ndim; i-- > 0;) {
    row_major[i] = wrapped ? 0 : step;
    if (!wrapped && shape[i] > 1 && __builtin_mul_overflow(step, shape[i], &step))
      wrapped = true;
  }
  if (empty)
    return T4A_OK;
  if (wrapped && !strides)
    return t4a__fail(T4A_ERANGE, "%s: the shape's element count overflows; pass a smaller shape",
                     what);
  const int64_t *st = strides ? strides : row_major;
  int64_t lo = 0, hi = 0, e = (int64_t)s->element;
  for (int32_t i = 0; i < ndim; i++) {
    int64_t reach;
    if (__builtin_mul_overflow(shape[i] - 1, st[i], &reach) ||
        __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi))
      return t4a__fail(T4A_ERANGE,
                       "%s: shape[%d] %lld with stride %lld overflows; pass a smaller shape or "
                       "stride",
                       what, (int)i, (long long)shape[i], (long long)st[i]);
  }
  if (__builtin_mul_overflow(lo, e, &s->lo) || s->lo == INT64_MIN ||
      __builtin_add_overflow(hi, 1, &hi) || __builtin_mul_overflow(hi, e, &s->hi))
    return t4a__fail(T4A_ERANGE,
                     "%s: the tensor spans more bytes than 64 bits count; pass a "
                     "smaller shape or stride",
                     what);
  return T4A_OK;
}

/* ---- export ---------------------------------------------------------------------------- */

struct dl_block {
  union {
    t4a_dl_managed_tensor legacy;
    t4a_dl_managed_tensor_versioned versioned;
  } t; /* first: the consumer's pointer is the block's */
  void (*on_delete)(void *user);
  void *user;
  int64_t dims[]; /* shape, then strides */
};

static void export_free(dl_block *b) {
  void (*on_delete)(void *) = b->on_delete;
  void *user = b->user;
  free(b);
  if (on_delete)
    on_delete(user);
}

static void delete_legacy(t4a_dl_managed_tensor *m) {
  if (m)
    export_free(m->manager_ctx);
}

static void delete_versioned(t4a_dl_managed_tensor_versioned *m) {
  if (m)
    export_free(m->manager_ctx);
}

#define EXPORT_FLAGS_KNOWN (T4A_DLPACK_VERSIONED | T4A_DLPACK_READ_ONLY | T4A_DLPACK_BYTE_OFFSET)

static int check_export(const t4a_dlpack_export *q) {
  if ((q->flags & ~EXPORT_FLAGS_KNOWN))
    return t4a__fail(T4A_EINVAL,
                     "t4a_dlpack_export: unknown flags 0x%x; use T4A_DLPACK_VERSIONED, "
                     "T4A_DLPACK_READ_ONLY and T4A_DLPACK_BYTE_OFFSET",
                     q->flags & ~EXPORT_FLAGS_KNOWN);
  if ((q->flags & T4A_DLPACK_READ_ONLY) && !(q->flags & T4A_DLPACK_VERSIONED))
    return t4a__fail(T4A_EINVAL, "t4a_dlpack_export: T4A_DLPACK_READ_ONLY needs "
                                 "T4A_DLPACK_VERSIONED (the legacy form has no flags)");
  if (q->dtype.code > T4A_DL_FLOAT4_E2M1FN)
    return t4a__fail(T4A_EINVAL,
                     "t4a_dlpack_export: dtype code %u is no DLDataTypeCode of DLPack %d.%d; use "
                     "T4A_DL_INT, T4A_DL_FLOAT, ...",
                     (unsigned)q->dtype.code, T4A_DLPACK_MAJOR, T4A_DLPACK_MINOR);
  return T4A_OK;
}

/* Checks out, req (struct_size, flags, dtype, shape, strides) and
 * allocates the block; *out is NULL from here on until done. */
static int export_prepare(const t4a_dlpack_export *req, void **out, dl_export *x) {
  x->block = NULL;
  if (!out)
    return t4a__fail(T4A_EINVAL, "dlpack_export: out is NULL; pass a pointer");
  *out = NULL;
  int rc = t4a__check_struct(req, T4A_DLPACK_EXPORT_V1_1_SIZE, "t4a_dlpack_export");
  if (rc)
    return rc;
  t4a_dlpack_export *q = &x->q;
  memcpy(q, req, sizeof *q);
  int64_t row_major[T4A_DLPACK_MAX_NDIM];
  if ((rc = check_export(q)) ||
      (rc = span_of("dlpack_export", q->dtype, q->ndim, q->shape, q->strides, row_major, &x->span)))
    return rc;
  size_t dims = 2 * (size_t)q->ndim;
  dl_block *b = malloc(sizeof *b + dims * sizeof(int64_t));
  if (!b)
    return t4a__fail(T4A_ENOMEM, "dlpack_export: out of host memory; free some and retry");
  memset(b, 0, sizeof *b);
  for (int32_t i = 0; i < q->ndim; i++) {
    b->dims[i] = q->shape[i];
    b->dims[q->ndim + i] = q->strides ? q->strides[i] : row_major[i];
  }
  b->on_delete = q->on_delete;
  b->user = q->user;
  x->block = b;
  return T4A_OK;
}

/* T4A_ERANGE (the standard message) unless the elements at x's offset lie
 * in a buffer of `size` bytes. */
static int export_fits(const dl_export *x, uint64_t size) {
  const dl_span *s = &x->span;
  uint64_t offset = x->q.offset;
  bool fits;
  if (s->hi == 0) { /* no element */
    fits = offset <= size;
  } else {
    uint64_t below = (uint64_t)-s->lo; /* bytes before element 0 */
    fits = offset >= below && t4a__range_ok(offset, (uint64_t)s->hi, size);
  }
  if (fits)
    return T4A_OK;
  return t4a__fail(T4A_ERANGE,
                   "dlpack_export: elements at bytes [%lld, %lld) from offset %llu lie outside "
                   "the buffer's %llu bytes; check the offset, shape and strides",
                   (long long)s->lo, (long long)s->hi, (unsigned long long)offset,
                   (unsigned long long)size);
}

/* Fills the tensor: element 0 at address + offset, on device
 * (device_type, device_id); sets *out to the block. */
static void export_finish(dl_export *x, uint64_t address, int32_t device_type, int32_t device_id,
                          void **out) {
  const t4a_dlpack_export *q = &x->q;
  dl_block *b = x->block;
  bool versioned = (q->flags & T4A_DLPACK_VERSIONED) != 0;
  t4a_dl_tensor *t = versioned ? &b->t.versioned.dl_tensor : &b->t.legacy.dl_tensor;
  bool empty = x->span.hi == 0;
  bool split = (q->flags & T4A_DLPACK_BYTE_OFFSET) != 0;
  t->data = empty ? NULL : (void *)(uintptr_t)(split ? address : address + q->offset);
  t->byte_offset = empty || !split ? 0 : q->offset;
  t->device.device_type = device_type;
  t->device.device_id = device_id;
  t->ndim = q->ndim;
  t->dtype = q->dtype;
  t->shape = q->ndim ? b->dims : NULL;
  t->strides = q->ndim ? b->dims + q->ndim : NULL;
  if (versioned) {
    b->t.versioned.version = (t4a_dl_pack_version){T4A_DLPACK_MAJOR, T4A_DLPACK_MINOR};
    b->t.versioned.manager_ctx = b;
    b->t.versioned.deleter = delete_versioned;
    b->t.versioned.flags = (q->flags & T4A_DLPACK_READ_ONLY) ? T4A_DL_FLAG_READ_ONLY : 0;
  } else {
    b->t.legacy.manager_ctx = b;
    b->t.legacy.deleter = delete_legacy;
  }
  x->block = NULL; /* the consumer's now */
  *out = b;
}

/* The end of an export, rc its status so far: on failure frees the block
 * (no on_delete runs; *out stays NULL) and returns rc; on success (after
 * finish) pins this plugin loaded, since the deleters are its code. */
static int export_end(dl_export *x, int rc) {
  free(x->block); /* NULL once finished: the consumer's */
  x->block = NULL;
  if (rc)
    return rc;
  static atomic_bool pinned;
  if (!atomic_exchange(&pinned, true))
    t4a__plugin_pin(); /* the deleter is our code: stay loaded */
  return T4A_OK;
}

/* ---- import ---------------------------------------------------------------------------- */

static void release_legacy(void *tensor) {
  t4a_dl_managed_tensor *m = tensor;
  if (m->deleter)
    m->deleter(m);
}

static void release_versioned(void *tensor) {
  t4a_dl_managed_tensor_versioned *m = tensor;
  if (m->deleter)
    m->deleter(m);
}

#define IMPORT_FLAGS_KNOWN (T4A_DLPACK_VERSIONED | T4A_DLPACK_ALLOW_READ_ONLY)

/* The tensor's DLTensor, after the checks its form needs. */
static int import_tensor(void *tensor, uint32_t flags, const t4a_dl_tensor **t) {
  if (!(flags & T4A_DLPACK_VERSIONED)) {
    *t = &((const t4a_dl_managed_tensor *)tensor)->dl_tensor;
    return T4A_OK;
  }
  const t4a_dl_managed_tensor_versioned *v = tensor;
  if (v->version.major != T4A_DLPACK_MAJOR)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "dlpack_import: the tensor is DLPack %u.%u, t4a reads major %d; ask the "
                     "producer for DLPack %d (max_version)",
                     v->version.major, v->version.minor, T4A_DLPACK_MAJOR, T4A_DLPACK_MAJOR);
  if ((v->flags & T4A_DL_FLAG_READ_ONLY) && !(flags & T4A_DLPACK_ALLOW_READ_ONLY))
    return t4a__fail(T4A_EINVAL, "dlpack_import: the tensor is read-only and t4a buffers are "
                                 "writable; pass T4A_DLPACK_ALLOW_READ_ONLY if you will not "
                                 "write it, or import a copy");
  *t = &v->dl_tensor;
  return T4A_OK;
}

/* An import being checked: the backend's view and the span. */
typedef struct importing {
  t4a__dl_import imp;
  dl_span span;
} importing;

/* Checks tensor, flags and out (out->bits = 0 from here on), the tensor's
 * form (version, read-only), shape and strides. */
static int import_prepare(void *tensor, uint32_t flags, t4a_buffer *out, importing *in) {
  if (!out || !tensor)
    return t4a__fail(T4A_EINVAL, "dlpack_import: tensor and out must not be NULL; pass them");
  out->bits = 0;
  if (flags & ~IMPORT_FLAGS_KNOWN)
    return t4a__fail(T4A_EINVAL,
                     "dlpack_import: unknown flags 0x%x; use T4A_DLPACK_VERSIONED and "
                     "T4A_DLPACK_ALLOW_READ_ONLY",
                     flags & ~IMPORT_FLAGS_KNOWN);
  const t4a_dl_tensor *t;
  int64_t row_major[T4A_DLPACK_MAX_NDIM];
  dl_span s;
  int rc = import_tensor(tensor, flags, &t);
  if (rc || (rc = span_of("dlpack_import", t->dtype, t->ndim, t->shape, t->strides, row_major, &s)))
    return rc;
  in->imp.t = t;
  in->span = s;
  in->imp.release = (flags & T4A_DLPACK_VERSIONED) ? release_versioned : release_legacy;
  return T4A_OK;
}

/* Checks the tensor's data and byte_offset against its span: sets start,
 * bytes and below. */
static int import_locate(importing *in) {
  t4a__dl_import *imp = &in->imp;
  const t4a_dl_tensor *t = imp->t;
  const dl_span *s = &in->span;
  /* the bytes below element 0 (negative strides) and the whole span */
  uint64_t below = (uint64_t)-s->lo, bytes = (uint64_t)s->hi + below;
  uint64_t start = (uint64_t)(uintptr_t)t->data, first;
  if (s->hi) {
    if (!t->data || !t4a__add_u64(start, t->byte_offset, &first) || first < below ||
        !t4a__range_ok(first - below, bytes, UINT64_MAX))
      return t4a__fail(T4A_EINVAL,
                       "dlpack_import: data %p + byte_offset %llu does not address the tensor's "
                       "%llu bytes; pass a tensor with valid data",
                       t->data, (unsigned long long)t->byte_offset, (unsigned long long)bytes);
    start = first - below;
  }
  imp->start = start;
  imp->bytes = bytes;
  imp->below = below;
  return T4A_OK;
}

/* ---- the slots -------------------------------------------------------------------------- */

int t4a__dl_export_slot(int ready, t4a_runtime rt, t4a_buffer b, const t4a_dlpack_export *req,
                        void **out, int (*find)(t4a_runtime, t4a_buffer, t4a__dl_where *)) {
  dl_export x;
  int rc = ready;
  if (rc || (rc = export_prepare(req, out, &x)))
    return rc;
  t4a__dl_where w;
  if (!(rc = find(rt, b, &w)) && !(rc = export_fits(&x, w.size)))
    export_finish(&x, w.address, w.device_type, w.device_id, out);
  return export_end(&x, rc);
}

int t4a__dl_import_slot(int ready, t4a_runtime rt, void *tensor, uint32_t flags, t4a_buffer *out,
                        uint64_t *offset, int (*device)(const t4a_dl_tensor *),
                        int (*wrap)(t4a_runtime, void *, const t4a__dl_import *, t4a_buffer *)) {
  importing in;
  int rc = ready;
  if (rc || (rc = import_prepare(tensor, flags, out, &in)) || (rc = device(in.imp.t)) ||
      (rc = import_locate(&in)) || (rc = wrap(rt, tensor, &in.imp, out)))
    return rc;
  if (offset)
    *offset = in.imp.below;
  return T4A_OK;
}
