/* plugin-cuda/runtime.c -- the runtime core: the table of runtimes, locking,
 * context handling, failure recording, and what is kept for good. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plugin-cuda/runtime.h"

/* Runtime structs by slot. A slot is filled once and never freed while the
 * plugin is loaded: a destroyed runtime's struct stays, dead, until a new
 * runtime reuses it with the next generation. */
static t4a__runtime *_Atomic slots[T4A__MAX_RUNTIMES];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t slots_used;

static const t4a__hkind runtime_kind = {T4A__TAG_RUNTIME, "runtime", "runtime_create", NULL,
                                        "the runtime was destroyed; create a new one"};

t4a__runtime *t4a__rt_slot(uint32_t index) {
  return index < T4A__MAX_RUNTIMES ? atomic_load_explicit(&slots[index], memory_order_acquire)
                                   : NULL;
}

static int lock_handle(t4a_runtime h, const char *what, t4a__runtime **out, bool any) {
  int rc = t4a__require_init(); /* the header: every runtime slot is T4A_ENOTINIT before init */
  if (rc)
    return rc;
  if (t4a__h_tag(h.bits) != T4A__TAG_RUNTIME)
    return t4a__handle_reject(&runtime_kind, h.bits, 0, what, true);
  t4a__runtime *rt = t4a__rt_slot(t4a__h_rt(h.bits));
  if (!rt)
    return t4a__fail(T4A_EHANDLE, "%s: unknown runtime handle; pass one from runtime_create", what);
  pthread_mutex_lock(&rt->lock);
  if (!rt->alive || rt->gen != t4a__h_gen(h.bits)) {
    pthread_mutex_unlock(&rt->lock);
    return t4a__handle_reject(&runtime_kind, h.bits, 0, what, false);
  }
  unsigned dev_fault = atomic_load(&t4a__be.devices[rt->ordinal].fault);
  if (!rt->fault && dev_fault)
    rt->fault = (int)dev_fault;
  if (rt->fault && !any) {
    char buf[32];
    rc = t4a__fail_native(T4A_EDEVICEFAULT, rt->fault,
                          t4a__cu_name((t4a__CUresult)rt->fault, buf, sizeof buf),
                          "%s: device %d faulted earlier (sticky for every runtime on it); "
                          "destroy the runtimes on it and create new ones",
                          what, (int)rt->ordinal);
    pthread_mutex_unlock(&rt->lock);
    return rc;
  }
  *out = rt;
  return T4A_OK;
}

int t4a__rt_lock(t4a_runtime h, const char *what, t4a__runtime **out) {
  return lock_handle(h, what, out, false);
}

int t4a__rt_lock_any(t4a_runtime h, const char *what, t4a__runtime **out) {
  return lock_handle(h, what, out, true);
}

void t4a__rt_defer(t4a__runtime *rt, t4a__call *c) {
  c->next = NULL;
  if (rt->due_tail)
    rt->due_tail->next = c;
  else
    rt->due = c;
  rt->due_tail = c;
}

void t4a__rt_unlock_keep(t4a__runtime *rt, t4a__calls *kept) {
  kept->head = rt->due;
  kept->tail = rt->due_tail;
  rt->due = rt->due_tail = NULL;
  pthread_mutex_unlock(&rt->lock);
}

void t4a__rt_relock(t4a__runtime *rt, const t4a__calls *kept) {
  pthread_mutex_lock(&rt->lock);
  if (!kept->head)
    return;
  kept->tail->next = rt->due; /* none, unless queued meanwhile: after the kept ones */
  if (!rt->due)
    rt->due_tail = kept->tail;
  rt->due = kept->head;
}

void t4a__rt_unlock_due(t4a__runtime *rt) {
  t4a__call *c = rt->due;
  rt->due = rt->due_tail = NULL;
  pthread_mutex_unlock(&rt->lock);
  while (c) {
    t4a__call *next = c->next; /* c may be freed by its own call */
    c->fn(c->arg);
    c = next;
  }
}

t4a__runtime *t4a__rt_take_slot(void) {
  pthread_mutex_lock(&slots_lock);
  t4a__runtime *rt = NULL;
  for (uint32_t i = 0; i < slots_used && !rt; i++) {
    t4a__runtime *s = atomic_load(&slots[i]);
    pthread_mutex_lock(&s->lock);
    if (!s->alive && !s->reserved) {
      rt = s;
      rt->reserved = true;
    }
    pthread_mutex_unlock(&s->lock);
  }
  if (!rt && slots_used < T4A__MAX_RUNTIMES) {
    rt = calloc(1, sizeof *rt);
    if (rt) {
      pthread_mutex_init(&rt->lock, NULL);
      rt->index = slots_used;
      rt->reserved = true;
      atomic_store_explicit(&slots[slots_used], rt, memory_order_release);
      slots_used++;
    }
  }
  pthread_mutex_unlock(&slots_lock);
  if (rt) {
    pthread_mutex_lock(&rt->lock);
    t4a__rt_reset(rt);
  }
  return rt;
}

void t4a__rt_reset(t4a__runtime *rt) {
  size_t from = offsetof(t4a__runtime, fault);
  memset((char *)rt + from, 0, sizeof *rt - from);
}

int t4a__ctx_enter(t4a__runtime *rt, t4a__CUcontext *saved) {
  t4a__CUcontext cur = NULL;
  t4a__CUresult r = t4a__be.cu.cuCtxGetCurrent(&cur);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "cuCtxGetCurrent failed; check the driver");
  *saved = cur;
  if (cur != rt->ctx && (r = t4a__be.cu.cuCtxSetCurrent(rt->ctx)) != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "cuCtxSetCurrent failed for device %d; check the driver",
                           (int)rt->ordinal);
  return T4A_OK;
}

void t4a__ctx_leave(t4a__runtime *rt, t4a__CUcontext saved) {
  if (saved && saved != rt->ctx)
    t4a__be.cu.cuCtxSetCurrent(saved);
}

int t4a__rt_cu_record(t4a__runtime *rt, t4a__CUresult r, const char *fmt, ...) {
  char msg[T4A__ERROR_MESSAGE_MAX - 96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (t4a__cu_is_fault(r)) {
    rt->fault = (int)r;
    unsigned none = 0;
    atomic_compare_exchange_strong(&t4a__be.devices[rt->ordinal].fault, &none, r);
    t4a__log(T4A__LOG_ERROR, "cuda", "device %d faulted: %s", (int)rt->ordinal, msg);
  }
  return t4a__cu_record(r, "%s", msg);
}

/* ---- kept for good (core/keep.c) ------------------------------------------- */

void t4a__rt_quarantine(const t4a__runtime *rt) { t4a__quarantine(rt, sizeof *rt); }

void t4a__runtimes_unload(void) {
  for (uint32_t i = 0; i < slots_used; i++) {
    t4a__runtime *rt = atomic_load(&slots[i]);
    if (rt && !rt->alive && !rt->reserved) {
      atomic_store(&slots[i], NULL);
      pthread_mutex_destroy(&rt->lock);
      free(rt);
    }
  }
}
