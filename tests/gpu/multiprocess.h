/* tests/gpu/multiprocess.h -- what tests/gpu/test_multiprocess.c and the
 * children it runs (multiprocess_child.c: the same program, run again with
 * --child ROLE) share. A child runs outside Check: statuses are checked
 * through a function, ck_assert in a test and exit in a child. */
#ifndef T4A_TEST_MULTIPROCESS_H
#define T4A_TEST_MULTIPROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/runtime/rtutil.h"

#define MiB (1ull << 20)

typedef void (*mp_check_fn)(const char *what, int rc);
#define MP_STEP(ok, expr) (ok)(#expr, (expr))

/* Exits the child, telling the parent what failed, unless rc is T4A_OK. */
void mp_child_check(const char *what, int rc);

/* t4a_fill_u32 of the test PTX, loaded into rt. */
t4a_function mp_fill_function(t4a_runtime rt, mp_check_fn ok);

/* Random words through copy_h2d, a fill over part of them by a launch,
 * read back through copy_d2h: true when exactly what was written came back. */
bool mp_round_trip(t4a_runtime rt, t4a_function f, t4a_buffer b, uint64_t words, uint64_t seed,
                   mp_check_fn ok);

/* Allocates from rt in chunks, halving each refused one, until even `min`
 * bytes are refused; the buffers stay. Returns the bytes held; *status is
 * T4A_OK, or the unexpected status that stopped it. */
uint64_t mp_hold_everything(t4a_runtime rt, uint64_t chunk, uint64_t min, int *status);

/* main() of a child: ROLE "compile", "stats", "hog" or "loop". fd 3 brings
 * the parent's commands, fd 4 takes the child's reports (lines). */
int mp_child_main(const char *role);

#endif
