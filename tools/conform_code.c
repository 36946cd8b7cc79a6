/* tools/conform_code.c -- conformance checks of code: artifacts from PTX
 * bytes and from the compiler (before init for device_ordinal -1, and for
 * the device), modules and functions, launch geometry, function attributes. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tools/conform.h"

/* Whether the n bytes at p hold the text s. */
static bool contains(const void *p, size_t n, const char *s) {
  size_t len = strlen(s);
  for (size_t i = 0; i + len <= n; i++)
    if (memcmp((const char *)p + i, s, len) == 0)
      return true;
  return false;
}

/* The status says the backend cannot take this kind of code: a skip. */
static bool unsupported(t4a__cf *c, int rc, const char *what) {
  if (rc != T4A_EUNSUPPORTED)
    return false;
  char why[400];
  t4a__cf_last_error(c->t, why, sizeof why);
  t4a__cf_skip(c, "%s: T4A_EUNSUPPORTED (%s)", what, why);
  return true;
}

static void from_bytes_ptx(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const char *text = t4a__cf_ptx();
  size_t len = strlen(text);
  char *buf = t4a__cf_mem(c, len + 1);
  if (!buf)
    return;
  memcpy(buf, text, len + 1); /* passed without its NUL: PTX is text, not a C string */
  t4a_artifact a = {0};
  int rc = t->artifact_from_bytes(T4A_ARTIFACT_PTX, buf, len, "conform.ptx", &a);
  if (unsupported(c, rc, "artifact_from_bytes(PTX)") || !CF_OK(rc))
    return;
  if (!t4a__cf_track(c, T4A__CF_ARTIFACT, 0, a.bits, NULL))
    return;
  memset(buf, 0, len); /* "(copied)" */
  t4a_artifact_kind kind = 0;
  const void *data = NULL;
  uint64_t size = 0;
  if (CF_OK(t->artifact_data(a, &kind, &data, &size)))
    CF_TRUE(kind == T4A_ARTIFACT_PTX && data && (size == len || size == len + 1) &&
                memcmp(data, text, len) == 0,
            "artifact_data: kind %d, %llu bytes: not the PTX given", (int)kind,
            (unsigned long long)size);
  const char *log = NULL;
  uint64_t log_len = UINT64_MAX;
  if (CF_OK(t->artifact_log(a, &log, &log_len))) /* "NUL-terminated, possibly empty" */
    CF_TRUE(log && strlen(log) == log_len, "artifact_log: length %llu for '%s'",
            (unsigned long long)log_len, log ? log : "(NULL)");
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, 4ull * 4099);
  t4a_module m = {0};
  t4a_function f = {0}, none = {0};
  if (!b.bits)
    return;
  rc = t->module_load(rt, a, &m);
  if (unsupported(c, rc, "module_load(PTX)") || !CF_OK(rc))
    return;
  if (!t4a__cf_track(c, T4A__CF_MODULE, rt.bits, m.bits, NULL))
    return;
  if (!CF_OK(t->function_get(rt, m, "t4a_fill_u32", &f)))
    return;
  /* "function_get: kernel by name (T4A_ENOTFOUND naming the symbol)" */
  char why[400];
  if (CF_EXPECT(t->function_get(rt, m, "t4a_no_such_kernel", &none), T4A_ENOTFOUND)) {
    t4a__cf_last_error(t, why, sizeof why);
    CF_TRUE(strstr(why, "t4a_no_such_kernel") != NULL, "the detail '%s' does not name the symbol",
            why);
  }
  t4a__cf_kernels k = {m, {0}, f};
  if (!CF_OK(t4a__cf_fill(c, rt, &k, b, 0x1234567, 4099)) ||
      !t4a__cf_filled(c, rt, b, 0x1234567, 4099))
    return;
  /* "artifact_release: drops the caller's reference. Modules loaded from it
   * stay loaded." */
  t4a__cf_forget(c, a.bits);
  CF_OK(t->artifact_release(a));
  CF_EXPECT(t->artifact_release(a), T4A_EHANDLE);
  CF_EXPECT(t->artifact_data(a, &kind, &data, &size), T4A_EHANDLE);
  t4a_module m2 = {0};
  CF_EXPECT(t->module_load(rt, a, &m2), T4A_EHANDLE);
  if (CF_OK(t4a__cf_fill(c, rt, &k, b, 0x89abcdef, 4099)))
    t4a__cf_filled(c, rt, b, 0x89abcdef, 4099);
}

