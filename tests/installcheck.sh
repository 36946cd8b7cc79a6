#!/bin/sh
# tests/installcheck.sh -- run by `make installcheck` against the installed
# tree (never the build tree), with what README.md ("Install") tells a user
# to set for a prefix of their own (PATH, PKG_CONFIG_PATH, LD_LIBRARY_PATH;
# `make distcheck` installs in such a prefix): the files are where the .pc
# file says, t4a-gpu and its man page are found, every build command the
# README and the examples give works as written (tests/doc_builds.sh), the
# C++17 example builds strict through pkg-config alone, and the installed
# t4a-gpu finds the installed plugin with no environment help.
#
# Without a GPU every program must fail cleanly with its documented
# "unusable here" status; with INSTALLCHECK_REQUIRE_GPU=1 (the GPU host)
# they must pass: t4a-gpu info and selftest, saxpy and the C++ example.
#
# The installed documentation keeps the source tree's layout: its files are
# there and every relative link of its Markdown files resolves in $docdir
# (tests/doc_links.sh). The installed t4a-gpu.pc has no empty field.
#
# Environment (from Makefile.am): srcdir bindir libdir includedir mandir
# plugindir docdir CC CXX PKG_CONFIG.
set -eu
fail() { echo "installcheck: FAIL: $*" >&2; exit 1; }
say() { echo "installcheck: $*"; }

unset T4A_GPU_BACKEND T4A_GPU_BACKEND_PATH T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# -- the README's settings for a prefix of one's own --------------------------
# Its lines for $HOME/t4a, with this installation's directories, in an
# environment that had none of them (for a system prefix they only add
# directories searched anyway).
settings=$(awk '/^<!-- own-prefix/ {on = 1; next} on && /^    export / {print substr($0, 5); next}
  on {exit}' "$srcdir/README.md")
[ -n "$settings" ] || fail "README.md has no own-prefix block (<!-- own-prefix ... -->)"
settings=$(echo "$settings" | sed -e "s|[$]HOME/t4a/bin|$bindir|g" -e "s|[$]HOME/t4a/lib|$libdir|g")
case $settings in *'$HOME/t4a'*) fail "README.md's own-prefix lines name a directory not mapped here: $settings" ;; esac
unset PKG_CONFIG_PATH LD_LIBRARY_PATH MANPATH
eval "$settings"
say "set as README.md says: $(echo "$settings" | tr '\n' ';')"

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
[ "$(command -v t4a-gpu)" = "$bindir/t4a-gpu" ] ||
  fail "t4a-gpu on PATH is '$(command -v t4a-gpu)', not $bindir/t4a-gpu"
# man finds the page through PATH (bin/../share/man) in the default layout
if command -v man >/dev/null 2>&1 && [ "$mandir" -ef "$bindir/../share/man" ]; then
  [ "$(man -w t4a-gpu 2>/dev/null)" -ef "$mandir/man1/t4a-gpu.1" ] ||
    fail "man -w t4a-gpu gives '$(man -w t4a-gpu 2>&1)', not $mandir/man1/t4a-gpu.1"
fi
empty=$(grep -E '^[A-Za-z][A-Za-z.]*:[[:space:]]*$' "$libdir/pkgconfig/t4a-gpu.pc" || true)
[ -z "$empty" ] || fail "the installed t4a-gpu.pc has an empty field: $empty"
say "files in place; plugins in $plugindir; t4a-gpu and its man page found"

# -- the documentation, whole, with its links ------------------------------------
for f in README.md LICENSE docs/design.md docs/performance.md docs/testing.md; do
  [ -f "$docdir/$f" ] || fail "$docdir/$f is not installed"
done
docs=$(cd "$docdir" && find . -name '*.md' | sed 's|^\./||' | sort)
sh "$srcdir/tests/doc_links.sh" "$docdir" $docs ||
  fail "a link of the installed documentation does not resolve in $docdir (above)"
say "documentation in $docdir: $(echo $docs), every link resolves"

# -- consumers build as documented, and through pkg-config alone --------------
REQUIRE_GPU=${INSTALLCHECK_REQUIRE_GPU:-0} sh "$srcdir/tests/doc_builds.sh" "$srcdir" "$work/doc" ||
  fail "a documented build command does not work against the installed tree (above)"
cflags=$($PKG_CONFIG --cflags t4a-gpu)
libs=$($PKG_CONFIG --libs t4a-gpu)
# shellcheck disable=SC2086
$CXX -std=c++17 -Wall -Wextra -Werror -pedantic $cflags "$srcdir/examples/cpp/devices.cc" \
  -o "$work/devices" $libs || fail "examples/cpp/devices.cc does not build as strict C++17"
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
  # the reason when it failed (the line naming the status), else its last line
  if [ "$rc" -eq 0 ]; then
    say "$name: exit 0: $(tail -n 1 "$work/out")"
  else
    grep -q 'T4A_E[A-Z0-9_]*' "$work/out" ||
      { cat "$work/out"; fail "$name: exit $rc without the reason (no line names a T4A_E status)"; }
    say "$name: exit $rc: $(grep -m 1 'T4A_E[A-Z0-9_]*' "$work/out")"
  fi
}
"$bindir/t4a-gpu" info >"$work/info" 2>&1 || true
grep -q "^backend:      cuda" "$work/info" || { cat "$work/info"; fail "the installed t4a-gpu did not find the installed plugin"; }
expect "t4a-gpu info" 4 "$bindir/t4a-gpu" info
expect "t4a-gpu selftest" 4 "$bindir/t4a-gpu" selftest
expect "saxpy" 4 "$work/doc/examples/saxpy"
expect "devices (C++17)" 4 "$work/devices"
say "passed"
