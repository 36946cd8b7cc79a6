/* backend-core/copypool.c -- host threads for the memcpy of large pageable
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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAMING 1
#endif

#include "backend-core/copypool.h"

#define MAX_WORKERS 15u
/* The staging decides which copies are worth splitting (staging.c,
 * T4A_COPY_SPLIT_MIN: waking sleeping threads costs tens of microseconds on
 * the H200 hosts) and passes one thread for the others; here a copy is
 * split only into parts of at least MIN_PART. 128 KiB parts against 256 KiB
 * (the same H200 host, two runs each; the hot-window sweep's default
 * column): pageable H2D at 1 MiB 1.18x/1.19x the driver against 0.92x/1.02x,
 * 1.5 MiB 1.37x/1.32x against 1.05x/1.22x, 2 MiB 1.39x/1.44x against
 * 1.19x/1.27x; copies of 8 MiB chunks have 12 parts either way. */
#define MIN_PART (128u << 10)

/* `rows` rows of `bytes` each, at the pitches (a 1D copy is one row). A
 * fill (memset; src NULL) writes `pattern` in elements of `fill` bytes. */
typedef struct job {
  void *dst;
  const void *src;
  size_t bytes, rows, dst_pitch, src_pitch;
  bool stream;
  uint32_t spin_us;
  t4a__copy_task *task;
  uint32_t pattern;
  unsigned fill; /* element size of a fill (1, 2 or 4); 0 for a copy */
} job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_t workers[MAX_WORKERS];
static unsigned nworkers;
static bool stopping;
static job queue[MAX_WORKERS * 4];
static unsigned qhead, qcount;
static atomic_uint queued; /* qcount, for spinning threads to peek at without the lock */
static atomic_bool quit;   /* stopping, likewise */

/* max(min(CPUs, 8), min(16, 3 * CPUs / 4)): on the H200 host with 16 CPUs a
 * pageable 512 MiB H2D copy (pipelined) ran at 41-52 GB/s median with 8
 * threads, its worst of 9 runs 34-51, and at 51-53 with 12 (worst 46-52); the
 * host's own memcpy bandwidth there is 31 GB/s on 8 threads, 42 on 12 and
 * 49 on 16 (docs/performance.md, the staging sweep). On 32 CPUs, 16 (the
 * most) against 8 was 48-49 against 24-42 GB/s. Three quarters of the CPUs,
 * at most 16, is what a large copy may take while it runs. */
/* Computed once: sysconf(_SC_NPROCESSORS_ONLN) reads /sys (three system
 * calls), and every runtime_create with the default options asks. */
unsigned t4a__copy_threads_default(void) {
  static atomic_uint cached;
  unsigned c = atomic_load_explicit(&cached, memory_order_relaxed);
  if (c)
    return c;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  long small = n < 8 ? n : 8, most = 3 * n / 4 < 16 ? 3 * n / 4 : 16;
  c = n <= 1 ? 1u : (unsigned)(small > most ? small : most);
  atomic_store_explicit(&cached, c, memory_order_relaxed);
  return c;
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

/* n bytes of 2- or 4-byte elements `pattern` (d aligned to them): 8-byte
 * stores of the repeated pattern, which the compiler widens. */
static void fill_part(void *dst, size_t n, uint32_t pattern, unsigned size) {
  if (size == 1) {
    memset(dst, (int)pattern, n);
    return;
  }
  uint64_t w =
      size == 2 ? 0x0001000100010001ull * (uint16_t)pattern : 0x0000000100000001ull * pattern;
  char *d = dst;
  for (; n && ((uintptr_t)d & 7); d += size, n -= size)
    memcpy(d, &w, size);
  for (; n >= 8; d += 8, n -= 8)
    memcpy(d, &w, 8);
  if (n)
    memcpy(d, &w, n);
}

static void copy_rows(const job *j) {
  if (j->fill) {
    fill_part(j->dst, j->bytes, j->pattern, j->fill);
    return;
  }
  for (size_t i = 0; i < j->rows; i++)
    copy_part((char *)j->dst + i * j->dst_pitch, (const char *)j->src + i * j->src_pitch, j->bytes,
              j->stream);
}

static void part_done(t4a__copy_task *t) {
  pthread_mutex_lock(&t->lock);
  if (atomic_fetch_sub(&t->remaining, 1) == 1)
    pthread_cond_signal(&t->done);
  pthread_mutex_unlock(&t->lock);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* After a part, a thread looks for the next job for up to spin_us before it
 * sleeps: the next part of a stream of copies then costs no wake-up. */
static void spin_for_work(uint32_t spin_us) {
  uint64_t until = now_ns() + (uint64_t)spin_us * 1000u;
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(&queued, memory_order_relaxed) ||
        atomic_load_explicit(&quit, memory_order_relaxed))
      return;
    cpu_relax();
    if (i % 64 == 0 && now_ns() >= until)
      return;
  }
}

