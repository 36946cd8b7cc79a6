/* tests/runtime/test_fork.c -- fork() detection (ABI 1.2), in every lane
 * (fake driver, host backend, GPU).
 *
 * After fork() every slot the child calls on a backend the parent set up
 * returns T4A_EFORKED, naming fork in its detail, at once (a child that
 * hangs for 20 s fails), without a driver call (fake: the driver's call
 * count does not move); the child's exit (destructors included) returns
 * cleanly; the parent's runtime, buffer contents, witness and graph work on
 * as before. A backend the parent only loaded works in the child. Each
 * child reports the slots that answered otherwise through a pipe. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/runtime/rtutil.h"

#define BYTES 65536u

/* ---- a child, watched with a bound ------------------------------------------------------- */

typedef struct child {
  pid_t pid;
  int fd; /* the read end of its report */
  char report[4096];
} child;

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Forks; in the child runs fn(arg, report fd) and exits with its result
 * through exit() (the plugins' destructors run). */
static void spawn(child *c, int (*fn)(void *, FILE *), void *arg) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  fflush(NULL);
  c->pid = fork();
  ck_assert_int_ge(c->pid, 0);
  if (c->pid == 0) {
    close(p[0]);
    FILE *out = fdopen(p[1], "w");
    int rc = out ? fn(arg, out) : 99;
    if (out)
      fclose(out);
    exit(rc);
  }
  close(p[1]);
  c->fd = p[0];
}

/* Its exit status (-1: it hung past the bound and was killed). */
static int reap(child *c) {
  const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
  long bound_ms = 20000L * (m && atoi(m) > 1 ? atoi(m) : 1);
  int status = 0;
  pid_t r = 0;
  for (long waited = 0; (r = waitpid(c->pid, &status, WNOHANG)) == 0 && waited < bound_ms;
       waited += 10)
    pause_ms(10);
  if (r == 0) {
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &status, 0);
  }
  ssize_t n, got = 0;
  while (got < (ssize_t)sizeof c->report - 1 &&
         (n = read(c->fd, c->report + got, sizeof c->report - 1 - (size_t)got)) > 0)
    got += n;
  c->report[got > 0 ? got : 0] = 0;
  close(c->fd);
  if (r == 0)
    return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- what the parent set up before the fork ------------------------------------------------ */

typedef struct scene {
  t4a_runtime rt, other;
  t4a_buffer buf, spare;
  t4a_host_buffer hb;
  void *host;
  t4a_witness w;
  t4a_graph g;
  t4a_artifact art; /* CUDA: the test PTX; host: none (null handles) */
  t4a_module mod;
  t4a_function fn;
  unsigned char data[BYTES];
} scene;

static void scene_open(scene *s) {
  memset(s, 0, sizeof *s);
  s->rt = rt_create();
  s->other = rt_create();
  t4a_test_fill_random(s->data, sizeof s->data, t4a_test_seed());
  RT_OK(T->buffer_alloc(s->rt, BYTES, &s->buf));
  RT_OK(T->buffer_alloc(s->rt, BYTES, &s->spare));
  RT_OK(T->copy_h2d(s->rt, s->buf, 0, s->data, BYTES));
  RT_OK(T->host_alloc(s->rt, 4096, 0, &s->hb, &s->host));
  /* a graph: memset of the spare buffer */
  RT_OK(T->graph_begin(s->rt));
  RT_OK(T->memset(s->rt, s->spare, 0, 0x5au, 1, BYTES));
  RT_OK(T->graph_end(s->rt, &s->g));
  if (!rt_on_host()) {
    const char *ptx = rt_test_ptx();
    RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx) + 1, "fork.ptx", &s->art));
    RT_OK(T->module_load(s->rt, s->art, &s->mod));
    RT_OK(T->function_get(s->rt, s->mod, "t4a_fill_u32", &s->fn));
  }
  RT_OK(T->seal(s->rt, &s->w));
  RT_OK(T->witness_wait(s->w, T4A_WAIT_FOREVER)); /* idle: no worker is mid-operation */
}

