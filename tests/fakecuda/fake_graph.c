/* tests/fakecuda/fake_graph.c -- the fake driver's CUDA graphs: stream
 * capture, instantiation, replay, kernel node updates.
 *
 * Capture records what is enqueued on a capturing stream (fake_enqueue
 * calls fake_capture_op): copies, memsets and kernels become nodes, in
 * order; what the real driver refuses in a capture invalidates it, as
 * there (an event record or wait, a stream-ordered free, a pageable copy,
 * and querying, synchronising or allocating on the stream:
 * fake_capture_illegal). cuStreamEndCapture of an invalidated capture
 * fails and gives no graph. An executable graph is a copy of the nodes'
 * operations; cuGraphLaunch queues copies of them on the launch stream, in
 * order, followed by a marker that counts the replay done. Destroying an
 * executable graph while one of its replays is still queued is legal in
 * CUDA; the fake allows it too but counts it ("early_exec_destroys"), so
 * the tests can show that the plugin retires graphs behind their last
 * replay instead. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

#define OK T4A__CUDA_SUCCESS
#define LOCK() pthread_mutex_lock(&fake_G)
#define UNLOCK() pthread_mutex_unlock(&fake_G)

#define FAKE_DECLARE(name, sym, req, params) EXPORT R fake_sym_##name params __asm__(sym);
T4A__CUDA_FUNCS(FAKE_DECLARE)
#undef FAKE_DECLARE

struct CUgraphNode_st {
  op o;
  struct CUgraphNode_st *next;
};

struct CUgraph_st {
  struct CUgraphNode_st *head, *tail;
  size_t count;
};

struct CUgraphExec_st {
  op *ops;
  struct CUgraphNode_st **nodes; /* the template's node of each op (updates) */
  size_t count;
  unsigned pending; /* replays queued and not yet done */
  bool destroyed;
};

struct fake_capture {
  struct CUgraph_st *graph;
  bool invalidated;
  uint64_t id;
};

static uint64_t live_graphs, live_execs, early_exec_destroys, replays, capture_ids;

/* ---- capture -------------------------------------------------------------------- */

static void graph_free(struct CUgraph_st *g) {
  for (struct CUgraphNode_st *n = g->head, *next; n; n = next) {
    next = n->next;
    free(n);
  }
  free(g);
}

