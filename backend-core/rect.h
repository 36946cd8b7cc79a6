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

#endif
