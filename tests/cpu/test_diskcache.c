/* tests/cpu/test_diskcache.c -- what the compile caches trust: where the
 * disk cache lives, which entries it believes, what it cleans up.
 *
 * Runs everywhere: compiles go to the fake NVRTC (no GPU, driver or CUDA
 * toolkit needed; device_ordinal = -1 with "-arch=sm_90"). Each test opens
 * the plugin itself, after setting the environment it reads, so that
 * T4A_LOG (read once per loaded plugin) can be captured. Some checks need
 * root (chown to another uid); without it they say so and check the rest. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/testutil.h"

#define OTHER_UID 12345 /* any uid that is not ours */

static const t4a_gpu_backend_v1 *T;
static t4a_gpu_backend *B;
static char root[64]; /* a fresh directory per test */
static char cache[128];

static void setup(void) {
  snprintf(root, sizeof root, "/tmp/t4a-dc-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(root));
  snprintf(cache, sizeof cache, "%s/c", root);
  setenv("T4A_CACHE_DIR", cache, 1);
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("T4A_CACHE_MAX_BYTES");
  unsetenv("T4A_LOG");
}

static void teardown(void) {
  if (B)
    t4a_gpu_close(B);
  B = NULL;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", root, root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", root);
}

/* Opens the plugin; the environment is read from here on. */
static void open_backend(void) { B = t4a_test_open_cuda(&T); }

static int compile_named(const char *source, const char *name, const char *extra) {
  const char *opts[] = {"-arch=sm_90", extra};
  t4a_compile_options o = {.struct_size = sizeof o, .source = source, .name = name};
  o.options = opts;
  o.option_count = extra ? 2 : 1;
  o.device_ordinal = -1;
  t4a_artifact a = {0};
  int rc = T->artifact_compile(&o, &a);
  if (a.bits)
    T->artifact_release(a);
  return rc;
}

static const char kernel[] = "extern \"C\" __global__ void t4a_empty() {}\n";
static const char kernel2[] = "extern \"C\" __global__ void t4a_fill_u32() {}\n";
static const char kernel3[] = "extern \"C\" __global__ void t4a_axpy_f32() {}\n";

static int compile(const char *source) { return compile_named(source, "k.cu", NULL); }

