/* tests/cpu/test_cuda_init.c -- the CUDA plugin's driver loading, init
 * outcomes and device queries, against the fake driver (no GPU needed).
 * Each test runs in its own forked process, so every init is a first one. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"

static t4a_gpu_backend *backend;
static const t4a_gpu_backend_v1 *t;

static void use_fake(const char *which) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(which), 1);
}

static void open_plugin(void) { backend = t4a_test_open_cuda(&t); }

static void close_plugin(void) {
  if (backend)
    t4a_gpu_close(backend);
  backend = NULL;
}

/* init must fail with `status`, its detail containing `needle`. */
static void expect_init(int status, const char *needle) {
  open_plugin();
  int rc = t->init();
  ck_assert_msg(rc == status, "init: got %s, want %s (%s)", t4a_status_name(rc),
                t4a_status_name(status), t4a_test_backend_error(t));
  if (needle)
    ck_assert_msg(strstr(t4a_test_backend_error(t), needle), "detail '%s' lacks '%s'",
                  t4a_test_backend_error(t), needle);
  if (status != T4A_OK) {
    /* nothing else works, and says why */
    int32_t n = -1;
    ck_assert_int_eq(t->device_count(&n), T4A_ENOTINIT);
    ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), t4a_status_name(status)));
  }
}

/* Keeps the fake driver loaded by this test too, so that its counters
 * survive the plugin releasing it after a failed init. */
static void pin_fake(void) {
  ck_assert_ptr_nonnull(dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_LOCAL));
}

static int fake_init_calls(void) {
  void *h = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(h);
  int (*calls)(void);
  *(void **)&calls = dlsym(h, "fake_cuda_init_calls");
  ck_assert_ptr_nonnull(calls);
  int n = calls();
  dlclose(h);
  return n;
}

START_TEST(no_driver_library) {
  setenv("T4A_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  expect_init(T4A_ENODRIVER, "/nonexistent/libcuda.so.1");
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "install the NVIDIA driver"));
}
END_TEST

START_TEST(not_a_driver_library) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path("tests/loader/.libs/libt4a_fakegood.so"), 1);
  expect_init(T4A_ENODRIVER, "is not a CUDA driver library");
}
END_TEST

START_TEST(stub_library) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_MODE", "stub", 1);
  expect_init(T4A_ESTUBDRIVER, "stub");
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "CUDA_ERROR_STUB_LIBRARY"));
}
END_TEST

START_TEST(no_device) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_MODE", "nodevice", 1);
  expect_init(T4A_ENODEVICE, "CUDA_ERROR_NO_DEVICE");
  /* the driver library was released after the failure: nothing leaks */
  ck_assert_ptr_null(dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD));
}
END_TEST

START_TEST(zero_devices_after_init) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_DEVICES", "0", 1);
  expect_init(T4A_ENODEVICE, "reports no device");
}
END_TEST

START_TEST(driver_too_old) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_VERSION", "11080", 1);
  pin_fake();
  expect_init(T4A_EDRIVEROLD, "supports CUDA 11.8, t4a needs 12.0");
  ck_assert_int_eq(fake_init_calls(), 0); /* refused before cuInit */
}
END_TEST

START_TEST(insufficient_driver) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_MODE", "insufficient", 1);
  expect_init(T4A_EDRIVERMISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH");
}
END_TEST

START_TEST(other_driver_error_names_the_native_code) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_MODE", "initfail", 1);
  expect_init(T4A_EDRIVER, "CUDA_ERROR_UNKNOWN=999");
  t4a_error_info e = {.struct_size = sizeof e};
  ck_assert_int_eq(t->init(), T4A_EDRIVER);
  ck_assert_int_eq(t->last_error(&e), T4A_OK);
  ck_assert_int_eq(e.status, T4A_EDRIVER);
  ck_assert_int_eq(e.native_code, 999);
  ck_assert_str_eq(e.native_name, "CUDA_ERROR_UNKNOWN");
}
END_TEST

START_TEST(missing_required_symbol) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_HIDE", "cuMemAllocFromPoolAsync", 1);
  expect_init(T4A_EDRIVEROLD, "lacks cuMemAllocFromPoolAsync");
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "CUDA 12.8"));
}
END_TEST

