/* tools/conform_errors.c -- conformance checks of the error rules: last_error
 * (per thread, the most recent failure, none on a fresh thread), the
 * struct_size rules of every info struct, and handles of every kind that are
 * null, stale, foreign, forged or of another kind. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tools/conform.h"

static void *fresh_thread(void *p) {
  t4a__cf *c = p;
  t4a_error_info e;
  memset(&e, 0xa5, sizeof e);
  e.struct_size = sizeof e;
  /* "status T4A_OK and empty strings when none" */
  if (t4a__cf_ok(c, c->t->last_error(&e), "last_error (a fresh thread)"))
    t4a__cf_true(c,
                 e.status == T4A_OK && e.native_code == 0 && e.message && !e.message[0] &&
                     e.native_name && !e.native_name[0],
                 "a thread without failures: last_error status %s, native %lld, message '%.100s'",
                 t4a_status_name(e.status), (long long)e.native_code,
                 e.message ? e.message : "(NULL)");
  return NULL;
}

static void last_error_none(t4a__cf *c) {
  pthread_t th;
  if (CF_TRUE(pthread_create(&th, NULL, fresh_thread, c) == 0, "cannot start a thread"))
    pthread_join(th, NULL);
}

/* ---- struct_size rules --------------------------------------------------------------- */

typedef int (*fill_fn)(void *ctx, void *info);

/* The Versioning rules for an info struct filled by the callee: NULL and a
 * struct_size below v1.0 are T4A_EINVAL; exactly v1.0 and a bigger (newer)
 * struct are filled with at most struct_size bytes, struct_size becoming the
 * bytes filled; nothing past them is written. */
static void info_struct(t4a__cf *c, const char *name, fill_fn fill, void *ctx, size_t v10,
                        size_t ours) {
  unsigned char buf[2048];
  uint32_t size;
  char what[96];
  /* last_error is "Pure": its own refusal need not become the last error */
  bool pure = strcmp(name, "last_error") == 0;
  snprintf(what, sizeof what, "%s(NULL)", name);
  int rc = fill(ctx, NULL);
  if (pure)
    CF_TRUE(rc == T4A_EINVAL, "%s: %s, want T4A_EINVAL", what, t4a_status_name(rc));
  else
    t4a__cf_expect(c, rc, T4A_EINVAL, T4A_EINVAL, what);
  const uint32_t small[] = {0, (uint32_t)v10 - 1};
  for (int i = 0; i < 2; i++) {
    memset(buf, 0, sizeof buf);
    memcpy(buf, &small[i], 4);
    snprintf(what, sizeof what, "%s(struct_size %u, below v1.0's %zu)", name, small[i], v10);
    rc = fill(ctx, buf);
    if (pure)
      CF_TRUE(rc == T4A_EINVAL, "%s: %s, want T4A_EINVAL", what, t4a_status_name(rc));
    else
      t4a__cf_expect(c, rc, T4A_EINVAL, T4A_EINVAL, what);
  }
  const uint32_t sizes[] = {(uint32_t)v10, (uint32_t)ours + 64};
  for (int i = 0; i < 2; i++) {
    memset(buf, 0xc3, sizeof buf);
    memcpy(buf, &sizes[i], 4);
    snprintf(what, sizeof what, "%s(struct_size %u)", name, sizes[i]);
    if (!t4a__cf_ok(c, fill(ctx, buf), what))
      continue;
    memcpy(&size, buf, 4);
    if (!CF_TRUE(size >= v10 && size <= sizes[i],
                 "%s: struct_size %u after the call, want the bytes filled (%zu .. %u)", what, size,
                 v10, sizes[i]))
      continue;
    for (size_t j = size; j < sizeof buf; j++)
      if (buf[j] != 0xc3) {
        t4a__cf_fail(c, "%s: byte %zu written, past the %u bytes it reports", what, j, size);
        break;
      }
  }
}

typedef struct target {
  const t4a_gpu_backend_v1 *t;
  int32_t device;
  t4a_runtime rt;
  t4a_function f;
} target;

