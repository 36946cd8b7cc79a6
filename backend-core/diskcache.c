/* backend-core/diskcache.c -- the on-disk artifact cache (diskcache.h).
 *
 * Where: $T4A_CACHE_DIR when set (set and empty: no disk cache), else
 * $XDG_CACHE_HOME/t4a-gpu, else $HOME/.cache/t4a-gpu; a plugin other than
 * the CUDA one keeps its entries in a subdirectory named after it
 * (t4a__disk.sub), under the same rules. Each directory is
 * created with mode 0700 and used only if it is a directory owned by this
 * user that no one else can write (a shared or hostile directory could feed
 * us code). A relative or over-long T4A_CACHE_DIR turns the disk cache off
 * (the current directory is never trusted; a truncated path would be some
 * other directory). The default locations are used only when their base
 * ($XDG_CACHE_HOME or $HOME) is owned by this user: under `sudo -E` the
 * environment names another user's home, and a root-owned cache created
 * there would be theirs to trip over.
 *
 * An entry is one file, <hex key>.t4a: a header (magic, format version,
 * kind, sizes, the key, SHA-256 of the payload), then the code, then the log.
 * It is written to a temporary file in the directory and renamed into place,
 * so readers see a whole entry or none. A read believes an entry only if it
 * is a regular file (nothing else is opened, and the open neither follows a
 * symlink nor blocks, so a FIFO cannot hang a compile), owned by this user,
 * writable by no one else and not hard-linked elsewhere (the digest is not a
 * signature: the key is predictable, so ownership and modes are what keep
 * other users' code out), no larger than the cache limit (an entry above it
 * would be evicted anyway; checked by size before anything is read or
 * allocated), and its header, sizes, key-versus-name and digest check out.
 * An entry that fails is counted, removed (or, if it cannot be, left alone)
 * and treated as a miss; the compile that follows rewrites it. The directory
 * is kept under $T4A_CACHE_MAX_BYTES (default 256 MiB) by removing the least
 * recently used entries (a hit refreshes an entry's modification time;
 * compared to the nanosecond, as many entries share a second). Eviction and
 * clear also remove temporary files orphaned by writers that died. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/env.h"
#include "common/log.h"
#include "common/sha256.h"
#include "backend-core/diskcache.h"

#define MAGIC "T4AART\x01"
#define FORMAT 1u
#define SUFFIX ".t4a"
#define DEFAULT_LIMIT (256ull << 20)

typedef struct header {
  char magic[8];
  uint32_t format, kind;
  uint64_t data_size, log_size;
  uint8_t key[32];
  uint8_t digest[32];
} header;

static pthread_mutex_t dlock = PTHREAD_MUTEX_INITIALIZER; /* serialises store and evict */
static uint64_t hits, rejected;

/* Room an entry or temporary file name needs after the directory: the
 * directory is refused, not truncated, when a path in it could not fit. */
#define NAME_ROOM (1 + 64 + sizeof SUFFIX)

/* dir = a followed by b; false (and a warning naming what) when that does
 * not fit with room for an entry name. */
static bool fits(const t4a__disk *dc, char *dir, size_t size, const char *what, const char *a,
                 const char *b) {
  int n = snprintf(dir, size, "%s%s", a, b);
  if (n < 0 || (size_t)n + NAME_ROOM >= size) {
    t4a__log(T4A__LOG_WARN, dc->who,
             "disk cache off: %s is too long (%d bytes; at most %zu); use a shorter path", what, n,
             size - NAME_ROOM - 1);
    return false;
  }
  return true;
}

/* Whether base (a default location's parent) is owned by this user. Under
 * `sudo -E` HOME and XDG_CACHE_HOME still name the invoking user's
 * directories; creating root-owned directories there would break that
 * user's own cache, so the disk cache is skipped instead. */
static bool base_is_ours(const t4a__disk *dc, const char *var, const char *base) {
  struct stat st;
  bool found = stat(base, &st) == 0;
  if (!found || st.st_uid != geteuid()) {
    t4a__log(T4A__LOG_DEBUG, dc->who,
             "disk cache off: $%s (%s) is %s this user (uid %u); nothing is created there", var,
             base, found ? "not owned by" : "missing or unreadable for", (unsigned)geteuid());
    return false;
  }
  return true;
}

/* Creates dir (0700) if needed; whether it is a directory (not a symlink)
 * of this user that no one else can write. */
