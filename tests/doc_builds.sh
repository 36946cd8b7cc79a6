#!/bin/sh
# tests/doc_builds.sh -- every build command the documentation gives for C and
# C++ code runs exactly as written: the "cc ..."/"c++ ..." lines in the
# header comment of each examples/ program (run in a copy of its directory,
# as a reader would), and the README's (the quick start's, and the
# "cc app.c ..." ones with the quick start as app.c). The compiler, the
# files and pkg-config are the plain ones the text names; whatever
# PKG_CONFIG_PATH and LD_LIBRARY_PATH the caller set are the reader's
# environment:
#   tests/cpu/test_doc_builds.sh  the build tree (a t4a-gpu.pc pointing into it)
#   tests/installcheck.sh         the installed tree, with the README's settings
#                                 for a prefix of one's own
# A command that also runs its program (`&& ./saxpy`) passes when the program
# exits 0, or 4 (no usable GPU here) unless REQUIRE_GPU=1. None of the
# examples needs the CUDA or NCCL headers (the NCCL example declares the few
# calls it makes in examples/nccl_dl.h and loads NCCL at run time); a command
# that fails only for want of one of those headers is skipped, saying so.
#
#   tests/doc_builds.sh SRCDIR WORKDIR      prints a line per command; exit 0/1
s=$1
work=$2
fail=0
ran=0
skipped=0
mkdir -p "$work" || exit 99

# check DIR FILE COMMAND: run COMMAND in DIR (sh -c), the output it builds is
# the word after -o.
check() {
  dir=$1 src=$2 cmd=$3
  out=$(echo "$cmd" | sed -n 's/.* -o \([^ ]*\).*/\1/p')
  rm -f "$dir/$out"
  (cd "$dir" && sh -c "$cmd") </dev/null >"$work/log" 2>&1
  rc=$?
  ran=$((ran + 1))
  if [ ! -x "$dir/$out" ]; then
    if grep -Eq "fatal error: (cuda|cuda_runtime|nvrtc|nccl)[a-z_]*\.h: No such file" "$work/log"; then
      echo "SKIP $src: $cmd: needs a header absent here ($(grep -Eo '(cuda|cuda_runtime|nvrtc|nccl)[a-z_]*\.h' "$work/log" | head -n 1))"
      skipped=$((skipped + 1))
      return
    fi
    echo "FAIL $src: $cmd: does not build:"
    sed 's/^/    /' "$work/log"
    fail=1
    return
  fi
  case $cmd in
  *"&& ./"*) # built, then run: 0, or 4 where no GPU is usable
    if [ $rc -eq 0 ] || { [ $rc -eq 4 ] && [ "${REQUIRE_GPU:-0}" != 1 ]; }; then
      echo "ok   $src: $cmd (ran: exit $rc: $(tail -n 1 "$work/log"))"
      return
    fi ;;
  *)
    if [ $rc -eq 0 ]; then
      echo "ok   $src: $cmd"
      return
    fi ;;
  esac
  echo "FAIL $src: $cmd: exit $rc"
  sed 's/^/    /' "$work/log"
  fail=1
}

# The examples: a copy of examples/, each command run next to its source.
rm -rf "$work/examples" && cp -R "$s/examples" "$work/examples" && chmod -R u+w "$work/examples" ||
  exit 99
for f in $(cd "$work" && find examples -name '*.c' -o -name '*.cc' | sort); do
  sed -n -e '/^\(\/\/\| \*\)  *\(cc\|c++\) /{s/^\(\/\/\| \*\)  *//;p;}' -e '/^#include/q' \
    "$work/$f" >"$work/cmds"
  [ -s "$work/cmds" ] ||
    { echo "FAIL $f: its header comment gives no build command (cc ... or c++ ...)"; fail=1; continue; }
  while IFS= read -r c; do
    check "$work/$(dirname "$f")" "$f" "$c"
  done <"$work/cmds"
done

# The README: the quick start as quickstart.c and as app.c, each indented
# "cc" command (continued lines joined).
mkdir -p "$work/readme"
awk '/^<!-- quickstart/ {on = 1; next} on && /^```c$/ {code = 1; next}
     code && /^```$/ {exit} code {print}' "$s/README.md" >"$work/readme/quickstart.c"
cp "$work/readme/quickstart.c" "$work/readme/app.c"
awk '/^    cc / {line = substr($0, 5); while (line ~ /\\$/ && (getline nxt) > 0) {
       sub(/\\$/, "", line); sub(/^ */, "", nxt); line = line nxt }
     print line}' "$s/README.md" >"$work/cmds"
[ -s "$work/cmds" ] || { echo "FAIL README.md: no cc command found"; fail=1; }
while IFS= read -r c; do
  check "$work/readme" README.md "$c"
done <"$work/cmds"

echo "$ran documented build commands run, $skipped skipped"
exit $fail
