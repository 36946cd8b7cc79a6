/* tests/cpu/test_host_launch.c -- the host backend's kernel plumbing with
 * hand-written kernel modules (no translator, no prelude): C++ fixtures
 * that define the module symbol of plugin-host/kernel_abi.h themselves,
 * compiled once by this program with the host C++ compiler and handed in
 * through artifact_from_bytes(T4A_ARTIFACT_HOST). What the plugin promises
 * around a kernel: module loading (the module ABI check, a missing symbol,
 * bytes that are no shared object), function lookup, attributes and
 * occupancy, launch geometry, parameters copied at the call, the order of
 * launches among copies, the grid spread over the pool, dynamic shared
 * memory, graph capture and replay with graph_set_kernel_args, deferred
 * unloading, and a fault contained (the device faulted and sticky, the
 * sibling told, destroy completing, the process alive). Kernels from CUDA
 * C are test_host_compile's and the shared suites' host lane. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin-host/kernel_abi.h"
#include "plugin-host/test_gate.h"
#include "tests/cpu/host_fixture.h"

/* The fixture: kernels written directly against kernel_abi.h.
 *   axpy(n, a, x, y)   y[i] = a * x[i] + y[i] (one element per thread)
 *   count(out)         out[linear block] += 1, atomically, once per thread
 *   probe(out)         block 0 thread 0: out = {dynamic_shared, shared_bytes,
 *                      shared % 256, shared != NULL, the shared memory
 *                      writable}
 *   trap(n)            block 2 faults (a trap at thread 5) when n == 777
 *   bounded()          __launch_bounds__(128): max_threads 128 */
static const char fixture_src[] =
    "#include \"kernel_abi.h\"\n"
    "#include <string.h>\n"
    "typedef t4a_hk_launch L; typedef t4a_hk_worker W; typedef t4a_hk_fault F;\n"
    "static int axpy(const L *l, uint64_t first, uint64_t count, const W *, F *) {\n"
    "  uint64_t n = *(uint64_t *)l->args[0]; float a = *(float *)l->args[1];\n"
    "  const float *x = *(const float **)l->args[2]; float *y = *(float **)l->args[3];\n"
    "  uint64_t per = (uint64_t)l->block.x * l->block.y * l->block.z;\n"
    "  for (uint64_t b = first; b < first + count; b++)\n"
    "    for (uint64_t t = 0; t < per; t++) {\n"
    "      uint64_t i = b * per + t;\n"
    "      if (i < n) y[i] = a * x[i] + y[i];\n"
    "    }\n"
    "  return 0;\n"
    "}\n"
    "static int count(const L *l, uint64_t first, uint64_t count, const W *, F *) {\n"
    "  uint32_t *out = *(uint32_t **)l->args[0];\n"
    "  uint64_t per = (uint64_t)l->block.x * l->block.y * l->block.z;\n"
    "  for (uint64_t b = first; b < first + count; b++)\n"
    "    for (uint64_t t = 0; t < per; t++) __atomic_add_fetch(&out[b], 1u, __ATOMIC_RELAXED);\n"
    "  return 0;\n"
    "}\n"
    "static int probe(const L *l, uint64_t first, uint64_t, const W *w, F *) {\n"
    "  uint64_t *out = *(uint64_t **)l->args[0];\n"
    "  if (first != 0) return 0;\n"
    "  out[0] = l->dynamic_shared; out[1] = w->shared_bytes;\n"
    "  out[2] = (uint64_t)(uintptr_t)w->shared % 256; out[3] = w->shared != nullptr;\n"
    "  if (w->shared && l->dynamic_shared) { memset(w->shared, 0x5a, l->dynamic_shared);\n"
    "    out[4] = ((unsigned char *)w->shared)[l->dynamic_shared - 1] == 0x5a; }\n"
    "  return 0;\n"
    "}\n"
    "static int trap(const L *l, uint64_t first, uint64_t count, const W *, F *f) {\n"
    "  uint64_t n = *(uint64_t *)l->args[0];\n"
    "  for (uint64_t b = first; b < first + count; b++) {\n"
    "    if (__atomic_load_n(l->stop, __ATOMIC_RELAXED)) return 0;\n"
    "    if (n == 777 && b == 2) {\n"
    "      f->kind = T4A_HK_FAULT_TRAP; f->block = {2, 0, 0}; f->thread = {5, 0, 0};\n"
    "      strcpy(f->message, \"__trap() at fixture.cu:42\"); return 1;\n"
    "    }\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "static int bounded(const L *, uint64_t, uint64_t, const W *, F *) { return 0; }\n"
    "static const uint32_t s_axpy[] = {8, 4, 8, 8}, a_axpy[] = {8, 4, 8, 8};\n"
    "static const uint32_t s_ptr[] = {8}, a_ptr[] = {8};\n"
    "static const t4a_hk_kernel kernels[] = {\n"
    "  {\"axpy\", 4, s_axpy, a_axpy, 0, 1024, axpy}, {\"count\", 1, s_ptr, a_ptr, 0, 1024, "
    "count},\n"
    "  {\"probe\", 1, s_ptr, a_ptr, 0, 1024, probe}, {\"trap\", 1, s_ptr, a_ptr, 0, 1024, trap},\n"
    "  {\"bounded\", 0, nullptr, nullptr, 0, 128, bounded}};\n"
    "#ifdef OTHER_ABI\n"
    "#define FIXTURE_ABI (T4A_HK_ABI_VERSION + 1)\n"
    "#else\n"
    "#define FIXTURE_ABI T4A_HK_ABI_VERSION\n"
    "#endif\n"
    "#ifndef NO_SYMBOL\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) const t4a_hk_module t4a_hk_module_v1 =\n"
    "  {FIXTURE_ABI, 5, kernels, \"t4a-host-prelude test fixture\", nullptr};\n"
    "#endif\n";

