/* fuzz/model_host.c -- the model fuzzer's operations that stand in for the
 * code, launch and raw ones on the host backend (fz_on_host, see fuzz/model.h)
 * when it has no C++ compiler (!fz_host_kernels): every code slot is refused,
 * and the slots that take or hand out CUDA objects are NULL (fz_op_host_raw,
 * also used with a compiler).
 *
 *   artifact_compile        bad options: T4A_EINVAL (struct, NULL out, a device
 *                           other than -1 or 0); else T4A_ENOCOMPILER
 *   artifact_from_bytes     no data, size or out, an unknown kind: T4A_EINVAL;
 *                           PTX, CUBIN, fatbin: T4A_EUNSUPPORTED (GPU code)
 *   artifact_log/_data/_release, and module_load/_unload, function_get,
 *   function_attributes, function_set_max_dynamic_shared on a live runtime:
 *                           T4A_EHANDLE (the host made no artifact, module or
 *                           function)
 *   launch, launch_ex, occupancy_*: T4A_EHANDLE (no function)
 *   compile_cache_stats     every count zero (disk_limit_bytes is the setting);
 *                           compile_cache_clear as everywhere (0: T4A_EINVAL)
 * A bad runtime handle is T4A_EHANDLE first, as in every runtime slot. */
#include "config.h"

#include <string.h>

#include "fuzz/model_ops.h"

/* A handle that names no artifact, module or function the host made: there
 * are none (stale, forged, null or a buffer's). */
static uint64_t code_handle(void) {
  uint64_t h;
  switch (fz_u8() % 4) {
  case 0: h = 0; break;
  case 1: h = fz_forged(); break;
  case 2: h = W.buf[fz_below(FZ_BUFS)].o.bits; break; /* 0 for a free slot */
  default: h = fz_u64(); break;
  }
  if (!h)
    fz_null_arg = true; /* EINVAL joins EHANDLE */
  return h;
}

static void compile(void) {
  fz_trace("artifact_compile");
  t4a_compile_options o = {.struct_size = sizeof o,
                           .source = "extern \"C\" __global__ void k() {}\n",
                           .device_ordinal = fz_chance(128) ? 0 : -1};
  uint32_t want = ST(T4A_ENOCOMPILER);
  bool null_opts = false, null_out = false;
  switch (fz_u8() % 6) {
  case 0: null_opts = true; break;
  case 1: o.struct_size = 4; break;
  case 2: null_out = true; break;
  case 3: o.device_ordinal = 1 + (int32_t)fz_below(8); break;
  default: break;
  }
  if (null_opts || o.struct_size == 4 || null_out || o.device_ordinal > 0)
    want = ST(T4A_EINVAL);
  t4a_artifact a = {0x5a5a};
  CALL("artifact_compile", T->artifact_compile(null_opts ? NULL : &o, null_out ? NULL : &a), want);
  if (want == ST(T4A_ENOCOMPILER) && a.bits) /* past the argument checks: the null handle */
    fz_finding("artifact_compile refused, but left the handle 0x%llx (not the null one)",
               (unsigned long long)a.bits);
}

static void from_bytes(void) {
  fz_trace("artifact_from_bytes");
  uint64_t size;
  const char *ptx = fz_ptx(&size);
  uint8_t k = fz_u8() % 7;
  t4a_artifact_kind kind = k == 1   ? T4A_ARTIFACT_CUBIN
                           : k == 2 ? T4A_ARTIFACT_FATBIN
                           : k == 3 ? (t4a_artifact_kind)9
                                    : T4A_ARTIFACT_PTX;
  const void *data = k == 4 ? NULL : ptx;
  uint64_t n = k == 5 ? 0 : size;
  bool null_out = k == 6;
  uint32_t want = k >= 3 ? ST(T4A_EINVAL) : ST(T4A_EUNSUPPORTED);
  t4a_artifact a = {0x5a5a};
  CALL("artifact_from_bytes", T->artifact_from_bytes(kind, data, n, "fuzz", null_out ? NULL : &a),
       want);
  if (want == ST(T4A_EUNSUPPORTED) && a.bits)
    fz_finding("artifact_from_bytes refused, but left the handle 0x%llx",
               (unsigned long long)a.bits);
}

