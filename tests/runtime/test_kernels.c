/* tests/runtime/test_kernels.c -- the kernel suite: a few dozen CUDA C
 * kernels, one source given unchanged to NVRTC (GPU lane) and to the host
 * backend (host lane: the host C++ compiler and the prelude), launched
 * through the table and checked against CPU references with random
 * inputs: bit-exact where the arithmetic is (integers, additions in a fixed
 * order, data movement), within a tolerance where a GPU may fuse or
 * approximate (math functions, a*x+y). Elementwise, 3-D indices, shared
 * memory tiles, reductions with barriers, early-returning warps, warp
 * shuffles and votes with full and partial masks, atomics under contention
 * across blocks, dynamic shared memory, printf, a failed assert, a trap, and
 * a wild write (on the host in checked mode).
 *
 * No fake lane: the fake driver runs only the kernels it implements in C
 * (tests/fakecuda), not CUDA C. The host lane skips (77) without a host
 * C++ compiler; the GPU lane without NVRTC fails under make check-gpu. The
 * host lane's tests share one disk cache (rt_suite), so the source compiles
 * once per run. */
#include "config.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/runtime/rtutil.h"

static const char source[] =
    "/* The shared kernel suite's kernels: CUDA C for NVRTC and for the host backend alike. */\n"
    "#ifndef assert\n"
    "#define assert(e) ((e) ? (void)0 : __trap())\n"
    "#endif\n"
    "#define TILE 32\n"
    "\n"
    "struct Params {\n"
    "  float4 scale;\n"
    "  int count;\n"
    "  unsigned char tag;\n"
    "};\n"
    "\n"
    "template <class T> __device__ T clamp_to(T v, T lo, T hi) { return v < lo ? lo : v > hi ? hi "
    ": v; }\n"
    "\n"
    "struct Acc {\n"
    "  float s;\n"
    "  __device__ void add(float v) { s += v; }\n"
    "};\n"
    "\n"
    "/* ---- elementwise ---- */\n"
    "extern \"C\" __global__ void k_saxpy(int n, float a, const float *__restrict__ x, float "
    "*__restrict__ y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_daxpy(unsigned long long n, double a, const double *x, double "
    "*y) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < "
    "n;\n"
    "       i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_int_ops(int n, const int *a, const int *b, int *out) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n)\n"
    "    return;\n"
    "  unsigned ua = (unsigned)a[i], ub = (unsigned)b[i];\n"
    "  out[4 * i] = (int)(ua * ub + 7u);\n"
    "  out[4 * i + 1] = a[i] ^ (b[i] >> 3);\n"
    "  out[4 * i + 2] = min(a[i], b[i]) + max(a[i] & 0xffff, b[i] & 0xffff);\n"
    "  out[4 * i + 3] = clamp_to(a[i], -1000, 1000);\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_fmath(int n, const float *x, float *o) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n)\n"
    "    return;\n"
    "  float v = x[i], a = fabsf(v) + 0.5f;\n"
    "  float *p = o + 20 * i;\n"
    "  p[0] = sqrtf(a);\n"
    "  p[1] = rsqrtf(a);\n"
    "  p[2] = expf(v);\n"
    "  p[3] = __expf(v);\n"
    "  p[4] = exp2f(v);\n"
    "  p[5] = logf(a);\n"
    "  p[6] = log2f(a);\n"
    "  p[7] = sinf(v);\n"
    "  p[8] = cosf(v);\n"
    "  p[9] = tanhf(v);\n"
    "  p[10] = powf(a, v);\n"
    "  p[11] = fmaf(v, a, 0.25f);\n"
    "  p[12] = fminf(v, 0.1f);\n"
    "  p[13] = fmaxf(v, 0.1f);\n"
    "  p[14] = floorf(v * 10.0f);\n"
    "  p[15] = ceilf(v * 10.0f);\n"
    "  p[16] = __fdividef(v, a);\n"
    "  p[17] = __saturatef(2.0f * v);\n"
    "  p[18] = min(v, -0.2f);\n"
    "  p[19] = max(v, -0.2f);\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_dmath(int n, const double *x, double *o) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n)\n"
    "    return;\n"
    "  double v = x[i], a = fabs(v) + 0.5;\n"
    "  double *p = o + 14 * i;\n"
    "  p[0] = sqrt(a);\n"
    "  p[1] = rsqrt(a);\n"
    "  p[2] = exp(v);\n"
    "  p[3] = exp2(v);\n"
    "  p[4] = log(a);\n"
    "  p[5] = log2(a);\n"
    "  p[6] = sin(v);\n"
    "  p[7] = cos(v);\n"
    "  p[8] = tanh(v);\n"
    "  p[9] = pow(a, v);\n"
    "  p[10] = fma(v, a, 0.25);\n"
    "  p[11] = fmin(v, 0.1) + fmax(v, 0.1);\n"
    "  p[12] = floor(v * 10.0);\n"
    "  p[13] = ceil(v * 10.0);\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_bits(int n, const unsigned *x, unsigned *o) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n)\n"
    "    return;\n"
    "  unsigned v = x[i];\n"
    "  unsigned *p = o + 8 * i;\n"
    "  p[0] = __popc(v);\n"
    "  p[1] = __clz((int)v);\n"
    "  p[2] = __brev(v);\n"
    "  p[3] = __ffs((int)v);\n"
    "  p[4] = __byte_perm(v, ~v, 0x5140);\n"
    "  p[5] = __umulhi(v, 0x9e3779b9u);\n"
    "  p[6] = (unsigned)__popcll(((unsigned long long)v << 32) | ~v);\n"
    "  p[7] = __float_as_uint(__uint_as_float(v) * 1.0f) == v || (v & 0x7f800000u) == 0x7f800000u "
    "||\n"
    "                 (v & 0x7f800000u) == 0\n"
    "             ? 1u\n"
    "             : 0u;\n"
    "}\n"
    "\n"
    "/* parameters by value: a struct, a vector type, small integers */\n"
    "extern \"C\" __global__ void k_params(Params p, float2 off, char c, short s, double d, float "
    "*out) {\n"
    "  int i = threadIdx.x;\n"
    "  Acc acc = {0.0f};\n"
    "  acc.add(p.scale.x * i);\n"
    "  acc.add(p.scale.y + p.scale.z + p.scale.w);\n"
    "  acc.add(off.x - off.y);\n"
    "  out[i] = acc.s + (float)(p.count + c + s + p.tag) + (float)d;\n"
    "}\n"
    "\n"
    "/* ---- 3-D indices ---- */\n"
    "extern \"C\" __global__ void k_index3d(unsigned *out) {\n"
    "  unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;\n"
    "  unsigned per = blockDim.x * blockDim.y * blockDim.z;\n"
    "  unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;\n"
    "  unsigned *o = out + 3ull * (b * per + t);\n"
    "  o[0] = blockIdx.x | blockIdx.y << 16;\n"
    "  o[1] = blockIdx.z | threadIdx.x << 16;\n"
    "  o[2] = threadIdx.y | threadIdx.z << 16;\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_stencil3d(int nx, int ny, int nz, const float *in, float *out) "
    "{\n"
    "  int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  int y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  int z = blockIdx.z * blockDim.z + threadIdx.z;\n"
    "  if (x >= nx || y >= ny || z >= nz)\n"
    "    return;\n"
    "  int i = (z * ny + y) * nx + x;\n"
    "  if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {\n"
    "    out[i] = in[i];\n"
    "    return;\n"
    "  }\n"
    "  float s = in[i - 1] + in[i + 1];\n"
    "  s += in[i - nx] + in[i + nx];\n"
    "  s += in[i - nx * ny] + in[i + nx * ny];\n"
    "  out[i] = s - 6.0f * in[i];\n"
    "}\n"
    "\n"
    "/* ---- shared-memory tiles ---- */\n"
    "extern \"C\" __global__ void k_transpose(const float *in, float *out, int w, int h) {\n"
    "  __shared__ float tile[TILE][TILE + 1];\n"
    "  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;\n"
    "  for (int j = 0; j < TILE; j += blockDim.y)\n"
    "    if (x < w && y + j < h)\n"
    "      tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];\n"
    "  __syncthreads();\n"
    "  x = blockIdx.y * TILE + threadIdx.x;\n"
    "  y = blockIdx.x * TILE + threadIdx.y;\n"
    "  for (int j = 0; j < TILE; j += blockDim.y)\n"
    "    if (x < h && y + j < w)\n"
    "      out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_matmul(int n, const float *a, const float *b, float *c) {\n"
    "  __shared__ float as[16][16], bs[16][16];\n"
    "  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;\n"
    "  float acc = 0.0f;\n"
    "  for (int t = 0; t < n; t += 16) {\n"
    "    as[threadIdx.y][threadIdx.x] = row < n && t + (int)threadIdx.x < n ? a[row * n + t + "
    "threadIdx.x] : 0.0f;\n"
    "    bs[threadIdx.y][threadIdx.x] = col < n && t + (int)threadIdx.y < n ? b[(t + threadIdx.y) "
    "* n + col] : 0.0f;\n"
    "    __syncthreads();\n"
    "    for (int k = 0; k < 16; ++k)\n"
    "      acc += as[threadIdx.y][k] * bs[k][threadIdx.x];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (row < n && col < n)\n"
    "    c[row * n + col] = acc;\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_histogram(int n, const unsigned *x, unsigned *bins) {\n"
    "  __shared__ unsigned local[256];\n"
    "  for (int b = threadIdx.x; b < 256; b += blockDim.x)\n"
    "    local[b] = 0;\n"
    "  __syncthreads();\n"
    "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "    atomicAdd(&local[x[i] & 255u], 1u);\n"
    "  __syncthreads();\n"
    "  for (int b = threadIdx.x; b < 256; b += blockDim.x)\n"
    "    atomicAdd(&bins[b], local[b]);\n"
    "}\n"
    "\n"
    "/* ---- reductions with barriers ---- */\n"
    "extern \"C\" __global__ void k_reduce_sum(int n, const float *x, float *out) {\n"
    "  __shared__ float s[256];\n"
    "  float v = 0.0f;\n"
    "  for (int i = blockIdx.x * 256 + threadIdx.x; i < n; i += gridDim.x * 256)\n"
    "    v += x[i];\n"
    "  s[threadIdx.x] = v;\n"
    "  __syncthreads();\n"
    "  for (int w = 128; w > 0; w >>= 1) {\n"
    "    if ((int)threadIdx.x < w)\n"
    "      s[threadIdx.x] += s[threadIdx.x + w];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0)\n"
    "    out[blockIdx.x] = s[0];\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_reduce_max(int n, const int *x, int *out) {\n"
    "  __shared__ int s[128];\n"
    "  int v = -2147483647 - 1;\n"
    "  for (int i = blockIdx.x * 128 + threadIdx.x; i < n; i += gridDim.x * 128)\n"
    "    v = max(v, x[i]);\n"
    "  s[threadIdx.x] = v;\n"
    "  __syncthreads();\n"
    "  for (int w = 64; w > 0; w >>= 1) {\n"
    "    if ((int)threadIdx.x < w)\n"
    "      s[threadIdx.x] = max(s[threadIdx.x], s[threadIdx.x + w]);\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0)\n"
    "    atomicMax(out, s[0]);\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_barrier_votes(const int *pred, int *out) {\n"
    "  int p = pred[blockIdx.x * blockDim.x + threadIdx.x];\n"
    "  int c = __syncthreads_count(p), a = __syncthreads_and(p), o = __syncthreads_or(p);\n"
    "  if (threadIdx.x == 0) {\n"
    "    out[3 * blockIdx.x] = c;\n"
    "    out[3 * blockIdx.x + 1] = a;\n"
    "    out[3 * blockIdx.x + 2] = o;\n"
    "  }\n"
    "}\n"
    "\n"
    "/* inclusive scan of 256 ints per block, double-buffered */\n"
    "extern \"C\" __global__ void k_scan(const int *x, int *out) {\n"
    "  __shared__ int buf[2][256];\n"
    "  int t = threadIdx.x, cur = 0;\n"
    "  buf[0][t] = x[blockIdx.x * 256 + t];\n"
    "  __syncthreads();\n"
    "  for (int off = 1; off < 256; off <<= 1) {\n"
    "    int v = buf[cur][t];\n"
    "    if (t >= off)\n"
    "      v += buf[cur][t - off];\n"
    "    buf[1 - cur][t] = v;\n"
    "    cur = 1 - cur;\n"
    "    __syncthreads();\n"
    "  }\n"
    "  out[blockIdx.x * 256 + t] = buf[cur][t];\n"
    "}\n"
    "\n"
    "/* whole warps return before the barriers; the rest still sync */\n"
    "extern \"C\" __global__ void k_early_exit(const int *x, int *out, int live_warps) {\n"
    "  __shared__ int s[128];\n"
    "  int t = threadIdx.x;\n"
    "  if (t / 32 >= live_warps)\n"
    "    return;\n"
    "  s[t] = x[blockIdx.x * 128 + t];\n"
    "  __syncthreads();\n"
    "  if (t == 0) {\n"
    "    int sum = 0;\n"
    "    for (int k = 0; k < live_warps * 32; ++k)\n"
    "      sum += s[k];\n"
    "    s[0] = sum;\n"
    "  }\n"
    "  __syncthreads();\n"
    "  out[blockIdx.x * 128 + t] = s[0] + t;\n"
    "}\n"
    "\n"
    "/* ---- warp shuffles ---- */\n"
    "__device__ float warp_sum(float v) {\n"
    "  for (int o = 16; o > 0; o >>= 1)\n"
    "    v += __shfl_down_sync(0xffffffffu, v, o);\n"
    "  return v;\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_warp_reduce(int n, const float *x, float *out) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  float s = warp_sum(i < n ? x[i] : 0.0f);\n"
    "  if ((threadIdx.x & 31) == 0)\n"
    "    out[i / 32] = s;\n"
    "}\n"
    "\n"
    "/* args[t]: the lane argument, args[64 + t]: the width, for each thread */\n"
    "extern \"C\" __global__ void k_shuffles(const int *in, const int *args, int *out, unsigned "
    "mask) {\n"
    "  int t = threadIdx.x, lane = t & 31;\n"
    "  if (!((mask >> lane) & 1u))\n"
    "    return;\n"
    "  int v = in[t], a = args[t], w = args[64 + t];\n"
    "  out[t] = __shfl_sync(mask, v, a, w);\n"
    "  out[64 + t] = __shfl_up_sync(mask, v, (unsigned)a, w);\n"
    "  out[128 + t] = __shfl_down_sync(mask, v, (unsigned)a, w);\n"
    "  out[192 + t] = __shfl_xor_sync(mask, v, a, w);\n"
    "  float f = __shfl_xor_sync(mask, (float)v * 0.5f, a, w);\n"
    "  double d = __shfl_sync(mask, (double)v * 0.25, a, w);\n"
    "  out[256 + t] = (int)(f * 2.0f);\n"
    "  out[320 + t] = (int)(d * 4.0);\n"
    "}\n"
    "\n"
    "/* a block's last warp may be partial: masks name only its lanes */\n"
    "extern \"C\" __global__ void k_votes(const unsigned *in, unsigned *out, unsigned all_mask) {\n"
    "  unsigned t = threadIdx.x, lane = t & 31, x = in[t], left = blockDim.x - (t & ~31u);\n"
    "  unsigned mask = all_mask & (left >= 32 ? 0xffffffffu : (1u << left) - 1);\n"
    "  unsigned *o = out + 8 * t;\n"
    "  o[7] = __activemask();\n"
    "  if (!((mask >> lane) & 1u))\n"
    "    return;\n"
    "  o[0] = __ballot_sync(mask, x & 1u);\n"
    "  o[1] = __any_sync(mask, (x & 7u) == 0);\n"
    "  o[2] = __all_sync(mask, x & 0x10000u);\n"
    "  o[3] = __reduce_add_sync(mask, x >> 20);\n"
    "  o[4] = (unsigned)__reduce_min_sync(mask, (int)x);\n"
    "  o[5] = __reduce_max_sync(mask, x);\n"
    "  o[6] = __match_any_sync(mask, x & 3u);\n"
    "  __syncwarp(mask);\n"
    "}\n"
    "\n"
    "/* ---- atomics under contention across blocks ---- */\n"
    "extern \"C\" __global__ void k_atomics(int *i, unsigned *u, unsigned long long *ull, float "
    "*f, double *d,\n"
    "                                     const unsigned *vals) {\n"
    "  unsigned g = blockIdx.x * blockDim.x + threadIdx.x, v = vals[g];\n"
    "  atomicAdd(&i[0], 1);\n"
    "  atomicSub(&i[1], 2);\n"
    "  atomicMax(&i[2], (int)v);\n"
    "  atomicMin(&i[3], (int)v);\n"
    "  atomicAdd(&u[0], v & 0xffu);\n"
    "  atomicMax(&u[1], v);\n"
    "  atomicMin(&u[2], v);\n"
    "  atomicOr(&u[3], 1u << (v & 31u));\n"
    "  atomicAnd(&u[4], ~(1u << (v % 31u)));\n"
    "  atomicXor(&u[5], v);\n"
    "  atomicInc(&u[6], 100u);\n"
    "  atomicDec(&u[7], 77u);\n"
    "  atomicAdd(&ull[0], (unsigned long long)v << 8);\n"
    "  atomicMax(&ull[1], (unsigned long long)v * v);\n"
    "  atomicAdd(&f[0], 1.0f);\n"
    "  atomicAdd(&d[0], 0.5);\n"
    "  int old = atomicCAS(&i[4], 0, 0), seen;\n"
    "  do {\n"
    "    seen = old;\n"
    "    old = atomicCAS(&i[4], seen, seen + 3);\n"
    "  } while (old != seen);\n"
    "  unsigned long long o = atomicExch(&ull[2], (unsigned long long)g);\n"
    "  atomicAdd(&ull[3], o);\n"
    "}\n"
    "\n"
    "/* ---- dynamic shared memory ---- */\n"
    "extern __shared__ __align__(16) unsigned char dyn_area[];\n"
    "\n"
    "extern \"C\" __global__ void k_dyn_reverse(const int *in, int *out, int n) {\n"
    "  extern __shared__ int buf[];\n"
    "  int t = threadIdx.x;\n"
    "  buf[t] = in[blockIdx.x * n + t];\n"
    "  __syncthreads();\n"
    "  out[blockIdx.x * n + t] = buf[n - 1 - t];\n"
    "}\n"
    "\n"
    "/* ints in the first half of the area, floats in the second, through two\n"
    " * extern arrays that alias */\n"
    "extern \"C\" __global__ void k_dyn_split(const int *in, float *out, int n) {\n"
    "  extern __shared__ float fl[];\n"
    "  int *ints = (int *)dyn_area;\n"
    "  int t = threadIdx.x;\n"
    "  ints[t] = in[blockIdx.x * n + t];\n"
    "  fl[n + t] = (float)ints[t] * 0.5f;\n"
    "  __syncthreads();\n"
    "  out[blockIdx.x * n + t] = fl[n + (n - 1 - t)] + (float)ints[(t + 1) % n];\n"
    "}\n"
    "\n"
    "/* ---- printf, assert, trap ---- */\n"
    "extern \"C\" __global__ void k_printf(int base) {\n"
    "  printf(\"k_printf block %d thread %d value %d\\n\", (int)blockIdx.x, (int)threadIdx.x,\n"
    "         base + (int)threadIdx.x);\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_assert(const int *v, int n, int limit) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n)\n"
    "    assert(v[i] < limit);\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void k_trap(int b, int t, int *out) {\n"
    "  if ((int)blockIdx.x == b && (int)threadIdx.x == t)\n"
    "    __trap();\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;\n"
    "}\n"
    "\n"
    "/* ---- a wild write ---- */\n"
    "extern \"C\" __global__ void k_wild(int *p, unsigned long long at, int b, int t) {\n"
    "  if ((int)blockIdx.x == b && (int)threadIdx.x == t)\n"
    "    p[at] = 1;\n"
    "}\n";

