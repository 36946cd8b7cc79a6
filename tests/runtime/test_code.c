/* tests/runtime/test_code.c -- code on the GPU: NVRTC artifacts and their
 * caches, consumer PTX/CUBIN/fatbin, per-runtime modules, launch with
 * geometry checks, the raw function seam.
 *
 * One source, two lanes: against the fake driver (its "kernels" are host
 * functions with the same names) and on the GPU. Needs NVRTC: the fake lane
 * skips without it, the GPU lane fails. */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/runtime/rtutil.h"

#define KiB 1024ull
#define MiB (1ull << 20)

static const char kernels[] =
    "extern \"C\" __global__ void t4a_axpy_f32(unsigned long long n, float a, const float *x,\n"
    "                                          float *y) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void t4a_sum_f32(unsigned long long n, const float *x, float *out) {\n"
    "  __shared__ float s[256];\n"
    "  float v = 0.0f;\n"
    "  for (unsigned long long i = blockIdx.x * 256ull + threadIdx.x; i < n;\n"
    "       i += gridDim.x * 256ull)\n"
    "    v += x[i];\n"
    "  s[threadIdx.x] = v;\n"
    "  __syncthreads();\n"
    "  for (unsigned w = 128; w > 0; w >>= 1) {\n"
    "    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) atomicAdd(out, s[0]);\n"
    "}\n"
    "extern \"C\" __global__ void t4a_reverse_u32(const unsigned *x, unsigned *y, unsigned per) {\n"
    "  extern __shared__ unsigned s[];\n"
    "  unsigned long long span = (unsigned long long)blockDim.x * per, base = blockIdx.x * span;\n"
    "  for (unsigned k = 0; k < per; k++)\n"
    "    s[threadIdx.x * per + k] = x[base + threadIdx.x * per + k];\n"
    "  __syncthreads();\n"
    "  for (unsigned k = 0; k < per; k++) {\n"
    "    unsigned long long i = threadIdx.x * per + k;\n"
    "    y[base + i] = s[span - 1 - i];\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void t4a_empty() {}\n";

static t4a_compile_options request(const char *source, int32_t device) {
  t4a_compile_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.source = source;
  o.name = "kernels.cu";
  o.device_ordinal = device;
  return o;
}

static t4a_artifact compile(const char *source) {
  t4a_compile_options o = request(source, 0);
  t4a_artifact a = {0};
  RT_OK(T->artifact_compile(&o, &a));
  ck_assert(a.bits != 0);
  return a;
}

static t4a_function load(t4a_runtime rt, t4a_artifact a, t4a_module *m, const char *name) {
  RT_OK(T->module_load(rt, a, m));
  t4a_function f = {0};
  RT_OK(T->function_get(rt, *m, name, &f));
  return f;
}

static t4a_launch_config geometry(uint32_t grid, uint32_t block, uint32_t shared) {
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {grid, 1, 1}, .block = {block, 1, 1}};
  c.shared_bytes = shared;
  return c;
}

