/* tools/conform_kernels.c -- the kernels the conformance checks run (a gate
 * that spins until the host opens it, a fill) and how the run gets them:
 * PTX text through artifact_from_bytes (no compiler needed; the header says
 * PTX text is accepted), else compiled through artifact_compile. A backend
 * with neither skips the checks that need code, saying why. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "common/ptx_kernels.h"
#include "tools/conform.h"

/* PTX the driver JITs (no compiler needed): common/ptx_kernels.h, the text
 * the runtime tests load too, proven on the GPU lane. */
static const char ptx[] = "//\n"
                          "// t4a-gpu conform: kernels\n"
                          "//\n" T4A__PTX_HEADER T4A__PTX_SPIN_AND_FILL;

/* The same kernels in CUDA C, and axpy for the compile check. The spin reads
 * through a volatile pointer, so every iteration loads the host's flag. */
static const char source[] =
    "extern \"C\" __global__ void t4a_spin(const volatile unsigned int *flag) {\n"
    "  while (*flag == 0) {\n"
    "  }\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void t4a_fill_u32(unsigned int *p, unsigned int value,\n"
    "                                          unsigned long long n) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    p[i] = value;\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void t4a_axpy_f32(unsigned long long n, float alpha,\n"
    "                                          const float *x, float *y) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = alpha * x[i] + y[i];\n"
    "}\n";

const char *t4a__cf_ptx(void) { return ptx; }
const char *t4a__cf_source(void) { return source; }

bool t4a__cf_need_code(t4a__cf *c) {
  if (c->code.bits)
    return true;
  t4a__cf_skip(c, "no way to run code: %s", c->code_why);
  return false;
}

bool t4a__cf_kernels_load(t4a__cf *c, t4a_runtime rt, t4a__cf_kernels *k) {
  memset(k, 0, sizeof *k);
  if (!t4a__cf_ok(c, c->t->module_load(rt, c->code, &k->module), "module_load (kernels)"))
    return false;
  if (!t4a__cf_track(c, T4A__CF_MODULE, rt.bits, k->module.bits, NULL))
    return false;
  return t4a__cf_ok(c, c->t->function_get(rt, k->module, "t4a_spin", &k->spin),
                    "function_get(t4a_spin)") &&
         t4a__cf_ok(c, c->t->function_get(rt, k->module, "t4a_fill_u32", &k->fill),
                    "function_get(t4a_fill_u32)");
}

int t4a__cf_fill(t4a__cf *c, t4a_runtime rt, const t4a__cf_kernels *k, t4a_buffer b, uint32_t value,
                 uint64_t n) {
  uint64_t addr = 0;
  int rc = c->t->buffer_device_address(rt, b, &addr);
  if (rc != T4A_OK)
    return rc;
  void *args[] = {&addr, &value, &n};
  uint64_t blocks = (n + 255) / 256;
  t4a_launch_config cfg = {.struct_size = sizeof cfg,
                           .grid = {blocks < 1      ? 1
                                    : blocks > 1024 ? 1024
                                                    : (uint32_t)blocks,
                                    1, 1},
                           .block = {256, 1, 1}};
  return c->t->launch(rt, k->fill, &cfg, args);
}

/* Whether artifact a loads into a runtime of the device and has both
 * kernels (a backend may take PTX bytes but not load them). Why not, in why. */
static bool loads(t4a__cf *c, t4a_artifact a, char *why, size_t size) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = {0};
  t4a_module m = {0};
  t4a_function f;
  int rc = t->runtime_create(c->device, NULL, &rt);
  const char *step = "runtime_create";
  if (rc == T4A_OK) {
    step = "module_load";
    if ((rc = t->module_load(rt, a, &m)) == T4A_OK) {
      step = "function_get(t4a_spin)";
      if ((rc = t->function_get(rt, m, "t4a_spin", &f)) == T4A_OK) {
        step = "function_get(t4a_fill_u32)";
        rc = t->function_get(rt, m, "t4a_fill_u32", &f);
      }
    }
  }
  if (rc != T4A_OK) {
    char detail[256];
    t4a__cf_last_error(t, detail, sizeof detail);
    snprintf(why, size, "%s: %s (%.200s)", step, t4a_status_name(rc), detail);
  }
  if (m.bits)
    t->module_unload(rt, m);
  if (rt.bits)
    t->runtime_destroy(rt, T4A_WAIT_FOREVER);
  return rc == T4A_OK;
}

void t4a__cf_code_setup(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  char ptx_why[300] = "the slot is NULL", why[300];
  c->code.bits = 0;
  if (!t->module_load || !t->function_get || !t->launch || !t->buffer_device_address ||
      !t->module_unload || !t->artifact_release) {
    snprintf(c->code_why, sizeof c->code_why,
             "module_load, function_get, launch, buffer_device_address, module_unload or "
             "artifact_release is NULL");
    return;
  }
  if (t->artifact_from_bytes) {
    t4a_artifact a = {0};
    int rc = t->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, sizeof ptx - 1, "conform.ptx", &a);
    if (rc == T4A_OK && loads(c, a, why, sizeof why)) {
      c->code = a;
      snprintf(c->code_why, sizeof c->code_why, "PTX through artifact_from_bytes");
      return;
    }
    if (rc != T4A_OK) {
      t4a__cf_last_error(t, why, sizeof why);
      snprintf(ptx_why, sizeof ptx_why, "%s (%.200s)", t4a_status_name(rc), why);
    } else {
      snprintf(ptx_why, sizeof ptx_why, "%s", why);
      t->artifact_release(a);
    }
  }
  if (!t->artifact_compile || !c->compiler) {
    snprintf(c->code_why, sizeof c->code_why,
             "artifact_from_bytes(PTX): %.200s; artifact_compile: %.200s", ptx_why,
             !t->artifact_compile ? "the slot is NULL" : c->ci.reason);
    return;
  }
  t4a_compile_options o = {.struct_size = sizeof o,
                           .flags = T4A_COMPILE_NO_CACHE,
                           .source = source,
                           .name = "t4a_conform.cu",
                           .device_ordinal = c->device};
  t4a_artifact a = {0};
  int rc = t->artifact_compile(&o, &a);
  if (rc == T4A_OK && loads(c, a, why, sizeof why)) {
    c->code = a;
    snprintf(c->code_why, sizeof c->code_why, "compiled with artifact_compile (PTX: %.200s)",
             ptx_why);
    return;
  }
  if (rc != T4A_OK)
    t4a__cf_last_error(t, why, sizeof why);
  snprintf(c->code_why, sizeof c->code_why,
           "artifact_from_bytes(PTX): %.200s; artifact_compile: %s (%.200s)", ptx_why,
           t4a_status_name(rc), why);
  if (a.bits)
    t->artifact_release(a);
}

void t4a__cf_code_release(t4a__cf *c) {
  if (c->code.bits)
    c->t->artifact_release(c->code);
  c->code.bits = 0;
}
