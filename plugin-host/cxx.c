/* plugin-host/cxx.c -- finding the host C++ compiler and its version (see
 * cxx.h); compiler_info. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend-core/fork.h"
#include "backend-core/slots.h"
#include "backend-core/structs.h"
#include "common/env.h"
#include "common/str.h"
#include "plugin-host/cxx.h"
#include "plugin-host/host.h"

#define ADVICE "install g++ (or clang++) or set T4A_HOST_CXX to its absolute path"

/* Whether path names a regular file this process may execute. */
static bool runnable(const char *path, struct stat *st) {
  return stat(path, st) == 0 && S_ISREG(st->st_mode) && access(path, X_OK) == 0;
}

/* The first of c++, g++, clang++ in an absolute directory of search. */
static bool search_path(const char *search, char *out, size_t size, struct stat *st) {
  static const char *const names[] = {"c++", "g++", "clang++"};
  for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
    for (const char *p = search; *p;) {
      size_t len = strcspn(p, ":");
      /* an empty or relative entry would mean the current directory: never */
      if (len && p[0] == '/' && len + 1 + strlen(names[n]) < size) {
        snprintf(out, size, "%.*s/%s", (int)len, p, names[n]);
        if (runnable(out, st))
          return true;
      }
      p += len;
      if (*p == ':')
        p++;
    }
  }
  return false;
}

/* ---- the version, asked once per compiler file ------------------------- */

typedef struct known {
  char path[256];
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  char version[160];
} known;

#define KNOWN 4u
static pthread_mutex_t klock = PTHREAD_MUTEX_INITIALIZER;
static known kcache[KNOWN];
static unsigned knext;

