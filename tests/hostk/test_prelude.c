/* tests/hostk/test_prelude.c -- the host backend's translator and prelude
 * on their own: CUDA C kernels translated (plugin-host/ktranslate.c),
 * compiled with the host C++ compiler as the plugin does, loaded, and run
 * block by block through plugin-host/kernel_abi.h on threads of this test
 * (tests/hostk/hk_harness.c), against CPU references. Skips (77) without
 * a C++ compiler. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin-host/ktranslate.h"
#include "t4a/gpu_backend_v1.h"
#include "tests/hostk/hk_harness.h"
#include "tests/testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static hk_mod build(const char *src) {
  hk_mod m;
  char *log = NULL;
  int rc = hk_build(src, "k.cu", NULL, &m, &log);
  ck_assert_msg(rc == 0, "build failed:\n%s", log ? log : "");
  free(log);
  return m;
}

static const t4a_hk_kernel *kernel(const hk_mod *m, const char *name) {
  const t4a_hk_kernel *k = hk_kernel(m, name);
  ck_assert_msg(k != NULL, "kernel %s not registered", name);
  return k;
}

/* The translator's log for src (which it must refuse). */
static char *refusals(const char *src) {
  t4a__ktu u;
  int rc = t4a__ktranslate(src, strlen(src), "r.cu", &u);
  ck_assert_int_eq(rc, T4A_ECOMPILE);
  ck_assert_ptr_null(u.text);
  ck_assert_ptr_nonnull(u.log);
  char *log = strdup(u.log);
  t4a__ktu_free(&u);
  return log;
}

static t4a__ktu translate_ok(const char *src) {
  t4a__ktu u;
  int rc = t4a__ktranslate(src, strlen(src), "k.cu", &u);
  ck_assert_msg(rc == T4A_OK, "translate: %d %s", rc, u.log ? u.log : "");
  return u;
}

/* Bit for bit (memcmp on floats is what clang-tidy would flag). */
static int same_bits(float a, float b) {
  uint32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  return x == y;
}

static float *randf(size_t n, uint64_t seed) {
  float *p = malloc(n * sizeof *p);
  ck_assert_ptr_nonnull(p);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    p[i] = (float)((s * 2685821657736338717ull) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
  }
  return p;
}

static uint32_t *randu(size_t n, uint64_t seed) {
  uint32_t *p = malloc(n * sizeof *p);
  ck_assert_ptr_nonnull(p);
  t4a_test_fill_random(p, n * sizeof *p, seed);
  return p;
}

/* ---- the translator ------------------------------------------------------ */

START_TEST(finds_extern_c_kernels) {
  const char *src =
      "extern \"C\" __global__ void a(int *p) { p[0] = 1; }\n"
      "extern \"C\" { __global__ void b(int *p) { p[0] = 2; }\n"
      "  __global__ void decl_only(int *p); }\n"
      "__global__ void cxx_kernel(int *p) { p[0] = 3; }\n"
      "namespace ns { extern \"C\" __global__ void c(int *p) { p[0] = 4; } }\n"
      "#if 0\nextern \"C\" __global__ void skipped(int *p) { }\n#endif\n"
      "#ifdef __CUDA_ARCH__\nextern \"C\" __global__ void arch_only(int *p) { }\n#endif\n";
  t4a__ktu u = translate_ok(src);
  ck_assert_uint_eq(u.kernel_count, 3);
  ck_assert_ptr_nonnull(strstr(u.text, "T4A_HK_KERNEL(a,"));
  ck_assert_ptr_nonnull(strstr(u.text, "T4A_HK_KERNEL(b,"));
  ck_assert_ptr_nonnull(strstr(u.text, "T4A_HK_KERNEL(ns::c,"));
  ck_assert_ptr_null(strstr(u.text, "T4A_HK_KERNEL(skipped"));
  ck_assert_ptr_null(strstr(u.text, "T4A_HK_KERNEL(cxx_kernel"));
  ck_assert_ptr_null(strstr(u.text, "T4A_HK_KERNEL(decl_only"));
  ck_assert_ptr_nonnull(strstr(u.text, "\n#line 1 \"k.cu\"\n"));
  t4a__ktu_free(&u);
  hk_mod m = build(src);
  ck_assert_uint_eq(m.m->abi_version, T4A_HK_ABI_VERSION);
  ck_assert_str_eq(m.m->prelude_id, t4a__kprelude_id());
  ck_assert_uint_eq(m.m->kernel_count, 3);
  int v = 0, *pv = &v;
  void *args[] = {&pv};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(kernel(&m, "c"), hk_dim(1, 1, 1), hk_dim(1, 1, 1), 0, args, 1, &f), 0);
  ck_assert_int_eq(v, 4);
  hk_unload(&m);
}
END_TEST

START_TEST(prelude_id_names_abi) {
  const char *id = t4a__kprelude_id();
  char want[64];
  snprintf(want, sizeof want, "t4a-host-prelude %u ", T4A_HK_ABI_VERSION);
  ck_assert_int_eq(strncmp(id, want, strlen(want)), 0);
  ck_assert_uint_eq(strlen(id), strlen(want) + 32);
  ck_assert_ptr_eq(id, t4a__kprelude_id());
}
END_TEST

