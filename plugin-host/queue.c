/* plugin-host/queue.c -- the queues and their workers (see queue.h).
 *
 * A worker thread per runtime, not one pool for all: a runtime's queue is
 * in order, so one thread per queue needs no scheduling between runtimes
 * (a shared pool would have to hand each runtime to at most one thread at a
 * time to keep its order, and a WAIT operation, which blocks its thread on
 * another runtime, would take a pool thread from everyone). Large
 * operations are split over the process-wide copy threads (backend-core/copypool),
 * so a runtime is not limited to its one thread. Workers of destroyed
 * runtimes are parked, with their rings, and handed to the next
 * runtime_create, which then costs no thread creation and no allocation of
 * a ring (docs/design.md, "The host backend").
 *
 * A worker sleeps on its own condition variable, never on its queue's: so
 * runtime_create attaches a parked worker without waking it (its queue is
 * marked `sleeping`: the first push wakes it), and runtime_destroy detaches
 * a sleeping worker without waking it. A create + destroy with no work in
 * between makes no system call and no thread switch. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/error.h"
#include "backend-core/copypool.h"
#include "plugin-host/kernel.h"
#include "plugin-host/queue.h"
#include "t4a/gpu_backend_v1.h"

/* How long an idle worker (and a waiter) looks for news before it sleeps:
 * a wake-up costs tens of microseconds, this much spinning a few. */
#define SPIN_NS 20000u
#define RING_CAP 1024u /* operations a queue holds before a producer waits */
#define MAX_PARKED 16u

struct t4a__worker {
  pthread_t th;
  pthread_mutex_t lock; /* guards q, running, quit; with cv, the worker's sleep */
  pthread_cond_t cv;    /* the worker waits for work or quit; fini for !running */
  t4a__queue *q;        /* the queue it serves, NULL while parked */
  bool running;         /* inside run_queue(q), without the lock */
  bool quit;
  t4a__op *ring;     /* RING_CAP entries, lent to the queue it serves */
  t4a__worker *next; /* in `parked` */
};

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static t4a__worker *parked; /* workers_lock */
static unsigned parked_count;
static t4a__worker **all; /* every worker started, for the unload */
static unsigned all_count, all_cap;

uint64_t t4a__host_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int t4a__op_run(const t4a__op *op, unsigned copy_threads) {
  uint64_t total = op->bytes * op->rows; /* checked when the operation was made */
  t4a__copy_how how = {total >= T4A__HOST_SPLIT_MIN ? copy_threads : 1u, false, 0, 0};
  switch (op->kind) {
  case T4A__OP_COPY:
    if (op->rows == 1)
      t4a__parallel_memcpy(op->dst, op->src, op->bytes, how);
    else
      t4a__parallel_memcpy_2d(op->dst, op->dst_pitch, op->src, op->src_pitch, op->bytes, op->rows,
                              how);
    break;
  case T4A__OP_FILL: t4a__parallel_fill(op->dst, op->bytes, op->pattern, op->fill, how); break;
  case T4A__OP_WAIT: /* it holds a reference on the timeline it waits for */
    t4a__timeline_wait(op->u.wait.tl, op->u.wait.seq, T4A_WAIT_FOREVER);
    t4a__timeline_release(op->u.wait.tl);
    break;
  case T4A__OP_MARK: /* it holds a reference on the mark */
    atomic_store(&op->u.mark->ns, t4a__host_now_ns());
    t4a__mark_release(op->u.mark);
    break;
  case T4A__OP_GRAPH:
    for (uint32_t i = 0; i < op->u.graph->count; i++) {
      int rc = t4a__op_run(&op->u.graph->ops[i], copy_threads);
      if (rc)
        return rc; /* a kernel faulted: nothing after it runs */
    }
    break;
  case T4A__OP_FINISH: t4a__copy_finish(op->u.task); break;
  case T4A__OP_GATE: /* a test's gate: polls the word, sleeping (the host opens it late) */
    while (!__atomic_load_n((const uint32_t *)op->src, __ATOMIC_ACQUIRE)) {
      struct timespec ts = {0, 50000};
      nanosleep(&ts, NULL);
    }
    break;
  case T4A__OP_KERNEL: return t4a__hk_execute(op->u.kernel);
  default: break;
  }
  return T4A_OK;
}