START_TEST(optional_symbol_missing) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_HIDE", "cuDeviceCanAccessPeer", 1);
  expect_init(T4A_OK, NULL);
  bool ok = true;
  ck_assert_int_eq(t->peer_access_supported(0, 1, &ok), T4A_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "cuDeviceCanAccessPeer"));
  int32_t n = 0;
  ck_assert_int_eq(t->device_count(&n), T4A_OK);
  ck_assert_int_eq(n, 2);
}
END_TEST

START_TEST(without_cuGetProcAddress_resolves_by_dlsym) {
  use_fake(T4A_TEST_FAKE_CUDA_NOGPA);
  expect_init(T4A_OK, NULL);
  t4a_device_info i = {.struct_size = sizeof i};
  ck_assert_int_eq(t->device_info(1, &i), T4A_OK);
  ck_assert_str_eq(i.name, "Fake GPU 1");
}
END_TEST

START_TEST(devices_are_described) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_DEVICES", "3", 1);
  expect_init(T4A_OK, NULL);
  int32_t n = 0;
  ck_assert_int_eq(t->device_count(&n), T4A_OK);
  ck_assert_int_eq(n, 3);
  for (int32_t d = 0; d < n; d++) {
    t4a_device_info i;
    memset(&i, 0xab, sizeof i);
    i.struct_size = sizeof i;
    ck_assert_int_eq(t->device_info(d, &i), T4A_OK);
    char name[32];
    snprintf(name, sizeof name, "Fake GPU %d", (int)d);
    ck_assert_str_eq(i.name, name);
    ck_assert_int_eq(i.ordinal, d);
    ck_assert_int_eq(i.cc_major, 9);
    ck_assert_int_eq(i.cc_minor, 0);
    ck_assert_uint_eq(i.total_memory, 1u << 30);
    ck_assert_int_eq(i.multiprocessors, 4);
    ck_assert_int_eq(i.max_threads_per_block, 1024);
    ck_assert_int_eq(i.max_grid_dim[1], 65535);
    ck_assert_int_eq(i.max_shared_per_block_optin, 232448);
    ck_assert_int_eq(i.warp_size, 32);
    ck_assert_uint_eq(i.flags, T4A_DEVICE_MEMORY_POOLS | T4A_DEVICE_UNIFIED_ADDRESSING);
    snprintf(name, sizeof name, "0000:%02x:00.0", 0x10 + (int)d);
    ck_assert_str_eq(i.pci_bus_id, name);
    ck_assert_uint_eq(i.uuid[0], (uint8_t)(0xf0 + d * 16));
    ck_assert_uint_eq(i.struct_size, sizeof i);
  }
  bool ok = false;
  ck_assert_int_eq(t->peer_access_supported(0, 2, &ok), T4A_OK);
  ck_assert(ok);
  ck_assert_int_eq(t->peer_access_supported(1, 1, &ok), T4A_OK);
  ck_assert(ok);
  setenv("FAKE_CUDA_NO_PEER", "1", 1);
  ck_assert_int_eq(t->peer_access_supported(0, 2, &ok), T4A_OK);
  ck_assert(!ok);
}
END_TEST

START_TEST(device_queries_check_their_input) {
  use_fake(T4A_TEST_FAKE_CUDA);
  expect_init(T4A_OK, NULL);
  t4a_device_info i = {.struct_size = sizeof i};
  ck_assert_int_eq(t->device_info(-1, &i), T4A_EINVAL);
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "ordinal -1"));
  ck_assert_int_eq(t->device_info(2, &i), T4A_EINVAL);
  ck_assert_int_eq(t->device_info(0, NULL), T4A_EINVAL);
  i.struct_size = 8; /* too small: an error, never an abort */
  ck_assert_int_eq(t->device_info(0, &i), T4A_EINVAL);
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "struct_size is 8"));
  ck_assert_int_eq(t->device_count(NULL), T4A_EINVAL);
  bool ok;
  ck_assert_int_eq(t->peer_access_supported(0, 5, &ok), T4A_EINVAL);
  ck_assert_int_eq(t->peer_access_supported(0, 1, NULL), T4A_EINVAL);
  /* a newer caller's bigger struct: we fill what we know and say so */
  struct {
    t4a_device_info v1;
    uint64_t future;
  } big;
  memset(&big, 0x5a, sizeof big);
  big.v1.struct_size = sizeof big;
  ck_assert_int_eq(t->device_info(0, &big.v1), T4A_OK);
  ck_assert_uint_eq(big.v1.struct_size, sizeof(t4a_device_info));
  ck_assert_uint_eq(big.future, 0x5a5a5a5a5a5a5a5aull);
}
END_TEST

