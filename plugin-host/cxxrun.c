/* plugin-host/cxxrun.c -- running the host C++ compiler (see cxx.h):
 * posix_spawn, no shell, a fixed argument list and environment, output
 * collected through a pipe.
 *
 * The environment is built here, not inherited: PATH (where the compiler
 * was found; it finds its assembler and linker there), TMPDIR (the
 * compile's private directory, so the compiler's own temporary files are
 * private too) and LC_ALL=C (the log in one language). Variables that
 * change what the compiler reads or emits (CPATH, CPLUS_INCLUDE_PATH,
 * GCC_EXEC_PREFIX, COMPILER_PATH, ...) are therefore not passed: the
 * compile caches' key must cover everything that decides the output. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "plugin-host/cxx.h"
#include "t4a/gpu_backend_v1.h"

#define OUTPUT_MAX (1u << 20)
#define CUT_NOTE "\n[t4a: the compiler's output was cut at 1 MiB]\n"

/* Reads fd to its end into a malloc'd buffer of at most OUTPUT_MAX bytes
 * (the rest is read and dropped, so the compiler never blocks on a full
 * pipe). */
static char *read_all(int fd, uint64_t *size) {
  size_t cap = 4096, n = 0;
  bool cut = false;
  char *buf = malloc(cap + sizeof CUT_NOTE);
  if (!buf)
    return NULL;
  for (;;) {
    char chunk[4096];
    ssize_t r = read(fd, chunk, sizeof chunk);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    size_t take = (size_t)r;
    if (n + take > OUTPUT_MAX) {
      take = OUTPUT_MAX - n;
      cut = true;
    }
    if (n + take > cap) {
      size_t next = cap * 2 < OUTPUT_MAX ? cap * 2 : OUTPUT_MAX;
      while (next < n + take)
        next *= 2;
      char *p = realloc(buf, next + sizeof CUT_NOTE);
      if (!p) {
        free(buf);
        return NULL;
      }
      buf = p;
      cap = next;
    }
    memcpy(buf + n, chunk, take);
    n += take;
  }
  if (cut) {
    memcpy(buf + n, CUT_NOTE, sizeof CUT_NOTE);
    n += sizeof CUT_NOTE - 1;
  }
  buf[n] = '\0';
  *size = n;
  return buf;
}

int t4a__hcxx_run(const t4a__hcxx *c, const char *const *argv, const char *tmpdir, char **output,
                  uint64_t *output_size, int *exit_status) {
  *output = NULL;
  *output_size = 0;
  *exit_status = -1;
  size_t argc = 0;
  while (argv[argc])
    argc++;
  char **args = calloc(argc + 1, sizeof *args);
  char path_var[sizeof c->search + 8], tmp_var[4200];
  snprintf(path_var, sizeof path_var, "PATH=%s", c->search);
  snprintf(tmp_var, sizeof tmp_var, "TMPDIR=%s", tmpdir ? tmpdir : "/tmp");
  char lc_var[] = "LC_ALL=C";
  char *envp[] = {path_var, tmp_var, lc_var, NULL};
  if (!args)
    return t4a__fail(T4A_ENOMEM, "running the host C++ compiler: out of host memory");
  /* posix_spawn takes char *const[]; it writes none of the strings */
  const char *path = c->path;
  memcpy(&args[0], &path, sizeof path);
  if (argc > 1)
    memcpy(&args[1], &argv[1], (argc - 1) * sizeof *args);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    free(args);
    return t4a__fail(T4A_ENOMEM,
                     "running the host C++ compiler: pipe failed (errno %d); raise "
                     "the open file limit",
                     errno);
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* the consumer's descriptors stay its own */
#endif
  /* default signal dispositions and an empty mask in the compiler, whatever
   * the consumer's thread blocked or ignored */
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int err = posix_spawn(&pid, c->path, &fa, &attr, args, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  free(args);
  close(fds[1]);
  if (err) {
    close(fds[0]);
    return t4a__fail(T4A_ENOCOMPILER,
                     "running the host C++ compiler %s failed (%s); install g++ (or clang++) or "
                     "set T4A_HOST_CXX to its absolute path",
                     c->path, strerror(err));
  }
  *output = read_all(fds[0], output_size);
  close(fds[0]);
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (w < 0) { /* SIGCHLD ignored by the consumer: the child was reaped for us */
    free(*output);
    *output = NULL;
    return t4a__fail(T4A_ENOCOMPILER,
                     "running the host C++ compiler %s: its exit status is lost (errno %d: is "
                     "SIGCHLD ignored in this process?); leave SIGCHLD at its default",
                     c->path, errno);
  }
  if (!*output)
    return t4a__fail(T4A_ENOMEM, "running the host C++ compiler: out of host memory for its "
                                 "output");
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return T4A_OK;
}
