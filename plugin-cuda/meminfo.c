/* plugin-cuda/meminfo.c -- what a runtime tells of its memory:
 * runtime_memory_info (v1.1; v1.2: the budget's numbers) and its allocation
 * log (alloc_log_read, v1.2; the ring is backend-core/alog.c, the events
 * are recorded by memory.c). */
#include "config.h"

#include "backend-core/structs.h"
#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

int t4a__slot_runtime_memory_info(t4a_runtime h, t4a_memory_info *out) {
  int rc = t4a__check_struct(out, T4A_MEMORY_INFO_V1_1_SIZE, "t4a_memory_info");
  t4a__runtime *rt;
  if (rc || (rc = t4a__rt_lock(h, "runtime_memory_info", &rt)))
    return rc;
  const t4a__cuda_api *cu = &t4a__be.cu;
  t4a_memory_info m = {.struct_size = sizeof m};
  if (!cu->cuMemGetInfo || !cu->cuMemPoolGetAttribute) {
    rc = t4a__fail(T4A_EUNSUPPORTED, "runtime_memory_info: the driver lacks cuMemGetInfo or "
                                     "cuMemPoolGetAttribute; update it");
    goto out;
  }
  t4a__CUcontext saved;
  if ((rc = t4a__ctx_enter(rt, &saved))) /* cuMemGetInfo answers for the current context */
    goto out;
  size_t free_b = 0, total_b = 0;
  t4a__CUresult r = cu->cuMemGetInfo(&free_b, &total_b);
  if (r == T4A__CUDA_SUCCESS)
    r = cu->cuMemPoolGetAttribute(rt->mem.pool, T4A__CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                                  &m.pool_reserved);
  if (r == T4A__CUDA_SUCCESS)
    r = cu->cuMemPoolGetAttribute(rt->mem.pool, T4A__CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                                  &m.pool_used);
  if (r == T4A__CUDA_SUCCESS)
    r = cu->cuMemPoolGetAttribute(rt->mem.pool, T4A__CU_MEMPOOL_ATTR_USED_MEM_HIGH,
                                  &m.pool_high_water);
  t4a__ctx_leave(rt, saved);
  if (r != T4A__CUDA_SUCCESS) {
    rc = t4a__rt_cu_fail(rt, r, "runtime_memory_info: querying the device or pool failed");
    goto out;
  }
  m.device_free = free_b;
  m.device_total = total_b;
  m.cache_bytes = rt->mem.cache_bytes;
  m.staging_bytes = rt->stage.bytes;
  m.held_bytes = rt->mem.held;
  m.limit_bytes = rt->mem.budget.limit;
out:
  t4a__rt_unlock(rt);
  if (rc == T4A_OK)
    t4a__fill_struct(out, &m, sizeof m);
  return rc;
}

int t4a__slot_alloc_log_read(t4a_runtime h, uint64_t from, t4a_alloc_event *events,
                             uint32_t capacity, uint32_t *count, uint64_t *next) {
  t4a__runtime *rt;
  int rc = t4a__rt_lock_any(h, "alloc_log_read", &rt); /* a faulted runtime's log too */
  if (rc)
    return rc;
  if ((rc = t4a__alog_check(rt->mem.log, events, capacity, count, next)) == T4A_OK)
    t4a__alog_read(rt->mem.log, from, events, capacity, count, next);
  t4a__rt_unlock(rt);
  return rc;
}
