/* tests/runtime/rtutil.c -- see rtutil.h. */
#include "config.h"

#include "tests/runtime/rtutil.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cuda_kernels.h"
#include "common/ptx_kernels.h"
#include "plugin-cuda/cuda_decls.h"
#include "plugin-host/test_gate.h"

const t4a_gpu_backend_v1 *T;
t4a_gpu_backend *B;
t4a_device_info DEV;

bool rt_on_fake(void) {
  if (rt_on_host())
    return false;
  const char *lib = getenv("T4A_CUDA_LIBRARY");
  return lib && strstr(lib, "fakecuda") != NULL;
}

bool rt_on_host(void) {
#ifdef T4A_TEST_HOST
  return true;
#else
  return false;
#endif
}

#define HOST_PLUGIN "plugin-host/.libs/libt4a_host.so"

const char *rt_plugin_path(void) {
  return t4a_test_build_path(rt_on_host() ? HOST_PLUGIN : T4A_TEST_CUDA_PLUGIN);
}

t4a_gpu_backend *rt_open(const t4a_gpu_backend_v1 **table) {
  if (!rt_on_host())
    return t4a_test_open_cuda(table);
  t4a_gpu_backend *b = NULL;
  int rc = t4a_gpu_open_path(rt_plugin_path(), &b);
  ck_assert_msg(rc == T4A_OK, "open the host plugin: %s", t4a_gpu_last_error());
  *table = t4a_gpu_backend_table(b);
  return b;
}

/* Tests left out of the host lane (rt_cuda_only) and tests whose rest was
 * (RT_REST_IS_CUDA_ONLY, counted in the forked child: printed only). */
static int host_left_out;

void rt_cuda_only(TCase *tc, const TTest *t, const char *why) {
  if (!rt_on_host()) {
    tcase_add_test(tc, t);
    return;
  }
  host_left_out++;
  fprintf(stderr, "rtutil: SKIP %s on host: %s\n", t->name, why);
}

void rt_note_host_skip(const char *test, const char *why) {
  size_t n = strlen(test); /* Check's START_TEST names the function <test>_fn */
  if (n > 3 && strcmp(test + n - 3, "_fn") == 0)
    n -= 3;
  fprintf(stderr, "rtutil: %.*s: the rest is CUDA-only, skipped on host: %s\n", (int)n, test, why);
}

/* The compute-sanitizer tool the tests run under ("" when none). */
static const char *sanitizer(void) {
  const char *s = getenv("T4A_TEST_SANITIZER");
  return s ? s : "";
}

uint64_t rt_scaled(uint64_t n) {
  if (!*sanitizer())
    return n;
  return n / 16 ? n / 16 : 1;
}

static bool under_initcheck(void) { return strcmp(sanitizer(), "initcheck") == 0; }

/* The tests that close a gate (rt_gate_close, t4a_spin, interop's consumer
 * gate, reentry's gates), directly or through a helper, in the order of
 * their files (code, completion, cross, graph, interop, reentry, runtime,
 * staging, transfer, v1_1; then fork): see rtutil.h. */
static const char *const initcheck_left_out[] = {
    "module_unload_is_deferred_behind_queued_kernels",
    "completion_records_outlive_their_witnesses_while_queued",
    "witness_query_wait_and_timeout",
    "a_runtime_waits_for_another_runtimes_witness",
    "witness_wait_does_not_hold_the_runtime",
    "a_deadline_that_overflows_still_waits",
    "a_long_wait_blocks_in_the_driver_and_asks_no_more",
    "pinned_buffer_is_not_reused_while_a_copy_is_pending",
    "a_retirement_waits_for_a_seal_covering_its_work",
    "same_device_copy_follows_the_source",
    "same_device_source_is_not_reused_early",
    "same_device_source_is_not_reused_early_by_the_pool",
    "same_device_source_destroyed_while_pending",
    "peer_copy_follows_the_source",
    "peer_source_is_not_reused_early",
    "peer_source_is_not_reused_early_by_the_pool",
    "peer_source_destroyed_while_pending",
    "a_runtime_waits_for_a_witness_of_another_device",
    "kernel_arguments_are_updated_without_reinstantiating",
    "graph_released_while_a_replay_is_queued",
    "host_memory_a_queued_replay_uses_is_released_behind_it",
    "release_waits_for_the_last_use",
    "consumer_stream_waits_for_a_witness",
    "runtime_waits_for_a_consumer_stream_and_event",
    "failed_driver_calls_are_typed_and_undone",
    "after_a_fault_external_memory_is_never_released",
    "release_destroys_its_runtime_in_seal",
    "release_destroys_its_runtime_in_witness_query",
    "release_destroys_its_runtime_in_witness_elapsed",
    "release_destroys_its_runtime_in_stream_wait_witness",
    "release_destroys_its_runtime_in_runtime_wait_witness",
    "release_destroys_its_runtime_in_host_free",
    "release_destroys_its_runtime_in_host_unregister",
    "release_destroys_its_runtime_in_module_unload",
    "release_destroys_its_runtime_in_graph_release",
    "release_destroys_its_runtime_in_runtime_destroy",
    "destroy_waits_for_outstanding_work",
    "destroy_returns_after_the_work_ran",
    "filled_chunks_wait_for_their_dmas",
    "copies_of_every_size_land_in_call_order",
    "h2d_source_is_reusable_on_return",
    "a_blocked_runtime_never_delays_another",
    "registered_memory_serves_pinned_copies",
    "timed_witnesses_measure_gpu_time",
    "a_child_forked_with_work_in_flight_does_not_wait_for_it",
};

