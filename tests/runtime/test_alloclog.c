/* tests/runtime/test_alloclog.c -- the allocation log (ABI 1.2), in every
 * lane (fake driver, host backend, GPU): every kind of event with the
 * fields the header promises, in order (numbers consecutive, times and
 * stream positions monotonic, what is held after each event); the ring
 * keeping the newest events with a gap for the dropped ones and reads in
 * pieces; what a runtime without the flag and bad options get. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

#define KiB (1ull << 10)

static int refuse(const t4a_out_of_memory_info *info, void *user) {
  (void)info;
  ++*(int *)user;
  return T4A_OUT_OF_MEMORY_FAIL;
}

static t4a_runtime create_logged(uint32_t events, uint64_t limit, int *calls) {
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.flags = T4A_RUNTIME_ALLOC_LOG;
  o.alloc_log_events = events;
  o.pool_limit_bytes = limit;
  o.out_of_memory = calls ? refuse : NULL;
  o.out_of_memory_user = calls;
  t4a_runtime rt = {0};
  RT_OK(T->runtime_create(0, &o, &rt));
  return rt;
}

static uint64_t address_of(t4a_runtime rt, t4a_buffer b) {
  uint64_t a = 0;
  RT_OK(T->buffer_device_address(rt, b, &a));
  return a;
}

static uint64_t held(t4a_runtime rt) {
  t4a_memory_info m = {.struct_size = sizeof m};
  RT_OK(T->runtime_memory_info(rt, &m));
  return m.held_bytes;
}

/* Checks event e against what is expected of it. */
static void expect(const t4a_alloc_event *e, uint64_t seq, uint32_t kind, uint32_t detail,
                   uint64_t buffer, uint64_t address, uint64_t bytes, uint64_t held_after) {
  ck_assert_msg(e->seq == seq && e->kind == kind && e->detail == detail && e->buffer == buffer &&
                    e->address == address && e->bytes == bytes && e->held_bytes == held_after,
                "event %llu: kind %u detail %u buffer %llx address %llx bytes %llu held %llu; "
                "want event %llu kind %u detail %u buffer %llx address %llx bytes %llu held %llu",
                (unsigned long long)e->seq, e->kind, e->detail, (unsigned long long)e->buffer,
                (unsigned long long)e->address, (unsigned long long)e->bytes,
                (unsigned long long)e->held_bytes, (unsigned long long)seq, kind, detail,
                (unsigned long long)buffer, (unsigned long long)address, (unsigned long long)bytes,
                (unsigned long long)held_after);
}

START_TEST(every_kind_of_event_is_recorded_in_order) {
  int calls = 0;
  t4a_runtime rt = create_logged(0, 1024 * KiB, &calls);
  t4a_buffer a, b, c;
  RT_OK(T->buffer_alloc(rt, 200 * KiB, &a)); /* class 208 KiB */
  uint64_t addr_a = address_of(rt, a);
  RT_OK(T->memset(rt, a, 0, 7, 1, 200 * KiB)); /* work: the stream moves on */
  rt_sync(rt);
  RT_OK(T->buffer_free(rt, a));              /* cached */
  RT_OK(T->buffer_alloc(rt, 205 * KiB, &b)); /* the same class: the same block */
  ck_assert_uint_eq(address_of(rt, b), addr_a);
  RT_EXPECT(T->buffer_alloc(rt, 900 * KiB, &c), T4A_ENOMEM); /* 960 KiB: over the limit */
  ck_assert_int_eq(calls, 1);
  RT_OK(T->buffer_free(rt, b));
  RT_OK(T->cache_trim(rt, 0));
  ck_assert_uint_eq(held(rt), 0);
  RT_OK(T->buffer_alloc(rt, 0, &c)); /* an empty buffer: no block */

  t4a_alloc_event ev[16];
  memset(ev, 0xa5, sizeof ev);
  uint32_t count = 99;
  uint64_t next = 99;
  RT_OK(T->alloc_log_read(rt, 0, ev, 16, &count, &next));
  ck_assert_uint_eq(count, 7);
  ck_assert_uint_eq(next, 7);
  expect(&ev[0], 0, T4A_ALLOC_EVENT_ALLOC, 0, a.bits, addr_a, 200 * KiB, 208 * KiB);
  expect(&ev[1], 1, T4A_ALLOC_EVENT_FREE, 1, a.bits, addr_a, 200 * KiB, 208 * KiB);
  expect(&ev[2], 2, T4A_ALLOC_EVENT_REUSE, 0, b.bits, addr_a, 205 * KiB, 208 * KiB);
  expect(&ev[3], 3, T4A_ALLOC_EVENT_OUT_OF_MEMORY, T4A_OUT_OF_MEMORY_LIMIT, 0, 0, 960 * KiB,
         208 * KiB);
  expect(&ev[4], 4, T4A_ALLOC_EVENT_FREE, 1, b.bits, addr_a, 205 * KiB, 208 * KiB);
  expect(&ev[5], 5, T4A_ALLOC_EVENT_TRIM, 0, 0, 0, 208 * KiB, 0);
  expect(&ev[6], 6, T4A_ALLOC_EVENT_ALLOC, 0, c.bits, 0, 0, 0);
  for (int i = 1; i < 7; i++) {
    ck_assert_uint_ge(ev[i].time_ns, ev[i - 1].time_ns);
    ck_assert_uint_ge(ev[i].stream_seq, ev[i - 1].stream_seq);
  }
  ck_assert_uint_gt(ev[0].time_ns, 0);
  /* the memset and its seal came between the first two events */
  ck_assert_uint_gt(ev[1].stream_seq, ev[0].stream_seq);
  ck_assert_uint_eq(ev[7].seq, 0xa5a5a5a5a5a5a5a5ull); /* nothing written past count */
  RT_OK(T->buffer_free(rt, c));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  uint64_t gone;
  RT_EXPECT(T->alloc_log_read(rt, 0, ev, 16, &count, &gone), T4A_EHANDLE);
}
END_TEST

