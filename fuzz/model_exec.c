/* fuzz/model_exec.c -- the model fuzzer's launches, raw seam and graphs (see
 * fuzz/model_ops.h). */
#include "config.h"

#include <string.h>

#include "fuzz/model_ops.h"

/* ---- launches ------------------------------------------------------------------------------ */

/* Arguments and effect of a launch of kernel k on runtime r, into buffers
 * of r; false when r has no buffer for it. */
typedef struct kargs {
  uint64_t ptr, n;
  uint32_t value;
  void *argv[3];
} kargs;

static bool kernel_args(int r, int k, fz_effect *e, kargs *a, uint32_t grid[3], uint32_t block[3]) {
  for (int i = 0; i < 3; i++) {
    grid[i] = 1 + (uint32_t)fz_below(i == 0 ? 4 : 2);
    block[i] = 1 + (uint32_t)fz_below(i == 0 ? 8 : 3);
  }
  e->kind = k == KERN_FILL ? E_FILL : k == KERN_INDEX3D ? E_INDEX3D : E_EMPTY;
  memcpy(e->grid, grid, sizeof e->grid);
  memcpy(e->block, block, sizeof e->block);
  if (k == KERN_EMPTY)
    return true;
  int b = fz_live_buf_of(r);
  if (b < 0)
    return false;
  uint64_t size = W.buf[b].size;
  e->dst = b;
  e->dst_bits = W.buf[b].o.bits;
  if (k == KERN_FILL) {
    uint64_t off = fz_below(size / 4 + 1) * 4;
    a->n = fz_below((size - off) / 4 + 1);
    a->value = fz_u32();
    e->doff = off;
    e->n = a->n;
    e->value = a->value;
    a->ptr = W.buf[b].addr + off;
    a->argv[0] = &a->ptr;
    a->argv[1] = &a->value;
    a->argv[2] = &a->n;
    return true;
  }
  uint64_t per = (uint64_t)block[0] * block[1] * block[2];
  while (12 * per * grid[0] * grid[1] * grid[2] > size) { /* shrink until it fits */
    int i = grid[2] > 1 ? 2 : grid[1] > 1 ? 1 : grid[0] > 1 ? 0 : -1;
    if (i >= 0) {
      grid[i]--;
    } else if (block[0] * block[1] * block[2] > 1) {
      int j = block[2] > 1 ? 2 : block[1] > 1 ? 1 : 0;
      block[j]--;
      per = (uint64_t)block[0] * block[1] * block[2];
    } else {
      return false; /* not even 12 bytes */
    }
  }
  uint64_t bytes = 12 * per * grid[0] * grid[1] * grid[2];
  e->doff = fz_below((size - bytes) / 4 + 1) * 4;
  memcpy(e->grid, grid, sizeof e->grid);
  memcpy(e->block, block, sizeof e->block);
  a->ptr = W.buf[b].addr + e->doff;
  a->argv[0] = &a->ptr;
  return true;
}

