/* tools/conform_transfer.c -- conformance checks of the copies: random data
 * at odd sizes and offsets (0 and 1 byte to a few MiB) comes back bit-exact,
 * nothing outside the range is touched, every range is bounds-checked with
 * overflowing offset + length, length 0 enqueues nothing, and copies between
 * runtimes and devices keep their order. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tools/conform.h"

#define MIB (1024ull * 1024)

/* Reads all of b back and compares it with the model of its content. */
static bool matches(t4a__cf *c, t4a_runtime rt, t4a_buffer b, const unsigned char *model,
                    uint64_t size, const char *what) {
  unsigned char *back = t4a__cf_mem(c, (size_t)size);
  if (!back)
    return false;
  memset(back, 0xa7, (size_t)size);
  if (!CF_OK(c->t->copy_d2h(rt, back, b, 0, size)))
    return false;
  size_t at = t4a__cf_diff(back, model, (size_t)size);
  return CF_TRUE(at == size, "%s: byte %zu of %llu differs", what, at, (unsigned long long)size);
}

static void pageable(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const uint64_t S = 4 * MIB + 17;
  const uint64_t win[][2] = {{0, 0},     {S, 0},     {0, 1},         {1, 1},
                             {S - 1, 1}, {13, 4097}, {65535, 65537}, {7, 3 * MIB + 3}};
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, S);
  unsigned char *model = t4a__cf_mem(c, (size_t)S), *src = t4a__cf_mem(c, (size_t)S),
                *dst = t4a__cf_mem(c, (size_t)S + 2);
  if (!b.bits || !model || !src || !dst)
    return;
  t4a__cf_random(model, (size_t)S, &c->seed);
  if (!CF_OK(t->copy_h2d(rt, b, 0, model, S)))
    return;
  for (size_t i = 0; i < sizeof win / sizeof win[0]; i++) {
    uint64_t off = win[i][0], n = win[i][1];
    t4a__cf_random(src, (size_t)n, &c->seed);
    memcpy(model + off, src, (size_t)n);
    if (!CF_OK(t->copy_h2d(rt, b, off, src, n)))
      return;
    memset(src, 0xee, (size_t)n); /* "Returns once `src` has been consumed (may be reused)" */
    memset(dst, 0x11, (size_t)n + 2);
    /* "Returns once `dst` holds the data": read it at once, no seal */
    if (!CF_OK(t->copy_d2h(rt, dst + 1, b, off, n)))
      return;
    if (!CF_TRUE(memcmp(dst + 1, model + off, (size_t)n) == 0,
                 "%llu bytes at offset %llu came back different", (unsigned long long)n,
                 (unsigned long long)off) ||
        !CF_TRUE(dst[0] == 0x11 && dst[n + 1] == 0x11,
                 "copy_d2h of %llu bytes wrote outside its destination", (unsigned long long)n))
      return;
  }
  matches(c, rt, b, model, S, "the whole buffer after the windows");
}

static void pinned(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const uint64_t S = 2 * MIB + 9, H = S + 16;
  const uint64_t win[][3] = {
      {0, 0, 1}, {1, 3, 4097}, {5, 11, 2 * MIB + 3}, {S - 1, 0, 1}, {0, 0, 0}};
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, S);
  void *p1, *p2;
  t4a_host_buffer h1 = t4a__cf_host(c, rt, H, &p1), h2 = t4a__cf_host(c, rt, H, &p2);
  if (!b.bits || !h1.bits || !h2.bits)
    return;
  unsigned char *in = p1, *out = p2;
  for (size_t i = 0; i < sizeof win / sizeof win[0]; i++) {
    uint64_t doff = win[i][0], hoff = win[i][1], n = win[i][2], hoff2 = hoff + 1;
    t4a__cf_random(in + hoff, (size_t)n, &c->seed);
    memset(out, 0x77, (size_t)H);
    /* "the host buffer must not be touched by the host until a witness
     * covering the copy is ready" */
    if (!CF_OK(t->copy_h2d_pinned(rt, b, doff, h1, hoff, n)) ||
        !CF_OK(t->copy_d2h_pinned(rt, h2, hoff2, b, doff, n)) || !t4a__cf_sync(c, rt))
      return;
    if (!CF_TRUE(memcmp(out + hoff2, in + hoff, (size_t)n) == 0,
                 "%llu bytes (device offset %llu, host offsets %llu/%llu) came back different",
                 (unsigned long long)n, (unsigned long long)doff, (unsigned long long)hoff,
                 (unsigned long long)hoff2) ||
        !CF_TRUE(out[hoff2 - 1] == 0x77 && out[hoff2 + n] == 0x77,
                 "copy_d2h_pinned of %llu bytes wrote outside its range", (unsigned long long)n))
      return;
  }
}

