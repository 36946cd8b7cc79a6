/* tests/cpu/test_handle.c -- the plugin's handle encoding and reference
 * counts, tested directly: what no API-level test can reach in reasonable
 * time (a 32-bit count at its limit). */
#include "config.h"

#include <check.h>
#include <stdint.h>

#include "plugin-cuda/handle.h"
#include "tests/testutil.h"

START_TEST(reference_counts_saturate_instead_of_wrapping) {
  uint32_t refs = 1;
  ck_assert(t4a__ref_take(&refs));
  ck_assert_uint_eq(refs, 2);
  refs = UINT32_MAX - 1;
  ck_assert(t4a__ref_take(&refs));
  ck_assert_uint_eq(refs, UINT32_MAX);
  ck_assert(!t4a__ref_take(&refs)); /* refused: would wrap to 0 and free early */
  ck_assert_uint_eq(refs, UINT32_MAX);
}
END_TEST

START_TEST(handles_round_trip_and_generations_skip_zero) {
  uint64_t h = t4a__h_make(T4A__TAG_BUFFER, 4095, T4A__MAX_INDEX - 1, T4A__GEN_MASK);
  ck_assert_uint_eq(t4a__h_tag(h), T4A__TAG_BUFFER);
  ck_assert_uint_eq(t4a__h_rt(h), 4095);
  ck_assert_uint_eq(t4a__h_index(h), T4A__MAX_INDEX - 1);
  ck_assert_uint_eq(t4a__h_gen(h), T4A__GEN_MASK);
  ck_assert_uint_eq(t4a__gen_next(T4A__GEN_MASK), 1); /* never 0: no live handle is null */
}
END_TEST

int main(void) {
  Suite *s = suite_create("handle");
  TCase *tc = tcase_create("handle");
  tcase_add_test(tc, reference_counts_saturate_instead_of_wrapping);
  tcase_add_test(tc, handles_round_trip_and_generations_skip_zero);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
