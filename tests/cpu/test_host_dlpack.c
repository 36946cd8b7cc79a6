/* tests/cpu/test_host_dlpack.c -- DLPack on the host backend (plugin-host,
 * libt4a_host.so; no GPU): dlpack_export makes kDLCPU tensors whose data is
 * the buffer's memory (no copy), dlpack_import wraps a host producer's
 * tensor (kDLCPU, kDLCUDAHost) as an external buffer released through the
 * tensor's deleter once its last use completed, a round trip between two
 * runtimes shares the bytes, and bad requests are refused before anything
 * is made or owned. The checks common to both backends (backend-core/dlpack.c) are
 * test_interop's on the CUDA lanes; this file covers the host's device
 * choices and that the memory really is shared. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "t4a/gpu_loader.h"
#include "tests/testutil.h"

static t4a_gpu_backend *B;
static const t4a_gpu_backend_v1 *T;

#define OK(call)                                                                                   \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    ck_assert_msg(rc_ == T4A_OK, "%s: %s: %s", #call, t4a_status_name(rc_),                        \
                  t4a_test_backend_error(T));                                                      \
  } while (0)
#define EXPECT(call, status)                                                                       \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    ck_assert_msg(rc_ == (status), "%s: %s, want %s (%s)", #call, t4a_status_name(rc_),            \
                  t4a_status_name(status), t4a_test_backend_error(T));                             \
  } while (0)

static void setup(void) {
  int rc = t4a_gpu_open_path(t4a_test_build_path("plugin-host/.libs/libt4a_host.so"), &B);
  ck_assert_msg(rc == T4A_OK, "open the host plugin: %s", t4a_gpu_last_error());
  T = t4a_gpu_backend_table(B);
  ck_assert_str_eq(T->name, "host");
  OK(T->init());
}

static void teardown(void) { t4a_gpu_close(B); }

static t4a_runtime rt_create(void) {
  t4a_runtime rt;
  OK(T->runtime_create(0, NULL, &rt));
  return rt;
}

/* Everything rt enqueued so far has run. */
static void rt_sync(t4a_runtime rt) {
  t4a_witness w;
  OK(T->seal(rt, &w));
  OK(T->witness_wait(w, T4A_WAIT_FOREVER));
  OK(T->witness_release(w));
}

static uint64_t address_of(t4a_runtime rt, t4a_buffer b) {
  uint64_t a = 0;
  OK(T->buffer_device_address(rt, b, &a));
  return a;
}

static int deletes;
static void *last_user;
static void count_delete(void *user) {
  deletes++;
  last_user = user;
}

static const t4a_dl_data_type F32 = {T4A_DL_FLOAT, 32, 1};

static t4a_dlpack_export request(uint32_t flags, uint64_t offset, int32_t ndim,
                                 const int64_t *shape, const int64_t *strides) {
  t4a_dlpack_export q = {.struct_size = sizeof q,
                         .flags = flags,
                         .offset = offset,
                         .dtype = F32,
                         .ndim = ndim,
                         .shape = shape,
                         .strides = strides,
                         .on_delete = count_delete,
                         .user = &deletes};
  return q;
}

