/* tests/runtime/test_interop.c -- the ABI 1.1 interop slots, in the three
 * lanes (fake driver, host backend, real GPU): external memory (copies,
 * memset and a launch through it, bit-exact against the CPU; the release
 * callback exactly once, only after the last use completed, held back by a
 * gate; foreign devices and bad input refused), a consumer's streams and
 * events ordered against the runtime's work (GPU-side, held by gates),
 * DLPack export and import (every field, deleters once, round trips, bad
 * input), and the failures of the new driver calls (fake lane). In the
 * host lane external memory is host memory (kDLCPU for DLPack), a 32-bit
 * memset writes where a kernel does, and what needs a CUDA driver (the
 * ranges it reports, consumer streams and events) is left out, saying so. */
#include "config.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin-cuda/cuda_decls.h"
#include "tests/runtime/rtutil.h"

#define MiB (1ull << 20)

/* ---- the consumer's side: its own streams, events and kernels --------------------- */

static struct {
  void *dl;
  t4a__CUresult (*stream_create)(t4a__CUstream *, unsigned);
  t4a__CUresult (*stream_destroy)(t4a__CUstream);
  t4a__CUresult (*stream_query)(t4a__CUstream);
  t4a__CUresult (*stream_sync)(t4a__CUstream);
  t4a__CUresult (*event_create)(t4a__CUevent *, unsigned);
  t4a__CUresult (*event_record)(t4a__CUevent, t4a__CUstream);
  t4a__CUresult (*event_destroy)(t4a__CUevent);
  t4a__CUresult (*memset8)(t4a__CUdeviceptr, unsigned char, size_t, t4a__CUstream);
  t4a__CUresult (*load)(t4a__CUmodule *, const void *);
  t4a__CUresult (*unload)(t4a__CUmodule);
  t4a__CUresult (*get)(t4a__CUfunction *, t4a__CUmodule, const char *);
  t4a__CUresult (*launch)(t4a__CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, unsigned, t4a__CUstream, void **, void **);
} drv;

static void *sym(const char *name) {
  void *p = dlsym(drv.dl, name);
  ck_assert_msg(p != NULL, "the driver lacks %s", name);
  return p;
}

static void driver_open(void) {
  if (drv.dl)
    return;
  const char *lib = getenv("T4A_CUDA_LIBRARY");
  drv.dl = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(drv.dl);
  *(void **)&drv.stream_create = sym("cuStreamCreate");
  *(void **)&drv.stream_destroy = sym("cuStreamDestroy_v2");
  *(void **)&drv.stream_query = sym("cuStreamQuery");
  *(void **)&drv.stream_sync = sym("cuStreamSynchronize");
  *(void **)&drv.event_create = sym("cuEventCreate");
  *(void **)&drv.event_record = sym("cuEventRecord");
  *(void **)&drv.event_destroy = sym("cuEventDestroy_v2");
  *(void **)&drv.memset8 = sym("cuMemsetD8Async");
  *(void **)&drv.load = sym("cuModuleLoadData");
  *(void **)&drv.unload = sym("cuModuleUnload");
  *(void **)&drv.get = sym("cuModuleGetFunction");
  *(void **)&drv.launch = sym("cuLaunchKernel");
}

/* A consumer's stream in rt's (primary) context. */
static t4a__CUstream consumer_stream(t4a_runtime rt) {
  driver_open();
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  t4a__CUstream s = NULL;
  ck_assert_int_eq(drv.stream_create(&s, 1 /* non-blocking */), 0);
  RT_OK(T->raw_end(rt, &sec));
  return s;
}

static void consumer_stream_destroy(t4a_runtime rt, t4a__CUstream s) {
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(drv.stream_sync(s), 0);
  ck_assert_int_eq(drv.stream_destroy(s), 0);
  RT_OK(T->raw_end(rt, &sec));
}

/* A gate on a consumer's stream: t4a_spin on it until opened (the flag is
 * pinned memory of rt). */
typedef struct cgate {
  t4a_runtime rt;
  t4a_host_buffer hb;
  volatile uint32_t *flag;
  t4a__CUmodule module;
} cgate;

static void cgate_close(cgate *g, t4a_runtime rt, t4a__CUstream s) {
  memset(g, 0, sizeof *g);
  g->rt = rt;
  void *p;
  RT_OK(T->host_alloc(rt, sizeof(uint32_t), 0, &g->hb, &p));
  g->flag = p;
  __atomic_store_n(g->flag, 0u, __ATOMIC_SEQ_CST);
  uint64_t addr = (uint64_t)(uintptr_t)p;
  void *args[] = {&addr};
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(drv.load(&g->module, rt_test_ptx()), 0);
  t4a__CUfunction f;
  ck_assert_int_eq(drv.get(&f, g->module, "t4a_spin"), 0);
  ck_assert_int_eq(drv.launch(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL), 0);
  RT_OK(T->raw_end(rt, &sec));
}

static void cgate_open(cgate *g) { __atomic_store_n(g->flag, 1u, __ATOMIC_SEQ_CST); }

static void cgate_free(cgate *g, t4a__CUstream s) {
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(g->rt, &sec));
  ck_assert_int_eq(drv.stream_sync(s), 0);
  ck_assert_int_eq(drv.unload(g->module), 0);
  RT_OK(T->raw_end(g->rt, &sec));
  RT_OK(T->host_free(g->rt, g->hb));
}

/* n bytes of device memory no runtime allocated: cuMemAlloc on a GPU (an
 * allocation of its own, whose range the driver reports exactly), another
 * runtime's buffer on the fake (whose allocations are exact too). */
typedef struct foreign {
  t4a_runtime owner;
  t4a_buffer buf;
  t4a__CUdeviceptr ptr;
} foreign;

static uint64_t foreign_alloc(foreign *f, t4a_runtime owner, uint64_t n) {
  memset(f, 0, sizeof *f);
  f->owner = owner;
  if (rt_on_fake()) {
    RT_OK(T->buffer_alloc(owner, n, &f->buf));
    uint64_t a = 0;
    RT_OK(T->buffer_device_address(owner, f->buf, &a));
    return a;
  }
  driver_open();
  t4a__CUresult (*alloc)(t4a__CUdeviceptr *, size_t);
  *(void **)&alloc = sym("cuMemAlloc_v2");
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(owner, &sec));
  ck_assert_int_eq(alloc(&f->ptr, (size_t)n), 0);
  RT_OK(T->raw_end(owner, &sec));
  return f->ptr;
}

static void foreign_free(foreign *f) {
  if (rt_on_fake()) {
    RT_OK(T->buffer_free(f->owner, f->buf));
    return;
  }
  t4a__CUresult (*release)(t4a__CUdeviceptr);
  *(void **)&release = sym("cuMemFree_v2");
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(f->owner, &sec));
  ck_assert_int_eq(release(f->ptr), 0);
  RT_OK(T->raw_end(f->owner, &sec));
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- the runtime's side ------------------------------------------------------------ */

/* t4a_fill_u32 through the table (artifact, module, launch). In the host
 * lane, which has no kernels, the same words by a queued 32-bit memset:
 * what these tests check is that the runtime's queued writes reach the
 * wrapped memory, in order, before its release. */
typedef struct filler {
  t4a_artifact art;
  t4a_module mod;
  t4a_function fn;
} filler;

static filler filler_load(t4a_runtime rt) {
  filler f;
  memset(&f, 0, sizeof f);
  if (rt_on_host())
    return f;
  const char *ptx = rt_test_ptx();
  RT_OK(T->artifact_from_bytes(T4A_ARTIFACT_PTX, ptx, strlen(ptx), "interop", &f.art));
  RT_OK(T->module_load(rt, f.art, &f.mod));
  RT_OK(T->function_get(rt, f.mod, "t4a_fill_u32", &f.fn));
  return f;
}

/* n words of `value` at `offset` of buffer b. */
static void fill_u32(t4a_runtime rt, const filler *f, t4a_buffer b, uint64_t offset, uint32_t value,
                     uint64_t n) {
  if (rt_on_host()) {
    RT_OK(T->memset(rt, b, offset, value, 4, n));
    return;
  }
  uint64_t address = rt_address(rt, b) + offset;
  void *args[] = {&address, &value, &n};
  t4a_launch_config cfg = {.struct_size = sizeof cfg, .grid = {64, 1, 1}, .block = {256, 1, 1}};
  RT_OK(T->launch(rt, f->fn, &cfg, args));
}

static void filler_unload(t4a_runtime rt, filler *f) {
  if (rt_on_host())
    return;
  RT_OK(T->module_unload(rt, f->mod));
  RT_OK(T->artifact_release(f->art));
}

/* Release callbacks count their calls in the int their argument points to. */
static void count_release(void *user) { __atomic_add_fetch((int *)user, 1, __ATOMIC_SEQ_CST); }
static int released(const int *n) { return __atomic_load_n(n, __ATOMIC_SEQ_CST); }

static t4a_external_memory ext_of(uint64_t address, uint64_t bytes, int32_t device, int *count) {
  t4a_external_memory m = {.struct_size = sizeof m,
                           .address = address,
                           .bytes = bytes,
                           .device_ordinal = device,
                           .release = count ? count_release : NULL,
                           .user = count};
  return m;
}

/* ---- external memory ---------------------------------------------------------------- */

