#!/bin/sh
# tools/install-note.sh -- run by `make install` (install-data-hook, not
# with DESTDIR): when the installation's directories are not ones that
# pkg-config, the dynamic linker and the shell search by default (a
# --prefix=$HOME/t4a, say), prints what to set to build and run programs
# against it: the lines README.md ("Install") gives for such a prefix
# (tests/cpu/test_readme.sh keeps the two equal). When the library directory
# is a system one that the dynamic linker's cache does not list the library
# in yet, says to run ldconfig. Prints nothing when nothing is needed.
#
#   install-note.sh BINDIR LIBDIR PKGCONFIGDIR [PKG_CONFIG]
bindir=$1 libdir=$2 pcdir=$3 pkg_config=${4:-pkg-config}

# DIR with its symbolic links resolved (as given when it does not exist).
real() { (cd "$1" 2>/dev/null && pwd -P) || printf '%s\n' "$1"; }

# Whether DIR is one of the colon-separated LIST.
listed() (
  d=$(real "$1")
  IFS=:
  for e in $2; do
    [ -n "$e" ] && [ "$(real "$e")" = "$d" ] && exit 0
  done
  exit 1
)

# The dynamic linker's directories: its built-in ones and ldconfig's.
ldconfig=
for p in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
  command -v "$p" >/dev/null 2>&1 && { ldconfig=$p; break; }
done
ld_dirs=/lib:/usr/lib:/lib64:/usr/lib64
if [ -n "$ldconfig" ]; then
  ld_dirs=$ld_dirs:$("$ldconfig" -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p' | tr '\n' ':')
fi
pc_dirs=$("$pkg_config" --variable=pc_path pkg-config 2>/dev/null)

lines=
listed "$bindir" "$PATH" || lines="$lines
  export PATH=$bindir:\$PATH"
listed "$pcdir" "$pc_dirs" || lines="$lines
  export PKG_CONFIG_PATH=$pcdir\${PKG_CONFIG_PATH:+:\$PKG_CONFIG_PATH}"
ld_listed=yes
listed "$libdir" "$ld_dirs" || {
  ld_listed=no
  lines="$lines
  export LD_LIBRARY_PATH=$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
}
if [ -n "$lines" ]; then
  echo
  echo "t4a-gpu-backend is installed where the shell, pkg-config or the dynamic linker"
  echo "do not look by default. To build and run programs against it, set (README.md,"
  echo "\"Install\"):$lines"
  [ $ld_listed = yes ] ||
    echo "(or link programs with -Wl,-rpath,$libdir instead of setting LD_LIBRARY_PATH)"
  echo
fi
if [ $ld_listed = yes ] && [ -n "$ldconfig" ] &&
  ! "$ldconfig" -p 2>/dev/null | grep -F "libt4a_gpu.so.0 " | grep -qF "=> $libdir/"; then
  echo
  echo "t4a-gpu-backend: run 'sudo ldconfig' once, so that the dynamic linker finds"
  echo "libt4a_gpu.so.0 in $libdir (README.md, \"Install\")."
  echo
fi
exit 0
