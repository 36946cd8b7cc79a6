/* tests/runtime/test_budget.c -- the memory budget (ABI 1.2): a runtime's
 * pool_limit_bytes and its out-of-memory callback, in every lane (fake
 * driver, host backend, GPU).
 *
 * What is checked: an allocation that would pass the limit is T4A_ENOMEM
 * naming the limit and the runtime stays usable; the runtime's own cache is
 * trimmed first (just enough when that suffices); then the callback is
 * called once, with what the header promises (reason, sizes, the runtime),
 * on the allocating thread and with no lock held (it calls the runtime
 * itself, and so does another thread while it runs); a retry it asks for
 * gets memory it freed; a second one is never made, not even for an
 * allocation inside the callback; a callback that destroys its runtime gets
 * T4A_EHANDLE back. A full device (the fake's 64 MiB, the host pool's
 * T4A_HOST_POOL_LIMIT) calls back with T4A_OUT_OF_MEMORY_DEVICE; on the
 * fake the callback can trim another runtime of the same device. The
 * device-full tests do not run on a GPU (they would fill it). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static t4a_runtime create_budget(uint64_t limit, t4a_out_of_memory_fn fn, void *user) {
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.pool_limit_bytes = limit;
  o.out_of_memory = fn;
  o.out_of_memory_user = user;
  t4a_runtime rt = {0};
  RT_OK(T->runtime_create(0, &o, &rt));
  return rt;
}

static t4a_memory_info memory_info(t4a_runtime rt) {
  t4a_memory_info m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  RT_OK(T->runtime_memory_info(rt, &m));
  ck_assert_uint_eq(m.struct_size, sizeof m);
  return m;
}

/* Random bytes through b and back: the memory is the buffer's own. */
static void round_trip(t4a_runtime rt, t4a_buffer b, uint64_t n) {
  unsigned char *in = malloc(n), *out = malloc(n);
  ck_assert(in && out);
  t4a_test_fill_random(in, n, t4a_test_seed() + n);
  memset(out, 0x5a, n);
  RT_OK(T->copy_h2d(rt, b, 0, in, n));
  RT_OK(T->copy_d2h(rt, out, b, 0, n));
  ck_assert(memcmp(in, out, n) == 0);
  free(in);
  free(out);
}