START_TEST(refuses_unsupported) {
  static const struct {
    const char *src, *want;
  } cases[] = {
      {"__device__ int f() { int r; asm(\"mov.u32 %0, 1;\" : \"=r\"(r)); return r; }\n",
       "r.cu:1:29: error: inline assembly (asm) is not supported by the host backend;"},
      {"__device__ void f() {\n  __asm__ volatile(\"\");\n}\n",
       "r.cu:2:3: error: inline assembly (__asm__)"},
      {"texture<float, 1> tex;\n", "r.cu:1:1: error: textures (texture)"},
      {"__device__ float f(cudaTextureObject_t t) { return tex1Dfetch<float>(t, 0); }\n",
       "error: texture objects (cudaTextureObject_t)"},
      {"__device__ float f(cudaTextureObject_t t) { return tex2D<float>(t, 0, 0); }\n",
       "r.cu:1:52: error: texture fetches (tex2D)"},
      {"__global__ void c(); __global__ void p() { c<<<1, 1>>>(); }\n",
       "r.cu:1:45: error: dynamic parallelism (a <<< launch in device code)"},
      {"#include <cooperative_groups.h>\n",
       "r.cu:1:10: error: cooperative groups (<cooperative_groups>)"},
      {"namespace cg = cooperative_groups;\n__global__ void k() { cg::this_grid().sync(); }\n",
       "r.cu:2:27: error: grid-wide synchronisation (cooperative_groups::this_grid)"},
      {"__global__ void __cluster_dims__(2, 1, 1) k() {}\n",
       "error: thread block clusters (__cluster_dims__)"},
      {"__device__ __half h;\n", "r.cu:1:12: error: half-precision types (__half)"},
      {"__device__ __nv_bfloat16 h;\n", "error: bfloat16 types (__nv_bfloat16)"},
      {"#include \"cuda_fp16.h\"\n", "error: half-precision types (<cuda_fp16.h>)"},
      {"#define GRID_SYNC() asm volatile(\"bar.sync 0;\")\n__global__ void k() { GRID_SYNC(); }\n",
       "r.cu:2:23: error: inline assembly (asm) through macro GRID_SYNC is not supported"},
      {"__device__ void f() { nvcuda::wmma::fill_fragment(); }\n",
       "error: tensor core matrix operations (nvcuda::wmma)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    char *log = refusals(cases[i].src);
    ck_assert_msg(strstr(log, cases[i].want) != NULL, "case %zu: want \"%s\" in:\n%s", i,
                  cases[i].want, log);
    ck_assert_msg(strstr(log, "is not supported by the host backend; ") != NULL, "case %zu: %s", i,
                  log);
    free(log);
  }
  /* one line per use */
  char *log =
      refusals("__device__ void f() { asm(\"a\"); }\n__device__ void g() { asm(\"b\"); }\n");
  ck_assert_ptr_nonnull(strstr(log, "r.cu:1:"));
  ck_assert_ptr_nonnull(strstr(log, "r.cu:2:"));
  free(log);
}
END_TEST

START_TEST(refusal_skips_code_the_host_never_compiles) {
  const char *src =
      "#ifdef __CUDA_ARCH__\n__device__ int f() { int r; asm(\"mov.u32 %0, 1;\" : \"=r\"(r)); "
      "return r; }\n"
      "#else\n__device__ int f() { return 1; }\n#endif\n"
      "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n__device__ __half h;\n#endif\n"
      "#ifndef __T4A_HOST__\ntexture<float, 1> tex;\n#endif\n"
      "#define USE_ASM 0\n#if USE_ASM\n__device__ void g() { asm(\"\"); }\n#endif\n"
      "#if 0\n#include <cooperative_groups.h>\n#endif\n"
      "// asm(\"in a comment\") texture<\n/* __half */\n"
      "__device__ const char *s = \"asm texture<float> __half <<<\";\n"
      "extern \"C\" __global__ void k(int *p) { *p = f(); }\n";
  t4a__ktu u = translate_ok(src);
  ck_assert_uint_eq(u.kernel_count, 1);
  t4a__ktu_free(&u);
  /* a condition the translator cannot know: it refuses (never silent) */
  char *log = refusals("#ifdef SOME_OPTION\n__device__ void g() { asm(\"\"); }\n#endif\n");
  ck_assert_ptr_nonnull(strstr(log, "r.cu:2:"));
  free(log);
}
END_TEST

START_TEST(fibers_only_where_needed) {
  const char *src =
      "#define SYNC() __syncthreads()\n"
      "__device__ float helper(float v) { return __shfl_down_sync(0xffffffffu, v, 1); }\n"
      "__device__ float indirect(float v) { return helper(v) + 1.0f; }\n"
      "__device__ float plain(float v) { return v * 2.0f; }\n"
      "extern \"C\" __global__ void loop1(float *p) { p[threadIdx.x] = plain(p[threadIdx.x]); }\n"
      "extern \"C\" __global__ void bar(float *p) { __syncthreads(); }\n"
      "extern \"C\" __global__ void viamacro(float *p) { SYNC(); }\n"
      "extern \"C\" __global__ void viahelper(float *p) { p[0] = indirect(p[0]); }\n"
      "extern \"C\" __global__ void fence(float *p) { __threadfence(); p[0] = 1; }\n";
  hk_mod m = build(src);
  ck_assert_uint_eq(kernel(&m, "loop1")->flags & T4A_HK_KERNEL_FIBERS, 0);
  ck_assert_uint_eq(kernel(&m, "fence")->flags & T4A_HK_KERNEL_FIBERS, 0);
  ck_assert_uint_eq(kernel(&m, "bar")->flags & T4A_HK_KERNEL_FIBERS, T4A_HK_KERNEL_FIBERS);
  ck_assert_uint_eq(kernel(&m, "viamacro")->flags & T4A_HK_KERNEL_FIBERS, T4A_HK_KERNEL_FIBERS);
  ck_assert_uint_eq(kernel(&m, "viahelper")->flags & T4A_HK_KERNEL_FIBERS, T4A_HK_KERNEL_FIBERS);
  hk_unload(&m);
  /* a function pointer at file scope: every kernel of the unit uses fibers */
  hk_mod m2 = build("__device__ void s() { __syncthreads(); }\n"
                    "__device__ void (*fp)() = s;\n"
                    "extern \"C\" __global__ void k(float *p) { p[0] = 1; }\n");
  ck_assert_uint_eq(kernel(&m2, "k")->flags & T4A_HK_KERNEL_FIBERS, T4A_HK_KERNEL_FIBERS);
  hk_unload(&m2);
}
END_TEST

START_TEST(params_and_launch_bounds) {
  hk_mod m = build("struct S { double d[3]; };\n"
                   "#define NT 128\n"
                   "extern \"C\" __global__ void __launch_bounds__(NT * 2, 1) "
                   "k(char c, double d, S s, float4 v, const int *__restrict__ p) {}\n"
                   "extern \"C\" __global__ void none() {}\n");
  const t4a_hk_kernel *k = kernel(&m, "k");
  ck_assert_uint_eq(k->param_count, 5);
  const uint32_t sz[] = {1, 8, 24, 16, sizeof(void *)}, al[] = {1, 8, 8, 16, sizeof(void *)};
  for (int i = 0; i < 5; ++i) {
    ck_assert_uint_eq(k->param_sizes[i], sz[i]);
    ck_assert_uint_eq(k->param_aligns[i], al[i]);
  }
  ck_assert_uint_eq(k->max_threads, 256);
  ck_assert_uint_eq(kernel(&m, "none")->param_count, 0);
  ck_assert_uint_eq(kernel(&m, "none")->max_threads, 1024);
  hk_unload(&m);
}
END_TEST

START_TEST(compile_errors_carry_source_lines) {
  hk_mod m;
  char *log = NULL;
  int rc = hk_build(
      "extern \"C\" __global__ void k(float *p) {\n  p[0] = 1;\n  undefined_thing(p);\n}\n",
      "mine.cu", NULL, &m, &log);
  ck_assert_int_ne(rc, 0);
  ck_assert_msg(strstr(log, "mine.cu:3:") != NULL, "log:\n%s", log);
  free(log);
  hk_unload(&m);
}
END_TEST

/* ---- loop mode ----------------------------------------------------------- */

static const char *SAXPY =
    "extern \"C\" __global__ void saxpy(int n, float a, const float *__restrict__ x,\n"
    "                                  float *__restrict__ y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

START_TEST(saxpy_loop) {
  hk_mod m = build(SAXPY);
  const t4a_hk_kernel *k = kernel(&m, "saxpy");
  ck_assert_uint_eq(k->flags & T4A_HK_KERNEL_FIBERS, 0);
  int n = 100003;
  float a = 1.75f, *x = randf((size_t)n, 1), *y = randf((size_t)n, 2), *r = malloc((size_t)n * 4);
  for (int i = 0; i < n; ++i)
    r[i] = a * x[i] + y[i];
  void *args[] = {&n, &a, &x, &y};
  t4a_hk_fault f;
  ck_assert_int_eq(
      hk_launch(k, hk_dim((uint32_t)(n + 255) / 256, 1, 1), hk_dim(256, 1, 1), 0, args, 3, &f), 0);
  for (int i = 0; i < n; ++i)
    ck_assert_msg(fabsf(y[i] - r[i]) <= 1e-6f * (1.0f + fabsf(r[i])), "y[%d] = %g, want %g", i,
                  (double)y[i], (double)r[i]);
  free(x), free(y), free(r);
  hk_unload(&m);
}
END_TEST

START_TEST(indices_3d) {
  hk_mod m =
      build("extern \"C\" __global__ void ids(unsigned *out) {\n"
            "  unsigned bl = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);\n"
            "  unsigned th = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);\n"
            "  unsigned nt = blockDim.x * blockDim.y * blockDim.z;\n"
            "  dim3 g = gridDim;\n"
            "  out[(bl * nt + th) * 2] = (blockIdx.z << 24) | (blockIdx.y << 16) | (blockIdx.x << "
            "8) | g.z;\n"
            "  out[(bl * nt + th) * 2 + 1] = (threadIdx.z << 16) | (threadIdx.y << 8) | "
            "threadIdx.x | (warpSize << 24);\n"
            "}\n");
  const uint32_t gx = 3, gy = 4, gz = 2, bx = 5, by = 3, bz = 2, n = gx * gy * gz * bx * by * bz;
  unsigned *out = malloc((size_t)n * 2 * sizeof *out);
  memset(out, 0xff, (size_t)n * 2 * sizeof *out);
  void *args[] = {&out};
  t4a_hk_fault f;
  ck_assert_int_eq(
      hk_launch(kernel(&m, "ids"), hk_dim(gx, gy, gz), hk_dim(bx, by, bz), 0, args, 2, &f), 0);
  for (uint32_t z = 0; z < gz; ++z)
    for (uint32_t y = 0; y < gy; ++y)
      for (uint32_t x = 0; x < gx; ++x)
        for (uint32_t tz = 0; tz < bz; ++tz)
          for (uint32_t ty = 0; ty < by; ++ty)
            for (uint32_t tx = 0; tx < bx; ++tx) {
              uint32_t bl = x + gx * (y + gy * z), th = tx + bx * (ty + by * tz);
              uint32_t i = (bl * bx * by * bz + th) * 2;
              ck_assert_uint_eq(out[i], (z << 24) | (y << 16) | (x << 8) | gz);
              ck_assert_uint_eq(out[i + 1], (tz << 16) | (ty << 8) | tx | (32u << 24));
            }
  free(out);
  hk_unload(&m);
}
END_TEST

/* ---- fibers: barriers ---------------------------------------------------- */

static const char *REDUCE =
    "extern \"C\" __global__ void reduce(const float *x, float *out, int n) {\n"
    "  __shared__ float s[1024];\n"
    "  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;\n"
    "  s[t] = i < (unsigned)n ? x[i] : 0.0f;\n"
    "  __syncthreads();\n"
    "  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {\n"
    "    if (t < k)\n"
    "      s[t] += s[t + k];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (t == 0)\n"
    "    out[blockIdx.x] = s[0];\n"
    "}\n";

/* The same tree in C: bit-exact. */
static float tree_sum(const float *x, unsigned n, unsigned b, unsigned bs) {
  float s[1024] = {0};
  for (unsigned t = 0; t < bs; ++t)
    s[t] = b * bs + t < n ? x[b * bs + t] : 0.0f;
  for (unsigned k = bs / 2; k > 0; k >>= 1)
    for (unsigned t = 0; t < k; ++t)
      s[t] += s[t + k];
  return s[0];
}

START_TEST(block_reduce_barriers) {
  hk_mod m = build(REDUCE);
  const t4a_hk_kernel *k = kernel(&m, "reduce");
  ck_assert_uint_eq(k->flags & T4A_HK_KERNEL_FIBERS, T4A_HK_KERNEL_FIBERS);
  for (unsigned bs = 32; bs <= 1024; bs *= 2) {
    int n = (int)(bs * 37 - 5);
    float *x = randf((size_t)n, bs), *out = malloc(37 * sizeof *out);
    void *args[] = {&x, &out, &n};
    t4a_hk_fault f;
    ck_assert_int_eq(hk_launch(k, hk_dim(37, 1, 1), hk_dim(bs, 1, 1), 0, args, 3, &f), 0);
    for (unsigned b = 0; b < 37; ++b) {
      float want = tree_sum(x, (unsigned)n, b, bs);
      ck_assert_msg(same_bits(out[b], want), "bs %u block %u: %a, want %a", bs, b, (double)out[b],
                    (double)want);
    }
    free(x), free(out);
  }
  hk_unload(&m);
}
END_TEST

/* The switch at a barrier keeps everything a thread holds: values of every
 * kind live across barriers at different call sites, one in a called
 * function, warp operations between them (whose switch saves contexts the
 * other way), built optimised, unrolled and at -O0 (frame pointers). */
static const char LIVE_ACROSS[] =
    "__device__ __noinline__ int bar_in_callee(int v) { __syncthreads(); return v * 3 + 1; }\n"
    "extern \"C\" __global__ void k(const float *x, float *out, long long *iout, int rounds) {\n"
    "  unsigned t = threadIdx.x + blockIdx.x * blockDim.x;\n"
    "  float f0 = x[t], f1 = f0 * 1.5f, f2 = f0 - 2.0f, f3 = f0 * f0;\n"
    "  double d0 = (double)f0 * 3.0, d1 = d0 + 0.25;\n"
    "  int i0 = (int)t * 7, i1 = i0 ^ 0x55, i2 = i0 + 13, i3 = (int)t - 100, acc = 0;\n"
    "  long long l0 = (long long)t << 33;\n"
    "  for (int r = 0; r < rounds; ++r) {\n"
    "    f0 += 1.0f; i0 += 1;\n"
    "    __syncthreads();\n"
    "    f1 *= 1.0001f; i1 ^= r; d0 += 0.5;\n"
    "    acc += __shfl_xor_sync(0xffffffffu, i2 + r, 1);\n"
    "    __syncthreads();\n"
    "    f2 -= 0.5f; i2 += 2; l0 += r;\n"
    "    acc = bar_in_callee(acc) & 0xffff;\n"
    "    f3 += f0; i3 -= 1; d1 *= 1.0000001;\n"
    "  }\n"
    "  out[t * 6] = f0; out[t * 6 + 1] = f1; out[t * 6 + 2] = f2; out[t * 6 + 3] = f3;\n"
    "  out[t * 6 + 4] = (float)d0; out[t * 6 + 5] = (float)d1;\n"
    "  iout[t * 6] = i0; iout[t * 6 + 1] = i1; iout[t * 6 + 2] = i2; iout[t * 6 + 3] = i3;\n"
    "  iout[t * 6 + 4] = acc; iout[t * 6 + 5] = l0;\n"
    "}\n";

START_TEST(barrier_switch_keeps_live_values) {
  static const char *const flags[] = {NULL, "-O0 -g", "-funroll-loops", "-O3"};
  enum { BLOCKS = 2, BS = 96, N = BLOCKS * BS, ROUNDS = 5 };
  float *x = randf(N, 11);
  for (size_t v = 0; v < sizeof flags / sizeof *flags; ++v) {
    hk_mod m;
    char *log = NULL;
    ck_assert_msg(hk_build(LIVE_ACROSS, "k.cu", flags[v], &m, &log) == 0, "build (%s):\n%s",
                  flags[v] ? flags[v] : "default", log ? log : "");
    free(log);
    const t4a_hk_kernel *k = kernel(&m, "k");
    ck_assert_uint_eq(k->flags & T4A_HK_KERNEL_FIBERS, T4A_HK_KERNEL_FIBERS);
    float out[N * 6];
    long long iout[N * 6];
    memset(out, 0xa5, sizeof out), memset(iout, 0xa5, sizeof iout);
    int rounds = ROUNDS;
    float *xp = x, *op = out;
    long long *ip = iout;
    void *args[] = {&xp, &op, &ip, &rounds};
    t4a_hk_fault f;
    ck_assert_int_eq(hk_launch(k, hk_dim(BLOCKS, 1, 1), hk_dim(BS, 1, 1), 0, args, 1, &f), 0);
    for (unsigned t = 0; t < N; ++t) {
      float f0 = x[t], f1 = f0 * 1.5f, f2 = f0 - 2.0f, f3 = f0 * f0;
      double d0 = (double)f0 * 3.0, d1 = d0 + 0.25;
      int i0 = (int)t * 7, i1 = i0 ^ 0x55, i2 = i0 + 13, i3 = (int)t - 100, acc = 0;
      long long l0 = (long long)t << 33;
      for (int r = 0; r < ROUNDS; ++r) {
        f0 += 1.0f, i0 += 1;
        f1 *= 1.0001f, i1 ^= r, d0 += 0.5;
        acc += (int)(t ^ 1u) * 7 + 13 + 2 * r + r; /* lane t ^ 1's i2 + r */
        f2 -= 0.5f, i2 += 2, l0 += r;
        acc = (acc * 3 + 1) & 0xffff;
        f3 += f0, i3 -= 1, d1 *= 1.0000001;
      }
      const float wf[6] = {f0, f1, f2, f3, (float)d0, (float)d1};
      const long long wi[6] = {i0, i1, i2, i3, acc, l0};
      for (int j = 0; j < 6; ++j) {
        ck_assert_msg(same_bits(out[t * 6 + (unsigned)j], wf[j]),
                      "%s: thread %u value %d: %a, want %a", flags[v] ? flags[v] : "default", t, j,
                      (double)out[t * 6 + (unsigned)j], (double)wf[j]);
        ck_assert_msg(iout[t * 6 + (unsigned)j] == wi[j], "%s: thread %u int %d: %lld, want %lld",
                      flags[v] ? flags[v] : "default", t, j, iout[t * 6 + (unsigned)j], wi[j]);
      }
    }
    hk_unload(&m);
  }
  free(x);
}
END_TEST

START_TEST(early_return_and_barrier_reductions) {
  hk_mod m =
      build("extern \"C\" __global__ void k(const int *pred, int *out, int live) {\n"
            "  unsigned t = threadIdx.x + blockDim.x * threadIdx.y;\n"
            "  if ((int)t >= live)\n"
            "    return; /* a barrier counts the threads still running */\n"
            "  __shared__ int acc;\n"
            "  if (t == 0) acc = 0;\n"
            "  __syncthreads();\n"
            "  atomicAdd(&acc, 1);\n"
            "  __syncthreads();\n"
            "  int p = pred[blockIdx.x * 256 + t];\n"
            "  int c = __syncthreads_count(p), a = __syncthreads_and(p), o = __syncthreads_or(p);\n"
            "  if (t == 3) {\n"
            "    out[blockIdx.x * 4] = acc; out[blockIdx.x * 4 + 1] = c;\n"
            "    out[blockIdx.x * 4 + 2] = a; out[blockIdx.x * 4 + 3] = o;\n"
            "  }\n"
            "}\n");
  const t4a_hk_kernel *k = kernel(&m, "k");
  const unsigned blocks = 6;
  int *pred = malloc((size_t)blocks * 256 * sizeof *pred), out[6 * 4];
  uint32_t *r = randu((size_t)blocks * 256, 7);
  for (unsigned i = 0; i < blocks * 256; ++i)
    pred[i] = (r[i] & 3) ? (int)(r[i] >> 8) : 0;
  for (unsigned b = 0; b < 3; ++b) /* blocks where all / none / one of the live threads hold */
    for (unsigned t = 0; t < 256; ++t)
      pred[b * 256 + t] = b == 0 ? 5 : b == 1 ? 0 : t == 100;
  int live = 201, *po = out;
  void *args[] = {&pred, &po, &live};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(k, hk_dim(blocks, 1, 1), hk_dim(32, 8, 1), 0, args, 2, &f), 0);
  for (unsigned b = 0; b < blocks; ++b) {
    int c = 0, a = 1, o = 0;
    for (int t = 0; t < live; ++t)
      c += pred[b * 256 + (unsigned)t] != 0, a &= pred[b * 256 + (unsigned)t] != 0,
          o |= pred[b * 256 + (unsigned)t] != 0;
    ck_assert_int_eq(out[(size_t)b * 4], live);
    ck_assert_int_eq(out[b * 4 + 1], c);
    ck_assert_int_eq(out[b * 4 + 2], a);
    ck_assert_int_eq(out[b * 4 + 3], o);
  }
  free(pred), free(r);
  hk_unload(&m);
}
END_TEST

