/* tests/fakecuda/fake_module.c -- modules, functions and launches.
 *
 * A module's kernels are the entries of its image whose names the fake
 * implements (fake_kernels.c). As in CUDA: a module belongs to the context
 * it was loaded in and is unloaded from it (the current context); a launch
 * needs the function's context current and a stream of that context, and
 * its geometry within the device's and the function's limits (.maxntid).
 * Unloading a module while launches of its kernels are still queued is a
 * violation, and those kernels then fault their device instead of running
 * freed code. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fakecuda/fake_internal.h"

/* Size of a module image: PTX text up to its NUL, an ELF file (CUBIN) from
 * its section header table, a fatbin from its header; 0 if unknown. */
static size_t image_size(const void *image) {
  const unsigned char *b = image;
  if (!b)
    return 0;
  if (memcmp(b,
             "\x7f"
             "ELF",
             4) == 0 &&
      b[4] == 2) { /* ELF64 */
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, b + 0x28, 8);
    memcpy(&shentsize, b + 0x3a, 2);
    memcpy(&shnum, b + 0x3c, 2);
    return (size_t)(shoff + (uint64_t)shentsize * shnum);
  }
  if (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba) { /* fatbin */
    uint16_t header;
    uint64_t body;
    memcpy(&header, b + 6, 2);
    memcpy(&body, b + 8, 8);
    return (size_t)header + (size_t)body;
  }
  const char *t = image;
  if (strncmp(t, "//", 2) == 0 || strncmp(t, ".version", 8) == 0 || t[0] == '\n')
    return strlen(t);
  return 0;
}

/* Whether the image names kernel `name`: a PTX ".entry NAME(", or a
 * binary's NUL-terminated symbol. */
static bool has_kernel(const char *text, size_t size, bool ptx, const char *name) {
  size_t n = strlen(name);
  for (const char *p = text; p + n <= text + size;) {
    const char *hit = memmem(p, (size_t)(text + size - p), name, n);
    if (!hit)
      return false;
    int after = hit + n < text + size ? hit[n] : 0;
    if (ptx ? hit >= text + 7 && strncmp(hit - 7, ".entry ", 7) == 0 &&
                  (after == '(' || after == ' ' || after == '\n')
            : after == '\0' && (hit == text || hit[-1] == '\0'))
      return true;
    p = hit + n;
  }
  return false;
}

static R module_get(t4a__CUmodule m, const char *what) {
  return fake_obj_check(m, OBJ_MODULE, what);
}

static R function_get(t4a__CUfunction f, const char *what) {
  return fake_obj_check(f, OBJ_FUNCTION, what);
}

/* Lazy loading (CUDA's default): a kernel's code is loaded on its first use,
 * a lookup, an attribute query or a launch, and loading may synchronise the
 * context, like cuModuleLoadData. Under compute-sanitizer on an H200 a first
 * cuModuleGetFunction + cuLaunchKernel of a kernel while t4a_spin waited for
 * the calling thread never returned. Which first use loads is the driver's
 * choice, so every one of them is a violation while a kernel on the device
 * waits for the host; the attribute query and the launch mark the code
 * loaded (a lookup alone may not). Called with the lock held. */
void fake_function_load(t4a__CUfunction f, const char *what, bool loads) {
  if (f->loaded)
    return;
  if (fake_host_waiters[f->o.ctx->device])
    fake_violation("%s: first use of '%s' on device %d while %u kernel(s) there wait for the "
                   "host (t4a_spin): lazy loading may synchronise the context to load it, and "
                   "that never returns; look kernels up and query them before closing a gate",
                   what, f->k->name, f->o.ctx->device, fake_host_waiters[f->o.ctx->device]);
  if (loads)
    f->loaded = true;
}

