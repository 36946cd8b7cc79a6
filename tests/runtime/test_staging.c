/* tests/runtime/test_staging.c -- how pageable copies use the staging, and
 * how runtimes reuse a destroyed runtime's parts (both lanes):
 *  - host-to-device copies of at most 16 KiB bypass the staging (and
 *    aligned ones of 1, 2 or 4 bytes are one-element memsets); larger
 *    ones fill a chunk and record its event once, and a filled chunk is
 *    never reused before its DMAs ran (a gate holds the stream while copies
 *    wrap around the staging several times);
 *  - mid-size host-to-device copies (above 16 KiB, up to the hot window)
 *    reuse windows at the start of two chunks, so the same few MiB of
 *    staging stay in the host's caches; T4A_STAGING_HOT=0 turns that off;
 *  - copies of every size, mixed, land in call order with the stream held
 *    behind a gate, with the large-copy pipeline on and off;
 *  - one-chunk device-to-host copies record no event;
 *  - a runtime made from a destroyed runtime's spare parts is a fresh
 *    runtime: its own counters, empty caches, exact data. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/runtime/rtutil.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

/* A runtime with `staging` bytes of staging, created with the staging's
 * knobs set for it alone (NULL: unset, the default): the chunk size, the
 * hot window and the pipeline ("0" = off). The knobs are read at
 * runtime_create, so they are unset again at once. */
static t4a_runtime create_tuned(uint64_t staging, const char *chunk, const char *hot,
                                const char *pipeline) {
  static const char *const names[] = {"T4A_STAGING_CHUNK", "T4A_STAGING_HOT", "T4A_COPY_PIPELINE"};
  const char *values[] = {chunk, hot, pipeline};
  for (int i = 0; i < 3; i++)
    if (values[i])
      setenv(names[i], values[i], 1);
  t4a_runtime rt = rt_create_with(staging, 0);
  for (int i = 0; i < 3; i++)
    unsetenv(names[i]);
  return rt;
}

START_TEST(h2d_copies_share_a_chunk_and_its_event) {
  t4a_runtime rt = rt_create_with(4 * MiB, 0); /* two chunks of 2 MiB */
  const uint64_t total = 24 * MiB;
  uint64_t seed = t4a_test_seed();
  unsigned char *src = malloc(total), *back = malloc(total);
  t4a_test_fill_random(src, total, seed);
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, total, &d));
  t4a_runtime_counters before = rt_counters(rt);
  /* copies above the direct limit (16 KiB), of odd sizes: pieces of a chunk */
  uint64_t off = 0, copies = 0;
  for (int i = 0; off < total; i++, copies++) {
    uint64_t n = 64 * KiB + 1 + (uint64_t)(i * 7919) % (64 * KiB);
    n = n < total - off ? n : total - off;
    RT_OK(T->copy_h2d(rt, d, off, src + off, n));
    off += n;
  }
  t4a_runtime_counters after = rt_counters(rt);
  uint64_t events = after.staging_events_recorded - before.staging_events_recorded;
  /* one event per filled chunk (pieces take whole cache lines), not per copy */
  ck_assert_uint_ge(copies, 190);
  ck_assert_msg(events <= (total + copies * 64) / (2 * MiB) + 1,
                "%llu staging events for %llu copies", (unsigned long long)events,
                (unsigned long long)copies);
  ck_assert_uint_eq(after.copies_h2d_pageable - before.copies_h2d_pageable, copies);
  memset(back, 0xee, total);
  RT_OK(T->copy_d2h(rt, back, d, 0, total));
  ck_assert(memcmp(src, back, total) == 0);
  RT_OK(T->buffer_free(rt, d));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(src);
  free(back);
}
END_TEST

/* Copies of at most 16 KiB go to the driver as they are: no staging, no
 * event, exact, and the source may be reused at once. */
