/* loader/registry.c -- opening, validating, sharing and closing backends. */
#include "config.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "common/log.h"
#include "common/str.h"
#include "loader/loader_internal.h"

struct t4a_gpu_backend {
  struct t4a_gpu_backend *next;
  unsigned long refs;
  void *dl;
  dev_t dev;
  ino_t ino;
  uint16_t abi_major, abi_minor;
  char path[T4A__PATH_MAX];
  t4a_gpu_backend_v1 table; /* normalised copy, see gpu_loader.h */
};

/* b->path holds what realpath() writes, uncut. */
_Static_assert(PATH_MAX <= T4A__PATH_MAX, "T4A__PATH_MAX is smaller than PATH_MAX");

/* Every open backend, guarded by registry_lock.
 *
 * No plugin code runs while registry_lock is held: dlopen (the plugin's
 * constructors), its entry point and dlclose (its destructors) are called
 * without it, because that code may call back into the loader (issue #19:
 * a constructor calling t4a_gpu_open_path deadlocked). The lock only guards
 * list and reference-count updates, and nothing is called under it that
 * waits for anything else, so it cannot take part in a deadlock.
 *
 * Why that is race-free: each registry entry owns exactly one dlopen
 * reference, dropped (outside the lock) only after the entry left the list
 * at its last close. A thread that finds no entry loads the file with its
 * own dlopen reference, which keeps the code mapped whatever other threads
 * do; under the lock it then either publishes its entry or, when another
 * thread (or the plugin itself, re-entering) published one for the same file
 * meanwhile, takes a reference on that one and drops its own dlopen
 * reference. dlopen/dlclose count references per file, so the extra one
 * never unloads anything the registry still holds. At most one entry per
 * (device, inode) is in the list; two threads opening a new plugin at once
 * may both call its entry point (see gpu_loader.h). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct t4a_gpu_backend *registry;

/* The open backend of that file, or NULL. Called with registry_lock held. */
static struct t4a_gpu_backend *find(dev_t dev, ino_t ino) {
  for (struct t4a_gpu_backend *b = registry; b; b = b->next)
    if (b->dev == dev && b->ino == ino)
      return b;
  return NULL;
}

/* Slots every v1 plugin must fill. */
#define REQUIRED_SIZE T4A_SIZE_THROUGH(t4a_gpu_backend_v1, device_info)

static int validate(const char *path, const t4a_gpu_backend_v1 *t) {
  if (t->abi_major != T4A_GPU_BACKEND_ABI_MAJOR)
    return t4a__fail(T4A_EABI,
                     "%s speaks backend ABI %u.%u, this loader %u.%u; use a plugin built for "
                     "ABI major %u",
                     path, t->abi_major, t->abi_minor, T4A_GPU_BACKEND_ABI_MAJOR,
                     T4A_GPU_BACKEND_ABI_MINOR, T4A_GPU_BACKEND_ABI_MAJOR);
  if (t->struct_size < REQUIRED_SIZE)
    return t4a__fail(T4A_EABI,
                     "%s (ABI %u.%u) has a %u-byte table, smaller than the %zu bytes of the "
                     "required v1 slots; the plugin is broken, rebuild it",
                     path, t->abi_major, t->abi_minor, t->struct_size, (size_t)REQUIRED_SIZE);
  const char *missing = !t->last_error     ? "last_error"
                        : !t->init         ? "init"
                        : !t->get_info     ? "get_info"
                        : !t->device_count ? "device_count"
                        : !t->device_info  ? "device_info"
                                           : NULL;
  if (missing)
    return t4a__fail(T4A_EABI,
                     "%s (ABI %u.%u) leaves the required slot '%s' NULL; the plugin is broken, "
                     "rebuild it",
                     path, t->abi_major, t->abi_minor, missing);
  return T4A_OK;
}

/* Loads the file, checks its entry and table; on success *out is a new,
 * unpublished backend with one reference. Runs plugin code: called without
 * registry_lock. */
