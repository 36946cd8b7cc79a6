/* bench/t4a_bench.c -- each runtime operation measured against the raw CUDA
 * Driver API doing the same work, in one process and run; and first the
 * host backend's rows (bench/host_cases.c) against the raw CPU, which need
 * no GPU: without a usable CUDA backend the CUDA rows are skipped, saying
 * why, and the run still succeeds.
 *
 * The raw side dlopens libcuda.so.1 itself and uses its own stream and pool
 * on the same device. The two sides alternate sample by sample (after a
 * warm-up), so drift in clocks or host load hits both alike. Each sample
 * times a batch of operations with CLOCK_MONOTONIC; the report gives the
 * median and p99 of the per-operation times (or bandwidths), their ratio,
 * and the target from the issue with whether it was met.
 *
 *   t4a_bench [--json FILE] [--quick] [--only SUBSTRING] [--copy-threads N]
 *             [--backend all|host|cuda] [--machine NAME]
 *             [--reports host,staging,hot,overhead,init,elapsed,scaling | --reports none]
 *
 * Without --only, the reports of bench/reports.c follow the cases (all of
 * them unless --reports names some).
 *
 * The plugins are opened through the loader by name, "host" and then
 * "cuda", in the plugin path (run from the build tree with
 * T4A_GPU_BACKEND_PATH set, as `make bench` and `make bench-host` do).
 * --machine names the machine in the output and the JSON (default: the
 * CPU model and count).
 *
 * Exit status, as t4a-gpu's: 0 done, 1 a call failed, 2 usage error, 3 no
 * backend found, 4 the backend or the driver cannot be used here (the reason
 * is printed). */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

/* ---- timing and statistics ---------------------------------------------------- */

static unsigned g_copy_threads; /* 0: the runtime's default */

/* ---- the environment both sides share ---------------------------------------------- */

bench_env E;

static void die(int status, const char *what) {
  fprintf(stderr, "t4a_bench: %s\n", what);
  exit(status);
}

/* Prints the failure and exits: 4 for what the host lacks, else 1. */
void bench_check(int rc, const char *what) {
  if (rc == T4A_OK)
    return;
  t4a_error_info e = {.struct_size = sizeof e};
  E.t->last_error(&e);
  fprintf(stderr, "t4a_bench: %s: %s: %s\n", what, t4a_status_name(rc), e.message);
  exit(bench_unusable(rc) ? 4 : 1);
}

void bench_cu(t4a__CUresult r, const char *what) {
  if (r != T4A__CUDA_SUCCESS) {
    fprintf(stderr, "t4a_bench: %s: CUresult %u\n", what, r);
    exit(1);
  }
}

static void usage(FILE *f) {
  fputs("usage: t4a_bench [--json FILE] [--quick] [--only SUBSTRING] [--copy-threads N]\n"
        "                 [--backend all|host|cuda] [--machine NAME]\n"
        "                 [--reports host,staging,hot,overhead,init,elapsed,scaling|none]\n"
        "       t4a_bench --help\n"
        "The host backend's operations against the raw CPU (any machine), then each CUDA\n"
        "runtime operation against the raw Driver API doing the same work, on device 0\n"
        "(skipped, saying why, without a usable GPU; docs/performance.md has the results).\n"
        "exit status: 0 rows ran (a backend without a usable device is skipped, saying why),\n"
        "             1 a call failed, 2 usage error, 3 no backend found,\n"
        "             4 the backend or the driver cannot be used here (reason printed)\n",
        f);
}

