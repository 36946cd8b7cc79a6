#!/bin/sh
# tests/mutate/mutate.sh -- the mutation lane (`make mutate`; not part of
# `make check`, see docs/testing.md): plants each mutation of the list
# (tests/mutate/mutations.txt) in a scratch copy of the tree, one at a time,
# rebuilds incrementally, runs the fast tests of its lanes (the fake lane for
# plugin-cuda/ and the loader, the host lane for plugin-host/, both for
# backend-core/ and common/) and reports whether they killed it (some test
# failed) or it survived.
#
#   tests/mutate/mutate.sh [--list FILE] [--only ID,ID...] [--check-list]
#
# --check-list only checks that every mutation's text occurs exactly once in
# its file (no build). Environment:
#   MUTATE_DIR      work directory: the scratch copy (src), its builds
#                   (build, build-tsan), logs and the report
#                   (default ./mutate-work); kept between runs, so the next
#                   run rebuilds only what changed
#   MUTATE_JOBS     make -j for builds and the test batch (default 2)
#   MUTATE_TESTS    the fake lane's test programs (default below, relative
#                   to the build directory): what a mutation of plugin-cuda/,
#                   loader/, backend-core/ or common/ runs after its `tests:`
#   MUTATE_HOST_TESTS  the host lane's (default below): what a mutation of
#                   plugin-host/, backend-core/ or common/ runs (backend-core/
#                   and common/ are linked into both plugins: both sets)
#   MUTATE_TIMEOUT  seconds one test program may run (default 150): a hang
#                   counts as a kill (the test failed), but only after this
#   MUTATE_CONFIGURE_FLAGS  extra configure arguments for the scratch build
# The scratch build is configured without --enable-werror, so a mutation that
# only adds a warning still builds. Exits 0 when every mutation was killed or
# survived as the list argues (an `unkillable:` entry), 1 otherwise (a
# survivor without an argument, an argued one that was killed after all, a
# mutation that does not build), 2 on a usage or setup error (a text not
# found exactly once, the unmutated tree failing its tests).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
list=$here/mutations.txt
only=
check_only=0
while [ $# -gt 0 ]; do
  case $1 in
  --list) list=$2; shift 2 ;;
  --only) only=$2; shift 2 ;;
  --check-list) check_only=1; shift ;;
  *) echo "usage: $0 [--list FILE] [--only ID,ID...] [--check-list]" >&2; exit 2 ;;
  esac