void fz_op_host_code(void) {
  fz_arg r = fz_pick_rt();
  uint32_t live = r.ok ? 0 : ST(T4A_EHANDLE); /* a runtime slot's first check */
  uint64_t h = code_handle();
  switch (fz_u8() % 12) {
  case 0: compile(); break;
  case 1: from_bytes(); break;
  case 2: {
    fz_trace("artifact_log/_data/_release");
    const char *log = NULL;
    const void *data = NULL;
    uint64_t n = 0;
    t4a_artifact_kind kind;
    t4a_artifact a = {h};
    CALL("artifact_log", T->artifact_log(a, &log, &n), ST(T4A_EHANDLE));
    CALL("artifact_data", T->artifact_data(a, &kind, &data, &n), ST(T4A_EHANDLE));
    CALL("artifact_release", T->artifact_release(a), ST(T4A_EHANDLE));
    break;
  }
  case 3: {
    fz_trace("compile_cache_stats");
    t4a_compile_cache_stats s;
    memset(&s, 0x5a, sizeof s);
    s.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof s;
    if (CALL("compile_cache_stats", T->compile_cache_stats(&s),
             s.struct_size == 4 ? ST(T4A_EINVAL) : ST_OK) == T4A_OK &&
        (s.memory_entries || s.memory_hits || s.disk_entries || s.disk_bytes || s.disk_hits ||
         s.disk_rejected || s.misses))
      fz_finding("compile_cache_stats of a backend that compiles nothing counts something: "
                 "%llu memory entries, %llu hits, %llu disk entries (%llu bytes), %llu disk hits, "
                 "%llu rejected, %llu misses",
                 (unsigned long long)s.memory_entries, (unsigned long long)s.memory_hits,
                 (unsigned long long)s.disk_entries, (unsigned long long)s.disk_bytes,
                 (unsigned long long)s.disk_hits, (unsigned long long)s.disk_rejected,
                 (unsigned long long)s.misses);
    break;
  }
  case 4: {
    fz_trace("compile_cache_clear");
    uint32_t which = fz_chance(32) ? fz_u32() | 4u : fz_u8() % 4;
    CALL("compile_cache_clear", T->compile_cache_clear(which),
         which & ~3u || !which ? ST(T4A_EINVAL) : ST_OK); /* 0: neither */
    break;
  }
  case 5: {
    fz_trace("module_load");
    t4a_module m = {0x5a5a};
    CALL("module_load", T->module_load(RT(r), (t4a_artifact){h}, &m), live | ST(T4A_EHANDLE));
    if (m.bits && m.bits != 0x5a5a)
      fz_finding("module_load refused, but made the handle 0x%llx", (unsigned long long)m.bits);
    break;
  }
  case 6:
    fz_trace("module_unload");
    CALL("module_unload", T->module_unload(RT(r), (t4a_module){h}), ST(T4A_EHANDLE));
    break;
  case 7: {
    fz_trace("function_get");
    t4a_function f = {0};
    CALL("function_get", T->function_get(RT(r), (t4a_module){h}, "t4a_fill_u32", &f),
         ST(T4A_EHANDLE));
    break;
  }
  case 8: {
    fz_trace("function_attributes/_set_max_dynamic_shared");
    t4a_function_attributes a = {.struct_size = sizeof a};
    CALL("function_attributes", T->function_attributes(RT(r), (t4a_function){h}, &a),
         ST(T4A_EHANDLE));
    CALL("function_set_max_dynamic_shared",
         T->function_set_max_dynamic_shared(RT(r), (t4a_function){h}, fz_u32()), ST(T4A_EHANDLE));
    break;
  }
  case 9: {
    fz_trace("launch");
    t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    CALL("launch", T->launch(RT(r), (t4a_function){h}, &c, NULL), live ? live : ST(T4A_EHANDLE));
    break;
  }
  case 10: {
    fz_trace("launch_ex");
    t4a_launch_ex_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    CALL("launch_ex", T->launch_ex(RT(r), (t4a_function){h}, &c, NULL),
         live ? live : ST(T4A_EHANDLE));
    break;
  }
  default: {
    fz_trace("occupancy_*");
    uint32_t blocks = 0, threads = 0, grid = 0, clusters = 0;
    t4a_launch_ex_config c = {.struct_size = sizeof c, .grid = {8, 1, 1}, .block = {64, 1, 1}};
    uint32_t want = live ? live : ST(T4A_EHANDLE);
    CALL("occupancy_max_active_blocks",
         T->occupancy_max_active_blocks(RT(r), (t4a_function){h}, 64, 0, &blocks), want);
    CALL("occupancy_suggest_block_size",
         T->occupancy_suggest_block_size(RT(r), (t4a_function){h}, 0, 0, &threads, &grid), want);
    CALL("occupancy_max_active_clusters",
         T->occupancy_max_active_clusters(RT(r), (t4a_function){h}, &c, &clusters), want);
    break;
  }
  }
}

/* The slots a backend without CUDA objects leaves NULL (plugin-host/entry.c),
 * and the peer copies it refuses (model_copy.c's copy_cross). */
void fz_op_host_raw(void) {
  fz_trace("NULL slots");
  if (T->raw_runtime || T->raw_begin || T->raw_end || T->raw_function || T->stream_wait_witness ||
      T->runtime_wait_event || T->runtime_wait_stream)
    fz_finding("the host backend fills a slot that takes or hands out CUDA objects");
}
