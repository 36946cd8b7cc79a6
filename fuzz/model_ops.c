/* fuzz/model_ops.c -- the model fuzzer's operations (see fuzz/model.h):
 * one per slot of the v1.1 table, plus a host read-back. Each draws its
 * arguments from the input (mostly valid: seeded handles, in-bounds
 * ranges), predicts the statuses the header allows for them, makes the
 * call through CALL (counted, traced, asserted) and, on success, updates
 * the model: enqueued work through fz_enqueue, data read back through the
 * shadow checks. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz/model.h"

#define CALL(what, expr, allowed) (fz_calls++, fz_expect((what), (expr), (allowed)))
#define RT(a) ((t4a_runtime){(a).bits})
#define BUF(a) ((t4a_buffer){(a).bits})
#define HOST(a) ((t4a_host_buffer){(a).bits})
#define ERR(cond, st)                                                                              \
  do {                                                                                             \
    if (cond)                                                                                      \
      err |= ST(st);                                                                               \
  } while (0)

static const char good_source[] =
    "extern \"C\" __global__ void t4a_empty() {}\n"
    "extern \"C\" __global__ void t4a_fill_u32(unsigned *p, unsigned v, unsigned long long n) {\n"
    "  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += (unsigned long long)gridDim.x * blockDim.x)\n"
    "    p[i] = v;\n"
    "}\n"
    "extern \"C\" __global__ void t4a_index3d(unsigned *out) {\n"
    "  unsigned long long b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;\n"
    "  unsigned long long t = b * blockDim.x * blockDim.y * blockDim.z +\n"
    "                         (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + "
    "threadIdx.x;\n"
    "  out[3 * t] = blockIdx.x | blockIdx.y << 16;\n"
    "  out[3 * t + 1] = blockIdx.z | threadIdx.x << 16;\n"
    "  out[3 * t + 2] = threadIdx.y | threadIdx.z << 16;\n"
    "}\n";
static const char bad_source[] = "#error the fuzzer asked for a compile error\n";
static const char *const kernel_names[FZ_KERNELS] = {"t4a_empty", "t4a_fill_u32", "t4a_index3d"};

static uint8_t scratch[2 * FZ_HMAX + 64];                                /* pageable host memory */
static uint8_t regions[FZ_REGS][FZ_HMAX] __attribute__((aligned(4096))); /* host_register's */
static bool region_was_pinned[FZ_REGS]; /* since the process started */
static uint64_t max_pitch;
static int32_t optin_shared;

/* ---- argument helpers ------------------------------------------------------- */

/* The runtime argument for an object: mostly its owner, else any pick. */
static fz_arg rt_for(fz_arg o, int owner) {
  if (o.slot >= 0 && owner >= 0 && !fz_chance(20))
    return (fz_arg){W.rt[owner].bits, owner, W.rt[owner].live};
  return fz_pick_rt();
}

static bool owns(fz_arg rt, fz_arg o, int owner) { return rt.ok && o.ok && owner == rt.slot; }

static bool in_range(uint64_t off, uint64_t n, uint64_t size) {
  return off <= size && n <= size - off;
}

/* An offset or length for a region of `size` bytes: mostly inside it. */
static uint64_t amount(uint64_t size) {
  uint8_t k = fz_u8();
  if (k < 200)
    return fz_below(size + 1);
  if (k < 215)
    return size;
  if (k < 230)
    return size + 1 + fz_below(64);
  if (k < 245)
    return UINT64_MAX - fz_below(64);
  return fz_u64();
}

/* A length and offsets for sides of asize and bsize bytes: mostly a range
 * inside both, else each drawn on its own (edges, overflow). */
static void ranges(uint64_t asize, uint64_t bsize, uint64_t *aoff, uint64_t *boff, uint64_t *n) {
  if (fz_chance(208)) {
    uint64_t most = asize < bsize ? asize : bsize;
    *n = fz_below(most + 1);
    *aoff = fz_below(asize - *n + 1);
    *boff = fz_below(bsize - *n + 1);
    return;
  }
  *aoff = amount(asize);
  *boff = amount(bsize);
  *n = amount(asize < bsize ? asize : bsize);
}

static bool capturing(fz_arg rt) { return rt.ok && W.capturing[rt.slot]; }

/* Whether a capturable call on rt has room in the model's capture. */
static bool room(fz_arg rt) { return !capturing(rt) || W.cap[rt.slot].neff < FZ_EFFECTS; }

static fz_arg pick_buf(void) { return FZ_PICK(K_BUF, W.buf); }
static fz_arg pick_host(void) { return FZ_PICK(K_HOST, W.host); }
static int buf_owner(fz_arg b) { return b.slot >= 0 ? W.buf[b.slot].o.rt : -1; }
static int host_owner(fz_arg h) { return h.slot >= 0 ? W.host[h.slot].o.rt : -1; }
static uint64_t buf_size(fz_arg b) { return b.slot >= 0 ? W.buf[b.slot].size : FZ_BMAX; }
static uint64_t host_size(fz_arg h) { return h.slot >= 0 ? W.host[h.slot].size : FZ_HMAX; }

/* A live buffer of runtime r (-1 when none), chosen by the input. */
static int live_buf_of(int r) {
  int have[FZ_BUFS] = {0}, n = 0;
  for (int i = 0; i < FZ_BUFS; i++)
    if (W.buf[i].o.live && W.buf[i].o.rt == r)
      have[n++] = i;
  return n ? have[fz_below((uint64_t)n)] : -1;
}

/* A second buffer (host buffer) for a call on runtime r: mostly one of r's,
 * else any pick. */
static fz_arg buf_of(int r) {
  if (r >= 0 && fz_chance(216)) {
    int b = live_buf_of(r);
    if (b >= 0)
      return (fz_arg){W.buf[b].o.bits, b, true};
  }
  return pick_buf();
}

static fz_arg host_of(int r) {
  if (r >= 0 && fz_chance(216)) {
    int have[FZ_HOSTS] = {0}, n = 0;
    for (int i = 0; i < FZ_HOSTS; i++)
      if (W.host[i].o.live && W.host[i].o.rt == r)
        have[n++] = i;
    if (n) {
      int h = have[fz_below((uint64_t)n)];
      return (fz_arg){W.host[h].o.bits, h, true};
    }
  }
  return pick_host();
}

static fz_arg pick_wit(void) {
  fz_arg a = {0, -1, false};
  uint8_t k = fz_u8();
  if (k < 216 && W.nwit) {
    unsigned i = k % W.nwit;
    return (fz_arg){W.wit[i], (int)i, true};
  }
  if (k < 236 && W.nstale[K_WIT])
    a.bits = W.stale[K_WIT][k % (W.nstale[K_WIT] < FZ_STALE ? W.nstale[K_WIT] : FZ_STALE)];
  else if (k < 248)
    a.bits = fz_u64() | 1u << 31; /* far from any live generation the input could reach */
  fz_null_arg |= a.bits == 0;
  return a;
}

/* Removes reference i from the model's list. */
static void drop_witness(unsigned i) {
  W.nwit--;
  memmove(&W.wit[i], &W.wit[i + 1], (W.nwit - i) * sizeof W.wit[0]);
  memmove(&W.wit_rt[i], &W.wit_rt[i + 1], (W.nwit - i) * sizeof W.wit_rt[0]);
  memmove(&W.wit_timing[i], &W.wit_timing[i + 1], (W.nwit - i) * sizeof W.wit_timing[0]);
}

static void keep_witness(uint64_t bits, uint64_t rt_bits, bool timing) {
  if (W.nwit == FZ_WITS) { /* full: drop the oldest reference */
    uint64_t old = W.wit[0];
    CALL("witness_release", T->witness_release((t4a_witness){old}), ST_OK);
    drop_witness(0);
    bool still = false;
    for (unsigned i = 0; i < W.nwit; i++)
      still |= W.wit[i] == old;
    if (!still)
      fz_stale(K_WIT, old);
  }
  W.wit[W.nwit] = bits;
  W.wit_rt[W.nwit] = rt_bits;
  W.wit_timing[W.nwit++] = timing;
}

void fz_sync(int r) {
  t4a_witness w;
  CALL("seal (sync)", T->seal((t4a_runtime){W.rt[r].bits}, &w), ST_OK);
  CALL("witness_wait (sync)", T->witness_wait(w, T4A_WAIT_FOREVER), ST_OK);
  CALL("witness_release (sync)", T->witness_release(w), ST_OK);
}

void fz_order_after(int src_rt, int dst_rt) {
  t4a_witness w;
  CALL("seal (order)", T->seal((t4a_runtime){W.rt[dst_rt].bits}, &w), ST_OK);
  CALL("runtime_wait_witness (order)", T->runtime_wait_witness((t4a_runtime){W.rt[src_rt].bits}, w),
       ST_OK);
  CALL("witness_release (order)", T->witness_release(w), ST_OK);
}

/* ---- backend ------------------------------------------------------------------ */

static void op_last_error(void) {
  fz_trace("last_error");
  uint8_t k = fz_u8() % 4;
  t4a_error_info e = {.struct_size = k == 1 ? 4u : (uint32_t)sizeof e};
  fz_calls++; /* not through fz_expect: last_error's own refusal is no last error */
  int rc = T->last_error(k == 0 ? NULL : &e);
  if (rc != (k < 2 ? T4A_EINVAL : T4A_OK))
    fz_finding("last_error with %s returned %s",
               k == 0   ? "NULL"
               : k == 1 ? "struct_size 4"
                        : "an info",
               t4a_status_name(rc));
  if (rc == T4A_OK && (!e.message || !e.native_name))
    fz_finding("last_error left a string NULL");
}