/* ---- the child's sweep: every slot, on what the parent made --------------------------------- */

typedef struct sweep {
  FILE *out;
  int wrong;
} sweep;

static void expect_forked(sweep *sw, const char *slot, int rc) {
  if (rc == T4A_EFORKED) {
    t4a_error_info e = {.struct_size = sizeof e};
    if (T->last_error(&e) != T4A_OK || e.status != T4A_EFORKED || !strstr(e.message, "fork()")) {
      fprintf(sw->out, "%s: last_error says %s '%s' ", slot, t4a_status_name(e.status), e.message);
      sw->wrong++;
    }
    return;
  }
  fprintf(sw->out, "%s=%s ", slot, t4a_status_name(rc));
  sw->wrong++;
}

#define SWEEP(slot, ...)                                                                           \
  do {                                                                                             \
    if (T->slot)                                                                                   \
      expect_forked(sw, #slot, T->slot(__VA_ARGS__));                                              \
  } while (0)

static uint64_t fake_total(void) {
  if (!rt_on_fake())
    return 0;
  uint64_t (*f)(void);
  *(void **)&f = rt_driver("fake_cuda_call_total");
  return f();
}

static int sweep_all(void *arg, FILE *out) {
  const scene *s = arg;
  sweep st = {out, 0}, *sw = &st;
  uint64_t calls = fake_total();
  t4a_runtime rt = s->rt, o = s->other, nrt;
  t4a_buffer b = s->buf, x = s->spare, nb;
  t4a_host_buffer hb = s->hb, nhb;
  t4a_witness w = s->w, nw;
  t4a_graph g = s->g, ng;
  t4a_artifact a = s->art, na;
  t4a_module m = s->mod, nm;
  t4a_function f = s->fn, nf;
  unsigned char byte[64];
  void *p = NULL;
  uint64_t u = 0;
  int32_t count = 0;
  bool yes = false;
  uint32_t u1 = 0, u2 = 0;
  t4a_device_info di = {.struct_size = sizeof di};
  t4a_compiler_info ci = {.struct_size = sizeof ci};
  t4a_runtime_counters rc = {.struct_size = sizeof rc};
  t4a_cache_stats cs = {.struct_size = sizeof cs};
  t4a_compile_cache_stats ccs = {.struct_size = sizeof ccs};
  t4a_memory_info mi = {.struct_size = sizeof mi};
  t4a_runtime_info ri = {.struct_size = sizeof ri};
  t4a_graph_info gi = {.struct_size = sizeof gi};
  t4a_function_attributes fa = {.struct_size = sizeof fa};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  t4a_launch_ex_config ex = {.struct_size = sizeof ex, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  t4a_raw_section sec = {.struct_size = sizeof sec};
  t4a_copy_2d g2 = {
      .struct_size = sizeof g2, .dst_pitch = 8, .src_pitch = 8, .width = 8, .rows = 2};
  t4a_compile_options co = {
      .struct_size = sizeof co, .source = "__global__ void k() {}", .device_ordinal = -1};
  t4a_external_memory em = {.struct_size = sizeof em,
                            .address = (uint64_t)(uintptr_t)byte,
                            .bytes = 1,
                            .flags = T4A_EXTERNAL_HOST,
                            .device_ordinal = -1};
  int64_t extent = 16;
  t4a_dlpack_export dx = {
      .struct_size = sizeof dx, .dtype = {T4A_DL_UINT, 8, 1}, .ndim = 1, .shape = &extent};
  t4a_dl_managed_tensor tensor = {
      {byte, {T4A_DL_CPU, 0}, 1, {T4A_DL_UINT, 8, 1}, &extent, NULL, 0}, NULL, NULL};
  void *stream = (void *)(uintptr_t)T4A_STREAM_LEGACY;
  const char *log = NULL;
  const void *data = NULL;
  t4a_artifact_kind kind;
  const char *ptx = rt_test_ptx();
  void *args[] = {&u};

  SWEEP(init);
  SWEEP(device_count, &count);
  SWEEP(device_info, 0, &di);
  SWEEP(compiler_info, &ci);
  SWEEP(peer_access_supported, 0, 0, &yes);
  SWEEP(runtime_create, 0, NULL, &nrt);
  SWEEP(runtime_counters, rt, &rc);
  SWEEP(buffer_alloc, rt, 16, &nb);
  SWEEP(buffer_size, rt, b, &u);
  SWEEP(cache_trim, rt, 0);
  SWEEP(cache_stats, rt, &cs);
  SWEEP(host_alloc, rt, 16, 0, &nhb, &p);
  SWEEP(copy_h2d_pinned, rt, b, 0, hb, 0, 16);
  SWEEP(copy_d2h_pinned, rt, hb, 0, b, 0, 16);
  SWEEP(copy_h2d, rt, b, 0, byte, 16);
  SWEEP(copy_d2h, rt, byte, b, 0, 16);
  SWEEP(copy_d2d, rt, x, 0, b, 0, 16);
  SWEEP(copy_from_runtime, o, x, 0, rt, b, 0, 16); /* x is rt's: refused first anyway */
  SWEEP(copy_from_peer, o, x, 0, rt, b, 0, 16);
  SWEEP(copy_from_peer_via_host, o, x, 0, rt, b, 0, 16);
  SWEEP(seal, rt, &nw);
  SWEEP(witness_query, w);
  SWEEP(witness_wait, w, T4A_WAIT_FOREVER);
  SWEEP(witness_retain, w);
  SWEEP(runtime_wait_witness, o, w);
  SWEEP(artifact_compile, &co, &na);
  SWEEP(artifact_from_bytes, T4A_ARTIFACT_PTX, ptx, strlen(ptx) + 1, "x.ptx", &na);
  SWEEP(artifact_log, a, &log, &u);
  SWEEP(artifact_data, a, &kind, &data, &u);
  SWEEP(compile_cache_stats, &ccs);
  SWEEP(compile_cache_clear, T4A_CACHE_MEMORY);
  SWEEP(module_load, rt, a, &nm);
  SWEEP(function_get, rt, m, "t4a_fill_u32", &nf);
  SWEEP(function_attributes, rt, f, &fa);
  SWEEP(function_set_max_dynamic_shared, rt, f, 0);
  SWEEP(launch, rt, f, &cfg, args);
  SWEEP(raw_runtime, rt, &raw);
  SWEEP(buffer_device_address, rt, b, &u);
  SWEEP(raw_function, rt, f, &p);
  SWEEP(raw_begin, rt, &sec);
  SWEEP(raw_end, rt, &sec);
  SWEEP(memset, rt, b, 0, 0, 1, 16);
  SWEEP(copy_2d_h2d_pinned, rt, b, hb, &g2);
  SWEEP(copy_2d_d2h_pinned, rt, hb, b, &g2);
  SWEEP(copy_2d_d2d, rt, x, b, &g2);
  SWEEP(copy_2d_h2d, rt, b, byte, &g2);
  SWEEP(copy_2d_d2h, rt, byte, b, &g2);
  SWEEP(runtime_memory_info, rt, &mi);
  SWEEP(host_register, rt, byte, sizeof byte, 0, &nhb);
  SWEEP(witness_elapsed, w, w, &u);
  SWEEP(runtime_info, rt, &ri);
  SWEEP(launch_ex, rt, f, &ex, args);
  SWEEP(occupancy_max_active_blocks, rt, f, 32, 0, &u1);
  SWEEP(occupancy_suggest_block_size, rt, f, 0, 0, &u1, &u2);
  SWEEP(occupancy_max_active_clusters, rt, f, &ex, &u1);
  SWEEP(graph_begin, rt);
  SWEEP(graph_end, rt, &ng);
  SWEEP(graph_launch, rt, g);
  SWEEP(graph_set_kernel_args, rt, g, 0, args);
  SWEEP(graph_info, rt, g, &gi);
  SWEEP(buffer_wrap_external, rt, &em, &nb);
  SWEEP(stream_wait_witness, rt, stream, w);
  SWEEP(runtime_wait_event, rt, stream);
  SWEEP(runtime_wait_stream, rt, stream);
  SWEEP(dlpack_export, rt, b, &dx, &p);
  SWEEP(dlpack_import, rt, &tensor, 0, &nb, &u);
  t4a_alloc_event ev;
  uint32_t evn = 0;
  SWEEP(alloc_log_read, rt, 0, &ev, 1, &evn, &u);
  t4a_ipc_buffer ib;
  t4a_ipc_witness iw;
  int fd = -1;
  memset(&ib, 0, sizeof ib);
  memset(&iw, 0, sizeof iw);
  SWEEP(buffer_export_ipc, rt, b, &ib, &fd);
  SWEEP(buffer_import_ipc, rt, &ib, -1, &nb);
  SWEEP(witness_export_ipc, w, &iw);
  SWEEP(runtime_wait_ipc_witness, rt, &iw);
  /* the releasing slots last: the parent's objects are not ours to free */
  SWEEP(graph_release, rt, g);
  SWEEP(host_unregister, rt, hb);
  SWEEP(host_free, rt, hb);
  SWEEP(buffer_free, rt, b);
  SWEEP(module_unload, rt, m);
  SWEEP(artifact_release, a);
  SWEEP(witness_release, w);
  SWEEP(runtime_destroy, rt, T4A_WAIT_FOREVER);
  SWEEP(runtime_destroy, o, 0);
  /* the two that touch nothing of the parent's still answer */
  t4a_backend_info bi = {.struct_size = sizeof bi};
  if (T->get_info(&bi) != T4A_OK) {
    fprintf(out, "get_info failed ");
    st.wrong++;
  }
  if (rt_on_fake() && fake_total() != calls) {
    fprintf(out, "the driver was called %llu times ", (unsigned long long)(fake_total() - calls));
    st.wrong++;
  }
  return st.wrong ? 1 : 0;
}

START_TEST(a_forked_child_gets_eforked_from_every_slot) {
  scene *s = malloc(sizeof *s);
  ck_assert_ptr_nonnull(s);
  scene_open(s);
  child c;
  spawn(&c, sweep_all, s);
  int status = reap(&c);
  ck_assert_msg(status != -1, "the forked child hung (killed after the bound): %s", c.report);
  ck_assert_msg(status == 0, "the child exited %d: %s", status, c.report);
  /* the parent is unaffected: its data, witness, graph, runtimes */
  unsigned char back[BYTES];
  RT_OK(T->copy_d2h(s->rt, back, s->buf, 0, BYTES));
  ck_assert(memcmp(back, s->data, BYTES) == 0);
  RT_OK(T->witness_wait(s->w, T4A_WAIT_FOREVER));
  RT_OK(T->graph_launch(s->rt, s->g));
  RT_OK(T->copy_d2h(s->rt, back, s->spare, 0, BYTES));
  for (unsigned i = 0; i < BYTES; i++)
    ck_assert_uint_eq(back[i], 0x5a);
  t4a_buffer y;
  RT_OK(T->buffer_alloc(s->other, BYTES, &y));
  RT_OK(T->copy_from_runtime(s->other, y, 0, s->rt, s->buf, 0, BYTES));
  RT_OK(T->copy_d2h(s->other, back, y, 0, BYTES));
  ck_assert(memcmp(back, s->data, BYTES) == 0);
  RT_OK(T->graph_release(s->rt, s->g));
  RT_OK(T->witness_release(s->w));
  if (s->mod.bits)
    RT_OK(T->module_unload(s->rt, s->mod));
  if (s->art.bits)
    RT_OK(T->artifact_release(s->art));
  RT_OK(T->host_free(s->rt, s->hb));
  RT_OK(T->runtime_destroy(s->rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(s->other, T4A_WAIT_FOREVER));
  free(s);
}
END_TEST

/* A second child forked while the parent's runtime has work queued behind a
 * gate: the child still gets T4A_EFORKED at once (no wait for the parent's
 * work), and the parent's gated work completes after. */
static int busy_child(void *arg, FILE *out) {
  const t4a_runtime *rt = arg;
  t4a_witness w;
  int a = T->seal(*rt, &w), b = T->runtime_destroy(*rt, T4A_WAIT_FOREVER);
  if (a != T4A_EFORKED || b != T4A_EFORKED) {
    fprintf(out, "seal=%s runtime_destroy=%s", t4a_status_name(a), t4a_status_name(b));
    return 1;
  }
  return 0;
}

START_TEST(a_child_forked_with_work_in_flight_does_not_wait_for_it) {
  t4a_runtime rt = rt_create();
  unsigned char in[BYTES], out[BYTES];
  t4a_test_fill_random(in, sizeof in, t4a_test_seed());
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, BYTES, &b));
  rt_gate g;
  rt_gate_close(&g, rt);
  void *hp;
  t4a_host_buffer hb;
  RT_OK(T->host_alloc(rt, BYTES, 0, &hb, &hp));
  memcpy(hp, in, BYTES);
  RT_OK(T->copy_h2d_pinned(rt, b, 0, hb, 0, BYTES)); /* behind the gate */
  child c;
  spawn(&c, busy_child, &rt);
  int status = reap(&c);
  rt_gate_open(&g);
  ck_assert_msg(status == 0, "the child exited %d: %s", status, c.report);
  RT_OK(T->copy_d2h(rt, out, b, 0, BYTES));
  ck_assert(memcmp(in, out, BYTES) == 0);
  rt_gate_free(&g);
  RT_OK(T->host_free(rt, hb));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- a backend the parent only loaded ---------------------------------------------------- */

static int fresh_child(void *arg, FILE *out) {
  (void)arg;
  int rc = T->init();
  t4a_runtime rt;
  if (rc || (rc = T->runtime_create(0, NULL, &rt))) {
    fprintf(out, "init/runtime_create: %s (%s)", t4a_status_name(rc), t4a_test_backend_error(T));
    return 1;
  }
  unsigned char in[4099], back[sizeof in];
  t4a_test_fill_random(in, sizeof in, 77);
  t4a_buffer b;
  if ((rc = T->buffer_alloc(rt, sizeof in, &b)) || (rc = T->copy_h2d(rt, b, 0, in, sizeof in)) ||
      (rc = T->copy_d2h(rt, back, b, 0, sizeof back)) || memcmp(in, back, sizeof in) != 0 ||
      (rc = T->runtime_destroy(rt, T4A_WAIT_FOREVER))) {
    fprintf(out, "round trip: %s (%s)", t4a_status_name(rc), t4a_test_backend_error(T));
    return 1;
  }
  return 0;
}

START_TEST(a_backend_only_loaded_before_the_fork_works_in_the_child) {
  B = rt_open(&T); /* loaded, not initialised */
  child c;
  spawn(&c, fresh_child, NULL);
  int status = reap(&c);
  ck_assert_msg(status == 0, "the child exited %d: %s", status, c.report);
  /* and in the parent, afterwards */
  ck_assert_int_eq(fresh_child(NULL, stderr), 0);
  ck_assert_int_eq(t4a_gpu_close(B), T4A_OK);
}
END_TEST

static Suite *suite(void) {
  Suite *s = rt_suite("fork");
  TCase *tc = rt_tcase(s, "fork", 60);
  tcase_add_test(tc, a_forked_child_gets_eforked_from_every_slot);
  tcase_add_test(tc, a_child_forked_with_work_in_flight_does_not_wait_for_it);
  TCase *fresh = tcase_create("fresh"); /* no fixture: nothing initialised before the fork */
  tcase_set_timeout(fresh, 60);
  tcase_add_test(fresh, a_backend_only_loaded_before_the_fork_works_in_the_child);
  suite_add_tcase(s, fresh);
  return s;
}

int main(void) { return rt_run(suite(), 1); }
