/* tests/cpu/test_handle.c -- the plugin's handle encoding, handle tables
 * and reference counts, tested directly: what no API-level test can reach
 * in reasonable time (a 32-bit count at its limit), or reaches only by
 * chance (one entry reused many times in a row). */
#include "config.h"

#include <check.h>
#include <stdint.h>

#include "backend-core/handle.h"
#include "tests/testutil.h"

static const t4a__hkind kind = {T4A__TAG_BUFFER, "buffer", "buffer_alloc", NULL, "freed"};

/* Takes an entry of t, publishes it and releases it: the handle it had. */
static uint64_t publish_once(t4a__htable *t) {
  uint32_t index = 99;
  ck_assert_int_eq(t4a__htable_take(t, "test", &index), 0);
  uint64_t h = t4a__htable_publish(t, index, &kind, 0);
  t4a__htable_release(t, index);
  return h;
}

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

/* An entry taken, published and released again and again never hands out
 * a handle it handed out before: a stale handle must not come back to life
 * naming the entry's next object. (The model fuzzer found a released
 * witness's handle valid again: release advanced the entry's generation by
 * one, publish bumped a clash by one, and the process-wide sequence then
 * handed out those very values.) */
START_TEST(a_reused_entry_never_repeats_a_handle) {
  t4a__htable t;
  t4a__htable_init(&t, sizeof(t4a__hslot));
  enum { N = 2000 };
  static uint64_t seen[N];
  for (int i = 0; i < N; i++) {
    uint32_t index = 99;
    ck_assert_int_eq(t4a__htable_take(&t, "test", &index), 0);
    ck_assert_uint_eq(index, 0); /* the one entry, every time */
    seen[i] = t4a__htable_publish(&t, index, &kind, 0);
    for (int j = 0; j < i; j++)
      ck_assert_msg(seen[j] != seen[i], "publication %d repeats publication %d: 0x%llx", i, j,
                    (unsigned long long)seen[i]);
    int rc = -1;
    ck_assert_ptr_nonnull(t4a__htable_find(&t, &kind, 0, seen[i], "test", &rc));
    ck_assert_int_eq(rc, 0);
    t4a__htable_release(&t, index);
    ck_assert_ptr_null(t4a__htable_find(&t, &kind, 0, seen[i], "test", &rc));
    ck_assert_int_eq(rc, T4A_EHANDLE);
  }
  t4a__htable_fini(&t);
}
END_TEST

/* A table made where a dead one was (a runtime created in a destroyed
 * one's slot) never hands out a handle the dead table did, even from the
 * same entry: generations come from the process's sequence, never from a
 * start of the table's own. */
START_TEST(a_fresh_table_never_repeats_a_dead_tables_handles) {
  enum { N = 700 }; /* more than a block of the sequence */
  static uint64_t dead[N];
  t4a__htable t;
  t4a__htable_init(&t, sizeof(t4a__hslot));
  for (int i = 0; i < N; i++)
    dead[i] = publish_once(&t);
  t4a__htable_fini(&t);
  t4a__htable_init(&t, sizeof(t4a__hslot)); /* the new runtime's table */
  for (int i = 0; i < N; i++) {
    uint64_t h = publish_once(&t);
    for (int j = 0; j < N; j++)
      ck_assert_msg(h != dead[j], "the fresh table's handle %d repeats the dead one's %d", i, j);
  }
  t4a__htable_fini(&t);
}
END_TEST

/* A runtime's tables go with each destroy and come again with the next
 * create in its slot: a million such lifetimes, each publishing once, never
 * bring back the first lifetime's handle. (Blocks of the sequence kept per
 * table, tried once to skip a thread-local lookup, went with the table and
 * spent 256 values each: the first handle came back at lifetime 2^20.) */
START_TEST(generations_outlast_a_million_short_lived_tables) {
  uint64_t first = 0;
  for (uint32_t life = 0; life < (1u << 21); life++) {
    t4a__htable t;
    t4a__htable_init(&t, sizeof(t4a__hslot));
    uint64_t h = publish_once(&t);
    if (life == 0)
      first = h;
    else if (h == first)
      ck_abort_msg("lifetime %u's handle repeats lifetime 0's: 0x%llx", life,
                   (unsigned long long)h);
    t4a__htable_fini(&t);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("handle");
  TCase *tc = tcase_create("handle");
  tcase_add_test(tc, reference_counts_saturate_instead_of_wrapping);
  tcase_add_test(tc, handles_round_trip_and_generations_skip_zero);
  tcase_add_test(tc, a_reused_entry_never_repeats_a_handle);
  tcase_add_test(tc, a_fresh_table_never_repeats_a_dead_tables_handles);
  tcase_add_test(tc, generations_outlast_a_million_short_lived_tables);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
