/* tests/runtime/rtutil.h -- helpers for the runtime tests, which run the same
 * source against the fake driver (make check, CI) and the real GPU
 * (make check-gpu). */
#ifndef T4A_TEST_RTUTIL_H
#define T4A_TEST_RTUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tests/testutil.h"

/* Set by rt_setup (a checked fixture: runs in each test's forked child). */
extern const t4a_gpu_backend_v1 *T;
extern t4a_gpu_backend *B;
extern t4a_device_info DEV;

/* True when the tests run against the fake driver. */
bool rt_on_fake(void);

/* True in the host lane (tests/cpu/test_<suite>_host, -DT4A_TEST_HOST):
 * the tests run against the host backend, which has one device, kernels
 * compiled from CUDA C (no PTX, CUBIN or fatbin), NULL raw-seam and
 * CUDA-stream slots, no peer copies, no staging, and no pinned cache. */
bool rt_on_host(void);

/* The backend under test, opened by path without init (the host plugin in
 * the host lane, else the CUDA plugin). */
t4a_gpu_backend *rt_open(const t4a_gpu_backend_v1 **table);
/* Its path (t4a_test_build_path's buffer: copy it to keep it). */
const char *rt_plugin_path(void);

/* A test that means something only on CUDA (PTX kernels, the raw seam and
 * CUstreams, the fake driver's counters, peer devices, NVRTC): added to
 * tc except in the host lane, where it is left out and `why` printed (and
 * counted: rt_run prints how many). */
void rt_cuda_only(TCase *tc, const TTest *t, const char *why);
#define RT_CUDA_ONLY(tc, tf, why) rt_cuda_only((tc), (tf), (why))

/* In a test: the rest of it is CUDA-only; in the host lane it returns
 * here (the test passes on what it checked so far), printing why. */
#define RT_REST_IS_CUDA_ONLY(why)                                                                  \
  do {                                                                                             \
    if (rt_on_host()) {                                                                            \
      rt_note_host_skip(__func__, (why));                                                          \
      return;                                                                                      \
    }                                                                                              \
  } while (0)
void rt_note_host_skip(const char *test, const char *why);

/* A size or count for a heavy test: n itself, or n / 16 (at least 1) when
 * the tests run under compute-sanitizer (T4A_TEST_SANITIZER, set by
 * tests/gpu/sanitize.sh), whose tools slow memory traffic and launches by
 * one or two orders of magnitude. What a test checks stays the same. */
uint64_t rt_scaled(uint64_t n);

/* Every suite's tcase_add_test goes through rt_tcase_add_test, which leaves
 * the tests that hold a stream behind a gate out of compute-sanitizer's
 * initcheck lane (T4A_TEST_SANITIZER=initcheck) and says so on stderr. On
 * an H200 (CUDA 13.0) initcheck never returned from a cross-runtime copy
 * enqueued behind a closed gate (it checks a copy's source as it is
 * enqueued), and it made one runtime's blocked copy delay another's: the
 * tool orders work that the tests need unordered. memcheck, racecheck and
 * synccheck run them all. rt_gate_close fails a test missing from the list
 * under initcheck instead of hanging. The list is in rtutil.c. */
void rt_tcase_add_test(TCase *tc, const TTest *t);
#undef tcase_add_test
#define tcase_add_test(tc, tf) rt_tcase_add_test((tc), (tf))

/* The checked fixture: opens the plugin, inits, describes device 0; the
 * teardown (fake lane) also asserts the fake driver saw no violation (a
 * misuse CUDA would report or leave undefined, see tests/fakecuda). */
void rt_setup(void);
void rt_teardown(void);

/* A suite named "<name>-fake", "<name>-host" or "<name>-gpu" after the
 * lane this program was built for (T4A_TEST_FAKE, T4A_TEST_HOST); in the
 * fake lane it also points T4A_CUDA_LIBRARY at the fake driver, in the
 * host lane it turns on the host's test gate (T4A_HOST_TEST_GATE=1, see
 * plugin-host/test_gate.h) and, unless T4A_CACHE_DIR is set, points it at
 * a directory of this run (removed by rt_run), so that the tests' kernels
 * compile once per program, not once per test. */
Suite *rt_suite(const char *name);

/* A test case of s with the rt_setup/rt_teardown fixture and a timeout in
 * seconds (scaled by CK_TIMEOUT_MULTIPLIER in the sanitizer lanes). */
TCase *rt_tcase(Suite *s, const char *name, double timeout);

/* main()'s result: the fake lane runs the suite; the GPU lane runs it when
 * at least min_gpus GPUs are usable, else skips (or fails under
 * make check-gpu). */
int rt_run(Suite *s, int min_gpus);

/* Asserts a status, printing the backend's detail on mismatch. */
#define RT_EXPECT(call, status)                                                                    \
  do {                                                                                             \
    int rt_rc_ = (call);                                                                           \
    ck_assert_msg(rt_rc_ == (status), "%s: got %s, want %s (%s)", #call, t4a_status_name(rt_rc_),  \
                  t4a_status_name(status), t4a_test_backend_error(T));                             \
  } while (0)
#define RT_OK(call) RT_EXPECT(call, T4A_OK)

/* Asserts that the last error's detail contains `needle`. */
#define RT_DETAIL(needle)                                                                          \
  ck_assert_msg(strstr(t4a_test_backend_error(T), needle), "detail '%s' lacks '%s'",               \
                t4a_test_backend_error(T), needle)

t4a_runtime rt_create(void);
t4a_runtime rt_create_with(uint64_t staging, uint64_t cache_limit);
t4a_runtime_counters rt_counters(t4a_runtime rt);
t4a_cache_stats rt_cache(t4a_runtime rt);

