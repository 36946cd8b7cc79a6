/* tests/gpu/test_ipc_procs.c -- two processes on one device sharing buffers
 * and witnesses (ABI 1.2's processes), in the fake lane (CI: each process
 * runs its own fake driver, which shares pools and events through memfds)
 * and on a GPU (make check-gpu).
 *
 *  - Both ways: this process exports a buffer it writes behind a closed gate
 *    (a kernel spinning on a host flag) with a witness of the write; the
 *    peer imports both, waits GPU-side and reads: it must not answer while
 *    the gate is held (200 ms), and then answers with the data bit-exact.
 *    The peer exports one of its own the same way and this process reads it
 *    behind the peer's gate. Then the frees in the header's order: each
 *    importer frees, seals and exports that witness; each exporter waits for
 *    it before its own free.
 *  - The exporter killed (SIGKILL) while it works: the importer still reads
 *    the import bit-exact, writes and copies it, frees it, and its runtime
 *    is destroyed and recreated normally.
 *  - The importer killed while it reads the import in a loop: the exporter
 *    frees the buffer and exports another to a new peer, which checks it.
 *
 * The peer is this program run again (fork + exec of /proc/self/exe with
 * --child ROLE: a forked child could not use the backend, see fork() in the
 * header); the two talk over a Unix socket (the child's fd 3), the pool's
 * descriptor passed with SCM_RIGHTS (t4a/gpu_ipc.h). Every wait on the
 * other process is bounded. */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t4a/gpu_ipc.h"
#include "tests/runtime/rtutil.h"

#define BYTES ((1u << 20) + 4099u) /* odd: the copies' tails matter */
#define HOLD_MS 200                /* how long a gate holds the exporter's write */

enum { OP_CHECK = 1, OP_MAKE, OP_OPEN, OP_FREE, OP_SPIN, OP_QUIT, OP_RESULT, OP_MADE, OP_TICK };

/* One message either way (a descriptor may ride with it). */
typedef struct msg {
  uint32_t op, status;
  uint64_t seed, bytes;
  t4a_ipc_buffer buf;
  t4a_ipc_witness wit;
} msg;

static char self_path[4096];

static double bound_s(void) {
  const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
  double k = m && *m ? atof(m) : 1;
  return 20 * (k > 1 ? k : 1);
}

/* Deterministic bytes of a seed: both sides compute them. */
static void pattern(unsigned char *p, uint64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (uint64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (unsigned char)(s >> 56);
  }
}

/* Receives one message within ms milliseconds (false: none, or EOF). */
static bool recv_msg(int sock, msg *m, int *fd, int ms) {
  struct pollfd p = {sock, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0)
    return false;
  return t4a_ipc_recv(sock, m, sizeof *m, fd) == 0;
}

static bool send_msg(int sock, const msg *m, int fd) {
  return t4a_ipc_send(sock, m, sizeof *m, fd) == 0;
}

/* ---- the peer (a child: no Check here; a failure exits) ---------------------------------- */

static void child_ok(const char *what, int rc) {
  if (rc == T4A_OK)
    return;
  fprintf(stderr, "ipc child %d: %s: %s: %s\n", (int)getpid(), what, t4a_status_name(rc),
          t4a_test_backend_error(T));
  _exit(1);
}
#define CHILD_OK(expr) child_ok(#expr, (expr))

/* A runtime on device 0 that may share memory with other processes (the
 * child's and the parent's alike). */
static int create_ipc_runtime(t4a_runtime *rt) {
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_IPC;
  return T->runtime_create(0, &o, rt);
}

static t4a_runtime ipc_runtime(void) {
  t4a_runtime rt;
  CHILD_OK(create_ipc_runtime(&rt));
  return rt;
}

/* The child's gate (no Check there, so not rtutil's): t4a_spin of the test
 * PTX through the table, spinning on a pinned word. */
typedef struct cgate {
  t4a_artifact art;
  t4a_module mod;
  t4a_function spin;
  t4a_host_buffer hb;
  volatile uint32_t *flag;
} cgate;