START_TEST(export_is_a_cpu_tensor_over_the_buffers_memory) {
  t4a_runtime rt = rt_create();
  const uint64_t n = 4096;
  t4a_buffer b;
  OK(T->buffer_alloc(rt, n, &b));
  float ref[1024];
  for (int i = 0; i < 1024; i++)
    ref[i] = (float)i * 0.5f;
  OK(T->copy_h2d(rt, b, 0, ref, n));
  rt_sync(rt);
  deletes = 0;
  int64_t shape[2] = {3, 4};
  t4a_dlpack_export q = request(0, 64, 2, shape, NULL);
  void *out = NULL;
  OK(T->dlpack_export(rt, b, &q, &out));
  t4a_dl_managed_tensor *lt = out;
  ck_assert_int_eq(lt->dl_tensor.device.device_type, T4A_DL_CPU);
  ck_assert_int_eq(lt->dl_tensor.device.device_id, 0);
  ck_assert_ptr_eq(lt->dl_tensor.data, (void *)(uintptr_t)(address_of(rt, b) + 64));
  ck_assert(lt->dl_tensor.strides[0] == 4 && lt->dl_tensor.strides[1] == 1);
  /* no copy: the tensor reads what the buffer holds and writes into it */
  const float *data = lt->dl_tensor.data;
  ck_assert(data[0] == ref[16] && data[11] == ref[27]);
  ((float *)lt->dl_tensor.data)[1] = -7.0f;
  float got[1024];
  OK(T->copy_d2h(rt, got, b, 0, n));
  ck_assert(got[17] == -7.0f && got[16] == ref[16]);
  lt->deleter(lt);
  ck_assert_int_eq(deletes, 1);
  ck_assert_ptr_eq(last_user, &deletes);
  /* versioned, read-only, byte_offset form */
  q = request(T4A_DLPACK_VERSIONED | T4A_DLPACK_READ_ONLY | T4A_DLPACK_BYTE_OFFSET, 128, 2, shape,
              NULL);
  OK(T->dlpack_export(rt, b, &q, &out));
  t4a_dl_managed_tensor_versioned *vt = out;
  ck_assert_int_eq(vt->dl_tensor.device.device_type, T4A_DL_CPU);
  ck_assert_uint_eq(vt->version.major, T4A_DLPACK_MAJOR);
  ck_assert_uint_eq(vt->flags, T4A_DL_FLAG_READ_ONLY);
  ck_assert_ptr_eq(vt->dl_tensor.data, (void *)(uintptr_t)address_of(rt, b));
  ck_assert_uint_eq(vt->dl_tensor.byte_offset, 128);
  /* the deleter outlives the runtime */
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  vt->deleter(vt);
  ck_assert_int_eq(deletes, 2);
}
END_TEST

START_TEST(export_refuses_bad_requests) {
  t4a_runtime rt = rt_create(), other = rt_create();
  const uint64_t n = 4096;
  t4a_buffer b, ob;
  OK(T->buffer_alloc(rt, n, &b));
  OK(T->buffer_alloc(other, n, &ob));
  deletes = 0;
  int64_t shape[2] = {32, 32}, neg[1] = {-1};
  static const int64_t back[2] = {-32, 1};
  t4a_dlpack_export q = request(0, 0, 2, shape, NULL);
  void *out = (void *)1;
#define BAD(edit, status)                                                                          \
  do {                                                                                             \
    t4a_dlpack_export r = q;                                                                       \
    edit;                                                                                          \
    out = (void *)1;                                                                               \
    EXPECT(T->dlpack_export(rt, b, &r, &out), status);                                             \
    ck_assert_ptr_null(out);                                                                       \
  } while (0)
  BAD(r.struct_size = 8, T4A_EINVAL);
  BAD(r.flags = 0x100, T4A_EINVAL);
  BAD(r.flags = T4A_DLPACK_READ_ONLY, T4A_EINVAL);
  BAD(r.ndim = T4A_DLPACK_MAX_NDIM + 1, T4A_EINVAL);
  BAD((r.shape = neg, r.ndim = 1), T4A_EINVAL);
  BAD(r.dtype.bits = 4, T4A_EUNSUPPORTED);
  BAD(r.offset = 4, T4A_ERANGE); /* the last element runs past the end */
  BAD(r.strides = back, T4A_ERANGE);
#undef BAD
  EXPECT(T->dlpack_export(rt, b, &q, NULL), T4A_EINVAL);
  EXPECT(T->dlpack_export(rt, ob, &q, &out), T4A_EHANDLE); /* another runtime's buffer */
  EXPECT(T->dlpack_export((t4a_runtime){0x1234}, b, &q, &out), T4A_EHANDLE);
  OK(T->buffer_free(rt, b));
  EXPECT(T->dlpack_export(rt, b, &q, &out), T4A_EHANDLE); /* freed */
  ck_assert_int_eq(deletes, 0);                           /* nothing made, nothing deleted */
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
}
END_TEST

/* A tensor a host producer made (NumPy, PyTorch CPU, JAX CPU would). */
typedef struct made {
  t4a_dl_managed_tensor_versioned v;
  t4a_dl_managed_tensor l;
  int64_t shape[2], strides[2];
  int deleted;
} made;