static void op_backend_queries(void) {
  fz_trace("backend queries");
  switch (fz_u8() % 6) {
  case 0: CALL("init", T->init(), ST_OK); break;
  case 1: {
    t4a_backend_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
    if (CALL("get_info", T->get_info(&i), i.struct_size == 4 ? ST(T4A_EINVAL) : ST_OK) == 0 &&
        (i.device_count != 2 || i.abi_major != 1 || strcmp(i.name, "cuda") != 0))
      fz_finding("get_info: %d devices, ABI %u, name '%s'", i.device_count, i.abi_major, i.name);
    break;
  }
  case 2: {
    int32_t n = -1;
    bool null = fz_chance(16);
    if (CALL("device_count", T->device_count(null ? NULL : &n), null ? ST(T4A_EINVAL) : ST_OK) ==
            0 &&
        n != 2)
      fz_finding("device_count says %d, the fake has 2", n);
    break;
  }
  case 3: {
    int32_t d = (int32_t)fz_below(5) - 1;
    t4a_device_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
    uint32_t want = (d < 0 || d > 1)     ? ST(T4A_EINVAL) | ST(T4A_ERANGE)
                    : i.struct_size == 4 ? ST(T4A_EINVAL)
                                         : ST_OK;
    if (CALL("device_info", T->device_info(d, &i), want) == 0 && i.ordinal != d)
      fz_finding("device_info(%d) says ordinal %d", d, i.ordinal);
    break;
  }
  case 4: {
    t4a_compiler_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
    CALL("compiler_info", T->compiler_info(&i), i.struct_size == 4 ? ST(T4A_EINVAL) : ST_OK);
    break;
  }
  default: {
    int32_t s = (int32_t)fz_below(4) - 1, d = (int32_t)fz_below(4) - 1;
    bool ok = false, null = fz_chance(8);
    uint32_t want = (s < 0 || s > 1 || d < 0 || d > 1) ? ST(T4A_EINVAL) | ST(T4A_ERANGE)
                    : null                             ? ST(T4A_EINVAL)
                                                       : ST_OK;
    CALL("peer_access_supported", T->peer_access_supported(s, d, null ? NULL : &ok), want);
    break;
  }
  }
}

/* ---- runtimes ---------------------------------------------------------------- */

static void op_runtime_create(void) {
  fz_trace("runtime_create");
  int slot = fz_free_slot(W.rt, FZ_RTS, sizeof(fz_obj));
  if (slot < 0)
    return;
  int32_t dev = (int32_t)fz_below(3) - (fz_chance(16) ? 1 : 0);
  t4a_runtime_options o = {.struct_size = sizeof o, .staging_bytes = 65536, .copy_threads = 1};
  uint32_t err = 0;
  if (dev < 0 || dev > 1)
    err |= ST(T4A_EINVAL) | ST(T4A_ERANGE);
  switch (fz_u8() % 10) {
  case 0:
    o.struct_size = 4;
    err |= ST(T4A_EINVAL);
    break;
  case 1:
    o.flags = 0x80;
    err |= ST(T4A_EINVAL);
    break;
  case 2:
    o.reserved = 1;
    err |= ST(T4A_EINVAL);
    break;
  case 3:
    o.staging_bytes = 1 + fz_below(65535);
    err |= ST(T4A_EINVAL);
    break;
  case 4:
    o.stream_priority = -100;
    err |= ST(T4A_ERANGE);
    break;
  case 5: o.flags = T4A_RUNTIME_TIMING; break;
  case 6: o.struct_size = T4A_RUNTIME_OPTIONS_V1_0_SIZE; break; /* an ABI 1.0 caller */
  case 7:
    o.reserved_v1_1 = 1;
    err |= ST(T4A_EINVAL);
    break;
  default: break;
  }
  t4a_runtime rt;
  bool null_opts = fz_chance(16) && !err;
  if (null_opts)
    o.flags = 0;
  if (CALL("runtime_create", T->runtime_create(dev, null_opts ? NULL : &o, &rt),
           err ? err : ST_OK) != T4A_OK)
    return;
  W.rt[slot] = (fz_obj){rt.bits, slot, true};
  W.dev[slot] = dev;
  W.timing[slot] = (o.flags & T4A_RUNTIME_TIMING) != 0;
  W.capturing[slot] = false;
  t4a_runtime_info ri = {.struct_size = sizeof ri};
  CALL("runtime_info", T->runtime_info(rt, &ri), ST_OK);
  W.prio_least[slot] = ri.priority_least;
  W.prio_greatest[slot] = ri.priority_greatest;
}

static void op_runtime_destroy(void) {
  fz_trace("runtime_destroy");
  fz_arg r = fz_pick_rt();
  if (r.ok && r.slot < 3 && !fz_chance(24))
    return; /* the seeded runtimes go rarely: their objects carry most of the program */
  if (CALL("runtime_destroy", T->runtime_destroy(RT(r), T4A_WAIT_FOREVER),
           r.ok ? ST_OK : ST(T4A_EHANDLE)) == T4A_OK)
    fz_forget_runtime(r.slot);
}

static void op_runtime_queries(void) {
  fz_trace("runtime queries");
  fz_arg r = fz_pick_rt();
  uint32_t bad = r.ok ? 0 : ST(T4A_EHANDLE);
  switch (fz_u8() % 5) {
  case 0: {
    uint8_t k = fz_u8() % 3;
    t4a_runtime_counters c = {.struct_size = k == 0   ? 8u
                                             : k == 1 ? (uint32_t)T4A_RUNTIME_COUNTERS_V1_0_SIZE
                                                      : (uint32_t)sizeof c};
    CALL("runtime_counters", T->runtime_counters(RT(r), &c),
         bad | (k == 0 ? ST(T4A_EINVAL) : 0) | (bad || k == 0 ? 0 : ST_OK));
    break;
  }
  case 1: {
    t4a_memory_info m = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof m};
    uint32_t want = bad | (m.struct_size == 4 ? ST(T4A_EINVAL) : 0);
    if (CALL("runtime_memory_info", T->runtime_memory_info(RT(r), &m), want ? want : ST_OK) == 0 &&
        (m.pool_used > m.pool_reserved || m.cache_bytes > m.pool_used || m.staging_bytes < 65536))
      fz_finding("runtime_memory_info: used %llu of %llu reserved, cache %llu, staging %llu",
                 (unsigned long long)m.pool_used, (unsigned long long)m.pool_reserved,
                 (unsigned long long)m.cache_bytes, (unsigned long long)m.staging_bytes);
    break;
  }
  case 2: {
    t4a_runtime_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
    uint32_t want = bad | (i.struct_size == 4 ? ST(T4A_EINVAL) : 0);
    if (CALL("runtime_info", T->runtime_info(RT(r), &i), want ? want : ST_OK) == 0 &&
        (i.device_ordinal != W.dev[r.slot] || i.capturing != (uint32_t)W.capturing[r.slot] ||
         ((i.flags & T4A_RUNTIME_TIMING) != 0) != W.timing[r.slot]))
      fz_finding("runtime_info of runtime %d: device %d, capturing %u, flags 0x%x", r.slot,
                 i.device_ordinal, i.capturing, i.flags);
    break;
  }
  case 3: {
    t4a_cache_stats s = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof s};
    uint32_t want = bad | (s.struct_size == 4 ? ST(T4A_EINVAL) : 0);
    CALL("cache_stats", T->cache_stats(RT(r), &s), want ? want : ST_OK);
    break;
  }
  default: {
    uint32_t want = bad | (capturing(r) ? ST(T4A_EBUSY) : 0);
    CALL("cache_trim", T->cache_trim(RT(r), fz_chance(128) ? 0 : amount(1 << 20)),
         want ? want : ST_OK);
    break;
  }
  }
}

/* ---- device memory ---------------------------------------------------------------- */

