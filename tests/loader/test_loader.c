/* tests/loader/test_loader.c -- libt4a_gpu against fake backend plugins. */
#include "config.h"

#include "t4a-paths.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

#define FAKES "tests/loader/.libs"

static const char *fake(const char *name) {
  static _Thread_local char path[4096];
  snprintf(path, sizeof path, "%s/libt4a_%s.so", t4a_test_build_path(FAKES), name);
  return path;
}

static void use_fakes_dir(void) { setenv("T4A_GPU_BACKEND_PATH", t4a_test_build_path(FAKES), 1); }

/* Opens by path and asserts the status; returns the backend (or NULL). */
static t4a_gpu_backend *open_expect(const char *name, int expect) {
  t4a_gpu_backend *b = (t4a_gpu_backend *)0x1;
  int rc = t4a_gpu_open_path(fake(name), &b);
  ck_assert_msg(rc == expect, "%s: got %s, want %s (%s)", name, t4a_status_name(rc),
                t4a_status_name(expect), t4a_gpu_last_error());
  if (rc != T4A_OK)
    ck_assert_ptr_null(b);
  return b;
}

static int init_count(const t4a_gpu_backend_v1 *t) {
  t4a_backend_info i;
  memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  ck_assert_int_eq(t->get_info(&i), T4A_OK);
  return i.device_count;
}

START_TEST(good_plugin_opens_and_validates) {
  t4a_gpu_backend *b = open_expect("fakegood", T4A_OK);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  ck_assert_ptr_nonnull(t);
  ck_assert_str_eq(t->name, "fakegood");
  ck_assert_uint_eq(t->struct_size, sizeof(t4a_gpu_backend_v1));
  uint16_t major = 0, minor = 9;
  ck_assert_int_eq(t4a_gpu_backend_abi(b, &major, &minor), T4A_OK);
  ck_assert_uint_eq(major, 1);
  ck_assert_uint_eq(minor, T4A_GPU_BACKEND_ABI_MINOR);
  ck_assert_int_eq(t->init(), T4A_OK);
  int32_t n = 0;
  ck_assert_int_eq(t->device_count(&n), T4A_OK);
  ck_assert_int_eq(n, 3);
  char real[PATH_MAX];
  ck_assert_ptr_nonnull(realpath(fake("fakegood"), real));
  ck_assert_str_eq(t4a_gpu_backend_path(b), real);
  ck_assert_ptr_null(t->launch); /* unimplemented slots read as NULL */
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

START_TEST(wrong_major_is_refused) {
  open_expect("fakemajor", T4A_EABI);
  const char *e = t4a_gpu_last_error();
  ck_assert_ptr_nonnull(strstr(e, "libt4a_fakemajor.so"));
  char plugin[32], loader[32];
  snprintf(plugin, sizeof plugin, "ABI 2.%d", T4A_GPU_BACKEND_ABI_MINOR); /* the fake's minor */
  snprintf(loader, sizeof loader, "this loader 1.%d", T4A_GPU_BACKEND_ABI_MINOR);
  ck_assert_msg(strstr(e, plugin) && strstr(e, loader), "detail: %s", e);
}
END_TEST

START_TEST(newer_minor_with_bigger_table_is_accepted) {
  t4a_gpu_backend *b = open_expect("fakenewer", T4A_OK);
  uint16_t major = 0, minor = 0;
  ck_assert_int_eq(t4a_gpu_backend_abi(b, &major, &minor), T4A_OK);
  ck_assert_uint_eq(minor, 7);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  /* normalised to what this loader knows */
  ck_assert_uint_eq(t->struct_size, sizeof(t4a_gpu_backend_v1));
  ck_assert_int_eq(t->init(), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

START_TEST(older_minor_with_smaller_table_reads_null_beyond_it) {
  t4a_gpu_backend *b = open_expect("fakeolder", T4A_OK);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  ck_assert_ptr_nonnull(t);
  /* cppcheck-suppress nullPointerRedundantCheck ; HAS() below tests NULL by design */
  ck_assert_uint_eq(t->struct_size, T4A_SIZE_THROUGH(t4a_gpu_backend_v1, device_info));
  ck_assert(T4A_GPU_BACKEND_V1_HAS(t, device_info));
  ck_assert(!T4A_GPU_BACKEND_V1_HAS(t, compiler_info));
  /* the plugin's memory holds junk past its struct_size; the copy must not */
  ck_assert_ptr_null(t->compiler_info);
  ck_assert_ptr_null(t->launch);
  ck_assert_int_eq(t->init(), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

START_TEST(missing_entry_symbol_is_refused) {
  open_expect("fakenoentry", T4A_EABI);
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "t4a_gpu_backend_v1_entry"));
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "libt4a_fakenoentry.so"));
}
END_TEST

START_TEST(null_required_slot_is_refused) {
  open_expect("fakenullslot", T4A_EABI);
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "'init'"));
}
END_TEST

