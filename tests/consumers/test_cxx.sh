#!/bin/sh
# tests/consumers/test_cxx.sh -- the C++17 example (built -Wall -Wextra
# -Werror -pedantic by make check): a clean failure without a driver, exact
# round trips on both fake devices, and on the GPU lane on the real devices.
set -u
exe="$T4A_TEST_BUILDDIR/examples/cpp/devices"
fakes="$T4A_TEST_BUILDDIR/tests/fakecuda/.libs"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }

T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$exe" >"$out" 2>&1
[ $? -eq 4 ] || fail "without a driver: expected exit 4 (unusable here)"
grep -q "init: T4A_ENODRIVER: " "$out" || fail "without a driver: no reason printed"
T4A_GPU_BACKEND_PATH=/nonexistent "$exe" >"$out" 2>&1
[ $? -eq 3 ] || fail "without a backend: expected exit 3"

T4A_CUDA_LIBRARY="$fakes/libfakecuda.so" "$exe" >"$out" 2>&1 || fail "fake driver: exit $?"
[ "$(grep -c 'round trip of 3145728 bytes exact' "$out")" -eq 2 ] || fail "fake driver: 2 exact devices expected"

if [ "${T4A_TEST_LANE:-any}" = gpu ]; then
  "$exe" >"$out" 2>&1 || fail "GPU: exit $?"
  grep -q "exact" "$out" || fail "GPU: no device round-tripped"
  grep -q "WRONG" "$out" && fail "GPU: wrong data"
fi
cat "$out"
exit 0
