/* tests/gpu/test_gpu_device.c -- GPU lane: the CUDA plugin initialises on a
 * real driver, describes the devices exactly as the driver does, and can be
 * opened and closed 1000 times without leaking memory or descriptors. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugin-cuda/cuda_decls.h"
#include "tests/testutil.h"

/* The driver, opened directly, as the reference. */
typedef struct reference {
  void *dl;
  t4a__CUresult (*cuInit)(unsigned int);
  t4a__CUresult (*cuDeviceGetCount)(int *);
  t4a__CUresult (*cuDeviceGet)(t4a__CUdevice *, int);
  t4a__CUresult (*cuDeviceGetName)(char *, int, t4a__CUdevice);
  t4a__CUresult (*cuDeviceGetUuid_v2)(t4a__CUuuid *, t4a__CUdevice);
  t4a__CUresult (*cuDeviceTotalMem_v2)(size_t *, t4a__CUdevice);
  t4a__CUresult (*cuDriverGetVersion)(int *);
} reference;

static void open_reference(reference *r) {
  r->dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(r->dl);
#define SYM(n)                                                                                     \
  *(void **)&r->n = dlsym(r->dl, #n);                                                              \
  ck_assert_ptr_nonnull(r->n)
  SYM(cuInit);
  SYM(cuDeviceGetCount);
  SYM(cuDeviceGet);
  SYM(cuDeviceGetName);
  SYM(cuDeviceGetUuid_v2);
  SYM(cuDeviceTotalMem_v2);
  SYM(cuDriverGetVersion);
#undef SYM
  ck_assert_int_eq(r->cuInit(0), 0);
}

START_TEST(init_and_devices_match_the_driver) {
  const t4a_gpu_backend_v1 *t;
  t4a_gpu_backend *b = t4a_test_open_cuda(&t);
  ck_assert_msg(t->init() == T4A_OK, "init: %s", t4a_test_backend_error(t));
  reference r;
  open_reference(&r);
  int n = 0, version = 0;
  ck_assert_int_eq(r.cuDeviceGetCount(&n), 0);
  ck_assert_int_eq(r.cuDriverGetVersion(&version), 0);
  int32_t count = 0;
  ck_assert_int_eq(t->device_count(&count), T4A_OK);
  ck_assert_int_eq(count, n);
  t4a_backend_info bi = {.struct_size = sizeof bi};
  ck_assert_int_eq(t->get_info(&bi), T4A_OK);
  ck_assert_int_eq(bi.driver_version, version);
  printf("driver CUDA %d.%d, %d device(s)\n", version / 1000, version % 1000 / 10, n);
  uint8_t uuids[64][16];
  for (int d = 0; d < n && d < 64; d++) {
    t4a_device_info i = {.struct_size = sizeof i};
    ck_assert_int_eq(t->device_info(d, &i), T4A_OK);
    t4a__CUdevice dev;
    char name[256];
    t4a__CUuuid uuid;
    size_t mem = 0;
    ck_assert_int_eq(r.cuDeviceGet(&dev, d), 0);
    ck_assert_int_eq(r.cuDeviceGetName(name, sizeof name, dev), 0);
    ck_assert_int_eq(r.cuDeviceGetUuid_v2(&uuid, dev), 0);
    ck_assert_int_eq(r.cuDeviceTotalMem_v2(&mem, dev), 0);
    ck_assert_str_eq(i.name, name);
    ck_assert_mem_eq(i.uuid, uuid.bytes, 16);
    ck_assert_uint_eq(i.total_memory, mem);
    ck_assert_int_gt(i.multiprocessors, 0);
    ck_assert_int_ge(i.max_threads_per_block, 1024);
    ck_assert_str_ne(i.pci_bus_id, "");
    if (strstr(i.name, "H200") || strstr(i.name, "H100")) {
      ck_assert_int_eq(i.cc_major, 9);
      ck_assert_int_eq(i.cc_minor, 0);
      ck_assert(i.flags & T4A_DEVICE_MEMORY_POOLS);
    }
    memcpy(uuids[d], i.uuid, 16);
    for (int e = 0; e < d; e++)
      ck_assert_msg(memcmp(uuids[d], uuids[e], 16) != 0, "devices %d and %d share a UUID", d, e);
    printf("device %d: %s, cc %d.%d, %d SMs, %.1f GiB, %s\n", d, i.name, (int)i.cc_major,
           (int)i.cc_minor, (int)i.multiprocessors, (double)i.total_memory / (1 << 30),
           i.pci_bus_id);
  }
  dlclose(r.dl);
  t4a_gpu_close(b);
}
END_TEST

static void cycle(void) {
  t4a_gpu_backend *b = NULL;
  ck_assert_int_eq(t4a_gpu_open_path(t4a_test_build_path(T4A_TEST_CUDA_PLUGIN), &b), T4A_OK);
  const t4a_gpu_backend_v1 *t = t4a_gpu_backend_table(b);
  ck_assert_int_eq(t->init(), T4A_OK);
  int32_t n = 0;
  ck_assert_int_eq(t->device_count(&n), T4A_OK);
  t4a_device_info i = {.struct_size = sizeof i};
  ck_assert_int_eq(t->device_info(0, &i), T4A_OK);
  ck_assert_int_eq(t4a_gpu_close(b), T4A_OK);
}

START_TEST(open_close_1000_times_leaks_nothing) {
  for (int i = 0; i < 20; i++) /* warm up: the driver's one-time state */
    cycle();
  int fds = t4a_test_open_fds();
  long rss = t4a_test_rss_kib();
  for (int i = 0; i < 1000; i++)
    cycle();
  int fds_after = t4a_test_open_fds();
  long rss_after = t4a_test_rss_kib();
  printf("1000 cycles: fds %d -> %d, RSS %ld -> %ld KiB\n", fds, fds_after, rss, rss_after);
  ck_assert_int_eq(fds_after, fds);
  ck_assert_int_lt(rss_after - rss, 1024); /* under 1 KiB per cycle */
}
END_TEST

int main(void) {
  Suite *s = suite_create("gpu-device");
  TCase *tc = tcase_create("device");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, init_and_devices_match_the_driver);
  tcase_add_test(tc, open_close_1000_times_leaks_nothing);
  suite_add_tcase(s, tc);
  return t4a_test_gpu_main(s, 1);
}