/* ---- helpers --------------------------------------------------------------- */

typedef struct kmod {
  t4a_runtime rt;
  t4a_artifact a;
  t4a_module m;
} kmod;

static kmod open_kernels(void) {
  kmod k;
  k.rt = rt_create();
  t4a_compile_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.source = source;
  o.name = "kernels.cu";
  o.device_ordinal = 0;
  RT_OK(T->artifact_compile(&o, &k.a));
  RT_OK(T->module_load(k.rt, k.a, &k.m));
  return k;
}

static void close_kernels(kmod *k) {
  RT_OK(T->module_unload(k->rt, k->m));
  RT_OK(T->artifact_release(k->a));
  RT_OK(T->runtime_destroy(k->rt, T4A_WAIT_FOREVER));
}

static t4a_function fn(const kmod *k, const char *name) {
  t4a_function f = {0};
  RT_OK(T->function_get(k->rt, k->m, name, &f));
  return f;
}

/* A device buffer holding bytes of host (NULL: 0xee-poisoned). */
typedef struct dbuf {
  t4a_buffer b;
  uint64_t addr, bytes;
} dbuf;

static dbuf upload(const kmod *k, const void *host, uint64_t bytes) {
  dbuf d = {{0}, 0, bytes};
  RT_OK(T->buffer_alloc(k->rt, bytes ? bytes : 4, &d.b));
  RT_OK(T->buffer_device_address(k->rt, d.b, &d.addr));
  if (host)
    RT_OK(T->copy_h2d(k->rt, d.b, 0, host, bytes));
  else
    RT_OK(T->memset(k->rt, d.b, 0, 0xee, 1, bytes));
  return d;
}

