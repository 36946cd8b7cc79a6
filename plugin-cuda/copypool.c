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
#include <string.h>
#include <unistd.h>

#include "plugin-cuda/runtime.h"

#define MAX_WORKERS 15u
#define MIN_PART (1u << 20) /* smaller parts are not worth a thread */

typedef struct batch {
  pthread_mutex_t lock;
  pthread_cond_t done;
  unsigned remaining;
} batch;

typedef struct job {
  void *dst;
  const void *src;
  size_t bytes;
  batch *batch;
} job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_t workers[MAX_WORKERS];
static unsigned nworkers;
static bool stopping;
static job queue[MAX_WORKERS * 4];
static unsigned qhead, qcount;

unsigned t4a__copy_threads_default(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n <= 1 ? 1u : n >= 8 ? 8u : (unsigned)n;
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
    memcpy(j.dst, j.src, j.bytes);
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

void t4a__parallel_memcpy(void *dst, const void *src, size_t bytes, unsigned threads) {
  unsigned parts = threads;
  if (parts > bytes / MIN_PART)
    parts = (unsigned)(bytes / MIN_PART);
  if (parts <= 1) {
    memcpy(dst, src, bytes);
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
        (job){(char *)dst + off, (const char *)src + off, n, &b};
    qcount++;
    off += n;
  }
  if (parts > 1)
    pthread_cond_broadcast(&work);
  pthread_mutex_unlock(&lock);
  memcpy(dst, src, part < bytes ? part : bytes);
  pthread_mutex_lock(&b.lock);
  while (b.remaining)
    pthread_cond_wait(&b.done, &b.lock);
  pthread_mutex_unlock(&b.lock);
  pthread_cond_destroy(&b.done);
  pthread_mutex_destroy(&b.lock);
}

/* The plugin is being unloaded: its code must not outlive the threads. */
__attribute__((destructor)) static void t4a__copypool_stop(void) {
  pthread_mutex_lock(&lock);
  stopping = true;
  pthread_cond_broadcast(&work);
  unsigned n = nworkers;
  pthread_mutex_unlock(&lock);
  for (unsigned i = 0; i < n; i++)
    pthread_join(workers[i], NULL);
}
