/* tests/runtime/test_runtime.c -- runtimes and their memory: create and
 * destroy, options, device buffers and handle validation, the block cache,
 * pinned host buffers.
 *
 * Every suite in tests/runtime runs twice: against the fake driver
 * (tests/cpu/test_<suite>_fake, under make check and CI) and on the GPU
 * (tests/gpu/test_<suite>_gpu, under make check-gpu): behaviour must agree. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin-cuda/cuda_decls.h"
#include "tests/runtime/rtutil.h"

#define KiB 1024ull
#define MiB (1ull << 20)

/* ---- the backend: errors, init, struct sizes --------------------------------- */

typedef struct error_seen {
  int rc;
  t4a_error_info e;
} error_seen;

static void *last_error_in_thread(void *arg) {
  error_seen *s = arg;
  memset(&s->e, 0x5a, sizeof s->e);
  s->e.struct_size = sizeof s->e;
  s->rc = T->last_error(&s->e);
  return NULL;
}

START_TEST(last_error_is_per_thread_and_checked) {
  RT_EXPECT(T->last_error(NULL), T4A_EINVAL);
  t4a_error_info small = {.struct_size = T4A_ERROR_INFO_V1_0_SIZE - 1};
  RT_EXPECT(T->last_error(&small), T4A_EINVAL);
  /* a failure on this thread ... */
  RT_EXPECT(T->buffer_size((t4a_runtime){0}, (t4a_buffer){0}, NULL), T4A_EINVAL);
  t4a_error_info mine = {.struct_size = sizeof mine};
  RT_OK(T->last_error(&mine));
  ck_assert_int_eq(mine.status, T4A_EINVAL);
  ck_assert_str_ne(mine.message, "");
  /* ... is not another thread's: a thread that failed nothing sees none */
  error_seen other;
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, last_error_in_thread, &other), 0);
  pthread_join(th, NULL);
  ck_assert_int_eq(other.rc, T4A_OK);
  ck_assert_int_eq(other.e.status, T4A_OK);
  ck_assert_int_eq(other.e.native_code, 0);
  ck_assert_str_eq(other.e.native_name, "");
  ck_assert_str_eq(other.e.message, "");
  ck_assert_uint_eq(other.e.struct_size, sizeof other.e);
  /* a success does not clear it; last_error itself is pure */
  int32_t n = 0;
  RT_OK(T->device_count(&n));
  t4a_error_info again = {.struct_size = sizeof again};
  RT_OK(T->last_error(&again));
  ck_assert_int_eq(again.status, T4A_EINVAL);
  ck_assert_str_eq(again.message, mine.message);
}
END_TEST

/* Opens the plugin without init. */
static void open_only(void) { B = rt_open(&T); }

