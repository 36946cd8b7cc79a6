/* bench/reports.c -- measurements that are not one operation against its raw
 * twin:
 *  - the host's own memory bandwidth (memcpy of 512 MiB, pageable to
 *    pageable, on 1..16 threads): the limit a staged pageable copy, which
 *    moves every byte through host memory once more, is measured against;
 *  - the staging sweep: pageable 512 MiB H2D and D2H for chunk sizes, ring
 *    depths, copy threads and non-temporal stores (the knobs staging.c
 *    reads when a runtime is created), so the defaults are chosen from data;
 *  - the hot-window sweep: mid-size pageable H2D against the driver for
 *    hot-window sizes (T4A_STAGING_HOT), the data behind the default;
 *  - call costs: the floor a checked, thread-safe table call adds to a
 *    small copy or a launch;
 *  - init: t4a_gpu_open + init + the first runtime_create in a fresh
 *    process, against the raw cuInit + primary context + stream, pool and
 *    pinned staging, each in its own child process. */
#include "config.h"

#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define MiB (1ull << 20)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- host memory bandwidth ----------------------------------------------------- */

typedef struct part {
  char *dst;
  const char *src;
  size_t n;
} part;

static void *copy_part(void *arg) {
  part *p = arg;
  memcpy(p->dst, p->src, p->n);
  return NULL;
}

static double host_copy(char *dst, const char *src, size_t n, int threads) {
  pthread_t th[16];
  part parts[16];
  if (threads < 1 || threads > 16)
    return 0;
  size_t each = (n / (size_t)threads + 63) & ~(size_t)63;
  double t0 = bench_now();
  for (int i = 0; i < threads; i++) {
    size_t off = each * (size_t)i, len = off >= n ? 0 : n - off < each ? n - off : each;
    parts[i] = (part){dst + off, src + off, len};
    if (i)
      pthread_create(&th[i], NULL, copy_part, &parts[i]);
  }
  copy_part(&parts[0]);
  for (int i = 1; i < threads; i++)
    pthread_join(th[i], NULL);
  return (double)n / (bench_now() - t0) / 1e9;
}

void bench_report_host(FILE *json) {
  const size_t n = 512 * MiB;
  char *a = malloc(n), *b = malloc(n);
  memset(a, 1, n);
  memset(b, 2, n);
  static const int threads[] = {1, 2, 4, 8, 12, 16};
  printf("\nhost memcpy 512 MiB, pageable to pageable (median of 7):\n");
  fprintf(json, ",\n\"host_memcpy\":[");
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    double v[7];
    for (int i = 0; i < 7; i++)
      v[i] = host_copy(b, a, n, threads[t]);
    double m = median(v, 7);
    printf("  %2d threads: %6.1f GB/s\n", threads[t], m);
    fprintf(json, "%s{\"threads\":%d,\"gbps\":%.4g}", t ? "," : "", threads[t], m);
  }
  fprintf(json, "]");
  free(a);
  free(b);
}

/* ---- the staging sweep ----------------------------------------------------------- */

typedef struct config {
  const char *chunk, *ring, *streaming;
  unsigned threads;
  const char *pipeline; /* T4A_COPY_PIPELINE; NULL: the default (on) */
} config;

static double staged(t4a_runtime rt, t4a_buffer d, unsigned char *host, uint64_t n, bool h2d,
                     double *p_worst) {
  double v[9];
  for (int i = 0; i < 9; i++) {
    double t0 = bench_now();
    if (h2d) {
      bench_check(E.t->copy_h2d(rt, d, 0, host, n), "copy_h2d");
      t4a_witness w;
      bench_check(E.t->seal(rt, &w), "seal");
      bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
      bench_check(E.t->witness_release(w), "witness_release");
    } else {
      bench_check(E.t->copy_d2h(rt, host, d, 0, n), "copy_d2h");
    }
    v[i] = (double)n / (bench_now() - t0) / 1e9;
  }
  double m = median(v, 9);
  *p_worst = v[0]; /* sorted: the slowest of nine */
  return m;
}