START_TEST(external_buffer_serves_copies_memset_and_launches) {
  uint64_t seed = t4a_test_seed();
  t4a_runtime owner = rt_create(), rt = rt_create(); /* rt did not allocate the memory */
  const uint64_t n = 3 * MiB + 12, off = 4096 + 12;
  t4a_buffer mem, ext, mine;
  RT_OK(T->buffer_alloc(owner, n, &mem));
  int count = 0;
  t4a_external_memory m = ext_of(rt_address(owner, mem) + off, n - off, 0, &count);
  RT_OK(T->buffer_wrap_external(rt, &m, &ext));
  uint64_t size = 0;
  RT_OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, n - off);
  ck_assert_uint_eq(rt_address(rt, ext), m.address);
  unsigned char *ref = malloc(n), *got = malloc(n);
  t4a_test_fill_random(ref, n, seed);
  RT_OK(T->copy_h2d(owner, mem, 0, ref, n)); /* the owner's view first */
  rt_sync(owner);
  /* through the external buffer: pageable copy, memset, a kernel, a d2d copy */
  unsigned char *part = malloc(MiB);
  t4a_test_fill_random(part, MiB, seed + 1);
  RT_OK(T->copy_h2d(rt, ext, 100, part, MiB));
  memcpy(ref + off + 100, part, MiB);
  RT_OK(T->memset(rt, ext, MiB + 200, 0x5c, 1, 3333));
  memset(ref + off + MiB + 200, 0x5c, 3333);
  filler f = filler_load(rt);
  fill_u32(rt, &f, ext, 2 * MiB, 0xc0ffee11u, 4097);
  for (uint64_t i = 0; i < 4097; i++)
    memcpy(ref + off + 2 * MiB + 4 * i, &(uint32_t){0xc0ffee11u}, 4);
  RT_OK(T->buffer_alloc(rt, MiB, &mine));
  RT_OK(T->copy_d2d(rt, mine, 0, ext, 0, MiB));
  RT_OK(T->copy_d2h(rt, got, mine, 0, MiB)); /* waits for everything before it */
  ck_assert_msg(memcmp(got, ref + off, MiB) == 0, "copy_d2d out of the external buffer");
  RT_OK(T->copy_d2h(rt, got, ext, 0, n - off));
  ck_assert_msg(memcmp(got, ref + off, n - off) == 0, "the external buffer's bytes");
  RT_OK(T->copy_d2h(owner, got, mem, 0, n)); /* the owner sees the same memory */
  ck_assert_msg(memcmp(got, ref, n) == 0, "the owner's view");
  /* past the allocation: a range the driver reports exactly (a pool's
   * blocks share a larger range). The host backend has no driver to ask
   * where an allocation ends: the consumer vouches for the range there. */
  if (!rt_on_host()) {
    foreign fa;
    uint64_t fp = foreign_alloc(&fa, owner, MiB);
    t4a_buffer bad, whole;
    t4a_external_memory far = ext_of(fp, 1ull << 40, 0, &count);
    RT_EXPECT(T->buffer_wrap_external(rt, &far, &bad), T4A_ERANGE);
    RT_DETAIL("runs past its allocation");
    ck_assert_uint_eq(bad.bits, 0);
    far.bytes = MiB; /* exactly the allocation */
    RT_OK(T->buffer_wrap_external(rt, &far, &whole));
    RT_OK(T->buffer_free(rt, whole));
    rt_sync(rt);
    ck_assert_int_eq(released(&count), 1);
    count = 0;
    foreign_free(&fa);
  }
  filler_unload(rt, &f);
  RT_OK(T->buffer_free(rt, mine));
  RT_OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(released(&count), 1);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(owner, T4A_WAIT_FOREVER));
  ck_assert_int_eq(released(&count), 1); /* the failed wrap never calls it */
  free(ref);
  free(got);
  free(part);
}
END_TEST

START_TEST(release_waits_for_the_last_use) {
  t4a_runtime owner = rt_create(), rt = rt_create();
  const uint64_t n = 2 * MiB;
  t4a_buffer mem, ext;
  RT_OK(T->buffer_alloc(owner, n, &mem));
  RT_OK(T->memset(owner, mem, 0, 0, 1, n));
  rt_sync(owner);
  int count = 0;
  t4a_external_memory m = ext_of(rt_address(owner, mem), n, 0, &count);
  RT_OK(T->buffer_wrap_external(rt, &m, &ext));
  filler f = filler_load(rt); /* before the gate: loading code may wait for the context */
  rt_gate g;
  rt_gate_close(&g, rt); /* rt's stream is held */
  fill_u32(rt, &f, ext, 0, 0x600dcafeu, n / 4);
  RT_OK(T->buffer_free(rt, ext)); /* the handle goes at once, the memory waits */
  t4a_buffer tmp;
  RT_EXPECT(T->buffer_size(rt, ext, &(uint64_t){0}), T4A_EHANDLE);
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  for (int i = 0; i < 5; i++) { /* queries, seals and allocations: natural points */
    RT_EXPECT(T->witness_query(w), T4A_ENOTREADY);
    RT_OK(T->buffer_alloc(rt, 64, &tmp));
    RT_OK(T->buffer_free(rt, tmp));
    pause_ms(10);
  }
  RT_EXPECT(T->witness_wait(w, 20000000ull), T4A_ETIMEOUT);
  ck_assert_int_eq(released(&count), 0); /* the kernel has not run: not released */
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER)); /* observes completion: releases */
  ck_assert_int_eq(released(&count), 1);
  uint32_t *back = malloc(n);
  RT_OK(T->copy_d2h(owner, back, mem, 0, n)); /* the work done before the release */
  /* Element loops assert only a mismatch: each passing ck_assert sends Check
   * a message, and the million of them here cost a minute under TSan. */
  for (uint64_t i = 0; i < n / 4; i++)
    if (back[i] != 0x600dcafeu)
      ck_assert_uint_eq(back[i], 0x600dcafeu);
  RT_OK(T->witness_release(w));
  rt_gate_free(&g);
  filler_unload(rt, &f);
  rt_sync(rt);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  ck_assert_int_eq(released(&count), 1); /* exactly once */
  RT_OK(T->runtime_destroy(owner, T4A_WAIT_FOREVER));
  free(back);
}
END_TEST

/* A release callback that calls back into the runtime (it runs after the
 * runtime's lock was let go, so this cannot deadlock). */
typedef struct reentry {
  t4a_runtime rt;
  int calls, status;
} reentry;

static void release_reenters(void *user) {
  reentry *r = user;
  t4a_runtime_counters c = {.struct_size = sizeof c};
  t4a_buffer b;
  r->status = T->runtime_counters(r->rt, &c);
  if (r->status == T4A_OK && T->buffer_alloc(r->rt, 16, &b) == T4A_OK)
    r->status = T->buffer_free(r->rt, b);
  r->calls++;
}

START_TEST(release_at_free_destroy_or_never_twice) {
  t4a_runtime owner = rt_create(), rt = rt_create();
  t4a_buffer mem, a, b, c, z;
  RT_OK(T->buffer_alloc(owner, MiB, &mem));
  uint64_t base = rt_address(owner, mem);
  rt_sync(owner);
  /* nothing enqueued on it: released by buffer_free itself */
  int ca = 0;
  t4a_external_memory m = ext_of(base, 4096, 0, &ca);
  RT_OK(T->buffer_wrap_external(rt, &m, &a));
  RT_OK(T->buffer_free(rt, a));
  ck_assert_int_eq(released(&ca), 1);
  /* a callback calling back into the runtime */
  reentry re = {.rt = rt};
  t4a_external_memory mr = {.struct_size = sizeof mr,
                            .address = base + 4096,
                            .bytes = 4096,
                            .device_ordinal = 0,
                            .release = release_reenters,
                            .user = &re};
  RT_OK(T->buffer_wrap_external(rt, &mr, &b));
  RT_OK(T->memset(rt, b, 0, 7, 1, 4096));
  RT_OK(T->buffer_free(rt, b));
  rt_sync(rt);
  ck_assert_int_eq(re.calls, 1);
  ck_assert_int_eq(re.status, T4A_OK);
  /* no callback at all (NULL release), and a zero-byte wrap */
  t4a_external_memory mn = ext_of(base + 8192, 4096, 0, NULL);
  RT_OK(T->buffer_wrap_external(rt, &mn, &c));
  int cz = 0;
  t4a_external_memory m0 = ext_of(0, 0, 0, &cz);
  RT_OK(T->buffer_wrap_external(rt, &m0, &z));
  /* a larger struct from a newer caller: its tail is ignored */
  struct {
    t4a_external_memory m;
    uint64_t future[4];
  } big = {ext_of(base + 12288, 4096, 0, &ca), {1, 2, 3, 4}};
  big.m.struct_size = sizeof big;
  t4a_buffer d;
  RT_OK(T->buffer_wrap_external(rt, &big.m, &d));
  /* never freed: runtime_destroy releases them, once */
  int cd = 0;
  t4a_external_memory md = ext_of(base + 16384, 65536, 0, &cd);
  t4a_buffer e;
  RT_OK(T->buffer_wrap_external(rt, &md, &e));
  RT_OK(T->memset(rt, e, 0, 1, 1, 65536));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  ck_assert_int_eq(released(&cd), 1);
  ck_assert_int_eq(released(&cz), 1);
  ck_assert_int_eq(released(&ca), 2); /* a, then d at destroy */
  RT_OK(T->runtime_destroy(owner, T4A_WAIT_FOREVER));
  ck_assert_int_eq(released(&cd) + released(&cz) + released(&ca), 4);
}
END_TEST

