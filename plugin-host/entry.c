/* plugin-host/entry.c -- the host backend's one exported symbol, its table
 * and its teardown. The slots come from device.c, lifecycle.c, runtime.c,
 * memory.c, pinned.c, transfer.c, copy2d.c, cross.c, witness.c, graph.c,
 * external.c, dlpack.c, cxx.c, compile.c, module.c and launch.c;
 * last_error from backend-core/structs.c; artifact_log, artifact_data and
 * artifact_release from backend-core/artifact.c.
 *
 * NULL slots (docs/design.md, "The host backend"): the raw seam
 * (raw_runtime, raw_begin, raw_end, raw_function) and the slots taking
 * CUDA streams or events (stream_wait_witness, runtime_wait_event,
 * runtime_wait_stream): the host has no CUcontext, CUstream or CUevent to
 * hand out or take. */
#include "config.h"

#include "backend-core/artifact.h"
#include "backend-core/copypool.h"
#include "backend-core/fork.h"
#include "backend-core/readonly.h"
#include "backend-core/slots.h"
#include "plugin-host/host.h"
#include "plugin-host/keymemo.h"

static const t4a_gpu_backend_v1 table = {
    .struct_size = sizeof(t4a_gpu_backend_v1),
    .abi_major = T4A_GPU_BACKEND_ABI_MAJOR,
    .abi_minor = T4A_GPU_BACKEND_ABI_MINOR,
    .name = "host",
    .version = PACKAGE_VERSION,
    T4A__SLOTS_COMMON,
};

__attribute__((visibility("default"))) int t4a_gpu_backend_v1_entry(uint16_t caller_major,
                                                                    uint16_t caller_minor,
                                                                    const t4a_gpu_backend_v1 **out);

int t4a_gpu_backend_v1_entry(uint16_t caller_major, uint16_t caller_minor,
                             const t4a_gpu_backend_v1 **out) {
  (void)caller_minor; /* any minor: the table's struct_size says what exists */
  if (!out)
    return t4a__fail(T4A_EINVAL, "entry: table pointer is NULL; pass a pointer");
  *out = NULL;
  if (caller_major != T4A_GPU_BACKEND_ABI_MAJOR)
    return t4a__fail(T4A_EABI,
                     "caller speaks backend ABI major %u, libt4a_host %u; use a "
                     "matching loader",
                     caller_major, T4A_GPU_BACKEND_ABI_MAJOR);
  *out = &table;
  return T4A_OK;
}

/* Unload: the queue workers, the kernels' pool and the copy threads first
 * (they run plugin code), then the artifacts, the witnesses left, the
 * read-only list and the structs of destroyed runtimes. */
__attribute__((destructor)) static void t4a__host_unload(void) {
  if (t4a__fork_child()) /* the parent's state: its workers never existed here */
    return;
  t4a__workers_unload();
  t4a__hk_pool_unload();
  t4a__hcheck_unload(); /* no thread runs a kernel any more */
  t4a__copypool_shutdown();
  t4a__artifacts_unload();
  t4a__keymemo_unload();
  t4a__hwitnesses_unload();
  t4a__read_only_unload();
  t4a__rtable_unload();
}
