/* tests/cpu/host_fixture.c -- see host_fixture.h. */
#include "config.h"

#include <stdio.h>

#include "tests/cpu/host_fixture.h"

t4a_gpu_backend *B;
const t4a_gpu_backend_v1 *T;

void host_setup(void) {
  int rc = t4a_gpu_open_path(t4a_test_build_path("plugin-host/.libs/libt4a_host.so"), &B);
  ck_assert_msg(rc == T4A_OK, "open the host plugin: %s", t4a_gpu_last_error());
  T = t4a_gpu_backend_table(B);
  OK(T->init());
}

void host_teardown(void) { t4a_gpu_close(B); }

int host_compiler(char *path, size_t size) {
  t4a_gpu_backend *b;
  if (t4a_gpu_open_path(t4a_test_build_path("plugin-host/.libs/libt4a_host.so"), &b) != T4A_OK)
    return 99;
  t4a_compiler_info ci = {.struct_size = sizeof ci};
  int rc = t4a_gpu_backend_table(b)->compiler_info(&ci);
  t4a_gpu_close(b);
  if (rc != T4A_OK || ci.status != T4A_OK) {
    printf("SKIP: no host C++ compiler: %s\n", ci.reason);
    return 77;
  }
  if (path)
    snprintf(path, size, "%s", ci.path);
  return 0;
}
