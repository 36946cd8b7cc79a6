#!/bin/sh
# tests/installcheck.sh -- run by `make installcheck` against the installed
# tree (never the build tree): the files are where the .pc file says, the
# examples build through pkg-config alone (C and C++17), and the installed
# t4a-gpu finds the installed plugin with no environment help.
#
# Without a GPU every program must fail cleanly with its documented
# "unusable here" status; with INSTALLCHECK_REQUIRE_GPU=1 (the GPU host)
# they must pass: t4a-gpu info and selftest, saxpy and the C++ example.
#
# Environment (from Makefile.am): srcdir bindir libdir includedir mandir
# plugindir CC CXX PKG_CONFIG.
set -eu
fail() { echo "installcheck: FAIL: $*" >&2; exit 1; }
say() { echo "installcheck: $*"; }

unset T4A_GPU_BACKEND T4A_GPU_BACKEND_PATH T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY
PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# -- files -------------------------------------------------------------------
for f in "$includedir/t4a/gpu_backend_v1.h" "$includedir/t4a/gpu_loader.h" \
  "$bindir/t4a-gpu" "$libdir/pkgconfig/t4a-gpu.pc" "$plugindir/libt4a_cuda.so" \
  "$mandir/man1/t4a-gpu.1" "$mandir/man3/t4a_gpu_loader.3" "$mandir/man3/t4a_gpu_backend_v1.3"; do
  [ -e "$f" ] || fail "$f is not installed"
done
ls "$libdir"/libt4a_gpu.so.* >/dev/null 2>&1 || fail "no versioned libt4a_gpu.so.N in $libdir"
[ ! -e "$libdir/libt4a_cuda.so" ] || fail "the plugin must not be on the linker path ($libdir)"
[ "$($PKG_CONFIG --variable=plugindir t4a-gpu)" -ef "$plugindir" ] ||
  fail "t4a-gpu.pc's plugindir ($($PKG_CONFIG --variable=plugindir t4a-gpu)) is not $plugindir"
say "files in place; plugins in $plugindir"

# -- consumers build through pkg-config alone ---------------------------------
cflags=$($PKG_CONFIG --cflags t4a-gpu)
libs=$($PKG_CONFIG --libs t4a-gpu)
rpath="-Wl,-rpath,$libdir"
# shellcheck disable=SC2086
$CC $cflags "$srcdir/examples/saxpy.c" -o "$work/saxpy" $libs -lm $rpath ||
  fail "examples/saxpy.c does not build against the installed tree"
# shellcheck disable=SC2086
$CXX -std=c++17 -Wall -Wextra -Werror -pedantic $cflags "$srcdir/examples/cpp/devices.cc" \
  -o "$work/devices" $libs $rpath || fail "examples/cpp/devices.cc does not build as C++17"
say "examples built with: $cflags $libs"

# -- programs: pass on a GPU host, fail cleanly elsewhere ----------------------
# expect NAME STATUS_WITHOUT_GPU COMMAND...
expect() {
  name=$1 unusable=$2
  shift 2
  set +e
  "$@" >"$work/out" 2>&1
  rc=$?
  set -e
  if [ "${INSTALLCHECK_REQUIRE_GPU:-0}" = 1 ]; then
    [ "$rc" -eq 0 ] || { cat "$work/out"; fail "$name: exit $rc on the GPU host"; }
  else
    [ "$rc" -eq 0 ] || [ "$rc" -eq "$unusable" ] ||
      { cat "$work/out"; fail "$name: exit $rc (want 0, or $unusable without a GPU)"; }
  fi
  say "$name: exit $rc: $(tail -n 1 "$work/out")"
}
"$bindir/t4a-gpu" info >"$work/info" 2>&1 || true
grep -q "^backend:      cuda" "$work/info" || { cat "$work/info"; fail "the installed t4a-gpu did not find the installed plugin"; }
expect "t4a-gpu info" 4 "$bindir/t4a-gpu" info
expect "t4a-gpu selftest" 4 "$bindir/t4a-gpu" selftest
expect "saxpy" 4 "$work/saxpy"
expect "devices (C++17)" 4 "$work/devices"
say "passed"
