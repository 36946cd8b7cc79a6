/* tools/conform_runtime.c -- conformance checks of runtimes (create, options,
 * counters, isolation, destroy), device and pinned memory, and the raw seam. */
#include "config.h"

#include <string.h>

#include "common/checked.h"
#include "tools/conform.h"

#define MIB (1024ull * 1024)

static t4a_runtime_counters counters(t4a__cf *c, t4a_runtime rt) {
  t4a_runtime_counters k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  CF_OK(c->t->runtime_counters(rt, &k));
  return k;
}

/* runtime_create with arguments it must refuse (with want or also); a
 * runtime made anyway is released with the check. */
static void refused(t4a__cf *c, int32_t device, const t4a_runtime_options *o, int want, int also,
                    const char *what) {
  t4a_runtime rt = {0};
  int rc = c->t->runtime_create(device, o, &rt);
  if (rc == T4A_OK && rt.bits)
    t4a__cf_track(c, T4A__CF_RUNTIME, 0, rt.bits, NULL);
  t4a__cf_expect(c, rc, want, also, what);
}

static void create_destroy(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  if (!a.bits || !b.bits)
    return;
  CF_TRUE(a.bits != b.bits, "two runtime_create calls returned the same handle");
  t4a__cf_forget(c, a.bits);
  CF_OK(t->runtime_destroy(a, T4A_WAIT_FOREVER));
  CF_EXPECT(t->runtime_destroy(a, T4A_WAIT_FOREVER), T4A_EHANDLE);
  t4a_buffer x = t4a__cf_buffer(c, b, 4097); /* the other one is untouched */
  if (x.bits)
    t4a__cf_round_trip(c, b, x, 1, 4096);
  CF_EXPECT(t->runtime_create(c->device, NULL, NULL), T4A_EINVAL);
  refused(c, c->device_count, NULL, T4A_EINVAL, T4A_ERANGE, "runtime_create(device_count, ...)");
  refused(c, -1, NULL, T4A_EINVAL, T4A_ERANGE, "runtime_create(-1, ...)");
}

static void options_rules(t4a__cf *c) {
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = T4A_RUNTIME_OPTIONS_V1_0_SIZE - 1;
  refused(c, c->device, &o, T4A_EINVAL, T4A_EINVAL, "runtime_create(struct_size below v1.0)");
  o.struct_size = sizeof o;
  o.flags = 0x80000000u; /* no T4A_RUNTIME_* bit (v1.1 has TIMING; ABI 1.0 none) */
  refused(c, c->device, &o, T4A_EINVAL, T4A_EINVAL, "runtime_create(an unknown flag)");
  o.flags = 0;
  o.reserved = 1;
  refused(c, c->device, &o, T4A_EINVAL, T4A_EINVAL, "runtime_create(reserved = 1: \"must be 0\")");
  o.reserved = 0;
  o.staging_bytes = 4096;
  refused(c, c->device, &o, T4A_EINVAL, T4A_EINVAL,
          "runtime_create(staging_bytes 4 KiB: \"Minimum 64 KiB\")");
  /* a newer caller's bigger struct (zero beyond v1.0) is accepted */
  struct {
    t4a_runtime_options o;
    unsigned char future[64];
  } big;
  memset(&big, 0, sizeof big);
  big.o.struct_size = sizeof big;
  t4a_runtime r = t4a__cf_runtime(c, c->device, &big.o);
  if (r.bits)
    t4a__cf_destroy(c, r);
  /* the smallest staging moves data of any size, never exceeding its bound */
  memset(&o, 0, sizeof o);
  o.struct_size = T4A_RUNTIME_OPTIONS_V1_0_SIZE;
  o.staging_bytes = 64ull * 1024;
  o.copy_threads = 1;
  o.cache_limit_bytes = MIB;
  r = t4a__cf_runtime(c, c->device, &o);
  t4a_buffer b = t4a__cf_buffer(c, r, MIB + 64);
  if (!b.bits || !t4a__cf_round_trip(c, r, b, 3, MIB + 61))
    return;
  if (c->t->runtime_counters) {
    t4a_runtime_counters k = counters(c, r);
    CF_TRUE(k.staging_bytes == 64ull * 1024 && k.staging_peak_bytes <= k.staging_bytes,
            "staging bound %llu, peak %llu: want the 64 KiB asked for, never exceeded",
            (unsigned long long)k.staging_bytes, (unsigned long long)k.staging_peak_bytes);
  }
}

