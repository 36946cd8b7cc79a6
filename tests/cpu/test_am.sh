#!/bin/sh
# tests/cpu/test_am.sh -- the committed Makefile fragment tests/tests.am is
# exactly what tests/gen-am.sh writes today (edit the script, then run
# `make am-regen`), and every shared suite in tests/runtime is in it: a GPU
# lane, and a lane that make check runs (the fake one, or for a suite the
# fake driver cannot run, the host one).
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
sh "$s/tests/gen-am.sh" > "$tmp" || { echo "FAIL: tests/gen-am.sh failed"; exit 1; }
if ! diff -u "$s/tests/tests.am" "$tmp"; then
  echo "FAIL: tests/tests.am drifted from tests/gen-am.sh; run make am-regen"
  fail=1
fi
for f in "$s"/tests/runtime/test_*.c; do
  n=$(basename "$f" .c)
  grep -q "^TESTS += tests/cpu/${n}_fake\$" "$s/tests/tests.am" ||
    grep -q "^TESTS += tests/cpu/${n}_host\$" "$s/tests/tests.am" ||
    { echo "FAIL: $n has no fake (or host) lane in tests/tests.am (add it to tests/gen-am.sh)"; fail=1; }
  grep -q "^GPU_TESTS += tests/gpu/${n}_gpu\$" "$s/tests/tests.am" ||
    { echo "FAIL: $n has no GPU lane in tests/tests.am (add it to tests/gen-am.sh)"; fail=1; }
done
[ $fail -eq 0 ] && echo "PASS: tests/tests.am matches tests/gen-am.sh"
exit $fail
