/* bench/host_cases.c -- the host backend's rows (libt4a_host.so), each
 * paired in this process with the raw CPU doing the same work: no GPU is
 * needed, so `make bench` and `make bench-host` run them on any machine.
 *
 * The references use as many threads as the runtime's copies do (its
 * copy_threads): a pool of that many threads made once here (the caller is
 * one of them, as in backend-core/copypool), each copying or setting one
 * contiguous slice of the same memory t4a's side uses (the destination is
 * the runtime's own buffer: the same pages, the same huge-page hint), so
 * the ratio is t4a's cost over the bare parallel memcpy/memset.
 *
 *   pageable copy 64 MiB    copy_h2d / copy_d2h + seal + wait    memcpy over the same threads
 *   memset 64 MiB           memset (queued) + seal + wait        memset over the same threads
 *   alloc+free 4 KiB        buffer_alloc + buffer_free (cache)   malloc + free
 *   seal+wait, one op       copy_d2d 4 B + seal + wait + release a 4 B memcpy handed to a thread
 *                                                               and waited for (mutex/condvar)
 *   create+destroy warm     runtime_create + runtime_destroy     pthread_create + pthread_join */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define MiB (1ull << 20)
#define BIG (64 * MiB)

unsigned bench_host_threads; /* the runtime's copy_threads (bench_host_copy_threads) */

/* The rule of backend-core/copypool's t4a__copy_threads_default, so that the
 * reference pool matches a runtime made with the default options. */
unsigned bench_host_copy_threads(unsigned asked) {
  if (asked)
    return asked;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 1)
    return 1u;
  long small = n < 8 ? n : 8, most = 3 * n / 4 < 16 ? 3 * n / 4 : 16;
  return (unsigned)(small > most ? small : most);
}

/* ---- the reference pool: N - 1 threads and the caller ------------------------------ */

typedef struct pool {
  pthread_t th[64];
  unsigned n; /* threads in all, the caller included */
  pthread_mutex_t lock;
  pthread_cond_t go, done;
  uint64_t round; /* lock: advanced per job */
  unsigned left;  /* lock: slices not yet done */
  bool quit;
  /* the job */
  char *dst;
  const char *src; /* NULL: memset with `byte` */
  size_t bytes;
  int byte;
} pool;

static void slice(pool *p, unsigned i) {
  size_t part = (p->bytes / p->n + 4095) & ~(size_t)4095, at = part * i;
  if (at >= p->bytes)
    return;
  size_t n = p->bytes - at < part ? p->bytes - at : part;
  if (p->src)
    memcpy(p->dst + at, p->src + at, n);
  else
    memset(p->dst + at, p->byte, n);
}

typedef struct worker_arg {
  pool *p;
  unsigned index;
} worker_arg;

static void *pool_main(void *arg) {
  worker_arg *w = arg;
  pool *p = w->p;
  unsigned index = w->index;
  free(w);
  uint64_t seen = 0;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (p->round == seen && !p->quit)
      pthread_cond_wait(&p->go, &p->lock);
    if (p->quit)
      break;
    seen = p->round;
    pthread_mutex_unlock(&p->lock);
    slice(p, index);
    pthread_mutex_lock(&p->lock);
    if (--p->left == 0)
      pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

static pool *pool_new(unsigned n) {
  pool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->n = n < 1 ? 1 : n > 64 ? 64 : n;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  for (unsigned i = 1; i < p->n; i++) {
    worker_arg *w = malloc(sizeof *w);
    if (!w || (*w = (worker_arg){p, i}, pthread_create(&p->th[i], NULL, pool_main, w))) {
      fprintf(stderr, "t4a_bench: cannot start the reference threads\n");
      exit(1);
    }
  }
  return p;
}

static void pool_run(pool *p, void *dst, const void *src, size_t bytes, int byte) {
  pthread_mutex_lock(&p->lock);
  p->dst = dst;
  p->src = src;
  p->bytes = bytes;
  p->byte = byte;
  p->left = p->n - 1;
  p->round++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->lock);
  slice(p, 0);
  pthread_mutex_lock(&p->lock);
  while (p->left)
    pthread_cond_wait(&p->done, &p->lock);
  pthread_mutex_unlock(&p->lock);
}

