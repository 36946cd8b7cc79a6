/* plugin-cuda/backend.c -- the process-wide state of the plugin (t4a__be)
 * and the init gate every slot passes. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plugin-cuda/backend.h"

t4a__backend t4a__be = {.lock = PTHREAD_MUTEX_INITIALIZER, .peer_lock = PTHREAD_MUTEX_INITIALIZER};

int t4a__require_init(void) {
  int state = atomic_load_explicit(&t4a__be.state, memory_order_acquire);
  if (state == T4A__INIT_READY)
    return T4A_OK;
  if (state == T4A__INIT_FORKED || t4a__fork_child())
    return t4a__fork_fail(NULL);
  if (state == T4A__INIT_FAILED)
    return t4a__fail(T4A_ENOTINIT,
                     "the CUDA backend failed to initialise (%s: %s); fix that "
                     "cause, then reload the plugin",
                     t4a_status_name(t4a__be.init_error.status), t4a__be.init_error.message);
  return t4a__fail(T4A_ENOTINIT, "the CUDA backend is not initialised; call init() first");
}

void t4a__backend_forked(void) {
  atomic_store_explicit(&t4a__be.state, T4A__INIT_FORKED, memory_order_relaxed);
}

void t4a__backend_unload(void) {
  /* the driver library stays loaded if cuInit succeeded (see driver.c) */
  free(t4a__be.devices);
  t4a__be.devices = NULL;
  free(t4a__be.peer_state);
  t4a__be.peer_state = NULL;
}
