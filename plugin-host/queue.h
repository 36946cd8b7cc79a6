/* plugin-host/queue.h -- the execution model of the host backend (queue.c):
 * each runtime is one in-order queue of operations, run by a worker thread
 * of its own, off the caller's thread.
 *
 * The queue is a preallocated ring of operations (the worker's, reused with
 * it): enqueueing writes one entry and publishes it with one atomic store;
 * the worker is woken (its condition variable) only when it went to sleep. Completion is a counter:
 * `done` on the runtime's timeline is how many operations have run, so a
 * position in the queue (the `tail` at some call) is complete once done
 * reaches it. The timeline is reference counted and outlives its runtime:
 * witnesses hold it (witness.c).
 *
 * When the queue is idle (everything enqueued has run) a small operation
 * may run on the caller's thread at once instead (t4a__queue_inline): the
 * order is the same, and the caller saves the wake-up. */
#ifndef T4A_PLUGIN_HOST_QUEUE_H
#define T4A_PLUGIN_HOST_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend-core/copypool.h"

/* What completes a runtime's work, shared with its witnesses. */
typedef struct t4a__timeline {
  _Atomic uint64_t done; /* operations run */
  atomic_int fault;      /* sticky: a T4A_E* status, 0 = none */
  atomic_uint refs;      /* the runtime's and each witness's */
  atomic_uint waiters;   /* threads blocked in t4a__timeline_wait */
  pthread_mutex_t lock;  /* with `cond`: the waiters' sleep */
  pthread_cond_t cond;
  uint32_t rt_index, rt_gen; /* the runtime that runs it (witness_elapsed, retirement) */
  bool timing;               /* T4A_RUNTIME_TIMING */
  atomic_bool retiring;      /* the runtime has releases waiting (retire.c) */
} t4a__timeline;

/* A time recorded at a point of a timing runtime's queue (a seal): shared
 * by the witnesses of that point, reference counted. */
typedef struct t4a__mark {
  _Atomic uint64_t ns; /* CLOCK_MONOTONIC when the point was reached; 0 = not yet */
  atomic_uint refs;
} t4a__mark;

typedef struct t4a__graph_ops t4a__graph_ops;
typedef struct t4a__hklaunch t4a__hklaunch;

enum t4a__op_kind {
  T4A__OP_COPY = 1, /* rows of bytes from src to dst at the pitches (a 1D copy: one row) */
  T4A__OP_FILL,     /* bytes at dst of elements `fill` bytes wide holding `pattern` */
  T4A__OP_WAIT,     /* until tl->done >= seq (another runtime's work, a witness); it
                       holds a reference on tl, dropped once it ran */
  T4A__OP_MARK,     /* stores the time into mark; it holds a reference on the mark, dropped
                       once it ran */
  T4A__OP_GRAPH,    /* runs a graph's operations in order */
  T4A__OP_GATE,     /* until the 32-bit word at src is nonzero: the test gate (test_gate.h) */
  T4A__OP_FINISH,   /* the end of a copy or fill started early (t4a__queue_early): u.task */
  T4A__OP_KERNEL    /* a launch (kernel.h): every block of u.kernel; `fill` nonzero: the
                       operation owns the record (a queued launch: freed once run), zero: a
                       graph's */
};

/* One operation of the queue (or of a graph). */
typedef struct t4a__op {
  uint8_t kind;
  uint8_t fill;
  uint32_t pattern;
  void *dst;
  const void *src;
  uint64_t bytes, rows, dst_pitch, src_pitch;
  union {
    struct {
      t4a__timeline *tl;
      uint64_t seq;
    } wait;
    t4a__mark *mark;
    const t4a__graph_ops *graph;
    t4a__copy_task *task;
    t4a__hklaunch *kernel;
  } u;
} t4a__op;

/* A graph's operations, immutable once captured. */
struct t4a__graph_ops {
  t4a__op *ops;
  uint32_t count;
};

typedef struct t4a__worker t4a__worker;

