/* tests/loader/test_loader_unit.c -- the loader's internals, linked
 * directly: the setuid rule, name rules, logging levels, checked math. */
#include "config.h"

#include "t4a-paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/env.h"
#include "common/error.h"
#include "common/escape.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/str.h"
#include "loader/loader_internal.h"
#include "tests/testutil.h"

START_TEST(privileged_process_ignores_environment) {
  setenv("T4A_GPU_BACKEND_PATH", "/evil/dir", 1);
  setenv("T4A_GPU_BACKEND", "/evil/libt4a_x.so", 1);
  char path[T4A__PATH_MAX];

  t4a__env_force_secure(0);
  t4a__search_path(path, sizeof path);
  ck_assert_str_eq(path, "/evil/dir");
  ck_assert_str_eq(t4a__default_spec(), "/evil/libt4a_x.so");
  ck_assert_str_eq(t4a__getenv("T4A_GPU_BACKEND"), "/evil/libt4a_x.so");

  t4a__env_force_secure(1); /* as in a setuid/setgid process */
  ck_assert(t4a__env_is_secure());
  ck_assert_ptr_null(t4a__getenv("T4A_GPU_BACKEND"));
  t4a__search_path(path, sizeof path);
  ck_assert_str_eq(path, T4A_PLUGIN_DIR);
  ck_assert_str_eq(t4a__default_spec(), "cuda");

  t4a__env_force_secure(-1); /* decided by the process: this one is not privileged */
  ck_assert(!t4a__env_is_secure());
}
END_TEST

START_TEST(overlong_environment_paths_are_refused) {
  const char *v = (const char *)0x1;
  setenv("T4A_TEST_PATH", "/234567", 1); /* 7 bytes: fits 8 */
  ck_assert_int_eq(t4a__getenv_path("T4A_TEST_PATH", 8, T4A_EINVAL, &v), T4A_OK);
  ck_assert_str_eq(v, "/234567");
  setenv("T4A_TEST_PATH", "/2345678", 1); /* 8 bytes: refused, not cut to "/234567" */
  ck_assert_int_eq(t4a__getenv_path("T4A_TEST_PATH", 8, T4A_ENODRIVER, &v), T4A_ENODRIVER);
  ck_assert_ptr_null(v);
  ck_assert_ptr_nonnull(strstr(t4a__error_get()->message, "T4A_TEST_PATH is 8 bytes long"));
  setenv("T4A_TEST_PATH", "", 1);
  ck_assert_int_eq(t4a__getenv_path("T4A_TEST_PATH", 8, T4A_EINVAL, &v), T4A_OK);
  ck_assert_ptr_null(v);
  char path[8];
  setenv("T4A_GPU_BACKEND_PATH", "/2345678", 1);
  ck_assert_int_eq(t4a__search_path(path, sizeof path), T4A_EINVAL);
  ck_assert_str_eq(path, "");
}
END_TEST

