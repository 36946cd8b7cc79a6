#!/bin/sh
# tests/cpu/test_figures.sh -- the figures of docs/performance.md, as a reader
# sees them:
#  (a) bench/plot.py --check draws them from the JSONs `make figures` reads
#      and finds nothing wrong (logarithmic size axes spanning only the data,
#      a log bandwidth axis where it spans decades, no legend over a point,
#      line, bar or label);
#  (b) every figure it draws and every committed one renders to a PNG
#      (rsvg-convert) that has a plot in it, not only a file;
#  (c) the committed figures are the ones it draws (when this matplotlib is
#      the version that drew them: the SVGs name it), so a change to
#      plot.py comes with `make figures`.
# Skips (77), saying why, without matplotlib (python3-matplotlib) or
# rsvg-convert (librsvg2-bin).
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
py=
for p in python3 /usr/bin/python3; do
  "$p" -c 'import matplotlib' >/dev/null 2>&1 && { py=$p; break; }
done
[ -n "$py" ] || { echo "SKIP: no python3 with matplotlib (Debian: python3-matplotlib)"; exit 77; }
command -v rsvg-convert >/dev/null 2>&1 ||
  { echo "SKIP: rsvg-convert not found (Debian: librsvg2-bin): the figures cannot be rendered"; exit 77; }
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

var() {
  printf 'print-var:\n\t@echo $(%s)\n' "$1" |
    env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$b" -f Makefile -f - print-var
}
json=$(var FIGURES_JSON)
[ -f "$json" ] || { echo "ERROR: FIGURES_JSON ($json) not found"; exit 99; }
scaling=$(var SCALING_JSON)
[ -f "$scaling" ] || { echo "ERROR: SCALING_JSON ($scaling) not found"; exit 99; }

# (a)
"$py" "$s/bench/plot.py" --check "$json" "$tmp/drawn" "$scaling" ||
  bad "bench/plot.py --check found problems (above)"

# (b) rendered, and something drawn: a PNG of the SVG's size, not one colour
drawn=$(cd "$tmp/drawn" && ls *.svg 2>/dev/null)
committed=$(cd "$s/docs/figures" && ls *.svg)
[ "$(echo $drawn)" = "$(echo $committed)" ] ||
  bad "plot.py draws '$(echo $drawn)', docs/figures has '$(echo $committed)'"
for f in $drawn; do
  for svg in "$tmp/drawn/$f" "$s/docs/figures/$f"; do
    png=$tmp/$(basename "$(dirname "$svg")")-${f%.svg}.png
    rsvg-convert -b white -o "$png" "$svg" 2>"$tmp/err" || { bad "$svg does not render: $(cat "$tmp/err")"; continue; }
    "$py" - "$png" <<'EOF' || bad "$svg renders to an empty picture"
import sys
import matplotlib.image
img = matplotlib.image.imread(sys.argv[1])[:, :, :3]
h, w = img.shape[:2]
inked = (img.mean(axis=2) < 0.9).mean()  # the share of pixels that are not background
print("  %s: %d x %d, %.1f%% inked" % (sys.argv[1].rsplit("/", 1)[-1], w, h, 100 * inked))
sys.exit(0 if w >= 300 and h >= 200 and 0.02 < inked < 0.6 else 1)
EOF
  done
done

# (c)
version=$("$py" -c 'import matplotlib; print(matplotlib.__version__)')
for f in $drawn; do
  drew=$(sed -n 's/.*Matplotlib v\([0-9][0-9.]*\).*/\1/p' "$s/docs/figures/$f" | head -n 1)
  if [ "$drew" != "$version" ]; then
    echo "note: docs/figures/$f was drawn by matplotlib $drew, this is $version: not compared"
  elif ! cmp -s "$tmp/drawn/$f" "$s/docs/figures/$f"; then
    bad "docs/figures/$f is not what bench/plot.py draws from $(basename "$json") and $(basename "$scaling") (run make figures)"
  fi
done
[ $fail -eq 0 ] && echo "PASS: the figures draw, check and render as committed"
exit $fail