void t4a__op_discard(const t4a__op *op) {
  if (op->kind == T4A__OP_WAIT)
    t4a__timeline_release(op->u.wait.tl);
  else if (op->kind == T4A__OP_FINISH) /* its parts run on the copy threads: wait for them */
    t4a__copy_finish(op->u.task);
  else if (op->kind == T4A__OP_KERNEL && op->fill)
    free(op->u.kernel);
}

/* After the worker advanced `done`: wakes who sleeps on it. The fence
 * pairs with the sleepers' announcement (waiters, full) before they look at
 * `done`: one of the two sides sees the other. */
static void woke(t4a__queue *q) {
  t4a__timeline *tl = q->tl;
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
/* gcc's -Wtsan: TSan does not model fences; what this one orders are
 * atomics (done against waiters and full), which TSan never reports */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
  atomic_thread_fence(memory_order_seq_cst);
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  if (atomic_load_explicit(&tl->waiters, memory_order_relaxed)) {
    pthread_mutex_lock(&tl->lock);
    pthread_cond_broadcast(&tl->cond);
    pthread_mutex_unlock(&tl->lock);
  }
  if (atomic_load_explicit(&q->full, memory_order_relaxed)) {
    pthread_mutex_lock(&q->lock);
    pthread_cond_broadcast(&q->room);
    pthread_mutex_unlock(&q->lock);
  }
}

/* done >= tail: nothing to run. `>=`, not `==`: an inline operation
 * advances done before tail (queue_inline), and a worker that read the old
 * tail must not run the entry behind it. */
static bool empty(const t4a__queue *q) {
  uint64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
  return atomic_load_explicit(&q->tl->done, memory_order_acquire) >= tail;
}

static bool spin_for_work(const t4a__queue *q) {
  uint64_t until = t4a__host_now_ns() + SPIN_NS;
  for (unsigned i = 1;; i++) {
    if (!empty(q) || atomic_load_explicit(&q->stop, memory_order_relaxed))
      return true;
    cpu_relax();
    if (i % 64 == 0 && t4a__host_now_ns() >= until)
      return false;
  }
}

/* The device faulted (this queue's kernel or another's): q runs nothing
 * more. `done` stays where it is, so every witness of work not run reports
 * the fault (t4a__timeline_wait) while those of work done stay ready; the
 * operations left are discarded by t4a__queue_fini. */
static void stop_faulted(t4a__queue *q) {
  atomic_store(&q->tl->fault, T4A_EDEVICEFAULT);
  woke(q);
}

static bool faulted(const t4a__queue *q) {
  return atomic_load_explicit(&q->tl->fault, memory_order_relaxed) != 0;
}

/* Runs q's operations until it is empty and either stopped or idle for
 * SPIN_NS (then the worker goes to sleep: worker_main), or the device
 * faulted. */
static void run_queue(t4a__queue *q) {
  t4a__timeline *tl = q->tl;
  for (;;) {
    uint64_t tail = atomic_load_explicit(&q->tail, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&tl->done, memory_order_acquire);
    if (head < tail) {
      if (atomic_load_explicit(&t4a__hfaulted, memory_order_relaxed)) {
        stop_faulted(q); /* a device fault stops every runtime's work, as on CUDA */
        return;
      }
      t4a__op *op = &q->ring[head & (q->cap - 1)];
      int rc = t4a__op_run(op, q->copy_threads);
      if (op->kind == T4A__OP_KERNEL && op->fill)
        free(op->u.kernel); /* a queued launch's record: run, so done with */
      if (rc) {
        op->kind = 0; /* consumed: t4a__queue_fini must not discard it again */
        stop_faulted(q);
        return;
      }
      atomic_store_explicit(&tl->done, head + 1, memory_order_release);
      woke(q);
      continue;
    }
    if (atomic_load(&q->stop) || !spin_for_work(q))
      return;
  }
}