static void d2d(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const uint64_t S = MIB + 7;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer a = t4a__cf_buffer(c, rt, S), b = t4a__cf_buffer(c, rt, S);
  unsigned char *ma = t4a__cf_mem(c, (size_t)S), *mb = t4a__cf_mem(c, (size_t)S);
  if (!a.bits || !b.bits || !ma || !mb)
    return;
  t4a__cf_random(ma, (size_t)S, &c->seed);
  t4a__cf_random(mb, (size_t)S, &c->seed);
  if (!CF_OK(t->copy_h2d(rt, a, 0, ma, S)) || !CF_OK(t->copy_h2d(rt, b, 0, mb, S)))
    return;
  CF_OK(t->copy_d2d(rt, b, 3, a, 5, 1000)); /* between buffers */
  memcpy(mb + 3, ma + 5, 1000);
  CF_OK(t->copy_d2d(rt, a, 600001, a, 1, 100000)); /* within one, apart */
  memmove(ma + 600001, ma + 1, 100000);
  CF_OK(t->copy_d2d(rt, a, 200, a, 100, 100)); /* adjacent: no overlap */
  memmove(ma + 200, ma + 100, 100);
  CF_OK(t->copy_d2d(rt, b, S - 1, b, 0, 1));
  mb[S - 1] = mb[0];
  /* "regions may be in the same buffer but must not overlap: T4A_EINVAL" */
  CF_EXPECT(t->copy_d2d(rt, a, 10, a, 0, 100), T4A_EINVAL);
  CF_EXPECT(t->copy_d2d(rt, a, 0, a, 99, 100), T4A_EINVAL);
  CF_EXPECT(t->copy_d2d(rt, a, 7, a, 7, 1), T4A_EINVAL);
  if (matches(c, rt, a, ma, S, "buffer a"))
    matches(c, rt, b, mb, S, "buffer b");
}

static void zero_length(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, 64);
  void *p;
  t4a_host_buffer h = t4a__cf_host(c, rt, 64, &p);
  unsigned char host[64];
  memset(host, 1, sizeof host);
  if (!b.bits || !h.bits || !CF_OK(t->copy_h2d(rt, b, 0, host, 64)) || !t4a__cf_sync(c, rt))
    return;
  t4a_runtime_counters k0 = {.struct_size = sizeof k0}, k1 = {.struct_size = sizeof k1};
  CF_OK(t->runtime_counters(rt, &k0));
  /* "Length 0 is a valid no-op that enqueues nothing", at any offset in range */
  CF_OK(t->copy_h2d(rt, b, 0, host, 0));
  CF_OK(t->copy_h2d(rt, b, 64, host, 0));
  CF_OK(t->copy_d2h(rt, host, b, 64, 0));
  CF_OK(t->copy_h2d_pinned(rt, b, 64, h, 64, 0));
  CF_OK(t->copy_d2h_pinned(rt, h, 0, b, 32, 0));
  CF_OK(t->copy_d2d(rt, b, 0, b, 0, 0));
  t4a_witness w = t4a__cf_seal(c, rt);
  if (!w.bits || !CF_OK(t->runtime_counters(rt, &k1)))
    return;
  CF_TRUE(k1.seal_events_recorded == k0.seal_events_recorded,
          "a seal after zero-length copies only recorded an event: they enqueued something");
  CF_TRUE(k1.bytes_h2d == k0.bytes_h2d && k1.bytes_d2h == k0.bytes_d2h &&
              k1.bytes_d2d == k0.bytes_d2d,
          "zero-length copies moved bytes");
  CF_EXPECT(t->witness_query(w), T4A_OK);
}

/* Every call must be T4A_ERANGE: the end lies past the buffer, or offset +
 * length overflows (and wraps into range if added without a check). */