typedef struct blob {
  char *data;
  uint64_t size;
} blob;
static blob good, other_abi, no_symbol;
static char fixtures_dir[64];

/* Outside any test (the fixtures are built in main): a plain exit. */
static void need(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "test_host_launch: %s\n", what);
    exit(99);
  }
}

static blob read_blob(const char *path) {
  blob b = {0};
  FILE *f = fopen(path, "rb");
  need(f != NULL, path);
  fseek(f, 0, SEEK_END);
  b.size = (uint64_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  b.data = malloc(b.size);
  need(b.data && fread(b.data, 1, b.size, f) == b.size, "reading a fixture");
  fclose(f);
  return b;
}

/* Builds the fixture's three variants once, in the parent (the tests run
 * in forked children and share them). */
static void build_fixtures(const char *cxx) {
  snprintf(fixtures_dir, sizeof fixtures_dir, "/tmp/t4a-hl-XXXXXX");
  need(mkdtemp(fixtures_dir) != NULL, "mkdtemp");
  char src[128], cmd[1024];
  snprintf(src, sizeof src, "%s/fixture.cc", fixtures_dir);
  FILE *f = fopen(src, "w");
  need(f && fputs(fixture_src, f) >= 0 && fclose(f) == 0, "writing the fixture");
  static const char *const variants[][2] = {
      {"good", ""}, {"abi2", "-DOTHER_ABI"}, {"nosym", "-DNO_SYMBOL"}};
  for (size_t i = 0; i < 3; i++) {
    snprintf(cmd, sizeof cmd,
             "'%s' -std=c++17 -O1 -fPIC -shared -fvisibility=hidden -I'%s/plugin-host' %s -o "
             "'%s/%s.so' '%s'",
             cxx, T4A_TEST_TOP_SRCDIR, variants[i][1], fixtures_dir, variants[i][0], src);
    if (system(cmd) != 0) {
      fprintf(stderr, "building the fixture failed: %s\n", cmd);
      exit(99);
    }
  }
  char path[128];
  snprintf(path, sizeof path, "%s/good.so", fixtures_dir);
  good = read_blob(path);
  snprintf(path, sizeof path, "%s/abi2.so", fixtures_dir);
  other_abi = read_blob(path);
  snprintf(path, sizeof path, "%s/nosym.so", fixtures_dir);
  no_symbol = read_blob(path);
}

static t4a_runtime make_rt(void) {
  t4a_runtime rt;
  OK(T->runtime_create(0, NULL, &rt));
  return rt;
}

static void sync_rt(t4a_runtime rt) {
  t4a_witness w;
  OK(T->seal(rt, &w));
  OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  OK(T->witness_release(w));
}

static t4a_artifact artifact(blob b) {
  t4a_artifact a = {0};
  OK(T->artifact_from_bytes(T4A_ARTIFACT_HOST, b.data, b.size, "fixture.so", &a));
  return a;
}

static t4a_function lookup(t4a_runtime rt, t4a_module *m, const char *name) {
  t4a_artifact a = artifact(good);
  OK(T->module_load(rt, a, m));
  OK(T->artifact_release(a)); /* the module stays loaded */
  t4a_function f;
  OK(T->function_get(rt, *m, name, &f));
  return f;
}

static t4a_launch_config geometry(uint32_t grid, uint32_t block, uint32_t shared) {
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {grid, 1, 1}, .block = {block, 1, 1}};
  c.shared_bytes = shared;
  return c;
}

