/* plugin-cuda/runtime.c -- the CUDA runtime's core: locking a runtime from a
 * handle (the table itself is backend-core/rtable.c; here the device faults),
 * context handling, failure recording and quarantine (backend-core/keep.c). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plugin-cuda/runtime.h"

static int lock_handle(t4a_runtime h, const char *what, t4a__runtime **out, bool any) {
  /* the header: every runtime slot is T4A_ENOTINIT before init (T4A_EFORKED in a forked
   * child), before any lock */
  int rc = t4a__require_init();
  if (rc)
    return rc;
  t4a__rtslot *s;
  if ((rc = t4a__rtable_lock(h, what, &s)))
    return rc;
  t4a__runtime *rt = (t4a__runtime *)s; /* the head is the first member */
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
    t4a__lock_give(&rt->slot.lock);
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

t4a__runtime *t4a__rt_take_slot(void) {
  t4a__runtime *rt = (t4a__runtime *)t4a__rtable_take(sizeof *rt);
  if (rt)
    t4a__rt_reset(rt);
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

/* ---- kept for good (backend-core/keep.c) ------------------------------------------- */

void t4a__rt_quarantine(const t4a__runtime *rt) { t4a__quarantine(rt, sizeof *rt); }
