/* tests/soak/soak_main.c -- t4a_soak: options, the two phases, reports, the
 * drift check and the exit status.
 *
 * Phases: a warm-up (the same workload, shorter) brings the process to its
 * steady state: the backend's copy threads, spare runtime parts (docs/
 * design.md: a destroyed runtime's context reference, stream, trimmed pool
 * and staging are kept for the next runtime_create), handle tables, malloc
 * arenas, the driver's own lazily made state. Everything is released; the
 * baseline is taken. The main phase runs for the duration, reporting every
 * few seconds; everything is released again and the end is compared with the
 * baseline: resident memory within a tolerance, open fds equal, device memory
 * in use within a tolerance, and on the fake driver every kind of live
 * driver object equal.
 *
 * Exit: 0 pass; 1 a mismatch, an unexpected status, a hang or drift beyond
 * tolerance (each printed); 2 bad usage; 3 no backend; 4 no usable GPU. */
#include "config.h"

#include <dirent.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/soak/soak.h"

soak_global G = {.print_lock = PTHREAD_MUTEX_INITIALIZER};

const char *const soak_kind_names[K_COUNT] = {
#define SOAK_NAME(name, text) text,
    SOAK_KINDS(SOAK_NAME)
#undef SOAK_NAME
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fprintf(f, "usage: t4a_soak [options]\n"
             "  --duration S          main phase, seconds (default 180)\n"
             "  --ops N               main phase: each thread stops after N operations (with\n"
             "                        --threads 1, a seed then replays exactly)\n"
             "  --warmup S            warm-up before the baseline (default duration/10, 2..20)\n"
             "  --threads N           threads (default 4)\n"
             "  --runtimes M          runtimes per thread on every device (default 2)\n"
             "  --devices D           use the first D devices (default all)\n"
             "  --seed X              seed (default $T4A_SOAK_SEED, else the clock)\n"
             "  --max-bytes B         largest device buffer (default 16 MiB)\n"
             "  --staging-kib K       every runtime's staging bound (default 16384)\n"
             "  --report-every S      progress report period (default 10)\n"
             "  --rss-tolerance-mib N resident memory growth allowed (default 8)\n"
             "  --device-tolerance-mib N device memory growth allowed (default 64)\n"
             "  --no-compile          leave NVRTC out (kernels from PTX only)\n"
             "  --no-kernels          a backend without kernels (the host backend's today):\n"
             "                        the fills are memsets, modules are refused as documented\n");
}

static bool no_compile, no_kernels;

static int parse(int argc, char **argv, soak_opts *o) {
  *o = (soak_opts){.duration_s = 180,
                   .warmup_s = -1,
                   .report_every_s = 10,
                   .threads = 4,
                   .runtimes = 2,
                   .max_bytes = 16u << 20,
                   .staging_bytes = 16u << 20,
                   .rss_tolerance_kib = 8u << 10,
                   .device_tolerance_bytes = 64u << 20};
  const char *env = getenv("T4A_SOAK_SEED");
  o->seed = env && *env ? strtoull(env, NULL, 0) : 0;
  static const struct option longs[] = {{"duration", 1, 0, 'd'},
                                        {"ops", 1, 0, 'o'},
                                        {"warmup", 1, 0, 'w'},
                                        {"threads", 1, 0, 't'},
                                        {"runtimes", 1, 0, 'r'},
                                        {"devices", 1, 0, 'D'},
                                        {"seed", 1, 0, 's'},
                                        {"max-bytes", 1, 0, 'm'},
                                        {"staging-kib", 1, 0, 'k'},
                                        {"report-every", 1, 0, 'e'},
                                        {"rss-tolerance-mib", 1, 0, 'R'},
                                        {"device-tolerance-mib", 1, 0, 'T'},
                                        {"no-compile", 0, 0, 'n'},
                                        {"no-kernels", 0, 0, 'K'},
                                        {"help", 0, 0, 'h'},
                                        {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
    switch (c) {
    case 'd': o->duration_s = atof(optarg); break;
    case 'w': o->warmup_s = atof(optarg); break;
    case 'o': o->ops = strtoull(optarg, NULL, 0); break;
    case 't': o->threads = (unsigned)strtoul(optarg, NULL, 0); break;
    case 'r': o->runtimes = (unsigned)strtoul(optarg, NULL, 0); break;
    case 'D': o->devices = (unsigned)strtoul(optarg, NULL, 0); break;
    case 's': o->seed = strtoull(optarg, NULL, 0); break;
    case 'm': o->max_bytes = strtoull(optarg, NULL, 0); break;
    case 'k': o->staging_bytes = strtoull(optarg, NULL, 0) << 10; break;
    case 'e': o->report_every_s = atof(optarg); break;
    case 'R': o->rss_tolerance_kib = strtoull(optarg, NULL, 0) << 10; break;
    case 'T': o->device_tolerance_bytes = strtoull(optarg, NULL, 0) << 20; break;
    case 'n': no_compile = true; break;
    case 'K': no_kernels = true; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); return -1;
    }
  }
  if (optind < argc || o->threads < 1 || o->threads > 256 || o->runtimes < 1 ||
      o->duration_s <= 0 || o->report_every_s <= 0 || o->max_bytes < 4) {
    usage(stderr);
    return -1;
  }
  if (o->warmup_s < 0)
    o->warmup_s = o->duration_s / 10 < 2 ? 2 : o->duration_s / 10 > 20 ? 20 : o->duration_s / 10;
  if (!o->seed) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    o->seed = ((uint64_t)ts.tv_sec << 20 ^ (uint64_t)ts.tv_nsec) | 1;
  }
  return 0;
}

