/* tests/cpu/test_host_dlpack.c -- DLPack on the host backend (plugin-host,
 * libt4a_host.so; no GPU): dlpack_export makes kDLCPU tensors whose data is
 * the buffer's memory (no copy), dlpack_import wraps a host producer's
 * tensor (kDLCPU, kDLCUDAHost) as an external buffer released through the
 * tensor's deleter once its last use completed, a round trip between two
 * runtimes shares the bytes, and bad requests are refused before anything
 * is made or owned. The checks common to both backends (backend-core/dlpack.c) are
 * test_interop's, in every lane (this one's too); this file covers the
 * host's device choices and that the memory really is shared. The request
 * and tensor helpers are tests/runtime/rtutil's (rt_dl_*). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

START_TEST(export_is_a_cpu_tensor_over_the_buffers_memory) {
  ck_assert_str_eq(T->name, "host");
  t4a_runtime rt = rt_create();
  const uint64_t n = 4096;
  t4a_buffer b;
  RT_OK(T->buffer_alloc(rt, n, &b));
  float ref[1024];
  for (int i = 0; i < 1024; i++)
    ref[i] = (float)i * 0.5f;
  RT_OK(T->copy_h2d(rt, b, 0, ref, n));
  rt_sync(rt);
  rt_dl_deletes = 0;
  int64_t shape[2] = {3, 4};
  t4a_dlpack_export q = rt_dl_request(0, 64, RT_DL_F32, 2, shape, NULL);
  void *out = NULL;
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  t4a_dl_managed_tensor *lt = out;
  ck_assert_int_eq(lt->dl_tensor.device.device_type, T4A_DL_CPU);
  ck_assert_int_eq(lt->dl_tensor.device.device_id, 0);
  ck_assert_ptr_eq(lt->dl_tensor.data, (void *)(uintptr_t)(rt_address(rt, b) + 64));
  ck_assert(lt->dl_tensor.strides[0] == 4 && lt->dl_tensor.strides[1] == 1);
  /* no copy: the tensor reads what the buffer holds and writes into it */
  const float *data = lt->dl_tensor.data;
  ck_assert(data[0] == ref[16] && data[11] == ref[27]);
  ((float *)lt->dl_tensor.data)[1] = -7.0f;
  float got[1024];
  RT_OK(T->copy_d2h(rt, got, b, 0, n));
  ck_assert(got[17] == -7.0f && got[16] == ref[16]);
  lt->deleter(lt);
  ck_assert_int_eq(rt_dl_deletes, 1);
  ck_assert_ptr_eq(rt_dl_last_user, &rt_dl_deletes);
  /* versioned, read-only, byte_offset form */
  q = rt_dl_request(T4A_DLPACK_VERSIONED | T4A_DLPACK_READ_ONLY | T4A_DLPACK_BYTE_OFFSET, 128,
                    RT_DL_F32, 2, shape, NULL);
  RT_OK(T->dlpack_export(rt, b, &q, &out));
  t4a_dl_managed_tensor_versioned *vt = out;
  ck_assert_int_eq(vt->dl_tensor.device.device_type, T4A_DL_CPU);
  ck_assert_uint_eq(vt->version.major, T4A_DLPACK_MAJOR);
  ck_assert_uint_eq(vt->flags, T4A_DL_FLAG_READ_ONLY);
  ck_assert_ptr_eq(vt->dl_tensor.data, (void *)(uintptr_t)rt_address(rt, b));
  ck_assert_uint_eq(vt->dl_tensor.byte_offset, 128);
  /* the deleter outlives the runtime */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  vt->deleter(vt);
  ck_assert_int_eq(rt_dl_deletes, 2);
}
END_TEST

