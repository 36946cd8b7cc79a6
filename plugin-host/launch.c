/* plugin-host/launch.c -- launch and launch_ex on the host backend
 * (kernel.h): the CUDA plugin's checks (backend-core/geometry.c), then the
 * parameters copied at the call into a launch record (their sizes from the
 * kernel's descriptor, as CUDA copies them at cuLaunchKernel), queued as
 * one KERNEL operation, which the runtime's worker runs in order over the
 * pool (pool.c); or recorded into the capture in progress.
 *
 * launch_ex: clusters and cooperative launches need what the host does not
 * have (thread block clusters; grid-wide synchronisation in the prelude),
 * so they are T4A_EUNSUPPORTED, as on a CUDA device without them. The host
 * has one priority, 0 (runtime_info's range 0 .. 0, as runtime_create's
 * stream_priority): T4A_LAUNCH_PRIORITY with 0 is that priority, any other
 * is T4A_ERANGE; exec_flags is T4A_EXEC_GRAPHS only. Anything else is
 * launch. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "backend-core/geometry.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "common/str.h"
#include "plugin-host/host.h"

/* A record of f's launch with args copied; NULL (T4A_ENOMEM, or T4A_EINVAL
 * for a missing argument) with *rc. */
static t4a__hklaunch *make_record(const t4a__hfunc *f, const uint32_t grid[3],
                                  const uint32_t block[3], uint32_t shared, void **args,
                                  const char *what, int *rc) {
  const t4a_hk_kernel *k = f->k;
  if (k->param_count && !args) {
    *rc = t4a__fail(T4A_EINVAL, "%s: args is NULL and '%s' takes %u parameters; pass them", what,
                    f->name, k->param_count);
    return NULL;
  }
  for (uint32_t p = 0; p < k->param_count; p++)
    if (!args[p]) {
      *rc = t4a__fail(T4A_EINVAL, "%s: args[%u] of '%s' is NULL; pass a pointer to each parameter",
                      what, p, f->name);
      return NULL;
    }
  size_t head = (sizeof(t4a__hklaunch) + k->param_count * sizeof(void *) + 255) & ~(size_t)255;
  size_t bytes = head + f->args_bytes;
  t4a__hklaunch *r = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
  if (!r) {
    *rc = t4a__fail(T4A_ENOMEM, "%s: out of host memory for the launch's parameters", what);
    return NULL;
  }
  memset(r, 0, sizeof *r);
  r->k = k;
  r->l.grid = (t4a_hk_dim3){grid[0], grid[1], grid[2]};
  r->l.block = (t4a_hk_dim3){block[0], block[1], block[2]};
  r->l.dynamic_shared = shared;
  r->blocks = (uint64_t)grid[0] * grid[1] * grid[2];
  r->bytes = (bytes + 255) & ~(size_t)255;
  t4a__strcopy(r->name, sizeof r->name, f->name);
  void **argv = (void **)(r + 1);
  char *at = (char *)r + head;
  uint64_t off = 0;
  for (uint32_t p = 0; p < k->param_count; p++) {
    uint32_t a = k->param_aligns[p] < 8 ? 8 : k->param_aligns[p];
    off = (off + a - 1) & ~(uint64_t)(a - 1);
    memcpy(at + off, args[p], k->param_sizes[p]);
    argv[p] = at + off;
    off += k->param_sizes[p];
  }
  r->l.args = (void *const *)argv;
  r->l.stop = &r->stop;
  return r;
}

t4a__hklaunch *t4a__hklaunch_clone(const t4a__hklaunch *r) {
  t4a__hklaunch *c = aligned_alloc(256, (size_t)r->bytes);
  if (!c)
    return NULL;
  memcpy(c, r, (size_t)r->bytes);
  ptrdiff_t shift = (char *)c - (const char *)r; /* the argument pointers point into the copy */
  void **argv = (void **)(c + 1);
  for (uint32_t p = 0; p < c->k->param_count; p++)
    argv[p] = (char *)argv[p] + shift;
  c->l.args = (void *const *)argv;
  c->l.stop = &c->stop;
  return c;
}

int t4a__hklaunch_set_args(t4a__hklaunch *r, void **args, const char *what) {
  const t4a_hk_kernel *k = r->k;
  if (k->param_count && !args)
    return t4a__fail(T4A_EINVAL, "%s: args is NULL and '%s' takes %u parameters; pass them", what,
                     r->name, k->param_count);
  for (uint32_t p = 0; p < k->param_count; p++)
    if (!args[p])
      return t4a__fail(T4A_EINVAL, "%s: args[%u] of '%s' is NULL; pass a pointer to each parameter",
                       what, p, r->name);
  for (uint32_t p = 0; p < k->param_count; p++)
    memcpy(r->l.args[p], args[p], k->param_sizes[p]);
  return T4A_OK;
}

