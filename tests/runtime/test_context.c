/* tests/runtime/test_context.c -- calls work whatever context the calling
 * thread has current, and leave that context as it was (fake and GPU
 * lanes): launch, small copy_h2d, copy_d2d, memset and a scalar's copy_h2d
 * (whose paths make no context current), copies, a graph captured and
 * replayed, and seal, from a thread with no current context, with another
 * device's context current, and with the runtime's own; and every slot that
 * enqueues or allocates (memset and the 2D copies included) as the first
 * call of a thread that has no context current. The host lane has no
 * contexts: it runs the second test for what it still means there (every
 * such slot works, with its data, as a thread's first call: no state a
 * thread must have made first) and leaves the first out, saying why. */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-cuda/cuda_decls.h"
#include "tests/runtime/rtutil.h"

typedef struct ctxapi {
  t4a__CUresult (*get)(t4a__CUcontext *);
  t4a__CUresult (*set)(t4a__CUcontext);
} ctxapi;

static ctxapi api(void) {
  const char *lib = getenv("T4A_CUDA_LIBRARY");
  void *dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(dl);
  ctxapi a = {0};
  *(void **)&a.get = dlsym(dl, "cuCtxGetCurrent");
  *(void **)&a.set = dlsym(dl, "cuCtxSetCurrent");
  ck_assert(a.get && a.set);
  return a;
}

typedef struct job {
  t4a_runtime rt;
  t4a_function fill;
  t4a__CUcontext current; /* made current on the thread first (may be NULL) */
  t4a__CUcontext own;     /* the runtime's: may stay current when none was */
  uint32_t value;
  int ok;
} job;

enum { N = 100003 };

/* On its own thread: fill a buffer with a kernel, copy, seal, read back;
 * the thread's current context must be the same afterwards. */
static void *work(void *arg) {
  job *j = arg;
  ctxapi a = api();
  if (a.set(j->current) != T4A__CUDA_SUCCESS)
    return NULL;
  t4a_buffer b;
  uint32_t *host = malloc(N * sizeof *host);
  if (!host || T->buffer_alloc(j->rt, N * sizeof *host, &b) != T4A_OK) {
    free(host);
    return NULL;
  }
  uint64_t addr = 0, n = N;
  T->buffer_device_address(j->rt, b, &addr);
  void *args[] = {&addr, &j->value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {64, 1, 1}, .block = {256, 1, 1}};
  t4a_witness w = {0};
  /* and a small copy_h2d over the first words, which goes to the driver's
   * pageable call with no context made current first (staging.h), a
   * copy_d2d of them to the next words, a memset of the 16 after, and a
   * scalar's copy_h2d (a memset too), all made the same way */
  uint32_t head[16], set = j->value ^ 0x5a5a5a5au, scalar = j->value ^ 0xa5a5a5a5u;
  for (unsigned i = 0; i < 16; i++)
    head[i] = ~j->value - i;
  int ok = T->launch(j->rt, j->fill, &cfg, args) == T4A_OK &&
           T->copy_h2d(j->rt, b, 0, head, sizeof head) == T4A_OK &&
           T->copy_d2d(j->rt, b, sizeof head, b, 0, sizeof head) == T4A_OK &&
           T->memset(j->rt, b, 2 * sizeof head, set, 4, 16) == T4A_OK &&
           T->copy_h2d(j->rt, b, 3 * sizeof head, &scalar, 4) == T4A_OK &&
           T->seal(j->rt, &w) == T4A_OK && T->witness_wait(w, T4A_WAIT_FOREVER) == T4A_OK &&
           T->copy_d2h(j->rt, host, b, 0, N * sizeof *host) == T4A_OK;
  for (size_t i = 0; ok && i < N; i++)
    ok = host[i] == (i < 32 ? head[i % 16] : i < 48 ? set : i == 48 ? scalar : j->value);
  /* and a graph captured with the thread's context as it was: a memset and
   * a copy_d2d (neither makes a context current), replayed */
  t4a_graph g = {0};
  uint32_t set2 = set ^ 0x0f0f0f0fu;
  ok = ok && T->graph_begin(j->rt) == T4A_OK && a.set(j->current) == T4A__CUDA_SUCCESS &&
       T->memset(j->rt, b, 64 * sizeof *host, set2, 4, 16) == T4A_OK &&
       T->copy_d2d(j->rt, b, 80 * sizeof *host, b, 0, sizeof head) == T4A_OK &&
       T->graph_end(j->rt, &g) == T4A_OK && T->graph_launch(j->rt, g) == T4A_OK;
  if (w.bits)
    T->witness_release(w);
  w.bits = 0;
  ok = ok && T->seal(j->rt, &w) == T4A_OK && T->witness_wait(w, T4A_WAIT_FOREVER) == T4A_OK &&
       T->copy_d2h(j->rt, host, b, 0, 96 * sizeof *host) == T4A_OK;
  for (size_t i = 64; ok && i < 96; i++)
    ok = host[i] == (i < 80 ? set2 : head[i - 80]);
  if (g.bits)
    T->graph_release(j->rt, g);
  t4a__CUcontext after = (t4a__CUcontext)1;
  /* another context is restored; with none, the runtime's may stay (the
   * design's context policy, as the CUDA runtime API would leave it) */
  ok = ok && a.get(&after) == T4A__CUDA_SUCCESS &&
       (after == j->current || (!j->current && after == j->own));
  if (w.bits)
    T->witness_release(w);
  T->buffer_free(j->rt, b);
  free(host);
  j->ok = ok;
  return NULL;
}