static t4a_compile_cache_stats stats(void) {
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  ck_assert_int_eq(T->compile_cache_stats(&s), T4A_OK);
  return s;
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* stderr into a file while the plugin logs. */
static int saved_stderr = -1;
static char logbuf[1 << 14];

static void capture_begin(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/stderr.log", root);
  fflush(stderr);
  saved_stderr = dup(2);
  int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  ck_assert_int_ge(fd, 0);
  dup2(fd, 2);
  close(fd);
}

static const char *capture_end(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/stderr.log", root);
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(logbuf, 1, sizeof logbuf - 1, f);
  logbuf[n] = '\0';
  fclose(f);
  fputs(logbuf, stderr); /* still shown in the test's output */
  return logbuf;
}

#define ASSERT_LOG(log, needle)                                                                    \
  ck_assert_msg(strstr(log, needle), "the log lacks '%s':\n%s", needle, log)

/* ---- where the cache lives ------------------------------------------------ */

START_TEST(relative_cache_dir_is_refused) {
  ck_assert_int_eq(chdir(root), 0);
  setenv("T4A_CACHE_DIR", "t4a-rel", 1);
  setenv("T4A_LOG", "warn", 1);
  open_backend();
  capture_begin();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  const char *log = capture_end();
  ck_assert_msg(!exists("t4a-rel"), "a cache was created in the current directory");
  ck_assert_uint_eq(stats().disk_entries, 0);
  ASSERT_LOG(log, "T4A_CACHE_DIR=t4a-rel is a relative path");
}
END_TEST

START_TEST(over_long_cache_dir_is_refused_not_truncated) {
  /* Nested directories up to ~3950 bytes, then a 300-byte last component:
   * truncated to the old 4095-byte buffer, the value names a directory
   * that could be created next to it. */
  char base[4200], truncated[4096], value[4400];
  snprintf(base, sizeof base, "%s", root);
  while (strlen(base) < 3950) {
    size_t len = strlen(base), part = 3950 - len - 1 < 200 ? 3950 - len - 1 : 200;
    base[len] = '/';
    memset(base + len + 1, 'd', part);
    base[len + 1 + part] = '\0';
    ck_assert_int_eq(mkdir(base, 0700), 0);
  }
  size_t len = strlen(base);
  memcpy(value, base, len);
  value[len] = '/';
  memset(value + len + 1, 'x', 300);
  value[len + 301] = '\0';
  memcpy(truncated, value, sizeof truncated - 1); /* what a 4096-byte buffer kept */
  truncated[sizeof truncated - 1] = '\0';
  setenv("T4A_CACHE_DIR", value, 1);
  setenv("T4A_LOG", "warn", 1);
  open_backend();
  capture_begin();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  const char *log = capture_end();
  ck_assert_msg(!exists(truncated), "a directory was created at the truncated path");
  ck_assert_uint_eq(stats().disk_entries, 0);
  ASSERT_LOG(log, "T4A_CACHE_DIR is too long");
}
END_TEST

/* A directory owned by another user (root only: chown). */
static bool make_foreign_dir(const char *path) {
  ck_assert_int_eq(mkdir(path, 0755), 0);
  if (chown(path, OTHER_UID, OTHER_UID) == 0)
    return true;
  printf("note: not root (%s): the foreign-owner part is not checked\n", strerror(errno));
  return false;
}

START_TEST(default_dirs_not_owned_by_us_are_left_alone) {
  char home[128], xdg[128], mine[128], path[256];
  snprintf(home, sizeof home, "%s/home", root);
  snprintf(xdg, sizeof xdg, "%s/xdg", root);
  snprintf(mine, sizeof mine, "%s/mine", root);
  bool foreign = make_foreign_dir(home) && make_foreign_dir(xdg);
  unsetenv("T4A_CACHE_DIR");
  setenv("HOME", home, 1);
  setenv("T4A_LOG", "debug", 1);
  open_backend();
  capture_begin();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  const char *log = capture_end();
  snprintf(path, sizeof path, "%s/.cache", home);
  if (foreign) {
    ck_assert_msg(!exists(path), "created %s in another user's home", path);
    ASSERT_LOG(log, "$HOME");
    ASSERT_LOG(log, "is not owned by this user");
  }
  ck_assert_uint_eq(stats().disk_entries, 0);
  /* XDG_CACHE_HOME likewise */
  setenv("XDG_CACHE_HOME", xdg, 1);
  ck_assert_int_eq(compile(kernel2), T4A_OK);
  snprintf(path, sizeof path, "%s/t4a-gpu", xdg);
  if (foreign)
    ck_assert_msg(!exists(path), "created %s in another user's cache", path);
  ck_assert_uint_eq(stats().disk_entries, 0);
  /* our own home still gets the cache */
  unsetenv("XDG_CACHE_HOME");
  ck_assert_int_eq(mkdir(mine, 0700), 0);
  setenv("HOME", mine, 1);
  ck_assert_int_eq(compile(kernel3), T4A_OK);
  snprintf(path, sizeof path, "%s/.cache/t4a-gpu", mine);
  ck_assert_msg(exists(path), "no cache in our own home");
  ck_assert_uint_eq(stats().disk_entries, 1);
}
END_TEST

/* ---- which entries are believed ------------------------------------------ */

/* The path of the one entry (*.t4a) in the cache directory. */
static void entry_file(char *path, size_t size) {
  DIR *d = opendir(cache);
  ck_assert_ptr_nonnull(d);
  struct dirent *de;
  int n = 0;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len > 4 && strcmp(de->d_name + len - 4, ".t4a") == 0) {
      snprintf(path, size, "%s/%s", cache, de->d_name);
      n++;
    }
  }
  closedir(d);
  ck_assert_int_eq(n, 1);
}

/* Compiles `kernel` again in a fresh memory cache and checks that the
 * disk entry was rejected (counted once) and compiled again, not hit. */
static void expect_rejected(const char *what) {
  ck_assert_int_eq(T->compile_cache_clear(T4A_CACHE_MEMORY), T4A_OK);
  t4a_compile_cache_stats before = stats();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  t4a_compile_cache_stats after = stats();
  ck_assert_msg(after.disk_hits == before.disk_hits, "%s: a disk hit", what);
  ck_assert_msg(after.disk_rejected - before.disk_rejected == 1, "%s: %llu rejections, want 1",
                what, (unsigned long long)(after.disk_rejected - before.disk_rejected));
  ck_assert_msg(after.misses - before.misses == 1, "%s: not compiled again", what);
}