static void range_errors(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const uint64_t S = 4096;
  const uint64_t bad[][2] = {{S, 1},          {S - 1, 2},      {0, S + 1},
                             {UINT64_MAX, 2}, {2, UINT64_MAX}, {UINT64_MAX, 1}};
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, S), b2 = t4a__cf_buffer(c, rt, S);
  void *p;
  t4a_host_buffer h = t4a__cf_host(c, rt, S, &p);
  unsigned char *model = t4a__cf_mem(c, S), *host = t4a__cf_mem(c, S);
  if (!b.bits || !b2.bits || !h.bits || !model || !host)
    return;
  t4a__cf_random(model, S, &c->seed);
  memcpy(host, model, S);
  if (!CF_OK(t->copy_h2d(rt, b, 0, model, S)))
    return;
  char what[160];
#define RANGE(call)                                                                                \
  (snprintf(what, sizeof what, "%s with offset %llu, length %llu", #call, (unsigned long long)off, \
            (unsigned long long)n),                                                                \
   t4a__cf_expect(c, (call), T4A_ERANGE, T4A_ERANGE, what))
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t off = bad[i][0], n = bad[i][1];
    RANGE(t->copy_h2d(rt, b, off, host, n));
    RANGE(t->copy_d2h(rt, host, b, off, n));
    RANGE(t->copy_h2d_pinned(rt, b, off, h, 0, n)); /* device side */
    RANGE(t->copy_h2d_pinned(rt, b, 0, h, off, n)); /* host side */
    RANGE(t->copy_d2h_pinned(rt, h, off, b, 0, n));
    RANGE(t->copy_d2h_pinned(rt, h, 0, b, off, n));
    RANGE(t->copy_d2d(rt, b2, off, b, 0, n));
    RANGE(t->copy_d2d(rt, b2, 0, b, off, n));
  }
#undef RANGE
  /* "A failed call leaves the backend and the runtime usable": nothing moved */
  CF_TRUE(memcmp(host, model, S) == 0, "a refused copy_d2h wrote to its destination");
  matches(c, rt, b, model, S, "the buffer after refused copies");
  t4a__cf_round_trip(c, rt, b2, 1, S - 1);
}

static void null_pointers(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer b = t4a__cf_buffer(c, rt, 64);
  if (!b.bits)
    return;
  CF_EXPECT(t->copy_h2d(rt, b, 0, NULL, 16), T4A_EINVAL);
  CF_EXPECT(t->copy_d2h(rt, NULL, b, 0, 16), T4A_EINVAL);
  t4a__cf_round_trip(c, rt, b, 0, 64);
}

typedef struct cross_call {
  const t4a_gpu_backend_v1 *t;
  t4a_runtime dst_rt, src_rt;
  t4a_buffer dst, src;
  uint64_t bytes;
  int rc;
} cross_call;

static void do_cross(void *p) {
  cross_call *x = p;
  x->rc = x->t->copy_from_runtime(x->dst_rt, x->dst, 0, x->src_rt, x->src, 0, x->bytes);
}

/* With code: the source's work held back by a gate; the copy is enqueued
 * without blocking the host, and the destination's work waits for it. */
static void cross_gated(t4a__cf *c, t4a_runtime a, t4a_buffer xa, t4a_runtime b, t4a_buffer xb) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a__cf_kernels k;
  void *p;
  /* made before the gate closes, and pinned: a staged pageable copy may
   * wait for the gated stream, which the header allows */
  t4a_host_buffer h = t4a__cf_host(c, a, 4096, &p);
  if (!h.bits || !t4a__cf_kernels_load(c, a, &k))
    return;
  unsigned char back[4096];
  t4a__cf_random(p, 4096, &c->seed);
  t4a__cf_gate *g = t4a__cf_gate_close(c, a, &k);
  if (!g || !CF_OK(t->copy_h2d_pinned(a, xa, 0, h, 0, 4096)))
    return;
  cross_call x = {t, b, a, xb, xa, 4096, T4A_EINTERNAL};
  if (!t4a__cf_within(c, 5, do_cross, &x, "copy_from_runtime (\"GPU-side wait, no host block\")"))
    return;
  t4a_witness w = t4a__cf_seal(c, b);
  if (!CF_STATUS(x.rc, T4A_OK) || !w.bits)
    return;
  CF_EXPECT(t->witness_query(w), T4A_ENOTREADY); /* behind the source's gated work */
  if (!t4a__cf_gate_open(c, g) || !t4a__cf_wait(c, w) ||
      !CF_OK(t->copy_d2h(b, back, xb, 0, sizeof back)))
    return;
  CF_TRUE(memcmp(back, p, sizeof back) == 0,
          "copy_from_runtime ran before the source's earlier work");
}

