/* tests/cpu/host_fixture.h -- what the host backend's own suites
 * (test_host_compile, test_host_launch, test_host_check) share: the plugin
 * opened per test, the checks that name the backend's detail, and main's
 * probe for a host C++ compiler. */
#ifndef T4A_TESTS_CPU_HOST_FIXTURE_H
#define T4A_TESTS_CPU_HOST_FIXTURE_H

#include <check.h>
#include <stddef.h>
#include <string.h>

#include "t4a/gpu_loader.h"
#include "tests/testutil.h"

extern t4a_gpu_backend *B;
extern const t4a_gpu_backend_v1 *T;

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
#define DETAIL(needle)                                                                             \
  ck_assert_msg(strstr(t4a_test_backend_error(T), needle), "detail '%s' lacks '%s'",               \
                t4a_test_backend_error(T), needle)

/* The checked fixture: the build tree's libt4a_host.so opened and
 * initialised in B and T; closed after. */
void host_setup(void);
void host_teardown(void);

/* For main, before the suite: 0 with the compiler the plugin would use in
 * path (may be NULL), 77 (printed "SKIP: ...") without one, 99 when the
 * plugin does not open. */
int host_compiler(char *path, size_t size);

#endif
