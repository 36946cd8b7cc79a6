/* fuzz/model.h -- the model fuzzer's world: what the backend should hold
 * after every call, so that each call's status and each byte read back can
 * be asserted (fuzz/model.c: the world, expectations and effects;
 * fuzz/model_ops.h: the operations, one or more per table slot).
 *
 * An input is a program: one byte picks an operation, the next bytes its
 * arguments. Each input starts from a seeded world (three runtimes, two on
 * device 0 and one on device 1, with buffers of known content, pinned host
 * buffers, a loaded module and its functions), so most calls are valid and
 * reach the code behind the checks; the rest get stale, foreign, forged or
 * null handles and bad sizes, geometry and struct sizes. The model predicts
 * the set of statuses each call may return (one, mostly); device contents
 * are mirrored byte by byte (a shadow with a known-mask) and every read
 * back is compared. Graph captures record their effects and apply them at
 * each replay. A finding aborts with the call, the expected and actual
 * status and the last operations. */
#ifndef T4A_FUZZ_MODEL_H
#define T4A_FUZZ_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "t4a/gpu_loader.h"

#define FZ_RTS 4      /* runtime slots: 0, 1 on device 0, 2 on device 1, 3 free */
#define FZ_BUFS 10    /* buffer slots: 2 seeded per seeded runtime, the rest free */
#define FZ_BMAX 4096  /* bytes of a seeded buffer, the most buffer_alloc asks */
#define FZ_HOSTS 6    /* host buffer slots: one allocated per seeded runtime, 3 free */
#define FZ_HMAX 4096  /* bytes of a host buffer */
#define FZ_REGS 2     /* static regions host_register may pin */
#define FZ_KERNELS 3  /* t4a_empty, t4a_fill_u32, t4a_index3d */
#define FZ_ARTS 4     /* artifact slots: 0 the seeded PTX */
#define FZ_WITS 16    /* witness references held */
#define FZ_GRAPHS 4   /* graph slots */
#define FZ_EFFECTS 16 /* effects one capture records */
#define FZ_STALE 8    /* stale handles kept per kind */

enum { K_RT, K_BUF, K_HOST, K_ART, K_MOD, K_FN, K_WIT, K_GRAPH, K_KINDS };
enum { KERN_EMPTY, KERN_FILL, KERN_INDEX3D };

typedef struct fz_obj {
  uint64_t bits;
  int rt; /* owner runtime slot (-1: process-wide) */
  bool live;
} fz_obj;

typedef struct fz_buf {
  fz_obj o;
  uint64_t size, addr;
  unsigned kernel_refs; /* live graphs naming it inside kernel arguments */
  uint8_t data[FZ_BMAX], known[FZ_BMAX];
} fz_buf;

typedef struct fz_host {
  fz_obj o;
  uint64_t size;
  int region; /* registered region, or -1 (host_alloc) */
  bool read_only;
  uint8_t *ptr;
  uint8_t data[FZ_HMAX], known[FZ_HMAX];
} fz_host;

/* What one enqueued operation does to the shadows. */
enum { E_FILL, E_INDEX3D, E_EMPTY, E_MEMSET, E_D2D, E_H2DP, E_D2HP };
typedef struct fz_effect {
  uint8_t kind;
  bool two_d;
  int dst, src; /* buffer or host slots by kind */
  uint64_t dst_bits, src_bits;
  uint64_t doff, soff, n; /* 1D: bytes; fill: elements; memset: count */
  uint64_t dpitch, spitch, rows;
  uint32_t value, es;
  uint32_t grid[3], block[3];
  int fn; /* kernels: the function slot, flattened rt * FZ_KERNELS + k */
  uint64_t fn_bits, mod_bits;
} fz_effect;

typedef struct fz_graph {
  fz_obj o;
  fz_effect eff[FZ_EFFECTS];
  unsigned neff, kernels, copies, replays;
  bool overflow; /* more effects than recorded: the model stops asserting data */
} fz_graph;

