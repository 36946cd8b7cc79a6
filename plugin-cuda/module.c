/* plugin-cuda/module.c -- per-runtime modules, their functions, and launch.
 *
 * Each runtime loads its own module from an artifact: unloading it in one
 * runtime never affects another that loaded the same artifact. Unloading
 * makes the module's functions stale at once; the driver module itself is
 * retired behind the work already enqueued (kernels may still be running).
 * Launch geometry is checked against the device's and the kernel's limits
 * before the driver sees it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/str.h"
#include "plugin-cuda/artifact.h"
#include "plugin-cuda/runtime.h"

/* Takes a free slot of a growable table; returns its index or -1. */
#define TAKE_SLOT(rt, arr, count, cap, freehd, type, idx)                                          \
  do {                                                                                             \
    if ((rt)->freehd) {                                                                            \
      idx = (int64_t)(rt)->freehd - 1;                                                             \
      (rt)->freehd = (rt)->arr[idx].next_free;                                                     \
    } else {                                                                                       \
      idx = -1;                                                                                    \
      if ((rt)->count == (rt)->cap) {                                                              \
        uint32_t n_ = (rt)->cap ? (rt)->cap * 2 : 8;                                               \
        type *p_ = n_ <= T4A__MAX_INDEX ? realloc((rt)->arr, n_ * sizeof *p_) : NULL;              \
        if (p_) {                                                                                  \
          (rt)->arr = p_;                                                                          \
          (rt)->cap = n_;                                                                          \
        }                                                                                          \
      }                                                                                            \
      if ((rt)->count < (rt)->cap) {                                                               \
        idx = (rt)->count++;                                                                       \
        (rt)->arr[idx] = (type){0};                                                                \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static int module_of(t4a__runtime *rt, t4a_module h, const char *what, t4a__module **out) {
  if (t4a__h_tag(h.bits) != T4A__TAG_MODULE)
    return t4a__fail(h.bits ? T4A_EHANDLE : T4A_EINVAL,
                     "%s: %s is not a module handle; pass one from module_load", what,
                     h.bits ? "the handle" : "a null handle");
  if (t4a__h_rt(h.bits) != rt->index)
    return t4a__fail(T4A_EHANDLE,
                     "%s: the module belongs to runtime #%u, not #%u; load the "
                     "artifact into this runtime",
                     what, t4a__h_rt(h.bits), rt->index);
  uint32_t i = t4a__h_index(h.bits);
  if (i >= rt->mod_count || !rt->mods[i].live || rt->mods[i].gen != t4a__h_gen(h.bits))
    return t4a__fail(T4A_EHANDLE, "%s: the module was unloaded; load it again", what);
  *out = &rt->mods[i];
  return T4A_OK;
}

static int function_of(t4a__runtime *rt, t4a_function h, const char *what, t4a__function **out) {
  if (t4a__h_tag(h.bits) != T4A__TAG_FUNCTION)
    return t4a__fail(h.bits ? T4A_EHANDLE : T4A_EINVAL,
                     "%s: %s is not a function handle; pass one from function_get", what,
                     h.bits ? "the handle" : "a null handle");
  if (t4a__h_rt(h.bits) != rt->index)
    return t4a__fail(T4A_EHANDLE,
                     "%s: the function belongs to runtime #%u, not #%u; look it up "
                     "in this runtime's module",
                     what, t4a__h_rt(h.bits), rt->index);
  uint32_t i = t4a__h_index(h.bits);
  if (i >= rt->func_count || !rt->funcs[i].live || rt->funcs[i].gen != t4a__h_gen(h.bits))
    return t4a__fail(T4A_EHANDLE,
                     "%s: the function's module was unloaded; load it again and "
                     "look the function up",
                     what);
  *out = &rt->funcs[i];
  return T4A_OK;
}

int t4a__slot_module_load(t4a_runtime h, t4a_artifact a, t4a_module *out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "module_load: out is NULL; pass a pointer");
  out->bits = 0;
  t4a__code code;
  int rc = t4a__artifact_get(a, "module_load", &code);
  if (rc)
    return rc;
  t4a__runtime *rt;
  if ((rc = t4a__rt_lock(h, "module_load", &rt))) {
    t4a__artifact_put(&code);
    return rc;
  }
  if (code.kind == T4A_ARTIFACT_PTX && code.nvrtc_version > t4a__be.driver_version) {
    rc = t4a__fail(T4A_EUNSUPPORTED,
                   "module_load: '%s' is PTX from NVRTC %d.%d, newer than the driver (CUDA "
                   "%d.%d) can load; compile to CUBIN or update the driver",
                   code.name, code.nvrtc_version / 1000, code.nvrtc_version % 1000 / 10,
                   t4a__be.driver_version / 1000, t4a__be.driver_version % 1000 / 10);
    goto out;
  }
  int64_t i;
  TAKE_SLOT(rt, mods, mod_count, mod_cap, mod_free, t4a__module, i);
  if (i < 0) {
    rc = t4a__fail(T4A_ENOMEM, "module_load: out of host memory for modules");
    goto out;
  }
  t4a__CUcontext saved;
  t4a__CUmodule mod = NULL;
  t4a__CUresult r = T4A__CUDA_ERROR_INVALID_CONTEXT;
  if ((rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
    r = t4a__be.cu.cuModuleLoadData(&mod, code.data);
    t4a__ctx_leave(rt, saved);
    if (r != T4A__CUDA_SUCCESS)
      rc = t4a__rt_cu_fail(rt, r, "module_load: the driver refused '%s'%s", code.name,
                           r == T4A__CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                               ? " (its PTX is newer than the driver; compile to CUBIN or "
                                 "update the driver)"
                           : r == T4A__CUDA_ERROR_NO_BINARY_FOR_GPU
                               ? " (no code for this GPU's architecture; build for it)"
                               : "");
  }
  t4a__module *m = &rt->mods[i];
  if (rc) {
    m->next_free = rt->mod_free;
    rt->mod_free = (uint32_t)i + 1;
    goto out;
  }
  m->live = true;
  m->gen = t4a__gen_next(m->gen);
  m->mod = mod;
  t4a__strcopy(m->name, sizeof m->name, code.name);
  out->bits = t4a__h_make(T4A__TAG_MODULE, rt->index, (uint32_t)i, m->gen);
out:
  t4a__rt_unlock(rt);
  t4a__artifact_put(&code);
  return rc;
}

int t4a__slot_module_unload(t4a_runtime h, t4a_module mh) {
  t4a__runtime *rt;
  t4a__module *m;
  int rc = t4a__rt_lock_any(h, "module_unload", &rt);
  if (rc)
    return rc;
  if ((rc = module_of(rt, mh, "module_unload", &m)))
    goto out;
  uint32_t mi = (uint32_t)(m - rt->mods);
  for (uint32_t i = 0; i < rt->func_count; i++) {
    t4a__function *f = &rt->funcs[i];
    if (f->live && f->module == mi) {
      f->live = false;
      f->gen = t4a__gen_next(f->gen);
      f->next_free = rt->func_free;
      rt->func_free = i + 1;
    }
  }
  t4a__rt_progress(rt);
  uint64_t seq = rt->dirty ? rt->next_seq : rt->sealed_seq; /* the work that may use it */
  if (seq > rt->completed_seq || rt->fault)
    rc = t4a__retire_module(rt, seq, m->mod);
  else
    rc = t4a__be.cu.cuModuleUnload(m->mod) == T4A__CUDA_SUCCESS
             ? T4A_OK
             : t4a__fail(T4A_EDRIVER, "module_unload: cuModuleUnload failed");
  m->live = false;
  m->gen = t4a__gen_next(m->gen);
  m->next_free = rt->mod_free;
  rt->mod_free = mi + 1;
out:
  t4a__rt_unlock(rt);
  return rc;
}

void t4a__modules_release_all(t4a__runtime *rt) {
  for (uint32_t i = 0; i < rt->mod_count; i++)
    if (rt->mods[i].live)
      t4a__released(rt, t4a__be.cu.cuModuleUnload(rt->mods[i].mod), rt->mods[i].mod,
                    "cuModuleUnload");
}

static int fattr(t4a__runtime *rt, t4a__CUfunction_attribute a, t4a__CUfunction f, int32_t *v) {
  int x = 0;
  t4a__CUresult r = t4a__be.cu.cuFuncGetAttribute(&x, a, f);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__rt_cu_fail(rt, r, "cuFuncGetAttribute(%u) failed", a);
  *v = x;
  return T4A_OK;
}

int t4a__slot_function_get(t4a_runtime h, t4a_module mh, const char *name, t4a_function *out) {
  if (!out || !name || !*name)
    return t4a__fail(T4A_EINVAL, "function_get: %s; pass a kernel name and a pointer",
                     out ? "the name is NULL or empty" : "out is NULL");
  out->bits = 0;
  t4a__runtime *rt;
  t4a__module *m;
  int rc = t4a__rt_lock(h, "function_get", &rt);
  if (rc)
    return rc;
  if ((rc = module_of(rt, mh, "function_get", &m)))
    goto out;
  t4a__CUfunction fn = NULL;
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUresult r = t4a__be.cu.cuModuleGetFunction(&fn, m->mod, name);
  int32_t max_threads = 0, shared = 0, dynamic = 0;
  if (r == T4A__CUDA_ERROR_NOT_FOUND)
    rc = t4a__fail_native(T4A_ENOTFOUND, r, "CUDA_ERROR_NOT_FOUND",
                          "function_get: no kernel '%.128s' in module '%s'; check the name "
                          "(extern \"C\" avoids C++ name mangling)",
                          name, m->name);
  else if (r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "function_get: cuModuleGetFunction('%.128s') failed", name);
  else if (!(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn, &max_threads)) &&
           !(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn, &shared)))
    rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn, &dynamic);
  t4a__ctx_leave(rt, saved);
  if (rc)
    goto out;
  int64_t i;
  TAKE_SLOT(rt, funcs, func_count, func_cap, func_free, t4a__function, i);
  if (i < 0) {
    rc = t4a__fail(T4A_ENOMEM, "function_get: out of host memory for functions");
    goto out;
  }
  t4a__function *f = &rt->funcs[i];
  f->live = true;
  f->gen = t4a__gen_next(f->gen);
  f->fn = fn;
  f->module = (uint32_t)(m - rt->mods);
  f->max_threads = max_threads;
  f->static_shared = shared;
  f->max_dynamic = dynamic;
  t4a__strcopy(f->name, sizeof f->name, name);
  out->bits = t4a__h_make(T4A__TAG_FUNCTION, rt->index, (uint32_t)i, f->gen);
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_function_attributes(t4a_runtime h, t4a_function fh, t4a_function_attributes *out) {
  int rc = t4a__check_struct(out, T4A_FUNCTION_ATTRIBUTES_V1_0_SIZE, "t4a_function_attributes");
  t4a__runtime *rt;
  t4a__function *f;
  if (rc || (rc = t4a__rt_lock(h, "function_attributes", &rt)))
    return rc;
  t4a_function_attributes a = {.struct_size = sizeof a};
  if (!(rc = function_of(rt, fh, "function_attributes", &f)) &&
      !(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->fn,
                   &a.max_threads_per_block)) &&
      !(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_NUM_REGS, f->fn, &a.num_registers)) &&
      !(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f->fn, &a.static_shared_bytes)) &&
      !(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f->fn,
                   &a.max_dynamic_shared_bytes)) &&
      !(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f->fn, &a.local_bytes)) &&
      !(rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_PTX_VERSION, f->fn, &a.ptx_version)))
    rc = fattr(rt, T4A__CU_FUNC_ATTRIBUTE_BINARY_VERSION, f->fn, &a.binary_version);
  t4a__rt_unlock(rt);
  if (rc == T4A_OK)
    t4a__fill_struct(out, &a, sizeof a);
  return rc;
}

