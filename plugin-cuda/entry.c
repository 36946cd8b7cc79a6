/* plugin-cuda/entry.c -- the plugin's one exported symbol, its table, and
 * the plugin's one ordered teardown. A slot stays NULL ("unsupported")
 * until it is implemented. */
#include "config.h"

#include "plugin-cuda/artifact.h"
#include "plugin-cuda/copypool.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"
#include "plugin-cuda/witness.h"

/* T4A_TEST_AS_V1_0 builds a test copy that says it is a v1.0 plugin (its
 * table ends at raw_end): consumers built against a later minor must see
 * NULL for every slot added since (tests/cpu/test_compat.c). */
#ifdef T4A_TEST_AS_V1_0
#define TABLE_SIZE T4A_GPU_BACKEND_V1_0_SIZE
#define TABLE_MINOR 0
#else
#define TABLE_SIZE sizeof(t4a_gpu_backend_v1)
#define TABLE_MINOR T4A_GPU_BACKEND_ABI_MINOR
#endif

/* T4A_TEST_CAPTURE_MAX builds a test copy whose captures hold at most that
 * many entries per list instead of T4A__CAPTURE_MAX (capture.h), so that
 * the fake lane reaches the bound in a few calls
 * (tests/cpu/libt4a_cudacap.la, tests/runtime/test_graph.c). */
#ifdef T4A_TEST_CAPTURE_MAX
__attribute__((constructor)) static void t4a__test_capture_max(void) {
  t4a__capture_max = T4A_TEST_CAPTURE_MAX;
}
#endif

static const t4a_gpu_backend_v1 table = {
    .struct_size = TABLE_SIZE,
    .abi_major = T4A_GPU_BACKEND_ABI_MAJOR,
    .abi_minor = TABLE_MINOR,
    .name = "cuda",
    .version = PACKAGE_VERSION,
    .last_error = t4a__slot_last_error,
    .init = t4a__slot_init,
    .get_info = t4a__slot_get_info,
    .device_count = t4a__slot_device_count,
    .device_info = t4a__slot_device_info,
    .compiler_info = t4a__slot_compiler_info,
    .peer_access_supported = t4a__slot_peer_access_supported,
    .runtime_create = t4a__slot_runtime_create,
    .runtime_destroy = t4a__slot_runtime_destroy,
    .runtime_counters = t4a__slot_runtime_counters,
    .buffer_alloc = t4a__slot_buffer_alloc,
    .buffer_free = t4a__slot_buffer_free,
    .buffer_size = t4a__slot_buffer_size,
    .cache_trim = t4a__slot_cache_trim,
    .cache_stats = t4a__slot_cache_stats,
    .host_alloc = t4a__slot_host_alloc,
    .host_free = t4a__slot_host_free,
    .copy_h2d_pinned = t4a__slot_copy_h2d_pinned,
    .copy_d2h_pinned = t4a__slot_copy_d2h_pinned,
    .copy_h2d = t4a__slot_copy_h2d,
    .copy_d2h = t4a__slot_copy_d2h,
    .copy_d2d = t4a__slot_copy_d2d,
    .copy_from_runtime = t4a__slot_copy_from_runtime,
    .copy_from_peer = t4a__slot_copy_from_peer,
    .copy_from_peer_via_host = t4a__slot_copy_from_peer_via_host,
    .seal = t4a__slot_seal,
    .witness_query = t4a__slot_witness_query,
    .witness_wait = t4a__slot_witness_wait,
    .witness_retain = t4a__slot_witness_retain,
    .witness_release = t4a__slot_witness_release,
    .runtime_wait_witness = t4a__slot_runtime_wait_witness,
    .artifact_compile = t4a__slot_artifact_compile,
    .artifact_from_bytes = t4a__slot_artifact_from_bytes,
    .artifact_log = t4a__slot_artifact_log,
    .artifact_data = t4a__slot_artifact_data,
    .artifact_release = t4a__slot_artifact_release,
    .compile_cache_stats = t4a__slot_compile_cache_stats,
    .compile_cache_clear = t4a__slot_compile_cache_clear,
    .module_load = t4a__slot_module_load,
    .module_unload = t4a__slot_module_unload,
    .function_get = t4a__slot_function_get,
    .function_attributes = t4a__slot_function_attributes,
    .function_set_max_dynamic_shared = t4a__slot_function_set_max_dynamic_shared,
    .launch = t4a__slot_launch,
    .raw_function = t4a__slot_raw_function,
    .raw_runtime = t4a__slot_raw_runtime,
    .buffer_device_address = t4a__slot_buffer_device_address,
    .raw_begin = t4a__slot_raw_begin,
    .raw_end = t4a__slot_raw_end,
    /* v1.1 */
    .memset = t4a__slot_memset,
    .copy_2d_h2d_pinned = t4a__slot_copy_2d_h2d_pinned,
    .copy_2d_d2h_pinned = t4a__slot_copy_2d_d2h_pinned,
    .copy_2d_d2d = t4a__slot_copy_2d_d2d,
    .copy_2d_h2d = t4a__slot_copy_2d_h2d,
    .copy_2d_d2h = t4a__slot_copy_2d_d2h,
    .runtime_memory_info = t4a__slot_runtime_memory_info,
    .host_register = t4a__slot_host_register,
    .host_unregister = t4a__slot_host_unregister,
    .witness_elapsed = t4a__slot_witness_elapsed,
    .runtime_info = t4a__slot_runtime_info,
    .launch_ex = t4a__slot_launch_ex,
    .occupancy_max_active_blocks = t4a__slot_occupancy_max_active_blocks,
    .occupancy_suggest_block_size = t4a__slot_occupancy_suggest_block_size,
    .occupancy_max_active_clusters = t4a__slot_occupancy_max_active_clusters,
    .graph_begin = t4a__slot_graph_begin,
    .graph_end = t4a__slot_graph_end,
    .graph_launch = t4a__slot_graph_launch,
    .graph_set_kernel_args = t4a__slot_graph_set_kernel_args,
    .graph_info = t4a__slot_graph_info,
    .graph_release = t4a__slot_graph_release,
    /* v1.1 interop */
    .buffer_wrap_external = t4a__slot_buffer_wrap_external,
    .stream_wait_witness = t4a__slot_stream_wait_witness,
    .runtime_wait_event = t4a__slot_runtime_wait_event,
    .runtime_wait_stream = t4a__slot_runtime_wait_stream,
    .dlpack_export = t4a__slot_dlpack_export,
    .dlpack_import = t4a__slot_dlpack_import,
};

