/* tests/runtime/test_reentry.c -- release callbacks that call back into the
 * backend (issue #26, item 3), in the three lanes (fake, host, GPU).
 *
 * A release callback (buffer_wrap_external's release, a DLPack producer's
 * deleter given to dlpack_import) runs at a later natural point, on the
 * thread of that call, once the call holds nothing of the backend: it may
 * call any slot. The hardest call is runtime_destroy of its own runtime,
 * which waits for the stream and for every waiter's pinned event: a slot
 * that ran the callback while it still held a pin or a lock would never
 * return. For every slot that runs release callbacks there is one test
 * here, each with both kinds of callback: the callback destroys the
 * runtime that wrapped the memory, the slot must return (a hang is
 * detected with a bound, 5 s times CK_TIMEOUT_MULTIPLIER, and reported as
 * "still inside <slot>"), with its own status, the callback called once on
 * the slot's thread, and its runtime_destroy T4A_OK (T4A_EHANDLE when the
 * slot was runtime_destroy itself: the runtime is gone by then).
 *
 * Gates hold the runtime's stream (t4a_spin on rt's stream through the raw
 * seam); their flags are pinned memory of another runtime (the owner of
 * the wrapped memory), so that they outlive the destroyed one. The fake
 * lane also runs the two orders only the fake's call counts can arrange:
 * witness_wait finding the callback due on its first look after the spin
 * (its runtime held by a destroy that times out), and runtime_destroy while
 * another thread's witness_wait pins one of its events. The host lane
 * holds rt's queue with the host's test gate on the same flags, wraps
 * another runtime's buffer (host memory, kDLCPU for DLPack) and leaves
 * out the slots it does not have (stream_wait_witness is NULL, no modules
 * yet), saying so. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin-cuda/cuda_decls.h"
#include "plugin-host/test_gate.h"
#include "tests/runtime/rtutil.h"

#define BYTES 65536u

/* ---- the callback: it destroys its own runtime ------------------------------------- */

typedef struct victim {
  t4a_runtime rt;
  int entered, calls; /* atomics */
  int status;         /* what its runtime_destroy returned */
  pthread_t thread;   /* where it ran */
} victim;

static void destroy_own_runtime(victim *v) {
  v->thread = pthread_self();
  __atomic_store_n(&v->entered, 1, __ATOMIC_SEQ_CST);
  v->status = T->runtime_destroy(v->rt, T4A_WAIT_FOREVER);
  __atomic_add_fetch(&v->calls, 1, __ATOMIC_SEQ_CST);
}

static void release_destroys(void *user) { destroy_own_runtime(user); }

/* A producer's DLPack tensor whose deleter does the same. */
typedef struct tensor {
  t4a_dl_managed_tensor m;
  int64_t shape[1];
  victim *v;
} tensor;

static void tensor_deleter(t4a_dl_managed_tensor *m) {
  destroy_own_runtime(((tensor *)m->manager_ctx)->v);
}

/* How the memory reaches the runtime. */
typedef enum { BY_WRAP, BY_DLPACK, KINDS } kind;
static const char *const kind_name[KINDS] = {"buffer_wrap_external", "dlpack_import"};

/* ---- a bound on every wait ---------------------------------------------------------- */

