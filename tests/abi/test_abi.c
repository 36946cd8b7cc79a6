/* tests/abi/test_abi.c -- the v1 header compiles as C99 (-std=c99
 * -pedantic), and its layout is frozen: fields in order, append-only. */
#include "config.h"

#include <string.h>

#include "t4a/gpu_backend_v1.h"
#include "tests/testutil.h"

/* The table header: size, then version. */
_Static_assert(offsetof(t4a_gpu_backend_v1, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(t4a_gpu_backend_v1, abi_major) == 4, "abi_major at 4");
_Static_assert(offsetof(t4a_gpu_backend_v1, abi_minor) == 6, "abi_minor at 6");
_Static_assert(offsetof(t4a_gpu_backend_v1, name) == 8, "name at 8");

/* Slots in their published order, each one pointer after the previous. The
 * list is the v1.0 table: new slots go at the end, this list never changes. */
#define V1_0_SLOTS(X)                                                                              \
  X(version, name)                                                                                 \
  X(last_error, version)                                                                           \
  X(init, last_error)                                                                              \
  X(get_info, init)                                                                                \
  X(device_count, get_info)                                                                        \
  X(device_info, device_count)                                                                     \
  X(compiler_info, device_info)                                                                    \
  X(peer_access_supported, compiler_info)                                                          \
  X(runtime_create, peer_access_supported)                                                         \
  X(runtime_destroy, runtime_create)                                                               \
  X(runtime_counters, runtime_destroy)                                                             \
  X(buffer_alloc, runtime_counters)                                                                \
  X(buffer_free, buffer_alloc)                                                                     \
  X(buffer_size, buffer_free)                                                                      \
  X(cache_trim, buffer_size)                                                                       \
  X(cache_stats, cache_trim)                                                                       \
  X(host_alloc, cache_stats)                                                                       \
  X(host_free, host_alloc)                                                                         \
  X(copy_h2d_pinned, host_free)                                                                    \
  X(copy_d2h_pinned, copy_h2d_pinned)                                                              \
  X(copy_h2d, copy_d2h_pinned)                                                                     \
  X(copy_d2h, copy_h2d)                                                                            \
  X(copy_d2d, copy_d2h)                                                                            \
  X(copy_from_runtime, copy_d2d)                                                                   \
  X(copy_from_peer, copy_from_runtime)                                                             \
  X(copy_from_peer_via_host, copy_from_peer)                                                       \
  X(seal, copy_from_peer_via_host)                                                                 \
  X(witness_query, seal)                                                                           \
  X(witness_wait, witness_query)                                                                   \
  X(witness_retain, witness_wait)                                                                  \
  X(witness_release, witness_retain)                                                               \
  X(runtime_wait_witness, witness_release)                                                         \
  X(artifact_compile, runtime_wait_witness)                                                        \
  X(artifact_from_bytes, artifact_compile)                                                         \
  X(artifact_log, artifact_from_bytes)                                                             \
  X(artifact_data, artifact_log)                                                                   \
  X(artifact_release, artifact_data)                                                               \
  X(compile_cache_stats, artifact_release)                                                         \
  X(compile_cache_clear, compile_cache_stats)                                                      \
  X(module_load, compile_cache_clear)                                                              \
  X(module_unload, module_load)                                                                    \
  X(function_get, module_unload)                                                                   \
  X(function_attributes, function_get)                                                             \
  X(function_set_max_dynamic_shared, function_attributes)                                          \
  X(launch, function_set_max_dynamic_shared)                                                       \
  X(raw_runtime, launch)                                                                           \
  X(buffer_device_address, raw_runtime)                                                            \
  X(raw_function, buffer_device_address)                                                           \
  X(raw_begin, raw_function)                                                                       \
  X(raw_end, raw_begin)

#define FOLLOWS(slot, prev)                                                                        \
  _Static_assert(offsetof(t4a_gpu_backend_v1, slot) ==                                             \
                     offsetof(t4a_gpu_backend_v1, prev) + sizeof(void *),                          \
                 #slot " follows " #prev);
V1_0_SLOTS(FOLLOWS)

/* v1.0 ends at raw_end: its frozen size is header + name/version + 49
 * slots, whatever later minors append. */
_Static_assert(T4A_GPU_BACKEND_V1_0_SIZE == 8 + 2 * sizeof(void *) + 49 * sizeof(void *),
               "v1.0 table: header + name/version + 49 slots, frozen");

/* v1.1 appends these slots after raw_end, in this order: memory and
 * completion (issue #14), then execution and graphs (issue #15) ... */
#define V1_1_SLOTS(X)                                                                              \
  X(memset, raw_end)                                                                               \
  X(copy_2d_h2d_pinned, memset)                                                                    \
  X(copy_2d_d2h_pinned, copy_2d_h2d_pinned)                                                        \
  X(copy_2d_d2d, copy_2d_d2h_pinned)                                                               \
  X(copy_2d_h2d, copy_2d_d2d)                                                                      \
  X(copy_2d_d2h, copy_2d_h2d)                                                                      \
  X(runtime_memory_info, copy_2d_d2h)                                                              \
  X(host_register, runtime_memory_info)                                                            \
  X(host_unregister, host_register)                                                                \
  X(witness_elapsed, host_unregister)                                                              \
  X(runtime_info, witness_elapsed)                                                                 \
  X(launch_ex, runtime_info)                                                                       \
  X(occupancy_max_active_blocks, launch_ex)                                                        \
  X(occupancy_suggest_block_size, occupancy_max_active_blocks)                                     \
  X(occupancy_max_active_clusters, occupancy_suggest_block_size)                                   \
  X(graph_begin, occupancy_max_active_clusters)                                                    \
  X(graph_end, graph_begin)                                                                        \
  X(graph_launch, graph_end)                                                                       \
  X(graph_set_kernel_args, graph_launch)                                                           \
  X(graph_info, graph_set_kernel_args)                                                             \
  X(graph_release, graph_info)
V1_1_SLOTS(FOLLOWS)
/* ... then the interop block (#18), in this order. */
#define V1_1_INTEROP_SLOTS(X)                                                                      \
  X(buffer_wrap_external, graph_release)                                                           \
  X(stream_wait_witness, buffer_wrap_external)                                                     \
  X(runtime_wait_event, stream_wait_witness)                                                       \
  X(runtime_wait_stream, runtime_wait_event)                                                       \
  X(dlpack_export, runtime_wait_stream)                                                            \
  X(dlpack_import, dlpack_export)
V1_1_INTEROP_SLOTS(FOLLOWS)
_Static_assert(T4A_GPU_BACKEND_V1_1_SIZE == T4A_GPU_BACKEND_V1_0_SIZE + (21 + 6) * sizeof(void *),
               "v1.1 table: v1.0 + 21 slots + 6 interop slots");
/* v1.2 appends these slots after dlpack_import, in this order. */
#define V1_2_SLOTS(X) X(alloc_log_read, dlpack_import)
V1_2_SLOTS(FOLLOWS)
_Static_assert(T4A_GPU_BACKEND_V1_2_SIZE == T4A_GPU_BACKEND_V1_1_SIZE + 1 * sizeof(void *),
               "v1.2 table: v1.1 + 1 slot");
_Static_assert(sizeof(t4a_gpu_backend_v1) == T4A_GPU_BACKEND_V1_2_SIZE,
               "the v1.2 table is the whole struct in ABI 1.2");
_Static_assert(T4A_GPU_BACKEND_ABI_MINOR == 2, "this header is ABI 1.2");
_Static_assert(sizeof(t4a_runtime) == 8 && sizeof(t4a_buffer) == 8 && sizeof(t4a_witness) == 8,
               "handles are one 64-bit value");
_Static_assert(offsetof(t4a_device_info, struct_size) == 0, "info structs start with size");
_Static_assert(T4A_DEVICE_INFO_V1_0_SIZE == 376, "device info v1.0 is 376 bytes, frozen");
_Static_assert(T4A_DEVICE_INFO_V1_1_SIZE == 384 && sizeof(t4a_device_info) == 384,
               "device info v1.1 appends max_pitch");
_Static_assert(T4A_COPY_2D_V1_1_SIZE == 56 && sizeof(t4a_copy_2d) == 56, "copy_2d v1.1");
_Static_assert(T4A_MEMORY_INFO_V1_1_SIZE == 64, "memory info v1.1");
_Static_assert(T4A_MEMORY_INFO_V1_2_SIZE == 80 && sizeof(t4a_memory_info) == 80,
               "memory info v1.2 appends held_bytes and limit_bytes");
_Static_assert(T4A_EXTERNAL_MEMORY_V1_1_SIZE == 48 && sizeof(t4a_external_memory) == 48,
               "external memory v1.1");
_Static_assert(T4A_DLPACK_EXPORT_V1_1_SIZE == 56 && sizeof(t4a_dlpack_export) == 56,
               "dlpack export v1.1");
/* The DLPack structs have dlpack.h's layout (DLPack 1.1, LP64): a consumer
 * casts between them and its own dlpack.h's. */
#define DL_AT(type, field, offset)                                                                 \
  _Static_assert(offsetof(type, field) == (offset), #type "." #field " at " #offset);
DL_AT(t4a_dl_pack_version, major, 0)
DL_AT(t4a_dl_pack_version, minor, 4)
DL_AT(t4a_dl_device, device_type, 0)
DL_AT(t4a_dl_device, device_id, 4)
DL_AT(t4a_dl_data_type, code, 0)
DL_AT(t4a_dl_data_type, bits, 1)
DL_AT(t4a_dl_data_type, lanes, 2)
DL_AT(t4a_dl_tensor, data, 0)
DL_AT(t4a_dl_tensor, device, 8)
DL_AT(t4a_dl_tensor, ndim, 16)
DL_AT(t4a_dl_tensor, dtype, 20)
DL_AT(t4a_dl_tensor, shape, 24)
DL_AT(t4a_dl_tensor, strides, 32)
DL_AT(t4a_dl_tensor, byte_offset, 40)
DL_AT(t4a_dl_managed_tensor, dl_tensor, 0)
DL_AT(t4a_dl_managed_tensor, manager_ctx, 48)
DL_AT(t4a_dl_managed_tensor, deleter, 56)
DL_AT(t4a_dl_managed_tensor_versioned, version, 0)
DL_AT(t4a_dl_managed_tensor_versioned, manager_ctx, 8)
DL_AT(t4a_dl_managed_tensor_versioned, deleter, 16)
DL_AT(t4a_dl_managed_tensor_versioned, flags, 24)
DL_AT(t4a_dl_managed_tensor_versioned, dl_tensor, 32)
_Static_assert(sizeof(t4a_dl_pack_version) == 8 && sizeof(t4a_dl_device) == 8 &&
                   sizeof(t4a_dl_data_type) == 4 && sizeof(t4a_dl_tensor) == 48 &&
                   sizeof(t4a_dl_managed_tensor) == 64 &&
                   sizeof(t4a_dl_managed_tensor_versioned) == 80,
               "DLPack struct sizes");
/* one assertion per value (the expanded macros would make operands like
 * `2 == 2` twice in one expression) */
_Static_assert(T4A_DLPACK_MAJOR == 1, "DLPack major");
_Static_assert(T4A_DL_CUDA == 2, "kDLCUDA");
_Static_assert(T4A_DL_CUDA_HOST == 3, "kDLCUDAHost");
_Static_assert(T4A_DL_FLOAT == 2, "kDLFloat");
_Static_assert(T4A_DL_BFLOAT == 4, "kDLBfloat");
_Static_assert(T4A_DL_BOOL == 6, "kDLBool");
_Static_assert(T4A_DL_FLOAT4_E2M1FN == 17, "kDLFloat4_e2m1fn");
_Static_assert(T4A_DL_FLAG_READ_ONLY == 1, "DLPACK_FLAG_BITMASK_READ_ONLY");
_Static_assert(T4A_RUNTIME_OPTIONS_V1_0_SIZE == 40, "runtime options v1.0 is 40 bytes");
_Static_assert(T4A_RUNTIME_OPTIONS_V1_1_SIZE == 48, "runtime options v1.1 appends stream_priority");
_Static_assert(T4A_RUNTIME_OPTIONS_V1_2_SIZE == 80 && sizeof(t4a_runtime_options) == 80,
               "runtime options v1.2 append the budget and the allocation log's size");
_Static_assert(offsetof(t4a_runtime_options, alloc_log_events) == 72, "alloc_log_events");
_Static_assert(sizeof(t4a_alloc_event) == 64 && offsetof(t4a_alloc_event, kind) == 56,
               "allocation-log events: 64 bytes, fixed");
_Static_assert(offsetof(t4a_runtime_options, pool_limit_bytes) == 48 &&
                   offsetof(t4a_runtime_options, out_of_memory) == 56 &&
                   offsetof(t4a_runtime_options, out_of_memory_user) == 64,
               "runtime options v1.2 layout");
_Static_assert(offsetof(t4a_runtime_options, stream_priority) == 40, "stream_priority after v1.0");
_Static_assert(T4A_RUNTIME_COUNTERS_V1_1_SIZE == T4A_RUNTIME_COUNTERS_V1_0_SIZE + 32,
               "counters v1.1 append four");
_Static_assert(T4A_RUNTIME_COUNTERS_V1_2_SIZE == T4A_RUNTIME_COUNTERS_V1_1_SIZE + 16 &&
                   sizeof(t4a_runtime_counters) == T4A_RUNTIME_COUNTERS_V1_2_SIZE,
               "counters v1.2 append two");
_Static_assert(T4A_OUT_OF_MEMORY_INFO_V1_2_SIZE == 48 && sizeof(t4a_out_of_memory_info) == 48,
               "out-of-memory info v1.2");
_Static_assert(T4A_LAUNCH_EX_CONFIG_V1_1_SIZE == 56 && sizeof(t4a_launch_ex_config) == 56,
               "launch_ex config v1.1");
_Static_assert(offsetof(t4a_launch_ex_config, grid) == 8 &&
                   offsetof(t4a_launch_ex_config, cluster) == 36,
               "launch_ex config layout");
_Static_assert(T4A_RUNTIME_INFO_V1_1_SIZE == 32 && sizeof(t4a_runtime_info) == 32,
               "runtime info v1.1");
_Static_assert(T4A_GRAPH_INFO_V1_1_SIZE == 40 && sizeof(t4a_graph_info) == 40, "graph info v1.1");
_Static_assert(sizeof(t4a_graph) == 8, "graph handles are one 64-bit value");
_Static_assert(offsetof(t4a_runtime_options, staging_bytes) == 8, "options layout");
_Static_assert(T4A_LAUNCH_CONFIG_V1_0_SIZE == 32, "launch config v1.0 is 32 bytes");
_Static_assert(T4A_RUNTIME_COUNTERS_V1_0_SIZE == 8 + 27 * 8, "counters v1.0");
_Static_assert(T4A_ERROR_INFO_V1_0_SIZE == 32, "error info v1.0");

/* Status values are ABI too. */
_Static_assert(T4A_OK == 0 && T4A_EINVAL == -1 && T4A_EHANDLE == -2 && T4A_ENOMEM == -3,
               "status values");
_Static_assert(T4A_ENOBACKEND == -18 && T4A_EDRIVER == -19 && T4A_EINTERNAL == -23,
               "status values");
_Static_assert(T4A_EFORKED == -24, "status values: 1.2 appends EFORKED");

START_TEST(status_list_is_complete_and_distinct) {
  static const int all[] = {
#define ALL(name, value, msg) value,
      T4A_STATUS_MAP(ALL)
#undef ALL
  };
  size_t n = sizeof all / sizeof all[0];
  ck_assert_uint_eq(n, 25);
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(all[i], -(int)i); /* dense: 0, -1, -2, ... */
    ck_assert_str_ne(t4a_status_name(all[i]), "T4A_UNKNOWN");
    ck_assert_str_ne(t4a_status_message(all[i]), "unknown status");
    for (size_t j = 0; j < i; j++)
      ck_assert_str_ne(t4a_status_message(all[i]), t4a_status_message(all[j]));
  }
  ck_assert_str_eq(t4a_status_name(T4A_OK), "T4A_OK");
  ck_assert_str_eq(t4a_status_name(T4A_ERANGE), "T4A_ERANGE");
  ck_assert_str_eq(t4a_status_name(1), "T4A_UNKNOWN");
  ck_assert_str_eq(t4a_status_message(-999), "unknown status");
}
END_TEST

START_TEST(has_macro_checks_struct_size) {
  t4a_gpu_backend_v1 t;
  memset(&t, 0, sizeof t);
  t.struct_size = (uint32_t)T4A_SIZE_THROUGH(t4a_gpu_backend_v1, device_info);
  ck_assert(T4A_GPU_BACKEND_V1_HAS(&t, init));
  ck_assert(T4A_GPU_BACKEND_V1_HAS(&t, device_info));
  ck_assert(!T4A_GPU_BACKEND_V1_HAS(&t, compiler_info));
  t.struct_size = sizeof t;
  ck_assert(T4A_GPU_BACKEND_V1_HAS(&t, raw_end));
  const t4a_gpu_backend_v1 *null_table = NULL;
  ck_assert(!T4A_GPU_BACKEND_V1_HAS(null_table, init));
}
END_TEST

int main(void) {
  Suite *s = suite_create("abi");
  TCase *tc = tcase_create("abi");
  tcase_add_test(tc, status_list_is_complete_and_distinct);
  tcase_add_test(tc, has_macro_checks_struct_size);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
