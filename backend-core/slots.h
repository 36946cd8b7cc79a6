/* backend-core/slots.h -- the functions behind the table's slots, one per slot of
 * t4a_gpu_backend_v1. Each plugin defines those it fills (the file comments
 * below name plugin-cuda's files; plugin-host/entry.c says where its are)
 * and puts them in its table (entry.c); each plugin's are its own (hidden
 * symbols), so the two never meet. */
#ifndef T4A_CORE_SLOTS_H
#define T4A_CORE_SLOTS_H

#include "t4a/gpu_backend_v1.h"

/* errors.c, driver.c, device.c, nvrtc.c */
int t4a__slot_last_error(t4a_error_info *info);
int t4a__slot_init(void);
int t4a__slot_get_info(t4a_backend_info *info);
int t4a__slot_device_count(int32_t *count);
int t4a__slot_device_info(int32_t ordinal, t4a_device_info *info);
int t4a__slot_compiler_info(t4a_compiler_info *info);
int t4a__slot_peer_access_supported(int32_t src, int32_t dst, bool *supported);

/* lifecycle.c */
int t4a__slot_runtime_create(int32_t ordinal, const t4a_runtime_options *opts, t4a_runtime *out);
int t4a__slot_runtime_destroy(t4a_runtime rt, uint64_t timeout_ns);
int t4a__slot_runtime_counters(t4a_runtime rt, t4a_runtime_counters *out);

/* memory.c */
int t4a__slot_buffer_alloc(t4a_runtime rt, uint64_t bytes, t4a_buffer *out);
int t4a__slot_buffer_free(t4a_runtime rt, t4a_buffer buf);
int t4a__slot_buffer_size(t4a_runtime rt, t4a_buffer buf, uint64_t *bytes);
int t4a__slot_cache_trim(t4a_runtime rt, uint64_t keep_bytes);
int t4a__slot_cache_stats(t4a_runtime rt, t4a_cache_stats *out);
int t4a__slot_buffer_device_address(t4a_runtime rt, t4a_buffer buf, uint64_t *address);

/* pinned.c */
int t4a__slot_host_alloc(t4a_runtime rt, uint64_t bytes, uint32_t flags, t4a_host_buffer *out,
                         void **ptr);
int t4a__slot_host_free(t4a_runtime rt, t4a_host_buffer hb);

/* transfer.c */
int t4a__slot_copy_h2d_pinned(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset,
                              t4a_host_buffer src, uint64_t src_offset, uint64_t bytes);
int t4a__slot_copy_d2h_pinned(t4a_runtime rt, t4a_host_buffer dst, uint64_t dst_offset,
                              t4a_buffer src, uint64_t src_offset, uint64_t bytes);
int t4a__slot_copy_h2d(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, const void *src,
                       uint64_t bytes);
int t4a__slot_copy_d2h(t4a_runtime rt, void *dst, t4a_buffer src, uint64_t src_offset,
                       uint64_t bytes);
int t4a__slot_copy_d2d(t4a_runtime rt, t4a_buffer dst, uint64_t dst_offset, t4a_buffer src,
                       uint64_t src_offset, uint64_t bytes);

/* cross.c */
int t4a__slot_copy_from_runtime(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                                t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                                uint64_t bytes);
int t4a__slot_copy_from_peer(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                             t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                             uint64_t bytes);
int t4a__slot_copy_from_peer_via_host(t4a_runtime dst_rt, t4a_buffer dst, uint64_t dst_offset,
                                      t4a_runtime src_rt, t4a_buffer src, uint64_t src_offset,
                                      uint64_t bytes);

/* witness.c */
int t4a__slot_seal(t4a_runtime rt, t4a_witness *out);
int t4a__slot_witness_query(t4a_witness w);
int t4a__slot_witness_wait(t4a_witness w, uint64_t timeout_ns);
int t4a__slot_witness_retain(t4a_witness w);
int t4a__slot_witness_release(t4a_witness w);
int t4a__slot_runtime_wait_witness(t4a_runtime rt, t4a_witness w);

/* artifact.c, compile.c */
int t4a__slot_artifact_compile(const t4a_compile_options *opts, t4a_artifact *out);
int t4a__slot_artifact_from_bytes(t4a_artifact_kind kind, const void *data, uint64_t size,
                                  const char *name, t4a_artifact *out);
int t4a__slot_artifact_log(t4a_artifact a, const char **log, uint64_t *length);
int t4a__slot_artifact_data(t4a_artifact a, t4a_artifact_kind *kind, const void **data,
                            uint64_t *size);
int t4a__slot_artifact_release(t4a_artifact a);
int t4a__slot_compile_cache_stats(t4a_compile_cache_stats *out);
int t4a__slot_compile_cache_clear(uint32_t which);