static double bound_s(void) {
  const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
  double k = m && *m ? atof(m) : 1;
  return 5 * (k > 1 ? k : 1);
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits, within the bound, until *flag is set. */
static bool flag_within_bound(const int *flag) {
  uint64_t end = now_ms() + (uint64_t)(bound_s() * 1000);
  while (!__atomic_load_n(flag, __ATOMIC_SEQ_CST) && now_ms() < end)
    pause_ms(1);
  return __atomic_load_n(flag, __ATOMIC_SEQ_CST) != 0;
}

/* ---- the scene: an owner, the runtime that wraps its memory, gates ------------------ */

typedef struct scene {
  kind how;
  t4a_runtime owner, rt;
  t4a_buffer mem;       /* the owner's memory (fake lane) */
  t4a__CUdeviceptr ptr; /* cuMemAlloc'd memory (GPU lane: exact ranges) */
  uint64_t address;     /* what rt wraps */
  t4a_buffer ext;       /* rt's buffer of it */
  victim v;
  tensor t;
  t4a_host_buffer flags_hb; /* the owner's: the gates' flags outlive rt */
  uint32_t *flags;          /* [0] gate A, [1] gate B */
  void *module;             /* the gates' kernel (the primary context outlives rt) */
  t4a__CUevent done_a;      /* a consumer event after gate A's epoch (fake lane, scene_retire) */
  t4a_witness w1, w2;       /* w1: the epoch the memory was freed in; w2: a later one */
} scene;

static void scene_open(scene *sc, kind how, uint32_t rt_flags) {
  memset(sc, 0, sizeof *sc);
  sc->how = how;
  sc->owner = rt_create();
  t4a_runtime_options o = {.struct_size = sizeof o, .flags = rt_flags};
  RT_OK(T->runtime_create(0, &o, &sc->rt));
  sc->v.rt = sc->rt;
  void *p = NULL;
  RT_OK(T->host_alloc(sc->owner, 2 * sizeof(uint32_t), 0, &sc->flags_hb, &p));
  sc->flags = p;
  __atomic_store_n(&sc->flags[0], 0u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&sc->flags[1], 0u, __ATOMIC_SEQ_CST);
  if (rt_on_fake() || rt_on_host()) { /* exact allocations (the fake), or no driver to ask
                                       * (the host): another runtime's buffer */
    RT_OK(T->buffer_alloc(sc->owner, BYTES, &sc->mem));
    RT_OK(T->buffer_device_address(sc->owner, sc->mem, &sc->address));
  } else { /* an allocation of its own, whose range the driver reports exactly */
    t4a__CUresult (*alloc)(t4a__CUdeviceptr *, size_t);
    *(void **)&alloc = rt_driver("cuMemAlloc_v2");
    t4a_raw_section sec = {.struct_size = sizeof sec};
    RT_OK(T->raw_begin(sc->owner, &sec));
    ck_assert_int_eq(alloc(&sc->ptr, BYTES), 0);
    RT_OK(T->raw_end(sc->owner, &sec));
    sc->address = sc->ptr;
  }
  if (how == BY_WRAP) {
    t4a_external_memory m = {.struct_size = sizeof m,
                             .address = sc->address,
                             .bytes = BYTES,
                             .device_ordinal = 0,
                             .release = release_destroys,
                             .user = &sc->v};
    RT_OK(T->buffer_wrap_external(sc->rt, &m, &sc->ext));
  } else {
    sc->t.shape[0] = BYTES;
    sc->t.v = &sc->v;
    sc->t.m = (t4a_dl_managed_tensor){{.data = (void *)(uintptr_t)sc->address,
                                       .device = {rt_dl_device(), 0},
                                       .ndim = 1,
                                       .dtype = {T4A_DL_UINT, 8, 1},
                                       .shape = sc->t.shape},
                                      &sc->t,
                                      tensor_deleter};
    RT_OK(T->dlpack_import(sc->rt, &sc->t.m, 0, &sc->ext, NULL));
  }
}

/* Closes gate i (0: A, 1: B) on rt's stream (the host lane: on rt's queue,
 * the host's test gate on the same flag; rt's end ends its registration). */
static void gate_close(scene *sc, int i) {
  if (rt_on_host()) {
    t4a_host_buffer hb;
    RT_OK(T->host_register(sc->rt, &sc->flags[i], sizeof(uint32_t), T4A__HOST_REGISTER_TEST_GATE,
                           &hb));
    return;
  }
  uint64_t addr = (uint64_t)(uintptr_t)&sc->flags[i];
  void *args[] = {&addr};
  rt_raw_launch(sc->rt, &sc->module, "t4a_spin", args);
}

static void gate_open(scene *sc, int i) { __atomic_store_n(&sc->flags[i], 1u, __ATOMIC_SEQ_CST); }

/* The memory's release becomes due unobserved: behind gate A, a memset of
 * it, its buffer_free, seal w1; then (with `later`) gate B and seal w2,
 * which stay pending. Gate A opens and w1's work completes, which rt has
 * not looked at yet: the next natural point of rt finds the release due
 * (a consumer event recorded after w1's seal says when it completed; in
 * the host lane, which has no events, the owner's copy from rt, queued
 * after w1's work and waited for on the owner: a natural point of the
 * owner only). */
static void scene_retire(scene *sc, bool later) {
  const bool host = rt_on_host();
  gate_close(sc, 0);
  RT_OK(T->memset(sc->rt, sc->ext, 0, 0x5a, 1, BYTES));
  RT_OK(T->buffer_free(sc->rt, sc->ext)); /* retired behind the gate */
  RT_OK(T->seal(sc->rt, &sc->w1));
  t4a__CUresult (*query)(t4a__CUevent) = NULL;
  t4a_buffer from = {0}, to = {0};
  if (host) {
    RT_OK(T->buffer_alloc(sc->rt, 4, &from));
    RT_OK(T->memset(sc->rt, from, 0, 0, 1, 4));
    RT_OK(T->buffer_alloc(sc->owner, 4, &to));
    RT_OK(T->copy_from_runtime(sc->owner, to, 0, sc->rt, from, 0, 4));
  } else {
    t4a__CUresult (*create)(t4a__CUevent *, unsigned), (*record)(t4a__CUevent, t4a__CUstream);
    *(void **)&create = rt_driver("cuEventCreate");
    *(void **)&record = rt_driver("cuEventRecord");
    *(void **)&query = rt_driver("cuEventQuery");
    t4a_raw_runtime raw = {.struct_size = sizeof raw};
    RT_OK(T->raw_runtime(sc->rt, &raw));
    t4a_raw_section sec = {.struct_size = sizeof sec};
    RT_OK(T->raw_begin(sc->rt, &sec));
    ck_assert_int_eq(create(&sc->done_a, T4A__CU_EVENT_DISABLE_TIMING), 0);
    ck_assert_int_eq(record(sc->done_a, raw.stream), 0);
    RT_OK(T->raw_end(sc->rt, &sec));
  }
  if (later) {
    gate_close(sc, 1);
    RT_OK(T->seal(sc->rt, &sc->w2));
  }
  ck_assert_int_eq(__atomic_load_n(&sc->v.calls, __ATOMIC_SEQ_CST), 0);
  gate_open(sc, 0);
  uint64_t end = now_ms() + (uint64_t)(bound_s() * 1000);
  if (host) {
    t4a_witness w;
    RT_OK(T->seal(sc->owner, &w));
    int rc;
    while ((rc = T->witness_wait(w, 1000000)) == T4A_ETIMEOUT && now_ms() < end)
      ;
    ck_assert_msg(rc == T4A_OK, "gate A's work did not complete (%s)", t4a_status_name(rc));
    RT_OK(T->witness_release(w));
  } else {
    t4a__CUresult r;
    while ((r = query(sc->done_a)) == T4A__CUDA_ERROR_NOT_READY && now_ms() < end)
      pause_ms(1);
    ck_assert_msg(r == 0, "gate A's work did not complete (%d)", (int)r);
  }
  ck_assert_int_eq(__atomic_load_n(&sc->v.calls, __ATOMIC_SEQ_CST), 0); /* nothing looked yet */
}

/* The callback ran once, on `thread`, and its runtime_destroy said
 * `status`; rt is gone; everything else is put away. */
static void scene_close(scene *sc, pthread_t thread, int status) {
  ck_assert_int_eq(__atomic_load_n(&sc->v.calls, __ATOMIC_SEQ_CST), 1);
  ck_assert_msg(pthread_equal(sc->v.thread, thread), "the release ran on another thread");
  ck_assert_msg(sc->v.status == status, "the release's runtime_destroy: got %s, want %s",
                t4a_status_name(sc->v.status), t4a_status_name(status));
  t4a_runtime_counters c = {.struct_size = sizeof c};
  RT_EXPECT(T->runtime_counters(sc->rt, &c), T4A_EHANDLE); /* destroyed */
  if (sc->w1.bits) {
    RT_OK(T->witness_wait(sc->w1, T4A_WAIT_FOREVER)); /* valid after destroy: done */
    RT_OK(T->witness_release(sc->w1));
  }
  if (sc->w2.bits) {
    RT_OK(T->witness_wait(sc->w2, T4A_WAIT_FOREVER));
    RT_OK(T->witness_release(sc->w2));
  }
  t4a_raw_section sec = {.struct_size = sizeof sec};
  if (sc->done_a) {
    t4a__CUresult (*destroy)(t4a__CUevent);
    *(void **)&destroy = rt_driver("cuEventDestroy_v2");
    RT_OK(T->raw_begin(sc->owner, &sec));
    ck_assert_int_eq(destroy(sc->done_a), 0);
    RT_OK(T->raw_end(sc->owner, &sec));
  }
  if (sc->module)
    rt_raw_unload(sc->owner, sc->module);
  RT_OK(T->host_free(sc->owner, sc->flags_hb));
  if (sc->ptr) {
    t4a__CUresult (*release)(t4a__CUdeviceptr);
    *(void **)&release = rt_driver("cuMemFree_v2");
    RT_OK(T->raw_begin(sc->owner, &sec));
    ck_assert_int_eq(release(sc->ptr), 0);
    RT_OK(T->raw_end(sc->owner, &sec));
  }
  RT_OK(T->runtime_destroy(sc->owner, T4A_WAIT_FOREVER));
}

/* ---- a slot on a thread of its own, awaited with the bound --------------------------- */

typedef struct call {
  scene *sc;
  const char *slot;
  int (*fn)(struct call *);
  int status;
  pthread_t thread;
  /* what the slots take */
  t4a_witness w;
  t4a_host_buffer hb;
  t4a_module mod;
  t4a_graph g;
  void *stream;
  uint64_t timeout_ns;
} call;

static void *call_main(void *arg) {
  call *c = arg;
  c->thread = pthread_self();
  c->status = c->fn(c);
  return NULL;
}

static void call_start(rt_thread *th, call *c) { rt_thread_start(th, call_main, c); }

static void call_end(rt_thread *th, call *c, int status) {
  ck_assert_msg(rt_thread_wait(th, bound_s()),
                "%s (release from %s): still inside %s after %g s: its release callback's "
                "runtime_destroy waits for something the slot holds",
                c->slot, kind_name[c->sc->how], c->slot, bound_s());
  ck_assert_msg(c->status == status, "%s (release from %s): got %s, want %s (%s)", c->slot,
                kind_name[c->sc->how], t4a_status_name(c->status), t4a_status_name(status),
                t4a_test_backend_error(T));
}

/* Runs c's slot on a thread; with `gate_b`, opens gate B once the callback
 * is inside its runtime_destroy (which drains the stream: a slot that ran
 * it with a pin held is then stuck in destroy's wait for the pin). */
static void run_slot(call *c, bool gate_b, int status) {
  rt_thread th;
  call_start(&th, c);
  if (gate_b) {
    ck_assert_msg(flag_within_bound(&c->sc->v.entered),
                  "%s (release from %s): the release was not called within %g s", c->slot,
                  kind_name[c->sc->how], bound_s());
    gate_open(c->sc, 1);
  }
  call_end(&th, c, status);
}

/* ---- the slots ---------------------------------------------------------------------- */

static int do_seal(call *c) { return T->seal(c->sc->rt, &c->w); }
static int do_witness_query(call *c) { return T->witness_query(c->sc->w1); }
static int do_witness_elapsed(call *c) {
  uint64_t ns = 0;
  return T->witness_elapsed(c->w, c->sc->w1, &ns);
}
static int do_stream_wait_witness(call *c) {
  return T->stream_wait_witness(c->sc->owner, c->stream, c->sc->w2);
}
static int do_runtime_wait_witness(call *c) {
  return T->runtime_wait_witness(c->sc->owner, c->sc->w2);
}
static int do_buffer_free(call *c) { return T->buffer_free(c->sc->rt, c->sc->ext); }
static int do_host_free(call *c) { return T->host_free(c->sc->rt, c->hb); }
static int do_host_unregister(call *c) { return T->host_unregister(c->sc->rt, c->hb); }
static int do_module_unload(call *c) { return T->module_unload(c->sc->rt, c->mod); }
static int do_graph_release(call *c) { return T->graph_release(c->sc->rt, c->g); }
static int do_runtime_destroy(call *c) { return T->runtime_destroy(c->sc->rt, c->timeout_ns); }

START_TEST(release_destroys_its_runtime_in_seal) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    scene_retire(&sc, false);
    call c = {.sc = &sc, .slot = "seal", .fn = do_seal};
    run_slot(&c, false, T4A_OK);
    RT_OK(T->witness_wait(c.w, T4A_WAIT_FOREVER)); /* the new witness is good */
    RT_OK(T->witness_release(c.w));
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

START_TEST(release_destroys_its_runtime_in_witness_query) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    scene_retire(&sc, false);
    call c = {.sc = &sc, .slot = "witness_query", .fn = do_witness_query};
    run_slot(&c, false, T4A_OK);
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

START_TEST(release_destroys_its_runtime_in_witness_elapsed) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, T4A_RUNTIME_TIMING);
    call c = {.sc = &sc, .slot = "witness_elapsed", .fn = do_witness_elapsed};
    RT_OK(T->seal(sc.rt, &c.w)); /* nothing enqueued yet: the creation, time 0 */
    scene_retire(&sc, false);
    run_slot(&c, false, T4A_OK);
    RT_OK(T->witness_release(c.w));
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