static void cgate_close(cgate *g, t4a_runtime rt) {
  if (!g->spin.bits) { /* loaded before anything waits: lazy loading may synchronise */
    const char *ptx = rt_test_ptx();
    void *p;
    CHILD_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx) + 1, "gate.ptx", &g->art));
    CHILD_OK(T->module_load(rt, g->art, &g->mod));
    CHILD_OK(T->function_get(rt, g->mod, "t4a_spin", &g->spin));
    CHILD_OK(T->host_alloc(rt, sizeof(uint32_t), 0, &g->hb, &p));
    g->flag = p;
  }
  __atomic_store_n(g->flag, 0u, __ATOMIC_SEQ_CST);
  uint64_t addr = (uint64_t)(uintptr_t)g->flag;
  void *args[] = {&addr};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  CHILD_OK(T->launch(rt, g->spin, &cfg, args));
}

static void seal_export(t4a_runtime rt, t4a_ipc_witness *out) {
  t4a_witness w;
  CHILD_OK(T->seal(rt, &w));
  CHILD_OK(T->witness_export_ipc(w, out));
  /* kept until the process ends: the header's rule (the other side waits on it) */
}

/* "peer": answers the parent's commands; "exporter": exports one buffer at
 * once, then works (memsets, seals, waits) until killed. */
static int child_main(const char *role) {
  int sock = 3;
  if (t4a_gpu_open_path(rt_plugin_path(), &B) != T4A_OK) {
    fprintf(stderr, "ipc child: cannot open %s: %s\n", rt_plugin_path(), t4a_gpu_last_error());
    _exit(1);
  }
  T = t4a_gpu_backend_table(B);
  CHILD_OK(T->init());
  t4a_runtime rt = ipc_runtime();
  t4a_buffer imports[8] = {{0}};
  unsigned nimports = 0;
  t4a_buffer made = {0};
  cgate gate;
  memset(&gate, 0, sizeof gate);
  bool gated = false, sent_pool = false;
  if (strcmp(role, "exporter") == 0) {
    msg m = {.op = OP_MADE, .seed = 99, .bytes = BYTES};
    unsigned char *data = malloc(BYTES);
    pattern(data, BYTES, m.seed);
    CHILD_OK(T->buffer_alloc(rt, BYTES, &made));
    CHILD_OK(T->copy_h2d(rt, made, 0, data, BYTES));
    int fd = -1;
    CHILD_OK(T->buffer_export_ipc(rt, made, &m.buf, &fd));
    seal_export(rt, &m.wit);
    if (!send_msg(sock, &m, fd))
      _exit(2);
    close(fd);
    t4a_buffer y;
    CHILD_OK(T->buffer_alloc(rt, BYTES, &y));
    for (uint32_t i = 0;; i++) { /* busy until killed */
      CHILD_OK(T->memset(rt, y, 0, i & 0xff, 1, BYTES));
      t4a_witness w;
      CHILD_OK(T->seal(rt, &w));
      CHILD_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
      CHILD_OK(T->witness_release(w));
      msg t = {.op = OP_TICK, .seed = i};
      if (!send_msg(sock, &t, -1))
        _exit(0); /* the parent is gone */
    }
  }
  unsigned char *buf = malloc(BYTES), *want = malloc(BYTES);
  for (;;) {
    msg m;
    int fd = -1;
    if (!recv_msg(sock, &m, &fd, 60000))
      _exit(3);
    msg r = {.op = OP_RESULT};
    switch (m.op) {
    case OP_CHECK: { /* import, wait, read, compare */
      t4a_buffer b;
      CHILD_OK(T->buffer_import_ipc(rt, &m.buf, fd, &b));
      imports[nimports++ % 8] = b;
      CHILD_OK(T->runtime_wait_ipc_witness(rt, &m.wit));
      CHILD_OK(T->copy_d2h(rt, buf, b, 0, m.bytes)); /* waits for the wait */
      pattern(want, m.bytes, m.seed);
      r.status = memcmp(buf, want, m.bytes) != 0;
      break;
    }
    case OP_MAKE: { /* a buffer of ours, written behind our gate */
      cgate_close(&gate, rt);
      gated = true;
      t4a_host_buffer hb;
      void *hp;
      CHILD_OK(T->host_alloc(rt, m.bytes, 0, &hb, &hp));
      pattern(hp, m.bytes, m.seed);
      CHILD_OK(T->buffer_alloc(rt, m.bytes, &made));
      CHILD_OK(T->copy_h2d_pinned(rt, made, 0, hb, 0, m.bytes));
      r.op = OP_MADE;
      int pfd = -1;
      CHILD_OK(T->buffer_export_ipc(rt, made, &r.buf, sent_pool ? NULL : &pfd));
      seal_export(rt, &r.wit);
      bool ok = send_msg(sock, &r, pfd);
      if (pfd >= 0)
        close(pfd);
      sent_pool = true;
      if (!ok)
        _exit(2);
      continue;
    }
    case OP_OPEN:
      if (gated)
        __atomic_store_n(gate.flag, 1u, __ATOMIC_SEQ_CST);
      break;
    case OP_FREE: /* our imports go first, then the exporter's frees */
      for (unsigned i = 0; i < nimports && i < 8; i++)
        CHILD_OK(T->buffer_free(rt, imports[i]));
      nimports = 0;
      seal_export(rt, &r.wit);
      break;
    case OP_SPIN: /* read our first import until killed */
      for (uint32_t i = 0;; i++) {
        CHILD_OK(T->copy_d2h(rt, buf, imports[0], 0, m.bytes));
        msg t = {.op = OP_TICK, .seed = i};
        if (!send_msg(sock, &t, -1))
          _exit(0);
      }
    case OP_QUIT: /* after the importer's free (its witness), ours */
      CHILD_OK(T->runtime_wait_ipc_witness(rt, &m.wit));
      if (made.bits)
        CHILD_OK(T->buffer_free(rt, made));
      CHILD_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
      _exit(0);
    default: _exit(4);
    }
    if (fd >= 0)
      close(fd);
    if (!send_msg(sock, &r, -1))
      _exit(2);
  }
}

