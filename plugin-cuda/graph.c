/* plugin-cuda/graph.c -- the graph slots (v1.1): capture a runtime's work
 * (graph_begin/graph_end), replay it (graph_launch), replace a captured
 * kernel's arguments without re-instantiating (graph_set_kernel_args),
 * describe it (graph_info) and retire it behind its last replay
 * (graph_release).
 *
 * Capture uses the driver's relaxed mode, so no other runtime or thread is
 * restricted while one runtime captures; what this runtime must not do
 * meanwhile is refused by the slots themselves (capture.h). A replay is one
 * cuGraphLaunch on the runtime's stream: its completion is the epoch's like
 * any other work, so the next seal covers it and graph_release retires the
 * executable graph behind that seal (completion.c), as host_free retires
 * pinned memory. */
#include "config.h"

#include <string.h>

#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

static int graph_get(t4a__runtime *rt, t4a_graph h, const char *what, t4a__graph **out) {
  int rc;
  *out = t4a__htable_find(&rt->graphs, &t4a__graph_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

/* Whether the driver has what graphs need (runtime_info reports it). */
static bool graphs_supported(const char **missing) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  *missing = !cu->cuStreamBeginCapture          ? "cuStreamBeginCapture"
             : !cu->cuStreamEndCapture          ? "cuStreamEndCapture"
             : !cu->cuStreamGetCaptureInfo      ? "cuStreamGetCaptureInfo"
             : !cu->cuGraphInstantiateWithFlags ? "cuGraphInstantiateWithFlags"
             : !cu->cuGraphLaunch               ? "cuGraphLaunch"
             : !cu->cuGraphExecDestroy          ? "cuGraphExecDestroy"
             : !cu->cuGraphDestroy              ? "cuGraphDestroy"
                                                : NULL;
  return *missing == NULL;
}

int t4a__slot_graph_begin(t4a_runtime h) {
  t4a__runtime *rt;
  const char *missing;
  int rc = t4a__rt_lock(h, "graph_begin", &rt);
  if (rc)
    return rc;
  if (rt->cap.active) {
    rc = t4a__fail(T4A_EBUSY, "graph_begin: the runtime is capturing already; call graph_end "
                              "first (captures do not nest)");
    goto out;
  }
  if (!graphs_supported(&missing)) {
    rc = t4a__fail(T4A_EUNSUPPORTED, "graph_begin: the driver lacks %s; update it", missing);
    goto out;
  }
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUresult r =
      t4a__be.cu.cuStreamBeginCapture(rt->stream, T4A__CU_STREAM_CAPTURE_MODE_RELAXED);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "graph_begin: cuStreamBeginCapture failed; nothing changed");
    goto out;
  }
  rt->cap = (t4a__capture){.active = true, .dirty_before = rt->done.dirty};
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* Instantiates a captured graph and publishes it; on failure releases g
 * and rec. Context current. */
static int publish(t4a__runtime *rt, t4a__CUgraph g, t4a__recorded *rec, t4a_graph *out) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  size_t nodes = rec->kernel_count + rec->copies;
  if (cu->cuGraphGetNodes && cu->cuGraphGetNodes(g, NULL, &nodes) != T4A__CUDA_SUCCESS)
    nodes = rec->kernel_count + rec->copies;
  t4a__CUgraphExec exec = NULL;
  t4a__CUresult r = cu->cuGraphInstantiateWithFlags(&exec, g, 0);
  int rc = T4A_OK;
  uint32_t i = 0;
  if (r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r,
                         "graph_end: instantiating the captured graph of %zu nodes failed; "
                         "the capture is discarded, capture again",
                         nodes);
  else if ((rc = t4a__htable_take(&rt->graphs, "graph_end", &i)) &&
           cu->cuGraphExecDestroy(exec) != T4A__CUDA_SUCCESS)
    t4a__keep(exec);
  if (rc) {
    if (cu->cuGraphDestroy(g) != T4A__CUDA_SUCCESS)
      t4a__keep(g);
    t4a__recorded_free(rec);
    return rc;
  }
  t4a__graph *gr = t4a__htable_at(&rt->graphs, i);
  gr->graph = g;
  gr->exec = exec;
  gr->nodes = nodes;
  gr->rec = *rec;
  out->bits = t4a__htable_publish(&rt->graphs, i, &t4a__graph_kind, rt->slot.index);
  rt->c.graphs_captured++;
  rt->c.live_graphs++;
  return T4A_OK;
}

