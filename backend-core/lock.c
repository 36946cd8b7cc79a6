/* backend-core/lock.c -- a runtime's lock's sleep (see lock.h). */
#include "config.h"

#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "backend-core/lock.h"

/* Marks the lock 2 (so that its release wakes someone) and sleeps while it
 * stays so; taken when the mark finds it free. */
void t4a__lock_contended(t4a__lock *l) {
  while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0) {
#ifdef __linux__
    syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2u, NULL, NULL, 0);
#else
    struct timespec ts = {0, 25000}; /* no futex: a short sleep, then look again */
    nanosleep(&ts, NULL);
#endif
  }
}

void t4a__lock_wake(t4a__lock *l) {
#ifdef __linux__
  syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
  (void)l;
#endif
}
