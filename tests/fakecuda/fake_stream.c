/* tests/fakecuda/fake_stream.c -- streams that execute their queue on a
 * worker thread, and events.
 *
 * As in CUDA: cuStreamDestroy returns at once and the queue still drains;
 * cuEventRecord needs its event and stream in one context; cuStreamWaitEvent
 * may wait on an event of another context or device; a fault of a device
 * stops its streams. A destroyed stream or event stays a tombstone: using
 * its handle is CUDA_ERROR_INVALID_HANDLE, never a use of freed memory. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/fakecuda/fake_internal.h"

static int held; /* fake_cuda_hold: workers start no new op */

EXPORT void fake_cuda_hold(int on);
void fake_cuda_hold(int on) {
  LOCK();
  held = on;
  pthread_cond_broadcast(&fake_changed);
  UNLOCK();
}

/* ---- executing operations ---------------------------------------------------------- */

/* Whether a queued copy may still touch its memory (G held): nothing it
 * uses was freed after it was enqueued. Pins what it uses. */
static bool copy_begins(op *o) {
  for (unsigned i = 0; i < o->nrefs; i++) {
    alloc *a = o->refs[i];
    if (a->released || (a->kind == MEM_DEVICE && a->state == A_CACHED)) {
      fake_violation("a queued %s ran after its memory %p was freed",
                     o->kind == OP_SET ? "memset" : "copy", (void *)(a->base + FAKE_GUARD));
      return false;
    }
  }
  for (unsigned i = 0; i < o->nrefs; i++)
    o->refs[i]->busy++;
  return true;
}

static void run(op *o) {
  switch (o->kind) {
  case OP_COPY:
  case OP_SET:
    LOCK();
    bool go = copy_begins(o);
    UNLOCK();
    if (!go)
      break;
    if (o->kind == OP_COPY)
      memcpy(o->dst, o->src, o->bytes);
    else if (o->width == 2) {
      uint16_t v16 = (uint16_t)o->value32;
      for (size_t i = 0; i < o->bytes / 2; i++)
        memcpy((char *)o->dst + 2 * i, &v16, 2);
    } else if (o->width == 4)
      for (size_t i = 0; i < o->bytes / 4; i++)
        memcpy((char *)o->dst + 4 * i, &o->value32, 4);
    else
      memset(o->dst, o->value, o->bytes);
    LOCK();
    for (unsigned i = 0; i < o->nrefs; i++)
      fake_alloc_unpin(o->refs[i]);
    UNLOCK();
    break;
  case OP_KERNEL: fake_run_kernel(o); break;
  case OP_WAIT:
    LOCK();
    if (o->event->imported) /* another process completes it (fake_ipc.c) */
      fake_ipc_event_wait(o->event, o->gen);
    while (!o->event->imported && o->event->completed < o->gen && !o->event->failed)
      pthread_cond_wait(&fake_changed, &fake_G);
    UNLOCK();
    break;
  case OP_RECORD: /* done under G by the worker */
  case OP_FREE: break;
  }
}

static void *worker(void *arg) {
  t4a__CUstream s = arg;
  LOCK();
  for (;;) {
    while (!s->stop && (!s->head || held))
      pthread_cond_wait(&fake_changed, &fake_G);
    if (!s->head && s->stop)
      break;
    if (!s->head || held)
      continue;
    op *o = s->head;
    s->executing = true;
    R fault = fake_device_fault(s->device);
    if (!fault) {
      UNLOCK();
      run(o);
      LOCK();
      fault = fake_device_fault(s->device);
    }
    if (fault)
      s->failed = fault;
    if (o->kind == OP_RECORD) {
      if (s->failed)
        o->event->failed = s->failed;
      else if (o->event->completed < o->gen) {
        o->event->completed = o->gen;
        o->event->ms = fake_now_ms();
      }
      if (o->event->ipc) /* interprocess: its page says so too */
        fake_ipc_event_done(o->event, o->gen, s->failed);
    }
    if (o->kind == OP_FREE && o->target->gen == o->gen && o->target->state == A_FREEING)
      fake_pool_freed(o->target);
    if (o->kind == OP_KERNEL) {
      o->func->module->queued--;
      if (o->func->k->waits_for_host) /* ran, or dropped by a fault */
        fake_host_waiters[o->func->module->device]--;
    }
    for (unsigned i = 0; i < o->nrefs; i++)
      fake_alloc_unqueue(o->refs[i]);
    s->head = o->next;
    if (!s->head)
      s->tail = NULL;
    s->executing = false;
    s->done++;
    free(o->owned);
    free(o);
    pthread_cond_broadcast(&fake_changed);
  }
  UNLOCK();
  return NULL; /* the stream itself stays, a tombstone */
}