static void counters_of_runtime(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  if (!a.bits || !b.bits)
    return;
  CF_EXPECT(t->runtime_counters(a, NULL), T4A_EINVAL);
  t4a_runtime_counters a0 = counters(c, a), b0 = counters(c, b);
  CF_TRUE(a0.staging_bytes == 64 * MIB, "staging bound %llu with default options, want 64 MiB",
          (unsigned long long)a0.staging_bytes);
  t4a_buffer x = t4a__cf_buffer(c, a, 10007);
  void *hp = NULL;
  t4a_host_buffer h = t4a__cf_host(c, a, 4096, &hp);
  if (!x.bits || !h.bits || !t4a__cf_round_trip(c, a, x, 5, 10001))
    return;
  t4a__cf_sync(c, a);
  t4a_runtime_counters a1 = counters(c, a), b1 = counters(c, b);
  CF_TRUE(a1.live_buffers == a0.live_buffers + 1 &&
              a1.live_host_buffers == a0.live_host_buffers + 1,
          "live_buffers %llu -> %llu, live_host_buffers %llu -> %llu after one of each",
          (unsigned long long)a0.live_buffers, (unsigned long long)a1.live_buffers,
          (unsigned long long)a0.live_host_buffers, (unsigned long long)a1.live_host_buffers);
  CF_TRUE(a1.bytes_h2d - a0.bytes_h2d == 10001 && a1.bytes_d2h - a0.bytes_d2h == 10001,
          "bytes_h2d +%llu, bytes_d2h +%llu after 10001 bytes each way",
          (unsigned long long)(a1.bytes_h2d - a0.bytes_h2d),
          (unsigned long long)(a1.bytes_d2h - a0.bytes_d2h));
  CF_TRUE(a1.copies_h2d_pageable > a0.copies_h2d_pageable &&
              a1.copies_d2h_pageable > a0.copies_d2h_pageable && a1.seals == a0.seals + 1,
          "copy and seal counters did not move");
  /* "Runtimes never share ... counters" */
  CF_TRUE(memcmp(&b0, &b1, sizeof b0) == 0, "the other runtime's counters changed");
  t4a__cf_free(c, a, x);
  t4a__cf_forget(c, h.bits);
  CF_OK(t->host_free(a, h));
  t4a_runtime_counters a2 = counters(c, a);
  CF_TRUE(a2.live_buffers == a0.live_buffers && a2.live_host_buffers == a0.live_host_buffers,
          "live_buffers/live_host_buffers did not come back after the frees");
}

static void isolation(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer xa = t4a__cf_buffer(c, a, 4096), xb = t4a__cf_buffer(c, b, 4096);
  void *pa;
  t4a_host_buffer ha = t4a__cf_host(c, a, 4096, &pa);
  unsigned char data[4096], back[4096];
  if (!xa.bits || !xb.bits || !ha.bits)
    return;
  t4a__cf_random(data, sizeof data, &c->seed);
  if (!CF_OK(t->copy_h2d(b, xb, 0, data, sizeof data)))
    return;
  uint64_t size = 0;
  /* a buffer is owned by one runtime: another's handle is foreign */
  CF_EXPECT(t->buffer_size(b, xa, &size), T4A_EHANDLE);
  CF_EXPECT(t->copy_h2d(b, xa, 0, data, 16), T4A_EHANDLE);
  CF_EXPECT(t->copy_d2h(a, back, xb, 0, 16), T4A_EHANDLE);
  CF_EXPECT(t->buffer_free(b, xa), T4A_EHANDLE);
  CF_EXPECT(t->host_free(b, ha), T4A_EHANDLE);
  CF_EXPECT(t->copy_h2d_pinned(b, xb, 0, ha, 0, 16), T4A_EHANDLE);
  /* trimming or destroying one runtime never touches another's memory */
  if (t->cache_trim)
    CF_OK(t->cache_trim(a, 0));
  t4a__cf_destroy(c, a);
  memset(back, 0, sizeof back);
  if (CF_OK(t->copy_d2h(b, back, xb, 0, sizeof back)))
    CF_TRUE(memcmp(back, data, sizeof data) == 0,
            "runtime B's data changed when runtime A was trimmed and destroyed");
  t4a_buffer y = t4a__cf_buffer(c, b, 65536);
  if (y.bits)
    t4a__cf_round_trip(c, b, y, 0, 65536);
}

