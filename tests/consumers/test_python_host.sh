#!/bin/sh
# tests/consumers/test_python_host.sh -- the Python package on the host
# backend (libt4a_host.so; no GPU): python/tests/host_dlpack.py, DLPack
# between t4a buffers and NumPy (np.from_dlpack both ways, no copies), a
# round trip between two runtimes, and typed errors from the slots the host
# leaves NULL. Prefers a python3 that has NumPy (Debian's python3-numpy);
# without one the NumPy tests skip, saying so, and the rest still run.
# Skips (77) only when python3 is missing or the build is instrumented.
src=$(cd "${T4A_TEST_SRCDIR:-.}" && pwd) || exit 99
b=$(cd "${T4A_TEST_BUILDDIR:-.}" && pwd) || exit 99
if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): python3 lacks its runtime"
  exit 77
fi
py=
for p in python3 /usr/bin/python3; do
  command -v "$p" >/dev/null 2>&1 || continue
  [ -n "$py" ] || py=$p
  if "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "SKIP: python3 not found in PATH; the Python package needs it"
  exit 77
fi
T4A_GPU_LIBRARY=$b/loader/.libs/libt4a_gpu.so
T4A_GPU_BACKEND_PATH=$b/plugin-host/.libs
PYTHONPATH=$src/python:$src/python/tests
PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the (possibly read-only) source tree
export T4A_GPU_LIBRARY T4A_GPU_BACKEND_PATH PYTHONPATH PYTHONDONTWRITEBYTECODE
unset T4A_GPU_BACKEND
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
echo "== host_dlpack with $py ($("$py" --version 2>&1))"
"$py" -m unittest -v host_dlpack >"$out" 2>&1
rc=$?
sed 's/^/    /' "$out"
[ $rc -eq 0 ] || { echo "FAIL: the host suite failed"; exit 1; }
grep -q "^Ran 5 tests" "$out" || { echo "FAIL: not all 5 tests ran"; exit 1; }
if grep "\.\.\. skipped '" "$out" | grep -v "skipped 'numpy is not installed'" | grep -q .; then
  echo "FAIL: a test skipped for a reason other than a missing numpy"
  exit 1
fi
echo "PASS"