int t4a__slot_graph_end(t4a_runtime h, t4a_graph *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "graph_end: out is NULL; pass a pointer");
  out->bits = 0;
  t4a__runtime *rt;
  int rc = t4a__rt_lock(h, "graph_end", &rt);
  if (rc)
    return rc;
  if (!rt->cap.active) {
    rc = t4a__fail(T4A_EINVAL, "graph_end: the runtime is not capturing; call graph_begin first");
    goto out;
  }
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUgraph g = NULL;
  t4a__CUresult r = t4a__be.cu.cuStreamEndCapture(rt->stream, &g);
  unsigned status = T4A__CU_STREAM_CAPTURE_STATUS_NONE;
  if (r != T4A__CUDA_SUCCESS && !t4a__cu_is_fault(r) &&
      t4a__be.cu.cuStreamGetCaptureInfo(rt->stream, &status, NULL, NULL, NULL, NULL) ==
          T4A__CUDA_SUCCESS &&
      status != T4A__CU_STREAM_CAPTURE_STATUS_NONE) {
    /* the stream still captures: so does the runtime, and the call can be
     * made again */
    rc = t4a__rt_cu_fail(rt, r,
                         "graph_end: cuStreamEndCapture failed and the stream is still "
                         "capturing; call graph_end again");
    t4a__ctx_leave(rt, saved);
    goto out;
  }
  /* the capture has ended: whatever happens next, the runtime is not capturing */
  t4a__recorded rec = rt->cap.rec;
  int error = rt->cap.error;
  const char *todo = rt->cap.error_todo;
  char detail[sizeof rt->cap.error_detail];
  memcpy(detail, rt->cap.error_detail, sizeof detail);
  rt->done.dirty = rt->cap.dirty_before; /* nothing captured has run */
  rt->cap = (t4a__capture){0};
  if (r != T4A__CUDA_SUCCESS || error) {
    if (g && t4a__be.cu.cuGraphDestroy(g) != T4A__CUDA_SUCCESS)
      t4a__keep(g);
    t4a__recorded_free(&rec);
    rc = r != T4A__CUDA_SUCCESS
             ? t4a__rt_cu_fail(rt, r,
                               "graph_end: the driver ended the capture with an error (a captured "
                               "call, or work on the raw stream, failed or could not be "
                               "captured); the capture is discarded, capture again")
             : t4a__fail(error,
                         "graph_end: recording the captured work failed: %s; the capture "
                         "is discarded, %s",
                         detail, todo);
  } else {
    rc = publish(rt, g, &rec, out);
  }
  t4a__ctx_leave(rt, saved);
out:
  t4a__rt_unlock(rt);
  return rc;
}

/* The handles the captured work names are still live (the cold path of a
 * replay names the first one that is not). */
static int check_live(t4a__runtime *rt, t4a__graph *g, const char *what) {
  const t4a__recorded *r = &g->rec;
  t4a__function *f;
  t4a__buffer *b;
  t4a__host *hb;
  const char *noun = NULL, *how = NULL;
  uint64_t bits = 0;
  for (uint32_t i = 0; i < r->functions.count && !noun; i++)
    if (t4a__function_get(rt, (t4a_function){r->functions.bits[i]}, what, &f))
      noun = "function", how = "unloaded with its module", bits = r->functions.bits[i];
  for (uint32_t i = 0; i < r->buffers.count && !noun; i++)
    if (t4a__buffer_get(rt, (t4a_buffer){r->buffers.bits[i]}, what, &b))
      noun = "buffer", how = "freed", bits = r->buffers.bits[i];
  for (uint32_t i = 0; i < r->hosts.count && !noun; i++)
    if (t4a__host_get(rt, (t4a_host_buffer){r->hosts.bits[i]}, what, &hb))
      noun = "host buffer", how = "freed", bits = r->hosts.bits[i];
  if (!noun)
    return T4A_OK;
  return t4a__fail(T4A_EHANDLE,
                   "%s: a %s the graph uses was %s since the capture (handle "
                   "0x%llx); keep what a graph uses until graph_release, or capture again",
                   what, noun, how, (unsigned long long)bits);
}