static void from_bytes_errors(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const char *text = t4a__cf_ptx();
  t4a_artifact a = {0};
  CF_EXPECT(t->artifact_from_bytes(T4A_ARTIFACT_PTX, NULL, 10, NULL, &a), T4A_EINVAL);
  CF_EXPECT(t->artifact_from_bytes(T4A_ARTIFACT_PTX, text, 0, NULL, &a), T4A_EINVAL);
  CF_EXPECT(t->artifact_from_bytes(T4A_ARTIFACT_PTX, text, strlen(text), NULL, NULL), T4A_EINVAL);
  CF_EXPECT(t->artifact_from_bytes((t4a_artifact_kind)99, text, strlen(text), NULL, &a),
            T4A_EINVAL);
  /* bytes that are no CUBIN: refused when wrapped, or at the latest when
   * loaded; a backend that takes no GPU code at all (its PTX is
   * T4A_EUNSUPPORTED too: the host's) refuses every kind so */
  static const char junk[] = "this is not an ELF image, whatever its kind says";
  int rc = t->artifact_from_bytes(T4A_ARTIFACT_CUBIN, junk, sizeof junk, "junk", &a);
  int ptx_rc = rc == T4A_EUNSUPPORTED
                   ? t->artifact_from_bytes(T4A_ARTIFACT_PTX, text, strlen(text), NULL, &a)
                   : T4A_OK;
  if (rc == T4A_EUNSUPPORTED && ptx_rc == T4A_OK && a.bits)
    t->artifact_release(a);
  if (rc != T4A_OK) {
    CF_EXPECT(rc, ptx_rc == T4A_EUNSUPPORTED ? T4A_EUNSUPPORTED : T4A_EINVAL);
    return;
  }
  if (!t4a__cf_track(c, T4A__CF_ARTIFACT, 0, a.bits, NULL))
    return;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_module m = {0};
  if (!rt.bits)
    return;
  rc = t->module_load(rt, a, &m);
  if (rc == T4A_OK)
    t4a__cf_track(c, T4A__CF_MODULE, rt.bits, m.bits, NULL);
  CF_EXPECT2(rc, T4A_EINVAL, T4A_EUNSUPPORTED);
}

/* Before init: "-1: the options name it ..., and compiling needs no driver
 * or GPU". The artifact is kept for code.artifact_after_init. */
static void compile_without_init(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_compiler_info ci;
  if (!CF_OK(t4a__cli_compiler_info(t, &ci)))
    return;
  if (ci.status != T4A_OK) {
    t4a__cf_skip(c, "compiler_info says unavailable: %s", ci.reason);
    return;
  }
  const char *opts[] = {"-arch=compute_75"};
  t4a_compile_options o = {.struct_size = sizeof o,
                           .flags = T4A_COMPILE_PTX | T4A_COMPILE_NO_CACHE,
                           .source = t4a__cf_source(),
                           .name = "t4a_conform.cu",
                           .options = opts,
                           .option_count = 1,
                           .device_ordinal = -1};
  t4a_artifact a = {0};
  int rc = t->artifact_compile(&o, &a);
  /* a backend that makes no GPU code (the host's: "T4A_COMPILE_PTX is
   * T4A_EUNSUPPORTED there") compiles to its own kind instead */
  c->deferred_kind = T4A_ARTIFACT_PTX;
  if (rc == T4A_EUNSUPPORTED && !a.bits) {
    o.flags = T4A_COMPILE_NO_CACHE;
    c->deferred_kind = T4A_ARTIFACT_HOST;
    rc = t->artifact_compile(&o, &a);
  }
  if (!CF_OK(rc) || !CF_TRUE(a.bits != 0, "artifact_compile returned T4A_OK and a null artifact"))
    return;
  c->deferred = a; /* released after init, by code.artifact_after_init */
  t4a_artifact_kind kind = 0;
  const void *data = NULL;
  uint64_t size = 0;
  rc = t->artifact_data(a, &kind, &data, &size);
  if (rc == T4A_ENOTINIT)
    return; /* readable only after init: allowed */
  if (CF_OK(rc))
    CF_TRUE(kind == c->deferred_kind && data && size > 0 &&
                contains(data, (size_t)size, "t4a_fill_u32"),
            "artifact_data: kind %d (want %d), %llu bytes: not code holding t4a_fill_u32",
            (int)kind, (int)c->deferred_kind, (unsigned long long)size);
}