void fz_op_launch(void) {
  bool ex = fz_chance(64);
  fz_trace(ex ? "launch_ex" : "launch");
  fz_arg f = pick_fn();
  fz_arg r = rt_for(f, fn_owner(f));
  if (!room(r))
    return;
  int k = f.slot >= 0 ? f.slot % FZ_KERNELS : KERN_EMPTY;
  fz_effect e = {0};
  kargs a = {0};
  uint32_t grid[3], block[3];
  int owner = r.ok ? r.slot : -1;
  if (owner < 0)
    k = KERN_EMPTY; /* refused for the handle: no arguments needed */
  if (k != KERN_EMPTY && !kernel_args(owner, k, &e, &a, grid, block))
    return; /* no buffer of the runtime to write */
  if (k == KERN_EMPTY) {
    e.kind = E_EMPTY;
    for (int i = 0; i < 3; i++)
      grid[i] = block[i] = 1;
  }
  e.fn = f.slot;
  e.fn_bits = f.bits;
  e.mod_bits = f.slot >= 0 ? W.mod[f.slot / FZ_KERNELS].bits : 0;
  uint32_t err = 0, maybe = 0;
  ERR(!owns(r, f, fn_owner(f)), T4A_EHANDLE);
  uint32_t shared = 0;
  switch (fz_u8() % 12) { /* a defect, sometimes */
  case 0:
    grid[fz_below(3)] = 0;
    err |= ST(T4A_EINVAL);
    break;
  case 1:
    block[fz_below(3)] = 0;
    err |= ST(T4A_EINVAL);
    break;
  case 2:
    block[0] = 1025;
    err |= ST(T4A_EINVAL);
    break;
  case 3:
    shared = (uint32_t)fz_optin_shared + 1;
    err |= ST(T4A_EINVAL);
    break;
  case 4:
    block[2] = 65;
    err |= ST(T4A_EINVAL);
    break; /* z is limited to 64 */
  default: break;
  }
  int rc;
  if (!ex) {
    t4a_launch_config c = {.struct_size = sizeof c, .shared_bytes = shared};
    if (fz_chance(8)) {
      c.struct_size = 4;
      err |= ST(T4A_EINVAL);
    }
    memcpy(c.grid, grid, sizeof c.grid);
    memcpy(c.block, block, sizeof c.block);
    rc = CALL("launch",
              T->launch(RT(r), (t4a_function){f.bits}, &c, k == KERN_EMPTY ? NULL : a.argv),
              err ? err : ST_OK);
  } else {
    t4a_launch_ex_config c = {.struct_size = sizeof c, .shared_bytes = shared};
    memcpy(c.grid, grid, sizeof c.grid);
    memcpy(c.block, block, sizeof c.block);
    switch (fz_u8() % 8) {
    case 0:
      c.flags = 0x80;
      err |= ST(T4A_EINVAL);
      break;
    case 1:
      c.reserved = 1;
      err |= ST(T4A_EINVAL);
      break;
    case 2:
      c.flags = T4A_LAUNCH_COOPERATIVE;
      maybe = ST(T4A_EINVAL) | ST(T4A_EUNSUPPORTED);
      break;
    case 3:
      c.flags = T4A_LAUNCH_PRIORITY;
      if (r.ok) {
        c.priority = fz_chance(128) ? W.prio_greatest[r.slot] - 1 : W.prio_least[r.slot];
        if (c.priority < W.prio_greatest[r.slot])
          err |= ST(T4A_ERANGE);
      }
      break;
    case 4:
      c.cluster[0] = grid[0];
      c.cluster[1] = grid[1];
      c.cluster[2] = grid[2];
      maybe = ST(T4A_EINVAL) | ST(T4A_EUNSUPPORTED);
      break;
    case 5:
      if (grid[0] > 1 && grid[0] % 2) {
        c.cluster[0] = 2;
        c.cluster[1] = c.cluster[2] = 1;
        /* does not divide the grid; the host refuses any cluster (after the geometry) */
        err |= fz_on_host ? ST(T4A_EUNSUPPORTED) : ST(T4A_EINVAL);
      }
      break;
    default: break;
    }
    rc = CALL("launch_ex",
              T->launch_ex(RT(r), (t4a_function){f.bits}, &c, k == KERN_EMPTY ? NULL : a.argv),
              err ? err | (err & ST(T4A_EHANDLE) ? 0 : maybe) : ST_OK | maybe);
  }
  if (rc != T4A_OK)
    return;
  memcpy(e.grid, grid, sizeof e.grid);
  memcpy(e.block, block, sizeof e.block);
  if (!W.capturing[r.slot]) /* else recorded: counted at the replays */
    fz_launches++;
  fz_enqueue(r.slot, &e, true);
}

/* ---- the raw seam ------------------------------------------------------------------------------
 */