START_TEST(small_h2d_copies_bypass_the_staging) {
  t4a_runtime rt = rt_create_with(1 * MiB, 0);
  enum { N = 256 * 1024 };
  unsigned char *src = malloc(N), *back = malloc(N), *scratch = malloc(16 * KiB);
  t4a_test_fill_random(src, N, t4a_test_seed());
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, N, &d));
  t4a_runtime_counters before = rt_counters(rt);
  uint64_t off = 0, copies = 0;
  for (int i = 0; off < N; i++, copies++) {
    uint64_t n = 1 + (uint64_t)(i * 4099) % (16 * KiB);
    n = n < N - off ? n : N - off;
    memcpy(scratch, src + off, n);
    RT_OK(T->copy_h2d(rt, d, off, scratch, n));
    memset(scratch, 0x5a, n); /* reused at once: the device must get the old bytes */
    off += n;
  }
  t4a_runtime_counters after = rt_counters(rt);
  ck_assert_uint_eq(after.staging_events_recorded, before.staging_events_recorded);
  ck_assert_uint_eq(after.staging_peak_bytes, before.staging_peak_bytes);
  ck_assert_uint_eq(after.copies_h2d_pageable - before.copies_h2d_pageable, copies);
  /* at the limit a copy still bypasses the staging; just above it, it goes
   * through the staging's hot window */
  RT_OK(T->copy_h2d(rt, d, 0, src, 16 * KiB));
  ck_assert_uint_eq(rt_counters(rt).staging_peak_bytes, before.staging_peak_bytes);
  RT_OK(T->copy_h2d(rt, d, 0, src, 16 * KiB + 1));
  ck_assert_uint_gt(rt_counters(rt).staging_peak_bytes, before.staging_peak_bytes);
  memset(back, 0xee, N);
  RT_OK(T->copy_d2h(rt, back, d, 0, N));
  ck_assert(memcmp(src, back, N) == 0);
  RT_OK(T->buffer_free(rt, d));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(src);
  free(back);
  free(scratch);
}
END_TEST

/* A copy of one 1-, 2- or 4-byte element, aligned to its size, is a memset
 * of that value (one cuMemsetD8/D16/D32Async); other tiny copies, and
 * misaligned ones, are the driver's copy. Every one lands exactly, and the
 * bytes around it are untouched, whatever the alignment. */
START_TEST(scalar_copies_are_memsets_of_their_value) {
  t4a_runtime rt = rt_create_with(1 * MiB, 0);
  enum { N = 4096 };
  unsigned char *want = malloc(N), *back = malloc(N), scratch[8];
  uint64_t seed = t4a_test_seed();
  t4a_test_fill_random(want, N, seed);
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, N, &d));
  RT_OK(T->copy_h2d(rt, d, 0, want, N)); /* the poison around each copy: known bytes */
  static const char *const entry[] = {"cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async",
                                      "cuMemcpyHtoDAsync"};
  uint64_t calls[4], expect[4] = {0, 0, 0, 0};
  for (int e = 0; e < 4; e++)
    calls[e] = rt_fake_calls(entry[e]);
  t4a_runtime_counters before = rt_counters(rt);
  uint64_t x = seed | 1;
  for (int i = 0; i < 600; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    uint64_t n = 1 + x % 8, off = (x >> 8) % (N - 8);
    for (uint64_t k = 0; k < n; k++)
      scratch[k] = (unsigned char)(x >> (16 + 5 * k));
    RT_OK(T->copy_h2d(rt, d, off, scratch, n));
    memcpy(want + off, scratch, n);
    memset(scratch, 0xa5, sizeof scratch); /* the source may be reused at once */
    bool aligned = off % n == 0;
    expect[n == 1 ? 0 : n == 2 && aligned ? 1 : n == 4 && aligned ? 2 : 3]++;
  }
  t4a_runtime_counters after = rt_counters(rt);
  ck_assert_uint_eq(after.copies_h2d_pageable - before.copies_h2d_pageable, 600);
  ck_assert_uint_eq(after.staging_peak_bytes, before.staging_peak_bytes);
  memset(back, 0xee, N);
  RT_OK(T->copy_d2h(rt, back, d, 0, N));
  ck_assert_msg(memcmp(want, back, N) == 0, "seed %llu", (unsigned long long)seed);
  if (rt_on_fake())
    for (int e = 0; e < 4; e++)
      ck_assert_msg(rt_fake_calls(entry[e]) - calls[e] == expect[e], "%s: %llu calls, not %llu",
                    entry[e], (unsigned long long)(rt_fake_calls(entry[e]) - calls[e]),
                    (unsigned long long)expect[e]);
  RT_OK(T->buffer_free(rt, d));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(want);
  free(back);
}
END_TEST