static void op_buffer_alloc(void) {
  fz_trace("buffer_alloc");
  fz_arg r = fz_pick_rt();
  int slot = fz_free_slot(&W.buf[0].o, FZ_BUFS, sizeof W.buf[0]);
  if (slot < 0)
    return;
  bool huge = fz_chance(8);
  uint64_t n = huge ? (1ull << 50) + fz_below(4096) : fz_below(FZ_BMAX + 1);
  uint32_t err = 0;
  ERR(!r.ok, T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  if (huge) /* may be refused before the handle is looked at */
    err |= ST(T4A_ENOMEM) | ST(T4A_EINVAL);
  t4a_buffer b;
  if (CALL("buffer_alloc", T->buffer_alloc(RT(r), n, &b), err ? err : ST_OK) != T4A_OK)
    return;
  fz_buf *s = &W.buf[slot];
  s->o = (fz_obj){b.bits, r.slot, true};
  s->size = n;
  s->kernel_refs = 0;
  memset(s->known, 0, sizeof s->known); /* undefined content */
  CALL("buffer_device_address", T->buffer_device_address(RT(r), b, &s->addr), ST_OK);
}

static void op_buffer_free(void) {
  fz_trace("buffer_free");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  if (b.ok && W.buf[b.slot].kernel_refs)
    return; /* a graph's kernel names it: the header says keep it until graph_release */
  uint32_t err = 0;
  ERR(!owns(r, b, buf_owner(b)), T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  if (CALL("buffer_free", T->buffer_free(RT(r), BUF(b)), err ? err : ST_OK) == T4A_OK) {
    W.buf[b.slot].o.live = false;
    fz_stale(K_BUF, b.bits);
  }
}

static void op_buffer_queries(void) {
  fz_trace("buffer queries");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  uint32_t want = owns(r, b, buf_owner(b)) ? ST_OK : ST(T4A_EHANDLE);
  uint64_t v = 0;
  if (fz_chance(128)) {
    if (CALL("buffer_size", T->buffer_size(RT(r), BUF(b), &v), want) == 0 &&
        v != W.buf[b.slot].size)
      fz_finding("buffer_size says %llu, allocated %llu", (unsigned long long)v,
                 (unsigned long long)W.buf[b.slot].size);
  } else if (CALL("buffer_device_address", T->buffer_device_address(RT(r), BUF(b), &v), want) ==
                 0 &&
             v != W.buf[b.slot].addr) {
    fz_finding("buffer_device_address moved: 0x%llx, was 0x%llx", (unsigned long long)v,
               (unsigned long long)W.buf[b.slot].addr);
  }
}

static void op_memset(void) {
  fz_trace("memset");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  if (!room(r))
    return;
  static const uint32_t sizes[] = {1, 2, 4, 1, 2, 4, 0, 3, 8};
  uint32_t es = sizes[fz_below(sizeof sizes / sizeof sizes[0])];
  uint64_t size = buf_size(b);
  uint64_t off, count;
  if (es && fz_chance(208)) { /* mostly aligned and inside */
    off = fz_below(size + 1);
    off -= off % es;
    count = fz_below((size - off) / es + 1);
  } else {
    off = amount(size);
    count = amount(size);
    if (es && !fz_chance(16))
      off -= off % es;
  }
  uint32_t pattern = fz_u32(), err = 0;
  if (es && es < 4 && !fz_chance(16))
    pattern &= (1u << (8 * es)) - 1; /* mostly a value that fits */
  ERR(es != 1 && es != 2 && es != 4, T4A_EINVAL);
  ERR(es && es < 4 && pattern >> (8 * es), T4A_EINVAL);
  ERR(es && off % es, T4A_EINVAL);
  ERR(!owns(r, b, buf_owner(b)), T4A_EHANDLE);
  ERR(es && count > UINT64_MAX / es, T4A_ERANGE); /* overflow: refused before the handles */
  bool fits = es && count <= UINT64_MAX / es && in_range(off, count * es, size);
  if (owns(r, b, buf_owner(b)) && !fits && count)
    err |= ST(T4A_ERANGE);
  uint32_t want = err ? err : ST_OK;
  if (count == 0 && !(err & ST(T4A_EHANDLE))) /* nothing to fill: the offset may be checked */
    want |= ST_OK | ST(T4A_ERANGE);
  if (CALL("memset", T->memset(RT(r), BUF(b), off, pattern, es, count), want) != T4A_OK ||
      count == 0)
    return;
  fz_effect e = {.kind = E_MEMSET,
                 .dst = b.slot,
                 .dst_bits = b.bits,
                 .doff = off,
                 .n = count,
                 .value = pattern,
                 .es = es};
  fz_enqueue(r.slot, &e, false);
}

/* ---- pinned host memory ----------------------------------------------------------- */

static void op_host_alloc(void) {
  fz_trace("host_alloc");
  fz_arg r = fz_pick_rt();
  int slot = fz_free_slot(&W.host[0].o, FZ_HOSTS, sizeof W.host[0]);
  uint8_t k = fz_u8() % 8;
  uint64_t n = k == 0 ? 0 : k == 1 ? (1ull << 50) : 1 + fz_below(FZ_HMAX);
  uint32_t flags = k == 2 ? 0x40u : k == 3 ? T4A_HOST_WRITE_COMBINED : 0;
  if (slot < 0)
    return;
  uint32_t err = 0;
  ERR(!r.ok, T4A_EHANDLE);
  ERR(k == 0 || k == 2, T4A_EINVAL);
  if (k == 1)
    err |= ST(T4A_ENOMEM) | ST(T4A_EINVAL);
  t4a_host_buffer h;
  void *p = NULL;
  if (CALL("host_alloc", T->host_alloc(RT(r), n, flags, &h, &p), err ? err : ST_OK) != T4A_OK)
    return;
  fz_host *s = &W.host[slot];
  s->o = (fz_obj){h.bits, r.slot, true};
  s->size = n;
  s->region = -1;
  s->read_only = false;
  s->ptr = p;
  fz_fill_pattern(s->data, n, fz_u32());
  memcpy(s->ptr, s->data, n); /* nothing uses it yet */
  memset(s->known, 1, n);
}

static void op_host_free(void) {
  fz_trace("host_free");
  fz_arg h = pick_host();
  fz_arg r = rt_for(h, host_owner(h));
  uint32_t err = 0;
  ERR(!owns(r, h, host_owner(h)), T4A_EHANDLE);
  if (!err && W.host[h.slot].region >= 0)
    err |= ST(T4A_EINVAL); /* registered: host_unregister */
  if (CALL("host_free", T->host_free(RT(r), HOST(h)), err ? err : ST_OK) == T4A_OK) {
    W.host[h.slot].o.live = false;
    fz_stale(K_HOST, h.bits);
  }
}

static void op_host_register(void) {
  fz_trace("host_register");
  fz_arg r = fz_pick_rt();
  int region = (int)fz_below(FZ_REGS);
  int slot = fz_free_slot(&W.host[0].o, FZ_HOSTS, sizeof W.host[0]);
  uint8_t k = fz_u8() % 8;
  uint64_t n = k == 0 ? 0 : 4096;
  uint32_t flags = k == 1 ? 0x10u : k == 2 ? T4A_HOST_REGISTER_READ_ONLY : 0;
  bool null = k == 3;
  if (slot < 0)
    return;
  bool mine = false;
  for (int i = 0; i < FZ_HOSTS; i++)
    mine |= W.host[i].o.live && W.host[i].region == region && W.host[i].o.rt == r.slot;
  if (W.region_used[region] && !mine)
    return; /* pinned by another runtime (or not yet drained): the driver's business */
  uint32_t err = 0;
  ERR(!r.ok, T4A_EHANDLE);
  ERR(k == 0 || k == 1 || null, T4A_EINVAL);
  ERR(r.ok && mine, T4A_EINVAL); /* overlaps its own registration */
  if (!W.region_used[region]) {  /* nothing uses it: the host may write it */
    fz_fill_pattern(regions[region], FZ_HMAX, fz_u32());
  }
  uint32_t want = err ? err : ST_OK;
  if (region_was_pinned[region] && r.ok)
    /* host_unregister unpins once the work that used it retired, which a
     * later seal processes: until then the driver still holds the range */
    want |= ST(T4A_EINVAL);
  t4a_host_buffer h;
  if (CALL("host_register", T->host_register(RT(r), null ? NULL : regions[region], n, flags, &h),
           want) != T4A_OK)
    return;
  region_was_pinned[region] = true;
  fz_host *s = &W.host[slot];
  s->o = (fz_obj){h.bits, r.slot, true};
  s->size = n;
  s->region = region;
  s->read_only = flags == T4A_HOST_REGISTER_READ_ONLY;
  s->ptr = regions[region];
  memcpy(s->data, regions[region], n);
  memset(s->known, 1, n);
  W.region_used[region] = true;
}

static void op_host_unregister(void) {
  fz_trace("host_unregister");
  fz_arg h = pick_host();
  fz_arg r = rt_for(h, host_owner(h));
  uint32_t err = 0;
  ERR(!owns(r, h, host_owner(h)), T4A_EHANDLE);
  if (!err && W.host[h.slot].region < 0)
    err |= ST(T4A_EINVAL); /* allocated: host_free */
  if (CALL("host_unregister", T->host_unregister(RT(r), HOST(h)), err ? err : ST_OK) != T4A_OK)
    return;
  W.host[h.slot].o.live = false;
  fz_stale(K_HOST, h.bits);
  if (!capturing(r)) { /* drained, the host may write the region again */
    fz_sync(r.slot);
    W.region_used[W.host[h.slot].region] = false;
  }
}

/* Reads a host buffer back once its runtime's work completed. */
static void op_host_check(void) {
  fz_trace("host check");
  fz_arg h = pick_host();
  if (!h.ok || capturing((fz_arg){0, host_owner(h), true}))
    return;
  fz_sync(host_owner(h));
  fz_check_host(h.slot);
}

/* ---- 1D transfers -------------------------------------------------------------------- */

static void op_copy_h2d(void) {
  fz_trace("copy_h2d");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  uint64_t size = buf_size(b), off, unused, n;
  ranges(size, size, &off, &unused, &n);
  bool null = fz_chance(8);
  uint8_t *src = scratch;
  fz_fill_pattern(src, n < FZ_BMAX ? n : FZ_BMAX, fz_u32());
  uint32_t err = 0;
  ERR(null && n, T4A_EINVAL);
  ERR(!owns(r, b, buf_owner(b)), T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  if (owns(r, b, buf_owner(b)) && !in_range(off, n, size))
    err |= ST(T4A_ERANGE);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE) | ST(T4A_EINVAL);
  if (CALL("copy_h2d", T->copy_h2d(RT(r), BUF(b), off, null ? NULL : src, n), want) == T4A_OK &&
      n) {
    memcpy(W.buf[b.slot].data + off, src, n);
    memset(W.buf[b.slot].known + off, 1, n);
  }
}

static void op_copy_d2h(void) {
  fz_trace("copy_d2h");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  uint64_t size = buf_size(b), off, unused, n;
  ranges(size, size, &off, &unused, &n);
  bool null = fz_chance(8);
  uint8_t *dst = scratch;
  memset(dst, 0xa5, sizeof scratch); /* poisoned: unwritten bytes show */
  uint32_t err = 0;
  ERR(null && n, T4A_EINVAL);
  ERR(!owns(r, b, buf_owner(b)), T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  if (owns(r, b, buf_owner(b)) && !in_range(off, n, size))
    err |= ST(T4A_ERANGE);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE) | ST(T4A_EINVAL);
  int rc = CALL("copy_d2h", T->copy_d2h(RT(r), null ? NULL : dst, BUF(b), off, n), want);
  if (rc == T4A_OK && n)
    fz_check_buffer(b.slot, off, dst, n, "copy_d2h");
  uint64_t from = rc == T4A_OK && n <= FZ_BMAX ? n : 0;
  for (uint64_t i = from; i < from + 64; i++)
    if (dst[i] != 0xa5)
      fz_finding("copy_d2h of %llu bytes (status %d) wrote byte %llu", (unsigned long long)n, rc,
                 (unsigned long long)i);
}

static void op_copy_d2d(void) {
  fz_trace("copy_d2d");
  fz_arg d = pick_buf();
  fz_arg r = rt_for(d, buf_owner(d));
  fz_arg s = buf_of(r.ok ? r.slot : -1);
  if (!room(r))
    return;
  uint64_t dsz = buf_size(d), ssz = buf_size(s), doff, soff, n;
  ranges(dsz, ssz, &doff, &soff, &n);
  uint32_t err = 0;
  bool dok = owns(r, d, buf_owner(d)), sok = owns(r, s, buf_owner(s)), handles = dok && sok;
  ERR(!handles, T4A_EHANDLE); /* a valid side's range may be checked first */
  ERR((dok && !in_range(doff, n, dsz)) || (sok && !in_range(soff, n, ssz)), T4A_ERANGE);
  bool overlap = handles && !err && d.slot == s.slot && n && doff < soff + n && soff < doff + n;
  ERR(overlap, T4A_EINVAL);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE);
  if (CALL("copy_d2d", T->copy_d2d(RT(r), BUF(d), doff, BUF(s), soff, n), want) != T4A_OK || !n)
    return;
  fz_effect e = {.kind = E_D2D,
                 .dst = d.slot,
                 .src = s.slot,
                 .dst_bits = d.bits,
                 .src_bits = s.bits,
                 .doff = doff,
                 .soff = soff,
                 .n = n};
  fz_enqueue(r.slot, &e, false);
}

static void op_copy_pinned(void) {
  bool h2d = fz_chance(128);
  fz_trace(h2d ? "copy_h2d_pinned" : "copy_d2h_pinned");
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  fz_arg h = host_of(r.ok ? r.slot : -1);
  if (!room(r))
    return;
  uint64_t bsz = buf_size(b), hsz = host_size(h), boff, hoff, n;
  ranges(bsz, hsz, &boff, &hoff, &n);
  bool bok = owns(r, b, buf_owner(b)), hok = owns(r, h, host_owner(h)), handles = bok && hok;
  uint32_t err = 0;
  ERR(!handles, T4A_EHANDLE); /* a valid side's range may be checked first */
  ERR((bok && !in_range(boff, n, bsz)) || (hok && !in_range(hoff, n, hsz)), T4A_ERANGE);
  if (hok && !h2d && W.host[h.slot].read_only)
    err |= ST(T4A_EINVAL);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE);
  int rc =
      h2d ? CALL("copy_h2d_pinned", T->copy_h2d_pinned(RT(r), BUF(b), boff, HOST(h), hoff, n), want)
          : CALL("copy_d2h_pinned", T->copy_d2h_pinned(RT(r), HOST(h), hoff, BUF(b), boff, n),
                 want);
  if (rc != T4A_OK || !n)
    return;
  fz_effect e = {.kind = h2d ? E_H2DP : E_D2HP,
                 .dst = h2d ? b.slot : h.slot,
                 .src = h2d ? h.slot : b.slot,
                 .dst_bits = h2d ? b.bits : h.bits,
                 .src_bits = h2d ? h.bits : b.bits,
                 .doff = h2d ? boff : hoff,
                 .soff = h2d ? hoff : boff,
                 .n = n};
  fz_enqueue(r.slot, &e, false);
}