R fake_sym_cuModuleLoadData(t4a__CUmodule *m, const void *image) {
  FAKE_ENTER("cuModuleLoadData");
  R r = fake_need_ctx();
  if (r)
    return r;
  const char *text = image;
  size_t size = image_size(image);
  if (!m || !size)
    return T4A__CUDA_ERROR_INVALID_IMAGE;
  t4a__CUmodule mod = calloc(1, sizeof *mod);
  if (!mod)
    return T4A__CUDA_ERROR_OUT_OF_MEMORY;
  struct CUctx_st *ctx = fake_current();
  mod->device = ctx->device;
  bool ptx = size == strlen(text);
  mod->ptx_arch = 90; /* binaries: built for the device (compute capability 9.0) */
  const char *target = ptx ? strstr(text, ".target sm_") : NULL;
  if (target)
    mod->ptx_arch = atoi(target + 11);
  for (unsigned k = 0; k < fake_kernel_count && mod->nfuncs < MODULE_MAX_FUNCS; k++)
    if (has_kernel(text, size, ptx, fake_kernels[k].name))
      mod->funcs[mod->nfuncs++] = (struct CUfunc_st){.k = &fake_kernels[k], .module = mod};
  for (unsigned k = 0; k < fake_ext_kernel_count && mod->nfuncs < MODULE_MAX_FUNCS; k++)
    if (has_kernel(text, size, ptx, fake_ext_kernels[k].name)) /* hook: fake_launch_ex.c's */
      mod->funcs[mod->nfuncs++] = (struct CUfunc_st){.k = &fake_ext_kernels[k], .module = mod};
  LOCK();
  if (fake_host_waiters[ctx->device])
    fake_violation("cuModuleLoadData on device %d while %u kernel(s) there wait for the host "
                   "(t4a_spin): the driver may synchronise the context to load code, and "
                   "that never returns; load modules before closing a gate",
                   ctx->device, fake_host_waiters[ctx->device]);
  fake_obj_register(&mod->o, OBJ_MODULE, ctx);
  for (unsigned i = 0; i < mod->nfuncs; i++) {
    fake_obj_register(&mod->funcs[i].o, OBJ_FUNCTION, ctx);
    mod->funcs[i].max_dynamic_shared = 48 * 1024;
  }
  fake_live[LIVE_MODULE]++;
  UNLOCK();
  *m = mod;
  return OK;
}

R fake_sym_cuModuleUnload(t4a__CUmodule m) {
  FAKE_ENTER_ON("cuModuleUnload", fake_object_device(m, OBJ_MODULE));
  LOCK();
  R r = module_get(m, "cuModuleUnload");
  if (!r && fake_current() != m->o.ctx) /* CUDA: it unloads from the current context */
    r = fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT,
                    "cuModuleUnload: the module is device %d's, the current context %s", m->device,
                    fake_current() ? "is another device's" : "is none");
  if (!r) {
    if (m->queued)
      fake_violation("cuModuleUnload while %u launch(es) of its kernels are still queued",
                     m->queued);
    m->o.dead = true;
    for (unsigned i = 0; i < m->nfuncs; i++)
      m->funcs[i].o.dead = true;
    fake_live[LIVE_MODULE]--;
  }
  UNLOCK();
  return r;
}

R fake_sym_cuModuleGetFunction(t4a__CUfunction *f, t4a__CUmodule m, const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  if (!f || !name)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = module_get(m, "cuModuleGetFunction");
  if (!r) {
    r = T4A__CUDA_ERROR_NOT_FOUND;
    for (unsigned i = 0; i < m->nfuncs && r; i++)
      if (strcmp(m->funcs[i].k->name, name) == 0) {
        *f = &m->funcs[i];
        fake_function_load(*f, "cuModuleGetFunction", false);
        r = OK;
      }
  }
  UNLOCK();
  return r;
}

R fake_sym_cuFuncGetAttribute(int *v, t4a__CUfunction_attribute a, t4a__CUfunction f) {
  FAKE_ENTER("cuFuncGetAttribute");
  if (!v)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  LOCK();
  R r = function_get(f, "cuFuncGetAttribute");
  if (!r)
    fake_function_load(f, "cuFuncGetAttribute", true);
  if (!r) {
    switch (a) {
    case T4A__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *v = f->k->max_threads ? f->k->max_threads : 1024;
      break;
    case T4A__CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 16; break;
    case T4A__CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = f->k->static_shared; break;
    case T4A__CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
    case T4A__CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = f->module->ptx_arch; break;
    case T4A__CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
    case T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dynamic_shared; break;
    default: r = T4A__CUDA_ERROR_INVALID_VALUE;
    }
  }
  UNLOCK();
  return r;
}