static void artifact_after_init(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_artifact a = c->deferred;
  c->deferred.bits = 0;
  if (!a.bits) {
    t4a__cf_skip(c, "no artifact was compiled before init (code.compile_without_init)");
    return;
  }
  if (!t4a__cf_track(c, T4A__CF_ARTIFACT, 0, a.bits, NULL))
    return;
  t4a_artifact_kind kind = 0;
  const void *data = NULL;
  uint64_t size = 0;
  if (CF_OK(t->artifact_data(a, &kind, &data, &size)))
    CF_TRUE(kind == c->deferred_kind && size > 0, "artifact_data: kind %d, %llu bytes", (int)kind,
            (unsigned long long)size);
  t4a__cf_forget(c, a.bits);
  CF_OK(t->artifact_release(a));
  CF_EXPECT(t->artifact_release(a), T4A_EHANDLE);
}

static bool need_compiler(t4a__cf *c) {
  if (c->compiler)
    return true;
  t4a__cf_skip(c, "compiler_info says unavailable: %s", c->ci.reason);
  return false;
}

/* Compiles the kernels for the device (flags as given): a tracked artifact
 * of kind `want` (or `alt`: 0 for none), or null (a skip for
 * T4A_EUNSUPPORTED, else a failure). */
static t4a_artifact compile(t4a__cf *c, uint32_t flags, t4a_artifact_kind want,
                            t4a_artifact_kind alt) {
  t4a_compile_options o = {.struct_size = sizeof o,
                           .flags = flags | T4A_COMPILE_NO_CACHE,
                           .source = t4a__cf_source(),
                           .name = "t4a_conform.cu",
                           .device_ordinal = c->device};
  t4a_artifact a = {0};
  int rc = c->t->artifact_compile(&o, &a);
  if (a.bits)
    t4a__cf_track(c, T4A__CF_ARTIFACT, 0, a.bits, NULL);
  if (unsupported(c, rc, "artifact_compile") || !CF_OK(rc))
    return (t4a_artifact){0};
  t4a_artifact_kind kind = 0;
  const void *data = NULL;
  uint64_t size = 0;
  if (!CF_OK(c->t->artifact_data(a, &kind, &data, &size)) ||
      !CF_TRUE((kind == want || (alt && kind == alt)) && data && size > 0,
               "artifact_data: kind %d (want %d), %llu bytes", (int)kind, (int)want,
               (unsigned long long)size))
    return (t4a_artifact){0};
  return a;
}

/* Runs t4a_axpy_f32 of artifact a over n elements; whether the result is
 * alpha * x + y within float rounding of the CPU's. */