static void pool_free(pool *p) {
  pthread_mutex_lock(&p->lock);
  p->quit = true;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->lock);
  for (unsigned i = 1; i < p->n; i++)
    pthread_join(p->th[i], NULL);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* ---- the cases ------------------------------------------------------------------------ */

typedef struct big_state {
  pool *p;
  t4a_buffer buf;
  char *dev;  /* the buffer's memory */
  char *host; /* pageable, touched */
} big_state;

static void sync_rt(void) {
  t4a_witness w;
  bench_check(E.t->seal(E.rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

static void *big_setup(const bench_case *c) {
  (void)c;
  big_state *s = calloc(1, sizeof *s);
  if (s) {
    s->p = pool_new(bench_host_threads);
    s->host = malloc(BIG);
  }
  if (!s || !s->p || !s->host) {
    fprintf(stderr, "t4a_bench: out of memory for the host cases\n");
    exit(1);
  }
  memset(s->host, 0x5a, BIG); /* no first-touch faults in the numbers */
  bench_check(E.t->buffer_alloc(E.rt, BIG, &s->buf), "buffer_alloc");
  uint64_t a;
  bench_check(E.t->buffer_device_address(E.rt, s->buf, &a), "buffer_device_address");
  s->dev = (char *)(uintptr_t)a;
  bench_check(E.t->memset(E.rt, s->buf, 0, 0, 1, BIG), "memset");
  sync_rt();
  return s;
}

static void big_teardown(void *v) {
  big_state *s = v;
  bench_check(E.t->buffer_free(E.rt, s->buf), "buffer_free");
  pool_free(s->p);
  free(s->host);
  free(s);
}

static void h2d_ours(void *v, int batch) {
  big_state *s = v;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_h2d(E.rt, s->buf, 0, s->host, BIG), "copy_h2d");
  sync_rt();
}

static void h2d_raw(void *v, int batch) {
  big_state *s = v;
  for (int i = 0; i < batch; i++)
    pool_run(s->p, s->dev, s->host, BIG, 0);
}

static void d2h_ours(void *v, int batch) {
  big_state *s = v;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->copy_d2h(E.rt, s->host, s->buf, 0, BIG), "copy_d2h");
}

static void d2h_raw(void *v, int batch) {
  big_state *s = v;
  for (int i = 0; i < batch; i++)
    pool_run(s->p, s->host, s->dev, BIG, 0);
}

static void memset_ours(void *v, int batch) {
  big_state *s = v;
  for (int i = 0; i < batch; i++)
    bench_check(E.t->memset(E.rt, s->buf, 0, 0x11, 1, BIG), "memset");
  sync_rt();
}

static void memset_raw(void *v, int batch) {
  big_state *s = v;
  for (int i = 0; i < batch; i++)
    pool_run(s->p, s->dev, NULL, BIG, 0x11);
}

static void alloc_ours(void *v, int batch) {
  (void)v;
  for (int i = 0; i < batch; i++) {
    t4a_buffer b;
    bench_check(E.t->buffer_alloc(E.rt, 4096, &b), "buffer_alloc");
    bench_check(E.t->buffer_free(E.rt, b), "buffer_free");
  }
}

static void alloc_raw(void *v, int batch) {
  (void)v;
  for (int i = 0; i < batch; i++) {
    void *volatile p = malloc(4096); /* volatile: the pair is not optimised away */
    free(p);
  }
}

/* seal+wait: one small buffer pair on ours; on the raw side a thread that
 * waits on a condition variable for a 4 B memcpy to do. */
typedef struct seal_state {
  t4a_buffer a, b;
  pthread_t th;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int pending; /* 1: a copy to do, 0: done; -1: quit */
  uint32_t x, y;
} seal_state;

static void *seal_thread(void *v) {
  seal_state *s = v;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (s->pending == 0)
      pthread_cond_wait(&s->cv, &s->lock);
    if (s->pending < 0)
      break;
    memcpy(&s->y, &s->x, 4);
    s->pending = 0;
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static void *seal_setup(const bench_case *c) {
  (void)c;
  seal_state *s = calloc(1, sizeof *s);
  if (!s)
    exit(1);
  bench_check(E.t->buffer_alloc(E.rt, 4, &s->a), "buffer_alloc");
  bench_check(E.t->buffer_alloc(E.rt, 4, &s->b), "buffer_alloc");
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  if (pthread_create(&s->th, NULL, seal_thread, s))
    exit(1);
  return s;
}

static void seal_teardown(void *v) {
  seal_state *s = v;
  pthread_mutex_lock(&s->lock);
  s->pending = -1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->th, NULL);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->lock);
  bench_check(E.t->buffer_free(E.rt, s->a), "buffer_free");
  bench_check(E.t->buffer_free(E.rt, s->b), "buffer_free");
  free(s);
}