/* A consumer's stream (and runtime_wait_witness's other runtime) waits for
 * w2, still pending behind gate B, while w1's completion makes the release
 * due: the wait pins w2's event. */
START_TEST(release_destroys_its_runtime_in_stream_wait_witness) {
  t4a__CUresult (*create)(t4a__CUstream *, unsigned), (*sync)(t4a__CUstream),
      (*destroy)(t4a__CUstream);
  *(void **)&create = rt_driver("cuStreamCreate");
  *(void **)&sync = rt_driver("cuStreamSynchronize");
  *(void **)&destroy = rt_driver("cuStreamDestroy_v2");
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    t4a_raw_section sec = {.struct_size = sizeof sec};
    t4a__CUstream s = NULL;
    RT_OK(T->raw_begin(sc.owner, &sec));
    ck_assert_int_eq(create(&s, 1 /* non-blocking */), 0);
    RT_OK(T->raw_end(sc.owner, &sec));
    scene_retire(&sc, true);
    call c = {.sc = &sc, .slot = "stream_wait_witness", .fn = do_stream_wait_witness, .stream = s};
    run_slot(&c, true, T4A_OK);
    RT_OK(T->raw_begin(sc.owner, &sec));
    ck_assert_int_eq(sync(s), 0);
    ck_assert_int_eq(destroy(s), 0);
    RT_OK(T->raw_end(sc.owner, &sec));
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

START_TEST(release_destroys_its_runtime_in_runtime_wait_witness) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    scene_retire(&sc, true);
    call c = {.sc = &sc, .slot = "runtime_wait_witness", .fn = do_runtime_wait_witness};
    run_slot(&c, true, T4A_OK);
    rt_sync(sc.owner); /* the owner's stream waited for w2: it completed */
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

/* Nothing enqueued on the memory since a completed seal: buffer_free
 * releases it itself. */
START_TEST(release_destroys_its_runtime_in_buffer_free) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    RT_OK(T->memset(sc.rt, sc.ext, 0, 0x11, 1, BYTES));
    rt_sync(sc.rt);
    call c = {.sc = &sc, .slot = "buffer_free", .fn = do_buffer_free};
    run_slot(&c, false, T4A_OK);
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

START_TEST(release_destroys_its_runtime_in_host_free) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    call c = {.sc = &sc, .slot = "host_free", .fn = do_host_free};
    void *p = NULL;
    RT_OK(T->host_alloc(sc.rt, 4096, 0, &c.hb, &p));
    scene_retire(&sc, false);
    run_slot(&c, false, T4A_OK);
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

START_TEST(release_destroys_its_runtime_in_host_unregister) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    call c = {.sc = &sc, .slot = "host_unregister", .fn = do_host_unregister};
    void *p = NULL;
    ck_assert_int_eq(posix_memalign(&p, 4096, 4096), 0);
    RT_OK(T->host_register(sc.rt, p, 4096, 0, &c.hb));
    scene_retire(&sc, false);
    run_slot(&c, false, T4A_OK);
    scene_close(&sc, c.thread, T4A_OK);
    free(p); /* unregistered (and the runtime destroyed): the caller's again */
  }
}
END_TEST