static void run(job *j) {
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, work, j), 0);
  pthread_join(th, NULL);
}

START_TEST(calls_work_whatever_context_is_current) {
  t4a_runtime rt = rt_create();
  t4a_artifact art;
  const char *ptx = rt_test_ptx();
  RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "test.ptx", &art));
  t4a_module m;
  RT_OK(T->module_load(rt, art, &m));
  t4a_function fill;
  RT_OK(T->function_get(rt, m, "t4a_fill_u32", &fill));
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  job none = {rt, fill, NULL, raw.context, 0x1234567u, 0};
  run(&none);
  ck_assert_msg(none.ok, "with no context current");
  job own = {rt, fill, raw.context, raw.context, 0x89abcdefu, 0};
  run(&own);
  ck_assert_msg(own.ok, "with the runtime's own context current");
  int32_t count = 0;
  RT_OK(T->device_count(&count));
  if (count > 1) {
    t4a_runtime other;
    RT_OK(T->runtime_create(1, NULL, &other));
    t4a_raw_runtime r1 = {.struct_size = sizeof r1};
    RT_OK(T->raw_runtime(other, &r1));
    job foreign = {rt, fill, r1.context, raw.context, 0xdeadbeefu, 0};
    run(&foreign);
    ck_assert_msg(foreign.ok, "with another device's context current");
    RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  }
  RT_OK(T->module_unload(rt, m));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- every call as a thread's first ---------------------------------------------- */

/* A slot that makes driver calls needing a context (enqueueing, allocating,
 * registering) must make the runtime's current itself, or, for the calls
 * that name it through the stream, make the call again with it current when
 * the driver refuses (T4A__RT_CALL_IN_ITS_CONTEXT): a thread's first call
 * finds none current, and a call made earlier on the same thread may have
 * left the runtime's (the context policy), hiding the bug. So each call
 * below runs on a fresh thread with no context current. */
enum { BYTES = 256, WORDS = BYTES / 4 };

typedef struct bare {
  t4a_runtime rt;
  t4a_buffer d, e;
  t4a_host_buffer hb, reg;
  unsigned char *pinned;   /* hb's memory (BYTES) */
  uint32_t *registered;    /* reg's memory (BYTES) */
  uint32_t pattern[WORDS]; /* copy_h2d's source */
  uint32_t back[WORDS];    /* copy_2d_d2h's destination */
  t4a_witness w;
  t4a__CUcontext own;
  int step, rc;
  char error[256]; /* the thread's last error */
  bool context_ok;
} bare;

