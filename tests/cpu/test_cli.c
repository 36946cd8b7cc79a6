/* tests/cpu/test_cli.c -- t4a-gpu info, selftest and bench: output and the
 * documented exit codes, with the fake driver (and fake NVRTC), with faults
 * injected, without a driver, and without a backend. */
#include "config.h"

#include "t4a-paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/testutil.h"

static char output[1 << 16];

/* Runs t4a-gpu with args; returns its exit status, output in `output`. */
static int run(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", t4a_test_build_path("tools/t4a-gpu"), args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(output, 1, sizeof output - 1, p);
  output[n] = '\0';
  int st = pclose(p);
  ck_assert(WIFEXITED(st));
  return WEXITSTATUS(st);
}

#define ASSERT_OUT(needle)                                                                         \
  ck_assert_msg(strstr(output, needle), "output lacks '%s':\n%s", needle, output)

START_TEST(info_lists_fake_devices) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  ck_assert_int_eq(run("info"), 0);
  ASSERT_OUT("backend:      cuda");
  ASSERT_OUT("driver:       CUDA 12.8");
  ASSERT_OUT("device 0:     Fake GPU 0");
  ASSERT_OUT("device 1:     Fake GPU 1");
  ASSERT_OUT("compute capability: 9.0");
  ASSERT_OUT("peer access");
  ASSERT_OUT("installed backends:");
  ck_assert_int_eq(run("info --json"), 0);
  ASSERT_OUT("\"status\":\"T4A_OK\"");
  ASSERT_OUT("\"name\":\"Fake GPU 1\"");
  ASSERT_OUT("\"peer_access\":[[true,true],[true,true]]");
}
END_TEST

START_TEST(info_without_driver_says_why) {
  setenv("T4A_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  ck_assert_int_eq(run("info"), 4);
  ASSERT_OUT("unusable (T4A_ENODRIVER)");
  ASSERT_OUT("install the NVIDIA driver");
  ASSERT_OUT("\ncheck:        nvidia-smi"); /* how to check the driver's installation */
  ASSERT_OUT("ldconfig -p | grep libcuda.so.1");
  ASSERT_OUT("\nor:           run on the CPU with the host backend: T4A_GPU_BACKEND=host");
  ck_assert_int_eq(run("--json info"), 4);
  ASSERT_OUT("\"status\":\"T4A_ENODRIVER\"");
  /* the compiler needs no driver: info says whether it is there (#12) */
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
  ck_assert_int_eq(run("info"), 4);
  ASSERT_OUT("NVRTC:        ");
  ck_assert_int_eq(run("info --json"), 4);
  ASSERT_OUT("\"compiler\":{\"available\":true");
  unsetenv("T4A_NVRTC_LIBRARY");
}
END_TEST

START_TEST(info_without_gpu_says_why) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("FAKE_CUDA_MODE", "nodevice", 1);
  ck_assert_int_eq(run("info"), 4);
  ASSERT_OUT("unusable (T4A_ENODEVICE)");
  ASSERT_OUT("\ncheck:        nvidia-smi lists the GPUs the driver sees");
  ASSERT_OUT("T4A_GPU_BACKEND=host");
}
END_TEST

START_TEST(info_without_backend_says_why) {
  setenv("T4A_GPU_BACKEND_PATH", "/nonexistent", 1);
  ck_assert_int_eq(run("info"), 3);
  ASSERT_OUT("backend:      unavailable: backend 'cuda' not found");
  ck_assert_int_eq(run("info --backend /nonexistent/libt4a_x.so"), 3);
}
END_TEST

START_TEST(usage_errors) {
  ck_assert_int_eq(run("frobnicate"), 2);
  ASSERT_OUT("unknown command");
  ck_assert_int_eq(run("info --bogus"), 2);
  ck_assert_int_eq(run("--help"), 0);
  ASSERT_OUT("usage: t4a-gpu info");
  ck_assert_int_eq(run("--version"), 0);
  ASSERT_OUT(PACKAGE_VERSION);
  /* #12: a missing value, an option the command does not take, help */
  ck_assert_int_eq(run("info --backend"), 2);
  ASSERT_OUT("--backend needs a value");
  ck_assert_int_eq(run("selftest --device"), 2);
  ASSERT_OUT("--device needs a value");
  ck_assert_int_eq(run("info --device 0"), 2);
  ASSERT_OUT("only selftest and conform take it");
  ck_assert_int_eq(run("bench --json"), 2);
  ck_assert_int_eq(run("help"), 0);
  ASSERT_OUT("usage: t4a-gpu info");
  ck_assert_int_eq(run("bench"), 0);
  ASSERT_OUT(T4A_DOC_DIR "/docs/performance.md"); /* installed with the documentation */
}
END_TEST

