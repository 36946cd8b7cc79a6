/* backend-core/lock.c -- a runtime's lock's sleep (see lock.h): the futex,
 * as the rest of the library, Linux's. */
#include "config.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend-core/lock.h"

/* Marks the lock 2 (so that its release wakes someone) and sleeps while it
 * stays so; taken when the mark finds it free. */
void t4a__lock_contended(t4a__lock *l) {
  while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
    syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2u, NULL, NULL, 0);
}

void t4a__lock_wake(t4a__lock *l) {
  syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