/* ... and that the entry was rewritten: the next lookup is a disk hit. */
static void expect_hit(const char *what) {
  ck_assert_int_eq(T->compile_cache_clear(T4A_CACHE_MEMORY), T4A_OK);
  t4a_compile_cache_stats before = stats();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  t4a_compile_cache_stats after = stats();
  ck_assert_msg(after.disk_hits - before.disk_hits == 1, "%s: no disk hit", what);
  ck_assert_uint_eq(after.misses, before.misses);
}

START_TEST(entries_of_other_users_or_writable_by_others_are_not_believed) {
  open_backend();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  expect_hit("our own entry");
  char path[512];
  entry_file(path, sizeof path);
  /* planted by another user (while the directory was open to others) */
  if (chown(path, OTHER_UID, OTHER_UID) == 0) {
    expect_rejected("an entry owned by another uid");
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_uid, geteuid()); /* replaced by ours */
    expect_hit("the rewritten entry");
  } else {
    printf("note: not root (%s): the foreign-owner case is not checked\n", strerror(errno));
  }
  static const mode_t modes[] = {0620, 0602, 0666};
  for (int i = 0; i < 3; i++) {
    char what[64];
    snprintf(what, sizeof what, "an entry with mode 0%o", (unsigned)modes[i]);
    ck_assert_int_eq(chmod(path, modes[i]), 0);
    expect_rejected(what);
    expect_hit(what);
  }
  /* a second name for the entry (a hard link): not ours alone */
  char link_path[600];
  snprintf(link_path, sizeof link_path, "%s/elsewhere", root);
  ck_assert_int_eq(link(path, link_path), 0);
  expect_rejected("an entry with another hard link");
  expect_hit("the rewritten entry");
}
END_TEST

/* Bytes this process has read through read(2) and friends. */
static long long bytes_read(void) {
  FILE *f = fopen("/proc/self/io", "r");
  if (!f)
    return -1;
  long long n = -1;
  char line[128];
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "rchar: %lld", &n) == 1)
      break;
  fclose(f);
  return n;
}

START_TEST(oversized_entries_are_rejected_unread) {
  setenv("T4A_CACHE_MAX_BYTES", "1048576", 1);
  open_backend();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  char path[512];
  entry_file(path, sizeof path);
  /* A sparse 64 MiB entry under the right name, its header (format 1:
   * 96 bytes, data_size at offset 16, log_size at 24) consistent with the
   * file size, so only its size gives it away. */
  const uint64_t total = 64ull << 20;
  unsigned char head[96];
  int fd = open(path, O_RDWR);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(read(fd, head, sizeof head), (ssize_t)sizeof head);
  uint64_t log_size, data_size;
  memcpy(&log_size, head + 24, 8);
  data_size = total - sizeof head - log_size;
  memcpy(head + 16, &data_size, 8);
  ck_assert_int_eq(pwrite(fd, head, sizeof head, 0), (ssize_t)sizeof head);
  ck_assert_int_eq(ftruncate(fd, (off_t)total), 0);
  close(fd);
  long long before = bytes_read();
  expect_rejected("a 64 MiB entry over a 1 MiB limit");
  long long after = bytes_read();
  if (before >= 0 && after >= 0)
    ck_assert_msg(after - before < (long long)(total / 2), "read %lld bytes to reject it",
                  after - before);
  else
    printf("note: no /proc/self/io: the bytes read are not checked\n");
  expect_hit("the rewritten entry");
}
END_TEST

START_TEST(a_fifo_at_an_entry_does_not_hang) {
  open_backend();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  char path[512];
  entry_file(path, sizeof path);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  signal(SIGALRM, SIG_DFL); /* not Check's handler (inherited): die by SIGALRM */
  alarm(20);                /* opening a FIFO without a writer blocks: fail, do not hang */
  expect_rejected("a FIFO");
  alarm(0);
  expect_hit("the entry written in the FIFO's place");
}
END_TEST

