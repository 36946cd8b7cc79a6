/* backend-core/lock.c -- a runtime's lock's slow path (see lock.h). */
#include "config.h"

#include <stdbool.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "backend-core/lock.h"

/* Spins before sleeping: a holder's critical section is usually shorter
 * than a sleep and its wakeup. */
#define SPINS 200

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static bool try_take(t4a__lock *l) {
  uint32_t free_ = 0;
  return atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
         atomic_compare_exchange_strong_explicit(&l->held, &free_, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}

/* Sleeps while l->held reads 1, for at most one nap. */
static void nap(t4a__lock *l) {
#ifdef __linux__
  struct timespec ts = {(time_t)(T4A__LOCK_NAP_NS / 1000000000), T4A__LOCK_NAP_NS % 1000000000};
  syscall(SYS_futex, &l->held, FUTEX_WAIT_PRIVATE, 1u, &ts, NULL, 0);
#else
  struct timespec ts = {0, 25000}; /* no futex: a short sleep, then look again */
  if (atomic_load_explicit(&l->held, memory_order_relaxed))
    nanosleep(&ts, NULL);
#endif
}

void t4a__lock_contended(t4a__lock *l) {
  for (int i = 0; i < SPINS; i++) {
    if (try_take(l))
      return;
    relax();
  }
  /* counted before the last try: a release after the count sees it and
   * wakes us; one whose store was buffered over it costs us one nap */
  atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
  while (!try_take(l))
    nap(l);
  atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
}

void t4a__lock_wake(t4a__lock *l) {
#ifdef __linux__
  syscall(SYS_futex, &l->held, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
  (void)l;
#endif
}