static void random_floats(float *v, uint64_t n, uint64_t seed) {
  uint32_t *bits = malloc(n * 4);
  t4a_test_fill_random(bits, n * 4, seed);
  for (uint64_t i = 0; i < n; i++)
    v[i] = (float)(bits[i] >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  free(bits);
}

/* Runs axpy through f on rt and checks it against the CPU. */
static void check_axpy(t4a_runtime rt, t4a_function f, uint64_t n, uint64_t seed) {
  float *x = malloc(n * 4), *y = malloc(n * 4), *out = malloc(n * 4);
  random_floats(x, n, seed);
  random_floats(y, n, seed + 1);
  float a = 1.75f;
  t4a_buffer dx, dy;
  RT_OK(T->buffer_alloc(rt, n * 4, &dx));
  RT_OK(T->buffer_alloc(rt, n * 4, &dy));
  RT_OK(T->copy_h2d(rt, dx, 0, x, n * 4));
  RT_OK(T->copy_h2d(rt, dy, 0, y, n * 4));
  uint64_t px, py;
  RT_OK(T->buffer_device_address(rt, dx, &px));
  RT_OK(T->buffer_device_address(rt, dy, &py));
  void *args[] = {&n, &a, &px, &py};
  t4a_launch_config c = geometry(128, 256, 0);
  RT_OK(T->launch(rt, f, &c, args));
  memset(out, 0xff, n * 4); /* poisoned: NaN everywhere */
  RT_OK(T->copy_d2h(rt, out, dy, 0, n * 4));
  for (uint64_t i = 0; i < n; i++) {
    double ref = (double)a * (double)x[i] + (double)y[i];
    ck_assert_msg(fabs((double)out[i] - ref) <= 1e-6 * (fabs(ref) + 1), "axpy[%llu] = %g, want %g",
                  (unsigned long long)i, (double)out[i], ref);
  }
  RT_OK(T->buffer_free(rt, dx));
  RT_OK(T->buffer_free(rt, dy));
  free(x);
  free(y);
  free(out);
}

START_TEST(compile_and_launch_axpy) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = compile(kernels);
  t4a_artifact_kind kind = 0;
  const void *data;
  uint64_t size;
  RT_OK(T->artifact_data(a, &kind, &data, &size));
  ck_assert_int_eq(kind, T4A_ARTIFACT_CUBIN); /* CUBIN for the device by default */
  ck_assert(size > 4 && memcmp(data,
                               "\x7f"
                               "ELF",
                               4) == 0);
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_axpy_f32");
  check_axpy(rt, f, MiB + 3, t4a_test_seed());
  ck_assert_uint_eq(rt_counters(rt).launches, 1);
  t4a_function_attributes at = {.struct_size = sizeof at};
  RT_OK(T->function_attributes(rt, f, &at));
  ck_assert_int_ge(at.max_threads_per_block, 256);
  ck_assert_int_gt(at.num_registers, 0);
  void *raw = NULL;
  RT_OK(T->raw_function(rt, f, &raw));
  ck_assert_ptr_nonnull(raw);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(reduction_matches_the_cpu) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = compile(kernels);
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_sum_f32");
  uint64_t n = 3 * MiB + 17;
  float *x = malloc(n * 4);
  random_floats(x, n, t4a_test_seed());
  double ref = 0;
  for (uint64_t i = 0; i < n; i++)
    ref += (double)x[i];
  t4a_buffer dx, dout;
  RT_OK(T->buffer_alloc(rt, n * 4, &dx));
  RT_OK(T->buffer_alloc(rt, 4, &dout));
  RT_OK(T->copy_h2d(rt, dx, 0, x, n * 4));
  float zero = 0.0f, out = NAN;
  RT_OK(T->copy_h2d(rt, dout, 0, &zero, 4));
  uint64_t px, po;
  RT_OK(T->buffer_device_address(rt, dx, &px));
  RT_OK(T->buffer_device_address(rt, dout, &po));
  void *args[] = {&n, &px, &po};
  t4a_launch_config c = geometry(264, 256, 0);
  RT_OK(T->launch(rt, f, &c, args));
  RT_OK(T->copy_d2h(rt, &out, dout, 0, 4));
  ck_assert_msg(fabs((double)out - ref) <= 1e-4 * fabs(ref) + 1e-2, "sum %g, want %g", (double)out,
                ref);
  free(x);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(dynamic_shared_memory_needs_opt_in) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = compile(kernels);
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_reverse_u32");
  uint32_t block = 1024, per = 16, grid = 8;
  uint64_t n = (uint64_t)grid * block * per, shared = (uint64_t)block * per * 4; /* 64 KiB */
  uint32_t *x = malloc(n * 4), *y = malloc(n * 4);
  t4a_test_fill_random(x, n * 4, t4a_test_seed());
  t4a_buffer dx, dy;
  RT_OK(T->buffer_alloc(rt, n * 4, &dx));
  RT_OK(T->buffer_alloc(rt, n * 4, &dy));
  RT_OK(T->copy_h2d(rt, dx, 0, x, n * 4));
  uint64_t px, py;
  RT_OK(T->buffer_device_address(rt, dx, &px));
  RT_OK(T->buffer_device_address(rt, dy, &py));
  void *args[] = {&px, &py, &per};
  t4a_launch_config c = geometry(grid, block, (uint32_t)shared);
  RT_EXPECT(T->launch(rt, f, &c, args), T4A_EINVAL); /* above the default 48 KiB */
  RT_DETAIL("65536 bytes of dynamic shared memory");
  RT_EXPECT(T->function_set_max_dynamic_shared(rt, f, 10 * 1024 * 1024), T4A_EINVAL);
  RT_DETAIL("opt-in limit");
  RT_OK(T->function_set_max_dynamic_shared(rt, f, (uint32_t)shared));
  RT_OK(T->launch(rt, f, &c, args));
  memset(y, 0xee, n * 4);
  RT_OK(T->copy_d2h(rt, y, dy, 0, n * 4));
  uint64_t span = (uint64_t)block * per;
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(y[i], x[(i / span) * span + span - 1 - i % span]);
  t4a_function_attributes at = {.struct_size = sizeof at};
  RT_OK(T->function_attributes(rt, f, &at));
  ck_assert_int_eq(at.max_dynamic_shared_bytes, (int)shared);
  free(x);
  free(y);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(compile_errors_return_the_log) {
  t4a_compile_options o = request("extern \"C\" __global__ void broken( { }\n", 0);
  t4a_artifact a = {0};
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_ECOMPILE);
  RT_DETAIL("compiling 'kernels.cu' failed");
  ck_assert(a.bits != 0); /* the artifact carries the log */
  const char *log = NULL;
  uint64_t len = 0;
  RT_OK(T->artifact_log(a, &log, &len));
  ck_assert_uint_gt(len, 0);
  ck_assert_ptr_nonnull(strstr(log, "error"));
  t4a_runtime rt = rt_create();
  t4a_module m;
  RT_EXPECT(T->module_load(rt, a, &m), T4A_EINVAL);
  RT_DETAIL("holds no code");
  RT_OK(T->artifact_release(a));
  RT_EXPECT(T->artifact_log(a, &log, &len), T4A_EHANDLE);
  /* an option NVRTC does not know: typed, with the log */
  const char *bad[] = {"--no-such-option"};
  o = request(kernels, 0);
  o.options = bad;
  o.option_count = 1;
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  if (a.bits)
    RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(compile_requests_are_checked) {
  t4a_artifact a = {1};
  char with_nul[] = "__global__ void k() {}\0trailing";
  t4a_compile_options o = request(with_nul, 0);
  o.source_size = sizeof with_nul - 1;
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  RT_DETAIL("NUL byte at offset 22");
  ck_assert(a.bits == 0);
  o = request("", 0);
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  RT_DETAIL("empty");
  o = request(NULL, 0);
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o = request(kernels, 0);
  o.flags = 0x80;
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o = request(kernels, 0);
  o.option_count = 2; /* options NULL */
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o = request(kernels, -1); /* no device and no architecture */
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  RT_DETAIL("-arch");
  const char *arch[] = {"-arch=sm_90"};
  o = request(kernels, 0);
  o.options = arch;
  o.option_count = 1; /* and a device: ambiguous */
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o = request(kernels, 7);
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  o = request(kernels, 0);
  o.struct_size = 16;
  RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  RT_EXPECT(T->artifact_compile(NULL, &a), T4A_EINVAL);
  /* without a device the options name the target; CUBIN needs no GPU */
  o = request(kernels, -1);
  o.options = arch;
  o.option_count = 1;
  RT_OK(T->artifact_compile(&o, &a));
  RT_OK(T->artifact_release(a));
}
END_TEST

START_TEST(ptx_on_request) {
  t4a_runtime rt = rt_create();
  t4a_compile_options o = request(kernels, 0);
  o.flags = T4A_COMPILE_PTX;
  t4a_artifact a;
  RT_OK(T->artifact_compile(&o, &a));
  t4a_artifact_kind kind;
  const void *data;
  uint64_t size;
  RT_OK(T->artifact_data(a, &kind, &data, &size));
  ck_assert_int_eq(kind, T4A_ARTIFACT_PTX);
  ck_assert_ptr_nonnull(strstr(data, ".entry t4a_axpy_f32"));
  ck_assert_uint_eq(strlen(data), size);
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_axpy_f32");
  check_axpy(rt, f, 4099, t4a_test_seed());
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

static void *slurp(const char *name, size_t *size) {
  char path[4096];
  const char *src = getenv("T4A_TEST_SRCDIR");
  snprintf(path, sizeof path, "%s/tests/data/%s", src ? src : ".", name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc((size_t)n);
  ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return p;
}

START_TEST(consumer_ptx_cubin_and_fatbin) {
  t4a_runtime rt = rt_create();
  static const struct {
    const char *file;
    t4a_artifact_kind kind;
  } inputs[] = {{"t4a_kernels.ptx", T4A_ARTIFACT_PTX},
                {"t4a_kernels.cubin", T4A_ARTIFACT_CUBIN},
                {"t4a_kernels.fatbin", T4A_ARTIFACT_FATBIN}};
  for (int i = 0; i < 3; i++) {
    size_t n;
    void *bytes = slurp(inputs[i].file, &n);
    t4a_artifact a;
    RT_OK(T->artifact_from_bytes(inputs[i].kind, bytes, n, inputs[i].file, &a));
    free(bytes); /* the artifact holds a copy */
    t4a_module m;
    t4a_function f = load(rt, a, &m, "t4a_axpy_f32");
    RT_OK(T->artifact_release(a)); /* the module stays loaded */
    check_axpy(rt, f, 10007, t4a_test_seed() + (uint64_t)i);
    RT_OK(T->module_unload(rt, m));
  }
  size_t n;
  char *cubin = slurp("t4a_kernels.cubin", &n);
  t4a_artifact a = {0};
  RT_EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_FATBIN, cubin, n, "x", &a), T4A_EINVAL);
  RT_DETAIL("0xBA55ED50");
  RT_EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_CUBIN, "not elf", 7, "x", &a), T4A_EINVAL);
  /* The driver's module load takes no length: every truncated CUBIN or
   * fatbin is refused before it could read past the copy (#19). */
  for (int i = 1; i < 3; i++) {
    size_t full;
    unsigned char *bytes = slurp(inputs[i].file, &full);
    for (size_t cut = 1; cut < full; cut++) {
      unsigned char *part = malloc(cut); /* exactly cut bytes: ASan sees any overread */
      memcpy(part, bytes, cut);
      int rc = T->artifact_from_bytes(inputs[i].kind, part, cut, "cut", &a);
      ck_assert_msg(rc == T4A_EINVAL, "%s cut to %zu of %zu bytes: %s", inputs[i].file, cut, full,
                    t4a_status_name(rc));
      free(part);
    }
    free(bytes);
  }
  RT_DETAIL("truncated");
  RT_EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_PTX, "ab\0cd", 5, "x", &a), T4A_EINVAL);
  RT_EXPECT(T->artifact_from_bytes((t4a_artifact_kind)9, cubin, n, "x", &a), T4A_EINVAL);
  RT_EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_CUBIN, NULL, 5, "x", &a), T4A_EINVAL);
  RT_EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_CUBIN, cubin, 0, "x", &a), T4A_EINVAL);
  free(cubin);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(runtimes_own_their_modules) {
  t4a_runtime a = rt_create(), b = rt_create();
  t4a_artifact art = compile(kernels);
  t4a_module ma, mb;
  t4a_function fa = load(a, art, &ma, "t4a_axpy_f32");
  t4a_function fb = load(b, art, &mb, "t4a_axpy_f32");
  RT_OK(T->artifact_release(art));
  t4a_launch_config one = geometry(1, 1, 0);
  RT_EXPECT(T->launch(b, fa, &one, NULL), T4A_EHANDLE); /* a's function through b */
  RT_DETAIL("belongs to runtime");
  RT_OK(T->module_unload(a, ma));
  t4a_function_attributes at = {.struct_size = sizeof at};
  RT_EXPECT(T->function_attributes(a, fa, &at), T4A_EHANDLE);
  RT_DETAIL("unloaded");
  RT_EXPECT(T->module_unload(a, ma), T4A_EHANDLE);
  t4a_function again;
  RT_EXPECT(T->function_get(a, ma, "t4a_axpy_f32", &again), T4A_EHANDLE);
  check_axpy(b, fb, 65537, t4a_test_seed()); /* b is untouched */
  RT_EXPECT(T->function_get(b, mb, "no_such_kernel", &again), T4A_ENOTFOUND);
  RT_DETAIL("no kernel 'no_such_kernel'");
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER)); /* with mb still loaded */
}
END_TEST

