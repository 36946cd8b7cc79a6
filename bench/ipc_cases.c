/* bench/ipc_cases.c -- ABI 1.2's processes against the raw driver, across
 * two processes (GPU rows; the importer is this program run again,
 * `t4a_bench --child-ipc`, talking over a Unix socket on its fd 3):
 *
 *   IPC import+free of a buffer   buffer_import_ipc + buffer_free, 64 exported
 *                                 buffers a round, then seal + wait; raw:
 *                                 cuMemPoolImportPointer + cuMemFreeAsync,
 *                                 then cuStreamSynchronize (both pools
 *                                 imported once, before)
 *   IPC export of a buffer        buffer_export_ipc (no descriptor); raw:
 *                                 cuMemPoolExportPointer (in this process)
 *   IPC witness wait              runtime_wait_ipc_witness (the event opened
 *                                 once, kept); raw: cuStreamWaitEvent on an
 *                                 opened interprocess event; 64 a round, then
 *                                 the stream is synchronized
 *
 * Each round the parent sends the child one command and waits for its
 * answer; the same round trip is in both sides' times (64 operations
 * share it). */
#include "config.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "t4a/gpu_ipc.h"

#define K 64

enum { C_OURS_POOL = 1, C_OURS_BUF, C_RAW_POOL, C_RAW_BUF, C_EVENTS, C_READY, C_RUN, C_QUIT };
enum { R_OURS_IMPORT = 1, R_RAW_IMPORT, R_OURS_WAIT, R_RAW_WAIT };

typedef struct cmd {
  uint32_t op, what, n, pad;
  t4a_ipc_buffer buf;
  t4a_ipc_witness wit;
  t4a__CUmemPoolPtrExportData raw;
  t4a__CUipcEventHandle evh;
} cmd;

static void sendc(int sock, const cmd *c, int fd) {
  if (t4a_ipc_send(sock, c, sizeof *c, fd) != 0) {
    fprintf(stderr, "t4a_bench: the IPC child is gone\n");
    exit(1);
  }
}

static void recvc(int sock, cmd *c, int *fd) {
  struct pollfd p = {sock, POLLIN, 0};
  if (poll(&p, 1, 60000) <= 0 || t4a_ipc_recv(sock, c, sizeof *c, fd) != 0) {
    fprintf(stderr, "t4a_bench: no answer from the IPC child\n");
    exit(1);
  }
}

/* ---- the child: the importing side ------------------------------------------------------- */