/* module.c, launch.c */
int t4a__slot_module_load(t4a_runtime rt, t4a_artifact a, t4a_module *out);
int t4a__slot_module_unload(t4a_runtime rt, t4a_module m);
int t4a__slot_function_get(t4a_runtime rt, t4a_module m, const char *name, t4a_function *out);
int t4a__slot_function_attributes(t4a_runtime rt, t4a_function f, t4a_function_attributes *out);
int t4a__slot_function_set_max_dynamic_shared(t4a_runtime rt, t4a_function f, uint32_t bytes);
int t4a__slot_launch(t4a_runtime rt, t4a_function f, const t4a_launch_config *cfg, void **args);
int t4a__slot_raw_function(t4a_runtime rt, t4a_function f, void **cufunction);

/* transfer.c (memset), memory.c (runtime_memory_info) (v1.1) */
int t4a__slot_memset(t4a_runtime rt, t4a_buffer buf, uint64_t offset, uint32_t pattern,
                     uint32_t element_size, uint64_t count);
int t4a__slot_runtime_memory_info(t4a_runtime rt, t4a_memory_info *out);

/* copy2d.c (v1.1) */
int t4a__slot_copy_2d_h2d_pinned(t4a_runtime rt, t4a_buffer dst, t4a_host_buffer src,
                                 const t4a_copy_2d *g);
int t4a__slot_copy_2d_d2h_pinned(t4a_runtime rt, t4a_host_buffer dst, t4a_buffer src,
                                 const t4a_copy_2d *g);
int t4a__slot_copy_2d_d2d(t4a_runtime rt, t4a_buffer dst, t4a_buffer src, const t4a_copy_2d *g);
int t4a__slot_copy_2d_h2d(t4a_runtime rt, t4a_buffer dst, const void *src, const t4a_copy_2d *g);
int t4a__slot_copy_2d_d2h(t4a_runtime rt, void *dst, t4a_buffer src, const t4a_copy_2d *g);

/* pinned.c (v1.1) */
int t4a__slot_host_register(t4a_runtime rt, void *ptr, uint64_t bytes, uint32_t flags,
                            t4a_host_buffer *out);
int t4a__slot_host_unregister(t4a_runtime rt, t4a_host_buffer hb);

/* witness.c (v1.1) */
int t4a__slot_witness_elapsed(t4a_witness start, t4a_witness end, uint64_t *ns);

/* priority.c, launch_ex.c, occupancy.c, graph.c (v1.1) */
int t4a__slot_runtime_info(t4a_runtime rt, t4a_runtime_info *out);
int t4a__slot_launch_ex(t4a_runtime rt, t4a_function f, const t4a_launch_ex_config *cfg,
                        void **args);
int t4a__slot_occupancy_max_active_blocks(t4a_runtime rt, t4a_function f, uint32_t block_threads,
                                          uint32_t shared_bytes, uint32_t *blocks_per_sm);
int t4a__slot_occupancy_suggest_block_size(t4a_runtime rt, t4a_function f, uint32_t shared_bytes,
                                           uint32_t block_limit, uint32_t *block_threads,
                                           uint32_t *min_grid);
int t4a__slot_occupancy_max_active_clusters(t4a_runtime rt, t4a_function f,
                                            const t4a_launch_ex_config *cfg, uint32_t *clusters);
int t4a__slot_graph_begin(t4a_runtime rt);
int t4a__slot_graph_end(t4a_runtime rt, t4a_graph *out);
int t4a__slot_graph_launch(t4a_runtime rt, t4a_graph g);
int t4a__slot_graph_set_kernel_args(t4a_runtime rt, t4a_graph g, uint64_t kernel, void **args);
int t4a__slot_graph_info(t4a_runtime rt, t4a_graph g, t4a_graph_info *out);
int t4a__slot_graph_release(t4a_runtime rt, t4a_graph g);
/* external.c, foreign.c, dlpack.c (v1.1 interop) */
int t4a__slot_buffer_wrap_external(t4a_runtime rt, const t4a_external_memory *mem, t4a_buffer *out);
int t4a__slot_stream_wait_witness(t4a_runtime rt, void *stream, t4a_witness w);
int t4a__slot_runtime_wait_event(t4a_runtime rt, void *event);
int t4a__slot_runtime_wait_stream(t4a_runtime rt, void *stream);
int t4a__slot_dlpack_export(t4a_runtime rt, t4a_buffer buf, const t4a_dlpack_export *req,
                            void **out);
int t4a__slot_dlpack_import(t4a_runtime rt, void *tensor, uint32_t flags, t4a_buffer *out,
                            uint64_t *offset);

/* meminfo.c (plugin-host: runtime.c) (v1.2) */
int t4a__slot_alloc_log_read(t4a_runtime rt, uint64_t from, t4a_alloc_event *events,
                             uint32_t capacity, uint32_t *count, uint64_t *next);

