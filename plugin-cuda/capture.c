/* plugin-cuda/capture.c -- the bookkeeping of a runtime's captures and
 * graphs (see capture.h).
 *
 * Recording never fails the call that enqueued the work: the work is in the
 * capture already, so a failure to record it (host memory, the driver's
 * capture info) marks the capture failed and graph_end discards it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plugin-cuda/runtime.h"

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

static void failed(t4a__runtime *rt, int status) {
  if (!rt->cap.error)
    rt->cap.error = status;
}

/* Adds bits to l unless present; false when out of memory. */
static bool hlist_add(t4a__hlist *l, uint64_t bits) {
  for (uint32_t i = 0; i < l->count; i++)
    if (l->bits[i] == bits)
      return true;
  if (l->count == l->cap) {
    uint32_t n = l->cap ? l->cap * 2 : 8;
    uint64_t *p = realloc(l->bits, n * sizeof *p);
    if (!p)
      return false;
    l->bits = p;
    l->cap = n;
  }
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
  if (res != T4A__CUDA_SUCCESS || status != T4A__CU_STREAM_CAPTURE_STATUS_ACTIVE || ndeps != 1) {
    failed(rt, res != T4A__CUDA_SUCCESS
                   ? t4a__rt_cu_fail(rt, res,
                                     "recording a captured launch: "
                                     "cuStreamGetCaptureInfo failed")
                   : t4a__fail(T4A_EINTERNAL,
                               "recording a captured launch: the stream's capture has %zu "
                               "frontier nodes (status %u), not the launch alone",
                               ndeps, status));
    return;
  }
  if (r->kernel_count == r->kernel_cap) {
    uint32_t n = r->kernel_cap ? r->kernel_cap * 2 : 16;
    t4a__gkernel *p = realloc(r->kernels, n * sizeof *p);
    if (!p) {
      failed(rt, t4a__fail(T4A_ENOMEM, "recording a captured launch: out of host memory"));
      return;
    }
    r->kernels = p;
    r->kernel_cap = n;
  }
  if (!hlist_add(&r->functions, function)) {
    failed(rt, t4a__fail(T4A_ENOMEM, "recording a captured launch: out of host memory"));
    return;
  }
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
  if ((buffer_a && !hlist_add(&r->buffers, buffer_a)) ||
      (buffer_b && !hlist_add(&r->buffers, buffer_b)) || (host && !hlist_add(&r->hosts, host))) {
    failed(rt, t4a__fail(T4A_ENOMEM, "recording a captured copy: out of host memory"));
    return;
  }
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