START_TEST(export_refuses_bad_requests) {
  t4a_runtime rt = rt_create(), other = rt_create();
  const uint64_t n = 4096;
  t4a_buffer b, ob;
  RT_OK(T->buffer_alloc(rt, n, &b));
  RT_OK(T->buffer_alloc(other, n, &ob));
  rt_dl_deletes = 0;
  int64_t shape[2] = {32, 32}, neg[1] = {-1};
  static const int64_t back[2] = {-32, 1};
  t4a_dlpack_export q = rt_dl_request(0, 0, RT_DL_F32, 2, shape, NULL);
  void *out = (void *)1;
#define BAD(edit, status)                                                                          \
  do {                                                                                             \
    t4a_dlpack_export r = q;                                                                       \
    edit;                                                                                          \
    out = (void *)1;                                                                               \
    RT_EXPECT(T->dlpack_export(rt, b, &r, &out), status);                                          \
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
  RT_EXPECT(T->dlpack_export(rt, b, &q, NULL), T4A_EINVAL);
  RT_EXPECT(T->dlpack_export(rt, ob, &q, &out), T4A_EHANDLE); /* another runtime's buffer */
  RT_EXPECT(T->dlpack_export((t4a_runtime){0x1234}, b, &q, &out), T4A_EHANDLE);
  RT_OK(T->buffer_free(rt, b));
  RT_EXPECT(T->dlpack_export(rt, b, &q, &out), T4A_EHANDLE); /* freed */
  ck_assert_int_eq(rt_dl_deletes, 0);                        /* nothing made, nothing deleted */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(other, T4A_WAIT_FOREVER));
}
END_TEST

/* Tensors a host producer made (NumPy, PyTorch CPU, JAX CPU would): rt_dl_make. */

START_TEST(import_wraps_a_host_producers_memory) {
  t4a_runtime rt = rt_create();
  enum { N = 64 * 1024 };
  unsigned char *mem = malloc(N), *ref = malloc(N), *got = malloc(N);
  ck_assert(mem && ref && got);
  t4a_test_fill_random(ref, N, t4a_test_seed());
  memcpy(mem, ref, N);
  rt_dl_made m;
  int64_t shape[2] = {100, 30};
  rt_dl_make(&m, (uint64_t)(uintptr_t)(mem + 256), 0, T4A_DL_CPU, 2, shape, NULL, RT_DL_F32);
  t4a_buffer ext;
  uint64_t off = 99, size = 0;
  RT_OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, &off));
  ck_assert_uint_eq(off, 0);
  RT_OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, (uint64_t)100 * 30 * 4);
  ck_assert_uint_eq(rt_address(rt, ext), (uint64_t)(uintptr_t)(mem + 256)); /* no copy */
  RT_OK(T->copy_d2h(rt, got, ext, 0, size));
  ck_assert(memcmp(got, ref + 256, size) == 0);
  RT_OK(T->memset(rt, ext, 0, 0xab, 1, 1000)); /* the runtime writes the producer's memory */
  memset(ref + 256, 0xab, 1000);
  RT_OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(m.deleted, 1); /* let go once the memset ran */
  ck_assert(memcmp(mem, ref, N) == 0);
  /* legacy, a negative stride: the span and element 0's offset; kDLCUDAHost is host memory */
  int64_t shape2[2] = {4, 8}, strides2[2] = {-64, 2};
  rt_dl_made l;
  rt_dl_make(&l, (uint64_t)(uintptr_t)(mem + 4096), 0, T4A_DL_CUDA_HOST, 2, shape2, strides2,
             (t4a_dl_data_type){T4A_DL_UINT, 16, 1});
  RT_OK(T->dlpack_import(rt, &l.l, 0, &ext, &off));
  ck_assert_uint_eq(off, (uint64_t)3 * 64 * 2);
  RT_OK(T->buffer_size(rt, ext, &size));
  ck_assert_uint_eq(size, (uint64_t)(3 * 64 + 7 * 2 + 1) * 2);
  ck_assert_uint_eq(rt_address(rt, ext), (uint64_t)(uintptr_t)(mem + 4096 - off));
  RT_OK(T->buffer_free(rt, ext));
  rt_sync(rt);
  ck_assert_int_eq(l.deleted, 1);
  /* read-only: refused unless allowed */
  rt_dl_make(&m, (uint64_t)(uintptr_t)(mem), 0, T4A_DL_CPU, 2, shape, NULL, RT_DL_F32);
  m.v.flags = T4A_DL_FLAG_READ_ONLY;
  RT_EXPECT(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, &ext, NULL), T4A_EINVAL);
  RT_OK(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED | T4A_DLPACK_ALLOW_READ_ONLY, &ext, NULL));
  ck_assert_int_eq(m.deleted, 0);
  /* destroy lets what it still holds go */
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
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
  rt_dl_made m;
  t4a_buffer out;