/* common/escape.c: what reaches log lines, terminals and JSON (issue #19). */
START_TEST(escaping_for_text_and_json) {
  char out[T4A__ESCAPE_SIZE(64)];
  const char *in = "a\n\x1b[2J\t\r\x7f\\\"\xc3\xa9\xc2\x9b\xe2\x82\xac\xf0\x9f\x98\x80";
  ck_assert_uint_eq(t4a__escape(out, sizeof out, in, 64, T4A__ESCAPE_TEXT), strlen(in));
  ck_assert_str_eq(out, "a\\n\\x1b[2J\\t\\r\\x7f\\\\\"\xc3\xa9\\u009b\xe2\x82\xac\xf0\x9f\x98\x80");
  ck_assert_uint_eq(t4a__escape(out, sizeof out, in, 64, T4A__ESCAPE_JSON), strlen(in));
  ck_assert_str_eq(out, "a\\u000a\\u001b[2J\\u0009\\u000d\\u007f\\\\\\\"\xc3\xa9\\u009b"
                        "\xe2\x82\xac\xf0\x9f\x98\x80");
  /* invalid UTF-8, byte by byte: stray continuation, overlong, surrogate,
   * above U+10FFFF, 0xff, a sequence cut short (by the next byte, by the end) */
  const char *bad = "\x80|\xc0\x80|\xe0\x80\x80|\xed\xa0\x80|\xf4\x90\x80\x80|\xff|\xe2\x82x|\xe2";
  t4a__escape(out, sizeof out, bad, 64, T4A__ESCAPE_TEXT);
  ck_assert_str_eq(out, "\\x80|\\xc0\\x80|\\xe0\\x80\\x80|\\xed\\xa0\\x80|\\xf4\\x90\\x80\\x80|"
                        "\\xff|\\xe2\\x82x|\\xe2");
  t4a__escape(out, sizeof out, "\xed\xa0\x80|\xe2\x82x|\xf0\x9f", 64, T4A__ESCAPE_JSON);
  ck_assert_str_eq(out, "\\ufffd\\ufffd\\ufffd|\\ufffd\\ufffdx|\\ufffd\\ufffd");
  /* reads at most max bytes: an unterminated array stays inside its bounds */
  const char unterminated[4] = {'a', 'b', 'c', 'd'};
  ck_assert_uint_eq(
      t4a__escape(out, sizeof out, unterminated, sizeof unterminated, T4A__ESCAPE_TEXT), 4);
  ck_assert_str_eq(out, "abcd");
  ck_assert_uint_eq(t4a__escape(out, sizeof out, "\xc3\xa9", 1, T4A__ESCAPE_TEXT), 1);
  ck_assert_str_eq(out, "\\xc3"); /* a character cut by max is invalid, not read on */
  /* a full buffer ends before an escape, never inside one */
  char small[7]; /* 6 characters and the NUL */
  ck_assert_uint_eq(t4a__escape(small, sizeof small, "abcde\n", 64, T4A__ESCAPE_TEXT), 5);
  ck_assert_str_eq(small, "abcde"); /* "\\n" would need 7 */
  ck_assert_uint_eq(t4a__escape(small, sizeof small, "a\x01", 64, T4A__ESCAPE_JSON), 1);
  ck_assert_str_eq(small, "a"); /* "\\u0001" would need 8 */
  /* the worst case fits T4A__ESCAPE_SIZE */
  char worst[16], big[T4A__ESCAPE_SIZE(16)];
  memset(worst, 0xff, sizeof worst);
  ck_assert_uint_eq(t4a__escape(big, sizeof big, worst, sizeof worst, T4A__ESCAPE_JSON), 16);
  ck_assert_uint_eq(strlen(big), sizeof big - 1); /* exactly: 6 bytes each */
}
END_TEST

START_TEST(terminate_ends_an_array) {
  struct {
    char name[4];
    char after[4];
  } s;
  memset(&s, 'x', sizeof s);
  t4a__terminate(s.name);
  ck_assert_str_eq(s.name, "xxx");
  ck_assert_int_eq(s.after[0], 'x');
}
END_TEST

START_TEST(backend_names) {
  ck_assert(t4a__valid_name("cuda"));
  ck_assert(t4a__valid_name("fake_2"));
  ck_assert(!t4a__valid_name(""));
  ck_assert(!t4a__valid_name("CUDA"));
  ck_assert(!t4a__valid_name("a.b"));
  ck_assert(!t4a__valid_name("a b"));
  ck_assert(t4a__valid_name("x2345678901234567890123456789012"));
  ck_assert(!t4a__valid_name("x23456789012345678901234567890123"));
}
END_TEST

START_TEST(log_levels) {
  ck_assert_int_eq(t4a__log_parse(NULL), 0);
  ck_assert_int_eq(t4a__log_parse(""), 0);
  ck_assert_int_eq(t4a__log_parse("error"), T4A__LOG_ERROR);
  ck_assert_int_eq(t4a__log_parse("warn"), T4A__LOG_WARN);
  ck_assert_int_eq(t4a__log_parse("info"), T4A__LOG_INFO);
  ck_assert_int_eq(t4a__log_parse("debug"), T4A__LOG_DEBUG);
  ck_assert_int_eq(t4a__log_parse("verbose"), 0);
}
END_TEST

