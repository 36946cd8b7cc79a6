/* plugin-cuda/priority.c -- stream priority (v1.1) and runtime_info.
 *
 * A runtime's stream gets the priority its options ask for, in the driver's
 * convention (lower numbers run first; 0, the default, is the device's
 * least). The range comes from cuCtxGetStreamPriorityRange at creation; a
 * priority outside it is refused (the driver would clamp it silently). A
 * runtime at the default priority creates its stream exactly as ABI 1.0
 * did, so a driver without the priority calls still runs it. */
#include "config.h"

#include "plugin-cuda/runtime.h"
#include "plugin-cuda/slots.h"

int t4a__priority_range(t4a__runtime *rt) {
  rt->priority_least = rt->priority_greatest = 0;
  if (!t4a__be.cu.cuCtxGetStreamPriorityRange)
    return T4A_OK; /* no priorities: only the default is possible */
  int least = 0, greatest = 0;
  t4a__CUresult r = t4a__be.cu.cuCtxGetStreamPriorityRange(&least, &greatest);
  if (r != T4A__CUDA_SUCCESS)
    return t4a__cu_fail(r, "runtime_create: cuCtxGetStreamPriorityRange failed on device %d",
                        (int)rt->ordinal);
  rt->priority_least = least;
  rt->priority_greatest = greatest;
  return T4A_OK;
}

int t4a__priority_check(const t4a__runtime *rt, int32_t priority) {
  if (priority == 0)
    return T4A_OK;
  if (!t4a__be.cu.cuStreamCreateWithPriority || rt->priority_least == rt->priority_greatest)
    return t4a__fail(T4A_EUNSUPPORTED,
                     "runtime_create: stream_priority %d, but device %d or its driver has no "
                     "stream priorities; use 0",
                     (int)priority, (int)rt->ordinal);
  if (priority > rt->priority_least || priority < rt->priority_greatest)
    return t4a__fail(T4A_ERANGE,
                     "t4a_runtime_options.stream_priority = %d is outside device %d's range %d "
                     "(highest) .. %d (lowest); pick one in it (0 = default)",
                     (int)priority, (int)rt->ordinal, (int)rt->priority_greatest,
                     (int)rt->priority_least);
  return T4A_OK;
}

int t4a__stream_create(t4a__runtime *rt, int32_t priority) {
  t4a__CUresult r = priority ? t4a__be.cu.cuStreamCreateWithPriority(
                                   &rt->stream, T4A__CU_STREAM_NON_BLOCKING, priority)
                             : t4a__be.cu.cuStreamCreate(&rt->stream, T4A__CU_STREAM_NON_BLOCKING);
  if (r != T4A__CUDA_SUCCESS) {
    rt->stream = NULL;
    return t4a__cu_fail(r, "runtime_create: creating the stream failed; free resources and retry");
  }
  return T4A_OK;
}

/* Bits of what this device and driver can do for launch_ex and graphs. */
static uint32_t exec_flags(const t4a__runtime *rt) {
  const t4a__cuda_api *cu = &t4a__be.cu;
  const t4a__device *dv = &t4a__be.devices[rt->ordinal];
  uint32_t f = 0;
  if (cu->cuLaunchKernelEx && dv->clusters && cu->cuOccupancyMaxPotentialClusterSize)
    f |= T4A_EXEC_CLUSTERS;
  if (cu->cuLaunchKernelEx && dv->cooperative && cu->cuOccupancyMaxActiveBlocksPerMultiprocessor)
    f |= T4A_EXEC_COOPERATIVE;
  if (cu->cuStreamBeginCapture && cu->cuStreamEndCapture && cu->cuStreamGetCaptureInfo &&
      cu->cuGraphInstantiateWithFlags && cu->cuGraphLaunch && cu->cuGraphExecDestroy &&
      cu->cuGraphDestroy)
    f |= T4A_EXEC_GRAPHS;
  if (cu->cuStreamCreateWithPriority && rt->priority_least != rt->priority_greatest)
    f |= T4A_EXEC_PRIORITIES;
  return f;
}

int t4a__slot_runtime_info(t4a_runtime h, t4a_runtime_info *out) {
  int rc = t4a__check_struct(out, T4A_RUNTIME_INFO_V1_1_SIZE, "t4a_runtime_info");
  t4a__runtime *rt;
  if (rc || (rc = t4a__rt_lock_any(h, "runtime_info", &rt)))
    return rc;
  t4a_runtime_info i = {.struct_size = sizeof i,
                        .flags = rt->opts.flags,
                        .device_ordinal = rt->ordinal,
                        .stream_priority = rt->opts.stream_priority,
                        .priority_least = rt->priority_least,
                        .priority_greatest = rt->priority_greatest,
                        .exec_flags = exec_flags(rt),
                        .capturing = rt->cap.active ? 1u : 0u};
  t4a__rt_unlock(rt);
  t4a__fill_struct(out, &i, sizeof i);
  return T4A_OK;
}
