#!/bin/sh
# tests/cpu/test_conform_host.sh -- the host backend (plugin-host/,
# libt4a_host.so) under the tools, on any machine (it needs no GPU):
#  (a) `t4a-gpu conform` passes: no check fails, its kernel checks run (the
#      kernels compiled from CUDA C by the host C++ compiler), and the ones
#      skipped are skipped for the reasons the host gives (it takes and
#      makes no NVIDIA GPU code, one device, the slots it leaves NULL:
#      exactly the raw seam and the CUDA-stream slots); --json agrees;
#  (b) `t4a-gpu selftest` passes (its axpy kernel included) and `t4a-gpu
#      info` names the host's device;
#  (c) with both plugins on the search path, `t4a-gpu info` lists both and
#      T4A_GPU_BACKEND=host picks the host.
b=${T4A_TEST_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
prog=$b/tools/t4a-gpu
T4A_GPU_BACKEND_PATH=$b/plugin-cuda/.libs:$b/plugin-host/.libs
T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 # the CUDA plugin stays unusable: nothing here needs it
export T4A_GPU_BACKEND_PATH T4A_CUDA_LIBRARY
out=$(mktemp) && json=$(mktemp) || exit 99
trap 'rm -f "$out" "$json"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# (a)
T4A_GPU_BACKEND=host "$prog" conform > "$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || bad "conform on host exited $rc, want 0"
grep -q '^t4a-gpu conform: backend host ' "$out" || bad "conform did not run the host backend"
grep -q '^FAIL ' "$out" && bad "checks failed on the host backend"
nulls='raw_runtime raw_function raw_begin raw_end stream_wait_witness runtime_wait_event runtime_wait_stream buffer_export_ipc buffer_import_ipc witness_export_ipc runtime_wait_ipc_witness'
grep -q "^conform: NULL slots (their checks skipped): $nulls" "$out" ||
  bad "the NULL slots are not the raw seam, the CUDA-stream slots and the process slots"
# every skip has a reason the host backend gives
grep '^SKIP ' "$out" | grep -v -e 'NVIDIA GPU code' -e 'is NULL (unsupported)' -e 'one device' &&
  bad "checks skipped for another reason"
grep -q '^conform: code: compiled with artifact_compile' "$out" ||
  bad "conform found no way to run kernels on the host"
for check in code.compile code.compile_without_init code.artifact_after_init; do
  grep -q "^PASS $check\b" "$out" || bad "$check did not pass on host"
done
passed=$(sed -n 's/^conform: \([0-9]*\) passed, 0 failed.*/\1/p' "$out")
[ -n "$passed" ] && [ "$passed" -ge 30 ] || bad "fewer than 30 checks passed ($passed)"
T4A_GPU_BACKEND=host "$prog" conform --json > "$json" 2>&1
rc=$?
[ $rc -eq 0 ] || bad "conform --json on host exited $rc"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json,sys
d = json.load(open(sys.argv[1], encoding="utf-8"))["conform"]
assert d["backend"] == "host" and d["failed"] == 0 and d["exit"] == 0, d' "$json" ||
    bad "conform --json on host: not the document expected"
fi

# (b)
T4A_GPU_BACKEND=host "$prog" selftest > "$out" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out"; bad "selftest on host exited $rc"; }
grep -q '^selftest: passed' "$out" || bad "selftest on host did not pass"
grep -q 'verify: 1048579 of 1048579 elements match the CPU' "$out" ||
  bad "selftest's kernel did not verify"
T4A_GPU_BACKEND=host "$prog" info > "$out" 2>&1
grep -q '^backend: *host ' "$out" || { cat "$out"; bad "info does not show the host backend"; }
grep -q '^device 0: ' "$out" || bad "info shows no device 0 on host"

# (c)
"$prog" info > "$out" 2>&1
grep -q '^  cuda ' "$out" && grep -q '^  host ' "$out" || { cat "$out"; bad "info does not list both backends"; }

[ $fail -eq 0 ] && echo "PASS: the host backend under conform, selftest and info"
exit $fail
