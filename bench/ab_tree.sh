#!/bin/sh
# bench/ab_tree.sh REV DIR -- builds revision REV's plugins into DIR
# (libt4a_cuda.so, and libt4a_host.so where REV has the host backend), the
# other side of bench/t4a_ab (`make bench-ab AB_A=DIR/libt4a_cuda.so`).
# Run inside the git checkout; REV is exported with git archive into a
# temporary folder and built there with this machine's compiler
# (CONFIGURE_FLAGS passed to configure), so both sides are built alike.
set -eu
[ $# -eq 2 ] || { echo "usage: bench/ab_tree.sh REV DIR" >&2; exit 2; }
rev=$1
short=$(git rev-parse --short "$rev")
mkdir -p "$2"
dir=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src" "$work/build"
git archive "$rev" | tar -x -C "$work/src"
(cd "$work/src" && autoreconf -fi >/dev/null 2>&1)
cd "$work/build"
# shellcheck disable=SC2086
"$work/src/configure" -q ${CONFIGURE_FLAGS:-} >/dev/null
make -s -j"$(nproc)" >/dev/null
cp plugin-cuda/.libs/libt4a_cuda.so "$dir/"
if [ -f plugin-host/.libs/libt4a_host.so ]; then cp plugin-host/.libs/libt4a_host.so "$dir/"; fi
echo "ab_tree: $short's plugins in $dir: $(ls "$dir" | tr '\n' ' ')"