static void axpy(t4a__cf *c, t4a_artifact a, uint64_t n) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer x = t4a__cf_buffer(c, rt, n * 4), y = t4a__cf_buffer(c, rt, n * 4);
  float *hx = t4a__cf_mem(c, (size_t)n * 4), *hy = t4a__cf_mem(c, (size_t)n * 4),
        *got = t4a__cf_mem(c, (size_t)n * 4);
  t4a_module m = {0};
  t4a_function f = {0};
  if (!x.bits || !y.bits || !hx || !hy || !got || !CF_OK(t->module_load(rt, a, &m)))
    return;
  if (!t4a__cf_track(c, T4A__CF_MODULE, rt.bits, m.bits, NULL))
    return;
  for (uint64_t i = 0; i < n; i++) { /* in [-1, 1) */
    uint64_t r[2];
    t4a__cf_random(r, sizeof r, &c->seed);
    hx[i] = (float)((double)(r[0] >> 11) / 4503599627370496.0) - 0.5f;
    hy[i] = (float)((double)(r[1] >> 11) / 4503599627370496.0) - 0.5f;
  }
  uint64_t px = 0, py = 0;
  unsigned long long count = n;
  float alpha = 1.75f;
  void *args[] = {&count, &alpha, &px, &py};
  uint64_t blocks = (n + 255) / 256;
  t4a_launch_config cfg = {.struct_size = sizeof cfg,
                           .grid = {blocks > 4096 ? 4096 : (uint32_t)blocks, 1, 1},
                           .block = {256, 1, 1}};
  if (!CF_OK(t->function_get(rt, m, "t4a_axpy_f32", &f)) ||
      !CF_OK(t->buffer_device_address(rt, x, &px)) ||
      !CF_OK(t->buffer_device_address(rt, y, &py)) || !CF_OK(t->copy_h2d(rt, x, 0, hx, n * 4)) ||
      !CF_OK(t->copy_h2d(rt, y, 0, hy, n * 4)) || !CF_OK(t->launch(rt, f, &cfg, args)) ||
      !CF_OK(t->copy_d2h(rt, got, y, 0, n * 4)))
    return;
  for (uint64_t i = 0; i < n; i++) {
    double want = 1.75 * (double)hx[i] + (double)hy[i];
    if (!(fabs((double)got[i] - want) <= 1e-6 * fabs(want) + 1e-6)) {
      t4a__cf_fail(c, "axpy element %llu of %llu: %.9g, the CPU says %.9g", (unsigned long long)i,
                   (unsigned long long)n, (double)got[i], want);
      return;
    }
  }
}

static void compile_cubin(t4a__cf *c) {
  if (!need_compiler(c))
    return;
  /* "CUDA C -> CUBIN for the target device's architecture"; the host
   * backend's: "into a T4A_ARTIFACT_HOST artifact" */
  t4a_artifact a = compile(c, 0, T4A_ARTIFACT_CUBIN, T4A_ARTIFACT_HOST);
  if (!a.bits)
    return;
  const char *log = NULL;
  uint64_t len = 0;
  if (CF_OK(c->t->artifact_log(a, &log, &len)))
    CF_TRUE(log && strlen(log) == len, "artifact_log: length %llu, not the log's",
            (unsigned long long)len);
  axpy(c, a, (1u << 20) + 3);
}

static void compile_ptx(t4a__cf *c) {
  if (!need_compiler(c))
    return;
  t4a_artifact a = compile(c, T4A_COMPILE_PTX, T4A_ARTIFACT_PTX, 0); /* "(or PTX ...)" */
  if (a.bits)
    axpy(c, a, 4099);
}

