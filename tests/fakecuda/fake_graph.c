/* tests/fakecuda/fake_graph.c -- the fake driver's CUDA graphs: stream
 * capture, instantiation, replay, kernel node updates.
 *
 * Capture records what is enqueued on a capturing stream (fake_enqueue
 * calls fake_capture_op): copies between device and pinned memory, memsets
 * and kernels become nodes, in order. What the fake cannot capture (an
 * event record or wait, a stream-ordered free, a pageable copy) and what
 * CUDA refuses on a capturing stream (a query, a synchronisation, a
 * stream-ordered allocation: fake_capture_illegal) is a misuse, and
 * invalidates the capture as in CUDA: cuStreamEndCapture then fails and
 * gives no graph.
 *
 * Graphs, their nodes and executable graphs are registered objects (a
 * graph and its nodes are of no context; an executable graph is of the
 * context current at instantiation): destroyed ones stay tombstones, so a
 * stale handle is refused and counted. An executable graph is a copy of
 * its nodes' operations; cuGraphLaunch checks them (functions still
 * loaded, the memory of copies and memsets still allocated: a misuse
 * otherwise) and queues copies of them on the stream, in order, each
 * taking queued uses of the memory it touches like any other operation,
 * then a record of the executable graph's own event, which counts the
 * replay done. Destroying an executable graph while one of its replays is
 * queued is legal in CUDA; the fake allows it but counts it
 * ("early_exec_destroys"), so the tests can show that the plugin retires
 * graphs behind their last replay instead. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

#define ILLEGAL_STATE ((R)401) /* CUDA_ERROR_ILLEGAL_STATE */
#define CAPTURE_STATUS_INVALIDATED 2u

struct CUgraphNode_st {
  fake_obj o;
  op op; /* as enqueued, without refs: a replay takes its own */
  struct CUgraphNode_st *next;
};

struct CUgraph_st {
  fake_obj o;
  struct CUgraphNode_st *head, *tail;
  size_t count;
  bool capturing; /* a capture records into it */
};

struct CUgraphExec_st {
  fake_obj o;
  op *ops;
  struct CUgraphNode_st **nodes; /* the template's node of each op (updates) */
  size_t count;
  struct CUevent_st done; /* recorded after each replay (not a registered event) */
};

struct fake_capture {
  struct CUgraph_st *graph;
  bool invalidated;
  uint64_t id;
};

static uint64_t live_graphs, live_execs, early_exec_destroys, replays, capture_ids;

/* ---- capture -------------------------------------------------------------------- */

/* Destroys a graph and its nodes (G held): tombstones. */
static void graph_kill(struct CUgraph_st *g) {
  g->o.dead = true;
  for (struct CUgraphNode_st *n = g->head; n; n = n->next)
    n->o.dead = true;
  live_graphs--;
}

/* Refuses `what` on a capturing stream (G held): a misuse, and the capture
 * invalidated, as the driver invalidates a capture a call broke. */
static R refuse(struct fake_capture *c, R code, const char *what, const char *why) {
  c->invalidated = true;
  return fake_misuse(code, "%s on a capturing stream: %s; the capture is invalidated", what, why);
}

R fake_capture_op(t4a__CUstream s, const op *o) {
  struct fake_capture *c = s->capture;
  if (c->invalidated)
    return T4A__CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  switch (o->kind) {
  case OP_WAIT:
    return refuse(c, T4A__CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "cuStreamWaitEvent",
                  "the event is not of the capture");
  case OP_RECORD:
    return refuse(c, T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuEventRecord",
                  "the fake has no event record nodes");
  case OP_FREE:
    return refuse(c, T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuMemFreeAsync",
                  "the fake has no free nodes");
  case OP_COPY: /* a pageable side: a snapshot, or no allocation of its own */
    if (o->owned || o->nrefs < 2)
      return refuse(c, T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "a copy",
                    "pageable memory cannot be captured");
    break;
  case OP_SET:
  case OP_KERNEL: break;
  }
  struct CUgraphNode_st *n = calloc(1, sizeof *n);
  if (!n)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  fake_obj_register(&n->o, OBJ_GRAPH_NODE, NULL);
  n->op = *o;
  n->op.next = NULL;
  n->op.nrefs = 0; /* the allocations may be gone by a replay: it looks them up again */
  struct CUgraph_st *g = c->graph;
  if (g->tail)
    g->tail->next = n;
  else
    g->head = n;
  g->tail = n;
  g->count++;
  return OK;
}

