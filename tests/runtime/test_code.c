/* tests/runtime/test_code.c -- code on the device: modules loaded from the
 * test kernels (3-D launches, thread limits, function attributes, the raw
 * function, unloading), compiled artifacts and their caches, consumer
 * PTX/CUBIN/fatbin, per-runtime modules, launch with geometry checks.
 *
 * One source, three lanes: against the fake driver (its "kernels" are host
 * functions with the same names), on the GPU, and on the host backend
 * (the same kernels' CUDA C compiled by the host C++ compiler; what is
 * CUDA's alone, the raw seam, PTX, CUBIN, fatbin, is left out there). The
 * "modules" test case needs no compiler on CUDA; the others need the
 * run-time compiler: without it the fake lane runs only "modules", the GPU
 * lane fails, the host lane skips. */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin-cuda/cuda_decls.h"
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

/* ---- modules from the test PTX (no compiler needed) --------------------------------- */

static t4a_artifact test_ptx(void) { return rt_test_artifact(); }

/* Launches t4a_index3d with this geometry and checks every thread's
 * indices bit-exact against the CPU, in a poisoned output. */
static void check_index3d(t4a_runtime rt, t4a_function f, const uint32_t grid[3],
                          const uint32_t block[3]) {
  uint64_t per = (uint64_t)block[0] * block[1] * block[2];
  uint64_t threads = (uint64_t)grid[0] * grid[1] * grid[2] * per, bytes = threads * 12;
  t4a_buffer out;
  RT_OK(T->buffer_alloc(rt, bytes + 64, &out));
  uint32_t *host = malloc(bytes + 64);
  memset(host, 0xee, bytes + 64);
  RT_OK(T->copy_h2d(rt, out, 0, host, bytes + 64));
  uint64_t addr;
  RT_OK(T->buffer_device_address(rt, out, &addr));
  void *args[] = {&addr};
  t4a_launch_config c = {.struct_size = sizeof c};
  memcpy(c.grid, grid, sizeof c.grid);
  memcpy(c.block, block, sizeof c.block);
  RT_OK(T->launch(rt, f, &c, args));
  RT_OK(T->copy_d2h(rt, host, out, 0, bytes + 64));
  for (uint32_t bz = 0; bz < grid[2]; bz++)
    for (uint32_t by = 0; by < grid[1]; by++)
      for (uint32_t bx = 0; bx < grid[0]; bx++)
        for (uint32_t tz = 0; tz < block[2]; tz++)
          for (uint32_t ty = 0; ty < block[1]; ty++)
            for (uint32_t tx = 0; tx < block[0]; tx++) {
              uint64_t b = ((uint64_t)bz * grid[1] + by) * grid[0] + bx;
              uint64_t t = b * per + ((uint64_t)tz * block[1] + ty) * block[0] + tx;
              uint32_t want[3] = {bx | by << 16, bz | tx << 16, ty | tz << 16};
              ck_assert_msg(memcmp(&host[3 * t], want, 12) == 0,
                            "block (%u,%u,%u) thread (%u,%u,%u): %08x %08x %08x", bx, by, bz, tx,
                            ty, tz, host[3 * t], host[3 * t + 1], host[3 * t + 2]);
            }
  for (uint64_t i = threads * 3; i < threads * 3 + 16; i++)
    ck_assert_uint_eq(host[i], 0xeeeeeeeeu); /* nothing past the grid */
  free(host);
  RT_OK(T->buffer_free(rt, out));
}

START_TEST(three_d_launches_are_bit_exact) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = test_ptx();
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_index3d");
  static const uint32_t shapes[][2][3] = {
      {{1, 1, 1}, {1, 1, 1}},   {{3, 2, 5}, {4, 3, 2}},  {{2, 7, 3}, {1, 1, 64}},
      {{1, 1, 70}, {8, 8, 2}},  {{5, 1, 1}, {32, 4, 1}}, {{1, 300, 1}, {1, 2, 1}},
      {{2, 2, 2}, {16, 16, 4}},
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    check_index3d(rt, f, shapes[i][0], shapes[i][1]);
  ck_assert_uint_eq(rt_counters(rt).launches, sizeof shapes / sizeof shapes[0]);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* The z axis has its own limits (64 threads, 65535 blocks on the devices
 * CUDA supports), and a function's own limit (.maxntid 128 for
 * t4a_bounded) is below the device's: all checked before the driver. */
