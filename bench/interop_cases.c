/* bench/interop_cases.c -- the interop slots, each paired with what a
 * consumer would do without them:
 *
 *   dlpack_export + deleter   building the same DLManagedTensor by hand
 *                             (malloc, fill, free): the cost per call of
 *                             handing a buffer to a framework
 *   dlpack_import + buffer_free   the driver query the import makes
 *                             (cuPointerGetAttributes): the cost per call of
 *                             taking a framework's tensor in
 *   all-reduce 1 GiB          NCCL (dlopen'ed, examples/nccl_dl.h) on two t4a
 *                             runtimes' streams inside raw sections, sealed
 *                             and waited for, against the same all-reduce on
 *                             two raw streams with cuStreamSynchronize; the
 *                             same communicators; goal <= 1.03x. Needs two
 *                             GPUs and libnccl (skipped, saying why, without)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "examples/nccl_dl.h"

#define MiB (1ull << 20)

static void seal_wait(t4a_runtime rt) {
  t4a_witness w;
  bench_check(E.t->seal(rt, &w), "seal");
  bench_check(E.t->witness_wait(w, T4A_WAIT_FOREVER), "witness_wait");
  bench_check(E.t->witness_release(w), "witness_release");
}

/* ---- DLPack export and import ------------------------------------------------------ */

typedef struct dl {
  t4a_buffer buf;
  t4a__CUdeviceptr raw;
  int64_t shape[2];
  t4a_dlpack_export q;
  t4a_dl_managed_tensor tensor; /* a producer's, over raw */
} dl;

static void *dl_setup(const bench_case *c) {
  (void)c;
  dl *x = calloc(1, sizeof *x);
  bench_check(E.t->buffer_alloc(E.rt, MiB, &x->buf), "buffer_alloc");
  bench_cu(E.cu.cuMemAllocFromPoolAsync(&x->raw, MiB, E.pool, E.stream), "alloc");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  seal_wait(E.rt);
  x->shape[0] = 512;
  x->shape[1] = 512;
  x->q = (t4a_dlpack_export){
      .struct_size = sizeof x->q, .dtype = {T4A_DL_FLOAT, 32, 1}, .ndim = 2, .shape = x->shape};
  x->tensor = (t4a_dl_managed_tensor){
      {(void *)(uintptr_t)x->raw, {T4A_DL_CUDA, 0}, 2, {T4A_DL_FLOAT, 32, 1}, x->shape, NULL, 0},
      NULL,
      NULL};
  return x;
}

static void dl_teardown(void *s) {
  dl *x = s;
  bench_check(E.t->buffer_free(E.rt, x->buf), "buffer_free");
  bench_cu(E.cu.cuMemFreeAsync(x->raw, E.stream), "free");
  bench_cu(E.cu.cuStreamSynchronize(E.stream), "cuStreamSynchronize");
  free(x);
}

static void export_ours(void *s, int batch) {
  dl *x = s;
  for (int i = 0; i < batch; i++) {
    void *out;
    bench_check(E.t->dlpack_export(E.rt, x->buf, &x->q, &out), "dlpack_export");
    t4a_dl_managed_tensor *t = out;
    t->deleter(t);
  }
}

typedef struct by_hand {
  t4a_dl_managed_tensor t;
  int64_t dims[4];
} by_hand;

static void by_hand_free(t4a_dl_managed_tensor *t) { free(t->manager_ctx); }

/* What a consumer writes without dlpack_export: the same struct, by hand. */
static void export_raw(void *s, int batch) {
  dl *x = s;
  for (int i = 0; i < batch; i++) {
    by_hand *h = malloc(sizeof *h);
    if (!h)
      abort();
    h->dims[0] = x->shape[0];
    h->dims[1] = x->shape[1];
    h->dims[2] = x->shape[1];
    h->dims[3] = 1;
    h->t = (t4a_dl_managed_tensor){
        {(void *)(uintptr_t)x->raw, {T4A_DL_CUDA, 0}, 2, x->q.dtype, h->dims, h->dims + 2, 0},
        h,
        by_hand_free};
    __asm__ volatile("" : : "r"(h) : "memory"); /* keep the stores */
    h->t.deleter(&h->t);
  }
}

static void import_ours(void *s, int batch) {
  dl *x = s;
  for (int i = 0; i < batch; i++) {
    t4a_buffer b;
    bench_check(E.t->dlpack_import(E.rt, &x->tensor, 0, &b, NULL), "dlpack_import");
    bench_check(E.t->buffer_free(E.rt, b), "buffer_free");
  }
}