/* Device queries fail by injection like every other entry point: init
 * then fails, typed, naming the native code, for each query in turn. */
START_TEST(device_queries_can_fail) {
  static const char *const queries[] = {
      "cuDeviceGetCount", "cuDeviceGet",         "cuDeviceGetName",     "cuDeviceGetUuid",
      "cuDeviceTotalMem", "cuDeviceGetPCIBusId", "cuDeviceGetAttribute"};
  for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
    pid_t pid = fork();
    if (pid == 0) { /* a fresh process: init is final */
      use_fake(T4A_TEST_FAKE_CUDA);
      char fail[96];
      snprintf(fail, sizeof fail, "%s:%d:999", queries[i], i == 6 ? 7 : 1);
      setenv("FAKE_CUDA_FAIL", fail, 1);
      open_plugin();
      int rc = t->init();
      const char *e = t4a_test_backend_error(t);
      _exit(rc == T4A_EDRIVER && strstr(e, "CUDA_ERROR_UNKNOWN=999") ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "failing %s: init did not fail",
                  queries[i]);
  }
  /* and peer queries, after init */
  use_fake(T4A_TEST_FAKE_CUDA);
  expect_init(T4A_OK, NULL);
  void (*inject)(const char *, uint64_t, unsigned);
  void *h = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  *(void **)&inject = dlsym(h, "fake_cuda_fail");
  ck_assert_ptr_nonnull(inject);
  inject("cuDeviceCanAccessPeer", 1, 999);
  bool ok = false;
  ck_assert_int_eq(t->peer_access_supported(0, 1, &ok), T4A_EDRIVER);
  ck_assert_int_eq(t->peer_access_supported(0, 1, &ok), T4A_OK);
  ck_assert(ok);
  dlclose(h);
}
END_TEST

START_TEST(calls_before_init_are_refused) {
  use_fake(T4A_TEST_FAKE_CUDA);
  open_plugin();
  int32_t n;
  ck_assert_int_eq(t->device_count(&n), T4A_ENOTINIT);
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "call init() first"));
  t4a_backend_info bi = {.struct_size = sizeof bi};
  ck_assert_int_eq(t->get_info(&bi), T4A_OK);
  ck_assert_str_eq(bi.name, "cuda");
  ck_assert_int_eq(bi.driver_version, 0);
  ck_assert_int_eq(bi.device_count, 0);
  ck_assert_int_eq(t->init(), T4A_OK);
  ck_assert_int_eq(t->get_info(&bi), T4A_OK);
  ck_assert_int_eq(bi.driver_version, 12080);
  ck_assert_int_eq(bi.device_count, 2);
  ck_assert_str_eq(bi.driver_path, getenv("T4A_CUDA_LIBRARY"));
  ck_assert_uint_eq(bi.abi_major, 1);
}
END_TEST

static void *init_in_thread(void *arg) {
  (void)arg;
  return (void *)(intptr_t)t->init();
}

START_TEST(init_is_idempotent_and_thread_safe) {
  use_fake(T4A_TEST_FAKE_CUDA);
  open_plugin();
  pthread_t th[8];
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, init_in_thread, NULL), 0);
  for (int i = 0; i < 8; i++) {
    void *r;
    pthread_join(th[i], &r);
    ck_assert_int_eq((int)(intptr_t)r, T4A_OK);
  }
  ck_assert_int_eq(t->init(), T4A_OK);
  ck_assert_int_eq(fake_init_calls(), 1);
}
END_TEST

static void *failed_init_in_thread(void *arg) {
  (void)arg;
  const t4a_gpu_backend_v1 *table = t;
  int rc = table->init();
  /* the detail is replayed on this thread too */
  return (void *)(intptr_t)(rc == T4A_ENODEVICE &&
                            strstr(t4a_test_backend_error(table), "CUDA_ERROR_NO_DEVICE") != NULL);
}

