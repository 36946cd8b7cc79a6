/* tests/fakecuda/fake_stubs.c -- weak "not supported" definitions of every
 * entry point; fake_cuda.c's strong definitions replace those it simulates. */
#include "config.h"

#include "plugin-cuda/cuda_decls.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define FAKE_STUB(name, sym, req, params)                                                          \
  __attribute__((weak, visibility("default"))) t4a__CUresult fake_stub_##name params __asm__(sym); \
  t4a__CUresult fake_stub_##name params { return T4A__CUDA_ERROR_NOT_SUPPORTED; }
T4A__CUDA_FUNCS(FAKE_STUB)
