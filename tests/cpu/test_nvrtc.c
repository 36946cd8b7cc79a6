/* tests/cpu/test_nvrtc.c -- the real NVRTC, loaded by the plugin without a
 * GPU or driver. Skipped, with the reason, where libnvrtc is absent. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"

static t4a_compiler_info info;

static int probe(void) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b) != T4A_OK)
    return -1;
  t = t4a_gpu_backend_table(b);
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  int rc = t->compiler_info(&info);
  t4a_gpu_close(b);
  return rc;
}

START_TEST(nvrtc_loads_and_reports_its_version) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = t4a_test_open_cuda(&t);
  t4a_compiler_info c = {.struct_size = sizeof c};
  ck_assert_int_eq(t->compiler_info(&c), T4A_OK);
  ck_assert_int_eq(c.status, T4A_OK);
  ck_assert(c.version_major > 11 || (c.version_major == 11 && c.version_minor >= 2));
  ck_assert_str_ne(c.path, "");
  ck_assert_str_eq(c.reason, "");
  printf("NVRTC %d.%d from %s\n", c.version_major, c.version_minor, c.path);
  t4a_gpu_close(b);
}
END_TEST

/* ---- included files and the compile caches ---------------------------------- */

static char self_path[4096];

/* Compiles `#include "k.h"` to PTX: 1 when the kernel k.h names came out,
 * 0 when another did, -1 on an error (printed). with_i: k.h is found
 * through -I<dir>; else the source is named <dir>/k.cu and NVRTC finds
 * k.h next to it. No ck_assert: the child process runs this too. */
static int compile_sees(const t4a_gpu_backend_v1 *t, const char *dir, bool with_i,
                        const char *want) {
  static const char source[] = "#include \"k.h\"\n"
                               "extern \"C\" __global__ void T4A_KERNEL_NAME() {}\n";
  char inc[4200], name[4200];
  snprintf(inc, sizeof inc, "-I%s", dir);
  snprintf(name, sizeof name, "%s/k.cu", dir);
  const char *opts[] = {"-arch=compute_90", inc};
  t4a_compile_options o = {.struct_size = sizeof o, .flags = T4A_COMPILE_PTX, .source = source};
  o.name = with_i ? "k.cu" : name;
  o.options = opts;
  o.option_count = with_i ? 2 : 1;
  o.device_ordinal = -1;
  t4a_artifact a = {0};
  const void *data = NULL;
  uint64_t size;
  int rc = t->artifact_compile(&o, &a);
  if (rc == T4A_OK)
    rc = t->artifact_data(a, NULL, &data, &size);
  if (rc != T4A_OK) {
    printf("compile failed: %s\n", t4a_test_backend_error(t));
    if (a.bits)
      t->artifact_release(a);
    return -1;
  }
  char entry[128];
  snprintf(entry, sizeof entry, ".entry %s(", want);
  int seen = strstr(data, entry) != NULL;
  t->artifact_release(a);
  return seen;
}

static void write_header(const char *dir, const char *kernel_name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/k.h", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#define T4A_KERNEL_NAME %s\n", kernel_name);
  ck_assert_int_eq(fclose(f), 0);
}

/* The next process: exit 0 when it compiled what the header says now. */
static int child(const char *dir, const char *with_i, const char *want) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = NULL;
  if (t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b) != T4A_OK)
    return 2;
  t = t4a_gpu_backend_table(b);
  int seen = compile_sees(t, dir, strcmp(with_i, "1") == 0, want);
  t4a_gpu_close(b);
  return seen == 1 ? 0 : seen == 0 ? 1 : 3;
}

static int run_child(const char *dir, bool with_i, const char *want) {
  pid_t pid = fork();
  if (pid == 0) {
    execl(self_path, self_path, "--child", dir, with_i ? "1" : "0", want, (char *)NULL);
    _exit(99);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

/* The keys cover the request, not the files NVRTC reads: a change to an
 * included header must still be seen, in this process (memory cache) and
 * in the next one (disk cache). Both ways NVRTC finds "k.h": -I, and the
 * directory of the source's name. */
START_TEST(a_changed_header_is_seen_in_this_and_the_next_process) {
  char root[64] = "/tmp/t4a-inc-XXXXXX", dir[128], cache[128];
  ck_assert_ptr_nonnull(mkdtemp(root));
  snprintf(dir, sizeof dir, "%s/inc", root);
  snprintf(cache, sizeof cache, "%s/cache", root);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  setenv("T4A_CACHE_DIR", cache, 1);
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = t4a_test_open_cuda(&t);
  for (int with_i = 1; with_i >= 0; with_i--) {
    const char *how = with_i ? "-I" : "the source's directory";
    write_header(dir, "t4a_first");
    ck_assert_msg(compile_sees(t, dir, with_i, "t4a_first") == 1, "%s: the header is not used",
                  how);
    write_header(dir, "t4a_second");
    int rc = run_child(dir, with_i, "t4a_second");
    ck_assert_msg(rc != 1, "%s: the next process got the old header's code", how);
    ck_assert_msg(rc == 0, "%s: the next process failed (exit %d)", how, rc);
    write_header(dir, "t4a_third");
    ck_assert_msg(compile_sees(t, dir, with_i, "t4a_third") == 1,
                  "%s: this process got the old header's code", how);
  }
  t4a_compile_cache_stats s = {.struct_size = sizeof s};
  ck_assert_int_eq(t->compile_cache_stats(&s), T4A_OK);
  ck_assert_uint_eq(s.disk_entries, 0);
  t4a_gpu_close(b);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(int argc, char **argv) {
  ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  self_path[n > 0 ? n : 0] = '\0';
  if (argc == 5 && strcmp(argv[1], "--child") == 0)
    return child(argv[2], argv[3], argv[4]);
  if (probe() != T4A_OK || info.status != T4A_OK) {
    printf("SKIP: NVRTC unavailable here: %s\n", info.reason);
    return T4A_TEST_SKIP;
  }
  Suite *s = suite_create("nvrtc");
  TCase *tc = tcase_create("nvrtc");
  tcase_add_test(tc, nvrtc_loads_and_reports_its_version);
  tcase_add_test(tc, a_changed_header_is_seen_in_this_and_the_next_process);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
