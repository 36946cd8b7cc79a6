/* tools/conform_backend.c -- conformance checks of the backend as a whole:
 * the table, get_info, the init gate (T4A_ENOTINIT before init, and after a
 * failed init), init itself (idempotent, concurrent, a failure replayed),
 * devices and peer access. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "tools/conform.h"

/* Any non-null bits: before init no handle can have been made, so every
 * handle is forged (the header never dereferences one). */
#define FORGED 0x0123456789abcdefull

static void table(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  CF_TRUE(t->abi_major == T4A_GPU_BACKEND_ABI_MAJOR, "abi_major is %u, want %u",
          (unsigned)t->abi_major, (unsigned)T4A_GPU_BACKEND_ABI_MAJOR);
  CF_TRUE(t->struct_size >= T4A_GPU_BACKEND_V1_0_SIZE, "struct_size %u is below the v1.0 size %zu",
          (unsigned)t->struct_size, (size_t)T4A_GPU_BACKEND_V1_0_SIZE);
  CF_TRUE(t->name && t->name[0], "the table's name is NULL or empty");
  CF_TRUE(t->version && t->version[0], "the table's version is NULL or empty");
}

static void get_info_before_init(t4a__cf *c) {
  t4a_backend_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  if (!CF_OK(c->t->get_info(&i)))
    return;
  i.name[sizeof i.name - 1] = '\0';
  CF_TRUE(i.abi_major == T4A_GPU_BACKEND_ABI_MAJOR, "abi_major %u", (unsigned)i.abi_major);
  CF_TRUE(i.name[0] != '\0', "name is empty");
  CF_TRUE(!c->t->name || strncmp(i.name, c->t->name, sizeof i.name - 1) == 0,
          "get_info names the backend '%s', the table '%.31s'", i.name, c->t->name);
  CF_TRUE(i.device_count == 0, "device_count is %d before init, want 0", (int)i.device_count);
  CF_TRUE(i.driver_version == 0 && i.driver_path[0] == '\0',
          "driver fields are not 0/empty before init (driver_version %d)", (int)i.driver_version);
}

typedef struct sweep {
  t4a__cf *c;
  struct {
    const char *name;
    int rc;
    bool silent; /* the status was right but last_error did not report it */
  } bad[64];
  unsigned nbad, calls;
} sweep;

/* One slot: `rc` must be `want` or `also`; a failure status must be in
 * last_error with a detail. */
static void one(sweep *s, const char *name, int rc, int want, int also) {
  s->calls++;
  char why[512];
  bool right = rc == want || rc == also;
  int st = t4a__cf_last_error(s->c->t, why, sizeof why);
  bool silent = right && rc != T4A_OK && (st != rc || !why[0]);
  if ((!right || silent) && s->nbad < 64) {
    s->bad[s->nbad].name = name;
    s->bad[s->nbad].rc = rc;
    s->bad[s->nbad++].silent = silent;
  }
}

/* Appends to out[size] at *n, never past its end. */
static void append(char *out, size_t size, size_t *n, const char *a, const char *b, const char *c) {
  if (*n + 1 >= size)
    return;
  int w = snprintf(out + *n, size - *n, "%s%s%s", a, b, c);
  *n = w < 0 ? *n : *n + (size_t)w >= size ? size - 1 : *n + (size_t)w;
}

/* "T4A_EHANDLE from a, b; T4A_OK from c": the slots that broke the rule,
 * grouped by what they returned. */
static void report_sweep(t4a__cf *c, sweep *s, const char *rule) {
  if (!s->calls) {
    t4a__cf_skip(c, "every slot of this group is NULL");
    return;
  }
  if (!s->nbad)
    return;
  char out[1000] = "";
  size_t n = 0;
  bool done[64] = {false};
  for (unsigned i = 0; i < s->nbad; i++) {
    if (done[i])
      continue;
    append(out, sizeof out, &n, n ? "; " : "", t4a_status_name(s->bad[i].rc),
           s->bad[i].silent ? " without last_error from " : " from ");
    for (unsigned j = i, k = 0; j < s->nbad; j++)
      if (!done[j] && s->bad[j].rc == s->bad[i].rc && s->bad[j].silent == s->bad[i].silent) {
        done[j] = true;
        append(out, sizeof out, &n, k++ ? ", " : "", s->bad[j].name, "");
      }
  }
  t4a__cf_fail(c, "%s: %u of %u slots: %s", rule, s->nbad, s->calls, out);
}

