/* tests/gpu/test_multiprocess.c -- several processes on one device.
 *
 *  - A neighbour killed with SIGKILL in the middle of its transfers and
 *    launches: this process's runtime carries on with exact data, and a
 *    fresh runtime can still be created.
 *  - Eight processes compiling one source at once into one fresh disk cache
 *    (T4A_CACHE_DIR): all succeed and their kernels compute exactly; no
 *    process reads a corrupt entry (disk_rejected 0 everywhere); afterwards
 *    the directory holds exactly one entry and no temporary file, and a
 *    later process is served from it.
 *  - A process holding nearly all device memory: the other gets T4A_ENOMEM
 *    with "<what failed>; <what to do>", and succeeds once the holder
 *    destroyed its runtime (its pool, kept as a spare part, is trimmed).
 *
 * Children are this program run again (fork + exec of /proc/self/exe with
 * --child ROLE): CUDA state does not survive fork. Parent and child talk
 * through two pipes (the child's fd 3: commands, fd 4: reports); every
 * ordering between processes comes from them, every wait on them is
 * bounded. The fake lane runs the same source on the fake driver and the
 * fake NVRTC; its devices live inside each process, so there the memory
 * test's holder is a second runtime in this process. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/gpu/multiprocess.h"

#define COMPILERS 8

static char self_path[4096];

/* ---- talking to children ------------------------------------------------------------ */

typedef struct child {
  pid_t pid;
  int cmd; /* we write commands */
  int rep; /* we read reports */
} child;

static child spawn(const char *role, const char *arg) {
  int to[2], from[2];
  ck_assert_int_eq(pipe2(to, O_CLOEXEC), 0);
  ck_assert_int_eq(pipe2(from, O_CLOEXEC), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) { /* only async-signal-safe calls until exec */
    int a = fcntl(to[0], F_DUPFD_CLOEXEC, 10), b = fcntl(from[1], F_DUPFD_CLOEXEC, 10);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a test that timed out */
    if (a < 0 || b < 0 || dup2(a, 3) != 3 || dup2(b, 4) != 4)
      _exit(120);
    execl(self_path, self_path, "--child", role, arg, (char *)NULL);
    _exit(121);
  }
  close(to[0]);
  close(from[1]);
  return (child){pid, to[1], from[0]};
}

/* One line from fd (without its newline) within timeout_s; false on EOF or
 * timeout. */
static bool read_line(int fd, char *buf, size_t size, int timeout_s) {
  size_t n = 0;
  time_t end = time(NULL) + timeout_s;
  while (n + 1 < size) {
    struct pollfd p = {fd, POLLIN, 0};
    int left = (int)(end - time(NULL));
    if (left <= 0 || poll(&p, 1, left * 1000) <= 0)
      break;
    if (read(fd, buf + n, 1) != 1)
      break;
    if (buf[n] == '\n') {
      buf[n] = '\0';
      return true;
    }
    n++;
  }
  buf[n] = '\0';
  return false;
}

static void expect_line(child *c, const char *prefix, char *buf, size_t size, int timeout_s) {
  bool got = read_line(c->rep, buf, size, timeout_s);
  ck_assert_msg(got && strncmp(buf, prefix, strlen(prefix)) == 0,
                "child %d: wanted '%s...' within %d s, got '%s'%s", (int)c->pid, prefix, timeout_s,
                buf, got ? "" : " (EOF or timeout)");
}

static void command(child *c, char what) { ck_assert_int_eq(write(c->cmd, &what, 1), 1); }

/* Waits for the child (bounded) and returns its wait status. */
static int reap(child *c, int timeout_s) {
  int status = 0;
  for (int i = 0; i < timeout_s * 100; i++) {
    pid_t r = waitpid(c->pid, &status, WNOHANG);
    if (r == c->pid) {
      close(c->cmd);
      close(c->rep);
      return status;
    }
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  kill(c->pid, SIGKILL);
  waitpid(c->pid, &status, 0);
  ck_abort_msg("child %d did not exit within %d s", (int)c->pid, timeout_s);
  return status;
}

static void expect_exit0(child *c, int timeout_s) {
  int status = reap(c, timeout_s);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: wait status 0x%x",
                (unsigned)status);
}

static void test_check(const char *what, int rc) {
  ck_assert_msg(rc == T4A_OK, "%s: %s (%s)", what, t4a_status_name(rc), t4a_test_backend_error(T));
}

/* ---- a: a neighbour killed mid-work ----------------------------------------------------- */