START_TEST(unreachable_barrier_faults) {
  hk_mod m = build("extern \"C\" __global__ void k(int *p) {\n"
                   "  if (threadIdx.x == 1) { __syncthreads(); p[1] = 1; }\n"
                   "  else if (threadIdx.x == 0) p[0] = __shfl_sync(0x3u, 7, 1);\n"
                   "}\n");
  int v[2] = {0, 0}, *pv = v;
  void *args[] = {&pv};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(kernel(&m, "k"), hk_dim(2, 1, 1), hk_dim(64, 1, 1), 0, args, 1, &f),
                   1);
  ck_assert_int_eq(f.kind, T4A_HK_FAULT_BARRIER);
  ck_assert_uint_eq(f.block.x, 0);
  ck_assert_msg(strstr(f.message, "can make no progress") && strstr(f.message, "kernel k"), "%s",
                f.message);
  hk_unload(&m);
}
END_TEST

/* A barrier in a kernel the translator let run as a loop (here: its
 * registration edited) stops with a fault naming it, never a wrong result. */
START_TEST(barrier_in_loop_mode_faults) {
  t4a__ktu u =
      translate_ok("extern \"C\" __global__ void k(int *p) { __syncthreads(); p[0] = 1; }\n");
  char *at = strstr(u.text, "T4A_HK_KERNEL_FIBERS,");
  ck_assert_ptr_nonnull(at);
  const char *loop = "0u                  ,"; /* as long as "T4A_HK_KERNEL_FIBERS," */
  for (size_t i = 0; loop[i]; ++i)
    at[i] = loop[i];
  hk_mod m;
  char *log;
  ck_assert_msg(hk_build_unit(u.text, NULL, &m, &log) == 0, "%s", log);
  t4a__ktu_free(&u);
  int v = 0, *pv = &v;
  void *args[] = {&pv};
  t4a_hk_fault f;
  const t4a_hk_kernel *k = kernel(&m, "k");
  ck_assert_uint_eq(k->flags, 0);
  ck_assert_int_eq(hk_launch(k, hk_dim(1, 1, 1), hk_dim(4, 1, 1), 0, args, 1, &f), 1);
  ck_assert_int_eq(f.kind, T4A_HK_FAULT_BARRIER);
  ck_assert_ptr_nonnull(
      strstr(f.message, "__syncthreads in kernel k, whose threads run as a loop"));
  ck_assert_int_eq(v, 0);
  hk_unload(&m);
}
END_TEST

