#!/bin/sh
# tests/cpu/test_layering.sh -- the structure docs/design.md ("Layout")
# promises, measured on the built objects:
#  (a) no call loop among the files of backend-core/, of each plugin (with backend-core/), of
#      the loader library, or of the t4a-gpu program: every call between two files goes one way
#      (nm gives each object's defined and undefined symbols; tsort finds
#      loops);
#  (b) no C source of those folders or common/ over 600 lines (tests and
#      generated files aside): a file that grows past it wants splitting;
#  (c) the layers: common/ below backend-core/ below the plugins, by their includes.
# Skips (77) when nm or tsort is missing.
b=${T4A_TEST_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
s=${T4A_TEST_SRCDIR:-$b}
NM=${NM:-nm}
command -v "${NM%% *}" >/dev/null 2>&1 && command -v tsort >/dev/null 2>&1 ||
  { echo "SKIP: nm or tsort not found"; exit 77; }
fail=0

# "caller callee" lines for the objects given: file names without the
# libtool/automake prefixes.
edges() {
  for o in "$@"; do
    f=$(basename "$o" .o); f=${f#*-}
    $NM "$o" | awk -v f="$f" '$2 ~ /^[TDBR]$/ {print "D", f, $3} $1 == "U" {print "U", f, $2}'
  done | awk '$1 == "D" {def[$3] = $2; next} {use[NR] = $2 " " $3}
              END {for (i in use) {split(use[i], a, " "); if ((a[2] in def) && def[a[2]] != a[1])
                                     print a[1], def[a[2]]}}' | sort -u
}

check() { # group name, objects...
  name=$1; shift
  [ -e "$1" ] || { echo "FAIL: $name: no objects ($1); build first"; fail=1; return; }
  e=$(edges "$@")
  echo "$name: $(echo "$e" | grep -c .) calls between files"
  if ! echo "$e" | tsort >/dev/null 2>"${TMPDIR:-/tmp}/t4a-tsort.$$"; then
    echo "FAIL: $name: files call each other in a loop:"
    cat "${TMPDIR:-/tmp}/t4a-tsort.$$"
    fail=1
  fi
  rm -f "${TMPDIR:-/tmp}/t4a-tsort.$$"
}

check core "$b"/backend-core/.libs/libt4a_core_la-*.o
check plugin-cuda "$b"/plugin-cuda/.libs/libt4a_cuda_core_la-*.o "$b"/plugin-cuda/.libs/libt4a_cuda_la-*.o \
  "$b"/backend-core/.libs/libt4a_core_la-*.o
check plugin-host "$b"/plugin-host/.libs/libt4a_host_la-*.o "$b"/backend-core/.libs/libt4a_core_la-*.o

# (c) the layers: backend-core/ is below every plugin and common/ below backend-core/; a lower
# layer never includes (or calls) a higher one, and no plugin includes another's.
for f in "$s"/backend-core/*.[ch]; do
  if grep -n '#include "plugin-' "$f"; then
    echo "FAIL: ${f#"$s"/} includes a plugin's header: backend-core/ is below the plugins"; fail=1
  fi
done
for f in "$s"/common/*.[ch]; do
  if grep -nE '#include "(core|plugin-[a-z]+)/' "$f"; then
    echo "FAIL: ${f#"$s"/} includes backend-core/ or a plugin: common/ is the lowest layer"; fail=1
  fi
done
for p in "$s"/plugin-*/; do
  for f in "$p"*.[ch]; do
    [ -f "$f" ] || continue
    if grep -n '#include "plugin-' "$f" | grep -v "\"$(basename "$p")/"; then
      echo "FAIL: ${f#"$s"/} includes another plugin's header"; fail=1
    fi
  done
done
check loader "$b"/loader/.libs/libt4a_gpu_core_la-*.o
check t4a-gpu "$b"/tools/t4a_gpu-*.o

for f in "$s"/common/*.c "$s"/backend-core/*.c "$s"/loader/*.c "$s"/plugin-*/*.c "$s"/tools/*.c; do
  [ -f "$f" ] || continue
  case $f in */plugin-host/prelude_text.c) continue ;; esac # generated (embed.sh), in-tree builds
  n=$(wc -l < "$f")
  [ "$n" -le 600 ] || { echo "FAIL: ${f#"$s"/} has $n lines (over 600): split it by concern"; fail=1; }
done
[ $fail -eq 0 ] && echo "layering: no call loops, no oversized sources"
exit $fail