START_TEST(external_memory_refused_with_the_reason) {
  t4a_runtime owner = rt_create(), rt = rt_create();
  t4a_buffer mem, out = {0};
  RT_OK(T->buffer_alloc(owner, MiB, &mem));
  RT_OK(T->memset(owner, mem, 0, 0, 1, MiB)); /* defined bytes (the initcheck lane) */
  rt_sync(owner); /* a stream-ordered allocation: other streams use it after this */
  uint64_t base = rt_address(owner, mem);
  int count = 0;
  t4a_external_memory m = ext_of(base, 4096, 0, &count);
  RT_EXPECT(T->buffer_wrap_external(rt, NULL, &out), T4A_EINVAL);
  RT_EXPECT(T->buffer_wrap_external(rt, &m, NULL), T4A_EINVAL);
  t4a_external_memory s = m;
  s.struct_size = T4A_EXTERNAL_MEMORY_V1_1_SIZE - 8;
  RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
  s = m;
  s.flags = 0x80;
  RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
  s = m;
  s.reserved = 1;
  RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
  s = m;
  s.address = UINT64_MAX - 10; /* the range wraps */
  RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
  s = m;
  s.address = 0;
  RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
  s = m;
  s.device_ordinal = 1; /* says another device */
  RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EFOREIGNDEVICE);
  s = m;
  s.flags = T4A_EXTERNAL_HOST; /* host memory belongs to no device */
  RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
  s.device_ordinal = -1; /* device memory is not host memory (on the host backend it is) */
  if (!rt_on_host()) {
    RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
    RT_DETAIL("without T4A_EXTERNAL_HOST");
  }
  /* memory the driver does not know: a host stack address, freed memory
   * (the host backend has no driver to ask: its device memory is the
   * process's, any address the consumer vouches for) */
  if (!rt_on_host()) {
    uint64_t local[64];
    s = ext_of((uint64_t)(uintptr_t)local, sizeof local, 0, &count);
    RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
    RT_DETAIL("not device memory");
    t4a_host_buffer hb;
    void *pinned;
    RT_OK(T->host_alloc(rt, 65536, 0, &hb, &pinned));
    s = ext_of((uint64_t)(uintptr_t)pinned, 65536, 0, &count); /* pinned, but no flag */
    RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
    RT_DETAIL("T4A_EXTERNAL_HOST");
    RT_OK(T->host_free(rt, hb));
  }
  if (rt_on_fake()) { /* freed memory (the fake frees at once; a GPU's pool may keep it) */
    t4a_runtime gone = rt_create();
    t4a_buffer g;
    RT_OK(T->buffer_alloc(gone, 64 * MiB + 1, &g));
    uint64_t freed = rt_address(gone, g);
    RT_OK(T->runtime_destroy(gone, T4A_WAIT_FOREVER));
    s = ext_of(freed, 4096, 0, &count);
    RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EINVAL);
    RT_DETAIL("does not know");
  }
  /* bad runtime handles */
  t4a_runtime bogus = {0x1234};
  RT_EXPECT(T->buffer_wrap_external(bogus, &m, &out), T4A_EHANDLE);
  /* another device's memory (two devices: the fake always, GPUs when there) */
  int32_t ndev = 0;
  RT_OK(T->device_count(&ndev));
  if (ndev >= 2) {
    t4a_runtime other;
    RT_OK(T->runtime_create(1, NULL, &other));
    t4a_buffer om;
    RT_OK(T->buffer_alloc(other, MiB, &om));
    s = ext_of(rt_address(other, om), 4096, 0, &count);
    RT_EXPECT(T->buffer_wrap_external(rt, &s, &out), T4A_EFOREIGNDEVICE);
    RT_DETAIL("device 1's memory");
    RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  }
  ck_assert_int_eq(released(&count), 0); /* nothing refused is ever released */
  /* the runtime is still usable */
  t4a_buffer ok;
  RT_OK(T->buffer_wrap_external(rt, &m, &ok));
  unsigned char in[4096], back[4096];
  t4a_test_fill_random(in, sizeof in, t4a_test_seed());
  RT_OK(T->copy_h2d(rt, ok, 0, in, sizeof in));
  rt_sync(rt); /* the owner's stream is not ordered after rt's */
  RT_OK(T->copy_d2h(owner, back, mem, 0, sizeof back));
  ck_assert(memcmp(in, back, sizeof in) == 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  ck_assert_int_eq(released(&count), 1);
  RT_OK(T->runtime_destroy(owner, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(external_host_memory_is_reached_by_kernels) {
  t4a_runtime rt = rt_create();
  const uint64_t n = 1 << 20;
  t4a_host_buffer hb;
  void *pinned;
  RT_OK(T->host_alloc(rt, n, 0, &hb, &pinned));
  memset(pinned, 0xab, n);
  int count = 0;
  t4a_external_memory m = ext_of((uint64_t)(uintptr_t)pinned, n, -1, &count);
  m.flags = T4A_EXTERNAL_HOST;
  t4a_buffer ext;
  RT_OK(T->buffer_wrap_external(rt, &m, &ext));
  filler f = filler_load(rt);
  fill_u32(rt, &f, ext, 64, 0x12345678u, 1000);
  rt_sync(rt);
  const unsigned char *p = pinned;
  for (uint64_t i = 0; i < n; i++) {
    unsigned char want =
        i >= 64 && i < 64 + 4000 ? ((const unsigned char *)"\x78\x56\x34\x12")[i % 4] : 0xab;
    if (p[i] != want)
      ck_abort_msg("byte %llu: %02x, want %02x", (unsigned long long)i, p[i], want);
  }
  if (!rt_on_fake()) { /* the device addresses it like device memory (unified addressing) */
    t4a_buffer d;
    uint32_t back[1000];
    RT_OK(T->buffer_alloc(rt, 4000, &d));
    RT_OK(T->copy_d2d(rt, d, 0, ext, 64, 4000));
    RT_OK(T->copy_d2h(rt, back, d, 0, sizeof back));
    for (int i = 0; i < 1000; i++)
      ck_assert_uint_eq(back[i], 0x12345678u);
  }
  filler_unload(rt, &f);
  RT_OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(released(&count), 1);
  RT_OK(T->host_free(rt, hb));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- streams and events the runtime does not own --------------------------------------- */

START_TEST(consumer_stream_waits_for_a_witness) {
  t4a_runtime rt = rt_create();
  t4a__CUstream s = consumer_stream(rt);
  const uint64_t n = MiB;
  t4a_buffer x;
  RT_OK(T->buffer_alloc(rt, n, &x));
  rt_gate g;
  rt_gate_close(&g, rt);
  RT_OK(T->memset(rt, x, 0, 0x11, 1, n)); /* held behind the gate */
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  RT_OK(T->stream_wait_witness(rt, s, w)); /* returns: the host does not block */
  ck_assert_int_eq(drv.memset8(rt_address(rt, x), 0x22, n, s), 0); /* the consumer's write */
  for (int i = 0; i < 5; i++) {
    ck_assert_uint_eq(drv.stream_query(s), T4A__CUDA_ERROR_NOT_READY);
    pause_ms(10);
  }
  rt_gate_open(&g);
  ck_assert_int_eq(drv.stream_sync(s), 0);
  unsigned char *back = malloc(n);
  RT_OK(T->copy_d2h(rt, back, x, 0, n));
  for (uint64_t i = 0; i < n; i++)
    if (back[i] != 0x22)
      ck_abort_msg("byte %llu is %02x: the consumer's write ran first", (unsigned long long)i,
                   back[i]);
  /* a completed witness enqueues nothing; default stream handles are taken */
  RT_OK(T->stream_wait_witness(rt, s, w));
  ck_assert_uint_eq(drv.stream_query(s), 0);
  RT_OK(T->stream_wait_witness(rt, NULL, w));
  RT_OK(T->stream_wait_witness(rt, (void *)(uintptr_t)T4A_STREAM_LEGACY, w));
  RT_OK(T->stream_wait_witness(rt, (void *)(uintptr_t)T4A_STREAM_PER_THREAD, w));
  /* a pending witness on the legacy stream too */
  rt_gate_free(&g);
  rt_gate_close(&g, rt);
  RT_OK(T->memset(rt, x, 0, 0x33, 1, n));
  t4a_witness w2;
  RT_OK(T->seal(rt, &w2));
  RT_OK(T->stream_wait_witness(rt, NULL, w2));
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w2, T4A_WAIT_FOREVER));
  /* bad handles */
  t4a_witness bogus = {(4ull << 60) | (0xfffffull << 28) | 77}; /* no such witness */
  RT_EXPECT(T->stream_wait_witness(rt, s, bogus), T4A_EHANDLE);
  RT_EXPECT(T->stream_wait_witness((t4a_runtime){0x1234}, s, w), T4A_EHANDLE);
  RT_OK(T->witness_release(w));
  RT_OK(T->witness_release(w2));
  RT_EXPECT(T->stream_wait_witness(rt, s, w), T4A_EHANDLE); /* released */
  rt_gate_free(&g);
  consumer_stream_destroy(rt, s);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(back);
}
END_TEST

START_TEST(runtime_waits_for_a_consumer_stream_and_event) {
  t4a_runtime rt = rt_create();
  t4a__CUstream s = consumer_stream(rt);
  const uint64_t n = MiB;
  t4a_buffer x;
  RT_OK(T->buffer_alloc(rt, n, &x));
  RT_OK(T->memset(rt, x, 0, 0, 1, n));
  rt_sync(rt);
  /* the stream: everything enqueued on it so far */
  cgate g;
  cgate_close(&g, rt, s);
  ck_assert_int_eq(drv.memset8(rt_address(rt, x), 0x44, n / 2, s), 0);
  RT_OK(T->runtime_wait_stream(rt, s));
  RT_OK(T->memset(rt, x, n / 4, 0x55, 1, n / 2)); /* must follow the consumer's write */
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  for (int i = 0; i < 5; i++) {
    RT_EXPECT(T->witness_query(w), T4A_ENOTREADY);
    pause_ms(10);
  }
  cgate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  unsigned char *back = malloc(n);
  RT_OK(T->copy_d2h(rt, back, x, 0, n));
  for (uint64_t i = 0; i < n; i++) {
    unsigned char want = i < n / 4 ? 0x44 : i < 3 * n / 4 ? 0x55 : 0;
    if (back[i] != want)
      ck_abort_msg("byte %llu: %02x, want %02x", (unsigned long long)i, back[i], want);
  }
  cgate_free(&g, s);
  /* the event: its record at the time of the call */
  t4a__CUevent e;
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(drv.event_create(&e, T4A__CU_EVENT_DISABLE_TIMING), 0);
  RT_OK(T->raw_end(rt, &sec));
  RT_OK(T->runtime_wait_event(rt, e)); /* never recorded: nothing to wait for */
  rt_sync(rt);
  cgate_close(&g, rt, s);
  ck_assert_int_eq(drv.event_record(e, s), 0);
  RT_OK(T->runtime_wait_event(rt, e));
  RT_OK(T->memset(rt, x, 0, 0x66, 1, n));
  RT_OK(T->seal(rt, &w));
  for (int i = 0; i < 5; i++) {
    RT_EXPECT(T->witness_query(w), T4A_ENOTREADY);
    pause_ms(10);
  }
  cgate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  RT_OK(T->copy_d2h(rt, back, x, 0, n));
  for (uint64_t i = 0; i < n; i++)
    if (back[i] != 0x66)
      ck_assert_uint_eq(back[i], 0x66);
  cgate_free(&g, s);
  /* the default stream handles; bad input */
  RT_OK(T->runtime_wait_stream(rt, NULL));
  RT_OK(T->runtime_wait_stream(rt, (void *)(uintptr_t)T4A_STREAM_PER_THREAD));
  RT_EXPECT(T->runtime_wait_event(rt, NULL), T4A_EINVAL);
  RT_EXPECT(T->runtime_wait_event((t4a_runtime){0x1234}, e), T4A_EHANDLE);
  RT_EXPECT(T->runtime_wait_stream((t4a_runtime){0x1234}, s), T4A_EHANDLE);
  rt_sync(rt);
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(drv.event_destroy(e), 0);
  RT_OK(T->raw_end(rt, &sec));
  consumer_stream_destroy(rt, s);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(back);
}
END_TEST

/* During a capture (graph_begin) the waits for a consumer's work are
 * refused, as runtime_wait_witness is (the driver would call them an
 * isolation error and invalidate the capture); wrapping stays allowed and
 * freeing an external buffer is buffer_free, refused like any other. The
 * capture survives the refusals; afterwards every call works. */
START_TEST(a_capture_refuses_waits_for_a_consumers_work) {
  t4a_runtime rt = rt_create();
  t4a__CUstream s = consumer_stream(rt);
  t4a__CUevent e;
  t4a_raw_section sec = {.struct_size = sizeof sec};
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(drv.event_create(&e, T4A__CU_EVENT_DISABLE_TIMING), 0);
  ck_assert_int_eq(drv.event_record(e, s), 0);
  RT_OK(T->raw_end(rt, &sec));
  t4a_buffer x, ext;
  RT_OK(T->buffer_alloc(rt, 65536, &x));
  rt_sync(rt); /* a stream-ordered allocation: wrapped below */
  int count = 0;
  t4a_external_memory m = ext_of(rt_address(rt, x) + 4096, 8192, 0, &count);
  RT_OK(T->graph_begin(rt));
  RT_EXPECT(T->runtime_wait_event(rt, e), T4A_EBUSY);
  RT_DETAIL("runtime_wait_event: the runtime is capturing a graph");
  RT_DETAIL("waits for work outside the capture");
  RT_EXPECT(T->runtime_wait_stream(rt, s), T4A_EBUSY);
  RT_DETAIL("runtime_wait_stream: the runtime is capturing a graph");
  RT_EXPECT(T->runtime_wait_stream(rt, NULL), T4A_EBUSY);
  RT_OK(T->buffer_wrap_external(rt, &m, &ext)); /* no stream work: allowed */
  RT_EXPECT(T->buffer_free(rt, ext), T4A_EBUSY);
  RT_DETAIL("buffer_free: the runtime is capturing a graph");
  t4a_graph g;
  RT_OK(T->graph_end(rt, &g)); /* the refusals did not break the capture */
  t4a_graph_info gi = {.struct_size = sizeof gi};
  RT_OK(T->graph_info(rt, g, &gi));
  ck_assert_uint_eq(gi.nodes, 0); /* nothing was enqueued */
  RT_OK(T->graph_release(rt, g));
  ck_assert_int_eq(released(&count), 0);
  /* after the capture the same calls work */
  RT_OK(T->runtime_wait_event(rt, e));
  RT_OK(T->runtime_wait_stream(rt, s));
  RT_OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(released(&count), 1);
  RT_OK(T->buffer_free(rt, x));
  RT_OK(T->raw_begin(rt, &sec));
  ck_assert_int_eq(drv.event_destroy(e), 0);
  RT_OK(T->raw_end(rt, &sec));
  consumer_stream_destroy(rt, s);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* ---- DLPack ------------------------------------------------------------------------------- */

START_TEST(dlpack_export_fills_every_field) {
  t4a_runtime rt = rt_create();
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, MiB, &b));
  uint64_t base = rt_address(rt, b);
  rt_dl_deletes = 0;
  /* legacy, row-major strides filled in, element 0 at data */
  int64_t shape[2] = {3, 4};
  t4a_dlpack_export q = rt_dl_request(0, 64, RT_DL_F32, 2, shape, NULL);
  void *out = NULL;
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  shape[0] = 99; /* the tensor has its own copy */
  t4a_dl_managed_tensor *lt = out;
  ck_assert_ptr_eq(lt->dl_tensor.data, (void *)(uintptr_t)(base + 64));
  ck_assert_uint_eq(lt->dl_tensor.byte_offset, 0);
  ck_assert_int_eq(lt->dl_tensor.device.device_type, rt_dl_device()); /* host: kDLCPU */
  ck_assert_int_eq(lt->dl_tensor.device.device_id, 0);
  ck_assert_int_eq(lt->dl_tensor.ndim, 2);
  ck_assert(lt->dl_tensor.dtype.code == T4A_DL_FLOAT && lt->dl_tensor.dtype.bits == 32 &&
            lt->dl_tensor.dtype.lanes == 1);
  ck_assert(lt->dl_tensor.shape[0] == 3 && lt->dl_tensor.shape[1] == 4);
  ck_assert(lt->dl_tensor.strides[0] == 4 && lt->dl_tensor.strides[1] == 1);
  ck_assert_ptr_nonnull(lt->manager_ctx);
  ck_assert_ptr_nonnull(lt->deleter);
  ck_assert_int_eq(rt_dl_deletes, 0);
  lt->deleter(lt);
  ck_assert_int_eq(rt_dl_deletes, 1);
  ck_assert_ptr_eq(rt_dl_last_user, &rt_dl_deletes);
  /* versioned, read-only, the spec's data/byte_offset form, negative strides */
  int64_t shape3[3] = {2, 5, 7}, strides3[3] = {-35, 7, -1};
  t4a_dl_data_type c64 = {T4A_DL_COMPLEX, 64, 1};
  q = rt_dl_request(T4A_DLPACK_VERSIONED | T4A_DLPACK_READ_ONLY | T4A_DLPACK_BYTE_OFFSET,
                    (uint64_t)8 * 41, c64, 3, shape3, strides3);
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  t4a_dl_managed_tensor_versioned *vt = out;
  ck_assert_uint_eq(vt->version.major, T4A_DLPACK_MAJOR);
  ck_assert_uint_eq(vt->version.minor, T4A_DLPACK_MINOR);
  ck_assert_uint_eq(vt->flags, T4A_DL_FLAG_READ_ONLY);
  ck_assert_ptr_eq(vt->dl_tensor.data, (void *)(uintptr_t)base);
  ck_assert_uint_eq(vt->dl_tensor.byte_offset, (uint64_t)8 * 41);
  ck_assert(vt->dl_tensor.strides[0] == -35 && vt->dl_tensor.strides[1] == 7 &&
            vt->dl_tensor.strides[2] == -1);
  ck_assert(vt->dl_tensor.dtype.code == T4A_DL_COMPLEX && vt->dl_tensor.dtype.bits == 64);
  vt->deleter(vt);
  ck_assert_int_eq(rt_dl_deletes, 2);
  /* a scalar (ndim 0) and an empty tensor (data NULL, as the spec says) */
  q = rt_dl_request(T4A_DLPACK_VERSIONED, 12, RT_DL_F32, 0, NULL, NULL);
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  vt = out;
  ck_assert_ptr_eq(vt->dl_tensor.data, (void *)(uintptr_t)(base + 12));
  ck_assert_int_eq(vt->dl_tensor.ndim, 0);
  ck_assert_ptr_null(vt->dl_tensor.shape);
  ck_assert_ptr_null(vt->dl_tensor.strides);
  ck_assert_uint_eq(vt->flags, 0);
  vt->deleter(vt);
  int64_t empty[2] = {0, 5};
  q = rt_dl_request(0, MiB, RT_DL_F32, 2, empty, NULL); /* at the very end: no element */
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  lt = out;
  ck_assert_ptr_null(lt->dl_tensor.data);
  lt->deleter(lt);
  ck_assert_int_eq(rt_dl_deletes, 4);
  /* the deleter touches no runtime: after destroy, and without on_delete */
  q = rt_dl_request(0, 0, RT_DL_F32, 2, shape, NULL);
  q.on_delete = NULL;
  void *late, *late2;
  RT_OK(T->dlpack_export(rt, b, &q, &late));
  q.on_delete = rt_dl_count_delete;
  RT_OK(T->dlpack_export(rt, b, &q, &late2));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  ((t4a_dl_managed_tensor *)late)->deleter(late);
  ((t4a_dl_managed_tensor *)late2)->deleter(late2);
  ck_assert_int_eq(rt_dl_deletes, 5);
}
END_TEST

START_TEST(dlpack_export_refuses_bad_requests) {
  t4a_runtime rt = rt_create(), other = rt_create();
  t4a_buffer b, ob;
  const uint64_t n = 4096;
  RT_OK(T->buffer_alloc(rt, n, &b));
  RT_OK(T->buffer_alloc(other, n, &ob));
  rt_dl_deletes = 0;
  int64_t shape[2] = {32, 32}, neg[1] = {-1}, huge[2] = {INT64_MAX, 2}, one[1] = {1};
  static const int64_t back_strides[2] = {-32, 1}, wide_strides[2] = {INT64_MAX / 2, 1};
  void *out = (void *)1;
  t4a_dlpack_export q = rt_dl_request(0, 0, RT_DL_F32, 2, shape, NULL); /* exactly the buffer */
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  ((t4a_dl_managed_tensor *)out)->deleter(out);
  RT_EXPECT(T->dlpack_export(rt, b, &q, NULL), T4A_EINVAL);
  RT_EXPECT(T->dlpack_export(rt, b, NULL, &out), T4A_EINVAL);
  ck_assert_ptr_null(out);
#define BAD(field_edit, status)                                                                    \
  do {                                                                                             \
    t4a_dlpack_export r = q;                                                                       \
    field_edit;                                                                                    \
    out = (void *)1;                                                                               \
    RT_EXPECT(T->dlpack_export(rt, b, &r, &out), status);                                          \
    ck_assert_ptr_null(out);                                                                       \
  } while (0)
  BAD(r.struct_size = T4A_DLPACK_EXPORT_V1_1_SIZE - 8, T4A_EINVAL);
  BAD(r.flags = 0x100, T4A_EINVAL);
  BAD(r.flags = T4A_DLPACK_READ_ONLY, T4A_EINVAL); /* the legacy form has no flags */
  BAD(r.ndim = -1, T4A_EINVAL);
  BAD(r.ndim = T4A_DLPACK_MAX_NDIM + 1, T4A_EINVAL);
  BAD(r.shape = NULL, T4A_EINVAL);
  BAD((r.shape = neg, r.ndim = 1), T4A_EINVAL);
  BAD(r.dtype.bits = 0, T4A_EINVAL);
  BAD(r.dtype.lanes = 0, T4A_EINVAL);
  BAD(r.dtype = ((t4a_dl_data_type){T4A_DL_FLOAT4_E2M1FN, 4, 1}), T4A_EUNSUPPORTED);
  BAD(r.dtype.code = 99, T4A_EINVAL);
  BAD(r.offset = 4, T4A_ERANGE);     /* the last element runs past the end */
  BAD(r.offset = n + 1, T4A_ERANGE); /* even element 0 */
  BAD(r.offset = UINT64_MAX - 8, T4A_ERANGE);
  BAD((r.ndim = 1, r.shape = one, r.offset = n), T4A_ERANGE);
  BAD(r.strides = back_strides, T4A_ERANGE); /* reaches before the start */
  BAD(r.shape = huge, T4A_ERANGE);
  BAD(r.strides = wide_strides, T4A_ERANGE);
  RT_EXPECT(T->dlpack_export(rt, ob, &q, &out), T4A_EHANDLE); /* another runtime's buffer */
  RT_OK(T->buffer_free(rt, b));
  RT_EXPECT(T->dlpack_export(rt, b, &q, &out), T4A_EHANDLE); /* freed */
  ck_assert_int_eq(rt_dl_deletes, 1);                        /* only the one tensor made */
  /* a larger struct from a newer caller */
  RT_OK(T->buffer_alloc(rt, n, &b));
  struct {
    t4a_dlpack_export q;
    uint64_t future[2];
  } big = {q, {7, 7}};
  big.q.struct_size = sizeof big;
  RT_OK(T->dlpack_export(rt, b, &big.q, &out));
  ((t4a_dl_managed_tensor *)out)->deleter(out);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  ck_assert_int_eq(rt_dl_deletes, 2);
#undef BAD
}
END_TEST

START_TEST(dlpack_import_wraps_a_producers_tensor) {
  t4a_runtime producer = rt_create(), rt = rt_create();
  const uint64_t n = (uint64_t)64 * 1024;
  t4a_buffer mem;
  RT_OK(T->buffer_alloc(producer, n, &mem));
  uint64_t base = rt_address(producer, mem);
  unsigned char *ref = malloc(n), *got = malloc(n);
  t4a_test_fill_random(ref, n, t4a_test_seed());
  RT_OK(T->copy_h2d(producer, mem, 0, ref, n));
  rt_sync(producer);
  /* versioned, row-major (strides NULL), byte_offset honoured */
  rt_dl_made m;
  int64_t shape[2] = {100, 30};
  rt_dl_make(&m, base, 256, rt_dl_device(), 2, shape, NULL, RT_DL_F32);
  t4a_buffer ext;
  uint64_t off = 99;
  RT_OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, &off));
  ck_assert_uint_eq(off, 0);
  uint64_t size = 0;
  RT_OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, (uint64_t)100 * 30 * 4);
  ck_assert_uint_eq(rt_address(rt, ext), base + 256);
  RT_OK(T->copy_d2h(rt, got, ext, 0, size));
  ck_assert(memcmp(got, ref + 256, size) == 0);
  filler f = filler_load(rt); /* a t4a kernel writes the producer's memory */
  fill_u32(rt, &f, ext, 0, 0xdeadbeefu, 3000);
  for (size_t i = 0; i < 3000; i++)
    memcpy(ref + 256 + 4 * i, &(uint32_t){0xdeadbeefu}, 4);
  RT_OK(T->buffer_free(rt, ext));
  /* not before the kernel is known done (on the host the memset ran on the
   * caller's thread, the queue being idle: done, so let go at once) */
  ck_assert_int_eq(m.deleted, rt_on_host() ? 1 : 0);
  rt_sync(rt);
  ck_assert_int_eq(m.deleted, 1);
  RT_OK(T->copy_d2h(producer, got, mem, 0, n));
  ck_assert(memcmp(got, ref, n) == 0);
  /* legacy, strided with a negative stride: the span and element 0's offset */
  int64_t shape2[2] = {4, 8}, strides2[2] = {-64, 2};
  rt_dl_made l;
  rt_dl_make(&l, base + 4096, 0, rt_dl_device(), 2, shape2, strides2,
             (t4a_dl_data_type){T4A_DL_UINT, 16, 1});
  RT_OK(T->dlpack_import(rt, &l.l, 0, &ext, &off));
  ck_assert_uint_eq(off, (uint64_t)3 * 64 * 2); /* three rows below element 0 */
  RT_OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, (uint64_t)(3 * 64 + 7 * 2 + 1) * 2);
  ck_assert_uint_eq(rt_address(rt, ext), base + 4096 - off);
  RT_OK(T->copy_d2h(rt, got, ext, 0, size));
  ck_assert(memcmp(got, ref + 4096 - off, size) == 0);
  ck_assert_int_eq(l.deleted, 0);
  rt_sync(rt); /* nothing enqueued since a completed seal: released by buffer_free itself */
  RT_OK(T->buffer_free(rt, ext));
  ck_assert_int_eq(l.deleted, 1);
  /* read-only: refused unless allowed; NULL deleter accepted */
  rt_dl_make(&m, base, 0, rt_dl_device(), 2, shape, NULL, RT_DL_F32);
  m.v.flags = T4A_DL_FLAG_READ_ONLY;
  RT_EXPECT(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, NULL), T4A_EINVAL);
  RT_OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED | T4A_DLPACK_ALLOW_READ_ONLY, &ext, NULL));
  RT_OK(T->buffer_free(rt, ext));
  ck_assert_int_eq(m.deleted, 1);
  m.v.deleter = NULL;
  RT_OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED | T4A_DLPACK_ALLOW_READ_ONLY, &ext, NULL));
  RT_OK(T->buffer_free(rt, ext));
  /* a zero-size tensor wraps nothing */
  int64_t none[1] = {0};
  rt_dl_made z;
  rt_dl_make(&z, 0, 0, rt_dl_device(), 1, none, NULL, RT_DL_F32);
  RT_OK(T->dlpack_import(rt, &z.v, T4A_DLPACK_VERSIONED, &ext, NULL));
  RT_OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, 0);
  RT_OK(T->buffer_free(rt, ext));
  ck_assert_int_eq(z.deleted, 1);
  filler_unload(rt, &f);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(producer, T4A_WAIT_FOREVER));
  free(ref);
  free(got);
}
END_TEST

