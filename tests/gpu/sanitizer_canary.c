/* tests/gpu/sanitizer_canary.c -- a deliberately bad kernel: it writes one
 * 32-bit word past the end of a 4096-byte allocation. Run directly it
 * exits 0 (nothing checks the write); under compute-sanitizer memcheck the
 * write must be reported, or the memcheck lane could pass while blind.
 * The check-gpu-memcheck target runs it and requires the report. Uses the
 * driver directly (dlopen, no link-time CUDA), like the tests' raw seam. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>

#include "plugin-cuda/cuda_decls.h"

static const char ptx[] = ".version 7.0\n"
                          ".target sm_70\n"
                          ".address_size 64\n"
                          ".visible .entry past_the_end(.param .u64 p)\n"
                          "{\n"
                          "  .reg .b64 %a;\n"
                          "  .reg .b32 %v;\n"
                          "  ld.param.u64 %a, [p];\n"
                          "  mov.u32 %v, 7;\n"
                          "  st.global.u32 [%a+4096], %v;\n"
                          "  ret;\n"
                          "}\n";

#define CALL(x)                                                                                    \
  do {                                                                                             \
    t4a__CUresult r_ = (x);                                                                        \
    if (r_) {                                                                                      \
      fprintf(stderr, "sanitizer_canary: %s failed: %u\n", #x, r_);                                \
      return 2;                                                                                    \
    }                                                                                              \
  } while (0)

int main(void) {
  void *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    puts("sanitizer_canary: no driver");
    return 77;
  }
  t4a__CUresult (*init)(unsigned);
  t4a__CUresult (*get)(t4a__CUdevice *, int);
  t4a__CUresult (*retain)(t4a__CUcontext *, t4a__CUdevice);
  t4a__CUresult (*set)(t4a__CUcontext);
  t4a__CUresult (*alloc)(t4a__CUdeviceptr *, size_t);
  t4a__CUresult (*load)(t4a__CUmodule *, const void *);
  t4a__CUresult (*fn)(t4a__CUfunction *, t4a__CUmodule, const char *);
  t4a__CUresult (*launch)(t4a__CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, unsigned, t4a__CUstream, void **, void **);
  t4a__CUresult (*sync)(void);
  *(void **)&init = dlsym(dl, "cuInit");
  *(void **)&get = dlsym(dl, "cuDeviceGet");
  *(void **)&retain = dlsym(dl, "cuDevicePrimaryCtxRetain");
  *(void **)&set = dlsym(dl, "cuCtxSetCurrent");
  *(void **)&alloc = dlsym(dl, "cuMemAlloc_v2");
  *(void **)&load = dlsym(dl, "cuModuleLoadData");
  *(void **)&fn = dlsym(dl, "cuModuleGetFunction");
  *(void **)&launch = dlsym(dl, "cuLaunchKernel");
  *(void **)&sync = dlsym(dl, "cuCtxSynchronize");
  if (!init || !get || !retain || !set || !alloc || !load || !fn || !launch || !sync)
    return 2;
  t4a__CUdevice dev;
  t4a__CUcontext ctx;
  t4a__CUdeviceptr p;
  t4a__CUmodule m;
  t4a__CUfunction f;
  CALL(init(0));
  CALL(get(&dev, 0));
  CALL(retain(&ctx, dev));
  CALL(set(ctx));
  CALL(alloc(&p, 4096));
  CALL(load(&m, ptx));
  CALL(fn(&f, m, "past_the_end"));
  void *args[] = {&p};
  CALL(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
  sync(); /* the write lands out of bounds of the allocation; nothing here can see it */
  puts("sanitizer_canary: the out-of-bounds write ran");
  return 0;
}
