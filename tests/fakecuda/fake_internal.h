/* tests/fakecuda/fake_internal.h -- shared state of the fake driver. One
 * global lock (G) guards it all: the fake is about behaviour, not speed. */
#ifndef T4A_FAKE_INTERNAL_H
#define T4A_FAKE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/cuda_decls.h"

#define EXPORT __attribute__((visibility("default")))
typedef t4a__CUresult R;

extern pthread_mutex_t fake_G;
extern pthread_cond_t fake_changed; /* broadcast on every state change */

/* Environment helpers. */
int fake_env_int(const char *name, int dflt);
int fake_device_count(void);
bool fake_initialised(void);

/* Every entry point starts with FAKE_ENTER(name): it fails if the driver is
 * not initialised, and applies fault injection (FAKE_CUDA_FAIL or
 * fake_cuda_fail). Returns the injected or error code, or 0. */
R fake_enter(const char *name, bool needs_init);
#define FAKE_ENTER(name)                                                                           \
  do {                                                                                             \
    R fake_r_ = fake_enter(name, true);                                                            \
    if (fake_r_)                                                                                   \
      return fake_r_;                                                                              \
  } while (0)

/* The device a sticky fault hit (CUresult), 0 when none. */
R fake_device_fault(int device);

/* ---- hooks for fake_interop.c (defined in fake_runtime.c, which owns the
 * state they read) ------------------------------------------------------- */

/* The device of the calling thread's current context, -1 when none. */
int fake_current_device(void);

/* The live allocation containing p: kind 1 device memory, 2 pinned host
 * memory; its device (-1 for host), start and size. False when none. */
bool fake_mem_find(const void *p, int *kind, int *device, const void **start, size_t *bytes);

/* (fake_interop.c) The stream a handle names: CU_STREAM_LEGACY (0x1) and
 * CU_STREAM_PER_THREAD (0x2) stand for a default stream of the current
 * context's device, made on first use; any other handle is itself. */
t4a__CUstream fake_stream_alias(t4a__CUstream s);

#endif
