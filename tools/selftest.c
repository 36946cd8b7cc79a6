/* tools/selftest.c -- t4a-gpu selftest: an end-to-end check of a backend on
 * each device, through the public table only (what a consumer would do):
 * runtime, device and pinned memory, pageable and pinned transfers both
 * ways, a run-time compiled axpy kernel, launch, seal and witness, results
 * checked against the CPU, and an orderly release of everything.
 *
 * One line per check (or one JSON document); the exit status says whether
 * every check passed (tools/cli.h). */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

/* The kernel the selftest compiles (grid-stride axpy). */
static const char axpy_source[] =
    "extern \"C\" __global__ void t4a_axpy_f32(unsigned long long n, float alpha,\n"
    "                                          const float *x, float *y) {\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    y[i] = alpha * x[i] + y[i];\n"
    "}\n";

enum { ELEMENTS = (1 << 20) + 3 }; /* 4 MiB and an odd tail */
static const float ALPHA = 1.75f;
static const uint64_t WAIT_NS = 60ull * 1000 * 1000 * 1000;

typedef struct run {
  const t4a_gpu_backend_v1 *t;
  const options *o;
  unsigned checks, failed; /* on the current device */
} run;

/* Reports one check: rc is its status (T4A_OK = passed); detail (printf
 * format) says what was checked or, on failure, adds to the backend's
 * detail. Returns whether it passed. */
__attribute__((format(printf, 4, 5))) static int check(run *r, const char *name, int rc,
                                                       const char *fmt, ...) {
  char detail[512] = "";
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
  }
  const char *why = rc == T4A_OK ? "" : rc > 0 ? "wrong result" : t4a__cli_backend_error(r->t);
  const char *status = rc > 0 ? "FAILED" : t4a_status_name(rc);
  if (r->o->json) {
    printf("%s{\"check\":\"%s\",\"status\":\"%s\",\"detail\":", r->checks ? "," : "", name, status);
    t4a__cli_json_str(detail);
    printf(",\"reason\":");
    t4a__cli_json_str(why);
    putchar('}');
  } else {
    printf("  %-4s  %s%s%s", rc == T4A_OK ? "ok" : "FAIL", name, *detail ? ": " : "", detail);
    if (rc != T4A_OK)
      printf(" -- %s%s%s", rc > 0 ? "" : status, rc > 0 || !*why ? "" : ": ", t4a__cli_text(why));
    putchar('\n');
  }
  r->checks++;
  if (rc != T4A_OK)
    r->failed++;
  return rc == T4A_OK;
}

/* Deterministic values in [-1, 1). */
static void fill(float *v, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((double)(seed >> 40) / (double)(1ull << 23)) - 1.0f;
  }
}

/* Whether two buffers hold the same bits (bit-exactness is the point, so
 * floats are compared as bytes, NaN payloads included). */
static int same_bits(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

/* Elements of got that differ from alpha * x + y by more than rounding. */
static size_t mismatches(const float *got, const float *x, const float *y, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double want = (double)ALPHA * (double)x[i] + (double)y[i];
    bad += !(fabs((double)got[i] - want) <= 1e-6 * fabs(want) + 1e-6);
  }
  return bad;
}

/* Every object a device's run creates, released in reverse order. */
typedef struct objects {
  t4a_runtime rt;
  t4a_buffer x, y;
  t4a_host_buffer pinned;
  float *pinned_ptr;
  t4a_artifact code;
  t4a_module module;
  t4a_witness done;
  float *hx, *hy, *back;
} objects;

/* The transfers, the kernel and the result checks. Stops at the first
 * failure (later checks would only repeat it). */

/* Without kernels: y = x on the device (copy_d2d), back through pinned
 * memory and a witness, then pageable, each compared bit for bit. */
static void queue_only(run *r, objects *b, size_t bytes) {
  const t4a_gpu_backend_v1 *t = r->t;
  memset(b->pinned_ptr, 0xff, bytes);
  if (!check(r, "copy_d2d", t->copy_d2d(b->rt, b->y, 0, b->x, 0, bytes), "y = x") ||
      !check(r, "copy_d2h_pinned", t->copy_d2h_pinned(b->rt, b->pinned, 0, b->y, 0, bytes),
             "y back, pinned") ||
      !check(r, "seal", t->seal(b->rt, &b->done), NULL) ||
      !check(r, "witness_wait", t->witness_wait(b->done, WAIT_NS), NULL) ||
      !check(r, "witness_query", t->witness_query(b->done), "ready after the wait") ||
      !check(r, "verify", same_bits(b->pinned_ptr, b->hx, bytes) ? T4A_OK : 1,
             "y came back bit-exact through pinned memory"))
    return;
  memset(b->back, 0xff, bytes);
  if (check(r, "copy_d2h", t->copy_d2h(b->rt, b->back, b->y, 0, bytes), "y back, pageable"))
    check(r, "verify", same_bits(b->back, b->hx, bytes) ? T4A_OK : 1,
          "pageable and pinned results are identical");
}

