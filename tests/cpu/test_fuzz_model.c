/* tests/cpu/test_fuzz_model.c -- runs the model fuzzer (fuzz/model.c)
 * without libFuzzer against the fake driver (test_fuzz_model) or, built with
 * -DT4A_TEST_HOST, against the host backend (test_fuzz_model_host: its kernels
 * compiled with the host C++ compiler and run; with -DT4A_TEST_HOST_NOCXX too,
 * test_fuzz_model_host_nocxx, without a compiler: every code slot refused): its
 * committed corpus (fuzz/corpus-model), then inputs drawn from a fixed
 * seed, so that every make check drives each table slot with asserted
 * statuses and data. A finding aborts the test with the model's message.
 * T4A_FUZZ_MODEL_INPUTS sets how many generated inputs (default 400; 200 on
 * the host, whose worker threads make each call dearer). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern uint64_t fz_calls, fz_launches;

#ifdef T4A_TEST_HOST
#define DEFAULT_INPUTS 200
#else
#define DEFAULT_INPUTS 400
#endif

START_TEST(corpus_and_generated_programs_match_the_model) {
  LLVMFuzzerInitialize(NULL, NULL);
  int n = t4a_test_replay_dir(LLVMFuzzerTestOneInput, "fuzz/corpus-model");
  ck_assert_int_ge(n, 4);
  const char *v = getenv("T4A_FUZZ_MODEL_INPUTS");
  long count = v ? strtol(v, NULL, 10) : DEFAULT_INPUTS;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  static uint8_t buf[3000];
  for (long i = 0; i < count; i++) {
    size_t len = 200 + (size_t)(i * 37 % 2800);
    for (size_t j = 0; j < len; j++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      buf[j] = (uint8_t)(x >> 24);
    }
    LLVMFuzzerTestOneInput(buf, len);
  }
  printf("%d corpus and %ld generated programs, %llu table calls, %llu kernels launched\n", n,
         count, (unsigned long long)fz_calls, (unsigned long long)fz_launches);
  ck_assert_uint_gt(fz_calls, (uint64_t)count * 50); /* the seeded world made them long */
#ifdef T4A_TEST_HOST_NOCXX
  ck_assert_uint_eq(fz_launches, 0);
#else
  ck_assert_uint_gt(fz_launches, (uint64_t)count); /* the kernels ran (on the host: compiled) */
#endif
}
END_TEST

int main(void) {
#ifdef T4A_TEST_HOST
  unsetenv("T4A_CUDA_LIBRARY");
  setenv("T4A_FUZZ_PLUGIN", t4a_test_build_path("plugin-host/.libs/libt4a_host.so"), 1);
  setenv("T4A_CACHE_DIR", "", 1); /* no disk cache: the memory cache alone, as the model knows */
#ifdef T4A_TEST_HOST_NOCXX
  setenv("T4A_HOST_CXX", "/nonexistent/t4a-no-compiler", 1); /* T4A_ENOCOMPILER */
#endif
#else
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_NVRTC_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_NVRTC), 1);
  setenv("T4A_FUZZ_PLUGIN", t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), 1);
  setenv("T4A_CACHE_DIR", "", 1);       /* no disk cache: inputs stay independent */
  setenv("FAKE_CUDA_MEM_MIB", "64", 1); /* as .ci/sanitizers runs it */
  setenv("FAKE_CUDA_PINNED_MIB", "64", 1);
#endif
  Suite *s = suite_create("fuzz-model");
  TCase *tc = tcase_create("model");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, corpus_and_generated_programs_match_the_model);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