static void set_knob(const char *name, const char *value) {
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

void bench_report_staging_sweep(FILE *json) {
  const uint64_t n = 512 * MiB;
  unsigned char *host = malloc(n);
  for (uint64_t i = 0; i < n; i++)
    host[i] = (unsigned char)(i * 131 + 7);
  unsigned cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
  /* Measured on 2 x H200 (32 CPUs): chunks below 8 MiB were slower at every
   * ring depth (5-19 GB/s H2D), so the sweep covers 8 and 16 MiB chunks. */
  static const config configs[] = {
      {NULL, NULL, NULL, 8, NULL},       {NULL, NULL, NULL, 12, NULL},
      {NULL, NULL, NULL, 16, NULL},      {NULL, NULL, NULL, 8, "0"},
      {NULL, NULL, NULL, 12, "0"},       {NULL, NULL, NULL, 16, "0"},
      {NULL, "4", NULL, 8, NULL},        {NULL, "4", NULL, 16, NULL},
      {"16777216", NULL, NULL, 8, NULL}, {"16777216", NULL, NULL, 12, NULL},
      {NULL, NULL, "h2d", 8, NULL},      {NULL, NULL, "h2d", 16, NULL},
      {NULL, NULL, "both", 8, NULL},     {NULL, NULL, "none", 8, NULL},
  };

  printf("\nstaging sweep, pageable 512 MiB, default 64 MiB staging (median and worst of 9):\n");
  printf("  %-9s %-5s %-9s %-7s %-8s %18s %18s\n", "chunk", "ring", "streaming", "threads",
         "pipeline", "H2D GB/s", "D2H GB/s");
  fprintf(json, ",\n\"staging_sweep\":[");
  /* two passes over the configurations: the spread between them is the
   * run-to-run noise the choice of defaults must exceed */
  size_t nconf = sizeof configs / sizeof configs[0];
  for (size_t k = 0; k < 2 * nconf; k++) {
    size_t i = k % nconf;
    const config *c = &configs[i];
    if (c->threads > cpus)
      continue;
    set_knob("T4A_STAGING_CHUNK", c->chunk);
    set_knob("T4A_STAGING_RING", c->ring);
    set_knob("T4A_COPY_STREAMING", c->streaming);
    set_knob("T4A_COPY_PIPELINE", c->pipeline);
    t4a_runtime_options o = {.struct_size = sizeof o, .copy_threads = c->threads};
    t4a_runtime rt;
    bench_check(E.t->runtime_create(0, &o, &rt), "runtime_create");
    t4a_buffer d;
    bench_check(E.t->buffer_alloc(rt, n, &d), "buffer_alloc");
    double h2d_worst, d2h_worst;
    double h2d = staged(rt, d, host, n, true, &h2d_worst);
    double d2h = staged(rt, d, host, n, false, &d2h_worst);
    const char *pipe = c->pipeline ? "off" : "on";
    printf("  %-9s %-5s %-9s %-7u %-8s %8.1f (%6.1f) %8.1f (%6.1f)  pass %zu\n",
           c->chunk ? c->chunk : "default", c->ring ? c->ring : "all",
           c->streaming ? c->streaming : "d2h", c->threads, pipe, h2d, h2d_worst, d2h, d2h_worst,
           k / nconf + 1);
    fflush(stdout);
    fprintf(json,
            "%s\n{\"pass\":%zu,\"chunk\":\"%s\",\"ring\":\"%s\",\"streaming\":\"%s\","
            "\"threads\":%u,\"pipeline\":\"%s\",\"h2d\":{\"median\":%.4g,\"worst\":%.4g},"
            "\"d2h\":{\"median\":%.4g,\"worst\":%.4g}}",
            k ? "," : "", k / nconf + 1, c->chunk ? c->chunk : "default", c->ring ? c->ring : "all",
            c->streaming ? c->streaming : "d2h", c->threads, pipe, h2d, h2d_worst, d2h, d2h_worst);
    bench_check(E.t->buffer_free(rt, d), "buffer_free");
    bench_check(E.t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  }
  fprintf(json, "]");
  set_knob("T4A_STAGING_CHUNK", NULL);
  set_knob("T4A_STAGING_RING", NULL);
  set_knob("T4A_COPY_STREAMING", NULL);
  set_knob("T4A_COPY_PIPELINE", NULL);
  free(host);
}

/* ---- the hot-window sweep ------------------------------------------------------------ */

/* Mid-size pageable H2D copies (batches of about 8 MiB, then seal and wait)
 * against the driver's own cuMemcpyHtoDAsync + synchronize, for hot-window
 * sizes (T4A_STAGING_HOT, read at runtime_create; 0 = off): the data behind
 * the default. Ratios of medians over 15 alternating samples. */
void bench_report_hot_sweep(FILE *json) {
  static const uint64_t sizes[] = {96 << 10, 256 << 10, 512 << 10, 1 << 20, 1536 << 10, 2 << 20};
  /* hot window (T4A_STAGING_HOT), split size (T4A_COPY_SPLIT_MIN), the copy
   * threads' spin (T4A_COPY_SPIN_US; NULL: the default) and copy_threads
   * (NULL: the default) */
  static const char *const windows[][4] = {
      {"0", "2097152", NULL, NULL},         {"2097152", "2097152", NULL, NULL},
      {"1048576", "1048576", NULL, NULL},   {"2097152", "1048576", NULL, NULL},
      {"4194304", "1048576", NULL, NULL},   {"2097152", "524288", NULL, NULL},
      {"2097152", "786432", NULL, NULL},    {"2097152", "1048576", "0", NULL},
      {"2097152", "1048576", "1000", NULL},
  };

  enum { NS = sizeof sizes / sizeof sizes[0], NW = sizeof windows / sizeof windows[0], S = 15 };
  const uint64_t most = 2 * MiB;
  unsigned char *host = malloc(most);
  for (uint64_t i = 0; i < most; i++)
    host[i] = (unsigned char)(i * 131 + 7);
  t4a__CUdeviceptr raw_dev;
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&raw_dev, (size_t)most, E.pool, E.stream), "raw alloc");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  printf("\nhot-window sweep, pageable H2D batches of ~8 MiB + wait, ratio to the driver "
         "(t4a GB/s), median of %d:\n  %-10s",
         S, "size");
  for (int w = 0; w < NW; w++) {
    char label[48];
    snprintf(label, sizeof label, "%s/%s/%s/%s", windows[w][0], windows[w][1],
             windows[w][2] ? windows[w][2] : "d", windows[w][3] ? windows[w][3] : "d");
    printf(" %16s", label);
  }
  printf("\n  (columns: hot window / split size, bytes / spin us / copy threads; d = default, hot "
         "0 = off)\n");
  fprintf(json, ",\n\"hot_sweep\":[");
  double ratio[NS][NW], gbps[NS][NW], raw_gbps[NS][NW];
  for (int w = 0; w < NW; w++) {
    set_knob("T4A_STAGING_HOT", windows[w][0]);
    set_knob("T4A_COPY_SPLIT_MIN", windows[w][1]);
    set_knob("T4A_COPY_SPIN_US", windows[w][2]);
    t4a_runtime rt;
    t4a_runtime_options o = {.struct_size = sizeof o};
    o.copy_threads = windows[w][3] ? (uint32_t)atoi(windows[w][3]) : 0;
    bench_check(E.t->runtime_create(0, &o, &rt), "runtime_create");
    t4a_buffer d;
    bench_check(E.t->buffer_alloc(rt, most, &d), "buffer_alloc");
    for (int k = 0; k < NS; k++) {
      uint64_t n = sizes[k];
      int batch = (int)((8 * MiB + n - 1) / n);
      double ours[S] = {0}, raw[S] = {0};
      for (int smp = -2; smp < S; smp++) { /* two warm-up samples */
        for (int side = 0; side < 2; side++) {
          bool ours_turn = (smp + side) % 2 == 0;
          double t0 = bench_now();
          for (int i = 0; i < batch; i++) {
            if (ours_turn)
              bench_check(E.t->copy_h2d(rt, d, 0, host, n), "copy_h2d");
            else
              bench_cu(E.cu.cuMemcpyHtoDAsync(raw_dev, host, (size_t)n, E.stream), "h2d");
          }
          if (ours_turn) {
            t4a_witness wit;
            bench_check(E.t->seal(rt, &wit), "seal");
            bench_check(E.t->witness_wait(wit, T4A_WAIT_FOREVER), "witness_wait");
            bench_check(E.t->witness_release(wit), "witness_release");
          } else {
            bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
          }
          double v = (double)n * batch / (bench_now() - t0) / 1e9;
          if (smp >= 0)
            (ours_turn ? ours : raw)[smp] = v;
        }
      }
      gbps[k][w] = median(ours, S);
      raw_gbps[k][w] = median(raw, S);
      ratio[k][w] = gbps[k][w] / raw_gbps[k][w];
    }
    bench_check(E.t->buffer_free(rt, d), "buffer_free");
    bench_check(E.t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  }
  set_knob("T4A_STAGING_HOT", NULL);
  set_knob("T4A_COPY_SPLIT_MIN", NULL);
  set_knob("T4A_COPY_SPIN_US", NULL);
  for (int k = 0; k < NS; k++) {
    printf("  %-10llu", (unsigned long long)sizes[k]);
    for (int w = 0; w < NW; w++) {
      printf(" %7.3f (%5.1f)", ratio[k][w], gbps[k][w]);
      fprintf(json,
              "%s\n{\"bytes\":%llu,\"hot\":\"%s\",\"split_min\":\"%s\",\"spin_us\":\"%s\","
              "\"copy_threads\":\"%s\",\"t4a_gbps\":%.4g,\"raw_gbps\":%.4g,\"ratio\":%.4g}",
              k || w ? "," : "", (unsigned long long)sizes[k], windows[w][0], windows[w][1],
              windows[w][2] ? windows[w][2] : "default", windows[w][3] ? windows[w][3] : "default",
              gbps[k][w], raw_gbps[k][w], ratio[k][w]);
    }
    printf("\n");
  }
  fprintf(json, "]");
  bench_cu(E.cu.cuMemFreeAsync(raw_dev, E.stream), "raw free");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  free(host);
}

/* ---- what a checked, thread-safe call costs ------------------------------------------ */

/* The floor under every table call that small copies and launches pay on
 * top of the driver's own call: a call that takes the runtime's lock and
 * looks a handle up and does nothing else (buffer_size), next to its parts
 * (an uncontended mutex, cuCtxGetCurrent). Nanoseconds per call, median of
 * 11 runs of 200 000. */
void bench_report_overhead(FILE *json) {
  enum { RUNS = 11, N = 200000 };
  t4a_buffer b;
  bench_check(E.t->buffer_alloc(E.rt, 256, &b), "buffer_alloc");
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  static const char *const names[] = {"table call (buffer_size: lock, handle lookup)",
                                      "pthread mutex lock + unlock", "cuCtxGetCurrent",
                                      "the table call in situ (after a 4 KiB pageable H2D)"};
  double ns[4];
  for (int k = 0; k < 3; k++) {
    double v[RUNS];
    for (int r = 0; r < RUNS; r++) {
      uint64_t size = 0;
      t4a__CUcontext cur;
      double t0 = bench_now();
      for (int i = 0; i < N; i++) {
        if (k == 0) {
          bench_check(E.t->buffer_size(E.rt, b, &size), "buffer_size");
        } else if (k == 1) {
          pthread_mutex_lock(&m);
          pthread_mutex_unlock(&m);
        } else {
          bench_cu(E.cu.cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
        }
      }
      v[r] = (bench_now() - t0) / N * 1e9;
    }
    ns[k] = median(v, RUNS);
  }
  /* In situ: the same table call after each 4 KiB pageable cuMemcpyHtoDAsync
   * (the driver's call evicts what the table call touches from the nearest
   * caches, as between a consumer's calls), against the copies alone. */
  enum { M = 2000 };
  unsigned char *host = calloc(1, 4096);
  t4a__CUdeviceptr raw_dev;
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&raw_dev, 4096, E.pool, E.stream), "raw alloc");
  double with[RUNS] = {0}, without[RUNS] = {0};
  for (int r = 0; r < RUNS; r++)
    for (int side = 0; side < 2; side++) {
      bool call = (r + side) % 2 == 0;
      uint64_t size = 0;
      double t0 = bench_now();
      for (int i = 0; i < M; i++) {
        bench_cu(E.cu.cuMemcpyHtoDAsync(raw_dev, host, 4096, E.stream), "h2d");
        if (call)
          bench_check(E.t->buffer_size(E.rt, b, &size), "buffer_size");
      }
      bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
      (call ? with : without)[r] = (bench_now() - t0) / M * 1e9;
    }
  ns[3] = median(with, RUNS) - median(without, RUNS);
  bench_cu(E.cu.cuMemFreeAsync(raw_dev, E.stream), "raw free");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  free(host);
  bench_check(E.t->buffer_free(E.rt, b), "buffer_free");
  printf("\ncall costs, ns per call (median of %d x %d):\n", RUNS, N);
  fprintf(json, ",\n\"call_costs_ns\":[");
  for (int k = 0; k < 4; k++) {
    printf("  %-48s %7.1f\n", names[k], ns[k]);
    fprintf(json, "%s{\"what\":\"%s\",\"ns\":%.4g}", k ? "," : "", names[k], ns[k]);
  }
  fprintf(json, "]");
}

