/* tests/testutil.h -- helpers shared by the test programs. */
#ifndef T4A_TESTUTIL_H
#define T4A_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "t4a/gpu_loader.h"

/* Exit status that makes Automake count a test as skipped. */
#define T4A_TEST_SKIP 77

/* Absolute path of a file in the build tree ("plugin-cuda/.libs/x.so").
 * Returns a static buffer per call site owner: copy it if you keep it. */
const char *t4a_test_build_path(const char *relative);

/* The built CUDA plugin and the fake drivers. */
#define T4A_TEST_CUDA_PLUGIN "plugin-cuda/.libs/libt4a_cuda.so"
#define T4A_TEST_FAKE_CUDA "tests/fakecuda/.libs/libfakecuda.so"
#define T4A_TEST_FAKE_CUDA_NOGPA "tests/fakecuda/.libs/libfakecuda_nogpa.so"
#define T4A_TEST_FAKE_NVRTC "tests/fakecuda/.libs/libfakenvrtc.so"

/* Runs the suite (forking each test) and returns the program's exit status. */
int t4a_test_run(Suite *s);

/* main() of a GPU test program needing at least `min_gpus` GPUs. Probes in
 * a forked child (no CUDA state is created in this process). Without enough
 * usable GPUs: under lane "gpu"/"multigpu" (make check-gpu/-multigpu) it
 * prints why and returns 1 (failure); otherwise it prints why and returns
 * 77 (skip). With them, it runs the suite. */
int t4a_test_gpu_main(Suite *s, int min_gpus);

/* Usable GPUs, probed in a forked child (0 without a driver or device). */
int t4a_test_gpu_count(void);

/* Opens the built CUDA plugin by path (asserting success). */
t4a_gpu_backend *t4a_test_open_cuda(const t4a_gpu_backend_v1 **table);

/* The calling thread's last error message of a backend. */
const char *t4a_test_backend_error(const t4a_gpu_backend_v1 *t);

/* Deterministic pseudo-random bytes (xorshift64*), seeded. */
void t4a_test_fill_random(void *p, size_t n, uint64_t seed);

/* Feeds every file of $T4A_TEST_SRCDIR/rel (up to 64 KiB each) to a fuzz
 * target's one-input function; returns how many (0 without the folder). */
int t4a_test_replay_dir(int (*one)(const uint8_t *, size_t), const char *rel);

/* A seed from T4A_TEST_SEED or the clock, printed once so a failure can be
 * replayed. */
uint64_t t4a_test_seed(void);

/* Number of open file descriptors and resident set size (KiB). */
int t4a_test_open_fds(void);
long t4a_test_rss_kib(void);

#endif
