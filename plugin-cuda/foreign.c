/* plugin-cuda/foreign.c -- ordering against streams and events the runtime
 * does not own: a consumer's stream waits for a witness
 * (stream_wait_witness), a runtime waits for a consumer's event or for the
 * work enqueued so far on a consumer's stream (runtime_wait_event,
 * runtime_wait_stream). Every wait is cuStreamWaitEvent: GPU-side, the host
 * never blocks. The consumer's stream and event stay the consumer's: they
 * are only enqueued on, never created, synchronised or destroyed here. */
#include "config.h"

#include <stdint.h>

#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"
#include "plugin-cuda/witness.h"

/* The driver's handle for a consumer's stream argument: NULL is the legacy
 * default stream, passed explicitly (CU_STREAM_LEGACY) so that no build
 * option of the consumer's can make it the per-thread one. */
static t4a__CUstream consumer_stream(void *stream) {
  return stream ? (t4a__CUstream)stream : (t4a__CUstream)(uintptr_t)T4A_STREAM_LEGACY;
}

int t4a__slot_stream_wait_witness(t4a_runtime h, void *stream, t4a_witness w) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  t4a__wpin p;
  int rc = t4a__witness_pin(w, "stream_wait_witness", &p);
  if (rc)
    return rc;
  t4a__runtime *rt;
  if ((rc = t4a__rt_lock(h, "stream_wait_witness", &rt)) == T4A_OK) {
    if ((rc = t4a__witness_pin_check(&p, "stream_wait_witness")) == T4A_OK && p.e) {
      t4a__CUcontext saved; /* rt's context: where a default stream argument lives */
      if ((rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
        t4a__CUresult r = t4a__be.cu.cuStreamWaitEvent(consumer_stream(stream), p.ev, 0);
        t4a__ctx_leave(rt, saved);
        if (r != T4A__CUDA_SUCCESS)
          rc = t4a__rt_cu_fail(rt, r,
                               "stream_wait_witness: making the consumer's stream %p wait "
                               "failed; pass a stream of device %d's primary context",
                               stream, (int)rt->ordinal);
      }
    }
    t4a__rt_unlock(rt);
  }
  t4a__witness_unpin(&p);
  return rc;
}

int t4a__slot_runtime_wait_event(t4a_runtime h, void *event) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  if (!event)
    return t4a__fail(T4A_EINVAL, "runtime_wait_event: event is NULL; pass a CUevent");
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "runtime_wait_event", &rt);
  if (rc)
    return rc;
  t4a__CUcontext saved;
  if ((rc = t4a__capture_refuse(&rt->cap, "runtime_wait_event",
                                "waits for work outside the capture"))) {
    /* refused: nothing enqueued */
  } else if ((rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
    t4a__CUresult r = t4a__be.cu.cuStreamWaitEvent(rt->stream, (t4a__CUevent)event, 0);
    t4a__ctx_leave(rt, saved);
    if (r != T4A__CUDA_SUCCESS)
      rc = t4a__rt_cu_fail(rt, r,
                           "runtime_wait_event: waiting for the consumer's event %p failed; "
                           "pass a live CUevent",
                           event);
  }
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_runtime_wait_stream(t4a_runtime h, void *stream) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "runtime_wait_stream", &rt);
  if (rc)
    return rc;
  t4a__event *e = NULL;
  t4a__CUcontext saved;
  if ((rc = t4a__capture_refuse(&rt->cap, "runtime_wait_stream",
                                "waits for work outside the capture")) ||
      (rc = t4a__event_get(rt, rt->ordinal, &e)))
    goto out;
  if ((rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
    t4a__CUresult r = t4a__be.cu.cuEventRecord(e->ev, consumer_stream(stream));
    if (r != T4A__CUDA_SUCCESS)
      rc = t4a__rt_cu_fail(rt, r,
                           "runtime_wait_stream: recording an event on the consumer's stream %p "
                           "failed; pass a stream of device %d's primary context",
                           stream, (int)rt->ordinal);
    else if ((r = t4a__be.cu.cuStreamWaitEvent(rt->stream, e->ev, 0)) != T4A__CUDA_SUCCESS)
      rc = t4a__rt_cu_fail(rt, r, "runtime_wait_stream: cuStreamWaitEvent failed");
    t4a__ctx_leave(rt, saved);
  }
  t4a__event_put(rt, e); /* the wait captured the record: reusable */
out:
  t4a__rt_unlock(rt);
  return rc;
}
