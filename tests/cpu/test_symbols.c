/* tests/cpu/test_symbols.c -- what the shared objects export and need: the
 * plugins (cuda, host) export only their entry symbol, the loader only t4a_gpu_* names,
 * and neither links libcuda or libnvrtc (DT_NEEDED). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

static const char *readelf(void) {
  const char *r = getenv("T4A_TEST_READELF");
  return r && *r ? r : NULL;
}

/* Runs `readelf <args> <file>` and returns its output (malloc'd). */
static char *run_readelf(const char *args, const char *file) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s '%s'", readelf(), args, file);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t cap = 1 << 16, n = 0;
  char *out = malloc(cap);
  size_t r;
  while ((r = fread(out + n, 1, cap - n - 1, p)) > 0) {
    n += r;
    if (n + 1 == cap) {
      char *bigger = realloc(out, cap *= 2);
      ck_assert_ptr_nonnull(bigger);
      out = bigger;
    }
  }
  out[n] = '\0';
  ck_assert_int_eq(pclose(p), 0);
  return out;
}

/* Defined, exported (GLOBAL/WEAK, DEFAULT visibility) function or object
 * symbols of a file: calls fn for each name. */
static int each_export(const char *file, int (*fn)(const char *name)) {
  char *out = run_readelf("-W --dyn-syms", file);
  int count = 0;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    char num[32], value[64], size[32], type[32], bind[32], vis[32], ndx[32], name[512];
    if (sscanf(line, "%31s %63s %31s %31s %31s %31s %31s %511s", num, value, size, type, bind, vis,
               ndx, name) != 8)
      continue;
    if (strcmp(ndx, "UND") == 0 || strcmp(ndx, "ABS") == 0 || strcmp(vis, "DEFAULT") != 0 ||
        (strcmp(bind, "GLOBAL") != 0 && strcmp(bind, "WEAK") != 0) ||
        (strcmp(type, "FUNC") != 0 && strcmp(type, "OBJECT") != 0))
      continue;
    char *at = strchr(name, '@');
    if (at)
      *at = '\0';
    count += fn(name);
  }
  free(out);
  return count;
}

static int is_entry(const char *name) {
  ck_assert_msg(strcmp(name, "t4a_gpu_backend_v1_entry") == 0,
                "the plugin exports '%s' besides its entry symbol", name);
  return 1;
}

static int is_loader_api(const char *name) {
  ck_assert_msg(strncmp(name, "t4a_gpu_", 8) == 0, "the loader exports '%s'", name);
  return 1;
}

static void assert_no_cuda_needed(const char *file) {
  char *out = run_readelf("-W -d", file);
  ck_assert_msg(!strstr(out, "libcuda"), "%s needs libcuda", file);
  ck_assert_msg(!strstr(out, "libnvrtc"), "%s needs libnvrtc", file);
  ck_assert_msg(!strstr(out, "libcudart"), "%s needs libcudart", file);
  free(out);
}

START_TEST(plugin_exports_only_its_entry) {
  ck_assert_int_eq(each_export(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), is_entry), 1);
}
END_TEST

/* The host backend likewise (it links backend-core/ and common/ hidden too). */
START_TEST(host_plugin_exports_only_its_entry) {
  ck_assert_int_eq(each_export(t4a_test_build_path("plugin-host/.libs/libt4a_host.so"), is_entry),
                   1);
}
END_TEST

START_TEST(loader_exports_only_its_api) {
  int n = each_export(t4a_test_build_path("loader/.libs/libt4a_gpu.so"), is_loader_api);
  ck_assert_int_ge(n, 12);
}
END_TEST

START_TEST(nothing_links_cuda) {
  assert_no_cuda_needed(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN));
  assert_no_cuda_needed(t4a_test_build_path("loader/.libs/libt4a_gpu.so"));
  assert_no_cuda_needed(t4a_test_build_path("plugin-host/.libs/libt4a_host.so"));
}
END_TEST

int main(void) {
  if (!readelf()) {
    printf("SKIP: readelf not found at configure time (install binutils)\n");
    return T4A_TEST_SKIP;
  }
  Suite *s = suite_create("symbols");
  TCase *tc = tcase_create("symbols");
  tcase_add_test(tc, plugin_exports_only_its_entry);
  tcase_add_test(tc, host_plugin_exports_only_its_entry);
  tcase_add_test(tc, loader_exports_only_its_api);
  tcase_add_test(tc, nothing_links_cuda);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