R fake_stream_get(t4a__CUstream *s, const char *what) {
  if (!*s) /* the plugin never uses the legacy stream implicitly */
    return fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE, "%s: the NULL (legacy) stream", what);
  if (fake_stream_is_default(*s)) { /* CU_STREAM_LEGACY / CU_STREAM_PER_THREAD (fake_interop.c) */
    R r = fake_stream_default(s, what);
    if (r)
      return r;
  }
  return fake_obj_check(*s, OBJ_STREAM, what);
}

R fake_enqueue(t4a__CUstream s, const op *o) {
  if (s->capture) /* hook: fake_graph.c records it instead */
    return fake_capture_op(s, o);
  op *copy = malloc(sizeof *copy);
  if (!copy)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  *copy = *o;
  copy->next = NULL;
  uint64_t seq = copy->seq = ++s->enqueued;
  for (unsigned i = 0; i < copy->nrefs; i++)
    copy->refs[i]->queued++;
  if (copy->kind == OP_KERNEL) {
    copy->func->module->queued++;
    if (copy->func->k->waits_for_host)
      fake_host_waiters[copy->func->module->device]++;
  }
  if (s->tail)
    s->tail->next = copy;
  else
    s->head = copy;
  s->tail = copy;
  pthread_cond_broadcast(&fake_changed);
  /* a deterministic schedule: the operation ran (or, on a faulted device,
   * was dropped: a free still takes effect) before the call returns */
  while (fake_serial && s->done < seq)
    pthread_cond_wait(&fake_changed, &fake_G);
  return OK;
}

void fake_stream_wait_op(t4a__CUstream s, uint64_t seq) {
  while (s->done < seq && !s->failed)
    pthread_cond_wait(&fake_changed, &fake_G);
}

/* ---- streams ------------------------------------------------------------------------ */

t4a__CUstream fake_stream_new(struct CUctx_st *ctx, unsigned flags, int priority) {
  t4a__CUstream n = calloc(1, sizeof *n);
  if (!n)
    return NULL;
  n->device = ctx->device;
  n->flags = flags;
  n->priority = priority;
  pthread_t thread;
  fake_obj_register(&n->o, OBJ_STREAM, ctx);
  if (pthread_create(&thread, NULL, worker, n) != 0) {
    n->o.dead = true; /* registered: kept as a tombstone */
    return NULL;
  }
  pthread_detach(thread); /* it ends when the destroyed stream drained */
  return n;
}

R fake_stream_create(t4a__CUstream *s, unsigned flags, int priority) {
  R r = fake_need_ctx();
  if (r)
    return r;
  if (!s || (flags & ~1u))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  t4a__CUstream n = fake_stream_new(fake_current(), flags, priority);
  if (n)
    fake_live[LIVE_STREAM]++;
  UNLOCK();
  if (!n)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  *s = n;
  return OK;
}

R fake_sym_cuStreamCreate(t4a__CUstream *s, unsigned flags) {
  FAKE_ENTER("cuStreamCreate");
  return fake_stream_create(s, flags, 0);
}

