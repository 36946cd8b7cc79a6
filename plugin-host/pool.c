/* plugin-host/pool.c -- running a launch (kernel.h): the grid's blocks
 * spread over a process-wide pool of threads.
 *
 * The runtime's worker (queue.c) runs a launch when the queue reaches it,
 * and runs blocks of it itself; when the grid holds more than one chunk of
 * blocks it also posts the launch to the pool, whose threads take chunks
 * from the same atomic counter until none is left. The worker returns once
 * every thread that took part has left the launch, so a launch completes
 * before the runtime's next operation starts, and the queue's order holds.
 * Chunks are dynamic (an atomic fetch-add per chunk of about 1/8 of a
 * thread's share): blocks that take longer than others balance out. A
 * grid of one chunk (an empty launch, a small one) wakes nobody.
 *
 * One pool for the process, not one per runtime (docs/design.md, "Kernels
 * on the CPU"): the CPUs are one resource, and a pool per runtime would
 * oversubscribe them as soon as two runtimes launch at once. The pool
 * starts at the first launch that posts work (a process that launches
 * nothing starts no thread): T4A_HOST_THREADS threads in all (the worker
 * included), else one per online CPU. Its threads spin briefly for the
 * next launch (back-to-back launches are the common case), then sleep; they
 * block asynchronous signals (the consumer's handlers run on its threads),
 * not the synchronous ones a kernel's fault raises.
 *
 * Each thread that runs blocks owns what a block borrows (t4a_hk_worker):
 * fiber stacks (mapped on first need, as many as the largest block of a
 * synchronising kernel it ran, each T4A_HOST_STACK_KIB (default below) with
 * a PROT_NONE guard page below it, MAP_NORESERVE: only touched pages cost
 * memory), the fibers' records (in the same mapping, after the stacks and a
 * guard page of their own: one array, so that a barrier's switches stay
 * within a few pages) and the
 * dynamic shared memory (grown to the largest request, 256-byte aligned). A pool
 * thread keeps them in its own struct, a runtime's worker in a
 * thread-local one; all are freed at the plugin's unload. */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/env.h"
#include "plugin-host/kernel.h"

/* A fiber's stack (a CUDA thread's, in a kernel that synchronises), unless
 * T4A_HOST_STACK_KIB (16-4096) says otherwise: what a kernel's locals,
 * its calls and printf get (CUDA's own default is 1 KiB of stack, but a
 * GPU thread's local arrays are not on it; here they are). Measured on the
 * H200 host's Xeon, the barrier's cost did not follow the size beyond that
 * machine's noise (7.5-14 ns per thread and barrier from 32 to 252 KiB, a
 * 256-thread block; performance.md), so the default stays 64 KiB. */
#define STACK_DEFAULT_KIB 64u
#define STACK_MIN_KIB 16u
#define STACK_MAX_KIB 4096u
#define MAX_STACKS 1024u
#define SPIN_NS 20000u
#define MAX_THREADS 1024u

/* What one thread lends the blocks it runs. */
typedef struct hkw {
  t4a_hk_worker w;
  char *map; /* the stacks' mapping, guard pages included */
  size_t map_bytes;
  void *shared;
  void *alt;        /* checked mode: the thread's signal stack (check.c) */
  struct hkw *next; /* in `contexts` */
} hkw;

/* A launch being run: what its threads share. */
typedef struct job {
  t4a__hklaunch *r;
  _Atomic uint64_t next; /* the first block not yet taken */
  uint64_t total, chunk;
  atomic_uint active; /* pool threads inside (changed under plock) */
  bool waiting;       /* the poster sleeps on done_cv (plock) */
  atomic_int faulted; /* the first fault's participant won it */
  t4a_hk_fault fault;
  struct job *next_job; /* in `jobs` */
} job;

static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static job *jobs;               /* launches with blocks left (plock) */
static atomic_uint posts;       /* launches posted so far: what a spinning thread watches */
static uint32_t sleepers;       /* pool threads in cond_wait (plock) */
static pthread_t *pool_threads; /* plock */
static hkw *pool_ctx;           /* one per pool thread */
static uint32_t started;        /* threads running (plock) */
static bool tried, quit;        /* plock */
static hkw *contexts;           /* the runtime workers' contexts (plock), freed at unload */
static __thread hkw *mine;      /* a runtime worker's context */
static pthread_once_t size_once = PTHREAD_ONCE_INIT;
static uint32_t size_; /* pool threads (the workers run blocks too) */