#define NI(slot, ...)                                                                              \
  do {                                                                                             \
    if (t->slot)                                                                                   \
      one(s, #slot, t->slot(__VA_ARGS__), T4A_ENOTINIT, T4A_ENOTINIT);                             \
  } while (0)

/* "Every other slot except last_error and get_info returns T4A_ENOTINIT
 * until init succeeded": the device slots, and runtime_create. */
static void sweep_devices(sweep *s) {
  const t4a_gpu_backend_v1 *t = s->c->t;
  int32_t n = 0;
  bool yes = false;
  t4a_device_info di = {.struct_size = sizeof di};
  t4a_runtime rt = {0};
  NI(device_count, &n);
  NI(device_info, 0, &di);
  NI(peer_access_supported, 0, 0, &yes);
  NI(runtime_create, 0, NULL, &rt);
  /* a compile for a device needs init ("the architecture of this device
   * (init required)"); only device_ordinal -1 is exempt */
  t4a_compile_options o = {.struct_size = sizeof o,
                           .source = "extern \"C\" __global__ void t4a_empty() {}\n",
                           .device_ordinal = 0};
  t4a_artifact a = {0};
  NI(artifact_compile, &o, &a);
  if (rt.bits && t->runtime_destroy) /* a backend that made one anyway: release it */
    t->runtime_destroy(rt, T4A_WAIT_FOREVER);
  if (a.bits && t->artifact_release)
    t->artifact_release(a);
}

/* The same rule for every slot that takes a runtime, buffer, host buffer,
 * witness, module or function handle. */
static void sweep_handles(sweep *s) {
  const t4a_gpu_backend_v1 *t = s->c->t;
  t4a_runtime rt = {FORGED};
  t4a_buffer b = {FORGED};
  t4a_host_buffer hb = {FORGED};
  t4a_witness w = {FORGED}, wo = {0};
  t4a_module m = {FORGED};
  t4a_function f = {FORGED};
  t4a_artifact a = {FORGED};
  t4a_runtime_counters rc = {.struct_size = sizeof rc};
  t4a_cache_stats cs = {.struct_size = sizeof cs};
  t4a_function_attributes fa = {.struct_size = sizeof fa};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  t4a_raw_section sec = {.struct_size = sizeof sec};
  uint64_t u = 0;
  void *p = NULL;
  unsigned char byte = 0;
  t4a_buffer bo = {0};
  t4a_host_buffer ho = {0};
  t4a_module mo = {0};
  t4a_function fo = {0};
  NI(runtime_destroy, rt, 0);
  NI(runtime_counters, rt, &rc);
  NI(buffer_alloc, rt, 16, &bo);
  NI(buffer_free, rt, b);
  NI(buffer_size, rt, b, &u);
  NI(cache_trim, rt, 0);
  NI(cache_stats, rt, &cs);
  NI(host_alloc, rt, 16, 0, &ho, &p);
  NI(host_free, rt, hb);
  NI(copy_h2d_pinned, rt, b, 0, hb, 0, 1);
  NI(copy_d2h_pinned, rt, hb, 0, b, 0, 1);
  NI(copy_h2d, rt, b, 0, &byte, 1);
  NI(copy_d2h, rt, &byte, b, 0, 1);
  NI(copy_d2d, rt, b, 0, b, 8, 1);
  NI(copy_from_runtime, rt, b, 0, rt, b, 0, 1);
  NI(copy_from_peer, rt, b, 0, rt, b, 0, 1);
  NI(copy_from_peer_via_host, rt, b, 0, rt, b, 0, 1);
  NI(seal, rt, &wo);
  NI(witness_query, w);
  NI(witness_wait, w, 0);
  NI(witness_retain, w);
  NI(witness_release, w);
  NI(runtime_wait_witness, rt, w);
  NI(module_load, rt, a, &mo);
  NI(module_unload, rt, m);
  NI(function_get, rt, m, "t4a_fill_u32", &fo);
  NI(function_attributes, rt, f, &fa);
  NI(function_set_max_dynamic_shared, rt, f, 0);
  NI(launch, rt, f, &cfg, NULL);
  NI(raw_runtime, rt, &raw);
  NI(buffer_device_address, rt, b, &u);
  NI(raw_function, rt, f, &p);
  NI(raw_begin, rt, &sec);
  NI(raw_end, rt, &sec);
  /* v1.1 */
  t4a_copy_2d g = {.struct_size = sizeof g, .dst_pitch = 1, .src_pitch = 1, .width = 1, .rows = 1};
  t4a_memory_info mi = {.struct_size = sizeof mi};
  uint64_t ns = 0;
  NI(memset, rt, b, 0, 0, 1, 1);
  NI(copy_2d_h2d_pinned, rt, b, hb, &g);
  NI(copy_2d_d2h_pinned, rt, hb, b, &g);
  NI(copy_2d_d2d, rt, b, b, &g);
  NI(copy_2d_h2d, rt, b, &byte, &g);
  NI(copy_2d_d2h, rt, &byte, b, &g);
  NI(runtime_memory_info, rt, &mi);
  NI(host_register, rt, &byte, 1, 0, &ho);
  NI(host_unregister, rt, hb);
  NI(witness_elapsed, w, w, &ns);
  /* v1.1: execution and graphs */
  t4a_graph gr = {FORGED}, go = {0};
  t4a_runtime_info ri = {.struct_size = sizeof ri};
  t4a_graph_info gi = {.struct_size = sizeof gi};
  t4a_launch_ex_config ex = {
      .struct_size = sizeof ex, .grid = {2, 1, 1}, .block = {1, 1, 1}, .cluster = {2, 1, 1}};
  uint32_t u1 = 0, u2 = 0;
  NI(runtime_info, rt, &ri);
  NI(launch_ex, rt, f, &ex, NULL);
  NI(occupancy_max_active_blocks, rt, f, 32, 0, &u1);
  NI(occupancy_suggest_block_size, rt, f, 0, 0, &u1, &u2);
  NI(occupancy_max_active_clusters, rt, f, &ex, &u1);
  NI(graph_begin, rt);
  NI(graph_end, rt, &go);
  NI(graph_launch, rt, gr);
  NI(graph_set_kernel_args, rt, gr, 0, NULL);
  NI(graph_info, rt, gr, &gi);
  NI(graph_release, rt, gr);
  /* v1.1 interop: well-formed arguments, so only the gate can refuse (the
   * stream and event are never used before init) */
  t4a_external_memory em = {.struct_size = sizeof em, .address = 4096, .bytes = 1};
  int64_t extent = 1;
  t4a_dlpack_export dx = {
      .struct_size = sizeof dx, .dtype = {T4A_DL_UINT, 8, 1}, .ndim = 1, .shape = &extent};
  t4a_dl_managed_tensor tensor = {
      {&byte, {T4A_DL_CUDA, 0}, 1, {T4A_DL_UINT, 8, 1}, &extent, NULL, 0}, NULL, NULL};
  void *stream = (void *)(uintptr_t)T4A_STREAM_LEGACY, *event = (void *)(uintptr_t)FORGED;
  NI(buffer_wrap_external, rt, &em, &bo);
  NI(stream_wait_witness, rt, stream, w);
  NI(runtime_wait_event, rt, event);
  NI(runtime_wait_stream, rt, stream);
  NI(dlpack_export, rt, b, &dx, &p);
  NI(dlpack_import, rt, &tensor, 0, &bo, &u);
  /* v1.2 */
  t4a_alloc_event ev;
  uint32_t count = 0;
  NI(alloc_log_read, rt, 0, &ev, 1, &count, &u);
}

/* The artifact slots. The header names artifact_from_bytes and the compile
 * cache slots among those that need no driver: they work before init;
 * artifact_log/_data/_release may too (the artifact of a device_ordinal -1
 * compile must be readable and releasable), so a forged one is
 * T4A_ENOTINIT or T4A_EHANDLE. */
static void sweep_code(sweep *s) {
  const t4a_gpu_backend_v1 *t = s->c->t;
  const char *ptx = t4a__cf_ptx();
  t4a_artifact a = {FORGED}, ao = {0};
  t4a_compile_cache_stats cs = {.struct_size = sizeof cs};
  const char *log = NULL;
  const void *data = NULL;
  uint64_t size = 0;
  t4a_artifact_kind kind;
  /* the header names these among the slots that need no driver (a backend
   * that runs no PTX, the host's, answers T4A_EUNSUPPORTED: its answer
   * after init too, and not T4A_ENOTINIT, which is what this checks) */
  if (t->artifact_from_bytes)
    one(s, "artifact_from_bytes",
        t->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "conform.ptx", &ao), T4A_OK,
        T4A_EUNSUPPORTED);
  if (t->compile_cache_stats)
    one(s, "compile_cache_stats", t->compile_cache_stats(&cs), T4A_OK, T4A_OK);
  if (t->compile_cache_clear)
    one(s, "compile_cache_clear", t->compile_cache_clear(T4A_CACHE_MEMORY), T4A_OK, T4A_OK);
  if (t->artifact_log)
    one(s, "artifact_log", t->artifact_log(a, &log, &size), T4A_ENOTINIT, T4A_EHANDLE);
  if (t->artifact_data)
    one(s, "artifact_data", t->artifact_data(a, &kind, &data, &size), T4A_ENOTINIT, T4A_EHANDLE);
  if (t->artifact_release)
    one(s, "artifact_release", t->artifact_release(a), T4A_ENOTINIT, T4A_EHANDLE);
  if (ao.bits && t->artifact_release) /* made anyway: release it */
    t->artifact_release(ao);
}