/* ---- init, each in a fresh process ------------------------------------------------- */

/* Runs this program with `--child-init side` and reads the seconds it prints. */
static double child(const char *self, const char *side) {
  int fd[2];
  if (pipe(fd))
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  char prog[4096], flag[] = "--child-init", which[16];
  snprintf(prog, sizeof prog, "%s", self);
  snprintf(which, sizeof which, "%s", side);
  char *argv[] = {prog, flag, which, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  double s = -1;
  if (rc == 0) {
    FILE *f = fdopen(fd[0], "r");
    if (f && fscanf(f, "%lf", &s) != 1)
      s = -1;
    if (f)
      fclose(f);
    waitpid(pid, NULL, 0);
  } else {
    close(fd[0]);
  }
  return s;
}

void bench_report_init(FILE *json, const char *self) {
  enum { RUNS = 7 };
  double ours[RUNS], raw[RUNS];
  for (int i = 0; i < RUNS; i++) { /* alternate, as the cases do */
    ours[i] = child(self, "ours") * 1e3;
    raw[i] = child(self, "raw") * 1e3;
  }
  double mo = median(ours, RUNS), mr = median(raw, RUNS);
  printf("\ninit in a fresh process (median of %d, ms): t4a open+init+runtime_create %.2f, raw "
         "cuInit+context+stream+pool+staging %.2f, ratio %.3f\n",
         RUNS, mo, mr, mo / mr);
  fprintf(json, ",\n\"init_ms\":{\"t4a\":%.4g,\"raw\":%.4g,\"ratio\":%.4g}", mo, mr, mo / mr);
}