START_TEST(one_chunk_d2h_copies_record_no_event) {
  t4a_runtime rt = rt_create_with(1 * MiB, 0);
  unsigned char src[3000], back[3000];
  t4a_test_fill_random(src, sizeof src, t4a_test_seed());
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, sizeof src, &d));
  RT_OK(T->copy_h2d(rt, d, 0, src, sizeof src));
  t4a_runtime_counters before = rt_counters(rt);
  for (size_t n = 1; n <= sizeof src; n += 299) {
    memset(back, 0xee, sizeof back);
    RT_OK(T->copy_d2h(rt, back, d, sizeof src - n, n));
    ck_assert(memcmp(back, src + sizeof src - n, n) == 0);
    if (n < sizeof back)
      ck_assert_uint_eq(back[n], 0xee); /* nothing written past the end */
  }
  t4a_runtime_counters after = rt_counters(rt);
  /* the 3000-byte H2D copy went to the driver directly: no chunk to close */
  ck_assert_uint_eq(after.staging_events_recorded - before.staging_events_recorded, 0);
  ck_assert_uint_eq(after.copies_d2h_pageable - before.copies_d2h_pageable, 11);
  RT_OK(T->buffer_free(rt, d));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

static void filled_chunks_wait(int hot);

typedef struct opener {
  rt_gate *gate;
  int delay_ms;
} opener;

static void *open_later(void *arg) {
  opener *o = arg;
  struct timespec ts = {0, o->delay_ms * 1000000L};
  nanosleep(&ts, NULL);
  rt_gate_open(o->gate);
  return NULL;
}

START_TEST(filled_chunks_wait_for_their_dmas) {
  /* A gate holds the stream, so no DMA runs while the copies are issued;
   * 5 MiB of copies of 64-113 KiB wrap the 1 MiB staging five times (or,
   * in hot windows, its two hot chunks ten times): a chunk reused before
   * its DMAs ran would corrupt the earlier copies. Both ways. */
  for (int hot = 0; hot < 2; hot++)
    filled_chunks_wait(hot);
}
END_TEST

static void filled_chunks_wait(int hot) {
  t4a_runtime rt = create_tuned(1 * MiB, NULL, hot ? NULL : "0", NULL);
  const uint64_t total = 5 * MiB;
  unsigned char *src = malloc(total), *back = malloc(total);
  t4a_test_fill_random(src, total, t4a_test_seed());
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, total, &d));
  rt_gate g;
  rt_gate_close(&g, rt);
  opener o = {&g, 200};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, open_later, &o), 0);
  for (uint64_t off = 0; off < total;) {
    uint64_t n = 64 * KiB + 1 + off % 50000; /* above the direct limit: through the staging */
    n = n < total - off ? n : total - off;
    RT_OK(T->copy_h2d(rt, d, off, src + off, n)); /* blocks on a full ring until the gate opens */
    off += n;
  }
  pthread_join(th, NULL);
  memset(back, 0xee, total);
  RT_OK(T->copy_d2h(rt, back, d, 0, total));
  ck_assert_msg(memcmp(src, back, total) == 0, "hot windows %s", hot ? "on" : "off");
  t4a_runtime_counters c = rt_counters(rt);
  ck_assert_uint_le(c.staging_peak_bytes, c.staging_bytes);
  rt_gate_free(&g);
  RT_OK(T->buffer_free(rt, d));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(src);
  free(back);
}

static uint64_t next_rand(uint64_t *x) { /* xorshift64* */
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 0x2545F4914F6CDD1Dull;
}

