/* tests/runtime/test_cross.c -- copies between runtimes: on one device
 * (copy_from_runtime) and between devices (copy_from_peer, and the explicit
 * copy_from_peer_via_host): data, ordering, retirement of the source, and
 * teardown while copies are pending.
 *
 * Built three ways: against the fake driver (two fake devices, CI), for the
 * GPU lane (one GPU: the same-device tests, plus the peer tests when a second
 * GPU is there), and for the two-GPU lane (make check-multigpu, which fails
 * below two GPUs). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-cuda/cuda_decls.h"
#include "tests/runtime/rtutil.h"

#define MiB (1ull << 20)

static t4a_runtime create_on(int32_t device) {
  t4a_runtime rt = {0};
  RT_OK(T->runtime_create(device, NULL, &rt));
  return rt;
}

typedef int (*copy_fn)(t4a_runtime, t4a_buffer, uint64_t, t4a_runtime, t4a_buffer, uint64_t,
                       uint64_t);

/* Random bytes into src (on a) at soff, copied into b at doff, checked. */
static void copy_and_check(copy_fn copy, t4a_runtime a, t4a_runtime b, uint64_t n, uint64_t soff,
                           uint64_t doff, uint64_t seed) {
  unsigned char *host = malloc(n + 1), *back = malloc(n + 1);
  t4a_test_fill_random(host, n + 1, seed);
  t4a_buffer s, d;
  RT_OK(T->buffer_alloc(a, n + soff, &s));
  RT_OK(T->buffer_alloc(b, n + doff + 1, &d));
  RT_OK(T->memset(b, d, 0, 0xee, 1, n + doff + 1)); /* poisoned, and the byte after stays */
  RT_OK(T->copy_h2d(a, s, soff, host, n));          /* enqueued on a, not yet waited for */
  RT_OK(copy(b, d, doff, a, s, soff, n));
  memset(back, 0, n + 1);
  RT_OK(T->copy_d2h(b, back, d, doff, n + 1));
  ck_assert_msg(memcmp(host, back, n) == 0, "%llu bytes (offsets %llu -> %llu) differ",
                (unsigned long long)n, (unsigned long long)soff, (unsigned long long)doff);
  ck_assert_msg(back[n] == 0xee, "the copy of %llu bytes wrote past its end",
                (unsigned long long)n);
  RT_OK(T->buffer_free(a, s));
  RT_OK(T->buffer_free(b, d));
  free(host);
  free(back);
}

/* ---- one device --------------------------------------------------------------- */

START_TEST(same_device_copies_are_exact) {
  t4a_runtime a = rt_create(), b = rt_create();
  static const uint64_t sizes[] = {0, 1, 3, 4097, MiB + 5, 64 * MiB + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    copy_and_check(T->copy_from_runtime, a, b, sizes[i], 2 * i + 1, 3 * i + 1, t4a_test_seed() + i);
    copy_and_check(T->copy_from_runtime, b, a, sizes[i], i, 0, t4a_test_seed() + 100 + i);
  }
  t4a_runtime_counters c = rt_counters(b);
  ck_assert_uint_eq(c.copies_cross_runtime, 5); /* the zero-byte copy enqueues nothing */
  t4a_buffer x, y;
  RT_OK(T->buffer_alloc(a, 16, &x));
  RT_OK(T->buffer_alloc(b, 16, &y));
  RT_EXPECT(T->copy_from_runtime(b, y, 0, a, x, 1, 16), T4A_ERANGE);
  RT_DETAIL(rt_on_host() ? "source offset 1 (of 16)" : "source range");
  RT_EXPECT(T->copy_from_runtime(b, y, 8, a, x, 0, 9), T4A_ERANGE);
  RT_EXPECT(T->copy_from_runtime(b, x, 0, a, y, 0, 1), T4A_EHANDLE); /* swapped buffers */
  RT_EXPECT(T->copy_from_runtime(a, x, 0, a, x, 0, 1), T4A_EINVAL);  /* one runtime */
  RT_DETAIL("copy_d2d");
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

/* The source's pending write (held behind a gate) is seen by the copy. */
static void ordering(copy_fn copy, t4a_runtime a, t4a_runtime b) {
  uint64_t n = 1 << 20;
  t4a_buffer s, d;
  RT_OK(T->buffer_alloc(a, n * 4, &s));
  RT_OK(T->buffer_alloc(b, n * 4, &d));
  uint32_t *host = calloc(n, 4);
  RT_OK(T->copy_h2d(a, s, 0, host, n * 4)); /* zeros */
  rt_gate g;
  rt_gate_close(&g, a);
  uint64_t addr;
  RT_OK(T->buffer_device_address(a, s, &addr));
  uint32_t value = 0x5eed5eed;
  void *args[] = {&addr, &value, &n};
  if (rt_on_host()) /* no raw seam: a memset is a's write, held behind the gate alike */
    RT_OK(T->memset(a, s, 0, value, 4, n));
  else /* the gate's module: loading one now could wait behind the gate's kernel */
    rt_raw_launch(a, &g.module, "t4a_fill_u32", args); /* right before the copy */
  RT_OK(copy(b, d, 0, a, s, 0, n * 4));
  t4a_witness w;
  RT_OK(T->seal(b, &w));
  RT_EXPECT(T->witness_query(w), T4A_ENOTREADY); /* b waits for a, GPU-side */
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->copy_d2h(b, host, d, 0, n * 4));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(host[i], value);
  RT_OK(T->witness_release(w));
  rt_gate_free(&g);
  free(host);
}