/* run over many blocks in one call (fibers set up again for each), and the
 * stop flag. */
START_TEST(many_blocks_one_call_and_stop) {
  hk_mod m = build(REDUCE);
  const t4a_hk_kernel *k = kernel(&m, "reduce");
  int n = 128 * 50;
  float *x = randf((size_t)n, 3), out[50];
  float *po = out;
  void *args[] = {&x, &po, &n};
  hk_worker w;
  ck_assert_int_eq(hk_worker_init(&w, 128, (size_t)64 * 1024, 0), 0);
  int32_t stop = 0;
  t4a_hk_launch l = {{50, 1, 1}, {128, 1, 1}, 0, 0, args, &stop};
  t4a_hk_fault f;
  memset(out, 0, sizeof out);
  ck_assert_int_eq(k->run(&l, 10, 40, &w.w, &f), 0);
  for (unsigned b = 0; b < 50; ++b) {
    float want = b < 10 ? 0.0f : tree_sum(x, (unsigned)n, b, 128);
    ck_assert_msg(out[b] == want, "block %u", b);
  }
  stop = 1;
  memset(out, 0, sizeof out);
  ck_assert_int_eq(k->run(&l, 0, 50, &w.w, &f), 0);
  for (unsigned b = 0; b < 50; ++b)
    ck_assert(out[b] == 0.0f);
  /* too few stacks: a fault, not a crash */
  stop = 0;
  t4a_hk_launch big = {{1, 1, 1}, {256, 1, 1}, 0, 0, args, &stop};
  ck_assert_int_eq(k->run(&big, 0, 1, &w.w, &f), 1);
  ck_assert_ptr_nonnull(strstr(f.message, "fiber stacks"));
  /* stacks but no fiber records (module ABI 2 lends both), or records
   * not aligned as the prelude's are: likewise */
  void *fibers = w.w.fibers;
  w.w.fibers = NULL;
  memset(&f, 0, sizeof f);
  ck_assert_int_eq(k->run(&l, 0, 1, &w.w, &f), 1);
  ck_assert_ptr_nonnull(strstr(f.message, "fiber stacks and records"));
  w.w.fibers = (char *)fibers + 8; /* not 64-byte aligned: likewise */
  memset(&f, 0, sizeof f);
  ck_assert_int_eq(k->run(&l, 0, 1, &w.w, &f), 1);
  ck_assert_ptr_nonnull(strstr(f.message, "fiber stacks and records"));
  w.w.fibers = fibers;
  ck_assert_int_eq(k->run(&l, 0, 1, &w.w, &f), 0);
  hk_worker_free(&w);
  free(x);
  hk_unload(&m);
}
END_TEST

/* ---- warps ---------------------------------------------------------------- */

/* CUDA's documented shuffle rules, written independently of the prelude:
 * lanes form segments of `width`; idx reads srcLane % width of the
 * segment; up reads lane - d unless that leaves the segment (then its own);
 * down reads lane + d likewise; xor reads lane ^ m unless that lies in a
 * later segment. */
static int ref_src(int op, int lane, int arg, int width) {
  int seg = lane / width * width;
  switch (op) {
  case 0: return seg + ((arg % width) + width) % width;
  case 1: return lane - arg >= seg ? lane - arg : lane;
  case 2: return lane + arg < seg + width ? lane + arg : lane;
  default: return (lane ^ arg) < seg + width ? (lane ^ arg) : lane;
  }
}

static const char *SHFL =
    "extern \"C\" __global__ void shfl(const int *in, int *out, const int *args, unsigned mask) {\n"
    "  int t = threadIdx.x, lane = t & 31;\n"
    "  if (!((mask >> lane) & 1u)) { out[t] = -1; return; }\n"
    "  int v = in[t], a = args[t] & 31, w = args[64 + t];\n"
    "  int r0 = __shfl_sync(mask, v, a, w);\n"
    "  int r1 = __shfl_up_sync(mask, v, (unsigned)a, w);\n"
    "  int r2 = __shfl_down_sync(mask, v, (unsigned)a, w);\n"
    "  int r3 = __shfl_xor_sync(mask, v, a, w);\n"
    "  double d = __shfl_xor_sync(mask, (double)v * 0.5, a, w);\n"
    "  out[t] = r0; out[64 + t] = r1; out[128 + t] = r2; out[192 + t] = r3;\n"
    "  out[256 + t] = (int)(d * 2.0);\n"
    "}\n";

