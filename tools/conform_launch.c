/* tools/conform_launch.c -- conformance checks of modules, functions and
 * launches: geometry refused before the driver sees it, function attributes
 * and the dynamic shared memory opt-in, module and function handles across
 * runtimes and unloads. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tools/conform.h"

/* Expects launch with cfg to be refused with T4A_EINVAL naming `value`. */
static void bad_geometry(t4a__cf *c, t4a_runtime rt, t4a_function f, const t4a_launch_config *cfg,
                         void **args, const char *what, long long value) {
  if (!t4a__cf_expect(c, c->t->launch(rt, f, cfg, args), T4A_EINVAL, T4A_EINVAL, what) || !value)
    return;
  char why[400], num[32];
  t4a__cf_last_error(c->t, why, sizeof why);
  snprintf(num, sizeof num, "%lld", value);
  CF_TRUE(strstr(why, num) != NULL, "%s: the detail '%s' does not name %s", what, why, num);
}

static void launch_geometry(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels k;
  t4a_buffer b = t4a__cf_buffer(c, rt, 4096);
  uint64_t addr = 0, n = 1024;
  uint32_t value = 3;
  if (!b.bits || !t4a__cf_kernels_load(c, rt, &k) || !CF_OK(t->buffer_device_address(rt, b, &addr)))
    return;
  void *args[] = {&addr, &value, &n};
  const t4a_launch_config ok = {.struct_size = sizeof ok, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  t4a_launch_config cfg;
  static const char axis[3][8] = {"x", "y", "z"};
  char what[64];
  for (int i = 0; i < 3; i++) { /* "every dimension >= 1" */
    cfg = ok;
    cfg.grid[i] = 0;
    snprintf(what, sizeof what, "launch(grid.%s = 0)", axis[i]);
    bad_geometry(c, rt, k.fill, &cfg, args, what, 0);
    cfg = ok;
    cfg.block[i] = 0;
    snprintf(what, sizeof what, "launch(block.%s = 0)", axis[i]);
    bad_geometry(c, rt, k.fill, &cfg, args, what, 0);
    cfg = ok;
    cfg.grid[i] = (uint32_t)c->dev.max_grid_dim[i] + 1u;
    snprintf(what, sizeof what, "launch(grid.%s above the device's limit)", axis[i]);
    bad_geometry(c, rt, k.fill, &cfg, args, what, (long long)cfg.grid[i]);
    cfg = ok;
    cfg.block[i] = (uint32_t)c->dev.max_block_dim[i] + 1u;
    snprintf(what, sizeof what, "launch(block.%s above the device's limit)", axis[i]);
    bad_geometry(c, rt, k.fill, &cfg, args, what, (long long)cfg.block[i]);
  }
  cfg = ok; /* each axis within its limit, too many threads in all */
  cfg.block[0] = (uint32_t)c->dev.max_block_dim[0];
  cfg.block[1] = 2;
  bad_geometry(c, rt, k.fill, &cfg, args, "launch(too many threads per block)",
               (long long)cfg.block[0] * 2);
  CF_EXPECT(t->launch(rt, k.fill, NULL, args), T4A_EINVAL);
  cfg = ok;
  cfg.struct_size = T4A_LAUNCH_CONFIG_V1_0_SIZE - 1;
  CF_EXPECT(t->launch(rt, k.fill, &cfg, args), T4A_EINVAL);
  struct {
    t4a_launch_config cfg;
    unsigned char future[16];
  } big;
  memset(&big, 0, sizeof big);
  big.cfg = ok;
  big.cfg.struct_size = sizeof big;
  big.cfg.grid[0] = 4;
  big.cfg.block[0] = 256; /* a newer caller's bigger struct, and the limits met */
  if (CF_OK(t->launch(rt, k.fill, &big.cfg, args)))
    t4a__cf_filled(c, rt, b, 3, 1024);
}

static void function_attributes(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels k;
  t4a_buffer b = t4a__cf_buffer(c, rt, 4096);
  if (!b.bits || !t4a__cf_kernels_load(c, rt, &k))
    return;
  t4a_function_attributes fa = {.struct_size = sizeof fa};
  CF_EXPECT(t->function_attributes(rt, k.fill, NULL), T4A_EINVAL);
  if (!CF_OK(t->function_attributes(rt, k.fill, &fa)))
    return;
  CF_TRUE(fa.max_threads_per_block > 0 && fa.max_threads_per_block <= c->dev.max_threads_per_block,
          "max_threads_per_block %d (the device allows %d)", (int)fa.max_threads_per_block,
          (int)c->dev.max_threads_per_block);
  CF_TRUE(fa.num_registers >= 0 && fa.static_shared_bytes >= 0 && fa.local_bytes >= 0 &&
              fa.max_dynamic_shared_bytes >= 0,
          "negative attributes");
  int64_t most = (int64_t)c->dev.max_shared_per_block_optin - fa.static_shared_bytes;
  if (most <= 0)
    return;
  /* "opt in to more dynamic shared memory ..., up to the device's opt-in limit" */
  if (!CF_OK(t->function_set_max_dynamic_shared(rt, k.fill, (uint32_t)most)) ||
      !CF_OK(t->function_attributes(rt, k.fill, &fa)))
    return;
  CF_TRUE(fa.max_dynamic_shared_bytes == most,
          "max_dynamic_shared_bytes %d after opting in to %lld", (int)fa.max_dynamic_shared_bytes,
          (long long)most);
  CF_EXPECT(t->function_set_max_dynamic_shared(rt, k.fill, (uint32_t)most + 1), T4A_EINVAL);
  uint64_t addr = 0, n = 1024;
  uint32_t value = 11;
  void *args[] = {&addr, &value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg,
                           .grid = {4, 1, 1},
                           .block = {256, 1, 1},
                           .shared_bytes = (uint32_t)most};
  if (CF_OK(t->buffer_device_address(rt, b, &addr)) && CF_OK(t->launch(rt, k.fill, &cfg, args)))
    t4a__cf_filled(c, rt, b, 11, 1024);
  cfg.shared_bytes = (uint32_t)most + 1;
  CF_EXPECT(t->launch(rt, k.fill, &cfg, args), T4A_EINVAL);
}

static void module_handles(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!t4a__cf_need_code(c))
    return;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  t4a__cf_kernels ka, kb;
  t4a_buffer xb = t4a__cf_buffer(c, b, 4096);
  if (!xb.bits || !t4a__cf_kernels_load(c, a, &ka) || !t4a__cf_kernels_load(c, b, &kb))
    return;
  t4a_function f;
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  CF_EXPECT(t->module_unload(b, ka.module), T4A_EHANDLE); /* a's module, b's runtime */
  CF_EXPECT(t->function_get(b, ka.module, "t4a_fill_u32", &f), T4A_EHANDLE);
  CF_EXPECT(t->launch(b, ka.fill, &cfg, NULL), T4A_EHANDLE);
  CF_EXPECT(t->function_get(a, ka.module, NULL, &f), T4A_EINVAL);
  CF_EXPECT(t->function_get(a, ka.module, "t4a_fill_u32", NULL), T4A_EINVAL);
  CF_EXPECT(t->module_load(a, c->code, NULL), T4A_EINVAL);
  /* "Other runtimes' modules of the same artifact are untouched" */
  t4a__cf_forget(c, ka.module.bits);
  CF_OK(t->module_unload(a, ka.module));
  CF_EXPECT(t->module_unload(a, ka.module), T4A_EHANDLE);
  CF_EXPECT(t->function_get(a, ka.module, "t4a_fill_u32", &f), T4A_EHANDLE);
  CF_EXPECT(t->launch(a, ka.fill, &cfg, NULL), T4A_EHANDLE);
  if (CF_OK(t4a__cf_fill(c, b, &kb, xb, 0xfeed, 1024)))
    t4a__cf_filled(c, b, xb, 0xfeed, 1024);
  if (t->raw_function) {
    void *fn = NULL;
    if (CF_OK(t->raw_function(b, kb.fill, &fn)))
      CF_TRUE(fn != NULL, "raw_function: NULL");
    CF_EXPECT(t->raw_function(a, ka.fill, &fn), T4A_EHANDLE);
  }
}

#define DEV T4A__CF_DEVICE
#define BASE "runtime_create runtime_destroy buffer_alloc buffer_free copy_h2d copy_d2h "
#define CODE "module_load module_unload function_get launch buffer_device_address "

const t4a__cf_check t4a__cf_launch_checks[] = {
    {"code.launch_geometry",
     "launch: geometry is checked against the device's limits before the driver sees it "
     "(T4A_EINVAL naming the bad value)",
     BASE CODE, DEV, launch_geometry},
    {"code.function_attributes",
     "function_attributes: the attributes of f; function_set_max_dynamic_shared: opt in up to "
     "the device's opt-in limit",
     BASE CODE "function_attributes function_set_max_dynamic_shared", DEV, function_attributes},
    {"code.module_handles",
     "module: an artifact loaded into one runtime; function: invalid once its module unloads; "
     "other runtimes' modules of the same artifact are untouched",
     BASE CODE, DEV, module_handles},
};
const size_t t4a__cf_launch_count = sizeof t4a__cf_launch_checks / sizeof t4a__cf_launch_checks[0];