/* copy_from_runtime, copy_from_peer, copy_from_peer_via_host. */
static void op_copy_cross(void) {
  uint8_t kind = fz_u8() % 3;
  static const char *const names[] = {"copy_from_runtime", "copy_from_peer",
                                      "copy_from_peer_via_host"};
  fz_trace(names[kind]);
  fz_arg d = pick_buf(), s = pick_buf();
  fz_arg dr = rt_for(d, buf_owner(d)), sr = rt_for(s, buf_owner(s));
  uint64_t dsz = buf_size(d), ssz = buf_size(s), doff, soff, n;
  ranges(dsz, ssz, &doff, &soff, &n);
  bool dok = owns(dr, d, buf_owner(d)), sok = owns(sr, s, buf_owner(s)), handles = dok && sok;
  uint32_t err = 0;
  ERR(!handles, T4A_EHANDLE); /* a valid side's range may be checked first */
  ERR(capturing(dr) || capturing(sr), T4A_EBUSY);
  bool same_dev = handles && W.dev[dr.slot] == W.dev[sr.slot];
  ERR((dok && !in_range(doff, n, dsz)) || (sok && !in_range(soff, n, ssz)), T4A_ERANGE);
  if (handles && kind == 0 && !same_dev)
    err |= ST(T4A_EFOREIGNDEVICE);
  if (handles && kind == 1 && same_dev)
    err |= ST(T4A_EINVAL) | ST(T4A_EFOREIGNDEVICE);
  /* via_host between two runtimes of one device: the header does not refuse it */
  if (dr.bits == sr.bits) /* one runtime: copy_d2d's job (refused before the buffers) */
    err = (err & ST(T4A_EBUSY)) | ST(T4A_EINVAL);
  uint32_t want = err ? err : ST_OK;
  if (n == 0)
    want |= ST_OK | ST(T4A_ERANGE);
  int (*copy)(t4a_runtime, t4a_buffer, uint64_t, t4a_runtime, t4a_buffer, uint64_t, uint64_t) =
      kind == 0   ? T->copy_from_runtime
      : kind == 1 ? T->copy_from_peer
                  : T->copy_from_peer_via_host;
  if (CALL(names[kind], copy(RT(dr), BUF(d), doff, RT(sr), BUF(s), soff, n), want) != T4A_OK)
    return;
  if (n) {
    bool overlap = d.slot == s.slot && doff < soff + n && soff < doff + n;
    fz_effect e = {.kind = E_D2D, .dst = d.slot, .src = s.slot, .doff = doff, .soff = soff, .n = n};
    if (overlap)
      memset(W.buf[d.slot].known + doff, 0, n);
    else
      fz_apply(&e);
  }
  if (dr.slot != sr.slot) /* src's later work must not race the copy's read */
    fz_order_after(sr.slot, dr.slot);
}

/* ---- 2D transfers ------------------------------------------------------------------------ */

/* A rectangle: mostly valid for sides of dsize and ssize bytes. */
static t4a_copy_2d rect(uint64_t dsize, uint64_t ssize, uint32_t *err) {
  t4a_copy_2d g = {.struct_size = sizeof g};
  g.width = fz_below(65);
  g.rows = fz_below(9);
  g.dst_pitch = g.width + fz_below(64);
  g.src_pitch = g.width + fz_below(64);
  g.dst_offset = fz_below(dsize + 1);
  g.src_offset = fz_below(ssize + 1);
  switch (fz_u8() % 12) {
  case 0:
    g.struct_size = 8;
    *err |= ST(T4A_EINVAL);
    break;
  case 1:
    g.reserved = 1;
    *err |= ST(T4A_EINVAL);
    break;
  case 2:
    if (g.width > 0)
      g.dst_pitch = g.width - 1;
    break;
  case 3: g.src_pitch = max_pitch + 1 + fz_below(64); break;
  case 4: g.dst_offset = UINT64_MAX - fz_below(64); break;
  case 5: g.rows = 1u << 20; break;
  default: break;
  }
  return g;
}

/* Whether every row of one side lies in size bytes (overflow-checked). */
static bool side_fits(uint64_t off, uint64_t pitch, const t4a_copy_2d *g, uint64_t size) {
  if (g->rows == 0 || g->width == 0)
    return true;
  if ((g->rows - 1) && pitch > (UINT64_MAX - off) / (g->rows - 1))
    return false;
  uint64_t last = off + (g->rows - 1) * pitch;
  return in_range(last, g->width, size);
}

