/* tests/hostk/test_prelude.c -- the host backend's translator and prelude
 * on their own: CUDA C kernels translated (plugin-host/ktranslate.c),
 * compiled with the host C++ compiler as the plugin does, loaded, and run
 * block by block through plugin-host/kernel_abi.h on threads of this test
 * (tests/hostk/hk_harness.c), against CPU references. Skips (77) without
 * a C++ compiler. */
#include "config.h"

#include <check.h>
#include <math.h>
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

static __attribute__((unused)) uint32_t *randu(size_t n, uint64_t seed) {
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
  unsigned *out = malloc(n * 2 * sizeof *out);
  memset(out, 0xff, n * 2 * sizeof *out);
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