static void enotinit_devices(t4a__cf *c) {
  sweep s = {.c = c};
  sweep_devices(&s);
  report_sweep(c, &s, "not T4A_ENOTINIT before init");
}

static void enotinit_handles(t4a__cf *c) {
  sweep s = {.c = c};
  sweep_handles(&s);
  report_sweep(c, &s, "not T4A_ENOTINIT before init");
}

static void enotinit_code(t4a__cf *c) {
  sweep s = {.c = c};
  sweep_code(&s);
  report_sweep(c, &s, "not T4A_ENOTINIT before init");
}

static void enotinit_after_failure(t4a__cf *c) {
  sweep s = {.c = c};
  sweep_devices(&s);
  sweep_handles(&s);
  sweep_code(&s);
  report_sweep(c, &s, "not T4A_ENOTINIT after a failed init");
}

static void compiler_info_before_init(t4a__cf *c) {
  t4a_compiler_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  if (!CF_OK(c->t->compiler_info(&i)))
    return;
  i.reason[sizeof i.reason - 1] = '\0';
  if (i.status == T4A_OK)
    CF_TRUE(i.version_major > 0, "status T4A_OK but version %d.%d", (int)i.version_major,
            (int)i.version_minor);
  else
    CF_TRUE(i.status < 0 && i.reason[0], "unavailable (%s) without a reason",
            t4a_status_name(i.status));
}