START_TEST(shuffles_full_and_partial_masks) {
  hk_mod m = build(SHFL);
  const t4a_hk_kernel *k = kernel(&m, "shfl");
  uint32_t *r = randu((size_t)64 * 4, 11);
  int in[64], args[128], out[320];
  for (int i = 0; i < 64; ++i)
    in[i] = (int)(r[i] >> 4);
  /* masks: full; the lower half of each warp with width 16 (every source
   * stays in the mask); the even lanes with even deltas (likewise) */
  static const struct {
    unsigned mask;
    int widths[6], even;
  } cases[] = {{0xffffffffu, {32, 16, 8, 4, 2, 1}, 0},
               {0x0000ffffu, {16, 8, 4, 2, 1, 16}, 0},
               {0x55555555u, {32, 32, 32, 32, 32, 32}, 1}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
    for (int wi = 0; wi < 6; ++wi) {
      int w = cases[c].widths[wi];
      for (int t = 0; t < 64; ++t) {
        args[t] = (int)(r[64 + t + (unsigned)wi] % 32);
        if (cases[c].even)
          args[t] &= ~1;
        if (c == 1)
          args[t] %= w; /* idx sources stay in the lower half */
        args[64 + t] = w;
      }
      unsigned mask = cases[c].mask;
      int *pi = in, *po = out, *pa = args;
      void *a[] = {&pi, &po, &pa, &mask};
      t4a_hk_fault f;
      ck_assert_msg(hk_launch(k, hk_dim(1, 1, 1), hk_dim(64, 1, 1), 0, a, 1, &f) == 0, "%s",
                    f.message);
      for (int t = 0; t < 64; ++t) {
        int lane = t & 31, base = t - lane;
        if (!((mask >> lane) & 1u)) {
          ck_assert_int_eq(out[t], -1);
          continue;
        }
        for (int op = 0; op < 4; ++op) {
          int want = in[base + ref_src(op, lane, args[t], w)];
          ck_assert_msg(out[op * 64 + t] == want,
                        "mask %08x width %d op %d lane %d arg %d: %d, want %d", mask, w, op, t,
                        args[t], out[op * 64 + t], want);
        }
        ck_assert_int_eq(out[256 + t], in[base + ref_src(3, lane, args[t], w)]);
      }
    }
  free(r);
  hk_unload(&m);
}
END_TEST

START_TEST(votes_reductions_activemask) {
  hk_mod m =
      build("extern \"C\" __global__ void v(const unsigned *in, unsigned *out, unsigned mask) {\n"
            "  unsigned t = threadIdx.x, lane = t & 31, x = in[t];\n"
            "  unsigned *o = out + t * 10;\n"
            "  if ((mask >> lane) & 1u) {\n"
            "    o[0] = __ballot_sync(mask, x & 1);\n"
            "    o[1] = __any_sync(mask, (x & 7) == 0);\n"
            "    o[2] = __all_sync(mask, x & 0x10000);\n"
            "    o[3] = __reduce_add_sync(mask, x >> 20);\n"
            "    o[4] = (unsigned)__reduce_min_sync(mask, (int)x);\n"
            "    o[5] = __reduce_max_sync(mask, x);\n"
            "    o[6] = __match_any_sync(mask, x & 3);\n"
            "    __syncwarp(mask);\n"
            "  }\n"
            "  if (lane % 3 == 0) o[7] = __activemask();\n"
            "  else o[7] = 0;\n"
            "}\n");
  const t4a_hk_kernel *k = kernel(&m, "v");
  uint32_t *in = randu(64, 5);
  in[33] |= 0x10000; /* keeps all_sync's answers mixed */
  unsigned out[640];
  const unsigned masks[] = {0xffffffffu, 0xf0f0f0f0u, 0x00000001u};
  for (size_t c = 0; c < 3; ++c) {
    unsigned mask = masks[c];
    for (int rep = 0; rep < 2; ++rep) {
      if (rep) /* all bits of 0x10000 set: all_sync true */
        for (int t = 0; t < 64; ++t)
          in[t] |= 0x10000;
      unsigned *pi = in, *po = out;
      void *a[] = {&pi, &po, &mask};
      t4a_hk_fault f;
      memset(out, 0xee, sizeof out);
      ck_assert_msg(hk_launch(k, hk_dim(1, 1, 1), hk_dim(64, 1, 1), 0, a, 1, &f) == 0, "%s",
                    f.message);
      for (int w = 0; w < 2; ++w) {
        unsigned ballot = 0, any = 0, all = 1, sum = 0, umax = 0;
        int smin = 0x7fffffff;
        for (int l = 0; l < 32; ++l) {
          if (!((mask >> l) & 1u))
            continue;
          unsigned x = in[w * 32 + l];
          ballot |= (x & 1u) << l;
          any |= (x & 7) == 0;
          all &= (x & 0x10000) != 0;
          sum += x >> 20;
          smin = (int)x < smin ? (int)x : smin;
          umax = x > umax ? x : umax;
        }
        for (int l = 0; l < 32; ++l) {
          unsigned *o = out + (size_t)(w * 32 + l) * 10;
          ck_assert_uint_eq(o[7], l % 3 == 0 ? 0x49249249u : 0);
          if (!((mask >> l) & 1u))
            continue;
          ck_assert_uint_eq(o[0], ballot);
          ck_assert_uint_eq(o[1], any);
          ck_assert_uint_eq(o[2], all);
          ck_assert_uint_eq(o[3], sum);
          ck_assert_int_eq((int)o[4], smin);
          ck_assert_uint_eq(o[5], umax);
          unsigned match = 0;
          for (int j = 0; j < 32; ++j)
            if (((mask >> j) & 1u) && (in[w * 32 + j] & 3) == (in[w * 32 + l] & 3))
              match |= 1u << j;
          ck_assert_uint_eq(o[6], match);
        }
      }
    }
  }
  free(in);
  hk_unload(&m);
}
END_TEST

START_TEST(warp_reduce_partial_block) {
  /* 48 threads: the second warp has 16 lanes, reduced with mask 0xffff */
  hk_mod m = build("__device__ float wsum(float v, unsigned mask, int w) {\n"
                   "  for (int o = w / 2; o > 0; o >>= 1) v += __shfl_down_sync(mask, v, o, w);\n"
                   "  return v;\n"
                   "}\n"
                   "extern \"C\" __global__ void k(const float *x, float *out) {\n"
                   "  unsigned t = threadIdx.x;\n"
                   "  bool last = t >= 32;\n"
                   "  float s = wsum(x[t], last ? 0xffffu : 0xffffffffu, last ? 16 : 32);\n"
                   "  if ((t & 31) == 0) out[t / 32] = s;\n"
                   "}\n");
  float *x = randf(48, 9), out[2];
  float *po = out;
  void *a[] = {&x, &po};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(kernel(&m, "k"), hk_dim(1, 1, 1), hk_dim(48, 1, 1), 0, a, 1, &f), 0);
  for (int w = 0; w < 2; ++w) {
    int width = w ? 16 : 32;
    float v[32] = {0};
    for (int l = 0; l < width; ++l)
      v[l] = x[w * 32 + l];
    for (int o = width / 2; o > 0; o >>= 1)
      for (int l = 0; l < width; ++l)
        v[l] +=
            l + o < width ? v[l + o] : v[l]; /* lanes in order: l reads l + o before it changes */
    ck_assert_msg(out[w] == v[0], "warp %d: %a want %a", w, (double)out[w], (double)v[0]);
  }
  free(x);
  hk_unload(&m);
}
END_TEST

START_TEST(warp_op_with_missing_lanes_faults) {
  static const char *const srcs[] = {
      /* a lane of the mask returned */
      "extern \"C\" __global__ void k(int *p) {\n"
      "  if (threadIdx.x == 5) return;\n"
      "  p[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0);\n"
      "}\n",
      /* the mask names lanes the block does not have (16 threads) */
      ("extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0); "
       "}\n"), /* (one element: clang's -Wstring-concatenation) */
      /* a lane calls with a mask without itself */
      "extern \"C\" __global__ void k(int *p) { p[threadIdx.x] = __ballot_sync(0x1u, 1); }\n",
  };
  static const char *const want[] = {"returned", "do not exist", "not in its own mask"};
  for (int i = 0; i < 3; ++i) {
    hk_mod m = build(srcs[i]);
    int v[32], *pv = v;
    void *a[] = {&pv};
    t4a_hk_fault f;
    ck_assert_int_eq(
        hk_launch(kernel(&m, "k"), hk_dim(1, 1, 1), hk_dim(i == 1 ? 16 : 32, 1, 1), 0, a, 1, &f),
        1);
    ck_assert_int_eq(f.kind, T4A_HK_FAULT_BARRIER);
    ck_assert_msg(strstr(f.message, want[i]) != NULL, "case %d: %s", i, f.message);
    hk_unload(&m);
  }
}
END_TEST

/* ---- shared memory ------------------------------------------------------- */

