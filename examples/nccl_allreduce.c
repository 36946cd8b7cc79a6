/* examples/nccl_allreduce.c -- NCCL collectives on t4a runtimes: one runtime
 * and one NCCL communicator per GPU (two GPUs, one process), an all-reduce
 * (sum of float32) in place in t4a buffers, enqueued on the runtimes' own
 * streams inside raw sections, sealed, waited for and verified bit for bit
 * against the CPU. NCCL is loaded at run time (examples/nccl_dl.h): nothing
 * links it.
 *
 *   cc nccl_allreduce.c $(pkg-config --cflags --libs t4a-gpu) -ldl -o nccl_allreduce
 *   (no NCCL or CUDA header needed: examples/nccl_dl.h declares the calls)
 *   NCCL_NVLS_ENABLE=0 ./nccl_allreduce [COUNT]       (floats per GPU, default 16 Mi)
 *
 * Exit status, as t4a-gpu's: 0 verified, 1 a call failed or the result is
 * wrong, 2 usage error, 3 no backend found, 4 this host cannot run it (no
 * driver, fewer than two GPUs, no NCCL: the reason is printed).
 *
 * Why raw sections: raw_begin makes the runtime's context current for NCCL's
 * own CUDA calls and raw_end tells the runtime that work was enqueued on its
 * stream, so the next seal covers the collective: after witness_wait on both
 * seals, the all-reduce is done on both GPUs, and every later t4a call on
 * either runtime is ordered after it. The same pattern scales past one
 * machine: with one process per GPU, ncclGetUniqueId on rank 0, the id sent
 * to the others (MPI, a socket, a file) and ncclCommInitRank in each, the
 * collectives go on each process's runtime stream exactly as here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <t4a/gpu_loader.h>

#include "nccl_dl.h" /* beside this file: the build line above needs no -I */

enum { RANKS = 2 };

static const t4a_gpu_backend_v1 *t;

static void check(int rc, const char *what) {
  if (rc == T4A_OK)
    return;
  t4a_error_info e = {.struct_size = sizeof e};
  t->last_error(&e);
  fprintf(stderr, "nccl_allreduce: %s: %s: %s\n", what, t4a_status_name(rc), e.message);
  int unusable = rc == T4A_ENODRIVER || rc == T4A_ESTUBDRIVER || rc == T4A_ENODEVICE ||
                 rc == T4A_EDRIVEROLD || rc == T4A_EDRIVERMISMATCH;
  exit(unusable ? 4 : 1);
}

static t4a_nccl nccl;

static void nccl_check(int r, const char *what) {
  if (r == T4A_NCCL_SUCCESS)
    return;
  fprintf(stderr, "nccl_allreduce: %s failed: %s (%d)\n", what, nccl.error_string(r), r);
  exit(1);
}

/* Rank r's values: small integers, so that every sum is exact in float. */
static float value(int rank, uint64_t i) { return (float)(rank + 1) * (float)(i % 1021); }

static void usage(FILE *f) {
  fputs("usage: nccl_allreduce [COUNT]   (floats per GPU, default 16 Mi)\n"
        "       nccl_allreduce --help\n"
        "An NCCL all-reduce (sum) over two GPUs on two t4a runtimes' streams, verified.\n"
        "NCCL: $T4A_NCCL_LIBRARY, else libnccl.so.2 on the library path.\n"
        "exit status: 0 verified, 1 a call failed or the result is wrong, 2 usage error,\n"
        "             3 no backend found, 4 this host cannot run it (reason printed)\n",
        f);
}