static void download(const kmod *k, void *host, const dbuf *d) {
  memset(host, 0x5a, d->bytes); /* poisoned: stale host bytes never pass */
  RT_OK(T->copy_d2h(k->rt, host, d->b, 0, d->bytes));
}

static void drop(const kmod *k, dbuf *d) { RT_OK(T->buffer_free(k->rt, d->b)); }

static void launch3(const kmod *k, const char *name, const uint32_t grid[3],
                    const uint32_t block[3], uint32_t shared, void **args) {
  t4a_launch_config c = {.struct_size = sizeof c, .shared_bytes = shared};
  memcpy(c.grid, grid, sizeof c.grid);
  memcpy(c.block, block, sizeof c.block);
  RT_OK(T->launch(k->rt, fn(k, name), &c, args));
}

static void launch(const kmod *k, const char *name, uint32_t grid, uint32_t block, uint32_t shared,
                   void **args) {
  const uint32_t g[3] = {grid, 1, 1}, b[3] = {block, 1, 1};
  launch3(k, name, g, b, shared, args);
}

static uint32_t *rand_u32(size_t n, uint64_t seed) {
  uint32_t *p = calloc(n + 1, 4);
  ck_assert_ptr_nonnull(p);
  t4a_test_fill_random(p, n * 4, seed);
  return p;
}

