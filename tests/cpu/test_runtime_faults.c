/* tests/cpu/test_runtime_faults.c -- runtime behaviour only the fake driver
 * can show: nothing leaks (every driver object is released exactly once),
 * guard zones stay intact, sticky device faults and quarantine, and
 * injected driver failures yield typed statuses with the runtime usable. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

#define MiB (1ull << 20)

static uint64_t (*live)(const char *);
static uint64_t (*guards)(void);
static uint64_t (*oob)(void);
static void (*inject)(const char *, uint64_t, unsigned);
static uint64_t (*calls)(const char *);

static void controls(void) {
  void *h = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(h);
  *(void **)&live = dlsym(h, "fake_cuda_live");
  *(void **)&guards = dlsym(h, "fake_cuda_guard_violations");
  *(void **)&oob = dlsym(h, "fake_cuda_oob_attempts");
  *(void **)&inject = dlsym(h, "fake_cuda_fail");
  *(void **)&calls = dlsym(h, "fake_cuda_calls");
  ck_assert(live && guards && oob && inject && calls);
  dlclose(h);
}

static void setup(void) {
  rt_setup();
  controls();
}

/* Unloads the plugin (it releases the spare parts destroyed runtimes left
 * for the next runtime_create), then checks that nothing is alive. */
static void close_and_assert_nothing_live(void);

static void assert_nothing_live(void) {
  static const char *const kinds[] = {"device", "host", "stream", "event", "pool", "module"};
  for (int i = 0; i < 6; i++)
    ck_assert_msg(live(kinds[i]) == 0, "%llu %s objects still live",
                  (unsigned long long)live(kinds[i]), kinds[i]);
  ck_assert_uint_eq(guards(), 0);
  ck_assert_uint_eq(oob(), 0);
}

static void close_and_assert_nothing_live(void) {
  t4a_gpu_close(B);
  B = NULL;
  assert_nothing_live();
}

static void reopen(void) {
  B = t4a_test_open_cuda(&T);
  RT_OK(T->init());
}

/* A bit of everything on one runtime. */
static void workload(t4a_runtime rt, uint64_t seed) {
  unsigned char *src = malloc(3 * MiB), *dst = malloc(3 * MiB);
  t4a_test_fill_random(src, 3 * MiB, seed);
  t4a_buffer a, b, kept;
  RT_OK(T->buffer_alloc(rt, 3 * MiB, &a));
  RT_OK(T->buffer_alloc(rt, 3 * MiB, &b));
  RT_OK(T->buffer_alloc(rt, 100, &kept)); /* left for destroy to release */
  t4a_host_buffer h, kept_h;
  void *p, *q;
  RT_OK(T->host_alloc(rt, MiB, 0, &h, &p));
  RT_OK(T->host_alloc(rt, 4096, 0, &kept_h, &q));
  RT_OK(T->copy_h2d(rt, a, 0, src, 3 * MiB));
  RT_OK(T->copy_d2d(rt, b, 0, a, 0, 3 * MiB));
  RT_OK(T->copy_d2h_pinned(rt, h, 0, b, MiB, MiB));
  RT_OK(T->host_free(rt, h)); /* retired behind the next seal */
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->copy_d2h(rt, dst, b, 0, 3 * MiB));
  ck_assert(memcmp(src, dst, 3 * MiB) == 0);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  RT_OK(T->buffer_free(rt, a));
  free(src);
  free(dst);
}