typedef struct fz_world {
  fz_obj rt[FZ_RTS];
  int dev[FZ_RTS];
  bool timing[FZ_RTS];
  bool capturing[FZ_RTS];
  fz_graph cap[FZ_RTS]; /* the capture in progress */
  int32_t prio_least[FZ_RTS], prio_greatest[FZ_RTS];
  fz_buf buf[FZ_BUFS];
  fz_host host[FZ_HOSTS];
  bool region_used[FZ_REGS];
  fz_obj art[FZ_ARTS];
  bool art_code[FZ_ARTS];   /* holds the three kernels */
  bool art_cached[FZ_ARTS]; /* compiled through the memory cache, which holds a reference:
                               released, its handle may stay live */
  const void *art_bytes[FZ_ARTS];
  uint64_t art_size[FZ_ARTS];
  fz_obj mod[FZ_RTS];
  fz_obj fn[FZ_RTS][FZ_KERNELS];
  uint32_t fn_shared[FZ_RTS][FZ_KERNELS]; /* the dynamic shared memory limit set (48 KiB at load) */
  uint64_t wit[FZ_WITS];
  uint64_t wit_rt[FZ_WITS]; /* the sealing runtime's handle (its slot may be reused) */
  bool wit_timing[FZ_WITS]; /* whether it recorded time */
  unsigned nwit;
  fz_graph graph[FZ_GRAPHS];
  uint64_t stale[K_KINDS][FZ_STALE];
  unsigned nstale[K_KINDS];
  int raw_depth;    /* raw sections open on this thread */
  bool data_unsure; /* the model lost track (a capture overflowed): no data asserted */
} fz_world;

extern fz_world W;
extern const t4a_gpu_backend_v1 *T;
extern uint64_t fz_calls;

/* The backend under test, chosen by T4A_FUZZ_PLUGIN: the CUDA plugin over
 * the fake driver (two devices), or the host backend (fz_on_host: one device,
 * kernels compiled from CUDA C by the host C++ compiler, the raw seam and
 * CUstream slots NULL, no peer and no staging). The seeded world then has
 * its three runtimes on device 0 and no module; fz_op_host_code (compiles,
 * and the other code slots with handles the host never made) and
 * fz_op_host_raw (model_host.c) take the place of the code, launch and raw
 * operations. */
extern bool fz_on_host;
extern int fz_devices;
/* The device the seeded runtime r (0..2) is on. */
int fz_seeded_device(int r);

/* ---- input ------------------------------------------------------------- */
uint8_t fz_u8(void);
uint32_t fz_u32(void);
uint64_t fz_u64(void);
uint64_t fz_below(uint64_t n);  /* 0 .. n-1 */
bool fz_chance(unsigned in256); /* true with probability in256 / 256 */

/* ---- statuses ------------------------------------------------------------ */
#define ST(s) (1u << (unsigned)-(s))
#define ST_OK ST(T4A_OK)
/* Asserts rc is one of `allowed` (and, on failure, that last_error tells
 * the same status with a message); aborts with the trace otherwise. */
int fz_expect(const char *what, int rc, uint32_t allowed);
extern bool fz_null_arg; /* this step passed a null handle somewhere: EINVAL joins EHANDLE */
void fz_finding(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fz_trace(const char *op);

/* ---- handles ------------------------------------------------------------- */
/* An argument: a model object's handle (ok when live), or a stale, forged
 * or null one (never ok). */
typedef struct fz_arg {
  uint64_t bits;
  int slot; /* the model slot, or -1 */
  bool ok;
} fz_arg;
fz_arg fz_pick(int kind, fz_obj *objs, unsigned n, size_t stride);
fz_arg fz_pick_rt(void);
uint64_t fz_forged(void); /* a forged handle that matches no live one */
void fz_stale(int kind, uint64_t bits);
/* Slot `slot` of objs released its reference: stale unless another slot holds it. */
void fz_release(int kind, fz_obj *objs, unsigned n, size_t stride, int slot);
void fz_release_artifact(int slot);
bool fz_art_maybe(uint64_t bits); /* released but perhaps still cached: no status predicted */
int fz_free_slot(fz_obj *objs, unsigned n, size_t stride);
#define FZ_PICK(kind, arr)                                                                         \
  fz_pick((kind), &(arr)[0].o, sizeof(arr) / sizeof((arr)[0]), sizeof((arr)[0]))

/* ---- effects --------------------------------------------------------------- */
void fz_apply(const fz_effect *e);
/* Enqueues effect e on runtime r: applied now, or recorded by its capture. */
void fz_enqueue(int r, const fz_effect *e, bool is_kernel);
/* What a replay of g would name that was released since the capture (graph_launch then
 * refuses it), or NULL. */
const char *fz_graph_names_stale(const fz_graph *g);
void fz_graph_drop(fz_graph *g);
void fz_check_buffer(int b, uint64_t off, const uint8_t *got, uint64_t n, const char *what);
void fz_check_host(int h);
void fz_forget_runtime(int r);
void fz_fill_pattern(uint8_t *p, uint64_t n, uint32_t seed);
const char *fz_ptx(uint64_t *size); /* the seeded module's PTX text */

/* ---- operations (model_ops.h) ------------------------------------------- */
void fz_step(void);
void fz_op_host_code(void);
void fz_op_host_raw(void);
void fz_sync(int r);                         /* seal + witness_wait + release on runtime r */
void fz_order_after(int src_rt, int dst_rt); /* src_rt waits for dst_rt's work so far */

#endif
