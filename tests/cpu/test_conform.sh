#!/bin/sh
# tests/cpu/test_conform.sh -- `t4a-gpu conform` (the conformance suite,
# tools/conform*.c) in CI, with the fake CUDA driver and the fake NVRTC:
#  (a) against the CUDA plugin every check runs (none skipped) and the checks
#      that fail are exactly tests/conform/known_failures (plugin bugs it
#      found); the exit status says so (0 when that list is empty, else 1);
#      --json is one valid document with the same counts;
#  (b) against a deliberately broken backend (tests/conform/broken_backend.c,
#      the CUDA plugin with one promise broken each time) the check that
#      guards that promise fails: each planted violation is caught;
#  (c) slots a backend leaves NULL are skipped and listed, not failed;
#  (d) no driver: exit 4 (the checks that need no init still ran); no
#      backend: exit 3; bad --device: exit 2.
b=${T4A_TEST_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
s=${T4A_TEST_SRCDIR:-$b}
prog=$b/tools/t4a-gpu
broken=$b/tests/conform/.libs/libt4a_broken.so
T4A_CUDA_LIBRARY=$b/tests/fakecuda/.libs/libfakecuda.so
T4A_NVRTC_LIBRARY=$b/tests/fakecuda/.libs/libfakenvrtc.so
T4A_BROKEN_INNER=$b/plugin-cuda/.libs/libt4a_cuda.so
export T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY T4A_BROKEN_INNER
out=$(mktemp) && json=$(mktemp) || exit 99
trap 'rm -f "$out" "$json"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

known=$(sed -e 's/#.*//' "$s/tests/conform/known_failures" | awk 'NF {print $1}' | sort)
want_rc=0
[ -n "$known" ] && want_rc=1

# The checks that failed in $out, sorted.
failed() { sed -n 's/^FAIL \([a-z0-9_.]*\).*/\1/p' "$out" | sort; }

# (a) the CUDA plugin over the fake driver
start=$(date +%s)
"$prog" conform > "$out" 2>&1
rc=$?
cat "$out"
echo "test_conform: the suite took $(( $(date +%s) - start )) s (its own count: $(sed -n 's/.*checks, \(.*\))$/\1/p' "$out"))"
[ $rc -eq $want_rc ] || bad "conform exited $rc, want $want_rc"
if [ "$(failed)" != "$known" ]; then
  bad "the failing checks are not those of tests/conform/known_failures:"
  echo "  failing: $(failed | tr '\n' ' ')"
  echo "  known:   $(echo "$known" | tr '\n' ' ')"
fi
grep -q '^SKIP ' "$out" && bad "checks were skipped on the fake driver (it supports everything)"
grep -q '^conform: code: PTX through artifact_from_bytes$' "$out" || bad "no code path reported"
grep -q '^conform: NULL slots (their checks skipped): none$' "$out" || bad "NULL slots line"
counts=$(sed -n 's/^conform: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\1 \2 \3/p' "$out")
[ -n "$counts" ] || bad "no summary line"

"$prog" conform --json > "$json" 2>&1
rc=$?
[ $rc -eq $want_rc ] || bad "conform --json exited $rc, want $want_rc"
if command -v python3 >/dev/null 2>&1; then
  jc=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1], encoding="utf-8"))["conform"]
assert len(d["checks"]) == d["passed"] + d["failed"] + d["skipped"]
assert d["exit"] == int(sys.argv[2]) and d["null_slots"] == []
print(d["passed"], d["failed"], d["skipped"])' "$json" "$rc") || bad "conform --json: not the JSON document expected"
  [ "$jc" = "$counts" ] || bad "conform --json counts '$jc', the text run '$counts'"
else
  echo "note: python3 not found: --json not parsed"
fi

# (b) planted violations, each caught by the check that guards it
for planted in range_status:transfer.range_errors query_lies:completion.gated_witness \
    double_free:memory.buffer_alloc double_free:errors.handles \
    d2h_offset:transfer.pageable_round_trip info_overrun:errors.struct_sizes \
    no_detail:errors.last_error_per_thread; do
  what=${planted%%:*} check=${planted#*:}
  T4A_BROKEN=$what "$prog" conform --backend "$broken" > "$out" 2>&1
  rc=$?
  if [ $rc -ne 1 ] || ! grep -q "^FAIL $check: " "$out"; then
    cat "$out"
    bad "planted '$what': exit $rc, and $check did not fail"
  else
    echo "planted '$what': caught by $check: $(grep "^FAIL $check: " "$out" | cut -c1-150)"
  fi
done

# (c) NULL slots: skipped and listed, nothing else changes
T4A_BROKEN=null_slots "$prog" conform --backend "$broken" > "$out" 2>&1
rc=$?
[ $rc -eq $want_rc ] || bad "null_slots: exit $rc, want $want_rc"
[ "$(failed)" = "$known" ] || bad "null_slots: the failing checks changed: $(failed | tr '\n' ' ')"
for k in "raw.seam: slot raw_begin" "transfer.peer: slot copy_from_peer" \
    "transfer.peer_via_host: slot copy_from_peer_via_host"; do
  grep -q "^SKIP $k is NULL (unsupported)$" "$out" || bad "null_slots: no 'SKIP $k is NULL'"
done
grep -q '^conform: NULL slots (their checks skipped): copy_from_peer copy_from_peer_via_host raw_begin raw_end$' "$out" ||
  bad "null_slots: the NULL slots are not listed"

# (d) exit statuses as t4a-gpu info/selftest
T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$prog" conform > "$out" 2>&1
rc=$?
[ $rc -eq 4 ] || bad "no driver: exit $rc, want 4"
grep -q '^conform: not run further: init: T4A_ENODRIVER: ' "$out" || bad "no driver: reason not printed"
grep -q '^PASS backend.init_failure_replayed$' "$out" || bad "no driver: init's failure not replayed"
T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$prog" conform --json > "$json" 2>&1
rc=$?
[ $rc -eq 4 ] || bad "no driver, --json: exit $rc, want 4"
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["conform"]["exit"] == 4' "$json" ||
    bad "no driver, --json: not valid JSON"
fi
"$prog" conform --backend /nonexistent/libt4a_x.so > "$out" 2>&1
[ $? -eq 3 ] || bad "no backend: want exit 3"
grep -q '^conform: not run: T4A_ENOBACKEND' "$out" || bad "no backend: reason not printed"
T4A_GPU_BACKEND_PATH=/nonexistent "$prog" conform --json > "$json" 2>&1
[ $? -eq 3 ] || bad "no backend, --json: want exit 3"
"$prog" conform --device 7 > "$out" 2>&1
[ $? -eq 2 ] || bad "--device 7 of 2: want exit 2"
"$prog" conform --device x > "$out" 2>&1
[ $? -eq 2 ] || bad "--device x: want exit 2"

[ $fail -eq 0 ] && echo "PASS: t4a-gpu conform"
exit $fail