/* Seals and waits (forever), then releases the witness. */
void rt_sync(t4a_runtime rt);

/* A gate: a kernel on the runtime's stream (through the raw seam) that
 * spins until the host opens it, so tests can hold work back
 * deterministically on both the fake and the real GPU. In the host lane,
 * the host backend's test gate instead (plugin-host/test_gate.h): an
 * operation on the runtime's worker that waits for the same flag. Either
 * way opening it is one store (any thread), and work enqueued behind it
 * waits; but a pageable copy behind a closed gate blocks its caller on the
 * host (it has no staging to copy into), so tests that make one open the
 * gate from another thread there. */
typedef struct rt_gate {
  t4a_runtime rt;
  t4a_host_buffer hb;
  volatile uint32_t *flag;
  void *module;
  void *word;       /* host lane: the registered memory of the flag */
  pthread_t opener; /* rt_gate_open_later */
  long opener_ms;
  bool opening;
} rt_gate;

void rt_gate_close(rt_gate *g, t4a_runtime rt);
void rt_gate_open(rt_gate *g);
void rt_gate_free(rt_gate *g); /* after the gate opened and drained */

/* A thread whose end can be awaited with a bound, so that a test whose
 * other thread should not block fails at once instead of deadlocking. */
typedef struct rt_thread {
  pthread_t th;
  void *(*fn)(void *);
  void *arg;
  int done;
} rt_thread;

void rt_thread_start(rt_thread *t, void *(*fn)(void *), void *arg);
/* Whether it ended within `seconds` (it is then joined). */
bool rt_thread_wait(rt_thread *t, double seconds);
void rt_thread_join(rt_thread *t);

/* Enqueues a launch of a named kernel of the test PTX through the raw seam
 * (t4a_fill_u32 and friends); the module is kept in *module. */
void rt_raw_launch(t4a_runtime rt, void **module, const char *name, void **args);
void rt_raw_unload(t4a_runtime rt, void *module);

/* The test kernels as PTX: loadable by the real driver (JIT) and by the
 * fake one, which implements the same names on the CPU:
 *   t4a_spin(flag)            spins until *flag != 0 (the gate)
 *   t4a_fill_u32(p, v, n)     p[0..n) = v
 *   t4a_fault()               traps
 *   t4a_index3d(out)          each thread of a 3-D launch stores its block
 *                             and thread indices (see test_code.c)
 *   t4a_bounded(out)          at most 128 threads per block (.maxntid), 512
 *                             bytes of static shared memory; each block of
 *                             x writes its global indices reversed */
const char *rt_test_ptx(void);

/* The same kernels as an artifact of the backend under test: the test PTX
 * (artifact_from_bytes) on CUDA, their CUDA C form (common/cuda_kernels.h)
 * compiled by artifact_compile on host (a disk hit but for the first test
 * of a run: the host lane's tests share one cache directory). Release it. */
t4a_artifact rt_test_artifact(void);

/* An entry point of the driver the tests run against (the fake or
 * libcuda.so.1), for what the raw seam lets a consumer do itself. */
void *rt_driver(const char *name);

/* Opens g from another thread after ms milliseconds (a gate behind which
 * the test makes a call that blocks on the host); rt_gate_free joins it. */
void rt_gate_open_later(rt_gate *g, long ms);
/* Whether the gate was opened. */
bool rt_gate_is_open(const rt_gate *g);

/* A buffer's device address (buffer_device_address, asserted). */
uint64_t rt_address(t4a_runtime rt, t4a_buffer b);

#if T4A_GPU_BACKEND_ABI_MINOR >= 1 /* DLPack is ABI 1.1 (test_compat_v10 builds this file) */
/* ---- DLPack: the export requests and producers' tensors of test_interop,
 * test_reentry and test_host_dlpack ---- */

/* The device type a buffer of this lane's backend is on: T4A_DL_CPU in the
 * host lane, T4A_DL_CUDA otherwise. */
int32_t rt_dl_device(void);

extern const t4a_dl_data_type RT_DL_F32;

/* rt_dl_count_delete (the requests' on_delete) counts its calls in
 * rt_dl_deletes and keeps its argument in rt_dl_last_user. */
extern int rt_dl_deletes;
extern void *rt_dl_last_user;
void rt_dl_count_delete(void *user);

/* An export request whose on_delete is rt_dl_count_delete(&rt_dl_deletes). */
t4a_dlpack_export rt_dl_request(uint32_t flags, uint64_t offset, t4a_dl_data_type dt, int32_t ndim,
                                const int64_t *shape, const int64_t *strides);

/* A tensor a producer made, in both forms (the t4a_ structs laid out as
 * dlpack.h's); its deleters count their calls in `deleted`. */
typedef struct rt_dl_made {
  t4a_dl_managed_tensor_versioned v;
  t4a_dl_managed_tensor l;
  int64_t shape[3], strides[3];
  int deleted;
} rt_dl_made;

/* Fills m: ndim (at most 3) extents and strides (NULL: row-major) of dt at
 * data + byte_offset on (device_type, 0). */
void rt_dl_make(rt_dl_made *m, uint64_t data, uint64_t byte_offset, int32_t device_type,
                int32_t ndim, const int64_t *shape, const int64_t *strides, t4a_dl_data_type dt);
#endif

/* Fake lane only: the fake driver's own counts (see tests/fakecuda):
 * calls of an entry point, live objects of a kind, violations. On the GPU
 * lane they return UINT64_MAX: tests check them when rt_on_fake(). */
uint64_t rt_fake_calls(const char *entry);
uint64_t rt_fake_live(const char *kind);
uint64_t rt_fake_violations(void);

#endif