static void cross_runtime(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  const uint64_t S = MIB + 13;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer xa = t4a__cf_buffer(c, a, S), xb = t4a__cf_buffer(c, b, S);
  unsigned char *data = t4a__cf_mem(c, (size_t)S), *back = t4a__cf_mem(c, (size_t)S);
  if (!xa.bits || !xb.bits || !data || !back)
    return;
  t4a__cf_random(data, (size_t)S, &c->seed);
  /* "Runs on dst_rt's stream after all work src_rt enqueued before this call" */
  if (!CF_OK(t->copy_h2d(a, xa, 0, data, S)) ||
      !CF_OK(t->copy_from_runtime(b, xb, 7, a, xa, 3, S - 10)) ||
      !CF_OK(t->copy_d2h(b, back, xb, 7, S - 10)))
    return;
  if (!CF_TRUE(memcmp(back, data + 3, (size_t)(S - 10)) == 0,
               "copy_from_runtime: the data came back different"))
    return;
  CF_EXPECT(t->copy_from_runtime(b, xa, 0, a, xa, 0, 16), T4A_EHANDLE); /* dst is a's */
  CF_EXPECT(t->copy_from_runtime(b, xb, 0, a, xb, 0, 16), T4A_EHANDLE); /* src is b's */
  CF_EXPECT(t->copy_from_runtime(b, xb, S, a, xa, 0, 1), T4A_ERANGE);
  CF_EXPECT(t->copy_from_runtime(b, xb, 0, a, xa, UINT64_MAX, 2), T4A_ERANGE);
  CF_EXPECT(t->copy_from_runtime(b, xb, 1, a, xa, 0, S), T4A_ERANGE);
  if (c->device_count >= 2) { /* "both on the same device (else T4A_EFOREIGNDEVICE)" */
    t4a_runtime o = t4a__cf_runtime(c, (c->device + 1) % c->device_count, NULL);
    t4a_buffer xo = t4a__cf_buffer(c, o, 64);
    if (xo.bits)
      CF_EXPECT(t->copy_from_runtime(o, xo, 0, a, xa, 0, 64), T4A_EFOREIGNDEVICE);
  }
  if (c->code.bits && t->seal && t->witness_query && t->witness_wait && t->host_alloc &&
      t->host_free && t->copy_h2d_pinned)
    cross_gated(c, a, xa, b, xb);
}

/* Runtimes on this device and on another one (skips with one device). */
static bool two_devices(t4a__cf *c, t4a_runtime *a, t4a_runtime *o) {
  if (c->device_count < 2) {
    t4a__cf_skip(c, "one device: copies between devices need two");
    return false;
  }
  *a = t4a__cf_runtime(c, c->device, NULL);
  *o = t4a__cf_runtime(c, (c->device + 1) % c->device_count, NULL);
  return a->bits && o->bits;
}

static bool between(t4a__cf *c, bool peer, t4a_runtime dst_rt, t4a_runtime src_rt, uint64_t size) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_buffer s = t4a__cf_buffer(c, src_rt, size + 8), d = t4a__cf_buffer(c, dst_rt, size + 8);
  unsigned char *data = t4a__cf_mem(c, (size_t)size), *back = t4a__cf_mem(c, (size_t)size);
  if (!s.bits || !d.bits || !data || !back)
    return false;
  t4a__cf_random(data, (size_t)size, &c->seed);
  if (!CF_OK(t->copy_h2d(src_rt, s, 5, data, size)))
    return false;
  int rc = peer ? t->copy_from_peer(dst_rt, d, 3, src_rt, s, 5, size)
                : t->copy_from_peer_via_host(dst_rt, d, 3, src_rt, s, 5, size);
  if (!t4a__cf_ok(c, rc, peer ? "copy_from_peer" : "copy_from_peer_via_host") ||
      !CF_OK(t->copy_d2h(dst_rt, back, d, 3, size)))
    return false;
  return CF_TRUE(memcmp(back, data, (size_t)size) == 0, "%s: %llu bytes came back different",
                 peer ? "copy_from_peer" : "copy_from_peer_via_host", (unsigned long long)size);
}

