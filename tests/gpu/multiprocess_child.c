/* tests/gpu/multiprocess_child.c -- the children of test_multiprocess.c
 * (see multiprocess.h), and the work both sides check by themselves.
 *
 *   compile  reports "ready", waits for the go, compiles the axpy source
 *            through the disk cache, runs it, checks the result exactly and
 *            reports "ok <memory hits> <disk hits> <compiles> <rejected>"
 *   stats    the same compile, later: "stats <disk entries> <disk hits>
 *            <compiles> <rejected>"
 *   hog      holds nearly all device memory through one runtime, reports
 *            "full ...", destroys the runtime on 'r' ("freed"), exits on 'q'
 *   loop     copies and launches, checked, until killed; one progress byte
 *            per iteration */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/gpu/multiprocess.h"

/* What the compile test builds: its kernel's name is one the fake driver
 * runs on the CPU, so the fake lane checks results too. It names no file,
 * so it is cached. */
static const char axpy_source[] =
    "extern \"C\" __global__ void t4a_axpy_f32(unsigned long long n, float a, const float *x,\n"
    "                                          float *y) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0 && write(4, buf, (size_t)n) != n)
    _exit(3);
}

void mp_child_check(const char *what, int rc) {
  if (rc == T4A_OK)
    return;
  fprintf(stderr, "child %d: %s: %s: %s\n", (int)getpid(), what, t4a_status_name(rc),
          t4a_test_backend_error(T));
  say("fail %s\n", what);
  _exit(1);
}

#define CHILD_OK(expr) mp_child_check(#expr, (expr))

t4a_function mp_fill_function(t4a_runtime rt, mp_check_fn ok) {
  t4a_artifact a;
  t4a_module m;
  t4a_function f = {0};
  const char *ptx = rt_test_ptx();
  MP_STEP(ok, T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "t.ptx", &a));
  MP_STEP(ok, T->module_load(rt, a, &m));
  MP_STEP(ok, T->function_get(rt, m, "t4a_fill_u32", &f));
  MP_STEP(ok, T->artifact_release(a));
  return f;
}

bool mp_round_trip(t4a_runtime rt, t4a_function f, t4a_buffer b, uint64_t words, uint64_t seed,
                   mp_check_fn ok) {
  uint32_t *in = malloc(words * 4), *out = malloc(words * 4);
  if (!in || !out) {
    free(in);
    free(out);
    return false;
  }
  t4a_test_fill_random(in, words * 4, seed);
  uint64_t first = seed % (words / 2), n = words / 4, addr = 0;
  uint32_t v = (uint32_t)(seed >> 7);
  MP_STEP(ok, T->copy_h2d(rt, b, 0, in, words * 4));
  MP_STEP(ok, T->buffer_device_address(rt, b, &addr));
  uint64_t p = addr + 4 * first;
  void *args[] = {&p, &v, &n};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {16, 1, 1}, .block = {128, 1, 1}};
  MP_STEP(ok, T->launch(rt, f, &c, args));
  MP_STEP(ok, T->copy_d2h(rt, out, b, 0, words * 4));
  for (uint64_t k = first; k < first + n; k++)
    in[k] = v;
  bool same = memcmp(in, out, words * 4) == 0;
  free(in);
  free(out);
  return same;
}

uint64_t mp_hold_everything(t4a_runtime rt, uint64_t chunk, uint64_t min, int *status) {
  uint64_t held = 0;
  *status = T4A_OK;
  while (chunk >= min) {
    t4a_buffer b;
    int rc = T->buffer_alloc(rt, chunk, &b);
    if (rc == T4A_OK) {
      held += chunk;
    } else if (rc == T4A_ENOMEM) {
      chunk /= 2;
    } else {
      *status = rc;
      break;
    }
  }
  return held;
}

static t4a_artifact compile_axpy(void) {
  t4a_compile_options o = {.struct_size = sizeof o, .source = axpy_source, .name = "axpy.cu"};
  t4a_artifact a = {0};
  CHILD_OK(T->artifact_compile(&o, &a));
  return a;
}

