/* bench/t4a_ab.c -- two builds of one plugin, side by side in one process:
 * the same small operations through build A (e.g. the tree before a change)
 * and build B (the tree now), alternating sample by sample, so that the
 * cost a change adds to a hot path is measured against the code it
 * replaced, on the same machine, in the same run.
 *
 *   t4a_ab [--samples N] [--batch N] [--json FILE] A.so B.so
 *
 * A and B are plugin files (libt4a_cuda.so or libt4a_host.so of two trees;
 * bench/ab_tree.sh builds another revision's). Each is opened through the
 * loader (t4a_gpu_open_path: a v1.1 plugin as well as a v1.2 one), init, and
 * one runtime on device 0 with default options. The rows: buffer_alloc +
 * buffer_free in steady state (the block cache's path: a freed block is
 * taken again) at 256 B, 64 KiB and 1 MiB, each sample --batch pairs
 * (default 4000); launches of an empty kernel (compiled by each side) and
 * 64-byte and 4-byte (a scalar: a memset) pageable copy_h2d, each sample
 * 200 of them, the runtime sealed and waited for after each sample
 * (untimed); round trips (a launch, or a 4-byte copy_d2d, then seal,
 * witness_wait, witness_release), each sample 50 of them. A and B
 * alternate which goes first. The report gives each side's median and p99
 * per operation and two ratios B/A: of the medians, and the median of the
 * per-sample ratios (each sample's B against the A beside it).
 *
 * Exit status: 0 done, 1 a call failed, 2 usage. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "t4a/gpu_loader.h"

typedef struct side {
  const char *path;
  t4a_gpu_backend *b;
  const t4a_gpu_backend_v1 *t;
  t4a_runtime rt;
  t4a_artifact art;
  t4a_module mod;
  t4a_function fn; /* an empty kernel */
  t4a_buffer buf;  /* the small copies' destination */
} side;

static void fail(const side *s, const char *what, int rc) {
  t4a_error_info e = {.struct_size = sizeof e};
  const char *detail = t4a_gpu_last_error();
  if (s->t && s->t->last_error(&e) == T4A_OK)
    detail = e.message;
  fprintf(stderr, "t4a_ab: %s: %s: status %d: %s\n", s->path, what, rc, detail);
  exit(1);
}

static void open_side(side *s) {
  int rc = t4a_gpu_open_path(s->path, &s->b);
  if (rc != T4A_OK)
    fail(s, "open", rc);
  s->t = t4a_gpu_backend_table(s->b);
  if ((rc = s->t->init()) != T4A_OK)
    fail(s, "init", rc);
  if ((rc = s->t->runtime_create(0, NULL, &s->rt)) != T4A_OK)
    fail(s, "runtime_create", rc);
  static const char src[] = "extern \"C\" __global__ void t4a_empty() {}\n";
  t4a_compile_options o = {.struct_size = sizeof o, .source = src, .name = "empty.cu"};
  if ((rc = s->t->artifact_compile(&o, &s->art)) != T4A_OK)
    fail(s, "artifact_compile", rc);
  if ((rc = s->t->module_load(s->rt, s->art, &s->mod)) != T4A_OK)
    fail(s, "module_load", rc);
  if ((rc = s->t->function_get(s->rt, s->mod, "t4a_empty", &s->fn)) != T4A_OK)
    fail(s, "function_get", rc);
  if ((rc = s->t->buffer_alloc(s->rt, 4096, &s->buf)) != T4A_OK)
    fail(s, "buffer_alloc", rc);
}

static void drain(const side *s) {
  t4a_witness w;
  int rc = s->t->seal(s->rt, &w);
  if (rc == T4A_OK && (rc = s->t->witness_wait(w, T4A_WAIT_FOREVER)) == T4A_OK)
    rc = s->t->witness_release(w);
  if (rc != T4A_OK)
    fail(s, "seal+wait", rc);
}