static void destroy_invalidates(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer x = t4a__cf_buffer(c, rt, 1000);
  void *p;
  t4a_host_buffer h = t4a__cf_host(c, rt, 1000, &p);
  t4a__cf_kernels k = {{0}, {0}, {0}};
  if (!x.bits || !h.bits || !t4a__cf_round_trip(c, rt, x, 0, 1000) ||
      (c->code.bits && !t4a__cf_kernels_load(c, rt, &k)))
    return;
  t4a_witness w = t4a__cf_seal(c, rt);
  if (!w.bits || !t4a__cf_destroy(c, rt))
    return;
  uint64_t size;
  t4a_witness w2;
  /* "buffers, host buffers, modules and functions ... become stale" */
  CF_EXPECT(t->buffer_size(rt, x, &size), T4A_EHANDLE);
  CF_EXPECT(t->buffer_free(rt, x), T4A_EHANDLE);
  CF_EXPECT(t->host_free(rt, h), T4A_EHANDLE);
  CF_EXPECT(t->seal(rt, &w2), T4A_EHANDLE);
  CF_EXPECT(t->runtime_destroy(rt, 0), T4A_EHANDLE);
  if (c->code.bits) {
    t4a_function f;
    t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    CF_EXPECT(t->function_get(rt, k.module, "t4a_fill_u32", &f), T4A_EHANDLE);
    CF_EXPECT(t->launch(rt, k.fill, &cfg, NULL), T4A_EHANDLE);
    CF_EXPECT(t->module_unload(rt, k.module), T4A_EHANDLE);
  }
  /* "Witnesses it produced stay valid and report ready" */
  CF_EXPECT(t->witness_query(w), T4A_OK);
  CF_EXPECT(t->witness_wait(w, 0), T4A_OK);
}

/* A new runtime, perhaps in the destroyed one's place, with new objects
 * perhaps in the old ones' places: the old handles stay stale. Probed with
 * calls that harm nothing should a stale handle name a new object. */
static void stale_after_reuse(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer x = t4a__cf_buffer(c, rt, 1000);
  void *p;
  t4a_host_buffer h = t4a__cf_host(c, rt, 1000, &p);
  t4a__cf_kernels k = {{0}, {0}, {0}}, k2;
  if (!x.bits || !h.bits || (c->code.bits && !t4a__cf_kernels_load(c, rt, &k)) ||
      !t4a__cf_destroy(c, rt))
    return;
  t4a_runtime r2 = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer y = t4a__cf_buffer(c, r2, 1000);
  t4a_host_buffer h2 = t4a__cf_host(c, r2, 1000, &p);
  if (!y.bits || !h2.bits || (c->code.bits && !t4a__cf_kernels_load(c, r2, &k2)))
    return;
  CF_TRUE(r2.bits != rt.bits, "a new runtime got the destroyed one's handle");
  uint64_t size;
  t4a_runtime_counters rc = {.struct_size = sizeof rc};
  CF_EXPECT(t->buffer_size(r2, x, &size), T4A_EHANDLE);
  CF_EXPECT(t->copy_h2d_pinned(r2, y, 0, h, 0, 1), T4A_EHANDLE);
  CF_EXPECT(t->buffer_size(rt, y, &size), T4A_EHANDLE);
  if (t->runtime_counters)
    CF_EXPECT(t->runtime_counters(rt, &rc), T4A_EHANDLE);
  if (c->code.bits) {
    t4a_function f;
    t4a_function_attributes fa = {.struct_size = sizeof fa};
    CF_EXPECT(t->function_get(r2, k.module, "t4a_fill_u32", &f), T4A_EHANDLE);
    if (t->function_attributes)
      CF_EXPECT(t->function_attributes(r2, k.fill, &fa), T4A_EHANDLE);
  }
}