START_TEST(every_driver_object_is_released_once) {
  t4a_runtime r[3];
  for (int i = 0; i < 3; i++)
    r[i] = rt_create_with(i == 0 ? 256 * 1024 : 0, 0);
  for (int i = 0; i < 3; i++)
    workload(r[i], t4a_test_seed() + (uint64_t)i);
  ck_assert_uint_gt(live("stream"), 0);
  for (int i = 0; i < 3; i++)
    RT_OK(T->runtime_destroy(r[i], T4A_WAIT_FOREVER));
  /* what is left is exactly the spare parts of the three (spare.c): one
   * stream, one empty pool and one staging block each, nothing else */
  ck_assert_uint_eq(live("stream"), 3);
  ck_assert_uint_eq(live("pool"), 3);
  ck_assert_uint_eq(live("host"), 3);
  ck_assert_uint_eq(live("device"), 0);
  ck_assert_uint_eq(live("module"), 0);
  /* slots are reused with new generations; the parts are reused, not made */
  uint64_t streams = calls("cuStreamCreate"), pins = calls("cuMemHostAlloc");
  t4a_runtime again = rt_create();
  ck_assert_uint_eq(calls("cuStreamCreate"), streams);
  ck_assert_uint_eq(calls("cuMemHostAlloc"), pins);
  ck_assert(again.bits != r[0].bits && again.bits != r[1].bits && again.bits != r[2].bits);
  workload(again, t4a_test_seed() + 7);
  RT_OK(T->runtime_destroy(again, T4A_WAIT_FOREVER));
  close_and_assert_nothing_live();
}
END_TEST