static bool same_file(const known *k, const char *path, const struct stat *st) {
  return strcmp(k->path, path) == 0 && k->dev == st->st_dev && k->ino == st->st_ino &&
         k->size == st->st_size && k->mtime.tv_sec == st->st_mtim.tv_sec &&
         k->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* major.minor from the first "<digits>.<digits>" that starts a word. */
static void parse_version(t4a__hcxx *c) {
  const char *v = c->version;
  c->major = c->minor = 0;
  for (size_t i = 0; v[i]; i++) {
    if ((i == 0 || v[i - 1] == ' ' || v[i - 1] == '(') && v[i] >= '0' && v[i] <= '9') {
      int major, minor;
      if (sscanf(v + i, "%d.%d", &major, &minor) == 2) {
        c->major = major;
        c->minor = minor;
        return;
      }
    }
  }
}

/* c->version from the cache or `--version`. */
static int ask_version(t4a__hcxx *c, const struct stat *st, const char *what) {
  pthread_mutex_lock(&klock);
  for (unsigned i = 0; i < KNOWN; i++)
    if (same_file(&kcache[i], c->path, st)) {
      t4a__strcopy(c->version, sizeof c->version, kcache[i].version);
      pthread_mutex_unlock(&klock);
      return T4A_OK;
    }
  pthread_mutex_unlock(&klock);
  const char *argv[] = {"c++", "--version", NULL};
  char *output = NULL;
  uint64_t size = 0;
  int status = 0;
  int rc = t4a__hcxx_run(c, argv, NULL, &output, &size, &status);
  if (rc)
    return rc;
  if (status != 0 || !size) {
    rc = t4a__fail(
        T4A_ENOCOMPILER,
        "%s: the host C++ compiler %s does not run (`%s --version` exited %d: %.200s); " ADVICE,
        what, c->path, c->path, status, output ? output : "");
    free(output);
    return rc;
  }
  snprintf(c->version, sizeof c->version, "%.*s", (int)strcspn(output, "\r\n"), output);
  free(output);
  pthread_mutex_lock(&klock);
  known *k = &kcache[knext++ % KNOWN];
  t4a__strcopy(k->path, sizeof k->path, c->path);
  k->dev = st->st_dev;
  k->ino = st->st_ino;
  k->size = st->st_size;
  k->mtime = st->st_mtim;
  t4a__strcopy(k->version, sizeof k->version, c->version);
  pthread_mutex_unlock(&klock);
  return T4A_OK;
}

/* ---- the last compiler found, for the compiles that follow -------------- */

/* A compile served from the memory cache must cost microseconds, and a
 * search of PATH is a stat per directory and name. So the last answer is
 * kept with what it was found from (T4A_HOST_CXX and PATH as they were)
 * and the found file's identity; it is used while both strings are the
 * same and the file is unchanged (one stat), else the search runs again. */
typedef struct last_found {
  bool valid, env_set;
  char env[256];
  char search[1024];
  struct stat st;
  t4a__hcxx c;
} last_found;

static last_found last; /* klock */

static bool same_identity(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The last answer, when found from the same T4A_HOST_CXX and PATH; with
 * check, only if the file is also unchanged (one stat). */
static bool reuse_last(const char *env, const char *search, t4a__hcxx *c, bool check) {
  bool hit = false;
  pthread_mutex_lock(&klock);
  if (last.valid && last.env_set == (env != NULL) && (!env || strcmp(last.env, env) == 0) &&
      strcmp(last.search, search) == 0) {
    struct stat st; /* the same file as found (and checked executable) then */
    hit = !check || (stat(last.c.path, &st) == 0 && same_identity(&st, &last.st));
    if (hit)
      *c = last.c;
  }
  pthread_mutex_unlock(&klock);
  return hit;
}

static void keep_last(const char *env, const t4a__hcxx *c, const struct stat *st) {
  pthread_mutex_lock(&klock);
  last.valid = !env || strlen(env) < sizeof last.env;
  last.env_set = env != NULL;
  t4a__strcopy(last.env, sizeof last.env, env ? env : "");
  t4a__strcopy(last.search, sizeof last.search, c->search);
  last.st = *st;
  last.c = *c;
  pthread_mutex_unlock(&klock);
}

/* Whether the environment is ignored: read once. A process's privileges
 * only go down after exec, so the first answer errs towards ignoring. */
static pthread_once_t secure_once = PTHREAD_ONCE_INIT;
static bool secure;
static void read_secure(void) { secure = t4a__env_is_secure(); }

const char *t4a__host_getenv(const char *name) {
  pthread_once(&secure_once, read_secure);
  return secure ? NULL : getenv(name);
}

/* c->search from PATH (or the system's default); *env: T4A_HOST_CXX or NULL. */
static int environment(t4a__hcxx *c, const char **env, const char *what) {
  *env = t4a__host_getenv("T4A_HOST_CXX");
  const char *path = t4a__host_getenv("PATH");
  if (*env && !**env)
    *env = NULL;
  if (path) {
    if (strlen(path) >= sizeof c->search)
      return t4a__fail(T4A_ENOCOMPILER,
                       "%s: PATH is %zu bytes long, more than the %zu the host backend searches "
                       "(it is refused, not cut); shorten PATH or set T4A_HOST_CXX",
                       what, strlen(path), sizeof c->search - 1);
    t4a__strcopy(c->search, sizeof c->search, path);
  } else if (!confstr(_CS_PATH, c->search, sizeof c->search)) {
    t4a__strcopy(c->search, sizeof c->search, "/bin:/usr/bin");
  }
  return T4A_OK;
}

bool t4a__hcxx_last(t4a__hcxx *c) {
  const char *env;
  memset(c, 0, sizeof *c);
  return environment(c, &env, "artifact_compile") == T4A_OK && reuse_last(env, c->search, c, false);
}

int t4a__hcxx_find(t4a__hcxx *c, const char *what) {
  memset(c, 0, sizeof *c);
  struct stat st;
  const char *env;
  int rc = environment(c, &env, what);
  if (rc)
    return rc;
  if (reuse_last(env, c->search, c, true))
    return T4A_OK;
  if (env) {
    if (env[0] != '/')
      return t4a__fail(T4A_ENOCOMPILER,
                       "%s: T4A_HOST_CXX=%.200s is not an absolute path (the current directory is "
                       "never searched); set it to the compiler's absolute path, or unset it to "
                       "search PATH",
                       what, env);
    if (strlen(env) >= sizeof c->path)
      return t4a__fail(T4A_ENOCOMPILER,
                       "%s: T4A_HOST_CXX is %zu bytes long, more than the %zu accepted (refused, "
                       "not cut); use a shorter path",
                       what, strlen(env), sizeof c->path - 1);
    if (!runnable(env, &st))
      return t4a__fail(T4A_ENOCOMPILER, "%s: T4A_HOST_CXX=%s is not an executable file; " ADVICE,
                       what, env);
    t4a__strcopy(c->path, sizeof c->path, env);
  } else if (!search_path(c->search, c->path, sizeof c->path, &st)) {
    c->path[0] = '\0';
    return t4a__fail(T4A_ENOCOMPILER,
                     "%s: no host C++ compiler (c++, g++ or clang++) in the absolute directories "
                     "of PATH (%.300s%s); " ADVICE,
                     what, c->search,
                     secure ? ", the system's default: the "
                              "environment is ignored in a setuid process"
                            : "");
  }
  if ((rc = ask_version(c, &st, what)))
    return rc;
  parse_version(c);
  c->clang = strstr(c->version, "clang") != NULL;
  keep_last(env, c, &st);
  return T4A_OK;
}

int t4a__slot_compiler_info(t4a_compiler_info *info) {
  T4A__FORK_CHECK("compiler_info");
  int rc = t4a__check_struct(info, T4A_COMPILER_INFO_V1_0_SIZE, "t4a_compiler_info");
  if (rc)
    return rc;
  t4a_compiler_info out = {.struct_size = sizeof out};
  t4a__hcxx c;
  t4a__error saved = *t4a__error_get(); /* a missing compiler is an answer, not a failure */
  out.status = t4a__hcxx_find(&c, "compiler_info");
  if (out.status) {
    t4a__strcopy(out.reason, sizeof out.reason, t4a__error_get()->message);
    t4a__error_set(&saved);
  } else {
    out.version_major = c.major;
    out.version_minor = c.minor; /* reason stays "": the header's "why it is unavailable" */
  }
  t4a__strcopy(out.path, sizeof out.path, c.path);
  t4a__fill_struct(info, &out, sizeof out);
  return T4A_OK;
}