static void use_fakes(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
}

START_TEST(selftest_passes_on_every_fake_device) {
  use_fakes();
  ck_assert_int_eq(run("selftest"), 0);
  ASSERT_OUT("device 0: Fake GPU 0");
  ASSERT_OUT("device 0: passed (29 checks)");
  ASSERT_OUT("device 1: passed (29 checks)");
  ASSERT_OUT("ok    verify: 1048579 of 1048579 elements match the CPU");
  ASSERT_OUT("ok    runtime_destroy");
  ASSERT_OUT("selftest: passed");
  ck_assert_ptr_null(strstr(output, "FAIL"));
  ck_assert_int_eq(run("selftest --json --device 1"), 0);
  ASSERT_OUT("\"devices\":[{\"ordinal\":1,\"name\":\"Fake GPU 1\"");
  ASSERT_OUT("],\"passed\":true}],\"passed\":true}}\n");
  ck_assert_ptr_null(strstr(output, "\"ordinal\":0"));
}
END_TEST

START_TEST(selftest_reports_each_failure) {
  use_fakes();
  setenv("T4A_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
  ck_assert_int_eq(run("selftest --device 0"), 1);
  ASSERT_OUT("FAIL  artifact_compile: axpy, NVRTC -- T4A_ENOCOMPILER: NVRTC not found");
  ASSERT_OUT("ok    runtime_destroy"); /* what was made is still released */
  ASSERT_OUT("device 0: FAILED (1 of 14 checks)");
  ASSERT_OUT("selftest: FAILED");
  use_fakes();
  setenv("FAKE_CUDA_FAIL", "cuLaunchKernel:1:700", 1); /* the kernel faults */
  ck_assert_int_eq(run("selftest --json --device 0"), 1);
  ASSERT_OUT("{\"check\":\"launch\",\"status\":\"T4A_EDEVICEFAULT\"");
  ASSERT_OUT("\"passed\":false");
  unsetenv("FAKE_CUDA_FAIL");
}
END_TEST

START_TEST(selftest_exit_codes) {
  setenv("T4A_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  ck_assert_int_eq(run("selftest"), 4);
  ASSERT_OUT("selftest: not run: T4A_ENODRIVER");
  ck_assert_int_eq(run("selftest --json"), 4);
  ASSERT_OUT("\"status\":\"T4A_ENODRIVER\"");
  ASSERT_OUT("\"passed\":false}}\n");
  ck_assert_int_eq(run("selftest --backend /nonexistent/libt4a_x.so"), 3);
  ASSERT_OUT("T4A_ENOBACKEND");
  use_fakes();
  ck_assert_int_eq(run("selftest --device 2"), 2);
  ASSERT_OUT("there are 2 devices");
  ck_assert_int_eq(run("selftest --device x"), 2);
  ck_assert_int_eq(run("bench"), 0);
  ASSERT_OUT("make bench");
}
END_TEST

/* Finding 7 of issue #19: library paths from the environment longer than the
 * backend's fixed fields were reported cut short (a different file name). */
START_TEST(overlong_library_paths_are_refused_not_truncated) {
  static char longer[1024];
  /* the fake driver itself, named with 300 leading slashes (so a 255-byte cut names no file) */
  memset(longer, '/', 300);
  snprintf(longer + 300, sizeof longer - 300, "%s", t4a_test_build_path(T4A_TEST_FAKE_CUDA));
  use_fakes();
  setenv("T4A_CUDA_LIBRARY", longer, 1);
  ck_assert_int_eq(run("info"), 4);
  ASSERT_OUT("unusable (T4A_ENODRIVER): T4A_CUDA_LIBRARY is ");
  ASSERT_OUT("not truncated");
  memset(longer, '/', 300);
  snprintf(longer + 300, sizeof longer - 300, "%s", t4a_test_build_path(T4A_TEST_FAKE_NVRTC));
  use_fakes();
  setenv("T4A_NVRTC_LIBRARY", longer, 1);
  ck_assert_int_eq(run("info"), 0);
  ASSERT_OUT("NVRTC:        unavailable: T4A_NVRTC_LIBRARY is ");
}
END_TEST

/* T4A_LOG: off by default; one "t4a[component] level: message" line per event. */
START_TEST(log_levels) {
  use_fakes();
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ck_assert_ptr_null(strstr(output, "t4a["));
  setenv("T4A_LOG", "debug", 1);
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ASSERT_OUT("t4a[loader] info: loaded ");
  ASSERT_OUT("t4a[cuda] info: driver ");
  ASSERT_OUT("t4a[cuda] debug: runtime 0 created on device 0\n");
  ASSERT_OUT("t4a[cuda] debug: runtime 0 on device 0 destroyed\n");
  ASSERT_OUT("t4a[loader] debug: unloading ");
  /* levels in any case; a typo is reported, not silently ignored (#12) */
  setenv("T4A_LOG", "DEBUG", 1);
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ASSERT_OUT("t4a[cuda] debug: runtime 0 created on device 0\n");
  setenv("T4A_LOG", "verbose", 1);
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ASSERT_OUT("T4A_LOG='verbose' is not one of error, warn, info, debug");
  ck_assert_ptr_null(strstr(output, "t4a["));
  setenv("T4A_LOG", "warn", 1);
  ck_assert_int_eq(run("selftest --device 0"), 0);
  ck_assert_ptr_null(strstr(output, "t4a["));
  ck_assert_int_eq(run("info --backend nope"), 3);
  ASSERT_OUT("t4a[loader] warn: backend 'nope' not found");
  /* a relative directory is ignored, and the log says so and why */
  setenv("T4A_GPU_BACKEND_PATH", "plugin-cuda/.libs:/nonexistent", 1);
  ck_assert_int_eq(run("info"), 3);
  ASSERT_OUT("t4a[loader] warn: T4A_GPU_BACKEND_PATH entry 'plugin-cuda/.libs' ignored: it is "
             "relative");
  /* T4A_GPU_BACKEND as a relative path: refused, saying why */
  unsetenv("T4A_LOG");
  setenv("T4A_GPU_BACKEND", "./plugin-cuda/.libs/libt4a_cuda.so", 1);
  ck_assert_int_eq(run("info"), 3);
  ASSERT_OUT("backend:      unavailable: T4A_GPU_BACKEND './plugin-cuda/.libs/libt4a_cuda.so' is "
             "a relative path");
  unsetenv("T4A_GPU_BACKEND");
}
END_TEST

/* ---- Finding 11 of issue #19: log and terminal injection, invalid JSON ---- */

#define BADSTR "tests/loader/.libs/libt4a_fakebadstr.so"

/* Whether s[0 .. n) is valid UTF-8 (no overlongs, surrogates, or code points
 * above U+10FFFF). Written here, apart from the code under test. */
static int valid_utf8(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i], len = c < 0x80                 ? 1
                             : c >= 0xc2 && c <= 0xdf ? 2
                             : c >= 0xe0 && c <= 0xef ? 3
                             : c >= 0xf0 && c <= 0xf4 ? 4
                                                      : 0;
    if (!len || i + len > n)
      return 0;
    unsigned cp = len == 1 ? c : c & (0xff >> (len + 1));
    for (unsigned k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80)
        return 0;
      cp = cp << 6 | (s[i + k] & 0x3f);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    i += len;
  }
  return 1;
}