START_TEST(thread_limits_per_axis_and_per_function) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = test_ptx();
  t4a_module m;
  t4a_function idx = load(rt, a, &m, "t4a_index3d"), bounded;
  RT_OK(T->function_get(rt, m, "t4a_bounded", &bounded));
  uint64_t calls = rt_fake_calls("cuLaunchKernel");
  uint64_t addr = 0;
  t4a_buffer out;
  RT_OK(T->buffer_alloc(rt, 1 << 20, &out));
  RT_OK(T->buffer_device_address(rt, out, &addr));
  void *args[] = {&addr};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  c.block[2] = (uint32_t)DEV.max_block_dim[2] + 1;
  RT_EXPECT(T->launch(rt, idx, &c, args), T4A_EINVAL);
  RT_DETAIL("block.z");
  c.block[2] = 1;
  c.grid[2] = (uint32_t)DEV.max_grid_dim[2] + 1;
  RT_EXPECT(T->launch(rt, idx, &c, args), T4A_EINVAL);
  RT_DETAIL("grid.z");
  c.grid[2] = 1;
  c.block[0] = 16; /* 16 x 8 x 16 = 2048 threads, each axis within its limit */
  c.block[1] = 8;
  c.block[2] = 16;
  RT_EXPECT(T->launch(rt, idx, &c, args), T4A_EINVAL);
  RT_DETAIL("2048 threads");
  t4a_launch_config b = {.struct_size = sizeof b, .grid = {2, 1, 1}, .block = {256, 1, 1}};
  RT_EXPECT(T->launch(rt, bounded, &b, args), T4A_EINVAL);
  RT_DETAIL("exceeds the 128 that 't4a_bounded' allows");
  b.block[0] = 64;
  b.block[1] = 4; /* 256 threads over two axes: still too many for it */
  RT_EXPECT(T->launch(rt, bounded, &b, args), T4A_EINVAL);
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel"), calls); /* the driver saw none */
  /* at its limit it runs: each block's indices reversed through shared memory */
  b.grid[0] = 37;
  b.block[0] = 128;
  b.block[1] = 1;
  uint32_t *host = malloc(37 * 128 * 4 + 64);
  memset(host, 0xee, 37 * 128 * 4 + 64);
  RT_OK(T->copy_h2d(rt, out, 0, host, 37 * 128 * 4 + 64));
  RT_OK(T->launch(rt, bounded, &b, args));
  RT_OK(T->copy_d2h(rt, host, out, 0, 37 * 128 * 4 + 64));
  for (uint32_t i = 0; i < 37 * 128; i++)
    ck_assert_uint_eq(host[i], i / 128 * 128 + 127 - i % 128);
  ck_assert_uint_eq(host[(size_t)37 * 128], 0xeeeeeeeeu);
  free(host);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* The dynamic shared-memory limit belongs to the kernel of a loaded module,
 * not to one handle of it: CUDA's cuModuleGetFunction hands out the same
 * CUfunction for a name, whose attribute every handle sees. The host backend
 * reset it for each function_get (the host's model fuzzer found it). */
START_TEST(the_shared_memory_limit_is_the_modules_kernels) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = test_ptx();
  t4a_module m, m2;
  t4a_function f1 = load(rt, a, &m, "t4a_fill_u32"), f2, f3, other;
  RT_OK(T->function_get(rt, m, "t4a_fill_u32", &f2));
  t4a_function_attributes at = {.struct_size = sizeof at};
  RT_OK(T->function_attributes(rt, f1, &at));
  int32_t initial = at.max_dynamic_shared_bytes;
  uint32_t raised = 64u << 10;
  ck_assert_int_le((int32_t)raised, DEV.max_shared_per_block_optin);
  RT_OK(T->function_set_max_dynamic_shared(rt, f1, raised));
  RT_OK(T->function_attributes(rt, f2, &at)); /* the handle got before */
  ck_assert_int_eq(at.max_dynamic_shared_bytes, (int32_t)raised);
  RT_OK(T->function_get(rt, m, "t4a_fill_u32", &f3)); /* and one got after */
  RT_OK(T->function_attributes(rt, f3, &at));
  ck_assert_int_eq(at.max_dynamic_shared_bytes, (int32_t)raised);
  /* launches through the other handles take the raised limit */
  uint64_t n = 1000;
  uint32_t v = 0x5eed1234u, got[1000];
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n * 4, &d));
  uint64_t p;
  RT_OK(T->buffer_device_address(rt, d, &p));
  void *args[] = {&p, &v, &n};
  t4a_launch_config c = geometry(4, 64, raised);
  RT_OK(T->launch(rt, f3, &c, args));
  memset(got, 0, sizeof got);
  RT_OK(T->copy_d2h(rt, got, d, 0, n * 4));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(got[i], v);
  RT_OK(T->function_set_max_dynamic_shared(rt, f2, 50000)); /* lowered through another */
  RT_OK(T->function_attributes(rt, f1, &at));
  ck_assert_int_eq(at.max_dynamic_shared_bytes, 50000);
  RT_EXPECT(T->launch(rt, f1, &c, args), T4A_EINVAL); /* the plugin's check or the driver's */
  /* another load of the code is another kernel: the default limit */
  RT_OK(T->module_load(rt, a, &m2));
  RT_OK(T->function_get(rt, m2, "t4a_fill_u32", &other));
  RT_OK(T->function_attributes(rt, other, &at));
  ck_assert_int_eq(at.max_dynamic_shared_bytes, initial);
  RT_OK(T->buffer_free(rt, d));
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* A launch's geometry is checked before the driver sees it, every time: a
 * handle's first launch (an all-zero geometry, which a fresh handle's zeroed
 * memory would match, is refused), another geometry through a handle after
 * a good launch, and the same geometry after the kernel's limit changed.
 * (A memo of the geometry a handle last passed with, skipping the checks on
 * a repeat, was tried and measured neutral on the H200; this test guards
 * any such shortcut.) */
