/* tests/testutil.c -- see testutil.h. */
#include "config.h"

#include "tests/testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *t4a_test_build_path(const char *relative) {
  static _Thread_local char buf[8][4096];
  static _Thread_local int next;
  char *b = buf[next++ % 8];
  const char *dir = getenv("T4A_TEST_BUILDDIR");
  snprintf(b, sizeof buf[0], "%s/%s", dir ? dir : ".", relative);
  return b;
}

int t4a_test_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* In a child: opens the plugin, inits, counts devices. Exit code: number of
 * devices (capped at 100), or 100 + index of the failing step. */
static int probe_child(int pipe_fd) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = NULL;
  char msg[512] = "";
  int code;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b) != T4A_OK) {
    snprintf(msg, sizeof msg, "cannot open the CUDA plugin: %s", t4a_gpu_last_error());
    code = 101;
  } else {
    t = t4a_gpu_backend_table(b);
    int rc = t->init();
    int32_t n = 0;
    if (rc != T4A_OK) {
      snprintf(msg, sizeof msg, "no usable GPU: %s: %s", t4a_status_name(rc),
               t4a_test_backend_error(t));
      code = 102;
    } else if (t->device_count(&n) != T4A_OK) {
      snprintf(msg, sizeof msg, "device_count failed: %s", t4a_test_backend_error(t));
      code = 103;
    } else {
      code = n > 99 ? 99 : n;
    }
  }
  if (write(pipe_fd, msg, strlen(msg)) < 0)
    code = 104;
  _exit(code);
}

/* Probes in a forked child: the device count (< 100) or 100+ with *msg. */
static int probe(char *msg, size_t size) {
  int fds[2];
  if (pipe(fds) != 0)
    return 199;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    probe_child(fds[1]);
  }
  close(fds[1]);
  ssize_t n = read(fds[0], msg, size - 1);
  msg[n > 0 ? n : 0] = '\0';
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 105;
}

int t4a_test_gpu_count(void) {
  char msg[512];
  int code = probe(msg, sizeof msg);
  return code >= 100 ? 0 : code;
}

int t4a_test_gpu_main(Suite *s, int min_gpus) {
  const char *lane = getenv("T4A_TEST_LANE");
  int required = lane && (strcmp(lane, "gpu") == 0 || strcmp(lane, "multigpu") == 0);
  char msg[512] = "";
  int code = probe(msg, sizeof msg);
  if (code >= 100 || code < min_gpus) {
    if (code < 100)
      snprintf(msg, sizeof msg, "this test needs %d GPU(s), the host has %d", min_gpus, code);
    if (required) {
      fprintf(stderr, "FAIL: %s (lane '%s' requires it)\n", msg, lane);
      srunner_free(srunner_create(s)); /* release the suite */
      return EXIT_FAILURE;
    }
    printf("SKIP: %s\n", msg);
    srunner_free(srunner_create(s));
    return T4A_TEST_SKIP;
  }
  return t4a_test_run(s);
}

t4a_gpu_backend *t4a_test_open_cuda(const t4a_gpu_backend_v1 **table) {
  t4a_gpu_backend *b = NULL;
  int rc = t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b);
  ck_assert_msg(rc == T4A_OK, "open CUDA plugin: %s", t4a_gpu_last_error());
  *table = t4a_gpu_backend_table(b);
  return b;
}

const char *t4a_test_backend_error(const t4a_gpu_backend_v1 *t) {
  static _Thread_local t4a_error_info e;
  memset(&e, 0, sizeof e);
  e.struct_size = sizeof e;
  if (t->last_error(&e) != T4A_OK || !e.message)
    return "(no error detail)";
  return e.message;
}

void t4a_test_fill_random(void *p, size_t n, uint64_t seed) {
  uint64_t x = seed ? seed : 0x9e3779b97f4a7c15ull;
  unsigned char *b = p;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    uint64_t v = x * 0x2545f4914f6cdd1dull;
    memcpy(b + i, &v, 8);
  }
  for (; i < n; i++) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    b[i] = (unsigned char)((x * 0x2545f4914f6cdd1dull) >> 56);
  }
}

uint64_t t4a_test_seed(void) {
  static uint64_t seed;
  if (!seed) {
    const char *v = getenv("T4A_TEST_SEED");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = v && *v ? strtoull(v, NULL, 0) : (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
    if (!seed)
      seed = 1;
    printf("T4A_TEST_SEED=%llu\n", (unsigned long long)seed);
    fflush(stdout);
  }
  return seed;
}

int t4a_test_open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

long t4a_test_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
      break;
  fclose(f);
  return kib;
}

int t4a_test_replay_dir(int (*one)(const uint8_t *, size_t), const char *rel) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", getenv("T4A_TEST_SRCDIR") ? getenv("T4A_TEST_SRCDIR") : ".",
           rel);
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[8200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f)
      continue;
    static uint8_t buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    one(buf, len); /* a finding aborts */
    n++;
  }
  closedir(d);
  return n;
}