R fake_capture_illegal(t4a__CUstream s, const char *what) {
  return refuse(s->capture, T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, what,
                "CUDA refuses it during a capture");
}

R fake_sym_cuStreamBeginCapture(t4a__CUstream s, fake_capture_mode mode) {
  FAKE_ENTER("cuStreamBeginCapture");
  if ((unsigned)mode > T4A__CU_STREAM_CAPTURE_MODE_RELAXED)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  struct fake_capture *c = calloc(1, sizeof *c);
  struct CUgraph_st *g = calloc(1, sizeof *g);
  LOCK();
  R r = fake_stream_get(&s, "cuStreamBeginCapture");
  if (!r && s->capture)
    r = fake_misuse(ILLEGAL_STATE, "cuStreamBeginCapture: the stream is capturing already");
  if (!r && (!c || !g))
    r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
  if (!r) {
    fake_obj_register(&g->o, OBJ_GRAPH, NULL);
    g->capturing = true;
    c->graph = g;
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
  if (!out)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = fake_stream_get(&s, "cuStreamEndCapture");
  struct fake_capture *c = r ? NULL : s->capture;
  if (!r && !c)
    r = fake_misuse(ILLEGAL_STATE, "cuStreamEndCapture: the stream is not capturing");
  if (c) {
    s->capture = NULL;
    c->graph->capturing = false;
    *out = c->invalidated ? NULL : c->graph;
    if (c->invalidated) { /* no graph: it goes */
      graph_kill(c->graph);
      r = T4A__CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
  }
  UNLOCK();
  free(c);
  return r;
}

R fake_sym_cuStreamGetCaptureInfo(t4a__CUstream s, fake_capture_status *status, t4a__cuuint64_t *id,
                                  t4a__CUgraph *graph, const t4a__CUgraphNode **deps,
                                  size_t *count) {
  FAKE_ENTER("cuStreamGetCaptureInfo");
  if (!status)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = fake_stream_get(&s, "cuStreamGetCaptureInfo");
  if (!r) {
    struct fake_capture *c = s->capture;
    *status = !c               ? T4A__CU_STREAM_CAPTURE_STATUS_NONE
              : c->invalidated ? CAPTURE_STATUS_INVALIDATED
                               : T4A__CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id)
      *id = c ? c->id : 0;
    if (graph)
      *graph = c ? c->graph : NULL;
    /* the frontier of a single-stream capture: its last node */
    bool tail = c && c->graph->tail;
    if (deps)
      *deps = tail ? (const t4a__CUgraphNode *)&c->graph->tail : NULL;
    if (count)
      *count = tail ? 1 : 0;
  }
  UNLOCK();
  return r;
}

/* ---- graphs and executable graphs ------------------------------------------------- */

R fake_sym_cuGraphDestroy(t4a__CUgraph g) {
  FAKE_ENTER("cuGraphDestroy");
  LOCK();
  R r = fake_obj_check(g, OBJ_GRAPH, "cuGraphDestroy");
  if (!r && g->capturing)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                    "cuGraphDestroy: a capture still records into the graph");
  if (!r)
    graph_kill(g); /* executable graphs made of it keep their copies */
  UNLOCK();
  return r;
}

R fake_sym_cuGraphGetNodes(t4a__CUgraph g, t4a__CUgraphNode *nodes, size_t *n) {
  FAKE_ENTER("cuGraphGetNodes");
  if (!n)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = fake_obj_check(g, OBJ_GRAPH, "cuGraphGetNodes");
  if (!r) {
    size_t i = 0;
    for (struct CUgraphNode_st *x = g->head; x && nodes && i < *n; x = x->next)
      nodes[i++] = x;
    *n = nodes ? i : g->count;
  }
  UNLOCK();
  return r;
}