START_TEST(a_geometry_that_passed_is_checked_again_when_the_limits_change) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = test_ptx();
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_fill_u32");
  uint64_t n = 1000;
  uint32_t v = (uint32_t)t4a_test_seed() | 1u, got[1000];
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n * 4, &d));
  uint64_t p;
  RT_OK(T->buffer_device_address(rt, d, &p));
  void *args[] = {&p, &v, &n};
  uint64_t calls = rt_fake_calls("cuLaunchKernel");
  t4a_launch_config zero = {.struct_size = sizeof zero}; /* grid, block and shared all 0 */
  RT_EXPECT(T->launch(rt, f, &zero, args), T4A_EINVAL);
  RT_DETAIL("grid.x = 0");
  uint32_t raised = 64u << 10;
  ck_assert_int_le((int32_t)raised, DEV.max_shared_per_block_optin);
  RT_OK(T->function_set_max_dynamic_shared(rt, f, raised));
  t4a_launch_config c = geometry(4, 64, raised);
  for (int i = 0; i < 2; i++) /* the second launch repeats a geometry seen */
    RT_OK(T->launch(rt, f, &c, args));
  memset(got, 0, sizeof got);
  RT_OK(T->copy_d2h(rt, got, d, 0, n * 4));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(got[i], v);
  /* another geometry through the same handle, the limits unchanged: checked
   * (one bad value at a time) */
  t4a_launch_config bad[4] = {c, c, c, c};
  bad[0].shared_bytes = raised + 4;
  bad[1].block[2] = (uint32_t)DEV.max_block_dim[2] + 1;
  bad[2].grid[1] = (uint32_t)DEV.max_grid_dim[1] + 1;
  bad[3].block[0] = (uint32_t)DEV.max_block_dim[0] + 1;
  for (int i = 0; i < 4; i++)
    RT_EXPECT(T->launch(rt, f, &bad[i], args), T4A_EINVAL);
  RT_OK(T->function_set_max_dynamic_shared(rt, f, raised - 4096)); /* lowered */
  RT_EXPECT(T->launch(rt, f, &c, args), T4A_EINVAL);
  RT_DETAIL("65536 bytes of dynamic shared memory exceed the 61440");
  RT_EXPECT(T->launch(rt, f, &zero, args), T4A_EINVAL);
  if (rt_on_fake()) /* both refusals were the plugin's: the driver saw the two good launches */
    ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel"), calls + 2);
  RT_OK(T->buffer_free(rt, d));
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(function_attributes_are_the_drivers) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = test_ptx();
  t4a_module m;
  t4a_function fill = load(rt, a, &m, "t4a_fill_u32"), bounded;
  RT_OK(T->function_get(rt, m, "t4a_bounded", &bounded));
  int32_t arch = DEV.cc_major * 10 + DEV.cc_minor;
  t4a_function_attributes at;
  memset(&at, 0x5a, sizeof at);
  at.struct_size = sizeof at;
  RT_OK(T->function_attributes(rt, bounded, &at));
  ck_assert_uint_eq(at.struct_size, sizeof at);
  ck_assert_int_eq(at.max_threads_per_block, 128); /* its .maxntid */
  if (rt_on_host()) { /* a CPU's answers: the header's function_attributes */
    ck_assert_int_eq(at.num_registers, 0);
    ck_assert_int_eq(at.static_shared_bytes, 0);
    ck_assert_int_eq(at.max_dynamic_shared_bytes, 48 << 10);
    ck_assert(at.local_bytes == 0 && at.ptx_version == 0 && at.binary_version == 0);
    RT_OK(T->function_attributes(rt, fill, &at));
    ck_assert_int_eq(at.max_threads_per_block, DEV.max_threads_per_block);
    RT_OK(T->function_set_max_dynamic_shared(rt, bounded, 4096));
    RT_OK(T->function_attributes(rt, bounded, &at));
    ck_assert_int_eq(at.max_dynamic_shared_bytes, 4096);
    RT_OK(T->artifact_release(a));
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    return;
  }
  ck_assert_int_gt(at.num_registers, 0);
  ck_assert_int_eq(at.static_shared_bytes, 512);
  ck_assert_int_gt(at.max_dynamic_shared_bytes, 0);
  ck_assert_int_le(at.max_dynamic_shared_bytes + at.static_shared_bytes,
                   DEV.max_shared_per_block_optin);
  ck_assert_int_eq(at.local_bytes, 0);
  ck_assert_int_eq(at.ptx_version, 70);      /* the PTX's .target sm_70 */
  ck_assert_int_eq(at.binary_version, arch); /* JIT-compiled for this device */
  RT_OK(T->function_attributes(rt, fill, &at));
  ck_assert_int_eq(at.max_threads_per_block, DEV.max_threads_per_block);
  ck_assert_int_eq(at.static_shared_bytes, 0);
  ck_assert_int_eq(at.ptx_version, 70);
  ck_assert_int_eq(at.binary_version, arch);
  /* the dynamic limit is the one set last */
  RT_OK(T->function_set_max_dynamic_shared(rt, bounded, 4096));
  RT_OK(T->function_attributes(rt, bounded, &at));
  ck_assert_int_eq(at.max_dynamic_shared_bytes, 4096);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* raw_function's CUfunction is the driver's: a consumer launches it
 * itself, on the raw stream, and the data is right. */