START_TEST(geometry_is_checked_before_the_driver) {
  t4a_runtime rt = rt_create();
  t4a_artifact art = compile(kernels);
  t4a_module m;
  t4a_function f = load(rt, art, &m, "t4a_empty");
  uint64_t (*calls)(const char *) = NULL;
  if (rt_on_fake()) {
    void *h = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    *(void **)&calls = dlsym(h, "fake_cuda_calls");
    dlclose(h);
  }
  uint64_t before = calls ? calls("cuLaunchKernel") : 0;
  t4a_launch_config c = geometry(0, 32, 0);
  RT_EXPECT(T->launch(rt, f, &c, NULL), T4A_EINVAL);
  RT_DETAIL("grid.x = 0");
  c = geometry(1, 2048, 0);
  RT_EXPECT(T->launch(rt, f, &c, NULL), T4A_EINVAL);
  RT_DETAIL("block.x = 2048");
  c = geometry(1, 64, 0);
  c.block[1] = 32; /* 2048 threads */
  RT_EXPECT(T->launch(rt, f, &c, NULL), T4A_EINVAL);
  RT_DETAIL("2048 threads");
  c = geometry(1, 32, 0);
  c.grid[1] = 70000;
  RT_EXPECT(T->launch(rt, f, &c, NULL), T4A_EINVAL);
  RT_DETAIL("grid.y = 70000");
  c = geometry(1, 32, 100 * 1024);
  RT_EXPECT(T->launch(rt, f, &c, NULL), T4A_EINVAL);
  c = geometry(1, 32, 0);
  c.struct_size = 8;
  RT_EXPECT(T->launch(rt, f, &c, NULL), T4A_EINVAL);
  RT_EXPECT(T->launch(rt, f, NULL, NULL), T4A_EINVAL);
  if (calls)
    ck_assert_uint_eq(calls("cuLaunchKernel"), before); /* the driver saw none of them */
  c = geometry(1, 32, 0);
  RT_OK(T->launch(rt, f, &c, NULL));
  ck_assert_uint_eq(rt_counters(rt).launches, 1);
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(ten_thousand_launches_one_event) {
  t4a_runtime rt = rt_create();
  t4a_artifact art = compile(kernels);
  t4a_module m;
  t4a_function f = load(rt, art, &m, "t4a_empty");
  rt_sync(rt);
  t4a_runtime_counters before = rt_counters(rt);
  t4a_launch_config c = geometry(1, 32, 0);
  for (int i = 0; i < 10000; i++)
    RT_OK(T->launch(rt, f, &c, NULL));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  t4a_runtime_counters after = rt_counters(rt);
  ck_assert_uint_eq(after.launches - before.launches, 10000);
  ck_assert_uint_eq(after.seal_events_recorded - before.seal_events_recorded, 1);
  ck_assert_uint_eq(after.staging_events_recorded, before.staging_events_recorded);
  RT_OK(T->witness_release(w));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- caches ------------------------------------------------------------------------- */

static char cache_dir[64];

static void use_cache_dir(void) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/t4a-cache-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cache_dir));
  strcat(cache_dir, "/c"); /* created by the plugin */
  setenv("T4A_CACHE_DIR", cache_dir, 1);
  RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
}