/* Loads the artifact and computes y = 3 x + y on floats that make it exact. */
static void axpy_checks(t4a_runtime rt, t4a_artifact a) {
  enum { N = 4096 };
  static float x[N], y[N];
  t4a_module m;
  t4a_function f;
  t4a_buffer bx, by;
  uint64_t px, py, n = N;
  float alpha = 3.0f;
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = (float)(2 * i);
  }
  CHILD_OK(T->module_load(rt, a, &m));
  CHILD_OK(T->function_get(rt, m, "t4a_axpy_f32", &f));
  CHILD_OK(T->buffer_alloc(rt, sizeof x, &bx));
  CHILD_OK(T->buffer_alloc(rt, sizeof y, &by));
  CHILD_OK(T->copy_h2d(rt, bx, 0, x, sizeof x));
  CHILD_OK(T->copy_h2d(rt, by, 0, y, sizeof y));
  CHILD_OK(T->buffer_device_address(rt, bx, &px));
  CHILD_OK(T->buffer_device_address(rt, by, &py));
  void *args[] = {&n, &alpha, &px, &py};
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {8, 1, 1}, .block = {256, 1, 1}};
  CHILD_OK(T->launch(rt, f, &c, args));
  CHILD_OK(T->copy_d2h(rt, y, by, 0, sizeof y));
  for (int i = 0; i < N; i++)
    if (y[i] != (float)(5 * i))
      mp_child_check("axpy result", T4A_EINTERNAL);
}

static int compile_role(t4a_runtime rt, bool later) {
  char go;
  if (!later) { /* initialised: now all start together */
    say("ready\n");
    if (read(3, &go, 1) != 1)
      return 4;
  }
  t4a_artifact a = compile_axpy();
  axpy_checks(rt, a);
  CHILD_OK(T->artifact_release(a));
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  CHILD_OK(T->compile_cache_stats(&s));
  if (!later)
    say("ok %llu %llu %llu %llu\n", (unsigned long long)s.memory_hits,
        (unsigned long long)s.disk_hits, (unsigned long long)s.misses,
        (unsigned long long)s.disk_rejected);
  else
    say("stats %llu %llu %llu %llu\n", (unsigned long long)s.disk_entries,
        (unsigned long long)s.disk_hits, (unsigned long long)s.misses,
        (unsigned long long)s.disk_rejected);
  return 0;
}

static int hog_role(t4a_runtime rt) {
  char cmd;
  int status;
  uint64_t held = mp_hold_everything(rt, 1ull << 30, MiB, &status);
  CHILD_OK(status);
  say("full %llu MiB held\n", (unsigned long long)(held / MiB));
  if (read(3, &cmd, 1) != 1 || cmd != 'r')
    return 5;
  /* its pool is trimmed and kept as a spare part: the memory goes back */
  CHILD_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  say("freed\n");
  if (read(3, &cmd, 1) != 1 || cmd != 'q')
    return 6;
  return 0;
}

static int loop_role(t4a_runtime rt) {
  t4a_function f = mp_fill_function(rt, mp_child_check);
  t4a_buffer b;
  CHILD_OK(T->buffer_alloc(rt, 4 * MiB, &b));
  say("running\n");
  fcntl(4, F_SETFL, O_NONBLOCK);
  for (uint64_t i = 1;; i++) {
    struct pollfd p = {3, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) /* the parent went away */
      return 7;
    if (!mp_round_trip(rt, f, b, MiB - 1, i, mp_child_check))
      mp_child_check("round trip data", T4A_EINTERNAL);
    if (write(4, "x", 1) < 0) { /* a full pipe is fine: the parent reads when it likes */
    }
  }
}

int mp_child_main(const char *role) {
  B = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &B) != T4A_OK)
    return 2;
  T = t4a_gpu_backend_table(B);
  CHILD_OK(T->init());
  t4a_runtime rt;
  CHILD_OK(T->runtime_create(0, NULL, &rt));
  int rc = strcmp(role, "compile") == 0 ? compile_role(rt, false)
           : strcmp(role, "stats") == 0 ? compile_role(rt, true)
           : strcmp(role, "hog") == 0   ? hog_role(rt)
           : strcmp(role, "loop") == 0  ? loop_role(rt)
                                        : 8;
  if (rc == 0 && strcmp(role, "hog") != 0)
    CHILD_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  t4a_gpu_close(B);
  return rc;
}