int t4a__slot_graph_launch(t4a_runtime h, t4a_graph gh) {
  t4a__runtime *rt;
  t4a__graph *g;
  int rc = t4a__rt_lock(h, "graph_launch", &rt);
  if (rc)
    return rc;
  if ((rc = t4a__capture_refuse(&rt->cap, "graph_launch", "enqueues a whole graph")) ||
      (rc = graph_get(rt, gh, "graph_launch", &g)) || (rc = check_live(rt, g, "graph_launch")))
    goto out;
  /* as launch: no context made current unless the driver asks for it */
  t4a__CUresult r;
  T4A__RT_CALL_IN_ITS_CONTEXT(rt, r, rc, t4a__be.cu.cuGraphLaunch(g->exec, rt->stream));
  if (rc)
    goto out;
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "graph_launch of a graph of %llu nodes failed",
                         (unsigned long long)g->nodes);
    goto out;
  }
  uint64_t seq = rt->done.next_seq;
  g->last_use = seq;
  g->replays++;
  /* pinned memory the replay copies is retired behind it (host_free) */
  for (uint32_t i = 0; i < g->rec.hosts.count; i++) {
    t4a__host *hb = NULL;
    if (t4a__host_get(rt, (t4a_host_buffer){g->rec.hosts.bits[i]}, "graph_launch", &hb) == T4A_OK)
      hb->last_use = seq;
  }
  t4a__rt_dirty(rt);
  rt->c.graph_launches++;
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_graph_set_kernel_args(t4a_runtime h, t4a_graph gh, uint64_t kernel, void **args) {
  t4a__runtime *rt;
  t4a__graph *g;
  int rc = t4a__rt_lock(h, "graph_set_kernel_args", &rt);
  if (rc)
    return rc;
  /* a graph that can no longer be replayed takes no new arguments: its
   * kernel's function may be unloaded already, and the driver must not see
   * a destroyed CUfunction (the model fuzzer found this) */
  if ((rc = graph_get(rt, gh, "graph_set_kernel_args", &g)) ||
      (rc = check_live(rt, g, "graph_set_kernel_args")))
    goto out;
  if (kernel >= g->rec.kernel_count) {
    rc = t4a__fail(T4A_ERANGE,
                   "graph_set_kernel_args: kernel %llu is out of range: the graph has %u "
                   "captured launches (0 .. %u); count them in capture order",
                   (unsigned long long)kernel, g->rec.kernel_count,
                   g->rec.kernel_count ? g->rec.kernel_count - 1 : 0);
    goto out;
  }
  if (!t4a__be.cu.cuGraphExecKernelNodeSetParams) {
    rc = t4a__fail(T4A_EUNSUPPORTED,
                   "graph_set_kernel_args: the driver lacks cuGraphExecKernelNodeSetParams; "
                   "update it, or capture again with the new arguments");
    goto out;
  }
  const t4a__gkernel *k = &g->rec.kernels[kernel];
  t4a__CUDA_KERNEL_NODE_PARAMS p = {.func = k->fn,
                                    .gridDimX = k->grid[0],
                                    .gridDimY = k->grid[1],
                                    .gridDimZ = k->grid[2],
                                    .blockDimX = k->block[0],
                                    .blockDimY = k->block[1],
                                    .blockDimZ = k->block[2],
                                    .sharedMemBytes = k->shared,
                                    .kernelParams = args};
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUresult r = t4a__be.cu.cuGraphExecKernelNodeSetParams(g->exec, k->node, &p);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r,
                         "graph_set_kernel_args: the driver refused the arguments of captured "
                         "kernel %llu; pass what the kernel takes",
                         (unsigned long long)kernel);
  else
    rt->c.graph_updates++;
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_graph_info(t4a_runtime h, t4a_graph gh, t4a_graph_info *out) {
  int rc = t4a__check_struct(out, T4A_GRAPH_INFO_V1_1_SIZE, "t4a_graph_info");
  t4a__runtime *rt;
  t4a__graph *g;
  if (rc || (rc = t4a__rt_lock_any(h, "graph_info", &rt)))
    return rc;
  t4a_graph_info i = {.struct_size = sizeof i};
  if ((rc = graph_get(rt, gh, "graph_info", &g)) == T4A_OK) {
    i.nodes = g->nodes;
    i.kernels = g->rec.kernel_count;
    i.copies = g->rec.copies;
    i.replays = g->replays;
  }
  t4a__rt_unlock(rt);
  if (rc == T4A_OK)
    t4a__fill_struct(out, &i, sizeof i);
  return rc;
}