static void op_copy_2d(void) {
  uint8_t kind = fz_u8() % 5;
  static const char *const names[] = {"copy_2d_h2d_pinned", "copy_2d_d2h_pinned", "copy_2d_d2d",
                                      "copy_2d_h2d", "copy_2d_d2h"};
  fz_trace(names[kind]);
  fz_arg b = pick_buf();
  fz_arg r = rt_for(b, buf_owner(b));
  fz_arg other = kind == 2 ? buf_of(r.ok ? r.slot : -1) : host_of(r.ok ? r.slot : -1);
  if (kind < 3 && !room(r))
    return;
  bool pageable = kind >= 3;
  uint64_t bsz = buf_size(b);
  uint64_t osz = pageable ? FZ_HMAX : kind == 2 ? buf_size(other) : host_size(other);
  bool to_device = kind == 0 || kind == 2 || kind == 3;
  uint32_t err = 0;
  t4a_copy_2d g = to_device ? rect(bsz, osz, &err) : rect(osz, bsz, &err);
  bool zero = g.rows == 0 || g.width == 0;
  if (pageable) { /* the host side is this program's memory: always in bounds */
    uint64_t *off = to_device ? &g.src_offset : &g.dst_offset;
    uint64_t *pitch = to_device ? &g.src_pitch : &g.dst_pitch;
    if (*pitch > FZ_HMAX / 8)
      *pitch = g.width;
    if (g.rows > 8)
      g.rows = 8;
    if (!side_fits(*off, *pitch, &g, FZ_HMAX))
      *off = 0;
  }
  /* the pitches (after the fix-up): below width with rows > 1, or above
   * the device's max_pitch (with one row the header leaves it open) */
  uint32_t maybe = 0;
  ERR(g.rows > 1 && (g.dst_pitch < g.width || g.src_pitch < g.width), T4A_EINVAL);
  if (g.dst_pitch > max_pitch || g.src_pitch > max_pitch) {
    if (g.rows > 1)
      err |= ST(T4A_EINVAL);
    else
      maybe |= ST(T4A_EINVAL);
  }
  bool bok = owns(r, b, buf_owner(b));
  bool ook = pageable || owns(r, other, kind == 2 ? buf_owner(other) : host_owner(other));
  bool owned = bok && ook;
  ERR(!owned, T4A_EHANDLE); /* a valid side's rows may be checked first */
  ERR(pageable && capturing(r), T4A_EBUSY);
  bool dfits = side_fits(g.dst_offset, g.dst_pitch, &g, to_device ? bsz : osz);
  bool sfits = side_fits(g.src_offset, g.src_pitch, &g, to_device ? osz : bsz);
  bool fits = dfits && sfits;
  ERR(((to_device ? bok : ook) && !dfits) || ((to_device ? ook : bok) && !sfits), T4A_ERANGE);
  if (ook && kind == 1 && W.host[other.slot].read_only)
    err |= ST(T4A_EINVAL);
  bool overlap = false;
  if (owned && kind == 2 && b.slot == other.slot && !zero && fits) {
    uint64_t d0 = g.dst_offset, d1 = d0 + (g.rows - 1) * g.dst_pitch + g.width;
    uint64_t s0 = g.src_offset, s1 = s0 + (g.rows - 1) * g.src_pitch + g.width;
    overlap = d0 < s1 && s0 < d1; /* the spans meet: the rows may */
  }
  uint32_t want = (err ? err : ST_OK) | maybe;
  if (zero)
    want |= ST_OK | ST(T4A_ERANGE) | ST(T4A_EINVAL);
  if (overlap)
    want |= ST(T4A_EINVAL);
  uint8_t *host = scratch;
  if (kind == 3)
    fz_fill_pattern(host, FZ_HMAX, fz_u32());
  if (kind == 4)
    memset(host, 0xa5, sizeof scratch);
  int rc;
  switch (kind) {
  case 0: rc = CALL(names[0], T->copy_2d_h2d_pinned(RT(r), BUF(b), HOST(other), &g), want); break;
  case 1: rc = CALL(names[1], T->copy_2d_d2h_pinned(RT(r), HOST(other), BUF(b), &g), want); break;
  case 2: rc = CALL(names[2], T->copy_2d_d2d(RT(r), BUF(b), BUF(other), &g), want); break;
  case 3: rc = CALL(names[3], T->copy_2d_h2d(RT(r), BUF(b), host, &g), want); break;
  default: rc = CALL(names[4], T->copy_2d_d2h(RT(r), host, BUF(b), &g), want); break;
  }
  if (rc != T4A_OK || zero)
    return;
  if (kind == 3) {
    for (uint64_t i = 0; i < g.rows; i++) {
      memcpy(W.buf[b.slot].data + g.dst_offset + i * g.dst_pitch,
             host + g.src_offset + i * g.src_pitch, g.width);
      memset(W.buf[b.slot].known + g.dst_offset + i * g.dst_pitch, 1, g.width);
    }
    return;
  }
  if (kind == 4) {
    for (uint64_t i = 0; i < g.rows; i++)
      fz_check_buffer(b.slot, g.src_offset + i * g.src_pitch, host + g.dst_offset + i * g.dst_pitch,
                      g.width, "copy_2d_d2h");
    return;
  }
  fz_effect e = {.kind = kind == 0   ? E_H2DP
                         : kind == 1 ? E_D2HP
                                     : E_D2D,
                 .two_d = true,
                 .dst = kind == 1 ? other.slot : b.slot,
                 .src = kind == 1 ? b.slot : other.slot,
                 .dst_bits = kind == 1 ? other.bits : b.bits,
                 .src_bits = kind == 1 ? b.bits : other.bits,
                 .doff = g.dst_offset,
                 .soff = g.src_offset,
                 .dpitch = g.dst_pitch,
                 .spitch = g.src_pitch,
                 .n = g.width,
                 .rows = g.rows};
  if (overlap) { /* accepted although the spans meet: the model forgets the rectangle */
    for (uint64_t i = 0; i < g.rows; i++)
      memset(W.buf[b.slot].known + g.dst_offset + i * g.dst_pitch, 0, g.width);
    if (capturing(r))
      W.data_unsure = true;
    return;
  }
  fz_enqueue(r.slot, &e, false);
}

/* ---- completion ------------------------------------------------------------------------ */

static void op_seal(void) {
  fz_trace("seal");
  fz_arg r = fz_pick_rt();
  uint32_t err = 0;
  ERR(!r.ok, T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  t4a_witness w;
  if (CALL("seal", T->seal(RT(r), &w), err ? err : ST_OK) == T4A_OK)
    keep_witness(w.bits, r.bits, W.timing[r.slot]);
}

static void op_witness(void) {
  fz_arg w = pick_wit();
  uint32_t bad = w.ok ? 0 : ST(T4A_EHANDLE);
  switch (fz_u8() % 5) {
  case 0:
    fz_trace("witness_query");
    CALL("witness_query", T->witness_query((t4a_witness){w.bits}),
         bad ? bad : ST_OK | ST(T4A_ENOTREADY));
    break;
  case 1: {
    fz_trace("witness_wait");
    bool forever = fz_chance(192);
    CALL("witness_wait",
         T->witness_wait((t4a_witness){w.bits}, forever ? T4A_WAIT_FOREVER : fz_below(1000)),
         bad ? bad : ST_OK | (forever ? 0 : ST(T4A_ETIMEOUT)));
    break;
  }
  case 2:
    fz_trace("witness_retain");
    if (CALL("witness_retain", T->witness_retain((t4a_witness){w.bits}), bad ? bad : ST_OK) ==
        T4A_OK)
      keep_witness(w.bits, W.wit_rt[w.slot], W.wit_timing[w.slot]);
    break;
  case 3: {
    fz_trace("witness_release");
    if (CALL("witness_release", T->witness_release((t4a_witness){w.bits}), bad ? bad : ST_OK) !=
        T4A_OK)
      break;
    drop_witness((unsigned)w.slot);
    bool still = false;
    for (unsigned i = 0; i < W.nwit; i++)
      still |= W.wit[i] == w.bits;
    if (!still)
      fz_stale(K_WIT, w.bits);
    break;
  }
  default: {
    fz_trace("runtime_wait_witness");
    fz_arg r = fz_pick_rt();
    uint32_t err = bad;
    ERR(!r.ok, T4A_EHANDLE);
    ERR(capturing(r), T4A_EBUSY);
    CALL("runtime_wait_witness", T->runtime_wait_witness(RT(r), (t4a_witness){w.bits}),
         err ? err : ST_OK);
    break;
  }
  }
}

static void op_witness_elapsed(void) {
  fz_trace("witness_elapsed");
  fz_arg a = pick_wit(), b = pick_wit();
  bool null = fz_chance(8);
  uint64_t ns = 0;
  uint32_t err = 0;
  ERR(!a.ok || !b.ok, T4A_EHANDLE);
  ERR(null, T4A_EINVAL);
  uint32_t want = err;
  if (!err) /* two runtimes: EINVAL; no timing: EUNSUPPORTED; a negative span: EINVAL */
    want = W.wit_rt[a.slot] != W.wit_rt[b.slot] ? ST(T4A_EINVAL)
           : W.wit_timing[a.slot]               ? ST_OK | ST(T4A_ENOTREADY) | ST(T4A_EINVAL)
                                                : ST(T4A_EUNSUPPORTED);
  CALL("witness_elapsed",
       T->witness_elapsed((t4a_witness){a.bits}, (t4a_witness){b.bits}, null ? NULL : &ns), want);
}

/* ---- code ---------------------------------------------------------------------------------- */

static int art_slot_for_new(void) {
  int s = fz_free_slot(W.art, FZ_ARTS, sizeof(fz_obj));
  if (s >= 0)
    return s;
  s = 1 + (int)fz_below(FZ_ARTS - 1); /* slot 0 (the seeded PTX) stays */
  CALL("artifact_release", T->artifact_release((t4a_artifact){W.art[s].bits}), ST_OK);
  fz_release_artifact(s);
  return s;
}

static void op_artifact_compile(void) {
  fz_trace("artifact_compile");
  int slot = art_slot_for_new();
  static const char *const arch[] = {"-arch=compute_90"};
  t4a_compile_options o = {.struct_size = sizeof o, .source = good_source, .device_ordinal = 0};
  uint32_t want = ST_OK;
  bool code = true;
  switch (fz_u8() % 10) {
  case 0:
    o.source = bad_source;
    want = ST(T4A_ECOMPILE);
    code = false;
    break;
  case 1:
    o.struct_size = 4;
    want = ST(T4A_EINVAL);
    break;
  case 2:
    o.source = "";
    want = ST(T4A_EINVAL);
    break;
  case 3:
    o.flags = 0x100;
    want = ST(T4A_EINVAL);
    break;
  case 4:
    o.device_ordinal = 7;
    want = ST(T4A_EINVAL) | ST(T4A_ERANGE);
    break;
  case 5: o.flags = T4A_COMPILE_NO_CACHE; break;
  case 6: o.flags = T4A_COMPILE_PTX; break;
  case 7:
    o.device_ordinal = -1;
    o.options = arch;
    o.option_count = 1;
    o.flags = T4A_COMPILE_PTX;
    break;
  default: break;
  }
  t4a_artifact a = {0};
  int rc = CALL("artifact_compile", T->artifact_compile(&o, &a), want);
  if (rc != T4A_OK && rc != T4A_ECOMPILE)
    return;
  W.art[slot] = (fz_obj){a.bits, -1, true};
  W.art_code[slot] = code && rc == T4A_OK;
  W.art_cached[slot] = rc == T4A_OK && !(o.flags & T4A_COMPILE_NO_CACHE);
  W.art_bytes[slot] = NULL;
}

static void op_artifact_from_bytes(void) {
  fz_trace("artifact_from_bytes");
  int slot = art_slot_for_new();
  static uint8_t junks[FZ_ARTS][64]; /* artifact_data is compared with them later */
  uint8_t *junk = junks[slot];
  for (size_t i = 0; i < sizeof junks[0]; i++)
    junk[i] = fz_u8();
  uint8_t k = fz_u8() % 8;
  t4a_artifact_kind kind = k < 3    ? T4A_ARTIFACT_PTX
                           : k == 3 ? T4A_ARTIFACT_CUBIN
                           : k == 4 ? T4A_ARTIFACT_FATBIN
                                    : (t4a_artifact_kind)(k == 5 ? 0 : 9);
  uint64_t ptx_size;
  const char *ptx_text = fz_ptx(&ptx_size);
  const void *bytes = k < 3 ? (const void *)ptx_text : junk;
  uint64_t n = k < 3 ? ptx_size : sizeof junks[0];
  uint32_t want = ST_OK;
  if (k == 1) {
    bytes = NULL;
    want = ST(T4A_EINVAL);
  } else if (k == 2) {
    n = 0;
    want = ST(T4A_EINVAL);
  } else if (k >= 5) {
    want = ST(T4A_EINVAL);
  } else if (k >= 3) {
    want = ST_OK | ST(T4A_EINVAL); /* junk: refused here or at module_load */
  }
  t4a_artifact a;
  if (CALL("artifact_from_bytes", T->artifact_from_bytes(kind, bytes, n, "fuzz", &a), want) !=
      T4A_OK)
    return;
  W.art[slot] = (fz_obj){a.bits, -1, true};
  W.art_code[slot] = k == 0;
  W.art_cached[slot] = false;
  W.art_bytes[slot] = bytes;
  W.art_size[slot] = n;
}

static void op_artifact_queries(void) {
  fz_arg a = fz_pick(K_ART, W.art, FZ_ARTS, sizeof(fz_obj));
  if (fz_art_maybe(a.bits))
    return;
  uint32_t bad = a.ok ? 0 : ST(T4A_EHANDLE);
  switch (fz_u8() % 5) {
  case 0: {
    fz_trace("artifact_log");
    const char *log = NULL;
    uint64_t len = 0;
    bool null = fz_chance(16);
    uint32_t want = bad | (null ? ST(T4A_EINVAL) : 0);
    if (CALL("artifact_log", T->artifact_log((t4a_artifact){a.bits}, null ? NULL : &log, &len),
             want ? want : ST_OK) == 0 &&
        (!log || strlen(log) != len))
      fz_finding("artifact_log: a log of %llu bytes that is not NUL-terminated there",
                 (unsigned long long)len);
    break;
  }
  case 1: {
    fz_trace("artifact_data");
    t4a_artifact_kind kind;
    const void *data = NULL;
    uint64_t size = 0;
    if (CALL("artifact_data", T->artifact_data((t4a_artifact){a.bits}, &kind, &data, &size),
             bad ? bad : ST_OK) == 0 &&
        W.art_bytes[a.slot] &&
        (size != W.art_size[a.slot] || memcmp(data, W.art_bytes[a.slot], size) != 0))
      fz_finding("artifact_data: %llu bytes, not the %llu given to artifact_from_bytes",
                 (unsigned long long)size, (unsigned long long)W.art_size[a.slot]);
    break;
  }
  case 2:
    fz_trace("artifact_release");
    if (a.ok && a.slot == 0 && !fz_chance(16))
      break; /* the seeded PTX: rarely */
    if (CALL("artifact_release", T->artifact_release((t4a_artifact){a.bits}), bad ? bad : ST_OK) ==
        T4A_OK)
      fz_release_artifact(a.slot);
    break;
  case 3: {
    fz_trace("compile_cache_stats");
    t4a_compile_cache_stats s = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof s};
    CALL("compile_cache_stats", T->compile_cache_stats(&s),
         s.struct_size == 4 ? ST(T4A_EINVAL) : ST_OK);
    break;
  }
  default: {
    fz_trace("compile_cache_clear");
    uint32_t which = fz_chance(32) ? fz_u32() | 4u : fz_u8() % 4;
    CALL("compile_cache_clear", T->compile_cache_clear(which),
         which & ~3u ? ST(T4A_EINVAL)
         : which     ? ST_OK
                     : ST_OK | ST(T4A_EINVAL)); /* 0: neither */
    break;
  }
  }
}

