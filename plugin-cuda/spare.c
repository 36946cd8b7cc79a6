/* plugin-cuda/spare.c -- parts of destroyed runtimes kept for reuse (see
 * spare.h).
 *
 * Why: runtime_create pins its staging with cuMemHostAlloc (tens of
 * milliseconds for 64 MiB on an H200 host) and, when no other runtime holds
 * the device's primary context, creates the context again (hundreds of
 * milliseconds). A consumer that creates a runtime per test, per request or
 * per thread would pay that every time. The parts of an idle destroyed
 * runtime are clean: its stream drained, its pool holds no allocation (and
 * is trimmed to hold no memory), its staging chunks are idle. They carry no
 * data and no counters, so a new runtime built from them is
 * indistinguishable from a fresh one.
 *
 * Released from an exit handler (atexit from a loaded plugin runs at
 * dlclose, after the plugin's destructors, and at process exit before any
 * destructor, in both cases before the driver library's own teardown), not
 * from a destructor (at exit destructors run after the driver's). So the
 * release needs nothing the plugin's destructors free: a spare carries its
 * CUdevice and the driver's entry points stay valid. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/env.h"
#include "backend-core/fork.h"
#include "common/log.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/spare.h"

/* The exit handler is registered for this object (the Itanium C++ ABI's
 * __cxa_atexit with our __dso_handle, which is what atexit in a shared
 * object means to glibc): it runs at dlclose, or at exit if still loaded.
 * Plain atexit is intercepted by ThreadSanitizer, which drops the object and
 * then calls the handler at exit after dlclose unmapped it. */
extern void *__dso_handle; // NOLINT(bugprone-reserved-identifier): the ABI's name
int __cxa_atexit(void (*fn)(void *), void *arg, void *dso); // NOLINT(bugprone-reserved-identifier)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static t4a__spare *spares;
static uint32_t count, cap;
static uint64_t staging_bytes;
static bool handler;

/* T4A_RUNTIME_SPARES=0 keeps no spares (a knob for measuring cold
 * creation, and for consumers who want every destroy to release at once). */
static bool enabled(void) {
  const char *v = t4a__getenv("T4A_RUNTIME_SPARES");
  return !(v && strcmp(v, "0") == 0);
}

bool t4a__spare_take(int32_t ordinal, uint64_t bytes, int32_t priority, t4a__spare *out) {
  pthread_mutex_lock(&lock);
  int64_t best = -1;
  for (uint32_t i = 0; i < count; i++)
    if (spares[i].ordinal == ordinal && spares[i].priority == priority &&
        (best < 0 || (spares[i].stage.bytes == bytes && spares[best].stage.bytes != bytes)))
      best = i;
  if (best >= 0) {
    *out = spares[best];
    staging_bytes -= out->stage.bytes;
    spares[best] = spares[--count];
  }
  pthread_mutex_unlock(&lock);
  return best >= 0;
}

/* Releases a spare's parts, each whatever became of the others; what fails
 * to release is kept reachable. */
static void release(t4a__spare *s) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__staging_release(&s->stage);
  bool stream = t4a__release_or_keep(cu->cuStreamDestroy(s->stream), s->stream);
  bool pool = t4a__release_or_keep(cu->cuMemPoolDestroy(s->pool), s->pool);
  bool ctx = t4a__release_or_keep(cu->cuDevicePrimaryCtxRelease(s->dev), s->ctx);
  if (!stream || !pool || !ctx)
    t4a__log(T4A__LOG_WARN, "cuda", "releasing a spare runtime's parts on device %d failed",
             (int)s->ordinal);
}

static void release_all(void *unused) {
  (void)unused;
  if (t4a__fork_child()) /* the parent's parts: nothing of them is this process's */
    return;
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; i < count; i++)
    release(&spares[i]);
  free(spares);
  spares = NULL;
  count = cap = 0;
  staging_bytes = 0;
  pthread_mutex_unlock(&lock);
}

bool t4a__spare_give(const t4a__spare *s) {
  pthread_mutex_lock(&lock);
  uint32_t same = 0;
  for (uint32_t i = 0; i < count; i++)
    same += spares[i].ordinal == s->ordinal;
  bool keep = enabled() && same < T4A__SPARES_PER_DEVICE &&
              staging_bytes + s->stage.bytes <= T4A__SPARE_STAGING_BYTES;
  uint64_t n;
  size_t bytes;
  if (keep && count == cap) {
    t4a__spare *p =
        t4a__grow(cap, 8, UINT32_MAX, sizeof *spares, &n, &bytes) ? realloc(spares, bytes) : NULL;
    keep = p != NULL;
    if (p) {
      spares = p;
      cap = (uint32_t)n;
    }
  }
  if (keep && !handler)
    handler = keep = __cxa_atexit(release_all, NULL, &__dso_handle) == 0;
  if (keep) {
    spares[count++] = *s;
    staging_bytes += s->stage.bytes;
  }
  pthread_mutex_unlock(&lock);
  return keep;
}