/* Uniform in [-1, 1). */
static float *rand_f32(size_t n, uint64_t seed) {
  uint32_t *b = rand_u32(n, seed);
  float *f = calloc(n + 1, 4);
  ck_assert_ptr_nonnull(f);
  for (size_t i = 0; i < n; i++)
    f[i] = (float)(b[i] >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  free(b);
  return f;
}

static double *rand_f64(size_t n, uint64_t seed) {
  float *f = rand_f32(n, seed);
  double *d = calloc(n + 1, 8);
  ck_assert_ptr_nonnull(d);
  for (size_t i = 0; i < n; i++)
    d[i] = (double)f[i] * 2.0 + 1e-3 * (double)(i % 7);
  free(f);
  return d;
}

/* Bit for bit (memcmp on floats is what clang-tidy would flag). */
static int same_bits(float a, float b) {
  uint32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  return x == y;
}

static int near_f(float got, float want, float tol) {
  return fabsf(got - want) <= tol * (1.0f + fabsf(want)) || (isnan(got) && isnan(want));
}

/* ---- elementwise ------------------------------------------------------------ */

START_TEST(saxpy_and_daxpy) {
  kmod k = open_kernels();
  int n = 100003;
  float a = 1.75f, *x = rand_f32((size_t)n, 1), *y = rand_f32((size_t)n, 2),
        *out = malloc((size_t)n * 4);
  dbuf dx = upload(&k, x, (uint64_t)n * 4), dy = upload(&k, y, (uint64_t)n * 4);
  void *args[] = {&n, &a, &dx.addr, &dy.addr};
  launch(&k, "k_saxpy", (uint32_t)(n + 255) / 256, 256, 0, args);
  download(&k, out, &dy);
  for (int i = 0; i < n; i++)
    ck_assert_msg(near_f(out[i], a * x[i] + y[i], 1e-6f), "saxpy[%d] = %g", i, (double)out[i]);
  drop(&k, &dx), drop(&k, &dy);
  unsigned long long m = 77777;
  double da = -0.625, *dxh = rand_f64(m, 3), *dyh = rand_f64(m, 4), *dout = malloc(m * 8);
  dbuf ex = upload(&k, dxh, m * 8), ey = upload(&k, dyh, m * 8);
  void *dargs[] = {&m, &da, &ex.addr, &ey.addr};
  launch(&k, "k_daxpy", 40, 128, 0, dargs); /* grid-stride: fewer threads than elements */
  download(&k, dout, &ey);
  for (unsigned long long i = 0; i < m; i++)
    ck_assert_msg(fabs(dout[i] - (da * dxh[i] + dyh[i])) <= 1e-15 * (1 + fabs(dout[i])),
                  "daxpy[%llu]", i);
  drop(&k, &ex), drop(&k, &ey);
  free(x), free(y), free(out), free(dxh), free(dyh), free(dout);
  close_kernels(&k);
}
END_TEST

START_TEST(integer_ops_bit_exact) {
  kmod k = open_kernels();
  int n = 5000;
  int *a = (int *)rand_u32((size_t)n, 5), *b = (int *)rand_u32((size_t)n, 6),
      *out = malloc((size_t)n * 16);
  for (int i = 0; i < n; i += 3)
    a[i] %= 2000; /* some inside clamp_to's range */
  dbuf da = upload(&k, a, (uint64_t)n * 4), db = upload(&k, b, (uint64_t)n * 4),
       dout = upload(&k, NULL, (uint64_t)n * 16);
  void *args[] = {&n, &da.addr, &db.addr, &dout.addr};
  launch(&k, "k_int_ops", (uint32_t)(n + 127) / 128, 128, 0, args);
  download(&k, out, &dout);
  for (int i = 0; i < n; i++) {
    int lo = (a[i] & 0xffff) > (b[i] & 0xffff) ? a[i] & 0xffff : b[i] & 0xffff;
    int want[4] = {(int)((unsigned)a[i] * (unsigned)b[i] + 7u), a[i] ^ (b[i] >> 3),
                   (a[i] < b[i] ? a[i] : b[i]) + lo,
                   a[i] < -1000  ? -1000
                   : a[i] > 1000 ? 1000
                                 : a[i]};
    ck_assert_msg(memcmp(&out[(size_t)4 * i], want, 16) == 0, "int ops [%d]", i);
  }
  drop(&k, &da), drop(&k, &db), drop(&k, &dout);
  free(a), free(b), free(out);
  close_kernels(&k);
}
END_TEST

START_TEST(math_functions_within_tolerance) {
  kmod k = open_kernels();
  int n = 1024;
  float *x = rand_f32((size_t)n, 7), *o = malloc((size_t)n * 20 * 4);
  dbuf dx = upload(&k, x, (uint64_t)n * 4), dout = upload(&k, NULL, (uint64_t)n * 80);
  void *args[] = {&n, &dx.addr, &dout.addr};
  launch(&k, "k_fmath", (uint32_t)n / 128, 128, 0, args);
  download(&k, o, &dout);
  for (int i = 0; i < n; i++) {
    float v = x[i], a = fabsf(v) + 0.5f;
    float want[20] = {sqrtf(a),
                      1.0f / sqrtf(a),
                      expf(v),
                      expf(v),
                      exp2f(v),
                      logf(a),
                      log2f(a),
                      sinf(v),
                      cosf(v),
                      tanhf(v),
                      powf(a, v),
                      fmaf(v, a, 0.25f),
                      fminf(v, 0.1f),
                      fmaxf(v, 0.1f),
                      floorf(v * 10.0f),
                      ceilf(v * 10.0f),
                      v / a,
                      2.0f * v < 0   ? 0
                      : 2.0f * v > 1 ? 1
                                     : 2.0f * v,
                      v < -0.2f ? v : -0.2f,
                      v > -0.2f ? v : -0.2f};
    for (int j = 0; j < 20; j++) /* CUDA's documented ulp bounds are within this */
      ck_assert_msg(near_f(o[20 * i + j], want[j], 1e-5f), "x %a fn %d: %a, want %a", (double)v, j,
                    (double)o[20 * i + j], (double)want[j]);
  }
  double *dx2 = rand_f64((size_t)n, 8), *od = malloc((size_t)n * 14 * 8);
  dbuf ex = upload(&k, dx2, (uint64_t)n * 8), eo = upload(&k, NULL, (uint64_t)n * 14 * 8);
  void *dargs[] = {&n, &ex.addr, &eo.addr};
  launch(&k, "k_dmath", (uint32_t)n / 128, 128, 0, dargs);
  download(&k, od, &eo);
  for (int i = 0; i < n; i++) {
    double v = dx2[i], a = fabs(v) + 0.5;
    double want[14] = {sqrt(a),         1.0 / sqrt(a), exp(v),          exp2(v),
                       log(a),          log2(a),       sin(v),          cos(v),
                       tanh(v),         pow(a, v),     fma(v, a, 0.25), fmin(v, 0.1) + fmax(v, 0.1),
                       floor(v * 10.0), ceil(v * 10.0)};
    for (int j = 0; j < 14; j++)
      ck_assert_msg(fabs(od[14 * i + j] - want[j]) <= 1e-14 * (1.0 + fabs(want[j])),
                    "x %a dfn %d: %a, want %a", v, j, od[14 * i + j], want[j]);
  }
  drop(&k, &dx), drop(&k, &dout), drop(&k, &ex), drop(&k, &eo);
  free(x), free(o), free(dx2), free(od);
  close_kernels(&k);
}
END_TEST

START_TEST(bit_intrinsics_bit_exact) {
  kmod k = open_kernels();
  int n = 2048;
  uint32_t *x = rand_u32((size_t)n, 9), *o = malloc((size_t)n * 32);
  x[0] = 0, x[1] = 1, x[2] = 0x80000000u, x[3] = 0xffffffffu;
  dbuf dx = upload(&k, x, (uint64_t)n * 4), dout = upload(&k, NULL, (uint64_t)n * 32);
  void *args[] = {&n, &dx.addr, &dout.addr};
  launch(&k, "k_bits", (uint32_t)n / 256, 256, 0, args);
  download(&k, o, &dout);
  for (int i = 0; i < n; i++) {
    uint32_t v = x[i], nv = ~v, rev = 0, bp = 0;
    for (int b = 0; b < 32; b++)
      rev |= ((v >> b) & 1u) << (31 - b);
    const unsigned sel[4] = {0, 4, 1, 5}; /* 0x5140, lowest nibble first */
    for (int b = 0; b < 4; b++)
      bp |= (sel[b] < 4 ? (v >> (8 * sel[b])) & 0xffu : (nv >> (8 * (sel[b] - 4))) & 0xffu)
            << (8 * b);
    uint32_t want[8] = {(uint32_t)__builtin_popcount(v),
                        v ? (uint32_t)__builtin_clz(v) : 32u,
                        rev,
                        v ? (uint32_t)__builtin_ctz(v) + 1 : 0u,
                        bp,
                        (uint32_t)(((uint64_t)v * 0x9e3779b9u) >> 32),
                        32u,
                        1u};
    ck_assert_msg(memcmp(&o[(size_t)8 * i], want, 32) == 0,
                  "bits of %08x: %u %u %08x %u %08x %08x %u %u", v, o[(size_t)8 * i], o[8 * i + 1],
                  o[8 * i + 2], o[8 * i + 3], o[8 * i + 4], o[8 * i + 5], o[8 * i + 6],
                  o[8 * i + 7]);
  }
  drop(&k, &dx), drop(&k, &dout);
  free(x), free(o);
  close_kernels(&k);
}
END_TEST

/* The kernel's struct, by value: the same layout on both backends. */
typedef struct {
  _Alignas(16) float scale[4];
  int count;
  unsigned char tag;
} params_host;

START_TEST(parameters_by_value) {
  kmod k = open_kernels();
  params_host p;
  memset(&p, 0, sizeof p);
  p.scale[0] = 0.5f, p.scale[1] = 1.0f, p.scale[2] = 2.0f, p.scale[3] = 4.0f;
  p.count = 1000, p.tag = 200;
  float off[2] = {10.0f, 3.0f};
  char c = -5;
  short s = 3000;
  double d = 0.25;
  dbuf dout = upload(&k, NULL, (size_t)64 * 4);
  void *args[] = {&p, off, &c, &s, &d, &dout.addr};
  launch(&k, "k_params", 1, 64, 0, args);
  float out[64];
  download(&k, out, &dout);
  for (int i = 0; i < 64; i++) {
    float want = 0.5f * (float)i + 7.0f + 7.0f + (float)(1000 - 5 + 3000 + 200) + 0.25f;
    ck_assert_msg(near_f(out[i], want, 1e-6f), "out[%d] = %g, want %g", i, (double)out[i],
                  (double)want);
  }
  drop(&k, &dout);
  close_kernels(&k);
}
END_TEST

/* ---- 3-D indices --------------------------------------------------------------- */

START_TEST(indices_3d_bit_exact) {
  kmod k = open_kernels();
  const uint32_t grid[3] = {3, 4, 5}, block[3] = {8, 4, 2};
  uint64_t per = 64, threads = 60 * per, bytes = threads * 12;
  dbuf dout = upload(&k, NULL, bytes);
  void *args[] = {&dout.addr};
  launch3(&k, "k_index3d", grid, block, 0, args);
  uint32_t *h = malloc(bytes);
  download(&k, h, &dout);
  for (uint32_t bz = 0; bz < 5; bz++)
    for (uint32_t by = 0; by < 4; by++)
      for (uint32_t bx = 0; bx < 3; bx++)
        for (uint32_t tz = 0; tz < 2; tz++)
          for (uint32_t ty = 0; ty < 4; ty++)
            for (uint32_t tx = 0; tx < 8; tx++) {
              uint64_t t = ((bz * 4ull + by) * 3 + bx) * per + (size_t)(tz * 4 + ty) * 8 + tx;
              uint32_t want[3] = {bx | by << 16, bz | tx << 16, ty | tz << 16};
              ck_assert(memcmp(&h[3 * t], want, 12) == 0);
            }
  free(h);
  drop(&k, &dout);
  int nx = 37, ny = 19, nz = 11, nv = nx * ny * nz;
  float *in = rand_f32((size_t)nv, 10), *out = malloc((size_t)nv * 4);
  dbuf din = upload(&k, in, (uint64_t)nv * 4), dst = upload(&k, NULL, (uint64_t)nv * 4);
  const uint32_t g2[3] = {5, 5, 3}, b2[3] = {8, 4, 4};
  void *a2[] = {&nx, &ny, &nz, &din.addr, &dst.addr};
  launch3(&k, "k_stencil3d", g2, b2, 0, a2);
  download(&k, out, &dst);
  for (int z = 0; z < nz; z++)
    for (int y = 0; y < ny; y++)
      for (int x = 0; x < nx; x++) {
        int i = (z * ny + y) * nx + x;
        float want = in[i];
        if (x && y && z && x < nx - 1 && y < ny - 1 && z < nz - 1) {
          float s = in[i - 1] + in[i + 1];
          s += in[i - nx] + in[i + nx];
          s += in[i - nx * ny] + in[i + nx * ny];
          want = s - 6.0f * in[i];
        }
        ck_assert_msg(near_f(out[i], want, 1e-6f), "stencil (%d,%d,%d)", x, y, z);
      }
  drop(&k, &din), drop(&k, &dst);
  free(in), free(out);
  close_kernels(&k);
}
END_TEST

/* ---- shared-memory tiles -------------------------------------------------------- */

START_TEST(transpose_matmul_histogram) {
  kmod k = open_kernels();
  int w = 200, h = 130;
  float *in = rand_f32((size_t)w * (size_t)h, 11), *out = malloc((size_t)w * (size_t)h * 4);
  dbuf din = upload(&k, in, (uint64_t)(w * h) * 4), dout = upload(&k, NULL, (uint64_t)(w * h) * 4);
  const uint32_t g[3] = {(uint32_t)(w + 31) / 32, (uint32_t)(h + 31) / 32, 1}, b[3] = {32, 8, 1};
  void *a[] = {&din.addr, &dout.addr, &w, &h};
  launch3(&k, "k_transpose", g, b, 0, a);
  download(&k, out, &dout);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      ck_assert(out[x * h + y] == in[y * w + x]);
  drop(&k, &din), drop(&k, &dout);
  free(in), free(out);

  int n = 75;
  float *ma = rand_f32((size_t)n * (size_t)n, 12), *mb = rand_f32((size_t)n * (size_t)n, 13),
        *mc = malloc((size_t)n * (size_t)n * 4);
  dbuf da = upload(&k, ma, (uint64_t)(n * n) * 4), db = upload(&k, mb, (uint64_t)(n * n) * 4),
       dc = upload(&k, NULL, (uint64_t)(n * n) * 4);
  const uint32_t mg[3] = {5, 5, 1}, mbk[3] = {16, 16, 1};
  void *ma_args[] = {&n, &da.addr, &db.addr, &dc.addr};
  launch3(&k, "k_matmul", mg, mbk, 0, ma_args);
  download(&k, mc, &dc);
  for (int r = 0; r < n; r++)
    for (int c = 0; c < n; c++) {
      double s = 0;
      for (int q = 0; q < n; q++)
        s += (double)ma[r * n + q] * (double)mb[q * n + c];
      ck_assert_msg(fabs((double)mc[r * n + c] - s) <= 1e-4, "c[%d][%d] = %g, want %g", r, c,
                    (double)mc[r * n + c], s);
    }
  drop(&k, &da), drop(&k, &db), drop(&k, &dc);
  free(ma), free(mb), free(mc);

  int hn = 300000;
  uint32_t *hx = rand_u32((size_t)hn, 14), bins[256], want[256] = {0};
  for (int i = 0; i < hn; i++)
    want[hx[i] & 255u]++;
  dbuf dhx = upload(&k, hx, (uint64_t)hn * 4), dbins = upload(&k, NULL, 1024);
  RT_OK(T->memset(k.rt, dbins.b, 0, 0, 4, 256));
  void *ha[] = {&hn, &dhx.addr, &dbins.addr};
  launch(&k, "k_histogram", 64, 192, 0, ha);
  download(&k, bins, &dbins);
  ck_assert(memcmp(bins, want, sizeof want) == 0);
  drop(&k, &dhx), drop(&k, &dbins);
  free(hx);
  close_kernels(&k);
}
END_TEST

/* ---- reductions with barriers ----------------------------------------------------- */

START_TEST(reductions_with_barriers) {
  kmod k = open_kernels();
  int n = 1 << 20, blocks = 96;
  float *x = rand_f32((size_t)n, 15), out[96];
  dbuf dx = upload(&k, x, (uint64_t)n * 4), dout = upload(&k, NULL, sizeof out);
  void *a[] = {&n, &dx.addr, &dout.addr};
  launch(&k, "k_reduce_sum", (uint32_t)blocks, 256, 0, a);
  download(&k, out, &dout);
  for (int b = 0; b < blocks; b++) { /* the kernel's order of additions: bit-exact */
    float s[256];
    for (int t = 0; t < 256; t++) {
      float v = 0.0f;
      for (int i = b * 256 + t; i < n; i += blocks * 256)
        v += x[i];
      s[t] = v;
    }
    for (int w = 128; w > 0; w >>= 1)
      for (int t = 0; t < w; t++)
        s[t] += s[t + w];
    ck_assert_msg(same_bits(out[b], s[0]), "block %d: %a, want %a", b, (double)out[b],
                  (double)s[0]);
  }
  drop(&k, &dx), drop(&k, &dout);
  free(x);

  int m = 500000, *xi = (int *)rand_u32((size_t)m, 16), mx = -2147483647 - 1, init = mx;
  for (int i = 0; i < m; i++)
    mx = xi[i] > mx ? xi[i] : mx;
  dbuf dxi = upload(&k, xi, (uint64_t)m * 4), dm = upload(&k, &init, 4);
  void *ma[] = {&m, &dxi.addr, &dm.addr};
  launch(&k, "k_reduce_max", 50, 128, 0, ma);
  int got;
  download(&k, &got, &dm);
  ck_assert_int_eq(got, mx);
  drop(&k, &dxi), drop(&k, &dm);
  free(xi);

  const int vb = 8;
  int *pred = malloc((size_t)vb * 256 * 4), vout[8 * 3];
  uint32_t *r = rand_u32((size_t)vb * 256, 17);
  for (int i = 0; i < vb * 256; i++)
    pred[i] = (r[i] & 3) ? (int)(r[i] >> 4) : 0;
  for (int t = 0; t < 256; t++)
    pred[t] = 9, pred[256 + t] = 0, pred[512 + t] = t == 77; /* all, none, one */
  dbuf dp = upload(&k, pred, (size_t)vb * 256 * 4), dv = upload(&k, NULL, sizeof vout);
  void *va[] = {&dp.addr, &dv.addr};
  launch(&k, "k_barrier_votes", vb, 256, 0, va);
  download(&k, vout, &dv);
  for (int b = 0; b < vb; b++) {
    int c = 0, all = 1, any = 0;
    for (int t = 0; t < 256; t++)
      c += pred[b * 256 + t] != 0, all &= pred[b * 256 + t] != 0, any |= pred[b * 256 + t] != 0;
    ck_assert_int_eq(vout[(size_t)3 * b], c);
    ck_assert_int_eq(vout[3 * b + 1] != 0, all);
    ck_assert_int_eq(vout[3 * b + 2] != 0, any);
  }
  drop(&k, &dp), drop(&k, &dv);
  free(pred), free(r);
  close_kernels(&k);
}
END_TEST

START_TEST(scan_and_early_exit) {
  kmod k = open_kernels();
  const int blocks = 20;
  int *x = (int *)rand_u32((size_t)blocks * 256, 18), *out = malloc((size_t)blocks * 256 * 4);
  for (int i = 0; i < blocks * 256; i++)
    x[i] %= 1000;
  dbuf dx = upload(&k, x, (size_t)blocks * 256 * 4),
       dout = upload(&k, NULL, (size_t)blocks * 256 * 4);
  void *a[] = {&dx.addr, &dout.addr};
  launch(&k, "k_scan", blocks, 256, 0, a);
  download(&k, out, &dout);
  for (int b = 0; b < blocks; b++) {
    int s = 0;
    for (int t = 0; t < 256; t++) {
      s += x[b * 256 + t];
      ck_assert_int_eq(out[b * 256 + t], s);
    }
  }
  drop(&k, &dx), drop(&k, &dout);
  dbuf ex = upload(&k, x, (size_t)blocks * 128 * 4),
       eo = upload(&k, NULL, (size_t)blocks * 128 * 4);
  for (int live = 1; live <= 4; live++) {
    RT_OK(T->memset(k.rt, eo.b, 0, 0xdeadbeef, 4, (size_t)blocks * 128));
    void *ea[] = {&ex.addr, &eo.addr, &live};
    launch(&k, "k_early_exit", blocks, 128, 0, ea);
    download(&k, out, &eo);
    for (int b = 0; b < blocks; b++) {
      int s = 0;
      for (int t = 0; t < live * 32; t++)
        s += x[b * 128 + t];
      for (int t = 0; t < 128; t++)
        ck_assert_int_eq(out[b * 128 + t], t < live * 32 ? s + t : (int)0xdeadbeef);
    }
  }
  drop(&k, &ex), drop(&k, &eo);
  free(x), free(out);
  close_kernels(&k);
}
END_TEST

/* ---- warp shuffles and votes ---------------------------------------------------------- */

START_TEST(warp_reduction_bit_exact) {
  kmod k = open_kernels();
  int n = 64 * 1000 + 40;
  float *x = rand_f32((size_t)n, 19), *out = malloc(((size_t)n / 32 + 2) * 4);
  dbuf dx = upload(&k, x, (uint64_t)n * 4), dout = upload(&k, NULL, ((uint64_t)n / 32 + 2) * 4);
  void *a[] = {&n, &dx.addr, &dout.addr};
  launch(&k, "k_warp_reduce", (uint32_t)(n + 255) / 256, 256, 0, a);
  download(&k, out, &dout);
  for (int w = 0; w < (n + 31) / 32; w++) {
    float v[32];
    for (int l = 0; l < 32; l++)
      v[l] = w * 32 + l < n ? x[w * 32 + l] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) /* shfl_down: every lane reads the old value */
      for (int l = 0; l < 32; l++)
        v[l] += l + o < 32 ? v[l + o] : v[l];
    ck_assert_msg(same_bits(out[w], v[0]), "warp %d: %a want %a", w, (double)out[w], (double)v[0]);
  }
  drop(&k, &dx), drop(&k, &dout);
  free(x), free(out);
  close_kernels(&k);
}
END_TEST