/* ---- init ------------------------------------------------------------------------------- */

typedef struct init_call {
  const t4a_gpu_backend_v1 *t;
  const int *go; /* the threads start together */
  int rc, last_status;
  char message[512];
} init_call;

static void *call_init(void *p) {
  init_call *ic = p;
  while (ic->go && !__atomic_load_n(ic->go, __ATOMIC_ACQUIRE))
    sched_yield();
  ic->rc = ic->t->init();
  ic->last_status = t4a__cf_last_error(ic->t, ic->message, sizeof ic->message);
  return NULL;
}

#define INIT_THREADS 4

/* Calls init on INIT_THREADS threads at once. Returns how many ran; the
 * calls' results in calls[]. */
static int init_threads(const t4a_gpu_backend_v1 *t, init_call calls[INIT_THREADS]) {
  pthread_t th[INIT_THREADS];
  int go = 0, started = 0;
  for (int i = 0; i < INIT_THREADS; i++) {
    calls[i] = (init_call){.t = t, .go = &go};
    if (pthread_create(&th[i], NULL, call_init, &calls[i]) != 0)
      break;
    started++;
  }
  __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  return started;
}

/* Whether every call agreed with the first: the same status and, for a
 * failure, the same detail in each thread's last_error. */
static void agree(const init_call *calls, int n, char *why, size_t size) {
  why[0] = '\0';
  if (n < 1)
    snprintf(why, size, "cannot start threads to call init");
  for (int i = 1; i < n && !why[0]; i++)
    if (calls[i].rc != calls[0].rc ||
        (calls[0].rc != T4A_OK &&
         (calls[i].last_status != calls[0].rc || strcmp(calls[i].message, calls[0].message) != 0)))
      snprintf(why, size, "concurrent init calls disagree: %s '%.80s' and %s '%.80s'",
               t4a_status_name(calls[0].rc), calls[0].message, t4a_status_name(calls[i].rc),
               calls[i].message);
}

