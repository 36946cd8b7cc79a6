/* backend-core/lock.c -- a runtime's lock's slow path (see lock.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "backend-core/lock.h"

static bool try_take(t4a__lock *l) {
  uint32_t free_ = 0;
  return atomic_load_explicit(&l->held, memory_order_relaxed) == 0 &&
         atomic_compare_exchange_strong_explicit(&l->held, &free_, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}

/* Sleeps while l->held reads 1, for at most ns; true when the time ran out
 * with no wakeup. */
static bool nap(t4a__lock *l, long long ns) {
#ifdef __linux__
  struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
  return syscall(SYS_futex, &l->held, FUTEX_WAIT_PRIVATE, 1u, &ts, NULL, 0) == -1 &&
         errno == ETIMEDOUT;
#else
  struct timespec ts = {0, 25000}; /* no futex: a short sleep, then look again */
  (void)ns;
  if (atomic_load_explicit(&l->held, memory_order_relaxed))
    nanosleep(&ts, NULL);
  return false;
#endif
}

/* No spinning before the sleep, as glibc's default mutex: a spinning taker
 * takes the lock over from a holder about to take it again, so threads
 * sharing a runtime hand it from one to the other on every call (measured
 * on the H200 host: 16 threads launching on one runtime fell from
 * 0.95-1.0x to 0.84-0.86x of the raw driver with 200 spins). A nap that
 * runs out doubles, up to T4A__LOCK_NAP_MAX_NS: a taker waiting out a long
 * call (a compile, a synchronize) looks at the lock rarely, and a missed
 * wakeup still costs one nap at most. */
void t4a__lock_contended(t4a__lock *l) {
  /* counted before the next try: a release after the count sees it and
   * wakes us; one whose store was buffered over it costs us one nap */
  atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
  long long ns = T4A__LOCK_NAP_NS;
  while (!try_take(l))
    if (nap(l, ns) && ns < T4A__LOCK_NAP_MAX_NS)
      ns *= 2;
  atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
}

void t4a__lock_wake(t4a__lock *l) {
#ifdef __linux__
  syscall(SYS_futex, &l->held, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
  (void)l;
#endif
}