int t4a__slot_function_set_max_dynamic_shared(t4a_runtime h, t4a_function fh, uint32_t bytes) {
  t4a__runtime *rt;
  t4a__function *f;
  int rc = t4a__rt_lock(h, "function_set_max_dynamic_shared", &rt);
  if (rc)
    return rc;
  if ((rc = function_of(rt, fh, "function_set_max_dynamic_shared", &f)))
    goto out;
  int64_t limit =
      (int64_t)t4a__be.devices[rt->ordinal].info.max_shared_per_block_optin - f->static_shared;
  if ((int64_t)bytes > limit) {
    rc = t4a__fail(T4A_EINVAL,
                   "function_set_max_dynamic_shared: %u bytes exceeds the device's "
                   "opt-in limit of %lld for '%s' (after %d static); ask for less",
                   bytes, (long long)limit, f->name, (int)f->static_shared);
    goto out;
  }
  t4a__CUresult r = t4a__be.cu.cuFuncSetAttribute(
      f->fn, T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
  if (r != T4A__CUDA_SUCCESS)
    rc = t4a__rt_cu_fail(rt, r, "function_set_max_dynamic_shared: cuFuncSetAttribute failed");
  else
    f->max_dynamic = (int32_t)bytes;
out:
  t4a__rt_unlock(rt);
  return rc;
}

static int check_geometry(const t4a__runtime *rt, const t4a__function *f,
                          const t4a_launch_config *c) {
  const t4a_device_info *d = &t4a__be.devices[rt->ordinal].info;
  static const char axis[3] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; i++) {
    if (c->grid[i] == 0 || c->grid[i] > (uint32_t)d->max_grid_dim[i])
      return t4a__fail(T4A_EINVAL, "launch: grid.%c = %u is outside 1..%d; fix the grid of '%s'",
                       axis[i], c->grid[i], (int)d->max_grid_dim[i], f->name);
    if (c->block[i] == 0 || c->block[i] > (uint32_t)d->max_block_dim[i])
      return t4a__fail(T4A_EINVAL, "launch: block.%c = %u is outside 1..%d; fix the block of '%s'",
                       axis[i], c->block[i], (int)d->max_block_dim[i], f->name);
  }
  uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
  if (threads > (uint64_t)f->max_threads)
    return t4a__fail(T4A_EINVAL,
                     "launch: a block of %llu threads (%u x %u x %u) exceeds the %d that '%s' "
                     "allows; use smaller blocks",
                     (unsigned long long)threads, c->block[0], c->block[1], c->block[2],
                     (int)f->max_threads, f->name);
  if (c->shared_bytes > (uint32_t)f->max_dynamic)
    return t4a__fail(T4A_EINVAL,
                     "launch: %u bytes of dynamic shared memory exceed the %d allowed for '%s'; "
                     "ask for less or raise the limit with function_set_max_dynamic_shared",
                     c->shared_bytes, (int)f->max_dynamic, f->name);
  return T4A_OK;
}

