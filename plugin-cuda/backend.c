/* plugin-cuda/backend.c -- the process-wide state of the plugin (t4a__be),
 * the init gate every slot passes, and the struct_size rules of the
 * header's Versioning section. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plugin-cuda/backend.h"

t4a__backend t4a__be = {.lock = PTHREAD_MUTEX_INITIALIZER, .peer_lock = PTHREAD_MUTEX_INITIALIZER};

int t4a__require_init(void) {
  int state = atomic_load_explicit(&t4a__be.state, memory_order_acquire);
  if (state == T4A__INIT_READY)
    return T4A_OK;
  if (state == T4A__INIT_FAILED)
    return t4a__fail(T4A_ENOTINIT,
                     "the CUDA backend failed to initialise (%s: %s); fix that "
                     "cause, then reload the plugin",
                     t4a_status_name(t4a__be.init_error.status), t4a__be.init_error.message);
  return t4a__fail(T4A_ENOTINIT, "the CUDA backend is not initialised; call init() first");
}

int t4a__check_struct(const void *s, size_t min_size, const char *what) {
  if (!s)
    return t4a__fail(T4A_EINVAL, "%s pointer is NULL; pass a struct with struct_size set", what);
  uint32_t size;
  memcpy(&size, s, sizeof size);
  if (size < min_size)
    return t4a__fail(T4A_EINVAL,
                     "%s.struct_size is %u, below its v1.0 size %zu; set struct_size = "
                     "sizeof(%s)",
                     what, size, min_size, what);
  return T4A_OK;
}

void t4a__fill_struct(void *dst, const void *src, size_t src_size) {
  uint32_t caller;
  memcpy(&caller, dst, sizeof caller);
  uint32_t n = caller < src_size ? caller : (uint32_t)src_size;
  memcpy(dst, src, n);
  memcpy(dst, &n, sizeof n);
}

void t4a__backend_unload(void) {
  /* the driver library stays loaded if cuInit succeeded (see driver.c) */
  free(t4a__be.devices);
  t4a__be.devices = NULL;
  free(t4a__be.peer_state);
  t4a__be.peer_state = NULL;
}