static bool private_dir(const t4a__disk *dc, const char *dir) {
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    return false;
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH))) {
    t4a__log(T4A__LOG_WARN, dc->who,
             "disk cache %s is not a private directory of this user: "
             "not used",
             dir);
    return false;
  }
  return true;
}

/* The cache directory (the plugin's subdirectory of it, if any), created if needed; false when the
 * disk cache is off or the directory is unusable. */
static bool cache_dir(const t4a__disk *dc, char *dir, size_t size) {
  const char *env = t4a__getenv("T4A_CACHE_DIR");
  if (env && !*env)
    return false; /* explicitly off */
  if (env) {
    if (*env != '/') { /* resolved against the current directory: never trusted */
      t4a__log(T4A__LOG_WARN, dc->who,
               "disk cache off: T4A_CACHE_DIR=%s is a relative path (the current directory is "
               "never trusted); set an absolute path",
               env);
      return false;
    }
    if (!fits(dc, dir, size, "T4A_CACHE_DIR", env, ""))
      return false;
  } else {
    const char *xdg = t4a__getenv("XDG_CACHE_HOME"), *home = t4a__getenv("HOME");
    if (xdg && *xdg == '/') {
      if (!base_is_ours(dc, "XDG_CACHE_HOME", xdg) ||
          !fits(dc, dir, size, "$XDG_CACHE_HOME/t4a-gpu", xdg, "/t4a-gpu"))
        return false;
    } else if (home && *home == '/') {
      if (!base_is_ours(dc, "HOME", home) ||
          !fits(dc, dir, size, "$HOME/.cache/t4a-gpu", home, "/.cache/t4a-gpu"))
        return false;
      size_t cut = strlen(dir) - strlen("/t4a-gpu");
      dir[cut] = '\0';
      mkdir(dir, 0700); /* $HOME/.cache; may exist */
      dir[cut] = '/';
    } else {
      return false;
    }
  }
  if (!private_dir(dc, dir))
    return false;
  if (!dc->sub)
    return true;
  size_t n = strlen(dir);
  if (n + 1 + strlen(dc->sub) + NAME_ROOM >= size) {
    t4a__log(T4A__LOG_WARN, dc->who, "disk cache off: %s/%s is too long; use a shorter path", dir,
             dc->sub);
    return false;
  }
  snprintf(dir + n, size - n, "/%s", dc->sub);
  return private_dir(dc, dir);
}

static uint64_t limit_bytes(void) {
  const char *v = t4a__getenv("T4A_CACHE_MAX_BYTES");
  if (v && *v) {
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*end)
      return n;
  }
  return DEFAULT_LIMIT;
}

static void entry_path(const char *dir, const uint8_t key[32], char *path, size_t size) {
  char hex[65];
  for (size_t i = 0; i < 32; i++)
    snprintf(hex + 2 * i, 3, "%02x", key[i]);
  snprintf(path, size, "%s/%s" SUFFIX, dir, hex);
}

/* Counts a rejected entry and removes it, so that the compile that follows
 * can write a good one. What cannot be removed (a directory with something
 * in it) is left alone: every lookup of that key then misses and counts
 * once, and the store's rename fails; nothing loops or waits. */
static void reject(const t4a__disk *dc, const char *path, bool is_dir, const char *why) {
  int r = is_dir ? rmdir(path) : unlink(path);
  if (r == 0 || errno == ENOENT)
    t4a__log(T4A__LOG_WARN, dc->who, "disk cache entry %s rejected (%s): removed", path, why);
  else
    t4a__log(T4A__LOG_WARN, dc->who,
             "disk cache entry %s rejected (%s) and not removable (errno %d): that key is "
             "compiled every time; remove it",
             path, why, errno);
  __atomic_add_fetch(&rejected, 1, __ATOMIC_RELAXED);
}

static bool read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r <= 0)
      return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

