/* plugin-cuda/copypool.c -- host threads for the memcpy of large pageable
 * transfers.
 *
 * One memcpy thread moves roughly 10-20 GB/s; copy engines move 50+ GB/s
 * from pinned memory. To keep pageable transfers near the DMA rate the
 * staging memcpy is split across a few threads. The threads are created
 * lazily, on the first copy large enough to split, shared by all runtimes of
 * the process, sleep on a condition variable between jobs (no polling) and
 * are joined when the plugin is unloaded. */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAMING 1
#endif

#include "plugin-cuda/copypool.h"

#define MAX_WORKERS 15u
#define MIN_PART (64u << 10) /* smaller parts are not worth waking a thread */

typedef struct batch {
  pthread_mutex_t lock;
  pthread_cond_t done;
  unsigned remaining;
} batch;

typedef struct job {
  void *dst;
  const void *src;
  size_t bytes;
  bool stream;
  batch *batch;
} job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_t workers[MAX_WORKERS];
static unsigned nworkers;
static bool stopping;
static job queue[MAX_WORKERS * 4];
static unsigned qhead, qcount;

/* max(min(CPUs, 8), min(16, CPUs / 2)): on the 2 x H200 host (32 CPUs) a
 * pageable 512 MiB H2D copy ran at 24-42 GB/s with 8 threads and 48-49 with
 * 16 (D2H 51-54 with either; docs/performance.md, the staging sweep); half
 * the CPUs, at most 16, is what a copy may take while it runs. */
unsigned t4a__copy_threads_default(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 1)
    return 1u;
  long small = n < 8 ? n : 8, half = n / 2 < 16 ? n / 2 : 16;
  return (unsigned)(small > half ? small : half);
}

/* `stream` asks for non-temporal stores (the destination is not read again
 * soon): staging.c decides per direction (see its T4A_COPY_STREAMING). */
#ifdef HAVE_STREAMING
static void copy_part(void *dst, const void *src, size_t n, bool stream) {
  if (!stream || n < 4096) {
    memcpy(dst, src, n);
    return;
  }
  char *d = dst;
  const char *s = src;
  size_t head = (16 - ((uintptr_t)d & 15)) & 15; /* align the stores */
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 64; d += 64, s += 64, n -= 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
    _mm_stream_si128((__m128i *)(void *)d, a);
    _mm_stream_si128((__m128i *)(void *)(d + 16), b);
    _mm_stream_si128((__m128i *)(void *)(d + 32), c);
    _mm_stream_si128((__m128i *)(void *)(d + 48), e);
  }
  memcpy(d, s, n);
  _mm_sfence(); /* the stores are visible before the copy is reported done */
}
#else
static void copy_part(void *dst, const void *src, size_t n, bool stream) {
  (void)stream;
  memcpy(dst, src, n);
}
#endif

static void finish(batch *b) {
  pthread_mutex_lock(&b->lock);
  if (--b->remaining == 0)
    pthread_cond_signal(&b->done);
  pthread_mutex_unlock(&b->lock);
}

static void *worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  for (;;) {
    while (!qcount && !stopping)
      pthread_cond_wait(&work, &lock);
    if (!qcount && stopping)
      break;
    job j = queue[qhead];
    qhead = (qhead + 1) % (sizeof queue / sizeof queue[0]);
    qcount--;
    pthread_mutex_unlock(&lock);
    copy_part(j.dst, j.src, j.bytes, j.stream);
    finish(j.batch);
    pthread_mutex_lock(&lock);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

/* Starts workers up to `want` (lock held); returns how many exist. */
static unsigned ensure_workers(unsigned want) {
  if (want > MAX_WORKERS)
    want = MAX_WORKERS;
  while (nworkers < want && !stopping &&
         pthread_create(&workers[nworkers], NULL, worker, NULL) == 0)
    nworkers++;
  return nworkers;
}

void t4a__parallel_memcpy(void *dst, const void *src, size_t bytes, unsigned threads, bool stream) {
  unsigned parts = threads;
  if (parts > bytes / MIN_PART)
    parts = (unsigned)(bytes / MIN_PART);
  if (parts <= 1) {
    copy_part(dst, src, bytes, stream);
    return;
  }
  pthread_mutex_lock(&lock);
  unsigned helpers = ensure_workers(parts - 1);
  if (helpers + 1 < parts)
    parts = helpers + 1;
  unsigned room = (unsigned)(sizeof queue / sizeof queue[0]) - qcount;
  if (parts - 1 > room)
    parts = room + 1;
  size_t part = (bytes / parts + 63) & ~(size_t)63; /* cache-line aligned splits */
  batch b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, parts - 1};
  size_t off = part; /* the caller copies the first part */
  for (unsigned i = 1; i < parts; i++) {
    size_t n = i + 1 == parts ? bytes - off : part;
    queue[(qhead + qcount) % (sizeof queue / sizeof queue[0])] =
        (job){(char *)dst + off, (const char *)src + off, n, stream, &b};
    qcount++;
    off += n;
  }
  if (parts > 1)
    pthread_cond_broadcast(&work);
  pthread_mutex_unlock(&lock);
  copy_part(dst, src, part < bytes ? part : bytes, stream);
  pthread_mutex_lock(&b.lock);
  while (b.remaining)
    pthread_cond_wait(&b.done, &b.lock);
  pthread_mutex_unlock(&b.lock);
  pthread_cond_destroy(&b.done);
  pthread_mutex_destroy(&b.lock);
}

/* The plugin is being unloaded: its code must not outlive the threads. */
void t4a__copypool_shutdown(void) {
  pthread_mutex_lock(&lock);
  stopping = true;
  pthread_cond_broadcast(&work);
  unsigned n = nworkers;
  pthread_mutex_unlock(&lock);
  for (unsigned i = 0; i < n; i++)
    pthread_join(workers[i], NULL);
}