static int load(const char *path, const struct stat *st, struct t4a_gpu_backend **out) {
  dlerror();
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    return t4a__fail(T4A_ENOBACKEND,
                     "cannot load %s (%s); check that it is a shared object "
                     "for this architecture and that its dependencies resolve",
                     path, dlerror());
  t4a_gpu_backend_v1_entry_fn entry;
  *(void **)&entry = dlsym(dl, T4A_GPU_BACKEND_V1_ENTRY_NAME);
  if (!entry) {
    dlclose(dl);
    return t4a__fail(T4A_EABI,
                     "%s does not export " T4A_GPU_BACKEND_V1_ENTRY_NAME
                     "; it is not a t4a v1 backend plugin",
                     path);
  }
  const t4a_gpu_backend_v1 *t = NULL;
  int rc = entry(T4A_GPU_BACKEND_ABI_MAJOR, T4A_GPU_BACKEND_ABI_MINOR, &t);
  if (rc != T4A_OK || !t) {
    dlclose(dl);
    return t4a__fail(T4A_EABI, "%s refused ABI %u.%u (%s); use a plugin built for ABI major %u",
                     path, T4A_GPU_BACKEND_ABI_MAJOR, T4A_GPU_BACKEND_ABI_MINOR,
                     t4a_status_name(rc ? rc : T4A_EINTERNAL), T4A_GPU_BACKEND_ABI_MAJOR);
  }
  rc = validate(path, t);
  if (rc) {
    dlclose(dl);
    return rc;
  }
  struct t4a_gpu_backend *b = calloc(1, sizeof *b);
  if (!b) {
    dlclose(dl);
    return t4a__fail(T4A_ENOMEM, "out of host memory opening %s; free memory and retry", path);
  }
  b->refs = 1;
  b->dl = dl;
  b->dev = st->st_dev;
  b->ino = st->st_ino;
  b->abi_major = t->abi_major;
  b->abi_minor = t->abi_minor;
  t4a__strcopy(b->path, sizeof b->path, path);
  size_t n = t->struct_size < sizeof b->table ? t->struct_size : sizeof b->table;
  memcpy(&b->table, t, n); /* the rest stays NULL: "unsupported" */
  b->table.struct_size = (uint32_t)n;
  *out = b;
  return T4A_OK;
}

int t4a_gpu_open_path(const char *path, t4a_gpu_backend **out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "t4a_gpu_open_path: out is NULL; pass a pointer to receive "
                                 "the backend");
  *out = NULL;
  if (!path || !*path)
    return t4a__fail(T4A_EINVAL, "t4a_gpu_open_path: empty path; pass the plugin's file name");
  size_t len = strlen(path);
  if (len >= T4A__PATH_MAX)
    return t4a__fail(T4A_EINVAL,
                     "t4a_gpu_open_path: the path is %zu bytes long, more than the %d the "
                     "loader handles; use a shorter path",
                     len, T4A__PATH_MAX - 1);
  char real[PATH_MAX];
  struct stat st;
  if (!realpath(path, real) || stat(real, &st) != 0 || !S_ISREG(st.st_mode))
    return t4a__fail(T4A_ENOBACKEND,
                     "backend file %s does not exist or is not a regular "
                     "file; check the path",
                     path);
  pthread_mutex_lock(&registry_lock);
  struct t4a_gpu_backend *b = find(st.st_dev, st.st_ino);
  if (b)
    b->refs++;
  pthread_mutex_unlock(&registry_lock);
  if (b) {
    *out = b;
    return T4A_OK;
  }
  struct t4a_gpu_backend *fresh = NULL;
  int rc = load(real, &st, &fresh); /* without the lock: see registry_lock */
  if (rc != T4A_OK) {
    t4a__log(T4A__LOG_WARN, "loader", "%s", t4a_gpu_last_error());
    return rc;
  }
  pthread_mutex_lock(&registry_lock);
  b = find(st.st_dev, st.st_ino);
  if (b) { /* published meanwhile (another thread, or this plugin re-entering) */
    b->refs++;
  } else {
    b = fresh;
    b->next = registry;
    registry = b;
    fresh = NULL;
  }
  pthread_mutex_unlock(&registry_lock);
  if (fresh) { /* drops only this thread's extra dlopen reference */
    dlclose(fresh->dl);
    free(fresh);
  } else {
    /* (name and version are the plugin's: read with a bound; the log escapes them) */
    t4a__log(T4A__LOG_INFO, "loader", "loaded %s (%.64s %.64s, ABI %u.%u)", b->path,
             b->table.name ? b->table.name : "?", b->table.version ? b->table.version : "?",
             (unsigned)b->abi_major, (unsigned)b->abi_minor);
  }
  *out = b;
  return T4A_OK;
}