START_TEST(release_destroys_its_runtime_in_module_unload) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    call c = {.sc = &sc, .slot = "module_unload", .fn = do_module_unload};
    t4a_artifact art;
    const char *ptx = rt_test_ptx();
    RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "reentry", &art));
    RT_OK(T->module_load(sc.rt, art, &c.mod));
    scene_retire(&sc, false);
    run_slot(&c, false, T4A_OK);
    RT_OK(T->artifact_release(art));
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

START_TEST(release_destroys_its_runtime_in_graph_release) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    call c = {.sc = &sc, .slot = "graph_release", .fn = do_graph_release};
    t4a_buffer b;
    RT_OK(T->buffer_alloc(sc.rt, 4096, &b));
    RT_OK(T->graph_begin(sc.rt));
    RT_OK(T->memset(sc.rt, b, 0, 0x22, 1, 4096));
    RT_OK(T->graph_end(sc.rt, &c.g));
    scene_retire(&sc, false);
    run_slot(&c, false, T4A_OK);
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

/* The release runs at destroy's end: the runtime is gone by then. */
START_TEST(release_destroys_its_runtime_in_runtime_destroy) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    scene_retire(&sc, false);
    call c = {.sc = &sc,
              .slot = "runtime_destroy",
              .fn = do_runtime_destroy,
              .timeout_ns = T4A_WAIT_FOREVER};
    run_slot(&c, false, T4A_OK);
    scene_close(&sc, c.thread, T4A_EHANDLE);
  }
}
END_TEST