static const char *const bare_steps[] = {
    "buffer_alloc",    "copy_h2d",    "memset",        "copy_2d_d2d",         "copy_2d_h2d_pinned",
    "copy_h2d_pinned", "copy_d2d",    "host_register", "copy_d2h_pinned",     "copy_2d_d2h_pinned",
    "copy_2d_h2d",     "copy_2d_d2h", "seal",          "runtime_memory_info", "cache_trim",
    "host_unregister", "buffer_free"};
enum { BARE_STEPS = sizeof bare_steps / sizeof bare_steps[0] };

static void *bare_call(void *arg) {
  bare *s = arg;
  ctxapi a = {0};
  if (!rt_on_host()) { /* (the host lane: no contexts; a fresh thread all the same) */
    a = api();
    if (a.set(NULL) != T4A__CUDA_SUCCESS) /* a new thread has none; make sure */
      return NULL;
  }
  /* 2D rectangles within d (64 words): rows of 16 bytes at pitch 32 */
  const t4a_copy_2d d2d = {.struct_size = sizeof d2d,
                           .src_pitch = 16,
                           .dst_offset = 128,
                           .dst_pitch = 32,
                           .width = 16,
                           .rows = 2};
  const t4a_copy_2d h2d = {.struct_size = sizeof h2d,
                           .src_pitch = 8,
                           .dst_offset = 192,
                           .dst_pitch = 16,
                           .width = 8,
                           .rows = 2};
  const t4a_copy_2d whole = {.struct_size = sizeof whole,
                             .dst_pitch = BYTES,
                             .src_pitch = BYTES,
                             .width = BYTES,
                             .rows = 1};
  const t4a_copy_2d page = {.struct_size = sizeof page,
                            .src_pitch = 4,
                            .dst_offset = 224,
                            .dst_pitch = 8,
                            .width = 4,
                            .rows = 2};
  t4a_memory_info info = {.struct_size = sizeof info};
  static const uint32_t two[2] = {0x7e7e7e7eu, 0x7f7f7f7fu};
  switch (s->step) {
  case 0: s->rc = T->buffer_alloc(s->rt, BYTES, &s->e); break;
  case 1: s->rc = T->copy_h2d(s->rt, s->d, 0, s->pattern, BYTES); break;
  case 2: s->rc = T->memset(s->rt, s->d, 0, 0xa1a2a3a4u, 4, 8); break;
  case 3: s->rc = T->copy_2d_d2d(s->rt, s->d, s->d, &d2d); break;
  case 4: s->rc = T->copy_2d_h2d_pinned(s->rt, s->d, s->hb, &h2d); break;
  case 5: s->rc = T->copy_h2d_pinned(s->rt, s->d, 216, s->hb, 64, 8); break;
  case 6: s->rc = T->copy_d2d(s->rt, s->e, 0, s->d, 0, BYTES); break;
  case 7: s->rc = T->host_register(s->rt, s->registered, BYTES, 0, &s->reg); break;
  case 8: s->rc = T->copy_d2h_pinned(s->rt, s->reg, 0, s->e, 0, BYTES); break;
  case 9: s->rc = T->copy_2d_d2h_pinned(s->rt, s->hb, s->e, &whole); break;
  case 10: s->rc = T->copy_2d_h2d(s->rt, s->d, two, &page); break;
  case 11: s->rc = T->copy_2d_d2h(s->rt, s->back, s->d, &whole); break;
  case 12: s->rc = T->seal(s->rt, &s->w); break;
  case 13: s->rc = T->runtime_memory_info(s->rt, &info); break;
  case 14: s->rc = T->cache_trim(s->rt, 0); break;
  case 15: s->rc = T->host_unregister(s->rt, s->reg); break;
  case 16: s->rc = T->buffer_free(s->rt, s->e); break;
  default: s->rc = T4A_EINVAL;
  }
  snprintf(s->error, sizeof s->error, "%s", t4a_test_backend_error(T));
  /* the caller's (none) left as the context policy says */
  t4a__CUcontext after = (t4a__CUcontext)1;
  s->context_ok = a.get ? a.get(&after) == T4A__CUDA_SUCCESS && (after == NULL || after == s->own)
                        : rt_on_host(); /* no driver: the host lane */
  return NULL;
}