START_TEST(the_ring_keeps_the_newest_events) {
  t4a_runtime rt = create_logged(5, 0, NULL); /* rounded up: 8 */
  t4a_buffer b;
  for (int i = 0; i < 20; i++) {
    RT_OK(T->buffer_alloc(rt, 4096, &b));
    RT_OK(T->buffer_free(rt, b));
  }
  t4a_alloc_event ev[64];
  uint32_t count = 0;
  uint64_t next = 0;
  RT_OK(T->alloc_log_read(rt, 0, ev, 64, &count, &next)); /* 0 .. 31 were dropped */
  ck_assert_uint_eq(count, 8);
  ck_assert_uint_eq(next, 40);
  for (uint32_t i = 0; i < count; i++) {
    ck_assert_uint_eq(ev[i].seq, 32 + i);
    ck_assert_uint_eq(ev[i].kind, i % 2 ? T4A_ALLOC_EVENT_FREE : T4A_ALLOC_EVENT_REUSE);
  }
  /* in pieces, from where the last read stopped */
  RT_OK(T->alloc_log_read(rt, 33, ev, 3, &count, &next));
  ck_assert_uint_eq(count, 3);
  ck_assert_uint_eq(ev[0].seq, 33);
  ck_assert_uint_eq(ev[2].seq, 35);
  ck_assert_uint_eq(next, 36);
  RT_OK(T->alloc_log_read(rt, next, ev, 64, &count, &next));
  ck_assert_uint_eq(count, 4);
  ck_assert_uint_eq(next, 40);
  RT_OK(T->alloc_log_read(rt, next, ev, 64, &count, &next)); /* nothing new */
  ck_assert_uint_eq(count, 0);
  ck_assert_uint_eq(next, 40);
  RT_OK(T->alloc_log_read(rt, 1000, ev, 64, &count, &next)); /* ahead of the log */
  ck_assert_uint_eq(count, 0);
  ck_assert_uint_eq(next, 1000);
  RT_OK(T->alloc_log_read(rt, 3, NULL, 0, &count, &next)); /* where the log is */
  ck_assert_uint_eq(count, 0);
  ck_assert_uint_eq(next, 40);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(without_the_flag_there_is_no_log) {
  t4a_runtime rt = rt_create();
  t4a_alloc_event ev[4];
  uint32_t count = 0;
  uint64_t next = 0;
  RT_EXPECT(T->alloc_log_read(rt, 0, ev, 4, &count, &next), T4A_EUNSUPPORTED);
  RT_DETAIL("T4A_RUNTIME_ALLOC_LOG");
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  /* options that cannot be */
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.alloc_log_events = 64; /* without the flag */
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("alloc_log_events");
  o.flags = T4A_RUNTIME_ALLOC_LOG;
  o.alloc_log_events = (1u << 20) + 1;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  o.alloc_log_events = 1u << 20; /* the most */
  RT_OK(T->runtime_create(0, &o, &rt));
  RT_EXPECT(T->alloc_log_read(rt, 0, ev, 4, NULL, &next), T4A_EINVAL);
  RT_EXPECT(T->alloc_log_read(rt, 0, ev, 4, &count, NULL), T4A_EINVAL);
  RT_EXPECT(T->alloc_log_read(rt, 0, NULL, 4, &count, &next), T4A_EINVAL);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  o.alloc_log_events = 0;
  o.reserved_v1_2 = 1;
  RT_EXPECT(T->runtime_create(0, &o, &rt), T4A_EINVAL);
  RT_DETAIL("reserved_v1_2");
}
END_TEST

static Suite *suite(void) {
  Suite *s = rt_suite("alloclog");
  TCase *tc = rt_tcase(s, "alloclog", 60);
  tcase_add_test(tc, every_kind_of_event_is_recorded_in_order);
  tcase_add_test(tc, the_ring_keeps_the_newest_events);
  tcase_add_test(tc, without_the_flag_there_is_no_log);
  return s;
}

int main(void) { return rt_run(suite(), 1); }