/* The decimal number in environment variable `name`, or 0 when it is unset,
 * empty or not a number. */
static uint64_t env_number(const char *name) {
  const char *v = t4a__getenv(name);
  char *end = NULL;
  unsigned long long x = v && *v ? strtoull(v, &end, 10) : 0;
  return end && !*end ? (uint64_t)x : 0;
}

static void decide_size(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t n = cpus > 0 ? (uint64_t)cpus : 1, x = env_number("T4A_HOST_THREADS");
  if (x >= 1)
    n = x > MAX_THREADS ? MAX_THREADS : x;
  size_ = (uint32_t)(n - 1);
}

uint32_t t4a__hk_pool_size(void) {
  pthread_once(&size_once, decide_size);
  return size_;
}

static pthread_once_t stack_once = PTHREAD_ONCE_INIT;
static size_t stack_bytes_; /* a whole number of pages */

static void decide_stack(void) {
  uint64_t kib = env_number("T4A_HOST_STACK_KIB");
  if (kib < STACK_MIN_KIB || kib > STACK_MAX_KIB)
    kib = STACK_DEFAULT_KIB;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  stack_bytes_ = ((size_t)kib * 1024u + page - 1) / page * page;
}

static size_t stack_bytes(void) {
  pthread_once(&stack_once, decide_stack);
  return stack_bytes_;
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

/* ---- what a thread lends a block ---------------------------------------------------- */

static void unmap_stacks(hkw *c) {
  if (c->map)
    munmap(c->map, c->map_bytes);
  c->map = NULL;
  c->map_bytes = 0;
  c->w.stacks = NULL;
  c->w.fibers = NULL;
  c->w.stack_count = 0;
}

/* At least n fiber stacks (a power of two up to MAX_STACKS). */
static bool ensure_stacks(hkw *c, uint32_t n) {
  if (c->w.stack_count >= n)
    return true;
  uint32_t count = 32;
  while (count < n)
    count *= 2;
  if (count > MAX_STACKS)
    count = MAX_STACKS;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), sb = stack_bytes(), stride = sb + page;
  /* the stacks, a guard page, the fibers' records */
  size_t bytes = (size_t)count * stride + page + (size_t)count * T4A_HK_FIBER_BYTES;
  char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED)
    return false;
  for (uint32_t i = 0; i <= count; i++) /* the last: between the last stack and the records */
    if (mprotect(m + (size_t)i * stride, page, PROT_NONE) != 0) {
      munmap(m, bytes);
      return false;
    }
  unmap_stacks(c);
  c->map = m;
  c->map_bytes = bytes;
  c->w.stacks = m + page; /* stack i at stacks + i * (stack_bytes + page), its guard below it */
  c->w.stack_bytes = sb;
  c->w.stack_count = count;
  c->w.fibers = m + (size_t)count * stride + page; /* above the last stack's guard */
  return true;
}

static bool ensure_shared(hkw *c, uint64_t bytes) {
  uint64_t want = bytes < 256 ? 256 : (bytes + 255) & ~(uint64_t)255;
  if (c->w.shared_bytes >= want)
    return true;
  void *p = aligned_alloc(256, (size_t)want);
  if (!p)
    return false;
  free(c->shared);
  c->shared = c->w.shared = p;
  c->w.shared_bytes = want;
  return true;
}

/* Whether c can run blocks of r. */
static bool prepare(hkw *c, const t4a__hklaunch *r) {
  uint64_t threads = (uint64_t)r->l.block.x * r->l.block.y * r->l.block.z;
  if ((r->k->flags & T4A_HK_KERNEL_FIBERS) && !ensure_stacks(c, (uint32_t)threads))
    return false;
  return ensure_shared(c, r->l.dynamic_shared);
}

static void free_context(hkw *c) {
  unmap_stacks(c);
  free(c->shared);
  t4a__hcheck_free_alt(c->alt);
}

