#!/bin/sh
# tests/cpu/test_man.sh -- the man pages cannot drift from the sources:
#  (a) the API pages are what man/gen-man.py makes of the headers today, and
#      every table slot and loader function is documented (else it errors);
#  (b) t4a-gpu.1 names every command, every exit status, the package version
#      and every environment variable the sources read;
#  (c) every page renders without a groff warning, and its rendered text
#      has no artefact of a markup slip: a font letter glued to a word
#      ("nameR," from a mistyped \fR), a literal font escape, a macro name
#      in running text, an unsubstituted @VARIABLE@ (the installed
#      t4a-gpu.1 is the configured one, from the build tree); and no page
#      source holds a control character (when groff is installed);
#  (d) t4a-gpu CMD --help is CMD's own help, for every command of the page.
# Skips (77) only when python3 is missing.
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
tmp=$(mktemp) || exit 99
trap 'rm -f "$tmp" "$tmp.text"' EXIT
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
pages="$s/man/t4a-gpu.1.in $s/man/t4a_gpu_loader.3 $s/man/t4a_gpu_backend_v1.3"
for p in $pages; do
  tr -d '\t\n' < "$p" | LC_ALL=C grep -q '[[:cntrl:]]' &&
    bad "$p holds a control character (a font escape written through a string that expanded it?)"
done
if command -v groff >/dev/null 2>&1; then
  [ -f "$b/man/t4a-gpu.1" ] || bad "$b/man/t4a-gpu.1 (the configured page) is not built"
  for p in $pages "$b/man/t4a-gpu.1"; do
    [ -f "$p" ] || continue
    w=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
    [ -z "$w" ] || bad "groff warns on $p: $w"
    # plain text (no overstriking, no SGR), then what a pager shows of it
    groff -man -Tutf8 -P-cbou "$p" >"$tmp" 2>/dev/null
    [ -s "$tmp" ] || { bad "$p renders to nothing"; continue; }
    tr -d '\t\n' <"$tmp" | LC_ALL=C grep -q '[[:cntrl:]]' && bad "$p renders a control character"
    LC_ALL=C tr -d '\000-\010\013-\037' <"$tmp" >"$tmp.text"
    glued=$(tr -s ' \t' '\n\n' <"$tmp.text" | grep -E '[a-z][BIRP][,.;:)]*$' | grep -Ev '[KMGT]iB[,.;:)]*$')
    [ -z "$glued" ] || bad "$p renders a font letter glued to a word: $glued"
    esc=$(grep -E '\\f[BIRP(]|(^|[[:space:]])\.(B|I|BR|BI|IB|IR|RB|RI|TP|PP|IP|SH|SS|br)([[:space:]]|$)' "$tmp.text")
    [ -z "$esc" ] || bad "$p renders markup as text: $esc"
    case $p in *.in) ;; *)
      subst=$(grep -E '@[A-Z_]+@' "$tmp.text")
      [ -z "$subst" ] || bad "$p renders an unsubstituted variable: $subst" ;;
    esac
  done
else
  echo "note: groff not found: pages not rendered"
fi

# (d) every command's own help.
if [ -x "$b/tools/t4a-gpu" ]; then
  for cmd in info selftest conform bench help; do
    out=$("$b/tools/t4a-gpu" "$cmd" --help 2>&1)
    echo "$out" | head -n 1 | grep -Eq "^usage: t4a-gpu $cmd( |\$)" ||
      bad "t4a-gpu $cmd --help is not $cmd's own help: $(echo "$out" | head -n 1)"
    [ "$("$b/tools/t4a-gpu" help "$cmd" 2>&1)" = "$out" ] ||
      bad "t4a-gpu help $cmd differs from t4a-gpu $cmd --help"
  done
  "$b/tools/t4a-gpu" help frobnicate >/dev/null 2>&1
  [ $? -eq 2 ] || bad "t4a-gpu help frobnicate does not exit 2"
fi

[ $fail -eq 0 ] && echo "PASS: man pages match the sources"
exit $fail
