#!/bin/sh
# tests/cpu/test_readme.sh -- README.md's quick start compiles as shown (C11,
# -Wall -Wextra -Werror) against the build tree and exits as it says: 3
# without a backend, 4 without a driver (naming the cause), 0 with "ok" on
# the fake driver (and, in the GPU lane, on the real one).
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
cc=${T4A_TEST_CC:-cc}
if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): its loader needs the sanitizer"
  echo "runtime, which the quick start compiled as the README shows does not link (the plain build runs this)"
  exit 77
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }

awk '/^<!-- quickstart/ {on = 1; next} on && /^```c$/ {code = 1; next}
     code && /^```$/ {exit} code {print}' "$s/README.md" > "$tmp/quickstart.c"
[ -s "$tmp/quickstart.c" ] || fail "no quick start block found in README.md"
$cc -std=c11 -Wall -Wextra -Werror -I"$s/abi" -I"$s/loader" "$tmp/quickstart.c" \
  -o "$tmp/quickstart" -L"$b/loader/.libs" -lt4a_gpu -Wl,-rpath,"$b/loader/.libs" \
  > "$tmp/out" 2>&1 || fail "the quick start does not compile as shown"

run() { "$@" > "$tmp/out" 2>&1; echo $?; }
rc=$(run env T4A_GPU_BACKEND_PATH=/nonexistent "$tmp/quickstart")
[ "$rc" -eq 3 ] || fail "without a backend: exit $rc, want 3"
rc=$(run env T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$tmp/quickstart")
[ "$rc" -eq 4 ] || fail "without a driver: exit $rc, want 4"
grep -q "^init: T4A_ENODRIVER: " "$tmp/out" || fail "without a driver: the cause is not printed"
rc=$(run env T4A_CUDA_LIBRARY="$b/tests/fakecuda/.libs/libfakecuda.so" "$tmp/quickstart")
[ "$rc" -eq 0 ] || fail "on the fake driver: exit $rc, want 0"
grep -qx "hello, GPU: ok" "$tmp/out" || fail "on the fake driver: no round trip"
if [ "${T4A_TEST_LANE:-any}" = gpu ]; then
  rc=$(run "$tmp/quickstart")
  [ "$rc" -eq 0 ] || fail "on the GPU: exit $rc, want 0"
  grep -qx "hello, GPU: ok" "$tmp/out" || fail "on the GPU: no round trip"
fi
echo "README quick start: compiles; exits 3, 4 and 0 as documented"
