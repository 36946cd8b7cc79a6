/* tests/cpu/test_compat.c -- the append-only promise across minors, on the
 * fake driver:
 *  - a consumer built against ABI 1.2 (this file) and plugins that say they
 *    are v1.0 and v1.1 (tests/cpu/libt4a_cudav10.so, libt4a_cudav11.so: the
 *    same code, the table cut at raw_end, at dlpack_import): every slot a
 *    later minor added reads NULL through the loader, every older slot
 *    works;
 *  - every struct that grew (t4a_device_info in 1.1; the runtime options,
 *    counters and t4a_memory_info in 1.2) and every struct 1.1 added
 *    (t4a_copy_2d, t4a_memory_info): an older caller's smaller struct_size
 *    gets exactly that many bytes written (options: read), a newer caller's
 *    larger one gets what the backend knows and struct_size says how much,
 *    a size below the first published one is T4A_EINVAL.
 * (Consumers built against the frozen v1.0 and v1.1 headers running against
 * this plugin are tests/cpu/test_compat_v10 and test_compat_v11.) */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tests/runtime/rtutil.h"

/* The slots ABI 1.1 appended. */
#define V1_1_SLOTS(X)                                                                              \
  X(memset)                                                                                        \
  X(copy_2d_h2d_pinned)                                                                            \
  X(copy_2d_d2h_pinned)                                                                            \
  X(copy_2d_d2d)                                                                                   \
  X(copy_2d_h2d)                                                                                   \
  X(copy_2d_d2h)                                                                                   \
  X(runtime_memory_info)                                                                           \
  X(host_register)                                                                                 \
  X(host_unregister)                                                                               \
  X(witness_elapsed)                                                                               \
  X(runtime_info)                                                                                  \
  X(launch_ex)                                                                                     \
  X(occupancy_max_active_blocks)                                                                   \
  X(occupancy_suggest_block_size)                                                                  \
  X(occupancy_max_active_clusters)                                                                 \
  X(graph_begin)                                                                                   \
  X(graph_end)                                                                                     \
  X(graph_launch)                                                                                  \
  X(graph_set_kernel_args)                                                                         \
  X(graph_info)                                                                                    \
  X(graph_release)                                                                                 \
  X(buffer_wrap_external)                                                                          \
  X(stream_wait_witness)                                                                           \
  X(runtime_wait_event)                                                                            \
  X(runtime_wait_stream)                                                                           \
  X(dlpack_export)                                                                                 \
  X(dlpack_import)

