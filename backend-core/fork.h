/* backend-core/fork.h -- fork() detection (fork.c), the same for every
 * backend: after fork() a child inherits the backend's state but none of its
 * threads, and (CUDA) none of its device state, so every slot called in the
 * child on what the parent set up refuses with T4A_EFORKED instead of
 * touching it or waiting on a lock a vanished thread held.
 *
 * A backend is the parent's once it was used (t4a__fork_used: init, or an
 * object made without init): a pthread_atfork child handler, registered
 * then, marks the child and calls the backend's hook, which makes its init
 * gate fail (its "initialised" state no longer reads so). Every runtime
 * slot passes that gate first, so the check costs the hot path nothing; the
 * gate's slow path tells T4A_EFORKED from T4A_ENOTINIT. The slots that need
 * no init test the flag themselves (T4A__FORK_CHECK), before any lock. A
 * backend the parent only loaded stays usable in the child (it has nothing
 * to inherit). */
#ifndef T4A_CORE_FORK_H
#define T4A_CORE_FORK_H

#include <stdatomic.h>
#include <stdbool.h>

extern atomic_bool t4a__forked __attribute__((visibility("hidden")));

/* The backend holds state of this process from now on: a fork() makes the
 * child's copy unusable. on_child (NULL: keep the one given before; a
 * backend gives one) runs in the child right after fork(): it must be
 * async-signal-safe (a store).
 * Idempotent, thread-safe, cheap after the first. */
void t4a__fork_used(void (*on_child)(void));

/* Whether this process is a child forked after the backend was used. */
static inline bool t4a__fork_child(void) {
  return atomic_load_explicit(&t4a__forked, memory_order_relaxed);
}

/* Records T4A_EFORKED for slot `what` (NULL: unnamed), saying why and what
 * to do instead, and returns it. */
int t4a__fork_fail(const char *what);

/* The slot prologue: T4A_EFORKED in a forked child, else nothing. */
#define T4A__FORK_CHECK(what)                                                                      \
  do {                                                                                             \
    if (__builtin_expect(t4a__fork_child(), 0))                                                    \
      return t4a__fork_fail(what);                                                                 \
  } while (0)

#endif
