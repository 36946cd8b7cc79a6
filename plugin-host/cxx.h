/* plugin-host/cxx.h -- the host C++ compiler that builds kernel modules:
 * finding it (cxx.c) and running it (cxxrun.c).
 *
 * Found at each use, as a consumer would expect of an environment
 * variable: $T4A_HOST_CXX (an absolute path; anything else is refused,
 * never resolved against the current directory), else the first of c++,
 * g++, clang++ in an absolute directory of $PATH (empty and relative
 * entries are skipped: they would mean the current directory). In a
 * setuid/setgid process the environment is ignored (common/env.h): only
 * the system's default path (confstr(_CS_PATH)) is searched. The version
 * (the first line of `<compiler> --version`) is asked once per compiler
 * file, and asked again when the file changes (device, inode, size or
 * modification time), so an upgrade is noticed by the caches' key. The
 * last answer is reused while T4A_HOST_CXX and PATH are unchanged and the
 * compiler found is the same file (one stat); a memory-cache hit needs not
 * even that (t4a__hcxx_last); a compiler installed meanwhile in an earlier
 * directory of PATH is found by the next process. */
#ifndef T4A_PLUGIN_HOST_CXX_H
#define T4A_PLUGIN_HOST_CXX_H

#include <stdbool.h>
#include <stdint.h>

typedef struct t4a__hcxx {
  char path[256];
  char version[160]; /* the first line of --version, e.g. "g++ (Debian 12.2.0-14) 12.2.0" */
  int32_t major, minor;
  bool clang;        /* clang++ (its options differ from g++'s in a few places) */
  char search[1024]; /* the PATH the compiler was found in (also the compile's PATH) */
} t4a__hcxx;

/* getenv(name), or NULL in a setuid/setgid process (asked once, then no
 * system call: every compile reads its variables through this). */
const char *t4a__host_getenv(const char *name);

/* The compiler now: T4A_OK and *out, or T4A_ENOCOMPILER with the reason
 * ("... install g++ (or clang++) or set T4A_HOST_CXX"); `what` names the
 * call in the message. */
int t4a__hcxx_find(t4a__hcxx *out, const char *what);

/* The compiler last found from the same T4A_HOST_CXX and PATH, without
 * checking its file (no system call): what a memory-cache lookup keys by.
 * False when there is none (then t4a__hcxx_find). A compiler changed in
 * place is noticed by the next t4a__hcxx_find, i.e. the next compile that
 * is no memory-cache hit: an artifact in memory stays what it is. */
bool t4a__hcxx_last(t4a__hcxx *out);

/* Runs the compiler c with argv (argv[0] is replaced by c->path; NULL
 * terminated) in a fixed environment (PATH = c->search, TMPDIR = tmpdir,
 * LC_ALL = C), stdin from /dev/null, stdout and stderr collected into
 * *output (malloc'd, NUL-terminated, at most 1 MiB: more is cut with a
 * note). Returns T4A_OK with *exit_status (the compiler's exit code, or
 * 128 + signal), or T4A_ENOCOMPILER / T4A_ENOMEM when it could not run. */
int t4a__hcxx_run(const t4a__hcxx *c, const char *const *argv, const char *tmpdir, char **output,
                  uint64_t *output_size, int *exit_status);

#endif
