/* bench/bench.h -- the benchmark harness's shared state and case table. */
#ifndef T4A_BENCH_H
#define T4A_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-cuda/cuda_decls.h"
#include "t4a/gpu_loader.h"

typedef struct bench_env {
  t4a_gpu_backend *backend;
  const t4a_gpu_backend_v1 *t;
  t4a_device_info dev;
  t4a_runtime rt;   /* the runtime measured */
  void *ctx;        /* its context (the raw side uses the same one) */
  t4a__cuda_api cu; /* the raw side's own driver table */
  int driver_version;
  t4a__CUstream stream;   /* the raw side's stream */
  t4a__CUmemoryPool pool; /* the raw side's pool */
  int32_t device_count;
} bench_env;

extern bench_env E;

enum target_kind {
  TARGET_NONE,
  TARGET_RATIO_MAX,
  TARGET_RATIO_MIN,
  TARGET_ABS_MAX,
  TARGET_ABS_MIN
};

typedef struct bench_case {
  const char *name;
  uint64_t bytes; /* per operation: 0 reports microseconds, else GB/s */
  int batch;      /* operations per sample */
  int samples, warmup;
  enum target_kind target_kind;
  double target;
  uint64_t arg; /* a size, for cases that share code */
  void *(*setup)(const struct bench_case *c);
  void (*ours)(void *state, int batch);
  void (*raw)(void *state, int batch);
  void (*teardown)(void *state);
  void (*between)(void *state); /* after each timed sample, untimed; may be NULL */
  int raw_batch;                /* operations per raw sample when not `batch` (0) */
  int min_devices;              /* skipped on hosts with fewer GPUs */
  int min_cc_major;             /* skipped on older GPUs (0: any) */
  double p99_target;            /* TARGET_ABS_MIN: the p99 must reach it too (0: no p99 goal) */
  /* NULL, or why the case cannot run here (a library missing): skipped */
  const char *(*skip)(const struct bench_case *c);
} bench_case;

/* The cases (bench/cases.c, bench/lifecycle_cases.c, bench/v11_cases.c,
 * bench/graph_cases.c, bench/interop_cases.c), each table terminated by an
 * entry with a NULL name. */
extern const bench_case bench_cases[];
extern const bench_case bench_lifecycle_cases[];
extern const bench_case bench_v11_cases[];
extern const bench_case bench_graph_cases[];
extern const bench_case bench_interop_cases[];
extern const bench_case bench_v12_cases[]; /* bench/v12_cases.c: ABI 1.2 */
extern const bench_case bench_ipc_cases[]; /* bench/ipc_cases.c: ABI 1.2's processes */
/* The importing side of bench_ipc_cases: `t4a_bench --child-ipc`, its
 * socket on fd 3. */
int bench_ipc_child(void);
/* bench/t4a_bench.c: the plugin's backend and runtime (E.t, E.rt), and the
 * raw side's driver table (E.cu, cuInit done). */
void bench_setup_ours(void);
void bench_open_raw(void);
/* The host backend's rows (bench/host_cases.c), run with E naming the host
 * backend and a runtime of bench_host_threads copy threads, the number the
 * raw side's reference threads match. */
extern const bench_case bench_host_cases[];
/* The host backend's kernel rows (bench/hostk_cases.c): CUDA C compiled by
 * the host backend against C over as many threads as its kernel pool. */
extern const bench_case bench_hostk_cases[];
extern const bench_case bench_v12_host_cases[]; /* bench/v12_cases.c */
extern unsigned bench_host_threads;
/* `asked` (--copy-threads), else the runtime's default for this machine. */
unsigned bench_host_copy_threads(unsigned asked);

/* Reports that are not paired cases (bench/reports.c); each appends its
 * JSON member (",\n\"name\":...") to json. */
#include <stdio.h>
void bench_report_host(FILE *json);
void bench_report_staging_sweep(FILE *json);
void bench_report_hot_sweep(FILE *json);
void bench_report_overhead(FILE *json);
void bench_report_init(FILE *json, const char *self);
void bench_report_elapsed(FILE *json); /* bench/v11_cases.c */
void bench_report_scaling(FILE *json); /* bench/scaling.c */

double bench_now(void); /* bench/stats.c: CLOCK_MONOTONIC, in seconds */
/* Sorts v[0..n) and gives its median and p99: the value 99% of samples are
 * no worse than (the 99th percentile of times, the 1st of bandwidths). */
void bench_stats(double *v, int n, bool higher_is_better, double *median, double *p99);
/* bench/stats.c: whether a status says the host lacks what the rows need
 * (a driver, a device, a compiler): the programs exit 4 for it, else 1. */
bool bench_unusable(int status);
void bench_check(int rc, const char *what);
void bench_cu(t4a__CUresult r, const char *what);

#endif
