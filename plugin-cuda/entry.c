/* plugin-cuda/entry.c -- the plugin's one exported symbol and its table.
 * A slot stays NULL ("unsupported") until it is implemented. */
#include "config.h"

#include "plugin-cuda/backend.h"

static const t4a_gpu_backend_v1 table = {
    .struct_size = sizeof(t4a_gpu_backend_v1),
    .abi_major = T4A_GPU_BACKEND_ABI_MAJOR,
    .abi_minor = T4A_GPU_BACKEND_ABI_MINOR,
    .name = "cuda",
    .version = PACKAGE_VERSION,
    .last_error = t4a__slot_last_error,
    .init = t4a__slot_init,
    .get_info = t4a__slot_get_info,
    .device_count = t4a__slot_device_count,
    .device_info = t4a__slot_device_info,
    .compiler_info = t4a__slot_compiler_info,
    .peer_access_supported = t4a__slot_peer_access_supported,
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