typedef struct t4a__queue {
  t4a__op *ring; /* cap entries, cap a power of two */
  uint32_t cap;
  _Atomic uint64_t tail; /* operations enqueued (written by the runtime's lock holder) */
  atomic_bool sleeping;  /* the worker is not looking: a push signals it (its own cv) */
  atomic_bool full;      /* a producer waits on `room` */
  atomic_bool stop;      /* the worker leaves once the queue is empty */
  pthread_mutex_t lock;  /* with `room`: a producer's wait for room in the ring */
  pthread_cond_t room;
  t4a__timeline *tl;
  unsigned copy_threads; /* for large operations */
  t4a__worker *worker;
  t4a__copy_task early; /* the operation t4a__queue_early started (one at a time) */
} t4a__queue;

/* Operations at least this large are split over the copy threads. */
#define T4A__HOST_SPLIT_MIN (1u << 20)
/* Operations at most this large run on the caller's thread when the queue
 * is idle. */
#define T4A__HOST_INLINE_MAX (256u << 10)

/* Creates the queue, its timeline and ring, and gives it a worker (a parked
 * one when there is one: runtime_create stays cheap). */
int t4a__queue_init(t4a__queue *q, uint32_t rt_index, uint32_t rt_gen, bool timing,
                    unsigned copy_threads);

/* Stops the worker once everything enqueued ran (the caller waited for it)
 * and frees the ring; drops the runtime's reference on the timeline. */
void t4a__queue_fini(t4a__queue *q);

/* Position after everything enqueued so far. */
static inline uint64_t t4a__queue_tail(const t4a__queue *q) {
  return atomic_load_explicit(&q->tail, memory_order_relaxed);
}

/* Whether everything enqueued has run. */
static inline bool t4a__queue_idle(const t4a__queue *q) {
  return atomic_load_explicit(&q->tl->done, memory_order_acquire) == t4a__queue_tail(q);
}

/* Enqueues op (the caller holds the runtime's lock: one producer at a
 * time); waits for room when the ring is full. Returns its position (the
 * tail after it). */
uint64_t t4a__queue_push(t4a__queue *q, const t4a__op *op);

/* Runs op (a copy, fill or mark of at most max_bytes) on the caller's
 * thread when the queue is idle, counting it as enqueued and run; false
 * (nothing done) otherwise. */
bool t4a__queue_inline(t4a__queue *q, const t4a__op *op, uint64_t max_bytes);

/* A large 1D copy or fill (at least T4A__HOST_SPLIT_MIN bytes, more than
 * one copy thread) when the queue is idle: started on the caller's thread
 * over the copy threads, which wake at once instead of after the worker,
 * and finished in order by the worker (a FINISH operation pushed behind
 * it), which also takes the part still waiting when it gets there. false
 * (nothing done) otherwise. The caller returns before the work is done, as
 * for any queued operation. */
bool t4a__queue_early(t4a__queue *q, const t4a__op *op);

/* Runs op now on this thread (the caller's or the worker's): T4A_OK, or
 * T4A_EDEVICEFAULT when a kernel of it faulted (the device is faulted:
 * kernel.h, fault.c). */
int t4a__op_run(const t4a__op *op, unsigned copy_threads);

/* Releases what an operation that will never run holds (a queue stopped by
 * a device fault): a WAIT's timeline reference, a launch record it owns; a
 * FINISH waits for its early operation's parts (they use the memory). */
void t4a__op_discard(const t4a__op *op);

/* Whether tl reached seq. */
static inline bool t4a__timeline_reached(t4a__timeline *tl, uint64_t seq) {
  return atomic_load_explicit(&tl->done, memory_order_acquire) >= seq;
}

/* Waits until tl reached seq: spins briefly, then sleeps. T4A_OK, or
 * T4A_ETIMEOUT after timeout_ns (T4A_WAIT_FOREVER: no limit), or the
 * timeline's fault. */
int t4a__timeline_wait(t4a__timeline *tl, uint64_t seq, uint64_t timeout_ns);

void t4a__timeline_retain(t4a__timeline *tl);
void t4a__timeline_release(t4a__timeline *tl);

/* A new mark (one reference), or NULL when memory is short. */
t4a__mark *t4a__mark_new(void);
void t4a__mark_retain(t4a__mark *m);
void t4a__mark_release(t4a__mark *m);

/* CLOCK_MONOTONIC in ns. */
uint64_t t4a__host_now_ns(void);

/* Plugin teardown: parked workers leave and are joined. */
void t4a__workers_unload(void);

#endif
