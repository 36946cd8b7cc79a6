#!/bin/sh
# python/build_fastcall.sh DEST -- a copy of the t4a_gpu package in DEST
# with its optional compiled fast path (t4a_gpu/_fastcall.c) built in, for
# running the suite and the bench on that route from a build tree (pip
# install ./python builds it through setup.py instead). Uses $PYTHON
# (default python3) for the include folder and the module's suffix, and
# $CC (default cc). Exits 77, saying why, where it cannot be built (no
# Python.h: Debian's python3-dev; no C compiler).
set -eu
[ $# -eq 1 ] || { echo "usage: python/build_fastcall.sh DEST" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
cc=${CC:-cc}
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
ext=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or ".so")')
if [ ! -f "$inc/Python.h" ]; then
  echo "build_fastcall: no $inc/Python.h (install python3-dev): the compiled fast path is not built"
  exit 77
fi
command -v "$cc" >/dev/null 2>&1 || { echo "build_fastcall: no C compiler ($cc)"; exit 77; }
mkdir -p "$1"
rm -rf "$1/t4a_gpu"
cp -R "$here/t4a_gpu" "$1/"
chmod -R u+w "$1/t4a_gpu"
"$cc" -shared -fPIC -O2 -std=c11 -Wall -Wextra -Werror -fvisibility=hidden -I"$inc" \
  "$here/t4a_gpu/_fastcall.c" -o "$1/t4a_gpu/_fastcall$ext"