static uint64_t address(t4a_runtime rt, t4a_buffer b) {
  uint64_t a;
  OK(T->buffer_device_address(rt, b, &a));
  return a;
}

/* A gate on rt's queue (plugin-host/test_gate.h): work enqueued behind it
 * waits until *word is set. */
static t4a_host_buffer gate_close(t4a_runtime rt, uint32_t *word) {
  t4a_host_buffer hb;
  *word = 0;
  OK(T->host_register(rt, word, 64, T4A__HOST_REGISTER_TEST_GATE, &hb));
  return hb;
}

static void random_floats(float *v, uint64_t n, uint64_t seed) {
  uint32_t *bits = malloc(n * 4);
  t4a_test_fill_random(bits, n * 4, seed);
  for (uint64_t i = 0; i < n; i++)
    v[i] = (float)(bits[i] >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  free(bits);
}

/* ---- modules ------------------------------------------------------------------------- */

START_TEST(module_abi_and_bytes_are_checked_at_load) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_artifact a = artifact(other_abi);
  EXPECT(T->module_load(rt, a, &m), T4A_EABI);
  char want[64];
  snprintf(want, sizeof want, "module ABI %u ", T4A_HK_ABI_VERSION + 1);
  DETAIL(want);
  snprintf(want, sizeof want, "loads module ABI %u;", T4A_HK_ABI_VERSION);
  DETAIL(want);
  ck_assert_uint_eq(m.bits, 0);
  OK(T->artifact_release(a));
  a = artifact(no_symbol);
  EXPECT(T->module_load(rt, a, &m), T4A_EINVAL);
  DETAIL("not a t4a kernel module (no symbol t4a_hk_module_v1)");
  OK(T->artifact_release(a));
  static const char junk[] = "#!/bin/sh\necho not a shared object\n";
  a.bits = 0;
  OK(T->artifact_from_bytes(T4A_ARTIFACT_HOST, junk, sizeof junk, "junk", &a));
  EXPECT(T->module_load(rt, a, &m), T4A_EINVAL);
  DETAIL("does not start with an ELF header");
  OK(T->artifact_release(a));
  /* GPU code is refused where it is handed in */
  EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_PTX, junk, sizeof junk, "p", &a), T4A_EUNSUPPORTED);
  DETAIL("NVIDIA GPU code");
  EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_CUBIN, junk, sizeof junk, "c", &a), T4A_EUNSUPPORTED);
  EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_FATBIN, junk, sizeof junk, "f", &a), T4A_EUNSUPPORTED);
  EXPECT(T->artifact_from_bytes((t4a_artifact_kind)99, junk, sizeof junk, "x", &a), T4A_EINVAL);
  /* the good one loads, and its bytes come back as they went in */
  a = artifact(good);
  t4a_artifact_kind kind = 0;
  const void *data;
  uint64_t size;
  OK(T->artifact_data(a, &kind, &data, &size));
  ck_assert_int_eq(kind, T4A_ARTIFACT_HOST);
  ck_assert(size == good.size && memcmp(data, good.data, size) == 0);
  OK(T->module_load(rt, a, &m));
  t4a_module m2; /* a second, independent load of the same artifact */
  OK(T->module_load(rt, a, &m2));
  ck_assert(m.bits != m2.bits);
  OK(T->module_unload(rt, m));
  EXPECT(T->module_unload(rt, m), T4A_EHANDLE);
  t4a_function f;
  OK(T->function_get(rt, m2, "axpy", &f));
  OK(T->module_unload(rt, m2));
  OK(T->artifact_release(a));
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(the_cuda_backend_refuses_host_code) {
  const t4a_gpu_backend_v1 *cu;
  t4a_gpu_backend *cb = t4a_test_open_cuda(&cu); /* artifact_from_bytes needs no driver */
  t4a_artifact a = {0};
  int rc = cu->artifact_from_bytes(T4A_ARTIFACT_HOST, good.data, good.size, "fixture.so", &a);
  ck_assert_msg(rc == T4A_EUNSUPPORTED, "cuda: %s", t4a_status_name(rc));
  ck_assert(strstr(t4a_test_backend_error(cu), "a GPU cannot run"));
  ck_assert_uint_eq(a.bits, 0);
  t4a_gpu_close(cb);
}
END_TEST