START_TEST(same_device_copy_follows_the_source) {
  t4a_runtime a = rt_create(), b = rt_create();
  ordering(T->copy_from_runtime, a, b);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

/* Uploads host[0, n) into d on rt without waiting for rt's queue: on CUDA a
 * pageable copy_h2d (staged: it returns while the stream is held); on the
 * host, whose pageable copies wait for the work ahead, a pinned copy. */
static void upload_behind(t4a_runtime rt, t4a_buffer d, const unsigned char *host, uint64_t n) {
  if (!rt_on_host()) {
    RT_OK(T->copy_h2d(rt, d, 0, host, n));
    return;
  }
  t4a_host_buffer hb;
  void *p;
  RT_OK(T->host_alloc(rt, n, 0, &hb, &p));
  memcpy(p, host, n);
  RT_OK(T->copy_h2d_pinned(rt, d, 0, hb, 0, n));
  RT_OK(T->host_free(rt, hb)); /* released behind the copy */
}

/* The source buffer is freed while the destination's copy is held back; its
 * block, reallocated at once (the cache hands it out again) and overwritten
 * by the source runtime, must not change what the copy reads. */
static void retirement(copy_fn copy, t4a_runtime a, t4a_runtime b) {
  uint64_t n = 4 * MiB;
  unsigned char *old = malloc(n), *fresh = malloc(n), *back = malloc(n);
  t4a_test_fill_random(old, n, 1);
  t4a_test_fill_random(fresh, n, 2);
  t4a_buffer s, d, again;
  RT_OK(T->buffer_alloc(a, n, &s));
  RT_OK(T->buffer_alloc(b, n, &d));
  RT_OK(T->copy_h2d(a, s, 0, old, n));
  rt_sync(a);
  rt_gate g;
  rt_gate_close(&g, b); /* b's stream is held */
  RT_OK(copy(b, d, 0, a, s, 0, n));
  uint64_t addr_s, addr_again;
  RT_OK(T->buffer_device_address(a, s, &addr_s));
  RT_OK(T->buffer_free(a, s));
  RT_OK(T->buffer_alloc(a, n, &again));
  RT_OK(T->buffer_device_address(a, again, &addr_again));
  ck_assert_uint_eq(addr_again, addr_s); /* the same block, reused */
  upload_behind(a, again, fresh, n);     /* a's stream waits for b's copy first */
  t4a_witness wa;
  RT_OK(T->seal(a, &wa));
  RT_EXPECT(T->witness_wait(wa, 5000000), T4A_ETIMEOUT); /* held behind b's gate */
  rt_gate_open(&g);
  RT_OK(T->witness_wait(wa, T4A_WAIT_FOREVER));
  RT_OK(T->copy_d2h(b, back, d, 0, n));
  ck_assert(memcmp(back, old, n) == 0); /* b copied the old contents */
  RT_OK(T->copy_d2h(a, back, again, 0, n));
  ck_assert(memcmp(back, fresh, n) == 0);
  RT_OK(T->witness_release(wa));
  rt_gate_free(&g);
  free(old);
  free(fresh);
  free(back);
}

START_TEST(same_device_source_is_not_reused_early) {
  t4a_runtime a = rt_create(), b = rt_create();
  retirement(T->copy_from_runtime, a, b);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

/* The same with the source runtime's block cache off: the freed block goes
 * back to the pool, which may hand it out again at once to the same stream
 * (CUDA's stream-ordered reuse, as the fake does); the copy must still read
 * the old contents. */
static void retirement_through_the_pool(copy_fn copy, t4a_runtime a, t4a_runtime b) {
  uint64_t n = 4 * MiB;
  unsigned char *old = malloc(n), *fresh = malloc(n), *back = malloc(n);
  t4a_test_fill_random(old, n, 5);
  t4a_test_fill_random(fresh, n, 6);
  t4a_buffer s, d, again;
  RT_OK(T->buffer_alloc(a, n, &s));
  RT_OK(T->buffer_alloc(b, n, &d));
  RT_OK(T->copy_h2d(a, s, 0, old, n));
  rt_sync(a);
  rt_gate g;
  rt_gate_close(&g, b);
  RT_OK(copy(b, d, 0, a, s, 0, n));
  uint64_t frees = rt_counters(a).driver_frees;
  t4a_memory_info mi = {.struct_size = sizeof mi};
  RT_OK(T->runtime_memory_info(a, &mi));
  uint64_t used = mi.pool_used;
  RT_OK(T->buffer_free(a, s)); /* to the pool: the cache is off */
  if (rt_on_host()) { /* the host pool's driver calls are its 64 MiB mappings: the block went
                         back into its chunk, which stays mapped (not unmapped early) */
    RT_OK(T->runtime_memory_info(a, &mi));
    ck_assert_uint_eq(used - mi.pool_used, n);
    ck_assert_uint_eq(rt_counters(a).driver_frees, frees);
  } else {
    ck_assert_uint_eq(rt_counters(a).driver_frees, frees + 1);
  }
  RT_OK(T->buffer_alloc(a, n, &again));
  upload_behind(a, again, fresh, n); /* a's stream waits for b's copy first */
  t4a_witness wa;
  RT_OK(T->seal(a, &wa));
  RT_EXPECT(T->witness_wait(wa, 5000000), T4A_ETIMEOUT); /* held behind b's gate */
  rt_gate_open(&g);
  RT_OK(T->witness_wait(wa, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(wa));
  RT_OK(T->copy_d2h(b, back, d, 0, n));
  ck_assert(memcmp(back, old, n) == 0);
  RT_OK(T->copy_d2h(a, back, again, 0, n));
  ck_assert(memcmp(back, fresh, n) == 0);
  rt_gate_free(&g);
  free(old);
  free(fresh);
  free(back);
}

START_TEST(same_device_source_is_not_reused_early_by_the_pool) {
  t4a_runtime a = rt_create_with(0, 1), b = rt_create();
  retirement_through_the_pool(T->copy_from_runtime, a, b);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

/* Destroying the source while the destination's copy is held back: destroy
 * waits (a short timeout expires, nothing is released), then succeeds. */
static void teardown_while_pending(copy_fn copy, t4a_runtime a, t4a_runtime b) {
  uint64_t n = MiB;
  unsigned char *host = malloc(n), *back = malloc(n);
  t4a_test_fill_random(host, n, 3);
  t4a_buffer s, d;
  RT_OK(T->buffer_alloc(a, n, &s));
  RT_OK(T->buffer_alloc(b, n, &d));
  RT_OK(T->copy_h2d(a, s, 0, host, n));
  rt_gate g;
  rt_gate_close(&g, b);
  RT_OK(copy(b, d, 0, a, s, 0, n));
  RT_EXPECT(T->runtime_destroy(a, 5000000), T4A_ETIMEOUT);
  rt_gate_open(&g);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->copy_d2h(b, back, d, 0, n));
  ck_assert(memcmp(back, host, n) == 0);
  rt_gate_free(&g);
  free(host);
  free(back);
}

START_TEST(same_device_source_destroyed_while_pending) {
  t4a_runtime a = rt_create(), b = rt_create();
  teardown_while_pending(T->copy_from_runtime, a, b);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

/* A destroyed runtime's handle whose slot now holds the other runtime: the
 * pair is rejected (once this deadlocked: found by fuzz/fuzz_api.c). */
START_TEST(stale_handle_sharing_the_slot_is_rejected) {
  t4a_runtime old = rt_create();
  RT_OK(T->runtime_destroy(old, T4A_WAIT_FOREVER));
  t4a_runtime live = rt_create();
  ck_assert_msg(((old.bits ^ live.bits) >> 48 & 0xfffu) == 0, "the slot was not reused");
  t4a_buffer b;
  RT_OK(T->buffer_alloc(live, 64, &b));
  RT_OK(T->memset(live, b, 0, 0x7e, 1, 64));
  copy_fn fns[] = {T->copy_from_runtime, T->copy_from_peer, T->copy_from_peer_via_host};
  for (size_t i = 0; i < 3; i++) {
    RT_EXPECT(fns[i](live, b, 0, old, b, 0, 8), T4A_EHANDLE);
    RT_DETAIL("destroyed");
    RT_EXPECT(fns[i](old, b, 0, live, b, 0, 8), T4A_EHANDLE);
    RT_DETAIL("destroyed");
  }
  unsigned char out[8];
  RT_OK(T->copy_d2h(live, out, b, 0, sizeof out)); /* still usable, and nothing refused wrote */
  for (size_t i = 0; i < sizeof out; i++)
    ck_assert_uint_eq(out[i], 0x7e);
  RT_OK(T->buffer_free(live, b));
  RT_OK(T->runtime_destroy(live, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- several runtimes copying at once ------------------------------------------ */

typedef struct worker {
  t4a_runtime from, to;
  copy_fn copy;
  uint64_t seed;
  int failures;
} worker;

static void *churn(void *arg) {
  worker *w = arg;
  uint64_t n = 256 * 1024 + 7;
  unsigned char *host = malloc(n), *back = malloc(n);
  for (int i = 0; i < 20; i++) {
    t4a_test_fill_random(host, n, w->seed + (uint64_t)i);
    t4a_buffer s, d;
    if (T->buffer_alloc(w->from, n, &s) || T->buffer_alloc(w->to, n, &d) ||
        T->copy_h2d(w->from, s, 0, host, n) || w->copy(w->to, d, 0, w->from, s, 0, n) ||
        T->buffer_free(w->from, s) || T->copy_d2h(w->to, back, d, 0, n) ||
        T->buffer_free(w->to, d) || memcmp(host, back, n) != 0)
      w->failures++;
  }
  free(host);
  free(back);
  return NULL;
}

static void concurrent(copy_fn copy, int32_t dev_a, int32_t dev_b) {
  t4a_runtime r[4] = {create_on(dev_a), create_on(dev_a), create_on(dev_b), create_on(dev_b)};
  worker w[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    /* each runtime copies from one on the other device (or its sibling) */
    w[i] = (worker){r[i], r[(i + 2) % 4], copy, t4a_test_seed() + 1000ull * (uint64_t)i, 0};
    if (dev_a == dev_b)
      w[i].to = r[i ^ 1];
    ck_assert_int_eq(pthread_create(&th[i], NULL, churn, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(w[i].failures, 0);
  }
  for (int i = 0; i < 4; i++)
    RT_OK(T->runtime_destroy(r[i], T4A_WAIT_FOREVER));
}

START_TEST(same_device_runtimes_copy_concurrently) { concurrent(T->copy_from_runtime, 0, 0); }
END_TEST

/* ---- two devices ------------------------------------------------------------------ */

START_TEST(peer_copies_are_exact_both_ways) {
  t4a_runtime a = create_on(0), b = create_on(1);
  static const uint64_t sizes[] = {0, 1, 3, 4097, MiB + 5, 64 * MiB + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    copy_and_check(T->copy_from_peer, a, b, sizes[i], 2 * i + 1, 3 * i + 1, t4a_test_seed() + i);
    copy_and_check(T->copy_from_peer, b, a, sizes[i], i, 5, t4a_test_seed() + 100 + i);
  }
  if (!rt_on_fake()) { /* 1 GiB at odd offsets, each way */
    copy_and_check(T->copy_from_peer, a, b, rt_scaled(1024 * MiB), 7, 13, t4a_test_seed() + 7);
    copy_and_check(T->copy_from_peer, b, a, rt_scaled(1024 * MiB), 1, 3, t4a_test_seed() + 8);
  }
  ck_assert_uint_ge(rt_counters(b).copies_peer, 5);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(peer_copy_follows_the_source) {
  t4a_runtime a = create_on(0), b = create_on(1);
  ordering(T->copy_from_peer, a, b);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(peer_source_is_not_reused_early) {
  t4a_runtime a = create_on(0), b = create_on(1);
  retirement(T->copy_from_peer, a, b);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(peer_source_is_not_reused_early_by_the_pool) {
  t4a_runtime_options o = {.struct_size = sizeof o, .cache_limit_bytes = 1};
  t4a_runtime a = {0}, b = create_on(1);
  RT_OK(T->runtime_create(0, &o, &a));
  retirement_through_the_pool(T->copy_from_peer, a, b);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

/* A kernel on one device may use another device's buffer where peer
 * access exists: runtimes grant the devices that can reach theirs access
 * to their pool (pool memory ignores cuCtxEnablePeerAccess; without the
 * grant the access faults, on the fake as on a GPU). */
START_TEST(a_kernel_writes_a_peer_buffer) {
  bool can = false;
  RT_OK(T->peer_access_supported(1, 0, &can));
  if (!can) /* nothing to check on GPUs without a peer path */
    return;
  t4a_runtime a = create_on(0), b = create_on(1);
  uint64_t n = 100000, addr;
  t4a_buffer d;
  RT_OK(T->buffer_alloc(a, n * 4, &d));
  RT_OK(T->buffer_device_address(a, d, &addr));
  rt_sync(a);
  uint32_t value = 0xb0a710ad;
  void *args[] = {&addr, &value, &n};
  void *module = NULL;
  rt_raw_launch(b, &module, "t4a_fill_u32", args); /* on device 1, into device 0's memory */
  t4a_witness w;
  RT_OK(T->seal(b, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  uint32_t *back = malloc(n * 4);
  RT_OK(T->copy_d2h(a, back, d, 0, n * 4));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(back[i], value);
  free(back);
  rt_raw_unload(b, module);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(peer_source_destroyed_while_pending) {
  t4a_runtime a = create_on(0), b = create_on(1);
  teardown_while_pending(T->copy_from_peer, a, b);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(peer_runtimes_copy_concurrently) { concurrent(T->copy_from_peer, 0, 1); }
END_TEST

START_TEST(peer_rules_and_the_explicit_host_route) {
  t4a_runtime a = create_on(0), b = create_on(1), a2 = create_on(0);
  t4a_buffer s, d;
  RT_OK(T->buffer_alloc(a, 64, &s));
  RT_OK(T->buffer_alloc(b, 64, &d));
  RT_EXPECT(T->copy_from_runtime(b, d, 0, a, s, 0, 64), T4A_EFOREIGNDEVICE);
  RT_DETAIL("use copy_from_peer");
  t4a_buffer d2;
  RT_OK(T->buffer_alloc(a2, 64, &d2));
  RT_EXPECT(T->copy_from_peer(a2, d2, 0, a, s, 0, 64), T4A_EINVAL);
  RT_DETAIL("use copy_from_runtime");
  /* copy_from_peer works exactly where peer_access_supported says the
   * destination's device reaches the source's (the fake's devices do) */
  for (int dir = 0; dir < 2; dir++) {
    t4a_runtime to = dir ? a : b, from = dir ? b : a;
    int32_t dev_to = dir ? 0 : 1, dev_from = dir ? 1 : 0;
    bool can = !rt_on_fake();
    RT_OK(T->peer_access_supported(dev_to, dev_from, &can));
    ck_assert(can || !rt_on_fake());
    if (can) {
      copy_and_check(T->copy_from_peer, from, to, 4097, 1, 2, t4a_test_seed() + 20 + dir);
    } else {
      t4a_buffer x, y;
      RT_OK(T->buffer_alloc(from, 64, &x));
      RT_OK(T->buffer_alloc(to, 64, &y));
      RT_EXPECT(T->copy_from_peer(to, y, 0, from, x, 0, 64), T4A_EUNSUPPORTED);
      RT_DETAIL("copy_from_peer_via_host");
    }
  }
  /* the explicit route through host memory, any sizes, both ways */
  static const uint64_t sizes[] = {1, 4097, 3 * MiB + 1};
  for (size_t i = 0; i < 3; i++) {
    copy_and_check(T->copy_from_peer_via_host, a, b, sizes[i], i + 1, 2 * i, t4a_test_seed() + i);
    copy_and_check(T->copy_from_peer_via_host, b, a, sizes[i], 0, i, t4a_test_seed() + 9 + i);
  }
  ck_assert_uint_eq(rt_counters(b).copies_via_host, 3);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(a2, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

#ifdef T4A_TEST_FAKE
/* peer_access_supported(src, dst) is about direction src -> dst, and
 * copy_from_peer follows it: with device 1 unable to reach device 0 (and
 * 0 able to reach 1), a copy into device 1 from device 0 is T4A_EUNSUPPORTED
 * with the reason, the other way works. (Fake only: it removes one
 * direction with FAKE_CUDA_NO_PEER=1>0.) */
START_TEST(peer_access_has_a_direction) {
  setenv("FAKE_CUDA_NO_PEER", "1>0", 1);
  bool can = true;
  RT_OK(T->peer_access_supported(1, 0, &can));
  ck_assert(!can);
  RT_OK(T->peer_access_supported(0, 1, &can));
  ck_assert(can);
  t4a_runtime a = create_on(0), b = create_on(1);
  t4a_buffer x, y;
  RT_OK(T->buffer_alloc(a, 64, &x));
  RT_OK(T->buffer_alloc(b, 64, &y));
  RT_EXPECT(T->copy_from_peer(b, y, 0, a, x, 0, 64), T4A_EUNSUPPORTED);
  RT_DETAIL("device 1 cannot access device 0");
  RT_DETAIL("copy_from_peer_via_host");
  copy_and_check(T->copy_from_peer, b, a, MiB + 3, 5, 7, t4a_test_seed());
  copy_and_check(T->copy_from_peer_via_host, a, b, MiB + 3, 5, 7, t4a_test_seed() + 1);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST
#endif

/* runtime_wait_witness across devices orders real data: a's kernel (held
 * behind a gate) writes a pinned buffer; b waits for a's witness and then,
 * through the raw seam, copies that buffer to its device. b must see a's
 * values, which exist only once a's work ran. */
START_TEST(a_runtime_waits_for_a_witness_of_another_device) {
  t4a_runtime a = create_on(0), b = create_on(1);
  uint64_t n = 1 << 16;
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(a, n * 4, 0, &h, &p));
  memset(p, 0, n * 4);
  rt_gate g;
  rt_gate_close(&g, a);
  uint64_t addr = (uint64_t)(uintptr_t)p;
  uint32_t value = 0xfeedf00d;
  void *args[] = {&addr, &value, &n};
  rt_raw_launch(a, &g.module, "t4a_fill_u32", args); /* behind the gate */
  t4a_witness w;
  RT_OK(T->seal(a, &w));
  RT_OK(T->runtime_wait_witness(b, w)); /* GPU-side: returns at once */
  t4a_buffer d;
  RT_OK(T->buffer_alloc(b, n * 4, &d));
  uint64_t daddr;
  RT_OK(T->buffer_device_address(b, d, &daddr));
  t4a__CUresult (*h2d)(t4a__CUdeviceptr, const void *, size_t, t4a__CUstream);
  *(void **)&h2d = rt_driver("cuMemcpyHtoDAsync_v2");
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(b, &raw));
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(b, &sec));
  ck_assert_int_eq(h2d(daddr, p, n * 4, raw.stream), 0);
  RT_OK(T->raw_end(b, &sec));
  t4a_witness wb;
  RT_OK(T->seal(b, &wb));
  RT_EXPECT(T->witness_wait(wb, 5000000), T4A_ETIMEOUT); /* b is held behind a */
  rt_gate_open(&g);
  RT_OK(T->witness_wait(wb, T4A_WAIT_FOREVER));
  uint32_t *back = malloc(n * 4);
  RT_OK(T->copy_d2h(b, back, d, 0, n * 4));
  for (uint64_t i = 0; i < n; i++)
    ck_assert_uint_eq(back[i], value);
  free(back);
  RT_OK(T->witness_release(w));
  RT_OK(T->witness_release(wb));
  rt_gate_free(&g);
  RT_OK(T->host_free(a, h));
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST

#ifdef T4A_TEST_HOST
/* The host backend has one device: both runtimes of a copy are on it. The
 * peer slots are T4A_EUNSUPPORTED naming copy_from_runtime (after the
 * handle and range checks), there is no device 1, and a peer copy writes
 * nothing. */
START_TEST(one_device_peer_copies_are_unsupported) {
  int32_t count = 0;
  RT_OK(T->device_count(&count));
  ck_assert_int_eq(count, 1);
  t4a_runtime a = rt_create(), b = rt_create(), none;
  RT_EXPECT(T->runtime_create(1, NULL, &none), T4A_EINVAL);
  bool can = true;
  RT_EXPECT(T->peer_access_supported(0, 1, &can), T4A_EINVAL);
  t4a_buffer x, y;
  RT_OK(T->buffer_alloc(a, 64, &x));
  RT_OK(T->buffer_alloc(b, 64, &y));
  RT_OK(T->memset(a, x, 0, 0x11, 1, 64));
  RT_OK(T->memset(b, y, 0, 0xee, 1, 64));
  copy_fn peer[] = {T->copy_from_peer, T->copy_from_peer_via_host};
  for (size_t i = 0; i < 2; i++) {
    RT_EXPECT(peer[i](b, y, 0, a, x, 0, 64), T4A_EUNSUPPORTED);
    RT_DETAIL("copy_from_runtime");
    RT_EXPECT(peer[i](b, y, 0, b, y, 0, 64), T4A_EINVAL); /* one runtime: copy_d2d */
    RT_DETAIL("copy_d2d");
  }
  unsigned char out[64];
  RT_OK(T->copy_d2h(b, out, y, 0, sizeof out));
  for (size_t i = 0; i < sizeof out; i++)
    ck_assert_uint_eq(out[i], 0xee);
  t4a_runtime_counters c = rt_counters(b);
  ck_assert_uint_eq(c.copies_peer + c.copies_via_host, 0);
  copy_and_check(T->copy_from_runtime, a, b, 4097, 1, 2, t4a_test_seed()); /* the way to go */
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST
#endif

__attribute__((unused)) static void add_single(Suite *s) {
  TCase *tc = tcase_create("one-device");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, same_device_copies_are_exact);
  tcase_add_test(tc, same_device_copy_follows_the_source);
  tcase_add_test(tc, same_device_source_is_not_reused_early);
  tcase_add_test(tc, same_device_source_is_not_reused_early_by_the_pool);
  tcase_add_test(tc, same_device_source_destroyed_while_pending);
  tcase_add_test(tc, same_device_runtimes_copy_concurrently);
  tcase_add_test(tc, stale_handle_sharing_the_slot_is_rejected);
  suite_add_tcase(s, tc);
}

#ifdef T4A_TEST_FAKE
/* A copy's reader event lives in the destination device's context (see
 * note_reader in cross.c), so the source runtime holds a reference on that
 * context: one, however many such events it makes, given back at destroy.
 * Two peer copies out of two source buffers keep two reader events at once;
 * after destroy the context's references are what they were (fake: its
 * reference count on device 1's primary context). */
START_TEST(events_in_another_context_hold_it_once) {
  uint64_t (*refs)(const char *, int);
  *(void **)&refs = rt_driver("fake_cuda_live_on");
  t4a_runtime a = create_on(0), b = create_on(1);
  uint64_t before = refs("context", 1);
  t4a_buffer s1, s2, d1, d2;
  RT_OK(T->buffer_alloc(a, 4096, &s1));
  RT_OK(T->buffer_alloc(a, 4096, &s2));
  RT_OK(T->buffer_alloc(b, 4096, &d1));
  RT_OK(T->buffer_alloc(b, 4096, &d2));
  RT_OK(T->memset(a, s1, 0, 0x11, 1, 4096));
  RT_OK(T->memset(a, s2, 0, 0x22, 1, 4096));
  uint64_t events = rt_counters(a).events_created;
  RT_OK(T->copy_from_peer(b, d1, 0, a, s1, 0, 4096)); /* s1's reader: an event on device 1 */
  RT_OK(T->copy_from_peer(b, d2, 0, a, s2, 0, 4096)); /* s2's: another, s1's still held */
  ck_assert_uint_ge(rt_counters(a).events_created, events + 2);
  ck_assert_uint_eq(refs("context", 1), before + 1);
  rt_sync(b);
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  ck_assert_uint_eq(refs("context", 1), before);
  unsigned char back[4096];
  RT_OK(T->copy_d2h(b, back, d2, 0, sizeof back));
  ck_assert_uint_eq(back[0], 0x22);
  ck_assert_uint_eq(back[4095], 0x22);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
}
END_TEST
#endif

__attribute__((unused)) static void add_multi(Suite *s) {
  TCase *tc = tcase_create("two-devices");
  tcase_set_timeout(tc, 300);
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, peer_copies_are_exact_both_ways);
  tcase_add_test(tc, peer_copy_follows_the_source);
  tcase_add_test(tc, peer_source_is_not_reused_early);
  tcase_add_test(tc, peer_source_is_not_reused_early_by_the_pool);
  tcase_add_test(tc, a_kernel_writes_a_peer_buffer);
  tcase_add_test(tc, peer_source_destroyed_while_pending);
  tcase_add_test(tc, peer_runtimes_copy_concurrently);
  tcase_add_test(tc, peer_rules_and_the_explicit_host_route);
  tcase_add_test(tc, a_runtime_waits_for_a_witness_of_another_device);
#ifdef T4A_TEST_FAKE
  tcase_add_test(tc, peer_access_has_a_direction);
  tcase_add_test(tc, events_in_another_context_hold_it_once);
#endif
  suite_add_tcase(s, tc);
}

int main(void) {
#if defined(T4A_TEST_HOST)
  Suite *s = rt_suite("cross");
  add_single(s);
  TCase *tc = rt_tcase(s, "one-device-only", 60);
  tcase_add_test(tc, one_device_peer_copies_are_unsupported);
  fprintf(stderr, "rtutil: SKIP the two-devices case on host: the host backend has one "
                  "device (peer copies: one_device_peer_copies_are_unsupported)\n");
  return rt_run(s, 1);
#elif defined(T4A_TEST_FAKE)
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  Suite *s = suite_create("cross-fake");
  add_single(s);
  add_multi(s); /* the fake driver has two devices */
  return t4a_test_run(s);
#elif defined(T4A_TEST_MULTIGPU)
  Suite *s = suite_create("cross-multigpu");
  add_multi(s);
  return t4a_test_gpu_main(s, 2);
#else
  Suite *s = suite_create("cross-gpu");
  add_single(s);
  if (t4a_test_gpu_count() >= 2)
    add_multi(s);
  return t4a_test_gpu_main(s, 1);
#endif
}
