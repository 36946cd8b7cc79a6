#!/bin/sh
# tests/gpu/test_nccl.sh -- examples/nccl_allreduce on two GPUs: two t4a
# runtimes, one NCCL communicator each, an all-reduce on the runtimes'
# streams inside raw sections, sealed, waited for, verified bit for bit.
# With T4A_NCCL_PROGRAM=nccl_multiproc (tests/gpu/test_nccl_multiproc.sh):
# the same across two processes (fork+exec), the NCCL id passed in a file.
# In MULTIGPU_TESTS (make check-multigpu), and in make check, where it skips
# without two GPUs.
#
# NCCL is found as $T4A_NCCL_LIBRARY, else in the nvidia-nccl wheel of
# $T4A_TEST_PYTHON (default python3: site-packages/nvidia/nccl/lib), else as
# libnccl.so.2 in the dynamic linker's cache. Without it: SKIP (77) saying so,
# in every lane. Fewer than two GPUs: SKIP, or FAIL in the multigpu lane.
# NVLink SHARP (NVLS) is left off (NCCL_NVLS_ENABLE=0): it needs multicast
# objects this host's setup does not provide, and GPU settings are not ours
# to change.
b=${T4A_TEST_BUILDDIR:-.}
lane=${T4A_TEST_LANE:-any}
python=${T4A_TEST_PYTHON:-python3}
if [ -z "${T4A_NCCL_LIBRARY:-}" ] && command -v "$python" >/dev/null 2>&1; then
  T4A_NCCL_LIBRARY=$("$python" -c '
import os, sys
try:
    import nvidia.nccl as n
except Exception:
    sys.exit(1)
for d in list(getattr(n, "__path__", [])):
    p = os.path.join(d, "lib", "libnccl.so.2")
    if os.path.exists(p):
        print(p)
        break
' 2>/dev/null)
fi
if [ -z "${T4A_NCCL_LIBRARY:-}" ] && command -v ldconfig >/dev/null 2>&1 &&
  ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
  T4A_NCCL_LIBRARY=libnccl.so.2
fi
if [ -z "${T4A_NCCL_LIBRARY:-}" ]; then
  echo "SKIP: libnccl.so.2 not found (not T4A_NCCL_LIBRARY, not in $python's nvidia-nccl wheel," \
    "not in the linker cache): install NCCL to run the NCCL example"
  exit 77
fi
NCCL_NVLS_ENABLE=0
export T4A_NCCL_LIBRARY NCCL_NVLS_ENABLE
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
prog=${T4A_NCCL_PROGRAM:-nccl_allreduce}
case $prog in
nccl_multiproc) verified="all-reduce of 16777216 floats over 2 processes verified" ;;
*) verified="all-reduce of 16777216 floats on 2 t4a runtimes verified" ;;
esac
echo "== examples/$prog with $T4A_NCCL_LIBRARY (NCCL_NVLS_ENABLE=0), lane $lane"
"$b/examples/$prog" 16777216 >"$out" 2>&1
rc=$?
cat "$out"
case $rc in
0) grep -q "$verified" "$out" ||
     { echo "FAIL: exit 0 without the verified line"; exit 1; } ;;
4) if grep -q "cannot load NCCL" "$out"; then
     echo "FAIL: $T4A_NCCL_LIBRARY was found but does not load"; exit 1
   fi
   if [ "$lane" = multigpu ]; then echo "FAIL: two usable GPUs are required in this lane"; exit 1; fi
   echo "SKIP: this host cannot run it (above)"; exit 77 ;;
*) echo "FAIL: $prog exited $rc"; exit 1 ;;
esac
echo PASS
