/* backend-core/fork.c -- fork() detection (see fork.h). */
#include "config.h"

#include <pthread.h>

#include "backend-core/fork.h"
#include "common/error.h"
#include "t4a/gpu_backend_v1.h"

atomic_bool t4a__forked;
static atomic_bool used;
static void (*_Atomic hook)(void); /* the backend's; may be set after `used` */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* In the child, right after fork(): one store, async-signal-safe. A
 * backend unloaded since has its handler removed with it (glibc ties
 * handlers to the object that registered them). */
static void child(void) {
  if (!atomic_load_explicit(&used, memory_order_acquire))
    return;
  atomic_store_explicit(&t4a__forked, true, memory_order_relaxed);
  void (*h)(void) = atomic_load_explicit(&hook, memory_order_relaxed);
  if (h)
    h();
}

static void watch(void) { pthread_atfork(NULL, NULL, child); }

void t4a__fork_used(void (*on_child)(void)) {
  /* A hook given later than the first use (an artifact made before init,
   * then init) still takes effect: it is stored whenever given. */
  if (on_child)
    atomic_store_explicit(&hook, on_child, memory_order_relaxed);
  if (atomic_load_explicit(&used, memory_order_acquire))
    return;
  pthread_once(&once, watch); /* before `used`: a fork in between marks nothing yet */
  atomic_store_explicit(&used, true, memory_order_release);
}

int t4a__fork_fail(const char *what) {
  return t4a__fail(
      T4A_EFORKED,
      "%s%sthis backend was set up before fork(), in the parent process, and a "
      "forked child cannot use it (GPU state does not survive fork): create runtimes in the "
      "child after exec, or use spawn (posix_spawn, Python's 'spawn' start method)",
      what ? what : "", what ? ": " : "");
}