void fz_op_raw(void) {
  if (fz_on_host) { /* its raw slots are NULL */
    fz_op_host_raw();
    return;
  }
  fz_trace("raw seam");
  fz_arg r = fz_pick_rt();
  uint32_t bad = r.ok ? 0 : ST(T4A_EHANDLE);
  if (fz_chance(96)) {
    t4a_raw_runtime raw = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof raw};
    uint32_t want = bad | (raw.struct_size == 4 ? ST(T4A_EINVAL) : 0);
    if (CALL("raw_runtime", T->raw_runtime(RT(r), &raw), want ? want : ST_OK) == 0 &&
        (raw.device_ordinal != W.dev[r.slot] || !raw.stream || !raw.context))
      fz_finding("raw_runtime: device %d, stream %p, context %p", raw.device_ordinal, raw.stream,
                 raw.context);
    return;
  }
  /* nested sections on up to three runtimes, closed LIFO; sometimes one end
   * names the wrong runtime first */
  t4a_raw_section sec[3];
  fz_arg rs[3];
  int depth = 1 + (int)fz_below(3), open = 0;
  for (int i = 0; i < depth; i++) {
    rs[i] = i == 0 ? r : fz_pick_rt();
    sec[i] = (t4a_raw_section){.struct_size = sizeof sec[i]};
    if (CALL("raw_begin", T->raw_begin(RT(rs[i]), &sec[i]), rs[i].ok ? ST_OK : ST(T4A_EHANDLE)) !=
        T4A_OK)
      break;
    open++;
  }
  for (int i = open - 1; i >= 0; i--) {
    if (fz_chance(24)) {
      fz_arg other = fz_pick_rt();
      if (!(other.ok && other.slot == rs[i].slot))
        CALL("raw_end (wrong runtime)", T->raw_end(RT(other), &sec[i]),
             ST(T4A_EINVAL) | ST(T4A_EHANDLE));
    }
    CALL("raw_end", T->raw_end(RT(rs[i]), &sec[i]), ST_OK);
  }
}

/* ---- graphs ------------------------------------------------------------------------------------
 */

static void release_graph(int g) {
  CALL("graph_release",
       T->graph_release((t4a_runtime){W.rt[W.graph[g].o.rt].bits}, (t4a_graph){W.graph[g].o.bits}),
       ST_OK);
  fz_stale(K_GRAPH, W.graph[g].o.bits);
  fz_graph_drop(&W.graph[g]);
}

void fz_op_graph_capture(void) {
  fz_arg r = fz_pick_rt();
  if (!fz_chance(128) || !capturing(r)) {
    fz_trace("graph_begin");
    uint32_t err = 0;
    ERR(!r.ok, T4A_EHANDLE);
    ERR(capturing(r), T4A_EBUSY);
    if (CALL("graph_begin", T->graph_begin(RT(r)), err ? err : ST_OK) == T4A_OK) {
      W.capturing[r.slot] = true;
      memset(&W.cap[r.slot], 0, sizeof W.cap[r.slot]);
      W.cap[r.slot].o.rt = r.slot;
    }
    return;
  }
  fz_trace("graph_end");
  int slot = fz_free_slot(&W.graph[0].o, FZ_GRAPHS, sizeof W.graph[0]);
  if (slot < 0) {
    slot = (int)fz_below(FZ_GRAPHS);
    release_graph(slot);
  }
  t4a_graph g;
  if (CALL("graph_end", T->graph_end(RT(r), &g), ST_OK) != T4A_OK)
    return;
  W.graph[slot] = W.cap[r.slot];
  W.graph[slot].o = (fz_obj){g.bits, r.slot, true};
  W.cap[r.slot].neff = 0; /* its kernel references moved to the graph */
  W.capturing[r.slot] = false;
}

void fz_op_graph_end_idle(void) {
  fz_trace("graph_end (idle)");
  fz_arg r = fz_pick_rt();
  if (capturing(r))
    return;
  t4a_graph g;
  CALL("graph_end", T->graph_end(RT(r), &g), r.ok ? ST(T4A_EINVAL) : ST(T4A_EHANDLE));
}