/* One launch of the empty kernel, one block of 32 threads. */
static void launch_empty(const side *s) {
  static const t4a_launch_config cfg = {
      .struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {32, 1, 1}};
  int rc = s->t->launch(s->rt, s->fn, &cfg, NULL);
  if (rc != T4A_OK)
    fail(s, "launch", rc);
}

/* Seconds per launch over batch launches, drained after (untimed). */
static double launch(const side *s, uint64_t unused, int batch) {
  (void)unused;
  double t0 = bench_now();
  for (int i = 0; i < batch; i++)
    launch_empty(s);
  double t = (bench_now() - t0) / batch;
  drain(s);
  return t;
}

/* A 4-byte copy_d2d within the side's buffer. */
static void copy_4(const side *s) {
  int rc = s->t->copy_d2d(s->rt, s->buf, 2048, s->buf, 0, 4);
  if (rc != T4A_OK)
    fail(s, "copy_d2d", rc);
}

/* Seconds per round trip (one launch, or with `copy` one 4-byte copy_d2d:
 * the bench's "seal+wait after a 4 B copy"; then seal, wait, release) over
 * batch ones. */
static double round_trip(const side *s, uint64_t copy, int batch) {
  double t0 = bench_now();
  for (int i = 0; i < batch; i++) {
    if (copy)
      copy_4(s);
    else
      launch_empty(s);
    drain(s);
  }
  return (bench_now() - t0) / batch;
}

/* Seconds per pageable copy_h2d of `bytes` over batch copies, drained after. */
static double small_h2d(const side *s, uint64_t bytes, int batch) {
  static unsigned char host[4096];
  double t0 = bench_now();
  for (int i = 0; i < batch; i++) {
    int rc = s->t->copy_h2d(s->rt, s->buf, 0, host, bytes);
    if (rc != T4A_OK)
      fail(s, "copy_h2d", rc);
  }
  double t = (bench_now() - t0) / batch;
  drain(s);
  return t;
}

/* Seconds per alloc+free pair over batch pairs. */
static double alloc_free(const side *s, uint64_t bytes, int batch) {
  const t4a_gpu_backend_v1 *t = s->t;
  double t0 = bench_now();
  for (int i = 0; i < batch; i++) {
    t4a_buffer b;
    int rc = t->buffer_alloc(s->rt, bytes, &b);
    if (rc == T4A_OK)
      rc = t->buffer_free(s->rt, b);
    if (rc != T4A_OK)
      fail(s, "alloc+free", rc);
  }
  return (bench_now() - t0) / batch;
}

static const char *cpu_model(char *buf, size_t size) {
  snprintf(buf, size, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return buf;
  char line[256];
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0) {
      const char *c = strchr(line, ':');
      if (c) {
        snprintf(buf, size, "%s", c + 2);
        buf[strcspn(buf, "\n")] = '\0';
      }
      break;
    }
  fclose(f);
  return buf;
}

static void usage(FILE *to) {
  fputs("usage: t4a_ab [--samples N] [--batch N] [--json FILE] A.so B.so\n"
        "  the same operations through two builds of a plugin, alternating; B/A ratios\n",
        to);
}