done
case $list in /*) ;; *) list=$PWD/$list ;; esac

jobs=${MUTATE_JOBS:-2}
limit=${MUTATE_TIMEOUT:-150}
work=${MUTATE_DIR:-$PWD/mutate-work}
mkdir -p "$work"
work=$(cd "$work" && pwd)
# Ordered so that most mutations die early: the suites that check the most
# per second first, the fault sweep (8 s) and the slow suites last.
default_tests="tests/cpu/test_runtime_fake tests/cpu/test_transfer_fake \
tests/cpu/test_completion_fake tests/cpu/test_v1_1_fake tests/cpu/test_context_fake \
tests/cpu/test_staging_fake tests/cpu/test_graph_fake tests/cpu/test_launch_ex_fake \
tests/cpu/test_runtime_faults tests/cpu/test_cuda_init tests/loader/test_loader \
tests/loader/test_loader_unit tests/cpu/test_compat tests/cpu/test_compat_v10 \
tests/cpu/test_handle tests/cpu/test_diskcache tests/cpu/test_fuzz_model \
tests/cpu/test_concurrency_fake tests/cpu/test_code_fake tests/cpu/test_cross_fake \
tests/cpu/test_fault_sweep tests/cpu/test_interop_fake"
tests=${MUTATE_TESTS:-$default_tests}
# The host backend's (plugin-host/): the host lane of the shared suites, its
# DLPack and kernel tests and the tools' conformance run against it.
default_host_tests="tests/cpu/test_runtime_host tests/cpu/test_transfer_host \
tests/cpu/test_completion_host tests/cpu/test_v1_1_host tests/cpu/test_staging_host \
tests/cpu/test_cross_host tests/cpu/test_graph_host tests/cpu/test_concurrency_host \
tests/cpu/test_code_host tests/cpu/test_launch_ex_host tests/cpu/test_host_launch \
tests/cpu/test_host_compile tests/cpu/test_host_dlpack tests/cpu/test_conform_host.sh"
host_tests=${MUTATE_HOST_TESTS:-$default_host_tests}

# The default tests of a mutation of file $1: its lanes' sets.
lane_tests() {
  case $1 in
  plugin-host/*) echo "$host_tests" ;;
  backend-core/* | common/*) echo "$tests $host_tests" ;;
  *) echo "$tests" ;;
  esac
}

die() { echo "mutate: $*" >&2; exit 2; }
now() { date +%s; }

# ---- the list: one directory per mutation under $work/list ------------------
# An entry:
#   === id
#   file: path/from/the/top
#   why: what the mutation breaks (one line)
#   tests: programs to run first (optional; the default set follows)
#   lane: tsan (optional: built with ThreadSanitizer; runs only `tests:`)
#   unkillable: why no test of its lanes can see it (optional)
#   --- from
#   the exact source text, one or more lines (found exactly once)
#   --- to
#   its replacement (may be empty)
#   --- end
# Outside the two texts, lines starting with '#' and empty lines are
# ignored.
rm -rf "$work/list"
mkdir -p "$work/list"
awk -v out="$work/list" '
  function field(name, value) { printf "%s\n", value > (dir "/" name); close(dir "/" name) }
  function bad(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; err = 1 }
  mode == "from" && $0 == "--- to" { mode = "to"; next }
  mode == "to" && $0 == "--- end" {
    printf "%s", from > (dir "/from"); close(dir "/from")
    printf "%s", to > (dir "/to"); close(dir "/to")
    mode = "out"; next
  }
  mode == "from" { from = (nf++ ? from "\n" : "") $0; next }
  mode == "to" { to = (nt++ ? to "\n" : "") $0; next }
  /^=== [A-Za-z0-9_.-]+$/ {
    if (mode == "head") bad("the entry before has no texts")
    n++; mode = "head"; from = to = ""; nf = nt = 0
    dir = sprintf("%s/%03d", out, n); system("mkdir -p \"" dir "\"")
    field("id", substr($0, 5)); next
  }
  /^#/ || /^[ \t]*$/ { next }
  mode == "head" && $0 == "--- from" { mode = "from"; next }
  mode == "head" && /^(file|why|tests|lane|unkillable): / {
    k = $0; sub(/:.*/, "", k); v = $0; sub(/^[a-z]+: /, "", v); field(k, v); next
  }
  { bad("unexpected line: " $0) }
  END {
    if (mode == "head" || mode == "from" || mode == "to") bad("the last entry is not closed by --- end")
    exit err
  }
' "$list" || die "cannot parse $list"

# Replaces the text in $1/from by $1/to in file $2 (in place); fails, saying
# how often it was found, unless it occurs exactly once.
apply() {
  awk -v fromf="$1/from" -v tof="$1/to" -v out="$2.mut" '
    function slurp(f,   s, line, first) {
      s = ""; first = 1
      while ((getline line < f) > 0) { s = s (first ? "" : "\n") line; first = 0 }
      close(f); return s
    }
    BEGIN {
      from = slurp(fromf); to = slurp(tof)
      body = ""
    }
    { body = body $0 "\n" }
    END {
      if (from == "") { print "empty text" > "/dev/stderr"; exit 3 }
      count = 0; rest = body
      while ((i = index(rest, from)) > 0) { count++; rest = substr(rest, i + length(from)) }
      if (count != 1) { printf "found %d times\n", count > "/dev/stderr"; exit 3 }
      i = index(body, from)
      printf "%s%s%s", substr(body, 1, i - 1), to, substr(body, i + length(from)) > out
    }
  ' "$2" && mv "$2.mut" "$2"
}