/* Checks f's launch on rt and queues (or records) it. */
static int launch(t4a__hrt *rt, t4a_function fh, const uint32_t grid[3], const uint32_t block[3],
                  uint32_t shared, void **args, const char *what) {
  t4a__hfunc *f;
  int rc = t4a__hfunc_get(rt, fh, what, &f);
  if (rc)
    return rc;
  t4a__limits lim = {&t4a__host_device, f->name, (int32_t)f->k->max_threads,
                     (int32_t)f->max_dynamic};
  if ((rc = t4a__check_launch(&lim, grid, block, shared, what)))
    return rc;
  t4a__hklaunch *r = make_record(f, grid, block, shared, args, what, &rc);
  if (!r)
    return rc;
  if (rt->checked) {
    const t4a__hmodule *m = t4a__htable_at(&rt->mods, f->module);
    r->checked = true;
    r->fault_here = m->m->fault_here; /* NULL: faults are the process's (no such module here) */
  }
  t4a__op op = {.kind = T4A__OP_KERNEL, .rows = 1};
  op.u.kernel = r;
  if (rt->cap.active) { /* the graph owns the record */
    t4a__capture_note(rt, &op, fh.bits, 0);
    if (rt->cap.error) /* not recorded: the capture has failed, graph_end says so */
      free(r);
    return T4A_OK;
  }
  op.fill = 1; /* queued: the worker frees the record once it ran */
  t4a__queue_push(&rt->q, &op);
  rt->c.launches++;
  return T4A_OK;
}

int t4a__slot_launch(t4a_runtime h, t4a_function fh, const t4a_launch_config *cfg, void **args) {
  int rc = t4a__check_struct(cfg, T4A_LAUNCH_CONFIG_V1_0_SIZE, "t4a_launch_config");
  t4a__hrt *rt;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock(h, "launch", &rt)))
    return rc;
  rc = launch(rt, fh, cfg->grid, cfg->block, cfg->shared_bytes, args, "launch");
  t4a__hrt_unlock(rt);
  return rc;
}

/* What launch_ex asks for beyond launch, against what the host has. */
static int check_ex(t4a__hrt *rt, t4a_function fh, const t4a_launch_ex_config *c,
                    const char *what) {
  t4a__hfunc *f;
  int rc = t4a__hfunc_get(rt, fh, what, &f);
  if (rc)
    return rc;
  t4a__limits lim = {&t4a__host_device, f->name, (int32_t)f->k->max_threads,
                     (int32_t)f->max_dynamic};
  if ((rc = t4a__check_launch(&lim, c->grid, c->block, c->shared_bytes, what)))
    return rc;
  if (t4a__has_cluster(c))
    return t4a__fail(T4A_EUNSUPPORTED,
                     "%s: the host backend has no thread block clusters (runtime_info's "
                     "exec_flags lack T4A_EXEC_CLUSTERS); launch without clusters",
                     what);
  if (c->flags & T4A_LAUNCH_CLUSTER_NON_PORTABLE)
    return t4a__fail(T4A_EINVAL,
                     "%s: T4A_LAUNCH_CLUSTER_NON_PORTABLE without a cluster; set "
                     "cluster or drop the flag",
                     what);
  if (c->flags & T4A_LAUNCH_COOPERATIVE)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "%s: the host backend has no cooperative launches (no grid-wide "
                     "synchronisation; runtime_info's exec_flags lack T4A_EXEC_COOPERATIVE); "
                     "launch without T4A_LAUNCH_COOPERATIVE",
                     what);
  if ((c->flags & T4A_LAUNCH_PRIORITY) && c->priority != 0)
    return t4a__fail(T4A_ERANGE,
                     "%s: priority %d is outside the device's range 0 (highest) .. 0 (lowest): "
                     "the host's queues have one priority; pass 0 or drop T4A_LAUNCH_PRIORITY",
                     what, (int)c->priority);
  return T4A_OK;
}

int t4a__slot_launch_ex(t4a_runtime h, t4a_function fh, const t4a_launch_ex_config *cfg,
                        void **args) {
  int rc = t4a__check_launch_ex_config(cfg, "launch_ex");
  t4a__hrt *rt;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock(h, "launch_ex", &rt)))
    return rc;
  if (!(rc = check_ex(rt, fh, cfg, "launch_ex")))
    rc = launch(rt, fh, cfg->grid, cfg->block, cfg->shared_bytes, args, "launch_ex");
  t4a__hrt_unlock(rt);
  return rc;
}

int t4a__slot_occupancy_max_active_clusters(t4a_runtime h, t4a_function fh,
                                            const t4a_launch_ex_config *cfg, uint32_t *clusters) {
  const char *what = "occupancy_max_active_clusters";
  if (!clusters)
    return t4a__fail(T4A_EINVAL, "%s: clusters is NULL; pass a pointer", what);
  int rc = t4a__check_launch_ex_config(cfg, what);
  t4a__hrt *rt;
  t4a__hfunc *f;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  if (!(rc = t4a__hfunc_get(rt, fh, what, &f))) {
    t4a__limits lim = {&t4a__host_device, f->name, (int32_t)f->k->max_threads,
                       (int32_t)f->max_dynamic};
    if (!(rc = t4a__check_launch(&lim, cfg->grid, cfg->block, cfg->shared_bytes, what)))
      rc = !t4a__has_cluster(cfg)
               ? t4a__fail(T4A_EINVAL,
                           "%s: cfg->cluster is not set; give the cluster shape to ask about", what)
               : t4a__fail(T4A_EUNSUPPORTED,
                           "%s: the host backend has no thread block clusters (runtime_info's "
                           "exec_flags lack T4A_EXEC_CLUSTERS)",
                           what);
  }
  t4a__hrt_unlock(rt);
  return rc;
}