static void made_delete_v(t4a_dl_managed_tensor_versioned *t) {
  ((made *)t->manager_ctx)->deleted++;
}
static void made_delete_l(t4a_dl_managed_tensor *t) { ((made *)t->manager_ctx)->deleted++; }

static void make_tensor(made *m, void *data, int32_t type, int32_t ndim, const int64_t *shape,
                        const int64_t *strides, t4a_dl_data_type dt) {
  memset(m, 0, sizeof *m);
  memcpy(m->shape, shape, (size_t)ndim * sizeof *shape);
  if (strides)
    memcpy(m->strides, strides, (size_t)ndim * sizeof *strides);
  t4a_dl_tensor t = {.data = data,
                     .device = {type, 0},
                     .ndim = ndim,
                     .dtype = dt,
                     .shape = m->shape,
                     .strides = strides ? m->strides : NULL};
  m->v = (t4a_dl_managed_tensor_versioned){{1, 1}, m, made_delete_v, 0, t};
  m->l = (t4a_dl_managed_tensor){t, m, made_delete_l};
}

START_TEST(import_wraps_a_host_producers_memory) {
  t4a_runtime rt = rt_create();
  enum { N = 64 * 1024 };
  unsigned char *mem = malloc(N), *ref = malloc(N), *got = malloc(N);
  ck_assert(mem && ref && got);
  t4a_test_fill_random(ref, N, t4a_test_seed());
  memcpy(mem, ref, N);
  made m;
  int64_t shape[2] = {100, 30};
  make_tensor(&m, mem + 256, T4A_DL_CPU, 2, shape, NULL, F32);
  t4a_buffer ext;
  uint64_t off = 99, size = 0;
  OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, &off));
  ck_assert_uint_eq(off, 0);
  OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, (uint64_t)100 * 30 * 4);
  ck_assert_uint_eq(address_of(rt, ext), (uint64_t)(uintptr_t)(mem + 256)); /* no copy */
  OK(T->copy_d2h(rt, got, ext, 0, size));
  ck_assert(memcmp(got, ref + 256, size) == 0);
  OK(T->memset(rt, ext, 0, 0xab, 1, 1000)); /* the runtime writes the producer's memory */
  memset(ref + 256, 0xab, 1000);
  OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(m.deleted, 1); /* let go once the memset ran */
  ck_assert(memcmp(mem, ref, N) == 0);
  /* legacy, a negative stride: the span and element 0's offset; kDLCUDAHost is host memory */
  int64_t shape2[2] = {4, 8}, strides2[2] = {-64, 2};
  made l;
  make_tensor(&l, mem + 4096, T4A_DL_CUDA_HOST, 2, shape2, strides2,
              (t4a_dl_data_type){T4A_DL_UINT, 16, 1});
  OK(T->dlpack_import(rt, &l.l, 0, &ext, &off));
  ck_assert_uint_eq(off, (uint64_t)3 * 64 * 2);
  OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, (uint64_t)(3 * 64 + 7 * 2 + 1) * 2);
  ck_assert_uint_eq(address_of(rt, ext), (uint64_t)(uintptr_t)(mem + 4096 - off));
  OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(l.deleted, 1);
  /* read-only: refused unless allowed */
  make_tensor(&m, mem, T4A_DL_CPU, 2, shape, NULL, F32);
  m.v.flags = T4A_DL_FLAG_READ_ONLY;
  EXPECT(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, NULL), T4A_EINVAL);
  OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED | T4A_DLPACK_ALLOW_READ_ONLY, &ext, NULL));
  ck_assert_int_eq(m.deleted, 0);
  /* destroy lets what it still holds go */
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  ck_assert_int_eq(m.deleted, 1);
  free(mem);
  free(ref);
  free(got);
}
END_TEST