START_TEST(raw_function_launches_through_the_driver) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = test_ptx();
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_fill_u32");
  void *cufn = NULL;
  RT_OK(T->raw_function(rt, f, &cufn));
  ck_assert_ptr_nonnull(cufn);
  RT_EXPECT(T->raw_function(rt, f, NULL), T4A_EINVAL);
  uint64_t n = 100003, addr;
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n * 4, &d));
  RT_OK(T->buffer_device_address(rt, d, &addr));
  uint32_t value = 0x7e57ab1e;
  void *args[] = {&addr, &value, &n};
  t4a__CUresult (*launch)(t4a__CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, unsigned, t4a__CUstream, void **, void **);
  *(void **)&launch = rt_driver("cuLaunchKernel");
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(launch(cufn, 40, 1, 1, 256, 1, 1, 0, raw.stream, args, NULL), 0);
  RT_OK(T->raw_end(rt, &sec));
  uint32_t *host = malloc(n * 4);
  memset(host, 0, n * 4);
  RT_OK(T->copy_d2h(rt, host, d, 0, n * 4)); /* stream order: after the raw launch */
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(host[i], value);
  free(host);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* module_unload waits for nothing: a launch still queued behind a gate
 * runs correctly after it, the function is stale at once, and the driver
 * module goes once the work completed (the fake counts it; unloading it
 * under the queued launch would fault the kernel there). */