R fake_sym_cuStreamDestroy(t4a__CUstream s) {
  FAKE_ENTER_ON("cuStreamDestroy", fake_object_device(s, OBJ_STREAM));
  LOCK();
  R r = fake_stream_is_default(s)
            ? fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE,
                          "cuStreamDestroy: a default stream handle (%p)", (void *)s)
            : fake_stream_get(&s, "cuStreamDestroy");
  if (!r) {
    s->o.dead = true;
    s->stop = true; /* returns at once; the queue still drains, as in CUDA */
    fake_live[LIVE_STREAM]--;
    pthread_cond_broadcast(&fake_changed);
  }
  UNLOCK();
  return r;
}

R fake_sym_cuStreamQuery(t4a__CUstream s) {
  FAKE_ENTER("cuStreamQuery");
  LOCK();
  R r = fake_stream_get(&s, "cuStreamQuery");
  if (!r && s->capture) /* hook: illegal while capturing (fake_graph.c) */
    r = fake_capture_illegal(s, "cuStreamQuery");
  if (!r)
    r = s->failed ? s->failed : (s->head || s->executing) ? T4A__CUDA_ERROR_NOT_READY : OK;
  UNLOCK();
  return r;
}

R fake_sym_cuStreamSynchronize(t4a__CUstream s) {
  FAKE_ENTER("cuStreamSynchronize");
  LOCK();
  R r = fake_stream_get(&s, "cuStreamSynchronize");
  if (!r && s->capture) /* hook: illegal while capturing (fake_graph.c) */
    r = fake_capture_illegal(s, "cuStreamSynchronize");
  if (!r) {
    fake_stream_wait_op(s, s->enqueued);
    r = s->failed;
    fake_pools_synchronised();
  }
  UNLOCK();
  return r;
}

/* The flags a stream was created with (not resolved by the plugin: tests
 * read them through the raw seam). */
#ifndef FAKE_CUDA_HEADERS
EXPORT R cuStreamGetFlags(t4a__CUstream s, unsigned *flags);
#endif
R cuStreamGetFlags(t4a__CUstream s, unsigned *flags) {
  R r = fake_enter("cuStreamGetFlags", true);
  if (r)
    return r;
  LOCK();
  r = fake_stream_get(&s, "cuStreamGetFlags");
  if (!r && flags)
    *flags = s->flags;
  UNLOCK();
  return r ? r : flags ? OK : T4A__CUDA_ERROR_INVALID_VALUE;
}

R fake_sym_cuStreamWaitEvent(t4a__CUstream s, t4a__CUevent e, unsigned flags) {
  FAKE_ENTER("cuStreamWaitEvent");
  if (flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  /* the event may be of another context or device, as in CUDA */
  R r = fake_stream_get(&s, "cuStreamWaitEvent");
  if (!r)
    r = fake_obj_check(e, OBJ_EVENT, "cuStreamWaitEvent");
  if (!r) {
    op o = {.kind = OP_WAIT,
            .event = e,
            .gen = e->imported ? fake_ipc_event_recorded_now(e) : e->recorded}; /* at call time */
    r = fake_enqueue(s, &o);
  }
  UNLOCK();
  return r;
}

/* ---- events --------------------------------------------------------------------------- */

R fake_sym_cuEventCreate(t4a__CUevent *e, unsigned flags) {
  FAKE_ENTER("cuEventCreate");
  R r = fake_need_ctx();
  if (r)
    return r;
  if (!e || (flags & ~7u) ||
      ((flags & T4A__CU_EVENT_INTERPROCESS) && !(flags & T4A__CU_EVENT_DISABLE_TIMING)))
    return T4A__CUDA_ERROR_INVALID_VALUE; /* interprocess events record no time, in CUDA */
  t4a__CUevent n = calloc(1, sizeof *n);
  if (!n)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  if ((flags & T4A__CU_EVENT_INTERPROCESS) && fake_ipc_event_init(n) != OK) {
    free(n);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  LOCK();
  fake_obj_register(&n->o, OBJ_EVENT, fake_current());
  n->flags = flags;
  fake_live[LIVE_EVENT]++;
  UNLOCK();
  *e = n;
  return OK;
}

R fake_sym_cuEventDestroy(t4a__CUevent e) {
  FAKE_ENTER_ON("cuEventDestroy", fake_object_device(e, OBJ_EVENT));
  LOCK();
  R r = fake_obj_check(e, OBJ_EVENT, "cuEventDestroy");
  if (!r) {
    e->o.dead = true; /* queued records and waits on it still complete */
    fake_live[LIVE_EVENT]--;
  }
  UNLOCK();
  return r;
}

R fake_sym_cuEventRecord(t4a__CUevent e, t4a__CUstream s) {
  FAKE_ENTER_STREAM("cuEventRecord", s);
  LOCK();
  R r = fake_obj_check(e, OBJ_EVENT, "cuEventRecord");
  if (!r)
    r = fake_stream_get(&s, "cuEventRecord");
  if (!r && e->o.ctx != s->o.ctx)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE,
                    "cuEventRecord: the event is of device %d's context, the stream of device "
                    "%d's (CUDA wants one context)",
                    e->o.ctx->device, s->o.ctx->device);
  if (!r && e->imported)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE,
                    "cuEventRecord: the fake does not model records of an opened IPC event");
  /* as a launch (fake_module.c): the real driver records with another
   * context current, or none; FAKE_CUDA_LAUNCH_NEEDS_CONTEXT=1 models one
   * that refuses (a plain CUDA_ERROR_INVALID_CONTEXT) */
  if (!r)
    r = fake_refuse_uncurrent(e->o.ctx);
  if (!r) {
    op o = {.kind = OP_RECORD, .event = e, .gen = ++e->recorded};
    e->failed = 0;
    if (e->ipc)
      fake_ipc_event_recorded(e);
    r = fake_enqueue(s, &o);
  }
  UNLOCK();
  return r;
}

