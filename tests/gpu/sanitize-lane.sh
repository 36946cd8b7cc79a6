#!/bin/sh
# tests/gpu/sanitize-lane.sh TOOL -- one compute-sanitizer lane (make
# check-gpu-TOOL): the GPU tests under the tool, then, for memcheck, the
# canary: a kernel that writes past its allocation must be reported, or the
# lane fails (a blind lane would pass anything).
#   Run from the build tree by make: MAKE, SANITIZE_GPU_TESTS, LIBTOOL and
#   srcdir come from the Makefile.
set -u
tool=$1
start=$(date +%s)
echo "check-gpu-$tool: compute-sanitizer --tool $tool"
# The suites run side by side (SANITIZE_JOBS, default 8: the GPU is shared,
# each suite uses little of it, and one after another they took more than
# three minutes per tool on the H200).
$MAKE -j"${SANITIZE_JOBS:-8}" check TESTS="$SANITIZE_GPU_TESTS" T4A_TEST_LANE=gpu \
  LOG_COMPILER="env LIBTOOL='$LIBTOOL' $SHELL_PATH $srcdir/tests/gpu/sanitize.sh" \
  AM_LOG_FLAGS="$tool"
rc=$?
for t in $SANITIZE_GPU_TESTS; do
  printf '  %-36s %s\n' "$t" "$(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|LEAK SUMMARY\|^sanitize.sh:" "$t.log" 2>/dev/null | tr '\n' ' ')"
done
if [ "$tool" = memcheck ]; then
  out=$(env LIBTOOL="$LIBTOOL" $SHELL_PATH "$srcdir/tests/gpu/sanitize.sh" memcheck \
    tests/gpu/sanitizer_canary 2>&1)
  crc=$?
  if [ $crc -ne 99 ] || ! echo "$out" | grep -q "Invalid __global__ write"; then
    echo "$out" | tail -n 20
    echo "check-gpu-memcheck: FAIL: the canary's out-of-bounds write was not reported (exit $crc)"
    rc=1
  else
    echo "check-gpu-memcheck: the canary's out-of-bounds write was reported (as it must be)"
  fi
fi
echo "check-gpu-$tool: $(( $(date +%s) - start )) s, exit $rc"
exit $rc