bool t4a__disk_lookup(const t4a__disk *dc, const uint8_t key[32], t4a_artifact_kind expect,
                      t4a__disk_entry *out) {
  char dir[4096], path[4200];
  if (!cache_dir(dc, dir, sizeof dir))
    return false;
  entry_path(dir, key, path, sizeof path);
  struct stat st;
  if (lstat(path, &st) != 0)
    return false; /* a plain miss */
  /* Only a regular file is opened: opening a FIFO would block until a
   * writer came, opening a device can act on it. O_NONBLOCK and the fstat
   * below cover a swap between this lstat and the open. */
  if (!S_ISREG(st.st_mode)) {
    reject(dc, path, S_ISDIR(st.st_mode), "not a regular file");
    return false;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return false;
  header h;
  memset(&h, 0, sizeof h); /* read below only if every earlier check passed */
  char *data = NULL, *log = NULL;
  const char *why = NULL;
  /* The digest only detects damage: anyone who can write here can compute
   * it, and the key is predictable. So an entry is believed only if no one
   * but this user could have written it (a file planted while the directory
   * was briefly shared keeps its owner and modes). */
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != geteuid())
    why = "owned by another user";
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    why = "writable by group or others";
  else if (st.st_nlink != 1) /* another name: maybe some other file of ours, linked here */
    why = "has other hard links";
  else if ((uint64_t)st.st_size > limit_bytes()) /* before anything is read or allocated */
    why = "larger than the cache limit";
  else if ((size_t)st.st_size < sizeof h || !read_all(fd, &h, sizeof h))
    why = "truncated header";
  else if (memcmp(h.magic, MAGIC, 8) != 0 || h.format != FORMAT)
    why = "not a t4a cache entry of this format";
  else if (memcmp(h.key, key, 32) != 0)
    why = "foreign: its key is not its name";
  else if (h.kind != (uint32_t)expect || h.data_size > (1ull << 31) || h.log_size > (1ull << 31) ||
           (uint64_t)st.st_size != sizeof h + h.data_size + h.log_size)
    why = "sizes do not match the file";
  if (!why) {
    data = malloc(h.data_size + 1);
    log = malloc(h.log_size + 1);
    if (!data || !log || !read_all(fd, data, h.data_size) || !read_all(fd, log, h.log_size)) {
      why = "short read";
    } else {
      t4a__sha256 s;
      uint8_t digest[32];
      t4a__sha256_init(&s);
      t4a__sha256_update(&s, data, h.data_size);
      t4a__sha256_update(&s, log, h.log_size);
      t4a__sha256_final(&s, digest);
      if (memcmp(digest, h.digest, 32) != 0)
        why = "digest mismatch";
    }
  }
  close(fd);
  if (why) {
    free(data);
    free(log);
    reject(dc, path, S_ISDIR(st.st_mode), why);
    return false;
  }
  data[h.data_size] = '\0';
  log[h.log_size] = '\0';
  utimes(path, NULL); /* recently used */
  *out = (t4a__disk_entry){(t4a_artifact_kind)h.kind, data, h.data_size, log, h.log_size};
  __atomic_add_fetch(&hits, 1, __ATOMIC_RELAXED);
  return true;
}

typedef struct fent {
  char name[96];
  uint64_t bytes;
  struct timespec mtime; /* to the nanosecond: many entries share a second */
} fent;
_Static_assert(64 + sizeof SUFFIX <= sizeof((fent *)0)->name, "an entry name fits fent.name");

static int by_age(const void *a, const void *b) {
  const struct timespec *x = &((const fent *)a)->mtime, *y = &((const fent *)b)->mtime;
  if (x->tv_sec != y->tv_sec)
    return (x->tv_sec > y->tv_sec) - (x->tv_sec < y->tv_sec);
  return (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

#define TMP_PREFIX ".tmp-"
/* A temporary file untouched this long was orphaned by a writer that died
 * between mkstemp and rename. A live writer's file is seconds old: a store
 * writes one entry (at most the cache limit, usually KiB to MiB) in one go
 * and renames it at once, and every write moves the file's mtime. Ten
 * minutes is far beyond that even on a slow, loaded disk, yet orphans go at
 * the next store or clear. Removing a live file by mistake would only cost
 * that store (its rename fails), never a corrupt entry. */
#define STALE_TMP_SECONDS ((time_t)10 * 60)

/* Removes the temporary file `name` in dir if it is stale. */
static void sweep_tmp(const t4a__disk *dc, const char *dir, const char *name,
                      const struct timespec *now) {
  char path[4200];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_mtim.tv_sec < now->tv_sec - STALE_TMP_SECONDS && unlink(path) == 0)
    t4a__log(T4A__LOG_INFO, dc->who, "disk cache: removed %s, orphaned by a writer that died",
             path);
}

/* Lists the entries of dir (malloc'd array); returns the count. With
 * sweep, stale temporary files are removed on the way. */
static size_t list_entries(const t4a__disk *dc, const char *dir, fent **out, uint64_t *total,
                           bool sweep) {
  *out = NULL;
  *total = 0;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (sweep && len == strlen(TMP_PREFIX "XXXXXX") &&
        strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0)
      sweep_tmp(dc, dir, de->d_name, &now);
    if (len != 64 + strlen(SUFFIX) || strcmp(de->d_name + 64, SUFFIX) != 0)
      continue;
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (n == cap) {
      uint64_t next;
      size_t bytes;
      fent *p =
          t4a__grow(cap, 64, SIZE_MAX, sizeof *p, &next, &bytes) ? realloc(*out, bytes) : NULL;
      if (!p)
        break; /* the entries so far */
      *out = p;
      cap = (size_t)next;
    }
    fent *e = &(*out)[n++];
    memcpy(e->name, de->d_name, len + 1); /* len is fixed above, below sizeof e->name */
    e->bytes = (uint64_t)st.st_size;
    e->mtime = st.st_mtim;
    *total += e->bytes;
  }
  closedir(d);
  return n;
}