R fake_sym_cuEventQuery(t4a__CUevent e) {
  FAKE_ENTER("cuEventQuery");
  LOCK();
  R r = fake_obj_check(e, OBJ_EVENT, "cuEventQuery");
  if (!r)
    r = e->failed ? e->failed : e->completed >= e->recorded ? OK : T4A__CUDA_ERROR_NOT_READY;
  UNLOCK();
  return r;
}

R fake_sym_cuEventSynchronize(t4a__CUevent e) {
  FAKE_ENTER("cuEventSynchronize");
  LOCK();
  R r = fake_obj_check(e, OBJ_EVENT, "cuEventSynchronize");
  if (!r) {
    uint64_t want = e->recorded;
    while (e->completed < want && !e->failed)
      pthread_cond_wait(&fake_changed, &fake_G);
    r = e->failed;
    fake_pools_synchronised();
  }
  UNLOCK();
  return r;
}

double fake_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Both events recorded and complete, neither without timing, one context;
 * CUDA_ERROR_NOT_READY while either is pending, as in CUDA. */
R fake_sym_cuEventElapsedTime(float *ms, t4a__CUevent start, t4a__CUevent end) {
  FAKE_ENTER("cuEventElapsedTime");
  if (!ms)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = fake_obj_check(start, OBJ_EVENT, "cuEventElapsedTime");
  if (!r)
    r = fake_obj_check(end, OBJ_EVENT, "cuEventElapsedTime");
  if (!r && start->o.ctx != end->o.ctx)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE,
                    "cuEventElapsedTime: the events are of two contexts (devices %d and %d)",
                    start->o.ctx->device, end->o.ctx->device);
  else if (!r && ((start->flags | end->flags) & T4A__CU_EVENT_DISABLE_TIMING))
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE,
                    "cuEventElapsedTime: an event was created with CU_EVENT_DISABLE_TIMING");
  else if (!r && (!start->recorded || !end->recorded))
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event never recorded");
  else if (!r && (start->failed || end->failed))
    r = start->failed ? start->failed : end->failed;
  else if (!r && (start->completed < start->recorded || end->completed < end->recorded))
    r = T4A__CUDA_ERROR_NOT_READY;
  if (!r)
    *ms = (float)(end->ms - start->ms);
  UNLOCK();
  return r;
}