static void open_raw(void) {
  const char *lib = getenv("T4A_CUDA_LIBRARY"); /* the same driver as the plugin */
  void *dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    die(4, "cannot load the driver (libcuda.so.1) for the raw side");
  t4a__pfn_cuGetProcAddress_v2 gpa;
  *(void **)&gpa = dlsym(dl, "cuGetProcAddress_v2");
  if (!gpa)
    die(4, "libcuda.so.1 lacks cuGetProcAddress_v2");
#define RAW(name, sym, req, params)                                                                \
  {                                                                                                \
    t4a__CUdriverProcAddressQueryResult st;                                                        \
    void *p = NULL;                                                                                \
    gpa(#name, &p, T4A__CUDA_API_VERSION, 0, &st);                                                 \
    memcpy(&E.cu.name, &p, sizeof p);                                                              \
  }
  T4A__CUDA_FUNCS(RAW)
#undef RAW
  *(void **)&E.cu.cuInit = dlsym(dl, "cuInit");
  *(void **)&E.cu.cuDriverGetVersion = dlsym(dl, "cuDriverGetVersion");
  bench_cu(E.cu.cuInit(0), "cuInit");
  bench_cu(E.cu.cuDriverGetVersion(&E.driver_version), "cuDriverGetVersion");
}

/* The plugin side: the backend and the runtime measured. */
static void setup_ours_only(void) {
  if (!E.backend && t4a_gpu_open(NULL, &E.backend) != T4A_OK) {
    fprintf(stderr, "t4a_bench: %s\n", t4a_gpu_last_error());
    exit(3);
  }
  E.t = t4a_gpu_backend_table(E.backend);
  bench_check(E.t->init(), "init");
  bench_check(E.t->device_count(&E.device_count), "device_count");
  E.dev.struct_size = sizeof E.dev;
  bench_check(E.t->device_info(0, &E.dev), "device_info");
  t4a_runtime_options o = {.struct_size = sizeof o, .copy_threads = g_copy_threads};
  bench_check(E.t->runtime_create(0, &o, &E.rt), "runtime_create");
}

void bench_setup_ours(void) { setup_ours_only(); }
void bench_open_raw(void) { open_raw(); }

/* The raw side's stream and pool, in the current context. */
static void raw_stream_and_pool(void) {
  bench_cu(E.cu.cuStreamCreate(&E.stream, T4A__CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  t4a__CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = T4A__CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = T4A__CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  bench_cu(E.cu.cuMemPoolCreate(&E.pool, &props), "cuMemPoolCreate");
  uint64_t threshold = UINT64_MAX;
  bench_cu(E.cu.cuMemPoolSetAttribute(E.pool, T4A__CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
           "cuMemPoolSetAttribute");
}

static void setup(void) {
  setup_ours_only();
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  bench_check(E.t->raw_runtime(E.rt, &raw), "raw_runtime");
  E.ctx = raw.context;
  open_raw();
  t4a__CUdevice dev;
  bench_cu(E.cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
  t4a__CUcontext ctx;
  bench_cu(E.cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  bench_cu(E.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  raw_stream_and_pool();
}

/* ---- running a case ------------------------------------------------------------- */

typedef struct result {
  const bench_case *c;
  double ours_median, ours_p99, raw_median, raw_p99, ratio;
  bool met;
} result;

static bool g_quick;

static result run_case(const bench_case *c) {
  void *state = c->setup ? c->setup(c) : NULL;
  int samples = g_quick ? c->samples / 4 + 3 : c->samples;
  double *ours = calloc((size_t)samples, sizeof *ours);
  double *raw = calloc((size_t)samples, sizeof *raw);
  int raw_batch = c->raw_batch ? c->raw_batch : c->batch;
  for (int w = 0; w < c->warmup; w++) {
    c->ours(state, c->batch);
    c->raw(state, raw_batch);
  }
  for (int s = 0; s < samples; s++) {
    /* alternate which side goes first, so neither always follows the other */
    for (int k = 0; k < 2; k++) {
      bool ours_turn = (s + k) % 2 == 0;
      int n = ours_turn ? c->batch : raw_batch;
      double t0 = bench_now();
      (ours_turn ? c->ours : c->raw)(state, n);
      double dt = (bench_now() - t0) / n;
      (ours_turn ? ours : raw)[s] = c->bytes ? (double)c->bytes / dt / 1e9 : dt * 1e6;
      if (c->between)
        c->between(state);
    }
  }
  result r = {.c = c};
  bench_stats(ours, samples, c->bytes != 0, &r.ours_median, &r.ours_p99);
  bench_stats(raw, samples, c->bytes != 0, &r.raw_median, &r.raw_p99);
  r.ratio = r.ours_median / r.raw_median;
  switch (c->target_kind) {
  case TARGET_NONE: r.met = true; break;
  case TARGET_RATIO_MAX: r.met = r.ratio <= c->target; break;
  case TARGET_RATIO_MIN: r.met = r.ratio >= c->target; break;
  case TARGET_ABS_MAX: r.met = r.ours_median <= c->target; break;
  case TARGET_ABS_MIN: r.met = r.ours_median >= c->target && r.ours_p99 >= c->p99_target; break;
  }
  if (c->teardown)
    c->teardown(state);
  free(ours);
  free(raw);
  return r;
}

static const char *target_text(const bench_case *c, char *buf, size_t n) {
  const char *unit = c->bytes ? "GB/s" : "us";
  switch (c->target_kind) {
  case TARGET_NONE: snprintf(buf, n, "-"); break;
  case TARGET_RATIO_MAX: snprintf(buf, n, "ratio <= %.2f", c->target); break;
  case TARGET_RATIO_MIN: snprintf(buf, n, "ratio >= %.2f", c->target); break;
  case TARGET_ABS_MAX: snprintf(buf, n, "<= %.2f %s", c->target, unit); break;
  case TARGET_ABS_MIN:
    if (c->p99_target > 0)
      snprintf(buf, n, ">= %.0f, p99 >= %.0f", c->target, c->p99_target);
    else
      snprintf(buf, n, ">= %.1f %s", c->target, unit);
    break;
  }
  return buf;
}

/* `--child-init ours|raw`: what a fresh process pays before its first
 * runtime can work (bench_report_init runs this in a child per sample). */
static int child_init(const char *side) {
  double t0 = bench_now();
  if (strcmp(side, "ours") == 0) {
    setup_ours_only();
  } else {
    open_raw();
    t4a__CUdevice dev;
    t4a__CUcontext ctx;
    bench_cu(E.cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
    bench_cu(E.cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    bench_cu(E.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    raw_stream_and_pool();
    void *staging;
    bench_cu(E.cu.cuMemHostAlloc(&staging, 64ull << 20, T4A__CU_MEMHOSTALLOC_PORTABLE),
             "cuMemHostAlloc");
    t4a__CUevent ev;
    for (int k = 0; k < 8; k++)
      bench_cu(E.cu.cuEventCreate(&ev, T4A__CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  printf("%.9f\n", bench_now() - t0);
  return 0;
}

/* ---- the rows -------------------------------------------------------------------- */

static int run_rows(const bench_case *const *tables, size_t count, const char *only, result *res,
                    int max) {
  printf("%-34s %12s %12s %12s %12s %7s  %-18s %s\n", "case", "t4a median", "t4a p99", "raw median",
         "raw p99", "ratio", "target", "met");
  int n = 0;
  for (size_t tb = 0; tb < count; tb++)
    for (const bench_case *c = tables[tb]; c->name && n < max; c++) {
      if ((only && !strstr(c->name, only)) || E.device_count < c->min_devices ||
          E.dev.cc_major < c->min_cc_major)
        continue;
      const char *why = c->skip ? c->skip(c) : NULL;
      if (why) {
        printf("%-34s skipped: %s\n", c->name, why);
        continue;
      }
      res[n] = run_case(c);
      char t[48];
      const char *u = c->bytes ? "GB/s" : "us";
      printf("%-34s %8.3f %-4s%8.3f %-4s%8.3f %-4s%8.3f %-4s%7.3f  %-18s %s\n", c->name,
             res[n].ours_median, u, res[n].ours_p99, u, res[n].raw_median, u, res[n].raw_p99, u,
             res[n].ratio, target_text(c, t, sizeof t), res[n].met ? "yes" : "NO");
      fflush(stdout);
      n++;
    }
  return n;
}

static void json_rows(FILE *f, const result *res, int n) {
  fputc('[', f);
  for (int i = 0; i < n; i++) {
    char t[48];
    const bench_case *c = res[i].c;
    fprintf(f,
            "%s\n{\"name\":\"%s\",\"unit\":\"%s\",\"size\":%llu,\"batch\":%d,"
            "\"t4a\":{\"median\":%.6g,\"p99\":%.6g},\"raw\":{\"median\":%.6g,\"p99\":%.6g},"
            "\"ratio\":%.6g,\"target\":\"%s\",\"met\":%s}",
            i ? "," : "", c->name, c->bytes ? "GB/s" : "us", (unsigned long long)c->arg, c->batch,
            res[i].ours_median, res[i].ours_p99, res[i].raw_median, res[i].raw_p99, res[i].ratio,
            target_text(c, t, sizeof t), res[i].met ? "true" : "false");
  }
  fprintf(f, "\n]");
}

/* The CPU model (/proc/cpuinfo) and count: what names this machine. */
static void machine_name(char *buf, size_t n, long cpus) {
  char model[160] = "unknown CPU", line[256];
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) == 0 && colon) {
      snprintf(model, sizeof model, "%s", colon + 2);
      model[strcspn(model, "\n")] = 0;
      break;
    }
  }
  if (f)
    fclose(f);
  snprintf(buf, n, "%s, %ld CPUs", model, cpus);
}

/* Why the CUDA rows cannot run here (NULL: they can; the backend stays
 * open in E for setup). */
static const char *cuda_unusable(char *why, size_t n, int *code) {
  *code = 3; /* tools/cli.h: no backend */
  if (t4a_gpu_open("cuda", &E.backend) != T4A_OK) {
    snprintf(why, n, "no CUDA backend: %s", t4a_gpu_last_error());
    E.backend = NULL;
    return why;
  }
  *code = 4; /* the backend cannot be used here */
  E.t = t4a_gpu_backend_table(E.backend);
  int rc = E.t->init();
  if (rc == T4A_OK)
    rc = E.t->device_count(&E.device_count);
  if (rc == T4A_OK && E.device_count > 0)
    return NULL;
  t4a_error_info e = {.struct_size = sizeof e};
  E.t->last_error(&e);
  if (rc)
    snprintf(why, n, "the CUDA backend cannot be used here: %s: %s", t4a_status_name(rc),
             e.message);
  else
    snprintf(why, n, "the CUDA backend sees no device");
  t4a_gpu_close(E.backend);
  memset(&E, 0, sizeof E);
  return why;
}

/* The host rows, in E while they run (the host backend's table and a
 * runtime with the reference's thread count). false: no host backend. */
static bool host_rows(const char *only, result *res, int *n, char *why, size_t why_n,
                      const char *machine, const char *date) {
  bench_host_threads = bench_host_copy_threads(g_copy_threads);
  if (t4a_gpu_open("host", &E.backend) != T4A_OK) {
    snprintf(why, why_n, "no host backend: %s", t4a_gpu_last_error());
    return false;
  }
  E.t = t4a_gpu_backend_table(E.backend);
  bench_check(E.t->init(), "init (host)");
  E.dev.struct_size = sizeof E.dev;
  bench_check(E.t->device_info(0, &E.dev), "device_info (host)");
  t4a_runtime_options o = {.struct_size = sizeof o, .copy_threads = bench_host_threads};
  bench_check(E.t->runtime_create(0, &o, &E.rt), "runtime_create (host)");
  printf("t4a_bench %s: host backend on %s, %u copy threads, %s\n", PACKAGE_VERSION, machine,
         bench_host_threads, date);
  static const bench_case *const host_tables[] = {bench_host_cases, bench_hostk_cases,
                                                  bench_v12_host_cases};
  *n = run_rows(host_tables, 3, only, res, 32);
  bench_check(E.t->runtime_destroy(E.rt, T4A_WAIT_FOREVER), "runtime_destroy (host)");
  t4a_gpu_close(E.backend);
  memset(&E, 0, sizeof E);
  return true;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child-init") == 0)
    return child_init(argv[2]);
  if (argc == 2 && strcmp(argv[1], "--child-ipc") == 0)
    return bench_ipc_child();
  const char *json = NULL, *only = NULL, *reports = NULL, *backend = "all", *machine = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else if (strcmp(argv[i], "--copy-threads") == 0 && i + 1 < argc)
      g_copy_threads = (unsigned)atoi(argv[++i]);
    else if (strcmp(argv[i], "--quick") == 0)
      g_quick = true;
    else if (strcmp(argv[i], "--reports") == 0 && i + 1 < argc)
      reports = argv[++i];
    else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
      backend = argv[++i];
    else if (strcmp(argv[i], "--machine") == 0 && i + 1 < argc)
      machine = argv[++i];
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "t4a_bench: unexpected argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  bool want_host = strcmp(backend, "cuda") != 0, want_cuda = strcmp(backend, "host") != 0;
  if (strcmp(backend, "all") != 0 && strcmp(backend, "host") != 0 && strcmp(backend, "cuda") != 0) {
    fprintf(stderr, "t4a_bench: --backend %s; use all, host or cuda\n", backend);
    return 2;
  }
  time_t now = time(NULL);
  char date[32], named[256], host_why[512] = "", cuda_why[512] = "";
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  machine_name(named, sizeof named, cpus);
  if (machine)
    snprintf(named, sizeof named, "%s", machine);
  for (char *c = named; *c; c++) /* it goes into a JSON string */
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
      *c = ' ';
  machine = named;
  FILE *f = json ? fopen(json, "w") : fopen("/dev/null", "w");
  if (!f)
    die(1, "cannot write the JSON file");
  fprintf(f,
          "{\"tool\":\"t4a_bench\",\"version\":\"%s\",\"date\":\"%s\",\"machine\":\"%s\","
          "\"cpus\":%ld,\"quick\":%s",
          PACKAGE_VERSION, date, machine, cpus, g_quick ? "true" : "false");
  result hres[32];
  int hn = 0;
  bool host_ran = false;
  int cuda_code = 0;
  if (want_host && host_rows(only, hres, &hn, host_why, sizeof host_why, machine, date)) {
    host_ran = true;
    fprintf(f,
            ",\n\"host\":{\"backend\":\"host\",\"copy_threads\":%u,\"cases\":", bench_host_threads);
    json_rows(f, hres, hn);
    fputc('}', f);
  } else if (want_host) {
    printf("host rows skipped: %s\n", host_why);
    fprintf(f, ",\n\"host_skipped\":\"%s\"", host_why);
  }
  if (want_cuda && cuda_unusable(cuda_why, sizeof cuda_why, &cuda_code)) {
    printf("CUDA rows skipped: %s\n", cuda_why);
    for (char *c = cuda_why; *c; c++) /* the reason goes into a JSON string */
      if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
        *c = ' ';
    fprintf(f, ",\n\"cuda_skipped\":\"%s\"\n}\n", cuda_why);
    fclose(f);
    /* rows ran: success (make bench on a machine without a GPU); else the
     * CUDA backend's reason, as t4a-gpu exits (3 none, 4 unusable) */
    return host_ran ? 0 : cuda_code;
  }
  if (!want_cuda) {
    fprintf(f, "\n}\n");
    fclose(f);
    return host_ran ? 0 : 3;
  }
  char cache[] = "/tmp/t4a-bench-cache-XXXXXX"; /* a fresh disk cache, not the user's */
  if (!mkdtemp(cache))
    die(1, "cannot create a temporary cache directory");
  setenv("T4A_CACHE_DIR", cache, 1);
  setup();
  printf("t4a_bench %s: %d x %s, driver CUDA %d.%d, %ld CPUs, %s\n", PACKAGE_VERSION,
         (int)E.device_count, E.dev.name, E.driver_version / 1000, E.driver_version % 1000 / 10,
         cpus, date);
  result res[96];
  static const bench_case *const tables[] = {
      bench_cases,         bench_v11_cases, bench_graph_cases, bench_lifecycle_cases,
      bench_interop_cases, bench_v12_cases, bench_ipc_cases};
  int n = run_rows(tables, sizeof tables / sizeof tables[0], only, res, 96);
  fprintf(f, ",\n\"gpu\":\"%s\",\"gpus\":%d,\"driver_cuda\":\"%d.%d\",\"cases\":", E.dev.name,
          (int)E.device_count, E.driver_version / 1000, E.driver_version % 1000 / 10);
  json_rows(f, res, n);
  if (!reports && !only)
    reports = "host,staging,hot,overhead,init,elapsed,scaling";
  if (reports && strstr(reports, "host"))
    bench_report_host(f);
  if (reports && strstr(reports, "staging"))
    bench_report_staging_sweep(f);
  if (reports && strstr(reports, "hot"))
    bench_report_hot_sweep(f);
  if (reports && strstr(reports, "overhead"))
    bench_report_overhead(f);
  if (reports && strstr(reports, "init"))
    bench_report_init(f, "/proc/self/exe");
  if (reports && strstr(reports, "elapsed"))
    bench_report_elapsed(f);
  if (reports && strstr(reports, "scaling"))
    bench_report_scaling(f);
  fprintf(f, "\n}\n");
  fclose(f);
  bench_check(E.t->compile_cache_clear(T4A_CACHE_DISK), "compile_cache_clear");
  rmdir(cache);
  bench_check(E.t->runtime_destroy(E.rt, T4A_WAIT_FOREVER), "runtime_destroy");
  t4a_gpu_close(E.backend);
  return 0;
}