/* A released graph whose last replay completed (completion.c calls this). */
static void retired(t4a__runtime *rt, const t4a__retire *r, bool final) {
  t4a__CUgraphExec exec = r->ptr;
  if (final) { /* destroy: the context is current */
    t4a__released(rt, t4a__be.cu.cuGraphExecDestroy(exec), exec, "cuGraphExecDestroy");
    return;
  }
  t4a__CUcontext saved;
  if (t4a__ctx_enter(rt, &saved) != T4A_OK) {
    t4a__keep(exec);
    return;
  }
  if (t4a__be.cu.cuGraphExecDestroy(exec) != T4A__CUDA_SUCCESS)
    t4a__keep(exec);
  t4a__ctx_leave(rt, saved);
}

int t4a__slot_graph_release(t4a_runtime h, t4a_graph gh) {
  t4a__runtime *rt;
  t4a__graph *g;
  int rc = t4a__rt_lock_any(h, "graph_release", &rt);
  if (rc)
    return rc;
  if ((rc = graph_get(rt, gh, "graph_release", &g)))
    goto out;
  const t4a__cuda_api *cu = &t4a__be.cu;
  /* the template is not used by replays: it goes now */
  t4a__CUresult tr = cu->cuGraphDestroy(g->graph);
  if (tr != T4A__CUDA_SUCCESS) {
    t4a__keep(g->graph);
    rc = t4a__cu_fail(tr, "graph_release: cuGraphDestroy failed; the graph is released and its "
                          "template kept (leaked)");
  }
  t4a__rt_progress(rt);
  if (g->last_use > rt->done.completed_seq || rt->fault) {
    t4a__retire r = {g->last_use, retired, g->exec, 0, 0};
    int pr = t4a__retire_push(rt, &r);
    if (pr && !rc)
      rc = pr;
    if (pr)
      t4a__keep(g->exec); /* cannot be proven idle later: never destroyed */
    else if (rt->fault)
      t4a__rt_progress(rt); /* counts it quarantined */
  } else {
    t4a__CUcontext saved;
    t4a__CUresult r = T4A__CUDA_ERROR_INVALID_CONTEXT;
    if (t4a__ctx_enter(rt, &saved) == T4A_OK) {
      r = cu->cuGraphExecDestroy(g->exec);
      t4a__ctx_leave(rt, saved);
    }
    if (r != T4A__CUDA_SUCCESS) {
      t4a__keep(g->exec);
      if (!rc)
        rc = t4a__cu_fail(r, "graph_release: cuGraphExecDestroy failed; the graph is released "
                             "and its executable kept (leaked)");
    }
  }
  t4a__recorded_free(&g->rec);
  t4a__htable_release(&rt->graphs, t4a__h_index(gh.bits));
  rt->c.live_graphs--;
out:
  t4a__rt_unlock(rt);
  return rc;
}
