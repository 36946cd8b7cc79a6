/* plugin-host/graph.c -- graphs (v1.1): between graph_begin and graph_end
 * the operations a runtime's slots make are recorded instead of queued
 * (t4a__hrt_enqueue, capture.c); graph_launch queues the recording as one GRAPH
 * operation, which the worker runs in order. Refused during a capture, as
 * on CUDA: what blocks the host or waits for other work (the pageable
 * copies, seal, runtime_wait_witness, copies between runtimes) and what
 * would change memory the graph may use (buffer_alloc, buffer_free,
 * cache_trim); t4a__hrt_refuse says so. Captured launches keep their
 * records (the parameters copied at the call); graph_set_kernel_args
 * rewrites one in place when no replay of the graph is queued, else gives
 * the graph a new copy of its operations (replays already queued keep the
 * old ones, retired behind them). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "plugin-host/host.h"

static int graph_get(t4a__hrt *rt, t4a_graph h, const char *what, t4a__hgraph **out) {
  int rc;
  *out = t4a__htable_find(&rt->graphs, &t4a__graph_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

int t4a__slot_graph_begin(t4a_runtime h) {
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "graph_begin", &rt)))
    return rc;
  if (rt->cap.active)
    rc = t4a__fail(T4A_EBUSY, "graph_begin: the runtime is capturing already; end that capture "
                              "(graph_end) first");
  else
    rt->cap.active = true;
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_graph_end(t4a_runtime h, t4a_graph *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "graph_end: out is NULL; pass a pointer");
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "graph_end", &rt)))
    return rc;
  t4a__hcapture c = rt->cap;
  uint32_t i;
  if (!c.active) {
    rc = t4a__fail(T4A_EINVAL, "graph_end: the runtime is not capturing; call graph_begin first");
    goto out;
  }
  memset(&rt->cap, 0, sizeof rt->cap);
  t4a__graph_ops *ops = c.error ? NULL : malloc(sizeof *ops);
  if (!c.error && !ops)
    c.error = T4A_ENOMEM;
  if ((rc = c.error) || (rc = t4a__htable_take(&rt->graphs, "graph_end", &i))) {
    t4a__capture_free(&c);
    free(ops);
    if (rc == c.error)
      rc = t4a__fail(rc, "graph_end: recording the capture failed (out of host memory); the "
                         "capture is discarded, capture again");
    goto out;
  }
  t4a__hgraph *g = t4a__htable_at(&rt->graphs, i);
  ops->ops = c.ops;
  ops->count = c.count;
  g->ops = ops;
  g->named = c.named;
  g->named_count = c.named_count;
  out->bits = t4a__htable_publish(&rt->graphs, i, &t4a__graph_kind, rt->slot.index);
  rt->c.graphs_captured++;
  rt->c.live_graphs++;
out:
  t4a__hrt_unlock(rt);
  return rc;
}

/* T4A_EHANDLE naming the first buffer or host buffer released since the
 * capture. */
static int named_live(t4a__hrt *rt, const t4a__hgraph *g, const char *what) {
  for (uint32_t i = 0; i < g->named_count; i++) {
    uint64_t bits = g->named[i];
    int rc;
    if (t4a__h_tag(bits) == T4A__TAG_BUFFER) {
      t4a__hbuf *b;
      t4a_buffer bh = {bits};
      rc = t4a__hbuf_get(rt, bh, what, &b);
    } else if (t4a__h_tag(bits) == T4A__TAG_FUNCTION) {
      t4a__hfunc *f;
      t4a_function fh = {bits};
      rc = t4a__hfunc_get(rt, fh, what, &f);
    } else {
      t4a__hhost *hb;
      t4a_host_buffer hh = {bits};
      rc = t4a__hhost_get(rt, hh, what, &hb);
    }
    if (rc)
      return t4a__fail(T4A_EHANDLE,
                       "%s: the graph names a %s released since the capture (handle 0x%llx); "
                       "keep what a graph uses until graph_release, or capture again",
                       what,
                       t4a__h_tag(bits) == T4A__TAG_BUFFER     ? "buffer"
                       : t4a__h_tag(bits) == T4A__TAG_FUNCTION ? "function"
                                                               : "host buffer",
                       (unsigned long long)bits);
  }
  return T4A_OK;
}

int t4a__slot_graph_launch(t4a_runtime h, t4a_graph gh) {
  t4a__hrt *rt;
  t4a__hgraph *g;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "graph_launch", &rt)))
    return rc;
  if (rt->cap.active)
    rc = t4a__fail(T4A_EBUSY, "graph_launch: the runtime is capturing a graph; replay after "
                              "graph_end");
  else if (!(rc = graph_get(rt, gh, "graph_launch", &g)) &&
           !(rc = named_live(rt, g, "graph_launch"))) {
    t4a__op op = {.kind = T4A__OP_GRAPH, .rows = 1};
    op.u.graph = g->ops;
    g->last_use = t4a__queue_push(&rt->q, &op);
    g->replays++;
    rt->c.graph_launches++;
  }
  t4a__hrt_unlock(rt);
  return rc;
}

/* The index in ops of captured kernel `kernel` (in capture order), or
 * UINT32_MAX; *count: how many kernels ops holds. */