/* Copies of 100-700 KiB through 8 MiB of staging (four chunks of 2 MiB by
 * T4A_STAGING_CHUNK, a 2 MiB hot window): with hot windows only two chunks are ever in use and
 * one event is recorded per window; without, the copies move on through all
 * four chunks. Bit-exact both ways. */
START_TEST(mid_size_h2d_copies_reuse_two_hot_windows) {
  for (int hot = 1; hot >= 0; hot--) {
    t4a_runtime rt = create_tuned(8 * MiB, "2097152", hot ? NULL : "0", NULL);
    const uint64_t total = 24 * MiB;
    uint64_t seed = t4a_test_seed() + (uint64_t)hot, x = seed | 1;
    unsigned char *src = malloc(total), *back = malloc(total);
    t4a_test_fill_random(src, total, seed);
    t4a_buffer d;
    RT_OK(T->buffer_alloc(rt, total, &d));
    t4a_runtime_counters before = rt_counters(rt);
    uint64_t off = 0, copies = 0;
    while (off < total) {
      uint64_t n = 100 * KiB + next_rand(&x) % (600 * KiB);
      n = n < total - off ? n : total - off;
      RT_OK(T->copy_h2d(rt, d, off, src + off, n));
      off += n;
      copies++;
    }
    t4a_runtime_counters after = rt_counters(rt);
    uint64_t events = after.staging_events_recorded - before.staging_events_recorded;
    if (hot) {
      /* a window closes when the next copy does not fit: at least 2 MiB - 700 KiB used */
      ck_assert_uint_le(after.staging_peak_bytes, 4 * MiB); /* two chunks of 2 MiB */
      ck_assert_msg(events <= total / (2 * MiB - 700 * KiB) + 1, "%llu events, %llu copies",
                    (unsigned long long)events, (unsigned long long)copies);
    } else {
      ck_assert_uint_eq(after.staging_peak_bytes, 8 * MiB); /* all four chunks were used */
    }
    ck_assert_uint_ge(events, 1);
    ck_assert_uint_eq(after.copies_h2d_pageable - before.copies_h2d_pageable, copies);
    memset(back, 0xee, total);
    RT_OK(T->copy_d2h(rt, back, d, 0, total));
    ck_assert_msg(memcmp(src, back, total) == 0, "hot windows %s", hot ? "on" : "off");
    RT_OK(T->buffer_free(rt, d));
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    free(src);
    free(back);
  }
}
END_TEST

/* Random copies of every size class (direct up to 64 KiB, hot windows up
 * to 2 MiB, whole chunks above), overlapping, into one buffer of a runtime
 * with 4 MiB of staging (two chunks: the hot and the large copies share
 * them), the first ones behind a closed gate: the buffer must end as the
 * copies' order says, with the large-copy pipeline on and off. */