START_TEST(failed_init_is_cached_without_retry_storm) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("FAKE_CUDA_MODE", "nodevice", 1);
  pin_fake();
  expect_init(T4A_ENODEVICE, NULL);
  for (int i = 0; i < 100; i++)
    ck_assert_int_eq(t->init(), T4A_ENODEVICE);
  pthread_t th;
  void *r = NULL;
  ck_assert_int_eq(pthread_create(&th, NULL, failed_init_in_thread, NULL), 0);
  pthread_join(th, &r);
  ck_assert_int_eq((int)(intptr_t)r, 1);
  ck_assert_int_eq(fake_init_calls(), 1); /* the driver was asked once */
}
END_TEST

START_TEST(missing_compiler_affects_only_compiling) {
  use_fake(T4A_TEST_FAKE_CUDA);
  setenv("T4A_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.12", 1);
  expect_init(T4A_OK, NULL);
  t4a_compiler_info c = {.struct_size = sizeof c};
  ck_assert_int_eq(t->compiler_info(&c), T4A_OK);
  ck_assert_int_eq(c.status, T4A_ENOCOMPILER);
  ck_assert_ptr_nonnull(strstr(c.reason, "/nonexistent/libnvrtc.so.12"));
  ck_assert_int_eq(c.version_major, 0);
  int32_t n = 0;
  ck_assert_int_eq(t->device_count(&n), T4A_OK); /* everything else works */
  /* an override that is not NVRTC is refused, never silently replaced */
  ck_assert_int_eq(t->compiler_info(&c), T4A_OK);
  ck_assert_int_eq(c.status, T4A_ENOCOMPILER);
  /* compiling is what fails: for a device and without one */
  t4a_compile_options o = {.struct_size = sizeof o,
                           .source = "extern \"C\" __global__ void k() {}",
                           .device_ordinal = 0};
  t4a_artifact a = {1};
  ck_assert_int_eq(t->artifact_compile(&o, &a), T4A_ENOCOMPILER);
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "/nonexistent/libnvrtc.so.12"));
  ck_assert(a.bits == 0);
  const char *arch[] = {"-arch=sm_90"};
  o.device_ordinal = -1;
  o.options = arch;
  o.option_count = 1;
  ck_assert_int_eq(t->artifact_compile(&o, &a), T4A_ENOCOMPILER);
  /* ... and code given as bytes still loads and runs */
  const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                     ".visible .entry t4a_empty()\n{\n  ret;\n}\n";
  ck_assert_int_eq(t->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, sizeof ptx - 1, "e", &a), T4A_OK);
  t4a_runtime rt;
  t4a_module m;
  t4a_function f;
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  ck_assert_int_eq(t->runtime_create(0, NULL, &rt), T4A_OK);
  ck_assert_int_eq(t->module_load(rt, a, &m), T4A_OK);
  ck_assert_int_eq(t->function_get(rt, m, "t4a_empty", &f), T4A_OK);
  ck_assert_int_eq(t->launch(rt, f, &cfg, NULL), T4A_OK);
  t4a_witness w;
  ck_assert_int_eq(t->seal(rt, &w), T4A_OK);
  ck_assert_int_eq(t->witness_wait(w, T4A_WAIT_FOREVER), T4A_OK);
  ck_assert_int_eq(t->witness_release(w), T4A_OK);
  ck_assert_int_eq(t->artifact_release(a), T4A_OK);
  ck_assert_int_eq(t->runtime_destroy(rt, T4A_WAIT_FOREVER), T4A_OK);
}
END_TEST

/* A compile that fails returns its artifact with the log and no code (the
 * header: T4A_ECOMPILE, *out non-null); loading it is refused before the
 * driver sees it. The fake NVRTC fails a source with #error, so this runs
 * where the real NVRTC is missing (CI), unlike test_code's "nvrtc" case. */