START_TEST(a_killed_neighbour_leaves_us_alone) {
  uint64_t seed = t4a_test_seed();
  t4a_runtime rt = rt_create();
  t4a_function f = mp_fill_function(rt, test_check);
  const uint64_t words = (1 << 18) + 3;
  t4a_buffer work, kept;
  RT_OK(T->buffer_alloc(rt, words * 4, &work));
  RT_OK(T->buffer_alloc(rt, MiB + 3, &kept));
  uint8_t *before = malloc(MiB + 3), *after = malloc(MiB + 3);
  t4a_test_fill_random(before, MiB + 3, seed);
  RT_OK(T->copy_h2d(rt, kept, 0, before, MiB + 3));

  child c = spawn("loop", "");
  char line[128];
  expect_line(&c, "running", line, sizeof line, 120);
  /* one whole iteration first: from then on it is in its steady loop */
  struct pollfd p = {c.rep, POLLIN, 0};
  char x = 0;
  ck_assert_msg(poll(&p, 1, 120 * 1000) == 1 && read(c.rep, &x, 1) == 1 && x == 'x',
                "the child finished no iteration within 120 s");
  fcntl(c.rep, F_SETFL, O_NONBLOCK);
  /* kill it after a random number of our own round trips, and a random
   * delay: it is then somewhere in its loop of copies and launches */
  unsigned ours = 1 + (unsigned)(seed % 24), theirs = 1;
  for (unsigned i = 0; i < ours; i++) {
    ck_assert(mp_round_trip(rt, f, work, words, seed + i, test_check));
    char buf[64];
    for (ssize_t n; (n = read(c.rep, buf, sizeof buf)) > 0;)
      theirs += (unsigned)n;
  }
  struct timespec ts = {0, (long)(seed >> 11) % 2000000L};
  nanosleep(&ts, NULL);
  ck_assert_int_eq(kill(c.pid, SIGKILL), 0);
  int status = reap(&c, 60);
  /* killed in its loop: it had not stopped, or failed, on its own */
  ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child wait status 0x%x",
                (unsigned)status);
  printf("neighbour killed after %u of our round trips (%u of its iterations reported)\n", ours,
         theirs);

  for (unsigned i = 0; i < 16; i++)
    ck_assert(mp_round_trip(rt, f, work, words, seed + 100 + i, test_check));
  RT_OK(T->copy_d2h(rt, after, kept, 0, MiB + 3));
  ck_assert(memcmp(before, after, MiB + 3) == 0);
  t4a_runtime fresh = rt_create();
  t4a_function g = mp_fill_function(fresh, test_check);
  t4a_buffer b;
  RT_OK(T->buffer_alloc(fresh, words * 4, &b));
  ck_assert(mp_round_trip(fresh, g, b, words, seed + 1000, test_check));
  RT_OK(T->runtime_destroy(fresh, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(before);
  free(after);
}
END_TEST

/* ---- b: eight compilers, one disk cache ------------------------------------------------- */

static char cache_dir[256];

static void use_fresh_cache(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(cache_dir, sizeof cache_dir, "%s/t4a-mp-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(cache_dir));
  setenv("T4A_CACHE_DIR", cache_dir, 1); /* the children inherit it */
}

/* Names in the cache directory: entries (*.t4a) and anything else. */
static void list_cache(unsigned *entries, unsigned *others, char *other, size_t size) {
  *entries = *others = 0;
  other[0] = '\0';
  DIR *d = opendir(cache_dir);
  ck_assert_ptr_nonnull(d);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (n > 4 && strcmp(e->d_name + n - 4, ".t4a") == 0 && e->d_name[0] != '.') {
      (*entries)++;
    } else {
      (*others)++;
      snprintf(other, size, "%s", e->d_name);
    }
  }
  closedir(d);
}

static void remove_cache(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  ck_assert_int_eq(system(cmd), 0);
}

START_TEST(b_eight_compilers_share_one_disk_cache) {
  use_fresh_cache();
  child c[COMPILERS];
  char line[160];
  for (int i = 0; i < COMPILERS; i++)
    c[i] = spawn("compile", "");
  for (int i = 0; i < COMPILERS; i++) /* all initialised: the compiles start together */
    expect_line(&c[i], "ready", line, sizeof line, 120);
  for (int i = 0; i < COMPILERS; i++)
    command(&c[i], 'g');
  unsigned compiled = 0, from_disk = 0;
  for (int i = 0; i < COMPILERS; i++) {
    unsigned long long mem_hits, disk_hits, misses, rejected;
    expect_line(&c[i], "ok", line, sizeof line, 300);
    ck_assert_int_eq(
        sscanf(line, "ok %llu %llu %llu %llu", &mem_hits, &disk_hits, &misses, &rejected), 4);
    ck_assert_msg(rejected == 0, "compiler %d rejected %llu disk entries", i, rejected);
    /* one compile each: a fresh process has no memory hit; either it
     * compiled, or it read another's finished entry */
    ck_assert_uint_eq(mem_hits, 0);
    ck_assert_uint_eq(disk_hits + misses, 1);
    compiled += (unsigned)misses;
    from_disk += (unsigned)disk_hits;
    expect_exit0(&c[i], 60);
  }
  ck_assert_uint_ge(compiled, 1);
  printf("%u of %d processes compiled, %u read an entry another wrote\n", compiled, COMPILERS,
         from_disk);
  unsigned entries, others;
  char other[256];
  list_cache(&entries, &others, other, sizeof other);
  ck_assert_msg(entries == 1 && others == 0, "%u entries and %u other files (e.g. '%s')", entries,
                others, other);
  child later = spawn("stats", "");
  expect_line(&later, "stats", line, sizeof line, 120);
  unsigned long long n, hits, misses, rejected;
  ck_assert_int_eq(sscanf(line, "stats %llu %llu %llu %llu", &n, &hits, &misses, &rejected), 4);
  ck_assert_msg(n == 1 && hits == 1 && misses == 0 && rejected == 0,
                "a later process: %llu entries, %llu disk hits, %llu compiles, %llu rejected", n,
                hits, misses, rejected);
  expect_exit0(&later, 60);
  remove_cache();
}
END_TEST

/* ---- c: one process holds the device's memory ------------------------------------------ */

/* The refusal names what failed and what to do, and the driver's code. */
static void expect_enomem(t4a_runtime rt, uint64_t bytes) {
  t4a_buffer b;
  RT_EXPECT(T->buffer_alloc(rt, bytes, &b), T4A_ENOMEM);
  t4a_error_info e = {.struct_size = sizeof e};
  RT_OK(T->last_error(&e));
  ck_assert_int_eq(e.status, T4A_ENOMEM);
  ck_assert_msg(strstr(e.message, "buffer_alloc") && strstr(e.message, "; "),
                "detail '%s' is not '<what failed>; <what to do>'", e.message);
  ck_assert_str_eq(e.native_name, "CUDA_ERROR_OUT_OF_MEMORY");
  printf("refused as expected: %s\n", e.message);
  /* still usable */
  RT_OK(T->buffer_alloc(rt, 0, &b));
  RT_OK(T->buffer_free(rt, b));
}

static void expect_room(t4a_runtime rt, uint64_t bytes, uint64_t seed) {
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, bytes, &b));
  t4a_function f = mp_fill_function(rt, test_check);
  uint64_t words = (bytes - MiB) / 4;
  ck_assert(mp_round_trip(rt, f, b, words, seed, test_check));
  RT_OK(T->buffer_free(rt, b));
}