START_TEST(module_unload_is_deferred_behind_queued_kernels) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = test_ptx();
  uint64_t modules = rt_fake_live("module");
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_fill_u32");
  RT_OK(T->artifact_release(a));
  uint64_t n = 1 << 16, addr;
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n * 4, &d));
  RT_OK(T->buffer_device_address(rt, d, &addr));
  rt_gate g;
  rt_gate_close(&g, rt);
  uint32_t value = 0x600dcafe;
  void *args[] = {&addr, &value, &n};
  t4a_launch_config c = geometry(64, 256, 0);
  RT_OK(T->launch(rt, f, &c, args));
  RT_OK(T->module_unload(rt, m)); /* the launch has not run */
  t4a_function_attributes at = {.struct_size = sizeof at};
  RT_EXPECT(T->function_attributes(rt, f, &at), T4A_EHANDLE);
  RT_EXPECT(T->launch(rt, f, &c, args), T4A_EHANDLE);
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_live("module"), modules + 2); /* ours and the gate's */
  rt_gate_open(&g);
  uint32_t *host = malloc(n * 4);
  RT_OK(T->copy_d2h(rt, host, d, 0, n * 4));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(host[i], value);
  free(host);
  rt_sync(rt); /* the seal covering the launch completed: the module goes */
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_live("module"), modules + 1);
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

typedef struct launcher {
  t4a_runtime rt;
  t4a_function f;
  t4a_buffer d;
  uint64_t n;
  uint32_t value;
  int rc;
} launcher;

static void *launch_in_thread(void *arg) {
  launcher *l = arg;
  uint64_t addr;
  void *args[] = {&addr, &l->value, &l->n};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {16, 1, 1}, .block = {128, 1, 1}};
  l->rc = T->buffer_device_address(l->rt, l->d, &addr);
  if (!l->rc)
    l->rc = T->launch(l->rt, l->f, &c, args);
  return NULL;
}

/* Launches work whatever context the calling thread has current: none (a
 * fresh thread) or another device's; the runtime makes its own current for
 * the driver call (the fake, like CUDA, refuses a launch in another
 * context). */
START_TEST(launch_works_from_any_context) {
  int32_t count = 0;
  RT_OK(T->device_count(&count));
  t4a_runtime rt = rt_create(), other = {0};
  if (count >= 2)
    RT_OK(T->runtime_create(1, NULL, &other));
  t4a_artifact a = test_ptx();
  t4a_module m;
  launcher l = {rt, load(rt, a, &m, "t4a_fill_u32"), {0}, 50000, 0x0c0ffee0, -1};
  RT_OK(T->artifact_release(a));
  RT_OK(T->buffer_alloc(rt, l.n * 4, &l.d));
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, launch_in_thread, &l), 0);
  pthread_join(th, NULL);
  RT_EXPECT(l.rc, T4A_OK);
  uint32_t *host = malloc(l.n * 4);
  RT_OK(T->copy_d2h(rt, host, l.d, 0, l.n * 4));
  for (uint64_t i = 0; i < l.n; i++)
    ck_assert_uint_eq(host[i], l.value);
  if (other.bits) { /* device 1's context current on this thread */
    t4a_buffer x;
    RT_OK(T->buffer_alloc(other, 16, &x));
    l.value = 0x5ca1ab1e;
    launch_in_thread(&l);
    RT_EXPECT(l.rc, T4A_OK);
    RT_OK(T->copy_d2h(rt, host, l.d, 0, l.n * 4));
    for (uint64_t i = 0; i < l.n; i++)
      ck_assert_uint_eq(host[i], l.value);
    RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  }
  free(host);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

typedef struct unloader {
  t4a_runtime rt;
  t4a_module m;
  int rc;
} unloader;

static void *unload_in_thread(void *arg) {
  unloader *u = arg;
  u->rc = T->module_unload(u->rt, u->m);
  return NULL;
}

/* module_unload works from any thread, whatever context is current there
 * (none, or another device's): the driver unloads from the module's own
 * context. Regression: the idle path called cuModuleUnload without making
 * the runtime's context current (the fake, like CUDA, refuses that). */