/* Whether the kernels of a graph may run in ctx (G held). */
static R kernels_check(const struct CUgraph_st *g, const struct CUctx_st *ctx, const char *what) {
  R r = OK;
  for (const struct CUgraphNode_st *x = g->head; x && !r; x = x->next)
    if (x->op.kind == OP_KERNEL && !(r = fake_obj_check(x->op.func, OBJ_FUNCTION, what)) &&
        x->op.func->o.ctx != ctx)
      r = fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT,
                      "%s: kernel '%s' is device %d's, the current context another's", what,
                      x->op.func->k->name, x->op.func->o.ctx->device);
  return r;
}

R fake_sym_cuGraphInstantiateWithFlags(t4a__CUgraphExec *out, t4a__CUgraph g,
                                       unsigned long long flags) {
  FAKE_ENTER("cuGraphInstantiateWithFlags");
  R r = fake_need_ctx(); /* the executable graph is the current context's */
  if (r)
    return r;
  if (!out || flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  struct CUgraphExec_st *e = NULL;
  if ((r = fake_obj_check(g, OBJ_GRAPH, "cuGraphInstantiateWithFlags")) ||
      (r = kernels_check(g, fake_current(), "cuGraphInstantiateWithFlags")))
    goto out;
  size_t n = g->count ? g->count : 1;
  if (!(e = calloc(1, sizeof *e)) || !(e->ops = calloc(n, sizeof *e->ops)) ||
      !(e->nodes = calloc(n, sizeof(struct CUgraphNode_st *)))) {
    if (e) {
      free(e->ops);
      free(e);
    }
    r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
    goto out;
  }
  for (struct CUgraphNode_st *x = g->head; x; x = x->next) {
    e->nodes[e->count] = x;
    e->ops[e->count++] = x->op;
  }
  fake_obj_register(&e->o, OBJ_GRAPH_EXEC, fake_current());
  live_execs++;
  *out = e;
out:
  UNLOCK();
  return r;
}

/* The allocation [p, p + n) of a replayed copy or memset lies in, taken as
 * one of o's refs (G held): live device memory the stream's device may
 * access, or pinned memory; a misuse otherwise (freed since the capture). */
static R replay_ref(op *o, const void *p, size_t n, int dev, size_t node) {
  alloc *a = fake_alloc_find(p, n, MEM_DEVICE);
  bool ok = a && a->state == A_LIVE && fake_alloc_accessible(a, dev);
  if (!a && (a = fake_alloc_find(p, n, MEM_HOST)) != NULL)
    ok = true;
  if (!ok)
    return fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                       "cuGraphLaunch: node %zu's %s touches %p, which is no longer memory it may "
                       "use (freed since the capture?)",
                       node, o->kind == OP_SET ? "memset" : "copy", p);
  o->refs[o->nrefs++] = a;
  return OK;
}

/* A replay's copy of op i, its refs taken afresh (G held). */
static R replay_op(const struct CUgraphExec_st *e, size_t i, int dev, op *o) {
  *o = e->ops[i];
  o->nrefs = 0;
  if (o->kind == OP_KERNEL) {
    R r = fake_obj_check(o->func, OBJ_FUNCTION, "cuGraphLaunch"); /* its module unloaded? */
    if (!r)
      fake_kernel_refs(o);
    return r;
  }
  R r = replay_ref(o, o->dst, o->bytes, dev, i);
  if (!r && o->kind == OP_COPY)
    r = replay_ref(o, o->src, o->bytes, dev, i);
  return r;
}

