/* tests/cpu/test_fault_sweep.c -- fault injection on every driver call.
 *
 * A scenario exercises most of the table (runtimes on two devices, memory,
 * pinned memory, every kind of copy, code and launch, a captured graph
 * replayed and updated, extended launches, occupancy, a stream priority,
 * seal and wait, external memory, a DLPack import, waits on a consumer's
 * stream, free and destroy). A clean run counts how often it calls each
 * driver entry point the plugin resolves. Then, for every entry point and
 * every N up to that count, a fresh process runs the scenario with the Nth
 * call failing (FAKE_CUDA_FAIL). Each run must: not crash, return only
 * statuses from the list, and, when every destroy succeeded, leave no driver
 * object alive (the fake driver counts them; under the ASan lane
 * LeakSanitizer checks host memory too), and must have called every external
 * release and DLPack deleter it was handed exactly once (never twice in any
 * run). A run that hits a sticky fault may quarantine, and must say so
 * through its statuses. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin-cuda/cuda_decls.h"
#include "tests/runtime/rtutil.h"

static const char *const entry_points[] = {
#define NAME(name, sym, req, params) #name,
    T4A__CUDA_FUNCS(NAME)
#undef NAME
};
#define N_ENTRY (sizeof entry_points / sizeof entry_points[0])

/* Exit codes of a scenario process. */
enum { RUN_OK = 0, RUN_UNKNOWN_STATUS = 10, RUN_LEAK = 11, RUN_SETUP = 12, RUN_RELEASE = 13 };

/* Interop: how often the external buffer's release and the imported
 * tensor's deleter ran, and whether they were handed over at all. */
static int ext_released, tensor_deleted, ext_wrapped, tensor_imported;
static void on_release(void *user) { ++*(int *)user; }
static void on_delete(t4a_dl_managed_tensor *t) { ++*(int *)t->manager_ctx; }

static int bad_status; /* a status outside the list was seen */
static int destroy_failed;

static int check(int rc) {
  if (rc > 0 || rc < T4A_EINTERNAL)
    bad_status = 1;
  return rc;
}