#if defined(T4A_TEST_FAKE)
/* Waits, within the bound, until the fake driver counted more calls of
 * `entry` than `before` (the call is then under way). */
static bool fake_called_since(const char *entry, uint64_t before) {
  uint64_t end = now_ms() + (uint64_t)(bound_s() * 1000);
  while (rt_fake_calls(entry) <= before && now_ms() < end)
    pause_ms(1);
  return rt_fake_calls(entry) > before;
}

static int do_witness_wait(call *c) { return T->witness_wait(c->w, c->timeout_ns); }

/* witness_wait finds the release due on its first look after its spin, with
 * w2 still pending behind gate B, so that it pins w2's event: a destroy
 * with a timeout holds rt (it polls the stream under rt's lock) while
 * witness_wait starts, and gives up (T4A_ETIMEOUT, nothing released) well
 * after the spin's 20 us. The fake's call counts say when the destroy is
 * polling. */
START_TEST(release_destroys_its_runtime_in_witness_wait) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    scene_retire(&sc, true);
    call hold = {.sc = &sc,
                 .slot = "runtime_destroy (holding the runtime)",
                 .fn = do_runtime_destroy,
                 .timeout_ns = 300000000ull};
    call c = {
        .sc = &sc, .slot = "witness_wait", .fn = do_witness_wait, .timeout_ns = T4A_WAIT_FOREVER};
    c.w = sc.w2;
    rt_thread th_hold, th;
    uint64_t polls = rt_fake_calls("cuStreamQuery");
    call_start(&th_hold, &hold);
    ck_assert_msg(fake_called_since("cuStreamQuery", polls), "the destroy never polled");
    call_start(&th, &c);
    call_end(&th_hold, &hold, T4A_ETIMEOUT);
    ck_assert_msg(flag_within_bound(&sc.v.entered),
                  "witness_wait (release from %s): the release was not called within %g s",
                  kind_name[how], bound_s());
    gate_open(&sc, 1);
    call_end(&th, &c, T4A_OK);
    scene_close(&sc, c.thread, T4A_OK);
  }
}
END_TEST

