#!/bin/sh
# tests/mutate/test_mutations_list.sh -- the mutation lane's list
# (tests/mutate/mutations.txt) still matches the source: every entry's file
# exists and its text occurs there exactly once (`mutate.sh --check-list`,
# no build, about a second). Without this a moved or reworded source line
# left its mutation stale until someone ran `make mutate`. The work
# directory is a temporary one: the source tree may be read-only (distcheck)
# and the build tree's mutate-work/ is the lane's own.
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d) || exit 99
trap 'rm -rf "$work"' EXIT
if MUTATE_DIR=$work sh "$s/tests/mutate/mutate.sh" --check-list; then
  echo "PASS: every mutation of tests/mutate/mutations.txt is found once in its file"
  exit 0
fi
echo "FAIL: tests/mutate/mutations.txt is stale (above: the entries); move each to the code's new" \
  "home or text, keeping the same semantic mutation"
exit 1
