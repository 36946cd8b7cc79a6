#!/bin/sh
# tests/cpu/test_man.sh -- the man pages cannot drift from the sources:
#  (a) the API pages are what man/gen-man.py makes of the headers today, and
#      every table slot and loader function is documented (else it errors);
#  (b) t4a-gpu.1 names every command, every exit status, the package version
#      and every environment variable the sources read;
#  (c) every page renders without a groff warning (when groff is installed).
# Skips (77) only when python3 is missing.
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found (needed by man/gen-man.py)"; exit 77
fi

# (a) drift and undocumented API.
python3 "$s/man/gen-man.py" --srcdir "$s" --check-dir "$s/man" ||
  bad "man/gen-man.py --check-dir: API pages stale or API undocumented (see above)"

# (b) the hand-written page against the program's interface and the sources.
page=$s/man/t4a-gpu.1.in
# Lines of section $1 of the page (from its .SH, quoted or not, to the next).
section() { awk -v h=".SH $1" '/^\.SH /{t = $0; gsub(/"/, "", t); on = (t == h)} on' "$page"; }
for cmd in info selftest conform bench help; do
  section COMMANDS | grep -qx "\.B $cmd" || bad "t4a-gpu.1: command '$cmd' not described"
done
for code in 0 1 2 3 4; do
  section "EXIT STATUS" | grep -qx "\.B $code" || bad "t4a-gpu.1: exit status $code not described"
done
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$s/configure.ac")
grep -q "^\.TH .* \"t4a-gpu-backend $version\"" "$page" ||
  bad "t4a-gpu.1: .TH does not name version $version (configure.ac)"
# (t4a__getenv_path("NAME", ...) reads path-valued variables: common/env.h)
vars=$(grep -rhoE 'getenv(_path)?\("[A-Za-z_][A-Za-z0-9_]*"' "$s/common" "$s/loader" "$s/plugin-cuda" \
  --include='*.c' --include='*.h' | sed 's/.*("\(.*\)"/\1/' | sort -u)
[ -n "$vars" ] || bad "found no getenv call in the sources: the pattern is stale"
for v in $vars; do
  section ENVIRONMENT | grep -qx "\.B $v" || bad "t4a-gpu.1: environment variable $v (read by the sources) not described"
done

# (c) rendering.
if command -v groff >/dev/null 2>&1; then
  for p in "$s/man/t4a-gpu.1.in" "$s/man/t4a_gpu_loader.3" "$s/man/t4a_gpu_backend_v1.3"; do
    w=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
    [ -z "$w" ] || bad "groff warns on $p: $w"
  done
else
  echo "note: groff not found: pages not rendered"
fi

[ $fail -eq 0 ] && echo "PASS: man pages match the sources"
exit $fail