START_TEST(a_v1_0_plugin_shows_no_v1_1_slot) {
  t4a_gpu_backend *b = NULL;
  ck_assert_int_eq(t4a_gpu_open_path(t4a_test_build_path("tests/cpu/.libs/libt4a_cudav10.so"), &b),
                   T4A_OK);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  uint16_t major = 0, minor = 9;
  ck_assert_int_eq(t4a_gpu_backend_abi(b, &major, &minor), T4A_OK);
  ck_assert_uint_eq(major, 1);
  ck_assert_uint_eq(minor, 0);
  /* the loader's copy is sized to this consumer's header, its struct_size
   * the plugin's: every 1.1 slot reads NULL ("unsupported"), and HAS says
   * the plugin's table does not reach it */
#define SLOT_NULL(slot)                                                                            \
  ck_assert_msg(!T4A_GPU_BACKEND_V1_HAS(t, slot) && t->slot == NULL, #slot " is not NULL");
  ck_assert_ptr_nonnull(t);
  // cppcheck-suppress nullPointerRedundantCheck ; HAS checks t, which is non-NULL here
  V1_1_SLOTS(SLOT_NULL)
#undef SLOT_NULL
  /* and everything v1.0 works: a round trip through a runtime */
  ck_assert_int_eq(t->init(), T4A_OK);
  t4a_runtime rt;
  ck_assert_int_eq(t->runtime_create(0, NULL, &rt), T4A_OK);
  unsigned char in[4099], out[sizeof in];
  t4a_test_fill_random(in, sizeof in, t4a_test_seed());
  t4a_buffer d;
  ck_assert_int_eq(t->buffer_alloc(rt, sizeof in, &d), T4A_OK);
  ck_assert_int_eq(t->copy_h2d(rt, d, 0, in, sizeof in), T4A_OK);
  ck_assert_int_eq(t->copy_d2h(rt, out, d, 0, sizeof out), T4A_OK);
  ck_assert(memcmp(in, out, sizeof in) == 0);
  ck_assert_int_eq(t->runtime_destroy(rt, T4A_WAIT_FOREVER), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

/* The slots ABI 1.2 appended. */
#define V1_2_SLOTS(X) X(alloc_log_read)

START_TEST(a_v1_1_plugin_shows_no_v1_2_slot) {
  t4a_gpu_backend *b = NULL;
  ck_assert_int_eq(t4a_gpu_open_path(t4a_test_build_path("tests/cpu/.libs/libt4a_cudav11.so"), &b),
                   T4A_OK);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  uint16_t major = 0, minor = 9;
  ck_assert_int_eq(t4a_gpu_backend_abi(b, &major, &minor), T4A_OK);
  ck_assert_uint_eq(major, 1);
  ck_assert_uint_eq(minor, 1);
  ck_assert_ptr_nonnull(t);
  // cppcheck-suppress nullPointerRedundantCheck ; t is non-NULL here
  ck_assert_uint_eq(t->struct_size, T4A_GPU_BACKEND_V1_1_SIZE);
#define SLOT_NULL(slot)                                                                            \
  ck_assert_msg(!T4A_GPU_BACKEND_V1_HAS(t, slot) && t->slot == NULL, #slot " is not NULL");
  V1_2_SLOTS(SLOT_NULL)
#undef SLOT_NULL
  /* every v1.1 slot works: memset and a 2D copy through a runtime */
  ck_assert_int_eq(t->init(), T4A_OK);
  t4a_runtime rt;
  ck_assert_int_eq(t->runtime_create(0, NULL, &rt), T4A_OK);
  unsigned char in[4096], out[sizeof in], want[sizeof in];
  t4a_test_fill_random(in, sizeof in, t4a_test_seed());
  t4a_buffer d, e;
  ck_assert_int_eq(t->buffer_alloc(rt, sizeof in, &d), T4A_OK);
  ck_assert_int_eq(t->buffer_alloc(rt, sizeof in, &e), T4A_OK);
  ck_assert_int_eq(t->copy_h2d(rt, d, 0, in, sizeof in), T4A_OK);
  ck_assert_int_eq(t->memset(rt, e, 0, 0x3c, 1, sizeof in), T4A_OK);
  t4a_copy_2d g = {.struct_size = sizeof g,
                   .dst_offset = 3,
                   .dst_pitch = 64,
                   .src_offset = 5,
                   .src_pitch = 32,
                   .width = 20,
                   .rows = 40};
  ck_assert_int_eq(t->copy_2d_d2d(rt, e, d, &g), T4A_OK);
  ck_assert_int_eq(t->copy_d2h(rt, out, e, 0, sizeof out), T4A_OK);
  memset(want, 0x3c, sizeof want);
  for (size_t r = 0; r < 40; r++)
    memcpy(want + 3 + r * 64, in + 5 + r * 32, 20);
  ck_assert(memcmp(want, out, sizeof out) == 0);
  ck_assert_int_eq(t->runtime_destroy(rt, T4A_WAIT_FOREVER), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}
END_TEST

START_TEST(the_v1_2_plugin_has_every_slot) {
#define SLOT_SET(slot) ck_assert_msg(T->slot != NULL, #slot " is NULL");
  V1_1_SLOTS(SLOT_SET)
  V1_2_SLOTS(SLOT_SET)
#undef SLOT_SET
  uint16_t major = 0, minor = 0;
  ck_assert_int_eq(t4a_gpu_backend_abi(B, &major, &minor), T4A_OK);
  ck_assert_uint_eq(minor, T4A_GPU_BACKEND_ABI_MINOR);
}
END_TEST

/* A struct filled by the backend, with poison past what the caller says it
 * has; returns the struct_size the backend wrote back. */
static uint32_t device_info_with(uint32_t size, unsigned char *raw, size_t raw_size) {
  memset(raw, 0xa5, raw_size);
  memcpy(raw, &size, sizeof size);
  RT_OK(T->device_info(0, (t4a_device_info *)(void *)raw));
  uint32_t got;
  memcpy(&got, raw, sizeof got);
  for (size_t i = got; i < raw_size; i++)
    ck_assert_msg(raw[i] == 0xa5, "byte %zu written past struct_size %u", i, got);
  return got;
}

START_TEST(grown_structs_serve_older_and_newer_callers) {
  _Alignas(8) unsigned char raw[sizeof(t4a_device_info) + 64];
  /* an older (v1.0) caller: exactly its 376 bytes, no max_pitch */
  ck_assert_uint_eq(device_info_with(T4A_DEVICE_INFO_V1_0_SIZE, raw, sizeof raw),
                    T4A_DEVICE_INFO_V1_0_SIZE);
  /* this (v1.1) caller: everything, max_pitch included */
  ck_assert_uint_eq(device_info_with(sizeof(t4a_device_info), raw, sizeof raw),
                    sizeof(t4a_device_info));
  t4a_device_info now;
  memcpy(&now, raw, sizeof now);
  ck_assert_uint_gt(now.max_pitch, 0);
  ck_assert_str_eq(now.name, DEV.name);
  /* a newer caller (a struct larger than ours): what we know, said so */
  ck_assert_uint_eq(device_info_with(sizeof(t4a_device_info) + 32, raw, sizeof raw),
                    sizeof(t4a_device_info));
  /* below the first published size */
  t4a_device_info small = {.struct_size = T4A_DEVICE_INFO_V1_0_SIZE - 8};
  RT_EXPECT(T->device_info(0, &small), T4A_EINVAL);
  RT_DETAIL("struct_size");

  /* structs 1.1 introduced: their first size is the 1.1 one */
  t4a_runtime rt = rt_create();
  _Alignas(8) unsigned char mi[sizeof(t4a_memory_info) + 32];
  memset(mi, 0xa5, sizeof mi);
  uint32_t big = sizeof mi;
  memcpy(mi, &big, sizeof big);
  RT_OK(T->runtime_memory_info(rt, (t4a_memory_info *)(void *)mi));
  uint32_t got;
  memcpy(&got, mi, sizeof got);
  ck_assert_uint_eq(got, sizeof(t4a_memory_info));
  for (size_t i = got; i < sizeof mi; i++)
    ck_assert_uint_eq(mi[i], 0xa5);
  t4a_memory_info m = {.struct_size = T4A_MEMORY_INFO_V1_1_SIZE - 8};
  RT_EXPECT(T->runtime_memory_info(rt, &m), T4A_EINVAL);
  t4a_buffer d;
  RT_OK(T->buffer_alloc(rt, 4096, &d));
  t4a_copy_2d g = {.struct_size = T4A_COPY_2D_V1_1_SIZE - 8,
                   .width = 16,
                   .rows = 2,
                   .dst_pitch = 16,
                   .src_pitch = 16};
  RT_EXPECT(T->copy_2d_d2d(rt, d, d, &g), T4A_EINVAL);
  RT_DETAIL("struct_size");
  RT_OK(T->runtime_destroy(rt, T4A_WAIT_FOREVER));
}
END_TEST

/* Fills a struct of `size` bytes (its struct_size) inside raw, poisoned
 * past it; returns the struct_size written back. */
static uint32_t filled(int (*call)(t4a_runtime, void *), t4a_runtime rt, uint32_t size,
                       unsigned char *raw, size_t raw_size) {
  memset(raw, 0xa5, raw_size);
  memcpy(raw, &size, sizeof size);
  RT_OK(call(rt, raw));
  uint32_t got;
  memcpy(&got, raw, sizeof got);
  for (size_t i = got; i < raw_size; i++)
    ck_assert_msg(raw[i] == 0xa5, "byte %zu written past struct_size %u", i, got);
  return got;
}
static int counters_of(t4a_runtime rt, void *p) { return T->runtime_counters(rt, p); }
static int memory_of(t4a_runtime rt, void *p) { return T->runtime_memory_info(rt, p); }

static int not_called(const t4a_out_of_memory_info *info, void *user) {
  (void)info;
  (void)user;
  ck_abort_msg("bytes after a v1.1 caller's options were taken for a callback");
  return 0;
}

START_TEST(structs_grown_in_1_2_serve_older_and_newer_callers) {
  _Alignas(8) unsigned char raw[sizeof(t4a_runtime_counters) + 64];
  /* options: a 1.1 caller's bytes after its struct are never read (they
   * look like a one-byte budget and a callback) */
  t4a_runtime_options o;
  memset(&o, 0, sizeof o);
  o.struct_size = T4A_RUNTIME_OPTIONS_V1_1_SIZE;
  o.pool_limit_bytes = 1;
  o.out_of_memory = not_called;
  t4a_runtime old, now;
  RT_OK(T->runtime_create(0, &o, &old));
  o.struct_size = sizeof o; /* this caller: the budget applies */
  o.pool_limit_bytes = 64 << 10;
  o.out_of_memory = NULL;
  RT_OK(T->runtime_create(0, &o, &now));
  t4a_buffer b;
  RT_OK(T->buffer_alloc(old, 1 << 20, &b));
  RT_EXPECT(T->buffer_alloc(now, 1 << 20, &b), T4A_ENOMEM);
  RT_DETAIL("pool_limit_bytes");
  /* counters and memory info: exactly a 1.1 caller's bytes; all of 1.2's
   * for this caller; what the backend knows for a newer one */
  ck_assert_uint_eq(filled(counters_of, now, T4A_RUNTIME_COUNTERS_V1_1_SIZE, raw, sizeof raw),
                    T4A_RUNTIME_COUNTERS_V1_1_SIZE);
  ck_assert_uint_eq(filled(counters_of, now, sizeof(t4a_runtime_counters), raw, sizeof raw),
                    sizeof(t4a_runtime_counters));
  t4a_runtime_counters k;
  memcpy(&k, raw, sizeof k);
  ck_assert_uint_eq(k.out_of_memory_failures, 1);
  ck_assert_uint_eq(filled(counters_of, now, sizeof(t4a_runtime_counters) + 32, raw, sizeof raw),
                    sizeof(t4a_runtime_counters));
  ck_assert_uint_eq(filled(memory_of, now, T4A_MEMORY_INFO_V1_1_SIZE, raw, sizeof raw),
                    T4A_MEMORY_INFO_V1_1_SIZE);
  ck_assert_uint_eq(filled(memory_of, now, sizeof(t4a_memory_info), raw, sizeof raw),
                    sizeof(t4a_memory_info));
  t4a_memory_info m;
  memcpy(&m, raw, sizeof m);
  ck_assert_uint_eq(m.limit_bytes, 64 << 10);
  ck_assert_uint_eq(filled(memory_of, old, sizeof(t4a_memory_info), raw, sizeof raw),
                    sizeof(t4a_memory_info));
  memcpy(&m, raw, sizeof m);
  ck_assert_uint_eq(m.limit_bytes, UINT64_MAX);
  ck_assert_uint_eq(m.held_bytes, 1 << 20);
  RT_OK(T->runtime_destroy(old, T4A_WAIT_FOREVER));
  RT_OK(T->runtime_destroy(now, T4A_WAIT_FOREVER));
}
END_TEST

int main(void) {
  setenv("T4A_CUDA_LIBRARY", t4a_test_build_path(T4A_TEST_FAKE_CUDA), 1);
  Suite *s = suite_create("compat");
  TCase *tc = tcase_create("compat");
  tcase_add_checked_fixture(tc, rt_setup, rt_teardown);
  tcase_add_test(tc, a_v1_0_plugin_shows_no_v1_1_slot);
  tcase_add_test(tc, a_v1_1_plugin_shows_no_v1_2_slot);
  tcase_add_test(tc, the_v1_2_plugin_has_every_slot);
  tcase_add_test(tc, grown_structs_serve_older_and_newer_callers);
  tcase_add_test(tc, structs_grown_in_1_2_serve_older_and_newer_callers);
  suite_add_tcase(s, tc);
  return t4a_test_run(s);
}
