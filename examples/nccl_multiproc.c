/* examples/nccl_multiproc.c -- NCCL across processes on t4a runtimes: one
 * process per GPU, the way a job goes past one machine. The launcher (this
 * program without --rank) starts RANKS copies of itself with fork+exec (a
 * CUDA process must not fork without exec) and touches no GPU itself; rank
 * 0 makes the NCCL id (ncclGetUniqueId) and hands it to the others through
 * a file in a private directory (written whole, then renamed: a reader never
 * sees half an id); each rank makes one t4a runtime on GPU <rank>, joins
 * the communicator (ncclCommInitRank) and runs an all-reduce (sum of
 * float32) in place in a t4a buffer on the runtime's stream inside a raw
 * section, seals, waits and verifies bit for bit against the CPU. Across
 * machines only the hand-off changes (MPI, a socket, a shared file system).
 *
 *   cc nccl_multiproc.c $(pkg-config --cflags --libs t4a-gpu) -ldl -o nccl_multiproc
 *   NCCL_NVLS_ENABLE=0 ./nccl_multiproc [--ranks N] [COUNT]   (default 2 ranks, 16 Mi floats)
 *
 * Exit status, as nccl_allreduce's: 0 verified on every rank, 1 a call failed
 * or a result is wrong (or a rank died or hung: the others are stopped), 2
 * usage error, 3 no backend found, 4 this host cannot run it (no driver,
 * fewer GPUs than ranks, no NCCL: the reason is printed). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <t4a/gpu_loader.h>

#include "nccl_dl.h" /* beside this file: the build line above needs no -I */

enum { MAX_RANKS = 64, TIMEOUT_S = 120 };

static const t4a_gpu_backend_v1 *t;
static int my_rank = -1;

static void check(int rc, const char *what) {
  if (rc == T4A_OK)
    return;
  t4a_error_info e = {.struct_size = sizeof e};
  t->last_error(&e);
  fprintf(stderr, "nccl_multiproc[rank %d]: %s: %s: %s\n", my_rank, what, t4a_status_name(rc),
          e.message);
  int unusable = rc == T4A_ENODRIVER || rc == T4A_ESTUBDRIVER || rc == T4A_ENODEVICE ||
                 rc == T4A_EDRIVEROLD || rc == T4A_EDRIVERMISMATCH;
  exit(unusable ? 4 : 1);
}

static t4a_nccl nccl;

static void nccl_check(int r, const char *what) {
  if (r == T4A_NCCL_SUCCESS)
    return;
  fprintf(stderr, "nccl_multiproc[rank %d]: %s failed: %s (%d)\n", my_rank, what,
          nccl.error_string(r), r);
  exit(1);
}

/* Rank r's values: small integers, so that every sum is exact in float. */
static float value(int rank, uint64_t i) { return (float)(rank + 1) * (float)(i % 1021); }

static void usage(FILE *f) {
  fputs("usage: nccl_multiproc [--ranks N] [COUNT]   (default 2 ranks, 16 Mi floats per rank)\n"
        "       nccl_multiproc --help\n"
        "An NCCL all-reduce (sum) across N processes, one GPU and one t4a runtime each,\n"
        "started by fork+exec; the NCCL id goes from rank 0 to the others through a file.\n"
        "NCCL: $T4A_NCCL_LIBRARY, else libnccl.so.2 on the library path.\n"
        "exit status: 0 verified, 1 a call failed or the result is wrong, 2 usage error,\n"
        "             3 no backend found, 4 this host cannot run it (reason printed)\n",
        f);
}

/* A decimal or 0x number; zero only when zero_ok. 0, or -1 when not one. */
static int parse_u64(const char *s, uint64_t *out, int zero_ok) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end || end == s || s[0] == '-' || (!v && !zero_ok))
    return -1;
  *out = v;
  return 0;
}

/* ---- the id hand-off ------------------------------------------------------------ */

static void put_id(const char *dir, const t4a_nccl_unique_id *id) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/id.tmp", dir);
  snprintf(path, sizeof path, "%s/id", dir);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "nccl_multiproc[rank 0]: cannot write the NCCL id to %s: %s\n", path,
            strerror(errno));
    exit(1);
  }
}

