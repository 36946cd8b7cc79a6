#!/bin/sh
# tests/doc_links.sh -- every relative link of the Markdown files given
# resolves under ROOT: [text](path) to a file there, [text](path#anchor) and
# [text](#anchor) to a heading of that file (GitHub's anchors: lower case,
# punctuation dropped, spaces to hyphens). Links to http(s)/mailto are not
# followed. Used on the source tree (tests/cpu/test_docs.sh: the release
# tarball is checked the same way under make distcheck) and on the installed
# documentation (tests/installcheck.sh).
#
#   tests/doc_links.sh ROOT FILE...     (FILEs relative to ROOT; exit 0/1)
# With DOC_LINKS_TARGETS=FILE set, appends the files linked to (relative to
# ROOT) to FILE.
root=$1
shift
fail=0
tmp=$(mktemp) || exit 99
trap 'rm -f "$tmp"' EXIT

# The anchors of a Markdown file's headings, one per line (code blocks aside).
anchors() {
  awk '/^```/ {code = !code; next} !code && /^#+ / {sub(/^#+ +/, ""); print}' "$1" |
    LC_ALL=C tr '[:upper:]' '[:lower:]' | LC_ALL=C sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

for f in "$@"; do
  [ -f "$root/$f" ] || { echo "FAIL: $root/$f does not exist"; fail=1; continue; }
  dir=$(dirname "$f")
  # "LINE TARGET" for each inline link or image outside code blocks and spans
  links=$(awk '/^```/ {code = !code; next} code {next}
    { line = $0; gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^) ]+\)/)) {
        print NR, substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, RSTART + RLENGTH) } }' \
    "$root/$f")
  [ -n "$links" ] || continue
  echo "$links" >"$tmp"
  while read -r n target; do
    case $target in http://* | https://* | mailto:*) continue ;; esac
    path=${target%%#*}
    anchor=
    case $target in *"#"*) anchor=${target#*#} ;; esac
    if [ -z "$path" ]; then
      file=$f
    else
      file=$dir/$path
      case $dir in .) file=$path ;; esac
    fi
    if [ ! -e "$root/$file" ]; then
      echo "FAIL: $f:$n: the link to '$target' names $file, which is not in $root"
      fail=1
    elif [ -n "$anchor" ] && ! anchors "$root/$file" | grep -qx -- "$anchor"; then
      echo "FAIL: $f:$n: the link to '$target': $file has no heading '#$anchor'"
      fail=1
    elif [ -n "$path" ] && [ -n "${DOC_LINKS_TARGETS:-}" ]; then
      echo "$file" >>"$DOC_LINKS_TARGETS" # the files linked to, for the caller
    fi
  done <"$tmp"
done
exit $fail