/* The calling runtime worker's context, made on first use. */
static hkw *worker_context(void) {
  if (mine)
    return mine;
  hkw *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_mutex_lock(&plock);
  c->next = contexts;
  contexts = c;
  pthread_mutex_unlock(&plock);
  mine = c;
  return c;
}

/* ---- running blocks ------------------------------------------------------------------ */

/* The first fault of the launch wins; the others' blocks stop at their next
 * block boundary (the module reads *stop). */
static void record(job *j, const t4a_hk_fault *f) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&j->faulted, &expected, 1))
    j->fault = *f;
  __atomic_store_n(&j->r->stop, 1, __ATOMIC_RELAXED);
}

/* Takes chunks of j until none is left (or it faulted). */
static void take_chunks(job *j, hkw *c) {
  if (!prepare(c, j->r))
    return; /* this thread cannot lend what the blocks need: the others run them */
  const t4a_hk_kernel *k = j->r->k;
  for (;;) {
    uint64_t first = atomic_fetch_add_explicit(&j->next, j->chunk, memory_order_relaxed);
    if (first >= j->total)
      return;
    uint64_t count = j->total - first < j->chunk ? j->total - first : j->chunk;
    t4a_hk_fault f;
    memset(&f, 0, sizeof f);
    if (k->run(&j->r->l, first, count, &c->w, &f)) {
      record(j, &f);
      return;
    }
    if (__atomic_load_n(&j->r->stop, __ATOMIC_RELAXED))
      return;
  }
}

/* take_chunks; for a checked launch, with the thread's memory faults
 * turned into the kernel's (check.c). Unchecked, one branch more. */
static void run_chunks(job *j, hkw *c) {
  if (!j->r->checked) {
    take_chunks(j, c);
    return;
  }
  t4a__hcheck_enter(&c->alt, j->r->fault_here);
  take_chunks(j, c);
  t4a__hcheck_leave();
}

static void *pool_main(void *arg) {
  hkw *c = arg;
  pthread_mutex_lock(&plock);
  for (;;) {
    job *j = jobs;
    while (j && atomic_load_explicit(&j->next, memory_order_relaxed) >= j->total)
      j = j->next_job;
    if (j) {
      atomic_fetch_add(&j->active, 1);
      pthread_mutex_unlock(&plock);
      run_chunks(j, c);
      pthread_mutex_lock(&plock);
      if (atomic_fetch_sub(&j->active, 1) == 1 && j->waiting)
        pthread_cond_broadcast(&done_cv);
      continue;
    }
    if (quit)
      break;
    /* nothing to do: watch for the next post a moment, then sleep */
    unsigned seen = atomic_load(&posts);
    pthread_mutex_unlock(&plock);
    uint64_t until = now_ns() + SPIN_NS;
    bool news = false;
    for (unsigned i = 1; !news; i++) {
      news = atomic_load_explicit(&posts, memory_order_relaxed) != seen;
      cpu_relax();
      if (i % 64 == 0 && now_ns() >= until)
        break;
    }
    pthread_mutex_lock(&plock);
    if (news || jobs || quit)
      continue; /* looked at again under the lock before any sleep */
    sleepers++;
    pthread_cond_wait(&work_cv, &plock);
    sleepers--;
  }
  pthread_mutex_unlock(&plock);
  return NULL;
}