/* CUDA's documented shuffle rules: segments of `width` lanes; idx reads
 * lane srcLane % width of the segment; up reads lane - d unless that
 * leaves the segment (then the caller's own value), down lane + d likewise;
 * xor reads lane ^ m unless that lies in a later segment. */
static int shfl_ref(int op, int lane, int arg, int width) {
  int seg = lane / width * width;
  switch (op) {
  case 0: return seg + arg % width;
  case 1: return lane - arg >= seg ? lane - arg : lane;
  case 2: return lane + arg < seg + width ? lane + arg : lane;
  default: return (lane ^ arg) < seg + width ? (lane ^ arg) : lane;
  }
}

START_TEST(shuffles_full_and_partial_masks) {
  kmod k = open_kernels();
  uint32_t *r = rand_u32((size_t)64 * 8, 20);
  int in[64], args[128], out[384];
  for (int i = 0; i < 64; i++)
    in[i] = (int)(r[i] >> 8); /* < 2^24: exact as float and double */
  /* full warps with every width; the lower half-warp (sources stay in
   * it); the even lanes with even arguments (likewise) */
  static const struct {
    unsigned mask;
    int widths[6], even, low;
  } cases[] = {{0xffffffffu, {32, 16, 8, 4, 2, 1}, 0, 0},
               {0x0000ffffu, {16, 8, 4, 2, 1, 16}, 0, 1},
               {0x55555555u, {32, 32, 32, 32, 32, 32}, 1, 0}};
  dbuf din = upload(&k, in, sizeof in), dargs = upload(&k, NULL, sizeof args),
       dout = upload(&k, NULL, sizeof out);
  for (size_t c = 0; c < 3; c++)
    for (int wi = 0; wi < 6; wi++) {
      int w = cases[c].widths[wi];
      for (int t = 0; t < 64; t++) {
        args[t] = (int)(r[64 + t + (unsigned)wi * 32] % 32);
        if (cases[c].even)
          args[t] &= ~1;
        if (cases[c].low)
          args[t] %= w;
        args[64 + t] = w;
      }
      RT_OK(T->copy_h2d(k.rt, dargs.b, 0, args, sizeof args));
      RT_OK(T->memset(k.rt, dout.b, 0, 0x7eadbeef, 4, 384));
      unsigned mask = cases[c].mask;
      void *a[] = {&din.addr, &dargs.addr, &dout.addr, &mask};
      launch(&k, "k_shuffles", 1, 64, 0, a);
      download(&k, out, &dout);
      for (int t = 0; t < 64; t++) {
        int lane = t & 31, base = t - lane;
        if (!((mask >> lane) & 1u)) {
          ck_assert_int_eq(out[t], 0x7eadbeef);
          continue;
        }
        for (int op = 0; op < 4; op++)
          ck_assert_msg(out[op * 64 + t] == in[base + shfl_ref(op, lane, args[t], w)],
                        "mask %08x width %d op %d lane %d arg %d: %d, want %d", mask, w, op, t,
                        args[t], out[op * 64 + t], in[base + shfl_ref(op, lane, args[t], w)]);
        ck_assert_int_eq(out[256 + t], in[base + shfl_ref(3, lane, args[t], w)]);
        ck_assert_int_eq(out[320 + t], in[base + shfl_ref(0, lane, args[t], w)]);
      }
    }
  drop(&k, &din), drop(&k, &dargs), drop(&k, &dout);
  free(r);
  close_kernels(&k);
}
END_TEST