/* ---- the disk cache: a private one unless T4A_CACHE_DIR names one ------------------ */

static char cache_dir[256];

static void cache_setup(void) {
  if (getenv("T4A_CACHE_DIR"))
    return;
  const char *tmp = getenv("TMPDIR");
  snprintf(cache_dir, sizeof cache_dir, "%s/t4a-soak-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
  if (!mkdtemp(cache_dir)) {
    cache_dir[0] = '\0';
    return;
  }
  setenv("T4A_CACHE_DIR", cache_dir, 1);
}

static void cache_remove(void) {
  if (!cache_dir[0])
    return;
  DIR *d = opendir(cache_dir);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    char path[600];
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
      unlink(path);
    }
  }
  if (d)
    closedir(d);
  rmdir(cache_dir);
}

/* ---- phases ----------------------------------------------------------------------- */

/* A thread whose operation count has not moved for SOAK_HANG_NS is stuck:
 * say where, and give up (a hang is a failure; its stack is in a core). */
static void watchdog(double now, bool main_phase) {
  for (unsigned i = 0; i < G.o.threads; i++) {
    soak_thread *th = &G.th[i];
    uint64_t p = atomic_load_explicit(&th->progress, memory_order_relaxed);
    if (p != th->wd_seen || (main_phase && G.o.ops && p >= G.o.ops)) {
      th->wd_seen = p;
      th->wd_moved = now;
    } else if (now - th->wd_moved > (double)SOAK_HANG_NS * 1e-9) {
      soak_fail(th, "HANG: no operation finished for %.0f s", now - th->wd_moved);
      abort();
    }
  }
}

/* Whether every thread ran its --ops operations (main phase). */
static bool all_done(bool main_phase) {
  if (!main_phase || !G.o.ops)
    return false;
  for (unsigned i = 0; i < G.o.threads; i++)
    if (atomic_load_explicit(&G.th[i].progress, memory_order_relaxed) < G.o.ops)
      return false;
  return true;
}