START_TEST(a_directory_at_an_entry_is_removed_or_missed_once_per_lookup) {
  open_backend();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  char path[512], inner[600];
  entry_file(path, sizeof path);
  /* empty: removed, and the entry written in its place */
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  expect_rejected("an empty directory");
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  ck_assert_msg(S_ISREG(st.st_mode), "the directory is still there");
  expect_hit("the entry written in the directory's place");
  /* not empty: cannot be removed; each lookup is one miss, one rejection */
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(mkdir(path, 0700), 0);
  snprintf(inner, sizeof inner, "%s/x", path);
  ck_assert_int_eq(mkdir(inner, 0700), 0);
  for (int i = 0; i < 3; i++)
    expect_rejected("a directory with something in it");
  ck_assert_int_eq(lstat(path, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
}
END_TEST

/* ---- eviction and clean-up --------------------------------------------------- */

static void make_file(const char *path, uint64_t size, time_t sec, long nsec) {
  int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
  close(fd);
  struct timespec t[2] = {{sec, nsec}, {sec, nsec}};
  ck_assert_int_eq(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

static uint64_t file_size(const char *path) {
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  return (uint64_t)st.st_size;
}

START_TEST(eviction_orders_by_nanoseconds) {
  open_backend();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  char path[512];
  entry_file(path, sizeof path);
  uint64_t entry = file_size(path);
  /* Eight entries of 100000 bytes, all modified in the same second of
   * 2020, in a scrambled age order (rank[k]: 0 = oldest). */
  static const int rank[8] = {5, 2, 7, 0, 3, 6, 1, 4};
  const uint64_t big = 100000;
  char fakes[8][600];
  for (int k = 0; k < 8; k++) {
    char name[65];
    memset(name, "0123456789abcdef"[k], 64);
    name[64] = '\0';
    snprintf(fakes[k], sizeof fakes[k], "%s/%s.t4a", cache, name);
    make_file(fakes[k], big, 1600000000, 100000L * rank[k] + 7);
  }
  /* Room for the two real entries (of nearly equal size) and four and a
   * half fakes: storing a second entry evicts exactly the four oldest. */
  char limit[32];
  uint64_t bytes = 2 * entry + 9 * big / 2;
  snprintf(limit, sizeof limit, "%llu", (unsigned long long)bytes);
  setenv("T4A_CACHE_MAX_BYTES", limit, 1);
  ck_assert_int_eq(compile(kernel2), T4A_OK);
  for (int k = 0; k < 8; k++)
    ck_assert_msg(exists(fakes[k]) == (rank[k] >= 4), "the entry of age rank %d was %s", rank[k],
                  rank[k] >= 4 ? "evicted, a newer one than others kept" : "kept");
  ck_assert(exists(path));
  ck_assert_uint_eq(stats().disk_entries, 6);
}
END_TEST

START_TEST(orphaned_temporary_files_are_removed) {
  open_backend();
  ck_assert_int_eq(compile(kernel), T4A_OK);
  char stale[256], live[256], stale2[256];
  snprintf(stale, sizeof stale, "%s/.tmp-Abc123", cache);
  snprintf(stale2, sizeof stale2, "%s/.tmp-Def456", cache);
  snprintf(live, sizeof live, "%s/.tmp-Ghi789", cache);
  time_t now = time(NULL);
  make_file(stale, 4096, now - 3600, 0); /* a writer killed an hour ago */
  make_file(live, 4096, now, 0);         /* a writer at work */
  ck_assert_int_eq(T->compile_cache_clear(T4A_CACHE_DISK), T4A_OK);
  ck_assert_msg(!exists(stale), "clear left an orphaned temporary file");
  ck_assert_msg(exists(live), "clear removed a live temporary file");
  ck_assert_uint_eq(stats().disk_entries, 0);
  /* a store's eviction sweeps them too */
  make_file(stale2, 4096, now - 3600, 0);
  ck_assert_int_eq(compile(kernel2), T4A_OK);
  ck_assert_msg(!exists(stale2), "a store left an orphaned temporary file");
  ck_assert(exists(live));
  ck_assert_uint_eq(stats().disk_entries, 1);
}
END_TEST

/* ---- what is cached at all -------------------------------------------------- */

/* Compiles source twice (memory cache cleared in between, nothing else) and
 * returns how many of the two were compiled (2: not cached; 1: cached). */
static uint64_t compiles_of_two(const char *source, const char *option) {
  t4a_compile_cache_stats before = stats();
  ck_assert_int_eq(compile_named(source, "k.cu", option), T4A_OK);
  ck_assert_int_eq(T->compile_cache_clear(T4A_CACHE_MEMORY), T4A_OK);
  ck_assert_int_eq(compile_named(source, "k.cu", option), T4A_OK);
  return stats().misses - before.misses;
}

START_TEST(compiles_that_can_read_files_are_not_cached) {
  static const char *const options[] = {"-I/usr/include",
                                        "-I",
                                        "--include-path=/usr/include",
                                        "-include=k.h",
                                        "--pre-include=k.h",
                                        "-isystem/usr/include",
                                        "--use-pch=k.pch",
                                        "--pch",
                                        "--pch-dir=/tmp"};
  static const char *const sources[] = {
      "#include \"k.h\"\n",            /* the directory of `name`, then -I */
      "#include </usr/include/k.h>\n", /* absolute: opened as is */
      "#  include\"k.h\"\n",
      "%:include \"k.h\"\n",             /* digraph */
      "#inc\\\nlude \"k.h\"\n",          /* spliced */
      "#inc\\\r\nlude \"k.h\"\n",        /* spliced, CRLF */
      "#inc?\?/\nlude \"k.h\"\n",        /* spliced by a trigraph (c++11/14) */
      "#define H \"k.h\"\n#include H\n", /* computed */
      "#include_next <k.h>\n",
      "#if __has_include(\"k.h\")\n#endif\n",
      "#include <k.h> // more\n",    /* not the plain form: not worth parsing */
      "#include <k.h>\\\n\"x.h\"\n", /* continued */
      "// this includes nothing, but says so\n",
      "#import \"k.h\"\n",
      "#embed \"k.h\"\n",
      "#if __has_embed(\"k.h\")\n#endif\n",
      "const char *t = __TIME__;\n",
      "const char *t = __TIMESTAMP__;\n",
      "const char *d = __DATE__;\n"};
  setenv("T4A_LOG", "info", 1);
  open_backend();
  char source[512];
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
    ck_assert_msg(compiles_of_two(kernel, options[i]) == 2, "option %s was cached", options[i]);
  for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
    snprintf(source, sizeof source, "%s%s", sources[i], kernel);
    ck_assert_msg(compiles_of_two(source, NULL) == 2, "cached: %s", sources[i]);
  }
  ck_assert_uint_eq(stats().disk_entries, 0);
  ck_assert_uint_eq(stats().memory_entries, 0);
  capture_begin();
  ck_assert_int_eq(compile_named(kernel, "k.cu", "-I/usr/include"), T4A_OK);
  const char *log = capture_end();
  ASSERT_LOG(log, "'k.cu' is compiled without the caches: an option names include directories");
}
END_TEST

START_TEST(self_contained_sources_and_builtin_headers_are_cached) {
  static const char *const sources[] = {
      "", "#include <__nv_nvrtc_builtin_header.h>\n", /* NVRTC's own: its version is in the key */
      "  #  include <cuda/std/cstdint>  \r\n",
      "/* input */ // import_table: not a word of its own\n"};
  open_backend();
  char source[512];
  for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
    snprintf(source, sizeof source, "%s%s", sources[i], kernel);
    ck_assert_msg(compiles_of_two(source, "-default-device") == 1, "not cached: %s", sources[i]);
  }
  ck_assert_uint_eq(stats().disk_entries, sizeof sources / sizeof sources[0]);
}
END_TEST

START_TEST(the_name_is_part_of_the_key) {
  open_backend(); /* the name is __FILE__ and appears in diagnostics and line info */
  t4a_compile_cache_stats before = stats();
  ck_assert_int_eq(compile_named(kernel, "a.cu", NULL), T4A_OK);
  ck_assert_int_eq(compile_named(kernel, "b.cu", NULL), T4A_OK);
  t4a_compile_cache_stats after = stats();
  ck_assert_uint_eq(after.misses - before.misses, 2);
  ck_assert_uint_eq(after.memory_hits, before.memory_hits);
  ck_assert_uint_eq(after.disk_entries, 2);
}
END_TEST

int main(void) {
  Suite *s = suite_create("diskcache");
  TCase *tc = tcase_create("diskcache");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, relative_cache_dir_is_refused);
  tcase_add_test(tc, over_long_cache_dir_is_refused_not_truncated);
  tcase_add_test(tc, default_dirs_not_owned_by_us_are_left_alone);
  tcase_add_test(tc, entries_of_other_users_or_writable_by_others_are_not_believed);
  tcase_add_test(tc, oversized_entries_are_rejected_unread);
  tcase_add_test(tc, a_fifo_at_an_entry_does_not_hang);
  tcase_add_test(tc, a_directory_at_an_entry_is_removed_or_missed_once_per_lookup);
  tcase_add_test(tc, eviction_orders_by_nanoseconds);
  tcase_add_test(tc, orphaned_temporary_files_are_removed);
  tcase_add_test(tc, compiles_that_can_read_files_are_not_cached);
  tcase_add_test(tc, self_contained_sources_and_builtin_headers_are_cached);
  tcase_add_test(tc, the_name_is_part_of_the_key);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