START_TEST(table_below_required_size_is_refused) {
  open_expect("faketiny", T4A_EABI);
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "24-byte table"));
}
END_TEST

START_TEST(init_failure_is_reported_and_backend_still_closes) {
  t4a_gpu_backend *b = open_expect("fakeinitfail", T4A_OK);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  ck_assert_int_eq(t->init(), T4A_ENODEVICE);
  ck_assert_str_eq(t4a_test_backend_error(t), "fake: no device; plug one in");
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  b = open_expect("fakeinitfail", T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

START_TEST(not_a_shared_object_is_refused) {
  char path[] = "/tmp/t4a-loader-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "not an ELF file", 15), 15);
  close(fd);
  t4a_gpu_backend *b = NULL;
  ck_assert_int_eq(t4a_gpu_open_path(path, &b), T4A_ENOBACKEND);
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), path));
  unlink(path);
  ck_assert_int_eq(t4a_gpu_open_path("/nonexistent/libt4a_x.so", &b), T4A_ENOBACKEND);
  ck_assert_int_eq(t4a_gpu_open_path("", &b), T4A_EINVAL);
  ck_assert_int_eq(t4a_gpu_open_path(NULL, &b), T4A_EINVAL);
  ck_assert_int_eq(t4a_gpu_open_path(fake("fakegood"), NULL), T4A_EINVAL);
}
END_TEST