START_TEST(every_slot_needs_init_but_the_driver_free_ones) {
  /* well-formed arguments and handles that would be plausible after init */
  t4a_runtime rt = {(uint64_t)1 << 60 | 1}, rt2 = {(uint64_t)1 << 60 | (uint64_t)1 << 48 | 1};
  t4a_buffer b = {(uint64_t)2 << 60 | 1};
  t4a_host_buffer hb = {(uint64_t)3 << 60 | 1};
  t4a_witness w = {(uint64_t)4 << 60 | 1};
  t4a_module m = {(uint64_t)6 << 60 | 1};
  t4a_function f = {(uint64_t)7 << 60 | 1};
  int32_t n;
  bool yes;
  uint64_t u;
  void *p;
  char host[16] = {0};
  t4a_device_info di = {.struct_size = sizeof di};
  t4a_runtime_counters rc = {.struct_size = sizeof rc};
  t4a_cache_stats cs = {.struct_size = sizeof cs};
  t4a_function_attributes fa = {.struct_size = sizeof fa};
  t4a_launch_config lc = {.struct_size = sizeof lc, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  t4a_raw_runtime rr = {.struct_size = sizeof rr};
  t4a_raw_section sec = {.struct_size = sizeof sec, .runtime_bits = rt.bits};
  t4a_compile_options co = {.struct_size = sizeof co, .source = "__global__ void k() {}"};
  t4a_artifact a = {0}, a_out;
  /* the host takes no GPU code, before init or after: a stays null */
  RT_EXPECT(T->artifact_from_bytes(T4A_ARTIFACT_PTX, rt_test_ptx(), strlen(rt_test_ptx()), "t", &a),
            rt_on_host() ? T4A_EUNSUPPORTED : T4A_OK);
  t4a_runtime rt_out;
  t4a_buffer b_out;
  t4a_host_buffer hb_out;
  t4a_witness w_out;
  t4a_module m_out;
  t4a_function f_out;
#define NOT_INIT(call)                                                                             \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    ck_assert_msg(rc_ == T4A_ENOTINIT, "%s before init: %s, want T4A_ENOTINIT", #call,             \
                  t4a_status_name(rc_));                                                           \
  } while (0)
  NOT_INIT(T->device_count(&n));
  NOT_INIT(T->device_info(0, &di));
  NOT_INIT(T->peer_access_supported(0, 0, &yes));
  NOT_INIT(T->runtime_create(0, NULL, &rt_out));
  NOT_INIT(T->runtime_destroy(rt, 0));
  NOT_INIT(T->runtime_counters(rt, &rc));
  NOT_INIT(T->buffer_alloc(rt, 16, &b_out));
  NOT_INIT(T->buffer_free(rt, b));
  NOT_INIT(T->buffer_size(rt, b, &u));
  NOT_INIT(T->cache_trim(rt, 0));
  NOT_INIT(T->cache_stats(rt, &cs));
  NOT_INIT(T->host_alloc(rt, 16, 0, &hb_out, &p));
  NOT_INIT(T->host_free(rt, hb));
  NOT_INIT(T->copy_h2d_pinned(rt, b, 0, hb, 0, 1));
  NOT_INIT(T->copy_d2h_pinned(rt, hb, 0, b, 0, 1));
  NOT_INIT(T->copy_h2d(rt, b, 0, host, 1));
  NOT_INIT(T->copy_d2h(rt, host, b, 0, 1));
  NOT_INIT(T->copy_d2d(rt, b, 0, b, 8, 1));
  NOT_INIT(T->copy_from_runtime(rt, b, 0, rt2, b, 0, 1));
  NOT_INIT(T->copy_from_peer(rt, b, 0, rt2, b, 0, 1));
  NOT_INIT(T->copy_from_peer_via_host(rt, b, 0, rt2, b, 0, 1));
  NOT_INIT(T->seal(rt, &w_out));
  NOT_INIT(T->witness_query(w));
  NOT_INIT(T->witness_wait(w, 0));
  NOT_INIT(T->witness_retain(w));
  NOT_INIT(T->witness_release(w));
  NOT_INIT(T->runtime_wait_witness(rt, w));
  NOT_INIT(T->artifact_compile(&co, &a_out)); /* for a device: needs the driver */
  NOT_INIT(T->module_load(rt, a, &m_out));
  NOT_INIT(T->module_unload(rt, m));
  NOT_INIT(T->function_get(rt, m, "t4a_fill_u32", &f_out));
  NOT_INIT(T->function_attributes(rt, f, &fa));
  NOT_INIT(T->function_set_max_dynamic_shared(rt, f, 0));
  NOT_INIT(T->launch(rt, f, &lc, NULL));
  if (rt_on_host()) { /* no CUDA objects: the raw seam's slots are NULL */
    ck_assert(!T->raw_runtime && !T->raw_function && !T->raw_begin && !T->raw_end);
  } else {
    NOT_INIT(T->raw_runtime(rt, &rr));
    NOT_INIT(T->raw_function(rt, f, &p));
    NOT_INIT(T->raw_begin(rt, &sec));
    NOT_INIT(T->raw_end(rt, &sec));
  }
  NOT_INIT(T->buffer_device_address(rt, b, &u));
  /* ABI 1.1: execution and graphs */
  t4a_graph g = {(uint64_t)8 << 60 | 1}, g_out;
  t4a_runtime_info ri = {.struct_size = sizeof ri};
  t4a_graph_info gi = {.struct_size = sizeof gi};
  t4a_launch_ex_config ex = {
      .struct_size = sizeof ex, .grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
  uint32_t u1, u2;
  NOT_INIT(T->runtime_info(rt, &ri));
  NOT_INIT(T->launch_ex(rt, f, &ex, NULL));
  NOT_INIT(T->occupancy_max_active_blocks(rt, f, 32, 0, &u1));
  NOT_INIT(T->occupancy_suggest_block_size(rt, f, 0, 0, &u1, &u2));
  NOT_INIT(T->occupancy_max_active_clusters(rt, f, &ex, &u1));
  NOT_INIT(T->graph_begin(rt));
  NOT_INIT(T->graph_end(rt, &g_out));
  NOT_INIT(T->graph_launch(rt, g));
  NOT_INIT(T->graph_set_kernel_args(rt, g, 0, NULL));
  NOT_INIT(T->graph_info(rt, g, &gi));
  NOT_INIT(T->graph_release(rt, g));
  t4a_alloc_event ev;
  uint32_t count;
  NOT_INIT(T->alloc_log_read(rt, 0, &ev, 1, &count, &u)); /* v1.2 */
#undef NOT_INIT
  /* the ones that need no driver work (the header lists them) */
  t4a_error_info e = {.struct_size = sizeof e};
  RT_OK(T->last_error(&e));
  ck_assert_int_eq(e.status, T4A_ENOTINIT);
  ck_assert_ptr_nonnull(strstr(e.message, "call init() first"));
  t4a_backend_info bi = {.struct_size = sizeof bi};
  RT_OK(T->get_info(&bi));
  t4a_compiler_info ci = {.struct_size = sizeof ci};
  RT_OK(T->compiler_info(&ci));
  const char *arch[] = {"-arch=sm_90"};
  co.device_ordinal = -1;
  co.options = arch;
  co.option_count = 1;
  setenv("T4A_CACHE_DIR", "", 1);
  t4a_artifact compiled = {0};
  /* without a device no driver is needed (the host compiles with the host
   * C++ compiler: it takes no GPU code, so `a` stayed null there) */
  RT_EXPECT(T->artifact_compile(&co, &compiled), ci.status == T4A_OK ? T4A_OK : T4A_ENOCOMPILER);
  if (rt_on_host()) { /* its artifact is the compiled one */
    a = compiled;
    compiled.bits = 0;
    if (!a.bits) {
      t4a_compile_cache_stats ccs = {.struct_size = sizeof ccs};
      RT_OK(T->compile_cache_stats(&ccs));
      RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
      RT_REST_IS_CUDA_ONLY("artifact_data/artifact_log need an artifact (no host C++ compiler)");
    }
  }
  if (compiled.bits)
    RT_OK(T->artifact_release(compiled));
  t4a_artifact_kind kind;
  const void *data;
  const char *log;
  RT_OK(T->artifact_data(a, &kind, &data, &u));
  ck_assert_int_eq(kind, rt_on_host() ? T4A_ARTIFACT_HOST : T4A_ARTIFACT_PTX);
  RT_OK(T->artifact_log(a, &log, &u));
  t4a_compile_cache_stats ccs = {.struct_size = sizeof ccs};
  RT_OK(T->compile_cache_stats(&ccs));
  RT_OK(T->compile_cache_clear(T4A_CACHE_MEMORY));
  RT_OK(T->artifact_release(a));
}
END_TEST

/* Info structs: an older caller's struct_size (down to the v1.0 size) gets
 * exactly that many bytes written, a newer caller's bigger one gets ours,
 * and on return struct_size says how many bytes were written; below v1.0
 * is T4A_EINVAL with nothing written. `fill` calls the slot. */
typedef int (*fill_fn)(void *info);