void fz_op_graph_launch(void) {
  fz_trace("graph_launch");
  fz_arg g = pick_graph();
  fz_arg r = rt_for(g, graph_owner(g));
  uint32_t err = 0;
  bool owned = owns(r, g, graph_owner(g));
  ERR(!owned, T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  const char *stale = owned ? fz_graph_names_stale(&W.graph[g.slot]) : NULL;
  if (stale)
    err |= ST(T4A_EHANDLE);
  int rc = T->graph_launch(RT(r), (t4a_graph){g.bits});
  if (rc == T4A_OK && stale)
    fz_finding("graph_launch replayed a graph naming what was released (%s)", stale);
  if (CALL("graph_launch", rc, err ? err : ST_OK) != T4A_OK)
    return;
  fz_graph *m = &W.graph[g.slot];
  for (unsigned i = 0; i < m->neff; i++)
    fz_apply(&m->eff[i]);
  m->replays++;
  fz_launches += m->kernels;
}

void fz_op_graph_args(void) {
  fz_trace("graph_set_kernel_args");
  fz_arg g = pick_graph();
  fz_arg r = rt_for(g, graph_owner(g));
  bool owned = owns(r, g, graph_owner(g));
  fz_graph *m = owned ? &W.graph[g.slot] : NULL;
  uint64_t kernel = fz_chance(16) ? (m ? m->kernels : 0) + fz_below(4) : fz_below(4);
  uint32_t want = !owned                    ? ST(T4A_EHANDLE)
                  : kernel >= m->kernels    ? ST(T4A_ERANGE)
                  : fz_graph_names_stale(m) ? ST(T4A_EHANDLE)
                                            : ST_OK;
  if (owned && kernel >= m->kernels && fz_graph_names_stale(m))
    want |= ST(T4A_EHANDLE); /* either check may come first */
  fz_effect *e = NULL;
  if (want == ST_OK) { /* the kernel'th kernel effect */
    uint64_t seen = 0;
    for (unsigned i = 0; i < m->neff && !e; i++)
      if (m->eff[i].kind == E_FILL || m->eff[i].kind == E_INDEX3D || m->eff[i].kind == E_EMPTY)
        if (seen++ == kernel)
          e = &m->eff[i];
  }
  fz_effect ne = e ? *e : (fz_effect){.kind = E_EMPTY};
  kargs a = {0};
  if (e && e->kind != E_EMPTY) {
    uint32_t grid[3], block[3];
    int k = e->kind == E_FILL ? KERN_FILL : KERN_INDEX3D;
    fz_effect t = {0};
    /* new arguments: a buffer of the graph's runtime; index3d keeps its geometry */
    if (!kernel_args(m->o.rt, k, &t, &a, grid, block))
      return;
    if (k == KERN_INDEX3D) {
      uint64_t per = (uint64_t)e->block[0] * e->block[1] * e->block[2];
      uint64_t bytes = 12 * per * e->grid[0] * e->grid[1] * e->grid[2];
      if (bytes > W.buf[t.dst].size)
        return;
      t.doff = fz_below((W.buf[t.dst].size - bytes) / 4 + 1) * 4;
      a.ptr = W.buf[t.dst].addr + t.doff;
      memcpy(t.grid, e->grid, sizeof t.grid);
      memcpy(t.block, e->block, sizeof t.block);
    }
    ne.dst = t.dst;
    ne.dst_bits = t.dst_bits;
    ne.doff = t.doff;
    ne.n = t.n;
    ne.value = t.value;
  }
  if (CALL("graph_set_kernel_args",
           T->graph_set_kernel_args(RT(r), (t4a_graph){g.bits}, kernel,
                                    e && e->kind != E_EMPTY ? a.argv : NULL),
           want) != T4A_OK ||
      !e)
    return;
  if (e->kind != E_EMPTY) {
    W.buf[e->dst].kernel_refs--;
    W.buf[ne.dst].kernel_refs++;
  }
  *e = ne;
}

void fz_op_graph_info(void) {
  fz_arg g = pick_graph();
  fz_arg r = rt_for(g, graph_owner(g));
  bool owned = owns(r, g, graph_owner(g));
  if (owned && fz_chance(32)) {
    fz_trace("graph_release");
    release_graph(g.slot);
    return;
  }
  if (!owned && fz_chance(64)) {
    fz_trace("graph_release (bad)");
    CALL("graph_release", T->graph_release(RT(r), (t4a_graph){g.bits}), ST(T4A_EHANDLE));
    return;
  }
  fz_trace("graph_info");
  t4a_graph_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
  uint32_t want = (owned ? 0 : ST(T4A_EHANDLE)) | (i.struct_size == 4 ? ST(T4A_EINVAL) : 0);
  if (CALL("graph_info", T->graph_info(RT(r), (t4a_graph){g.bits}, &i), want ? want : ST_OK) != 0)
    return;
  const fz_graph *m = &W.graph[g.slot];
  if (i.kernels != m->kernels || i.copies != m->copies || i.replays != m->replays)
    fz_finding("graph_info: %llu kernels, %llu copies, %llu replays; the model: %u, %u, %u",
               (unsigned long long)i.kernels, (unsigned long long)i.copies,
               (unsigned long long)i.replays, m->kernels, m->copies, m->replays);
}