START_TEST(every_call_works_as_a_threads_first) {
  static bare s; /* static: the registered block must outlive the threads */
  memset(&s, 0, sizeof s);
  s.rt = rt_create();
  if (!rt_on_host()) {
    t4a_raw_runtime raw = {.struct_size = sizeof raw};
    RT_OK(T->raw_runtime(s.rt, &raw));
    s.own = raw.context;
  }
  RT_OK(T->buffer_alloc(s.rt, BYTES, &s.d));
  void *p = NULL;
  RT_OK(T->host_alloc(s.rt, BYTES, 0, &s.hb, &p));
  s.pinned = p;
  static uint32_t registered[WORDS];
  s.registered = registered;
  for (unsigned i = 0; i < WORDS; i++)
    s.pattern[i] = 0x10000u * i + 0x1234u;
  memset(s.pinned, 0x5c, BYTES);
  /* what d holds after steps 1-5 and 10, word by word */
  uint32_t want[WORDS];
  memcpy(want, s.pattern, BYTES);
  for (unsigned i = 0; i < 8; i++) /* memset: words 0..7 */
    want[i] = 0xa1a2a3a4u;
  for (unsigned r = 0; r < 2; r++) /* copy_2d_d2d: words 4r..4r+3 to 32+8r.. */
    for (unsigned k = 0; k < 4; k++)
      want[32 + 8 * r + k] = want[4 * r + k];
  for (unsigned r = 0; r < 2; r++) /* copy_2d_h2d_pinned: 2 words a row to 48+4r.. */
    for (unsigned k = 0; k < 2; k++)
      want[48 + 4 * r + k] = 0x5c5c5c5cu;
  want[54] = want[55] = 0x5c5c5c5cu; /* copy_h2d_pinned: bytes 216..223 */
  for (int step = 0; step < BARE_STEPS; step++) {
    if (step == 10) { /* copy_2d_h2d: one word a row to words 56 and 58 */
      want[56] = 0x7e7e7e7eu;
      want[58] = 0x7f7f7f7fu;
    }
    s.step = step;
    s.rc = -1;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, bare_call, &s), 0);
    pthread_join(th, NULL);
    ck_assert_msg(s.rc == T4A_OK, "%s as a thread's first call: %s (%s)", bare_steps[step],
                  t4a_status_name(s.rc), s.error);
    ck_assert_msg(s.context_ok, "%s left the thread another context than none or the runtime's",
                  bare_steps[step]);
    if (step == 11) /* copy_2d_d2h returned with the data */
      for (unsigned i = 0; i < WORDS; i++)
        ck_assert_msg(s.back[i] == want[i], "word %u: %08x, want %08x", i, s.back[i], want[i]);
  }
  RT_OK(T->witness_wait(s.w, T4A_WAIT_FOREVER)); /* covers the pinned copies out */
  T->witness_release(s.w);
  uint32_t out[WORDS];
  memcpy(out, s.pinned, BYTES);
  for (unsigned i = 0; i < WORDS; i++) {
    /* e was copied from d before step 10 changed words 56 and 58 */
    uint32_t before10 = i == 56 || i == 58 ? s.pattern[i] : want[i];
    ck_assert_msg(out[i] == before10, "pinned word %u: %08x, want %08x", i, out[i], before10);
    ck_assert_msg(registered[i] == before10, "registered word %u: %08x, want %08x", i,
                  registered[i], before10);
  }
  RT_OK(T->host_free(s.rt, s.hb));
  RT_OK(T->buffer_free(s.rt, s.d));
  RT_OK(T->runtime_destroy(s.rt, T4A_WAIT_FOREVER));
}
END_TEST