START_TEST(transpose_static_shared_tile) {
  hk_mod m = build(
      "#define TILE 32\n"
      "extern \"C\" __global__ void transpose(const float *in, float *out, int w, int h) {\n"
      "  __shared__ float tile[TILE][TILE + 1];\n"
      "  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;\n"
      "  for (int j = 0; j < TILE; j += blockDim.y)\n"
      "    if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];\n"
      "  __syncthreads();\n"
      "  x = blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y;\n"
      "  for (int j = 0; j < TILE; j += blockDim.y)\n"
      "    if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];\n"
      "}\n");
  int w = 100, h = 70;
  float *in = randf((size_t)w * (size_t)h, 4), *out = malloc((size_t)w * (size_t)h * sizeof(float));
  memset(out, 0, (size_t)(w * h) * sizeof(float));
  void *a[] = {&in, &out, &w, &h};
  t4a_hk_fault f;
  ck_assert_int_eq(
      hk_launch(kernel(&m, "transpose"), hk_dim(4, 3, 1), hk_dim(32, 8, 1), 0, a, 3, &f), 0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      ck_assert(out[x * h + y] == in[y * w + x]);
  free(in), free(out);
  hk_unload(&m);
}
END_TEST

START_TEST(dynamic_shared_aliases) {
  hk_mod m = build("extern __shared__ __align__(16) unsigned char file_scope[];\n"
                   "extern \"C\" __global__ void rev(const int *in, int *out, int n) {\n"
                   "  extern __shared__ int buf[];\n"
                   "  extern __shared__ float4 as_f4[];\n"
                   "  int t = threadIdx.x;\n"
                   "  buf[t] = in[blockIdx.x * n + t];\n"
                   "  __syncthreads();\n"
                   "  out[blockIdx.x * n + t] = buf[n - 1 - t];\n"
                   "  int *again = (int *)file_scope; /* all extern arrays share the area */\n"
                   "  float *f = (float *)as_f4;\n"
                   "  if (t == 0) {\n"
                   "    out[gridDim.x * n + blockIdx.x * 3] = again[n - 1];\n"
                   "    out[gridDim.x * n + blockIdx.x * 3 + 1] = __float_as_int(f[0]);\n"
                   "    out[gridDim.x * n + blockIdx.x * 3 + 2] = (int)(((unsigned long long)(void "
                   "*)buf) & 255);\n"
                   "  }\n"
                   "}\n");
  const int blocks = 5;
  int n = 200;
  uint32_t *r = randu((size_t)blocks * (size_t)n, 8);
  int *in = (int *)r, *out = malloc((size_t)(blocks * n + blocks * 3) * sizeof(int));
  void *a[] = {&in, &out, &n};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(kernel(&m, "rev"), hk_dim(blocks, 1, 1), hk_dim((uint32_t)n, 1, 1),
                             (uint32_t)n * 4, a, 2, &f),
                   0);
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < n; ++t)
      ck_assert_int_eq(out[b * n + t], in[b * n + n - 1 - t]);
    ck_assert_int_eq(out[blocks * n + b * 3], in[b * n + n - 1]);
    ck_assert_int_eq(out[(size_t)blocks * n + (size_t)b * 3 + 1], in[(size_t)b * n]);
    ck_assert_int_eq(out[blocks * n + b * 3 + 2], 0); /* 256-byte aligned */
  }
  free(r), free(out);
  hk_unload(&m);
}
END_TEST

/* ---- atomics --------------------------------------------------------------- */

START_TEST(atomics_under_contention) {
  hk_mod m = build(
      "extern \"C\" __global__ void at(int *i, unsigned *u, unsigned long long *ull, float *f,\n"
      "                                double *d, const unsigned *vals) {\n"
      "  unsigned g = blockIdx.x * blockDim.x + threadIdx.x, v = vals[g];\n"
      "  atomicAdd(&i[0], 1); atomicSub(&i[1], 2); atomicMax(&i[2], (int)v); atomicMin(&i[3], "
      "(int)v);\n"
      "  atomicAdd(&u[0], v & 0xff); atomicMax(&u[1], v); atomicMin(&u[2], v);\n"
      "  atomicOr(&u[3], 1u << (v & 31)); atomicAnd(&u[4], ~(1u << (v % 31)));\n"
      "  atomicXor(&u[5], v); atomicInc(&u[6], 100u); atomicDec(&u[7], 77u);\n"
      "  atomicAdd(&ull[0], (unsigned long long)v << 8); atomicMax(&ull[1], (unsigned long long)v "
      "* v);\n"
      "  atomicAdd(&f[0], 1.0f); atomicAdd(&d[0], 0.5);\n"
      "  int old = atomicCAS(&i[4], 0, 0), seen;\n"
      "  do { seen = old; old = atomicCAS(&i[4], seen, seen + 3); } while (old != seen);\n"
      "  unsigned long long o = atomicExch(&ull[2], (unsigned long long)g);\n"
      "  atomicAdd(&ull[3], o);\n"
      "}\n");
  const uint32_t blocks = 300, threads = 128, n = blocks * threads;
  uint32_t *vals = randu(n, 12);
  int i[5] = {0, 0, (int)0x80000000, 0x7fffffff, 0};
  unsigned u[8] = {0, 0, 0xffffffffu, 0, 0xffffffffu, 0, 95, 1000}; /* inc, dec from above */
  unsigned long long ull[4] = {0, 0, n, 0};
  float fl = 0;
  double d = 0;
  int *pi = i;
  unsigned *pu = u, *pv = vals;
  unsigned long long *pull = ull;
  float *pf = &fl;
  double *pd = &d;
  void *a[] = {&pi, &pu, &pull, &pf, &pd, &pv};
  t4a_hk_fault f;
  ck_assert_int_eq(
      hk_launch(kernel(&m, "at"), hk_dim(blocks, 1, 1), hk_dim(threads, 1, 1), 0, a, 4, &f), 0);
  int imax = (int)0x80000000, imin = 0x7fffffff;
  unsigned usum = 0, umax = 0, umin = 0xffffffffu, uor = 0, uand = 0xffffffffu, uxor = 0;
  unsigned long long usum8 = 0, usq = 0, exch = n; /* sum of the exchanged values */
  for (uint32_t g = 0; g < n; ++g) {
    unsigned v = vals[g];
    imax = (int)v > imax ? (int)v : imax, imin = (int)v < imin ? (int)v : imin;
    usum += v & 0xff, umax = v > umax ? v : umax, umin = v < umin ? v : umin;
    uor |= 1u << (v & 31), uand &= ~(1u << (v % 31)), uxor ^= v;
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
  /* inc and dec: the same function of the old value each time, so the
   * order does not matter (CUDA's: inc wraps to 0 past 100; dec goes to 77
   * from 0 or from above 77) */
  unsigned inc = 95, dec = 1000;
  for (uint32_t g = 0; g < n; ++g)
    inc = inc >= 100 ? 0 : inc + 1, dec = (dec == 0 || dec > 77) ? 77 : dec - 1;
  ck_assert_uint_eq(u[6], inc);
  ck_assert_uint_eq(u[7], dec);
  ck_assert(ull[0] == usum8);
  ck_assert(ull[1] == usq);
  /* every value exchanged out once: the last one stays */
  ck_assert(ull[3] + ull[2] == exch);
  ck_assert(fl == (float)n);
  ck_assert(d == 0.5 * n);
  free(vals);
  hk_unload(&m);
}
END_TEST

/* ---- math ------------------------------------------------------------------- */

START_TEST(math_functions) {
  hk_mod m = build(
      "extern \"C\" __global__ void mf(const float *x, float *o, const double *dx, double *od) {\n"
      "  int t = threadIdx.x; float v = x[t], a = fabsf(v) + 0.5f; double w = dx[t], b = fabs(w) + "
      "0.5;\n"
      "  float *p = o + t * 24; double *q = od + t * 16;\n"
      "  p[0] = sqrtf(a); p[1] = rsqrtf(a); p[2] = expf(v); p[3] = __expf(v); p[4] = exp2f(v);\n"
      "  p[5] = logf(a); p[6] = log2f(a); p[7] = sinf(v); p[8] = cosf(v); p[9] = tanhf(v);\n"
      "  p[10] = powf(a, v); p[11] = fmaf(v, a, 1.0f); p[12] = fminf(v, a - 1.0f);\n"
      "  p[13] = fmaxf(v, a - 1.0f); p[14] = floorf(v * 8); p[15] = ceilf(v * 8);\n"
      "  p[16] = __fdividef(v, a); p[17] = __saturatef(v * 2); p[18] = min(v, 0.25f);\n"
      "  p[19] = max(v, 0.25f); p[20] = (float)min(-1, 1u); p[21] = (float)max(t - 5, 0);\n"
      "  p[22] = sqrt(a); p[23] = exp(v);\n"
      "  q[0] = sqrt(b); q[1] = rsqrt(b); q[2] = exp(w); q[3] = exp2(w); q[4] = log(b);\n"
      "  q[5] = log2(b); q[6] = sin(w); q[7] = cos(w); q[8] = tanh(w); q[9] = pow(b, w);\n"
      "  q[10] = fma(w, b, 1.0); q[11] = fmin(w, b); q[12] = fmax(w, -b); q[13] = floor(w * 8);\n"
      "  q[14] = ceil(w * 8); q[15] = fabs(w);\n"
      "}\n"
      "extern \"C\" __global__ void bits(const unsigned *x, unsigned *o) {\n"
      "  int t = threadIdx.x; unsigned v = x[t]; unsigned *p = o + t * 8;\n"
      "  p[0] = __popc(v); p[1] = __clz((int)v); p[2] = __brev(v); p[3] = __ffs((int)v);\n"
      "  p[4] = __byte_perm(v, ~v, 0x5140); p[5] = __funnelshift_l(v, ~v, t);\n"
      "  p[6] = __umulhi(v, 0x9e3779b9u); p[7] = __float_as_uint(__uint_as_float(v));\n"
      "}\n");
  float *x = randf(64, 13), o[64 * 24];
  double dx[64], od[64 * 16];
  for (int t = 0; t < 64; ++t)
    dx[t] = (double)x[t] * 3.0 + 0.001 * t;
  float *po = o;
  double *pdx = dx, *pod = od;
  void *a[] = {&x, &po, &pdx, &pod};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(kernel(&m, "mf"), hk_dim(1, 1, 1), hk_dim(64, 1, 1), 0, a, 1, &f), 0);
  for (int t = 0; t < 64; ++t) {
    float v = x[t], av = fabsf(v) + 0.5f, *p = o + (size_t)t * 24;
    float want[24] = {sqrtf(av),
                      1.0f / sqrtf(av),
                      expf(v),
                      expf(v),
                      exp2f(v),
                      logf(av),
                      log2f(av),
                      sinf(v),
                      cosf(v),
                      tanhf(v),
                      powf(av, v),
                      fmaf(v, av, 1.0f),
                      fminf(v, av - 1.0f),
                      fmaxf(v, av - 1.0f),
                      floorf(v * 8),
                      ceilf(v * 8),
                      v / av,
                      v * 2 < 0   ? 0
                      : v * 2 > 1 ? 1
                                  : v * 2,
                      v < 0.25f ? v : 0.25f,
                      v > 0.25f ? v : 0.25f,
                      1.0f,
                      (float)(t - 5 > 0 ? t - 5 : 0),
                      sqrtf(av),
                      expf(v)};
    for (int j = 0; j < 24; ++j)
      ck_assert_msg(fabsf(p[j] - want[j]) <= 2e-6f * (1.0f + fabsf(want[j])),
                    "t %d fn %d: %g want %g", t, j, (double)p[j], (double)want[j]);
    double w = dx[t], b = fabs(w) + 0.5, *q = od + (size_t)t * 16;
    double dw[16] = {sqrt(b),     1.0 / sqrt(b), exp(w),      exp2(w),   log(b),         log2(b),
                     sin(w),      cos(w),        tanh(w),     pow(b, w), fma(w, b, 1.0), fmin(w, b),
                     fmax(w, -b), floor(w * 8),  ceil(w * 8), fabs(w)};
    for (int j = 0; j < 16; ++j)
      ck_assert_msg(fabs(q[j] - dw[j]) <= 1e-14 * (1.0 + fabs(dw[j])), "t %d dfn %d: %g want %g", t,
                    j, q[j], dw[j]);
  }
  uint32_t *u = randu(32, 14);
  u[0] = 0, u[1] = 1, u[2] = 0x80000000u;
  unsigned ob[32 * 8], *pu = u, *pob = ob;
  void *b2[] = {&pu, &pob};
  ck_assert_int_eq(hk_launch(kernel(&m, "bits"), hk_dim(1, 1, 1), hk_dim(32, 1, 1), 0, b2, 1, &f),
                   0);
  for (unsigned t = 0; t < 32; ++t) {
    unsigned v = u[t], *p = ob + (size_t)t * 8, rev = 0, nv = ~v;
    for (int k = 0; k < 32; ++k)
      rev |= ((v >> k) & 1u) << (31 - k);
    unsigned bp = 0;
    const unsigned sel[4] = {0, 4, 1, 5}; /* 0x5140, lowest nibble first */
    for (int k = 0; k < 4; ++k) {
      unsigned s = sel[k];
      unsigned byte = s < 4 ? (v >> (8 * s)) & 0xff : (nv >> (8 * (s - 4))) & 0xff;
      bp |= byte << (8 * k);
    }
    unsigned long long fs = ((unsigned long long)nv << 32) | v;
    ck_assert_uint_eq(p[0], (unsigned)__builtin_popcount(v));
    ck_assert_uint_eq(p[1], v ? (unsigned)__builtin_clz(v) : 32u);
    ck_assert_uint_eq(p[2], rev);
    ck_assert_uint_eq(p[3], v ? (unsigned)__builtin_ctz(v) + 1 : 0u);
    ck_assert_uint_eq(p[4], bp);
    ck_assert_uint_eq(p[5], (unsigned)((fs << (t & 31)) >> 32));
    ck_assert_uint_eq(p[6], (unsigned)(((unsigned long long)v * 0x9e3779b9u) >> 32));
    ck_assert_uint_eq(p[7], v);
  }
  free(x), free(u);
  hk_unload(&m);
}
END_TEST