R fake_capture_op(t4a__CUstream s, const op *o) {
  LOCK();
  struct fake_capture *c = s->capture;
  R r = OK;
  if (c->invalidated) {
    r = T4A__CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else if (o->kind == OP_WAIT) {
    r = T4A__CUDA_ERROR_STREAM_CAPTURE_ISOLATION; /* an event from outside the capture */
  } else if (o->kind == OP_RECORD || o->kind == OP_FREE || o->owned) {
    r = T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else {
    struct CUgraphNode_st *n = calloc(1, sizeof *n);
    if (!n) {
      r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      n->o = *o;
      n->o.next = NULL;
      if (c->graph->tail)
        c->graph->tail->next = n;
      else
        c->graph->head = n;
      c->graph->tail = n;
      c->graph->count++;
    }
  }
  if (r && r != T4A__CUDA_ERROR_OUT_OF_MEMORY)
    c->invalidated = true; /* the driver invalidates a capture a call broke */
  UNLOCK();
  return r;
}

R fake_capture_illegal(t4a__CUstream s) {
  LOCK();
  s->capture->invalidated = true;
  UNLOCK();
  return T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

R fake_sym_cuStreamBeginCapture(t4a__CUstream s, unsigned mode) {
  FAKE_ENTER("cuStreamBeginCapture");
  if (!s)
    return T4A__CUDA_ERROR_INVALID_HANDLE; /* the legacy stream cannot capture */
  if (mode > T4A__CU_STREAM_CAPTURE_MODE_RELAXED)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  struct fake_capture *c = calloc(1, sizeof *c);
  struct CUgraph_st *g = calloc(1, sizeof *g);
  if (!c || !g) {
    free(c);
    free(g);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  c->graph = g;
  LOCK();
  R r = s->capture ? 401 /* CUDA_ERROR_ILLEGAL_STATE */ : OK;
  if (!r) {
    c->id = ++capture_ids;
    s->capture = c;
    live_graphs++;
  }
  UNLOCK();
  if (r) {
    free(c);
    free(g);
  }
  return r;
}

R fake_sym_cuStreamEndCapture(t4a__CUstream s, t4a__CUgraph *out) {
  FAKE_ENTER("cuStreamEndCapture");
  if (!s || !out)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  struct fake_capture *c = s->capture;
  s->capture = NULL;
  bool invalid = c && c->invalidated;
  if (invalid)
    live_graphs--;
  UNLOCK();
  if (!c)
    return 401; /* CUDA_ERROR_ILLEGAL_STATE: not capturing */
  *out = invalid ? NULL : c->graph;
  if (invalid)
    graph_free(c->graph);
  free(c);
  return invalid ? T4A__CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : OK;
}

R fake_sym_cuStreamGetCaptureInfo(t4a__CUstream s, unsigned *status, t4a__cuuint64_t *id,
                                  t4a__CUgraph *graph, const t4a__CUgraphNode **deps,
                                  size_t *count) {
  FAKE_ENTER("cuStreamGetCaptureInfo");
  if (!s || !status)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  struct fake_capture *c = s->capture;
  *status = !c               ? T4A__CU_STREAM_CAPTURE_STATUS_NONE
            : c->invalidated ? 2u /* INVALIDATED */
                             : 1u;
  if (id)
    *id = c ? c->id : 0;
  if (graph)
    *graph = c ? c->graph : NULL;
  /* the frontier of a single-stream capture: its last node */
  if (deps)
    *deps = c && c->graph->tail ? (const t4a__CUgraphNode *)&c->graph->tail : NULL;
  if (count)
    *count = c && c->graph->tail ? 1 : 0;
  UNLOCK();
  return OK;
}

/* ---- graphs and executable graphs ------------------------------------------------- */

R fake_sym_cuGraphDestroy(t4a__CUgraph g) {
  FAKE_ENTER("cuGraphDestroy");
  if (!g)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  live_graphs--;
  UNLOCK();
  graph_free(g);
  return OK;
}

R fake_sym_cuGraphGetNodes(t4a__CUgraph g, t4a__CUgraphNode *nodes, size_t *n) {
  FAKE_ENTER("cuGraphGetNodes");
  if (!g || !n)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  size_t i = 0;
  for (struct CUgraphNode_st *x = g->head; x && nodes && i < *n; x = x->next)
    nodes[i++] = x;
  *n = nodes ? i : g->count;
  return OK;
}

R fake_sym_cuGraphInstantiateWithFlags(t4a__CUgraphExec *out, t4a__CUgraph g,
                                       unsigned long long flags) {
  FAKE_ENTER("cuGraphInstantiateWithFlags");
  if (!out || !g || flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  struct CUgraphExec_st *e = calloc(1, sizeof *e);
  size_t n = g->count ? g->count : 1;
  if (e) {
    e->ops = calloc(n, sizeof *e->ops);
    e->nodes = calloc(n, sizeof(struct CUgraphNode_st *));
  }
  if (!e || !e->ops || !e->nodes) {
    if (e) {
      free(e->ops);
      free(e->nodes);
    }
    free(e);
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (struct CUgraphNode_st *x = g->head; x; x = x->next) {
    e->nodes[e->count] = x;
    e->ops[e->count++] = x->o;
  }
  LOCK();
  live_execs++;
  UNLOCK();
  *out = e;
  return OK;
}

static void exec_free(struct CUgraphExec_st *e) {
  free(e->ops);
  free(e->nodes);
  free(e);
}

/* The marker after a replay's operations (runs on the stream's worker). */
static void replay_done(const unsigned char *args, geometry g) {
  (void)g;
  uintptr_t bits;
  memcpy(&bits, args, sizeof bits);
  struct CUgraphExec_st *e = (struct CUgraphExec_st *)bits;
  LOCK();
  bool gone = --e->pending == 0 && e->destroyed;
  UNLOCK();
  if (gone)
    exec_free(e);
}

R fake_sym_cuGraphLaunch(t4a__CUgraphExec e, t4a__CUstream s) {
  FAKE_ENTER("cuGraphLaunch");
  if (!e || !s)
    return T4A__CUDA_ERROR_INVALID_HANDLE;
  LOCK();
  R r = e->destroyed ? T4A__CUDA_ERROR_INVALID_HANDLE
        : s->capture ? T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED /* not simulated */
                     : fake_device_fault(s->device);
  if (!r) {
    e->pending++;
    replays++;
  }
  UNLOCK();
  if (r)
    return r;
  for (size_t i = 0; i < e->count && !r; i++) {
    op o = e->ops[i];
    r = fake_enqueue(s, &o);
  }
  op done = {.kind = OP_KERNEL, .kernel = replay_done, .geom = {1, 1, 0, s->device, 0, false}};
  uintptr_t bits = (uintptr_t)e;
  memcpy(done.args, &bits, sizeof bits);
  R d = fake_enqueue(s, &done);
  if (d) { /* the marker never runs: count the replay done now */
    LOCK();
    e->pending--;
    UNLOCK();
  }
  return r ? r : d;
}

R fake_sym_cuGraphExecDestroy(t4a__CUgraphExec e) {
  FAKE_ENTER("cuGraphExecDestroy");
  if (!e)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = e->destroyed ? T4A__CUDA_ERROR_INVALID_HANDLE : OK;
  bool now = false;
  if (!r) {
    e->destroyed = true;
    live_execs--;
    if (e->pending)
      early_exec_destroys++; /* legal, freed after the replay; the plugin should not */
    now = e->pending == 0;
  }
  UNLOCK();
  if (now)
    exec_free(e);
  return r;
}

R fake_sym_cuGraphExecKernelNodeSetParams(t4a__CUgraphExec e, t4a__CUgraphNode node,
                                          const t4a__CUDA_KERNEL_NODE_PARAMS *p) {
  FAKE_ENTER("cuGraphExecKernelNodeSetParams");
  if (!e || !node || !p || !p->func || p->extra)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  const kdesc *k = p->func->k;
  if ((k->nargs && !p->kernelParams) || !p->gridDimX || !p->blockDimX ||
      (int)p->sharedMemBytes > p->func->max_dynamic_shared)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  size_t i = 0;
  while (i < e->count && e->nodes[i] != node)
    i++;
  R r = e->destroyed || i == e->count ? T4A__CUDA_ERROR_INVALID_HANDLE
        : e->ops[i].kind != OP_KERNEL ? T4A__CUDA_ERROR_INVALID_VALUE
                                      : OK;
  if (!r) { /* later replays take the new arguments; queued ones are copies */
    op *o = &e->ops[i];
    o->kernel = k->fn;
    o->geom.grid = p->gridDimX;
    o->geom.block = p->blockDimX;
    o->geom.shared = p->sharedMemBytes;
    for (unsigned a = 0; a < k->nargs; a++)
      memcpy(o->args + k->offsets[a], p->kernelParams[a], k->sizes[a]);
  }
  UNLOCK();
  return r;
}

/* ---- test controls ------------------------------------------------------------------ */

/* "graph" (templates alive), "exec" (executable graphs alive),
 * "early_exec_destroys" (destroyed while a replay was queued), "replays". */
EXPORT uint64_t fake_cuda_graph_stat(const char *what);
uint64_t fake_cuda_graph_stat(const char *what) {
  LOCK();
  uint64_t n = strcmp(what, "graph") == 0                 ? live_graphs
               : strcmp(what, "exec") == 0                ? live_execs
               : strcmp(what, "early_exec_destroys") == 0 ? early_exec_destroys
               : strcmp(what, "replays") == 0             ? replays
                                                          : UINT64_MAX;
  UNLOCK();
  return n;
}