static void check_struct_size(const char *what, fill_fn fill, size_t ours, size_t v1_0) {
  unsigned char ref[1024], buf[1024];
  ck_assert_uint_le(ours + 64, sizeof buf);
  memset(ref, 0x5a, sizeof ref);
  uint32_t size = (uint32_t)ours;
  memcpy(ref, &size, 4);
  RT_OK(fill(ref));
  const size_t sizes[] = {v1_0, (v1_0 + ours + 1) / 2, ours, ours + 1, ours + 40};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    memset(buf, 0x5a, sizeof buf);
    size = (uint32_t)sizes[i];
    memcpy(buf, &size, 4);
    RT_OK(fill(buf));
    size_t written = sizes[i] < ours ? sizes[i] : ours;
    memcpy(&size, buf, 4);
    ck_assert_msg(size == written, "%s with struct_size %zu: says %u bytes, wrote %zu", what,
                  sizes[i], size, written);
    size_t known = written < v1_0 ? written : v1_0; /* beyond v1.0: padding */
    ck_assert_msg(memcmp(buf + 4, ref + 4, known - 4) == 0, "%s with struct_size %zu: content",
                  what, sizes[i]);
    for (size_t k = written; k < sizeof buf; k++)
      ck_assert_msg(buf[k] == 0x5a, "%s with struct_size %zu: byte %zu written", what, sizes[i], k);
  }
  memset(buf, 0x5a, sizeof buf);
  size = (uint32_t)v1_0 - 1;
  memcpy(buf, &size, 4);
  RT_EXPECT(fill(buf), T4A_EINVAL);
  RT_DETAIL("struct_size");
  memcpy(&size, buf, 4);
  ck_assert_uint_eq(size, v1_0 - 1);
  for (size_t k = 4; k < sizeof buf; k++)
    ck_assert_msg(buf[k] == 0x5a, "%s below v1.0: byte %zu written", what, k);
}

static t4a_runtime sz_rt;
static t4a_function sz_fn;
static int fill_error(void *p) { return T->last_error(p); }
static int fill_backend(void *p) { return T->get_info(p); }
static int fill_device(void *p) { return T->device_info(0, p); }
static int fill_compiler(void *p) { return T->compiler_info(p); }
static int fill_counters(void *p) { return T->runtime_counters(sz_rt, p); }
static int fill_cache(void *p) { return T->cache_stats(sz_rt, p); }
static int fill_compile_cache(void *p) { return T->compile_cache_stats(p); }
static int fill_attributes(void *p) { return T->function_attributes(sz_rt, sz_fn, p); }
static int fill_raw(void *p) { return T->raw_runtime(sz_rt, p); }