/* raw.c */
int t4a__slot_raw_runtime(t4a_runtime rt, t4a_raw_runtime *out);
int t4a__slot_raw_begin(t4a_runtime rt, t4a_raw_section *section);
int t4a__slot_raw_end(t4a_runtime rt, const t4a_raw_section *section);

/* The slots every backend fills, as designated initialisers of its table
 * (entry.c): a backend adds the ones only it has (the CUDA plugin: the
 * raw seam and the CUDA-stream slots). */
#define T4A__SLOTS_COMMON                                                                          \
  .last_error = t4a__slot_last_error, .init = t4a__slot_init, .get_info = t4a__slot_get_info,      \
  .device_count = t4a__slot_device_count, .device_info = t4a__slot_device_info,                    \
  .compiler_info = t4a__slot_compiler_info,                                                        \
  .peer_access_supported = t4a__slot_peer_access_supported,                                        \
  .runtime_create = t4a__slot_runtime_create, .runtime_destroy = t4a__slot_runtime_destroy,        \
  .runtime_counters = t4a__slot_runtime_counters, .buffer_alloc = t4a__slot_buffer_alloc,          \
  .buffer_free = t4a__slot_buffer_free, .buffer_size = t4a__slot_buffer_size,                      \
  .cache_trim = t4a__slot_cache_trim, .cache_stats = t4a__slot_cache_stats,                        \
  .host_alloc = t4a__slot_host_alloc, .host_free = t4a__slot_host_free,                            \
  .copy_h2d_pinned = t4a__slot_copy_h2d_pinned, .copy_d2h_pinned = t4a__slot_copy_d2h_pinned,      \
  .copy_h2d = t4a__slot_copy_h2d, .copy_d2h = t4a__slot_copy_d2h, .copy_d2d = t4a__slot_copy_d2d,  \
  .copy_from_runtime = t4a__slot_copy_from_runtime, .copy_from_peer = t4a__slot_copy_from_peer,    \
  .copy_from_peer_via_host = t4a__slot_copy_from_peer_via_host, .seal = t4a__slot_seal,            \
  .witness_query = t4a__slot_witness_query, .witness_wait = t4a__slot_witness_wait,                \
  .witness_retain = t4a__slot_witness_retain, .witness_release = t4a__slot_witness_release,        \
  .runtime_wait_witness = t4a__slot_runtime_wait_witness,                                          \
  .artifact_compile = t4a__slot_artifact_compile,                                                  \
  .artifact_from_bytes = t4a__slot_artifact_from_bytes, .artifact_log = t4a__slot_artifact_log,    \
  .artifact_data = t4a__slot_artifact_data, .artifact_release = t4a__slot_artifact_release,        \
  .compile_cache_stats = t4a__slot_compile_cache_stats,                                            \
  .compile_cache_clear = t4a__slot_compile_cache_clear, .module_load = t4a__slot_module_load,      \
  .module_unload = t4a__slot_module_unload, .function_get = t4a__slot_function_get,                \
  .function_attributes = t4a__slot_function_attributes,                                            \
  .function_set_max_dynamic_shared = t4a__slot_function_set_max_dynamic_shared,                    \
  .launch = t4a__slot_launch, .buffer_device_address = t4a__slot_buffer_device_address,            \
  .memset = t4a__slot_memset, .copy_2d_h2d_pinned = t4a__slot_copy_2d_h2d_pinned,                  \
  .copy_2d_d2h_pinned = t4a__slot_copy_2d_d2h_pinned, .copy_2d_d2d = t4a__slot_copy_2d_d2d,        \
  .copy_2d_h2d = t4a__slot_copy_2d_h2d, .copy_2d_d2h = t4a__slot_copy_2d_d2h,                      \
  .runtime_memory_info = t4a__slot_runtime_memory_info, .host_register = t4a__slot_host_register,  \
  .host_unregister = t4a__slot_host_unregister, .witness_elapsed = t4a__slot_witness_elapsed,      \
  .runtime_info = t4a__slot_runtime_info, .launch_ex = t4a__slot_launch_ex,                        \
  .occupancy_max_active_blocks = t4a__slot_occupancy_max_active_blocks,                            \
  .occupancy_suggest_block_size = t4a__slot_occupancy_suggest_block_size,                          \
  .occupancy_max_active_clusters = t4a__slot_occupancy_max_active_clusters,                        \
  .graph_begin = t4a__slot_graph_begin, .graph_end = t4a__slot_graph_end,                          \
  .graph_launch = t4a__slot_graph_launch,                                                          \
  .graph_set_kernel_args = t4a__slot_graph_set_kernel_args, .graph_info = t4a__slot_graph_info,    \
  .graph_release = t4a__slot_graph_release,                                                        \
  .buffer_wrap_external = t4a__slot_buffer_wrap_external,                                          \
  .dlpack_export = t4a__slot_dlpack_export, .dlpack_import = t4a__slot_dlpack_import,              \
  .alloc_log_read = t4a__slot_alloc_log_read

#endif