ids=
for d in "$work"/list/*; do
  [ -d "$d" ] || continue
  id=$(cat "$d/id")
  [ -f "$d/file" ] || die "$id: no file:"
  [ -f "$d/from" ] || die "$id: no '--- from' text"
  [ -f "$d/why" ] || die "$id: no why:"
  case " $ids " in *" $id "*) die "$id: listed twice" ;; esac
  ids="$ids $id"
done
[ -n "$ids" ] || die "no mutations in $list"
for id in $(echo "$only" | tr ',' ' '); do
  case " $ids " in *" $id "*) ;; *) die "--only: no mutation $id in $list" ;; esac
done

# Whether entry directory $1 is to run (--only).
selected() {
  [ -z "$only" ] && return 0
  case ",$only," in *",$(cat "$1/id"),"*) return 0 ;; esac
  return 1
}

# Every text is checked against the tree before anything is built.
mkdir -p "$work/check"
bad=0
for d in "$work"/list/*; do
  id=$(cat "$d/id") f=$(cat "$d/file")
  [ -f "$top/$f" ] || { echo "mutate: $id: $f does not exist" >&2; bad=1; continue; }
  cp "$top/$f" "$work/check/file"
  if ! err=$(apply "$d" "$work/check/file" 2>&1); then
    echo "mutate: $id: the text is not in $f exactly once ($err); update the list" >&2
    bad=1
  fi
done
[ $bad = 0 ] || exit 2
n_all=$(echo "$ids" | wc -w)
echo "mutate: $n_all mutations in $list, each found once"
[ $check_only = 0 ] || exit 0

# ---- the scratch copy and its builds ---------------------------------------
# (A run interrupted with a mutation planted leaves it in the scratch copy:
# the next run's sync finds the file differs from the tree and copies it
# back.)
src=$work/src
mkdir -p "$src"
echo "mutate: syncing the scratch copy ($(date +%T))"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$top" ls-files -co --exclude-standard > "$work/files"
else
  (cd "$top" && find . -type f ! -path './.git/*' | sed 's|^\./||') > "$work/files"
fi
regen=0
[ -x "$src/configure" ] || regen=1
while IFS= read -r f; do
  [ -f "$top/$f" ] || continue
  if ! cmp -s "$top/$f" "$src/$f"; then
    mkdir -p "$src/$(dirname "$f")"
    cp -p "$top/$f" "$src/$f"
    touch "$src/$f" # newer than what the last run built from it
    case $f in configure.ac | Makefile.am | */*.am | m4/*) regen=1 ;; esac
  fi
done < "$work/files"
# (a git checkout has no configure: the scratch copy makes its own)
if [ $regen = 1 ] && ! grep -qx configure "$work/files"; then
  echo "mutate: autoreconf in the scratch copy"
  (cd "$src" && autoreconf -fi >/dev/null 2>&1) || die "autoreconf failed in $src"
fi

build=$work/build
tsan=$work/build-tsan
mkdir -p "$build" "$work/logs"
if [ ! -f "$build/Makefile" ]; then
  echo "mutate: configuring $build"
  # shellcheck disable=SC2086
  (cd "$build" && "$src/configure" -q ${MUTATE_CONFIGURE_FLAGS:-} >/dev/null) ||
    die "configure failed in $build"
fi

need_tsan=0
for d in "$work"/list/*; do
  selected "$d" && [ "$(cat "$d/lane" 2>/dev/null)" = tsan ] && need_tsan=1
done
if [ $need_tsan = 1 ] && [ ! -f "$tsan/Makefile" ]; then
  mkdir -p "$tsan"
  echo "mutate: configuring $tsan (clang, ThreadSanitizer)"
  (cd "$tsan" && "$src/configure" -q CC=clang CFLAGS="-O1 -g -fsanitize=thread" \
    LDFLAGS="-fsanitize=thread" >/dev/null) || die "configure failed in $tsan"
fi

tsan_tests() { # the TSan lane's programs: every `tests:` of a tsan entry
  for d in "$work"/list/*; do
    selected "$d" && [ "$(cat "$d/lane" 2>/dev/null)" = tsan ] && cat "$d/tests"
  done | tr ' ' '\n' | sort -u | tr '\n' ' '
}

# Builds the library, the plugin and the test programs ($1: build dir).
build_tree() {
  if [ "$1" = "$tsan" ]; then # only what the TSan lane runs
    # shellcheck disable=SC2046
    (cd "$1" && make -s -j"$jobs" t4a-paths.h &&
      make -s -j"$jobs" all tests/fakecuda/libfakecuda.la $(tsan_tests))
  else
    (cd "$1" && make -s -j"$jobs" check TESTS=)
  fi
}

# Runs test programs in build dir $1 ($2: log prefix); prints the failing
# ones (nothing when all passed). One at a time, stopping at the first
# failure, unless $3 is "batch": then all of them at once through make -j.
run_tests() {
  dir=$1 log=$2 how=$3
  shift 3
  env_tsan=
  [ "$dir" = "$tsan" ] && env_tsan=1
  if [ "$how" = batch ]; then
    [ $# -gt 0 ] || return 0
    (cd "$dir" && for t in "$@"; do rm -f "$t.log" "$t.trs"; done
     make -j"$jobs" check TESTS="$*" LOG_COMPILER="timeout $limit" >> "$log" 2>&1) || true
    for t in "$@"; do
      grep -q '^:test-result: PASS' "$dir/$t.trs" 2>/dev/null || echo "$t"
    done
    return 0
  fi
  for t in "$@"; do
    (cd "$dir" && rm -f "$t.log" "$t.trs"
     if [ -n "$env_tsan" ]; then
       # as .ci/sanitizers runs them (TSan runs the fake's paths ~5x slower)
       TSAN_OPTIONS="halt_on_error=1 suppressions=$src/.ci/tsan.supp" CK_TIMEOUT_MULTIPLIER=5 \
         make -s check TESTS="$t" check_PROGRAMS="$t" LOG_COMPILER="timeout $((limit * 4))" \
         >> "$log" 2>&1
     else
       make -s check TESTS="$t" LOG_COMPILER="timeout $limit" >> "$log" 2>&1
     fi) || { echo "$t"; return 0; }
  done
}

# The first line of a failing test's log that says why.
why_failed() {
  f=$1/$2.log
  line=$(grep -m1 -E ':[EF]:|ThreadSanitizer: [a-z]|^FAIL|Assertion|FINDING|violation' "$f" \
    2>/dev/null || true)
  if [ -z "$line" ] && grep -q '^:test-result: FAIL' "$1/$2.trs" 2>/dev/null; then
    line="exit $(sed -n 's/^:exit-status: *//p' "$1/$2.trs" 2>/dev/null | head -1)"
  fi
  [ -n "$line" ] || line="failed (see $f)"
  printf '%s' "$line" | sed 's|^.*/tests/|tests/|' | cut -c1-220
}