#define REFUSED(edit, flags, status)                                                               \
  do {                                                                                             \
    rt_dl_make(&m, (uint64_t)(uintptr_t)(mem), 0, T4A_DL_CPU, 1, shape, NULL, RT_DL_F32);          \
    edit;                                                                                          \
    out.bits = 7;                                                                                  \
    RT_EXPECT(T->dlpack_import(rt, &m.v, (flags), &out, NULL), status);                            \
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
  RT_OK(T->host_register(rt, mem, sizeof mem, T4A_HOST_REGISTER_READ_ONLY, &reg));
  REFUSED((void)0, T4A_DLPACK_VERSIONED, T4A_EINVAL);
  RT_OK(T->host_unregister(rt, reg));
  RT_EXPECT(T->dlpack_import(rt, NULL, 0, &out, NULL), T4A_EINVAL);
  RT_EXPECT(T->dlpack_import(rt, &m.v, T4A_DLPACK_VERSIONED, NULL, NULL), T4A_EINVAL);
  RT_EXPECT(T->dlpack_import((t4a_runtime){0x1234}, &m.v, T4A_DLPACK_VERSIONED, &out, NULL),
            T4A_EHANDLE);
#undef REFUSED
  ck_assert_int_eq(m.deleted, 0);
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

START_TEST(round_trip_between_runtimes_shares_the_bytes) {
  t4a_runtime a = rt_create(), b = rt_create();
  enum { N = 256 * 1024 };
  unsigned char *ref = malloc(N), *got = malloc(N);
  ck_assert(ref && got);
  t4a_test_fill_random(ref, N, t4a_test_seed());
  t4a_buffer x;
  RT_OK(T->buffer_alloc(a, N, &x));
  RT_OK(T->copy_h2d(a, x, 0, ref, N));
  rt_dl_deletes = 0;
  for (int versioned = 0; versioned < 2; versioned++) {
    int64_t shape[2] = {256, 256};
    t4a_dlpack_export q =
        rt_dl_request(versioned ? T4A_DLPACK_VERSIONED : 0, 0, RT_DL_F32, 2, shape, NULL);
    void *tensor;
    RT_OK(T->dlpack_export(a, x, &q, &tensor));
    t4a_witness w;
    RT_OK(T->seal(a, &w)); /* b's work follows a's (the stream protocol, on the host) */
    RT_OK(T->runtime_wait_witness(b, w));
    RT_OK(T->witness_release(w));
    t4a_buffer y;
    RT_OK(T->dlpack_import(b, tensor, versioned ? T4A_DLPACK_VERSIONED : 0, &y, NULL));
    ck_assert_uint_eq(rt_address(b, y), rt_address(a, x));
    RT_OK(T->copy_d2h(b, got, y, 0, N));
    ck_assert(memcmp(got, ref, N) == 0);
    RT_OK(T->memset(b, y, 0, 0x77, 1, 1000));
    memset(ref, 0x77, 1000);
    RT_OK(T->buffer_free(b, y));
    rt_sync(b);
    ck_assert_int_eq(rt_dl_deletes, versioned + 1);
    RT_OK(T->copy_d2h(a, got, x, 0, N));
    ck_assert(memcmp(got, ref, N) == 0);
  }
  RT_OK(T->runtime_destroy(b, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(a, T4A_WAIT_FOREVER));
  free(ref);
  free(got);
}
END_TEST

int main(void) {
  Suite *s = rt_suite("host_dlpack");
  TCase *tc = rt_tcase(s, "dlpack", 60);
  tcase_add_test(tc, export_is_a_cpu_tensor_over_the_buffers_memory);
  tcase_add_test(tc, export_refuses_bad_requests);
  tcase_add_test(tc, import_wraps_a_host_producers_memory);
  tcase_add_test(tc, import_refuses_and_leaves_the_tensor_to_its_owner);
  tcase_add_test(tc, round_trip_between_runtimes_shares_the_bytes);
  return rt_run(s, 1);
}