START_TEST(module_unload_works_from_any_context) {
  int32_t count = 0;
  RT_OK(T->device_count(&count));
  t4a_runtime rt = rt_create(), other = {0};
  if (count >= 2)
    RT_OK(T->runtime_create(1, NULL, &other));
  t4a_artifact a = test_ptx();
  uint64_t modules = rt_fake_live("module");
  t4a_module m1, m2;
  RT_OK(T->module_load(rt, a, &m1));
  RT_OK(T->module_load(rt, a, &m2));
  RT_OK(T->artifact_release(a));
  rt_sync(rt); /* nothing pending: unload is immediate */
  unloader u = {rt, m1, -1};
  pthread_t th; /* a fresh thread: no current context */
  ck_assert_int_eq(pthread_create(&th, NULL, unload_in_thread, &u), 0);
  pthread_join(th, NULL);
  ck_assert_msg(u.rc == T4A_OK, "module_unload from a thread without a context: %s",
                t4a_status_name(u.rc));
  if (other.bits) { /* another device's context current on this thread */
    t4a_buffer x;
    RT_OK(T->buffer_alloc(other, 16, &x));
  }
  RT_OK(T->module_unload(rt, m2));
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_live("module"), modules);
  if (other.bits)
    RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- NVRTC artifacts -------------------------------------------------------------- */