static void scenario(const t4a_gpu_backend_v1 *t) {
  if (check(t->init()))
    return;
  t4a_runtime a = {0}, b = {0}, c = {0};
  t4a_runtime_options o = {.struct_size = sizeof o, .staging_bytes = 262144u};
  check(t->runtime_create(0, &o, &a));
  check(t->runtime_create(0, &o, &b));
  o.stream_priority = -1; /* a stream with a priority */
  check(t->runtime_create(1, &o, &c));
  t4a_buffer x = {0}, y = {0}, z = {0}, w = {0};
  enum { SIZE = 256 * 1024 + 3 }; /* two staging chunks and a bit */
  check(t->buffer_alloc(a, SIZE, &x));
  check(t->buffer_alloc(a, SIZE, &y));
  check(t->buffer_alloc(b, SIZE, &z));
  check(t->buffer_alloc(c, SIZE, &w));
  t4a_host_buffer h = {0};
  void *p = NULL;
  check(t->host_alloc(a, SIZE, 0, &h, &p));
  static char page[SIZE];
  check(t->copy_h2d(a, x, 0, page, sizeof page));
  check(t->copy_h2d_pinned(a, y, 0, h, 0, 4096));
  check(t->copy_d2h_pinned(a, h, 0, x, 0, 4096));
  check(t->copy_d2d(a, y, 0, x, 0, SIZE));
  check(t->copy_from_runtime(b, z, 0, a, x, 0, SIZE));
  check(t->copy_from_peer(c, w, 0, a, x, 0, SIZE));
  check(t->copy_from_peer_via_host(c, w, 0, b, z, 0, SIZE));
  t4a_artifact art = {0};
  t4a_module m = {0};
  t4a_function f = {0};
  check(t->artifact_from_bytes(T4A_ARTIFACT_PTX, rt_test_ptx(), strlen(rt_test_ptx()), "t", &art));
  check(t->module_load(a, art, &m));
  check(t->function_get(a, m, "t4a_fill_u32", &f));
  uint64_t addr = 0, n = 1024;
  uint32_t v = 7;
  check(t->buffer_device_address(a, x, &addr));
  void *args[] = {&addr, &v, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {64, 1, 1}};
  check(t->launch(a, f, &cfg, args));
  /* interop: b's memory wrapped by a, x imported into b as a DLPack
   * tensor, b's stream as a consumer's */
  uint64_t zaddr = 0;
  t4a_buffer e = {0}, imp = {0};
  check(t->buffer_device_address(b, z, &zaddr));
  t4a_external_memory em = {.struct_size = sizeof em,
                            .address = zaddr,
                            .bytes = 4096,
                            .release = on_release,
                            .user = &ext_released};
  if (zaddr && check(t->buffer_wrap_external(a, &em, &e)) == T4A_OK)
    ext_wrapped = 1;
  check(t->copy_d2d(a, e, 0, x, 0, 4096));
  static int64_t shape[1] = {1024};
  static t4a_dl_managed_tensor tensor;
  tensor = (t4a_dl_managed_tensor){
      {(void *)(uintptr_t)addr, {T4A_DL_CUDA, 0}, 1, {T4A_DL_FLOAT, 32, 1}, shape, NULL, 0},
      &tensor_deleted,
      on_delete};
  if (addr && check(t->dlpack_import(b, &tensor, 0, &imp, NULL)) == T4A_OK)
    tensor_imported = 1;
  t4a_raw_runtime rawb = {.struct_size = sizeof rawb};
  check(t->raw_runtime(b, &rawb));
  if (rawb.stream)
    check(t->runtime_wait_stream(a, rawb.stream));
  /* a graph of a launch and a copy, replayed and updated; extended launches */
  t4a_graph g = {0};
  check(t->graph_begin(a));
  check(t->launch(a, f, &cfg, args));
  check(t->copy_d2d(a, y, 0, x, 0, 4096));
  check(t->graph_end(a, &g));
  check(t->graph_launch(a, g));
  check(t->graph_set_kernel_args(a, g, 0, args));
  t4a_launch_ex_config ex = {.struct_size = sizeof ex,
                             .flags = T4A_LAUNCH_COOPERATIVE,
                             .grid = {2, 1, 1},
                             .block = {64, 1, 1},
                             .cluster = {2, 1, 1}};
  check(t->launch_ex(a, f, &ex, args));
  uint32_t per_sm = 0, block = 0, grid = 0;
  check(t->occupancy_max_active_blocks(a, f, 128, 0, &per_sm));
  check(t->occupancy_suggest_block_size(a, f, 0, 0, &block, &grid));
  t4a_witness wa = {0}, wc = {0};
  check(t->seal(a, &wa));
  if (rawb.stream)
    check(t->stream_wait_witness(a, rawb.stream, wa));
  check(t->buffer_free(a, e));
  check(t->buffer_free(b, imp));
  check(t->runtime_wait_witness(c, wa));
  check(t->seal(c, &wc));
  check(t->witness_wait(wa, T4A_WAIT_FOREVER));
  check(t->witness_wait(wc, T4A_WAIT_FOREVER));
  check(t->copy_d2h(a, page, x, 0, SIZE));
  check(t->witness_release(wa));
  check(t->witness_release(wc));
  if (g.bits && check(t->graph_release(a, g)) != T4A_OK)
    destroy_failed = 1; /* a release that fails keeps its object, saying so */
  check(t->module_unload(a, m));
  check(t->artifact_release(art));
  check(t->host_free(a, h));
  check(t->buffer_free(a, x));
  check(t->buffer_free(b, z));
  check(t->cache_trim(a, 0));
  t4a_runtime all[3] = {a, b, c};
  for (int i = 0; i < 3; i++)
    if (all[i].bits && check(t->runtime_destroy(all[i], T4A_WAIT_FOREVER)) != T4A_OK)
      destroy_failed = 1;
}

/* Runs the scenario in this process; returns the exit code. With `counts`,
 * writes each entry point's call count to it. */
