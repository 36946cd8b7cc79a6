#!/bin/sh
# tests/gpu/sanitize.sh TOOL TEST -- runs one GPU test program under
# compute-sanitizer --tool TOOL (make check-gpu-sanitize). A sanitizer
# error makes the test fail (exit 99: a hard error for the harness).
tool=$1
shift
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin)"; exit 99; }
# Check forks each test; the sanitizer follows the children. Kernels run
# much slower under it, so Check's timeouts are stretched.
CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-10}
export CK_TIMEOUT_MULTIPLIER
exec ${LIBTOOL:-libtool} --mode=execute "$cs" --tool "$tool" --error-exitcode 99 \
  --target-processes all --print-limit 20 "$@"