START_TEST(info_structs_honour_struct_size) {
  setenv("T4A_CACHE_DIR", "", 1); /* compile cache stats must not move under us */
  sz_rt = rt_create();
  t4a_artifact a = rt_test_artifact(); /* a function for function_attributes */
  t4a_module m;
  RT_OK(T->module_load(sz_rt, a, &m));
  RT_OK(T->function_get(sz_rt, m, "t4a_bounded", &sz_fn));
  RT_OK(T->artifact_release(a));
  t4a_buffer x; /* something for the counters and the cache to show */
  RT_OK(T->buffer_alloc(sz_rt, 4096, &x));
  RT_OK(T->buffer_free(sz_rt, x));
  RT_EXPECT(T->buffer_size(sz_rt, x, NULL), T4A_EINVAL); /* a last error to read */
  check_struct_size("t4a_error_info", fill_error, sizeof(t4a_error_info), T4A_ERROR_INFO_V1_0_SIZE);
  check_struct_size("t4a_backend_info", fill_backend, sizeof(t4a_backend_info),
                    T4A_BACKEND_INFO_V1_0_SIZE);
  check_struct_size("t4a_device_info", fill_device, sizeof(t4a_device_info),
                    T4A_DEVICE_INFO_V1_0_SIZE);
  check_struct_size("t4a_compiler_info", fill_compiler, sizeof(t4a_compiler_info),
                    T4A_COMPILER_INFO_V1_0_SIZE);
  check_struct_size("t4a_runtime_counters", fill_counters, sizeof(t4a_runtime_counters),
                    T4A_RUNTIME_COUNTERS_V1_0_SIZE);
  check_struct_size("t4a_cache_stats", fill_cache, sizeof(t4a_cache_stats),
                    T4A_CACHE_STATS_V1_0_SIZE);
  check_struct_size("t4a_compile_cache_stats", fill_compile_cache, sizeof(t4a_compile_cache_stats),
                    T4A_COMPILE_CACHE_STATS_V1_0_SIZE);
  check_struct_size("t4a_function_attributes", fill_attributes, sizeof(t4a_function_attributes),
                    T4A_FUNCTION_ATTRIBUTES_V1_0_SIZE);
  if (!rt_on_host()) /* no raw seam (a NULL slot) on the host */
    check_struct_size("t4a_raw_runtime", fill_raw, sizeof(t4a_raw_runtime),
                      T4A_RAW_RUNTIME_V1_0_SIZE);
  RT_OK(T->runtime_destroy(sz_rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- runtimes --------------------------------------------------------------- */

START_TEST(runtime_create_and_destroy) {
  t4a_runtime a = rt_create(), b = rt_create();
  ck_assert(a.bits != b.bits);
  if (rt_on_host()) {
    ck_assert_ptr_null(T->raw_runtime); /* no stream to hand out */
  } else {
    t4a_raw_runtime ra = {.struct_size = sizeof ra}, rb = {.struct_size = sizeof rb};
    RT_OK(T->raw_runtime(a, &ra));
    RT_OK(T->raw_runtime(b, &rb));
    ck_assert_ptr_nonnull(ra.stream);
    ck_assert_ptr_ne(ra.stream, rb.stream);   /* one stream each */
    ck_assert_ptr_eq(ra.context, rb.context); /* the device's primary context */
    ck_assert_int_eq(ra.device_ordinal, 0);
  }
  t4a_runtime_counters c = rt_counters(a);
  ck_assert_uint_eq(c.struct_size, sizeof c);
  ck_assert_uint_eq(c.staging_bytes, 64 * MiB);
  ck_assert_uint_eq(c.seals, 0);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_EXPECT(T->runtime_destroy(a, T4A_WAIT_FOREVER), T4A_EHANDLE);
  RT_DETAIL("destroyed");
  RT_OK(T->runtime_destroy(b, 0));
}
END_TEST

START_TEST(runtime_options_are_checked) {
  t4a_runtime rt = {0};
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = 0x80}; /* unknown */
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("flags");
  o.flags = 0;
  o.struct_size = 8;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("struct_size is 8");
  o.struct_size = sizeof o;
  o.staging_bytes = 1024;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("staging_bytes");
  o.staging_bytes = (16ull << 30) + 4096; /* above the 16 GiB of design.md */
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("staging_bytes");
  o.staging_bytes = 0;
  o.copy_threads = 1000;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_EXPECT(T->runtime_create(-1, NULL, &rt), T4A_EINVAL);
  RT_EXPECT(T->runtime_create(64, NULL, &rt), T4A_EINVAL);
  RT_EXPECT(T->runtime_create(0, NULL, NULL), T4A_EINVAL);
  ck_assert(rt.bits == 0);
  /* a newer caller's bigger options struct is fine */
  struct {
    t4a_runtime_options v1;
    uint64_t future;
  } big;
  memset(&big, 0, sizeof big);
  big.v1.struct_size = sizeof big;
  big.v1.staging_bytes = 1 * MiB;
  RT_OK(T->runtime_create(0, &big.v1, &rt));
  ck_assert_uint_eq(rt_counters(rt).staging_bytes, 1 * MiB);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(destroy_waits_for_outstanding_work) {
  t4a_runtime rt = rt_create();
  rt_gate g;
  rt_gate_close(&g, rt);
  RT_EXPECT(T->runtime_destroy(rt, 1000000), T4A_ETIMEOUT); /* 1 ms */
  RT_DETAIL("nothing was released");
  t4a_buffer d; /* still usable */
  RT_OK(T->buffer_alloc(rt, 16, &d));
  rt_gate_open(&g);
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

typedef struct opener {
  volatile uint32_t *flag;
  long delay_ms;
} opener;

static void *open_later(void *arg) {
  opener *o = arg;
  struct timespec ts = {o->delay_ms / 1000, o->delay_ms % 1000 * 1000000};
  nanosleep(&ts, NULL);
  __atomic_store_n(o->flag, 1u, __ATOMIC_SEQ_CST);
  return NULL;
}

/* runtime_destroy returns only once the runtime's work ran: a kernel held
 * behind a gate (opened by another thread while destroy waits) has written
 * its data by then. The memory it writes is another runtime's, so it
 * outlives the destroyed one. (A driver whose stream destroy blocked would
 * hide a destroy that forgot to wait; CUDA's, and the fake's, return at
 * once.) */
/* The host lane's form: a copy held behind the host's gate writes memory
 * the consumer registered (it outlives the runtime), the gate opened by
 * another thread while destroy waits. */
static void destroy_returns_after_the_work_ran_on_host(void) {
  t4a_runtime rt = rt_create();
  uint64_t n = 1 << 16;
  uint32_t *data = malloc(n * 4);
  ck_assert_ptr_nonnull(data);
  memset(data, 0, n * 4);
  t4a_host_buffer hb;
  RT_OK(T->host_register(rt, data, n * 4, 0, &hb));
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, n * 4, &d));
  rt_gate g;
  rt_gate_close(&g, rt);
  uint32_t value = 0xd0d0cafe;
  RT_OK(T->memset(rt, d, 0, value, 4, n));
  RT_OK(T->copy_d2h_pinned(rt, hb, 0, d, 0, n * 4));
  rt_gate_open_later(&g, 100);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  ck_assert(rt_gate_is_open(&g)); /* it waited for the gate */
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(data[i], value);
  pthread_join(g.opener, NULL);
  free(g.word); /* the runtime (and the gate's registration) is gone */
  free(data);
}

START_TEST(destroy_returns_after_the_work_ran) {
  if (rt_on_host()) {
    destroy_returns_after_the_work_ran_on_host();
    return;
  }
  t4a_runtime rt = rt_create(), keeper = rt_create();
  uint64_t n = 1 << 16;
  t4a_host_buffer hb;
  void *p;
  RT_OK(T->host_alloc(keeper, 64 + n * 4, 0, &hb, &p));
  memset(p, 0, 64 + n * 4);
  volatile uint32_t *flag = p;
  uint32_t *data = (uint32_t *)((char *)p + 64);
  void *module = NULL;
  uint64_t flag_addr = (uint64_t)(uintptr_t)p, data_addr = flag_addr + 64;
  void *spin_args[] = {&flag_addr};
  rt_raw_launch(rt, &module, "t4a_spin", spin_args);
  uint32_t value = 0xd0d0cafe;
  void *fill_args[] = {&data_addr, &value, &n};
  rt_raw_launch(rt, &module, "t4a_fill_u32", fill_args);
  opener o = {flag, 100};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, open_later, &o), 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(data[i], value);
  pthread_join(th, NULL);
  rt_raw_unload(keeper, module); /* one primary context: keeper's unloads it */
  RT_OK(T->host_free(keeper, hb));
  RT_OK(T->runtime_destroy(keeper, T4A_WAIT_FOREVER));
}
END_TEST

static unsigned stream_flags(t4a_runtime rt) {
  t4a__CUresult (*get_flags)(t4a__CUstream, unsigned *);
  *(void **)&get_flags = rt_driver("cuStreamGetFlags");
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  unsigned flags = 0xdead;
  ck_assert_int_eq(get_flags(raw.stream, &flags), 0);
  RT_OK(T->raw_end(rt, &sec));
  return flags;
}

/* What the runtime's pool has carved (live buffers and cached blocks). */
static uint64_t pool_used(t4a_runtime rt) {
  t4a_memory_info mi = {.struct_size = sizeof mi};
  RT_OK(T->runtime_memory_info(rt, &mi));
  return mi.pool_used;
}

START_TEST(runtime_options_take_effect) {
  /* the stream never synchronises with the legacy default stream (a
   * CUDA stream's flag: the host has no stream) */
  t4a_runtime rt = rt_create();
  if (!rt_on_host())
    ck_assert_uint_eq(stream_flags(rt) & T4A__CU_STREAM_NON_BLOCKING, T4A__CU_STREAM_NON_BLOCKING);
  ck_assert_uint_eq(rt_cache(rt).limit_bytes, 1ull << 30); /* the default cache bound */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  /* the cache bound: blocks beyond it go back to the pool */
  rt = rt_create_with(0, 1 * MiB);
  ck_assert_uint_eq(rt_cache(rt).limit_bytes, 1 * MiB);
  t4a_buffer b[4];
  for (int i = 0; i < 4; i++)
    RT_OK(T->buffer_alloc(rt, 512 * KiB, &b[i]));
  t4a_runtime_counters before = rt_counters(rt);
  uint64_t frees = rt_fake_calls("cuMemFreeAsync"), used = pool_used(rt);
  for (int i = 0; i < 4; i++)
    RT_OK(T->buffer_free(rt, b[i]));
  t4a_cache_stats cs = rt_cache(rt);
  ck_assert_uint_eq(cs.entries, 2);
  ck_assert_uint_eq(cs.bytes, 1 * MiB);
  if (rt_on_host()) { /* the host's driver calls are its pool's mappings (64 MiB chunks): the
                         two blocks went back to the pool, whose chunk stays mapped (the
                         cached two live in it) */
    ck_assert_uint_eq(used - pool_used(rt), 1 * MiB);
    ck_assert_uint_eq(rt_counters(rt).driver_frees, before.driver_frees);
  } else {
    ck_assert_uint_eq(rt_counters(rt).driver_frees - before.driver_frees, 2);
  }
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_calls("cuMemFreeAsync") - frees, 2);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  /* reserved must be 0 in ABI 1.0, like flags */
  t4a_runtime_options o = {.struct_size = sizeof o, .reserved = 1};
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("reserved");
}
END_TEST