START_TEST(dlpack_import_refuses_and_leaves_the_tensor_to_its_owner) {
  t4a_runtime producer = rt_create(), rt = rt_create();
  t4a_buffer mem, out;
  RT_OK(T->buffer_alloc(producer, MiB, &mem));
  uint64_t base = rt_address(producer, mem);
  int64_t shape[1] = {1024};
  rt_dl_made m;
#define REFUSED(edit, flags, status)                                                               \
  do {                                                                                             \
    rt_dl_make(&m, base, 0, rt_dl_device(), 1, shape, NULL, RT_DL_F32);                            \
    edit;                                                                                          \
    out.bits = 7;                                                                                  \
    RT_EXPECT(T->dlpack_import(rt, &m.v, (flags), &out, NULL), status);                            \
    ck_assert_uint_eq(out.bits, 0);                                                                \
    ck_assert_int_eq(m.deleted, 0);                                                                \
  } while (0)
  REFUSED(m.v.version.major = 2, T4A_DLPACK_VERSIONED, T4A_EUNSUPPORTED);
  /* a device of another kind: the CPU's on CUDA, a GPU's on the host */
  REFUSED(m.v.dl_tensor.device.device_type = rt_on_host() ? T4A_DL_CUDA : T4A_DL_CPU,
          T4A_DLPACK_VERSIONED, T4A_EUNSUPPORTED);
  REFUSED(m.v.dl_tensor.device.device_type = T4A_DL_CUDA_MANAGED, T4A_DLPACK_VERSIONED,
          T4A_EUNSUPPORTED);
  if (!rt_on_host()) /* another GPU (the host backend's one device takes its CPU's memory) */
    REFUSED(m.v.dl_tensor.device.device_id = 1, T4A_DLPACK_VERSIONED, T4A_EFOREIGNDEVICE);
  REFUSED(m.v.dl_tensor.data = NULL, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  REFUSED(m.v.dl_tensor.ndim = -3, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  REFUSED(m.v.dl_tensor.shape[0] = -5, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  REFUSED(m.v.dl_tensor.dtype.bits = 6, T4A_DLPACK_VERSIONED, T4A_EUNSUPPORTED);
  REFUSED(m.v.dl_tensor.byte_offset = UINT64_MAX - 16, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  REFUSED((void)0, 0x40, T4A_EINVAL); /* unknown flags */
  if (rt_on_fake()) /* past the allocation (exact ranges: see external_buffer_serves...) */
    REFUSED(m.v.dl_tensor.shape[0] = 1ll << 40, T4A_DLPACK_VERSIONED, T4A_ERANGE);
  uint64_t local[16];
  if (!rt_on_host()) /* host memory is no CUDA device's (it is the host backend's) */
    REFUSED(m.v.dl_tensor.data = local, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  RT_EXPECT(T->dlpack_import(rt, NULL, 0, &out, NULL), T4A_EINVAL);
  RT_EXPECT(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, NULL, NULL), T4A_EINVAL);
  RT_EXPECT(T->dlpack_import((t4a_runtime){0x1234}, &m.v, T4A_DLPACK_VERSIONED, &out, NULL),
            T4A_EHANDLE);
  ck_assert_int_eq(m.deleted, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(producer, T4A_WAIT_FOREVER));
#undef REFUSED
}
END_TEST

START_TEST(dlpack_round_trip_between_runtimes) {
  t4a_runtime a = rt_create(), b = rt_create();
  const uint64_t n = (uint64_t)256 * 1024;
  t4a_buffer x;
  RT_OK(T->buffer_alloc(a, n, &x));
  unsigned char *ref = malloc(n), *got = malloc(n);
  t4a_test_fill_random(ref, n, t4a_test_seed());
  RT_OK(T->copy_h2d(a, x, 0, ref, n));
  rt_dl_deletes = 0;
  for (int versioned = 0; versioned < 2; versioned++) {
    int64_t shape[2] = {256, 256};
    t4a_dlpack_export q =
        rt_dl_request(versioned ? T4A_DLPACK_VERSIONED : 0, 0, RT_DL_F32, 2, shape, NULL);
    void *tensor;
    RT_OK(T->dlpack_export(a, x, &q, &tensor));
    t4a_witness w;
    RT_OK(T->seal(a, &w)); /* b's work follows a's: the DLPack stream protocol, in C */
    if (rt_on_host()) {    /* no CUstreams: the runtime waits */
      RT_OK(T->runtime_wait_witness(b, w));
    } else {
      t4a_raw_runtime raw = {.struct_size = sizeof raw};
      RT_OK(T->raw_runtime(b, &raw));
      RT_OK(T->stream_wait_witness(a, raw.stream, w));
    }
    RT_OK(T->witness_release(w));
    t4a_buffer y;
    RT_OK(T->dlpack_import(b, tensor, versioned ? T4A_DLPACK_VERSIONED : 0, &y, NULL));
    RT_OK(T->copy_d2h(b, got, y, 0, n));
    ck_assert(memcmp(got, ref, n) == 0);
    RT_OK(T->memset(b, y, 0, 0x77, 1, 1000));
    memset(ref, 0x77, 1000);
    RT_OK(T->buffer_free(b, y)); /* the export's deleter, once b's memset completed */
    rt_sync(b);
    ck_assert_int_eq(rt_dl_deletes, versioned + 1);
    RT_OK(T->copy_d2h(a, got, x, 0, n));
    ck_assert(memcmp(got, ref, n) == 0);
  }
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  ck_assert_int_eq(rt_dl_deletes, 2);
  free(ref);
  free(got);
}
END_TEST

/* ---- failures (the fake driver's fault injection) ------------------------------------------- */
/* Issue #26: a host range with a page that is not page-locked between two
 * registrations was accepted (only its first and last byte were asked);
 * the first kernel touching the hole faulted the device for every runtime
 * on it. The whole range is checked now: refused with T4A_ERANGE, and the
 * device stays healthy. */
START_TEST(external_host_range_with_a_hole_is_refused) {
  t4a_runtime rt = rt_create();
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  unsigned char *p = aligned_alloc(page, 4 * page);
  ck_assert_ptr_nonnull(p);
  memset(p, 0x5c, 4 * page);
  t4a_host_buffer first, last;
  RT_OK(T->host_register(rt, p, page, 0, &first));               /* page 0 */
  RT_OK(T->host_register(rt, p + 2 * page, 2 * page, 0, &last)); /* pages 2 and 3; 1 is a hole */
  int count = 0;
  t4a_buffer out = {0};
  t4a_external_memory m = ext_of((uint64_t)(uintptr_t)p, 4 * page, -1, &count);
  m.flags = T4A_EXTERNAL_HOST;
  RT_EXPECT(T->buffer_wrap_external(rt, &m, &out), T4A_ERANGE); /* both ends are pinned */
  RT_DETAIL("not page-locked throughout");
  ck_assert_uint_eq(out.bits, 0);
  m.bytes = 2 * page; /* from page 0 into the hole */
  RT_EXPECT(T->buffer_wrap_external(rt, &m, &out), T4A_ERANGE);
  m.address = (uint64_t)(uintptr_t)(p + page - 8); /* 8 pinned bytes, then the hole */
  m.bytes = 16;
  RT_EXPECT(T->buffer_wrap_external(rt, &m, &out), T4A_ERANGE);
  m.address = (uint64_t)(uintptr_t)(p + page + 8); /* starts in the hole */
  m.bytes = 2 * page;
  RT_EXPECT(T->buffer_wrap_external(rt, &m, &out), T4A_EINVAL);
  ck_assert_int_eq(released(&count), 0);
  /* what is pinned throughout is wrapped, and a kernel writes it all */
  m.address = (uint64_t)(uintptr_t)(p + 2 * page);
  m.bytes = 2 * page;
  t4a_buffer ok;
  RT_OK(T->buffer_wrap_external(rt, &m, &ok));
  filler f = filler_load(rt);
  fill_u32(rt, &f, ok, 0, 0x0badf00du, 2 * page / 4);
  rt_sync(rt); /* no device fault */
  for (uint64_t i = 0; i < 4 * page; i++) {
    unsigned char want = i >= 2 * page ? ((const unsigned char *)"\x0d\xf0\xad\x0b")[i % 4] : 0x5c;
    ck_assert_msg(p[i] == want, "byte %llu: %02x, want %02x", (unsigned long long)i, p[i], want);
  }
  filler_unload(rt, &f);
  RT_OK(T->buffer_free(rt, ok));
  rt_sync(rt);
  ck_assert_int_eq(released(&count), 1);
  RT_OK(T->host_unregister(rt, first));
  RT_OK(T->host_unregister(rt, last));
  /* the runtime and the device are healthy: a new runtime works too */
  t4a_runtime again = rt_create();
  t4a_buffer d;
  unsigned char in[256], back[256];
  t4a_test_fill_random(in, sizeof in, t4a_test_seed());
  RT_OK(T->buffer_alloc(again, sizeof in, &d));
  RT_OK(T->copy_h2d(again, d, 0, in, sizeof in));
  RT_OK(T->copy_d2h(again, back, d, 0, sizeof back));
  ck_assert(memcmp(in, back, sizeof in) == 0);
  RT_OK(T->runtime_destroy(again, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(p);
}
END_TEST

/* Issue #26: host memory registered T4A_HOST_REGISTER_READ_ONLY could be
 * wrapped as a writable buffer, and a kernel then wrote it. Refused in every
 * runtime (and through DLPack) until the memory is unpinned. */
START_TEST(read_only_registration_is_never_wrapped) {
  t4a_runtime rt = rt_create(), other = rt_create();
  const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  unsigned char *p = aligned_alloc(page, 2 * page);
  ck_assert_ptr_nonnull(p);
  memset(p, 0x77, 2 * page);
  t4a_host_buffer ro;
  RT_OK(T->host_register(rt, p, 2 * page, T4A_HOST_REGISTER_READ_ONLY, &ro));
  int count = 0;
  t4a_buffer out = {0};
  t4a_external_memory m = ext_of((uint64_t)(uintptr_t)p, 2 * page, -1, &count);
  m.flags = T4A_EXTERNAL_HOST;
  RT_EXPECT(T->buffer_wrap_external(rt, &m, &out), T4A_EINVAL);
  RT_DETAIL("read-only");
  RT_EXPECT(T->buffer_wrap_external(other, &m, &out), T4A_EINVAL); /* any runtime */
  RT_DETAIL("read-only");
  m.address += page + 100; /* any part of it */
  m.bytes = 8;
  RT_EXPECT(T->buffer_wrap_external(other, &m, &out), T4A_EINVAL);
  RT_DETAIL("read-only");
  rt_dl_made t; /* a DLPack tensor of page-locked host memory over it */
  int64_t shape[1] = {(int64_t)page};
  rt_dl_make(&t, (uint64_t)(uintptr_t)p, 0, rt_dl_device(), 1, shape, NULL,
             (t4a_dl_data_type){T4A_DL_UINT, 8, 1});
  t.v.dl_tensor.device.device_type = T4A_DL_CUDA_HOST;
  RT_EXPECT(T->dlpack_import(other, &t.v, T4A_DLPACK_VERSIONED, &out, NULL), T4A_EINVAL);
  RT_DETAIL("read-only");
  ck_assert_int_eq(t.deleted, 0);
  ck_assert_int_eq(released(&count), 0);
  for (uint64_t i = 0; i < 2 * page; i++)
    ck_assert_uint_eq(p[i], 0x77);
  /* unpinned, then registered writable: wrapped and written */
  RT_OK(T->host_unregister(rt, ro));
  rt_sync(rt);
  t4a_host_buffer rw;
  RT_OK(T->host_register(other, p, 2 * page, 0, &rw));
  m = ext_of((uint64_t)(uintptr_t)p, 2 * page, -1, &count);
  m.flags = T4A_EXTERNAL_HOST;
  t4a_buffer ok;
  RT_OK(T->buffer_wrap_external(rt, &m, &ok));
  filler f = filler_load(rt);
  fill_u32(rt, &f, ok, 0, 0x33333333u, 2 * page / 4);
  rt_sync(rt);
  filler_unload(rt, &f);
  for (uint64_t i = 0; i < 2 * page; i++)
    ck_assert_uint_eq(p[i], 0x33);
  RT_OK(T->buffer_free(rt, ok));
  rt_sync(rt);
  ck_assert_int_eq(released(&count), 1);
  RT_OK(T->host_unregister(other, rw));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(p);
}
END_TEST

/* Issue #26: copy_d2d, copy_2d_d2d and copy_from_runtime compared handles,
 * not memory: the same bytes under a second handle (a wrap of an own
 * buffer) overlapped unchecked (ASan: memcpy-param-overlap in the fake's
 * DMA). Compared by address now. */
START_TEST(overlap_is_by_address_not_by_handle) {
  t4a_runtime rt = rt_create(), other = rt_create();
  const uint64_t n = 4096;
  t4a_buffer x;
  RT_OK(T->buffer_alloc(rt, n, &x));
  unsigned char *ref = malloc(n), *got = malloc(n);
  t4a_test_fill_random(ref, n, t4a_test_seed());
  RT_OK(T->copy_h2d(rt, x, 0, ref, n));
  rt_sync(rt);
  uint64_t base = rt_address(rt, x);
  t4a_external_memory m = ext_of(base, n, 0, NULL);
  t4a_buffer w, wo; /* x's memory under a second handle, in rt and in other */
  RT_OK(T->buffer_wrap_external(rt, &m, &w));
  RT_OK(T->buffer_wrap_external(other, &m, &wo));
  RT_EXPECT(T->copy_d2d(rt, w, 0, x, 99, 100), T4A_EINVAL);
  RT_DETAIL("overlap");
  RT_EXPECT(T->copy_d2d(rt, x, 0, w, 99, 100), T4A_EINVAL); /* one byte in common */
  RT_EXPECT(T->copy_d2d(rt, w, 500, x, 500, 1), T4A_EINVAL);
  t4a_copy_2d g = {.struct_size = sizeof g,
                   .dst_offset = 0,
                   .dst_pitch = 256,
                   .src_offset = 255,
                   .src_pitch = 256,
                   .width = 16,
                   .rows = 4};
  RT_EXPECT(T->copy_2d_d2d(rt, w, x, &g), T4A_EINVAL); /* spans overlap */
  RT_DETAIL("overlap");
  RT_EXPECT(T->copy_from_runtime(other, wo, 1000, rt, x, 900, 101), T4A_EINVAL);
  RT_DETAIL("overlap");
  rt_sync(rt);
  RT_OK(T->copy_d2h(rt, got, x, 0, n));
  ck_assert(memcmp(got, ref, n) == 0); /* nothing was written */
  /* adjacent ranges do not overlap, and copy */
  RT_OK(T->copy_d2d(rt, w, 0, x, 100, 100));
  memcpy(ref, ref + 100, 100);
  g.src_offset = 2048; /* spans [2048, 2832) and [0, 784) */
  RT_OK(T->copy_2d_d2d(rt, w, x, &g));
  for (int r = 0; r < 4; r++)
    memcpy(ref + (size_t)r * 256, ref + 2048 + (size_t)r * 256, 16);
  rt_sync(rt);
  RT_OK(T->copy_from_runtime(other, wo, 3000, rt, x, 2000, 1000));
  memcpy(ref + 3000, ref + 2000, 1000);
  rt_sync(other);
  RT_OK(T->copy_d2h(rt, got, x, 0, n));
  ck_assert(memcmp(got, ref, n) == 0);
  RT_OK(T->buffer_free(other, wo));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  RT_OK(T->buffer_free(rt, w));
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  free(ref);
  free(got);
}
END_TEST

/* Issue #26: the row-major element count was overflow-checked even with
 * explicit strides, so a stride-0 broadcast (every element on one) was
 * refused; and an empty tensor's wrapped product leaked into its exported
 * strides. The span of the strides used is what must fit now. */
START_TEST(dlpack_strides_decide_the_span) {
  t4a_runtime rt = rt_create(), producer = rt_create();
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, 64, &b));
  uint64_t base = rt_address(rt, b);
  rt_dl_deletes = 0;
  int64_t huge[2] = {(int64_t)1 << 32, (int64_t)1 << 32}, zero[2] = {0, 0};
  t4a_dlpack_export q = rt_dl_request(T4A_DLPACK_VERSIONED, 60, RT_DL_F32, 2, huge, zero);
  void *out = NULL;
  RT_OK(T->dlpack_export(rt, b, &q, &out)); /* one element, bytes 60..63 */
  t4a_dl_managed_tensor_versioned *vt = out;
  ck_assert_ptr_eq(vt->dl_tensor.data, (void *)(uintptr_t)(base + 60));
  ck_assert(vt->dl_tensor.strides[0] == 0 && vt->dl_tensor.strides[1] == 0);
  vt->deleter(vt);
  q.offset = 61; /* its one element past the end */
  RT_EXPECT(T->dlpack_export(rt, b, &q, &out), T4A_ERANGE);
  q = rt_dl_request(T4A_DLPACK_VERSIONED, 0, RT_DL_F32, 2, huge, NULL); /* compact: 2^64 elements */
  RT_EXPECT(T->dlpack_export(rt, b, &q, &out), T4A_ERANGE);
  /* an empty tensor whose compact strides would wrap: 0, never a wrapped product */
  int64_t empty[3] = {0, 3, (int64_t)1 << 62};
  q = rt_dl_request(0, 0, RT_DL_F32, 3, empty, NULL);
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  t4a_dl_managed_tensor *lt = out;
  ck_assert_ptr_null(lt->dl_tensor.data);
  ck_assert_msg(lt->dl_tensor.strides[0] == 0 && lt->dl_tensor.strides[1] == (int64_t)1 << 62 &&
                    lt->dl_tensor.strides[2] == 1,
                "strides %lld %lld %lld", (long long)lt->dl_tensor.strides[0],
                (long long)lt->dl_tensor.strides[1], (long long)lt->dl_tensor.strides[2]);
  lt->deleter(lt);
  ck_assert_int_eq(rt_dl_deletes, 2);
  /* import: a producer's broadcast tensor wraps the one element it spans */
  t4a_buffer mem, ext;
  RT_OK(T->buffer_alloc(producer, 4096, &mem));
  rt_dl_made m;
  rt_dl_make(&m, rt_address(producer, mem) + 128, 0, rt_dl_device(), 2, huge, zero, RT_DL_F32);
  uint64_t off = 7, size = 0;
  RT_OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, &off));
  RT_OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, 4);
  ck_assert_uint_eq(off, 0);
  ck_assert_uint_eq(rt_address(rt, ext), rt_address(producer, mem) + 128);
  RT_OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(m.deleted, 1);
  rt_dl_make(&m, rt_address(producer, mem), 0, rt_dl_device(), 2, huge, NULL,
             RT_DL_F32); /* compact: refused */
  RT_EXPECT(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, &off), T4A_ERANGE);
  ck_assert_int_eq(m.deleted, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(producer, T4A_WAIT_FOREVER));
}
END_TEST