static void unload_functions(int r) {
  for (int k = 0; k < FZ_KERNELS; k++)
    if (W.fn[r][k].live) {
      W.fn[r][k].live = false;
      fz_stale(K_FN, W.fn[r][k].bits);
    }
}

static void op_module(void) {
  fz_arg r = fz_pick_rt();
  if (capturing(r))
    return; /* loading and unloading while capturing: left to the graph tests */
  switch (fz_u8() % 3) {
  case 0: {
    fz_trace("module_load");
    fz_arg a = fz_pick(K_ART, W.art, FZ_ARTS, sizeof(fz_obj));
    if (fz_art_maybe(a.bits) || (a.ok && !W.art_code[a.slot]))
      return;                         /* junk or a failed compile: no kernels the model knows */
    if (r.ok && W.mod[r.slot].live) { /* one module per runtime in the model */
      CALL("module_unload", T->module_unload(RT(r), (t4a_module){W.mod[r.slot].bits}), ST_OK);
      W.mod[r.slot].live = false;
      fz_stale(K_MOD, W.mod[r.slot].bits);
      unload_functions(r.slot);
    }
    uint32_t err = 0;
    ERR(!r.ok || !a.ok, T4A_EHANDLE);
    t4a_module m;
    if (CALL("module_load", T->module_load(RT(r), (t4a_artifact){a.bits}, &m), err ? err : ST_OK) ==
        T4A_OK) {
      W.mod[r.slot] = (fz_obj){m.bits, r.slot, true};
      for (int k = 0; k < FZ_KERNELS; k++)
        W.fn_shared[r.slot][k] = 48 * 1024; /* new functions: the default limit */
    }
    break;
  }
  case 1: {
    fz_trace("module_unload");
    fz_arg m = fz_pick(K_MOD, W.mod, FZ_RTS, sizeof(fz_obj));
    fz_arg rr =
        m.slot >= 0 && !fz_chance(20) ? (fz_arg){W.rt[m.slot].bits, m.slot, W.rt[m.slot].live} : r;
    if (capturing(rr))
      return;
    uint32_t want = owns(rr, m, m.slot) ? ST_OK : ST(T4A_EHANDLE);
    if (CALL("module_unload", T->module_unload(RT(rr), (t4a_module){m.bits}), want) == T4A_OK) {
      W.mod[m.slot].live = false;
      fz_stale(K_MOD, m.bits);
      unload_functions(m.slot);
    }
    break;
  }
  default: {
    fz_trace("function_get");
    fz_arg m = fz_pick(K_MOD, W.mod, FZ_RTS, sizeof(fz_obj));
    fz_arg rr =
        m.slot >= 0 && !fz_chance(20) ? (fz_arg){W.rt[m.slot].bits, m.slot, W.rt[m.slot].live} : r;
    uint8_t k = fz_u8() % 6;
    const char *name = k < FZ_KERNELS ? kernel_names[k] : k == 3 ? "nope" : k == 4 ? "" : NULL;
    uint32_t err = 0;
    ERR(!owns(rr, m, m.slot), T4A_EHANDLE);
    ERR(k >= 4, T4A_EINVAL);
    if (k == 4)
      err |= ST(T4A_ENOTFOUND);
    if (!err && k == 3)
      err = ST(T4A_ENOTFOUND);
    t4a_function f;
    if (CALL("function_get", T->function_get(RT(rr), (t4a_module){m.bits}, name, &f),
             err ? err : ST_OK) == T4A_OK)
      W.fn[m.slot][k] = (fz_obj){f.bits, m.slot, true}; /* an earlier handle may stay valid */
    break;
  }
  }
}

static fz_arg pick_fn(void) {
  return fz_pick(K_FN, &W.fn[0][0], FZ_RTS * FZ_KERNELS, sizeof(fz_obj));
}
static int fn_owner(fz_arg f) { return f.slot >= 0 ? f.slot / FZ_KERNELS : -1; }

static void op_function_queries(void) {
  fz_arg f = pick_fn();
  fz_arg r = rt_for(f, fn_owner(f));
  uint32_t bad = owns(r, f, fn_owner(f)) ? 0 : ST(T4A_EHANDLE);
  t4a_function fh = {f.bits};
  switch (fz_u8() % 6) {
  case 0: {
    fz_trace("function_attributes");
    t4a_function_attributes a = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof a};
    uint32_t want = bad | (a.struct_size == 4 ? ST(T4A_EINVAL) : 0);
    if (CALL("function_attributes", T->function_attributes(RT(r), fh, &a), want ? want : ST_OK) ==
            0 &&
        (a.max_threads_per_block < 1 || a.max_threads_per_block > 1024))
      fz_finding("function_attributes: max_threads_per_block %d", a.max_threads_per_block);
    break;
  }
  case 1: {
    fz_trace("function_set_max_dynamic_shared");
    uint32_t bytes = fz_chance(128) ? (uint32_t)fz_below(48 * 1024 + 1)
                                    : (uint32_t)optin_shared + 1 + (uint32_t)fz_below(1 << 20);
    uint32_t want = bad ? bad : bytes > (uint32_t)optin_shared ? ST(T4A_EINVAL) : ST_OK;
    if (CALL("function_set_max_dynamic_shared",
             T->function_set_max_dynamic_shared(RT(r), fh, bytes), want) == T4A_OK)
      W.fn_shared[f.slot / FZ_KERNELS][f.slot % FZ_KERNELS] = bytes;
    break;
  }
  case 2: {
    fz_trace("raw_function");
    void *cu = NULL;
    if (CALL("raw_function", T->raw_function(RT(r), fh, &cu), bad ? bad : ST_OK) == 0 && !cu)
      fz_finding("raw_function returned a NULL CUfunction");
    break;
  }
  case 3: {
    fz_trace("occupancy_max_active_blocks");
    uint32_t threads =
        fz_chance(16) ? (fz_chance(128) ? 0u : 1025u + fz_u8()) : 1u + (uint32_t)fz_below(1024);
    uint32_t blocks = 0, want = bad, shared = (uint32_t)fz_below(1024);
    if (!bad && (threads == 0 || threads > 1024 ||
                 shared > W.fn_shared[f.slot / FZ_KERNELS][f.slot % FZ_KERNELS]))
      want = ST(T4A_EINVAL);
    CALL("occupancy_max_active_blocks",
         T->occupancy_max_active_blocks(RT(r), fh, threads, shared, &blocks), want ? want : ST_OK);
    break;
  }
  case 4: {
    fz_trace("occupancy_suggest_block_size");
    uint32_t limit = (uint32_t)fz_below(1025), threads = 0, grid = 0;
    if (CALL("occupancy_suggest_block_size",
             T->occupancy_suggest_block_size(RT(r), fh, 0, limit, &threads, &grid),
             bad ? bad : ST_OK) == 0 &&
        (threads < 1 || threads > 1024 || (limit && threads > limit) || grid < 1))
      fz_finding("occupancy_suggest_block_size: %u threads, grid %u (limit %u)", threads, grid,
                 limit);
    break;
  }
  default: {
    fz_trace("occupancy_max_active_clusters");
    t4a_launch_ex_config c = {.struct_size = sizeof c, .grid = {8, 1, 1}, .block = {64, 1, 1}};
    c.cluster[0] = 1u << fz_below(5);
    c.cluster[1] = c.cluster[2] = 1;
    uint32_t n = 0;
    CALL("occupancy_max_active_clusters", T->occupancy_max_active_clusters(RT(r), fh, &c, &n),
         bad ? bad : ST_OK | ST(T4A_EINVAL) | ST(T4A_EUNSUPPORTED));
    break;
  }
  }
}