START_TEST(copies_of_every_size_land_in_call_order) {
  for (int pipeline = 1; pipeline >= 0; pipeline--) {
    t4a_runtime rt = create_tuned(4 * MiB, NULL, NULL, pipeline ? NULL : "0");
    const uint64_t size = 12 * MiB;
    uint64_t seed = t4a_test_seed() + 17 + (uint64_t)pipeline, x = seed | 1;
    unsigned char *model = malloc(size), *back = malloc(size + 1), *src = malloc(size);
    t4a_test_fill_random(model, size, seed);
    t4a_buffer d;
    RT_OK(T->buffer_alloc(rt, size, &d));
    RT_OK(T->copy_h2d(rt, d, 0, model, size));
    /* three chunks' worth through two: both were in flight at once (the
     * host has no staging: its pageable copies are direct, and one behind
     * the gate waits for it, opened 100 ms later) */
    ck_assert_uint_eq(rt_counters(rt).staging_peak_bytes, rt_on_host() ? 0 : 4 * MiB);
    rt_gate g;
    rt_gate_close(&g, rt);
    opener o = {&g, 100};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, open_later, &o), 0);
    for (int i = 0; i < 60; i++) {
      uint64_t r = next_rand(&x), n;
      switch (r % 4) {
      case 0: n = 1 + (r >> 8) % (64 * KiB); break;
      case 1: n = 64 * KiB + 1 + (r >> 8) % (2 * MiB - 64 * KiB); break;
      case 2: n = 1u << (r >> 8) % 3; break; /* a scalar: a memset when aligned */
      default: n = 2 * MiB + 1 + (r >> 8) % (7 * MiB); break;
      }
      uint64_t off = next_rand(&x) % (size - n + 1);
      t4a_test_fill_random(src, n, seed + 1000 + (uint64_t)i);
      RT_OK(T->copy_h2d(rt, d, off, src, n));
      memcpy(model + off, src, n);
      memset(src, 0x5a, n); /* the source may be reused on return */
    }
    pthread_join(th, NULL);
    rt_gate_free(&g);
    memset(back, 0xee, size);
    RT_OK(T->copy_d2h(rt, back, d, 0, size));
    for (uint64_t i = 0; i < size; i++)
      if (back[i] != model[i])
        ck_abort_msg("pipeline %s: byte %llu is %u, the copies' order says %u",
                     pipeline ? "on" : "off", (unsigned long long)i, back[i], model[i]);
    /* and ranges of every size read back (the pipelined device-to-host path) */
    for (int i = 0; i < 12; i++) {
      uint64_t n = 1 + next_rand(&x) % (i % 2 ? 9 * MiB : 64 * KiB);
      uint64_t off = next_rand(&x) % (size - n + 1);
      memset(back, 0xee, n + 1);
      RT_OK(T->copy_d2h(rt, back, d, off, n));
      ck_assert_msg(memcmp(back, model + off, n) == 0, "pipeline %s: %llu bytes at %llu",
                    pipeline ? "on" : "off", (unsigned long long)n, (unsigned long long)off);
      ck_assert_uint_eq(back[n], 0xee); /* nothing written past the end */
    }
    t4a_runtime_counters c = rt_counters(rt);
    ck_assert_uint_le(c.staging_peak_bytes, c.staging_bytes);
    RT_OK(T->buffer_free(rt, d));
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
    free(model);
    free(back);
    free(src);
  }
}
END_TEST

/* The copy threads' hand-off (copypool.c): many small split copies from
 * several threads at once. Each copy is split into 4-8 parts of 128 KiB
 * (T4A_COPY_SPLIT_MIN at its least, 512 KiB; eight copy threads), its task
 * lives on the caller's stack and the caller's next copy starts one at the
 * same address, and the threads and the waiter sleep at once
 * (T4A_COPY_SPIN_US=0: every hand-off goes through the condition
 * variables). Only the task's lock says that the copy thread finishing the
 * last part is out of it: a part_done that counts and signals without it
 * races the waiter's pthread_cond_destroy and the next copy's
 * pthread_mutex_init (TSan reports it: CI's sanitizer lane runs this
 * suite), and can lose the wake-up (a copy that never returns: the bounded
 * wait below fails instead of hanging). Data bit-exact both ways. */
typedef struct splitter {
  t4a_runtime rt;
  uint64_t seed;
  int rounds, failures;
  char what[160];
} splitter;

static void *split_copies(void *arg) {
  splitter *w = arg;
  const uint64_t most = 1 * MiB;
  unsigned char *src = malloc(most), *back = malloc(most);
  t4a_buffer d;
  if (!src || !back || T->buffer_alloc(w->rt, most, &d)) {
    snprintf(w->what, sizeof w->what, "setup failed");
    w->failures++;
    free(src);
    free(back);
    return NULL;
  }
  uint64_t x = w->seed | 1;
  for (int i = 0; i < w->rounds && !w->failures; i++) {
    uint64_t n = 512 * KiB + next_rand(&x) % (512 * KiB + 1);
    t4a_test_fill_random(src, n, w->seed + (uint64_t)i);
    memset(back, 0xee, n);
    int rc = T->copy_h2d(w->rt, d, 0, src, n);
    if (rc == T4A_OK)
      rc = T->copy_d2h(w->rt, back, d, 0, n);
    if (rc != T4A_OK || memcmp(src, back, n) != 0) {
      snprintf(w->what, sizeof w->what, "round %d, %llu bytes: %s", i, (unsigned long long)n,
               rc ? t4a_status_name(rc) : "the data differ");
      w->failures++;
    }
  }
  if (T->buffer_free(w->rt, d))
    w->failures++;
  free(src);
  free(back);
  return NULL;
}