static void compile_errors(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  if (!need_compiler(c))
    return;
  t4a_artifact a = {0};
  t4a_compile_options o = {.struct_size = sizeof o,
                           .flags = T4A_COMPILE_NO_CACHE,
                           .source = t4a__cf_source(),
                           .device_ordinal = c->device};
  t4a_compile_options bad = o;
  CF_EXPECT(t->artifact_compile(NULL, &a), T4A_EINVAL);
  CF_EXPECT(t->artifact_compile(&o, NULL), T4A_EINVAL);
  bad.struct_size = T4A_COMPILE_OPTIONS_V1_0_SIZE - 1;
  CF_EXPECT(t->artifact_compile(&bad, &a), T4A_EINVAL);
  bad = o;
  bad.source = "";
  CF_EXPECT(t->artifact_compile(&bad, &a), T4A_EINVAL); /* "CUDA C, non-empty" */
  static const char two[] = "extern \"C\" __global__ void t4a_a() {}\0"
                            "extern \"C\" __global__ void t4a_b() {}";
  bad.source = two;
  bad.source_size = sizeof two - 1; /* "A NUL byte inside source_size bytes is refused" */
  CF_EXPECT(t->artifact_compile(&bad, &a), T4A_EINVAL);
  bad = o;
  bad.device_ordinal = c->device_count;
  CF_EXPECT2(t->artifact_compile(&bad, &a), T4A_EINVAL, T4A_ERANGE);
  /* "On T4A_ECOMPILE the artifact is still returned (*out non-null) so its
   * log can be read; release it." */
  bad = o;
  bad.source = "#error t4a conform: this source does not compile\n";
  int rc = t->artifact_compile(&bad, &a);
  if (a.bits)
    t4a__cf_track(c, T4A__CF_ARTIFACT, 0, a.bits, NULL);
  if (!CF_EXPECT(rc, T4A_ECOMPILE) ||
      !CF_TRUE(a.bits != 0, "T4A_ECOMPILE without an artifact to read the log from"))
    return;
  const char *log = NULL;
  uint64_t len = 0;
  if (CF_OK(t->artifact_log(a, &log, &len)))
    CF_TRUE(log && len > 0 && strlen(log) == len, "the failed compile's log is empty");
}

#define PRE T4A__CF_PRE_INIT
#define INIT T4A__CF_INIT
#define DEV T4A__CF_DEVICE
#define BASE "runtime_create runtime_destroy buffer_alloc buffer_free copy_h2d copy_d2h "
#define CODE "module_load module_unload function_get launch buffer_device_address "
#define ART "artifact_data artifact_log artifact_release "

const t4a__cf_check t4a__cf_code_checks[] = {
    {"code.compile_without_init",
     "artifact_compile: device_ordinal -1: the options name the architecture, and compiling "
     "needs no driver or GPU",
     "compiler_info artifact_compile artifact_data artifact_release", PRE, compile_without_init},
    {"code.artifact_after_init",
     "artifact: compiled code owned by the backend, valid until its last release",
     "artifact_data artifact_release", INIT, artifact_after_init},
    {"code.from_bytes_ptx",
     "artifact_from_bytes: wraps consumer-provided PTX text (copied); function_get: T4A_ENOTFOUND "
     "naming the symbol; artifact_release: modules loaded from it stay loaded",
     BASE CODE ART "artifact_from_bytes", DEV, from_bytes_ptx},
    {"code.from_bytes_errors",
     "artifact_from_bytes: bad input (NULL data, size 0, an unknown kind, bytes that are no "
     "CUBIN) is refused",
     "artifact_from_bytes artifact_release runtime_create runtime_destroy module_load "
     "module_unload",
     DEV, from_bytes_errors},
    {"code.compile",
     "artifact_compile: CUDA C -> CUBIN for the target device's architecture; a launch computes "
     "what the CPU does",
     BASE CODE ART "artifact_compile compiler_info", DEV, compile_cubin},
    {"code.compile_ptx", "artifact_compile: (or PTX with T4A_COMPILE_PTX)",
     BASE CODE ART "artifact_compile compiler_info", DEV, compile_ptx},
    {"code.compile_errors",
     "t4a_compile_options: source non-empty; a NUL inside source_size is T4A_EINVAL; on "
     "T4A_ECOMPILE the artifact is still returned so its log can be read",
     ART "artifact_compile compiler_info", DEV, compile_errors},
};
const size_t t4a__cf_code_count = sizeof t4a__cf_code_checks / sizeof t4a__cf_code_checks[0];
