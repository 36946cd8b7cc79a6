/* tests/soak/soak.h -- the soak: N threads x M runtimes on every device run
 * random operation sequences against host shadow copies, checked bit for
 * bit, for a given time; then resource drift from start to end is measured.
 *
 * Files, by concern:
 *   soak_main.c    options, phases (warm-up, main), periodic and final
 *                  reports, the exit status
 *   soak_worker.c  a thread's life: runtimes, the operation mix, witnesses,
 *                  destroy-and-recreate, the final check and release
 *   soak_copies.c  device and pinned memory, every kind of copy, the
 *                  ordering rules the shadow model needs
 *   soak_code.c    artifacts (compiled and from PTX), modules, launches,
 *                  buffers shared between threads, the witness mailbox
 *   soak_report.c  the progress report, the final table, the drift table
 *   soak_probe.c   RSS, open fds, device memory in use, the fake driver's
 *                  live objects
 *
 * The shadow model. Every device buffer and pinned host buffer has a host
 * copy of what it must hold once the work enqueued so far has run. A
 * runtime's work runs in call order on its stream, so each enqueued write
 * updates the shadow at once, and a later read on the same stream (copy_d2h
 * waits for the work ahead of it) must see the shadow exactly. Work of two
 * runtimes is ordered only where the ABI orders it; the soak adds the edges
 * it needs itself (see soak_copies.c), as a consumer must. */
#ifndef T4A_SOAK_H
#define T4A_SOAK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_loader.h"

#define SOAK_MAX_DEVICES 16
#define SOAK_MAX_BUFS 6                       /* device buffers per runtime */
#define SOAK_MAX_HOSTS 3                      /* pinned host buffers per runtime */
#define SOAK_MAX_MODS 2                       /* modules per runtime */
#define SOAK_MAX_WIT 8                        /* witnesses a thread holds */
#define SOAK_LOG 24                           /* last steps kept per thread for a failure report */
#define SOAK_HANG_NS (300ull * 1000000000ull) /* a wait longer than this is a hang */

/* Operation kinds, counted and reported. */
#define SOAK_KINDS(X)                                                                              \
  X(ALLOC, "buffer_alloc")                                                                         \
  X(FREE, "buffer_free")                                                                           \
  X(TRIM, "cache_trim")                                                                            \
  X(H2D, "copy_h2d")                                                                               \
  X(D2H, "copy_d2h")                                                                               \
  X(H2D_PINNED, "copy_h2d_pinned")                                                                 \
  X(D2H_PINNED, "copy_d2h_pinned")                                                                 \
  X(HOST_ALLOC, "host_alloc")                                                                      \
  X(HOST_FREE, "host_free")                                                                        \
  X(HOST_FREE_PENDING, "host_free(pending)")                                                       \
  X(D2D, "copy_d2d")                                                                               \
  X(CROSS, "copy_from_runtime")                                                                    \
  X(PEER, "copy_from_peer")                                                                        \
  X(VIA_HOST, "copy_from_peer_via_host")                                                           \
  X(SHARED, "copy(other thread)")                                                                  \
  X(PUBLISH, "publish/unpublish")                                                                  \
  X(LAUNCH, "launch")                                                                              \
  X(MEMSET, "memset")                                                                              \
  X(COMPILE, "artifact_compile")                                                                   \
  X(FROM_BYTES, "artifact_from_bytes")                                                             \
  X(LOAD, "module_load")                                                                           \
  X(UNLOAD, "module_unload")                                                                       \
  X(SEAL_WAIT, "seal+host wait")                                                                   \
  X(WITNESS, "witness query/wait")                                                                 \
  X(WAIT_WITNESS, "runtime_wait_witness")                                                          \
  X(MAILBOX, "witness(other thread)")                                                              \
  X(DESTROY, "destroy+recreate")                                                                   \
  X(DESTROY_TIMEOUT, "destroy(timeout 0) busy")                                                    \
  X(VERIFY, "verify")                                                                              \
  X(REFUSED, "refused as documented")

enum soak_kind {
#define SOAK_ENUM(name, text) K_##name,
  SOAK_KINDS(SOAK_ENUM)
#undef SOAK_ENUM
      K_COUNT
};

extern const char *const soak_kind_names[K_COUNT];

typedef struct soak_opts {
  double duration_s, warmup_s, report_every_s;
  uint64_t ops; /* main phase: each thread stops after this many operations (0: no limit) */
  unsigned threads;
  unsigned runtimes; /* per device, per thread */
  unsigned devices;  /* 0: all */
  uint64_t seed;
  uint64_t max_bytes;     /* largest device buffer */
  uint64_t staging_bytes; /* every runtime's staging bound */
  uint64_t rss_tolerance_kib;
  uint64_t device_tolerance_bytes;
} soak_opts;

