/* fuzz/model_host.c -- the model fuzzer's operations that stand in for the
 * code, launch and raw ones on the host backend (fz_on_host, see fuzz/model.h).
 * The host's kernels are CUDA C compiled by the host C++ compiler
 * (docs/design.md, "Kernels on the CPU"); the model compiles a kernel but
 * keeps no module of its world, so the other code slots are driven with
 * handles the host never made, and the slots that take or hand out CUDA
 * objects are NULL.
 *
 *   artifact_compile        bad options: T4A_EINVAL (struct, NULL out, a device
 *                           other than -1 or 0); else T4A_OK (the artifact is
 *                           released at once) or T4A_ENOCOMPILER without a
 *                           host C++ compiler
 *   artifact_from_bytes     no data, size or out, an unknown kind: T4A_EINVAL;
 *                           PTX, CUBIN, fatbin: T4A_EUNSUPPORTED (GPU code)
 *   artifact_log/_data/_release, and module_load/_unload, function_get,
 *   function_attributes, function_set_max_dynamic_shared, launch, launch_ex
 *   and occupancy_* on a live runtime: T4A_EHANDLE (a handle the host never
 *                           made), T4A_EINVAL for the null one
 *   compile_cache_stats     checked; compile_cache_clear as everywhere
 * A bad runtime handle is T4A_EHANDLE first, as in every runtime slot. */
#include "config.h"

#include <string.h>

#include "fuzz/model_ops.h"

/* A handle that names no artifact, module or function the host made: there
 * are none (stale, forged, null or a buffer's). */
static uint64_t code_handle(void) {
  switch (fz_u8() % 4) {
  case 0: return 0;
  case 1: return fz_forged();
  case 2: return W.buf[fz_below(FZ_BUFS)].o.bits;
  default: return fz_u64();
  }
}

static void compile(void) {
  fz_trace("artifact_compile");
  t4a_compile_options o = {.struct_size = sizeof o,
                           .source = "extern \"C\" __global__ void k() {}\n",
                           .device_ordinal = fz_chance(128) ? 0 : -1};
  uint32_t want = ST_OK | ST(T4A_ENOCOMPILER);
  bool null_opts = false, null_out = false;
  switch (fz_u8() % 6) {
  case 0: null_opts = true; break;
  case 1: o.struct_size = 4; break;
  case 2: null_out = true; break;
  case 3: o.device_ordinal = 1 + (int32_t)fz_below(8); break;
  default: /* a real compile now and then: a cleared cache makes the next one cold (~0.1 s) */
    if (!fz_chance(24))
      o.struct_size = 4;
    break;
  }
  if (null_opts || o.struct_size == 4 || null_out || o.device_ordinal > 0)
    want = ST(T4A_EINVAL);
  t4a_artifact a = {0x5a5a};
  int rc = T->artifact_compile(null_opts ? NULL : &o, null_out ? NULL : &a);
  CALL("artifact_compile", rc, want);
  if (rc == T4A_OK) {
    CALL("artifact_release", T->artifact_release(a), ST_OK);
  } else if (!null_out && want != ST(T4A_EINVAL) && a.bits) { /* past the argument checks */
    fz_finding("artifact_compile refused, but left the handle 0x%llx (not the null one)",
               (unsigned long long)a.bits);
  }
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
  uint32_t none = ST(h ? T4A_EHANDLE : T4A_EINVAL); /* a handle the host never made, or null */
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
    CALL("artifact_log", T->artifact_log(a, &log, &n), none);
    CALL("artifact_data", T->artifact_data(a, &kind, &data, &n), none);
    CALL("artifact_release", T->artifact_release(a), none);
    break;
  }
  case 3: {
    fz_trace("compile_cache_stats");
    t4a_compile_cache_stats s;
    memset(&s, 0x5a, sizeof s);
    s.struct_size = fz_chance(16) ? 4u : (uint32_t)sizeof s;
    if (CALL("compile_cache_stats", T->compile_cache_stats(&s),
             s.struct_size == 4 ? ST(T4A_EINVAL) : ST_OK) == T4A_OK &&
        s.memory_entries > 256)
      fz_finding("compile_cache_stats: %llu memory entries (at most 256)",
                 (unsigned long long)s.memory_entries);
    break;
  }
  case 4: {
    fz_trace("compile_cache_clear");
    uint32_t which = fz_chance(32) ? fz_u32() | 4u : fz_u8() % 4;
    CALL("compile_cache_clear", T->compile_cache_clear(which),
         which & ~3u ? ST(T4A_EINVAL)
         : which     ? ST_OK
                     : ST(T4A_EINVAL)); /* 0: neither, refused as on CUDA */
    break;
  }
  case 5: {
    fz_trace("module_load");
    t4a_module m = {0x5a5a};
    CALL("module_load", T->module_load(RT(r), (t4a_artifact){h}, &m), live | none);
    if (m.bits && m.bits != 0x5a5a)
      fz_finding("module_load refused, but made the handle 0x%llx", (unsigned long long)m.bits);
    break;
  }
  case 6:
    fz_trace("module_unload");
    CALL("module_unload", T->module_unload(RT(r), (t4a_module){h}), live ? live : none);
    break;
  case 7: {
    fz_trace("function_get");
    t4a_function f = {0};
    CALL("function_get", T->function_get(RT(r), (t4a_module){h}, "t4a_fill_u32", &f),
         live ? live : none);
    break;
  }
  case 8: {
    fz_trace("function_attributes/_set_max_dynamic_shared");
    t4a_function_attributes a = {.struct_size = sizeof a};
    CALL("function_attributes", T->function_attributes(RT(r), (t4a_function){h}, &a),
         live ? live : none);
    CALL("function_set_max_dynamic_shared",
         T->function_set_max_dynamic_shared(RT(r), (t4a_function){h}, fz_u32()),
         live ? live : none);
    break;
  }
  case 9: {
    fz_trace("launch");
    t4a_launch_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    CALL("launch", T->launch(RT(r), (t4a_function){h}, &c, NULL), live ? live : none);
    break;
  }
  case 10: {
    fz_trace("launch_ex");
    t4a_launch_ex_config c = {.struct_size = sizeof c, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    CALL("launch_ex", T->launch_ex(RT(r), (t4a_function){h}, &c, NULL), live ? live : none);
    break;
  }
  default: {
    fz_trace("occupancy_*");
    uint32_t blocks = 0, threads = 0, grid = 0, clusters = 0;
    t4a_launch_ex_config c = {.struct_size = sizeof c, .grid = {8, 1, 1}, .block = {64, 1, 1}};
    uint32_t want = live ? live : none;
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