/* Serves w->q while it has work; sleeps on w->cv otherwise. Before it
 * sleeps it marks the queue `sleeping` (seq_cst) and looks once more:
 * a producer stores the tail, then reads `sleeping` (t4a__queue_push), so
 * either the worker sees the new tail or the producer sees the mark and
 * signals w->cv under w->lock. */
static void *worker_main(void *arg) {
  t4a__worker *w = arg;
  pthread_mutex_lock(&w->lock);
  while (!w->quit) {
    t4a__queue *q = w->q;
    if (!q || empty(q) || faulted(q)) {
      pthread_cond_wait(&w->cv, &w->lock);
      continue;
    }
    atomic_store(&q->sleeping, false);
    w->running = true;
    pthread_mutex_unlock(&w->lock);
    run_queue(q);
    pthread_mutex_lock(&w->lock);
    w->running = false;
    if (w->q == q)
      atomic_store(&q->sleeping, true); /* then the loop looks at the tail again */
    pthread_cond_broadcast(&w->cv);     /* queue_fini and the unload wait for !running */
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

/* A parked worker, or a new one; NULL when no thread can be had. */
static t4a__worker *worker_take(void) {
  pthread_mutex_lock(&workers_lock);
  t4a__worker *w = parked;
  if (w) {
    parked = w->next;
    parked_count--;
    pthread_mutex_unlock(&workers_lock);
    return w;
  }
  if (all_count == all_cap) {
    uint64_t n;
    size_t bytes;
    /* an array of pointers to workers */
    bool grows = t4a__grow(all_cap, 16, UINT32_MAX, sizeof(t4a__worker *), &n, &bytes);
    t4a__worker **p = grows ? realloc(all, bytes) : NULL;
    if (!p) {
      pthread_mutex_unlock(&workers_lock);
      return NULL;
    }
    all = p;
    all_cap = (unsigned)n;
  }
  w = calloc(1, sizeof *w);
  if (w && !(w->ring = malloc(RING_CAP * sizeof *w->ring))) {
    free(w);
    w = NULL;
  }
  if (w) {
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, worker_main, w) == 0) {
      all[all_count++] = w;
    } else {
      pthread_cond_destroy(&w->cv);
      pthread_mutex_destroy(&w->lock);
      free(w->ring);
      free(w);
      w = NULL;
    }
  }
  pthread_mutex_unlock(&workers_lock);
  return w;
}

/* Gives a worker that left its queue back: parked (asleep: it is not
 * woken), or told to quit when enough are parked (joined at the unload). */
static void worker_give(t4a__worker *w) {
  pthread_mutex_lock(&workers_lock);
  if (parked_count < MAX_PARKED) {
    w->next = parked;
    parked = w;
    parked_count++;
  } else {
    pthread_mutex_lock(&w->lock);
    w->quit = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->lock);
  }
  pthread_mutex_unlock(&workers_lock);
}

static t4a__timeline *timeline_new(uint32_t rt_index, uint32_t rt_gen, bool timing) {
  t4a__timeline *tl = calloc(1, sizeof *tl);
  if (!tl)
    return NULL;
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&tl->cond, &a);
  pthread_condattr_destroy(&a);
  pthread_mutex_init(&tl->lock, NULL);
  atomic_init(&tl->refs, 1);
  tl->rt_index = rt_index;
  tl->rt_gen = rt_gen;
  tl->timing = timing;
  return tl;
}

int t4a__queue_init(t4a__queue *q, uint32_t rt_index, uint32_t rt_gen, bool timing,
                    unsigned copy_threads) {
  memset(q, 0, sizeof *q);
  q->cap = RING_CAP;
  q->copy_threads = copy_threads ? copy_threads : 1;
  q->worker = worker_take();
  if (!q->worker)
    return t4a__fail(T4A_ENOMEM,
                     "runtime_create: no thread could be started for the runtime's queue "
                     "(pthread_create failed, or out of host memory); destroy runtimes or "
                     "raise the thread limit");
  q->tl = timeline_new(rt_index, rt_gen, timing);
  if (!q->tl) {
    worker_give(q->worker);
    q->worker = NULL;
    return t4a__fail(T4A_ENOMEM, "runtime_create: out of host memory for the queue; free memory");
  }
  q->ring = q->worker->ring;
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->room, NULL);
  /* Attached asleep: no wake-up now; the first push signals the worker. */
  atomic_store(&q->sleeping, true);
  pthread_mutex_lock(&q->worker->lock);
  q->worker->q = q;
  pthread_mutex_unlock(&q->worker->lock);
  return T4A_OK;
}