static void buffers(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  static const uint64_t sizes[] = {0, 1, 7, 4097, 3 * MIB + 5};
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  if (!rt.bits)
    return;
  t4a_buffer b[5];
  for (int i = 0; i < 5; i++) {
    b[i] = t4a__cf_buffer(c, rt, sizes[i]); /* "0 is valid" */
    uint64_t size = UINT64_MAX;
    if (!b[i].bits || !CF_OK(t->buffer_size(rt, b[i], &size)))
      return;
    CF_TRUE(size == sizes[i], "buffer_size is %llu, asked for %llu", (unsigned long long)size,
            (unsigned long long)sizes[i]);
  }
  t4a__cf_round_trip(c, rt, b[0], 0, 0);
  t4a__cf_round_trip(c, rt, b[4], 0, sizes[4]);
  uint64_t size;
  CF_EXPECT(t->buffer_alloc(rt, 16, NULL), T4A_EINVAL);
  CF_EXPECT(t->buffer_size(rt, b[1], NULL), T4A_EINVAL);
  for (int i = 0; i < 5; i++)
    t4a__cf_free(c, rt, b[i]);
  CF_EXPECT(t->buffer_size(rt, b[2], &size), T4A_EHANDLE);
  CF_EXPECT(t->buffer_free(rt, b[2]), T4A_EHANDLE);
  /* "On exhaustion ... T4A_ENOMEM (the runtime stays usable)" */
  uint64_t twice = 0;
  t4a_buffer big = {0};
  int rc = t->buffer_alloc(rt, 1ull << 52, &big);
  if (rc == T4A_OK)
    t4a__cf_track(c, T4A__CF_BUFFER, rt.bits, big.bits, NULL);
  CF_EXPECT(rc, T4A_ENOMEM);
  if (t4a__mul_u64(c->dev.total_memory, 2, &twice) && twice < (1ull << 52)) {
    rc = t->buffer_alloc(rt, twice, &big);
    if (rc == T4A_OK)
      t4a__cf_track(c, T4A__CF_BUFFER, rt.bits, big.bits, NULL);
    t4a__cf_expect(c, rc, T4A_ENOMEM, T4A_ENOMEM, "buffer_alloc(twice the device's memory)");
  }
  t4a_buffer after = t4a__cf_buffer(c, rt, 12345);
  if (after.bits)
    t4a__cf_round_trip(c, rt, after, 1, 12344);
}

static void cache(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  if (!a.bits || !b.bits)
    return;
  CF_EXPECT(t->cache_stats(a, NULL), T4A_EINVAL);
  for (int i = 0; i < 4; i++) { /* freed blocks that a cache may keep */
    t4a_buffer x = t4a__cf_buffer(c, a, (uint64_t)(i + 1) * MIB), y = t4a__cf_buffer(c, b, MIB);
    if (!x.bits || !y.bits)
      return;
    t4a__cf_free(c, a, x);
    t4a__cf_free(c, b, y);
  }
  t4a_cache_stats sb0 = {.struct_size = sizeof sb0}, s = {.struct_size = sizeof s};
  CF_OK(t->cache_stats(b, &sb0));
  if (!CF_OK(t->cache_trim(a, MIB)) || !CF_OK(t->cache_stats(a, &s)))
    return;
  CF_TRUE(s.bytes <= MIB, "%llu bytes cached after cache_trim(1 MiB)", (unsigned long long)s.bytes);
  if (!CF_OK(t->cache_trim(a, 0)) || !CF_OK(t->cache_stats(a, &s)))
    return;
  CF_TRUE(s.bytes == 0 && s.entries == 0, "%llu bytes in %llu blocks cached after cache_trim(0)",
          (unsigned long long)s.bytes, (unsigned long long)s.entries);
  t4a_cache_stats sb1 = {.struct_size = sizeof sb1};
  if (CF_OK(t->cache_stats(b, &sb1))) /* "Touches only this runtime" */
    CF_TRUE(sb1.bytes == sb0.bytes && sb1.entries == sb0.entries,
            "trimming runtime A changed runtime B's cache (%llu -> %llu bytes)",
            (unsigned long long)sb0.bytes, (unsigned long long)sb1.bytes);
}