/* runtime_destroy, while another thread's witness_wait blocks on (pins) an
 * event of the runtime: destroy lets the lock go while it waits for the pin
 * to go, with the release already due. The release must still run at
 * destroy's end, on destroy's thread (not on the waiter's, as its unlock,
 * in the middle of the destroy, where a runtime_destroy would run a
 * second destroy beside the first). */
START_TEST(release_destroys_its_runtime_after_destroy_waited_for_a_pin) {
  for (kind how = 0; how < KINDS; how++) {
    scene sc;
    scene_open(&sc, how, 0);
    gate_close(&sc, 0);
    RT_OK(T->memset(sc.rt, sc.ext, 0, 0x5a, 1, BYTES));
    RT_OK(T->buffer_free(sc.rt, sc.ext));
    RT_OK(T->seal(sc.rt, &sc.w1));
    call wait = {.sc = &sc,
                 .slot = "witness_wait (pinning an event)",
                 .fn = do_witness_wait,
                 .w = sc.w1,
                 .timeout_ns = T4A_WAIT_FOREVER};
    call c = {.sc = &sc,
              .slot = "runtime_destroy",
              .fn = do_runtime_destroy,
              .timeout_ns = T4A_WAIT_FOREVER};
    rt_thread th_wait, th;
    uint64_t blocks = rt_fake_calls("cuEventSynchronize");
    call_start(&th_wait, &wait);
    ck_assert_msg(fake_called_since("cuEventSynchronize", blocks), "witness_wait never blocked");
    uint64_t drains = rt_fake_calls("cuStreamSynchronize");
    call_start(&th, &c);
    ck_assert_msg(fake_called_since("cuStreamSynchronize", drains), "the destroy never drained");
    gate_open(&sc, 0);
    call_end(&th, &c, T4A_OK);
    call_end(&th_wait, &wait, T4A_OK);
    scene_close(&sc, c.thread, T4A_EHANDLE);
  }
}
END_TEST
#endif

