/* backend-core/directions.h -- the copy slots that differ only by their
 * direction, written once: each pair (host to device, device to host)
 * calls one function of the plugin with `to_device` and the device-side
 * arguments first. A plugin expands the macro in the file that defines
 * that function (a macro, not a call: backend-core never calls up into a
 * plugin, tests/cpu/test_layering.sh).
 *
 *   T4A__PINNED_COPY_SLOTS(fn)  copy_h2d_pinned, copy_d2h_pinned:
 *       int fn(t4a_runtime, bool to_device, t4a_buffer, uint64_t buffer_offset,
 *              t4a_host_buffer, uint64_t host_offset, uint64_t bytes)
 *   T4A__PINNED_2D_SLOTS(fn)    copy_2d_h2d_pinned, copy_2d_d2h_pinned:
 *       int fn(t4a_runtime, bool to_device, t4a_buffer, t4a_host_buffer,
 *              const t4a_copy_2d *)
 *   T4A__PAGEABLE_2D_SLOTS(fn)  copy_2d_h2d, copy_2d_d2h:
 *       int fn(t4a_runtime, bool to_device, t4a_buffer, void *host, const t4a_copy_2d *)
 */
#ifndef T4A_CORE_DIRECTIONS_H
#define T4A_CORE_DIRECTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend-core/slots.h"

#define T4A__PINNED_COPY_SLOTS(fn)                                                                 \
  int t4a__slot_copy_h2d_pinned(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset,               \
                                t4a_host_buffer src, uint64_t src_offset, uint64_t bytes) {        \
    return fn(rt, true, dst, dst_offset, src, src_offset, bytes);                                  \
  }                                                                                                \
  int t4a__slot_copy_d2h_pinned(t4a_runtime rt, t4a_host_buffer dst, uint64_t dst_offset,          \
                                t4a_buffer src, uint64_t src_offset, uint64_t bytes) {             \
    return fn(rt, false, src, src_offset, dst, dst_offset, bytes);                                 \
  }

#define T4A__PINNED_2D_SLOTS(fn)                                                                   \
  int t4a__slot_copy_2d_h2d_pinned(t4a_runtime rt, t4a_buffer dst, t4a_host_buffer src,            \
                                   const t4a_copy_2d *g) {                                         \
    return fn(rt, true, dst, src, g);                                                              \
  }                                                                                                \
  int t4a__slot_copy_2d_d2h_pinned(t4a_runtime rt, t4a_host_buffer dst, t4a_buffer src,            \
                                   const t4a_copy_2d *g) {                                         \
    return fn(rt, false, src, dst, g);                                                             \
  }

#define T4A__PAGEABLE_2D_SLOTS(fn)                                                                 \
  int t4a__slot_copy_2d_h2d(t4a_runtime rt, t4a_buffer dst, const void *src,                       \
                            const t4a_copy_2d *g) {                                                \
    return fn(rt, true, dst, (void *)(uintptr_t)src, g);                                           \
  }                                                                                                \
  int t4a__slot_copy_2d_d2h(t4a_runtime rt, void *dst, t4a_buffer src, const t4a_copy_2d *g) {     \
    return fn(rt, false, src, dst, g);                                                             \
  }

#endif
