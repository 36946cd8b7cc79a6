/* fuzz/model_ops.h -- what the model fuzzer's operations share (see
 * fuzz/model.h): the CALL macro that counts, traces and asserts a call, the
 * argument pickers, and the operations themselves, one file per area:
 * model_mem.c (backend, runtimes, device memory, pinned host memory),
 * model_copy.c (1D and 2D transfers), model_code.c (completion, code,
 * functions), model_exec.c (launches, the raw seam, graphs); model_ops.c
 * holds the helpers below that are not inline and the table of operations. */
#ifndef T4A_FUZZ_MODEL_OPS_H
#define T4A_FUZZ_MODEL_OPS_H

#include <stdbool.h>
#include <stdint.h>

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

extern uint8_t fz_scratch[2 * FZ_HMAX + 64]; /* pageable host memory for the staged copies */
extern uint64_t fz_max_pitch;                /* device 0's limits */
extern int32_t fz_optin_shared;

/* ---- argument helpers ---------------------------------------------------------- */
/* The runtime argument for an object: mostly its owner, else any pick. */
static inline fz_arg rt_for(fz_arg o, int owner) {
  if (o.slot >= 0 && owner >= 0 && !fz_chance(20))
    return (fz_arg){W.rt[owner].bits, owner, W.rt[owner].live};
  return fz_pick_rt();
}

static inline bool owns(fz_arg rt, fz_arg o, int owner) {
  return rt.ok && o.ok && owner == rt.slot;
}

static inline bool in_range(uint64_t off, uint64_t n, uint64_t size) {
  return off <= size && n <= size - off;
}

static inline bool capturing(fz_arg rt) { return rt.ok && W.capturing[rt.slot]; }

/* Whether a capturable call on rt has room in the model's capture. */
static inline bool room(fz_arg rt) { return !capturing(rt) || W.cap[rt.slot].neff < FZ_EFFECTS; }

static inline fz_arg pick_buf(void) { return FZ_PICK(K_BUF, W.buf); }

static inline fz_arg pick_host(void) { return FZ_PICK(K_HOST, W.host); }

static inline int buf_owner(fz_arg b) { return b.slot >= 0 ? W.buf[b.slot].o.rt : -1; }

static inline int host_owner(fz_arg h) { return h.slot >= 0 ? W.host[h.slot].o.rt : -1; }

static inline uint64_t buf_size(fz_arg b) { return b.slot >= 0 ? W.buf[b.slot].size : FZ_BMAX; }

static inline uint64_t host_size(fz_arg h) { return h.slot >= 0 ? W.host[h.slot].size : FZ_HMAX; }

static inline fz_arg pick_fn(void) {
  return fz_pick(K_FN, &W.fn[0][0], FZ_RTS * FZ_KERNELS, sizeof(fz_obj));
}

static inline int fn_owner(fz_arg f) { return f.slot >= 0 ? f.slot / FZ_KERNELS : -1; }

static inline fz_arg pick_graph(void) { return FZ_PICK(K_GRAPH, W.graph); }

static inline int graph_owner(fz_arg g) { return g.slot >= 0 ? W.graph[g.slot].o.rt : -1; }

uint64_t fz_amount(uint64_t size);
void fz_ranges(uint64_t asize, uint64_t bsize, uint64_t *aoff, uint64_t *boff, uint64_t *n);
int fz_live_buf_of(int r);
fz_arg fz_buf_of(int r);
fz_arg fz_host_of(int r);
fz_arg fz_pick_wit(void);
void fz_drop_witness(unsigned i);
void fz_keep_witness(uint64_t bits, uint64_t rt_bits, bool timing);

/* ---- the operations -------------------------------------------------------------- */
void fz_op_last_error(void);
void fz_op_backend_queries(void);
void fz_op_runtime_create(void);
void fz_op_runtime_destroy(void);
void fz_op_runtime_queries(void);
void fz_op_buffer_alloc(void);
void fz_op_buffer_free(void);
void fz_op_buffer_queries(void);
void fz_op_memset(void);
void fz_op_host_alloc(void);
void fz_op_host_free(void);
void fz_op_host_register(void);
void fz_op_host_unregister(void);
void fz_op_host_check(void);
void fz_op_copy_h2d(void);
void fz_op_copy_d2h(void);
void fz_op_copy_d2d(void);
void fz_op_copy_pinned(void);
void fz_op_copy_cross(void);
void fz_op_copy_2d(void);
void fz_op_seal(void);
void fz_op_witness(void);
void fz_op_witness_elapsed(void);
void fz_op_artifact_compile(void);
void fz_op_artifact_from_bytes(void);
void fz_op_artifact_queries(void);
void fz_op_module(void);
void fz_op_function_queries(void);
void fz_op_launch(void);
void fz_op_raw(void);
void fz_op_graph_capture(void);
void fz_op_graph_end_idle(void);
void fz_op_graph_launch(void);
void fz_op_graph_args(void);
void fz_op_graph_info(void);

#endif