void t4a__queue_fini(t4a__queue *q) {
  t4a__worker *w = q->worker;
  if (w) { /* the caller waited for the queue to drain: the worker has nothing left to run */
    pthread_mutex_lock(&w->lock);
    atomic_store(&q->stop, true); /* a spinning worker returns at once */
    while (w->running)
      pthread_cond_wait(&w->cv, &w->lock);
    w->q = NULL;
    pthread_mutex_unlock(&w->lock);
    /* after a device fault the operations never run: what they hold goes */
    for (uint64_t i = atomic_load(&q->tl->done); i < t4a__queue_tail(q); i++)
      t4a__op_discard(&q->ring[i & (q->cap - 1)]);
    worker_give(w);
    q->worker = NULL;
  }
  if (q->tl) {
    pthread_cond_destroy(&q->room);
    pthread_mutex_destroy(&q->lock);
    t4a__timeline_release(q->tl);
  }
  q->ring = NULL; /* the worker's */
  q->tl = NULL;
}

static void wait_room(t4a__queue *q, uint64_t t) {
  pthread_mutex_lock(&q->lock);
  atomic_store(&q->full, true);
  while (t - atomic_load(&q->tl->done) >= q->cap)
    pthread_cond_wait(&q->room, &q->lock);
  atomic_store(&q->full, false);
  pthread_mutex_unlock(&q->lock);
}

uint64_t t4a__queue_push(t4a__queue *q, const t4a__op *op) {
  uint64_t t = t4a__queue_tail(q);
  if (t - atomic_load_explicit(&q->tl->done, memory_order_acquire) >= q->cap)
    wait_room(q, t);
  q->ring[t & (q->cap - 1)] = *op;
  atomic_store(&q->tail, t + 1); /* seq_cst: pairs with the worker's `sleeping` */
  if (atomic_load(&q->sleeping)) {
    pthread_mutex_lock(&q->worker->lock);
    pthread_cond_signal(&q->worker->cv);
    pthread_mutex_unlock(&q->worker->lock);
  }
  return t + 1;
}

bool t4a__queue_inline(t4a__queue *q, const t4a__op *op, uint64_t max_bytes) {
  if ((op->kind != T4A__OP_COPY && op->kind != T4A__OP_FILL && op->kind != T4A__OP_MARK) ||
      op->bytes * op->rows > max_bytes || !t4a__queue_idle(q))
    return false;
  t4a__op_run(op, q->copy_threads);
  uint64_t t = t4a__queue_tail(q) + 1;
  atomic_store_explicit(&q->tl->done, t, memory_order_release); /* before tail: see `empty` */
  atomic_store_explicit(&q->tail, t, memory_order_release);
  return true;
}

/* How long the worker finishing an early operation looks at the parts
 * still running before it sleeps, when the copy threads leave a CPU free
 * for it to spin on (else it sleeps at once, as every split's finisher
 * does): the parts end together within tens of microseconds, and a
 * finisher that sleeps puts a wake-up (tens of microseconds from an idle
 * core's sleep state) between the last part and `done`, on the path to the
 * waiting caller. */
#define EARLY_WAIT_SPIN_US 100u

static unsigned online_cpus(void) {
  static atomic_uint cached;
  unsigned n = atomic_load_explicit(&cached, memory_order_relaxed);
  if (!n) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (unsigned)c : 1u;
    atomic_store_explicit(&cached, n, memory_order_relaxed);
  }
  return n;
}