START_TEST(open_by_name_searches_the_path) {
  use_fakes_dir();
  t4a_gpu_backend *b = NULL;
  ck_assert_int_eq(t4a_gpu_open("fakeother", &b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_backend_table(b)->name, "fakeother");
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  ck_assert_int_eq(t4a_gpu_open("nosuch", &b), T4A_ENOBACKEND);
  ck_assert_ptr_null(b);
  const char *e = t4a_gpu_last_error();
  ck_assert_ptr_nonnull(strstr(e, "libt4a_nosuch.so"));
  ck_assert_ptr_nonnull(strstr(e, t4a_test_build_path(FAKES)));
  ck_assert_int_eq(t4a_gpu_open("Bad Name", &b), T4A_EINVAL);
  ck_assert_int_eq(t4a_gpu_open("x23456789012345678901234567890123", &b), T4A_EINVAL);
}
END_TEST

START_TEST(default_comes_from_environment_then_cuda) {
  use_fakes_dir();
  t4a_gpu_backend *b = NULL;
  setenv("T4A_GPU_BACKEND", "fakeother", 1);
  ck_assert_int_eq(t4a_gpu_open(NULL, &b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_backend_table(b)->name, "fakeother");
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  setenv("T4A_GPU_BACKEND", fake("fakegood"), 1); /* a path works too */
  ck_assert_int_eq(t4a_gpu_open("", &b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_backend_table(b)->name, "fakegood");
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  unsetenv("T4A_GPU_BACKEND");
  ck_assert_int_eq(t4a_gpu_open(NULL, &b), T4A_ENOBACKEND); /* "cuda" is not in the fakes */
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "libt4a_cuda.so"));
  /* an explicit name ignores T4A_GPU_BACKEND */
  setenv("T4A_GPU_BACKEND", "fakeother", 1);
  ck_assert_int_eq(t4a_gpu_open("fakegood", &b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_backend_table(b)->name, "fakegood");
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

/* Makes dir/libt4a_<name>.so a link to the fake plugin `target`. */
static void link_plugin(const char *dir, const char *name, const char *target) {
  char path[4096];
  snprintf(path, sizeof path, "%s/libt4a_%s.so", dir, name);
  ck_assert_int_eq(symlink(fake(target), path), 0);
}

static void remove_dir(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

START_TEST(first_directory_wins_and_relative_entries_are_ignored) {
  char a[] = "/tmp/t4a-a-XXXXXX", b_[] = "/tmp/t4a-b-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(a));
  ck_assert_ptr_nonnull(mkdtemp(b_));
  link_plugin(a, "x", "fakegood");
  link_plugin(b_, "x", "fakeother");
  link_plugin(b_, "y", "fakeother");
  char path[9000];
  snprintf(path, sizeof path, "%s:%s", a, b_);
  setenv("T4A_GPU_BACKEND_PATH", path, 1);
  t4a_gpu_backend *b = NULL;
  ck_assert_int_eq(t4a_gpu_open("x", &b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_backend_table(b)->name, "fakegood");
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  ck_assert_int_eq(t4a_gpu_open("y", &b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_backend_table(b)->name, "fakeother");
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_search_path(), path);

  t4a_gpu_backend_entry list[4];
  size_t n = 0;
  ck_assert_int_eq(t4a_gpu_list(list, 4, &n), T4A_OK);
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(list[0].name, "x");
  ck_assert_ptr_nonnull(strstr(list[0].path, a)); /* first directory wins */
  ck_assert_str_eq(list[1].name, "y");

  /* the current directory is never searched implicitly */
  ck_assert_int_eq(chdir(a), 0);
  setenv("T4A_GPU_BACKEND_PATH", ".:relative/dir", 1);
  ck_assert_int_eq(t4a_gpu_open("x", &b), T4A_ENOBACKEND);
  /* and the message says why, instead of "no libt4a_x.so in '.:relative/dir'" */
  ck_assert_msg(strstr(t4a_gpu_last_error(), "relative entries are ignored"), "%s",
                t4a_gpu_last_error());
  setenv("T4A_GPU_BACKEND_PATH", "relative/dir:/nonexistent", 1);
  ck_assert_int_eq(t4a_gpu_open("x", &b), T4A_ENOBACKEND);
  ck_assert_msg(strstr(t4a_gpu_last_error(), "relative entries are ignored"), "%s",
                t4a_gpu_last_error());
  setenv("T4A_GPU_BACKEND_PATH", ".:relative/dir", 1);
  ck_assert_int_eq(t4a_gpu_list(list, 4, &n), T4A_OK);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(chdir("/"), 0); /* leave the directory before removing it */
  remove_dir(a);
  remove_dir(b_);
}
END_TEST

/* Finding 7 of issue #19: the value was cut at 4095 bytes, so padding followed by
 * "<dir>_trusted_plugins" searched <dir>, a directory the value never named. */
START_TEST(overlong_search_path_is_refused_not_truncated) {
  char dir[] = "/tmp/t4a-hx-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  link_plugin(dir, "x", "fakegood");
  static char value[8192];
  size_t pad = 4095 - 1 - strlen(dir); /* what a 4095-byte cut keeps: padding ":" dir */
  memset(value, '/', pad);
  memcpy(value, "/nonexistent", 12);
  snprintf(value + pad, sizeof value - pad, ":%s_trusted_plugins", dir);
  setenv("T4A_GPU_BACKEND_PATH", value, 1);
  t4a_gpu_backend *b = (t4a_gpu_backend *)0x1;
  int rc = t4a_gpu_open("x", &b);
  ck_assert_msg(rc == T4A_EINVAL, "got %s (%s)", t4a_status_name(rc), t4a_gpu_last_error());
  ck_assert_ptr_null(b);
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "T4A_GPU_BACKEND_PATH is"));
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "not truncated"));
  ck_assert_str_eq(t4a_gpu_search_path(), ""); /* nothing is searched */
  size_t n = 9;
  ck_assert_int_eq(t4a_gpu_list(NULL, 0, &n), T4A_EINVAL);

  /* a value that fits, with an entry too long to hold a plugin's file name */
  memset(value, 'a', 4060);
  value[0] = '/';
  value[4060] = '\0';
  setenv("T4A_GPU_BACKEND_PATH", value, 1);
  rc = t4a_gpu_open("x", &b);
  ck_assert_msg(rc == T4A_EINVAL, "got %s (%s)", t4a_status_name(rc), t4a_gpu_last_error());
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "T4A_GPU_BACKEND_PATH entry"));
  ck_assert_int_eq(t4a_gpu_list(NULL, 0, &n), T4A_EINVAL);

  /* an explicit path longer than any the loader handles */
  value[0] = '/';
  memset(value + 1, 'a', 5000);
  value[5001] = '\0';
  ck_assert_int_eq(t4a_gpu_open_path(value, &b), T4A_EINVAL);
  ck_assert_ptr_nonnull(strstr(t4a_gpu_last_error(), "5001 bytes"));
  remove_dir(dir);
}
END_TEST