static int f_last_error(void *x, void *i) { return ((target *)x)->t->last_error(i); }
static int f_get_info(void *x, void *i) { return ((target *)x)->t->get_info(i); }
static int f_device_info(void *x, void *i) {
  return ((target *)x)->t->device_info(((target *)x)->device, i);
}
static int f_compiler_info(void *x, void *i) { return ((target *)x)->t->compiler_info(i); }
static int f_counters(void *x, void *i) {
  return ((target *)x)->t->runtime_counters(((target *)x)->rt, i);
}
static int f_cache_stats(void *x, void *i) {
  return ((target *)x)->t->cache_stats(((target *)x)->rt, i);
}
static int f_compile_stats(void *x, void *i) { return ((target *)x)->t->compile_cache_stats(i); }
static int f_raw_runtime(void *x, void *i) {
  return ((target *)x)->t->raw_runtime(((target *)x)->rt, i);
}
static int f_attributes(void *x, void *i) {
  return ((target *)x)->t->function_attributes(((target *)x)->rt, ((target *)x)->f, i);
}

#define INFO(slot, fn, type, v10)                                                                  \
  do {                                                                                             \
    if (t->slot)                                                                                   \
      info_struct(c, #slot, fn, &x, v10, sizeof(type));                                            \
  } while (0)

static void struct_sizes(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  target x = {t, c->device, t4a__cf_runtime(c, c->device, NULL), {0}};
  if (!x.rt.bits)
    return;
  INFO(last_error, f_last_error, t4a_error_info, T4A_ERROR_INFO_V1_0_SIZE);
  INFO(get_info, f_get_info, t4a_backend_info, T4A_BACKEND_INFO_V1_0_SIZE);
  INFO(device_info, f_device_info, t4a_device_info, T4A_DEVICE_INFO_V1_0_SIZE);
  INFO(compiler_info, f_compiler_info, t4a_compiler_info, T4A_COMPILER_INFO_V1_0_SIZE);
  INFO(runtime_counters, f_counters, t4a_runtime_counters, T4A_RUNTIME_COUNTERS_V1_0_SIZE);
  INFO(cache_stats, f_cache_stats, t4a_cache_stats, T4A_CACHE_STATS_V1_0_SIZE);
  INFO(compile_cache_stats, f_compile_stats, t4a_compile_cache_stats,
       T4A_COMPILE_CACHE_STATS_V1_0_SIZE);
  INFO(raw_runtime, f_raw_runtime, t4a_raw_runtime, T4A_RAW_RUNTIME_V1_0_SIZE);
  if (c->code.bits && t->function_attributes) {
    t4a__cf_kernels k;
    x.f.bits = 0;
    if (t4a__cf_kernels_load(c, x.rt, &k)) {
      x.f = k.fill;
      INFO(function_attributes, f_attributes, t4a_function_attributes,
           T4A_FUNCTION_ATTRIBUTES_V1_0_SIZE);
    }
  }
  if (t->raw_begin) { /* an argument struct of the caller's: too small is refused */
    t4a_raw_section s;
    memset(&s, 0, sizeof s);
    s.struct_size = T4A_RAW_SECTION_V1_0_SIZE - 1;
    CF_EXPECT(t->raw_begin(x.rt, &s), T4A_EINVAL);
    CF_EXPECT(t->raw_begin(x.rt, NULL), T4A_EINVAL);
  }
}

/* ---- last_error per thread ------------------------------------------------------------- */

typedef struct failer {
  const t4a_gpu_backend_v1 *t;
  t4a_runtime rt;
  bool null_out; /* fail with T4A_EINVAL (else with T4A_EHANDLE) */
  int rc, after_success;
  char message[512], after_message[512];
} failer;

static void *fail_then_succeed(void *p) {
  failer *f = p;
  t4a_buffer b = {0x7777777777777777ull};
  uint64_t size;
  f->rc = f->null_out ? f->t->buffer_alloc(f->rt, 16, NULL) : f->t->buffer_size(f->rt, b, &size);
  t4a__cf_last_error(f->t, f->message, sizeof f->message);
  t4a_witness w = {0}; /* a success: the most recent failure is still the one above */
  if (f->t->seal(f->rt, &w) == T4A_OK)
    f->t->witness_release(w);
  f->after_success = t4a__cf_last_error(f->t, f->after_message, sizeof f->after_message);
  return NULL;
}

static void last_error_per_thread(t4a__cf *c) {
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  if (!rt.bits)
    return;
  char mine[512], mine_after[512];
  int my_status = t4a__cf_last_error(c->t, mine, sizeof mine);
  failer f[2] = {{c->t, rt, true, 0, 0, "", ""}, {c->t, rt, false, 0, 0, "", ""}};
  pthread_t th[2];
  int started = 0;
  for (int i = 0; i < 2 && pthread_create(&th[i], NULL, fail_then_succeed, &f[i]) == 0; i++)
    started++;
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  if (!CF_TRUE(started == 2, "cannot start threads"))
    return;
  const int want[2] = {T4A_EINVAL, T4A_EHANDLE};
  for (int i = 0; i < 2; i++) {
    CF_TRUE(f[i].rc == want[i], "thread %d: %s, want %s", i, t4a_status_name(f[i].rc),
            t4a_status_name(want[i]));
    CF_TRUE(f[i].after_success == want[i] && strcmp(f[i].after_message, f[i].message) == 0 &&
                f[i].message[0],
            "thread %d: last_error after a later success is %s '%s', want its most recent "
            "failure %s '%s'",
            i, t4a_status_name(f[i].after_success), f[i].after_message, t4a_status_name(want[i]),
            f[i].message);
  }
  CF_TRUE(strcmp(f[0].message, f[1].message) != 0, "two threads' failures have one message");
  int my_after = t4a__cf_last_error(c->t, mine_after, sizeof mine_after);
  CF_TRUE(my_after == my_status && strcmp(mine, mine_after) == 0,
          "other threads' failures changed this thread's last_error to %s '%s'",
          t4a_status_name(my_after), mine_after);
}

/* ---- bad handles ------------------------------------------------------------------------ */

typedef struct verdicts {
  t4a__cf *c;
  char bad[1000];
} verdicts;

/* One call with a bad handle: T4A_EHANDLE (T4A_EINVAL too for the null
 * handle), its last_error set; anything else is listed. */
static void judge(verdicts *v, const char *call, const char *which, const char *kind, int rc,
                  bool null) {
  char why[256];
  int st = t4a__cf_last_error(v->c->t, why, sizeof why);
  bool ok = (rc == T4A_EHANDLE || (null && rc == T4A_EINVAL)) && st == rc && why[0];
  size_t n = strlen(v->bad);
  if (!ok && n + 2 < sizeof v->bad)
    snprintf(v->bad + n, sizeof v->bad - n, "%s%s(%s %s): %s%s", n ? ", " : "", call, which, kind,
             t4a_status_name(rc),
             rc == T4A_EHANDLE || rc == T4A_EINVAL ? " without last_error" : "");
}

/* The bad versions of a handle h of one kind: null, stale (released), two
 * forgeries, another kind's handle, and another runtime's (0: not a per-
 * runtime kind). */
typedef struct bads {
  uint64_t h[6];
  const char *names[6];
  int n;
  const char *kind;
} bads;

static bads bad_versions(const char *kind, uint64_t valid, uint64_t stale, uint64_t other_kind,
                         uint64_t foreign) {
  bads b = {{0, stale, ~valid, valid ^ 0x00000000ffff0000ull, other_kind, foreign},
            {"null", "stale", "forged (~h)", "forged (h^0xffff0000)", "another kind's", "foreign"},
            foreign ? 6 : 5,
            kind};
  return b;
}

/* Calls `call` once per bad version H of a handle; `slot` names it. */
#define EACH(list, slot, call)                                                                     \
  for (int i_ = 0; i_ < (list).n; i_++) {                                                          \
    uint64_t H = (list).h[i_];                                                                     \
    judge(&v, slot, (list).names[i_], (list).kind, (call), i_ == 0);                               \
  }

static void handles(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  verdicts v = {c, ""};
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  t4a_runtime gone = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer xa = t4a__cf_buffer(c, a, 64), xb = t4a__cf_buffer(c, b, 64);
  t4a_buffer xs = t4a__cf_buffer(c, a, 64);
  void *p;
  t4a_host_buffer ha = t4a__cf_host(c, a, 64, &p), hb = t4a__cf_host(c, b, 64, &p);
  t4a_host_buffer hs = t4a__cf_host(c, a, 64, &p);
  t4a_witness wa = t4a__cf_seal(c, a), ws = t4a__cf_seal(c, a);
  if (!xa.bits || !xb.bits || !xs.bits || !ha.bits || !hb.bits || !hs.bits || !wa.bits ||
      !ws.bits || !gone.bits || !t4a__cf_free(c, a, xs) || !t4a__cf_release(c, ws) ||
      !t4a__cf_destroy(c, gone))
    return;
  t4a__cf_forget(c, hs.bits);
  if (!CF_OK(t->host_free(a, hs)))
    return;
  unsigned char byte[8] = {0};
  uint64_t u;
  t4a_witness wo;
  bads rts = bad_versions("runtime", a.bits, gone.bits, xa.bits, 0);
  EACH(rts, "buffer_size", t->buffer_size((t4a_runtime){H}, xa, &u));
  EACH(rts, "copy_h2d", t->copy_h2d((t4a_runtime){H}, xa, 0, byte, 1));
  EACH(rts, "seal", t->seal((t4a_runtime){H}, &wo));
  EACH(rts, "runtime_destroy", t->runtime_destroy((t4a_runtime){H}, 0));
  bads bufs = bad_versions("buffer", xa.bits, xs.bits, ha.bits, xb.bits);
  EACH(bufs, "buffer_size", t->buffer_size(a, (t4a_buffer){H}, &u));
  EACH(bufs, "copy_h2d", t->copy_h2d(a, (t4a_buffer){H}, 0, byte, 1));
  EACH(bufs, "copy_d2h", t->copy_d2h(a, byte, (t4a_buffer){H}, 0, 1));
  EACH(bufs, "copy_d2d", t->copy_d2d(a, xa, 0, (t4a_buffer){H}, 0, 1));
  EACH(bufs, "buffer_free", t->buffer_free(a, (t4a_buffer){H}));
  bads hosts = bad_versions("host buffer", ha.bits, hs.bits, xa.bits, hb.bits);
  EACH(hosts, "copy_h2d_pinned", t->copy_h2d_pinned(a, xa, 0, (t4a_host_buffer){H}, 0, 1));
  EACH(hosts, "copy_d2h_pinned", t->copy_d2h_pinned(a, (t4a_host_buffer){H}, 0, xa, 0, 1));
  EACH(hosts, "host_free", t->host_free(a, (t4a_host_buffer){H}));
  bads wits = bad_versions("witness", wa.bits, ws.bits, xa.bits, 0);
  EACH(wits, "witness_query", t->witness_query((t4a_witness){H}));
  EACH(wits, "witness_wait", t->witness_wait((t4a_witness){H}, 0));
  EACH(wits, "witness_release", t->witness_release((t4a_witness){H}));
  if (t->runtime_wait_witness)
    EACH(wits, "runtime_wait_witness", t->runtime_wait_witness(a, (t4a_witness){H}));
  /* v1.1 interop */
  void *legacy = (void *)(uintptr_t)T4A_STREAM_LEGACY;
  if (t->stream_wait_witness)
    EACH(wits, "stream_wait_witness", t->stream_wait_witness(a, legacy, (t4a_witness){H}));
  if (t->runtime_wait_stream)
    EACH(rts, "runtime_wait_stream", t->runtime_wait_stream((t4a_runtime){H}, legacy));
  if (t->alloc_log_read) { /* v1.2 */
    t4a_alloc_event ev;
    uint32_t count;
    EACH(rts, "alloc_log_read", t->alloc_log_read((t4a_runtime){H}, 0, &ev, 1, &count, &u));
  }
  if (t->dlpack_export) {
    int64_t extent = 1;
    t4a_dlpack_export ex = {
        .struct_size = sizeof ex, .dtype = {T4A_DL_UINT, 8, 1}, .ndim = 1, .shape = &extent};
    void *tensor;
    EACH(rts, "dlpack_export", t->dlpack_export((t4a_runtime){H}, xa, &ex, &tensor));
    EACH(bufs, "dlpack_export", t->dlpack_export(a, (t4a_buffer){H}, &ex, &tensor));
  }
  if (c->code.bits) { /* modules, functions, artifacts */
    t4a__cf_kernels ka, kb, ks;
    t4a_artifact gone_art = {0};
    if (!t4a__cf_kernels_load(c, a, &ka) || !t4a__cf_kernels_load(c, b, &kb) ||
        !t4a__cf_kernels_load(c, a, &ks))
      return;
    t4a__cf_forget(c, ks.module.bits);
    if (!CF_OK(t->module_unload(a, ks.module)))
      return;
    t4a_function fo;
    t4a_module mo;
    t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    bads mods =
        bad_versions("module", ka.module.bits, ks.module.bits, ka.fill.bits, kb.module.bits);
    EACH(mods, "function_get", t->function_get(a, (t4a_module){H}, "t4a_fill_u32", &fo));
    EACH(mods, "module_unload", t->module_unload(a, (t4a_module){H}));
    bads funcs = bad_versions("function", ka.fill.bits, ks.fill.bits, ka.module.bits, kb.fill.bits);
    EACH(funcs, "launch", t->launch(a, (t4a_function){H}, &cfg, NULL));
    if (t->function_attributes) {
      t4a_function_attributes fa = {.struct_size = sizeof fa};
      EACH(funcs, "function_attributes", t->function_attributes(a, (t4a_function){H}, &fa));
    }
    if (t->artifact_from_bytes && t->artifact_data &&
        t->artifact_from_bytes(T4A_ARTIFACT_PTX, t4a__cf_ptx(), strlen(t4a__cf_ptx()), NULL,
                               &gone_art) == T4A_OK &&
        CF_OK(t->artifact_release(gone_art))) {
      t4a_artifact_kind kind;
      const void *data;
      bads arts = bad_versions("artifact", c->code.bits, gone_art.bits, wa.bits, 0);
      EACH(arts, "artifact_data", t->artifact_data((t4a_artifact){H}, &kind, &data, &u));
      EACH(arts, "module_load", t->module_load(a, (t4a_artifact){H}, &mo));
      EACH(arts, "artifact_release", t->artifact_release((t4a_artifact){H}));
    }
  }
  if (v.bad[0])
    t4a__cf_fail(c, "not T4A_EHANDLE: %s", v.bad);
  t4a__cf_round_trip(c, a, xa, 0, 64); /* "A failed call leaves ... the runtime usable" */
}

#define PRE T4A__CF_PRE_INIT
#define DEV T4A__CF_DEVICE
#define RT "runtime_create runtime_destroy "

const t4a__cf_check t4a__cf_errors_checks[] = {
    {"errors.last_error_none",
     "last_error: fills *info with the calling thread's most recent failure (status T4A_OK and "
     "empty strings when none)",
     "", PRE, last_error_none},
    {"errors.struct_sizes",
     "A callee accepts any struct_size at least the v1.0 size and rejects a smaller one with "
     "T4A_EINVAL; info structs get at most struct_size bytes written; on return struct_size "
     "holds the bytes filled",
     RT, DEV, struct_sizes},
    {"errors.last_error_per_thread",
     "last_error is per thread: the calling thread's most recent failure, \"<what failed>; <what "
     "to do>\"",
     RT "buffer_alloc buffer_size seal witness_release", DEV, last_error_per_thread},
    {"errors.handles",
     "A stale (freed/destroyed), foreign (another runtime's) or forged handle is rejected with "
     "T4A_EHANDLE, never dereferenced; all-zero is the null handle",
     RT "buffer_alloc buffer_free buffer_size host_alloc host_free copy_h2d copy_d2h copy_d2d "
        "copy_h2d_pinned copy_d2h_pinned seal witness_query witness_wait witness_release",
     DEV, handles},
};
const size_t t4a__cf_errors_count = sizeof t4a__cf_errors_checks / sizeof t4a__cf_errors_checks[0];