int t4a__slot_launch(t4a_runtime h, t4a_function fh, const t4a_launch_config *cfg, void **args) {
  int rc = t4a__check_struct(cfg, T4A_LAUNCH_CONFIG_V1_0_SIZE, "t4a_launch_config");
  t4a__runtime *rt;
  t4a__function *f;
  if (rc || (rc = t4a__rt_lock(h, "launch", &rt)))
    return rc;
  if ((rc = function_of(rt, fh, "launch", &f)) || (rc = check_geometry(rt, f, cfg)))
    goto out;
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved)))
    goto out;
  t4a__CUresult r = t4a__be.cu.cuLaunchKernel(f->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2],
                                              cfg->block[0], cfg->block[1], cfg->block[2],
                                              cfg->shared_bytes, rt->stream, args, NULL);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "launch of '%s' failed", f->name);
    goto out;
  }
  rt->c.launches++;
  rt->dirty = true;
out:
  t4a__rt_unlock(rt);
  return rc;
}

int t4a__slot_raw_function(t4a_runtime h, t4a_function fh, void **cufunction) {
  if (!cufunction)
    return t4a__fail(T4A_EINVAL, "raw_function: cufunction is NULL; pass a pointer");
  t4a__runtime *rt;
  t4a__function *f;
  int rc = t4a__rt_lock(h, "raw_function", &rt);
  if (rc)
    return rc;
  if ((rc = function_of(rt, fh, "raw_function", &f)) == T4A_OK)
    *cufunction = f->fn;
  t4a__rt_unlock(rt);
  return rc;
}