/* Removes stale temporary files, then the least recently used entries
 * until at most limit bytes remain. */
static void evict(const t4a__disk *dc, const char *dir, uint64_t limit) {
  fent *es;
  uint64_t total;
  size_t n = list_entries(dc, dir, &es, &total, true);
  if (total > limit && n) {
    qsort(es, n, sizeof *es, by_age);
    for (size_t i = 0; i < n && total > limit; i++) {
      char path[4200];
      snprintf(path, sizeof path, "%s/%s", dir, es[i].name);
      if (unlink(path) == 0)
        total -= es[i].bytes;
    }
  }
  free(es);
}

void t4a__disk_store(const t4a__disk *dc, const uint8_t key[32], t4a_artifact_kind kind,
                     const void *data, uint64_t size, const char *log, uint64_t log_size) {
  char dir[4096], path[4200], tmp[4200];
  if (!cache_dir(dc, dir, sizeof dir))
    return;
  header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, MAGIC, 8);
  h.format = FORMAT;
  h.kind = (uint32_t)kind;
  h.data_size = size;
  h.log_size = log_size;
  memcpy(h.key, key, 32);
  t4a__sha256 s;
  t4a__sha256_init(&s);
  t4a__sha256_update(&s, data, (size_t)size);
  t4a__sha256_update(&s, log, (size_t)log_size);
  t4a__sha256_final(&s, h.digest);
  entry_path(dir, key, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s/" TMP_PREFIX "XXXXXX", dir);
  pthread_mutex_lock(&dlock);
  int fd = mkstemp(tmp);
  if (fd >= 0) {
    FILE *f = fdopen(fd, "wb");
    bool ok = f && fwrite(&h, sizeof h, 1, f) == 1 &&
              (size == 0 || fwrite(data, (size_t)size, 1, f) == 1) &&
              (log_size == 0 || fwrite(log, (size_t)log_size, 1, f) == 1);
    ok = f && fclose(f) == 0 && ok;
    if (!f)
      close(fd);
    if (!ok || rename(tmp, path) != 0)
      unlink(tmp);
    else
      evict(dc, dir, limit_bytes());
  }
  pthread_mutex_unlock(&dlock);
}

void t4a__disk_stats(const t4a__disk *dc, uint64_t *entries, uint64_t *bytes, uint64_t *limit) {
  char dir[4096];
  *entries = *bytes = 0;
  *limit = limit_bytes();
  if (!cache_dir(dc, dir, sizeof dir))
    return;
  fent *es;
  *entries = list_entries(dc, dir, &es, bytes, false);
  free(es);
}

uint64_t t4a__disk_hits(void) { return __atomic_load_n(&hits, __ATOMIC_RELAXED); }

uint64_t t4a__disk_rejected(void) { return __atomic_load_n(&rejected, __ATOMIC_RELAXED); }

void t4a__disk_clear(const t4a__disk *dc) {
  char dir[4096];
  if (!cache_dir(dc, dir, sizeof dir))
    return;
  pthread_mutex_lock(&dlock);
  evict(dc, dir, 0);
  pthread_mutex_unlock(&dlock);
}
