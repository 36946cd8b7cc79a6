/* tests/cpu/test_fuzz_replay.c -- replays the fuzz target's committed seed
 * corpus and every regression input (fuzz/corpus, fuzz/regressions) through
 * the same LLVMFuzzerTestOneInput, without libFuzzer, against the fake
 * driver: findings stay fixed. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

START_TEST(corpus_and_regressions_replay_cleanly) {
  LLVMFuzzerInitialize(NULL, NULL);
  int n = t4a_test_replay_dir(LLVMFuzzerTestOneInput, "fuzz/corpus");
  ck_assert_int_ge(n, 7);
  n += t4a_test_replay_dir(LLVMFuzzerTestOneInput, "fuzz/regressions");
  printf("replayed %d inputs\n", n);
}
END_TEST

int main(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  setenv("T4A_FUZZ_PLUGIN", t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), 1);
  setenv("FAKE_CUDA_MEM_MIB", "64", 1); /* as .ci/fuzz runs it */
  setenv("FAKE_CUDA_PINNED_MIB", "64", 1);
  Suite *s = suite_create("fuzz-replay");
  TCase *tc = tcase_create("replay");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, corpus_and_regressions_replay_cleanly);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
