/* loader/search.c -- where backends are looked for, and listing them. */
#include "config.h"

#include "t4a-paths.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/checked.h"
#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "common/str.h"
#include "loader/loader_internal.h"

#define PREFIX "libt4a_"
#define SUFFIX ".so"

const char *t4a_gpu_plugin_dir(void) { return T4A_PLUGIN_DIR; }

_Static_assert(sizeof T4A_PLUGIN_DIR <= T4A__PATH_MAX,
               "the configured plugin directory is too long");

/* The longest search-path entry under which "/libt4a_<longest name>.so" still
 * fits a T4A__PATH_MAX buffer. */
#define DIR_MAX (T4A__PATH_MAX - sizeof("/" PREFIX SUFFIX) - T4A__NAME_MAX)

int t4a__search_path(char *buf, size_t size) {
  const char *env = NULL;
  int rc = t4a__getenv_path("T4A_GPU_BACKEND_PATH", size, T4A_EINVAL, &env);
  if (rc) {
    if (size)
      buf[0] = '\0'; /* nothing is searched */
    return rc;
  }
  t4a__strcopy(buf, size, env ? env : T4A_PLUGIN_DIR);
  return T4A_OK;
}

const char *t4a_gpu_search_path(void) {
  static _Thread_local char buf[T4A__PATH_MAX];
  t4a__search_path(buf, sizeof buf);
  return buf;
}

const char *t4a__default_spec(void) {
  const char *env = t4a__getenv("T4A_GPU_BACKEND");
  return env && *env ? env : "cuda";
}

int t4a__valid_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > T4A__NAME_MAX)
    return 0;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return 0;
  return 1;
}

/* What each_dir did: fn's non-zero result (0 when it never stopped), and
 * how many entries were ignored as relative. */
struct walk {
  int stop;
  size_t relative;
};

/* Calls fn(dir, ctx) for each non-empty directory of the search path until
 * fn returns non-zero. Relative entries are skipped (and logged): the current
 * directory is never searched implicitly. Returns T4A_EINVAL, searching
 * nothing, when the value or an entry is too long: a shortened entry could
 * name another directory. */
static int each_dir(int (*fn)(const char *dir, void *ctx), void *ctx, struct walk *w) {
  w->stop = 0;
  w->relative = 0;
  char path[T4A__PATH_MAX];
  int rc = t4a__search_path(path, sizeof path);
  if (rc)
    return rc;
  for (const char *p = path; *p; p += *p == ':') {
    size_t n = strcspn(p, ":");
    if (n > DIR_MAX)
      return t4a__fail(T4A_EINVAL,
                       "T4A_GPU_BACKEND_PATH entry '%.40s...' is %zu bytes long, more than the "
                       "%zu accepted for a plugin directory; shorten it (it is refused, not "
                       "truncated: a shortened path could name another directory)",
                       p, n, (size_t)DIR_MAX);
    p += n;
  }
  char *save = NULL;
  for (char *dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    if (dir[0] != '/') {
      w->relative++;
      t4a__log(T4A__LOG_WARN, "loader",
               "T4A_GPU_BACKEND_PATH entry '%s' ignored: it is relative, and the current "
               "directory is never searched; use an absolute directory",
               dir);
      continue;
    }
    w->stop = fn(dir, ctx);
    if (w->stop)
      break;
  }
  return T4A_OK;
}

struct find_ctx {
  const char *name;
  char *out;
  size_t size;
};

static int is_regular_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int find_in(const char *dir, void *vctx) {
  struct find_ctx *c = vctx;
  int n = snprintf(c->out, c->size, "%s/" PREFIX "%s" SUFFIX, dir, c->name);
  return n > 0 && (size_t)n < c->size && is_regular_file(c->out);
}

int t4a__find_backend(const char *name, char *path, size_t size) {
  struct find_ctx c = {name, path, size};
  struct walk w;
  int rc = each_dir(find_in, &c, &w);
  if (rc || w.stop)
    return rc;
  char dirs[T4A__PATH_MAX];
  t4a__search_path(dirs, sizeof dirs);
  return t4a__fail(T4A_ENOBACKEND,
                   "backend '%s' not found: no " PREFIX "%s" SUFFIX " in '%s'%s; install the "
                   "plugin there, set T4A_GPU_BACKEND_PATH (absolute directories), or open it "
                   "by path",
                   name, name, dirs,
                   w.relative ? " (its relative entries are ignored: the current directory is "
                                "never searched)"
                              : "");
}

/* ---- listing ------------------------------------------------------------ */

struct list_ctx {
  t4a_gpu_backend_entry *items;
  size_t count, cap;
  int oom;
};

static int seen(const struct list_ctx *c, const char *name) {
  for (size_t i = 0; i < c->count; i++)
    if (strcmp(c->items[i].name, name) == 0)
      return 1;
  return 0;
}

static int list_in(const char *dir, void *vctx) {
  struct list_ctx *c = vctx;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t n = strlen(de->d_name);
    size_t fixed = strlen(PREFIX) + strlen(SUFFIX);
    if (n <= fixed || strncmp(de->d_name, PREFIX, strlen(PREFIX)) != 0 ||
        strcmp(de->d_name + n - strlen(SUFFIX), SUFFIX) != 0)
      continue;
    char name[T4A__NAME_MAX + 1];
    size_t len = n - fixed;
    if (len > T4A__NAME_MAX)
      continue;
    memcpy(name, de->d_name + strlen(PREFIX), len);
    name[len] = '\0';
    if (!t4a__valid_name(name) || seen(c, name))
      continue;
    t4a_gpu_backend_entry e;
    memset(&e, 0, sizeof e);
    t4a__strcopy(e.name, sizeof e.name, name);
    int w = snprintf(e.path, sizeof e.path, "%s/%s", dir, de->d_name);
    if (w < 0 || (size_t)w >= sizeof e.path || !is_regular_file(e.path))
      continue;
    if (c->count == c->cap) {
      uint64_t cap;
      size_t bytes;
      t4a_gpu_backend_entry *p =
          t4a__grow(c->cap, 8, SIZE_MAX, sizeof *p, &cap, &bytes) ? realloc(c->items, bytes) : NULL;
      if (!p) {
        c->oom = 1;
        break;
      }
      c->items = p;
      c->cap = (size_t)cap;
    }
    c->items[c->count++] = e;
  }
  closedir(d);
  return c->oom;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const t4a_gpu_backend_entry *)a)->name, ((const t4a_gpu_backend_entry *)b)->name);
}

int t4a_gpu_list(t4a_gpu_backend_entry *entries, size_t capacity, size_t *count) {
  if (!count || (capacity && !entries))
    return t4a__fail(T4A_EINVAL, "t4a_gpu_list: count is NULL, or entries is NULL with a "
                                 "non-zero capacity; pass valid pointers");
  struct list_ctx c = {NULL, 0, 0, 0};
  struct walk w;
  int rc = each_dir(list_in, &c, &w);
  if (rc) {
    free(c.items);
    return rc;
  }
  if (c.oom) {
    free(c.items);
    return t4a__fail(T4A_ENOMEM, "t4a_gpu_list: out of host memory while listing plugins; "
                                 "free memory and retry");
  }
  if (c.count)
    qsort(c.items, c.count, sizeof *c.items, by_name);
  for (size_t i = 0; i < c.count && i < capacity; i++)
    entries[i] = c.items[i];
  *count = c.count;
  free(c.items);
  return T4A_OK;
}
