/* plugin-cuda/events.c -- a runtime's pool of completion events, by the
 * device whose context they live in (peer copies record events in the other
 * device's context). Events are created on demand, recycled, and destroyed
 * by destroy; a waiter that uses one outside the runtime's lock pins it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/checked.h"
#include "plugin-cuda/runtime.h"

int t4a__event_get(t4a__runtime *rt, int32_t dev, t4a__event **out) {
  t4a__completion *d = &rt->done;
  if (dev < 0 || dev >= T4A__MAX_DEVICES || dev >= t4a__be.device_count)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "events for device %d are not supported (at most %d "
                     "devices)",
                     (int)dev, T4A__MAX_DEVICES);
  t4a__event *e = d->free_events[dev];
  if (e) {
    d->free_events[dev] = e->next_free;
    *out = e;
    return T4A_OK;
  }
  if (d->event_count == d->event_cap) {
    uint64_t cap;
    size_t bytes;
    if (!t4a__grow(d->event_cap, 8, UINT32_MAX, sizeof(void *), &cap, &bytes))
      return t4a__fail(T4A_ENOMEM,
                       "the runtime holds %u events, the most it can list; seal less "
                       "often, or wait for witnesses and release them",
                       d->event_count);
    t4a__event **p = realloc(d->events, bytes);
    if (!p)
      return t4a__fail(T4A_ENOMEM, "out of host memory for events");
    d->events = p;
    d->event_cap = (uint32_t)cap;
  }
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a__CUcontext ctx = rt->ctx;
  t4a__CUresult r;
  if (dev != rt->ordinal) { /* an event in another device's context */
    if ((r = cu->cuDevicePrimaryCtxRetain(&ctx, t4a__be.devices[dev].dev)) != T4A__CUDA_SUCCESS)
      return t4a__rt_cu_fail(rt, r, "retaining device %d's context failed", (int)dev);
    if (d->foreign_ctx & (1ull << dev))
      cu->cuDevicePrimaryCtxRelease(t4a__be.devices[dev].dev); /* already held once */
    d->foreign_ctx |= 1ull << dev;
  }
  e = calloc(1, sizeof *e);
  if (!e)
    return t4a__fail(T4A_ENOMEM, "out of host memory for events");
  t4a__CUcontext saved = NULL;
  r = cu->cuCtxGetCurrent(&saved);
  if (r == T4A__CUDA_SUCCESS && saved != ctx)
    r = cu->cuCtxSetCurrent(ctx);
  if (r == T4A__CUDA_SUCCESS)
    r = cu->cuEventCreate(&e->ev,
                          rt->done.timing ? T4A__CU_EVENT_DEFAULT : T4A__CU_EVENT_DISABLE_TIMING);
  if (saved && saved != ctx)
    cu->cuCtxSetCurrent(saved);
  if (r != T4A__CUDA_SUCCESS) {
    free(e);
    return t4a__rt_cu_fail(rt, r, "cuEventCreate failed; free resources and retry");
  }
  e->dev = dev;
  d->events[d->event_count++] = e;
  rt->c.events_created++;
  *out = e;
  return T4A_OK;
}

void t4a__event_put(t4a__runtime *rt, t4a__event *e) {
  if (e->pins) {
    e->orphaned = true; /* the last unpin recycles it */
    return;
  }
  e->orphaned = false;
  e->next_free = rt->done.free_events[e->dev];
  rt->done.free_events[e->dev] = e;
}

void t4a__event_unpin(t4a__runtime *rt, t4a__event *e) {
  if (--e->pins == 0 && e->orphaned)
    t4a__event_put(rt, e);
}

void t4a__events_wait_unpinned(t4a__runtime *rt) {
  for (;;) {
    bool pinned = false;
    for (uint32_t i = 0; i < rt->done.event_count; i++)
      pinned |= rt->done.events[i]->pins != 0;
    if (!pinned)
      return;
    /* not t4a__rt_unlock: the calls due (release callbacks of what the
     * drained stream retired) wait for destroy's end, and stay destroy's:
     * the waiter's unlock, as it lets its pin go, must not run them in the
     * middle of the destroy (one may destroy this runtime) */
    t4a__calls kept;
    t4a__rt_unlock_keep(rt, &kept);
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    t4a__rt_relock(rt, &kept);
  }
}

bool t4a__events_fini(t4a__runtime *rt) {
  t4a__completion *d = &rt->done;
  bool kept = false;
  for (uint32_t i = 0; i < d->event_count; i++) {
    t4a__event *e = d->events[i];
    if (e->pins) {
      /* A waiter outside the lock still uses it (after a fault destroy
       * does not wait for pins): keep the event, and the contexts it lives
       * in, for good. */
      t4a__keep(e);
      kept = true;
      continue;
    }
    t4a__released(rt, t4a__be.cu.cuEventDestroy(e->ev), e->ev, "cuEventDestroy");
    free(e);
  }
  free(d->events);
  d->events = NULL;
  d->event_count = d->event_cap = 0;
  memset(d->free_events, 0, sizeof d->free_events);
  for (int dev = 0; dev < T4A__MAX_DEVICES; dev++)
    if ((d->foreign_ctx & (1ull << dev)) && !kept)
      t4a__released(rt, t4a__be.cu.cuDevicePrimaryCtxRelease(t4a__be.devices[dev].dev), NULL,
                    "cuDevicePrimaryCtxRelease");
  d->foreign_ctx = 0;
  return kept;
}
