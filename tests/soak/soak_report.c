/* tests/soak/soak_report.c -- what the soak prints: the progress report
 * every few seconds (totals and each kind's rate), the final table of
 * operations, the compile caches, and the drift from the baseline to the end
 * (see soak_main.c for what is measured when). */
#include "config.h"

#include <stdio.h>

#include "tests/soak/soak.h"

/* Under a sanitizer resident memory is the sanitizer's (quarantine, shadow
 * memory): not checked. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SOAK_SANITIZED 1
#endif
#endif

static void totals(uint64_t *ops, uint64_t *bytes, uint64_t per_kind[K_COUNT],
                   uint64_t bytes_kind[K_COUNT]) {
  *ops = *bytes = 0;
  for (int k = 0; k < K_COUNT; k++) {
    uint64_t o = 0, b = 0;
    for (unsigned i = 0; i < G.o.threads; i++) {
      o += atomic_load_explicit(&G.th[i].st.ops[k], memory_order_relaxed);
      b += atomic_load_explicit(&G.th[i].st.bytes[k], memory_order_relaxed);
    }
    if (per_kind)
      per_kind[k] = o;
    if (bytes_kind)
      bytes_kind[k] = b;
    *ops += o;
    *bytes += b;
  }
}

/* The progress report: totals, then each kind's rate since the last one. */
void soak_progress(double el, double *last_t, uint64_t last_kind[K_COUNT]) {
  uint64_t ops, bytes, per[K_COUNT], last = 0;
  totals(&ops, &bytes, per, NULL);
  for (int k = 0; k < K_COUNT; k++)
    last += last_kind[k];
  double dt = el - *last_t;
  printf("[%s %6.1f/%.0f s] %llu ops (%.0f/s now, %.0f/s overall), %.2f GiB moved; mismatches "
         "%llu, failures %u; RSS %ld MiB, %d fds\n",
         G.phase, el, G.o.duration_s, (unsigned long long)ops, (double)(ops - last) / dt,
         (double)ops / el, (double)bytes / (1 << 30),
         (unsigned long long)atomic_load(&G.mismatches), atomic_load(&G.failures),
         soak_rss_kib() >> 10, soak_open_fds());
  int col = 0;
  for (int k = 0; k < K_COUNT; k++) {
    char item[64];
    int n = snprintf(item, sizeof item, "%s %.0f/s", soak_kind_names[k],
                     (double)(per[k] - last_kind[k]) / dt);
    if (col && col + n + 2 > 100) {
      printf("\n");
      col = 0;
    }
    col += printf("%s%s", col ? ", " : "  ", item);
    last_kind[k] = per[k];
  }
  printf("\n");
  fflush(stdout);
  *last_t = el;
}

void soak_final_report(double el) {
  uint64_t ops, bytes, per[K_COUNT], per_bytes[K_COUNT];
  totals(&ops, &bytes, per, per_bytes);
  printf("\nsoak: main phase %.1f s, %u threads x %u runtimes x %u devices\n", el, G.o.threads,
         G.o.runtimes, G.ndev);
  printf("  %-26s %12s %10s %12s\n", "operation", "count", "per s", "MiB moved");
  for (int k = 0; k < K_COUNT; k++)
    printf("  %-26s %12llu %10.1f %12.1f\n", soak_kind_names[k], (unsigned long long)per[k],
           (double)per[k] / el, (double)per_bytes[k] / (1 << 20));
  printf("  %-26s %12llu %10.1f %12.1f\n", "total", (unsigned long long)ops, (double)ops / el,
         (double)bytes / (1 << 20));
}

int soak_compile_stats(const char *when) {
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  if (G.t->compile_cache_stats(&s) != T4A_OK)
    return -1;
  printf("compile caches (%s): memory entries %llu, memory hits %llu, disk hits %llu, compiles "
         "%llu, disk entries %llu, disk rejected %llu\n",
         when, (unsigned long long)s.memory_entries, (unsigned long long)s.memory_hits,
         (unsigned long long)s.disk_hits, (unsigned long long)s.misses,
         (unsigned long long)s.disk_entries, (unsigned long long)s.disk_rejected);
  if (s.disk_rejected) {
    printf("FAIL: the disk cache rejected %llu entries it wrote itself\n",
           (unsigned long long)s.disk_rejected);
    return -1;
  }
  return 0;
}

/* Prints one line of the drift table; returns 1 when `to` exceeds `from`
 * by more than the tolerance, or differs at all when `equal`. */
static int drift_line(const char *what, double from, double to, double tolerance, const char *unit,
                      const char *how, bool equal) {
  bool bad = equal ? to != from : to - from > tolerance;
  char limit[96];
  if (equal)
    snprintf(limit, sizeof limit, "must be equal");
  else
    snprintf(limit, sizeof limit, "tolerance %.0f %s%s%s", tolerance, unit, how ? "; " : "",
             how ? how : "");
  printf("  %-24s %12.0f -> %12.0f %-3s (%+.0f; %s)  %s\n", what, from, to, unit, to - from, limit,
         bad ? "DRIFT" : "ok");
  return bad;
}

int soak_drift(const soak_probe *a, const soak_probe *b) {
  int bad = 0;
  printf("drift from the baseline (after the warm-up) to the end (everything released both "
         "times):\n");
  if (a->status || b->status) {
    printf("  FAIL: probing failed: %s / %s\n", t4a_status_name(a->status),
           t4a_status_name(b->status));
    return 1;
  }
#ifdef SOAK_SANITIZED
  printf("  RSS: not checked (a sanitizer's quarantine and shadow memory): %ld -> %ld KiB\n",
         a->rss_kib, b->rss_kib);
#else
  bad += drift_line("RSS", (double)a->rss_kib, (double)b->rss_kib, (double)(G.o.rss_tolerance_kib),
                    "KiB", NULL, false);
#endif
  bad += drift_line("open fds", a->fds, b->fds, 0, "", NULL, true);
  for (unsigned d = 0; d < G.ndev && a->device_known; d++) {
    char what[32];
    snprintf(what, sizeof what, "device %u in use", d);
    bad += drift_line(what, (double)a->device_used[d] / (1 << 20),
                      (double)b->device_used[d] / (1 << 20),
                      (double)G.o.device_tolerance_bytes / (1 << 20), "MiB", a->device_how, false);
  }
  if (!a->device_known)
    printf("  device memory: not measured (%s)\n", a->device_how);
  for (int k = 0; k < 6 && a->fake; k++) {
    char what[40];
    static const char *const label[6] = {
        "device allocations", "pinned allocations", "streams", "events", "pools", "modules"};
    snprintf(what, sizeof what, "fake %s", label[k]);
    bad += drift_line(what, (double)a->fake_live[k], (double)b->fake_live[k], 0, "", NULL, true);
  }
  bool live = b->live_buffers || b->live_host_buffers || a->live_buffers || a->live_host_buffers;
  printf("  live handles in fresh runtimes: buffers %llu -> %llu, host buffers %llu -> %llu  %s\n",
         (unsigned long long)a->live_buffers, (unsigned long long)b->live_buffers,
         (unsigned long long)a->live_host_buffers, (unsigned long long)b->live_host_buffers,
         live ? "LEAK" : "ok");
  return bad + live;
}
