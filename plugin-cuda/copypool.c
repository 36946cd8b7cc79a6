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
/* Waking a sleeping thread and waiting for it costs tens of microseconds on
 * the H200 hosts (virtual machines): the pageable sweep there lost to the
 * driver at 256 KiB (0.41x H2D, 0.65x D2H) and 1 MiB (0.79x H2D) when such
 * copies were split into 64 KiB parts, while one thread copies a cache-warm
 * MiB in about the time the wake-ups took. So copies below SPLIT_MIN stay on
 * the calling thread, and a split part is at least MIN_PART. */
#define SPLIT_MIN (2u << 20)
#define MIN_PART (256u << 10)

typedef struct batch {
  pthread_mutex_t lock;
  pthread_cond_t done;
  unsigned remaining;
} batch;

/* `rows` rows of `bytes` each, at the pitches (a 1D copy is one row). */
typedef struct job {
  void *dst;
  const void *src;
  size_t bytes, rows, dst_pitch, src_pitch;
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

static void copy_rows(const job *j) {
  for (size_t i = 0; i < j->rows; i++)
    copy_part((char *)j->dst + i * j->dst_pitch, (const char *)j->src + i * j->src_pitch, j->bytes,
              j->stream);
}

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
    copy_rows(&j);
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

/* Splits `whole` into up to `parts` jobs: by bytes when it is one row (cut
 * at cache lines), else by rows; the caller runs the first, the workers the
 * others. */
static void run_split(const job *whole, unsigned parts) {
  pthread_mutex_lock(&lock);
  unsigned helpers = ensure_workers(parts - 1);
  if (helpers + 1 < parts)
    parts = helpers + 1;
  unsigned room = (unsigned)(sizeof queue / sizeof queue[0]) - qcount;
  if (parts - 1 > room)
    parts = room + 1;
  batch b = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, parts - 1};
  job first = *whole;
  first.batch = &b;
  if (whole->rows == 1) {
    size_t part = (whole->bytes / parts + 63) & ~(size_t)63; /* cache-line aligned splits */
    first.bytes = part < whole->bytes ? part : whole->bytes;
    for (size_t off = first.bytes, i = 1; i < parts; i++) {
      size_t n = i + 1 == parts ? whole->bytes - off : part;
      job j = first;
      j.dst = (char *)whole->dst + off;
      j.src = (const char *)whole->src + off;
      j.bytes = n;
      queue[(qhead + qcount) % (sizeof queue / sizeof queue[0])] = j;
      qcount++;
      off += n;
    }
  } else {
    size_t per = whole->rows / parts, extra = whole->rows % parts, row = 0;
    first.rows = per + (extra > 0);
    row = first.rows;
    for (unsigned i = 1; i < parts; i++) {
      job j = first;
      j.rows = per + (i < extra);
      j.dst = (char *)whole->dst + row * whole->dst_pitch;
      j.src = (const char *)whole->src + row * whole->src_pitch;
      queue[(qhead + qcount) % (sizeof queue / sizeof queue[0])] = j;
      qcount++;
      row += j.rows;
    }
  }
  if (parts > 1)
    pthread_cond_broadcast(&work);
  pthread_mutex_unlock(&lock);
  copy_rows(&first);
  pthread_mutex_lock(&b.lock);
  while (b.remaining)
    pthread_cond_wait(&b.done, &b.lock);
  pthread_mutex_unlock(&b.lock);
  pthread_cond_destroy(&b.done);
  pthread_mutex_destroy(&b.lock);
}

void t4a__parallel_memcpy(void *dst, const void *src, size_t bytes, unsigned threads, bool stream) {
  unsigned parts = bytes < SPLIT_MIN ? 1 : threads;
  if (parts > bytes / MIN_PART)
    parts = (unsigned)(bytes / MIN_PART);
  if (parts <= 1) {
    copy_part(dst, src, bytes, stream);
    return;
  }
  job whole = {dst, src, bytes, 1, 0, 0, stream, NULL};
  run_split(&whole, parts);
}

void t4a__parallel_memcpy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                             size_t width, size_t rows, unsigned threads, bool stream) {
  job whole = {dst, src, width, rows, dst_pitch, src_pitch, stream, NULL};
  size_t total = width * rows; /* fits: the rows lie in one chunk or one buffer */
  unsigned parts = total < SPLIT_MIN ? 1 : threads;
  if (parts > total / MIN_PART)
    parts = (unsigned)(total / MIN_PART);
  if (parts > rows)
    parts = (unsigned)rows;
  if (parts <= 1) {
    copy_rows(&whole);
    return;
  }
  run_split(&whole, parts);
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