/* ---- the parent's side ----------------------------------------------------------------- */

typedef struct peer {
  pid_t pid;
  int sock;
} peer;

static peer spawn_peer(const char *role) {
  int sv[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {                     /* only async-signal-safe calls until exec */
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that timed out */
    if (dup2(sv[1], 3) != 3)
      _exit(120);
    execl(self_path, self_path, "--child", role, (char *)NULL);
    _exit(121);
  }
  close(sv[1]);
  return (peer){pid, sv[0]};
}

static msg expect(peer *p, uint32_t op, int *fd) {
  msg m;
  memset(&m, 0, sizeof m);
  ck_assert_msg(recv_msg(p->sock, &m, fd, (int)(bound_s() * 1000)),
                "no message from the peer (it failed or hung: see its stderr)");
  ck_assert_uint_eq(m.op, op);
  return m;
}

static void send_or_fail(peer *p, const msg *m, int fd) {
  ck_assert_msg(send_msg(p->sock, m, fd), "the peer is gone");
}

/* The peer's exit status (it must end within the bound). */
static int reap(peer *p) {
  int status = 0;
  pid_t r = 0;
  for (int i = 0; i < (int)(bound_s() * 100) && (r = waitpid(p->pid, &status, WNOHANG)) == 0; i++) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  if (r == 0) {
    kill(p->pid, SIGKILL);
    waitpid(p->pid, &status, 0);
  }
  close(p->sock);
  ck_assert_msg(r != 0, "the peer did not end");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void kill_peer(peer *p) {
  kill(p->pid, SIGKILL);
  int status;
  waitpid(p->pid, &status, 0);
  close(p->sock);
  ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static t4a_runtime parent_ipc_runtime(void) {
  t4a_runtime rt;
  RT_OK(create_ipc_runtime(&rt));
  return rt;
}

/* Exports a buffer of `seed`'s bytes written behind a gate (held by the
 * caller: *gate) with the write's witness, into m (OP_CHECK). */
static t4a_buffer export_gated(t4a_runtime rt, rt_gate *gate, t4a_host_buffer *hb, uint64_t seed,
                               msg *m, int *fd) {
  void *hp;
  t4a_buffer a;
  rt_gate_close(gate, rt);
  RT_OK(T->host_alloc(rt, BYTES, 0, hb, &hp));
  pattern(hp, BYTES, seed);
  RT_OK(T->buffer_alloc(rt, BYTES, &a));
  RT_OK(T->copy_h2d_pinned(rt, a, 0, *hb, 0, BYTES));
  memset(m, 0, sizeof *m);
  m->op = OP_CHECK;
  m->seed = seed;
  m->bytes = BYTES;
  RT_OK(T->buffer_export_ipc(rt, a, &m->buf, fd));
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_export_ipc(w, &m->wit));
  RT_OK(T->witness_release(w)); /* (the write completes before the peer answers) */
  return a;
}

typedef struct reader {
  t4a_runtime rt;
  t4a_buffer b;
  unsigned char *out;
  int rc, done;
} reader;

static void *read_import(void *arg) {
  reader *r = arg;
  r->rc = T->copy_d2h(r->rt, r->out, r->b, 0, BYTES);
  __atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

START_TEST(two_processes_share_buffers_and_witnesses_both_ways) {
  t4a_runtime rt = parent_ipc_runtime();
  peer p = spawn_peer("peer");
  /* ours to the peer, written behind our gate */
  rt_gate gate;
  t4a_host_buffer hb;
  msg m;
  int fd = -1;
  t4a_buffer a = export_gated(rt, &gate, &hb, 7, &m, &fd);
  send_or_fail(&p, &m, fd);
  close(fd);
  msg early;
  ck_assert_msg(!recv_msg(p.sock, &early, NULL, HOLD_MS),
                "the peer answered while our write was held: its wait is not GPU-side");
  rt_gate_open(&gate);
  msg r = expect(&p, OP_RESULT, NULL);
  ck_assert_msg(r.status == 0, "the peer read other bytes than we wrote");
  /* the peer's to us, behind its gate */
  msg make = {.op = OP_MAKE, .seed = 11, .bytes = BYTES};
  send_or_fail(&p, &make, -1);
  int pfd = -1;
  msg made = expect(&p, OP_MADE, &pfd);
  ck_assert_int_ge(pfd, 0); /* the first export of its pool brings the descriptor */
  t4a_buffer b;
  RT_OK(T->buffer_import_ipc(rt, &made.buf, pfd, &b));
  close(pfd);
  RT_OK(T->runtime_wait_ipc_witness(rt, &made.wit));
  reader rd = {rt, b, malloc(BYTES), -1, 0};
  rt_thread th;
  rt_thread_start(&th, read_import, &rd);
  struct timespec hold = {0, HOLD_MS * 1000000L};
  nanosleep(&hold, NULL);
  ck_assert_msg(!__atomic_load_n(&rd.done, __ATOMIC_SEQ_CST),
                "our read of the peer's buffer returned while its write was held");
  msg open = {.op = OP_OPEN};
  send_or_fail(&p, &open, -1);
  ck_assert(rt_thread_wait(&th, bound_s()));
  RT_OK(rd.rc);
  expect(&p, OP_RESULT, NULL);
  unsigned char *want = malloc(BYTES);
  pattern(want, BYTES, 11);
  ck_assert(memcmp(rd.out, want, BYTES) == 0);
  /* frees in the header's order */
  msg freeing = {.op = OP_FREE};
  send_or_fail(&p, &freeing, -1);
  msg freed = expect(&p, OP_RESULT, NULL);
  RT_OK(T->runtime_wait_ipc_witness(rt, &freed.wit));
  RT_OK(T->buffer_free(rt, a));
  RT_OK(T->buffer_free(rt, b));
  t4a_witness w;
  msg quit = {.op = OP_QUIT};
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_export_ipc(w, &quit.wit));
  send_or_fail(&p, &quit, -1);
  ck_assert_int_eq(reap(&p), 0);
  RT_OK(T->witness_release(w));
  rt_gate_free(&gate);
  RT_OK(T->host_free(rt, hb));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(rd.out);
  free(want);
}
END_TEST

START_TEST(the_importer_survives_a_killed_exporter) {
  t4a_runtime rt = rt_create(); /* an importer needs no T4A_RUNTIME_IPC */
  peer p = spawn_peer("exporter");
  int fd = -1;
  msg made = expect(&p, OP_MADE, &fd);
  t4a_buffer b;
  RT_OK(T->buffer_import_ipc(rt, &made.buf, fd, &b));
  close(fd);
  RT_OK(T->runtime_wait_ipc_witness(rt, &made.wit));
  unsigned char *got = malloc(BYTES), *want = malloc(BYTES);
  pattern(want, BYTES, made.seed);
  RT_OK(T->copy_d2h(rt, got, b, 0, BYTES));
  ck_assert(memcmp(got, want, BYTES) == 0);
  expect(&p, OP_TICK, NULL); /* it is working: killed mid-way */
  expect(&p, OP_TICK, NULL);
  kill_peer(&p);
  /* the import keeps what it held, and is still memory to use */
  memset(got, 0, BYTES);
  RT_OK(T->copy_d2h(rt, got, b, 0, BYTES));
  ck_assert(memcmp(got, want, BYTES) == 0);
  RT_OK(T->memset(rt, b, 4096, 0x3cu, 1, 512));
  memset(want + 4096, 0x3c, 512);
  t4a_buffer mine;
  RT_OK(T->buffer_alloc(rt, BYTES, &mine));
  RT_OK(T->copy_d2d(rt, mine, 0, b, 0, BYTES));
  RT_OK(T->copy_d2h(rt, got, mine, 0, BYTES));
  ck_assert(memcmp(got, want, BYTES) == 0);
  RT_OK(T->buffer_free(rt, b));
  RT_OK(T->buffer_free(rt, mine));
  RT_OK(T->runtime_destroy(rt, 10ull * 1000000000ull));
  rt = rt_create();
  RT_OK(T->buffer_alloc(rt, BYTES, &mine));
  RT_OK(T->copy_h2d(rt, mine, 0, want, BYTES));
  RT_OK(T->copy_d2h(rt, got, mine, 0, BYTES));
  ck_assert(memcmp(got, want, BYTES) == 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(got);
  free(want);
}
END_TEST

START_TEST(the_exporter_survives_a_killed_importer) {
  t4a_runtime rt = parent_ipc_runtime();
  rt_gate gate;
  t4a_host_buffer hb;
  msg m;
  int fd = -1;
  peer p = spawn_peer("peer");
  t4a_buffer a = export_gated(rt, &gate, &hb, 21, &m, &fd);
  rt_gate_open(&gate);
  send_or_fail(&p, &m, fd);
  close(fd);
  ck_assert_uint_eq(expect(&p, OP_RESULT, NULL).status, 0);
  msg spin = {.op = OP_SPIN, .bytes = BYTES};
  send_or_fail(&p, &spin, -1);
  expect(&p, OP_TICK, NULL); /* reading our buffer: killed mid-way */
  expect(&p, OP_TICK, NULL);
  kill_peer(&p);
  RT_OK(T->buffer_free(rt, a)); /* its importer is gone */
  rt_gate_free(&gate);
  RT_OK(T->host_free(rt, hb));
  /* and a new peer is served as the first was (the pool sent again: it is
   * another process) */
  peer q = spawn_peer("peer");
  t4a_buffer a2 = export_gated(rt, &gate, &hb, 22, &m, &fd);
  rt_gate_open(&gate);
  send_or_fail(&q, &m, fd);
  close(fd);
  ck_assert_uint_eq(expect(&q, OP_RESULT, NULL).status, 0);
  msg freeing = {.op = OP_FREE};
  send_or_fail(&q, &freeing, -1);
  msg freed = expect(&q, OP_RESULT, NULL);
  RT_OK(T->runtime_wait_ipc_witness(rt, &freed.wit));
  RT_OK(T->buffer_free(rt, a2));
  msg quit = {.op = OP_QUIT};
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_export_ipc(w, &quit.wit));
  send_or_fail(&q, &quit, -1);
  ck_assert_int_eq(reap(&q), 0);
  RT_OK(T->witness_release(w));
  rt_gate_free(&gate);
  RT_OK(T->host_free(rt, hb));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

int main(int argc, char **argv) {
  ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (n <= 0)
    return 99;
  self_path[n] = 0;
  signal(SIGPIPE, SIG_IGN);
  if (argc == 3 && strcmp(argv[1], "--child") == 0)
    return child_main(argv[2]);
  Suite *s = rt_suite("ipc-procs");
  TCase *tc = rt_tcase(s, "procs", 120);
  tcase_add_test(tc, two_processes_share_buffers_and_witnesses_both_ways);
  tcase_add_test(tc, the_importer_survives_a_killed_exporter);
  tcase_add_test(tc, the_exporter_survives_a_killed_importer);
  return rt_run(s, 1);
}
