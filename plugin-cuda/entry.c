/* plugin-cuda/entry.c -- the plugin's one exported symbol, its table, and
 * the plugin's one ordered teardown. A slot stays NULL ("unsupported")
 * until it is implemented. */
#include "config.h"

#include "plugin-cuda/artifact.h"
#include "backend-core/copypool.h"
#include "backend-core/fork.h"
#include "backend-core/readonly.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"
#include "plugin-cuda/witness.h"

/* T4A_TEST_AS_V1_0 builds a test copy that says it is a v1.0 plugin (its
 * table ends at raw_end), T4A_TEST_AS_V1_1 one that says it is v1.1 (its
 * table ends at dlpack_import): consumers built against a later minor must
 * see NULL for every slot added since (tests/cpu/test_compat.c). */
#ifdef T4A_TEST_AS_V1_0
#define TABLE_SIZE T4A_GPU_BACKEND_V1_0_SIZE
#define TABLE_MINOR 0
#elif defined T4A_TEST_AS_V1_1
#define TABLE_SIZE T4A_GPU_BACKEND_V1_1_SIZE
#define TABLE_MINOR 1
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
    T4A__SLOTS_COMMON,
    /* the CUDA plugin's own */
    .raw_function = t4a__slot_raw_function,
    .raw_runtime = t4a__slot_raw_runtime,
    .raw_begin = t4a__slot_raw_begin,
    .raw_end = t4a__slot_raw_end,
    .stream_wait_witness = t4a__slot_stream_wait_witness,
    .runtime_wait_event = t4a__slot_runtime_wait_event,
    .runtime_wait_stream = t4a__slot_runtime_wait_stream,
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
  if (t4a__fork_child()) /* the parent's state: its threads, driver objects and locks are not ours
                          */
    return;
  t4a__copypool_shutdown();
  t4a__runtimes_unload();
  t4a__witnesses_unload();
  t4a__artifacts_unload();
  t4a__read_only_unload();
  t4a__backend_unload();
}