static double run_phase(const char *name, double seconds, bool report) {
  G.phase = name;
  atomic_store(&G.stop, false);
  unsigned nrt = G.o.runtimes * G.ndev;
  for (unsigned i = 0; i < G.o.threads; i++) {
    soak_thread *th = &G.th[i];
    memset(th->rt, 0, nrt * sizeof *th->rt);
    for (unsigned k = 0; k < nrt; k++)
      th->rt[k].dev = (int32_t)(k / G.o.runtimes);
    th->index = i;
    th->nrt = nrt;
    th->nwit = 0;
    th->pub_rt = -1;
    th->op = 0;
    th->nlog = 0;
    th->failed = false;
    atomic_store(&th->progress, 0);
    memset(th->log, 0, sizeof th->log);
    for (int k = 0; k < K_COUNT; k++) {
      atomic_store(&th->st.ops[k], 0);
      atomic_store(&th->st.bytes[k], 0);
    }
    /* thread i of a phase draws the same sequence for the same seed */
    th->rng.s = G.o.seed ^ (0x5851f42d4c957f2dull * (i + 1)) ^ (report ? 0 : 0xdeadbeefull);
  }
  double t0 = now_s(), el = 0, last_t = 0, next = G.o.report_every_s;
  uint64_t last_kind[K_COUNT] = {0};
  for (unsigned i = 0; i < G.o.threads; i++) {
    G.th[i].wd_moved = t0;
    G.th[i].wd_seen = 0;
    if (pthread_create(&G.th[i].tid, NULL, soak_worker, &G.th[i]) != 0) {
      fprintf(stderr, "FAIL: pthread_create\n");
      exit(1);
    }
  }
  while (!atomic_load(&G.stop) && (el = now_s() - t0) < seconds && !all_done(report)) {
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    if (report && el >= next) {
      soak_progress(el, &last_t, last_kind);
      next += G.o.report_every_s;
    }
    watchdog(now_s(), report);
  }
  el = now_s() - t0;
  atomic_store(&G.stop, true);
  for (unsigned i = 0; i < G.o.threads; i++) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)(SOAK_HANG_NS / 1000000000ull);
    if (pthread_timedjoin_np(G.th[i].tid, NULL, &deadline) != 0) {
      soak_fail(&G.th[i], "HANG: the thread did not finish within %llu s after the phase ended",
                SOAK_HANG_NS / 1000000000ull);
      abort();
    }
  }
  for (unsigned i = 0; i < G.o.threads; i++)
    if (G.box[i].w.bits) {
      G.t->witness_release(G.box[i].w);
      G.box[i].w.bits = 0;
    }
  return el;
}

/* ---- main ------------------------------------------------------------------------------- */

static int setup(void) {
  int rc = t4a_gpu_open(NULL, &G.backend);
  if (rc) {
    fprintf(stderr, "t4a_soak: no backend: %s\n", t4a_gpu_last_error());
    return 3;
  }
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(G.backend);
  G.t = t;
  if (!t)
    return 3;
  int32_t n = 0;
  if ((rc = t->init()) || (rc = t->device_count(&n)) || n < 1) {
    t4a_error_info e = {.struct_size = sizeof e};
    t->last_error(&e);
    fprintf(stderr, "t4a_soak: no usable GPU: %s: %s\n", t4a_status_name(rc),
            e.message ? e.message : "");
    return 4;
  }
  G.ndev = G.o.devices && G.o.devices < (unsigned)n ? G.o.devices : (unsigned)n;
  G.ndev = G.ndev > SOAK_MAX_DEVICES ? SOAK_MAX_DEVICES : G.ndev;
  if (G.o.runtimes * G.ndev > 64) {
    fprintf(stderr, "t4a_soak: at most 64 runtimes per thread (runtimes x devices)\n");
    return 2;
  }
  for (unsigned d = 0; d < G.ndev; d++) {
    t4a_device_info info = {.struct_size = sizeof info};
    t->device_info((int32_t)d, &info);
    info.name[sizeof info.name - 1] = '\0';
    printf("device %u: %s, %.1f GiB\n", d, info.name, (double)info.total_memory / (1 << 30));
    for (unsigned s = 0; s < G.ndev; s++) {
      bool ok = false;
      G.peer[d][s] = s != d && t->peer_access_supported((int32_t)d, (int32_t)s, &ok) == 0 && ok;
    }
  }
  G.host_backend = strcmp(t->name, "host") == 0;
  G.kernels = !no_kernels;
  t4a_compiler_info ci = {.struct_size = sizeof ci};
  t->compiler_info(&ci);
  G.compiler = ci.status == T4A_OK && !no_compile && G.kernels;
  if (ci.status != T4A_OK && !no_compile && G.kernels) {
    ci.reason[sizeof ci.reason - 1] = '\0';
    fprintf(stderr,
            "t4a_soak: NVRTC unavailable (%s): the soak compiles kernels; install it or "
            "pass --no-compile\n",
            ci.reason);
    return 4;
  }
  return 0;
}