START_TEST(functions_attributes_and_occupancy) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "axpy"), bounded;
  EXPECT(T->function_get(rt, m, "no_such_kernel", &bounded), T4A_ENOTFOUND);
  DETAIL("no kernel 'no_such_kernel' in module 'fixture.so'");
  OK(T->function_get(rt, m, "bounded", &bounded));
  t4a_function_attributes at = {.struct_size = sizeof at};
  OK(T->function_attributes(rt, bounded, &at));
  ck_assert_int_eq(at.max_threads_per_block, 128);
  ck_assert_int_eq(at.max_dynamic_shared_bytes, 48 << 10);
  ck_assert_int_eq(at.num_registers, 0);
  OK(T->function_set_max_dynamic_shared(rt, f, 100 << 10));
  OK(T->function_attributes(rt, f, &at));
  ck_assert_int_eq(at.max_threads_per_block, 1024);
  ck_assert_int_eq(at.max_dynamic_shared_bytes, 100 << 10);
  EXPECT(T->function_set_max_dynamic_shared(rt, f, (227 << 10) + 1), T4A_EINVAL);
  uint32_t n = 99, grid = 0;
  OK(T->occupancy_max_active_blocks(rt, f, 256, 0, &n));
  ck_assert_uint_eq(n, 1); /* a CPU runs one block at a time */
  EXPECT(T->occupancy_max_active_blocks(rt, bounded, 129, 0, &n), T4A_EINVAL);
  EXPECT(T->occupancy_max_active_blocks(rt, bounded, 64, 49 << 10, &n), T4A_EINVAL);
  OK(T->occupancy_suggest_block_size(rt, bounded, 0, 0, &n, &grid));
  ck_assert_uint_eq(n, 128);
  t4a_device_info d = {.struct_size = sizeof d};
  OK(T->device_info(0, &d));
  ck_assert_uint_eq(grid, (uint32_t)d.multiprocessors);
  ck_assert_int_eq(d.warp_size, 32);
  OK(T->occupancy_suggest_block_size(rt, f, 0, 64, &n, &grid));
  ck_assert_uint_eq(n, 64);
  t4a_launch_ex_config cx = {.struct_size = sizeof cx, .grid = {2, 1, 1}, .block = {32, 1, 1}};
  cx.cluster[0] = cx.cluster[1] = cx.cluster[2] = 1;
  EXPECT(T->occupancy_max_active_clusters(rt, f, &cx, &n), T4A_EUNSUPPORTED);
  OK(T->module_unload(rt, m));
  EXPECT(T->function_attributes(rt, f, &at), T4A_EHANDLE); /* stale with its module */
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- launches ------------------------------------------------------------------------ */

START_TEST(geometry_is_checked_before_anything_is_queued) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "axpy"), bounded;
  OK(T->function_get(rt, m, "bounded", &bounded));
  uint64_t n = 0, p = 0;
  float a = 1;
  void *args[] = {&n, &a, &p, &p};
  t4a_launch_config c = geometry(0, 32, 0);
  EXPECT(T->launch(rt, f, &c, args), T4A_EINVAL);
  DETAIL("grid.x = 0 is outside 1..2147483647");
  c = geometry(1, 32, 0);
  c.block[2] = 65;
  EXPECT(T->launch(rt, f, &c, args), T4A_EINVAL);
  DETAIL("block.z = 65 is outside 1..64");
  c = geometry(1, 1, 0);
  c.grid[1] = 65536;
  EXPECT(T->launch(rt, f, &c, args), T4A_EINVAL);
  c = geometry(1, 129, 0);
  EXPECT(T->launch(rt, bounded, &c, NULL), T4A_EINVAL);
  DETAIL("exceeds the 128 that 'bounded' allows");
  c = geometry(1, 32, (48 << 10) + 1);
  EXPECT(T->launch(rt, f, &c, args), T4A_EINVAL);
  DETAIL("function_set_max_dynamic_shared");
  c = geometry(1, 32, 0);
  EXPECT(T->launch(rt, f, &c, NULL), T4A_EINVAL); /* it takes 4 parameters */
  void *holes[] = {&n, NULL, &p, &p};
  EXPECT(T->launch(rt, f, &c, holes), T4A_EINVAL);
  DETAIL("args[1]");
  /* launch_ex: what the host has not */
  t4a_launch_ex_config x = {.struct_size = sizeof x, .grid = {1, 1, 1}, .block = {32, 1, 1}};
  x.flags = T4A_LAUNCH_COOPERATIVE;
  EXPECT(T->launch_ex(rt, f, &x, args), T4A_EUNSUPPORTED);
  x.flags = T4A_LAUNCH_PRIORITY;
  x.priority = -1; /* the one priority is 0 */
  EXPECT(T->launch_ex(rt, f, &x, args), T4A_ERANGE);
  x.priority = 0;
  x.flags = T4A_LAUNCH_CLUSTER_NON_PORTABLE;
  EXPECT(T->launch_ex(rt, f, &x, args), T4A_EINVAL);
  x.flags = 0x100;
  EXPECT(T->launch_ex(rt, f, &x, args), T4A_EINVAL);
  x.flags = 0;
  x.cluster[0] = x.cluster[1] = x.cluster[2] = 1;
  EXPECT(T->launch_ex(rt, f, &x, args), T4A_EUNSUPPORTED);
  x.cluster[0] = x.cluster[1] = x.cluster[2] = 0;
  x.block[0] = 2000;
  EXPECT(T->launch_ex(rt, f, &x, args), T4A_EINVAL);
  t4a_runtime_counters k = {.struct_size = sizeof k};
  OK(T->runtime_counters(rt, &k));
  ck_assert_uint_eq(k.launches, 0); /* nothing was queued */
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* Launches axpy over n floats on rt (through launch_ex when `ex`) and
 * checks y against the CPU, with the arguments overwritten right after the
 * call: the launch ran with the values of the call. */