static void seal_ours(void *v, int batch) {
  seal_state *s = v;
  for (int i = 0; i < batch; i++) {
    bench_check(E.t->copy_d2d(E.rt, s->b, 0, s->a, 0, 4), "copy_d2d");
    sync_rt();
  }
}

static void seal_raw(void *v, int batch) {
  seal_state *s = v;
  for (int i = 0; i < batch; i++) {
    pthread_mutex_lock(&s->lock);
    s->pending = 1;
    pthread_cond_broadcast(&s->cv);
    while (s->pending == 1)
      pthread_cond_wait(&s->cv, &s->lock);
    pthread_mutex_unlock(&s->lock);
  }
}

static void create_ours(void *v, int batch) {
  (void)v;
  t4a_runtime_options o = {.struct_size = sizeof o, .copy_threads = bench_host_threads};
  for (int i = 0; i < batch; i++) {
    t4a_runtime rt;
    bench_check(E.t->runtime_create(0, &o, &rt), "runtime_create");
    bench_check(E.t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  }
}

static void *empty_thread(void *v) { return v; }

static void create_raw(void *v, int batch) {
  (void)v;
  for (int i = 0; i < batch; i++) {
    pthread_t th;
    if (pthread_create(&th, NULL, empty_thread, NULL))
      exit(1);
    pthread_join(th, NULL);
  }
}

/* The rows, two shapes: the 64 MiB bandwidth rows (GB/s, one operation a
 * sample, ours at least 0.95x the raw threads) and the call rows (us per
 * operation, at most `goal`). */
#define BIG_ROW(label, ours_, raw_)                                                                \
  {                                                                                                \
    .name = label, .bytes = BIG, .batch = 1, .samples = 21, .warmup = 3,                           \
    .target_kind = TARGET_RATIO_MIN, .target = 0.95, .setup = big_setup, .ours = ours_,            \
    .raw = raw_, .teardown = big_teardown                                                          \
  }
#define CALL_ROW(label, n, samples_, goal, setup_, ours_, raw_, teardown_)                         \
  {                                                                                                \
    .name = label, .batch = n, .samples = samples_, .warmup = 3, .target_kind = TARGET_ABS_MAX,    \
    .target = goal, .setup = setup_, .ours = ours_, .raw = raw_, .teardown = teardown_             \
  }

const bench_case bench_host_cases[] = {
    BIG_ROW("host: pageable H2D 64 MiB", h2d_ours, h2d_raw),
    BIG_ROW("host: pageable D2H 64 MiB", d2h_ours, d2h_raw),
    BIG_ROW("host: memset 64 MiB (queued)", memset_ours, memset_raw),
    CALL_ROW("host: alloc+free 4 KiB", 10000, 41, 0.10, NULL, alloc_ours, alloc_raw, NULL),
    CALL_ROW("host: seal+wait after a 4 B copy", 2000, 31, 2.0, seal_setup, seal_ours, seal_raw,
             seal_teardown),
    CALL_ROW("host: create+destroy warm", 200, 31, 50.0, NULL, create_ours, create_raw, NULL),
    {.name = NULL}};
