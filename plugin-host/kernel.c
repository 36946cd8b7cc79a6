/* plugin-host/kernel.c -- the code slots. Kernels on the host come in a
 * later release (part 2: CUDA C compiled with the host C++ compiler), so
 * compiling and loading are T4A_EUNSUPPORTED with the reason, and the host
 * makes no artifact, module or function: a handle of one is T4A_EHANDLE.
 * The compile caches are empty (stats all 0; clearing them succeeds). */
#include "config.h"

#include "backend-core/fork.h"
#include "backend-core/handle.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "plugin-host/host.h"

static int no_kernels(const char *what) {
  return t4a__fail(T4A_EUNSUPPORTED, "%s: %s", what, T4A__HOST_NO_KERNELS);
}

static int no_handle(const char *what, const char *noun) {
  return t4a__fail(T4A_EHANDLE,
                   "%s: the host backend made no %s (it has no kernels yet); pass "
                   "one this backend returned",
                   what, noun);
}

/* Checks the runtime handle first, as every runtime slot does. */
static int on_runtime(t4a_runtime h, const char *what) {
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, what, &rt)))
    return rc;
  t4a__hrt_unlock(rt);
  return T4A_OK;
}

int t4a__slot_artifact_compile(const t4a_compile_options *opts, t4a_artifact *out) {
  T4A__FORK_CHECK("artifact_compile");
  int rc = t4a__check_struct(opts, T4A_COMPILE_OPTIONS_V1_0_SIZE, "t4a_compile_options");
  if (rc)
    return rc;
  if (!out)
    return t4a__fail(T4A_EINVAL, "artifact_compile: out is NULL; pass a pointer");
  out->bits = 0;
  if (opts->device_ordinal != -1 &&
      (rc = t4a__host_check_ordinal(opts->device_ordinal, "artifact_compile")))
    return rc; /* a compile for a device needs init, as everywhere */
  return no_kernels("artifact_compile");
}

int t4a__slot_artifact_from_bytes(t4a_artifact_kind kind, const void *data, uint64_t size,
                                  const char *name, t4a_artifact *out) {
  T4A__FORK_CHECK("artifact_from_bytes");
  (void)name;
  if (!out || !data || !size)
    return t4a__fail(T4A_EINVAL,
                     "artifact_from_bytes: data, size and out must be given; pass them");
  out->bits = 0;
  if (kind != T4A_ARTIFACT_PTX && kind != T4A_ARTIFACT_CUBIN && kind != T4A_ARTIFACT_FATBIN)
    return t4a__fail(T4A_EINVAL,
                     "artifact_from_bytes: kind %d; use T4A_ARTIFACT_PTX, _CUBIN or "
                     "_FATBIN",
                     (int)kind);
  return t4a__fail(T4A_EUNSUPPORTED,
                   "artifact_from_bytes: PTX, CUBIN and fatbin are NVIDIA GPU code, which a "
                   "CPU cannot run; %s",
                   T4A__HOST_NO_KERNELS);
}

int t4a__slot_artifact_log(t4a_artifact a, const char **log, uint64_t *length) {
  T4A__FORK_CHECK("artifact_log");
  (void)a, (void)log, (void)length;
  return no_handle("artifact_log", "artifact");
}

int t4a__slot_artifact_data(t4a_artifact a, t4a_artifact_kind *kind, const void **data,
                            uint64_t *size) {
  T4A__FORK_CHECK("artifact_data");
  (void)a, (void)kind, (void)data, (void)size;
  return no_handle("artifact_data", "artifact");
}

int t4a__slot_artifact_release(t4a_artifact a) {
  T4A__FORK_CHECK("artifact_release");
  (void)a;
  return no_handle("artifact_release", "artifact");
}

int t4a__slot_compile_cache_stats(t4a_compile_cache_stats *out) {
  T4A__FORK_CHECK("compile_cache_stats");
  int rc = t4a__check_struct(out, T4A_COMPILE_CACHE_STATS_V1_0_SIZE, "t4a_compile_cache_stats");
  if (rc)
    return rc;
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  t4a__fill_struct(out, &s, sizeof s);
  return T4A_OK;
}