__attribute__((visibility("default"))) int t4a_gpu_backend_v1_entry(uint16_t caller_major,
                                                                    uint16_t caller_minor,
                                                                    const t4a_gpu_backend_v1 **out);

int t4a_gpu_backend_v1_entry(uint16_t caller_major, uint16_t caller_minor,
                             const t4a_gpu_backend_v1 **out) {
  (void)caller_minor; /* any minor: the table's struct_size tells the caller what exists */
  if (!out)
    return t4a__fail(T4A_EINVAL, "entry: table pointer is NULL; pass a pointer");
  *out = NULL;
  if (caller_major != T4A_GPU_BACKEND_ABI_MAJOR)
    return t4a__fail(T4A_EABI,
                     "caller speaks backend ABI major %u, libt4a_cuda %u; use a "
                     "matching loader",
                     caller_major, T4A_GPU_BACKEND_ABI_MAJOR);
  *out = &table;
  return T4A_OK;
}

/* The plugin is being unloaded (dlclose, or the process ends): one teardown,
 * top down. The copy threads stop first (they run plugin code); then the
 * structs of destroyed runtimes, witnesses and artifacts the consumer did
 * not release, and last the devices' bookkeeping the others read. Live
 * runtimes are left as they are: their driver objects cannot be released
 * safely from a destructor (destroy runtimes before closing). */
__attribute__((destructor)) static void t4a__plugin_unload(void) {
  t4a__copypool_shutdown();
  t4a__runtimes_unload();
  t4a__witnesses_unload();
  t4a__artifacts_unload();
  t4a__backend_unload();
}
