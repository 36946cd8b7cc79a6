#!/bin/sh
# tests/cpu/test_doc_builds.sh -- the build commands README.md and the
# examples' header comments give, run exactly as written against the build
# tree (tests/doc_builds.sh; make installcheck runs them against the
# installed tree): pkg-config finds a t4a-gpu.pc that points into the build
# tree, the programs they run find the plugin just built.
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): its loader needs the sanitizer"
  echo "runtime, which programs built as the documentation shows do not link (the plain build runs this)"
  exit 77
fi
for tool in cc c++ pkg-config; do
  command -v $tool >/dev/null 2>&1 || { echo "SKIP: $tool not found: the documented commands use it"; exit 77; }
done
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/pc"
cat >"$tmp/pc/t4a-gpu.pc" <<PC
libdir=$b/loader/.libs
Name: t4a-gpu
Description: the build tree of t4a-gpu-backend (tests/cpu/test_doc_builds.sh)
Version: 0
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lt4a_gpu
Cflags: -I$s/abi -I$s/loader
PC
PKG_CONFIG_PATH=$tmp/pc
export PKG_CONFIG_PATH
unset LD_LIBRARY_PATH
[ "${T4A_TEST_LANE:-any}" = gpu ] && REQUIRE_GPU=1 && export REQUIRE_GPU
sh "$s/tests/doc_builds.sh" "$s" "$tmp/work"