START_TEST(votes_and_warp_reductions) {
  kmod k = open_kernels();
  const int nt = 80; /* two full warps and a 16-lane one */
  uint32_t *in = rand_u32(nt, 21), out[80 * 8];
  in[33] |= 0x10000;
  const unsigned masks[] = {0xffffffffu, 0xf0f0f0f0u, 0x00000001u, 0x0000ffffu};
  dbuf din = upload(&k, NULL, (size_t)nt * 4), dout = upload(&k, NULL, sizeof out);
  for (int rep = 0; rep < 2; rep++)
    for (size_t c = 0; c < 4; c++) {
      if (rep)
        for (int t = 0; t < nt; t++)
          in[t] |= 0x10000u; /* all_sync true */
      RT_OK(T->copy_h2d(k.rt, din.b, 0, in, (size_t)nt * 4));
      unsigned mask = masks[c];
      void *a[] = {&din.addr, &dout.addr, &mask};
      launch(&k, "k_votes", 1, nt, 0, a);
      download(&k, out, &dout);
      for (int w = 0; w < 3; w++) {
        unsigned exist = w < 2 ? 0xffffffffu : 0xffffu, m = mask & exist;
        unsigned ballot = 0, any = 0, all = 1, sum = 0, umax = 0;
        int smin = 2147483647;
        for (int l = 0; l < 32; l++)
          if ((m >> l) & 1u) {
            unsigned x = in[w * 32 + l];
            ballot |= (x & 1u) << l, any |= (x & 7u) == 0, all &= (x & 0x10000u) != 0;
            sum += x >> 20, umax = x > umax ? x : umax, smin = (int)x < smin ? (int)x : smin;
          }
        for (int l = 0; l < 32 && w * 32 + l < nt; l++) {
          unsigned *o = out + (size_t)8 * (w * 32 + l);
          ck_assert_uint_eq(o[7], exist); /* __activemask at the start: every lane */
          if (!((m >> l) & 1u))
            continue;
          ck_assert_uint_eq(o[0], ballot);
          ck_assert_uint_eq(o[1] != 0, any);
          ck_assert_uint_eq(o[2] != 0, all);
          ck_assert_uint_eq(o[3], sum);
          ck_assert_int_eq((int)o[4], smin);
          ck_assert_uint_eq(o[5], umax);
          unsigned match = 0;
          for (int j = 0; j < 32; j++)
            if (((m >> j) & 1u) && (in[w * 32 + j] & 3u) == (in[w * 32 + l] & 3u))
              match |= 1u << j;
          ck_assert_uint_eq(o[6], match);
        }
      }
    }
  drop(&k, &din), drop(&k, &dout);
  free(in);
  close_kernels(&k);
}
END_TEST