static void axpy_checked(t4a_runtime rt, t4a_function f, uint64_t n, uint32_t block, bool ex,
                         uint64_t seed) {
  float *x = malloc(n * 4), *y = malloc(n * 4), *out = malloc(n * 4);
  random_floats(x, n, seed);
  random_floats(y, n, seed + 1);
  t4a_buffer dx, dy;
  OK(T->buffer_alloc(rt, n * 4, &dx));
  OK(T->buffer_alloc(rt, n * 4, &dy));
  OK(T->copy_h2d(rt, dx, 0, x, n * 4));
  OK(T->copy_h2d(rt, dy, 0, y, n * 4));
  uint64_t px = address(rt, dx), py = address(rt, dy), count = n;
  float a = 1.75f;
  void *args[] = {&count, &a, &px, &py};
  uint32_t grid = (uint32_t)((n + block - 1) / block);
  uint32_t *word = aligned_alloc(64, 64); /* the launch waits until the arguments changed */
  t4a_host_buffer gate = gate_close(rt, word);
  if (ex) {
    t4a_launch_ex_config c = {
        .struct_size = sizeof c, .grid = {grid, 1, 1}, .block = {block, 1, 1}};
    OK(T->launch_ex(rt, f, &c, args));
  } else {
    t4a_launch_config c = geometry(grid, block, 0);
    OK(T->launch(rt, f, &c, args));
  }
  a = -100.0f; /* copied at the call: none of these reach the kernel */
  count = 1;
  px = py = 0;
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  memset(out, 0xff, n * 4);
  OK(T->copy_d2h(rt, out, dy, 0, n * 4));
  for (uint64_t i = 0; i < n; i++) {
    float want = 1.75f * x[i] + y[i];
    ck_assert_msg(out[i] == want, "y[%llu] = %a, want %a", (unsigned long long)i, (double)out[i],
                  (double)want);
  }
  OK(T->buffer_free(rt, dx));
  OK(T->buffer_free(rt, dy));
  OK(T->host_unregister(rt, gate));
  sync_rt(rt);
  free(word);
  free(x);
  free(y);
  free(out);
}

START_TEST(parameters_are_copied_at_the_call) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "axpy");
  axpy_checked(rt, f, 100003, 256, false, t4a_test_seed());
  axpy_checked(rt, f, 4099, 64, true, t4a_test_seed() + 7);
  t4a_runtime_counters k = {.struct_size = sizeof k};
  OK(T->runtime_counters(rt, &k));
  ck_assert_uint_eq(k.launches, 2);
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* Every block of a large grid runs exactly once, over the pool's threads
 * (T4A_HOST_THREADS=4 here: a pool of 3 and the worker, even on a small
 * machine), for grids of one chunk and of many. */
