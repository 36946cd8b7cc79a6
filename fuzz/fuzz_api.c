/* fuzz/fuzz_api.c -- a libFuzzer target driving random sequences of v1 table
 * calls against the fake driver.
 *
 * Each input is a program: one byte picks an operation, the next bytes its
 * arguments. Handles come from small pools holding valid objects, stale ones
 * (freed or destroyed), another runtime's, forged bit patterns and null.
 * Sizes and offsets are drawn to hit zero, odd values, bounds and overflow.
 * Every status must be one of the list (else abort: a finding). Each input
 * ends by releasing what it created, so inputs stay independent.
 *
 * Built by .ci/fuzz with -fsanitize=fuzzer; the committed corpus
 * (fuzz/corpus) and regressions (fuzz/regressions) are replayed under make
 * check by tests/cpu/test_fuzz_replay. Environment: T4A_FUZZ_PLUGIN (the
 * plugin file) and T4A_CUDA_LIBRARY (the fake driver). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t4a/gpu_loader.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const t4a_gpu_backend_v1 *T;

static const char ptx[] =
    "//\n.version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry t4a_empty()\n{\n  ret;\n}\n"
    ".visible .entry t4a_fill_u32(.param .u64 p, .param .u32 v, .param .u64 n)\n{\n  ret;\n}\n";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *plugin = getenv("T4A_FUZZ_PLUGIN");
  t4a_gpu_backend *b = NULL;
  if (!plugin || t4a_gpu_open_path(plugin, &b) != T4A_OK) {
    fprintf(stderr,
            "fuzz_api: set T4A_FUZZ_PLUGIN to libt4a_cuda.so and T4A_CUDA_LIBRARY to "
            "the fake driver (%s)\n",
            t4a_gpu_last_error());
    abort();
  }
  T = t4a_gpu_backend_table(b);
  if (T->init() != T4A_OK) {
    fprintf(stderr, "fuzz_api: init failed\n");
    abort();
  }
  return 0;
}

/* ---- input decoding ------------------------------------------------------- */

typedef struct input {
  const uint8_t *p;
  size_t n;
} input;

static uint8_t u8(input *in) {
  if (!in->n)
    return 0;
  in->n--;
  return *in->p++;
}

static uint64_t u64(input *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | u8(in);
  return v;
}

/* A size or offset: small, odd, around powers of two, or huge. */
static uint64_t amount(input *in) {
  uint8_t k = u8(in);
  switch (k % 8) {
  case 0: return 0;
  case 1: return u8(in);
  case 2: return (uint64_t)u8(in) * 1021u + 3u;
  case 3: return 1ull << (u8(in) % 21);
  case 4: return (1ull << (u8(in) % 21)) + 1u;
  case 5: return UINT64_MAX - u8(in);
  case 6: return 1ull << (40 + u8(in) % 24);
  default: return u64(in);
  }
}

/* ---- handle pools ------------------------------------------------------------ */

#define POOL 4
typedef struct pools {
  t4a_runtime rt[POOL];
  t4a_buffer buf[POOL];
  t4a_host_buffer host[POOL];
  t4a_witness wit[POOL];
  t4a_artifact art[POOL];
  t4a_module mod[POOL];
  t4a_function fn[POOL];
  void *host_ptr[POOL];
  uint64_t host_size[POOL];
  /* everything created by this input, released at its end */
  t4a_runtime made_rt[64];
  t4a_witness made_wit[64];
  t4a_artifact made_art[64];
  unsigned n_rt, n_wit, n_art;
} pools;