static t4a_compile_cache_stats cache_stats(void) {
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  RT_OK(T->compile_cache_stats(&s));
  return s;
}

/* A GPU-less compile, the same in every process. */
static int compile_sm90(void) {
  const char *arch[] = {"-arch=sm_90"};
  t4a_compile_options o = request(kernels, -1);
  o.options = arch;
  o.option_count = 1;
  t4a_artifact a;
  int rc = T->artifact_compile(&o, &a);
  if (rc == T4A_OK)
    T->artifact_release(a);
  return rc;
}

static char self_path[4096];

START_TEST(memory_and_disk_caches) {
  use_cache_dir();
  t4a_compile_cache_stats s0 = cache_stats();
  RT_OK(compile_sm90());
  t4a_compile_cache_stats s1 = cache_stats();
  ck_assert_uint_eq(s1.misses - s0.misses, 1);
  ck_assert_uint_eq(s1.disk_entries, 1);
  struct stat st;
  ck_assert_int_eq(stat(cache_dir, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  RT_OK(compile_sm90()); /* memory hit */
  t4a_compile_cache_stats s2 = cache_stats();
  ck_assert_uint_eq(s2.memory_hits - s1.memory_hits, 1);
  ck_assert_uint_eq(s2.misses, s1.misses);
  /* another process finds it on disk */
  RT_OK(T->compile_cache_clear(T4A_CACHE_DISK));
  ck_assert_uint_eq(cache_stats().disk_entries, 0);
  pid_t pid = fork();
  if (pid == 0) {
    execl(self_path, self_path, "--compile-child", (char *)NULL);
    _exit(99);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ck_assert_uint_eq(cache_stats().disk_entries, 1);
  RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
  t4a_compile_cache_stats s3 = cache_stats();
  RT_OK(compile_sm90());
  t4a_compile_cache_stats s4 = cache_stats();
  ck_assert_uint_eq(s4.disk_hits - s3.disk_hits, 1);
  ck_assert_uint_eq(s4.misses, s3.misses); /* no compile */
  RT_EXPECT(T->compile_cache_clear(0), T4A_EINVAL);
}
END_TEST

/* The one entry file in the cache directory. */
static void entry_file(char *path, size_t size) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls %s/*.t4a", cache_dir);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(fgets(path, (int)size, p));
  pclose(p);
  path[strcspn(path, "\n")] = '\0';
}

static void damage(const char *how) {
  char path[4096];
  entry_file(path, sizeof path);
  if (strcmp(how, "flip") == 0) {
    FILE *f = fopen(path, "r+b");
    fseek(f, -10, SEEK_END);
    int c = fgetc(f);
    fseek(f, -10, SEEK_END);
    fputc(c ^ 0x40, f);
    fclose(f);
  } else if (strcmp(how, "truncate") == 0) {
    ck_assert_int_eq(truncate(path, 100), 0);
  } else { /* foreign: another compile's valid entry under this key's name */
    const char *arch[] = {"-arch=sm_90"};
    t4a_compile_options o = request("extern \"C\" __global__ void other() {}\n", -1);
    o.options = arch;
    o.option_count = 1;
    t4a_artifact a;
    RT_OK(T->artifact_compile(&o, &a));
    RT_OK(T->artifact_release(a));
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "for f in %s/*.t4a; do [ \"$f\" = '%s' ] || mv \"$f\" '%s'; done",
             cache_dir, path, path);
    ck_assert_int_eq(system(cmd), 0);
  }
}