START_TEST(every_block_runs_once_over_the_pool) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "count");
  static const uint32_t grids[][3] = {{1, 1, 1}, {3, 1, 1}, {1000, 1, 1}, {7, 5, 3}, {65536, 2, 1}};
  for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
    uint64_t blocks = (uint64_t)grids[g][0] * grids[g][1] * grids[g][2];
    enum { GUARD = 64 }; /* words past the grid: no block beyond it may run */
    t4a_buffer b;
    OK(T->buffer_alloc(rt, (blocks + GUARD) * 4, &b));
    OK(T->memset(rt, b, 0, 0, 4, blocks + GUARD));
    uint64_t p = address(rt, b);
    void *args[] = {&p};
    t4a_launch_config c = {.struct_size = sizeof c, .block = {4, 2, 1}};
    memcpy(c.grid, grids[g], sizeof c.grid);
    OK(T->launch(rt, f, &c, args));
    uint32_t *out = malloc((blocks + GUARD) * 4);
    OK(T->copy_d2h(rt, out, b, 0, (blocks + GUARD) * 4));
    for (uint64_t i = 0; i < blocks + GUARD; i++)
      ck_assert_msg(out[i] == (i < blocks ? 8u : 0u), "grid %zu block %llu ran %u threads, want %u",
                    g, (unsigned long long)i, out[i], i < blocks ? 8u : 0u);
    free(out);
    OK(T->buffer_free(rt, b));
  }
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(dynamic_shared_memory_is_lent_to_each_block) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "probe");
  OK(T->function_set_max_dynamic_shared(rt, f, 200 << 10));
  static const uint32_t sizes[] = {0, 1, 1000, 48 << 10, 200 << 10};
  t4a_buffer b;
  OK(T->buffer_alloc(rt, 64, &b));
  uint64_t p = address(rt, b);
  void *args[] = {&p};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    OK(T->memset(rt, b, 0, 0, 4, 16));
    t4a_launch_config c = geometry(3, 32, sizes[i]);
    OK(T->launch(rt, f, &c, args));
    uint64_t out[8];
    OK(T->copy_d2h(rt, out, b, 0, sizeof out));
    ck_assert_uint_eq(out[0], sizes[i]);
    ck_assert_uint_ge(out[1], sizes[i]); /* at least what was asked for */
    ck_assert_uint_eq(out[2], 0);        /* 256-byte aligned */
    ck_assert_uint_eq(out[3], 1);
    if (sizes[i])
      ck_assert_uint_eq(out[4], 1); /* and writable to its last byte */
  }
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* Launches run in call order with the copies around them: everything is
 * queued behind a closed gate, then runs in order. */
START_TEST(launches_run_in_order_with_copies) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "axpy");
  enum { N = 50000 };
  float *x = malloc(N * 4ull), *y = malloc(N * 4ull);
  random_floats(x, N, t4a_test_seed());
  random_floats(y, N, t4a_test_seed() + 1);
  t4a_host_buffer hx, hy, hz;
  float *px_h, *py_h, *pz_h;
  OK(T->host_alloc(rt, N * 4ull, 0, &hx, (void **)&px_h));
  OK(T->host_alloc(rt, N * 4ull, 0, &hy, (void **)&py_h));
  OK(T->host_alloc(rt, N * 4ull, 0, &hz, (void **)&pz_h));
  memcpy(px_h, x, N * 4ull);
  memcpy(py_h, y, N * 4ull);
  memset(pz_h, 0xff, N * 4ull);
  t4a_buffer dx, dy, dz;
  OK(T->buffer_alloc(rt, N * 4ull, &dx));
  OK(T->buffer_alloc(rt, N * 4ull, &dy));
  OK(T->buffer_alloc(rt, N * 4ull, &dz));
  uint64_t n = N, ax = address(rt, dx), ay = address(rt, dy), az = address(rt, dz);
  float two = 2.0f, three = 3.0f;
  void *first[] = {&n, &two, &ax, &ay}, *second[] = {&n, &three, &ay, &az};
  uint32_t *word = aligned_alloc(64, 64);
  t4a_host_buffer gate = gate_close(rt, word);
  OK(T->copy_h2d_pinned(rt, dx, 0, hx, 0, N * 4ull));
  OK(T->copy_h2d_pinned(rt, dy, 0, hy, 0, N * 4ull));
  OK(T->memset(rt, dz, 0, 0, 4, N));
  t4a_launch_config c = geometry((N + 127) / 128, 128, 0);
  OK(T->launch(rt, f, &c, first));  /* y = 2x + y */
  OK(T->launch(rt, f, &c, second)); /* z = 3y + 0 */
  OK(T->copy_d2h_pinned(rt, hz, 0, dz, 0, N * 4ull));
  t4a_witness w;
  OK(T->seal(rt, &w));
  EXPECT(T->witness_query(w), T4A_ENOTREADY); /* all of it is behind the gate */
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  OK(T->witness_release(w));
  for (uint32_t i = 0; i < N; i++) {
    float yy = 2.0f * x[i] + y[i], want = 3.0f * yy + 0.0f;
    ck_assert_msg(pz_h[i] == want, "z[%u] = %a, want %a", i, (double)pz_h[i], (double)want);
  }
  OK(T->host_unregister(rt, gate));
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(word);
  free(x);
  free(y);
}
END_TEST

/* module_unload waits for nothing, and the module stays until the launch
 * queued before it ran. */