/* A small, fast generator (splitmix64): one per thread, and one per
 * operation seeded from it, so a thread's sequence of choices depends only
 * on the seed and the thread's index. */
typedef struct soak_rng {
  uint64_t s;
} soak_rng;

static inline uint64_t soak_next(soak_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static inline uint64_t soak_below(soak_rng *r, uint64_t n) { return n ? soak_next(r) % n : 0; }

/* True with probability 1/n. */
static inline bool soak_one_in(soak_rng *r, uint64_t n) { return soak_below(r, n) == 0; }

/* A device buffer of one runtime and its shadow. `readers`: bit i set while
 * runtime i of the same thread may still read this buffer through a copy
 * it enqueued (copy_from_runtime, copy_from_peer); the owner must not write
 * the buffer before it is ordered after those reads. */
typedef struct soak_buf {
  t4a_buffer h;
  uint64_t size;
  uint8_t *shadow;
  uint64_t readers;
} soak_buf;

/* A pinned host buffer: `ptr` is what the device reads and writes, `shadow`
 * what it must hold once its runtime's work completed. `dirty`: enqueued
 * copies use it, so the host must not touch it before a witness covering
 * them is ready. */
typedef struct soak_host {
  t4a_host_buffer h;
  uint64_t size;
  uint8_t *ptr;
  uint8_t *shadow;
  bool dirty;
} soak_host;

typedef struct soak_mod {
  t4a_module m;
  t4a_function f;
} soak_mod;

/* What the runtime's counters must say (copies of zero bytes count as
 * nothing: they enqueue nothing). */
typedef struct soak_expect {
  uint64_t seals, launches, h2d_pinned, d2h_pinned, h2d, d2h, d2d, cross, peer, via_host;
  uint64_t bytes_h2d, bytes_d2h, bytes_d2d;
} soak_expect;

typedef struct soak_rt {
  t4a_runtime h;
  int32_t dev;
  soak_buf b[SOAK_MAX_BUFS];
  unsigned nb;
  soak_host hb[SOAK_MAX_HOSTS];
  unsigned nh;
  soak_mod m[SOAK_MAX_MODS];
  unsigned nm;
  soak_expect x;
  bool has_pub; /* the thread's shared buffer lives here */
} soak_rt;

/* A witness a thread holds, and whether the runtime that sealed it was
 * destroyed since (then it must report ready). */
typedef struct soak_wit {
  t4a_witness w;
  unsigned rt;
  uint64_t rt_bits;
} soak_wit;

typedef struct soak_stats {
  atomic_uint_fast64_t ops[K_COUNT];
  atomic_uint_fast64_t bytes[K_COUNT];
} soak_stats;

typedef struct soak_thread {
  unsigned index;
  pthread_t tid;
  soak_rng rng;
  uint64_t op;                   /* operations started */
  atomic_uint_fast64_t progress; /* operations finished: the watchdog reads it */
  double wd_moved;               /* the watchdog's: when progress last moved */
  uint64_t wd_seen;              /* and to what */
  soak_rt *rt;
  unsigned nrt;
  soak_wit wit[SOAK_MAX_WIT];
  unsigned nwit;
  int pub_rt;   /* runtime of the buffer this thread shares, -1 when none */
  uint8_t *src; /* pageable source buffer (max_bytes + 64) */
  uint8_t *dst; /* pageable destination buffer (max_bytes + 64) */
  soak_stats st;
  char log[SOAK_LOG][128]; /* a ring of the last steps, "#op what" */
  uint64_t nlog;
  bool failed;
} soak_thread;

/* A buffer a thread shares with the others: immutable while `live`; the
 * lock is held by whoever copies from it, and by its owner to withdraw it. */
typedef struct soak_pub {
  pthread_mutex_t lock;
  bool live;
  t4a_runtime rt;
  t4a_buffer b;
  int32_t dev;
  uint64_t size;
  uint8_t *content;
} soak_pub;

/* The witness a thread last posted for the others to wait on. */
typedef struct soak_box {
  pthread_mutex_t lock;
  t4a_witness w;
} soak_box;

typedef struct soak_global {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *backend;
  soak_opts o;
  unsigned ndev;
  bool peer[SOAK_MAX_DEVICES][SOAK_MAX_DEVICES]; /* [dst][src]: dst reads src directly */
  bool compiler;
  bool kernels;      /* false with --no-kernels: the fills a launch makes are memsets */
  bool host_backend; /* the backend is "host" (one device; peer copies T4A_EUNSUPPORTED) */
  const char *phase;
  atomic_bool stop;
  atomic_uint failures;
  atomic_uint_fast64_t mismatches;
  uint64_t phase_seed;
  soak_thread *th;
  soak_pub *pub;
  soak_box *box;
  pthread_mutex_t print_lock;
} soak_global;

extern soak_global G;

/* ---- soak_worker.c ---- */
void *soak_worker(void *arg);
/* Records a failure of thread th (printed with its last operations) and
 * asks everyone to stop. Returns -1. */
int soak_fail(soak_thread *th, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0 when rc is `want` (or `alt`, when alt is not T4A_OK), else a failure
 * naming the call, both statuses and the backend's detail. */
int soak_status(soak_thread *th, const char *call, int rc, int want, int alt);
#define SOAK_CALL(th, want, expr) soak_status((th), #expr, (expr), (want), T4A_OK)
#define SOAK_OK(th, expr) soak_status((th), #expr, (expr), T4A_OK, T4A_OK)
void soak_count(soak_thread *th, enum soak_kind k, uint64_t bytes);
void soak_note(soak_thread *th, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Seals runtime i, waits on the host (in one of three ways), checks its
 * pinned buffers against their shadows and marks its reads done. */
int soak_host_wait(soak_thread *th, unsigned i, soak_rng *r);
/* Makes runtime `waiter` wait for runtime `sealed`'s work so far. */
int soak_order(soak_thread *th, unsigned waiter, unsigned sealed);

/* ---- soak_copies.c ---- */
void soak_fill_random(uint8_t *p, uint64_t n, soak_rng *r);
int soak_compare(soak_thread *th, const char *what, const uint8_t *got, const uint8_t *want,
                 uint64_t n);
/* Before runtime i writes buffer b: orders it after the reads pending on b. */
int soak_before_write(soak_thread *th, unsigned i, soak_buf *b);
int soak_op_alloc(soak_thread *th, unsigned i, soak_rng *r);
int soak_op_free(soak_thread *th, unsigned i, soak_rng *r);
int soak_op_h2d(soak_thread *th, unsigned i, soak_rng *r);
int soak_op_d2h(soak_thread *th, unsigned i, soak_rng *r, bool whole);
int soak_verify_buffer(soak_thread *th, unsigned i, unsigned k, soak_rng *r);
int soak_op_host_alloc(soak_thread *th, unsigned i, soak_rng *r);
int soak_op_host_free(soak_thread *th, unsigned i, soak_rng *r);
int soak_op_pinned(soak_thread *th, unsigned i, soak_rng *r, bool to_device);
int soak_op_d2d(soak_thread *th, unsigned i, soak_rng *r);
int soak_op_between(soak_thread *th, soak_rng *r, bool peer);
int soak_large_round_trip(soak_thread *th, unsigned i, soak_rng *r);
void soak_drop_buffer(soak_rt *rt, unsigned k);
void soak_drop_host(soak_rt *rt, unsigned k);

/* ---- soak_code.c ---- */
int soak_op_module(soak_thread *th, unsigned i, soak_rng *r);
int soak_op_launch(soak_thread *th, unsigned i, soak_rng *r);
/* Fills [off, off + 4 n) of buffer k of runtime i with value v by a launch
 * (without kernels: by a 32-bit memset). */
int soak_launch_fill(soak_thread *th, unsigned i, unsigned k, uint64_t off, uint64_t n, uint32_t v,
                     soak_rng *r);
int soak_op_publish(soak_thread *th, soak_rng *r);
int soak_unpublish(soak_thread *th);
int soak_op_shared(soak_thread *th, soak_rng *r);
int soak_op_mailbox(soak_thread *th, soak_rng *r);

/* ---- soak_probe.c ---- */
typedef struct soak_probe {
  long rss_kib;
  int fds;
  uint64_t device_used[SOAK_MAX_DEVICES]; /* bytes */
  bool device_known;
  const char *device_how;
  bool fake; /* the fake driver: its live objects are counted */
  uint64_t fake_live[6];
  uint64_t live_buffers, live_host_buffers; /* over fresh runtimes: must be 0 */
  int status;                               /* T4A_OK, or what failed while probing */
} soak_probe;
extern const char *const soak_fake_live_names[6];
long soak_rss_kib(void);
int soak_open_fds(void);
void soak_probe_take(soak_probe *p);
void soak_probe_close(void);

/* ---- soak_report.c ---- */
/* The progress report at el seconds (last_*: the previous one's). */
void soak_progress(double el, double *last_t, uint64_t last_kind[K_COUNT]);
void soak_final_report(double el);
/* Prints the compile caches' statistics; -1 when the disk cache rejected an
 * entry (the soak wrote them all itself). */
int soak_compile_stats(const char *when);
/* Prints the drift table; returns how many lines are beyond tolerance. */
int soak_drift(const soak_probe *a, const soak_probe *b);

#endif
