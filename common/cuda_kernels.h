/* common/cuda_kernels.h -- the kernels of common/ptx_kernels.h and the
 * runtime tests' PTX (tests/runtime/rtutil.c) as CUDA C, for a backend that
 * compiles CUDA C instead of loading PTX (the host backend compiles it
 * with the host C++ compiler): the same names, parameters and results.
 *   t4a_spin(flag)          spins until the u32 at flag is nonzero
 *   t4a_fill_u32(p, v, n)   p[0..n) = v, grid-stride
 *   t4a_fault()             traps
 *   t4a_index3d(out)        each thread stores its block and thread indices
 *                           (see common/ptx_kernels.h)
 *   t4a_bounded(out)        at most 128 threads per block, 512 bytes of static
 *                           shared memory; each block writes its global
 *                           indices reversed
 * A string-literal macro, pasted by its users. */
#ifndef T4A_COMMON_CUDA_KERNELS_H
#define T4A_COMMON_CUDA_KERNELS_H

#define T4A__CUDA_TEST_KERNELS                                                                     \
  "extern \"C\" __global__ void t4a_spin(const unsigned *flag) {\n"                                \
  "  while (*(const volatile unsigned *)flag == 0) {\n"                                            \
  "  }\n"                                                                                          \
  "}\n"                                                                                            \
  "extern \"C\" __global__ void t4a_fill_u32(unsigned *p, unsigned v, unsigned long long n) {\n"   \
  "  unsigned long long i = (unsigned)(blockIdx.x * blockDim.x + threadIdx.x);\n"                  \
  "  for (; i < n; i += (unsigned)(gridDim.x * blockDim.x))\n"                                     \
  "    p[i] = v;\n"                                                                                \
  "}\n"                                                                                            \
  "extern \"C\" __global__ void t4a_fault() { __trap(); }\n"                                       \
  "extern \"C\" __global__ void t4a_index3d(unsigned *out) {\n"                                    \
  "  unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;\n"               \
  "  unsigned per = blockDim.x * blockDim.y * blockDim.z;\n"                                       \
  "  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;\n"          \
  "  unsigned *o = out + 3ull * (b * per + t);\n"                                                  \
  "  o[0] = blockIdx.x | blockIdx.y << 16;\n"                                                      \
  "  o[1] = blockIdx.z | threadIdx.x << 16;\n"                                                     \
  "  o[2] = threadIdx.y | threadIdx.z << 16;\n"                                                    \
  "}\n"                                                                                            \
  "extern \"C\" __global__ void __launch_bounds__(128) t4a_bounded(unsigned *out) {\n"             \
  "  __shared__ unsigned s[128];\n"                                                                \
  "  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"                                        \
  "  s[threadIdx.x] = g;\n"                                                                        \
  "  __syncthreads();\n"                                                                           \
  "  out[g] = s[blockDim.x - 1 - threadIdx.x];\n"                                                  \
  "}\n"

#endif