bool t4a__queue_early(t4a__queue *q, const t4a__op *op) {
  if ((op->kind != T4A__OP_COPY || op->rows != 1) && op->kind != T4A__OP_FILL)
    return false;
  if (op->bytes < T4A__HOST_SPLIT_MIN || q->copy_threads < 2 || !t4a__queue_idle(q))
    return false; /* (idle: an earlier early operation's FINISH ran, q->early is free) */
  t4a__copy_how how = {q->copy_threads, false, 0,
                       q->copy_threads < online_cpus() ? EARLY_WAIT_SPIN_US : 0};
  if (op->kind == T4A__OP_COPY)
    t4a__copy_start(&q->early, op->dst, op->src, op->bytes, how);
  else
    t4a__fill_start(&q->early, op->dst, op->bytes, op->pattern, op->fill, how);
  t4a__op fin = {.kind = T4A__OP_FINISH, .rows = 1};
  fin.u.task = &q->early;
  t4a__queue_push(q, &fin);
  return true;
}

int t4a__timeline_wait(t4a__timeline *tl, uint64_t seq, uint64_t timeout_ns) {
  if (t4a__timeline_reached(tl, seq))
    return T4A_OK;
  uint64_t start = t4a__host_now_ns(), spin = timeout_ns < SPIN_NS ? timeout_ns : SPIN_NS;
  for (unsigned i = 1; !t4a__timeline_reached(tl, seq); i++) {
    int f = atomic_load_explicit(&tl->fault, memory_order_relaxed);
    if (f)
      return f;
    cpu_relax();
    if (i % 64 == 0 && t4a__host_now_ns() - start >= spin)
      break;
  }
  uint64_t deadline = timeout_ns == T4A_WAIT_FOREVER || start + timeout_ns < start
                          ? UINT64_MAX
                          : start + timeout_ns;
  int rc = T4A_OK;
  atomic_fetch_add(&tl->waiters, 1);
  pthread_mutex_lock(&tl->lock);
  while (!t4a__timeline_reached(tl, seq) && !(rc = atomic_load(&tl->fault))) {
    if (deadline == UINT64_MAX) {
      pthread_cond_wait(&tl->cond, &tl->lock);
      continue;
    }
    uint64_t now = t4a__host_now_ns();
    if (now >= deadline) {
      rc = T4A_ETIMEOUT;
      break;
    }
    struct timespec ts = {(time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u)};
    pthread_cond_timedwait(&tl->cond, &tl->lock, &ts);
  }
  pthread_mutex_unlock(&tl->lock);
  atomic_fetch_sub(&tl->waiters, 1);
  return rc;
}

void t4a__timeline_retain(t4a__timeline *tl) { atomic_fetch_add(&tl->refs, 1); }

void t4a__timeline_release(t4a__timeline *tl) {
  if (atomic_fetch_sub(&tl->refs, 1) != 1)
    return;
  pthread_cond_destroy(&tl->cond);
  pthread_mutex_destroy(&tl->lock);
  free(tl);
}

t4a__mark *t4a__mark_new(void) {
  t4a__mark *m = calloc(1, sizeof *m);
  if (m)
    atomic_init(&m->refs, 1);
  return m;
}

void t4a__mark_retain(t4a__mark *m) { atomic_fetch_add(&m->refs, 1); }

void t4a__mark_release(t4a__mark *m) {
  if (m && atomic_fetch_sub(&m->refs, 1) == 1)
    free(m);
}

/* The plugin is being unloaded: no worker may outlive its code. A worker
 * still running a live runtime's queue drains it and leaves first (the
 * runtime itself is left, as the CUDA plugin leaves its live runtimes). */
void t4a__workers_unload(void) {
  pthread_mutex_lock(&workers_lock);
  for (unsigned i = 0; i < all_count; i++) {
    t4a__worker *w = all[i];
    pthread_mutex_lock(&w->lock);
    t4a__queue *q = w->q;
    if (q) {
      atomic_store(&q->stop, true);
      pthread_cond_signal(&w->cv); /* asleep with work just pushed: run it */
      while (w->running || (!empty(q) && !faulted(q)))
        pthread_cond_wait(&w->cv, &w->lock);
      w->q = NULL;
    }
    w->quit = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->lock);
    free(w->ring);
    free(w);
  }
  free(all);
  all = NULL;
  all_count = all_cap = 0;
  parked = NULL;
  parked_count = 0;
  pthread_mutex_unlock(&workers_lock);
}
