/* tests/soak/soak_worker.c -- one thread of the soak: its runtimes (M on
 * every device), a random mix of operations drawn from its own generator,
 * witnesses waited on the host and across runtimes, runtimes destroyed with
 * work queued and created again; at the end every buffer is read back and
 * every runtime's counters must equal what the thread did, then everything
 * is released. */
#include "config.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/soak/soak.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void soak_note(soak_thread *th, const char *fmt, ...) {
  char *line = th->log[th->nlog++ % SOAK_LOG];
  int n = snprintf(line, sizeof th->log[0], "#%llu ", (unsigned long long)th->op);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof th->log[0] - (size_t)n, fmt, ap);
  va_end(ap);
}

int soak_fail(soak_thread *th, const char *fmt, ...) {
  char why[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  th->failed = true;
  atomic_fetch_add(&G.failures, 1);
  atomic_store(&G.stop, true);
  pthread_mutex_lock(&G.print_lock);
  fprintf(stderr, "FAIL: %s phase, thread %u, operation %llu: %s\n", G.phase, th->index,
          (unsigned long long)th->op, why);
  fprintf(stderr, "  its last steps, oldest first (seed %llu):\n", (unsigned long long)G.o.seed);
  for (uint64_t k = th->nlog > SOAK_LOG ? th->nlog - SOAK_LOG : 0; k < th->nlog; k++)
    fprintf(stderr, "    %s\n", th->log[k % SOAK_LOG]);
  pthread_mutex_unlock(&G.print_lock);
  return -1;
}

int soak_status(soak_thread *th, const char *call, int rc, int want, int alt) {
  if (rc == want || (alt != T4A_OK && rc == alt))
    return 0;
  t4a_error_info e = {.struct_size = sizeof e};
  G.t->last_error(&e);
  return soak_fail(th, "%s returned %s, want %s%s%s: %s", call, t4a_status_name(rc),
                   t4a_status_name(want), alt != T4A_OK ? " or " : "",
                   alt != T4A_OK ? t4a_status_name(alt) : "", e.message ? e.message : "");
}

void soak_count(soak_thread *th, enum soak_kind k, uint64_t bytes) {
  atomic_fetch_add_explicit(&th->st.ops[k], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&th->st.bytes[k], bytes, memory_order_relaxed);
}

/* ---- runtimes ------------------------------------------------------------------ */

static int create(soak_thread *th, unsigned i, soak_rng *r) {
  static const uint64_t cache_limits[] = {0, 256u << 10, 4u << 20};
  static const uint64_t thresholds[] = {0, 1, 64u << 20};
  soak_rt *rt = &th->rt[i];
  int32_t dev = rt->dev;
  memset(rt, 0, sizeof *rt);
  rt->dev = dev;
  /* one staging size for all, so the spare parts kept at the end match the
   * ones kept after the warm-up (resource drift); the rest varies */
  t4a_runtime_options o = {.struct_size = sizeof o,
                           .staging_bytes = G.o.staging_bytes,
                           .pool_release_threshold = thresholds[soak_below(r, 3)],
                           .cache_limit_bytes = cache_limits[soak_below(r, 3)],
                           .copy_threads = (uint32_t)soak_below(r, 3)};
  soak_note(th, "runtime_create rt%u on device %d", i, (int)dev);
  return SOAK_OK(th, G.t->runtime_create(dev, &o, &rt->h));
}

int soak_order(soak_thread *th, unsigned waiter, unsigned sealed) {
  const t4a_gpu_backend_v1 *t = G.t;
  t4a_witness w = {0};
  soak_note(th, "rt%u waits for rt%u (seal, runtime_wait_witness)", waiter, sealed);
  if (SOAK_OK(th, t->seal(th->rt[sealed].h, &w)))
    return -1;
  th->rt[sealed].x.seals++;
  int rc = SOAK_OK(th, t->runtime_wait_witness(th->rt[waiter].h, w));
  if (SOAK_OK(th, t->witness_release(w)) || rc)
    return -1;
  soak_rt *rt = &th->rt[waiter];
  for (unsigned k = 0; k < rt->nb; k++) /* the waiter now runs after sealed's reads */
    rt->b[k].readers &= ~(1ull << sealed);
  soak_count(th, K_WAIT_WITNESS, 0);
  return 0;
}

/* Runtime i's work completed: its reads of other runtimes' buffers too. */
static void reads_done(soak_thread *th, unsigned i) {
  for (unsigned q = 0; q < th->nrt; q++)
    for (unsigned k = 0; k < th->rt[q].nb; k++)
      th->rt[q].b[k].readers &= ~(1ull << i);
}

static int wait_host(soak_thread *th, t4a_witness w, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  uint64_t start = now_ns();
  switch (soak_below(r, 3)) {
  case 0: return SOAK_OK(th, t->witness_wait(w, T4A_WAIT_FOREVER));
  case 1: /* short timeouts: T4A_ETIMEOUT until it is ready */
    for (;;) {
      int rc = t->witness_wait(w, 1000000);
      if (rc == T4A_OK)
        return 0;
      if (soak_status(th, "witness_wait(w, 1 ms)", rc, T4A_OK, T4A_ETIMEOUT))
        return -1;
      if (now_ns() - start > SOAK_HANG_NS)
        return soak_fail(th, "a witness was not ready after %llu s", SOAK_HANG_NS / 1000000000ull);
    }
  default: /* polling */
    for (;;) {
      int rc = t->witness_query(w);
      if (rc == T4A_OK)
        return 0;
      if (soak_status(th, "witness_query", rc, T4A_OK, T4A_ENOTREADY))
        return -1;
      if (now_ns() - start > SOAK_HANG_NS)
        return soak_fail(th, "a witness was not ready after %llu s", SOAK_HANG_NS / 1000000000ull);
      sched_yield();
    }
  }
}

int soak_host_wait(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  t4a_witness w = {0};
  soak_note(th, "seal rt%u and wait on the host", i);
  if (SOAK_OK(th, t->seal(rt->h, &w)))
    return -1;
  rt->x.seals++;
  int rc = wait_host(th, w, r);
  if (SOAK_OK(th, t->witness_release(w)) || rc)
    return -1;
  soak_count(th, K_SEAL_WAIT, 0);
  reads_done(th, i);
  /* every pinned buffer, used or not: a block the backend handed out while
   * earlier work still wrote it would differ now */
  for (unsigned k = 0; k < rt->nh; k++) {
    soak_host *hb = &rt->hb[k];
    if (soak_compare(th, "a pinned host buffer after its runtime's witness", hb->ptr, hb->shadow,
                     hb->size))
      return -1;
    hb->dirty = false;
  }
  return 0;
}

/* ---- witnesses ------------------------------------------------------------------ */

static int op_witness(soak_thread *th, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  if (th->nwit < SOAK_MAX_WIT && (th->nwit == 0 || soak_one_in(r, 2))) {
    unsigned i = (unsigned)soak_below(r, th->nrt);
    soak_wit *x = &th->wit[th->nwit];
    soak_note(th, "seal rt%u and keep the witness", i);
    if (SOAK_OK(th, t->seal(th->rt[i].h, &x->w)))
      return -1;
    th->rt[i].x.seals++;
    x->rt = i;
    x->rt_bits = th->rt[i].h.bits;
    th->nwit++;
    soak_count(th, K_WITNESS, 0);
    return 0;
  }
  unsigned k = (unsigned)soak_below(r, th->nwit);
  soak_wit *x = &th->wit[k];
  soak_note(th, "a held witness of rt%u", x->rt);
  /* a witness outlives its runtime, and then reports ready */
  bool gone = th->rt[x->rt].h.bits != x->rt_bits;
  int rc = 0;
  switch (soak_below(r, 4)) {
  case 0:
    rc = soak_status(th, "witness_query", t->witness_query(x->w), T4A_OK,
                     gone ? T4A_OK : T4A_ENOTREADY);
    break;
  case 1:
    rc = soak_status(th, "witness_wait(w, 0)", t->witness_wait(x->w, 0), T4A_OK,
                     gone ? T4A_OK : T4A_ETIMEOUT);
    break;
  case 2: rc = SOAK_OK(th, t->witness_retain(x->w)) || SOAK_OK(th, t->witness_release(x->w)); break;
  default: rc = SOAK_OK(th, t->witness_release(x->w)); th->wit[k] = th->wit[--th->nwit];
  }
  soak_count(th, K_WITNESS, 0);
  return rc ? -1 : 0;
}

static int release_witnesses(soak_thread *th, bool check) {
  int rc = 0;
  for (unsigned k = 0; k < th->nwit; k++) {
    /* every runtime was waited for: each witness reports ready */
    if (check && SOAK_OK(th, G.t->witness_query(th->wit[k].w)))
      rc = -1;
    if (SOAK_OK(th, G.t->witness_release(th->wit[k].w)))
      rc = -1;
  }
  th->nwit = 0;
  return rc;
}

/* ---- destroy with work queued, then create again --------------------------------- */

static int op_destroy(soak_thread *th, unsigned i, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  soak_rt *rt = &th->rt[i];
  if (rt->has_pub && soak_unpublish(th)) /* no other thread may use the runtime now */
    return -1;
  for (uint64_t k = 1 + soak_below(r, 3); k-- > 0;) {
    int rc;
    switch (soak_below(r, 4)) {
    case 0: rc = soak_op_h2d(th, i, r); break;
    case 1: rc = soak_op_launch(th, i, r); break;
    case 2: rc = soak_op_d2d(th, i, r); break;
    default: rc = soak_op_pinned(th, i, r, soak_one_in(r, 2)); break;
    }
    if (rc)
      return -1;
  }
  t4a_runtime old = rt->h;
  t4a_buffer buf = rt->nb ? rt->b[0].h : (t4a_buffer){0};
  t4a_host_buffer hb = rt->nh ? rt->hb[0].h : (t4a_host_buffer){0};
  t4a_witness w = {0};
  if (SOAK_OK(th, t->seal(old, &w)))
    return -1;
  if (soak_op_d2d(th, i, r)) /* and some unsealed work behind the seal */
    return -1;
  uint64_t timeout = soak_one_in(r, 2) ? 0 : T4A_WAIT_FOREVER;
  soak_note(th, "runtime_destroy rt%u (timeout %s) with %u buffers, %u host buffers", i,
            timeout ? "forever" : "0", rt->nb, rt->nh);
  int rc = t->runtime_destroy(old, timeout);
  if (soak_status(th, "runtime_destroy(rt, 0)", rc, T4A_OK, timeout ? T4A_OK : T4A_ETIMEOUT))
    goto out;
  if (rc == T4A_ETIMEOUT) { /* nothing was released: the runtime is usable, call again */
    soak_count(th, K_DESTROY_TIMEOUT, 0);
    if ((rc = SOAK_OK(th, t->runtime_destroy(old, T4A_WAIT_FOREVER))))
      goto out;
  }
  /* its handles went stale; the witness stays valid and reports ready */
  uint64_t size = 0;
  t4a_runtime_counters c = {.struct_size = sizeof c};
  if ((buf.bits && SOAK_CALL(th, T4A_EHANDLE, t->buffer_size(old, buf, &size))) ||
      (hb.bits && SOAK_CALL(th, T4A_EHANDLE, t->host_free(old, hb))) ||
      SOAK_CALL(th, T4A_EHANDLE, t->runtime_counters(old, &c)) ||
      SOAK_OK(th, t->witness_query(w)) || SOAK_OK(th, t->witness_wait(w, T4A_WAIT_FOREVER))) {
    rc = -1;
    goto out;
  }
  while (rt->nb)
    soak_drop_buffer(rt, 0);
  while (rt->nh)
    soak_drop_host(rt, 0);
  reads_done(th, i); /* its stream drained */
  soak_count(th, K_DESTROY, 0);
  rc = create(th, i, r);
out:
  if (SOAK_OK(th, t->witness_release(w)))
    rc = -1;
  return rc ? -1 : 0;
}

/* ---- the operation mix -------------------------------------------------------------- */

typedef struct weight {
  enum soak_kind k;
  unsigned w;
} weight;

static const weight mix[] = {
    {K_ALLOC, 70},      {K_FREE, 50},         {K_H2D, 90},        {K_D2H, 90},
    {K_H2D_PINNED, 60}, {K_D2H_PINNED, 60},   {K_HOST_ALLOC, 20}, {K_HOST_FREE, 20},
    {K_D2D, 70},        {K_CROSS, 50},        {K_PEER, 50},       {K_SHARED, 30},
    {K_PUBLISH, 6},     {K_LAUNCH, 100},      {K_LOAD, 10},       {K_SEAL_WAIT, 40},
    {K_WITNESS, 40},    {K_WAIT_WITNESS, 30}, {K_MAILBOX, 30},    {K_DESTROY, 5},
    {K_VERIFY, 25},
};

static enum soak_kind pick_kind(soak_rng *r) {
  static unsigned total;
  if (!total)
    for (size_t k = 0; k < sizeof mix / sizeof mix[0]; k++)
      total += mix[k].w;
  uint64_t v = soak_below(r, total);
  for (size_t k = 0; k < sizeof mix / sizeof mix[0]; k++) {
    if (v < mix[k].w)
      return mix[k].k;
    v -= mix[k].w;
  }
  return K_ALLOC;
}

static int one_op(soak_thread *th) {
  /* each operation draws from its own generator, seeded by one draw of the
   * thread's: the thread's sequence of choices stays the same whatever an
   * operation's branches consumed */
  soak_rng r = {soak_next(&th->rng)};
  unsigned i = (unsigned)soak_below(&r, th->nrt);
  enum soak_kind k = pick_kind(&r);
  switch (k) {
  case K_ALLOC: return soak_op_alloc(th, i, &r);
  case K_FREE: return soak_op_free(th, i, &r);
  case K_H2D: return soak_op_h2d(th, i, &r);
  case K_D2H: return soak_op_d2h(th, i, &r, false);
  case K_H2D_PINNED: return soak_op_pinned(th, i, &r, true);
  case K_D2H_PINNED: return soak_op_pinned(th, i, &r, false);
  case K_HOST_ALLOC: return soak_op_host_alloc(th, i, &r);
  case K_HOST_FREE: return soak_op_host_free(th, i, &r);
  case K_D2D: return soak_op_d2d(th, i, &r);
  case K_CROSS: return soak_op_between(th, &r, false);
  case K_PEER: return soak_op_between(th, &r, true);
  case K_SHARED: return soak_op_shared(th, &r);
  case K_PUBLISH: return soak_op_publish(th, &r);
  case K_LAUNCH: return soak_op_launch(th, i, &r);
  case K_LOAD: return soak_op_module(th, i, &r);
  case K_SEAL_WAIT: return soak_host_wait(th, i, &r);
  case K_WITNESS: return op_witness(th, &r);
  case K_WAIT_WITNESS: return soak_order(th, i, (unsigned)soak_below(&r, th->nrt));
  case K_MAILBOX: return soak_op_mailbox(th, &r);
  case K_DESTROY: return op_destroy(th, i, &r);
  case K_VERIFY: return soak_op_d2h(th, i, &r, true);
  default: return 0;
  }
}

/* ---- the end: read everything back, check the counters, release ---------------------- */

static int check_counters(soak_thread *th, unsigned i) {
  soak_rt *rt = &th->rt[i];
  t4a_runtime_counters c = {.struct_size = sizeof c};
  if (SOAK_OK(th, G.t->runtime_counters(rt->h, &c)))
    return -1;
  const soak_expect *x = &rt->x;
  struct {
    const char *name;
    uint64_t got, want;
  } f[] = {
      {"live_buffers", c.live_buffers, rt->nb + rt->has_pub},
      {"live_host_buffers", c.live_host_buffers, rt->nh},
      {"quarantined", c.quarantined, 0},
      {"launches", c.launches, x->launches},
      {"copies_h2d_pinned", c.copies_h2d_pinned, x->h2d_pinned},
      {"copies_d2h_pinned", c.copies_d2h_pinned, x->d2h_pinned},
      {"copies_h2d_pageable", c.copies_h2d_pageable, x->h2d},
      {"copies_d2h_pageable", c.copies_d2h_pageable, x->d2h},
      {"copies_d2d", c.copies_d2d, x->d2d},
      {"copies_cross_runtime", c.copies_cross_runtime, x->cross},
      {"copies_peer", c.copies_peer, x->peer},
      {"copies_via_host", c.copies_via_host, x->via_host},
      {"bytes_h2d", c.bytes_h2d, x->bytes_h2d},
      {"bytes_d2h", c.bytes_d2h, x->bytes_d2h},
      {"bytes_d2d", c.bytes_d2d, x->bytes_d2d},
      {"seals", c.seals, x->seals},
      {"staging_bytes", c.staging_bytes, G.o.staging_bytes},
  };
  for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
    if (f[k].got != f[k].want)
      return soak_fail(th, "rt%u (device %d): counter %s is %llu, the thread did %llu", i,
                       (int)rt->dev, f[k].name, (unsigned long long)f[k].got,
                       (unsigned long long)f[k].want);
  if (c.staging_peak_bytes > c.staging_bytes || c.seal_events_recorded > c.seals)
    return soak_fail(
        th, "rt%u: staging peak %llu over its bound %llu, or %llu events for %llu seals", i,
        (unsigned long long)c.staging_peak_bytes, (unsigned long long)c.staging_bytes,
        (unsigned long long)c.seal_events_recorded, (unsigned long long)c.seals);
  return 0;
}

static int final_check(soak_thread *th, soak_rng *r) {
  for (unsigned i = 0; i < th->nrt; i++)
    if (soak_host_wait(th, i, r))
      return -1;
  for (unsigned i = 0; i < th->nrt; i++) {
    soak_rt *rt = &th->rt[i];
    for (unsigned k = 0; k < rt->nb; k++)
      if (soak_verify_buffer(th, i, k, r))
        return -1;
    if (check_counters(th, i))
      return -1;
  }
  return 0;
}

/* Releases everything the thread holds: explicitly or, for half of the
 * runtimes, by destroying the runtime with its buffers still live. */
static void release_all(soak_thread *th, soak_rng *r) {
  const t4a_gpu_backend_v1 *t = G.t;
  bool check = !th->failed && atomic_load(&G.failures) == 0;
  soak_unpublish(th);
  release_witnesses(th, check);
  for (unsigned i = 0; i < th->nrt; i++) {
    soak_rt *rt = &th->rt[i];
    if (!rt->h.bits)
      continue;
    bool explicit_release = soak_one_in(r, 2);
    while (rt->nb) {
      if (explicit_release)
        SOAK_OK(th, t->buffer_free(rt->h, rt->b[0].h));
      soak_drop_buffer(rt, 0);
    }
    while (rt->nh) {
      if (explicit_release)
        SOAK_OK(th, t->host_free(rt->h, rt->hb[0].h));
      soak_drop_host(rt, 0);
    }
    for (unsigned k = 0; explicit_release && k < rt->nm; k++)
      SOAK_OK(th, t->module_unload(rt->h, rt->m[k].m));
    rt->nm = 0;
    SOAK_OK(th, t->runtime_destroy(rt->h, T4A_WAIT_FOREVER));
    rt->h.bits = 0;
  }
}

void *soak_worker(void *arg) {
  soak_thread *th = arg;
  soak_rng r = {soak_next(&th->rng)};
  bool ok = true;
  for (unsigned i = 0; i < th->nrt && ok; i++)
    ok = create(th, i, &r) == 0;
  /* a large pageable copy on each runtime first: the backend's copy threads
   * start at the first one, and must exist before the drift baseline */
  for (unsigned i = 0; i < th->nrt && ok; i++)
    ok = soak_large_round_trip(th, i, &r) == 0;
  uint64_t limit = strcmp(G.phase, "main") == 0 && G.o.ops ? G.o.ops : UINT64_MAX;
  while (ok && !atomic_load(&G.stop) && th->op < limit) {
    ok = one_op(th) == 0;
    th->op++;
    atomic_fetch_add_explicit(&th->progress, 1, memory_order_relaxed);
  }
  if (ok && atomic_load(&G.failures) == 0)
    final_check(th, &r);
  release_all(th, &r);
  return NULL;
}