#define KEEP(P, kind, h)                                                                           \
  do {                                                                                             \
    if ((h).bits && (P)->n_##kind < 64)                                                            \
      (P)->made_##kind[(P)->n_##kind++] = (h);                                                     \
  } while (0)

/* A handle value from a pool slot, or a forged/null one. */
static uint64_t pick(input *in, const uint64_t *slots) {
  uint8_t k = u8(in);
  if (k < 200)
    return slots[k % POOL];
  if (k < 230)
    return u64(in); /* forged */
  return 0;         /* null */
}

/* Every byte is consumed in order: a call's arguments are picked into
 * locals first, since C leaves the order of argument evaluation open (an
 * input must decode the same under gcc and clang). */
#define PICK(in, arr) pick((in), (const uint64_t *)(arr))
#define RT(in) ((t4a_runtime){PICK((in), P->rt)})
#define BUF(in) ((t4a_buffer){PICK((in), P->buf)})

static void check(int rc) {
  if (rc > 0 || rc < T4A_EINTERNAL) {
    fprintf(stderr, "fuzz_api: status %d outside the list\n", rc);
    abort();
  }
}

static char scratch[1 << 20]; /* host memory for pageable copies */

static void step(input *in, pools *P) {
  uint8_t op = u8(in) % 32, slot = u8(in) % POOL;
  switch (op) {
  case 0: {
    t4a_runtime_options o = {.struct_size = sizeof o};
    uint8_t v = u8(in);
    if (v & 1)
      o.struct_size = u8(in);
    if (v & 2)
      o.flags = u8(in);
    o.staging_bytes = (v & 4) ? amount(in) : 65536u;
    check(T->runtime_create((int32_t)(u8(in) % 3) - (v & 8 ? 1 : 0), &o, &P->rt[slot]));
    KEEP(P, rt, P->rt[slot]);
    break;
  }
  case 1: check(T->runtime_destroy(RT(in), T4A_WAIT_FOREVER)); break;
  case 2: {
    uint64_t n = amount(in) % (4u << 20);
    if (u8(in) == 7)
      n = amount(in);
    check(T->buffer_alloc(RT(in), n, &P->buf[slot]));
    break;
  }
  case 3: {
    t4a_runtime rt = RT(in);
    check(T->buffer_free(rt, BUF(in)));
    break;
  }
  case 4: {
    uint64_t n;
    t4a_runtime rt = RT(in);
    check(T->buffer_size(rt, BUF(in), &n));
    break;
  }
  case 5: {
    uint64_t off = amount(in), n = amount(in) % sizeof scratch;
    t4a_runtime rt = RT(in);
    t4a_buffer b = BUF(in);
    check(T->copy_h2d(rt, b, off, u8(in) == 1 ? NULL : scratch, n));
    break;
  }
  case 6: {
    uint64_t off = amount(in), n = amount(in) % sizeof scratch;
    t4a_runtime rt = RT(in);
    void *host = u8(in) == 1 ? NULL : scratch;
    check(T->copy_d2h(rt, host, BUF(in), off, n));
    break;
  }
  case 7: {
    uint64_t d = amount(in), s = amount(in), n = amount(in);
    t4a_runtime rt = RT(in);
    t4a_buffer db = BUF(in);
    check(T->copy_d2d(rt, db, d, BUF(in), s, n));
    break;
  }
  case 8: {
    uint64_t n = amount(in) % (2u << 20);
    t4a_runtime rt = RT(in);
    uint32_t flags = u8(in) & 3;
    if (T->host_alloc(rt, n, flags, &P->host[slot], &P->host_ptr[slot]) == T4A_OK)
      P->host_size[slot] = n;
    break;
  }
  case 9: {
    t4a_runtime rt = RT(in);
    check(T->host_free(rt, (t4a_host_buffer){PICK(in, P->host)}));
    break;
  }
  case 10: {
    uint64_t a = amount(in), b = amount(in), n = amount(in);
    t4a_runtime rt = RT(in);
    t4a_buffer d = BUF(in);
    check(T->copy_h2d_pinned(rt, d, a, (t4a_host_buffer){PICK(in, P->host)}, b, n));
    break;
  }
  case 11: {
    uint64_t a = amount(in), b = amount(in), n = amount(in);
    t4a_runtime rt = RT(in);
    t4a_host_buffer h = {PICK(in, P->host)};
    check(T->copy_d2h_pinned(rt, h, a, BUF(in), b, n));
    break;
  }
  case 12:
    check(T->seal(RT(in), &P->wit[slot]));
    KEEP(P, wit, P->wit[slot]);
    break;
  case 13: check(T->witness_query((t4a_witness){PICK(in, P->wit)})); break;
  case 14: {
    t4a_witness w = {PICK(in, P->wit)};
    check(T->witness_wait(w, u8(in) & 1 ? T4A_WAIT_FOREVER : 100000));
    break;
  }
  case 15: {
    t4a_witness w = {PICK(in, P->wit)};
    if (T->witness_retain(w) == T4A_OK)
      KEEP(P, wit, w);
    break;
  }
  case 16: check(T->witness_release((t4a_witness){PICK(in, P->wit)})); break;
  case 17: {
    t4a_runtime rt = RT(in);
    check(T->runtime_wait_witness(rt, (t4a_witness){PICK(in, P->wit)}));
    break;
  }
  case 18: {
    t4a_runtime rt = RT(in);
    check(T->cache_trim(rt, amount(in)));
    break;
  }
  case 19: {
    t4a_runtime_counters c = {.struct_size = u8(in) & 1 ? 8u : (uint32_t)sizeof c};
    check(T->runtime_counters(RT(in), &c));
    break;
  }
  case 20:
  case 21: {
    uint64_t d = amount(in), s = amount(in), n = amount(in) % (1u << 20);
    int (*copy)(t4a_runtime, t4a_buffer, uint64_t, t4a_runtime, t4a_buffer, uint64_t, uint64_t) =
        op == 20     ? T->copy_from_runtime
        : u8(in) & 1 ? T->copy_from_peer
                     : T->copy_from_peer_via_host;
    t4a_runtime dr = RT(in);
    t4a_buffer db = BUF(in);
    t4a_runtime sr = RT(in);
    check(copy(dr, db, d, sr, BUF(in), s, n));
    break;
  }
  case 22: {
    uint8_t k = u8(in);
    uint8_t junk[64];
    for (size_t i = 0; i < sizeof junk; i++)
      junk[i] = u8(in);
    const void *bytes = k & 1 ? (const void *)ptx : (const void *)junk;
    uint64_t n = k & 1 ? sizeof ptx - 1 : sizeof junk;
    check(T->artifact_from_bytes((t4a_artifact_kind)(k % 5), k & 2 ? bytes : NULL, n, "fuzz",
                                 &P->art[slot]));
    KEEP(P, art, P->art[slot]);
    break;
  }
  case 23: check(T->artifact_release((t4a_artifact){PICK(in, P->art)})); break;
  case 24: {
    t4a_runtime rt = RT(in);
    check(T->module_load(rt, (t4a_artifact){PICK(in, P->art)}, &P->mod[slot]));
    break;
  }
  case 25: {
    t4a_runtime rt = RT(in);
    check(T->module_unload(rt, (t4a_module){PICK(in, P->mod)}));
    break;
  }
  case 26: {
    static const char *const names[] = {"t4a_empty", "t4a_fill_u32", "nope", ""};
    t4a_runtime rt = RT(in);
    t4a_module m = {PICK(in, P->mod)};
    check(T->function_get(rt, m, names[u8(in) % 4], &P->fn[slot]));
    break;
  }
  case 27: { /* launches only the empty kernel: no argument is ever a forged pointer */
    t4a_runtime rt = RT(in);
    t4a_function f;
    t4a_module m = {PICK(in, P->mod)};
    if (T->function_get(rt, m, "t4a_empty", &f) != T4A_OK)
      break;
    void *raw = NULL;
    check(T->raw_function(rt, f, &raw));
    t4a_launch_config c = {.struct_size = u8(in) == 3 ? 4u : (uint32_t)sizeof c};
    for (int i = 0; i < 3; i++) {
      c.grid[i] = u8(in) & 1 ? (uint32_t)u64(in) : u8(in) % 4;
      c.block[i] = u8(in) & 1 ? (uint32_t)u64(in) : u8(in) % 64;
    }
    c.shared_bytes = (uint32_t)amount(in);
    check(T->launch(rt, f, &c, NULL));
    break;
  }
  case 28: {
    t4a_runtime rt = RT(in);
    t4a_function f = {PICK(in, P->fn)};
    check(T->function_set_max_dynamic_shared(rt, f, (uint32_t)amount(in)));
    break;
  }
  case 29: {
    uint64_t addr;
    t4a_runtime rt = RT(in);
    check(T->buffer_device_address(rt, BUF(in), &addr));
    break;
  }
  case 30: {
    t4a_raw_section sec = {.struct_size = sizeof sec};
    t4a_runtime rt = RT(in);
    if (T->raw_begin(rt, &sec) != T4A_OK)
      break;
    if (u8(in) & 1)
      check(T->raw_end(RT(in), &sec)); /* maybe the wrong runtime */
    check(T->raw_end(rt, &sec));
    break;
  }
  default: {
    t4a_cache_stats s = {.struct_size = sizeof s};
    check(T->cache_stats(RT(in), &s));
    break;
  }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pools P;
  memset(&P, 0, sizeof P);
  input in = {data, size};
  for (int steps = 0; in.n && steps < 64; steps++)
    step(&in, &P);
  /* release what this input created (one release per reference taken;
   * ones the input already released just fail) */
  for (unsigned i = 0; i < P.n_wit; i++)
    T->witness_release(P.made_wit[i]);
  for (unsigned i = 0; i < P.n_art; i++)
    T->artifact_release(P.made_art[i]);
  for (unsigned i = 0; i < P.n_rt; i++)
    T->runtime_destroy(P.made_rt[i], T4A_WAIT_FOREVER);
  return 0;
}