/* The output holds no control character but line ends (no ESC, no CR), no C1
 * control, and is valid UTF-8. */
static void assert_printable(void) {
  size_t n = strlen(output);
  ck_assert_msg(valid_utf8((const unsigned char *)output, n), "invalid UTF-8 in:\n%s", output);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)output[i];
    ck_assert_msg((c >= 0x20 && c != 0x7f) || c == '\n', "control byte 0x%02x at %zu in:\n%s", c, i,
                  output);
    ck_assert_msg(!(c == 0xc2 && (unsigned char)output[i + 1] < 0xa0), "C1 control at %zu in:\n%s",
                  i, output);
  }
}

/* The output is one valid JSON document (python3's strict parser, on the
 * bytes decoded as strict UTF-8), when python3 is installed. */
static void assert_json(void) {
  char file[] = "/tmp/t4a-json-XXXXXX";
  int fd = mkstemp(file);
  ck_assert_int_ge(fd, 0);
  size_t n = strlen(output);
  ck_assert_int_eq(write(fd, output, n), (ssize_t)n);
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "command -v python3 >/dev/null || exit 77; python3 -c 'import json,sys; "
           "json.loads(open(sys.argv[1], \"rb\").read().decode(\"utf-8\"))' %s",
           file);
  int st = system(cmd);
  unlink(file);
  ck_assert(WIFEXITED(st));
  if (WEXITSTATUS(st) == 77)
    fprintf(stderr, "note: python3 not found: JSON checked for UTF-8 and controls only\n");
  else
    ck_assert_msg(WEXITSTATUS(st) == 0, "not valid JSON:\n%s", output);
}

/* Gives t4a-gpu an environment variable with a hostile value. Values with
 * invalid UTF-8 cannot be handed across exec everywhere (some CI sandboxes
 * refuse to start such a process), so the value travels hex-encoded and
 * tests/cpu/setenv_hex.so, preloaded, sets it inside t4a-gpu before its main
 * runs: the program sees exactly these bytes in its environment. */