START_TEST(split_copies_from_several_threads_hand_off_exactly) {
  enum { THREADS = 4 };
  setenv("T4A_COPY_SPLIT_MIN", "524288", 1);
  setenv("T4A_COPY_SPIN_US", "0", 1);
  splitter w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    t4a_runtime_options o = {.struct_size = sizeof o, .staging_bytes = 4 * MiB, .copy_threads = 8};
    w[i] = (splitter){.seed = t4a_test_seed() + 77 * (uint64_t)i, .rounds = (int)rt_scaled(150)};
    RT_OK(T->runtime_create(0, &o, &w[i].rt));
  }
  unsetenv("T4A_COPY_SPLIT_MIN");
  unsetenv("T4A_COPY_SPIN_US");
  rt_thread th[THREADS];
  for (int i = 0; i < THREADS; i++)
    rt_thread_start(&th[i], split_copies, &w[i]);
  for (int i = 0; i < THREADS; i++) /* about a second; within the test's timeout under TSan */
    ck_assert_msg(rt_thread_wait(&th[i], 60),
                  "thread %d's copies did not return within 60 s (a lost wake-up?)", i);
  for (int i = 0; i < THREADS; i++) {
    ck_assert_msg(!w[i].failures, "thread %d: %s", i, w[i].what);
    t4a_runtime_counters c = rt_counters(w[i].rt);
    ck_assert_uint_eq(c.copies_h2d_pageable, (uint64_t)w[i].rounds);
    ck_assert_uint_eq(c.copies_d2h_pageable, (uint64_t)w[i].rounds);
    RT_OK(T->runtime_destroy(w[i].rt, T4A_WAIT_FOREVER));
  }
}
END_TEST

#ifdef T4A_TEST_FAKE
/* A failed DMA must not free a chunk whose earlier DMAs may still run. With
 * the stream held behind a gate: copy A (0.5 MiB, hot windows off) leaves a
 * chunk open with its DMA queued; copy B fills that chunk up and its DMA
 * fails (an injected, non-sticky error); copy C then wraps the two-chunk
 * staging onto that chunk. C must wait for the stream there (nothing was
 * recorded after A's DMA), or A's bytes are overwritten before they left. */
START_TEST(a_failed_dma_never_frees_a_chunk_in_use) {
  void *dl = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(dl);
  void (*inject)(const char *, uint64_t, unsigned);
  *(void **)&inject = dlsym(dl, "fake_cuda_fail");
  ck_assert_ptr_nonnull(inject);
  for (int pipeline = 1; pipeline >= 0; pipeline--) {
    /* two chunks of 2 MiB */
    t4a_runtime rt = create_tuned(4 * MiB, NULL, "0", pipeline ? NULL : "0");
    const uint64_t a = 512 * KiB, b = 3 * MiB, c = 4 * MiB;
    uint64_t seed = t4a_test_seed() + 31 + (uint64_t)pipeline;
    unsigned char *src = malloc(c), *back = malloc(a);
    t4a_test_fill_random(src, c, seed);
    t4a_buffer d;
    RT_OK(T->buffer_alloc(rt, 16 * MiB, &d));
    rt_gate g;
    rt_gate_close(&g, rt);
    RT_OK(T->copy_h2d(rt, d, 0, src, a));
    inject("cuMemcpyHtoDAsync", 1, 1); /* the next one fails: CUDA_ERROR_INVALID_VALUE */
    ck_assert_int_ne(T->copy_h2d(rt, d, 4 * MiB, src, b), T4A_OK);
    opener o = {&g, 200};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, open_later, &o), 0);
    unsigned char *other = malloc(c);
    memset(other, 0x3c, c);
    RT_OK(T->copy_h2d(rt, d, 8 * MiB, other, c));
    pthread_join(th, NULL);
    rt_gate_free(&g);
    memset(back, 0xee, a);
    RT_OK(T->copy_d2h(rt, back, d, 0, a));
    ck_assert_msg(memcmp(back, src, a) == 0, "pipeline %s: copy A was overwritten in staging",
                  pipeline ? "on" : "off");
    RT_OK(T->copy_d2h(rt, src, d, 8 * MiB, c));
    ck_assert_msg(memcmp(src, other, c) == 0, "pipeline %s: copy C", pipeline ? "on" : "off");
    free(other);
    free(src);
    free(back);
    RT_OK(T->buffer_free(rt, d));
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  }
}
END_TEST
#endif