static int run(FILE *counts) {
  t4a_gpu_backend *backend = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &backend))
    return RUN_SETUP;
  scenario(t4a_gpu_backend_table(backend));
  void *fake = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  uint64_t (*live)(const char *), (*graph_stat)(const char *);
  uint64_t (*calls)(const char *);
  *(void **)&live = fake ? dlsym(fake, "fake_cuda_live") : NULL;
  *(void **)&graph_stat = fake ? dlsym(fake, "fake_cuda_graph_stat") : NULL;
  *(void **)&calls = fake ? dlsym(fake, "fake_cuda_calls") : NULL;
  /* Closing unloads the plugin, which releases the spare parts of destroyed
   * runtimes (spare.c): those calls are swept too. A release that fails
   * there has no status to report it and keeps its object: no leak check
   * then. */
  char failing[64] = "";
  unsigned long long index = 0;
  const char *inj = getenv("FAKE_CUDA_FAIL");
  if (inj)
    sscanf(inj, "%63[^:]:%llu", failing, &index);
  uint64_t before_close = calls && *failing ? calls(failing) : 0;
  t4a_gpu_close(backend);
  if (calls && *failing && index > before_close && index <= calls(failing))
    destroy_failed = 1;
  int code = bad_status ? RUN_UNKNOWN_STATUS : RUN_OK;
  /* never twice, never without a handover; exactly once when every destroy
   * succeeded (after a fault the memory is quarantined: never) */
  if (ext_released > ext_wrapped || tensor_deleted > tensor_imported ||
      (!destroy_failed && (ext_released != ext_wrapped || tensor_deleted != tensor_imported))) {
    fprintf(stderr, "release %d/%d, deleter %d/%d\n", ext_released, ext_wrapped, tensor_deleted,
            tensor_imported);
    code = RUN_RELEASE;
  }
  if (live && !destroy_failed && code == RUN_OK) {
    static const char *const kinds[] = {"device", "host", "stream", "event", "pool", "module"};
    for (int i = 0; i < 6; i++)
      if (live(kinds[i])) {
        fprintf(stderr, "%llu %s objects left\n", (unsigned long long)live(kinds[i]), kinds[i]);
        code = RUN_LEAK;
      }
    static const char *const graph_kinds[] = {"graph", "exec"};
    for (int i = 0; graph_stat && i < 2; i++)
      if (graph_stat(graph_kinds[i])) {
        fprintf(stderr, "%llu %s objects left\n", (unsigned long long)graph_stat(graph_kinds[i]),
                graph_kinds[i]);
        code = RUN_LEAK;
      }
  }
  if (counts && calls)
    for (size_t i = 0; i < N_ENTRY; i++)
      fprintf(counts, "%llu\n", (unsigned long long)calls(entry_points[i]));
  return code;
}

/* Forks a process for one run; returns its exit code (or 128 + signal). */
static int spawn(const char *inject, uint64_t counts[N_ENTRY]) {
  char path[] = "/tmp/t4a-sweep-XXXXXX";
  int fd = counts ? mkstemp(path) : -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (inject)
      setenv("FAKE_CUDA_FAIL", inject, 1);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int code = run(f);
    if (f)
      fclose(f);
    exit(code); /* exit, not _exit: LeakSanitizer checks at exit */
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (fd >= 0) {
    FILE *f = fopen(path, "r");
    for (size_t i = 0; f && i < N_ENTRY; i++) {
      unsigned long long v = 0;
      if (fscanf(f, "%llu", &v) == 1)
        counts[i] = v;
    }
    if (f)
      fclose(f);
    close(fd);
    unlink(path);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void sweep(unsigned code) {
  uint64_t counts[N_ENTRY] = {0};
  ck_assert_int_eq(spawn(NULL, counts), RUN_OK); /* the clean run works and leaks nothing */
  uint64_t total = 0, runs = 0;
  for (size_t i = 0; i < N_ENTRY; i++) {
    total += counts[i];
    for (uint64_t n = 1; n <= counts[i]; n++) {
      char inject[96];
      snprintf(inject, sizeof inject, "%s:%llu:%u", entry_points[i], (unsigned long long)n, code);
      int rc = spawn(inject, NULL);
      ck_assert_msg(rc == RUN_OK, "failing call %llu of %s with %u: exit %d (%s)",
                    (unsigned long long)n, entry_points[i], code, rc,
                    rc == RUN_UNKNOWN_STATUS ? "a status outside the list"
                    : rc == RUN_LEAK         ? "driver objects left behind"
                    : rc == RUN_RELEASE      ? "a release or deleter ran twice, or not once"
                    : rc >= 128              ? "crashed"
                                             : "setup failed");
      runs++;
    }
  }
  ck_assert_uint_gt(total, 100);
  printf("code %u: %llu injected failures over %llu driver calls, all typed and clean\n", code,
         (unsigned long long)runs, (unsigned long long)total);
}

START_TEST(every_call_fails_cleanly_with_an_unknown_error) { sweep(999); }
END_TEST

START_TEST(every_call_fails_cleanly_with_out_of_memory) { sweep(2); }
END_TEST

START_TEST(every_call_fails_cleanly_with_a_device_fault) { sweep(700); }
END_TEST

int main(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_CACHE_DIR", "", 1);
  if (getenv("T4A_SWEEP_ONE")) /* reproduce one run: T4A_SWEEP_ONE=1 FAKE_CUDA_FAIL=name:N:code */
    return run(NULL);
  Suite *s = suite_create("fault-sweep");
  TCase *tc = tcase_create("sweep");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, every_call_fails_cleanly_with_an_unknown_error);
  tcase_add_test(tc, every_call_fails_cleanly_with_out_of_memory);
  tcase_add_test(tc, every_call_fails_cleanly_with_a_device_fault);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