/* Synchronises the runtime's stream through the raw seam: CUDA's pools
 * give memory above their release threshold back at a synchronisation. */
static void raw_synchronize(t4a_runtime rt) {
  if (rt_on_host()) { /* no stream: a seal and wait is the host's synchronisation */
    rt_sync(rt);
    return;
  }
  t4a__CUresult (*sync)(t4a__CUstream);
  *(void **)&sync = rt_driver("cuStreamSynchronize");
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(sync(raw.stream), 0);
  RT_OK(T->raw_end(rt, &sec));
}

/* pool_release_threshold: a runtime's pool keeps freed memory up to it
 * across synchronisations (by default all of it, until cache_trim), as
 * runtime_memory_info shows; an allocation of another runtime that would
 * otherwise fail still gets it (the driver reclaims unused pool memory:
 * seen on the H200, driver 580). */
START_TEST(pool_release_threshold_is_honoured) {
  uint64_t big = DEV.total_memory / 10 * 6;
  /* another runtime that gives its own memory back at each synchronisation */
  t4a_runtime_options lean = {
      .struct_size = sizeof lean, .cache_limit_bytes = 1, .pool_release_threshold = 1};
  t4a_runtime other;
  RT_OK(T->runtime_create(0, &lean, &other));
  for (int keep_all = 0; keep_all < 2; keep_all++) {
    t4a_runtime_options o = {.struct_size = sizeof o,
                             .cache_limit_bytes = 1, /* no block cache: frees reach the pool */
                             .pool_release_threshold = keep_all ? 0 : 1};
    t4a_runtime rt;
    RT_OK(T->runtime_create(0, &o, &rt));
    t4a_buffer x, y;
    RT_OK(T->buffer_alloc(rt, big, &x));
    RT_OK(T->buffer_free(rt, x));
    raw_synchronize(rt);
    t4a_memory_info mi = {.struct_size = sizeof mi};
    RT_OK(T->runtime_memory_info(rt, &mi));
    ck_assert_uint_eq(mi.pool_used, 0);
    if (keep_all) { /* the default (UINT64_MAX) keeps it reserved ... */
      ck_assert_uint_ge(mi.pool_reserved, big);
      RT_OK(T->cache_trim(rt, 0)); /* ... until the runtime trims its pool */
      RT_OK(T->runtime_memory_info(rt, &mi));
    }
    ck_assert_uint_lt(mi.pool_reserved, big); /* given back */
    RT_OK(T->buffer_alloc(other, big, &y));
    RT_OK(T->buffer_free(other, y));
    raw_synchronize(other);
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  }
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- buffers and handles ------------------------------------------------------ */

START_TEST(buffers_and_handle_validation) {
  t4a_runtime a = rt_create(), b = rt_create();
  t4a_buffer x, z;
  RT_OK(T->buffer_alloc(a, 1000, &x));
  RT_OK(T->buffer_alloc(a, 0, &z)); /* zero bytes is valid */
  uint64_t n = 1;
  RT_OK(T->buffer_size(a, z, &n));
  ck_assert_uint_eq(n, 0);
  RT_OK(T->buffer_size(a, x, &n));
  ck_assert_uint_eq(n, 1000);
  uint64_t addr = 0;
  RT_OK(T->buffer_device_address(a, x, &addr));
  ck_assert(addr != 0);
  /* foreign: a's buffer through b */
  RT_EXPECT(T->buffer_size(b, x, &n), T4A_EHANDLE);
  RT_DETAIL("belongs to runtime");
  RT_EXPECT(T->buffer_free(b, x), T4A_EHANDLE);
  /* wrong type, null, forged */
  t4a_buffer as_buffer = {a.bits};
  RT_EXPECT(T->buffer_size(a, as_buffer, &n), T4A_EHANDLE);
  t4a_buffer null = {0};
  RT_EXPECT(T->buffer_size(a, null, &n), T4A_EINVAL);
  t4a_buffer forged = {x.bits ^ (1ull << 30)};
  RT_EXPECT(T->buffer_size(a, forged, &n), T4A_EHANDLE);
  t4a_runtime as_runtime = {x.bits};
  RT_EXPECT(T->buffer_size(as_runtime, x, &n), T4A_EHANDLE);
  RT_EXPECT(T->buffer_size(a, x, NULL), T4A_EINVAL);
  /* freed: stale, and a double free is refused */
  RT_OK(T->buffer_free(a, x));
  RT_EXPECT(T->buffer_size(a, x, &n), T4A_EHANDLE);
  RT_DETAIL("freed");
  RT_EXPECT(T->buffer_free(a, x), T4A_EHANDLE);
  /* the slot's next buffer gets a new generation: the old handle stays stale */
  t4a_buffer y;
  RT_OK(T->buffer_alloc(a, 1000, &y));
  ck_assert(y.bits != x.bits);
  RT_EXPECT(T->buffer_size(a, x, &n), T4A_EHANDLE);
  RT_OK(T->buffer_free(a, z));
  /* destroy with y still held: it is released and its handle goes stale */
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_EXPECT(T->buffer_size(a, y, &n), T4A_EHANDLE);
  RT_EXPECT(T->buffer_alloc(a, 1, &y), T4A_EHANDLE);
  ck_assert(y.bits == 0);
  /* b is untouched */
  RT_OK(T->buffer_alloc(b, 1, &y));
  RT_OK(T->buffer_free(b, y));
  RT_EXPECT(T->buffer_alloc(b, 1ull << 50, &y), T4A_ENOMEM);
  RT_EXPECT(T->buffer_alloc(b, 1, NULL), T4A_EINVAL);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(steady_state_allocation_makes_no_driver_call) {
  t4a_runtime rt = rt_create();
  static const uint64_t sizes[] = {256, 1000, 1 * MiB, 3 * MiB + 5, 64 * MiB};
  for (int warm = 0; warm < 2; warm++) {
    t4a_runtime_counters before = rt_counters(rt);
    /* the counters' claim, checked against the driver's own count (fake lane) */
    uint64_t allocs = rt_fake_calls("cuMemAllocFromPoolAsync"),
             frees = rt_fake_calls("cuMemFreeAsync");
    for (int round = 0; round < 100; round++) {
      t4a_buffer b[5];
      for (int i = 0; i < 5; i++)
        RT_OK(T->buffer_alloc(rt, sizes[i], &b[i]));
      for (int i = 0; i < 5; i++)
        RT_OK(T->buffer_free(rt, b[i]));
    }
    t4a_runtime_counters after = rt_counters(rt);
    if (warm) { /* every pair after the first round is served by the cache */
      ck_assert_uint_eq(after.driver_allocations, before.driver_allocations);
      ck_assert_uint_eq(after.driver_frees, before.driver_frees);
      ck_assert_uint_eq(after.cache_hits - before.cache_hits, 500);
      ck_assert_uint_eq(rt_fake_calls("cuMemAllocFromPoolAsync"), allocs);
      ck_assert_uint_eq(rt_fake_calls("cuMemFreeAsync"), frees);
    }
  }
  t4a_cache_stats s = rt_cache(rt);
  ck_assert_uint_eq(s.entries, 5);
  ck_assert_uint_ge(s.bytes, 256 + 1000 + 4 * MiB + 64 * MiB);
  ck_assert_uint_le(s.bytes, (256 + 1000 + 4 * MiB + 64 * MiB) * 9 / 8 + 512);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* A runtime created in a destroyed runtime's slot (the runtime index every
 * handle carries) starts with fresh handle tables; the dead runtime's
 * handles, its buffers' and host buffers' included, must not name the new
 * runtime's objects: each publication takes a generation from one
 * process-wide sequence, not the entry's own count (which would restart at
 * 1 in a fresh table). */
START_TEST(a_reused_runtime_slot_keeps_old_handles_stale) {
  t4a_runtime a = rt_create();
  t4a_buffer ba;
  t4a_host_buffer ha;
  void *p;
  RT_OK(T->buffer_alloc(a, 64, &ba));
  RT_OK(T->host_alloc(a, 64, 0, &ha, &p));
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  /* the lowest free slot is reused: a's, unless another is free below it */
  t4a_runtime b[8];
  int n = 0, same = -1;
  while (same < 0 && n < 8) {
    b[n] = rt_create();
    if ((b[n].bits >> 48 & 0xfff) == (a.bits >> 48 & 0xfff)) /* the handle's runtime index */
      same = n;
    n++;
  }
  ck_assert_msg(same >= 0, "no new runtime reused the destroyed runtime's slot");
  t4a_runtime r = b[same];
  ck_assert_uint_ne(r.bits, a.bits);
  t4a_runtime_counters c = {.struct_size = sizeof c};
  RT_EXPECT(T->runtime_counters(a, &c), T4A_EHANDLE);
  t4a_buffer bb;
  t4a_host_buffer hb;
  RT_OK(T->buffer_alloc(r, 64, &bb));
  RT_OK(T->host_alloc(r, 64, 0, &hb, &p));
  ck_assert_uint_ne(bb.bits, ba.bits);
  ck_assert_uint_ne(hb.bits, ha.bits);
  uint64_t size = 0;
  RT_EXPECT(T->buffer_size(r, ba, &size), T4A_EHANDLE);
  RT_EXPECT(T->host_free(r, ha), T4A_EHANDLE);
  RT_OK(T->buffer_size(r, bb, &size));
  ck_assert_uint_eq(size, 64);
  RT_OK(T->host_free(r, hb));
  for (int i = 0; i < n; i++)
    RT_OK(T->runtime_destroy(b[i], T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(out_of_memory_trims_retries_and_recovers) {
  t4a_runtime rt = rt_create_with(0, UINT64_MAX); /* an unbounded cache */
  uint64_t big = DEV.total_memory / 10 * 6;
  t4a_buffer a, b;
  RT_OK(T->buffer_alloc(rt, big, &a));
  RT_OK(T->buffer_free(rt, a)); /* cached: the pool cannot give it to others */
  ck_assert_uint_eq(rt_cache(rt).entries, 1);
  /* a different class that fits only once the cache is trimmed */
  RT_OK(T->buffer_alloc(rt, big - big / 5, &b));
  ck_assert_uint_eq(rt_cache(rt).entries, 0);
  RT_OK(T->buffer_free(rt, b));
  /* beyond the device: T4A_ENOMEM, and the runtime keeps working */
  RT_EXPECT(T->buffer_alloc(rt, DEV.total_memory * 2, &a), T4A_ENOMEM);
  RT_DETAIL(rt_on_host() ? "T4A_HOST_POOL_LIMIT" : "no room"); /* what bounds it */
  RT_OK(T->buffer_alloc(rt, MiB, &a));
  uint32_t v = 0x12345678, back = 0;
  RT_OK(T->copy_h2d(rt, a, 12, &v, 4));
  RT_OK(T->copy_d2h(rt, &back, a, 12, 4));
  ck_assert_uint_eq(back, v);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- the block cache ------------------------------------------------------------ */

START_TEST(trimming_one_runtime_leaves_the_other) {
  t4a_runtime a = rt_create(), b = rt_create();
  t4a_buffer x;
  RT_OK(T->buffer_alloc(a, 4 * MiB, &x));
  RT_OK(T->buffer_free(a, x));
  RT_OK(T->buffer_alloc(b, 4 * MiB, &x));
  RT_OK(T->buffer_free(b, x));
  ck_assert_uint_eq(rt_cache(a).entries, 1);
  ck_assert_uint_eq(rt_cache(b).entries, 1);
  RT_OK(T->cache_trim(a, 0));
  ck_assert_uint_eq(rt_cache(a).entries, 0);
  ck_assert_uint_eq(rt_cache(a).bytes, 0);
  ck_assert_uint_eq(rt_cache(b).entries, 1);
  /* destroying a leaves b's memory and work alone */
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->buffer_alloc(b, 4 * MiB, &x));
  ck_assert_uint_eq(rt_counters(b).cache_hits, 1);
  unsigned char *h = malloc(4 * MiB), *back = malloc(4 * MiB);
  t4a_test_fill_random(h, 4 * MiB, t4a_test_seed());
  RT_OK(T->copy_h2d(b, x, 0, h, 4 * MiB));
  memset(back, 0, 4 * MiB);
  RT_OK(T->copy_d2h(b, back, x, 0, 4 * MiB));
  ck_assert_mem_eq(h, back, 4 * MiB);
  free(h);
  free(back);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(cache_trim_keeps_bytes_and_stats_count) {
  t4a_runtime rt = rt_create();
  static const uint64_t sizes[] = {1 * MiB, 2 * MiB, 4 * MiB, 8 * MiB}; /* exact classes */
  t4a_buffer b[4];
  for (int i = 0; i < 4; i++)
    RT_OK(T->buffer_alloc(rt, sizes[i], &b[i]));
  for (int i = 0; i < 4; i++)
    RT_OK(T->buffer_free(rt, b[i]));
  t4a_cache_stats s = rt_cache(rt);
  ck_assert_uint_eq(s.struct_size, sizeof s);
  ck_assert_uint_eq(s.entries, 4);
  ck_assert_uint_eq(s.bytes, 15 * MiB);
  ck_assert_uint_eq(s.hits, 0);
  ck_assert_uint_eq(s.misses, 4);
  ck_assert_uint_eq(s.limit_bytes, 1ull << 30);
  ck_assert_uint_eq(s.pinned_entries, 0);
  ck_assert_uint_eq(s.pinned_bytes, 0);
  RT_OK(T->buffer_alloc(rt, 2 * MiB, &b[0])); /* a hit takes the block out */
  s = rt_cache(rt);
  ck_assert_uint_eq(s.hits, 1);
  ck_assert_uint_eq(s.entries, 3);
  ck_assert_uint_eq(s.bytes, 13 * MiB);
  ck_assert_uint_eq(rt_counters(rt).cache_hits, 1);
  RT_OK(T->buffer_free(rt, b[0]));
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, 100, 0, &h, &p)); /* pinned blocks are at least a page */
  RT_OK(T->host_free(rt, h));
  s = rt_cache(rt);
  /* the host keeps no pinned cache: host_free unmaps (docs/design.md) */
  ck_assert_uint_eq(s.pinned_entries, rt_on_host() ? 0 : 1);
  ck_assert_uint_eq(s.pinned_bytes, rt_on_host() ? 0 : 4096);
  /* trimming stops once at most keep_bytes remain, largest blocks first
   * (memory.c's documented order) */
  uint64_t frees = rt_counters(rt).driver_frees, calls = rt_fake_calls("cuMemFreeAsync");
  uint64_t used = pool_used(rt);
  RT_OK(T->cache_trim(rt, 6 * MiB));
  s = rt_cache(rt);
  ck_assert_uint_eq(s.entries, 2);
  ck_assert_uint_eq(s.bytes, 3 * MiB);
  if (rt_on_host()) /* back to the pool; their chunk holds the other two (see above) */
    ck_assert_uint_eq(used - pool_used(rt), 12 * MiB);
  else
    ck_assert_uint_eq(rt_counters(rt).driver_frees - frees, 2);
  if (rt_on_fake())
    ck_assert_uint_eq(rt_fake_calls("cuMemFreeAsync") - calls, 2);
  RT_OK(T->cache_trim(rt, UINT64_MAX)); /* nothing to do */
  ck_assert_uint_eq(rt_cache(rt).entries, 2);
  RT_OK(T->cache_trim(rt, 0));
  s = rt_cache(rt);
  ck_assert_uint_eq(s.entries, 0);
  ck_assert_uint_eq(s.bytes, 0);
  if (rt_on_host()) { /* now the pool is empty and trimmed: every chunk unmapped */
    t4a_memory_info mi = {.struct_size = sizeof mi};
    RT_OK(T->runtime_memory_info(rt, &mi));
    ck_assert_uint_eq(mi.pool_used, 0);
    ck_assert_uint_eq(mi.pool_reserved, 0);
    ck_assert_uint_gt(rt_counters(rt).driver_frees, frees);
  }
  ck_assert_uint_eq(s.pinned_entries, rt_on_host() ? 0 : 1); /* not the device cache */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- pinned host buffers -------------------------------------------------------- */

START_TEST(write_combined_pinned_memory_works) {
  t4a_runtime rt = rt_create();
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(rt, 4096, T4A_HOST_WRITE_COMBINED, &h, &p));
  t4a_test_fill_random(p, 4096, 7);
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 4096, &d));
  RT_OK(T->copy_h2d_pinned(rt, d, 0, h, 0, 4096));
  unsigned char back[4096], want[4096];
  t4a_test_fill_random(want, 4096, 7);
  RT_OK(T->copy_d2h(rt, back, d, 0, 4096));
  ck_assert(memcmp(back, want, 4096) == 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* The flags the driver got for a host buffer. */
static unsigned host_flags(t4a_runtime rt, void *p) {
  t4a__CUresult (*get_flags)(unsigned *, void *);
  *(void **)&get_flags = rt_driver("cuMemHostGetFlags");
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  unsigned flags = 0;
  ck_assert_int_eq(get_flags(&flags, p), 0);
  RT_OK(T->raw_end(rt, &sec));
  return flags & (T4A__CU_MEMHOSTALLOC_PORTABLE | T4A__CU_MEMHOSTALLOC_WRITECOMBINED);
}

START_TEST(host_buffers_are_portable_and_write_combined_on_request) {
  t4a_runtime rt = rt_create();
  t4a_host_buffer h, w, again;
  void *p, *q, *r;
  RT_OK(T->host_alloc(rt, 8192, 0, &h, &p));
  ck_assert_uint_eq(host_flags(rt, p), T4A__CU_MEMHOSTALLOC_PORTABLE);
  RT_OK(T->host_alloc(rt, 8192, T4A_HOST_WRITE_COMBINED, &w, &q));
  ck_assert_uint_eq(host_flags(rt, q),
                    T4A__CU_MEMHOSTALLOC_PORTABLE | T4A__CU_MEMHOSTALLOC_WRITECOMBINED);
  /* a cached write-combined block is not handed to a plain request */
  RT_OK(T->host_free(rt, w));
  RT_OK(T->host_alloc(rt, 8192, 0, &again, &r));
  ck_assert_uint_eq(host_flags(rt, r), T4A__CU_MEMHOSTALLOC_PORTABLE);
  RT_OK(T->host_free(rt, h));
  RT_OK(T->host_free(rt, again));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

#ifdef T4A_TEST_HOST
/* Every handle of one backend is T4A_EHANDLE in the other: runtime,
 * buffer, host buffer and witness of each, given to the other backend's
 * slots with a live runtime of its own. Both backends in one process,
 * opened through the loader (the CUDA plugin on the fake driver). */
static void assert_foreign(const t4a_gpu_backend_v1 *X, t4a_runtime mine, t4a_runtime rt,
                           t4a_buffer b, t4a_host_buffer hb, t4a_witness w, const char *who) {
  uint64_t n = 0;
  t4a_runtime_counters c = {.struct_size = sizeof c};
  t4a_buffer own;
  int rc[] = {X->runtime_counters(rt, &c),
              X->buffer_alloc(rt, 16, &own),
              X->buffer_size(mine, b, &n),
              X->buffer_free(mine, b),
              X->host_free(mine, hb),
              X->copy_h2d_pinned(mine, b, 0, hb, 0, 1),
              X->witness_query(w),
              X->witness_wait(w, 0),
              X->witness_retain(w),
              X->witness_release(w),
              X->runtime_wait_witness(mine, w),
              X->copy_from_runtime(mine, b, 0, rt, b, 0, 1),
              X->runtime_destroy(rt, 0)};
  for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++)
    ck_assert_msg(rc[i] == T4A_EHANDLE, "%s: call %zu on the other backend's handles: %s", who, i,
                  t4a_status_name(rc[i]));
}

START_TEST(handles_of_the_other_backend_are_refused) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  const t4a_gpu_backend_v1 *C;
  t4a_gpu_backend *cuda = t4a_test_open_cuda(&C);
  ck_assert_int_eq(C->init(), T4A_OK);
  t4a_runtime hr = rt_create(), cr;
  ck_assert_int_eq(C->runtime_create(0, NULL, &cr), T4A_OK);
  t4a_buffer hbuf, cbuf;
  t4a_host_buffer hhost, chost;
  void *hp, *cp;
  RT_OK(T->buffer_alloc(hr, 4096, &hbuf));
  RT_OK(T->host_alloc(hr, 4096, 0, &hhost, &hp));
  ck_assert_int_eq(C->buffer_alloc(cr, 4096, &cbuf), T4A_OK);
  ck_assert_int_eq(C->host_alloc(cr, 4096, 0, &chost, &cp), T4A_OK);
  t4a_test_fill_random(hp, 4096, 1);
  t4a_test_fill_random(cp, 4096, 2);
  t4a_witness hw, cw;
  RT_OK(T->copy_h2d_pinned(hr, hbuf, 0, hhost, 0, 4096));
  RT_OK(T->seal(hr, &hw));
  ck_assert_int_eq(C->copy_h2d_pinned(cr, cbuf, 0, chost, 0, 4096), T4A_OK);
  ck_assert_int_eq(C->seal(cr, &cw), T4A_OK);
  assert_foreign(T, hr, cr, cbuf, chost, cw, "host backend");
  assert_foreign(C, cr, hr, hbuf, hhost, hw, "cuda backend");
  /* both untouched: each backend's data round trip */
  unsigned char back[4096];
  RT_OK(T->copy_d2h(hr, back, hbuf, 0, sizeof back));
  ck_assert(memcmp(back, hp, sizeof back) == 0);
  ck_assert_int_eq(C->copy_d2h(cr, back, cbuf, 0, sizeof back), T4A_OK);
  ck_assert(memcmp(back, cp, sizeof back) == 0);
  RT_OK(T->witness_release(hw));
  ck_assert_int_eq(C->witness_release(cw), T4A_OK);
  ck_assert_int_eq(C->runtime_destroy(cr, T4A_WAIT_FOREVER), T4A_OK);
  RT_OK(T->runtime_destroy(hr, T4A_WAIT_FOREVER));
  ck_assert_int_eq(t4a_gpu_close(cuda), T4A_OK);
}
END_TEST
#endif

int main(void) {
#ifdef T4A_TEST_FAKE
  /* The fake's device memory is host memory it fills at every allocation
   * (tests must write what they read); the pool tests allocate 60% of the
   * device twice per case, so a 256 MiB device keeps them quick on a
   * loaded CI machine. */
  setenv("FAKE_CUDA_MEM_MIB", "256", 0);
#endif
  Suite *s = rt_suite("runtime");
  TCase *tc;
  tc = tcase_create("backend");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, open_only, rt_teardown);
  tcase_add_test(tc, every_slot_needs_init_but_the_driver_free_ones);
  suite_add_tcase(s, tc);
  tc = rt_tcase(s, "structs-and-errors", 60);
  tcase_add_test(tc, last_error_is_per_thread_and_checked);
  tcase_add_test(tc, info_structs_honour_struct_size);
  tc = rt_tcase(s, "runtimes", 60);
  tcase_add_test(tc, runtime_create_and_destroy);
  tcase_add_test(tc, runtime_options_are_checked);
  tcase_add_test(tc, runtime_options_take_effect);
  tcase_add_test(tc, pool_release_threshold_is_honoured);
  tcase_add_test(tc, destroy_returns_after_the_work_ran);
  tcase_add_test(tc, destroy_waits_for_outstanding_work);
  tc = rt_tcase(s, "buffers", 120);
  tcase_add_test(tc, buffers_and_handle_validation);
  tcase_add_test(tc, a_reused_runtime_slot_keeps_old_handles_stale);
  tcase_add_test(tc, steady_state_allocation_makes_no_driver_call);
  tcase_add_test(tc, out_of_memory_trims_retries_and_recovers);
  tc = rt_tcase(s, "cache", 60);
  tcase_add_test(tc, trimming_one_runtime_leaves_the_other);
  tcase_add_test(tc, cache_trim_keeps_bytes_and_stats_count);
  tc = rt_tcase(s, "pinned", 60);
  tcase_add_test(tc, write_combined_pinned_memory_works);
  RT_CUDA_ONLY(tc, host_buffers_are_portable_and_write_combined_on_request,
               "the flags CUDA got for a host buffer (cuMemHostGetFlags); the host's are plain "
               "pages");
#ifdef T4A_TEST_HOST
  tc = rt_tcase(s, "two-backends", 60);
  tcase_add_test(tc, handles_of_the_other_backend_are_refused);
#endif
  return rt_run(s, 1);
}
