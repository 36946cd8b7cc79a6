/* tests/fakecuda/fake_context.c -- primary contexts: retained and released
 * per device, current per thread, peer access between them. A primary
 * context released to no reference is destroyed: its epoch advances, and
 * the objects created in it (streams, events, modules) report
 * CUDA_ERROR_CONTEXT_IS_DESTROYED from then on. */
#include "config.h"

#include <stdlib.h>

#include "tests/fakecuda/fake_internal.h"

static struct CUctx_st ctxs[MAX_DEVICES] = {{0, 0, 1, 0}, {1, 0, 1, 0}, {2, 0, 1, 0}, {3, 0, 1, 0},
                                            {4, 0, 1, 0}, {5, 0, 1, 0}, {6, 0, 1, 0}, {7, 0, 1, 0}};
static _Thread_local struct CUctx_st *current;

struct CUctx_st *fake_current(void) {
  return current;
}

bool fake_ctx_valid(const struct CUctx_st *ctx) {
  for (int i = 0; i < MAX_DEVICES; i++)
    if (ctx == &ctxs[i])
      return true;
  return false;
}

uint64_t fake_ctx_refs(int device) {
  return device >= 0 && device < MAX_DEVICES ? (uint64_t)ctxs[device].refs : 0;
}

bool fake_ctx_alive(const struct CUctx_st *ctx, uint64_t epoch) {
  return ctx->refs > 0 && ctx->epoch == epoch;
}

R fake_need_ctx_locked(void) {
  return !current ? fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT, "a call needs a current context")
         : current->refs == 0
             ? fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT,
                           "the current context (device %d's primary) was released",
                           current->device)
             : fake_device_fault(current->device);
}

R fake_refuse_uncurrent(const struct CUctx_st *ctx) {
  return fake_env_int("FAKE_CUDA_LAUNCH_NEEDS_CONTEXT", 0) != 0 && fake_current() != ctx
             ? T4A__CUDA_ERROR_INVALID_CONTEXT
             : T4A__CUDA_SUCCESS;
}

R fake_need_ctx(void) {
  LOCK();
  R r = fake_need_ctx_locked();
  UNLOCK();
  return r;
}

R fake_sym_cuDevicePrimaryCtxRetain(t4a__CUcontext *ctx, t4a__CUdevice d) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  if (!ctx)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= fake_device_count() || d >= MAX_DEVICES)
    return T4A__CUDA_ERROR_INVALID_DEVICE;
  LOCK();
  ctxs[d].refs++; /* .device is constant */
  UNLOCK();
  *ctx = &ctxs[d];
  return OK;
}

R fake_sym_cuDevicePrimaryCtxRelease(t4a__CUdevice d) {
  FAKE_ENTER_ON("cuDevicePrimaryCtxRelease", d >= 0 && d < MAX_DEVICES ? d : -1);
  if (d < 0 || d >= fake_device_count() || d >= MAX_DEVICES)
    return T4A__CUDA_ERROR_INVALID_DEVICE;
  LOCK();
  R r = ctxs[d].refs > 0 ? OK
                         : fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT,
                                       "cuDevicePrimaryCtxRelease: device %d's primary context "
                                       "is not retained",
                                       d);
  if (ctxs[d].refs > 0 && --ctxs[d].refs == 0) { /* destroyed: its objects go with it */
    ctxs[d].epoch++;
    ctxs[d].peers = 0;
  }
  UNLOCK();
  return r;
}

R fake_sym_cuCtxGetCurrent(t4a__CUcontext *ctx) {
  FAKE_ENTER("cuCtxGetCurrent");
  if (!ctx)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  *ctx = current;
  return OK;
}

R fake_sym_cuCtxSetCurrent(t4a__CUcontext ctx) {
  FAKE_ENTER("cuCtxSetCurrent");
  if (ctx && !fake_ctx_valid(ctx)) {
    LOCK();
    R r = fake_misuse(T4A__CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent: %p is no context",
                      (void *)ctx);
    UNLOCK();
    return r;
  }
  current = ctx;
  return OK;
}

R fake_sym_cuCtxEnablePeerAccess(t4a__CUcontext peer, unsigned flags) {
  FAKE_ENTER("cuCtxEnablePeerAccess");
  R r = fake_need_ctx();
  if (r)
    return r;
  if (flags)
    return T4A__CUDA_ERROR_INVALID_VALUE;
  if (!peer || !fake_ctx_valid(peer) || peer == current)
    return T4A__CUDA_ERROR_INVALID_CONTEXT;
  if (!fake_can_access_peer(current->device, peer->device))
    return T4A__CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  LOCK();
  unsigned bit = 1u << peer->device;
  r = (current->peers & bit) ? T4A__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : OK;
  current->peers |= bit;
  UNLOCK();
  return r;
}