/* Starts the pool's threads once (plock held). */
static void start_pool(void) {
  tried = true;
  uint32_t n = t4a__hk_pool_size();
  pool_threads = calloc(n ? n : 1, sizeof *pool_threads);
  pool_ctx = calloc(n ? n : 1, sizeof *pool_ctx);
  if (!pool_threads || !pool_ctx) {
    free(pool_threads);
    free(pool_ctx);
    pool_threads = NULL;
    pool_ctx = NULL;
    return; /* no pool: the workers run every block */
  }
  sigset_t all, old;
  sigfillset(&all);
  static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT};
  for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++)
    sigdelset(&all, sync_signals[i]);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* inherited by the threads made below */
  for (uint32_t i = 0; i < n; i++) {
    if (pthread_create(&pool_threads[started], NULL, pool_main, &pool_ctx[started]) != 0)
      break; /* fewer threads: the launches still complete */
    started++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static const char *kind_name(int32_t kind) {
  switch (kind) {
  case T4A_HK_FAULT_TRAP: return "__trap()";
  case T4A_HK_FAULT_ASSERT: return "a failed assert";
  case T4A_HK_FAULT_BARRIER: return "a barrier or warp operation some threads never reached";
  case T4A_HK_FAULT_MEMORY: return "an access outside the live buffers";
  default: return "a fault";
  }
}

int t4a__hk_execute(t4a__hklaunch *r) {
  job j;
  memset(&j, 0, sizeof j);
  j.r = r;
  j.total = r->blocks;
  r->stop = 0; /* a graph's record runs again */
  r->l.stop = &r->stop;
  uint32_t pool = t4a__hk_pool_size();
  uint64_t share = j.total / ((uint64_t)pool + 1) / 8;
  j.chunk = share ? share : 1;
  bool posted = false;
  if (pool && j.total > j.chunk) {
    pthread_mutex_lock(&plock);
    if (!tried)
      start_pool();
    if (started) {
      j.next_job = jobs;
      jobs = &j;
      atomic_fetch_add(&posts, 1);
      if (sleepers)
        pthread_cond_broadcast(&work_cv);
      posted = true;
    }
    pthread_mutex_unlock(&plock);
  }
  hkw *c = worker_context();
  if (c)
    run_chunks(&j, c);
  if (posted) {
    pthread_mutex_lock(&plock);
    for (job **p = &jobs; *p; p = &(*p)->next_job)
      if (*p == &j) {
        *p = j.next_job; /* no thread joins it from now on */
        break;
      }
    pthread_mutex_unlock(&plock);
    uint64_t until = now_ns() + SPIN_NS;
    for (unsigned i = 1; atomic_load(&j.active); i++) { /* the last chunks' tail */
      cpu_relax();
      if (i % 64 == 0 && now_ns() >= until)
        break;
    }
    pthread_mutex_lock(&plock);
    while (atomic_load(&j.active)) {
      j.waiting = true;
      pthread_cond_wait(&done_cv, &plock);
    }
    pthread_mutex_unlock(&plock);
  }
  char msg[512], broken[320];
  if (atomic_load(&j.faulted)) {
    const t4a_hk_fault *f = &j.fault;
    snprintf(msg, sizeof msg,
             "kernel '%s' faulted (%s) in block (%u, %u, %u), thread (%u, %u, %u): %.256s", r->name,
             kind_name(f->kind), f->block.x, f->block.y, f->block.z, f->thread.x, f->thread.y,
             f->thread.z, f->message);
  } else if (atomic_load(&j.next) < j.total) { /* no thread could lend what the blocks need */
    snprintf(msg, sizeof msg,
             "kernel '%s' could not run: out of host memory for its blocks' fiber stacks or "
             "shared memory",
             r->name);
  } else if (r->checked && !t4a__hcheck_canaries(broken, sizeof broken)) {
    snprintf(msg, sizeof msg, "kernel '%s' faulted (%s): %s", r->name,
             kind_name(T4A_HK_FAULT_MEMORY), broken);
  } else {
    return T4A_OK;
  }
  t4a__hfault_set(msg);
  return T4A_EDEVICEFAULT;
}

void t4a__hk_pool_unload(void) {
  pthread_mutex_lock(&plock);
  quit = true;
  pthread_cond_broadcast(&work_cv);
  pthread_mutex_unlock(&plock);
  for (uint32_t i = 0; i < started; i++)
    pthread_join(pool_threads[i], NULL);
  for (uint32_t i = 0; i < started; i++)
    free_context(&pool_ctx[i]);
  free(pool_threads);
  free(pool_ctx);
  pool_threads = NULL;
  pool_ctx = NULL;
  started = 0;
  for (hkw *c = contexts, *next; c; c = next) {
    next = c->next;
    free_context(c);
    free(c);
  }
  contexts = NULL;
  mine = NULL; /* the unloading thread's, if it ran launches (it never does) */
}