int bench_ipc_child(void) {
  int sock = 3;
  bench_setup_ours();
  bench_open_raw();
  t4a__CUdevice dev;
  t4a__CUcontext ctx;
  bench_cu(E.cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
  bench_cu(E.cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  bench_cu(E.cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  t4a__CUstream stream;
  bench_cu(E.cu.cuStreamCreate(&stream, T4A__CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  t4a_ipc_buffer ours[K];
  t4a__CUmemPoolPtrExportData raw[K];
  t4a_ipc_witness wit;
  t4a__CUevent raw_ev = NULL;
  t4a__CUmemoryPool raw_pool = NULL;
  unsigned nours = 0, nraw = 0;
  for (;;) {
    cmd c;
    int fd = -1;
    recvc(sock, &c, &fd);
    switch (c.op) {
    case C_OURS_POOL: { /* the pool imported once: one import with the descriptor */
      t4a_buffer b;
      bench_check(E.t->buffer_import_ipc(E.rt, &c.buf, fd, &b), "buffer_import_ipc");
      bench_check(E.t->buffer_free(E.rt, b), "buffer_free");
      close(fd);
      break;
    }
    case C_OURS_BUF: ours[nours++ % K] = c.buf; break;
    case C_RAW_POOL: {
      bench_cu(
          E.cu.cuMemPoolImportFromShareableHandle(&raw_pool, (void *)(uintptr_t)fd,
                                                  T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
          "cuMemPoolImportFromShareableHandle");
      t4a__CUmemAccessDesc d = {{T4A__CU_MEM_LOCATION_TYPE_DEVICE, 0},
                                T4A__CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
      bench_cu(E.cu.cuMemPoolSetAccess(raw_pool, &d, 1), "cuMemPoolSetAccess");
      close(fd);
      break;
    }
    case C_RAW_BUF: raw[nraw++ % K] = c.raw; break;
    case C_EVENTS:
      wit = c.wit;
      bench_cu(E.cu.cuIpcOpenEventHandle(&raw_ev, c.evh), "cuIpcOpenEventHandle");
      break;
    case C_RUN:
      for (uint32_t round = 0; round < c.n; round++) {
        if (c.what == R_OURS_IMPORT) {
          t4a_buffer b[K];
          for (unsigned i = 0; i < K; i++)
            bench_check(E.t->buffer_import_ipc(E.rt, &ours[i], -1, &b[i]), "buffer_import_ipc");
          for (unsigned i = 0; i < K; i++)
            bench_check(E.t->buffer_free(E.rt, b[i]), "buffer_free");
        } else if (c.what == R_RAW_IMPORT) {
          t4a__CUdeviceptr p[K];
          for (unsigned i = 0; i < K; i++)
            bench_cu(E.cu.cuMemPoolImportPointer(&p[i], raw_pool, &raw[i]),
                     "cuMemPoolImportPointer");
          for (unsigned i = 0; i < K; i++)
            bench_cu(E.cu.cuMemFreeAsync(p[i], stream), "cuMemFreeAsync");
        } else if (c.what == R_OURS_WAIT) {
          for (unsigned i = 0; i < K; i++)
            bench_check(E.t->runtime_wait_ipc_witness(E.rt, &wit), "runtime_wait_ipc_witness");
        } else {
          for (unsigned i = 0; i < K; i++)
            bench_cu(E.cu.cuStreamWaitEvent(stream, raw_ev, 0), "cuStreamWaitEvent");
        }
        if (c.what == R_OURS_IMPORT || c.what == R_OURS_WAIT) {
          t4a_witness w;
          bench_check(E.t->seal(E.rt, &w), "seal");
          bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
          bench_check(E.t->witness_release(w), "witness_release");
        } else {
          bench_cu(E.cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
        }
      }
      break;
    case C_QUIT: return 0;
    default: return 2;
    }
    cmd done = {.op = C_READY};
    sendc(sock, &done, -1);
  }
}

/* ---- the parent: the exporting side ----------------------------------------------------- */

typedef struct ipc_state {
  pid_t pid;
  int sock;
  t4a_runtime rt; /* ours: T4A_RUNTIME_IPC */
  t4a_buffer bufs[K];
  t4a__CUmemoryPool pool; /* raw: a shareable pool */
  t4a__CUdeviceptr ptrs[K];
  t4a__CUevent ev;
  t4a_witness w;
  t4a_buffer big; /* work the exported witness covers */
} ipc_state;

static void talk(ipc_state *s, const cmd *c, int fd) {
  sendc(s->sock, c, fd);
  cmd r;
  recvc(s->sock, &r, NULL);
}

static void *ipc_setup(const bench_case *c) {
  (void)c;
  ipc_state *s = calloc(1, sizeof *s);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    perror("socketpair");
    exit(1);
  }
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    exit(1);
  self[n] = 0;
  fflush(NULL);
  s->pid = fork();
  if (s->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (dup2(sv[1], 3) != 3)
      _exit(120);
    execl(self, self, "--child-ipc", (char *)NULL);
    _exit(121);
  }
  close(sv[1]);
  s->sock = sv[0];
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_IPC;
  bench_check(E.t->runtime_create(0, &o, &s->rt), "runtime_create (IPC)");
  /* ours: K buffers, the first with the pool's descriptor */
  for (unsigned i = 0; i < K; i++) {
    cmd m = {.op = i ? C_OURS_BUF : C_OURS_POOL};
    int fd = -1;
    bench_check(E.t->buffer_alloc(s->rt, 4096, &s->bufs[i]), "buffer_alloc");
    bench_check(E.t->buffer_export_ipc(s->rt, s->bufs[i], &m.buf, i ? NULL : &fd),
                "buffer_export_ipc");
    if (!i) {
      talk(s, &m, fd);
      close(fd);
      m.op = C_OURS_BUF;
    }
    talk(s, &m, -1);
  }
  /* raw: a shareable pool of the raw side's own, K blocks */
  t4a__CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = T4A__CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  props.location.type = T4A__CU_MEM_LOCATION_TYPE_DEVICE;
  bench_cu(E.cu.cuMemPoolCreate(&s->pool, &props), "cuMemPoolCreate (shareable)");
  int fd = -1;
  bench_cu(E.cu.cuMemPoolExportToShareableHandle(&fd, s->pool,
                                                 T4A__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
           "cuMemPoolExportToShareableHandle");
  cmd m = {.op = C_RAW_POOL};
  talk(s, &m, fd);
  close(fd);
  for (unsigned i = 0; i < K; i++) {
    bench_cu(E.cu.cuMemAllocFromPoolAsync(&s->ptrs[i], 4096, s->pool, E.stream), "alloc");
    m = (cmd){.op = C_RAW_BUF};
    bench_cu(E.cu.cuMemPoolExportPointer(&m.raw, s->ptrs[i]), "cuMemPoolExportPointer");
    talk(s, &m, -1);
  }
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  /* the witness and the raw event, both of pending work when exported */
  m = (cmd){.op = C_EVENTS};
  bench_check(E.t->buffer_alloc(s->rt, 256ull << 20, &s->big), "buffer_alloc");
  bench_check(E.t->memset(s->rt, s->big, 0, 1, 1, 256ull << 20), "memset");
  bench_check(E.t->seal(s->rt, &s->w), "seal");
  bench_check(E.t->witness_export_ipc(s->w, &m.wit), "witness_export_ipc");
  bench_cu(E.cu.cuEventCreate(&s->ev, T4A__CU_EVENT_INTERPROCESS | T4A__CU_EVENT_DISABLE_TIMING),
           "cuEventCreate (interprocess)");
  bench_cu(E.cu.cuEventRecord(s->ev, E.stream), "cuEventRecord");
  bench_cu(E.cu.cuIpcGetEventHandle(&m.evh, s->ev), "cuIpcGetEventHandle");
  talk(s, &m, -1);
  return s;
}

static void run(ipc_state *s, uint32_t what, int batch) {
  cmd m = {.op = C_RUN, .what = what, .n = (uint32_t)(batch / K ? batch / K : 1)};
  talk(s, &m, -1);
}

static void import_ours(void *s, int batch) { run(s, R_OURS_IMPORT, batch); }
static void import_raw(void *s, int batch) { run(s, R_RAW_IMPORT, batch); }
static void wait_ours(void *s, int batch) { run(s, R_OURS_WAIT, batch); }
static void wait_raw(void *s, int batch) { run(s, R_RAW_WAIT, batch); }

static void export_ours(void *st, int batch) {
  ipc_state *s = st;
  t4a_ipc_buffer b;
  for (int i = 0; i < batch; i++)
    E.t->buffer_export_ipc(s->rt, s->bufs[i % K], &b, NULL);
}

static void export_raw(void *st, int batch) {
  ipc_state *s = st;
  t4a__CUmemPoolPtrExportData d;
  for (int i = 0; i < batch; i++)
    E.cu.cuMemPoolExportPointer(&d, s->ptrs[i % K]);
}

static void ipc_teardown(void *st) {
  ipc_state *s = st;
  cmd m = {.op = C_QUIT};
  sendc(s->sock, &m, -1);
  int status;
  waitpid(s->pid, &status, 0);
  close(s->sock);
  bench_check(E.t->witness_release(s->w), "witness_release");
  bench_check(E.t->runtime_destroy(s->rt, T4A_WAIT_FOREVER), "runtime_destroy");
  for (unsigned i = 0; i < K; i++)
    bench_cu(E.cu.cuMemFreeAsync(s->ptrs[i], E.stream), "cuMemFreeAsync");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  bench_cu(E.cu.cuEventDestroy(s->ev), "cuEventDestroy");
  bench_cu(E.cu.cuMemPoolDestroy(s->pool), "cuMemPoolDestroy");
  free(s);
}

#define IPC(label, n, samples_, goal, ours_, raw_)                                                 \
  {                                                                                                \
    .name = label, .batch = n, .samples = samples_, .warmup = 2, .target_kind = TARGET_RATIO_MAX,  \
    .target = goal, .setup = ipc_setup, .ours = ours_, .raw = raw_, .teardown = ipc_teardown       \
  }

const bench_case bench_ipc_cases[] = {
    IPC("IPC import+free of a buffer (64 a round)", K, 21, 1.05, import_ours, import_raw),
    IPC("IPC export of a buffer", 1000, 21, 1.05, export_ours, export_raw),
    IPC("IPC witness wait (64 a round)", K, 21, 1.05, wait_ours, wait_raw),
    {.name = NULL},
};