/* ---- launches ------------------------------------------------------------------------------ */

/* Arguments and effect of a launch of kernel k on runtime r, into buffers
 * of r; false when r has no buffer for it. */
typedef struct kargs {
  uint64_t ptr, n;
  uint32_t value;
  void *argv[3];
} kargs;

static bool kernel_args(int r, int k, fz_effect *e, kargs *a, uint32_t grid[3], uint32_t block[3]) {
  for (int i = 0; i < 3; i++) {
    grid[i] = 1 + (uint32_t)fz_below(i == 0 ? 4 : 2);
    block[i] = 1 + (uint32_t)fz_below(i == 0 ? 8 : 3);
  }
  e->kind = k == KERN_FILL ? E_FILL : k == KERN_INDEX3D ? E_INDEX3D : E_EMPTY;
  memcpy(e->grid, grid, sizeof e->grid);
  memcpy(e->block, block, sizeof e->block);
  if (k == KERN_EMPTY)
    return true;
  int b = live_buf_of(r);
  if (b < 0)
    return false;
  uint64_t size = W.buf[b].size;
  e->dst = b;
  e->dst_bits = W.buf[b].o.bits;
  if (k == KERN_FILL) {
    uint64_t off = fz_below(size / 4 + 1) * 4;
    a->n = fz_below((size - off) / 4 + 1);
    a->value = fz_u32();
    e->doff = off;
    e->n = a->n;
    e->value = a->value;
    a->ptr = W.buf[b].addr + off;
    a->argv[0] = &a->ptr;
    a->argv[1] = &a->value;
    a->argv[2] = &a->n;
    return true;
  }
  uint64_t per = (uint64_t)block[0] * block[1] * block[2];
  while (12 * per * grid[0] * grid[1] * grid[2] > size) { /* shrink until it fits */
    int i = grid[2] > 1 ? 2 : grid[1] > 1 ? 1 : grid[0] > 1 ? 0 : -1;
    if (i >= 0) {
      grid[i]--;
    } else if (block[0] * block[1] * block[2] > 1) {
      int j = block[2] > 1 ? 2 : block[1] > 1 ? 1 : 0;
      block[j]--;
      per = (uint64_t)block[0] * block[1] * block[2];
    } else {
      return false; /* not even 12 bytes */
    }
  }
  uint64_t bytes = 12 * per * grid[0] * grid[1] * grid[2];
  e->doff = fz_below((size - bytes) / 4 + 1) * 4;
  memcpy(e->grid, grid, sizeof e->grid);
  memcpy(e->block, block, sizeof e->block);
  a->ptr = W.buf[b].addr + e->doff;
  a->argv[0] = &a->ptr;
  return true;
}

static void op_launch(void) {
  bool ex = fz_chance(64);
  fz_trace(ex ? "launch_ex" : "launch");
  fz_arg f = pick_fn();
  fz_arg r = rt_for(f, fn_owner(f));
  if (!room(r))
    return;
  int k = f.slot >= 0 ? f.slot % FZ_KERNELS : KERN_EMPTY;
  fz_effect e = {0};
  kargs a = {0};
  uint32_t grid[3], block[3];
  int owner = r.ok ? r.slot : -1;
  if (owner < 0)
    k = KERN_EMPTY; /* refused for the handle: no arguments needed */
  if (k != KERN_EMPTY && !kernel_args(owner, k, &e, &a, grid, block))
    return; /* no buffer of the runtime to write */
  if (k == KERN_EMPTY) {
    e.kind = E_EMPTY;
    for (int i = 0; i < 3; i++)
      grid[i] = block[i] = 1;
  }
  e.fn = f.slot;
  e.fn_bits = f.bits;
  e.mod_bits = f.slot >= 0 ? W.mod[f.slot / FZ_KERNELS].bits : 0;
  uint32_t err = 0, maybe = 0;
  ERR(!owns(r, f, fn_owner(f)), T4A_EHANDLE);
  uint32_t shared = 0;
  switch (fz_u8() % 12) { /* a defect, sometimes */
  case 0:
    grid[fz_below(3)] = 0;
    err |= ST(T4A_EINVAL);
    break;
  case 1:
    block[fz_below(3)] = 0;
    err |= ST(T4A_EINVAL);
    break;
  case 2:
    block[0] = 1025;
    err |= ST(T4A_EINVAL);
    break;
  case 3:
    shared = (uint32_t)optin_shared + 1;
    err |= ST(T4A_EINVAL);
    break;
  case 4:
    block[2] = 65;
    err |= ST(T4A_EINVAL);
    break; /* z is limited to 64 */
  default: break;
  }
  int rc;
  if (!ex) {
    t4a_launch_config c = {.struct_size = sizeof c, .shared_bytes = shared};
    if (fz_chance(8)) {
      c.struct_size = 4;
      err |= ST(T4A_EINVAL);
    }
    memcpy(c.grid, grid, sizeof c.grid);
    memcpy(c.block, block, sizeof c.block);
    rc = CALL("launch",
              T->launch(RT(r), (t4a_function){f.bits}, &c, k == KERN_EMPTY ? NULL : a.argv),
              err ? err : ST_OK);
  } else {
    t4a_launch_ex_config c = {.struct_size = sizeof c, .shared_bytes = shared};
    memcpy(c.grid, grid, sizeof c.grid);
    memcpy(c.block, block, sizeof c.block);
    switch (fz_u8() % 8) {
    case 0:
      c.flags = 0x80;
      err |= ST(T4A_EINVAL);
      break;
    case 1:
      c.reserved = 1;
      err |= ST(T4A_EINVAL);
      break;
    case 2:
      c.flags = T4A_LAUNCH_COOPERATIVE;
      maybe = ST(T4A_EINVAL) | ST(T4A_EUNSUPPORTED);
      break;
    case 3:
      c.flags = T4A_LAUNCH_PRIORITY;
      if (r.ok) {
        c.priority = fz_chance(128) ? W.prio_greatest[r.slot] - 1 : W.prio_least[r.slot];
        if (c.priority < W.prio_greatest[r.slot])
          err |= ST(T4A_ERANGE);
      }
      break;
    case 4:
      c.cluster[0] = grid[0];
      c.cluster[1] = grid[1];
      c.cluster[2] = grid[2];
      maybe = ST(T4A_EINVAL) | ST(T4A_EUNSUPPORTED);
      break;
    case 5:
      if (grid[0] > 1 && grid[0] % 2) {
        c.cluster[0] = 2;
        c.cluster[1] = c.cluster[2] = 1;
        err |= ST(T4A_EINVAL); /* does not divide the grid */
      }
      break;
    default: break;
    }
    rc = CALL("launch_ex",
              T->launch_ex(RT(r), (t4a_function){f.bits}, &c, k == KERN_EMPTY ? NULL : a.argv),
              err ? err | (err & ST(T4A_EHANDLE) ? 0 : maybe) : ST_OK | maybe);
  }
  if (rc != T4A_OK)
    return;
  memcpy(e.grid, grid, sizeof e.grid);
  memcpy(e.block, block, sizeof e.block);
  fz_enqueue(r.slot, &e, true);
}

/* ---- the raw seam ------------------------------------------------------------------------------
 */

static void op_raw(void) {
  fz_trace("raw seam");
  fz_arg r = fz_pick_rt();
  uint32_t bad = r.ok ? 0 : ST(T4A_EHANDLE);
  if (fz_chance(96)) {
    t4a_raw_runtime raw = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof raw};
    uint32_t want = bad | (raw.struct_size == 4 ? ST(T4A_EINVAL) : 0);
    if (CALL("raw_runtime", T->raw_runtime(RT(r), &raw), want ? want : ST_OK) == 0 &&
        (raw.device_ordinal != W.dev[r.slot] || !raw.stream || !raw.context))
      fz_finding("raw_runtime: device %d, stream %p, context %p", raw.device_ordinal, raw.stream,
                 raw.context);
    return;
  }
  /* nested sections on up to three runtimes, closed LIFO; sometimes one end
   * names the wrong runtime first */
  t4a_raw_section sec[3];
  fz_arg rs[3];
  int depth = 1 + (int)fz_below(3), open = 0;
  for (int i = 0; i < depth; i++) {
    rs[i] = i == 0 ? r : fz_pick_rt();
    sec[i] = (t4a_raw_section){.struct_size = sizeof sec[i]};
    if (CALL("raw_begin", T->raw_begin(RT(rs[i]), &sec[i]), rs[i].ok ? ST_OK : ST(T4A_EHANDLE)) !=
        T4A_OK)
      break;
    open++;
  }
  for (int i = open - 1; i >= 0; i--) {
    if (fz_chance(24)) {
      fz_arg other = fz_pick_rt();
      if (!(other.ok && other.slot == rs[i].slot))
        CALL("raw_end (wrong runtime)", T->raw_end(RT(other), &sec[i]),
             ST(T4A_EINVAL) | ST(T4A_EHANDLE));
    }
    CALL("raw_end", T->raw_end(RT(rs[i]), &sec[i]), ST_OK);
  }
}

