/* fuzz/model_code.c -- the model fuzzer's completion, code and function
 * operations (see fuzz/model_ops.h). */
#include "config.h"

#include <string.h>

#include "fuzz/model_ops.h"

const char fz_good_source[] =
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

/* ---- completion ------------------------------------------------------------------------ */

void fz_op_seal(void) {
  fz_trace("seal");
  fz_arg r = fz_pick_rt();
  uint32_t err = 0;
  ERR(!r.ok, T4A_EHANDLE);
  ERR(capturing(r), T4A_EBUSY);
  t4a_witness w;
  if (CALL("seal", T->seal(RT(r), &w), err ? err : ST_OK) == T4A_OK)
    fz_keep_witness(w.bits, r.bits, W.timing[r.slot]);
}

void fz_op_witness(void) {
  fz_arg w = fz_pick_wit();
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
      fz_keep_witness(w.bits, W.wit_rt[w.slot], W.wit_timing[w.slot]);
    break;
  case 3: {
    fz_trace("witness_release");
    if (CALL("witness_release", T->witness_release((t4a_witness){w.bits}), bad ? bad : ST_OK) !=
        T4A_OK)
      break;
    fz_drop_witness((unsigned)w.slot);
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

void fz_op_witness_elapsed(void) {
  fz_trace("witness_elapsed");
  fz_arg a = fz_pick_wit(), b = fz_pick_wit();
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

void fz_op_artifact_compile(void) {
  fz_trace("artifact_compile");
  int slot = art_slot_for_new();
  static const char *const arch[] = {"-arch=compute_90"};
  t4a_compile_options o = {.struct_size = sizeof o, .source = fz_good_source, .device_ordinal = 0};
  static const char *const rdc[] = {"-rdc=true"};
  uint32_t want = ST_OK;
  bool code = true, compiles = false; /* compiles: reaches the compiler (on the host, a run) */
  if (fz_on_host)
    o.name = "fuzz_model.cu"; /* the seed's compile: the same cache key */
  switch (fz_u8() % 10) {
  case 0:
    if (fz_on_host) { /* refused by the option mapping, before any compiler runs */
      o.options = rdc;
      o.option_count = 1;
    } else {
      o.source = bad_source;
    }
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
  case 5:
    if (!fz_on_host) /* the host: a compiler run every time; the suites test it */
      o.flags = T4A_COMPILE_NO_CACHE;
    compiles = true;
    break;
  case 6:
    o.flags = T4A_COMPILE_PTX;
    want = fz_on_host ? ST(T4A_EUNSUPPORTED) : ST_OK;
    compiles = !fz_on_host;
    break;
  case 7:
    o.device_ordinal = -1;
    o.options = arch;
    o.option_count = 1;
    o.flags = T4A_COMPILE_PTX;
    want = fz_on_host ? ST(T4A_EUNSUPPORTED) : ST_OK;
    compiles = !fz_on_host;
    break;
  default: compiles = true; break;
  }
  if (fz_on_host && compiles && !fz_host_warm)
    return; /* a cache miss: a compiler run (about 0.2 s) */
  t4a_artifact a = {0};
  int rc = CALL("artifact_compile", T->artifact_compile(&o, &a), want);
  if (rc != T4A_OK && rc != T4A_ECOMPILE)
    return;
  W.art[slot] = (fz_obj){a.bits, -1, true};
  W.art_code[slot] = code && rc == T4A_OK;
  W.art_cached[slot] = rc == T4A_OK && !(o.flags & T4A_COMPILE_NO_CACHE);
  W.art_bytes[slot] = NULL;
}

void fz_op_artifact_from_bytes(void) {
  fz_trace("artifact_from_bytes");
  int slot = art_slot_for_new();
  static uint8_t junks[FZ_ARTS][64]; /* artifact_data is compared with them later */
  uint8_t *junk = junks[slot];
  for (size_t i = 0; i < sizeof junks[0]; i++)
    junk[i] = fz_u8();
  uint8_t k = fz_u8() % 8;
  uint64_t code_size;
  t4a_artifact_kind code_kind;
  const void *code = fz_seed_code(&code_size, &code_kind);
  t4a_artifact_kind kind = k < 3    ? code_kind
                           : k == 3 ? T4A_ARTIFACT_CUBIN
                           : k == 4 ? T4A_ARTIFACT_FATBIN
                                    : (t4a_artifact_kind)(k == 5 ? 0 : 9);
  const void *bytes = k < 3 ? code : junk;
  uint64_t n = k < 3 ? code_size : sizeof junks[0];
  uint32_t want = ST_OK;
  if (k == 1) {
    bytes = NULL;
    want = ST(T4A_EINVAL);
  } else if (k == 2) {
    n = 0;
    want = ST(T4A_EINVAL);
  } else if (fz_on_host && k == 5) { /* junk host code: taken, refused at module_load */
    kind = T4A_ARTIFACT_HOST;
  } else if (fz_on_host && k == 6) { /* the PTX text: GPU code */
    kind = T4A_ARTIFACT_PTX;
    bytes = fz_ptx(&n);
    want = ST(T4A_EUNSUPPORTED);
  } else if (k >= 5) {
    want = ST(T4A_EINVAL);
  } else if (k >= 3) { /* junk: refused here or at module_load; the host takes no GPU code */
    want = fz_on_host ? ST(T4A_EUNSUPPORTED) : ST_OK | ST(T4A_EINVAL);
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

void fz_op_artifact_queries(void) {
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
    if (fz_on_host && fz_host_warm && !fz_chance(32))
      which &= ~T4A_CACHE_MEMORY; /* rarely: the host's next compiles wait for the seed's */
    if (CALL("compile_cache_clear", T->compile_cache_clear(which),
             which & ~3u ? ST(T4A_EINVAL)
             : which     ? ST_OK
                         : ST_OK | ST(T4A_EINVAL)) == T4A_OK && /* 0: neither */
        (which & T4A_CACHE_MEMORY))
      fz_host_warm = false;
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

void fz_op_module(void) {
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

void fz_op_function_queries(void) {
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
        (a.max_threads_per_block < 1 || a.max_threads_per_block > 1024 ||
         (uint32_t)a.max_dynamic_shared_bytes !=
             W.fn_shared[f.slot / FZ_KERNELS][f.slot % FZ_KERNELS]))
      fz_finding("function_attributes: max_threads_per_block %d, max_dynamic_shared_bytes %d "
                 "(the model: %u)",
                 a.max_threads_per_block, a.max_dynamic_shared_bytes,
                 W.fn_shared[f.slot / FZ_KERNELS][f.slot % FZ_KERNELS]);
    break;
  }
  case 1: {
    fz_trace("function_set_max_dynamic_shared");
    uint32_t bytes = fz_chance(128) ? (uint32_t)fz_below(48 * 1024 + 1)
                                    : (uint32_t)fz_optin_shared + 1 + (uint32_t)fz_below(1 << 20);
    uint32_t want = bad ? bad : bytes > (uint32_t)fz_optin_shared ? ST(T4A_EINVAL) : ST_OK;
    if (CALL("function_set_max_dynamic_shared",
             T->function_set_max_dynamic_shared(RT(r), fh, bytes), want) == T4A_OK)
      W.fn_shared[f.slot / FZ_KERNELS][f.slot % FZ_KERNELS] = bytes;
    break;
  }
  case 2: {
    fz_trace("raw_function");
    if (fz_on_host) { /* NULL there */
      fz_op_host_raw();
      break;
    }
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
