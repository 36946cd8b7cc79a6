#!/bin/sh
# tests/cpu/test_examples_host.sh -- what consumers run, unchanged, on the
# host backend (T4A_GPU_BACKEND=host, no GPU): examples/saxpy (a kernel
# compiled from CUDA C and launched, every element checked), warm_chain
# and warm_chain --graph (a chain of dependent launches, and its replay as
# one graph, verified), and the C++ example (a round trip on the host's
# device). The README quick start on host is tests/cpu/test_readme.sh's,
# `t4a-gpu selftest` tests/cpu/test_conform_host.sh's. Skips (77) without a
# host C++ compiler.
b=${T4A_TEST_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
T4A_GPU_BACKEND_PATH=$b/plugin-host/.libs
T4A_GPU_BACKEND=host
export T4A_GPU_BACKEND_PATH T4A_GPU_BACKEND
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
fail=0
bad() { echo "FAIL: $*"; cat "$out"; fail=1; }

"$b/examples/saxpy" > "$out" 2>&1
rc=$?
if [ $rc -eq 4 ] && grep -q T4A_ENOCOMPILER "$out"; then
  cat "$out"
  echo "SKIP: no host C++ compiler"
  exit 77
fi
[ $rc -eq 0 ] && grep -q "^saxpy: 1048576 elements, 0 wrong" "$out" || bad "saxpy on host: exit $rc"
for mode in "" --graph; do
  "$b/examples/warm_chain" $mode 2000 > "$out" 2>&1
  rc=$?
  [ $rc -eq 0 ] && grep -q "result: *verified" "$out" || bad "warm_chain $mode on host: exit $rc"
  grep -q "Driver API: *none (backend host has no raw seam" "$out" ||
    bad "warm_chain $mode on host: no word on the missing comparison"
done
"$b/examples/cpp/devices" > "$out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "^device 0: .*round trip of 3145728 bytes exact" "$out" ||
  bad "the C++ example on host: exit $rc"
[ $fail -eq 0 ] && echo "PASS: saxpy, warm_chain (and --graph) and the C++ example on host"
exit $fail
