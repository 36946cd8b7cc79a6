#!/bin/sh
# tests/consumers/test_rust.sh -- the Rust consumer example
# (examples/rust/t4a_example.rs: hand-written FFI, no crates) builds with
# plain rustc against the built libt4a_gpu and behaves on each path:
#   1. no driver (T4A_CUDA_LIBRARY=/nonexistent/...): exit 4, naming the
#      missing driver library;
#   2. the fake driver (tests/fakecuda): lists its two devices, then either
#      verifies the axpy (exit 0) or says no run-time compiler is usable
#      here (exit 4). When the fake NVRTC (libfakenvrtc.so) is built it is
#      used and exit 0 is required;
#   3. only when T4A_TEST_LANE=gpu: the real driver, exit 0 required.
# Skips (77) when rustc is not on PATH or older than 1.63 (Debian 12's).
#
# Environment (set by the Makefile's AM_TESTS_ENVIRONMENT): T4A_TEST_SRCDIR,
# T4A_TEST_BUILDDIR, T4A_TEST_LANE (any|gpu), T4A_GPU_BACKEND_PATH.

if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): its loader needs the sanitizer"
  echo "runtime in the executable, which a plain rustc program lacks (the plain build runs this)"
  exit 77
fi
if ! command -v rustc >/dev/null 2>&1; then
  echo "SKIP: rustc not found"
  exit 77
fi
# The example needs Rust 1.63, Debian 12's rustc (it avoids c"..." literals,
# offset_of!, let-else and the std::ffi::c_* aliases for that).
major=$(rustc --version | sed -n 's/^rustc \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\1/p')
minor=$(rustc --version | sed -n 's/^rustc \([0-9][0-9]*\)\.\([0-9][0-9]*\).*/\2/p')
if [ -z "$major" ] || [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -lt 63 ]; }; then
  echo "SKIP: the example needs rustc 1.63 or newer, found: $(rustc --version)"
  exit 77
fi

# Absolute paths: the rpath baked into the program must not depend on cwd.
src=$(cd "${T4A_TEST_SRCDIR:-.}" && pwd) || exit 99
build=$(cd "${T4A_TEST_BUILDDIR:-.}" && pwd) || exit 99
libdir=$build/loader/.libs
fakecuda=$build/tests/fakecuda/.libs/libfakecuda.so
fakenvrtc=$build/tests/fakecuda/.libs/libfakenvrtc.so
T4A_GPU_BACKEND_PATH=${T4A_GPU_BACKEND_PATH:-$build/plugin-cuda/.libs}
export T4A_GPU_BACKEND_PATH
for f in "$src/examples/rust/t4a_example.rs" "$libdir/libt4a_gpu.so" "$fakecuda"; do
  [ -e "$f" ] || { echo "ERROR: $f is missing (run make check, not the script alone)"; exit 99; }
done

# Only what each case sets below steers the backend and the fake driver:
# the default backend, the fake's defaults (two devices), and no disk
# cache of compiled code (nothing written to $HOME, nothing stale from
# another driver or compiler read back).
unset T4A_GPU_BACKEND T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY
unset FAKE_CUDA_MODE FAKE_CUDA_VERSION FAKE_CUDA_DEVICES FAKE_CUDA_HIDE FAKE_CUDA_FAIL \
  FAKE_CUDA_NO_PEER FAKE_NVRTC_VERSION
T4A_CACHE_DIR=
export T4A_CACHE_DIR

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
prog=$tmp/t4a_example
out=$tmp/out

echo "== build: $(rustc --version)"
if ! rustc --edition 2021 -O -D warnings "$src/examples/rust/t4a_example.rs" \
  -L "$libdir" -l t4a_gpu -C link-arg=-Wl,-rpath,"$libdir" -o "$prog"; then
  echo "FAIL: the Rust example does not build"
  exit 1
fi

fail=0
# run LABEL [VAR=value ...]: runs the program with those variables set,
# output in $out (and the log), exit status in $rc.
run() {
  label=$1
  shift
  echo "== $label"
  env "$@" "$prog" >"$out" 2>&1
  rc=$?
  cat "$out"
  echo "-- exit $rc"
}
# has TEXT: the last run's output contains TEXT (fixed string).
has() { grep -F -q -- "$1" "$out"; }
bad() {
  echo "FAIL: $label: $1"
  fail=1
}
verified='rust example: axpy of 1048576 floats verified on'

# 1. GPU-less: the driver library cannot be loaded -> unusable (4).
run "no driver" T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1
[ "$rc" -eq 4 ] || bad "exit $rc, want 4 (backend unusable)"
has "T4A_ENODRIVER" || bad "the output does not name T4A_ENODRIVER"
has "/nonexistent/libcuda.so.1" || bad "the output does not name the driver library"

# 2. The fake driver: device listing, then the compile, load, launch and
#    verify with whatever NVRTC there is (the fake one when built).
if [ -e "$fakenvrtc" ]; then
  run "fake driver, fake NVRTC" T4A_CUDA_LIBRARY="$fakecuda" T4A_NVRTC_LIBRARY="$fakenvrtc"
  need_verified=1
else
  run "fake driver, system NVRTC if any" T4A_CUDA_LIBRARY="$fakecuda"
  need_verified=0
fi
has "device 0: Fake GPU 0, compute capability 9.0" || bad "device 0 not listed"
has "device 1: Fake GPU 1" || bad "device 1 not listed"
if [ "$rc" -eq 0 ]; then
  has "$verified Fake GPU 0" || bad "exit 0 without the verified line"
elif [ "$rc" -eq 4 ] && [ $need_verified -eq 0 ]; then
  has "run-time compiler unavailable here" || bad "exit 4 without saying the compiler is unavailable"
else
  bad "exit $rc, want 0 (verified)$([ $need_verified -eq 0 ] && echo ' or 4 (no compiler)')"
fi

# 3. The GPU lane: the real driver must work end to end.
if [ "${T4A_TEST_LANE:-any}" = gpu ]; then
  run "real driver (GPU lane)"
  [ "$rc" -eq 0 ] || bad "exit $rc, want 0 on a GPU host"
  has "$verified " || bad "no verified line"
fi

[ $fail -eq 0 ] && echo "PASS"
exit $fail