void rt_tcase_add_test(TCase *tc, const TTest *t) {
  if (under_initcheck())
    for (size_t i = 0; i < sizeof initcheck_left_out / sizeof initcheck_left_out[0]; i++)
      if (strcmp(t->name, initcheck_left_out[i]) == 0) {
        fprintf(stderr, "rtutil: %s left out under initcheck (it holds a stream behind a gate)\n",
                t->name);
        return;
      }
  _tcase_add_test(tc, t, 0, 0, 0, 1);
}

/* T4A_TEST_TRACE=1 (the sanitizer lanes set it): each test's start and end
 * on stderr, unbuffered, with the time, so that a lane killed by its timeout
 * still shows which test it was in (the k-th start is the k-th test added,
 * and Check prints its own results only at the end). */
static struct timespec trace_start;

static bool tracing(void) {
  const char *s = getenv("T4A_TEST_TRACE");
  return s && *s && strcmp(s, "0") != 0;
}

void rt_setup(void) {
  if (tracing()) {
    clock_gettime(CLOCK_MONOTONIC, &trace_start);
    fprintf(stderr, "rtutil: test starts (pid %ld)\n", (long)getpid());
  }
  B = rt_open(&T);
  int rc = T->init();
  ck_assert_msg(rc == T4A_OK, "init: %s", t4a_test_backend_error(T));
  memset(&DEV, 0, sizeof DEV);
  DEV.struct_size = sizeof DEV;
  RT_OK(T->device_info(0, &DEV));
}

void rt_teardown(void) {
  if (rt_on_fake()) {
    const char *(*last)(void);
    *(void **)&last = rt_driver("fake_cuda_last_violation");
    ck_assert_msg(rt_fake_violations() == 0, "the fake driver saw %llu violation(s), the last: %s",
                  (unsigned long long)rt_fake_violations(), last());
  }
  if (B)
    t4a_gpu_close(B);
  B = NULL;
  if (tracing()) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    fprintf(stderr, "rtutil: test ends (pid %ld) after %.1f s\n", (long)getpid(),
            (double)(now.tv_sec - trace_start.tv_sec) +
                (double)(now.tv_nsec - trace_start.tv_nsec) / 1e9);
  }
}

#if defined(T4A_TEST_HOST)
static char run_cache[64]; /* the host lane's cache directory of this run, or "" */
#endif

Suite *rt_suite(const char *name) {
  static char full[64]; /* Check keeps the pointer; one suite per program */
#if defined(T4A_TEST_HOST)
  unsetenv("T4A_CUDA_LIBRARY");
  setenv(T4A__HOST_TEST_GATE_ENV, "1", 1);
  snprintf(full, sizeof full, "%s-host", name);
  if (!getenv("T4A_CACHE_DIR")) { /* one compile of each kernel source per program */
    snprintf(run_cache, sizeof run_cache, "/tmp/t4a-rt-cache-XXXXXX");
    if (mkdtemp(run_cache))
      setenv("T4A_CACHE_DIR", run_cache, 1);
    else
      run_cache[0] = '\0';
  }
#elif defined(T4A_TEST_FAKE)
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  snprintf(full, sizeof full, "%s-fake", name);
#else
  snprintf(full, sizeof full, "%s-gpu", name);
#endif
  return suite_create(full);
}

TCase *rt_tcase(Suite *s, const char *name, double timeout) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, timeout);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  suite_add_tcase(s, tc);
  return tc;
}