START_TEST(corrupt_entries_are_rejected_and_rewritten) {
  use_cache_dir();
  RT_OK(compile_sm90());
  static const char *const how[] = {"flip", "truncate", "foreign"};
  for (int i = 0; i < 3; i++) {
    damage(how[i]);
    RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
    t4a_compile_cache_stats before = cache_stats();
    RT_OK(compile_sm90());
    t4a_compile_cache_stats after = cache_stats();
    ck_assert_msg(after.disk_rejected - before.disk_rejected == 1, "%s not rejected", how[i]);
    ck_assert_uint_eq(after.misses - before.misses, 1); /* compiled again */
    ck_assert_uint_eq(after.disk_hits, before.disk_hits);
    /* rewritten: the next process-level miss finds it */
    RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
    RT_OK(compile_sm90());
    ck_assert_uint_eq(cache_stats().disk_hits - after.disk_hits, 1);
  }
}
END_TEST

START_TEST(disk_cache_off_and_bounded) {
  setenv("T4A_CACHE_DIR", "", 1);
  RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
  RT_OK(compile_sm90());
  ck_assert_uint_eq(cache_stats().disk_entries, 0);
  use_cache_dir();
  setenv("T4A_CACHE_MAX_BYTES", "1", 1); /* nothing fits: every entry is evicted */
  RT_OK(compile_sm90());
  t4a_compile_cache_stats s = cache_stats();
  ck_assert_uint_eq(s.disk_limit_bytes, 1);
  ck_assert_uint_eq(s.disk_entries, 0);
  unsetenv("T4A_CACHE_MAX_BYTES");
  ck_assert_uint_eq(cache_stats().disk_limit_bytes, 256 * MiB);
  /* a directory others can write is not used */
  ck_assert_int_eq(chmod(cache_dir, 0777), 0);
  RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
  RT_OK(compile_sm90());
  ck_assert_uint_eq(cache_stats().disk_entries, 0);
}
END_TEST

