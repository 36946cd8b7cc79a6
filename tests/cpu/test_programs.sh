#!/bin/sh
# tests/cpu/test_programs.sh -- every program of the tree follows t4a-gpu's
# convention (tools/cli.h): --help prints the usage on stdout and exits 0;
# an unknown flag prints it on stderr and exits 2; without a backend the
# program exits 3, and with a backend but no driver 4, naming the reason
# (T4A_ENODRIVER). The programs: t4a-gpu, the C and C++ examples, the bench,
# the soak and the Python example (tests/consumers/test_rust.sh checks the
# Rust ones the same way).
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
  echo "FAIL: $name: $*"
  sed 's/^/    /' "$tmp/out" "$tmp/err"
  fail=1
}
nobackend="T4A_GPU_BACKEND_PATH=/nonexistent"
nodriver="T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1"
unset T4A_GPU_BACKEND T4A_NVRTC_LIBRARY

# check NAME COMMAND...: COMMAND [ARGS] is the program (ARGS: what makes it
# run its default work, e.g. t4a-gpu's "info").
check() {
  name=$1
  shift
  "$@" --help >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 0 ] && grep -q "^usage: " "$tmp/out" || bad "--help: exit $rc, want 0 and the usage on stdout"
  "$@" --no-such-flag >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] && grep -q "usage: " "$tmp/err" || bad "an unknown flag: exit $rc, want 2 and the usage on stderr"
  env $nobackend "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 3 ] || bad "without a backend: exit $rc, want 3"
  env $nodriver "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 4 ] && cat "$tmp/out" "$tmp/err" | grep -q T4A_ENODRIVER ||
    bad "without a driver: exit $rc, want 4 naming T4A_ENODRIVER"
  echo "ok: $name"
}

check t4a-gpu "$b/tools/t4a-gpu" info
check saxpy "$b/examples/saxpy"
check warm_chain "$b/examples/warm_chain"
check nccl_allreduce "$b/examples/nccl_allreduce"
check devices "$b/examples/cpp/devices"
# (the CUDA rows only: the default also runs the host rows, which need no
# driver, and exits 0 when any rows ran)
check t4a_bench "$b/bench/t4a_bench" --backend cuda
check t4a_soak "$b/tests/soak/t4a_soak"
# t4a_stages links the CUDA plugin's core (no loader, so no "without a
# backend" case); on the fake driver it runs its three paths and writes JSON.
name=t4a_stages
"$b/bench/t4a_stages" --help >"$tmp/out" 2>"$tmp/err" && grep -q "^usage: " "$tmp/out" ||
  bad "--help: want exit 0 and the usage on stdout"
"$b/bench/t4a_stages" --no-such-flag >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "usage: " "$tmp/err" || bad "an unknown flag: want exit 2 and the usage on stderr"
env $nodriver "$b/bench/t4a_stages" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 4 ] && grep -q T4A_ENODRIVER "$tmp/err" || bad "without a driver: exit $rc, want 4 naming T4A_ENODRIVER"
fake=$b/tests/fakecuda/.libs
T4A_CUDA_LIBRARY=$fake/libfakecuda.so T4A_NVRTC_LIBRARY=$fake/libfakenvrtc.so \
  "$b/bench/t4a_stages" --samples 3 --json "$tmp/stages.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '"path":' "$tmp/stages.json")" -ge 1 ] &&
  [ "$(grep -o '"path":' "$tmp/stages.json" | wc -l)" -eq 3 ] && grep -q "the slot (copy_h2d)" "$tmp/out" ||
  bad "on the fake driver: exit $rc, want 0, three paths in the JSON and the table"
echo "ok: $name"
if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "note: the Python example is left out: this build is instrumented ($T4A_TEST_SANITIZED)"
elif command -v python3 >/dev/null 2>&1; then
  check axpy.py env PYTHONPATH="$s/python" PYTHONDONTWRITEBYTECODE=1 \
    T4A_GPU_LIBRARY="$b/loader/.libs/libt4a_gpu.so" python3 "$s/examples/python/axpy.py"
else
  echo "note: python3 not found: the Python example is left out"
fi
[ $fail -eq 0 ] && echo "PASS: every program takes --help and exits as t4a-gpu does"
exit $fail