static uint32_t kernel_at(const t4a__graph_ops *ops, uint64_t kernel, uint64_t *count) {
  uint32_t at = UINT32_MAX;
  *count = 0;
  for (uint32_t i = 0; i < ops->count; i++)
    if (ops->ops[i].kind == T4A__OP_KERNEL && (*count)++ == kernel)
      at = i;
  return at;
}

static void free_ops(t4a__hrt *rt, void *ptr, uint64_t bytes, bool final);

/* A copy of ops whose launch records are its own; NULL when memory is short. */
static t4a__graph_ops *copy_ops(const t4a__graph_ops *ops) {
  t4a__graph_ops *c = malloc(sizeof *c);
  t4a__op *o = c ? malloc((ops->count ? ops->count : 1) * sizeof *o) : NULL;
  if (!o) {
    free(c);
    return NULL;
  }
  c->ops = o;
  c->count = 0;
  for (uint32_t i = 0; i < ops->count; i++, c->count++) {
    o[i] = ops->ops[i];
    if (o[i].kind == T4A__OP_KERNEL &&
        !(o[i].u.kernel = t4a__hklaunch_clone(ops->ops[i].u.kernel))) {
      free_ops(NULL, c, 0, false); /* the records cloned so far */
      return NULL;
    }
  }
  return c;
}

int t4a__slot_graph_set_kernel_args(t4a_runtime h, t4a_graph gh, uint64_t kernel, void **args) {
  const char *what = "graph_set_kernel_args";
  t4a__hrt *rt;
  t4a__hgraph *g;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if ((rc = graph_get(rt, gh, what, &g)) || (rc = named_live(rt, g, what)))
    goto out;
  uint64_t count;
  uint32_t at = kernel_at(g->ops, kernel, &count);
  if (at == UINT32_MAX) {
    rc = t4a__fail(T4A_ERANGE,
                   "%s: kernel %llu is out of range: the graph has %llu kernels (0 .. %llu); pass "
                   "an index below t4a_graph_info.kernels",
                   what, (unsigned long long)kernel, (unsigned long long)count,
                   (unsigned long long)(count ? count - 1 : 0));
    goto out;
  }
  if (t4a__timeline_reached(rt->q.tl, g->last_use)) { /* no replay queued: in place */
    rc = t4a__hklaunch_set_args(g->ops->ops[at].u.kernel, args, what);
    goto out;
  }
  /* replays still queued read the old arguments: the graph gets a copy */
  t4a__graph_ops *c = copy_ops(g->ops);
  if (!c) {
    rc = t4a__fail(T4A_ENOMEM,
                   "%s: out of host memory for a copy of the graph (replays are "
                   "queued); wait for them, or free memory",
                   what);
    goto out;
  }
  /* (at < c->count: the copy holds the same operations as g->ops) */
  if (at >= c->count || (rc = t4a__hklaunch_set_args(c->ops[at].u.kernel, args, what))) {
    free_ops(rt, c, 0, false);
    goto out;
  }
  t4a__hretire r = {g->last_use, free_ops, g->ops, 0};
  g->ops = c;
  t4a__retire_add(rt, &r);
out:
  if (!rc)
    rt->c.graph_updates++;
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_graph_info(t4a_runtime h, t4a_graph gh, t4a_graph_info *out) {
  int rc = t4a__check_struct(out, T4A_GRAPH_INFO_V1_1_SIZE, "t4a_graph_info");
  t4a__hrt *rt;
  t4a__hgraph *g;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock_any(h, "graph_info", &rt)))
    return rc;
  t4a_graph_info i = {.struct_size = sizeof i};
  if (!(rc = graph_get(rt, gh, "graph_info", &g))) {
    i.nodes = g->ops->count;
    kernel_at(g->ops, UINT64_MAX, &i.kernels);
    i.copies = i.nodes - i.kernels;
    i.replays = g->replays;
  }
  t4a__hrt_unlock(rt);
  if (!rc)
    t4a__fill_struct(out, &i, sizeof i);
  return rc;
}

static void free_ops(t4a__hrt *rt, void *ptr, uint64_t bytes, bool final) {
  (void)rt, (void)bytes, (void) final;
  t4a__graph_ops *ops = ptr;
  for (uint32_t i = 0; i < ops->count; i++)
    if (ops->ops[i].kind == T4A__OP_KERNEL)
      free(ops->ops[i].u.kernel);
  free(ops->ops);
  free(ops);
}

int t4a__slot_graph_release(t4a_runtime h, t4a_graph gh) {
  t4a__hrt *rt;
  t4a__hgraph *g;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock_any(h, "graph_release", &rt)))
    return rc;
  if (!(rc = graph_get(rt, gh, "graph_release", &g))) {
    t4a__hretire r = {g->last_use, free_ops, g->ops, 0};
    free(g->named);
    t4a__htable_release(&rt->graphs, t4a__h_index(gh.bits));
    rt->c.live_graphs--;
    t4a__retire_add(rt, &r);
  }
  t4a__hrt_unlock(rt);
  return rc;
}

void t4a__graphs_fini(t4a__hrt *rt) {
  t4a__capture_free(&rt->cap); /* a capture in progress is discarded */
  for (uint32_t i = 0; i < rt->graphs.count; i++) {
    t4a__hgraph *g = t4a__htable_at(&rt->graphs, i);
    if (g->h.live) {
      free_ops(rt, g->ops, 0, true);
      free(g->named);
    }
  }
  t4a__htable_fini(&rt->graphs);
}