static int compile_child(void) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b) != T4A_OK)
    return 2;
  t = t4a_gpu_backend_table(b);
  T = t;
  int rc = compile_sm90();
  t4a_gpu_close(b);
  return rc == T4A_OK ? 0 : 3;
}

static bool nvrtc_available(char *reason, size_t n) {
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b) != T4A_OK)
    return false;
  t4a_compiler_info c = {.struct_size = sizeof c};
  t4a_gpu_backend_table(b)->compiler_info(&c);
  snprintf(reason, n, "%s", c.reason);
  if (c.status == T4A_OK) { /* the fake driver claims NVRTC's version */
    char v[16];
    snprintf(v, sizeof v, "%d", c.version_major * 1000 + c.version_minor * 10);
    setenv("FAKE_CUDA_VERSION", v, 1);
  }
  t4a_gpu_close(b);
  return c.status == T4A_OK;
}

int main(int argc, char **argv) {
  ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  self_path[n > 0 ? n : 0] = '\0';
  if (argc > 1 && strcmp(argv[1], "--compile-child") == 0)
    return compile_child();
#ifdef T4A_TEST_FAKE
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
#endif
  char reason[256] = "";
  bool nvrtc = nvrtc_available(reason, sizeof reason);
  Suite *s = suite_create(rt_on_fake() ? "code-fake" : "code-gpu");
  TCase *tc = tcase_create("code");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, compile_and_launch_axpy);
  tcase_add_test(tc, reduction_matches_the_cpu);
  tcase_add_test(tc, dynamic_shared_memory_needs_opt_in);
  tcase_add_test(tc, compile_errors_return_the_log);
  tcase_add_test(tc, compile_requests_are_checked);
  tcase_add_test(tc, ptx_on_request);
  tcase_add_test(tc, consumer_ptx_cubin_and_fatbin);
  tcase_add_test(tc, runtimes_own_their_modules);
  tcase_add_test(tc, geometry_is_checked_before_the_driver);
  tcase_add_test(tc, ten_thousand_launches_one_event);
  tcase_add_test(tc, memory_and_disk_caches);
  tcase_add_test(tc, corrupt_entries_are_rejected_and_rewritten);
  tcase_add_test(tc, disk_cache_off_and_bounded);
  suite_add_tcase(s, tc);
#ifdef T4A_TEST_FAKE
  if (!nvrtc) {
    printf("SKIP: NVRTC unavailable here (%s)\n", reason);
    srunner_free(srunner_create(s));
    return T4A_TEST_SKIP;
  }
  return t4a_test_run(s);
#else
  if (!nvrtc) {
    const char *lane = getenv("T4A_TEST_LANE");
    bool required = lane && strcmp(lane, "gpu") == 0;
    printf("%s: NVRTC unavailable here (%s)\n", required ? "FAIL" : "SKIP", reason);
    srunner_free(srunner_create(s));
    return required ? EXIT_FAILURE : T4A_TEST_SKIP;
  }
  return t4a_test_gpu_main(s, 1);
#endif
}