START_TEST(a_failed_compile_gives_a_log_and_no_code) {
  use_fake(T4A_TEST_FAKE_CUDA);
  pin_fake();
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
  setenv("T4A_CACHE_DIR", "", 1); /* no disk cache */
  expect_init(T4A_OK, NULL);
  t4a_compile_options o = {.struct_size = sizeof o,
                           .source = "#error no kernel today\n",
                           .name = "bad.cu",
                           .device_ordinal = 0};
  t4a_artifact a = {0};
  ck_assert_int_eq(t->artifact_compile(&o, &a), T4A_ECOMPILE);
  ck_assert(a.bits != 0);
  const char *log = NULL;
  uint64_t length = 0;
  ck_assert_int_eq(t->artifact_log(a, &log, &length), T4A_OK);
  ck_assert_ptr_nonnull(strstr(log, "no kernel today"));
  t4a_runtime rt;
  t4a_module m = {0};
  ck_assert_int_eq(t->runtime_create(0, NULL, &rt), T4A_OK);
  void *h = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(h);
  uint64_t (*calls)(const char *);
  *(void **)&calls = dlsym(h, "fake_cuda_calls");
  ck_assert_ptr_nonnull(calls);
  uint64_t loads = calls("cuModuleLoadData");
  ck_assert_int_eq(t->module_load(rt, a, &m), T4A_EINVAL);
  ck_assert_ptr_nonnull(strstr(t4a_test_backend_error(t), "holds no code"));
  ck_assert_uint_eq(calls("cuModuleLoadData"), loads);
  ck_assert(m.bits == 0);
  ck_assert_int_eq(t->artifact_release(a), T4A_OK);
  ck_assert_int_eq(t->runtime_destroy(rt, T4A_WAIT_FOREVER), T4A_OK);
  dlclose(h);
}
END_TEST

START_TEST(wrong_compiler_library_is_refused) {
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  open_plugin();
  t4a_compiler_info c = {.struct_size = sizeof c};
  ck_assert_int_eq(t->compiler_info(&c), T4A_OK); /* needs no init */
  ck_assert_int_eq(c.status, T4A_ENOCOMPILER);
  ck_assert_ptr_nonnull(strstr(c.reason, "lacks nvrtcVersion"));
  c.struct_size = 4;
  ck_assert_int_eq(t->compiler_info(&c), T4A_EINVAL);
}
END_TEST

START_TEST(entry_negotiates_the_major) {
  void *h = dlopen(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(h);
  t4a_gpu_backend_v1_entry_fn entry;
  *(void **)&entry = dlsym(h, T4A_GPU_BACKEND_V1_ENTRY_NAME);
  ck_assert_ptr_nonnull(entry);
  const t4a_gpu_backend_v1 *table = (const t4a_gpu_backend_v1 *)0x1;
  ck_assert_int_eq(entry(2, 0, &table), T4A_EABI);
  ck_assert_ptr_null(table);
  ck_assert_int_eq(entry(1, 99, &table), T4A_OK); /* any minor */
  ck_assert_ptr_nonnull(table);
  ck_assert_uint_eq(table->struct_size, sizeof(t4a_gpu_backend_v1));
  ck_assert_int_eq(entry(1, 0, NULL), T4A_EINVAL);
  dlclose(h);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cuda-init");
  TCase *tc = tcase_create("init");
  tcase_add_checked_fixture(tc, NULL, close_plugin);
  tcase_add_test(tc, no_driver_library);
  tcase_add_test(tc, not_a_driver_library);
  tcase_add_test(tc, stub_library);
  tcase_add_test(tc, no_device);
  tcase_add_test(tc, zero_devices_after_init);
  tcase_add_test(tc, driver_too_old);
  tcase_add_test(tc, insufficient_driver);
  tcase_add_test(tc, other_driver_error_names_the_native_code);
  tcase_add_test(tc, missing_required_symbol);
  tcase_add_test(tc, optional_symbol_missing);
  tcase_add_test(tc, without_cuGetProcAddress_resolves_by_dlsym);
  tcase_add_test(tc, devices_are_described);
  tcase_add_test(tc, device_queries_check_their_input);
  tcase_add_test(tc, device_queries_can_fail);
  tcase_add_test(tc, calls_before_init_are_refused);
  tcase_add_test(tc, init_is_idempotent_and_thread_safe);
  tcase_add_test(tc, failed_init_is_cached_without_retry_storm);
  tcase_add_test(tc, missing_compiler_affects_only_compiling);
  tcase_add_test(tc, a_failed_compile_gives_a_log_and_no_code);
  tcase_add_test(tc, wrong_compiler_library_is_refused);
  tcase_add_test(tc, entry_negotiates_the_major);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return t4a_test_run(suite()); }
