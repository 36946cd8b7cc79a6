/* tests/cpu/test_fuzz_replay.c -- replays the fuzz target's committed seed
 * corpus and every regression input (fuzz/corpus, fuzz/regressions) through
 * the same LLVMFuzzerTestOneInput, without libFuzzer, against the fake
 * driver: findings stay fixed. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_dir(const char *rel) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", getenv("T4A_TEST_SRCDIR") ? getenv("T4A_TEST_SRCDIR") : ".",
           rel);
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[8200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    if (!f)
      continue;
    uint8_t buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len); /* aborts on a finding */
    n++;
  }
  closedir(d);
  return n;
}

START_TEST(corpus_and_regressions_replay_cleanly) {
  LLVMFuzzerInitialize(NULL, NULL);
  int n = replay_dir("fuzz/corpus");
  ck_assert_int_ge(n, 7);
  n += replay_dir("fuzz/regressions");
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