START_TEST(c_memory_hog_then_room) {
  uint64_t seed = t4a_test_seed();
  t4a_runtime rt = rt_create(); /* its context exists before memory runs out */
#ifdef T4A_TEST_FAKE
  setenv("FAKE_CUDA_MEM_MIB", "64", 1);
  t4a_runtime hog = rt_create();
  int status;
  uint64_t held = mp_hold_everything(hog, 8 * MiB, 64 << 10, &status);
  RT_EXPECT(status, T4A_OK);
  printf("a second runtime holds %llu MiB of 64\n", (unsigned long long)(held / MiB));
  expect_enomem(rt, 4 * MiB);
  RT_OK(T->runtime_destroy(hog, T4A_WAIT_FOREVER));
  expect_room(rt, 4 * MiB, seed);
#else
  child c = spawn("hog", "");
  char line[256];
  expect_line(&c, "full", line, sizeof line, 600);
  printf("the other process holds: %s\n", line);
  expect_enomem(rt, 256 * MiB);
  command(&c, 'r');
  expect_line(&c, "freed", line, sizeof line, 300);
  expect_room(rt, 256 * MiB, seed);
  command(&c, 'q');
  expect_exit0(&c, 120);
#endif
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* Whether NVRTC loads here (the fake lane always has the fake one). */
static bool nvrtc_available(char *reason, size_t size) {
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b) != T4A_OK) {
    snprintf(reason, size, "%s", t4a_gpu_last_error());
    return false;
  }
  t4a_compiler_info c = {.struct_size = sizeof c};
  t4a_gpu_backend_table(b)->compiler_info(&c);
  c.reason[sizeof c.reason - 1] = '\0';
  snprintf(reason, size, "%s", c.reason);
  t4a_gpu_close(b);
  return c.status == T4A_OK;
}

int main(int argc, char **argv) {
  ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  self_path[n > 0 ? n : 0] = '\0';
  signal(SIGPIPE, SIG_IGN); /* a child that died is seen in its wait status */
#ifdef T4A_TEST_FAKE
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
  unsetenv("FAKE_CUDA_MEM_MIB");
#endif
  if (argc > 2 && strcmp(argv[1], "--child") == 0)
    return mp_child_main(argv[2]);
  Suite *s = suite_create(rt_on_fake() ? "multiprocess-fake" : "multiprocess-gpu");
  TCase *tc = tcase_create("processes");
  tcase_set_timeout(tc, 900);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, a_killed_neighbour_leaves_us_alone);
  char reason[256] = "";
  const char *lane = getenv("T4A_TEST_LANE");
  if (nvrtc_available(reason, sizeof reason) || (lane && strcmp(lane, "gpu") == 0))
    tcase_add_test(tc, b_eight_compilers_share_one_disk_cache); /* the GPU lane requires NVRTC */
  else
    printf("NOTE: NVRTC unavailable (%s): the eight-compiler test is left out\n", reason);
  tcase_add_test(tc, c_memory_hog_then_room);
  suite_add_tcase(s, tc);
#ifdef T4A_TEST_FAKE
  return t4a_test_run(s);
#else
  return t4a_test_gpu_main(s, 1);
#endif
}