START_TEST(import_refuses_and_leaves_the_tensor_to_its_owner) {
  t4a_runtime rt = rt_create();
  static uint32_t mem[1024];
  int64_t shape[1] = {1024};
  made m;
  t4a_buffer out;
#define REFUSED(edit, flags, status)                                                               \
  do {                                                                                             \
    make_tensor(&m, mem, T4A_DL_CPU, 1, shape, NULL, F32);                                         \
    edit;                                                                                          \
    out.bits = 7;                                                                                  \
    EXPECT(T->dlpack_import(rt, &m.v, (flags), &out, NULL), status);                               \
    ck_assert_uint_eq(out.bits, 0);                                                                \
    ck_assert_int_eq(m.deleted, 0);                                                                \
  } while (0)
  REFUSED(m.v.dl_tensor.device.device_type = T4A_DL_CUDA, T4A_DLPACK_VERSIONED, T4A_EUNSUPPORTED);
  REFUSED(m.v.dl_tensor.device.device_type = T4A_DL_CUDA_MANAGED, T4A_DLPACK_VERSIONED,
          T4A_EUNSUPPORTED);
  REFUSED(m.v.version.major = 2, T4A_DLPACK_VERSIONED, T4A_EUNSUPPORTED);
  REFUSED(m.v.dl_tensor.data = NULL, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  REFUSED(m.v.dl_tensor.ndim = -3, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  REFUSED(m.v.dl_tensor.dtype.bits = 6, T4A_DLPACK_VERSIONED, T4A_EUNSUPPORTED);
  REFUSED(m.v.dl_tensor.byte_offset = UINT64_MAX - 16, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  REFUSED((void)0, 0x40, T4A_EINVAL); /* unknown flags */
  /* memory registered read-only is never a (writable) buffer */
  t4a_host_buffer reg;
  OK(T->host_register(rt, mem, sizeof mem, T4A_HOST_REGISTER_READ_ONLY, &reg));
  REFUSED((void)0, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  OK(T->host_unregister(rt, reg));
  EXPECT(T->dlpack_import(rt, NULL, 0, &out, NULL), T4A_EINVAL);
  EXPECT(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, NULL, NULL), T4A_EINVAL);
  EXPECT(T->dlpack_import((t4a_runtime){0x1234}, &m.v, T4A_DLPACK_VERSIONED, &out, NULL),
         T4A_EHANDLE);
#undef REFUSED
  ck_assert_int_eq(m.deleted, 0);
  OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(round_trip_between_runtimes_shares_the_bytes) {
  t4a_runtime a = rt_create(), b = rt_create();
  enum { N = 256 * 1024 };
  unsigned char *ref = malloc(N), *got = malloc(N);
  ck_assert(ref && got);
  t4a_test_fill_random(ref, N, t4a_test_seed());
  t4a_buffer x;
  OK(T->buffer_alloc(a, N, &x));
  OK(T->copy_h2d(a, x, 0, ref, N));
  deletes = 0;
  for (int versioned = 0; versioned < 2; versioned++) {
    int64_t shape[2] = {256, 256};
    t4a_dlpack_export q = request(versioned ? T4A_DLPACK_VERSIONED : 0, 0, 2, shape, NULL);
    void *tensor;
    OK(T->dlpack_export(a, x, &q, &tensor));
    t4a_witness w;
    OK(T->seal(a, &w)); /* b's work follows a's (the stream protocol, on the host) */
    OK(T->runtime_wait_witness(b, w));
    OK(T->witness_release(w));
    t4a_buffer y;
    OK(T->dlpack_import(b, tensor, versioned ? T4A_DLPACK_VERSIONED : 0, &y, NULL));
    ck_assert_uint_eq(address_of(b, y), address_of(a, x));
    OK(T->copy_d2h(b, got, y, 0, N));
    ck_assert(memcmp(got, ref, N) == 0);
    OK(T->memset(b, y, 0, 0x77, 1, 1000));
    memset(ref, 0x77, 1000);
    OK(T->buffer_free(b, y));
    rt_sync(b);
    ck_assert_int_eq(deletes, versioned + 1);
    OK(T->copy_d2h(a, got, x, 0, N));
    ck_assert(memcmp(got, ref, N) == 0);
  }
  OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
  OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  free(ref);
  free(got);
}
END_TEST

int main(void) {
  Suite *s = suite_create("host_dlpack");
  TCase *tc = tcase_create("dlpack");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, export_is_a_cpu_tensor_over_the_buffers_memory);
  tcase_add_test(tc, export_refuses_bad_requests);
  tcase_add_test(tc, import_wraps_a_host_producers_memory);
  tcase_add_test(tc, import_refuses_and_leaves_the_tensor_to_its_owner);
  tcase_add_test(tc, round_trip_between_runtimes_shares_the_bytes);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
