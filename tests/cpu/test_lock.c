/* tests/cpu/test_lock.c -- a runtime's lock (backend-core/lock.h), directly:
 * mutual exclusion under contention, and a sleeping taker woken by the
 * release (the lock has no timeouts: a release that wakes nobody hangs the
 * test, which its time limit ends as a failure). */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

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
  ck_assert_uint_eq(atomic_load(&lock.state), 0); /* free, no sleeper left marked */
}
END_TEST

/* ---- a sleeper --------------------------------------------------------------------- */

static _Atomic int taken;
static _Atomic pid_t taker_tid;

static void *take_once(void *arg) {
  (void)arg;
  atomic_store(&taker_tid, (pid_t)syscall(SYS_gettid));
  t4a__lock_take(&lock);
  atomic_store(&taken, 1);
  t4a__lock_give(&lock);
  return NULL;
}

/* Whether thread tid sleeps in the kernel ('S' in /proc: the futex wait,
 * the only place the taker can sleep once it marked the lock). -1 when
 * /proc cannot say. */
static int asleep(pid_t tid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
  return p && p[1] == ' ' ? p[2] == 'S' : -1;
}

START_TEST(a_sleeping_taker_is_woken_by_the_release) {
  for (int round = 0; round < 3; round++) {
    t4a__lock_init(&lock);
    atomic_store(&taken, 0);
    atomic_store(&taker_tid, 0);
    t4a__lock_take(&lock);
    ck_assert_uint_eq(atomic_load(&lock.state), 1); /* held, nobody waiting */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, take_once, NULL), 0);
    while (atomic_load(&lock.state) != 2) /* the taker marked it */
      sched_yield();
    /* and is asleep in the futex, not about to be: a release that wakes
     * nobody must find it there (no timeout anywhere ends its sleep) */
    int s;
    while ((s = asleep(atomic_load(&taker_tid))) == 0)
      sched_yield();
    if (s < 0) {                           /* no /proc: give it time to fall asleep */
      struct timespec ts = {0, 50000000L}; /* 50 ms */
      nanosleep(&ts, NULL);
    }
    ck_assert_int_eq(atomic_load(&taken), 0);
    t4a__lock_give(&lock);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_int_eq(atomic_load(&taken), 1);
    ck_assert_uint_eq(atomic_load(&lock.state), 0);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("lock");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, the_lock_lets_one_taker_in_at_a_time);
  tcase_add_test(tc, a_sleeping_taker_is_woken_by_the_release);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
