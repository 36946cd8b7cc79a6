#!/bin/sh
# tests/reconfigure.sh -- a tree configured and installed for one prefix,
# re-configured for another and installed again, uses the second everywhere:
# the installed t4a-gpu and libt4a_gpu search the second plugin directory,
# its man page and t4a-gpu.pc name it, no installed file names the first
# prefix (no plugin .la with a stale libdir: none is installed); the two builds leave `git status`
# clean (no tracked file rewritten); and `make uninstall` leaves no file and
# no directory behind. Run by .ci/run on a clean clone (it builds).
#   tests/reconfigure.sh SRCDIR WORKDIR
set -eu
src=$(cd "$1" && pwd)
work=$2
jobs=$(nproc 2>/dev/null || echo 2)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
git clone -q "$src" "$work/src"
cd "$work/src"
autoreconf -fi >/dev/null 2>&1
./configure -q --prefix="$work/a" >/dev/null
make -s -j"$jobs" >/dev/null 2>&1
make -s install >/dev/null 2>&1
./configure -q --prefix="$work/b" >/dev/null
make -s -j"$jobs" >/dev/null 2>&1
make -s install >/dev/null 2>&1
b=$work/b
out=$(env -u T4A_GPU_BACKEND_PATH -u T4A_GPU_BACKEND "$b/bin/t4a-gpu" info 2>&1 || true)
echo "$out" | grep -q "^search path:  $b/lib/t4a-gpu-backend\$" ||
  fail "the re-configured t4a-gpu does not search $b/lib/t4a-gpu-backend:
$out"
echo "$out" | grep -q "^backend:      cuda" ||
  fail "the re-configured t4a-gpu does not find its installed plugin:
$out"
grep -q "$b/lib/t4a-gpu-backend" "$b/share/man/man1/t4a-gpu.1" ||
  fail "the installed t4a-gpu(1) does not name $b/lib/t4a-gpu-backend"
[ "$(PKG_CONFIG_PATH=$b/lib/pkgconfig pkg-config --variable=plugindir t4a-gpu)" = "$b/lib/t4a-gpu-backend" ] ||
  fail "t4a-gpu.pc does not name $b/lib/t4a-gpu-backend"
stale=$(grep -rlF -e "$work/a" "$b" 2>/dev/null || true)
[ -z "$stale" ] || fail "installed files name the first prefix $work/a:
$stale"
[ -z "$(find "$b/lib/t4a-gpu-backend" -name '*.la')" ] ||
  fail "a plugin's libtool archive is installed: $(find "$b/lib/t4a-gpu-backend" -name '*.la')"
dirty=$(git status --porcelain)
[ -z "$dirty" ] || fail "building and installing changed the source tree (git status):
$dirty"
make -s uninstall >/dev/null 2>&1
left=$(find "$b" -mindepth 1 2>/dev/null || true)
[ -z "$left" ] || fail "make uninstall left behind:
$left"
echo "reconfigure: the second prefix is used everywhere; git status stays clean; uninstall leaves nothing"
