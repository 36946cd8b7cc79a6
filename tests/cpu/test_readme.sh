#!/bin/sh
# tests/cpu/test_readme.sh -- README.md's quick start compiles as shown (C11,
# -Wall -Wextra -Werror) against the build tree and exits as it says: 3
# without a backend, 4 without a driver (naming the cause), 0 with "ok" on
# the fake driver and on the host backend (and, in the GPU lane, on the
# real GPU); and the lines
# `make install` prints for a prefix of one's own (tools/install-note.sh)
# are the README's, while it prints none for directories searched anyway.
# (tests/doc_builds.sh runs the README's build commands as written.)
s=${T4A_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${T4A_TEST_BUILDDIR:-$s}
cc=${T4A_TEST_CC:-cc}
if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): its loader needs the sanitizer"
  echo "runtime, which the quick start compiled as the README shows does not link (the plain build runs this)"
  exit 77
fi
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && cat "$tmp/out"; exit 1; }

awk '/^<!-- quickstart/ {on = 1; next} on && /^```c$/ {code = 1; next}
     code && /^```$/ {exit} code {print}' "$s/README.md" > "$tmp/quickstart.c"
[ -s "$tmp/quickstart.c" ] || fail "no quick start block found in README.md"
$cc -std=c11 -Wall -Wextra -Werror -I"$s/abi" -I"$s/loader" "$tmp/quickstart.c" \
  -o "$tmp/quickstart" -L"$b/loader/.libs" -lt4a_gpu -Wl,-rpath,"$b/loader/.libs" \
  > "$tmp/out" 2>&1 || fail "the quick start does not compile as shown"

run() { "$@" > "$tmp/out" 2>&1; echo $?; }
rc=$(run env T4A_GPU_BACKEND_PATH=/nonexistent "$tmp/quickstart")
[ "$rc" -eq 3 ] || fail "without a backend: exit $rc, want 3"
rc=$(run env T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$tmp/quickstart")
[ "$rc" -eq 4 ] || fail "without a driver: exit $rc, want 4"
grep -q "^init: T4A_ENODRIVER: " "$tmp/out" || fail "without a driver: the cause is not printed"
rc=$(run env T4A_CUDA_LIBRARY="$b/tests/fakecuda/.libs/libfakecuda.so" "$tmp/quickstart")
[ "$rc" -eq 0 ] || fail "on the fake driver: exit $rc, want 0"
grep -qx "hello, GPU: ok" "$tmp/out" || fail "on the fake driver: no round trip"
rc=$(run env T4A_GPU_BACKEND_PATH="$b/plugin-host/.libs" T4A_GPU_BACKEND=host "$tmp/quickstart")
[ "$rc" -eq 0 ] || fail "on the host backend: exit $rc, want 0"
grep -qx "hello, GPU: ok" "$tmp/out" || fail "on the host backend: no round trip"
if [ "${T4A_TEST_LANE:-any}" = gpu ]; then
  rc=$(run "$tmp/quickstart")
  [ "$rc" -eq 0 ] || fail "on the GPU: exit $rc, want 0"
  grep -qx "hello, GPU: ok" "$tmp/out" || fail "on the GPU: no round trip"
fi

# What `make install` prints for a prefix of one's own is what the README says.
awk '/^<!-- own-prefix/ {on = 1; next} on && /^    export / {print substr($0, 5); next} on {exit}' \
  "$s/README.md" | sed 's|[$]HOME/t4a|/nonexistent/t4a|g' > "$tmp/want"
[ -s "$tmp/want" ] || fail "README.md has no own-prefix block (<!-- own-prefix ... -->)"
sh "$s/tools/install-note.sh" /nonexistent/t4a/bin /nonexistent/t4a/lib /nonexistent/t4a/lib/pkgconfig \
  > "$tmp/out" 2>&1
sed -n 's/^  export /export /p' "$tmp/out" > "$tmp/got"
cmp -s "$tmp/want" "$tmp/got" ||
  fail "make install's note for a prefix of one's own (tools/install-note.sh) differs from README.md:
$(diff "$tmp/want" "$tmp/got")"
grep -q -- "-Wl,-rpath,/nonexistent/t4a/lib" "$tmp/out" || fail "the note does not mention the rpath"
pcdir=$(pkg-config --variable=pc_path pkg-config 2>/dev/null | cut -d: -f1)
if [ -n "$pcdir" ]; then
  sh "$s/tools/install-note.sh" "$(dirname "$(command -v sh)")" /usr/lib "$pcdir" > "$tmp/out" 2>&1
  ! grep -q export "$tmp/out" || fail "the note asks to set variables for searched directories"
fi

# The Python install routes' packages (both run by tests/consumers/test_python.sh;
# the --find-links one needs Debian's wheel files) are in the README's apt-get
# line and in CI's package list.
rm -f "$tmp/out"
apt=$(grep '^ *sudo apt-get install python3-' "$s/README.md")
[ -n "$apt" ] || fail "README.md has no 'sudo apt-get install python3-...' line for the Python package"
for p in python3-venv python3-pip python3-setuptools python3-wheel python3-setuptools-whl \
  python3-wheel-whl; do
  echo " $apt " | grep -q " $p " || fail "README.md's Python apt-get line lacks $p"
  grep -Eq "[( ]$p([ )]|\$)" "$s/.ci/run" || fail ".ci/run does not install $p"
done
echo "README quick start: compiles; exits 3, 4 and 0 as documented; make install's note and the"
echo "Python packages are the README's"
