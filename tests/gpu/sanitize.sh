#!/bin/sh
# tests/gpu/sanitize.sh TOOL TEST -- runs one GPU test program under
# compute-sanitizer --tool TOOL (the check-gpu-<tool> targets). A sanitizer
# error makes the test fail (exit 99: a hard error for the harness).
#
# The tests' own failed API calls are intended (the out-of-memory test, the
# missing-kernel test, stale handles reaching the driver's error paths), so
# API errors are not reported (--report-api-errors no): the lanes report
# what the tools exist for, memory errors, races, barrier misuse and
# uninitialised reads. memcheck also checks device memory leaks at exit.
tool=$1
shift
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin)"; exit 99; }
extra=
[ "$tool" = memcheck ] && extra="--leak-check full"
# Check forks each test; the sanitizer follows the children. Kernels run
# much slower under it, so Check's timeouts are stretched, and the tests
# scale their sizes down (T4A_TEST_SANITIZER, read by tests/runtime/rtutil.c).
CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-10}
T4A_TEST_SANITIZER=$tool
# Each test's start and end with its time on stderr (tests/runtime/rtutil.c),
# so that a suite the lane's timeout kills shows where it was.
T4A_TEST_TRACE=${T4A_TEST_TRACE:-1}
export CK_TIMEOUT_MULTIPLIER T4A_TEST_SANITIZER T4A_TEST_TRACE
start=$(date +%s)
# shellcheck disable=SC2086
${LIBTOOL:-libtool} --mode=execute "$cs" --tool "$tool" --error-exitcode 99 \
  --report-api-errors no $extra --target-processes all --print-limit 20 "$@"
rc=$?
echo "sanitize.sh: $tool $*: $(($(date +%s) - start)) s, exit $rc" # which suite the lane waits for
exit $rc
