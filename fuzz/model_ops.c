/* fuzz/model_ops.c -- the model fuzzer's argument helpers that are not inline,
 * and the table of operations fz_step draws from (see fuzz/model_ops.h). */
#include "config.h"

#include <string.h>

#include "fuzz/model_ops.h"

uint8_t fz_scratch[2 * FZ_HMAX + 64];
uint64_t fz_max_pitch;
int32_t fz_optin_shared;

/* ---- argument helpers ------------------------------------------------------- */

/* An offset or length for a region of `size` bytes: mostly inside it. */
uint64_t fz_amount(uint64_t size) {
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
void fz_ranges(uint64_t asize, uint64_t bsize, uint64_t *aoff, uint64_t *boff, uint64_t *n) {
  if (fz_chance(208)) {
    uint64_t most = asize < bsize ? asize : bsize;
    *n = fz_below(most + 1);
    *aoff = fz_below(asize - *n + 1);
    *boff = fz_below(bsize - *n + 1);
    return;
  }
  *aoff = fz_amount(asize);
  *boff = fz_amount(bsize);
  *n = fz_amount(asize < bsize ? asize : bsize);
}

/* A live buffer of runtime r (-1 when none), chosen by the input. */
int fz_live_buf_of(int r) {
  int have[FZ_BUFS] = {0}, n = 0;
  for (int i = 0; i < FZ_BUFS; i++)
    if (W.buf[i].o.live && W.buf[i].o.rt == r)
      have[n++] = i;
  return n ? have[fz_below((uint64_t)n)] : -1;
}

/* A second buffer (host buffer) for a call on runtime r: mostly one of r's,
 * else any pick. */
fz_arg fz_buf_of(int r) {
  if (r >= 0 && fz_chance(216)) {
    int b = fz_live_buf_of(r);
    if (b >= 0)
      return (fz_arg){W.buf[b].o.bits, b, true};
  }
  return pick_buf();
}

fz_arg fz_host_of(int r) {
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

fz_arg fz_pick_wit(void) {
  fz_arg a = {0, -1, false};
  uint8_t k = fz_u8();
  if (k < 216 && W.nwit) {
    unsigned i = k % W.nwit;
    return (fz_arg){W.wit[i], (int)i, true};
  }
  if (k < 236 && W.nstale[K_WIT])
    a.bits = W.stale[K_WIT][k % (W.nstale[K_WIT] < FZ_STALE ? W.nstale[K_WIT] : FZ_STALE)];
  else if (k < 248)
    a.bits = fz_forged();
  fz_null_arg |= a.bits == 0;
  return a;
}

/* Removes reference i from the model's list. */
void fz_drop_witness(unsigned i) {
  W.nwit--;
  memmove(&W.wit[i], &W.wit[i + 1], (W.nwit - i) * sizeof W.wit[0]);
  memmove(&W.wit_rt[i], &W.wit_rt[i + 1], (W.nwit - i) * sizeof W.wit_rt[0]);
  memmove(&W.wit_timing[i], &W.wit_timing[i + 1], (W.nwit - i) * sizeof W.wit_timing[0]);
}

void fz_keep_witness(uint64_t bits, uint64_t rt_bits, bool timing) {
  if (W.nwit == FZ_WITS) { /* full: drop the oldest reference */
    uint64_t old = W.wit[0];
    CALL("witness_release", T->witness_release((t4a_witness){old}), ST_OK);
    fz_drop_witness(0);
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

/* ---- the program
 * ----------------------------------------------------------------------------------- */

typedef void (*op_fn)(void);
static const op_fn ops[] = {
    fz_op_last_error,
    fz_op_backend_queries,
    fz_op_runtime_create,
    fz_op_runtime_destroy,
    fz_op_runtime_queries,
    fz_op_buffer_alloc,
    fz_op_buffer_free,
    fz_op_buffer_queries,
    fz_op_memset,
    fz_op_host_alloc,
    fz_op_host_free,
    fz_op_host_register,
    fz_op_host_unregister,
    fz_op_host_check,
    fz_op_copy_h2d,
    fz_op_copy_d2h,
    fz_op_copy_d2h,
    fz_op_copy_d2d,
    fz_op_copy_pinned,
    fz_op_copy_pinned,
    fz_op_copy_cross,
    fz_op_copy_2d,
    fz_op_copy_2d,
    fz_op_seal,
    fz_op_witness,
    fz_op_witness,
    fz_op_witness_elapsed,
    fz_op_artifact_compile,
    fz_op_artifact_from_bytes,
    fz_op_artifact_queries,
    fz_op_module,
    fz_op_function_queries,
    fz_op_launch,
    fz_op_launch,
    fz_op_launch,
    fz_op_raw,
    fz_op_graph_capture,
    fz_op_graph_capture,
    fz_op_graph_end_idle,
    fz_op_graph_launch,
    fz_op_graph_launch,
    fz_op_graph_args,
    fz_op_graph_info,
};

/* The host backend's without a compiler (fz_on_host, !fz_host_kernels): its
 * code slots and the NULL ones instead of the code, launch and raw
 * operations, in the same proportions. */
static const op_fn host_ops[] = {
    fz_op_last_error,      fz_op_backend_queries, fz_op_runtime_create,  fz_op_runtime_destroy,
    fz_op_runtime_queries, fz_op_buffer_alloc,    fz_op_buffer_free,     fz_op_buffer_queries,
    fz_op_memset,          fz_op_host_alloc,      fz_op_host_free,       fz_op_host_register,
    fz_op_host_unregister, fz_op_host_check,      fz_op_copy_h2d,        fz_op_copy_d2h,
    fz_op_copy_d2h,        fz_op_copy_d2d,        fz_op_copy_pinned,     fz_op_copy_pinned,
    fz_op_copy_cross,      fz_op_copy_2d,         fz_op_copy_2d,         fz_op_seal,
    fz_op_witness,         fz_op_witness,         fz_op_witness_elapsed, fz_op_host_code,
    fz_op_host_code,       fz_op_host_code,       fz_op_host_code,       fz_op_host_code,
    fz_op_host_code,       fz_op_host_code,       fz_op_host_code,       fz_op_host_raw,
    fz_op_graph_capture,   fz_op_graph_capture,   fz_op_graph_end_idle,  fz_op_graph_launch,
    fz_op_graph_launch,    fz_op_graph_args,      fz_op_graph_info,
};
_Static_assert(sizeof host_ops == sizeof ops, "the host's table replaces operations one for one");

void fz_step(void) {
  static bool limits;
  if (!limits) { /* device 0's limits, once */
    t4a_device_info i = {.struct_size = sizeof i};
    CALL("device_info", T->device_info(0, &i), ST_OK);
    fz_max_pitch = i.max_pitch;
    fz_optin_shared = i.max_shared_per_block_optin;
    limits = true;
  }
  fz_null_arg = false;
  (fz_on_host && !fz_host_kernels ? host_ops : ops)[fz_u8() % (sizeof ops / sizeof ops[0])]();
}