static void setenv_hostile(const char *name, const char *value) {
  static char spec[4200];
  int n = snprintf(spec, sizeof spec, "%s=", name);
  ck_assert(n > 0 && (size_t)n + 2 * strlen(value) < sizeof spec);
  for (const unsigned char *v = (const unsigned char *)value; *v; v++)
    n += snprintf(spec + n, sizeof spec - (size_t)n, "%02x", *v);
  ck_assert_int_eq(setenv("T4A_TEST_SETENV_HEX", spec, 1), 0);
  ck_assert_int_eq(setenv("LD_PRELOAD", t4a_test_build_path("tests/cpu/setenv_hex.so"), 1), 0);
  unsetenv(name);
}

static void unsetenv_hostile(void) {
  unsetenv("T4A_TEST_SETENV_HEX");
  unsetenv("LD_PRELOAD");
}

/* A value with a newline forged a second log line ("t4a[cuda] error: ...")
 * and an escape sequence reached the terminal. */
START_TEST(log_and_text_output_escape_control_characters) {
  setenv("T4A_LOG", "warn", 1);
  setenv("T4A_GPU_BACKEND_PATH", "/nonexistent/x\nt4a[cuda] error: forged\x1b[2J", 1);
  ck_assert_int_eq(run("info"), 3);
  ck_assert_msg(!strstr(output, "\nt4a[cuda] error: forged"), "a forged log line:\n%s", output);
  ASSERT_OUT("t4a[loader] warn: backend 'cuda' not found: no libt4a_cuda.so in "
             "'/nonexistent/x\\nt4a[cuda] error: forged\\x1b[2J' ");
  ASSERT_OUT("search path:  /nonexistent/x\\nt4a[cuda] error: forged\\x1b[2J\n");
  ASSERT_OUT("backend:      unavailable: backend 'cuda' not found: no libt4a_cuda.so in "
             "'/nonexistent/x\\nt4a[cuda] error: forged\\x1b[2J' ");
  assert_printable();
  /* the search path (environment) and the plugin's strings, in the text output */
  setenv("T4A_LOG", "info", 1); /* the loader logs the plugin's name and version */
  setenv_hostile("T4A_GPU_BACKEND_PATH", "/nonexistent/\x1b]0;title\x07\xff");
  char args[4200];
  snprintf(args, sizeof args, "info --backend '%s'", t4a_test_build_path(BADSTR));
  ck_assert_int_eq(run(args), 0);
  ASSERT_OUT("search path:  /nonexistent/\\x1b]0;title\\x07\\xff\n");
  ASSERT_OUT("t4a[loader] info: loaded ");
  ASSERT_OUT("(\\n\\x1b[2Jt4a[cuda] error: forged\\r\\t\\x7f\\u009b\"\\\\\xc3\xa9\\x80\\xc0\\x80");
  assert_printable();
  unsetenv_hostile();
}
END_TEST

/* t4a-gpu info --json with a plugin whose info strings are unterminated, hold
 * control bytes and invalid UTF-8, and an environment value likewise. */
START_TEST(info_json_stays_valid_with_hostile_strings) {
  setenv_hostile("T4A_GPU_BACKEND_PATH", "/nonexistent/\x1b]0;title\x07\xff\xc0\x80");
  char args[4200];
  snprintf(args, sizeof args, "info --json --backend '%s'", t4a_test_build_path(BADSTR));
  ck_assert_int_eq(run(args), 0);
  assert_printable();
  assert_json();
  ASSERT_OUT("\"search_path\":\"/nonexistent/\\u001b]0;title\\u0007\\ufffd\\ufffd\\ufffd\"");
  /* each string read only up to its array's end: name[32] is the first 31 bytes */
  ASSERT_OUT("\"name\":\"\\u000a\\u001b[2Jt4a[cuda] error: forged\\u000d\\u0009\\u007f\",");
  ASSERT_OUT("\\u009b\\\"\\\\\xc3\xa9\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd");
  ASSERT_OUT("\"pci_bus_id\":\"\\u000a\\u001b[2J");
  unsetenv_hostile();
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, info_lists_fake_devices);
  tcase_add_test(tc, info_without_driver_says_why);
  tcase_add_test(tc, info_without_gpu_says_why);
  tcase_add_test(tc, info_without_backend_says_why);
  tcase_add_test(tc, usage_errors);
  tcase_add_test(tc, selftest_passes_on_every_fake_device);
  tcase_add_test(tc, selftest_reports_each_failure);
  tcase_add_test(tc, selftest_exit_codes);
  tcase_add_test(tc, overlong_library_paths_are_refused_not_truncated);
  tcase_add_test(tc, log_levels);
  tcase_add_test(tc, log_and_text_output_escape_control_characters);
  tcase_add_test(tc, info_json_stays_valid_with_hostile_strings);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