int t4a__cf_first_init(t4a__cf *c) {
  init_call calls[INIT_THREADS];
  int n = init_threads(c->t, calls);
  if (n < 1) { /* no threads: here, alone */
    c->init_status = c->t->init();
    t4a__cf_last_error(c->t, c->init_detail, sizeof c->init_detail);
  } else {
    c->init_status = calls[0].rc;
    snprintf(c->init_detail, sizeof c->init_detail, "%s", calls[0].message);
    agree(calls, n, c->init_disagree, sizeof c->init_disagree);
  }
  if (c->init_status == T4A_OK)
    c->init_detail[0] = '\0';
  return c->init_status;
}

static void init_idempotent(t4a__cf *c) {
  CF_TRUE(!c->init_disagree[0], "the first init, on %d threads at once: %s", INIT_THREADS,
          c->init_disagree);
  CF_EXPECT(c->t->init(), T4A_OK);
  init_call calls[INIT_THREADS];
  char why[300];
  int ran = init_threads(c->t, calls);
  agree(calls, ran, why, sizeof why);
  CF_TRUE(!why[0] && ran > 0 && calls[0].rc == T4A_OK, "init again on %d threads: %s %s", ran,
          ran > 0 ? t4a_status_name(calls[0].rc) : "-", why);
  int32_t n = 0;
  if (CF_OK(c->t->device_count(&n)))
    CF_TRUE(n >= 1, "device_count is %d after a successful init, want >= 1", (int)n);
  t4a_backend_info i;
  if (CF_OK(t4a__cli_backend_info(c->t, &i)))
    CF_TRUE(i.device_count == n, "get_info says %d devices, device_count %d", (int)i.device_count,
            (int)n);
}

static void init_failure_replayed(t4a__cf *c) {
  static const int documented[] = {T4A_ENODRIVER,  T4A_ESTUBDRIVER,     T4A_ENODEVICE,
                                   T4A_EDRIVEROLD, T4A_EDRIVERMISMATCH, T4A_EDRIVER};
  bool known = false;
  for (size_t i = 0; i < sizeof documented / sizeof documented[0]; i++)
    known |= c->init_status == documented[i];
  CF_TRUE(known, "init returned %s, not one of the statuses the header lists",
          t4a_status_name(c->init_status));
  CF_TRUE(c->init_detail[0] != '\0', "init failed without a last_error detail");
  CF_TRUE(!c->init_disagree[0], "the first init, on %d threads at once: %s", INIT_THREADS,
          c->init_disagree);
  char again[512];
  CF_EXPECT(c->t->init(), c->init_status);
  int st = t4a__cf_last_error(c->t, again, sizeof again);
  CF_TRUE(st == c->init_status && strcmp(again, c->init_detail) == 0,
          "the second init's detail is %s '%s', not the first one's", t4a_status_name(st), again);
  init_call calls[INIT_THREADS];
  int n = init_threads(c->t, calls);
  for (int i = 0; i < n; i++)
    CF_TRUE(calls[i].rc == c->init_status && calls[i].last_status == c->init_status &&
                strcmp(calls[i].message, c->init_detail) == 0,
            "init again on another thread: %s, last_error %s '%s': not the replayed %s '%s'",
            t4a_status_name(calls[i].rc), t4a_status_name(calls[i].last_status), calls[i].message,
            t4a_status_name(c->init_status), c->init_detail);
}

/* ---- devices ---------------------------------------------------------------------------- */

static void device_info(t4a__cf *c) {
  int32_t n = 0;
  if (!CF_OK(c->t->device_count(&n)))
    return;
  for (int32_t d = 0; d < n; d++) {
    t4a_device_info i;
    if (!CF_OK(t4a__cli_device_info(c->t, d, &i)))
      return;
    CF_TRUE(i.ordinal == d, "device %d reports ordinal %d", (int)d, (int)i.ordinal);
    CF_TRUE(i.name[0] != '\0', "device %d has no name", (int)d);
    CF_TRUE(i.total_memory > 0, "device %d has 0 bytes of memory", (int)d);
    CF_TRUE(i.max_threads_per_block > 0 && i.warp_size > 0 && i.multiprocessors > 0,
            "device %d: max_threads_per_block %d, warp_size %d, multiprocessors %d", (int)d,
            (int)i.max_threads_per_block, (int)i.warp_size, (int)i.multiprocessors);
    for (int a = 0; a < 3; a++)
      CF_TRUE(i.max_block_dim[a] > 0 && i.max_grid_dim[a] > 0,
              "device %d: axis %d: max block %d, max grid %d", (int)d, a, (int)i.max_block_dim[a],
              (int)i.max_grid_dim[a]);
  }
  t4a_device_info i = {.struct_size = sizeof i};
  /* "facts of device `ordinal` (0 .. count-1)": others are bad input */
  CF_EXPECT2(c->t->device_info(n, &i), T4A_EINVAL, T4A_ERANGE);
  CF_EXPECT2(c->t->device_info(-1, &i), T4A_EINVAL, T4A_ERANGE);
  int32_t count = 0;
  CF_EXPECT(c->t->device_count(NULL), T4A_EINVAL);
  CF_TRUE(c->t->device_count(&count) == T4A_OK && count == n, "device_count changed");
}