/* Finding 8 of issue #19: T4A_GPU_BACKEND=./libt4a_x.so loaded from the
 * current directory. A relative path from the environment is refused; one the
 * program passes itself is its explicit choice, resolved like open(2) does. */
START_TEST(relative_backend_from_environment_is_refused) {
  char dir[] = "/tmp/t4a-r-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  link_plugin(dir, "x", "fakegood");
  ck_assert_int_eq(chdir(dir), 0);
  t4a_gpu_backend *b = (t4a_gpu_backend *)0x1;
  char up[64]; /* the same file, reached from the current directory's parent */
  snprintf(up, sizeof up, "..%s/libt4a_x.so", strrchr(dir, '/'));
  const char *relative[] = {"./libt4a_x.so", up, "sub/libt4a_x.so"};
  for (int i = 0; i < 3; i++) {
    setenv("T4A_GPU_BACKEND", relative[i], 1);
    int rc = t4a_gpu_open(NULL, &b);
    ck_assert_msg(rc == T4A_EINVAL, "%s: got %s (%s)", relative[i], t4a_status_name(rc),
                  t4a_gpu_last_error());
    ck_assert_ptr_null(b);
    const char *e = t4a_gpu_last_error();
    ck_assert_ptr_nonnull(strstr(e, relative[i]));
    ck_assert_ptr_nonnull(strstr(e, "relative path"));
    ck_assert_ptr_nonnull(strstr(e, "absolute path"));
  }
  unsetenv("T4A_GPU_BACKEND");
  /* explicit relative paths: resolved against the current directory, reported absolute */
  char real[PATH_MAX];
  ck_assert_ptr_nonnull(realpath(fake("fakegood"), real));
  ck_assert_int_eq(t4a_gpu_open_path("./libt4a_x.so", &b), T4A_OK);
  ck_assert_str_eq(t4a_gpu_backend_path(b), real);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  ck_assert_int_eq(t4a_gpu_open("./libt4a_x.so", &b), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  ck_assert_int_eq(chdir("/"), 0);
  remove_dir(dir);
}
END_TEST

START_TEST(list_is_sorted_and_counts_beyond_capacity) {
  use_fakes_dir();
  size_t n = 0;
  ck_assert_int_eq(t4a_gpu_list(NULL, 0, &n), T4A_OK);
  ck_assert_uint_ge(n, 9);
  t4a_gpu_backend_entry *list = calloc(n, sizeof *list);
  size_t m = 0;
  ck_assert_int_eq(t4a_gpu_list(list, n, &m), T4A_OK);
  ck_assert_uint_eq(m, n);
  for (size_t i = 1; i < n; i++)
    ck_assert_int_lt(strcmp(list[i - 1].name, list[i].name), 0);
  int found = 0;
  for (size_t i = 0; i < n; i++)
    found += strcmp(list[i].name, "fakegood") == 0 || strcmp(list[i].name, "fakeother") == 0;
  ck_assert_int_eq(found, 2);
  free(list);
  ck_assert_int_eq(t4a_gpu_list(NULL, 1, &n), T4A_EINVAL);
  ck_assert_int_eq(t4a_gpu_list(NULL, 0, NULL), T4A_EINVAL);
}
END_TEST

START_TEST(same_plugin_by_two_paths_is_opened_once) {
  char dir[] = "/tmp/t4a-l-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  link_plugin(dir, "alias", "fakegood");
  char alias[4200];
  snprintf(alias, sizeof alias, "%s/libt4a_alias.so", dir);
  t4a_gpu_backend *b1 = NULL, *b2 = NULL;
  ck_assert_int_eq(t4a_gpu_open_path(fake("fakegood"), &b1), T4A_OK);
  ck_assert_int_eq(t4a_gpu_open_path(alias, &b2), T4A_OK);
  ck_assert_ptr_eq(b1, b2);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b1);
  ck_assert_int_eq(t->init(), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b1), T4A_OK);
  /* still open through the second reference: same load, same state */
  ck_assert_int_eq(t->init(), T4A_OK);
  ck_assert_int_eq(init_count(t), 2);
  ck_assert_int_eq(t4a_gpu_close(b2), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b2), T4A_EHANDLE); /* one close too many */
  ck_assert_int_eq(t4a_gpu_close(NULL), T4A_EINVAL);
  remove_dir(dir);
}
END_TEST

