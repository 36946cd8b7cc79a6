/* plugin-host/fault.c -- the host device's sticky fault (kernel.h).
 *
 * A kernel that traps, fails an assert, or (checked mode) touches memory
 * outside its buffers faults the device, as a device fault poisons a CUDA
 * context: from then on every runtime of this backend in the process
 * reports T4A_EDEVICEFAULT with the first fault's message (t4a__hrt_lock),
 * runtime_create is refused, each runtime's worker runs nothing more
 * (queue.c), and runtime_destroy still completes (returning the fault).
 * Recovery is a new process, as on CUDA (docs/design.md, "The host
 * backend"). The fault is contained: the faulting kernel's threads left it
 * at the fault, and the process lives on. */
#include "config.h"

#include <pthread.h>
#include <string.h>

#include "common/str.h"
#include "plugin-host/kernel.h"

atomic_int t4a__hfaulted;
static pthread_mutex_t flock = PTHREAD_MUTEX_INITIALIZER;
static char first[512]; /* written once, under flock, before t4a__hfaulted is set */

void t4a__hfault_set(const char *message) {
  pthread_mutex_lock(&flock);
  if (!atomic_load(&t4a__hfaulted)) {
    t4a__strcopy(first, sizeof first, message);
    atomic_store(&t4a__hfaulted, 1);
  }
  pthread_mutex_unlock(&flock);
}

const char *t4a__hfault_message(void) { return atomic_load(&t4a__hfaulted) ? first : ""; }