START_TEST(runtimes_from_spare_parts_are_fresh) {
  uint64_t seed = t4a_test_seed();
  for (int round = 0; round < 4; round++) {
    /* the first round makes parts, the others reuse them (or make them,
     * when another test process holds the device's spares: same result) */
    t4a_runtime rt = round % 2 ? rt_create_with(1 * MiB, 0) : rt_create();
    t4a_runtime_counters c = rt_counters(rt);
    ck_assert_uint_eq(c.launches + c.copies_h2d_pageable + c.seals + c.cache_hits, 0);
    ck_assert_uint_eq(c.staging_bytes, round % 2 ? 1 * MiB : 64 * MiB);
    ck_assert_uint_eq(c.staging_peak_bytes, 0);
    t4a_cache_stats s = rt_cache(rt);
    ck_assert_uint_eq(s.entries + s.bytes + s.pinned_entries, 0);
    const uint64_t n = 3 * MiB + 17;
    unsigned char *src = malloc(n), *back = malloc(n);
    t4a_test_fill_random(src, n, seed + (uint64_t)round);
    t4a_buffer d;
    RT_OK(T->buffer_alloc(rt, n, &d));
    RT_OK(T->copy_h2d(rt, d, 0, src, n));
    memset(back, 0xee, n);
    RT_OK(T->copy_d2h(rt, back, d, 0, n));
    ck_assert_msg(memcmp(src, back, n) == 0, "round %d", round);
    free(src);
    free(back);
    /* d is left for destroy to release: the next runtime must not see it */
    RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = rt_suite("staging");
  TCase *fill = tcase_create("fill");
  tcase_set_timeout(fill, 120);
  tcase_add_checked_fixture(fill, rt_setup, rt_teardown);
  static const char no_staging[] = "the staging's chunks, hot windows and events: the host has "
                                   "none (its pageable copies are direct)";
  RT_CUDA_ONLY(fill, h2d_copies_share_a_chunk_and_its_event, no_staging);
  RT_CUDA_ONLY(fill, small_h2d_copies_bypass_the_staging, no_staging);
  tcase_add_test(fill, scalar_copies_are_memsets_of_their_value);
  RT_CUDA_ONLY(fill, one_chunk_d2h_copies_record_no_event, no_staging);
  RT_CUDA_ONLY(fill, filled_chunks_wait_for_their_dmas, no_staging);
  RT_CUDA_ONLY(fill, mid_size_h2d_copies_reuse_two_hot_windows, no_staging);
  tcase_add_test(fill, copies_of_every_size_land_in_call_order);
  tcase_add_test(fill, split_copies_from_several_threads_hand_off_exactly);
#ifdef T4A_TEST_FAKE
  tcase_add_test(fill, a_failed_dma_never_frees_a_chunk_in_use);
#endif
  suite_add_tcase(s, fill);
  TCase *spare = tcase_create("spare parts");
  tcase_set_timeout(spare, 120);
  tcase_add_checked_fixture(spare, rt_setup, rt_teardown);
  tcase_add_test(spare, runtimes_from_spare_parts_are_fresh);
  suite_add_tcase(s, spare);
  return s;
}

int main(void) { return rt_run(suite(), 1); }