/* Takes the job at the head of the queue (lock held). */
static job take(void) {
  job j = queue[qhead];
  qhead = (qhead + 1) % (sizeof queue / sizeof queue[0]);
  qcount--;
  atomic_store_explicit(&queued, qcount, memory_order_relaxed);
  return j;
}

static void *worker(void *arg) {
  (void)arg;
  uint32_t spin_us = 0; /* of the part just done */
  pthread_mutex_lock(&lock);
  for (;;) {
    if (!qcount && !stopping && spin_us) {
      pthread_mutex_unlock(&lock);
      spin_for_work(spin_us);
      pthread_mutex_lock(&lock);
    }
    while (!qcount && !stopping)
      pthread_cond_wait(&work, &lock);
    if (!qcount && stopping)
      break;
    job j = take();
    pthread_mutex_unlock(&lock);
    copy_rows(&j);
    part_done(j.task);
    spin_us = j.spin_us;
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

#define QUEUE_LEN (sizeof queue / sizeof queue[0])

/* Queues `whole` as up to `parts` jobs for the workers: split by bytes when
 * it is one row (cut at cache lines), else by rows. Returns false, queueing
 * nothing, when fewer than two parts can be had (no workers, a full queue):
 * the caller then copies it alone. */
static bool queue_split(const job *whole, unsigned parts) {
  pthread_mutex_lock(&lock);
  if (stopping) { /* the threads are gone (the plugin is being unloaded) */
    pthread_mutex_unlock(&lock);
    return false;
  }
  unsigned helpers = ensure_workers(parts - 1);
  if (helpers + 1 < parts)
    parts = helpers + 1;
  unsigned room = (unsigned)QUEUE_LEN - qcount;
  if (parts > room)
    parts = room;
  if (parts < 2) {
    pthread_mutex_unlock(&lock);
    return false;
  }
  atomic_store(&whole->task->remaining, parts);
  if (whole->rows == 1) {
    size_t part = (whole->bytes / parts + 63) & ~(size_t)63; /* cache-line aligned splits */
    /* parts <= bytes / MIN_PART: the rounded-up parts never run past the end */
    for (size_t off = 0, i = 0; i < parts; i++) {
      size_t n = i + 1 == parts ? whole->bytes - off : part;
      job j = *whole;
      j.dst = (char *)whole->dst + off;
      j.src = whole->src ? (const char *)whole->src + off : NULL;
      j.bytes = n;
      queue[(qhead + qcount) % QUEUE_LEN] = j;
      qcount++;
      off += n;
    }
  } else {
    size_t per = whole->rows / parts, extra = whole->rows % parts, row = 0;
    for (unsigned i = 0; i < parts; i++) {
      job j = *whole;
      j.rows = per + (i < extra);
      j.dst = (char *)whole->dst + row * whole->dst_pitch;
      j.src = (const char *)whole->src + row * whole->src_pitch;
      queue[(qhead + qcount) % QUEUE_LEN] = j;
      qcount++;
      row += j.rows;
    }
  }
  atomic_store_explicit(&queued, qcount, memory_order_relaxed);
  pthread_cond_broadcast(&work);
  pthread_mutex_unlock(&lock);
  return true;
}

/* Starts `whole` in `parts` parts; the finishing thread looks at the parts
 * still running for wait_spin_us (0: the copy threads' spin_us). */
static void start(t4a__copy_task *t, job *whole, unsigned parts, uint32_t wait_spin_us) {
  whole->task = t;
  atomic_init(&t->remaining, 0);
  t->spin_us = wait_spin_us ? wait_spin_us : whole->spin_us;
  t->queued = false;
  if (parts > 1) {
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->done, NULL);
    if ((t->queued = queue_split(whole, parts)))
      return;
    pthread_cond_destroy(&t->done);
    pthread_mutex_destroy(&t->lock);
  }
  copy_rows(whole); /* small, or no helper to be had: done on return */
}

void t4a__copy_finish(t4a__copy_task *t) {
  if (!t->queued)
    return; /* copied by start */
  /* Even when `remaining` is 0 already, the thread that made it so may
   * still be in part_done: only t->lock (below) says it is out, and only
   * then may t go away (or be started again at the same address). */
  /* The caller is one of the copy threads: it takes its own parts while
   * they head the queue (they were queued together), then waits. */
  pthread_mutex_lock(&lock);
  while (qcount && queue[qhead].task == t) {
    job j = take();
    pthread_mutex_unlock(&lock);
    copy_rows(&j);
    part_done(t);
    pthread_mutex_lock(&lock);
  }
  pthread_mutex_unlock(&lock);
  /* The other parts are on the copy threads: look for them to finish for a
   * while (a wake-up costs more than a short copy), then sleep. The lock is
   * taken either way, so the last thread is out of it before t goes away. */
  if (t->spin_us && atomic_load(&t->remaining)) {
    uint64_t until = now_ns() + (uint64_t)t->spin_us * 1000u;
    for (unsigned i = 1; atomic_load_explicit(&t->remaining, memory_order_acquire); i++) {
      cpu_relax();
      if (i % 64 == 0 && now_ns() >= until)
        break;
    }
  }
  pthread_mutex_lock(&t->lock);
  while (atomic_load(&t->remaining))
    pthread_cond_wait(&t->done, &t->lock);
  pthread_mutex_unlock(&t->lock);
  pthread_cond_destroy(&t->done);
  pthread_mutex_destroy(&t->lock);
}

static unsigned parts_for(size_t total, unsigned threads) {
  unsigned parts = threads;
  if (parts > total / MIN_PART)
    parts = (unsigned)(total / MIN_PART);
  return parts ? parts : 1;
}

void t4a__copy_start(t4a__copy_task *t, void *dst, const void *src, size_t bytes,
                     t4a__copy_how how) {
  job whole = {dst, src, bytes, 1, 0, 0, how.stream, how.spin_us, NULL, 0, 0};
  start(t, &whole, parts_for(bytes, how.threads), how.wait_spin_us);
}

void t4a__fill_start(t4a__copy_task *t, void *dst, size_t bytes, uint32_t pattern,
                     unsigned element_size, t4a__copy_how how) {
  /* parts are cut at 64-byte multiples from dst: each starts on an element */
  job whole = {dst, NULL, bytes, 1, 0, 0, how.stream, how.spin_us, NULL, pattern, element_size};
  start(t, &whole, parts_for(bytes, how.threads), how.wait_spin_us);
}

void t4a__parallel_fill(void *dst, size_t bytes, uint32_t pattern, unsigned element_size,
                        t4a__copy_how how) {
  t4a__copy_task t;
  t4a__fill_start(&t, dst, bytes, pattern, element_size, how);
  t4a__copy_finish(&t);
}

void t4a__parallel_memcpy(void *dst, const void *src, size_t bytes, t4a__copy_how how) {
  t4a__copy_task t;
  t4a__copy_start(&t, dst, src, bytes, how);
  t4a__copy_finish(&t);
}

void t4a__parallel_memcpy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                             size_t width, size_t rows, t4a__copy_how how) {
  job whole = {dst, src, width, rows, dst_pitch, src_pitch, how.stream, how.spin_us, NULL, 0, 0};
  /* the total fits: the rows lie in one chunk or one buffer */
  unsigned parts = parts_for(width * rows, how.threads);
  if (parts > rows)
    parts = (unsigned)rows;
  t4a__copy_task t;
  start(&t, &whole, parts, how.wait_spin_us);
  t4a__copy_finish(&t);
}

/* The plugin is being unloaded: its code must not outlive the threads. */
void t4a__copypool_shutdown(void) {
  pthread_mutex_lock(&lock);
  stopping = true;
  atomic_store(&quit, true);
  pthread_cond_broadcast(&work);
  unsigned n = nworkers;
  pthread_mutex_unlock(&lock);
  for (unsigned i = 0; i < n; i++)
    pthread_join(workers[i], NULL);
}