int t4a__slot_compile_cache_clear(uint32_t which) {
  T4A__FORK_CHECK("compile_cache_clear");
  if (which & ~(T4A_CACHE_MEMORY | T4A_CACHE_DISK))
    return t4a__fail(T4A_EINVAL,
                     "compile_cache_clear: unknown bits 0x%x; use T4A_CACHE_MEMORY "
                     "and T4A_CACHE_DISK",
                     which & ~(T4A_CACHE_MEMORY | T4A_CACHE_DISK));
  return T4A_OK;
}

int t4a__slot_module_load(t4a_runtime rt, t4a_artifact a, t4a_module *out) {
  (void)a;
  int rc = on_runtime(rt, "module_load");
  if (rc)
    return rc;
  if (out)
    out->bits = 0;
  return no_handle("module_load", "artifact");
}

int t4a__slot_module_unload(t4a_runtime rt, t4a_module m) {
  (void)m;
  int rc = on_runtime(rt, "module_unload");
  return rc ? rc : no_handle("module_unload", "module");
}

int t4a__slot_function_get(t4a_runtime rt, t4a_module m, const char *name, t4a_function *out) {
  (void)m, (void)name;
  int rc = on_runtime(rt, "function_get");
  if (rc)
    return rc;
  if (out)
    out->bits = 0;
  return no_handle("function_get", "module");
}

int t4a__slot_function_attributes(t4a_runtime rt, t4a_function f, t4a_function_attributes *out) {
  (void)f, (void)out;
  int rc = on_runtime(rt, "function_attributes");
  return rc ? rc : no_handle("function_attributes", "function");
}

int t4a__slot_function_set_max_dynamic_shared(t4a_runtime rt, t4a_function f, uint32_t bytes) {
  (void)f, (void)bytes;
  int rc = on_runtime(rt, "function_set_max_dynamic_shared");
  return rc ? rc : no_handle("function_set_max_dynamic_shared", "function");
}

int t4a__slot_launch(t4a_runtime rt, t4a_function f, const t4a_launch_config *cfg, void **args) {
  (void)f, (void)cfg, (void)args;
  int rc = on_runtime(rt, "launch");
  return rc ? rc : no_kernels("launch");
}

int t4a__slot_launch_ex(t4a_runtime rt, t4a_function f, const t4a_launch_ex_config *cfg,
                        void **args) {
  (void)f, (void)cfg, (void)args;
  int rc = on_runtime(rt, "launch_ex");
  return rc ? rc : no_kernels("launch_ex");
}

int t4a__slot_occupancy_max_active_blocks(t4a_runtime rt, t4a_function f, uint32_t block_threads,
                                          uint32_t shared_bytes, uint32_t *blocks_per_sm) {
  (void)f, (void)block_threads, (void)shared_bytes, (void)blocks_per_sm;
  int rc = on_runtime(rt, "occupancy_max_active_blocks");
  return rc ? rc : no_kernels("occupancy_max_active_blocks");
}

int t4a__slot_occupancy_suggest_block_size(t4a_runtime rt, t4a_function f, uint32_t shared_bytes,
                                           uint32_t block_limit, uint32_t *block_threads,
                                           uint32_t *min_grid) {
  (void)f, (void)shared_bytes, (void)block_limit, (void)block_threads, (void)min_grid;
  int rc = on_runtime(rt, "occupancy_suggest_block_size");
  return rc ? rc : no_kernels("occupancy_suggest_block_size");
}

int t4a__slot_occupancy_max_active_clusters(t4a_runtime rt, t4a_function f,
                                            const t4a_launch_ex_config *cfg, uint32_t *clusters) {
  (void)f, (void)cfg, (void)clusters;
  int rc = on_runtime(rt, "occupancy_max_active_clusters");
  return rc ? rc : no_kernels("occupancy_max_active_clusters");
}