R fake_sym_cuFuncSetAttribute(t4a__CUfunction f, t4a__CUfunction_attribute a, int v) {
  FAKE_ENTER("cuFuncSetAttribute");
  LOCK();
  R r = function_get(f, "cuFuncSetAttribute");
  if (!r)
    fake_function_load(f, "cuFuncSetAttribute", true);
  if (!r && a != T4A__CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    r = fake_ext_func_attribute(f, a, v); /* hook: fake_launch_ex.c */
  else if (!r && (v < 0 || v > 232448 - f->k->static_shared))
    r = T4A__CUDA_ERROR_INVALID_VALUE;
  else if (!r)
    f->max_dynamic_shared = v;
  UNLOCK();
  return r;
}

/* The context a launch runs in is the function's and the stream's: the
 * real driver (580.159.04, CUDA 13.0, measured on an H200) launches with
 * another device's context current, or none, and leaves it alone. A driver
 * may also refuse that (FAKE_CUDA_LAUNCH_NEEDS_CONTEXT=1: a plain
 * CUDA_ERROR_INVALID_CONTEXT, not a misuse), which the plugin must handle
 * by making the context current and launching again. cuLaunchKernelEx
 * (fake_launch_ex.c) and cuEventRecord (fake_stream.c) follow the same
 * rules. */
R fake_launch_check(const char *what, t4a__CUfunction f, t4a__CUstream *sp, geometry *g,
                    void **params, void **extra) {
  R r;
  if ((r = function_get(f, what)) || (r = fake_stream_get(sp, what)))
    return r;
  t4a__CUstream s = *sp; /* resolved (a default stream handle is its stream) */
  if (f->o.ctx != s->o.ctx)
    return fake_misuse(T4A__CUDA_ERROR_INVALID_HANDLE,
                       "%s: '%s' is device %d's, the stream device %d's", what, f->k->name,
                       f->o.ctx->device, s->o.ctx->device);
  if ((r = fake_refuse_uncurrent(f->o.ctx)) || (r = fake_device_fault(f->o.ctx->device)))
    return r;
  fake_function_load(f, what, true);
  g->device = s->device;
  const unsigned *gr = g->grid, *b = g->block;
  unsigned long threads = (unsigned long)b[0] * b[1] * b[2];
  unsigned long limit = f->k->max_threads ? (unsigned long)f->k->max_threads : 1024ul;
  if (extra || !gr[0] || !gr[1] || !gr[2] || !b[0] || !b[1] || !b[2] || b[0] > 1024 ||
      b[1] > 1024 || b[2] > 64 || threads > limit || gr[0] > 2147483647u || gr[1] > 65535 ||
      gr[2] > 65535 || (int)g->shared > f->max_dynamic_shared || (f->k->nargs && !params))
    return T4A__CUDA_ERROR_INVALID_VALUE;
  return OK;
}

void fake_kernel_refs(op *o) {
  const kdesc *k = o->func->k;
  o->nrefs = 0;
  for (unsigned i = 0; i < k->nargs; i++) {
    void *p = NULL;
    if (!(k->pointers & (1u << i)))
      continue;
    memcpy(&p, o->args + k->offsets[i], sizeof p);
    alloc *a = fake_alloc_find(p, 1, MEM_DEVICE);
    if (!a)
      a = fake_alloc_find(p, 1, MEM_HOST);
    if (a && o->nrefs < OP_MAX_REFS) /* queued uses: frees under the launch show */
      o->refs[o->nrefs++] = a;
  }
}

R fake_launch_enqueue(t4a__CUfunction f, t4a__CUstream s, const geometry *g, void **params) {
  op o = {.kind = OP_KERNEL, .func = f, .geom = *g};
  for (unsigned i = 0; i < f->k->nargs; i++)
    memcpy(o.args + f->k->offsets[i], params[i], f->k->sizes[i]);
  fake_kernel_refs(&o);
  return fake_enqueue(s, &o); /* takes a queued use of f's module */
}

R fake_sym_cuLaunchKernel(t4a__CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, t4a__CUstream s, void **params,
                          void **extra) {
  FAKE_ENTER_STREAM("cuLaunchKernel", s);
  geometry g = {.grid = {gx, gy, gz}, .block = {bx, by, bz}, .shared = shared};
  LOCK();
  R r = fake_launch_check("cuLaunchKernel", f, &s, &g, params, extra);
  if (!r)
    r = fake_launch_enqueue(f, s, &g, params);
  UNLOCK();
  return r;
}

void fake_run_kernel(op *o) {
  kctx k = {.g = o->geom};
  LOCK();
  bool unloaded = o->func->module->o.dead;
  if (unloaded) {
    fake_violation("a launch of '%s' ran after its module was unloaded", o->func->k->name);
    fake_fault_device(o->geom.device, T4A__CUDA_ERROR_ILLEGAL_INSTRUCTION);
  }
  UNLOCK();
  if (unloaded)
    return;
  o->func->k->fn(o->args, &k);
  LOCK();
  for (unsigned i = 0; i < k.npins; i++)
    fake_alloc_unpin(k.pins[i]);
  UNLOCK();
}
