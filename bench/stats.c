/* bench/stats.c -- the clock and the statistics every bench program reports
 * with (bench/t4a_bench, bench/t4a_ab, bench/t4a_stages): see bench.h. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench.h"

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void bench_stats(double *v, int n, bool higher_is_better, double *median, double *p99) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  int i = (int)ceil(0.99 * n) - 1;
  i = i < 0 ? 0 : i >= n ? n - 1 : i;
  *p99 = higher_is_better ? v[n - 1 - i] : v[i];
}

bool bench_unusable(int status) {
  return status == T4A_ENODRIVER || status == T4A_ESTUBDRIVER || status == T4A_ENODEVICE ||
         status == T4A_EDRIVEROLD || status == T4A_EDRIVERMISMATCH || status == T4A_ENOCOMPILER;
}
