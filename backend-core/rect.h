/* backend-core/rect.h -- the checks of a rectangle copy (rect.c): the struct, the
 * pitches against the width and the device's max_pitch, every row within
 * its side (T4A_ERANGE names the first one out), overflow-checked. */
#ifndef T4A_CORE_RECT_H
#define T4A_CORE_RECT_H

#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_backend_v1.h"

/* dsize, ssize: the bytes each side may span (UINT64_MAX for pageable
 * memory, whose extent the consumer owns). *empty: rows or width is 0. */
int t4a__rect_check(const char *what, const t4a_copy_2d *g, uint64_t dsize, uint64_t ssize,
                    uint64_t max_pitch, bool *empty);

/* The bytes a side spans from its first row's start (rect_check bounded it). */
static inline uint64_t t4a__rect_span(const t4a_copy_2d *g, uint64_t pitch) {
  return g->rows ? (g->rows - 1) * pitch + g->width : 0;
}

/* copy_2d_d2d's overlap rule, the same on every backend: T4A_EINVAL when
 * the spans of the two rectangles (first byte to last, conservative as
 * copy_d2d's rule) at addresses dst and src share a byte, by address, not
 * by handle (one memory may be two buffers; `one_buffer`: the two are one
 * handle, for the message). For a non-empty, checked rectangle. */
int t4a__rect_overlap_refused(const char *what, const t4a_copy_2d *g, uint64_t dst, uint64_t src,
                              bool one_buffer);

#endif