int main(int argc, char **argv) {
  int samples = 41, batch = 4000;
  const char *json = NULL, *paths[2] = {NULL, NULL};
  int n = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
      samples = atoi(argv[++i]);
    else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
      batch = atoi(argv[++i]);
    else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json = argv[++i];
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (argv[i][0] != '-' && n < 2)
      paths[n++] = argv[i];
    else {
      usage(stderr);
      return 2;
    }
  }
  if (n != 2 || samples < 3 || samples > 10001 || batch < 1) {
    usage(stderr);
    return 2;
  }
  side s[2] = {{.path = paths[0]}, {.path = paths[1]}};
  open_side(&s[0]);
  open_side(&s[1]);
  typedef struct row {
    const char *name;
    double (*op)(const side *, uint64_t, int);
    uint64_t arg;
    int batch; /* 0: --batch */
  } row;
  static const row rows[] = {{"alloc+free 256 B", alloc_free, 256, 0},
                             {"alloc+free 64 KiB", alloc_free, 64 << 10, 0},
                             {"alloc+free 1 MiB", alloc_free, 1 << 20, 0},
                             {"launch, empty kernel", launch, 0, 200},
                             {"pageable copy_h2d 64 B", small_h2d, 64, 200},
                             {"copy_h2d 4 B (a memset)", small_h2d, 4, 200},
                             {"seal+wait after a launch", round_trip, 0, 50},
                             {"seal+wait after a 4 B copy", round_trip, 1, 50}};
  double *v[2], *ratio;
  v[0] = malloc(sizeof(double) * (size_t)samples);
  v[1] = malloc(sizeof(double) * (size_t)samples);
  ratio = malloc(sizeof(double) * (size_t)samples);
  if (!v[0] || !v[1] || !ratio) {
    free(v[0]);
    free(v[1]);
    free(ratio);
    fputs("t4a_ab: out of memory\n", stderr);
    return 1;
  }
  FILE *out = json ? fopen(json, "w") : NULL;
  if (json && !out) {
    perror(json);
    free(v[0]);
    free(v[1]);
    free(ratio);
    return 1;
  }
  char cpu[128];
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  printf("t4a_ab: A %s\n        B %s\n        %s, %ld CPUs, %d samples of %d pairs\n", paths[0],
         paths[1], cpu_model(cpu, sizeof cpu), cpus, samples, batch);
  printf("(launch and copy rows: samples of 200, drained after each)\n");
  printf("%-28s %10s %10s %10s %10s %9s %9s\n", "row", "A median", "A p99", "B median", "B p99",
         "B/A", "paired");
  if (out)
    fprintf(out, "{\"machine\": \"%s, %ld CPUs\", \"a\": \"%s\", \"b\": \"%s\", \"rows\": [", cpu,
            cpus, paths[0], paths[1]);
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    const row *r = &rows[k];
    int nb = r->batch ? r->batch : batch;
    for (int w = 0; w < 3; w++) /* warm both: caches, the block cache's first blocks */
      for (int j = 0; j < 2; j++)
        (void)r->op(&s[j], r->arg, nb);
    for (int i = 0; i < samples; i++) {
      int first = i & 1;
      v[first][i] = r->op(&s[first], r->arg, nb);
      v[!first][i] = r->op(&s[!first], r->arg, nb);
      ratio[i] = v[1][i] / v[0][i];
    }
    double ma, mb, pa, pb, mr, unused;
    bench_stats(v[0], samples, false, &ma, &pa);
    bench_stats(v[1], samples, false, &mb, &pb);
    bench_stats(ratio, samples, false, &mr, &unused);
    printf("%-28s %7.1f ns %7.1f ns %7.1f ns %7.1f ns %9.3f %9.3f\n", r->name, ma * 1e9, pa * 1e9,
           mb * 1e9, pb * 1e9, mb / ma, mr);
    if (out)
      fprintf(out,
              "%s\n  {\"row\": \"%s\", \"a_median_ns\": %.2f, \"a_p99_ns\": %.2f, "
              "\"b_median_ns\": %.2f, \"b_p99_ns\": %.2f, \"ratio\": %.4f, \"paired_ratio\": %.4f}",
              k ? "," : "", r->name, ma * 1e9, pa * 1e9, mb * 1e9, pb * 1e9, mb / ma, mr);
  }
  if (out) {
    fputs("\n]}\n", out);
    fclose(out);
  }
  for (int j = 0; j < 2; j++) {
    const t4a_gpu_backend_v1 *t = s[j].t;
    if (t->buffer_free(s[j].rt, s[j].buf) != T4A_OK ||
        t->module_unload(s[j].rt, s[j].mod) != T4A_OK || t->artifact_release(s[j].art) != T4A_OK ||
        t->runtime_destroy(s[j].rt, T4A_WAIT_FOREVER) != T4A_OK)
      fail(&s[j], "teardown", 1);
    t4a_gpu_close(s[j].b);
  }
  free(v[0]);
  free(v[1]);
  free(ratio);
  return 0;
}
