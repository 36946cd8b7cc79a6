#!/bin/sh
# tests/gpu/test_conform_gpu.sh -- `t4a-gpu conform` on the real driver, NVRTC
# and GPU: the checks that fail are exactly tests/conform/known_failures
# (plugin bugs being fixed; none other), so with that list empty it requires
# exit 0 and no FAIL line. Only checks needing two devices, and those the
# installed driver and NVRTC cannot serve together (T4A_EUNSUPPORTED: PTX
# from an NVRTC newer than the driver) may skip. Skips
# (77) without a usable GPU unless the lane requires one (make check-gpu),
# where that fails.
b=${T4A_TEST_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
s=${T4A_TEST_SRCDIR:-$b}
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
"$b/tools/t4a-gpu" conform > "$out" 2>&1
rc=$?
cat "$out"
if [ $rc -eq 4 ]; then
  if [ "${T4A_TEST_LANE:-any}" = gpu ]; then echo "FAIL: no usable GPU"; exit 1; fi
  echo "SKIP: no usable GPU"; exit 77
fi
known=$(sed -e 's/#.*//' "$s/tests/conform/known_failures" | awk 'NF {print $1}' | sort)
want_rc=0
[ -n "$known" ] && want_rc=1
failed=$(sed -n 's/^FAIL \([a-z0-9_.]*\).*/\1/p' "$out" | sort)
fail=0
[ $rc -eq $want_rc ] || { echo "FAIL: conform exited $rc, want $want_rc"; fail=1; }
[ "$failed" = "$known" ] || {
  echo "FAIL: failing checks '$(echo $failed)', tests/conform/known_failures '$(echo $known)'"
  fail=1
}
if grep '^SKIP ' "$out" | grep -v -e ': one device: ' -e ': T4A_EUNSUPPORTED (' | grep .; then
  echo "FAIL: checks skipped on a GPU (only two-device and T4A_EUNSUPPORTED ones may be)"; fail=1
fi
[ $fail -eq 0 ] && echo "PASS: t4a-gpu conform on the GPU"
exit $fail
