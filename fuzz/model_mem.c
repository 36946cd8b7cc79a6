/* fuzz/model_mem.c -- the model fuzzer's operations on the backend, runtimes,
 * device memory and pinned host memory (see fuzz/model_ops.h). */
#include "config.h"

#include <string.h>

#include "fuzz/model_ops.h"

static uint8_t regions[FZ_REGS][FZ_HMAX] __attribute__((aligned(4096))); /* host_register's */
static bool region_was_pinned[FZ_REGS]; /* since the process started */

/* ---- backend ------------------------------------------------------------------ */

void fz_op_last_error(void) {
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

void fz_op_backend_queries(void) {
  fz_trace("backend queries");
  switch (fz_u8() % 6) {
  case 0: CALL("init", T->init(), ST_OK); break;
  case 1: {
    t4a_backend_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
    if (CALL("get_info", T->get_info(&i), i.struct_size == 4 ? ST(T4A_EINVAL) : ST_OK) == 0 &&
        (i.device_count != fz_devices || i.abi_major != 1 ||
         strcmp(i.name, fz_on_host ? "host" : "cuda") != 0))
      fz_finding("get_info: %d devices, ABI %u, name '%s'", i.device_count, i.abi_major, i.name);
    break;
  }
  case 2: {
    int32_t n = -1;
    bool null = fz_chance(16);
    if (CALL("device_count", T->device_count(null ? NULL : &n), null ? ST(T4A_EINVAL) : ST_OK) ==
            0 &&
        n != fz_devices)
      fz_finding("device_count says %d, the backend has %d", n, fz_devices);
    break;
  }
  case 3: {
    int32_t d = (int32_t)fz_below(5) - 1;
    t4a_device_info i = {.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof i};
    uint32_t want = (d < 0 || d >= fz_devices) ? ST(T4A_EINVAL) | ST(T4A_ERANGE)
                    : i.struct_size == 4       ? ST(T4A_EINVAL)
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
    uint32_t want = (s < 0 || s >= fz_devices || d < 0 || d >= fz_devices)
                        ? ST(T4A_EINVAL) | ST(T4A_ERANGE)
                    : null ? ST(T4A_EINVAL)
                           : ST_OK;
    CALL("peer_access_supported", T->peer_access_supported(s, d, null ? NULL : &ok), want);
    break;
  }
  }
}

/* ---- runtimes ---------------------------------------------------------------- */

void fz_op_runtime_create(void) {
  fz_trace("runtime_create");
  int slot = fz_free_slot(W.rt, FZ_RTS, sizeof(fz_obj));
  if (slot < 0)
    return;
  int32_t dev = (int32_t)fz_below(3) - (fz_chance(16) ? 1 : 0);
  t4a_runtime_options o = {.struct_size = sizeof o, .staging_bytes = 65536, .copy_threads = 1};
  uint32_t err = 0;
  if (dev < 0 || dev >= fz_devices)
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

void fz_op_runtime_destroy(void) {
  fz_trace("runtime_destroy");
  fz_arg r = fz_pick_rt();
  if (r.ok && r.slot < 3 && !fz_chance(24))
    return; /* the seeded runtimes go rarely: their objects carry most of the program */
  if (CALL("runtime_destroy", T->runtime_destroy(RT(r), T4A_WAIT_FOREVER),
           r.ok ? ST_OK : ST(T4A_EHANDLE)) == T4A_OK)
    fz_forget_runtime(r.slot);
}

void fz_op_runtime_queries(void) {
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
        (m.pool_used > m.pool_reserved || m.cache_bytes > m.pool_used ||
         (fz_on_host ? m.staging_bytes != 0
                     : m.staging_bytes < 65536))) /* the host stages nothing */
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
    CALL("cache_trim", T->cache_trim(RT(r), fz_chance(128) ? 0 : fz_amount(1 << 20)),
         want ? want : ST_OK);
    break;
  }
  }
}

/* ---- device memory ---------------------------------------------------------------- */

void fz_op_buffer_alloc(void) {
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

void fz_op_buffer_free(void) {
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

void fz_op_buffer_queries(void) {
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

void fz_op_memset(void) {
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
    off = fz_amount(size);
    count = fz_amount(size);
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

void fz_op_host_alloc(void) {
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

void fz_op_host_free(void) {
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

void fz_op_host_register(void) {
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

void fz_op_host_unregister(void) {
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
void fz_op_host_check(void) {
  fz_trace("host check");
  fz_arg h = pick_host();
  if (!h.ok || capturing((fz_arg){0, host_owner(h), true}))
    return;
  fz_sync(host_owner(h));
  fz_check_host(h.slot);
}