int t4a_gpu_open(const char *spec, t4a_gpu_backend **out) {
  if (!out)
    return t4a__fail(T4A_EINVAL, "t4a_gpu_open: out is NULL; pass a pointer to receive the "
                                 "backend");
  *out = NULL;
  if (!spec || !*spec) {
    spec = t4a__default_spec();
    /* A relative path from the environment would load whatever the current
     * directory holds when the program opens its backend: refused. (A path the
     * program passes itself is its own explicit choice.) */
    if (strchr(spec, '/') && spec[0] != '/') {
      t4a__fail(T4A_EINVAL,
                "T4A_GPU_BACKEND '%s' is a relative path, which the loader refuses: it would "
                "load from whatever the current directory is; set an absolute path or a "
                "backend name",
                spec);
      t4a__log(T4A__LOG_WARN, "loader", "%s", t4a_gpu_last_error());
      return T4A_EINVAL;
    }
  }
  if (strchr(spec, '/'))
    return t4a_gpu_open_path(spec, out);
  if (!t4a__valid_name(spec))
    return t4a__fail(T4A_EINVAL,
                     "backend name '%.64s' is invalid; use lower-case letters, "
                     "digits and '_' (at most %d), or a path containing '/'",
                     spec, T4A__NAME_MAX);
  char path[T4A__PATH_MAX];
  int rc = t4a__find_backend(spec, path, sizeof path);
  if (rc) {
    t4a__log(T4A__LOG_WARN, "loader", "%s", t4a_gpu_last_error());
    return rc;
  }
  t4a__log(T4A__LOG_DEBUG, "loader", "backend '%s' is %s", spec, path);
  return t4a_gpu_open_path(path, out);
}

/* Whether b is in the registry. Called with registry_lock held. */
static int registered(const t4a_gpu_backend *b) {
  for (const struct t4a_gpu_backend *p = registry; p; p = p->next)
    if (p == b)
      return 1;
  return 0;
}

int t4a_gpu_close(t4a_gpu_backend *b) {
  if (!b)
    return t4a__fail(T4A_EINVAL, "t4a_gpu_close: backend is NULL; pass a backend from "
                                 "t4a_gpu_open");
  pthread_mutex_lock(&registry_lock);
  if (!registered(b)) {
    pthread_mutex_unlock(&registry_lock);
    return t4a__fail(T4A_EHANDLE, "t4a_gpu_close: not an open backend (already closed?); "
                                  "close each successful open exactly once");
  }
  void *dl = NULL;
  if (--b->refs == 0) {
    t4a__log(T4A__LOG_DEBUG, "loader", "unloading %s", b->path);
    struct t4a_gpu_backend **pp = &registry;
    while (*pp && *pp != b)
      pp = &(*pp)->next;
    *pp = b->next;
    dl = b->dl;
    free(b);
  }
  pthread_mutex_unlock(&registry_lock);
  if (dl)
    dlclose(dl);
  return T4A_OK;
}

const t4a_gpu_backend_v1 *t4a_gpu_backend_table(const t4a_gpu_backend *b) {
  return b ? &b->table : NULL;
}

const char *t4a_gpu_backend_path(const t4a_gpu_backend *b) { return b ? b->path : NULL; }

int t4a_gpu_backend_abi(const t4a_gpu_backend *b, uint16_t *major, uint16_t *minor) {
  if (!b || !major || !minor)
    return t4a__fail(T4A_EINVAL, "t4a_gpu_backend_abi: NULL argument; pass an open backend "
                                 "and two pointers");
  *major = b->abi_major;
  *minor = b->abi_minor;
  return T4A_OK;
}