#if defined(T4A_TEST_FAKE)

static void (*fake_fail)(const char *, uint64_t, unsigned);
static uint64_t (*fake_calls)(const char *);

static void fake_open(void) {
  void *h = dlopen(getenv("T4A_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(h);
  *(void **)&fake_fail = dlsym(h, "fake_cuda_fail");
  *(void **)&fake_calls = dlsym(h, "fake_cuda_calls");
  ck_assert(fake_fail && fake_calls);
}

START_TEST(failed_driver_calls_are_typed_and_undone) {
  fake_open();
  t4a_runtime owner = rt_create(), rt = rt_create();
  t4a_buffer mem, out;
  RT_OK(T->buffer_alloc(owner, MiB, &mem));
  int count = 0;
  t4a_external_memory m = ext_of(rt_address(owner, mem), MiB, 0, &count);
  fake_fail("cuPointerGetAttributes", 1, 999);
  RT_EXPECT(T->buffer_wrap_external(rt, &m, &out), T4A_EDRIVER);
  RT_DETAIL("CUDA_ERROR_UNKNOWN");
  RT_OK(T->buffer_wrap_external(rt, &m, &out)); /* usable */
  /* the driver refuses an attribute (INVALID_VALUE): asked one by one, still vouched for */
  int c2 = 0;
  t4a_external_memory m2 = ext_of(m.address, 4096, 0, &c2);
  t4a_buffer again;
  uint64_t before = fake_calls("cuPointerGetAttributes");
  fake_fail("cuPointerGetAttributes", 1, 1);
  RT_OK(T->buffer_wrap_external(rt, &m2, &again));
  /* the refused query, the type, the four others */
  ck_assert_uint_eq(fake_calls("cuPointerGetAttributes") - before, 6);
  RT_OK(T->buffer_free(rt, again));
  ck_assert_int_eq(released(&c2), 1);
  t4a_runtime other;
  RT_OK(T->runtime_create(1, NULL, &other)); /* and a foreign device is still seen */
  t4a_buffer om;
  RT_OK(T->buffer_alloc(other, 4096, &om));
  m2.address = rt_address(other, om);
  fake_fail("cuPointerGetAttributes", 1, 1);
  RT_EXPECT(T->buffer_wrap_external(rt, &m2, &again), T4A_EFOREIGNDEVICE);
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
  t4a__CUstream s = consumer_stream(rt);
  fake_fail("cuEventRecord", 1, 999);
  RT_EXPECT(T->runtime_wait_stream(rt, s), T4A_EDRIVER);
  fake_fail("cuStreamWaitEvent", 1, 999);
  RT_EXPECT(T->runtime_wait_stream(rt, s), T4A_EDRIVER);
  RT_OK(T->runtime_wait_stream(rt, s));
  rt_gate g;
  rt_gate_close(&g, rt);
  t4a_witness w;
  RT_OK(T->memset(rt, out, 0, 1, 1, 64));
  RT_OK(T->seal(rt, &w));
  fake_fail("cuStreamWaitEvent", 1, 999);
  RT_EXPECT(T->stream_wait_witness(rt, s, w), T4A_EDRIVER);
  RT_OK(T->stream_wait_witness(rt, s, w));
  rt_gate_open(&g);
  RT_OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  RT_OK(T->witness_release(w));
  rt_gate_free(&g);
  consumer_stream_destroy(rt, s);
  RT_OK(T->buffer_free(rt, out));
  rt_sync(rt);
  ck_assert_int_eq(released(&count), 1);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(owner, T4A_WAIT_FOREVER));
}
END_TEST

/* After a device fault the memory is quarantined: the release never runs. */
START_TEST(after_a_fault_external_memory_is_never_released) {
  t4a_runtime owner = rt_create(), rt = rt_create();
  t4a_buffer mem, ext, ext2;
  RT_OK(T->buffer_alloc(owner, MiB, &mem));
  rt_sync(owner);
  int count = 0;
  t4a_external_memory m = ext_of(rt_address(owner, mem), 4096, 0, &count);
  RT_OK(T->buffer_wrap_external(rt, &m, &ext));
  m.address += 4096;
  RT_OK(T->buffer_wrap_external(rt, &m, &ext2));
  rt_gate g;
  rt_gate_close(&g, rt); /* nothing faults before the gate opens */
  RT_OK(T->memset(rt, ext, 0, 1, 1, 4096));
  rt_raw_launch(rt, &g.module, "t4a_fault", NULL); /* the gate's module: no load behind it */
  RT_OK(T->buffer_free(rt, ext));                  /* queued behind the faulting work */
  t4a_witness w;
  RT_OK(T->seal(rt, &w));
  rt_gate_open(&g);
  RT_EXPECT(T->witness_wait(w, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  RT_EXPECT(T->runtime_destroy(rt, T4A_WAIT_FOREVER), T4A_EDEVICEFAULT);
  ck_assert_int_eq(released(&count), 0); /* neither the freed nor the live one */
  RT_OK(T->witness_release(w));
  T->runtime_destroy(owner, T4A_WAIT_FOREVER); /* the same device: faulted too */
  ck_assert_int_eq(released(&count), 0);
}
END_TEST
#endif /* T4A_TEST_FAKE */

int main(void) {
  Suite *s = rt_suite("interop");
  TCase *tc = rt_tcase(s, "interop", 120);
  tcase_add_test(tc, external_buffer_serves_copies_memset_and_launches);
  tcase_add_test(tc, release_waits_for_the_last_use);
  tcase_add_test(tc, release_at_free_destroy_or_never_twice);
  tcase_add_test(tc, external_memory_refused_with_the_reason);
  tcase_add_test(tc, external_host_memory_is_reached_by_kernels);
  RT_CUDA_ONLY(tc, external_host_range_with_a_hole_is_refused,
               "page-locked ranges the driver reports; on the host backend every page of the "
               "process is host memory, with no hole to find");
  tcase_add_test(tc, read_only_registration_is_never_wrapped);
  tcase_add_test(tc, overlap_is_by_address_not_by_handle);
  tcase_add_test(tc, dlpack_strides_decide_the_span);
  RT_CUDA_ONLY(tc, consumer_stream_waits_for_a_witness,
               "a consumer's CUstream; the host's stream_wait_witness is NULL");
  RT_CUDA_ONLY(tc, runtime_waits_for_a_consumer_stream_and_event,
               "a consumer's CUstream and CUevent; the host's runtime_wait_stream and "
               "runtime_wait_event are NULL");
  RT_CUDA_ONLY(tc, a_capture_refuses_waits_for_a_consumers_work,
               "waits for a consumer's CUstream and CUevent (NULL slots on the host)");
  tcase_add_test(tc, dlpack_export_fills_every_field);
  tcase_add_test(tc, dlpack_export_refuses_bad_requests);
  tcase_add_test(tc, dlpack_import_wraps_a_producers_tensor);
  tcase_add_test(tc, dlpack_import_refuses_and_leaves_the_tensor_to_its_owner);
  tcase_add_test(tc, dlpack_round_trip_between_runtimes);
#if defined(T4A_TEST_FAKE)
  TCase *tf = rt_tcase(s, "fake-only", 120);
  tcase_add_test(tf, failed_driver_calls_are_typed_and_undone);
  tcase_add_test(tf, after_a_fault_external_memory_is_never_released); /* faults on purpose */
#endif
  return rt_run(s, 1);
}