/* ---- printf, assert, __trap, fault_here ------------------------------------ */

/* The same output from a loop-mode kernel and from a fiber-mode one, whose
 * printf runs on a fiber's stack (each thread prints before the barrier, so
 * in thread order): the C library on a stack the process did not make. */
START_TEST(printf_from_kernels) {
  static const char *const sources[] = {
      "extern \"C\" __global__ void p(int base) {\n"
      "  printf(\"block %d thread %d value %d %.2f\\n\", blockIdx.x, threadIdx.x,\n"
      "         base + (int)threadIdx.x, 0.5 * threadIdx.x);\n"
      "}\n",
      "extern \"C\" __global__ void p(int base) {\n"
      "  printf(\"block %d thread %d value %d %.2f\\n\", blockIdx.x, threadIdx.x,\n"
      "         base + (int)threadIdx.x, 0.5 * threadIdx.x);\n"
      "  __syncthreads();\n"
      "}\n"};
  hk_mod m = build(sources[_i]);
  ck_assert_int_eq(!!(kernel(&m, "p")->flags & T4A_HK_KERNEL_FIBERS), _i);
  char path[] = "/tmp/t4a-hk-out-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  fflush(stdout);
  int saved = dup(1);
  ck_assert_int_eq(dup2(fd, 1), 1);
  int base = 40;
  void *a[] = {&base};
  t4a_hk_fault f;
  int rc = hk_launch(kernel(&m, "p"), hk_dim(2, 1, 1), hk_dim(3, 1, 1), 0, a, 1, &f);
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  ck_assert_int_eq(rc, 0);
  char text[512] = {0};
  ck_assert_int_gt(pread(fd, text, sizeof text - 1, 0), 0);
  close(fd);
  unlink(path);
  ck_assert_str_eq(text, "block 0 thread 0 value 40 0.00\nblock 0 thread 1 value 41 0.50\n"
                         "block 0 thread 2 value 42 1.00\nblock 1 thread 0 value 40 0.00\n"
                         "block 1 thread 1 value 41 0.50\nblock 1 thread 2 value 42 1.00\n");
  hk_unload(&m);
}
END_TEST

START_TEST(assert_and_trap_fault) {
  hk_mod m = build("extern \"C\" __global__ void a(const int *v, int *out) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  assert(v[i] < 5);\n"
                   "  out[i] = v[i];\n"
                   "}\n"
                   "extern \"C\" __global__ void t(int *out) {\n"
                   "  __syncthreads();\n"
                   "  if (blockIdx.x == 1 && threadIdx.x == 9)\n"
                   "    __trap();\n"
                   "  __syncthreads();\n"
                   "  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;\n"
                   "}\n");
  int v[64], out[64];
  for (int i = 0; i < 64; ++i)
    v[i] = i == 37 ? 9 : i % 5;
  int *pv = v, *po = out;
  void *a[] = {&pv, &po};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(kernel(&m, "a"), hk_dim(4, 1, 1), hk_dim(16, 1, 1), 0, a, 1, &f), 1);
  ck_assert_int_eq(f.kind, T4A_HK_FAULT_ASSERT);
  ck_assert_uint_eq(f.block.x, 2);
  ck_assert_uint_eq(f.thread.x, 5);
  ck_assert_str_eq(f.message, "assert(v[i] < 5) failed at k.cu:3");
  v[37] = 1; /* the same module runs again after a fault */
  ck_assert_int_eq(hk_launch(kernel(&m, "a"), hk_dim(4, 1, 1), hk_dim(16, 1, 1), 0, a, 2, &f), 0);
  for (int i = 0; i < 64; ++i)
    ck_assert_int_eq(out[i], v[i]);
  memset(out, 0, sizeof out);
  void *b[] = {&po};
  ck_assert_int_eq(hk_launch(kernel(&m, "t"), hk_dim(2, 1, 1), hk_dim(32, 1, 1), 0, b, 1, &f), 1);
  ck_assert_int_eq(f.kind, T4A_HK_FAULT_TRAP);
  ck_assert_uint_eq(f.block.x, 1);
  ck_assert_uint_eq(f.thread.x, 9);
  ck_assert_str_eq(f.message, "__trap() called at k.cu:9");
  for (int i = 32; i < 64; ++i)
    ck_assert_int_eq(out[i], 0); /* the faulted block stopped before its second barrier */
  hk_unload(&m);
}
END_TEST

