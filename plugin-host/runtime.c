/* plugin-host/runtime.c -- what every slot that enqueues goes through
 * (enqueue, the capture refusal, draining, the device fault's refusal) and
 * the runtime's facts: runtime_counters, runtime_info, runtime_memory_info,
 * alloc_log_read (v1.2). */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "plugin-host/host.h"

void t4a__hrt_enqueue(t4a__hrt *rt, const t4a__op *op, uint64_t a, uint64_t b) {
  if (rt->cap.active) {
    t4a__capture_note(rt, op, a, b);
    return;
  }
  if (!t4a__queue_inline(&rt->q, op, T4A__HOST_INLINE_MAX) && !t4a__queue_early(&rt->q, op))
    t4a__queue_push(&rt->q, op);
}

int t4a__hrt_pageable(t4a__hrt *rt, const t4a__op *op) {
  if (t4a__queue_inline(&rt->q, op, UINT64_MAX))
    return T4A_OK;
  uint64_t seq = t4a__queue_push(&rt->q, op);
  t4a__hrt_drain(rt, seq);
  return t4a__timeline_reached(rt->q.tl, seq) ? T4A_OK : t4a__hrt_faulted("the pageable copy");
}

int t4a__hrt_faulted(const char *what) {
  return t4a__fail(T4A_EDEVICEFAULT,
                   "%s: the host device faulted earlier (sticky for every runtime of this "
                   "backend, as a CUDA device fault): %s; destroy the runtimes (a new process "
                   "starts clean)",
                   what, t4a__hfault_message());
}

int t4a__hrt_refuse(const t4a__hrt *rt, const char *what, const char *why) {
  if (!rt->cap.active)
    return T4A_OK;
  return t4a__fail(T4A_EBUSY,
                   "%s: the runtime is capturing a graph (graph_begin) and %s %s, which cannot "
                   "be captured; call it before graph_begin or after graph_end",
                   what, what, why);
}

void t4a__hrt_drain(t4a__hrt *rt, uint64_t seq) {
  t4a__timeline_wait(rt->q.tl, seq, T4A_WAIT_FOREVER);
}

int t4a__slot_runtime_counters(t4a_runtime h, t4a_runtime_counters *out) {
  int rc = t4a__check_struct(out, T4A_RUNTIME_COUNTERS_V1_0_SIZE, "t4a_runtime_counters");
  t4a__hrt *rt;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock_any(h, "runtime_counters", &rt)))
    return rc;
  t4a_runtime_counters c = rt->c;
  c.struct_size = sizeof c;
  c.pending_retirements = rt->retire_count;
  t4a__hrt_unlock(rt);
  t4a__fill_struct(out, &c, sizeof c);
  return T4A_OK;
}

int t4a__slot_runtime_info(t4a_runtime h, t4a_runtime_info *out) {
  int rc = t4a__check_struct(out, T4A_RUNTIME_INFO_V1_1_SIZE, "t4a_runtime_info");
  t4a__hrt *rt;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock_any(h, "runtime_info", &rt)))
    return rc;
  /* One priority (0): the host queue has no priorities to choose from. */
  t4a_runtime_info i = {.struct_size = sizeof i,
                        .flags = rt->opts.flags,
                        .exec_flags = T4A_EXEC_GRAPHS,
                        .capturing = rt->cap.active ? 1u : 0u};
  t4a__hrt_unlock(rt);
  t4a__fill_struct(out, &i, sizeof i);
  return T4A_OK;
}

/* Memory the system could give now (MemAvailable), else free RAM. */
static uint64_t host_free_memory(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  unsigned long long kb = 0;
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
        break;
    fclose(f);
  }
  if (kb)
    return (uint64_t)kb << 10;
  struct sysinfo si;
  return sysinfo(&si) == 0 ? (uint64_t)si.freeram * si.mem_unit : 0;
}

int t4a__slot_runtime_memory_info(t4a_runtime h, t4a_memory_info *out) {
  int rc = t4a__check_struct(out, T4A_MEMORY_INFO_V1_1_SIZE, "t4a_memory_info");
  t4a__hrt *rt;
  if (rc || (rc = t4a__host_require_init()) || (rc = t4a__hrt_lock(h, "runtime_memory_info", &rt)))
    return rc;
  /* staging_bytes 0: pageable copies need no staging on the host (they
   * copy directly, see transfer.c). */
  t4a_memory_info m = {.struct_size = sizeof m,
                       .device_total = t4a__host_device.total_memory,
                       .pool_reserved = rt->mem.reserved,
                       .pool_used = rt->mem.used,
                       .pool_high_water = rt->mem.high_water,
                       .cache_bytes = rt->mem.cache_bytes,
                       .held_bytes = rt->mem.used,
                       .limit_bytes = rt->mem.budget.limit};
  t4a__hrt_unlock(rt);
  m.device_free = host_free_memory();
  t4a__fill_struct(out, &m, sizeof m);
  return T4A_OK;
}

int t4a__slot_alloc_log_read(t4a_runtime h, uint64_t from, t4a_alloc_event *events,
                             uint32_t capacity, uint32_t *count, uint64_t *next) {
  t4a__hrt *rt;
  int rc = t4a__host_require_init();
  if (rc || (rc = t4a__hrt_lock(h, "alloc_log_read", &rt)))
    return rc;
  if ((rc = t4a__alog_check(rt->mem.log, events, capacity, count, next)) == T4A_OK)
    t4a__alog_read(rt->mem.log, from, events, capacity, count, next);
  t4a__hrt_unlock(rt);
  return rc;
}
