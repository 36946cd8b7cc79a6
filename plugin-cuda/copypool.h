/* plugin-cuda/copypool.h -- host threads for the memcpy of large pageable
 * transfers (process-wide, created lazily, shared by all runtimes). */
#ifndef T4A_PLUGIN_CUDA_COPYPOOL_H
#define T4A_PLUGIN_CUDA_COPYPOOL_H

#include <stdbool.h>
#include <stddef.h>

/* memcpy split over up to `threads` threads (the caller is one of them);
 * `stream`: the destination is not read again soon (non-temporal stores). */
void t4a__parallel_memcpy(void *dst, const void *src, size_t bytes, unsigned threads, bool stream);

/* The same for `rows` rows of `width` bytes at the two pitches, split by
 * rows. */
void t4a__parallel_memcpy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                             size_t width, size_t rows, unsigned threads, bool stream);

/* Default thread count for large host copies: min(8, online CPUs). */
unsigned t4a__copy_threads_default(void);

/* Joins the threads (plugin teardown). */
void t4a__copypool_shutdown(void);

#endif