/* ---- graphs ------------------------------------------------------------------------------------
 */

static fz_arg pick_graph(void) { return FZ_PICK(K_GRAPH, W.graph); }
static int graph_owner(fz_arg g) { return g.slot >= 0 ? W.graph[g.slot].o.rt : -1; }

static void release_graph(int g) {
  CALL("graph_release",
       T->graph_release((t4a_runtime){W.rt[W.graph[g].o.rt].bits}, (t4a_graph){W.graph[g].o.bits}),
       ST_OK);
  fz_stale(K_GRAPH, W.graph[g].o.bits);
  fz_graph_drop(&W.graph[g]);
}

static void op_graph_capture(void) {
  fz_arg r = fz_pick_rt();
  if (!fz_chance(128) || !capturing(r)) {
    fz_trace("graph_begin");
    uint32_t err = 0;
    ERR(!r.ok, T4A_EHANDLE);
    ERR(capturing(r), T4A_EBUSY);
    if (CALL("graph_begin", T->graph_begin(RT(r)), err ? err : ST_OK) == T4A_OK) {
      W.capturing[r.slot] = true;
      memset(&W.cap[r.slot], 0, sizeof W.cap[r.slot]);
      W.cap[r.slot].o.rt = r.slot;
    }
    return;
  }
  fz_trace("graph_end");
  int slot = fz_free_slot(&W.graph[0].o, FZ_GRAPHS, sizeof W.graph[0]);
  if (slot < 0) {
    slot = (int)fz_below(FZ_GRAPHS);
    release_graph(slot);
  }
  t4a_graph g;
  if (CALL("graph_end", T->graph_end(RT(r), &g), ST_OK) != T4A_OK)
    return;
  W.graph[slot] = W.cap[r.slot];
  W.graph[slot].o = (fz_obj){g.bits, r.slot, true};
  W.cap[r.slot].neff = 0; /* its kernel references moved to the graph */
  W.capturing[r.slot] = false;
}

static void op_graph_end_idle(void) {
  fz_trace("graph_end (idle)");
  fz_arg r = fz_pick_rt();
  if (capturing(r))
    return;
  t4a_graph g;
  CALL("graph_end", T->graph_end(RT(r), &g), r.ok ? ST(T4A_EINVAL) : ST(T4A_EHANDLE));
}

static void op_graph_launch(void) {
  fz_trace("graph_launch");
  fz_arg g = pick_graph();
  fz_arg r = rt_for(g, graph_owner(g));
  uint32_t err = 0;
  bool owned = owns(r, g, graph_owner(g));
  ERR(!owned, T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  const char *stale = owned ? fz_graph_names_stale(&W.graph[g.slot]) : NULL;
  if (stale)
    err |= ST(T4A_EHANDLE);
  int rc = T->graph_launch(RT(r), (t4a_graph){g.bits});
  if (rc == T4A_OK && stale)
    fz_finding("graph_launch replayed a graph naming what was released (%s)", stale);
  if (CALL("graph_launch", rc, err ? err : ST_OK) != T4A_OK)
    return;
  fz_graph *m = &W.graph[g.slot];
  for (unsigned i = 0; i < m->neff; i++)
    fz_apply(&m->eff[i]);
  m->replays++;
}

static void op_graph_args(void) {
  fz_trace("graph_set_kernel_args");
  fz_arg g = pick_graph();
  fz_arg r = rt_for(g, graph_owner(g));
  bool owned = owns(r, g, graph_owner(g));
  fz_graph *m = owned ? &W.graph[g.slot] : NULL;
  uint64_t kernel = fz_chance(16) ? (m ? m->kernels : 0) + fz_below(4) : fz_below(4);
  uint32_t want = !owned                    ? ST(T4A_EHANDLE)
                  : kernel >= m->kernels    ? ST(T4A_ERANGE)
                  : fz_graph_names_stale(m) ? ST(T4A_EHANDLE)
                                            : ST_OK;
  if (owned && kernel >= m->kernels && fz_graph_names_stale(m))
    want |= ST(T4A_EHANDLE); /* either check may come first */
  fz_effect *e = NULL;
  if (want == ST_OK) { /* the kernel'th kernel effect */
    uint64_t seen = 0;
    for (unsigned i = 0; i < m->neff && !e; i++)
      if (m->eff[i].kind == E_FILL || m->eff[i].kind == E_INDEX3D || m->eff[i].kind == E_EMPTY)
        if (seen++ == kernel)
          e = &m->eff[i];
  }
  fz_effect ne = e ? *e : (fz_effect){.kind = E_EMPTY};
  kargs a = {0};
  if (e && e->kind != E_EMPTY) {
    uint32_t grid[3], block[3];
    int k = e->kind == E_FILL ? KERN_FILL : KERN_INDEX3D;
    fz_effect t = {0};
    /* new arguments: a buffer of the graph's runtime; index3d keeps its geometry */
    if (!kernel_args(m->o.rt, k, &t, &a, grid, block))
      return;
    if (k == KERN_INDEX3D) {
      uint64_t per = (uint64_t)e->block[0] * e->block[1] * e->block[2];
      uint64_t bytes = 12 * per * e->grid[0] * e->grid[1] * e->grid[2];
      if (bytes > W.buf[t.dst].size)
        return;
      t.doff = fz_below((W.buf[t.dst].size - bytes) / 4 + 1) * 4;
      a.ptr = W.buf[t.dst].addr + t.doff;
      memcpy(t.grid, e->grid, sizeof t.grid);
      memcpy(t.block, e->block, sizeof t.block);
    }
    ne.dst = t.dst;
    ne.dst_bits = t.dst_bits;
    ne.doff = t.doff;
    ne.n = t.n;
    ne.value = t.value;
  }
  if (CALL("graph_set_kernel_args",
           T->graph_set_kernel_args(RT(r), (t4a_graph){g.bits}, kernel,
                                    e && e->kind != E_EMPTY ? a.argv : NULL),
           want) != T4A_OK ||
      !e)
    return;
  if (e->kind != E_EMPTY) {
    W.buf[e->dst].kernel_refs--;
    W.buf[ne.dst].kernel_refs++;
  }
  *e = ne;
}

static void op_graph_info(void) {
  fz_arg g = pick_graph();
  fz_arg r = rt_for(g, graph_owner(g));
  bool owned = owns(r, g, graph_owner(g));
  if (owned && fz_chance(32)) {
    fz_trace("graph_release");
    release_graph(g.slot);
    return;
  }
  if (!owned && fz_chance(64)) {
    fz_trace("graph_release (bad)");
    CALL("graph_release", T->graph_release(RT(r), (t4a_graph){g.bits}), ST(T4A_EHANDLE));
    return;
  }
  fz_trace("graph_info");
  t4a_graph_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
  uint32_t want = (owned ? 0 : ST(T4A_EHANDLE)) | (i.struct_size == 4 ? ST(T4A_EINVAL) : 0);
  if (CALL("graph_info", T->graph_info(RT(r), (t4a_graph){g.bits}, &i), want ? want : ST_OK) != 0)
    return;
  const fz_graph *m = &W.graph[g.slot];
  if (i.kernels != m->kernels || i.copies != m->copies || i.replays != m->replays)
    fz_finding("graph_info: %llu kernels, %llu copies, %llu replays; the model: %u, %u, %u",
               (unsigned long long)i.kernels, (unsigned long long)i.copies,
               (unsigned long long)i.replays, m->kernels, m->copies, m->replays);
}

/* ---- the program
 * ----------------------------------------------------------------------------------- */

typedef void (*op_fn)(void);
static const op_fn ops[] = {
    op_last_error,
    op_backend_queries,
    op_runtime_create,
    op_runtime_destroy,
    op_runtime_queries,
    op_buffer_alloc,
    op_buffer_free,
    op_buffer_queries,
    op_memset,
    op_host_alloc,
    op_host_free,
    op_host_register,
    op_host_unregister,
    op_host_check,
    op_copy_h2d,
    op_copy_d2h,
    op_copy_d2h,
    op_copy_d2d,
    op_copy_pinned,
    op_copy_pinned,
    op_copy_cross,
    op_copy_2d,
    op_copy_2d,
    op_seal,
    op_witness,
    op_witness,
    op_witness_elapsed,
    op_artifact_compile,
    op_artifact_from_bytes,
    op_artifact_queries,
    op_module,
    op_function_queries,
    op_launch,
    op_launch,
    op_launch,
    op_raw,
    op_graph_capture,
    op_graph_capture,
    op_graph_end_idle,
    op_graph_launch,
    op_graph_launch,
    op_graph_args,
    op_graph_info,
};

void fz_step(void) {
  static bool limits;
  if (!limits) { /* device 0's limits, once */
    t4a_device_info i = {.struct_size = sizeof i};
    CALL("device_info", T->device_info(0, &i), ST_OK);
    max_pitch = i.max_pitch;
    optin_shared = i.max_shared_per_block_optin;
    limits = true;
  }
  fz_null_arg = false;
  ops[fz_u8() % (sizeof ops / sizeof ops[0])]();
}