#ifdef T4A_TEST_FAKE
/* A driver that wants the function's context current for a launch, or the
 * event's for a seal's record (the fake on request: a plain
 * CUDA_ERROR_INVALID_CONTEXT) gets it: the plugin makes the context
 * current, calls again, and restores the caller's. */
START_TEST(a_driver_wanting_the_context_gets_it) {
  setenv("FAKE_CUDA_LAUNCH_NEEDS_CONTEXT", "1", 1);
  t4a_runtime rt = rt_create();
  t4a_artifact art;
  const char *ptx = rt_test_ptx();
  RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "test.ptx", &art));
  t4a_module m;
  RT_OK(T->module_load(rt, art, &m));
  t4a_function fill;
  RT_OK(T->function_get(rt, m, "t4a_fill_u32", &fill));
  t4a_raw_runtime raw = {.struct_size = sizeof raw};
  RT_OK(T->raw_runtime(rt, &raw));
  enum { M = 4099 };
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, M * sizeof(uint32_t), &b));
  uint64_t addr = 0, n = M;
  uint32_t value = 0x5a5a5a5au;
  RT_OK(T->buffer_device_address(rt, b, &addr));
  void *args[] = {&addr, &value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {17, 1, 1}, .block = {256, 1, 1}};
  ctxapi a = api();
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  uint64_t before = rt_fake_calls("cuLaunchKernel");
  RT_OK(T->launch(rt, fill, &cfg, args));
  /* refused once, then launched with the context current ... */
  ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel") - before, 2);
  /* ... and the caller's (none) left as the context policy says: none, or
   * the runtime's (as the CUDA runtime API would leave it) */
  t4a__CUcontext after = (t4a__CUcontext)1;
  ck_assert_int_eq(a.get(&after), T4A__CUDA_SUCCESS);
  ck_assert(after == NULL || after == raw.context);
  /* with the context current no retry is needed */
  ck_assert_int_eq(a.set(raw.context), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuLaunchKernel");
  RT_OK(T->launch(rt, fill, &cfg, args));
  ck_assert_uint_eq(rt_fake_calls("cuLaunchKernel") - before, 1);
  uint32_t *host = malloc(M * sizeof *host);
  ck_assert_ptr_nonnull(host);
  memset(host, 0, M * sizeof *host);
  RT_OK(T->copy_d2h(rt, host, b, 0, M * sizeof *host));
  for (size_t i = 0; i < M; i++)
    ck_assert_uint_eq(host[i], value);
  /* a small copy_h2d (the driver's pageable call, staging.h) follows the
   * same rule: refused once with no context current, made again */
  uint32_t head[16];
  for (unsigned i = 0; i < 16; i++)
    head[i] = 0xc0de0000u + i;
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuMemcpyHtoDAsync");
  RT_OK(T->copy_h2d(rt, b, 0, head, sizeof head));
  ck_assert_uint_eq(rt_fake_calls("cuMemcpyHtoDAsync") - before, 2);
  ck_assert_int_eq(a.set(raw.context), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuMemcpyHtoDAsync");
  RT_OK(T->copy_h2d(rt, b, sizeof head, head, sizeof head));
  ck_assert_uint_eq(rt_fake_calls("cuMemcpyHtoDAsync") - before, 1);
  /* and copy_d2d (cuMemcpyDtoDAsync), memset and a scalar's copy_h2d
   * (cuMemsetD32Async) too */
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuMemcpyDtoDAsync");
  RT_OK(T->copy_d2d(rt, b, 2 * sizeof head, b, 0, sizeof head));
  ck_assert_uint_eq(rt_fake_calls("cuMemcpyDtoDAsync") - before, 2);
  ck_assert_int_eq(a.set(raw.context), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuMemcpyDtoDAsync");
  RT_OK(T->copy_d2d(rt, b, 3 * sizeof head, b, 0, sizeof head));
  ck_assert_uint_eq(rt_fake_calls("cuMemcpyDtoDAsync") - before, 1);
  uint32_t set = 0x77665544u, scalar = 0x0f1e2d3cu;
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuMemsetD32Async");
  RT_OK(T->memset(rt, b, 4 * sizeof head, set, 4, 16));
  ck_assert_uint_eq(rt_fake_calls("cuMemsetD32Async") - before, 2);
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS); /* the retry may leave ours current */
  RT_OK(T->copy_h2d(rt, b, 5 * sizeof head, &scalar, 4));
  ck_assert_uint_eq(rt_fake_calls("cuMemsetD32Async") - before, 4);
  ck_assert_int_eq(a.set(raw.context), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuMemsetD32Async");
  RT_OK(T->copy_h2d(rt, b, 5 * sizeof head + 4, &scalar, 4));
  ck_assert_uint_eq(rt_fake_calls("cuMemsetD32Async") - before, 1);
  RT_OK(T->copy_d2h(rt, host, b, 0, M * sizeof *host));
  for (size_t i = 0; i < M; i++)
    ck_assert_uint_eq(host[i], i < 64 ? head[i % 16] : i < 80 ? set : i < 82 ? scalar : value);
  /* launch_ex (cuLaunchKernelEx) and graph_launch (cuGraphLaunch) follow
   * the same rule: refused once with no context current, made again */
  t4a_launch_ex_config ex = {.struct_size = sizeof ex, .grid = {17, 1, 1}, .block = {256, 1, 1}};
  value = 0x17171717u;
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuLaunchKernelEx");
  RT_OK(T->launch_ex(rt, fill, &ex, args));
  ck_assert_uint_eq(rt_fake_calls("cuLaunchKernelEx") - before, 2);
  RT_OK(T->copy_d2h(rt, host, b, 0, M * sizeof *host));
  for (size_t i = 0; i < M; i++)
    ck_assert_uint_eq(host[i], value);
  t4a_graph g;
  RT_OK(T->graph_begin(rt));
  value = 0x2e2e2e2eu; /* captured: the value of this launch */
  RT_OK(T->launch(rt, fill, &cfg, args));
  RT_OK(T->graph_end(rt, &g));
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuGraphLaunch");
  RT_OK(T->graph_launch(rt, g));
  ck_assert_uint_eq(rt_fake_calls("cuGraphLaunch") - before, 2);
  RT_OK(T->copy_d2h(rt, host, b, 0, M * sizeof *host));
  for (size_t i = 0; i < M; i++)
    ck_assert_uint_eq(host[i], 0x2e2e2e2eu);
  RT_OK(T->graph_release(rt, g));
  /* and so does seal's cuEventRecord: with no context current it is
   * refused once and made again, and the seal covers the work (a seal
   * and wait first, so that the seal's event comes from the pool: making
   * one leaves the runtime's context current) */
  rt_sync(rt);
  RT_OK(T->launch(rt, fill, &cfg, args));
  ck_assert_int_eq(a.set(NULL), T4A__CUDA_SUCCESS);
  before = rt_fake_calls("cuEventRecord");
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  ck_assert_uint_eq(rt_fake_calls("cuEventRecord") - before, 2);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  free(host);
  RT_OK(T->buffer_free(rt, b));
  RT_OK(T->module_unload(rt, m));
  RT_OK(T->artifact_release(art));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST
#endif

int main(void) {
  Suite *s = rt_suite("context");
  TCase *tc = rt_tcase(s, "context", 60);
  RT_CUDA_ONLY(tc, calls_work_whatever_context_is_current,
               "CUDA contexts current on the calling thread, and a kernel: the host backend has "
               "neither");
  tcase_add_test(tc, every_call_works_as_a_threads_first);
#ifdef T4A_TEST_FAKE
  tcase_add_test(tc, a_driver_wanting_the_context_gets_it);
#endif
  return rt_run(s, 1);
}
