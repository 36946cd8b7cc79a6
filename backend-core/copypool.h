/* backend-core/copypool.h -- host threads for the memcpy of large pageable
 * transfers (process-wide, created lazily, shared by all runtimes). */
#ifndef T4A_CORE_COPYPOOL_H
#define T4A_CORE_COPYPOOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a host copy runs: on up to `threads` threads (the caller is one of
 * them), with non-temporal stores when `stream` (the destination is not
 * read again soon), and how long a copy thread that did a part of it keeps
 * looking for the next job before it sleeps (`spin_us`, 0: it sleeps at
 * once; staging.c says why it spins). `wait_spin_us` is how long the thread
 * that finishes the copy looks at the parts still running before it sleeps
 * (0: spin_us). */
typedef struct t4a__copy_how {
  unsigned threads;
  bool stream;
  uint32_t spin_us;
  uint32_t wait_spin_us;
} t4a__copy_how;

/* A copy in progress on the copy threads (t4a__copy_start). */
typedef struct t4a__copy_task {
  pthread_mutex_t lock;
  pthread_cond_t done;
  atomic_uint remaining; /* parts not yet copied (changed under lock); 0: nothing to wait for */
  uint32_t spin_us;      /* the waiter looks at `remaining` this long before it sleeps */
  bool queued;           /* parts went to the copy threads: finish must take `lock` */
} t4a__copy_task;

/* Starts a memcpy split over the copy threads and returns without waiting
 * (a copy too small to split, or with no thread to be had, is done before
 * it returns); t4a__copy_finish waits for it, helping while its parts are
 * queued. Every start is finished exactly once, before dst or src go away.
 * Staged copies use the pair to copy the next chunk while the previous
 * one's parts finish. */
void t4a__copy_start(t4a__copy_task *t, void *dst, const void *src, size_t bytes,
                     t4a__copy_how how);
void t4a__copy_finish(t4a__copy_task *t);

/* The same for a fill (t4a__parallel_fill's arguments): started, finished
 * by t4a__copy_finish. */
void t4a__fill_start(t4a__copy_task *t, void *dst, size_t bytes, uint32_t pattern,
                     unsigned element_size, t4a__copy_how how);

/* memcpy split over the copy threads, waited for. */
void t4a__parallel_memcpy(void *dst, const void *src, size_t bytes, t4a__copy_how how);

/* memset split over the copy threads, waited for: `bytes` (a multiple of
 * element_size: 1, 2 or 4) of elements holding `pattern`. */
void t4a__parallel_fill(void *dst, size_t bytes, uint32_t pattern, unsigned element_size,
                        t4a__copy_how how);

/* The same for `rows` rows of `width` bytes at the two pitches, split by
 * rows. */
void t4a__parallel_memcpy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                             size_t width, size_t rows, t4a__copy_how how);

/* Default thread count for large host copies: min(8, online CPUs). */
unsigned t4a__copy_threads_default(void);

/* Joins the threads (plugin teardown). */
void t4a__copypool_shutdown(void);

#endif