static const t4a_hk_module *handler_module;

static void on_segv(int sig) {
  (void)sig;
  handler_module->fault_here(T4A_HK_FAULT_MEMORY, "SIGSEGV at a bad address");
  _exit(3); /* not inside run: fault_here returned */
}

START_TEST(fault_here_from_a_signal_handler) {
  /* -DT4A_HK_CHECKED: loop-mode kernels keep each thread's index where
   * fault_here finds it (for the plugin's checked mode) */
  hk_mod m;
  char *log = NULL;
  int rc = hk_build(
      "extern \"C\" __global__ void w(int **p) {\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 3) *p[blockIdx.x] = 1;\n"
      "}\n"
      "extern \"C\" __global__ void l(int **p) { if (threadIdx.x == 2) *p[blockIdx.x] = 1; }\n",
      "k.cu", "-DT4A_HK_CHECKED=1", &m, &log);
  ck_assert_msg(rc == 0, "%s", log);
  handler_module = m.m;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sa.sa_flags = SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
  int good = 0, *ptrs[2] = {&good, (int *)(uintptr_t)64};
  int **pp = ptrs;
  void *a[] = {&pp};
  for (int rep = 0; rep < 3; ++rep) { /* again and again: the signal is not left blocked */
    t4a_hk_fault f;
    const t4a_hk_kernel *k = kernel(&m, rep == 1 ? "l" : "w");
    ck_assert_int_eq(hk_launch(k, hk_dim(2, 1, 1), hk_dim(8, 1, 1), 0, a, 1, &f), 1);
    ck_assert_int_eq(f.kind, T4A_HK_FAULT_MEMORY);
    ck_assert_uint_eq(f.block.x, 1);
    ck_assert_uint_eq(f.thread.x, rep == 1 ? 2 : 3);
    ck_assert_str_eq(f.message, "SIGSEGV at a bad address");
  }
  ck_assert_int_eq(good, 1);
  m.m->fault_here(T4A_HK_FAULT_MEMORY, "outside run"); /* returns */
  signal(SIGSEGV, SIG_DFL);
  hk_unload(&m);
}
END_TEST

START_TEST(prelude_compiles_clean) {
  /* no warning of the prelude's under -Wall -Wextra (with g++ or clang++) */
  static const char *const compilers[] = {NULL, "clang++", "g++"};
  for (int c = 0; c < 3; ++c) {
    char cmd[128];
    if (compilers[c]) {
      snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", compilers[c]);
      if (system(cmd) != 0)
        continue;
      setenv("T4A_HOST_CXX", compilers[c], 1);
    }
    hk_mod m;
    char *log = NULL;
    int rc = hk_build("extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = 1.0f; }\n"
                      "extern \"C\" __global__ void s(float *p) { __syncthreads(); p[0] = "
                      "__shfl_sync(~0u, 1.0f, 0); }\n",
                      "k.cu", "-Werror", &m, &log);
    ck_assert_msg(rc == 0, "%s: %s", compilers[c] ? compilers[c] : hk_cxx(), log ? log : "");
    hk_unload(&m);
  }
}
END_TEST

/* The thread loop inside a loop-mode kernel keeps CUDA's per-thread
 * semantics: own copies of the parameters, `return` ends one thread,
 * helpers read the right threadIdx (and assert in one names its thread). */
START_TEST(loop_body_semantics) {
  const char *src =
      "__device__ unsigned gid() { return blockIdx.x * blockDim.x + threadIdx.x; }\n"
      "__device__ void check(int v) { assert(v != 77); }\n"
      "extern \"C\" __global__ void own(int *out, int n) {\n"
      "  out += blockIdx.x * blockDim.x + threadIdx.x; /* each thread's own pointer */\n"
      "  n -= (int)threadIdx.x;\n"
      "  if (threadIdx.x == 3) return; /* only this thread */\n"
      "  auto twice = [&](int v) { return 2 * v + (int)threadIdx.y; };\n"
      "  *out = twice(n);\n"
      "}\n"
      "extern \"C\" __global__ void helper(unsigned *out, const int *v) {\n"
      "  unsigned i = gid();\n"
      "  check(v[i]);\n"
      "  out[i] = i * 3u;\n"
      "}\n";
  t4a__ktu u = translate_ok(src);
  ck_assert_ptr_nonnull(strstr(u.text, "void own(int *out, int n) { T4A_HK_THREADS_BEGIN(0)"));
  ck_assert_ptr_nonnull(
      strstr(u.text, "void helper(unsigned *out, const int *v) { T4A_HK_THREADS_BEGIN(1)"));
  t4a__ktu_free(&u);
  hk_mod m = build(src);
  int out[64], n = 100;
  memset(out, 0, sizeof out);
  int *po = out;
  void *a[] = {&po, &n};
  t4a_hk_fault f;
  ck_assert_int_eq(hk_launch(kernel(&m, "own"), hk_dim(4, 1, 1), hk_dim(16, 1, 1), 0, a, 2, &f), 0);
  for (int i = 0; i < 64; ++i)
    ck_assert_int_eq(out[i], i % 16 == 3 ? 0 : 2 * (100 - i % 16));
  unsigned o2[256];
  int v[256];
  for (int i = 0; i < 256; ++i)
    v[i] = i == 201 ? 77 : i % 50;
  unsigned *p2 = o2;
  int *pv = v;
  void *b[] = {&p2, &pv};
  ck_assert_int_eq(hk_launch(kernel(&m, "helper"), hk_dim(4, 1, 1), hk_dim(64, 1, 1), 0, b, 1, &f),
                   1);
  ck_assert_int_eq(f.kind, T4A_HK_FAULT_ASSERT);
  ck_assert_uint_eq(f.block.x, 3);
  ck_assert_uint_eq(f.thread.x, 9);
  ck_assert_str_eq(f.message, "assert(v != 77) failed at k.cu:2");
  v[201] = 0;
  ck_assert_int_eq(hk_launch(kernel(&m, "helper"), hk_dim(4, 1, 1), hk_dim(64, 1, 1), 0, b, 2, &f),
                   0);
  for (unsigned i = 0; i < 256; ++i)
    ck_assert_uint_eq(o2[i], (uintmax_t)i * 3u);
  hk_unload(&m);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("hostk-prelude");
  TCase *t = tcase_create("translate");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, finds_extern_c_kernels);
  tcase_add_test(t, prelude_id_names_abi);
  tcase_add_test(t, refuses_unsupported);
  tcase_add_test(t, refusal_skips_code_the_host_never_compiles);
  tcase_add_test(t, fibers_only_where_needed);
  tcase_add_test(t, params_and_launch_bounds);
  tcase_add_test(t, compile_errors_carry_source_lines);
  suite_add_tcase(s, t);
  t = tcase_create("loop");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, saxpy_loop);
  tcase_add_test(t, indices_3d);
  tcase_add_test(t, loop_body_semantics);
  suite_add_tcase(s, t);
  t = tcase_create("fibers");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, block_reduce_barriers);
  tcase_add_test(t, barrier_switch_keeps_live_values);
  tcase_add_test(t, early_return_and_barrier_reductions);
  tcase_add_test(t, unreachable_barrier_faults);
  tcase_add_test(t, barrier_in_loop_mode_faults);
  tcase_add_test(t, many_blocks_one_call_and_stop);
  suite_add_tcase(s, t);
  t = tcase_create("warp");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, shuffles_full_and_partial_masks);
  tcase_add_test(t, votes_reductions_activemask);
  tcase_add_test(t, warp_reduce_partial_block);
  tcase_add_test(t, warp_op_with_missing_lanes_faults);
  suite_add_tcase(s, t);
  t = tcase_create("memory");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, transpose_static_shared_tile);
  tcase_add_test(t, dynamic_shared_aliases);
  tcase_add_test(t, atomics_under_contention);
  suite_add_tcase(s, t);
  t = tcase_create("functions");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, math_functions);
  tcase_add_loop_test(t, printf_from_kernels, 0, 2);
  tcase_add_test(t, assert_and_trap_fault);
  tcase_add_test(t, fault_here_from_a_signal_handler);
  tcase_add_test(t, prelude_compiles_clean);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", hk_cxx());
  if (system(cmd) != 0) {
    printf("SKIP: no C++ compiler (%s): the host backend compiles kernels with one\n", hk_cxx());
    return T4A_TEST_SKIP;
  }
  return t4a_test_run(suite());
}