/* ---- atomics ----------------------------------------------------------------------- */

START_TEST(atomics_under_contention_across_blocks) {
  kmod k = open_kernels();
  const uint32_t blocks = 400, threads = 256, n = blocks * threads;
  uint32_t *vals = rand_u32(n, 22);
  int i0[5] = {0, 0, (int)0x80000000, 0x7fffffff, 0}, i[5];
  unsigned u0[8] = {0, 0, 0xffffffffu, 0, 0xffffffffu, 0, 95, 1000}, u[8];
  unsigned long long ull0[4] = {0, 0, n, 0}, ull[4];
  float f0 = 0, f;
  double d0 = 0, d;
  dbuf di = upload(&k, i0, sizeof i0), du = upload(&k, u0, sizeof u0),
       dull = upload(&k, ull0, sizeof ull0), df = upload(&k, &f0, 4), dd = upload(&k, &d0, 8),
       dv = upload(&k, vals, (size_t)n * 4);
  void *a[] = {&di.addr, &du.addr, &dull.addr, &df.addr, &dd.addr, &dv.addr};
  launch(&k, "k_atomics", blocks, threads, 0, a);
  download(&k, i, &di), download(&k, u, &du), download(&k, ull, &dull), download(&k, &f, &df),
      download(&k, &d, &dd);
  int imax = (int)0x80000000, imin = 0x7fffffff;
  unsigned usum = 0, umax = 0, umin = 0xffffffffu, uor = 0, uand = 0xffffffffu, uxor = 0, inc = 95,
           dec = 1000;
  unsigned long long usum8 = 0, usq = 0, exch = n;
  for (uint32_t g = 0; g < n; g++) {
    unsigned v = vals[g];
    imax = (int)v > imax ? (int)v : imax, imin = (int)v < imin ? (int)v : imin;
    usum += v & 0xffu, umax = v > umax ? v : umax, umin = v < umin ? v : umin;
    uor |= 1u << (v & 31u), uand &= ~(1u << (v % 31u)), uxor ^= v;
    inc = inc >= 100 ? 0 : inc + 1, dec = (dec == 0 || dec > 77) ? 77 : dec - 1;
    usum8 += (unsigned long long)v << 8;
    usq = (unsigned long long)v * v > usq ? (unsigned long long)v * v : usq;
    exch += g;
  }
  ck_assert_int_eq(i[0], (int)n);
  ck_assert_int_eq(i[1], (intmax_t)-2 * (int)n);
  ck_assert_int_eq(i[2], imax);
  ck_assert_int_eq(i[3], imin);
  ck_assert_int_eq(i[4], (intmax_t)3 * (int)n);
  ck_assert_uint_eq(u[0], usum);
  ck_assert_uint_eq(u[1], umax);
  ck_assert_uint_eq(u[2], umin);
  ck_assert_uint_eq(u[3], uor);
  ck_assert_uint_eq(u[4], uand);
  ck_assert_uint_eq(u[5], uxor);
  ck_assert_uint_eq(u[6], inc); /* the same function of the old value each time: any order */
  ck_assert_uint_eq(u[7], dec);
  ck_assert(ull[0] == usum8);
  ck_assert(ull[1] == usq);
  ck_assert(ull[2] + ull[3] == exch); /* each value exchanged out once; the last one stays */
  ck_assert(f == (float)n);
  ck_assert(d == 0.5 * n);
  drop(&k, &di), drop(&k, &du), drop(&k, &dull), drop(&k, &df), drop(&k, &dd), drop(&k, &dv);
  free(vals);
  close_kernels(&k);
}
END_TEST

/* ---- dynamic shared memory ---------------------------------------------------------- */

START_TEST(dynamic_shared_memory) {
  kmod k = open_kernels();
  const int blocks = 7;
  int n = 250, *x = (int *)rand_u32((size_t)blocks * 250, 23),
      *out = malloc((size_t)blocks * 250 * 4);
  for (int i = 0; i < blocks * n; i++)
    x[i] %= 100000;
  dbuf dx = upload(&k, x, (size_t)blocks * 250 * 4),
       dout = upload(&k, NULL, (size_t)blocks * 250 * 4);
  void *a[] = {&dx.addr, &dout.addr, &n};
  launch(&k, "k_dyn_reverse", blocks, (uint32_t)n, (uint32_t)n * 4, a);
  download(&k, out, &dout);
  for (int b = 0; b < blocks; b++)
    for (int t = 0; t < n; t++)
      ck_assert_int_eq(out[b * n + t], x[b * n + n - 1 - t]);
  float *fo = malloc((size_t)blocks * 250 * 4);
  dbuf dfo = upload(&k, NULL, (size_t)blocks * 250 * 4);
  void *s[] = {&dx.addr, &dfo.addr, &n};
  launch(&k, "k_dyn_split", blocks, (uint32_t)n, (uint32_t)n * 8, s);
  download(&k, fo, &dfo);
  for (int b = 0; b < blocks; b++)
    for (int t = 0; t < n; t++) {
      float want = (float)x[b * n + n - 1 - t] * 0.5f + (float)x[b * n + (t + 1) % n];
      ck_assert_msg(fo[b * n + t] == want, "block %d thread %d: %g want %g", b, t,
                    (double)fo[b * n + t], (double)want);
    }
  drop(&k, &dx), drop(&k, &dout), drop(&k, &dfo);
  free(x), free(out), free(fo);
  close_kernels(&k);
}
END_TEST