static void peer(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime a, o;
  if (!two_devices(c, &a, &o))
    return;
  int32_t other = (c->device + 1) % c->device_count;
  bool ab = false, ba = false;
  int r1 = t->peer_access_supported(c->device, other, &ab);
  int r2 = t->peer_access_supported(other, c->device, &ba);
  ab &= r1 == T4A_OK;
  ba &= r2 == T4A_OK;
  if (ab && ba) {
    if (between(c, true, o, a, 3 * MIB + 5))
      between(c, true, a, o, 4097);
    return;
  }
  t4a_buffer s = t4a__cf_buffer(c, a, 64), d = t4a__cf_buffer(c, o, 64);
  if (!s.bits || !d.bits)
    return;
  int rc = t->copy_from_peer(o, d, 0, a, s, 0, 64);
  if (!ab && !ba) /* "T4A_EUNSUPPORTED with the reason ...; there is no silent fallback" */
    CF_EXPECT(rc, T4A_EUNSUPPORTED);
  else
    CF_EXPECT2(rc, T4A_OK, T4A_EUNSUPPORTED);
}

static void peer_via_host(t4a__cf *c) {
  t4a_runtime a, o;
  if (two_devices(c, &a, &o) && between(c, false, o, a, 3 * MIB + 5))
    between(c, false, a, o, 1);
}

#define DEV T4A__CF_DEVICE
#define MEM "runtime_create runtime_destroy buffer_alloc buffer_free copy_h2d copy_d2h "
#define SYNC "seal witness_wait witness_release "

const t4a__cf_check t4a__cf_transfer_checks[] = {
    {"transfer.pageable_round_trip",
     "copy_h2d: returns once `src` has been consumed (may be reused); copy_d2h: returns once "
     "`dst` holds the data; all in call order",
     MEM, DEV, pageable},
    {"transfer.pinned_round_trip",
     "copy_h2d_pinned / copy_d2h_pinned: asynchronous; the host buffer must not be touched until "
     "a witness covering the copy is ready",
     MEM "host_alloc host_free copy_h2d_pinned copy_d2h_pinned " SYNC, DEV, pinned},
    {"transfer.d2d",
     "copy_d2d: within one runtime (regions may be in the same buffer but must not overlap: "
     "T4A_EINVAL)",
     MEM "copy_d2d", DEV, d2d},
    {"transfer.zero_length", "Length 0 is a valid no-op that enqueues nothing",
     MEM "host_alloc host_free copy_h2d_pinned copy_d2h_pinned copy_d2d runtime_counters "
         "witness_query " SYNC,
     DEV, zero_length},
    {"transfer.range_errors",
     "Every offset+length is bounds-checked (T4A_ERANGE); a failed call leaves the runtime "
     "usable",
     MEM "host_alloc host_free copy_h2d_pinned copy_d2h_pinned copy_d2d", DEV, range_errors},
    {"transfer.null_pointers", "Bad input (a NULL host pointer) is T4A_EINVAL", MEM, DEV,
     null_pointers},
    {"transfer.cross_runtime",
     "copy_from_runtime: runs on dst_rt's stream after all work src_rt enqueued before this call "
     "(GPU-side wait, no host block); same device, else T4A_EFOREIGNDEVICE",
     MEM "copy_from_runtime", DEV, cross_runtime},
    {"transfer.peer",
     "copy_from_peer: between devices through direct peer access; T4A_EUNSUPPORTED when peer "
     "access is impossible; no silent fallback",
     MEM "copy_from_peer peer_access_supported", DEV, peer},
    {"transfer.peer_via_host",
     "copy_from_peer_via_host: the explicit, slower route between devices through host memory",
     MEM "copy_from_peer_via_host", DEV, peer_via_host},
};
const size_t t4a__cf_transfer_count =
    sizeof t4a__cf_transfer_checks / sizeof t4a__cf_transfer_checks[0];
