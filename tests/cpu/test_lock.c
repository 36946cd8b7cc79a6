/* tests/cpu/test_lock.c -- a runtime's lock (backend-core/lock.h), directly:
 * mutual exclusion under contention, a sleeping taker woken by the release,
 * and (test_lock_nap, the same file built with the real nap) a sleeper whose
 * wakeup was missed taking the lock all the same.
 *
 * test_lock builds lock.c with a nap of an hour, so that a taker that is
 * asleep when the lock is given back gets it only by its wakeup: a release
 * that wakes nobody hangs the test (killed by its time limit) instead of
 * passing a few hundred microseconds late. */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "backend-core/lock.h"
#include "tests/testutil.h"

static t4a__lock lock;

/* ---- mutual exclusion ---------------------------------------------------------- */

enum { THREADS = 8, ROUNDS = 200000 };
static uint64_t counter;     /* guarded by lock, plain on purpose */
static _Atomic int inside;   /* takers between take and give */
static _Atomic int overlaps; /* times a taker found another inside */

static void *hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    t4a__lock_take(&lock);
    if (atomic_fetch_add(&inside, 1) != 0)
      atomic_fetch_add(&overlaps, 1);
    uint64_t c = counter; /* a read-modify-write a second holder would tear */
    if ((i & 255) == 0)
      sched_yield(); /* now and then held long enough for others to sleep */
    counter = c + 1;
    atomic_fetch_sub(&inside, 1);
    t4a__lock_give(&lock);
  }
  return NULL;
}

START_TEST(the_lock_lets_one_taker_in_at_a_time) {
  t4a__lock_init(&lock);
  counter = 0;
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
  for (int i = 0; i < THREADS; i++)
    ck_assert_int_eq(pthread_join(t[i], NULL), 0);
  ck_assert_int_eq(atomic_load(&overlaps), 0);
  ck_assert_uint_eq(counter, (uint64_t)THREADS * ROUNDS);
  ck_assert_uint_eq(atomic_load(&lock.held), 0);
  ck_assert_uint_eq(atomic_load(&lock.sleepers), 0);
}
END_TEST

/* ---- a sleeper --------------------------------------------------------------------- */

static _Atomic int taken;

static void *take_once(void *arg) {
  (void)arg;
  t4a__lock_take(&lock);
  atomic_store(&taken, 1);
  t4a__lock_give(&lock);
  return NULL;
}

/* Holds the lock until a second taker went to sleep on it. */
static pthread_t sleeper_behind_held_lock(void) {
  t4a__lock_init(&lock);
  atomic_store(&taken, 0);
  t4a__lock_take(&lock);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, take_once, NULL), 0);
  while (atomic_load(&lock.sleepers) == 0) /* past its spinning: counted, going to sleep */
    sched_yield();
  ck_assert_int_eq(atomic_load(&taken), 0);
  return t;
}

#ifndef NAP_TEST
START_TEST(a_sleeping_taker_is_woken_by_the_release) {
  pthread_t t = sleeper_behind_held_lock();
  t4a__lock_give(&lock); /* the nap is an hour: only this wakes it in time */
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_int_eq(atomic_load(&taken), 1);
  ck_assert_uint_eq(atomic_load(&lock.sleepers), 0);
  ck_assert_uint_eq(atomic_load(&lock.held), 0);
}
END_TEST
#else
/* The store-buffer race's outcome, made on purpose: the lock is free but
 * the sleeper was never woken. Its nap ends and it takes the lock. */
START_TEST(a_sleeper_whose_wakeup_was_missed_takes_the_lock_after_its_nap) {
  pthread_t t = sleeper_behind_held_lock();
  atomic_store_explicit(&lock.held, 0, memory_order_release); /* released, nobody woken */
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_int_eq(atomic_load(&taken), 1);
  ck_assert_uint_eq(atomic_load(&lock.sleepers), 0);
}
END_TEST
#endif

int main(void) {
  Suite *s = suite_create("lock");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, the_lock_lets_one_taker_in_at_a_time); /* both naps */
#ifndef NAP_TEST
  tcase_add_test(tc, a_sleeping_taker_is_woken_by_the_release);
#else
  tcase_add_test(tc, a_sleeper_whose_wakeup_was_missed_takes_the_lock_after_its_nap);
#endif
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