R fake_sym_cuGraphLaunch(t4a__CUgraphExec e, t4a__CUstream s) {
  FAKE_ENTER_STREAM("cuGraphLaunch", s);
  LOCK();
  R r = fake_obj_check(e, OBJ_GRAPH_EXEC, "cuGraphLaunch");
  if (!r)
    r = fake_stream_get(&s, "cuGraphLaunch");
  if (!r && e->o.ctx != s->o.ctx)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE,
                    "cuGraphLaunch: the executable graph is device %d's, the stream device %d's",
                    e->o.ctx->device, s->o.ctx->device);
  if (!r) /* launched like a kernel: in the graph's and the stream's context */
    r = fake_refuse_uncurrent(e->o.ctx);
  if (!r && s->capture)
    r = T4A__CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* child graphs: not simulated */
  else if (!r)
    r = fake_device_fault(s->device);
  op *ops = r || !e->count ? NULL : calloc(e->count, sizeof *ops);
  if (!r && e->count && !ops)
    r = T4A__CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < e->count && !r; i++) /* all checked before any is queued */
    r = replay_op(e, i, s->device, &ops[i]);
  for (size_t i = 0; i < e->count && !r; i++)
    r = fake_enqueue(s, &ops[i]);
  if (!r) {
    op done = {.kind = OP_RECORD, .event = &e->done, .gen = ++e->done.recorded};
    if ((r = fake_enqueue(s, &done)) != OK)
      e->done.recorded--;
    else
      replays++;
  }
  UNLOCK();
  free(ops);
  return r;
}

R fake_sym_cuGraphExecDestroy(t4a__CUgraphExec e) {
  FAKE_ENTER("cuGraphExecDestroy");
  LOCK();
  R r = fake_obj_check(e, OBJ_GRAPH_EXEC, "cuGraphExecDestroy");
  if (!r) {
    e->o.dead = true; /* its queued replays run from their own copies */
    live_execs--;
    if (e->done.completed < e->done.recorded && !e->done.failed)
      early_exec_destroys++; /* legal; the plugin should not */
    free(e->ops);
    free(e->nodes);
    e->ops = NULL;
    e->nodes = NULL;
    e->count = 0;
  }
  UNLOCK();
  return r;
}

R fake_sym_cuGraphExecKernelNodeSetParams(t4a__CUgraphExec e, t4a__CUgraphNode node,
                                          const t4a__CUDA_KERNEL_NODE_PARAMS *p) {
  FAKE_ENTER("cuGraphExecKernelNodeSetParams");
  if (!p)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  const char *what = "cuGraphExecKernelNodeSetParams";
  R r = fake_obj_check(e, OBJ_GRAPH_EXEC, what);
  if (!r)
    r = fake_obj_check(node, OBJ_GRAPH_NODE, what);
  if (!r)
    r = fake_obj_check(p->func, OBJ_FUNCTION, what);
  size_t i = 0;
  while (!r && i < e->count && e->nodes[i] != node)
    i++;
  if (!r && i == e->count)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                    "%s: the node is not one of the executable graph's", what);
  else if (!r && e->ops[i].kind != OP_KERNEL)
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE, "%s: node %zu is no kernel node", what, i);
  else if (!r && p->func->o.ctx != e->o.ctx) /* CUDA: the context cannot change */
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_VALUE,
                    "%s: '%s' is device %d's, the executable graph device %d's", what,
                    p->func->k->name, p->func->o.ctx->device, e->o.ctx->device);
  if (r)
    goto out;
  const kdesc *k = p->func->k;
  unsigned long threads = (unsigned long)p->blockDimX * p->blockDimY * p->blockDimZ;
  if (p->extra || !p->gridDimX || !p->gridDimY || !p->gridDimZ || !threads ||
      threads > (k->max_threads ? (unsigned long)k->max_threads : 1024ul) ||
      (int)p->sharedMemBytes > p->func->max_dynamic_shared || (k->nargs && !p->kernelParams)) {
    r = T4A__CUDA_ERROR_INVALID_VALUE;
    goto out;
  }
  /* later replays take the new parameters; queued ones are copies */
  op *o = &e->ops[i];
  o->func = p->func;
  o->geom.grid[0] = p->gridDimX;
  o->geom.grid[1] = p->gridDimY;
  o->geom.grid[2] = p->gridDimZ;
  o->geom.block[0] = p->blockDimX;
  o->geom.block[1] = p->blockDimY;
  o->geom.block[2] = p->blockDimZ;
  o->geom.shared = p->sharedMemBytes; /* clusters and cooperation stay the node's */
  for (unsigned a = 0; a < k->nargs; a++)
    memcpy(o->args + k->offsets[a], p->kernelParams[a], k->sizes[a]);
out:
  UNLOCK();
  return r;
}

/* ---- test controls ------------------------------------------------------------------ */

/* "graph" (graphs alive), "exec" (executable graphs alive),
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
