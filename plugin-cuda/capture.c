/* plugin-cuda/capture.c -- the bookkeeping of a runtime's captures and
 * graphs (see capture.h).
 *
 * Recording never fails the call that enqueued the work: the work is in the
 * capture already, so a failure to record it (host memory, the driver's
 * capture info) marks the capture failed and graph_end discards it. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "plugin-cuda/runtime.h"

/* The most entries each list of a capture holds (capture.h); a test copy
 * of the plugin lowers it (entry.c, T4A_TEST_CAPTURE_MAX). */
uint32_t t4a__capture_max = T4A__CAPTURE_MAX;

void t4a__capture_init(t4a__runtime *rt) {
  memset(&rt->cap, 0, sizeof rt->cap);
  t4a__htable_init(&rt->graphs, sizeof(t4a__graph));
}

int t4a__capture_refused(const char *what, const char *why) {
  return t4a__fail(T4A_EBUSY,
                   "%s: the runtime is capturing a graph (graph_begin) and %s %s, which cannot "
                   "be captured; call it before graph_begin or after graph_end",
                   what, what, why);
}

/* The first failure to record: its status, what failed and what to do
 * (graph_end reports them). */
static void failed(t4a__runtime *rt, int status, const char *todo, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void failed(t4a__runtime *rt, int status, const char *todo, const char *fmt, ...) {
  if (rt->cap.error)
    return;
  rt->cap.error = status;
  rt->cap.error_todo = todo;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt->cap.error_detail, sizeof rt->cap.error_detail, fmt, ap);
  va_end(ap);
}

/* Room for one more of a capture's `count` entries of `size` bytes
 * (*items, *cap): false, with the failure recorded, when the list holds
 * t4a__capture_max entries (a 32-bit capacity never doubles past it) or
 * host memory ran out. `what` names the entries. */
static bool room_for_one(t4a__runtime *rt, void **items, uint32_t *cap, uint32_t count,
                         uint32_t first, size_t size, const char *what) {
  if (count < *cap)
    return true;
  uint64_t n;
  size_t bytes;
  if (!t4a__grow(*cap, first, t4a__capture_max, size, &n, &bytes)) {
    failed(rt, T4A_ENOMEM, "capture the work as several smaller graphs",
           "the capture holds %u %s, the most one graph records", count, what);
    return false;
  }
  void *p = realloc(*items, bytes);
  if (!p) {
    failed(rt, T4A_ENOMEM, "free host memory and capture again",
           "out of host memory for the record of %u %s", count + 1, what);
    return false;
  }
  *items = p;
  *cap = (uint32_t)n;
  return true;
}

/* Adds bits to l unless present; false (recorded) when l cannot grow. */
static bool hlist_add(t4a__runtime *rt, t4a__hlist *l, uint64_t bits, const char *what) {
  for (uint32_t i = 0; i < l->count; i++)
    if (l->bits[i] == bits)
      return true;
  void *items = l->bits;
  if (!room_for_one(rt, &items, &l->cap, l->count, 8, sizeof *l->bits, what))
    return false;
  l->bits = items;
  l->bits[l->count++] = bits;
  return true;
}

void t4a__capture_kernel(t4a__runtime *rt, uint64_t function, t4a__CUfunction fn,
                         const uint32_t grid[3], const uint32_t block[3], uint32_t shared) {
  t4a__recorded *r = &rt->cap.rec;
  if (rt->cap.error)
    return;
  /* the node just added is the one the stream's next work will depend on */
  unsigned status = 0;
  t4a__cuuint64_t id = 0;
  t4a__CUgraph graph = NULL;
  const t4a__CUgraphNode *deps = NULL;
  size_t ndeps = 0;
  t4a__CUresult res =
      t4a__be.cu.cuStreamGetCaptureInfo(rt->stream, &status, &id, &graph, &deps, &ndeps);
  if (res != T4A__CUDA_SUCCESS) {
    failed(
        rt, t4a__rt_cu_fail(rt, res, "recording a captured launch: cuStreamGetCaptureInfo failed"),
        "capture again", "asking the driver for the captured launch's node failed (%d)", (int)res);
    return;
  }
  if (status != T4A__CU_STREAM_CAPTURE_STATUS_ACTIVE || ndeps != 1) {
    failed(rt, T4A_EINTERNAL, "capture again",
           "the stream's capture has %zu frontier nodes (status %u), not the launch alone", ndeps,
           status);
    return;
  }
  void *items = r->kernels;
  if (!room_for_one(rt, &items, &r->kernel_cap, r->kernel_count, 16, sizeof *r->kernels,
                    "launches"))
    return;
  r->kernels = items;
  if (!hlist_add(rt, &r->functions, function, "distinct functions"))
    return;
  t4a__gkernel *k = &r->kernels[r->kernel_count++];
  k->node = deps[0];
  k->fn = fn;
  memcpy(k->grid, grid, sizeof k->grid);
  memcpy(k->block, block, sizeof k->block);
  k->shared = shared;
}

void t4a__capture_copy(t4a__runtime *rt, uint64_t buffer_a, uint64_t buffer_b, uint64_t host) {
  t4a__recorded *r = &rt->cap.rec;
  if (rt->cap.error)
    return;
  if ((buffer_a && !hlist_add(rt, &r->buffers, buffer_a, "distinct buffers")) ||
      (buffer_b && !hlist_add(rt, &r->buffers, buffer_b, "distinct buffers")) ||
      (host && !hlist_add(rt, &r->hosts, host, "distinct host buffers")))
    return;
  r->copies++;
}

void t4a__recorded_free(t4a__recorded *r) {
  free(r->kernels);
  free(r->functions.bits);
  free(r->buffers.bits);
  free(r->hosts.bits);
  memset(r, 0, sizeof *r);
}

void t4a__capture_abort(t4a__runtime *rt) {
  if (!rt->cap.active)
    return;
  t4a__CUgraph g = NULL;
  if (t4a__be.cu.cuStreamEndCapture(rt->stream, &g) == T4A__CUDA_SUCCESS && g &&
      t4a__be.cu.cuGraphDestroy(g) != T4A__CUDA_SUCCESS)
    t4a__keep(g);
  rt->done.dirty = rt->cap.dirty_before;
  t4a__recorded_free(&rt->cap.rec);
  rt->cap.active = false;
}

void t4a__graphs_fini(t4a__runtime *rt, bool idle) {
  if (!idle) /* replays may still run: keep the graphs, and what lists them */
    return;
  for (uint32_t i = 0; i < rt->graphs.count; i++) {
    t4a__graph *g = t4a__htable_at(&rt->graphs, i);
    if (!g->h.live)
      continue;
    t4a__released(rt, t4a__be.cu.cuGraphExecDestroy(g->exec), g->exec, "cuGraphExecDestroy");
    t4a__released(rt, t4a__be.cu.cuGraphDestroy(g->graph), g->graph, "cuGraphDestroy");
    t4a__recorded_free(&g->rec);
  }
  t4a__htable_fini(&rt->graphs);
}