static void get_id(const char *dir, t4a_nccl_unique_id *id) {
  char path[4096];
  snprintf(path, sizeof path, "%s/id", dir);
  for (int ms = 0; ms < TIMEOUT_S * 1000; ms += 10) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1)
        return;
    }
    nanosleep(&(struct timespec){0, 10L * 1000 * 1000}, NULL);
  }
  fprintf(stderr, "nccl_multiproc[rank %d]: no NCCL id from rank 0 in %s after %d s\n", my_rank,
          path, TIMEOUT_S);
  exit(1);
}

/* ---- one rank ---------------------------------------------------------------------- */

static int rank_main(int rank, int ranks, const char *dir, uint64_t count) {
  my_rank = rank;
  t4a_gpu_backend *backend;
  if (t4a_gpu_open(NULL, &backend) != T4A_OK) {
    fprintf(stderr, "nccl_multiproc[rank %d]: %s\n", rank, t4a_gpu_last_error());
    return 3;
  }
  t = t4a_gpu_backend_table(backend);
  check(t->init(), "init");
  int32_t devices = 0;
  check(t->device_count(&devices), "device_count");
  if (devices < ranks) {
    fprintf(stderr, "nccl_multiproc[rank %d]: %d GPU(s) here; %d ranks need one GPU each\n", rank,
            (int)devices, ranks);
    return 4;
  }
  char why[768];
  if (t4a_nccl_open(&nccl, why, sizeof why) != 0) {
    fprintf(stderr, "nccl_multiproc[rank %d]: %s\n", rank, why);
    return 4;
  }
  t4a_nccl_unique_id id;
  if (rank == 0) {
    nccl_check(nccl.get_unique_id(&id), "ncclGetUniqueId");
    put_id(dir, &id);
  } else {
    get_id(dir, &id);
  }

  t4a_runtime rt;
  t4a_buffer buf;
  uint64_t addr;
  check(t->runtime_create(rank, NULL, &rt), "runtime_create");
  float *host = malloc(count * sizeof *host);
  if (!host) {
    fprintf(stderr, "nccl_multiproc[rank %d]: out of host memory\n", rank);
    return 1;
  }
  for (uint64_t i = 0; i < count; i++)
    host[i] = value(rank, i);
  check(t->buffer_alloc(rt, count * sizeof(float), &buf), "buffer_alloc");
  check(t->copy_h2d(rt, buf, 0, host, count * sizeof(float)), "copy_h2d");
  check(t->buffer_device_address(rt, buf, &addr), "buffer_device_address");
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  check(t->raw_runtime(rt, &raw), "raw_runtime");

  /* NCCL's own CUDA calls (the communicator's setup, the collective) run
   * with the runtime's context current: inside a raw section; raw_end tells
   * the runtime that work went onto its stream, so the seal covers it. */
  t4a_raw_section sec = {.struct_size = sizeof sec};
  check(t->raw_begin(rt, &sec), "raw_begin");
  t4a_nccl_comm comm;
  nccl_check(nccl.comm_init_rank(&comm, ranks, id, rank), "ncclCommInitRank");
  nccl_check(nccl.all_reduce((void *)(uintptr_t)addr, (void *)(uintptr_t)addr, count,
                             T4A_NCCL_FLOAT32, T4A_NCCL_SUM, comm, raw.stream),
             "ncclAllReduce");
  check(t->raw_end(rt, &sec), "raw_end");
  t4a_witness w;
  check(t->seal(rt, &w), "seal");
  check(t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  check(t->witness_release(w), "witness_release");

  memset(host, 0xff, count * sizeof *host);
  check(t->copy_d2h(rt, host, buf, 0, count * sizeof(float)), "copy_d2h");
  int wrong = 0;
  for (uint64_t i = 0; i < count && !wrong; i++) {
    float want = 0;
    for (int r = 0; r < ranks; r++)
      want += value(r, i); /* integers: the sum is exact in float */
    if (host[i] != want) {
      fprintf(stderr, "nccl_multiproc[rank %d]: element %llu is %g, want %g\n", rank,
              (unsigned long long)i, (double)host[i], (double)want);
      wrong = 1;
    }
  }
  check(t->raw_begin(rt, &sec), "raw_begin");
  nccl_check(nccl.comm_destroy(comm), "ncclCommDestroy");
  check(t->raw_end(rt, &sec), "raw_end");
  check(t->runtime_destroy(rt, T4A_WAIT_FOREVER), "runtime_destroy");
  free(host);
  t4a_gpu_close(backend);
  if (!wrong)
    printf("nccl_multiproc[rank %d]: all-reduce of %llu floats over %d processes verified\n", rank,
           (unsigned long long)count, ranks);
  return wrong;
}

/* ---- the launcher ---------------------------------------------------------------- */

static void stop_all(const pid_t *pid, int ranks) {
  for (int r = 0; r < ranks; r++)
    if (pid[r] > 0)
      kill(pid[r], SIGKILL);
}

static int launch(const char *self, int ranks, uint64_t count) {
  char dir[] = "/tmp/t4a-nccl-XXXXXX";
  if (!mkdtemp(dir)) { /* 0700: only this user reads the id */
    fprintf(stderr, "nccl_multiproc: mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  pid_t pid[MAX_RANKS] = {0};
  char rank_s[16], ranks_s[16], count_s[32];
  snprintf(ranks_s, sizeof ranks_s, "%d", ranks);
  snprintf(count_s, sizeof count_s, "%llu", (unsigned long long)count);
  for (int r = 0; r < ranks; r++) {
    snprintf(rank_s, sizeof rank_s, "%d", r);
    fflush(NULL);
    pid[r] = fork();
    if (pid[r] == 0) {
      execl(self, self, "--rank", rank_s, "--ranks", ranks_s, "--id-dir", dir, count_s,
            (char *)NULL);
      fprintf(stderr, "nccl_multiproc: exec %s: %s\n", self, strerror(errno));
      _exit(1);
    }
    if (pid[r] < 0) {
      fprintf(stderr, "nccl_multiproc: fork: %s\n", strerror(errno));
      stop_all(pid, r);
      return 1;
    }
  }
  /* Waits for every rank; a rank that fails makes the others pointless
   * (they would wait in NCCL for it): they are stopped. */
  int result = 0, left = ranks;
  time_t deadline = time(NULL) + TIMEOUT_S;
  while (left > 0) {
    int status;
    pid_t done = waitpid(-1, &status, WNOHANG);
    if (done == 0) {
      if (time(NULL) > deadline) {
        fprintf(stderr, "nccl_multiproc: ranks still running after %d s; stopping them\n",
                TIMEOUT_S);
        stop_all(pid, ranks);
        result = 1;
      }
      nanosleep(&(struct timespec){0, 20L * 1000 * 1000}, NULL);
      continue;
    }
    if (done < 0)
      break;
    left--;
    int r = 0;
    while (r < ranks && pid[r] != done)
      r++;
    if (r < ranks)
      pid[r] = 0;
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (!WIFEXITED(status))
      fprintf(stderr, "nccl_multiproc: rank %d died (signal %d)\n", r, WTERMSIG(status));
    if (rc && !result) {
      result = rc;
      stop_all(pid, ranks);
    }
  }
  char path[64];
  snprintf(path, sizeof path, "%s/id", dir);
  unlink(path);
  rmdir(dir);
  if (!result)
    printf("nccl_multiproc: all-reduce of %llu floats over %d processes verified\n",
           (unsigned long long)count, ranks);
  return result;
}

int main(int argc, char **argv) {
  uint64_t count = 16ull << 20, ranks = 2, rank = UINT64_MAX;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    int bad = 0;
    if (strcmp(a, "--ranks") == 0 && i + 1 < argc)
      bad = parse_u64(argv[++i], &ranks, 0) || ranks > MAX_RANKS;
    else if (strcmp(a, "--rank") == 0 && i + 1 < argc)
      bad = parse_u64(argv[++i], &rank, 1);
    else if (strcmp(a, "--id-dir") == 0 && i + 1 < argc)
      dir = argv[++i];
    else
      bad = parse_u64(a, &count, 0);
    if (bad) {
      fprintf(stderr, "nccl_multiproc: unexpected argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (rank != UINT64_MAX) {
    if (!dir || rank >= ranks) {
      fprintf(stderr, "nccl_multiproc: --rank needs --id-dir and a rank below --ranks\n");
      return 2;
    }
    return rank_main((int)rank, (int)ranks, dir, count);
  }
  /* the launcher: its own path, for exec */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "nccl_multiproc: cannot find this program (/proc/self/exe)\n");
    return 1;
  }
  self[n] = 0;
  return launch(self, (int)ranks, count);
}