int main(int argc, char **argv) {
  uint64_t count = 16ull << 20;
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    return 0;
  }
  if (argc > 1) {
    char *end;
    count = strtoull(argv[1], &end, 0);
    if (argc > 2 || *end || end == argv[1] || argv[1][0] == '-' || !count) {
      fprintf(stderr, "nccl_allreduce: unexpected argument '%s'\n", argv[argc > 2 ? 2 : 1]);
      usage(stderr);
      return 2;
    }
  }
  t4a_gpu_backend *backend;
  if (t4a_gpu_open(NULL, &backend) != T4A_OK) {
    fprintf(stderr, "nccl_allreduce: %s\n", t4a_gpu_last_error());
    return 3;
  }
  t = t4a_gpu_backend_table(backend);
  check(t->init(), "init");
  int32_t devices = 0;
  check(t->device_count(&devices), "device_count");
  if (devices < RANKS) {
    fprintf(stderr, "nccl_allreduce: %d GPU(s) here; this example needs %d\n", (int)devices, RANKS);
    return 4;
  }
  char why[768];
  if (t4a_nccl_open(&nccl, why, sizeof why) != 0) {
    fprintf(stderr, "nccl_allreduce: %s\n", why);
    return 4;
  }
  int version = 0;
  nccl_check(nccl.get_version(&version), "ncclGetVersion");
  printf("NCCL %d (%s), %d GPUs, %llu floats per GPU\n", version, nccl.path, (int)devices,
         (unsigned long long)count);

  /* one runtime per GPU, each with its buffer of rank values */
  t4a_runtime rt[RANKS];
  t4a_buffer buf[RANKS];
  uint64_t addr[RANKS];
  t4a_raw_runtime raw[RANKS];
  float *host = malloc(count * sizeof *host);
  if (!host) {
    fprintf(stderr, "nccl_allreduce: out of host memory\n");
    return 1;
  }
  for (int r = 0; r < RANKS; r++) {
    check(t->runtime_create(r, NULL, &rt[r]), "runtime_create");
    check(t->buffer_alloc(rt[r], count * sizeof(float), &buf[r]), "buffer_alloc");
    for (uint64_t i = 0; i < count; i++)
      host[i] = value(r, i);
    check(t->copy_h2d(rt[r], buf[r], 0, host, count * sizeof(float)), "copy_h2d");
    check(t->buffer_device_address(rt[r], buf[r], &addr[r]), "buffer_device_address");
    raw[r] = (t4a_raw_runtime){.struct_size = sizeof raw[r]};
    check(t->raw_runtime(rt[r], &raw[r]), "raw_runtime");
  }

  /* one communicator per GPU; the collective on each runtime's stream */
  t4a_nccl_comm comm[RANKS];
  int devlist[RANKS] = {0, 1};
  nccl_check(nccl.comm_init_all(comm, RANKS, devlist), "ncclCommInitAll");
  t4a_raw_section sec[RANKS];
  for (int r = 0; r < RANKS; r++) {
    sec[r] = (t4a_raw_section){.struct_size = sizeof sec[r]};
    check(t->raw_begin(rt[r], &sec[r]), "raw_begin");
  }
  nccl_check(nccl.group_start(), "ncclGroupStart");
  for (int r = 0; r < RANKS; r++)
    nccl_check(nccl.all_reduce((void *)(uintptr_t)addr[r], (void *)(uintptr_t)addr[r], count,
                               T4A_NCCL_FLOAT32, T4A_NCCL_SUM, comm[r], raw[r].stream),
               "ncclAllReduce");
  nccl_check(nccl.group_end(), "ncclGroupEnd");
  for (int r = RANKS; r-- > 0;) /* pairs nest: last begun, first ended */
    check(t->raw_end(rt[r], &sec[r]), "raw_end");

  /* seal both runtimes: their witnesses cover the collective */
  t4a_witness w[RANKS];
  for (int r = 0; r < RANKS; r++)
    check(t->seal(rt[r], &w[r]), "seal");
  for (int r = 0; r < RANKS; r++) {
    check(t->witness_wait(w[r], T4A_WAIT_FOREVER), "witness_wait");
    check(t->witness_release(w[r]), "witness_release");
  }

  /* every rank holds the sum, bit for bit */
  int wrong = 0;
  for (int r = 0; r < RANKS && !wrong; r++) {
    memset(host, 0xff, count * sizeof *host);
    check(t->copy_d2h(rt[r], host, buf[r], 0, count * sizeof(float)), "copy_d2h");
    for (uint64_t i = 0; i < count; i++) {
      float want = value(0, i) + value(1, i); /* integers: the sum is exact in float */
      if (host[i] != want) {
        fprintf(stderr, "nccl_allreduce: GPU %d element %llu is %g, want %g\n", r,
                (unsigned long long)i, (double)host[i], (double)want);
        wrong = 1;
        break;
      }
    }
  }
  for (int r = 0; r < RANKS; r++)
    nccl_check(nccl.comm_destroy(comm[r]), "ncclCommDestroy");
  for (int r = 0; r < RANKS; r++)
    check(t->runtime_destroy(rt[r], T4A_WAIT_FOREVER), "runtime_destroy");
  free(host);
  t4a_gpu_close(backend);
  if (wrong)
    return 1;
  printf("nccl_allreduce: all-reduce of %llu floats on %d t4a runtimes verified\n",
         (unsigned long long)count, RANKS);
  return 0;
}