static void peer_query(t4a__cf *c) {
  int32_t n = 0;
  if (!CF_OK(c->t->device_count(&n)))
    return;
  for (int32_t s = 0; s < n; s++)
    for (int32_t d = 0; d < n; d++) {
      bool yes = false;
      int rc = c->t->peer_access_supported(s, d, &yes);
      /* a backend without peer access at all says so with the reason */
      CF_EXPECT2(rc, T4A_OK, T4A_EUNSUPPORTED);
    }
  bool yes = false;
  CF_EXPECT2(c->t->peer_access_supported(0, n, &yes), T4A_EINVAL, T4A_ERANGE);
  CF_EXPECT2(c->t->peer_access_supported(-1, 0, &yes), T4A_EINVAL, T4A_ERANGE);
  CF_EXPECT(c->t->peer_access_supported(0, 0, NULL), T4A_EINVAL);
}

#define PRE T4A__CF_PRE_INIT
#define FAILED T4A__CF_INIT_FAILED
#define INIT T4A__CF_INIT

const t4a__cf_check t4a__cf_backend_checks[] = {
    {"backend.table",
     "The table begins with its own struct_size, abi_major and abi_minor; name: short backend "
     "name; version: plugin version string",
     "", PRE, table},
    {"backend.get_info_before_init",
     "get_info: Callable before init (driver fields are then 0/empty); device_count 0 before a "
     "successful init",
     "get_info", PRE, get_info_before_init},
    {"backend.compiler_info_before_init",
     "compiler_info: Loads the compiler library if not yet loaded; does not fail when it is "
     "missing (info->status says so)",
     "compiler_info", PRE, compiler_info_before_init},
    {"backend.enotinit_devices",
     "Every other slot except last_error and get_info returns T4A_ENOTINIT until init succeeded "
     "(device slots, runtime_create, a compile for a device)",
     "", PRE, enotinit_devices},
    {"backend.enotinit_handles",
     "Every other slot except last_error and get_info returns T4A_ENOTINIT until init succeeded "
     "(every slot taking a runtime, buffer, host buffer, witness, module or function)",
     "", PRE, enotinit_handles},
    {"backend.enotinit_code",
     "The slots that need no driver work before init: artifact_from_bytes, compile_cache_stats, "
     "compile_cache_clear; artifact_log/_data/_release answer T4A_ENOTINIT or T4A_EHANDLE for a "
     "forged artifact",
     "", PRE, enotinit_code},
    {"backend.init_failure_replayed",
     "init: concurrent callers see one initialisation; after a failure it returns the same "
     "status and detail at once; the failure is final for the life of the loaded plugin",
     "", FAILED, init_failure_replayed},
    {"backend.enotinit_after_failure",
     "Every other slot except last_error and get_info returns T4A_ENOTINIT until init succeeded",
     "", FAILED, enotinit_after_failure},
    {"backend.init_idempotent",
     "init: Idempotent and thread-safe: concurrent callers see one initialisation; "
     "device_count >= 1 after init",
     "", INIT, init_idempotent},
    {"backend.device_info", "device_info: facts of device `ordinal` (0 .. count-1)", "", INIT,
     device_info},
    {"backend.peer_query",
     "peer_access_supported: *supported = whether device src can read and write device dst's "
     "memory directly",
     "peer_access_supported", INIT, peer_query},
};
const size_t t4a__cf_backend_count =
    sizeof t4a__cf_backend_checks / sizeof t4a__cf_backend_checks[0];