static void exercise(run *r, int32_t dev, objects *b) {
  const t4a_gpu_backend_v1 *t = r->t;
  const size_t n = ELEMENTS, bytes = n * sizeof(float);
  if (!check(r, "buffer_alloc", t->buffer_alloc(b->rt, bytes, &b->x), "x: %zu bytes", bytes) ||
      !check(r, "buffer_alloc", t->buffer_alloc(b->rt, bytes, &b->y), "y: %zu bytes", bytes))
    return;
  void *p = NULL;
  if (!check(r, "host_alloc", t->host_alloc(b->rt, bytes, 0, &b->pinned, &p), "%zu bytes pinned",
             bytes))
    return;
  b->pinned_ptr = p;
  fill(b->hx, n, 1000u + (uint64_t)dev);
  fill(b->hy, n, 2000u + (uint64_t)dev);
  memcpy(b->pinned_ptr, b->hy, bytes);
  if (!check(r, "copy_h2d", t->copy_h2d(b->rt, b->x, 0, b->hx, bytes), "x, pageable") ||
      !check(r, "copy_h2d_pinned", t->copy_h2d_pinned(b->rt, b->y, 0, b->pinned, 0, bytes),
             "y, pinned"))
    return;
  memset(b->back, 0xff, bytes); /* poisoned: NaNs */
  if (!check(r, "copy_d2h", t->copy_d2h(b->rt, b->back, b->x, 0, bytes), "x back, pageable") ||
      !check(r, "round trip", same_bits(b->back, b->hx, bytes) ? T4A_OK : 1,
             "x came back bit-exact"))
    return;

  t4a_compile_options opts = {.struct_size = sizeof opts,
                              .source = axpy_source,
                              .name = "t4a_selftest_axpy.cu",
                              .device_ordinal = dev};
  t4a_function axpy;
  uint64_t px = 0, py = 0;
  int crc = t->artifact_compile(&opts, &b->code);
  if (crc == T4A_EUNSUPPORTED) { /* a backend without kernels: the queue alone */
    if (!r->o->json)
      printf("  skip  artifact_compile: %s\n", t4a__cli_text(t4a__cli_backend_error(t)));
    queue_only(r, b, bytes);
    return;
  }
  /* the compiler by backend: NVRTC, or the host backend's host C++ compiler */
  bool host = t->name && strcmp(t->name, "host") == 0;
  if (!check(r, "artifact_compile", crc, host ? "axpy, the host C++ compiler" : "axpy, NVRTC") ||
      !check(r, "module_load", t->module_load(b->rt, b->code, &b->module), NULL) ||
      !check(r, "function_get", t->function_get(b->rt, b->module, "t4a_axpy_f32", &axpy),
             "t4a_axpy_f32") ||
      !check(r, "buffer_device_address", t->buffer_device_address(b->rt, b->x, &px), NULL) ||
      !check(r, "buffer_device_address", t->buffer_device_address(b->rt, b->y, &py), NULL))
    return;
  unsigned long long count = n;
  float alpha = ALPHA;
  void *args[] = {&count, &alpha, &px, &py};
  t4a_launch_config cfg = {
      .struct_size = sizeof cfg, .grid = {(uint32_t)((n + 255) / 256), 1, 1}, .block = {256, 1, 1}};
  memset(b->pinned_ptr, 0xff, bytes);
  if (!check(r, "launch", t->launch(b->rt, axpy, &cfg, args), "%u x 256 threads", cfg.grid[0]) ||
      !check(r, "copy_d2h_pinned", t->copy_d2h_pinned(b->rt, b->pinned, 0, b->y, 0, bytes),
             "y back, pinned") ||
      !check(r, "seal", t->seal(b->rt, &b->done), NULL) ||
      !check(r, "witness_wait", t->witness_wait(b->done, WAIT_NS), NULL) ||
      !check(r, "witness_query", t->witness_query(b->done), "ready after the wait"))
    return;
  size_t bad = mismatches(b->pinned_ptr, b->hx, b->hy, n);
  if (!check(r, "verify", bad ? 1 : T4A_OK, "%zu of %zu elements %s", bad ? bad : n, n,
             bad ? "differ from the CPU" : "match the CPU"))
    return;
  memset(b->back, 0xff, bytes);
  if (check(r, "copy_d2h", t->copy_d2h(b->rt, b->back, b->y, 0, bytes), "y back, pageable"))
    check(r, "verify", same_bits(b->back, b->pinned_ptr, bytes) ? T4A_OK : 1,
          "pageable and pinned results are identical");
}