START_TEST(the_limit_refuses_what_would_pass_it) {
  t4a_runtime rt = create_budget(1 * MiB, NULL, NULL);
  t4a_memory_info m = memory_info(rt);
  ck_assert_uint_eq(m.limit_bytes, 1 * MiB);
  ck_assert_uint_eq(m.held_bytes, 0);
  t4a_buffer a, b, c;
  RT_OK(T->buffer_alloc(rt, 512 * KiB, &a)); /* a size class of its own: 512 KiB held */
  ck_assert_uint_eq(memory_info(rt).held_bytes, 512 * KiB);
  /* 600 KiB is held as its class, 640 KiB: 1152 KiB would pass 1 MiB */
  RT_EXPECT(T->buffer_alloc(rt, 600 * KiB, &b), T4A_ENOMEM);
  RT_DETAIL("pool_limit_bytes");
  ck_assert_uint_eq(b.bits, 0);
  t4a_runtime_counters k = rt_counters(rt);
  ck_assert_uint_eq(k.out_of_memory_failures, 1);
  ck_assert_uint_eq(k.out_of_memory_calls, 0);
  /* usable: what fits still does, exactly up to the limit */
  RT_OK(T->buffer_alloc(rt, 512 * KiB, &c));
  ck_assert_uint_eq(memory_info(rt).held_bytes, 1 * MiB);
  RT_EXPECT(T->buffer_alloc(rt, 1, &b), T4A_ENOMEM);
  round_trip(rt, c, 512 * KiB);
  /* a freed block stays held in the cache until the budget needs it */
  RT_OK(T->buffer_free(rt, a));
  ck_assert_uint_eq(memory_info(rt).held_bytes, 1 * MiB);
  ck_assert_uint_eq(rt_cache(rt).bytes, 512 * KiB);
  RT_OK(T->buffer_alloc(rt, 300 * KiB, &b)); /* 320 KiB: the cached block is given back */
  m = memory_info(rt);
  ck_assert_uint_eq(m.held_bytes, 512 * KiB + 320 * KiB);
  ck_assert_uint_eq(m.cache_bytes, 0);
  ck_assert_uint_eq(rt_cache(rt).bytes, 0);
  round_trip(rt, b, 300 * KiB);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  /* no limit: said as UINT64_MAX */
  rt = rt_create();
  ck_assert_uint_eq(memory_info(rt).limit_bytes, UINT64_MAX);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- a callback that records what it was told ------------------------------------------ */

typedef struct seen {
  int calls;
  t4a_out_of_memory_info info;
  pthread_t thread;
  int answer;           /* what it returns */
  t4a_buffer victim;    /* freed by the callback when set */
  uint64_t nested;      /* bytes it allocates itself (0: none) */
  int nested_status;    /* what that allocation returned */
  bool destroy;         /* it destroys its runtime */
  int destroy_status;   /* what that returned */
  int calls_from_other; /* another thread's call on the runtime, meanwhile */
  t4a_runtime other;    /* fake lane: a runtime whose cache it trims */
} seen;

static void *other_thread(void *arg) {
  seen *s = arg;
  t4a_runtime_counters c = {.struct_size = sizeof c};
  s->calls_from_other = T->runtime_counters(s->info.runtime, &c);
  return NULL;
}

static int record(const t4a_out_of_memory_info *info, void *user) {
  seen *s = user;
  s->calls++;
  s->info = *info;
  s->thread = pthread_self();
  /* nothing of the runtime is held: this thread and another may use it */
  t4a_runtime_counters c = {.struct_size = sizeof c};
  ck_assert_int_eq(T->runtime_counters(info->runtime, &c), T4A_OK);
  ck_assert_uint_eq(c.out_of_memory_calls, (uint64_t)s->calls); /* counted before the call */
  rt_thread th;
  rt_thread_start(&th, other_thread, s);
  ck_assert_msg(rt_thread_wait(&th, 10), "another thread's call blocked during the callback");
  if (s->victim.bits)
    ck_assert_int_eq(T->buffer_free(info->runtime, s->victim), T4A_OK);
  if (s->nested) {
    t4a_buffer n;
    s->nested_status = T->buffer_alloc(info->runtime, s->nested, &n);
  }
  if (s->other.bits) { /* its frees reach the device once its stream ran them */
    t4a_witness w;
    ck_assert_int_eq(T->cache_trim(s->other, 0), T4A_OK);
    ck_assert_int_eq(T->seal(s->other, &w), T4A_OK);
    ck_assert_int_eq(T->witness_wait(w, T4A_WAIT_FOREVER), T4A_OK);
    ck_assert_int_eq(T->witness_release(w), T4A_OK);
  }
  if (s->destroy)
    s->destroy_status = T->runtime_destroy(info->runtime, T4A_WAIT_FOREVER);
  return s->answer;
}

START_TEST(the_cache_is_trimmed_before_the_callback) {
  seen s = {.answer = T4A_OUT_OF_MEMORY_FAIL};
  t4a_runtime rt = create_budget(1 * MiB, record, &s);
  t4a_buffer a, b, c;
  RT_OK(T->buffer_alloc(rt, 512 * KiB, &a));
  RT_OK(T->buffer_free(rt, a));              /* cached: held */
  RT_OK(T->buffer_alloc(rt, 768 * KiB, &b)); /* fits once the cache gave its block back */
  ck_assert_int_eq(s.calls, 0);
  ck_assert_uint_eq(rt_cache(rt).bytes, 0);
  ck_assert_uint_eq(memory_info(rt).held_bytes, 768 * KiB);
  /* 768 KiB held, nothing cached: 512 KiB more cannot fit, the callback is asked */
  RT_EXPECT(T->buffer_alloc(rt, 500 * KiB, &c), T4A_ENOMEM);
  RT_DETAIL("out-of-memory callback");
  ck_assert_int_eq(s.calls, 1);
  ck_assert_uint_eq(s.info.struct_size, sizeof(t4a_out_of_memory_info));
  ck_assert_uint_eq(s.info.reason, T4A_OUT_OF_MEMORY_LIMIT);
  ck_assert_uint_eq(s.info.runtime.bits, rt.bits);
  ck_assert_uint_eq(s.info.bytes_wanted, 500 * KiB);
  ck_assert_uint_eq(s.info.bytes_needed, 512 * KiB);
  ck_assert_uint_eq(s.info.bytes_held, 768 * KiB);
  ck_assert_uint_eq(s.info.limit_bytes, 1 * MiB);
  ck_assert(pthread_equal(s.thread, pthread_self()));
  ck_assert_int_eq(s.calls_from_other, T4A_OK);
  t4a_runtime_counters k = rt_counters(rt);
  ck_assert_uint_eq(k.out_of_memory_calls, 1);
  ck_assert_uint_eq(k.out_of_memory_failures, 1);
  round_trip(rt, b, 768 * KiB);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(a_retry_gets_what_the_callback_freed) {
  seen s = {.answer = T4A_OUT_OF_MEMORY_RETRY};
  t4a_runtime rt = create_budget(3 * MiB, record, &s);
  t4a_buffer keep, b;
  RT_OK(T->buffer_alloc(rt, 1 * MiB, &keep));
  RT_OK(T->buffer_alloc(rt, 1 * MiB, &s.victim));
  round_trip(rt, keep, 1 * MiB);
  /* 3.5 MiB would be held: the callback frees the victim (cached, then
   * trimmed by the retry) and 2.5 MiB fit */
  RT_OK(T->buffer_alloc(rt, 1536 * KiB, &b));
  ck_assert_int_eq(s.calls, 1);
  ck_assert_uint_eq(s.info.bytes_held, 2 * MiB);
  ck_assert(pthread_equal(s.thread, pthread_self()));
  uint64_t size = 0;
  RT_EXPECT(T->buffer_size(rt, s.victim, &size), T4A_EHANDLE); /* freed, by the callback */
  ck_assert_uint_eq(memory_info(rt).held_bytes, 1 * MiB + 1536 * KiB);
  round_trip(rt, b, 1536 * KiB);
  t4a_runtime_counters k = rt_counters(rt);
  ck_assert_uint_eq(k.out_of_memory_calls, 1);
  ck_assert_uint_eq(k.out_of_memory_failures, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(the_callback_is_called_at_most_once_per_allocation) {
  /* it asks for a retry but frees nothing; it also allocates itself */
  seen s = {.answer = T4A_OUT_OF_MEMORY_RETRY, .nested = 1 * MiB};
  t4a_runtime rt = create_budget(1 * MiB, record, &s);
  t4a_buffer a, b;
  RT_OK(T->buffer_alloc(rt, 1 * MiB, &a));
  RT_EXPECT(T->buffer_alloc(rt, 4 * KiB, &b), T4A_ENOMEM);
  RT_DETAIL("pool_limit_bytes"); /* the retry's own refusal */
  ck_assert_int_eq(s.calls, 1);  /* neither the retry nor the nested allocation called again */
  ck_assert_int_eq(s.nested_status, T4A_ENOMEM);
  t4a_runtime_counters k = rt_counters(rt);
  ck_assert_uint_eq(k.out_of_memory_calls, 1);
  ck_assert_uint_eq(k.out_of_memory_failures, 2); /* the nested one and the retry */
  /* a later allocation is another allocation: called again */
  s.nested = 0;
  s.answer = T4A_OUT_OF_MEMORY_FAIL;
  RT_EXPECT(T->buffer_alloc(rt, 4 * KiB, &b), T4A_ENOMEM);
  ck_assert_int_eq(s.calls, 2);
  RT_OK(T->buffer_free(rt, a));
  RT_OK(T->buffer_alloc(rt, 4 * KiB, &b)); /* the runtime is fine */
  round_trip(rt, b, 4 * KiB);
  ck_assert_int_eq(s.calls, 2);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(a_callback_that_destroys_its_runtime_gets_ehandle) {
  seen s = {.answer = T4A_OUT_OF_MEMORY_RETRY, .destroy = true};
  t4a_runtime rt = create_budget(64 * KiB, record, &s);
  t4a_buffer b;
  RT_EXPECT(T->buffer_alloc(rt, 128 * KiB, &b), T4A_EHANDLE);
  ck_assert_uint_eq(b.bits, 0);
  ck_assert_int_eq(s.calls, 1);
  ck_assert_int_eq(s.destroy_status, T4A_OK);
  RT_EXPECT(T->buffer_alloc(rt, 1, &b), T4A_EHANDLE); /* stale */
}
END_TEST

/* ---- a full device (fake: 64 MiB; host: the pool's 64 MiB bound) ----------------------- */

#define DEVICE_MIB 64

START_TEST(a_full_device_calls_back_with_its_reason) {
  seen s = {.answer = T4A_OUT_OF_MEMORY_FAIL};
  t4a_runtime rt = create_budget(0, record, &s);
  t4a_buffer b[2 * DEVICE_MIB / 16];
  int n = 0, rc = T4A_OK;
  while (n < 2 * DEVICE_MIB / 16 && (rc = T->buffer_alloc(rt, 16 * MiB, &b[n])) == T4A_OK)
    n++;
  ck_assert_int_eq(rc, T4A_ENOMEM); /* the device filled up */
  ck_assert_int_ge(n, 2);
  RT_DETAIL("free buffers");
  ck_assert_int_eq(s.calls, 1);
  ck_assert_uint_eq(s.info.reason, T4A_OUT_OF_MEMORY_DEVICE);
  ck_assert_uint_eq(s.info.limit_bytes, UINT64_MAX);
  ck_assert_uint_eq(s.info.bytes_needed, 16 * MiB);
  ck_assert_uint_eq(s.info.bytes_held, (uint64_t)n * 16 * MiB);
  /* now the callback frees one of ours (to the cache) and asks for a
   * retry, which the cache serves */
  s.victim = b[0];
  s.answer = T4A_OUT_OF_MEMORY_RETRY;
  t4a_buffer more;
  RT_OK(T->buffer_alloc(rt, 16 * MiB, &more));
  ck_assert_int_eq(s.calls, 2);
  round_trip(rt, more, 16 * MiB);
  t4a_runtime_counters k = rt_counters(rt);
  ck_assert_uint_eq(k.out_of_memory_calls, 2);
  ck_assert_uint_eq(k.out_of_memory_failures, 1);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* CUDA: runtimes of one device share its memory, so a callback can make
 * room by trimming another one's cache (its frees run on its stream). */
START_TEST(a_callback_trims_another_runtime) {
  t4a_runtime a = rt_create();
  t4a_buffer held[3];
  for (int i = 0; i < 3; i++)
    RT_OK(T->buffer_alloc(a, 16 * MiB, &held[i]));
  for (int i = 0; i < 3; i++)
    RT_OK(T->buffer_free(a, held[i])); /* cached by a: still the device's */
  ck_assert_uint_eq(rt_cache(a).bytes, 48 * MiB);
  seen s = {.answer = T4A_OUT_OF_MEMORY_RETRY, .other = a};
  t4a_runtime b = create_budget(0, record, &s);
  t4a_buffer x, y;
  RT_OK(T->buffer_alloc(b, 8 * MiB, &x));
  ck_assert_int_eq(s.calls, 0);
  RT_OK(T->buffer_alloc(b, 16 * MiB, &y)); /* a holds the rest of the device */
  ck_assert_int_eq(s.calls, 1);
  ck_assert_uint_eq(s.info.reason, T4A_OUT_OF_MEMORY_DEVICE);
  ck_assert_uint_eq(rt_cache(a).bytes, 0);
  round_trip(b, y, 16 * MiB);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
}
END_TEST

static Suite *suite(void) {
  Suite *s = rt_suite("budget");
  TCase *tc = rt_tcase(s, "budget", 60);
  tcase_add_test(tc, the_limit_refuses_what_would_pass_it);
  tcase_add_test(tc, the_cache_is_trimmed_before_the_callback);
  tcase_add_test(tc, a_retry_gets_what_the_callback_freed);
  tcase_add_test(tc, the_callback_is_called_at_most_once_per_allocation);
  tcase_add_test(tc, a_callback_that_destroys_its_runtime_gets_ehandle);
  if (rt_on_fake() || rt_on_host()) /* a GPU's memory is too large to fill in a test */
    tcase_add_test(tc, a_full_device_calls_back_with_its_reason);
  if (rt_on_fake() || rt_on_host())
    RT_CUDA_ONLY(tc, a_callback_trims_another_runtime,
                 "a host runtime's pool is its own: another's cache takes none of its room");
  return s;
}

int main(void) {
  char mib[16];
  snprintf(mib, sizeof mib, "%d", DEVICE_MIB);
  setenv("FAKE_CUDA_MEM_MIB", mib, 1); /* read at cuInit, in each test's process */
  snprintf(mib, sizeof mib, "%llu", (unsigned long long)DEVICE_MIB * MiB);
  setenv("T4A_HOST_POOL_LIMIT", mib, 1); /* read at each runtime_create */
  return rt_run(suite(), 1);
}
