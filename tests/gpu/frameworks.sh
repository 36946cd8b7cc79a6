#!/bin/sh
# tests/gpu/frameworks.sh FRAMEWORK -- t4a and a tensor framework sharing
# device memory on a GPU: tests/frameworks/test_FRAMEWORK.py (torch, cupy,
# jax) with the built loader and plugin, the source tree's t4a_gpu package,
# and the real driver. Run through tests/gpu/test_dlpack_FRAMEWORK.sh (one
# Automake test per framework; `make check-gpu` runs them).
#
# Skips (77), saying why, when python3 or the framework is not importable,
# and outside the GPU lane when there is no usable GPU. In the GPU lane a
# missing GPU, or a framework that imports but cannot reach the GPU, fails;
# any wrong result fails everywhere.
#
# Environment: T4A_TEST_PYTHON (default python3: the interpreter that has
# the frameworks), T4A_TEST_SRCDIR, T4A_TEST_BUILDDIR, T4A_TEST_LANE.
fw=${1:?usage: frameworks.sh torch|cupy|jax}
src=$(cd "${T4A_TEST_SRCDIR:-$(dirname "$0")/../..}" && pwd) || exit 99
b=$(cd "${T4A_TEST_BUILDDIR:-$src}" && pwd) || exit 99
if [ -n "${T4A_TEST_SANITIZED:-}" ]; then
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED); python3 lacks its runtime"
  exit 77
fi
python=${T4A_TEST_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "SKIP: $python not found (set T4A_TEST_PYTHON to the interpreter that has $fw)"
  exit 77
fi
T4A_GPU_LIBRARY=$b/loader/.libs/libt4a_gpu.so
[ -e "$T4A_GPU_LIBRARY" ] || { echo "ERROR: $T4A_GPU_LIBRARY is missing (make check builds it)"; exit 99; }
T4A_GPU_BACKEND_PATH=${T4A_GPU_BACKEND_PATH:-$b/plugin-cuda/.libs}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
T4A_CACHE_DIR=$tmp/cache
T4A_TEST_SRCDIR=$src
T4A_TEST_LANE=${T4A_TEST_LANE:-any}
PYTHONDONTWRITEBYTECODE=1
XLA_PYTHON_CLIENT_PREALLOCATE=false # JAX leaves the device memory to t4a too
export T4A_GPU_LIBRARY T4A_GPU_BACKEND_PATH T4A_CACHE_DIR T4A_TEST_SRCDIR T4A_TEST_LANE \
  PYTHONDONTWRITEBYTECODE XLA_PYTHON_CLIENT_PREALLOCATE
unset T4A_GPU_BACKEND T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY PYTHONPATH
echo "== $fw with $python ($("$python" --version 2>&1)), lane $T4A_TEST_LANE"
"$python" "$src/tests/frameworks/test_$fw.py"