START_TEST(unload_is_deferred_behind_queued_launches) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "count");
  t4a_buffer b;
  OK(T->buffer_alloc(rt, 64 * 4ull, &b));
  OK(T->memset(rt, b, 0, 0, 4, 64));
  uint64_t p = address(rt, b);
  void *args[] = {&p};
  uint32_t *word = aligned_alloc(64, 64);
  t4a_host_buffer gate = gate_close(rt, word);
  t4a_launch_config c = geometry(64, 3, 0);
  OK(T->launch(rt, f, &c, args));
  OK(T->module_unload(rt, m));
  EXPECT(T->launch(rt, f, &c, args), T4A_EHANDLE); /* the function is stale at once */
  t4a_runtime_counters k = {.struct_size = sizeof k};
  OK(T->runtime_counters(rt, &k));
  ck_assert_uint_ge(k.pending_retirements, 1);
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  uint32_t out[64];
  OK(T->copy_d2h(rt, out, b, 0, sizeof out));
  for (int i = 0; i < 64; i++)
    ck_assert_uint_eq(out[i], 3);
  sync_rt(rt); /* a seal covering the launch: the module goes */
  OK(T->runtime_counters(rt, &k));
  ck_assert_uint_eq(k.pending_retirements, 0);
  OK(T->host_unregister(rt, gate));
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(word);
}
END_TEST

/* ---- graphs ---------------------------------------------------------------------------- */

START_TEST(graph_replays_launches_with_new_arguments) {
  t4a_runtime rt = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "axpy");
  enum { N = 3000 };
  float *x = malloc(N * 4ull), *y = malloc(N * 4ull), *out = malloc(N * 4ull);
  random_floats(x, N, t4a_test_seed());
  for (int i = 0; i < N; i++)
    y[i] = (float)(i % 17); /* small integers: every sum below is exact */
  for (int i = 0; i < N; i++)
    x[i] = (float)(int)(x[i] * 8);
  t4a_buffer dx, dy, scratch;
  OK(T->buffer_alloc(rt, N * 4ull, &dx));
  OK(T->buffer_alloc(rt, N * 4ull, &dy));
  OK(T->buffer_alloc(rt, 64, &scratch));
  OK(T->copy_h2d(rt, dx, 0, x, N * 4ull));
  OK(T->copy_h2d(rt, dy, 0, y, N * 4ull));
  uint64_t n = N, ax = address(rt, dx), ay = address(rt, dy);
  float a = 1.0f;
  void *args[] = {&n, &a, &ax, &ay};
  t4a_launch_config c = geometry((N + 255) / 256, 256, 0);
  OK(T->graph_begin(rt));
  OK(T->launch(rt, f, &c, args));
  OK(T->memset(rt, scratch, 0, 7, 4, 16)); /* a copy node besides */
  t4a_graph g;
  OK(T->graph_end(rt, &g));
  t4a_graph_info gi = {.struct_size = sizeof gi};
  OK(T->graph_info(rt, g, &gi));
  ck_assert_uint_eq(gi.kernels, 1);
  ck_assert_uint_eq(gi.copies, 1);
  ck_assert_uint_eq(gi.nodes, 2);
  a = 5.0f; /* captured with 1.0 */
  uint32_t *word = aligned_alloc(64, 64);
  t4a_host_buffer gate = gate_close(rt, word);
  OK(T->graph_launch(rt, g)); /* y += 1x, queued behind the gate */
  float three = 3.0f;
  void *next[] = {&n, &three, &ax, &ay};
  OK(T->graph_set_kernel_args(rt, g, 0, next)); /* for replays after this call only */
  three = 50.0f;                                /* copied: ignored */
  OK(T->graph_launch(rt, g));                   /* y += 3x */
  EXPECT(T->graph_set_kernel_args(rt, g, 1, next), T4A_ERANGE);
  DETAIL("the graph has 1 kernels");
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  OK(T->copy_d2h(rt, out, dy, 0, N * 4ull));
  for (int i = 0; i < N; i++)
    ck_assert_msg(out[i] == y[i] + 4.0f * x[i], "y[%d] = %g, want %g", i, (double)out[i],
                  (double)(y[i] + 4.0f * x[i]));
  three = 3.0f;
  OK(T->graph_set_kernel_args(rt, g, 0, next)); /* idle now: in place */
  OK(T->graph_launch(rt, g));                   /* y += 3x */
  OK(T->copy_d2h(rt, out, dy, 0, N * 4ull));
  for (int i = 0; i < N; i++)
    ck_assert_msg(out[i] == y[i] + 7.0f * x[i], "y[%d] = %g, want %g (x %g y %g)", i,
                  (double)out[i], (double)(y[i] + 7.0f * x[i]), (double)x[i], (double)y[i]);
  OK(T->graph_info(rt, g, &gi));
  ck_assert_uint_eq(gi.replays, 3);
  OK(T->module_unload(rt, m)); /* the graph names a function released since */
  EXPECT(T->graph_launch(rt, g), T4A_EHANDLE);
  DETAIL("function");
  OK(T->graph_release(rt, g));
  OK(T->host_unregister(rt, gate));
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(word);
  free(x);
  free(y);
  free(out);
}
END_TEST