/* The query an import makes, alone. */
static void import_raw(void *s, int batch) {
  dl *x = s;
  for (int i = 0; i < batch; i++) {
    unsigned type = 0;
    int ordinal = -1;
    t4a__CUdeviceptr start = 0, dptr = 0;
    size_t size = 0;
    t4a__CUpointer_attribute a[] = {
        T4A__CU_POINTER_ATTRIBUTE_MEMORY_TYPE, T4A__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        T4A__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, T4A__CU_POINTER_ATTRIBUTE_RANGE_SIZE,
        T4A__CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
    void *d[] = {&type, &ordinal, &start, &size, &dptr};
    bench_cu(E.cu.cuPointerGetAttributes(5, a, d, x->raw), "cuPointerGetAttributes");
  }
}

/* ---- NCCL all-reduce on two runtimes ----------------------------------------------------- */

static t4a_nccl nccl;
static char nccl_why[768];
static int nccl_state; /* 0 not tried, 1 loaded, -1 failed */

static const char *nccl_missing(const bench_case *c) {
  (void)c;
  if (!nccl_state)
    nccl_state = t4a_nccl_open(&nccl, nccl_why, sizeof nccl_why) == 0 ? 1 : -1;
  return nccl_state > 0 ? NULL : nccl_why;
}

typedef struct ar {
  uint64_t count;
  t4a_runtime rt[2];
  t4a_buffer buf[2];
  void *addr[2], *stream[2]; /* ours */
  t4a__CUcontext ctx[2];
  t4a__CUstream raw_stream[2];
  t4a__CUmemoryPool raw_pool[2];
  t4a__CUdeviceptr raw[2];
  t4a_nccl_comm comm[2];
} ar;

static void nccl_ok(int r, const char *what) {
  if (r != T4A_NCCL_SUCCESS) {
    fprintf(stderr, "t4a_bench: %s: %s\n", what, nccl.error_string(r));
    exit(1);
  }
}

static void *ar_setup(const bench_case *c) {
  ar *x = calloc(1, sizeof *x);
  x->count = c->arg / sizeof(float);
  x->rt[0] = E.rt;
  bench_check(E.t->runtime_create(1, NULL, &x->rt[1]), "runtime_create");
  for (int r = 0; r < 2; r++) {
    bench_check(E.t->buffer_alloc(x->rt[r], c->arg, &x->buf[r]), "buffer_alloc");
    bench_check(E.t->memset(x->rt[r], x->buf[r], 0, 0x3f800000u, 4, x->count), "memset");
    uint64_t a;
    bench_check(E.t->buffer_device_address(x->rt[r], x->buf[r], &a), "buffer_device_address");
    x->addr[r] = (void *)(uintptr_t)a;
    t4a_raw_runtime raw = {.struct_size = sizeof raw};
    bench_check(E.t->raw_runtime(x->rt[r], &raw), "raw_runtime");
    x->stream[r] = raw.stream;
    x->ctx[r] = raw.context;
    seal_wait(x->rt[r]);
    /* the raw side: its own stream and pool on each device */
    bench_cu(E.cu.cuCtxSetCurrent(x->ctx[r]), "cuCtxSetCurrent");
    bench_cu(E.cu.cuStreamCreate(&x->raw_stream[r], T4A__CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    t4a__CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = T4A__CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = T4A__CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = r;
    bench_cu(E.cu.cuMemPoolCreate(&x->raw_pool[r], &props), "cuMemPoolCreate");
    bench_cu(
        E.cu.cuMemAllocFromPoolAsync(&x->raw[r], (size_t)c->arg, x->raw_pool[r], x->raw_stream[r]),
        "alloc");
    bench_cu(E.cu.cuMemsetD32Async(x->raw[r], 0x3f800000u, (size_t)x->count, x->raw_stream[r]),
             "cuMemsetD32Async");
    bench_cu(E.cu.cuStreamSynchronize(x->raw_stream[r]), "cuStreamSynchronize");
  }
  bench_cu(E.cu.cuCtxSetCurrent(x->ctx[0]), "cuCtxSetCurrent");
  int devs[2] = {0, 1};
  nccl_ok(nccl.comm_init_all(x->comm, 2, devs), "ncclCommInitAll");
  return x;
}

static void ar_teardown(void *s) {
  ar *x = s;
  for (int r = 0; r < 2; r++) {
    nccl_ok(nccl.comm_destroy(x->comm[r]), "ncclCommDestroy");
    bench_check(E.t->buffer_free(x->rt[r], x->buf[r]), "buffer_free");
    bench_cu(E.cu.cuCtxSetCurrent(x->ctx[r]), "cuCtxSetCurrent");
    bench_cu(E.cu.cuMemFreeAsync(x->raw[r], x->raw_stream[r]), "cuMemFreeAsync");
    bench_cu(E.cu.cuStreamSynchronize(x->raw_stream[r]), "cuStreamSynchronize");
    bench_cu(E.cu.cuMemPoolDestroy(x->raw_pool[r]), "cuMemPoolDestroy");
    bench_cu(E.cu.cuStreamDestroy(x->raw_stream[r]), "cuStreamDestroy");
  }
  bench_cu(E.cu.cuCtxSetCurrent(x->ctx[0]), "cuCtxSetCurrent");
  seal_wait(x->rt[0]);
  bench_check(E.t->runtime_destroy(x->rt[1], T4A_WAIT_FOREVER), "runtime_destroy");
  free(x);
}

static void allreduce_ours(void *s, int batch) {
  ar *x = s;
  for (int i = 0; i < batch; i++) {
    t4a_raw_section sec[2] = {{.struct_size = sizeof sec[0]}, {.struct_size = sizeof sec[1]}};
    bench_check(E.t->raw_begin(x->rt[0], &sec[0]), "raw_begin");
    bench_check(E.t->raw_begin(x->rt[1], &sec[1]), "raw_begin");
    nccl_ok(nccl.group_start(), "ncclGroupStart");
    for (int r = 0; r < 2; r++)
      nccl_ok(nccl.all_reduce(x->addr[r], x->addr[r], x->count, T4A_NCCL_FLOAT32, T4A_NCCL_SUM,
                              x->comm[r], x->stream[r]),
              "ncclAllReduce");
    nccl_ok(nccl.group_end(), "ncclGroupEnd");
    bench_check(E.t->raw_end(x->rt[1], &sec[1]), "raw_end");
    bench_check(E.t->raw_end(x->rt[0], &sec[0]), "raw_end");
  }
  t4a_witness w[2];
  for (int r = 0; r < 2; r++)
    bench_check(E.t->seal(x->rt[r], &w[r]), "seal");
  for (int r = 0; r < 2; r++) {
    bench_check(E.t->witness_wait(w[r], T4A_WAIT_FOREVER), "witness_wait");
    bench_check(E.t->witness_release(w[r]), "witness_release");
  }
}

static void allreduce_raw(void *s, int batch) {
  ar *x = s;
  for (int i = 0; i < batch; i++) {
    nccl_ok(nccl.group_start(), "ncclGroupStart");
    for (int r = 0; r < 2; r++)
      nccl_ok(nccl.all_reduce((void *)(uintptr_t)x->raw[r], (void *)(uintptr_t)x->raw[r], x->count,
                              T4A_NCCL_FLOAT32, T4A_NCCL_SUM, x->comm[r], x->raw_stream[r]),
              "ncclAllReduce");
    nccl_ok(nccl.group_end(), "ncclGroupEnd");
  }
  for (int r = 0; r < 2; r++)
    bench_cu(E.cu.cuStreamSynchronize(x->raw_stream[r]), "cuStreamSynchronize");
  bench_cu(E.cu.cuCtxSetCurrent(x->ctx[0]), "cuCtxSetCurrent"); /* NCCL may switch devices */
}

/* ---- the table ------------------------------------------------------------------------------ */

const bench_case bench_interop_cases[] = {
    {.name = "dlpack_export+deleter (raw: by hand)",
     .batch = 1000,
     .samples = 21,
     .warmup = 2,
     .target_kind = TARGET_NONE,
     .setup = dl_setup,
     .ours = export_ours,
     .raw = export_raw,
     .teardown = dl_teardown},
    {.name = "dlpack_import+free (raw: ptr query)",
     .batch = 1000,
     .samples = 21,
     .warmup = 2,
     .target_kind = TARGET_NONE,
     .setup = dl_setup,
     .ours = import_ours,
     .raw = import_raw,
     .teardown = dl_teardown},
    {.name = "NCCL all-reduce 1 GiB on 2 runtimes",
     .batch = 1,
     .samples = 11,
     .warmup = 2,
     .target_kind = TARGET_RATIO_MAX,
     .target = 1.03,
     .arg = 1024 * MiB,
     .setup = ar_setup,
     .ours = allreduce_ours,
     .raw = allreduce_raw,
     .teardown = ar_teardown,
     .min_devices = 2,
     .skip = nccl_missing},
    {.name = NULL},
};