START_TEST(compile_and_launch_axpy) {
  t4a_runtime rt = rt_create();
  t4a_artifact a = compile(kernels);
  t4a_artifact_kind kind = 0;
  const void *data;
  uint64_t size;
  RT_OK(T->artifact_data(a, &kind, &data, &size));
  /* CUBIN for the device by default; the host's shared object on host */
  ck_assert_int_eq(kind, rt_on_host() ? T4A_ARTIFACT_HOST : T4A_ARTIFACT_CUBIN);
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
  if (rt_on_host()) {
    ck_assert_int_eq(at.num_registers, 0); /* a CPU counts none */
    RT_OK(T->artifact_release(a));
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    RT_REST_IS_CUDA_ONLY("raw_function (the raw seam's slots are NULL on host)");
  }
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
  const char *arch[] = {"-arch=sm_90"};
  if (!rt_on_host()) {        /* the host has one architecture: it ignores any it is told */
    o = request(kernels, -1); /* no device and no architecture */
    RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
    RT_DETAIL("-arch");
    o = request(kernels, 0);
    o.options = arch;
    o.option_count = 1; /* and a device: ambiguous */
    RT_EXPECT(T->artifact_compile(&o, &a), T4A_EINVAL);
  }
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
  uint64_t records = rt_fake_calls("cuEventRecord"), launches = rt_fake_calls("cuLaunchKernel");
  t4a_launch_config c = geometry(1, 32, 0);
  const uint64_t count = rt_scaled(10000);
  for (uint64_t i = 0; i < count; i++)
    RT_OK(T->launch(rt, f, &c, NULL));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  t4a_runtime_counters after = rt_counters(rt);
  ck_assert_uint_eq(after.launches - before.launches, count);
  ck_assert_uint_eq(after.seal_events_recorded - before.seal_events_recorded, 1);
  if (rt_on_fake()) { /* the counters' claims, against the driver's own counts */
    ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel") - launches, count);
    ck_assert_uint_eq(rt_fake_calls("cuEventRecord") - records, 1);
  }
  ck_assert_uint_eq(after.staging_events_recorded, before.staging_events_recorded);
  RT_OK(T->witness_release(w));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* The architecture a CUBIN was built for: ELF e_flags bits 8..15 from ELF
 * ABI version 8 (CUDA 13), bits 0..7 before. */
static int cubin_arch(const unsigned char *elf, uint64_t size) {
  ck_assert_uint_ge(size, 64);
  ck_assert(memcmp(elf,
                   "\x7f"
                   "ELF",
                   4) == 0);
  uint16_t machine;
  uint32_t flags;
  memcpy(&machine, elf + 18, 2);
  memcpy(&flags, elf + 48, 4);
  ck_assert_uint_eq(machine, 190); /* EM_CUDA */
  return (int)(elf[8] >= 8 ? flags >> 8 & 0xff : flags & 0xff);
}

START_TEST(cubin_is_built_for_the_devices_architecture) {
  t4a_artifact a = compile(kernels);
  t4a_artifact_kind kind;
  const void *data;
  uint64_t size;
  RT_OK(T->artifact_data(a, &kind, &data, &size));
  ck_assert_int_eq(kind, T4A_ARTIFACT_CUBIN);
  ck_assert_int_eq(cubin_arch(data, size), DEV.cc_major * 10 + DEV.cc_minor);
  RT_OK(T->artifact_release(a));
  /* and for the one the options name, without a device */
  const char *arch[] = {"-arch=sm_80"};
  t4a_compile_options o = request(kernels, -1);
  o.options = arch;
  o.option_count = 1;
  RT_OK(T->artifact_compile(&o, &a));
  RT_OK(T->artifact_data(a, &kind, &data, &size));
  ck_assert_int_eq(cubin_arch(data, size), 80);
  RT_OK(T->artifact_release(a));
}
END_TEST

static char cache_dir[64];
static t4a_compile_cache_stats cache_stats(void);
static void use_cache_dir(void);

/* T4A_COMPILE_NO_CACHE compiles every time and leaves both caches alone. */
START_TEST(no_cache_compiles_every_time) {
  use_cache_dir();
  t4a_compile_options o = request(kernels, 0);
  t4a_artifact a;
  RT_OK(T->artifact_compile(&o, &a)); /* cached: memory and disk */
  RT_OK(T->artifact_release(a));
  t4a_compile_cache_stats s0 = cache_stats();
  ck_assert_uint_eq(s0.disk_entries, 1);
  o.flags = T4A_COMPILE_NO_CACHE;
  for (int i = 0; i < 2; i++) {
    RT_OK(T->artifact_compile(&o, &a));
    RT_OK(T->artifact_release(a));
  }
  t4a_compile_cache_stats s1 = cache_stats();
  ck_assert_uint_eq(s1.misses - s0.misses, 2);
  ck_assert_uint_eq(s1.memory_hits, s0.memory_hits);
  ck_assert_uint_eq(s1.disk_hits, s0.disk_hits);
  ck_assert_uint_eq(s1.memory_entries, s0.memory_entries);
  ck_assert_uint_eq(s1.disk_entries, s0.disk_entries);
  o.flags = 0; /* the cached entry is still there */
  RT_OK(T->artifact_compile(&o, &a));
  RT_OK(T->artifact_release(a));
  ck_assert_uint_eq(cache_stats().memory_hits - s1.memory_hits, 1);
}
END_TEST

/* compile_cache_clear empties the caches, never an artifact already
 * returned, and refuses bits it does not know. */
START_TEST(cache_clear_keeps_returned_artifacts) {
  use_cache_dir();
  t4a_runtime rt = rt_create();
  t4a_artifact a = compile(kernels);
  t4a_artifact_kind kind;
  const void *data;
  uint64_t size;
  RT_OK(T->artifact_data(a, &kind, &data, &size));
  unsigned char *copy = malloc(size);
  memcpy(copy, data, size);
  RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY | T4A_CACHE_DISK));
  t4a_compile_cache_stats s = cache_stats();
  ck_assert_uint_eq(s.memory_entries, 0);
  ck_assert_uint_eq(s.disk_entries, 0);
  const void *after;
  uint64_t size_after;
  RT_OK(T->artifact_data(a, &kind, &after, &size_after));
  ck_assert_uint_eq(size_after, size);
  ck_assert(memcmp(after, copy, size) == 0);
  t4a_module m;
  t4a_function f = load(rt, a, &m, "t4a_axpy_f32"); /* still loads and runs */
  check_axpy(rt, f, 4097, t4a_test_seed());
  for (uint32_t bit = 4; bit; bit <<= 1) {
    RT_EXPECT(T->compile_cache_clear(bit), T4A_EINVAL);
    RT_EXPECT(T->compile_cache_clear(bit | T4A_CACHE_MEMORY), T4A_EINVAL);
  }
  RT_EXPECT(T->compile_cache_clear(0), T4A_EINVAL);
  free(copy);
  RT_OK(T->artifact_release(a));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- caches ------------------------------------------------------------------------- */

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

/* Where the backend's entries lie: the cache directory (CUDA), its "host"
 * subdirectory (the host backend's own cache). */
