#!/bin/sh
# tests/cpu/test_docs.sh -- the documentation ships whole and reads on its
# own:
#  (a) every relative link of the Markdown files the release tarball ships
#      resolves (tests/doc_links.sh: files and heading anchors), and every
#      file linked to is in the tarball (the Makefile's DISTFILES); under
#      make distcheck this runs in the unpacked tarball itself;
#  (b) the documentation installed in $(docdir) keeps the source tree's
#      layout, so the same links resolve there (make installcheck checks the
#      installed files);
#  (c) docs/design.md's table of contents lists every heading after it, in
#      order, with its anchor;
#  (d) docs/design.md and docs/testing.md name no issue by number ("issue
#      #14", "(#19)"): they say what was decided;
#  (e) t4a-gpu.pc has no empty field.
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# Make variables of the build tree's Makefile.
makevar() {
  printf 'print-var:\n\t@echo $(%s)\n' "$1" |
    env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$b" -f Makefile -f - print-var
}
distfiles=$(makevar DISTFILES) || { echo "ERROR: cannot read DISTFILES from $b/Makefile"; exit 99; }
# relative to the source tree, one per line
printf '%s\n' $distfiles | sed -e "s|^$s/||" -e 's|^\./||' | sort -u >"$tmp/dist"

# (a) the shipped Markdown files' links.
md=$(grep '\.md$' "$tmp/dist")
[ -n "$md" ] || bad "no Markdown file in DISTFILES"
DOC_LINKS_TARGETS=$tmp/targets sh "$s/tests/doc_links.sh" "$s" $md || fail=1
touch "$tmp/targets"
for f in $(sed -e ':a' -e 's|[^/]*/\.\./||' -e 'ta' "$tmp/targets" | sort -u); do
  in=no
  while read -r d; do
    case $f in "$d" | "$d"/*) in=yes; break ;; esac
  done <"$tmp/dist"
  [ $in = yes ] || bad "$f is linked to from the documentation but not in the release tarball (EXTRA_DIST)"
done

# (b) what make install puts in $(docdir): the same relative paths.
for v in dist_doc_DATA dist_t4adocs_DATA dist_t4afigures_DATA; do
  dir=
  case $v in
  dist_doc_DATA) dir=. ;;
  dist_t4adocs_DATA) dir=docs ;;
  dist_t4afigures_DATA) dir=docs/figures ;;
  esac
  for f in $(makevar $v); do
    [ "$(dirname "$f")" = "$dir" ] ||
      bad "$f is installed in \$(docdir)/$dir: its links would not resolve there"
    echo "$f" >>"$tmp/installed"
  done
done
for f in $md; do
  case $f in README.md | docs/*.md)
    grep -qx "$f" "$tmp/installed" || bad "$f is shipped but not installed with the documentation" ;;
  esac
done
sed -e ':a' -e 's|[^/]*/\.\./||' -e 'ta' "$tmp/targets" | sort -u | while read -r f; do
  case $f in
  README.md | LICENSE | docs/*) grep -qx "$f" "$tmp/installed" ||
    echo "FAIL: $f is linked to from the installed documentation but not installed" ;;
  esac
done >"$tmp/missing"
[ -s "$tmp/missing" ] && { cat "$tmp/missing"; fail=1; }

# (c) design.md's contents.
d=$s/docs/design.md
awk '/^<!-- toc/ {on = 1; next} on && /^ *- \[/ {print; next} on {exit}' "$d" >"$tmp/toc"
awk '/^<!-- toc/ {after = 1} /^```/ {code = !code; next}
     after && !code && /^##+ / {
       depth = index($0, " ") - 3; title = substr($0, depth + 4)
       if (depth > 2) next
       slug = tolower(title); gsub(/[^a-z0-9 _-]/, "", slug); gsub(/ /, "-", slug)
       indent = ""; for (i = 0; i < depth; i++) indent = indent "  "
       print indent "- [" title "](#" slug ")" }' "$d" >"$tmp/headings"
[ -s "$tmp/toc" ] || bad "docs/design.md has no table of contents (<!-- toc ... --> and a list)"
cmp -s "$tmp/toc" "$tmp/headings" ||
  bad "docs/design.md's table of contents differs from its headings (- the contents, + the headings):
$(diff "$tmp/toc" "$tmp/headings" | grep '^[<>]' | sed 's/^</-/; s/^>/+/')"

# (d) no issue numbers.
for f in docs/design.md docs/testing.md; do
  refs=$(awk '/^```/ {code = !code; next} !code' "$s/$f" | grep -nE '(^|[^&A-Za-z0-9])#[0-9]+\b')
  [ -z "$refs" ] || bad "$f names issues by number (say what was decided):
$refs"
done

# (e) the pkg-config file.
empty=$(grep -E '^[A-Za-z][A-Za-z.]*:[[:space:]]*$' "$b/t4a-gpu.pc")
[ -z "$empty" ] || bad "t4a-gpu.pc has an empty field: $empty"

[ $fail -eq 0 ] && echo "PASS: the documentation's links resolve in the tree, the tarball and \$(docdir); design.md's contents match"
exit $fail
