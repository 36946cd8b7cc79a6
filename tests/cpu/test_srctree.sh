#!/bin/sh
# tests/cpu/test_srctree.sh -- building leaves the source tree as it was:
# no file that configure or make writes (configured files, BUILT_SOURCES,
# CLEANFILES, DISTCLEANFILES, man_MANS) is tracked by git, and no tracked
# file is one that .gitignore calls a build output; so `git status` after a
# build (in the tree or out of it) shows only what the user changed.
# tests/reconfigure.sh also checks `git status` after a real in-tree build
# and install on a clean clone. Skips (77) when the source tree is not a git
# checkout (a release tarball) or git is missing.
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
command -v git >/dev/null 2>&1 || { echo "SKIP: git not found"; exit 77; }
git -C "$s" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "SKIP: $s is not a git checkout (a release tarball): nothing is tracked"; exit 77; }
fail=0

# What the build writes, from the Makefile and config.status themselves.
generated=$(printf 'print-generated:\n\t@echo $(CLEANFILES) $(DISTCLEANFILES) $(BUILT_SOURCES) $(man_MANS)\n' |
  env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$b" -f Makefile -f - print-generated) ||
  { echo "ERROR: cannot read the generated files from $b/Makefile"; exit 99; }
configured=$(sh "$b/config.status" --help | awk '/^Configuration (files|headers):/ {on = 1; next}
  on && /^$/ {on = 0} on {print}')
[ -n "$configured" ] || { echo "ERROR: config.status lists no configured file"; exit 99; }
for f in $(printf '%s\n' $generated $configured | sort -u); do
  if [ -n "$(git -C "$s" ls-files -- "$f")" ]; then
    echo "FAIL: $f is written by the build but tracked by git (the build would change it)"
    fail=1
  fi
done
ignored=$(git -C "$s" ls-files -ci --exclude-standard)
if [ -n "$ignored" ]; then
  echo "FAIL: tracked files that .gitignore calls build outputs:"
  echo "$ignored" | sed 's/^/  /'
  fail=1
fi
[ $fail -eq 0 ] && echo "PASS: the build writes no tracked file ($(printf '%s\n' $generated $configured | sort -u | wc -l) outputs checked)"
exit $fail