static void host_memory(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime rt = t4a__cf_runtime(c, c->device, NULL);
  if (!rt.bits)
    return;
  t4a_host_buffer h = {0};
  void *p = NULL;
  CF_EXPECT(t->host_alloc(rt, 0, 0, &h, &p), T4A_EINVAL); /* "of `bytes` (> 0)" */
  CF_EXPECT(t->host_alloc(rt, 16, 0, NULL, &p), T4A_EINVAL);
  CF_EXPECT(t->host_alloc(rt, 16, 0, &h, NULL), T4A_EINVAL);
  static const uint64_t sizes[] = {1, 4097, MIB + 3};
  for (int i = 0; i < 3; i++) {
    unsigned char *q;
    h = t4a__cf_host(c, rt, sizes[i], &p);
    unsigned char *ref = t4a__cf_mem(c, (size_t)sizes[i]);
    if (!h.bits || !ref)
      return;
    q = p; /* "*ptr is the host address, valid until host_free" */
    t4a__cf_random(ref, (size_t)sizes[i], &c->seed);
    memcpy(q, ref, (size_t)sizes[i]);
    CF_TRUE(memcmp(q, ref, (size_t)sizes[i]) == 0, "pinned memory did not keep what was written");
    t4a__cf_forget(c, h.bits);
    CF_OK(t->host_free(rt, h));
    CF_EXPECT(t->host_free(rt, h), T4A_EHANDLE);
  }
  if (CF_OK(t->host_alloc(rt, 65536, T4A_HOST_WRITE_COMBINED, &h, &p))) {
    t4a__cf_track(c, T4A__CF_HOST, rt.bits, h.bits, NULL);
    memset(p, 0x3c, 65536); /* write-combined: written, not read back */
  }
}

static void raw_seam(t4a__cf *c) {
  const t4a_gpu_backend_v1 *t = c->t;
  t4a_runtime a = t4a__cf_runtime(c, c->device, NULL), b = t4a__cf_runtime(c, c->device, NULL);
  t4a_buffer x = t4a__cf_buffer(c, a, 1), y = t4a__cf_buffer(c, a, 1);
  if (!x.bits || !y.bits || !b.bits)
    return;
  t4a_raw_runtime ra = {.struct_size = sizeof ra}, rb = {.struct_size = sizeof rb};
  if (!CF_OK(t->raw_runtime(a, &ra)) || !CF_OK(t->raw_runtime(b, &rb)))
    return;
  CF_TRUE(ra.device_ordinal == c->device, "raw_runtime: device_ordinal %d, want %d",
          (int)ra.device_ordinal, (int)c->device);
  CF_TRUE(ra.context && ra.stream, "raw_runtime: NULL context or stream");
  CF_TRUE(ra.stream != rb.stream, "two runtimes share a stream (\"Runtimes never share streams\")");
  uint64_t px = 0, py = 0;
  if (CF_OK(t->buffer_device_address(a, x, &px)) && CF_OK(t->buffer_device_address(a, y, &py)))
    CF_TRUE(px && py && px != py, "buffer_device_address: %#llx and %#llx for two live buffers",
            (unsigned long long)px, (unsigned long long)py);
  CF_EXPECT(t->buffer_device_address(a, x, NULL), T4A_EINVAL);
  /* pairs nest per thread in LIFO order */
  t4a_raw_section s1 = {.struct_size = sizeof s1}, s2 = {.struct_size = sizeof s2};
  if (CF_OK(t->raw_begin(a, &s1))) {
    if (CF_OK(t->raw_begin(b, &s2)))
      CF_OK(t->raw_end(b, &s2));
    CF_OK(t->raw_end(a, &s1));
  }
  if (!t->runtime_counters)
    return;
  /* "raw_end ... notes that the consumer enqueued work on the raw stream, so
   * the next seal records an event covering it" */
  t4a__cf_sync(c, a);
  t4a_runtime_counters k0 = counters(c, a);
  t4a__cf_sync(c, a); /* nothing new: no event */
  t4a_runtime_counters k1 = counters(c, a);
  CF_TRUE(k1.seal_events_recorded == k0.seal_events_recorded,
          "a seal with nothing enqueued since the previous one recorded an event");
  if (CF_OK(t->raw_begin(a, &s1)))
    CF_OK(t->raw_end(a, &s1));
  t4a__cf_sync(c, a);
  t4a_runtime_counters k2 = counters(c, a);
  CF_TRUE(k2.seal_events_recorded == k1.seal_events_recorded + 1 &&
              k2.raw_sections == k1.raw_sections + 1,
          "after a raw section the next seal recorded %llu events (raw_sections +%llu), want 1",
          (unsigned long long)(k2.seal_events_recorded - k1.seal_events_recorded),
          (unsigned long long)(k2.raw_sections - k1.raw_sections));
}

