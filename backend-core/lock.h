/* backend-core/lock.h -- a runtime's lock (every backend's t4a__rtslot): one
 * compare-and-swap to take, one exchange to give back, inline in the
 * plugin (lock.c has the sleep).
 *
 * Why not a pthread mutex: every table call takes and gives back its
 * runtime's lock, and glibc's pair is two calls out of the plugin with
 * owner and user-count bookkeeping around its two atomic operations; an
 * alloc+free of a cached block is two such pairs. The algorithm is glibc's
 * default mutex's (Drepper, "Futexes Are Tricky", mutex 2), so threads
 * sharing a runtime contend as they did: 0 free, 1 held, 2 held and
 * perhaps sleepers. A taker that finds it held marks it 2 and sleeps on the
 * futex until it takes it; a release that finds 2 wakes one sleeper. No
 * spinning, no timeouts: both were measured worse with threads sharing a
 * runtime (docs/design.md, Locking).
 *
 * Not recursive, no owner check, no condition variables: the runtime's lock
 * never needed them. */
#ifndef T4A_CORE_LOCK_H
#define T4A_CORE_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct t4a__lock {
  _Atomic uint32_t state; /* 0 free, 1 held, 2 held and perhaps sleepers */
} t4a__lock;

void t4a__lock_contended(t4a__lock *l); /* lock.c: sleeps until the lock is taken */
void t4a__lock_wake(t4a__lock *l);      /* lock.c: wakes one sleeper */

static inline void t4a__lock_init(t4a__lock *l) { atomic_init(&l->state, 0); }

static inline void t4a__lock_take(t4a__lock *l) {
  uint32_t free_ = 0;
  if (!atomic_compare_exchange_strong_explicit(&l->state, &free_, 1, memory_order_acquire,
                                               memory_order_relaxed))
    t4a__lock_contended(l);
}

static inline void t4a__lock_give(t4a__lock *l) {
  if (atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2)
    t4a__lock_wake(l);
}

#endif