int rt_run(Suite *s, int min_gpus) {
#if defined(T4A_TEST_HOST)
  (void)min_gpus;
  if (host_left_out)
    fprintf(stderr, "rtutil: %d test(s) left out on host (CUDA-only, the reasons above)\n",
            host_left_out);
  int rc = t4a_test_run(s);
  if (run_cache[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", run_cache);
    if (system(cmd) != 0)
      fprintf(stderr, "rtutil: could not remove %s\n", run_cache);
  }
  return rc;
#elif defined(T4A_TEST_FAKE)
  (void)min_gpus;
  return t4a_test_run(s);
#else
  return t4a_test_gpu_main(s, min_gpus);
#endif
}

t4a_runtime rt_create_with(uint64_t staging, uint64_t cache_limit) {
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.staging_bytes = staging;
  o.cache_limit_bytes = cache_limit;
  t4a_runtime rt = {0};
  RT_OK(T->runtime_create(0, &o, &rt));
  ck_assert(rt.bits != 0);
  return rt;
}

t4a_runtime rt_create(void) {
  t4a_runtime rt = {0};
  RT_OK(T->runtime_create(0, NULL, &rt));
  return rt;
}

t4a_runtime_counters rt_counters(t4a_runtime rt) {
  t4a_runtime_counters c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  RT_OK(T->runtime_counters(rt, &c));
  return c;
}

t4a_cache_stats rt_cache(t4a_runtime rt) {
  t4a_cache_stats s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  RT_OK(T->cache_stats(rt, &s));
  return s;
}

void rt_sync(t4a_runtime rt) {
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
}

/* ---- threads with a bounded wait ---------------------------------------------- */

static void *rt_thread_main(void *arg) {
  rt_thread *t = arg;
  t->fn(t->arg);
  __atomic_store_n(&t->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

void rt_thread_start(rt_thread *t, void *(*fn)(void *), void *arg) {
  t->fn = fn;
  t->arg = arg;
  t->done = 0;
  ck_assert_int_eq(pthread_create(&t->th, NULL, rt_thread_main, t), 0);
}

bool rt_thread_wait(rt_thread *t, double seconds) {
  for (long ticks = (long)(seconds * 100); ticks >= 0; ticks--) { /* 10 ms each */
    if (__atomic_load_n(&t->done, __ATOMIC_SEQ_CST)) {
      pthread_join(t->th, NULL);
      return true;
    }
    if (ticks) {
      struct timespec ts = {0, 10000000L};
      nanosleep(&ts, NULL);
    }
  }
  return false;
}

void rt_thread_join(rt_thread *t) { pthread_join(t->th, NULL); }

/* ---- the driver, for the raw seam ------------------------------------------ */

typedef struct driver {
  void *dl;
  t4a__CUresult (*load)(t4a__CUmodule *, const void *);
  t4a__CUresult (*unload)(t4a__CUmodule);
  t4a__CUresult (*get)(t4a__CUfunction *, t4a__CUmodule, const char *);
  t4a__CUresult (*launch)(t4a__CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, unsigned, t4a__CUstream, void **, void **);
  t4a__CUresult (*attribute)(int *, t4a__CUfunction_attribute, t4a__CUfunction);
} driver;

static driver drv;

static void driver_open(void) {
  ck_assert_msg(!rt_on_host(), "a CUDA driver call in the host lane: the test must be "
                               "RT_CUDA_ONLY or check rt_on_host() first");
  if (drv.dl)
    return;
  const char *lib = getenv("T4A_CUDA_LIBRARY");
  drv.dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(drv.dl);
  *(void **)&drv.load = dlsym(drv.dl, "cuModuleLoadData");
  *(void **)&drv.unload = dlsym(drv.dl, "cuModuleUnload");
  *(void **)&drv.get = dlsym(drv.dl, "cuModuleGetFunction");
  *(void **)&drv.launch = dlsym(drv.dl, "cuLaunchKernel");
  *(void **)&drv.attribute = dlsym(drv.dl, "cuFuncGetAttribute");
  ck_assert(drv.load && drv.unload && drv.get && drv.launch && drv.attribute);
}

void *rt_driver(const char *name) {
  driver_open();
  void *p = dlsym(drv.dl, name);
  ck_assert_msg(p != NULL, "the driver lacks %s", name);
  return p;
}

static uint64_t fake_count(const char *fn, const char *arg) {
  if (!rt_on_fake())
    return UINT64_MAX;
  uint64_t (*f)(const char *);
  *(void **)&f = rt_driver(fn);
  return f(arg);
}

uint64_t rt_fake_calls(const char *entry) { return fake_count("fake_cuda_calls", entry); }
uint64_t rt_fake_live(const char *kind) { return fake_count("fake_cuda_live", kind); }

uint64_t rt_fake_violations(void) {
  if (!rt_on_fake())
    return UINT64_MAX;
  uint64_t (*f)(void);
  *(void **)&f = rt_driver("fake_cuda_violations");
  return f();
}

/* Kernels for the raw seam, as PTX the driver compiles at load time (no
 * NVRTC needed). The fake driver maps the same entry names to host code. */
static const char ptx[] =
    "//\n" T4A__PTX_HEADER T4A__PTX_SPIN_AND_FILL "\n"
    ".visible .entry t4a_fault()\n"
    "{\n"
    "  trap;\n"
    "}\n"
    "\n" T4A__PTX_INDEX3D "\n"
    "// At most 128 threads per block; through 512 bytes of static shared\n"
    "// memory, out[base + t] = base + ntid - 1 - t, base = ctaid.x * ntid.x\n"
    ".shared .align 4 .b8 t4a_bounded_s[512];\n"
    ".visible .entry t4a_bounded(.param .u64 out)\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "  .reg .b32 %r<10>;\n"
    "  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %ntid.x;\n"
    "  mov.u32 %r3, %ctaid.x;\n"
    "  mul.lo.u32 %r4, %r3, %r2;\n"
    "  add.u32 %r5, %r4, %r1;\n"
    "  mov.u32 %r6, t4a_bounded_s;\n"
    "  shl.b32 %r7, %r1, 2;\n"
    "  add.u32 %r7, %r6, %r7;\n"
    "  st.shared.u32 [%r7], %r5;\n"
    "  bar.sync 0;\n"
    "  sub.u32 %r8, %r2, %r1;\n"
    "  sub.u32 %r8, %r8, 1;\n"
    "  shl.b32 %r8, %r8, 2;\n"
    "  add.u32 %r8, %r6, %r8;\n"
    "  ld.shared.u32 %r9, [%r8];\n"
    "  mul.wide.u32 %rd2, %r5, 4;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.u32 [%rd3], %r9;\n"
    "  ret;\n"
    "}\n";

const char *rt_test_ptx(void) { return ptx; }

t4a_artifact rt_test_artifact(void) {
  t4a_artifact a = {0};
  if (!rt_on_host()) {
    RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "t.ptx", &a));
    return a;
  }
  static const char src[] = T4A__CUDA_TEST_KERNELS;
  t4a_compile_options o = {.struct_size = sizeof o, .source = src, .name = "t4a_test_kernels.cu"};
  RT_OK(T->artifact_compile(&o, &a));
  return a;
}

void rt_raw_launch(t4a_runtime rt, void **module, const char *name, void **args) {
  driver_open();
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  if (!*module) {
    ck_assert_int_eq(drv.load((t4a__CUmodule *)module, ptx), 0);
    /* Every kernel's code now, while nothing waits for this thread: under lazy
     * loading (CUDA's default) a kernel is loaded on its first lookup or use,
     * which may synchronise the context, so a first use behind a closed gate
     * never returns (an H200 under compute-sanitizer; the fake driver flags it). */
    static const char *const kernels[] = {"t4a_spin", "t4a_fill_u32", "t4a_fault", "t4a_index3d",
                                          "t4a_bounded"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
      t4a__CUfunction k;
      int threads = 0;
      ck_assert_int_eq(drv.get(&k, *module, kernels[i]), 0);
      ck_assert_int_eq(drv.attribute(&threads, T4A__CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k), 0);
    }
  }
  t4a__CUfunction f;
  ck_assert_int_eq(drv.get(&f, *module, name), 0);
  unsigned grid = strcmp(name, "t4a_fill_u32") == 0 ? 64 : 1;
  ck_assert_int_eq(drv.launch(f, grid, 1, 1, grid == 1 ? 1 : 256, 1, 1, 0, raw.stream, args, NULL),
                   0);
  RT_OK(T->raw_end(rt, &sec));
}

void rt_raw_unload(t4a_runtime rt, void *module) {
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(drv.unload(module), 0);
  RT_OK(T->raw_end(rt, &sec));
}

void rt_gate_close(rt_gate *g, t4a_runtime rt) {
  ck_assert_msg(!under_initcheck(), "a gate under initcheck, which may never let it open; list "
                                    "the test in initcheck_left_out (tests/runtime/rtutil.c)");
  memset(g, 0, sizeof *g);
  g->rt = rt;
#ifdef T4A_TEST_HOST /* (host_register is ABI 1.1: test_compat_v10 builds this file too) */
  /* the host's test gate: a word the worker waits on */
  void *word = NULL;
  ck_assert_int_eq(posix_memalign(&word, 64, 64), 0);
  g->word = word;
  g->flag = word;
  __atomic_store_n(g->flag, 0u, __ATOMIC_SEQ_CST);
  RT_OK(T->host_register(rt, word, 64, T4A__HOST_REGISTER_TEST_GATE, &g->hb));
  return;
#endif
  void *p = NULL;
  RT_OK(T->host_alloc(rt, sizeof(uint32_t), 0, &g->hb, &p));
  g->flag = p;
  __atomic_store_n(g->flag, 0u, __ATOMIC_SEQ_CST);
  uint64_t addr = (uint64_t)(uintptr_t)p;
  void *args[] = {&addr};
  rt_raw_launch(rt, &g->module, "t4a_spin", args);
}

void rt_gate_open(rt_gate *g) { __atomic_store_n(g->flag, 1u, __ATOMIC_SEQ_CST); }

static void *open_after(void *arg) {
  rt_gate *g = arg;
  struct timespec ts = {g->opener_ms / 1000, g->opener_ms % 1000 * 1000000L};
  nanosleep(&ts, NULL);
  rt_gate_open(g);
  return NULL;
}

void rt_gate_open_later(rt_gate *g, long ms) {
  ck_assert(!g->opening);
  g->opener_ms = ms;
  g->opening = true;
  ck_assert_int_eq(pthread_create(&g->opener, NULL, open_after, g), 0);
}

/* Whether the gate is open (a store was seen). */
bool rt_gate_is_open(const rt_gate *g) { return __atomic_load_n(g->flag, __ATOMIC_SEQ_CST) != 0; }

void rt_gate_free(rt_gate *g) {
  if (g->opening)
    pthread_join(g->opener, NULL);
  rt_sync(g->rt);
#ifdef T4A_TEST_HOST
  RT_OK(T->host_unregister(g->rt, g->hb));
  free(g->word);
#else
  rt_raw_unload(g->rt, g->module);
  RT_OK(T->host_free(g->rt, g->hb));
#endif
  memset(g, 0, sizeof *g);
}

uint64_t rt_address(t4a_runtime rt, t4a_buffer b) {
  uint64_t a = 0;
  RT_OK(T->buffer_device_address(rt, b, &a));
  return a;
}

#if T4A_GPU_BACKEND_ABI_MINOR >= 1
int32_t rt_dl_device(void) { return rt_on_host() ? T4A_DL_CPU : T4A_DL_CUDA; }

const t4a_dl_data_type RT_DL_F32 = {T4A_DL_FLOAT, 32, 1};

int rt_dl_deletes;
void *rt_dl_last_user;

void rt_dl_count_delete(void *user) {
  rt_dl_deletes++;
  rt_dl_last_user = user;
}

t4a_dlpack_export rt_dl_request(uint32_t flags, uint64_t offset, t4a_dl_data_type dt, int32_t ndim,
                                const int64_t *shape, const int64_t *strides) {
  t4a_dlpack_export q = {.struct_size = sizeof q,
                         .flags = flags,
                         .offset = offset,
                         .dtype = dt,
                         .ndim = ndim,
                         .shape = shape,
                         .strides = strides,
                         .on_delete = rt_dl_count_delete,
                         .user = &rt_dl_deletes};
  return q;
}

static void made_delete_v(t4a_dl_managed_tensor_versioned *t) {
  ((rt_dl_made *)t->manager_ctx)->deleted++;
}

static void made_delete_l(t4a_dl_managed_tensor *t) { ((rt_dl_made *)t->manager_ctx)->deleted++; }

void rt_dl_make(rt_dl_made *m, uint64_t data, uint64_t byte_offset, int32_t device_type,
                int32_t ndim, const int64_t *shape, const int64_t *strides, t4a_dl_data_type dt) {
  ck_assert(ndim >= 0 && ndim <= 3);
  memset(m, 0, sizeof *m);
  if (ndim)
    memcpy(m->shape, shape, (size_t)ndim * sizeof *shape);
  if (strides && ndim)
    memcpy(m->strides, strides, (size_t)ndim * sizeof *strides);
  t4a_dl_tensor t = {.data = (void *)(uintptr_t)data,
                     .device = {device_type, 0},
                     .ndim = ndim,
                     .dtype = dt,
                     .shape = m->shape,
                     .strides = strides ? m->strides : NULL,
                     .byte_offset = byte_offset};
  m->v = (t4a_dl_managed_tensor_versioned){{1, 1}, m, made_delete_v, 0, t};
  m->l = (t4a_dl_managed_tensor){t, m, made_delete_l};
}
#endif