int main(void) {
  Suite *s = rt_suite("reentry");
  TCase *tc = rt_tcase(s, "release-callbacks", 120);
  tcase_add_test(tc, release_destroys_its_runtime_in_seal);
  tcase_add_test(tc, release_destroys_its_runtime_in_witness_query);
  tcase_add_test(tc, release_destroys_its_runtime_in_witness_elapsed);
  RT_CUDA_ONLY(tc, release_destroys_its_runtime_in_stream_wait_witness,
               "a consumer's CUstream; the host's stream_wait_witness is NULL");
  tcase_add_test(tc, release_destroys_its_runtime_in_runtime_wait_witness);
  tcase_add_test(tc, release_destroys_its_runtime_in_buffer_free);
  tcase_add_test(tc, release_destroys_its_runtime_in_host_free);
  tcase_add_test(tc, release_destroys_its_runtime_in_host_unregister);
  RT_CUDA_ONLY(tc, release_destroys_its_runtime_in_module_unload,
               "a module (the host backend makes none yet: no kernels)");
  tcase_add_test(tc, release_destroys_its_runtime_in_graph_release);
  tcase_add_test(tc, release_destroys_its_runtime_in_runtime_destroy);
#if defined(T4A_TEST_FAKE)
  TCase *tf = rt_tcase(s, "fake-only", 120);
  tcase_add_test(tf, release_destroys_its_runtime_in_witness_wait);
  tcase_add_test(tf, release_destroys_its_runtime_after_destroy_waited_for_a_pin);
#endif
  return rt_run(s, 1);
}
