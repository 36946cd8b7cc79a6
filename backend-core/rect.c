/* backend-core/rect.c -- the checks of a rectangle copy (t4a_copy_2d), the same for
 * every backend (see rect.h). */
#include "config.h"

#include "common/checked.h"
#include "common/error.h"
#include "backend-core/rect.h"
#include "backend-core/structs.h"

/* One side of a rectangle: where it starts, its pitch, and the bytes it may
 * span (UINT64_MAX for pageable memory, whose extent the consumer owns). */
typedef struct side {
  const char *name;
  uint64_t offset, pitch, size;
} side;

/* Checks one side: pitch against width and the device, every row within
 * the size (naming the first row out of range), no overflow. */
static int side_ok(const char *what, const side *s, const t4a_copy_2d *g, uint64_t max_pitch) {
  if (g->rows > 1 && s->pitch < g->width)
    return t4a__fail(T4A_EINVAL,
                     "%s: the %s pitch %llu is below the width %llu, so rows would overlap; "
                     "pass a pitch of at least the width",
                     what, s->name, (unsigned long long)s->pitch, (unsigned long long)g->width);
  if (max_pitch && g->rows > 1 && s->pitch > max_pitch)
    return t4a__fail(T4A_EINVAL,
                     "%s: the %s pitch %llu exceeds the device's max_pitch %llu; copy fewer "
                     "rows at a time or use 1D copies",
                     what, s->name, (unsigned long long)s->pitch, (unsigned long long)max_pitch);
  uint64_t last, end;
  if (!t4a__mul_u64(g->rows - 1, s->pitch, &last) || !t4a__add_u64(last, s->offset, &last) ||
      !t4a__add_u64(last, g->width, &end) || end > s->size) {
    /* the first row out of range: rows are ordered, so solve for it */
    uint64_t row = 0, room;
    if (t4a__add_u64(s->offset, g->width, &room) && room <= s->size && s->pitch)
      row = (s->size - room) / s->pitch + 1;
    return t4a__fail(T4A_ERANGE,
                     "%s: %s row %llu (of %llu, at offset %llu + row x %llu) lies past the "
                     "%s's end; check the offset, pitch, width and rows",
                     what, s->name, (unsigned long long)row, (unsigned long long)g->rows,
                     (unsigned long long)s->offset, (unsigned long long)s->pitch, s->name);
  }
  return T4A_OK;
}

/* The request's struct and both sides (see rect.h); T4A_OK with *empty set when the
 * rectangle has no bytes (nothing to enqueue). */
int t4a__rect_check(const char *what, const t4a_copy_2d *g, uint64_t dsize, uint64_t ssize,
                    uint64_t max_pitch, bool *empty) {
  int rc = t4a__check_struct(g, T4A_COPY_2D_V1_1_SIZE, "t4a_copy_2d");
  if (rc)
    return rc;
  if (g->reserved)
    return t4a__fail(T4A_EINVAL, "%s: t4a_copy_2d.reserved must be 0; clear it", what);
  *empty = !g->rows || !g->width;
  if (*empty)
    return T4A_OK;
  side d = {"destination", g->dst_offset, g->dst_pitch, dsize};
  side s = {"source", g->src_offset, g->src_pitch, ssize};
  if ((rc = side_ok(what, &d, g, max_pitch)) || (rc = side_ok(what, &s, g, max_pitch)))
    return rc;
  return T4A_OK;
}

int t4a__rect_overlap_refused(const char *what, const t4a_copy_2d *g, uint64_t dst, uint64_t src,
                              bool one_buffer) {
  if (!t4a__spans_overlap(dst, t4a__rect_span(g, g->dst_pitch), src,
                          t4a__rect_span(g, g->src_pitch)))
    return T4A_OK;
  return t4a__fail(T4A_EINVAL,
                   "%s: the source and destination rectangles overlap%s; copy through a "
                   "temporary buffer",
                   what, one_buffer ? " in one buffer" : " (two buffers of the same memory)");
}
