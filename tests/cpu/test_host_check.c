/* tests/cpu/test_host_check.c -- the host backend's checked mode
 * (T4A_HOST_CHECK=1, set by main before anything): CUDA C kernels compiled
 * with the prelude, buffers in guarded mappings. Planted faults: a write
 * past a buffer's end into the guard page (a loop-mode and a fiber-mode
 * kernel: the message names the kernel, block, thread and address), a
 * write into the slack between the end and the guard (the canary: the
 * kernel named), a read before the start and one 1 GiB past the end, a
 * write to a freed buffer, a fiber's stack overflow, a trap; each faults the runtime with
 * T4A_EDEVICEFAULT, tells the sibling, and destroy completes with the
 * process alive. A correct kernel gives the right answers, with its
 * buffers 256-byte aligned against their upper guard; a fault outside a
 * kernel still reaches the process's previous handler, or, with none, kills
 * the process as it would without t4a. */
#include "config.h"

#include <check.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cpu/host_fixture.h"

static const char source[] =
    "extern \"C\" __global__ void k_write(int *p, long long at, int b, int t) {\n"
    "  if ((int)blockIdx.x == b && (int)threadIdx.x == t)\n"
    "    p[at] = 7;\n"
    "}\n"
    "extern \"C\" __global__ void k_sync_write(int *p, long long at, int b, int t) {\n"
    "  __syncthreads();\n"
    "  if ((int)blockIdx.x == b && (int)threadIdx.x == t)\n"
    "    p[at] = 7;\n"
    "}\n"
    "extern \"C\" __global__ void k_read(const int *p, long long at, int b, int t, int *out) {\n"
    "  int v = 0;\n"
    "  if ((int)blockIdx.x == b && (int)threadIdx.x == t)\n"
    "    v = ((const volatile int *)p)[at];\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = v + 1;\n"
    "}\n"
    "extern \"C\" __global__ void k_trap(int b, int t) {\n"
    "  if ((int)blockIdx.x == b && (int)threadIdx.x == t)\n"
    "    __trap();\n"
    "}\n"
    "__device__ int deep(int n) {\n"
    "  volatile char pad[256];\n"
    "  pad[0] = (char)n;\n"
    "  return n ? deep(n - 1) + pad[0] : 0;\n"
    "}\n"
    "extern \"C\" __global__ void k_deep(int b, int t, int *out) {\n"
    "  __syncthreads();\n"
    "  int v = 0;\n"
    "  if ((int)blockIdx.x == b && (int)threadIdx.x == t)\n"
    "    v = deep(1 << 20);\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = v;\n"
    "}\n"
    "__device__ __noinline__ int low_end(int v) {\n"
    "  volatile char big[96 * 1024]; /* its lowest byte only */\n"
    "  big[0] = (char)v;\n"
    "  return big[0];\n"
    "}\n"
    "extern \"C\" __global__ void k_low_end(int t, int *out) {\n"
    "  int v = 0;\n"
    "  __syncthreads();\n"
    "  if ((int)threadIdx.x == t)\n"
    "    v = low_end(t);\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = v;\n"
    "}\n"
    "__device__ __noinline__ int above_top(int v, int up) {\n"
    "  volatile char here[16];\n"
    "  here[0] = (char)v;\n"
    "  here[up] = (char)v; /* up bytes above a local: past its stack's top */\n"
    "  return here[0];\n"
    "}\n"
    "extern \"C\" __global__ void k_above_top(int t, int up, int *out) {\n"
    "  int v = 0;\n"
    "  __syncthreads();\n"
    "  if ((int)threadIdx.x == t)\n"
    "    v = above_top(t, up);\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = v;\n"
    "}\n"
    "extern \"C\" __global__ void k_locals(int *out) {\n"
    "  volatile char big[96 * 1024]; /* more than a default fiber stack */\n"
    "  __syncthreads();\n"
    "  for (int i = 0; i < (int)sizeof big; i += 4096)\n"
    "    big[i] = (char)(threadIdx.x + i / 4096);\n"
    "  __syncthreads();\n"
    "  int s = 0;\n"
    "  for (int i = 0; i < (int)sizeof big; i += 4096)\n"
    "    s += big[i];\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = s;\n"
    "}\n"
    "extern \"C\" __global__ void k_saxpy(int n, float a, const float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

