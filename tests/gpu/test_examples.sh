#!/bin/sh
# tests/gpu/test_examples.sh -- the examples (saxpy, warm_chain, warm_chain --graph) run and
# verify their results on a GPU. Skips (77) without a usable GPU unless the
# lane requires one (make check-gpu), where that fails.
b=${T4A_TEST_BUILDDIR:-.}
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
"$b/examples/saxpy" > "$out" 2>&1
rc=$?
cat "$out"
if [ $rc -eq 4 ]; then
  if [ "${T4A_TEST_LANE:-any}" = gpu ]; then echo "FAIL: no usable GPU"; exit 1; fi
  echo "SKIP: no usable GPU"; exit 77
fi
[ $rc -eq 0 ] || exit 1
grep -q "1048576 elements, 0 wrong" "$out" || exit 1
"$b/examples/warm_chain" 2000 || exit 1
"$b/examples/warm_chain" --graph 2000 || exit 1