/* ---- printf, assert, trap ------------------------------------------------------------- */

START_TEST(printf_from_device) {
  kmod k = open_kernels();
  char path[] = "/tmp/t4a-kernels-out-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  fflush(stdout);
  int saved = dup(1);
  ck_assert_int_eq(dup2(fd, 1), 1);
  int base = 40;
  void *a[] = {&base};
  launch(&k, "k_printf", 2, 3, 0, a);
  rt_sync(k.rt); /* CUDA flushes device printf at synchronisation */
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  char text[1024] = {0};
  ck_assert_int_ge(pread(fd, text, sizeof text - 1, 0), 0);
  close(fd);
  unlink(path);
  int lines = 0;
  for (int b = 0; b < 2; b++)
    for (int t = 0; t < 3; t++) {
      char want[96];
      snprintf(want, sizeof want, "k_printf block %d thread %d value %d\n", b, t, 40 + t);
      lines += strstr(text, want) != NULL;
    }
  if (rt_on_host())
    ck_assert_msg(lines == 6, "printf output:\n%s", text);
  else /* the GPU's printf buffer is the driver's: reported, not required */
    printf("printf_from_device: %d of 6 lines seen on stdout\n", lines);
  close_kernels(&k);
}
END_TEST

/* The fault the runtime's queued work ended in: at the seal already, or
 * when its witness is waited for. */
static void expect_fault(t4a_runtime rt) {
  t4a_witness w;
  int rc = T->seal(rt, &w);
  if (rc == T4A_OK) {
    RT_EXPECT(T->witness_wait(w, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
    RT_OK(T->witness_release(w));
  } else
    ck_assert_msg(rc == T4A_EDEVICEFAULT, "seal: %s (%s)", t4a_status_name(rc),
                  t4a_test_backend_error(T));
}

/* The line of the assert in the source, for the host's message. */
static int assert_line(void) {
  const char *at = strstr(source, "assert(v[i] < limit)");
  int line = 1;
  for (const char *p = source; p < at; p++)
    line += *p == '\n';
  return line;
}

START_TEST(failed_assert_faults_the_runtime) {
  kmod k = open_kernels();
  int n = 1000, limit = 1000, *v = malloc((size_t)1000 * 4);
  for (int i = 0; i < n; i++)
    v[i] = i == 777 ? 5000 : i;
  dbuf dv = upload(&k, v, 4000);
  void *a[] = {&dv.addr, &n, &limit};
  launch(&k, "k_assert", 8, 128, 0, a);
  expect_fault(k.rt);
  if (rt_on_host()) {
    char want[128];
    snprintf(want, sizeof want, "assert(v[i] < limit) failed at kernels.cu:%d", assert_line());
    RT_DETAIL(want);
    RT_DETAIL("block (6, 0, 0), thread (9, 0, 0)");
  }
  RT_EXPECT(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  free(v);
}
END_TEST

START_TEST(trap_faults_and_the_process_lives) {
  kmod k = open_kernels();
  dbuf d = upload(&k, NULL, (size_t)16 * 64 * 4);
  int b = 11, t = 40;
  void *a[] = {&b, &t, &d.addr};
  launch(&k, "k_trap", 16, 64, 0, a);
  expect_fault(k.rt);
  if (rt_on_host())
    RT_DETAIL("kernel 'k_trap' faulted (__trap()) in block (11, 0, 0), thread (40, 0, 0)");
  t4a_buffer x;
  RT_EXPECT(T->buffer_alloc(k.rt, 8, &x), T4A_EDEVICEFAULT); /* sticky */
  RT_EXPECT(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_OK(T->artifact_release(k.a));
  /* the process lives; as after a CUDA device fault, recovery is a new
   * process (every test of this suite runs in its own) */
  if (rt_on_host()) {
    t4a_runtime again = {0};
    RT_EXPECT(T->runtime_create(0, NULL, &again), T4A_EDEVICEFAULT);
  }
}
END_TEST

/* A write 1 GiB past a 4 KiB buffer: on CUDA an illegal address, on the
 * host caught in checked mode (T4A_HOST_CHECK=1, set before the kernels are
 * compiled and the runtime made; unchecked, a wild write there does what it
 * does in any C program). Either way the runtime's sticky fault, the
 * process alive. */
START_TEST(wild_write_faults_and_the_process_lives) {
  if (rt_on_host())
    setenv("T4A_HOST_CHECK", "1", 1); /* this test's own process */
  kmod k = open_kernels();
  dbuf d = upload(&k, NULL, 4096);
  unsigned long long at = (1ull << 30) / 4;
  int b = 5, t = 7;
  void *a[] = {&d.addr, &at, &b, &t};
  launch(&k, "k_wild", 8, 64, 0, a);
  expect_fault(k.rt);
  if (rt_on_host()) {
    char want[192];
    snprintf(want, sizeof want,
             "kernel 'k_wild' faulted (an access outside the live buffers) in block (5, 0, 0), "
             "thread (7, 0, 0): SIGSEGV at address 0x%llx",
             (unsigned long long)d.addr + (1ull << 30));
    RT_DETAIL(want);
  }
  t4a_buffer x;
  RT_EXPECT(T->buffer_alloc(k.rt, 8, &x), T4A_EDEVICEFAULT); /* sticky */
  RT_EXPECT(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_OK(T->artifact_release(k.a));
}
END_TEST

static bool compiler_available(char *reason, size_t n) {
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(rt_plugin_path(), &b) != T4A_OK)
    return false;
  t4a_compiler_info c = {.struct_size = sizeof c};
  t4a_gpu_backend_table(b)->compiler_info(&c);
  snprintf(reason, n, "%s", c.reason);
  t4a_gpu_close(b);
  return c.status == T4A_OK;
}

int main(void) {
  char reason[256] = "";
  bool compiler = compiler_available(reason, sizeof reason);
  if (!compiler) {
    const char *lane = getenv("T4A_TEST_LANE");
    bool required = !rt_on_host() && lane && strcmp(lane, "gpu") == 0;
    printf("%s: no run-time compiler here (%s)\n", required ? "FAIL" : "SKIP", reason);
    return required ? EXIT_FAILURE : T4A_TEST_SKIP;
  }
  Suite *s = rt_suite("kernels");
  TCase *tc = rt_tcase(s, "elementwise", 300);
  tcase_add_test(tc, saxpy_and_daxpy);
  tcase_add_test(tc, integer_ops_bit_exact);
  tcase_add_test(tc, math_functions_within_tolerance);
  tcase_add_test(tc, bit_intrinsics_bit_exact);
  tcase_add_test(tc, parameters_by_value);
  tcase_add_test(tc, indices_3d_bit_exact);
  tc = rt_tcase(s, "shared", 300);
  tcase_add_test(tc, transpose_matmul_histogram);
  tcase_add_test(tc, reductions_with_barriers);
  tcase_add_test(tc, scan_and_early_exit);
  tcase_add_test(tc, dynamic_shared_memory);
  tc = rt_tcase(s, "warps", 300);
  tcase_add_test(tc, warp_reduction_bit_exact);
  tcase_add_test(tc, shuffles_full_and_partial_masks);
  tcase_add_test(tc, votes_and_warp_reductions);
  tc = rt_tcase(s, "atomics", 300);
  tcase_add_test(tc, atomics_under_contention_across_blocks);
  tc = rt_tcase(s, "faults", 300);
  tcase_add_test(tc, printf_from_device);
  tcase_add_test(tc, failed_assert_faults_the_runtime);
  tcase_add_test(tc, trap_faults_and_the_process_lives);
  tcase_add_test(tc, wild_write_faults_and_the_process_lives);
  return rt_run(s, 1);
}