static const char *entries_dir(void) {
  static char dir[80];
  snprintf(dir, sizeof dir, "%s%s", cache_dir, rt_on_host() ? "/host" : "");
  return dir;
}

/* The one entry file in the cache directory. */
static void entry_file(char *path, size_t size) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls %s/*.t4a", entries_dir());
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
             entries_dir(), path, path);
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
  if (t4a_gpu_open_path(rt_plugin_path(), &b) != T4A_OK)
    return 2;
  t = t4a_gpu_backend_table(b);
  T = t;
  int rc = compile_sm90();
  t4a_gpu_close(b);
  return rc == T4A_OK ? 0 : 3;
}

static bool nvrtc_available(char *reason, size_t n) {
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(rt_plugin_path(), &b) != T4A_OK)
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
#ifdef T4A_TEST_FAKE /* before the probe below, which sets the fake's version */
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
#endif
  char reason[256] = "";
  bool nvrtc = nvrtc_available(reason, sizeof reason);
  Suite *s = rt_suite("code");
  TCase *tc = rt_tcase(s, "modules", 120);
  tcase_add_test(tc, three_d_launches_are_bit_exact);
  tcase_add_test(tc, thread_limits_per_axis_and_per_function);
  tcase_add_test(tc, function_attributes_are_the_drivers);
  tcase_add_test(tc, the_shared_memory_limit_is_the_modules_kernels);
  tcase_add_test(tc, a_geometry_that_passed_is_checked_again_when_the_limits_change);
  RT_CUDA_ONLY(tc, raw_function_launches_through_the_driver, "the raw seam (NULL slots on host)");
  tcase_add_test(tc, module_unload_is_deferred_behind_queued_kernels);
  tcase_add_test(tc, module_unload_works_from_any_context);
  tcase_add_test(tc, launch_works_from_any_context);
  RT_CUDA_ONLY(tc, consumer_ptx_cubin_and_fatbin, "PTX, CUBIN and fatbin are GPU code");
#ifdef T4A_TEST_HOST
  if (!nvrtc) { /* the host lane needs the host C++ compiler */
    printf("SKIP: no host C++ compiler here (%s)\n", reason);
    srunner_free(srunner_create(s));
    return T4A_TEST_SKIP;
  }
#elif !defined(T4A_TEST_FAKE)
  if (!nvrtc) { /* the GPU lane needs the compiler */
    const char *lane = getenv("T4A_TEST_LANE");
    bool required = lane && strcmp(lane, "gpu") == 0;
    printf("%s: NVRTC unavailable here (%s)\n", required ? "FAIL" : "SKIP", reason);
    srunner_free(srunner_create(s));
    return required ? EXIT_FAILURE : T4A_TEST_SKIP;
  }
#endif
  if (nvrtc) {
    tc = rt_tcase(s, "nvrtc", 300);
    tcase_add_test(tc, compile_and_launch_axpy);
    tcase_add_test(tc, reduction_matches_the_cpu);
    tcase_add_test(tc, dynamic_shared_memory_needs_opt_in);
    tcase_add_test(tc, compile_errors_return_the_log);
    tcase_add_test(tc, compile_requests_are_checked);
    RT_CUDA_ONLY(tc, ptx_on_request, "PTX is GPU code");
    RT_CUDA_ONLY(tc, cubin_is_built_for_the_devices_architecture, "CUBIN is GPU code");
    tc = rt_tcase(s, "launches", 300);
    tcase_add_test(tc, runtimes_own_their_modules);
    tcase_add_test(tc, geometry_is_checked_before_the_driver);
    tcase_add_test(tc, ten_thousand_launches_one_event);
    tc = rt_tcase(s, "caches", 120);
    tcase_add_test(tc, memory_and_disk_caches);
    tcase_add_test(tc, corrupt_entries_are_rejected_and_rewritten);
    tcase_add_test(tc, disk_cache_off_and_bounded);
    tcase_add_test(tc, no_cache_compiles_every_time);
    tcase_add_test(tc, cache_clear_keeps_returned_artifacts);
  } else {
    printf("NVRTC unavailable here (%s): only the \"modules\" test case runs\n", reason);
  }
  return rt_run(s, 1);
}