typedef struct kset {
  t4a_runtime rt, sibling;
  t4a_artifact a;
  t4a_module m;
} kset;

static kset open_set(void) {
  kset k;
  OK(T->runtime_create(0, NULL, &k.rt));
  OK(T->runtime_create(0, NULL, &k.sibling));
  t4a_compile_options o = {.struct_size = sizeof o, .source = source, .name = "check.cu"};
  o.flags = T4A_COMPILE_NO_CACHE;
  OK(T->artifact_compile(&o, &k.a));
  OK(T->module_load(k.rt, k.a, &k.m));
  return k;
}

static void go(const kset *k, const char *name, uint32_t grid, uint32_t block, void **args) {
  t4a_function f;
  OK(T->function_get(k->rt, k->m, name, &f));
  t4a_launch_config c = {.struct_size = sizeof c, .grid = {grid, 1, 1}, .block = {block, 1, 1}};
  OK(T->launch(k->rt, f, &c, args));
}

static void sync_ok(t4a_runtime rt) {
  t4a_witness w;
  OK(T->seal(rt, &w));
  OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  OK(T->witness_release(w));
}

/* The launch faulted the device: sticky, the sibling told, destroy
 * completes, the process alive (this code runs on). */
static void expect_faulted(kset *k, const char *needle) {
  t4a_witness w;
  int rc = T->seal(k->rt, &w);
  if (rc == T4A_OK) {
    EXPECT(T->witness_wait(w, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
    OK(T->witness_release(w));
  } else {
    EXPECT(rc, T4A_EDEVICEFAULT);
  }
  DETAIL(needle);
  t4a_buffer x;
  EXPECT(T->buffer_alloc(k->rt, 8, &x), T4A_EDEVICEFAULT);
  EXPECT(T->buffer_alloc(k->sibling, 8, &x), T4A_EDEVICEFAULT);
  DETAIL(needle);
  EXPECT(T->runtime_destroy(k->rt, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  EXPECT(T->runtime_destroy(k->sibling, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  OK(T->artifact_release(k->a));
}

static uint64_t alloc(const kset *k, uint64_t bytes, t4a_buffer *b) {
  uint64_t addr;
  OK(T->buffer_alloc(k->rt, bytes, b));
  OK(T->buffer_device_address(k->rt, *b, &addr));
  return addr;
}

/* Uniform in [-1, 1). */
static void random_floats(float *v, uint64_t n, uint64_t seed) {
  uint32_t *bits = malloc(n * 4);
  ck_assert_ptr_nonnull(bits);
  t4a_test_fill_random(bits, n * 4, seed);
  for (uint64_t i = 0; i < n; i++)
    v[i] = (float)(bits[i] >> 8) / (float)(1u << 23) - 1.0f;
  free(bits);
}

START_TEST(a_correct_kernel_gives_the_right_answers) {
  kset k = open_set();
  int n = 100003; /* not a multiple of 256 bytes: slack behind the data */
  size_t bytes = (size_t)n * 4;
  float a = 1.75f, *x = malloc(bytes), *y = malloc(bytes), *got = malloc(bytes);
  random_floats(x, (uint64_t)n, 11);
  random_floats(y, (uint64_t)n, 12);
  t4a_buffer bx, by;
  uint64_t ax = alloc(&k, bytes, &bx), ay = alloc(&k, bytes, &by);
  long page = sysconf(_SC_PAGESIZE);
  ck_assert_uint_eq(ax % 256, 0);
  /* against the upper guard: the data's 256-byte span ends at a page */
  ck_assert_uint_eq((ay + ((bytes + 255) & ~(size_t)255)) % (uint64_t)page, 0);
  OK(T->copy_h2d(k.rt, bx, 0, x, bytes));
  OK(T->copy_h2d(k.rt, by, 0, y, bytes));
  void *args[] = {&n, &a, &ax, &ay};
  go(&k, "k_saxpy", (uint32_t)(n + 255) / 256, 256, args);
  memset(got, 0x5a, bytes);
  OK(T->copy_d2h(k.rt, got, by, 0, bytes));
  for (int i = 0; i < n; i++) {
    float want = a * x[i] + y[i];
    ck_assert_msg(got[i] == want, "y[%d] = %a, want %a", i, (double)got[i], (double)want);
  }
  sync_ok(k.rt);
  OK(T->buffer_free(k.rt, bx));
  OK(T->buffer_free(k.rt, by));
  OK(T->module_unload(k.rt, k.m));
  OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  OK(T->runtime_destroy(k.sibling, T4A_WAIT_FOREVER));
  OK(T->artifact_release(k.a));
  free(x);
  free(y);
  free(got);
}
END_TEST

/* The launch faulted with SIGSEGV in kernel `kernel`, block (b, 0, 0),
 * thread (t, 0, 0), at an address starting "0x" followed by `at` (hex
 * digits, or "" when the address is not known to the test). */
static void expect_segv(kset *k, const char *kernel, int b, int t, const char *at) {
  char want[256];
  snprintf(want, sizeof want,
           "kernel '%s' faulted (an access outside the live buffers) in block (%d, 0, 0), thread "
           "(%d, 0, 0): SIGSEGV at address 0x%s",
           kernel, b, t, at);
  expect_faulted(k, want);
}

/* A write one element past the 4096-byte span of a 4000-byte buffer: the
 * guard page, at the access. */
static void write_past_the_end(const char *kernel, int b, int t) {
  kset k = open_set();
  t4a_buffer buf;
  uint64_t p = alloc(&k, 4000, &buf);
  long long at = 1024;
  void *args[] = {&p, &at, &b, &t};
  go(&k, kernel, 8, 64, args);
  char addr[32];
  snprintf(addr, sizeof addr, "%llx", (unsigned long long)p + 4096);
  expect_segv(&k, kernel, b, t, addr);
}

START_TEST(a_write_past_the_end_hits_the_guard_page) { write_past_the_end("k_write", 3, 17); }
END_TEST

START_TEST(a_fiber_kernels_write_past_the_end_hits_it_too) {
  write_past_the_end("k_sync_write", 5, 40);
}
END_TEST

START_TEST(a_write_into_the_slack_breaks_the_canary) {
  kset k = open_set();
  t4a_buffer buf;
  uint64_t p = alloc(&k, 4000, &buf);
  long long at = 1010; /* byte 4040: past the end, before the guard */
  int b = 2, t = 9;
  void *args[] = {&p, &at, &b, &t};
  go(&k, "k_write", 8, 64, args);
  char want[256];
  snprintf(want, sizeof want,
           "kernel 'k_write' faulted (an access outside the live buffers): a write past the end "
           "of the 4000-byte buffer at 0x%llx (its byte at offset 4040 changed",
           (unsigned long long)p);
  expect_faulted(&k, want);
}
END_TEST

START_TEST(reads_before_the_start_and_far_past_the_end_fault) {
  static const long long at[] = {-1, 1ll << 28}; /* 4 bytes before, 1 GiB past */
  for (int r = 0; r < 2; r++) {
    pid_t pid = fork(); /* the fault is sticky for the process: one child each */
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* the backend set up in the child (a fork after init is refused) */
      host_setup();
      kset k = open_set();
      t4a_buffer buf, outb;
      uint64_t p = alloc(&k, 4096, &buf), out = alloc(&k, 512, &outb);
      int b = 1, t = 31;
      long long where = at[r];
      void *args[] = {&p, &where, &b, &t, &out};
      go(&k, "k_read", 4, 32, args);
      char addr[32];
      snprintf(addr, sizeof addr, "%llx", (unsigned long long)p + (unsigned long long)where * 4);
      expect_segv(&k, "k_read", b, t, addr);
      _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "read %lld: child status %#x",
                  at[r], status);
  }
}
END_TEST

START_TEST(a_write_to_a_freed_buffer_faults) {
  kset k = open_set();
  t4a_buffer keep, gone;
  uint64_t p0 = alloc(&k, 4096, &keep);
  long long at = 0;
  int b = 0, t = 3;
  void *args0[] = {&p0, &at, &b, &t};
  go(&k, "k_write", 4, 32, args0); /* a correct write first */
  sync_ok(k.rt);
  uint64_t p = alloc(&k, 4096, &gone);
  OK(T->buffer_free(k.rt, gone));
  b = 2;
  void *args[] = {&p, &at, &b, &t};
  go(&k, "k_write", 4, 32, args);
  char want[128];
  snprintf(want, sizeof want, "in block (2, 0, 0), thread (3, 0, 0): SIGSEGV at address 0x%llx",
           (unsigned long long)p);
  expect_faulted(&k, want);
}
END_TEST

START_TEST(a_fiber_stack_overflow_faults) {
  /* a recursion far deeper than a fiber's 64 KiB: its guard page, caught on
   * the thread's own signal stack */
  kset k = open_set();
  t4a_buffer outb;
  uint64_t out = alloc(&k, 1024, &outb);
  int b = 3, t = 21;
  void *args[] = {&b, &t, &out};
  go(&k, "k_deep", 4, 64, args);
  expect_segv(&k, "k_deep", b, t, "");
}
END_TEST

/* A thread whose locals outgrow its fiber's stack (96 KiB of a default 64),
 * touching only their lowest byte, which lies in the next fiber's stack:
 * the frame probes each page as it grows (the compile's
 * -fstack-clash-protection), so the thread meets its own guard page instead
 * of writing into its neighbour's stack unseen. */
START_TEST(locals_larger_than_the_stack_fault) {
  kset k = open_set();
  t4a_buffer outb;
  uint64_t out = alloc(&k, 64 * sizeof(int), &outb);
  int t = 5;
  void *args[] = {&t, &out};
  go(&k, "k_low_end", 1, 32, args);
  expect_segv(&k, "k_low_end", 0, t, "");
}
END_TEST

/* ... and with T4A_HOST_STACK_KIB asking for more, it runs, with the right
 * answers (read when the first synchronising block runs: each test is its
 * own process here). */
START_TEST(a_larger_stack_when_asked_for) {
  setenv("T4A_HOST_STACK_KIB", "256", 1);
  kset k = open_set();
  t4a_buffer outb;
  uint64_t out = alloc(&k, 64 * sizeof(int), &outb);
  void *args[] = {&out};
  go(&k, "k_locals", 2, 32, args);
  sync_ok(k.rt);
  int got[64];
  OK(T->copy_d2h(k.rt, got, outb, 0, sizeof got));
  for (int i = 0; i < 64; i++) {
    int t = i % 32, want = 0;
    for (int j = 0; j < 24; j++)
      want += (signed char)(t + j);
    ck_assert_int_eq(got[i], want);
  }
  OK(T->buffer_free(k.rt, outb));
  OK(T->module_unload(k.rt, k.m));
  OK(T->artifact_release(k.a));
  OK(T->runtime_destroy(k.rt, T4A_WAIT_FOREVER));
  OK(T->runtime_destroy(k.sibling, T4A_WAIT_FOREVER));
  unsetenv("T4A_HOST_STACK_KIB");
}
END_TEST

/* A write just past the top of the last fiber stack (a 32-thread block's
 * thread 31: the worker maps 32 stacks, then the fibers' records) meets
 * the guard page between the stacks and the records: a local is less than
 * 4 KiB below its stack's top (the top's offset is at most 4 KiB, the
 * frames small), so 4 KiB above it lies in that page. Without the page the
 * write would land in the scheduler's records unseen. */
START_TEST(a_write_past_the_last_stacks_top_faults) {
  kset k = open_set();
  t4a_buffer outb;
  uint64_t out = alloc(&k, 64 * sizeof(int), &outb);
  int t = 31, up = 4096;
  void *args[] = {&t, &up, &out};
  go(&k, "k_above_top", 1, 32, args);
  expect_segv(&k, "k_above_top", 0, t, "");
}
END_TEST

START_TEST(a_trap_faults_likewise) {
  kset k = open_set();
  int b = 6, t = 12;
  void *args[] = {&b, &t};
  go(&k, "k_trap", 8, 32, args);
  expect_faulted(&k, "kernel 'k_trap' faulted (__trap()) in block (6, 0, 0), thread (12, 0, 0)");
}
END_TEST

static sigjmp_buf back;
static volatile uintptr_t wild = 64; /* an address nothing maps */
static volatile sig_atomic_t seen;

static void mine(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  seen = si->si_addr == (void *)(uintptr_t)64 ? 1 : 2;
  siglongjmp(back, 1);
}

START_TEST(a_fault_outside_a_kernel_is_the_processs_own) {
  /* with a handler of the process's: it gets the fault */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = mine;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
  kset k = open_set(); /* installs checked mode's handler over it */
  if (!sigsetjmp(back, 1))
    *(volatile int *)wild = 1;
  ck_assert_int_eq(seen, 1);
  int b = 1, t = 1;
  void *args[] = {&b, &t};
  go(&k, "k_trap", 2, 32, args); /* and the runtime still works */
  expect_faulted(&k, "k_trap");
}
END_TEST

START_TEST(a_fault_outside_a_kernel_kills_as_without_t4a) {
  pid_t pid = fork(); /* the default disposition before the runtime: the process dies of it */
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* the default disposition, whatever the build put there (ASan's handler
     * would report and exit 1 instead of dying of the signal) */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    if (sigaction(SIGSEGV, &dfl, NULL) != 0)
      _exit(3);
    host_setup();
    t4a_runtime rt;
    OK(T->runtime_create(0, NULL, &rt));
    *(volatile int *)wild = 1;
    _exit(0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "child status %#x", status);
}
END_TEST

int main(void) {
  int found = host_compiler(NULL, 0);
  if (found)
    return found;
  setenv("T4A_HOST_CHECK", "1", 1);
  setenv("T4A_HOST_THREADS", "4", 1);
  Suite *s = suite_create("host-check");
  TCase *tc = tcase_create("checked");
  tcase_add_checked_fixture(tc, host_setup, host_teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, a_correct_kernel_gives_the_right_answers);
  tcase_add_test(tc, a_write_past_the_end_hits_the_guard_page);
  tcase_add_test(tc, a_fiber_kernels_write_past_the_end_hits_it_too);
  tcase_add_test(tc, a_write_into_the_slack_breaks_the_canary);
  tcase_add_test(tc, a_write_to_a_freed_buffer_faults);
  tcase_add_test(tc, a_fiber_stack_overflow_faults);
  tcase_add_test(tc, locals_larger_than_the_stack_fault);
  tcase_add_test(tc, a_write_past_the_last_stacks_top_faults);
  tcase_add_test(tc, a_larger_stack_when_asked_for);
  tcase_add_test(tc, a_trap_faults_likewise);
  tcase_add_test(tc, a_fault_outside_a_kernel_is_the_processs_own);
  suite_add_tcase(s, tc);
  tc = tcase_create("forking"); /* each child sets the backend up itself */
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, reads_before_the_start_and_far_past_the_end_fault);
  tcase_add_test(tc, a_fault_outside_a_kernel_kills_as_without_t4a);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