/* Releases what b holds, each once, checking each release. */
static void release(run *r, objects *b) {
  const t4a_gpu_backend_v1 *t = r->t;
  if (b->done.bits)
    check(r, "witness_release", t->witness_release(b->done), NULL);
  if (b->module.bits)
    check(r, "module_unload", t->module_unload(b->rt, b->module), NULL);
  if (b->code.bits)
    check(r, "artifact_release", t->artifact_release(b->code), NULL);
  if (b->pinned.bits)
    check(r, "host_free", t->host_free(b->rt, b->pinned), NULL);
  if (b->x.bits)
    check(r, "buffer_free", t->buffer_free(b->rt, b->x), "x");
  if (b->y.bits)
    check(r, "buffer_free", t->buffer_free(b->rt, b->y), "y");
  if (b->rt.bits)
    check(r, "runtime_destroy", t->runtime_destroy(b->rt, WAIT_NS), NULL);
}

/* Runs every check on device dev; returns whether all passed. */
static int selftest_device(run *r, int32_t dev, int first) {
  const t4a_gpu_backend_v1 *t = r->t;
  t4a_device_info info;
  int rc = t4a__cli_device_info(t, dev, &info);
  const char *name = rc == T4A_OK ? info.name : "?";
  if (r->o->json) {
    printf("%s{\"ordinal\":%d,\"name\":", first ? "" : ",", (int)dev);
    t4a__cli_json_str(name);
    printf(",\"checks\":[");
  } else {
    printf("device %d: %s\n", (int)dev, t4a__cli_text(name));
  }
  r->checks = r->failed = 0;
  objects b = {.hx = malloc(ELEMENTS * sizeof(float)),
               .hy = malloc(ELEMENTS * sizeof(float)),
               .back = malloc(ELEMENTS * sizeof(float))};
  if (!check(r, "host memory", b.hx && b.hy && b.back ? T4A_OK : T4A_ENOMEM, NULL))
    goto out;
  if (check(r, "runtime_create", t->runtime_create(dev, NULL, &b.rt), NULL))
    exercise(r, dev, &b);
  release(r, &b);
out:
  free(b.hx);
  free(b.hy);
  free(b.back);
  if (r->o->json)
    printf("],\"passed\":%s}", r->failed ? "false" : "true");
  else if (r->failed)
    printf("device %d: FAILED (%u of %u checks)\n", (int)dev, r->failed, r->checks);
  else
    printf("device %d: passed (%u checks)\n", (int)dev, r->checks);
  return r->failed == 0;
}

/* Reports why nothing was tested; returns exit_code. */
static int unusable(const options *o, int status, const char *why, int exit_code) {
  if (o->json) {
    printf("\"status\":\"%s\",\"reason\":", t4a_status_name(status));
    t4a__cli_json_str(why);
    printf(",\"passed\":false");
  } else {
    printf("selftest: not run: %s: %s\n", t4a_status_name(status), t4a__cli_text(why));
  }
  return exit_code;
}

int t4a__cli_selftest(const options *o) {
  if (o->json)
    printf("{\"selftest\":{");
  t4a_gpu_backend *backend = NULL;
  int rc = t4a_gpu_open(o->backend, &backend);
  if (rc != T4A_OK) {
    unusable(o, rc, t4a_gpu_last_error(), EXIT_NOBACKEND);
    if (o->json)
      printf("}}\n");
    return EXIT_NOBACKEND;
  }
  run r = {.t = t4a_gpu_backend_table(backend), .o = o};
  int result = EXIT_UNUSABLE;
  int32_t count = 0;
  t4a_backend_info bi;
  t4a__cli_backend_info(r.t, &bi);
  if (o->json) {
    printf("\"backend\":");
    t4a__cli_json_str(bi.name);
    printf(",\"path\":");
    t4a__cli_json_str(t4a_gpu_backend_path(backend));
    putchar(',');
  } else {
    printf("t4a-gpu selftest: backend %s %s (%s)\n", t4a__cli_text(bi.name),
           t4a__cli_text(bi.version), t4a__cli_text(t4a_gpu_backend_path(backend)));
  }
  if ((rc = r.t->init()) != T4A_OK || (rc = r.t->device_count(&count)) != T4A_OK) {
    result = unusable(o, rc, t4a__cli_backend_error(r.t), EXIT_UNUSABLE);
    goto out;
  }
  if (o->device >= count) {
    char why[128];
    snprintf(why, sizeof why, "--device %d: there are %d devices (0 .. %d)", o->device, (int)count,
             (int)count - 1);
    result = unusable(o, T4A_EINVAL, why, EXIT_USAGE);
    goto out;
  }
  if (o->json)
    printf("\"devices\":[");
  int passed = 1, first = 1;
  for (int32_t d = 0; d < count; d++) {
    if (o->device >= 0 && d != o->device)
      continue;
    passed &= selftest_device(&r, d, first);
    first = 0;
  }
  if (o->json)
    printf("],\"passed\":%s", passed ? "true" : "false");
  else
    printf("selftest: %s\n", passed ? "passed" : "FAILED");
  result = passed ? EXIT_USABLE : EXIT_FAILED;
out:
  if (o->json)
    printf("}}\n");
  t4a_gpu_close(backend);
  return result;
}