START_TEST(last_close_unloads_and_reopen_reloads) {
  t4a_gpu_backend *b = open_expect("fakegood", T4A_OK);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  t->init();
  t->init();
  ck_assert_int_eq(init_count(t), 2);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  b = open_expect("fakegood", T4A_OK);
  t = t4a_gpu_backend_table(b);
  t->init();
  ck_assert_int_eq(init_count(t), 1); /* a fresh load: static state reset */
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

START_TEST(backends_swap_while_running) {
  const char *order[] = {"fakegood", "fakeother", "fakegood", "fakeother"};
  for (int i = 0; i < 4; i++) {
    t4a_gpu_backend *b = open_expect(order[i], T4A_OK);
    ck_assert_str_eq(t4a_gpu_backend_table(b)->name, order[i]);
    ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
  }
  /* and two at once */
  t4a_gpu_backend *g = open_expect("fakegood", T4A_OK);
  t4a_gpu_backend *o = open_expect("fakeother", T4A_OK);
  ck_assert_ptr_ne(g, o);
  ck_assert_str_eq(t4a_gpu_backend_table(g)->name, "fakegood");
  ck_assert_str_eq(t4a_gpu_backend_table(o)->name, "fakeother");
  ck_assert_int_eq(t4a_gpu_close(g), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(o), T4A_OK);
}
END_TEST

static void *churn(void *arg) {
  const char *name = arg;
  char path[4096];
  snprintf(path, sizeof path, "%s", fake(name));
  for (int i = 0; i < 500; i++) {
    t4a_gpu_backend *b = NULL;
    if (t4a_gpu_open_path(path, &b) != T4A_OK)
      return (void *)1;
    const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
    if (strcmp(t->name, name) != 0 || t->init() != T4A_OK)
      return (void *)2;
    if (t4a_gpu_close(b) != T4A_OK)
      return (void *)3;
  }
  return NULL;
}

START_TEST(threads_open_and_close_concurrently) {
  pthread_t th[4];
  static char names[4][16] = {"fakegood", "fakegood", "fakeother", "fakeother"};
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, churn, names[i]), 0);
  for (int i = 0; i < 4; i++) {
    void *r = (void *)9;
    pthread_join(th[i], &r);
    ck_assert_ptr_null(r);
  }
  /* nothing left open: a new open is a fresh load */
  t4a_gpu_backend *b = open_expect("fakegood", T4A_OK);
  t4a_gpu_backend_table(b)->init();
  ck_assert_int_eq(init_count(t4a_gpu_backend_table(b)), 1);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

/* Finding 9 of issue #19: the registry lock was held across dlopen and the
 * entry point, so a plugin calling back into the loader deadlocked. The fake's
 * constructor opens another backend; its entry point opens the plugin itself
 * again. Before the fix this hung (hence the "reentry" tcase's short timeout). */
START_TEST(plugin_may_call_back_into_the_loader) {
  use_fakes_dir();
  for (int round = 0; round < 2; round++) { /* the second is a fresh load too */
    t4a_gpu_backend *b = open_expect("fakereenter", T4A_OK);
    t4a_backend_info i;
    memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    ck_assert_int_eq(t4a_gpu_backend_table(b)->get_info(&i), T4A_OK);
    ck_assert_str_eq(i.driver_path, "ctor=0 entry=0"); /* both calls succeeded */
    ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
    ck_assert_int_eq(t4a_gpu_close(b), T4A_EHANDLE); /* the nested open was balanced */
  }
  /* and fakegood, opened and closed by the constructor, was unloaded */
  t4a_gpu_backend *g = open_expect("fakegood", T4A_OK);
  t4a_gpu_backend_table(g)->init();
  ck_assert_int_eq(init_count(t4a_gpu_backend_table(g)), 1);
  ck_assert_int_eq(t4a_gpu_close(g), T4A_OK);
}
END_TEST