echo "mutate: building the unmutated tree ($(date +%T))"
build_tree "$build" > "$work/logs/build.log" 2>&1 || die "the unmutated tree does not build (see $work/logs/build.log)"
if [ $need_tsan = 1 ]; then
  build_tree "$tsan" > "$work/logs/build-tsan.log" 2>&1 ||
    die "the unmutated tree does not build with TSan (see $work/logs/build-tsan.log)"
fi
echo "mutate: the unmutated tree against the tests ($(date +%T))"
t0=$(now)
# (only the lanes the selected mutations run)
base_tests=$(for d in "$work"/list/*; do
  if selected "$d" && [ "$(cat "$d/lane" 2>/dev/null)" != tsan ]; then
    lane_tests "$(cat "$d/file")"
    cat "$d/tests" 2>/dev/null || true
  fi
done | tr ' ' '\n' | grep . | awk '!seen[$0]++' | tr '\n' ' ')
# shellcheck disable=SC2086 # $base_tests is a list
failed=$(run_tests "$build" "$work/logs/baseline.log" batch $base_tests)
[ -z "$failed" ] || die "the unmutated tree fails $failed: fix that first (see $work/logs/baseline.log)"
if [ $need_tsan = 1 ]; then
  # shellcheck disable=SC2046
  failed=$(run_tests "$tsan" "$work/logs/baseline-tsan.log" one $(tsan_tests))
  [ -z "$failed" ] || die "the unmutated tree fails $failed under TSan (see $work/logs/baseline-tsan.log)"
fi
echo "mutate: baseline passed in $(($(now) - t0)) s"

# ---- the mutations ------------------------------------------------------------
report=$work/report.txt
table=$work/report.md
: > "$report"
printf '| mutation | file | what it breaks | result | s | by |\n| --- | --- | --- | --- | --- | --- |\n' > "$table"
killed=0 survived=0 argued=0 stillborn=0 wrong=0 n=0
start=$(now)
for d in "$work"/list/*; do
  id=$(cat "$d/id") f=$(cat "$d/file") why=$(cat "$d/why")
  selected "$d" || continue
  n=$((n + 1))
  lane=$(cat "$d/lane" 2>/dev/null || true)
  first=$(cat "$d/tests" 2>/dev/null || true)
  unk=$(cat "$d/unkillable" 2>/dev/null || true)
  dir=$build
  [ "$lane" = tsan ] && dir=$tsan
  log=$work/logs/$id.log
  : > "$log"
  t1=$(now)
  cp -p "$src/$f" "$work/orig"
  apply "$d" "$src/$f" 2>> "$log" || die "$id: cannot apply"
  result='' by='' detail=''
  if ! build_tree "$dir" >> "$log" 2>&1; then
    result=stillborn detail="does not build (see logs/$id.log)"
  else
    # shellcheck disable=SC2086
    by=$(run_tests "$dir" "$log" one $first)
    if [ -z "$by" ] && [ "$lane" != tsan ]; then
      rest=
      for t in $(lane_tests "$f"); do
        case " $first " in *" $t "*) ;; *) rest="$rest $t" ;; esac
      done
      # shellcheck disable=SC2086
      by=$(run_tests "$dir" "$log" batch $rest | tr '\n' ' ' | sed 's/ $//')
    fi
    if [ -n "$by" ]; then
      result=killed
      detail=$(why_failed "$dir" "${by%% *}")
    else
      result=survived
    fi
  fi
  # restore: a fresh copy (newer than the mutated objects, so it is rebuilt)
  cp "$work/orig" "$src/$f"
  touch "$src/$f"
  secs=$(($(now) - t1))
  case $result in
  killed)
    killed=$((killed + 1))
    if [ -n "$unk" ]; then wrong=$((wrong + 1)); result="killed (argued unkillable: remove the argument)"; fi ;;
  survived)
    if [ -n "$unk" ]; then argued=$((argued + 1)); result="survived (argued)"; detail=$unk
    else survived=$((survived + 1)); fi ;;
  stillborn) stillborn=$((stillborn + 1)) ;;
  esac
  printf '%-28s %-26s %-9s %4ss  %s  %s\n' "$id" "$f" "$result" "$secs" "$by" "$detail" |
    tee -a "$report"
  short_by=$(echo "$by" | sed 's|tests/cpu/||g; s|tests/loader/||g')
  # shellcheck disable=SC2016 # the backquotes are markdown
  printf '| `%s` | `%s` | %s | %s | %s | %s |\n' "$id" "$f" "$why" "$result" "$secs" \
    "$([ -n "$short_by" ] && printf '`%s`: ' "$short_by"; echo "$detail" | sed 's/|/\\|/g')" >> "$table"
done
# leave the scratch tree built as it is in the sources
build_tree "$build" > "$work/logs/build-final.log" 2>&1 || true
[ $need_tsan = 0 ] || build_tree "$tsan" >> "$work/logs/build-final.log" 2>&1 || true

total=$((killed + survived + argued))
secs=$(($(now) - start))
ratio=$(awk -v k=$killed -v t=$total 'BEGIN { printf "%.3f", t ? k / t : 0 }')
summary="mutate: $n mutations in $secs s: $killed killed, $argued survived as argued, $survived survived unexplained, $stillborn did not build; kill ratio $killed/$total = $ratio"
echo "$summary" | tee -a "$report"
echo "mutate: report in $report, table in $table"
[ $survived = 0 ] && [ $stillborn = 0 ] && [ $wrong = 0 ]