START_TEST(device_fault_is_sticky_and_quarantines) {
  t4a_runtime a = rt_create(), b = rt_create();
  t4a_runtime other = {0};
  RT_OK(T->runtime_create(1, NULL, &other)); /* another device */
  t4a_buffer d;
  RT_OK(T->buffer_alloc(a, MiB, &d));
  rt_gate g;
  rt_gate_close(&g, a);
  t4a_host_buffer h;
  void *p;
  RT_OK(T->host_alloc(a, MiB, 0, &h, &p));
  RT_OK(T->copy_h2d_pinned(a, d, 0, h, 0, MiB));
  RT_OK(T->host_free(a, h)); /* pending: cannot be proven retired once the device faults */
  rt_raw_launch(a, &g.module, "t4a_fault", NULL); /* the gate's module: no load behind it */
  t4a_witness w;
  RT_OK(T->seal(a, &w));
  rt_gate_open(&g);
  /* The wait blocks in the driver (the gate held the work when it began),
   * which reports the fault first; the status the wait returns, and every
   * later one, still name the native fault (test_fault_gpu checks it
   * exactly on the GPU). */
  RT_EXPECT(T->witness_wait(w, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_DETAIL("CUDA_ERROR_ILLEGAL_ADDRESS");
  RT_EXPECT(T->witness_query(w), T4A_EDEVICEFAULT);
  t4a_error_info e = {.struct_size = sizeof e};
  RT_OK(T->last_error(&e));
  ck_assert_int_eq(e.native_code, 700);
  ck_assert_str_eq(e.native_name, "CUDA_ERROR_ILLEGAL_ADDRESS");
  /* sticky on a, and on b, which shares the device's context */
  RT_EXPECT(T->buffer_alloc(a, 16, &d), T4A_EDEVICEFAULT);
  RT_DETAIL("CUDA_ERROR_ILLEGAL_ADDRESS");
  RT_EXPECT(T->buffer_alloc(b, 16, &d), T4A_EDEVICEFAULT);
  t4a_runtime fresh = {1};
  RT_EXPECT(T->runtime_create(0, NULL, &fresh), T4A_EDEVICEFAULT);
  ck_assert(fresh.bits == 0);
  /* the other device is unaffected */
  RT_OK(T->buffer_alloc(other, 16, &d));
  rt_sync(other);
  t4a_runtime_counters c = rt_counters(a);
  ck_assert_uint_ge(c.quarantined, 1);
  /* destroy still works, reports the fault, and keeps the quarantined memory */
  RT_EXPECT(T->runtime_destroy(a, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_EXPECT(T->buffer_alloc(a, 16, &d), T4A_EHANDLE);
  RT_EXPECT(T->witness_query(w), T4A_EDEVICEFAULT); /* the witness remembers */
  RT_OK(T->witness_release(w));
  RT_EXPECT(T->runtime_destroy(b, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  ck_assert_uint_gt(live("host"), 0); /* quarantined, not freed */
  /* The test's own module (g.module) went with device 0's primary
   * context when the runtimes released it: CUDA frees a context's modules,
   * and the fake reports a later unload as CUDA_ERROR_CONTEXT_IS_DESTROYED. */
}
END_TEST

START_TEST(injected_failures_are_typed_and_recoverable) {
  t4a_runtime rt = rt_create();
  t4a_buffer d;
  inject("cuMemAllocFromPoolAsync", 1, 999);
  RT_EXPECT(T->buffer_alloc(rt, MiB, &d), T4A_EDRIVER);
  RT_DETAIL("CUDA_ERROR_UNKNOWN");
  RT_OK(T->buffer_alloc(rt, MiB, &d)); /* usable afterwards */
  char x[64] = {0};
  inject("cuMemcpyHtoDAsync", 1, 999);
  RT_EXPECT(T->copy_h2d(rt, d, 0, x, sizeof x), T4A_EDRIVER);
  RT_OK(T->copy_h2d(rt, d, 0, x, sizeof x));
  inject("cuEventRecord", 1, 2); /* out of memory */
  t4a_witness w;
  RT_EXPECT(T->seal(rt, &w), T4A_ENOMEM);
  RT_OK(T->seal(rt, &w)); /* the work is still there to seal */
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  inject("cuMemHostAlloc", 1, 2);
  t4a_host_buffer h;
  void *p;
  RT_EXPECT(T->host_alloc(rt, 4096, 0, &h, &p), T4A_ENOMEM);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  close_and_assert_nothing_live();
  reopen(); /* no spare parts now: creation makes every part */
  /* a failure inside runtime_create leaves nothing behind */
  const char *steps[] = {"cuDevicePrimaryCtxRetain", "cuStreamCreate", "cuMemPoolCreate",
                         "cuMemPoolSetAttribute",    "cuMemHostAlloc", "cuEventCreate"};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    inject(steps[i], 1, 999);
    RT_EXPECT(T->runtime_create(0, NULL, &rt), T4A_EDRIVER);
    assert_nothing_live();
  }
  rt = rt_create();
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  /* ... and so does one failing while it reuses a destroyed runtime's
   * spare parts: they are released, not lost */
  const char *warm_steps[] = {"cuCtxGetCurrent", "cuMemPoolSetAttribute"};
  for (size_t i = 0; i < sizeof warm_steps / sizeof warm_steps[0]; i++) {
    rt = rt_create(); /* leaves spare parts behind */
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    inject(warm_steps[i], 1, 999);
    RT_EXPECT(T->runtime_create(0, NULL, &rt), T4A_EDRIVER);
  }
  close_and_assert_nothing_live();
}
END_TEST

/* #19 finding 1: runtime_wait_witness pins the source runtime's event, lets
 * the source go, and waits for the destination's lock. If the source is
 * destroyed after a fault meanwhile, its pinned event must stay valid (kept,
 * never freed under the waiter), and the wait must not order the
 * destination behind work that will never complete. Before the fix: a
 * heap-use-after-free (ASan lane) of the freed event. */
typedef struct held_copy {
  t4a_runtime rt;
  t4a_buffer src;
  unsigned char *dst;
  int rc;
} held_copy;

static void *copy_behind_gate(void *arg) {
  held_copy *h = arg;
  h->rc = T->copy_d2h(h->rt, h->dst, h->src, 0, 4096); /* holds h->rt until the gate opens */
  return NULL;
}

typedef struct cross_wait {
  t4a_runtime rt;
  t4a_witness w;
  int rc;
} cross_wait;

static void *wait_across(void *arg) {
  cross_wait *c = arg;
  c->rc = T->runtime_wait_witness(c->rt, c->w);
  return NULL;
}

static void settle(void) { /* lets another thread reach the lock it blocks on */
  struct timespec ts = {0, 200L * 1000 * 1000};
  nanosleep(&ts, NULL);
}

START_TEST(cross_wait_survives_a_faulted_source_destroyed_meanwhile) {
  t4a_runtime s = {0}, b = {0};
  RT_OK(T->runtime_create(0, NULL, &s));
  RT_OK(T->runtime_create(1, NULL, &b));
  unsigned char want[4096], got[4096];
  t4a_test_fill_random(want, sizeof want, t4a_test_seed());
  t4a_buffer bb;
  RT_OK(T->buffer_alloc(b, sizeof want, &bb));
  RT_OK(T->copy_h2d(b, bb, 0, want, sizeof want));
  rt_gate gs, gb;
  rt_gate_close(&gs, s); /* s's witness stays pending */
  t4a_witness w;
  RT_OK(T->seal(s, &w));
  rt_gate_close(&gb, b);
  memset(got, 0xee, sizeof got);
  held_copy h = {b, bb, got, 1};
  cross_wait c = {b, w, 1};
  pthread_t th, tw;
  ck_assert_int_eq(pthread_create(&th, NULL, copy_behind_gate, &h), 0);
  settle(); /* th holds b */
  ck_assert_int_eq(pthread_create(&tw, NULL, wait_across, &c), 0);
  settle();                              /* tw pinned s's event and waits for b */
  inject("cuStreamSynchronize", 1, 700); /* s's drain faults device 0 */
  RT_EXPECT(T->runtime_destroy(s, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  rt_gate_open(&gb);
  pthread_join(th, NULL);
  pthread_join(tw, NULL);
  ck_assert_int_eq(h.rc, T4A_OK);
  ck_assert(memcmp(want, got, sizeof want) == 0);
  /* s's work can never complete: b must not wait for it */
  ck_assert_msg(c.rc == T4A_EDEVICEFAULT, "runtime_wait_witness: %s", t4a_status_name(c.rc));
  RT_EXPECT(T->witness_query(w), T4A_EDEVICEFAULT);
  RT_OK(T->witness_release(w));
  /* b is usable and not ordered behind the dead device */
  t4a_test_fill_random(want, sizeof want, t4a_test_seed() + 1);
  RT_OK(T->copy_h2d(b, bb, 0, want, sizeof want));
  RT_OK(T->copy_d2h(b, got, bb, 0, sizeof got));
  ck_assert(memcmp(want, got, sizeof want) == 0);
  rt_gate_free(&gb);
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
  rt_gate_open(&gs); /* its memory was quarantined, so the flag is still there */
}
END_TEST

static void *open_gate_later(void *arg) {
  struct timespec ts = {0, 200000000L};
  nanosleep(&ts, NULL);
  rt_gate_open(arg);
  return NULL;
}

/* A staging chunk whose event cannot be recorded still has a DMA pending:
 * its next user must wait for the stream, not reuse it at once. */
START_TEST(a_chunk_whose_event_failed_is_not_reused_early) {
  t4a_runtime rt = rt_create_with(1 * MiB, 0); /* two chunks of 512 KiB */
  const uint64_t n = (uint64_t)512 * 1024;
  unsigned char *src = malloc(3 * n), *back = malloc(3 * n);
  t4a_test_fill_random(src, 3 * n, t4a_test_seed());
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 3 * n, &d));
  rt_gate g;
  rt_gate_close(&g, rt);
  inject("cuEventRecord", 1, 999); /* closing the first chunk */
  RT_EXPECT(T->copy_h2d(rt, d, 0, src, n), T4A_EDRIVER);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, open_gate_later, &g), 0);
  /* the third piece reuses the first chunk: only after the stream drained */
  RT_OK(T->copy_h2d(rt, d, n, src + n, 2 * n));
  pthread_join(th, NULL);
  memset(back, 0xee, 3 * n);
  RT_OK(T->copy_d2h(rt, back, d, 0, 3 * n));
  ck_assert(memcmp(src, back, 3 * n) == 0); /* the failed call's DMA ran too */
  rt_gate_free(&g);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(src);
  free(back);
}
END_TEST

/* runtime_destroy orders its stream after other runtimes' pending copies
 * from its buffers; when the driver refuses that and the host wait for the
 * copy fails too, the block may still be read: it is kept, not freed under
 * the copy, and destroy says what failed. */
START_TEST(a_block_whose_reader_cannot_be_waited_for_is_kept) {
  t4a_runtime a = rt_create(), b = rt_create();
  const uint64_t n = 1 * MiB;
  unsigned char *src = malloc(n), *back = malloc(n);
  t4a_test_fill_random(src, n, t4a_test_seed());
  t4a_buffer x, z;
  RT_OK(T->buffer_alloc(a, n, &x));
  RT_OK(T->buffer_alloc(b, n, &z));
  RT_OK(T->copy_h2d(a, x, 0, src, n));
  rt_sync(a);
  rt_gate g;
  rt_gate_close(&g, b); /* b's copy from x stays queued */
  RT_OK(T->copy_from_runtime(b, z, 0, a, x, 0, n));
  uint64_t blocks = live("device");
  inject("cuStreamWaitEvent", 1, 999);
  inject("cuEventSynchronize", 1, 999);
  RT_EXPECT(T->runtime_destroy(a, T4A_WAIT_FOREVER), T4A_EDRIVER);
  RT_DETAIL("waiting for another runtime's copy from a buffer");
  /* x is kept (the copy still reads it); the rest of a is gone or spare */
  ck_assert_uint_eq(live("device"), blocks); /* x and z */
  rt_gate_open(&g);
  memset(back, 0, n);
  RT_OK(T->copy_d2h(b, back, z, 0, n));
  ck_assert(memcmp(src, back, n) == 0);
  rt_gate_free(&g);
  RT_OK(T->buffer_free(b, z));
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
  ck_assert_uint_eq(rt_fake_violations(), 0);
  free(src);
  free(back);
}
END_TEST

/* The test PTX's t4a_fill_u32 on rt (its artifact and module kept for the
 * caller to release). */
static t4a_function load_fill(t4a_runtime rt, t4a_artifact *art, t4a_module *m) {
  const char *ptx = rt_test_ptx();
  RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "test.ptx", art));
  RT_OK(T->module_load(rt, *art, m));
  t4a_function fill;
  RT_OK(T->function_get(rt, *m, "t4a_fill_u32", &fill));
  return fill;
}

/* A driver that wants the runtime's context current for a launch (it says
 * CUDA_ERROR_INVALID_CONTEXT) gets it: the launch is made again. */
START_TEST(a_launch_refused_for_its_context_is_made_again) {
  t4a_runtime rt = rt_create();
  t4a_artifact art;
  t4a_module m;
  t4a_function fill = load_fill(rt, &art, &m);
  enum { N = 4099 };
  uint32_t host[N];
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, sizeof host, &b));
  uint64_t addr = 0, n = N;
  uint32_t value = 0x600dcafeu;
  RT_OK(T->buffer_device_address(rt, b, &addr));
  void *args[] = {&addr, &value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {8, 1, 1}, .block = {128, 1, 1}};
  uint64_t before = calls("cuLaunchKernel");
  inject("cuLaunchKernel", 1, 201); /* CUDA_ERROR_INVALID_CONTEXT */
  RT_OK(T->launch(rt, fill, &cfg, args));
  ck_assert_uint_eq(calls("cuLaunchKernel") - before, 2);
  RT_OK(T->copy_d2h(rt, host, b, 0, sizeof host));
  for (int i = 0; i < N; i++)
    ck_assert_uint_eq(host[i], value);
  RT_OK(T->module_unload(rt, m));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* The hot enqueues count ahead of their driver call (plugin-cuda/runtime.h)
 * and must put it all back when the call fails: a copy_h2d (the driver's
 * pageable call, a staged one, a scalar's memset), a launch, a launch_ex
 * and a copy_d2d refused by the driver leave the counters as they were and
 * the runtime clean (the next seal records nothing); one made again after a
 * refusal for its context (memset's too) counts once, and the device stays
 * usable. */
START_TEST(a_failed_enqueue_counts_nothing) {
  t4a_runtime rt = rt_create();
  t4a_artifact art;
  t4a_module m;
  t4a_function fill = load_fill(rt, &art, &m);
  enum { N = 4099 };
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, MiB, &b));
  uint64_t addr = 0, n = N;
  uint32_t value = 0x0badf00du;
  RT_OK(T->buffer_device_address(rt, b, &addr));
  void *args[] = {&addr, &value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {8, 1, 1}, .block = {128, 1, 1}};
  static unsigned char src[MiB];
  t4a_witness w;
  RT_OK(T->seal(rt, &w)); /* clean: nothing since this seal */
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  t4a_runtime_counters before = rt_counters(rt);
  const uint64_t sizes[] = {64, MiB}; /* the driver's pageable call; the staging */
  for (size_t i = 0; i < 2; i++) {
    inject("cuMemcpyHtoDAsync", 1, 999);
    RT_EXPECT(T->copy_h2d(rt, b, 0, src, sizes[i]), T4A_EDRIVER);
  }
  inject("cuLaunchKernel", 1, 999);
  RT_EXPECT(T->launch(rt, fill, &cfg, args), T4A_EDRIVER);
  t4a_launch_ex_config ex = {.struct_size = sizeof ex, .grid = {8, 1, 1}, .block = {128, 1, 1}};
  inject("cuLaunchKernelEx", 1, 999);
  RT_EXPECT(T->launch_ex(rt, fill, &ex, args), T4A_EDRIVER);
  inject("cuMemcpyDtoDAsync", 1, 999);
  RT_EXPECT(T->copy_d2d(rt, b, 0, b, 4096, 4), T4A_EDRIVER);
  inject("cuMemsetD32Async", 1, 999); /* a scalar's copy is a memset */
  RT_EXPECT(T->copy_h2d(rt, b, 0, src, 4), T4A_EDRIVER);
  t4a_runtime_counters after = rt_counters(rt);
  ck_assert_uint_eq(after.copies_h2d_pageable, before.copies_h2d_pageable);
  ck_assert_uint_eq(after.bytes_h2d, before.bytes_h2d);
  ck_assert_uint_eq(after.launches, before.launches);
  ck_assert_uint_eq(after.copies_d2d, before.copies_d2d);
  ck_assert_uint_eq(after.bytes_d2d, before.bytes_d2d);
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_release(w));
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, before.seal_events_recorded);
  /* refused for the context (CUDA_ERROR_INVALID_CONTEXT), or for the
   * caller's current one having been destroyed (CUDA_ERROR_CONTEXT_IS_DESTROYED,
   * which is no fault of this device): made again, counted once */
  const unsigned refusals[] = {201, 709};
  for (size_t i = 0; i < 2; i++) {
    inject("cuLaunchKernel", 1, refusals[i]);
    RT_OK(T->launch(rt, fill, &cfg, args));
    inject("cuMemcpyHtoDAsync", 1, refusals[i]);
    RT_OK(T->copy_h2d(rt, b, 0, src, 64));
    inject("cuMemcpyDtoDAsync", 1, refusals[i]);
    RT_OK(T->copy_d2d(rt, b, 0, b, 4096, 4));
    inject("cuMemsetD32Async", 1, refusals[i]);
    RT_OK(T->copy_h2d(rt, b, 0, src, 4));
    inject("cuMemsetD32Async", 1, refusals[i]);
    RT_OK(T->memset(rt, b, 0, 0x5au, 4, 16));
  }
  RT_OK(T->launch_ex(rt, fill, &ex, args));
  after = rt_counters(rt);
  ck_assert_uint_eq(after.launches, before.launches + 3);
  ck_assert_uint_eq(after.copies_h2d_pageable, before.copies_h2d_pageable + 4);
  ck_assert_uint_eq(after.bytes_h2d, before.bytes_h2d + 136);
  ck_assert_uint_eq(after.copies_d2d, before.copies_d2d + 2);
  ck_assert_uint_eq(after.bytes_d2d, before.bytes_d2d + 8);
  RT_OK(T->seal(rt, &w));
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  ck_assert_uint_eq(rt_counters(rt).seal_events_recorded, before.seal_events_recorded + 1);
  RT_OK(T->buffer_free(rt, b));
  RT_OK(T->module_unload(rt, m));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

int main(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  Suite *s = suite_create("runtime-faults");
  TCase *tc = tcase_create("faults");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, rt_teardown);
  tcase_add_test(tc, every_driver_object_is_released_once);
  tcase_add_test(tc, device_fault_is_sticky_and_quarantines);
  tcase_add_test(tc, injected_failures_are_typed_and_recoverable);
  tcase_add_test(tc, cross_wait_survives_a_faulted_source_destroyed_meanwhile);
  tcase_add_test(tc, a_chunk_whose_event_failed_is_not_reused_early);
  tcase_add_test(tc, a_launch_refused_for_its_context_is_made_again);
  tcase_add_test(tc, a_block_whose_reader_cannot_be_waited_for_is_kept);
  tcase_add_test(tc, a_failed_enqueue_counts_nothing);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
