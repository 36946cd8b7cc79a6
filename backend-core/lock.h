/* backend-core/lock.h -- a runtime's lock (every backend's t4a__rtslot): one
 * compare-and-swap to take, one plain store to give back (lock.c has the
 * slow path).
 *
 * Why not a pthread mutex: every table call takes and gives back its
 * runtime's lock, and glibc's pair is two atomic read-modify-writes and two
 * calls out of the plugin (with its owner and user-count bookkeeping); an
 * alloc+free of a cached block is two such pairs, a third of its time. This
 * lock's release is a store: on x86 no atomic instruction at all.
 *
 * The price of the store is that a releasing thread cannot atomically learn
 * whether someone sleeps: it stores, then reads the sleeper count, and the
 * processor may let that read pass the store (a store-buffer race). A
 * thread going to sleep first counts itself, then tries the lock once
 * more, then sleeps only while the lock still reads held; so it can miss
 * its wakeup only when a release's store was still buffered throughout
 * the sleeper's count, retry and system call (nanoseconds against
 * microseconds). Sleepers therefore sleep with a timeout
 * (T4A__LOCK_NAP_NS) and look again: a wakeup so missed costs at most one
 * nap, never mutual exclusion or progress. A contended taker does not spin
 * before it sleeps (lock.c says why); a nap that runs out doubles, up to
 * T4A__LOCK_NAP_MAX_NS.
 *
 * Not recursive, no owner check, no condition variables: the runtime's lock
 * never needed them. */
#ifndef T4A_CORE_LOCK_H
#define T4A_CORE_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct t4a__lock {
  _Atomic uint32_t held;     /* 0 free, 1 held */
  _Atomic uint32_t sleepers; /* takers in the slow path's sleep (or about to be) */
} t4a__lock;

/* How long a sleeper sleeps before it looks at the lock again unwoken
 * (tests/cpu/test_lock builds lock.c with an hour: only a wakeup wakes). */
#ifndef T4A__LOCK_NAP_NS
#define T4A__LOCK_NAP_NS 200000LL
#endif
#define T4A__LOCK_NAP_MAX_NS (32 * T4A__LOCK_NAP_NS) /* naps that run out double up to this */

void t4a__lock_contended(t4a__lock *l); /* lock.c: sleeps until the lock is taken */
void t4a__lock_wake(t4a__lock *l);      /* lock.c: wakes one sleeper */

static inline void t4a__lock_init(t4a__lock *l) {
  atomic_init(&l->held, 0);
  atomic_init(&l->sleepers, 0);
}

static inline void t4a__lock_take(t4a__lock *l) {
  uint32_t free_ = 0;
  if (!atomic_compare_exchange_strong_explicit(&l->held, &free_, 1, memory_order_acquire,
                                               memory_order_relaxed))
    t4a__lock_contended(l);
}

static inline void t4a__lock_give(t4a__lock *l) {
  atomic_store_explicit(&l->held, 0, memory_order_release);
  /* the compiler keeps the read after the store: only the processor's store
   * buffer can reorder them, and it drains in nanoseconds (see above) */
  atomic_signal_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&l->sleepers, memory_order_relaxed))
    t4a__lock_wake(l);
}

#endif