/* ---- faults ---------------------------------------------------------------------------- */

START_TEST(a_fault_is_sticky_and_contained) {
  t4a_runtime rt = make_rt(), sibling = make_rt();
  t4a_module m;
  t4a_function f = lookup(rt, &m, "trap");
  uint64_t ok_n = 1, bad_n = 777;
  void *fine[] = {&ok_n}, *bad[] = {&bad_n};
  t4a_launch_config c = geometry(64, 32, 0);
  OK(T->launch(rt, f, &c, fine));
  t4a_witness before, after;
  OK(T->seal(rt, &before));
  OK(T->witness_wait(before, T4A_WAIT_FOREVER));
  uint32_t *word = aligned_alloc(64, 64); /* the fault waits until the calls below were made */
  gate_close(rt, word);
  OK(T->launch(rt, f, &c, bad));
  t4a_buffer b;
  OK(T->buffer_alloc(rt, 64, &b));
  OK(T->seal(rt, &after));
  __atomic_store_n(word, 1, __ATOMIC_RELEASE);
  EXPECT(T->witness_wait(after, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  DETAIL("kernel 'trap' faulted (__trap()) in block (2, 0, 0), thread (5, 0, 0)");
  DETAIL("fixture.cu:42");
  OK(T->witness_query(before)); /* its work completed before the fault */
  EXPECT(T->witness_query(after), T4A_EDEVICEFAULT);
  /* sticky, for every runtime */
  EXPECT(T->buffer_alloc(rt, 64, &b), T4A_EDEVICEFAULT);
  EXPECT(T->launch(rt, f, &c, fine), T4A_EDEVICEFAULT);
  EXPECT(T->buffer_alloc(sibling, 64, &b), T4A_EDEVICEFAULT);
  DETAIL("kernel 'trap' faulted");
  t4a_runtime third;
  EXPECT(T->runtime_create(0, NULL, &third), T4A_EDEVICEFAULT);
  t4a_runtime_counters k = {.struct_size = sizeof k};
  OK(T->runtime_counters(rt, &k)); /* what still serves after a fault */
  OK(T->module_unload(rt, m));
  /* destroy completes, and says so */
  EXPECT(T->runtime_destroy(rt, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  EXPECT(T->runtime_destroy(sibling, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  EXPECT(T->runtime_destroy(rt, T4A_WAIT_FOREVER), T4A_EHANDLE);
  EXPECT(T->witness_query(after), T4A_EDEVICEFAULT); /* witnesses outlive their runtime */
  OK(T->witness_release(before));
  OK(T->witness_release(after));
  free(word); /* its registration went with the runtime */
}
END_TEST

int main(void) {
  /* the compiler the plugin would use, for the fixtures */
  char cxx[256];
  int found = host_compiler(cxx, sizeof cxx);
  if (found)
    return found;
  build_fixtures(cxx);
  setenv(T4A__HOST_TEST_GATE_ENV, "1", 1);
  setenv("T4A_HOST_THREADS", "4", 1);
  Suite *s = suite_create("host-launch");
  TCase *tc = tcase_create("modules");
  tcase_add_checked_fixture(tc, host_setup, host_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, module_abi_and_bytes_are_checked_at_load);
  tcase_add_test(tc, the_cuda_backend_refuses_host_code);
  tcase_add_test(tc, functions_attributes_and_occupancy);
  suite_add_tcase(s, tc);
  tc = tcase_create("launches");
  tcase_add_checked_fixture(tc, host_setup, host_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, geometry_is_checked_before_anything_is_queued);
  tcase_add_test(tc, parameters_are_copied_at_the_call);
  tcase_add_test(tc, every_block_runs_once_over_the_pool);
  tcase_add_test(tc, dynamic_shared_memory_is_lent_to_each_block);
  tcase_add_test(tc, launches_run_in_order_with_copies);
  tcase_add_test(tc, unload_is_deferred_behind_queued_launches);
  tcase_add_test(tc, graph_replays_launches_with_new_arguments);
  suite_add_tcase(s, tc);
  /* last: the device's fault is sticky for the process (each test runs in
   * a child of its own, so it stays in that child) */
  tc = tcase_create("faults");
  tcase_add_checked_fixture(tc, host_setup, host_teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, a_fault_is_sticky_and_contained);
  suite_add_tcase(s, tc);
  int rc = t4a_test_run(s);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fixtures_dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", fixtures_dir);
  return rc;
}