/* The make target that replays a seed on this backend. */
static const char *replay_target(void) { return G.host_backend ? "soak-host" : "soak"; }

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (parse(argc, argv, &G.o))
    return 2;
  /* a fixed threshold: glibc would otherwise raise it as large blocks are
   * freed and keep them in its arenas, which reads as resident growth */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  cache_setup();
  int rc = setup();
  if (rc) {
    if (G.backend)
      t4a_gpu_close(G.backend);
    cache_remove();
    return rc;
  }
  printf("t4a_soak: seed %llu (replay: T4A_SOAK_SEED=%llu make %s, or --seed), %u threads x %u "
         "runtimes x %u devices, %.0f s + %.0f s warm-up, buffers up to %llu bytes, staging %llu "
         "KiB, NVRTC %s, kernels %s, disk cache %s\n",
         (unsigned long long)G.o.seed, (unsigned long long)G.o.seed, replay_target(), G.o.threads,
         G.o.runtimes, G.ndev, G.o.duration_s, G.o.warmup_s, (unsigned long long)G.o.max_bytes,
         (unsigned long long)(G.o.staging_bytes >> 10), G.compiler ? "on" : "off",
         G.kernels ? "on" : "off (memsets)", getenv("T4A_CACHE_DIR"));
  G.th = calloc(G.o.threads, sizeof *G.th);
  G.pub = calloc(G.o.threads, sizeof *G.pub);
  G.box = calloc(G.o.threads, sizeof *G.box);
  uint64_t room = (G.o.max_bytes > (5u << 20) ? G.o.max_bytes : (5u << 20)) + 64;
  for (unsigned i = 0; G.th && G.pub && G.box && i < G.o.threads; i++) {
    pthread_mutex_init(&G.pub[i].lock, NULL);
    pthread_mutex_init(&G.box[i].lock, NULL);
    G.th[i].rt = calloc((size_t)G.o.runtimes * G.ndev, sizeof *G.th[i].rt);
    G.th[i].src = malloc(room);
    G.th[i].dst = malloc(room);
    if (!G.th[i].rt || !G.th[i].src || !G.th[i].dst) {
      fprintf(stderr, "t4a_soak: out of host memory\n");
      return 1;
    }
    /* resident from the start: pages first touched later would read as drift */
    memset(G.th[i].src, 0, room);
    memset(G.th[i].dst, 0, room);
  }
  if (!G.th || !G.pub || !G.box)
    return 1;

  run_phase("warm-up", G.o.warmup_s, false);
  soak_probe base = {0}, end = {0};
  if (!atomic_load(&G.failures)) {
    malloc_trim(0);
    soak_probe_take(&base);
    soak_compile_stats("after the warm-up");
  }
  double el = atomic_load(&G.failures) ? 0 : run_phase("main", G.o.duration_s, true);
  int fails = (int)atomic_load(&G.failures);
  for (unsigned i = 0; i < G.o.threads && !fails; i++)
    if (atomic_load(&G.th[i].progress) == 0) { /* a soak that did nothing did not pass */
      printf("FAIL: thread %u finished no operation in the main phase; run longer\n", i);
      fails++;
    }
  if (!fails) {
    soak_final_report(el);
    malloc_trim(0);
    soak_probe_take(&end);
    fails += soak_compile_stats("end") != 0;
    fails += soak_drift(&base, &end);
  }
  printf("mismatches: %llu\nresult: %s (seed %llu; replay: T4A_SOAK_SEED=%llu make %s)\n",
         (unsigned long long)atomic_load(&G.mismatches), fails ? "FAIL" : "PASS",
         (unsigned long long)G.o.seed, (unsigned long long)G.o.seed, replay_target());

  for (unsigned i = 0; i < G.o.threads; i++) {
    free(G.th[i].rt);
    free(G.th[i].src);
    free(G.th[i].dst);
    pthread_mutex_destroy(&G.pub[i].lock);
    pthread_mutex_destroy(&G.box[i].lock);
  }
  free(G.th);
  free(G.pub);
  free(G.box);
  soak_probe_close();
  t4a_gpu_close(G.backend);
  cache_remove();
  return fails ? 1 : 0;
}