#define DEV T4A__CF_DEVICE
#define RT "runtime_create runtime_destroy "
#define MEM RT "buffer_alloc buffer_free buffer_size copy_h2d copy_d2h "

const t4a__cf_check t4a__cf_runtime_checks[] = {
    {"runtime.create_destroy",
     "runtime_create: returns a new runtime; runtime_destroy: the handle becomes stale", MEM, DEV,
     create_destroy},
    {"runtime.options",
     "t4a_runtime_options: flags are T4A_RUNTIME_* (0 in ABI 1.0), reserved must be 0; staging "
     "minimum 64 KiB, allocated once, never exceeded; a bigger struct_size is accepted, a "
     "smaller one is T4A_EINVAL",
     MEM, DEV, options_rules},
    {"runtime.counters",
     "runtime_counters: snapshot of the runtime's counters; runtimes never share counters",
     MEM "runtime_counters host_alloc host_free seal witness_wait witness_release", DEV,
     counters_of_runtime},
    {"runtime.isolation",
     "Runtimes never share streams, pools, caches or counters; a foreign handle is T4A_EHANDLE",
     MEM "host_alloc host_free copy_h2d_pinned", DEV, isolation},
    {"runtime.destroy_invalidates",
     "Destroying a runtime invalidates every buffer, host buffer, module and function it owns; "
     "witnesses it produced stay valid",
     MEM "host_alloc host_free seal witness_query witness_wait witness_release", DEV,
     destroy_invalidates},
    {"runtime.stale_after_reuse",
     "A stale (freed/destroyed) handle is rejected with T4A_EHANDLE, never dereferenced: also "
     "once a new runtime and new objects may take the destroyed ones' places",
     MEM "host_alloc host_free copy_h2d_pinned", DEV, stale_after_reuse},
    {"memory.buffer_alloc",
     "buffer_alloc: `bytes` (0 is valid); buffer_size: the size requested; on exhaustion "
     "T4A_ENOMEM (the runtime stays usable); buffer_free: the handle is stale at once",
     MEM, DEV, buffers},
    {"memory.cache",
     "cache_trim: returns cached free blocks until at most keep_bytes remain cached; touches "
     "only this runtime",
     MEM "cache_trim cache_stats", DEV, cache},
    {"memory.host_alloc",
     "host_alloc: page-locked host memory of `bytes` (> 0); *ptr valid until host_free; "
     "host_free: the handle is stale at once",
     RT "host_alloc host_free", DEV, host_memory},
    {"raw.seam",
     "raw_runtime: the runtime's context, stream and device; raw_begin/raw_end nest per thread; "
     "raw_end notes work so the next seal records an event",
     MEM "raw_runtime raw_begin raw_end buffer_device_address seal witness_wait witness_release",
     DEV, raw_seam},
};
const size_t t4a__cf_runtime_count =
    sizeof t4a__cf_runtime_checks / sizeof t4a__cf_runtime_checks[0];