START_TEST(checked_arithmetic) {
  uint64_t r;
  ck_assert(t4a__add_u64(1, 2, &r) && r == 3);
  ck_assert(!t4a__add_u64(UINT64_MAX, 1, &r));
  ck_assert(t4a__mul_u64(1u << 20, 1u << 20, &r) && r == (1ull << 40));
  ck_assert(!t4a__mul_u64(UINT64_MAX / 2 + 1, 2, &r));
  ck_assert(t4a__range_ok(0, 0, 0));
  ck_assert(t4a__range_ok(3, 4, 7));
  ck_assert(!t4a__range_ok(3, 5, 7));
  ck_assert(!t4a__range_ok(8, 0, 7));
  ck_assert(!t4a__range_ok(UINT64_MAX, 2, UINT64_MAX));
  ck_assert(t4a__align_up_u64(5, 4, &r) && r == 8);
  ck_assert(t4a__align_up_u64(8, 4, &r) && r == 8);
  ck_assert(!t4a__align_up_u64(UINT64_MAX - 1, 4, &r));
}
END_TEST

/* t4a__grow, which every doubling array grows through (issue #26, item 10:
 * a uint32 capacity doubled from 2^31 wrapped to 0, and realloc(p, 0)
 * freed the array). */
START_TEST(growth_never_wraps) {
  uint64_t n = 7;
  size_t bytes = 7;
  ck_assert(t4a__grow(0, 16, UINT32_MAX, 8, &n, &bytes) && n == 16 && bytes == 128);
  ck_assert(t4a__grow(16, 16, UINT32_MAX, 8, &n, &bytes) && n == 32 && bytes == 256);
  /* a 32-bit capacity at 2^31: the next is the most it holds, never 0 */
  ck_assert(t4a__grow(1u << 31, 16, UINT32_MAX, 1, &n, &bytes) && n == UINT32_MAX);
  ck_assert_uint_eq(bytes, UINT32_MAX);
  n = bytes = 7;
  ck_assert(!t4a__grow(UINT32_MAX, 16, UINT32_MAX, 1, &n, &bytes)); /* full */
  ck_assert(n == 7 && bytes == 7);                                  /* untouched */
  /* a bound below the doubling: up to it, then full */
  ck_assert(t4a__grow(4, 4, 6, 40, &n, &bytes) && n == 6 && bytes == 240);
  ck_assert(!t4a__grow(6, 4, 6, 40, &n, &bytes));
  ck_assert(!t4a__grow(0, 4, 0, 40, &n, &bytes)); /* a bound of 0: never any room */
  /* a 64-bit capacity: doubling and the bytes overflow-checked */
#if SIZE_MAX == UINT64_MAX
  ck_assert(t4a__grow(UINT64_MAX / 2 + 1, 8, UINT64_MAX, 1, &n, &bytes) && n == UINT64_MAX);
#endif
  ck_assert(!t4a__grow(UINT64_MAX / 2 + 1, 8, UINT64_MAX, 2, &n, &bytes));
  ck_assert(!t4a__grow(1ull << 62, 8, UINT64_MAX, 8, &n, &bytes));
  ck_assert(!t4a__grow(UINT64_MAX, 8, UINT64_MAX, 1, &n, &bytes));
}
END_TEST

static void hex(const uint8_t d[32], char out[65]) {
  for (size_t i = 0; i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", d[i]);
}

START_TEST(sha256_matches_fips_vectors) {
  uint8_t d[32];
  char h[65];
  t4a__sha256_digest("", 0, d);
  hex(d, h);
  ck_assert_str_eq(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  t4a__sha256_digest("abc", 3, d);
  hex(d, h);
  ck_assert_str_eq(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  t4a__sha256_digest(two, strlen(two), d);
  hex(d, h);
  ck_assert_str_eq(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  /* one million 'a', fed in uneven pieces */
  t4a__sha256 s;
  t4a__sha256_init(&s);
  char a[997];
  memset(a, 'a', sizeof a);
  size_t left = 1000000;
  while (left) {
    size_t n = left < sizeof a ? left : sizeof a;
    t4a__sha256_update(&s, a, n);
    left -= n;
  }
  t4a__sha256_final(&s, d);
  hex(d, h);
  ck_assert_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

int main(void) {
  Suite *s = suite_create("loader-unit");
  TCase *tc = tcase_create("unit");
  tcase_add_test(tc, privileged_process_ignores_environment);
  tcase_add_test(tc, overlong_environment_paths_are_refused);
  tcase_add_test(tc, escaping_for_text_and_json);
  tcase_add_test(tc, terminate_ends_an_array);
  tcase_add_test(tc, backend_names);
  tcase_add_test(tc, log_levels);
  tcase_add_test(tc, checked_arithmetic);
  tcase_add_test(tc, growth_never_wraps);
  tcase_add_test(tc, sha256_matches_fips_vectors);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
