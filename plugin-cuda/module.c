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

#include "backend-core/kinds.h"
#include "common/str.h"
#include "plugin-cuda/artifact.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

static int module_of(t4a__runtime *rt, t4a_module h, const char *what, t4a__module **out) {
  int rc;
  *out = t4a__htable_find(&rt->code.mods, &t4a__module_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

int t4a__function_get(t4a__runtime *rt, t4a_function h, const char *what, t4a__function **out) {
  int rc;
  *out = t4a__htable_find(&rt->code.funcs, &t4a__function_kind, rt->slot.index, h.bits, what, &rc);
  return rc;
}

void t4a__modules_init(t4a__runtime *rt) {
  t4a__htable_init(&rt->code.mods, sizeof(t4a__module));
  t4a__htable_init(&rt->code.funcs, sizeof(t4a__function));
}

/* A retired module whose kernels completed (completion.c calls this):
 * cuModuleUnload acts on the current context, which destroy (`final`) has
 * entered already. */
static void retired(t4a__runtime *rt, const t4a__retire *r, bool final) {
  if (final) {
    t4a__released(rt, t4a__be.cu.cuModuleUnload((t4a__CUmodule)r->ptr), r->ptr, "cuModuleUnload");
    return;
  }
  t4a__CUcontext saved;
  if (t4a__ctx_enter(rt, &saved) != T4A_OK) {
    t4a__keep(r->ptr);
    return;
  }
  if (t4a__be.cu.cuModuleUnload((t4a__CUmodule)r->ptr) != T4A__CUDA_SUCCESS)
    t4a__keep(r->ptr);
  t4a__ctx_leave(rt, saved);
}

void t4a__modules_fini(t4a__runtime *rt, bool idle) {
  t4a__modules *c = &rt->code;
  if (!idle) /* kernels may still run: keep the modules, and what lists them */
    return;
  for (uint32_t i = 0; i < c->mods.count; i++) {
    const t4a__module *m = t4a__htable_at(&c->mods, i);
    if (m->h.live)
      t4a__released(rt, t4a__be.cu.cuModuleUnload(m->mod), m->mod, "cuModuleUnload");
  }
  t4a__htable_fini(&c->mods);
  t4a__htable_fini(&c->funcs);
}

int t4a__slot_module_load(t4a_runtime h, t4a_artifact a, t4a_module *out) {
  int init = t4a__require_init(); /* T4A_ENOTINIT before init, as every runtime slot */
  if (init)
    return init;
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
  if (code.kind == T4A_ARTIFACT_PTX && code.compiler_version > t4a__be.driver_version) {
    rc = t4a__fail(T4A_EUNSUPPORTED,
                   "module_load: '%s' is PTX from NVRTC %d.%d, newer than the driver (CUDA "
                   "%d.%d) can load; compile to CUBIN or update the driver",
                   code.name, code.compiler_version / 1000, code.compiler_version % 1000 / 10,
                   t4a__be.driver_version / 1000, t4a__be.driver_version % 1000 / 10);
    goto out;
  }
  uint32_t i;
  if ((rc = t4a__htable_take(&rt->code.mods, "module_load", &i)))
    goto out;
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
  if (rc) {
    t4a__htable_untake(&rt->code.mods, i);
    goto out;
  }
  t4a__module *m = t4a__htable_at(&rt->code.mods, i);
  m->mod = mod;
  t4a__strcopy(m->name, sizeof m->name, code.name);
  out->bits = t4a__htable_publish(&rt->code.mods, i, &t4a__module_kind, rt->slot.index);
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
  uint32_t mi = t4a__h_index(mh.bits);
  for (uint32_t i = 0; i < rt->code.funcs.count; i++) {
    const t4a__function *f = t4a__htable_at(&rt->code.funcs, i);
    if (f->h.live && f->module == mi)
      t4a__htable_release(&rt->code.funcs, i);
  }
  t4a__rt_progress(rt);
  uint64_t seq = t4a__epoch_current(&rt->done); /* the work that may use it */
  if (seq > rt->done.completed_seq || rt->fault) {
    t4a__retire r = {seq, retired, m->mod, 0, 0};
    rc = t4a__retire_push(rt, &r);
  } else { /* cuModuleUnload acts on the current context: make it the module's */
    t4a__CUcontext saved;
    if ((rc = t4a__ctx_enter(rt, &saved)) == T4A_OK) {
      t4a__CUresult r = t4a__be.cu.cuModuleUnload(m->mod);
      t4a__ctx_leave(rt, saved);
      if (r != T4A__CUDA_SUCCESS)
        rc = t4a__rt_cu_fail(rt, r, "module_unload: cuModuleUnload failed; the module is kept");
    }
    if (rc) /* its functions are gone and the handle goes: the module is kept, never reused */
      t4a__keep(m->mod);
  }
  t4a__htable_release(&rt->code.mods, mi);
out:
  t4a__rt_unlock(rt);
  return rc;
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
  uint32_t i;
  if ((rc = t4a__htable_take(&rt->code.funcs, "function_get", &i)))
    goto out;
  t4a__function *f = t4a__htable_at(&rt->code.funcs, i);
  f->fn = fn;
  f->module = t4a__h_index(mh.bits);
  f->max_threads = max_threads;
  f->static_shared = shared;
  f->max_dynamic = dynamic;
  t4a__strcopy(f->name, sizeof f->name, name);
  out->bits = t4a__htable_publish(&rt->code.funcs, i, &t4a__function_kind, rt->slot.index);
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
  if (!(rc = t4a__function_get(rt, fh, "function_attributes", &f)) &&
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