/* The same, while other threads open and close the backends it opens. */
START_TEST(reentering_plugins_open_and_close_concurrently) {
  use_fakes_dir();
  pthread_t th[4];
  static char names[4][16] = {"fakereenter", "fakereenter", "fakegood", "fakeother"};
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, churn, names[i]), 0);
  for (int i = 0; i < 4; i++) {
    void *r = (void *)9;
    pthread_join(th[i], &r);
    ck_assert_ptr_null(r);
  }
  t4a_gpu_backend *b = open_expect("fakereenter", T4A_OK);
  t4a_gpu_backend_table(b)->init();
  ck_assert_int_eq(init_count(t4a_gpu_backend_table(b)), 1); /* nothing was left open */
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

START_TEST(versions_and_status_names) {
  int major = -1, minor = -1, patch = -1;
  t4a_gpu_loader_version(&major, &minor, &patch);
  ck_assert_int_eq(major, T4A_LOADER_VERSION_MAJOR);
  ck_assert_int_eq(minor, T4A_LOADER_VERSION_MINOR);
  ck_assert_int_eq(patch, T4A_LOADER_VERSION_PATCH);
  t4a_gpu_loader_abi(&major, &minor);
  ck_assert_int_eq(major, T4A_GPU_BACKEND_ABI_MAJOR);
  ck_assert_int_eq(minor, T4A_GPU_BACKEND_ABI_MINOR);
  ck_assert_str_eq(t4a_gpu_status_name(T4A_EINVAL), "T4A_EINVAL");
  ck_assert_str_eq(t4a_gpu_status_name(T4A_ENOBACKEND), "T4A_ENOBACKEND");
  ck_assert_str_eq(t4a_gpu_status_message(T4A_EDEVICEFAULT), "device fault (sticky)");
  ck_assert_str_eq(t4a_gpu_status_name(12345), "T4A_UNKNOWN");
  ck_assert_str_eq(t4a_gpu_plugin_dir(), T4A_PLUGIN_DIR);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("loader");
  TCase *tc = tcase_create("loader");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, good_plugin_opens_and_validates);
  tcase_add_test(tc, wrong_major_is_refused);
  tcase_add_test(tc, newer_minor_with_bigger_table_is_accepted);
  tcase_add_test(tc, older_minor_with_smaller_table_reads_null_beyond_it);
  tcase_add_test(tc, missing_entry_symbol_is_refused);
  tcase_add_test(tc, null_required_slot_is_refused);
  tcase_add_test(tc, table_below_required_size_is_refused);
  tcase_add_test(tc, init_failure_is_reported_and_backend_still_closes);
  tcase_add_test(tc, not_a_shared_object_is_refused);
  tcase_add_test(tc, open_by_name_searches_the_path);
  tcase_add_test(tc, default_comes_from_environment_then_cuda);
  tcase_add_test(tc, first_directory_wins_and_relative_entries_are_ignored);
  tcase_add_test(tc, overlong_search_path_is_refused_not_truncated);
  tcase_add_test(tc, relative_backend_from_environment_is_refused);
  tcase_add_test(tc, list_is_sorted_and_counts_beyond_capacity);
  tcase_add_test(tc, same_plugin_by_two_paths_is_opened_once);
  tcase_add_test(tc, last_close_unloads_and_reopen_reloads);
  tcase_add_test(tc, backends_swap_while_running);
  tcase_add_test(tc, threads_open_and_close_concurrently);
  tcase_add_test(tc, versions_and_status_names);
  suite_add_tcase(s, tc);
  TCase *re = tcase_create("reentry"); /* hung before the fix: fail by timeout */
  tcase_set_timeout(re, 20);
  tcase_add_test(re, plugin_may_call_back_into_the_loader);
  tcase_add_test(re, reentering_plugins_open_and_close_concurrently);
  suite_add_tcase(s, re);
  return s;
}

int main(void) { return t4a_test_run(suite()); }
