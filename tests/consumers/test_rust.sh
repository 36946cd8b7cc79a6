#!/bin/sh
# tests/consumers/test_rust.sh -- the Rust crate (rust/: the generated sys
# layer and the safe layer) and its consumer (examples/rust), built by cargo
# offline against the built libt4a_gpu, with every toolchain found: the
# cargo on PATH and Debian 12's /usr/bin/cargo (1.65, with /usr/bin/rustc
# 1.63), which CI installs. For each:
#   0. `cargo test` of the crate: the layout test (every struct size, field
#      offset and constant against tests/bindings/layout, the C compiler's;
#      T4A_REQUIRE_LAYOUT=1: it may not skip here), the safe layer on the
#      fake CUDA driver and fake NVRTC (runtime.rs: ABI 1.0; v11.rs: every
#      1.1 slot, struct kernel arguments; data checked bit for bit, statuses
#      exactly), on the host backend (host.rs: the wrappers, kernels
#      compiled from CUDA C and replayed in a graph, the NULL slots and
#      GPU code a typed error), plus the doc tests (the
#      compile_fail ones are the lifetime guarantees); T4A_TEST_DRIVER is
#      set, so a missing backend fails rather than skips; then `cargo doc`,
#      which must not warn (the generated sys.rs included);
#   1. no driver (T4A_CUDA_LIBRARY=/nonexistent/...): the consumer exits 4,
#      naming the missing driver library;
#   2. the fake driver: the consumer lists its two devices and verifies its
#      axpy (exit 0); the crate's saxpy example (examples/saxpy.c's twin)
#      finds 0 wrong elements;
#   3. only when T4A_TEST_LANE=gpu (make check-gpu), with the first
#      toolchain: `cargo test` of runtime.rs, v11.rs and host.rs with
#      T4A_TEST_DRIVER=real, the consumer and saxpy, all on the real driver
#      and NVRTC.
# Nothing is written outside the build tree: CARGO_HOME and the target
# directories live in $builddir/rust-build (make clean removes it), and
# --locked uses the committed Cargo.lock files (the source tree may be
# read-only, as in make distcheck). Warnings are errors (-D warnings).
# Skips (77) when no cargo 1.65+ with rustc 1.63+ is found, saying why.
#
# Environment (set by the Makefile's AM_TESTS_ENVIRONMENT): T4A_TEST_SRCDIR,
# T4A_TEST_BUILDDIR, T4A_TEST_LANE (any|gpu), T4A_GPU_BACKEND_PATH.

if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): its loader needs the sanitizer"
  echo "runtime in the executable, which a plain Rust program lacks (the plain build runs this)"
  exit 77
fi

# Absolute paths: the rpath baked into the programs must not depend on cwd.
src=$(cd "${T4A_TEST_SRCDIR:-.}" && pwd) || exit 99
build=$(cd "${T4A_TEST_BUILDDIR:-.}" && pwd) || exit 99
libdir=$build/loader/.libs
fakecuda=$build/tests/fakecuda/.libs/libfakecuda.so
fakenvrtc=$build/tests/fakecuda/.libs/libfakenvrtc.so
# Both plugins of the build tree: cuda (the default) and host (tests/host.rs).
T4A_GPU_BACKEND_PATH=${T4A_GPU_BACKEND_PATH:-$build/plugin-cuda/.libs}:$build/plugin-host/.libs
export T4A_GPU_BACKEND_PATH
for f in "$libdir/libt4a_gpu.so" "$fakecuda" "$fakenvrtc" "$build/tests/bindings/layout" \
  "$build/plugin-host/.libs/libt4a_host.so"; do
  [ -e "$f" ] || { echo "ERROR: $f is missing (run make check, not the script alone)"; exit 99; }
done

# version_ok PROGRAM MINOR: PROGRAM --version says 1.MINOR or newer.
version_ok() {
  v=$("$1" --version 2>/dev/null | sed -n 's/^[a-z]* 1\.\([0-9][0-9]*\)\..*/\1/p')
  [ -n "$v" ] && [ "$v" -ge "$2" ]
}
# The toolchains: "cargo rustc rustdoc" triples, each cargo with the rustc beside it.
toolchains=
for cargo in "$(command -v cargo 2>/dev/null)" /usr/bin/cargo; do
  [ -n "$cargo" ] && [ -x "$cargo" ] || continue
  dir=$(dirname "$cargo")
  case " $toolchains " in *" $cargo "*) continue ;; esac
  if version_ok "$cargo" 65 && version_ok "$dir/rustc" 63 && [ -x "$dir/rustdoc" ]; then
    toolchains="$toolchains $cargo"
  else
    echo "note: $cargo with $dir/rustc is older than cargo 1.65 / rustc 1.63 (or incomplete): not used"
  fi
done
if [ -z "$toolchains" ]; then
  echo "SKIP: no cargo 1.65+ with rustc 1.63+ found (Debian 12: apt-get install cargo)"
  exit 77
fi

# Only what each case sets below steers the backend and the fake driver:
# the default backend, the fake's defaults (two devices), and no disk cache
# of compiled code (nothing written to $HOME, nothing stale read back).
unset T4A_GPU_BACKEND T4A_CUDA_LIBRARY T4A_NVRTC_LIBRARY RUSTC RUSTDOC CARGO_BUILD_TARGET
# cargo and rustdoc would try make's jobserver, whose descriptors the test
# harness does not pass on (a warning each time): they run their own.
unset MAKEFLAGS MFLAGS MAKELEVEL
unset FAKE_CUDA_MODE FAKE_CUDA_VERSION FAKE_CUDA_DEVICES FAKE_CUDA_HIDE FAKE_CUDA_FAIL \
  FAKE_CUDA_NO_PEER FAKE_NVRTC_VERSION
T4A_CACHE_DIR=
T4A_GPU_LIB_DIR=$libdir # for build.rs
RUSTFLAGS="-D warnings -C link-arg=-Wl,-rpath,$libdir"
RUSTDOCFLAGS="-D warnings"
CARGO_HOME=$build/rust-build/cargo-home
CARGO_NET_OFFLINE=true
CARGO_TERM_COLOR=never
export T4A_CACHE_DIR T4A_GPU_LIB_DIR RUSTFLAGS RUSTDOCFLAGS CARGO_HOME CARGO_NET_OFFLINE \
  CARGO_TERM_COLOR

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
"$build/tests/bindings/layout" >"$tmp/layout" || { echo "ERROR: tests/bindings/layout failed"; exit 99; }
T4A_LAYOUT=$tmp/layout
T4A_REQUIRE_LAYOUT=1
export T4A_LAYOUT T4A_REQUIRE_LAYOUT

fail=0
# run LABEL COMMAND...: output in $out (and the log), status in $rc.
run() {
  label=$1
  shift
  echo "== $label"
  "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  echo "-- exit $rc"
}
has() { grep -F -q -- "$1" "$out"; }
bad() {
  echo "FAIL: $label: $1"
  fail=1
}
fake="T4A_CUDA_LIBRARY=$fakecuda T4A_NVRTC_LIBRARY=$fakenvrtc"
verified='rust example: axpy of 1048576 floats verified on'

first=
for cargo in $toolchains; do
  dir=$(dirname "$cargo")
  target=$build/rust-build/target$(echo "$cargo" | tr / _)
  # tc ARGS...: cargo of this toolchain with its rustc and rustdoc, its own
  # target directory, and the variables in $with (word-split: no spaces).
  tc() {
    # shellcheck disable=SC2086
    env RUSTC="$dir/rustc" RUSTDOC="$dir/rustdoc" CARGO_TARGET_DIR="$target" $with "$cargo" "$@"
  }
  echo "==== toolchain: $("$cargo" --version), $("$dir/rustc" --version)"

  with="$fake T4A_TEST_DRIVER=fake"
  run "cargo test (fake driver)" tc test --offline --locked --manifest-path "$src/rust/Cargo.toml"
  [ "$rc" -eq 0 ] || bad "cargo test failed"
  # One "test result" line per test target, in cargo's order: the library's
  # unit tests (none), host.rs, layout.rs, runtime.rs, v11.rs, the doc tests.
  results=$(grep "^test result: " "$out" | sed 's/; finished.*//' | tr '\n' '|')
  want="ok. 0 passed; 0 failed|ok. 7 passed; 0 failed|ok. 2 passed; 0 failed|\
ok. 9 passed; 0 failed|ok. 10 passed; 0 failed|ok. 9 passed; 0 failed|"
  [ "$(echo "$results" | sed 's/test result: //g; s/; [0-9]* ignored[^|]*//g')" = "$want" ] ||
    bad "not every test ran and passed: $results (want $want)"
  ! grep -q "^SKIP " "$out" || bad "a test skipped (above), which make check does not allow"
  run "cargo doc (RUSTDOCFLAGS=-D warnings)" tc doc --offline --locked --no-deps \
    --manifest-path "$src/rust/Cargo.toml"
  [ "$rc" -eq 0 ] || bad "cargo doc warns (src/sys.rs: fix bindgen/t4a_bindgen.py, then make bindings-regen)"

  with=
  run "build the consumer" tc build --offline --locked --manifest-path "$src/examples/rust/Cargo.toml"
  [ "$rc" -eq 0 ] || { bad "does not build"; continue; }
  run "build the saxpy example" tc build --offline --locked \
    --manifest-path "$src/rust/Cargo.toml" --example saxpy
  [ "$rc" -eq 0 ] || { bad "does not build"; continue; }
  consumer=$target/debug/t4a-example
  saxpy=$target/debug/examples/saxpy

  run "consumer, no driver" env T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$consumer"
  [ "$rc" -eq 4 ] || bad "exit $rc, want 4 (backend unusable)"
  has "T4A_ENODRIVER" || bad "the output does not name T4A_ENODRIVER"
  has "/nonexistent/libcuda.so.1" || bad "the output does not name the driver library"

  # shellcheck disable=SC2086
  run "consumer, fake driver and fake NVRTC" env $fake "$consumer"
  has "device 0: Fake GPU 0, compute capability 9.0" || bad "device 0 not listed"
  has "device 1: Fake GPU 1" || bad "device 1 not listed"
  [ "$rc" -eq 0 ] || bad "exit $rc, want 0 (verified)"
  has "$verified Fake GPU 0" || bad "no verified line"

  for prog in "$consumer" "$saxpy"; do # tools/cli.h's convention, as the C examples
    run "$(basename "$prog") --help" "$prog" --help
    [ "$rc" -eq 0 ] && has "usage: " || bad "--help: exit $rc, want 0 and the usage"
    run "$(basename "$prog") --bogus" "$prog" --bogus
    [ "$rc" -eq 2 ] && has "usage: " || bad "an unknown flag: exit $rc, want 2 and the usage"
  done

  run "saxpy example, no driver" env T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$saxpy"
  [ "$rc" -eq 4 ] || bad "exit $rc, want 4 (backend unusable), as examples/saxpy.c"

  # shellcheck disable=SC2086
  run "saxpy example, fake driver" env $fake "$saxpy"
  [ "$rc" -eq 0 ] || bad "exit $rc, want 0"
  has "saxpy: 1048576 elements, 0 wrong" || bad "no verified line"

  # the same example on the host backend: its kernel compiled from CUDA C
  run "saxpy example, host backend" env T4A_GPU_BACKEND=host "$saxpy"
  [ "$rc" -eq 0 ] || bad "exit $rc on the host backend, want 0"
  has "saxpy: 1048576 elements, 0 wrong" || bad "no verified line on the host backend"

  if [ "${T4A_TEST_LANE:-any}" = gpu ] && [ -z "$first" ]; then
    with=T4A_TEST_DRIVER=real
    run "cargo test (GPU lane, real driver)" tc test --offline --locked \
      --manifest-path "$src/rust/Cargo.toml" --test runtime --test v11 --test host
    [ "$rc" -eq 0 ] || bad "cargo test on the real driver failed"
    grep -q "^test result: ok\. 9 passed" "$out" || bad "the runtime tests did not all pass"
    grep -q "^test result: ok\. 10 passed" "$out" || bad "the 1.1 tests did not all pass"
    run "consumer (GPU lane, real driver)" "$consumer"
    [ "$rc" -eq 0 ] || bad "exit $rc, want 0 on a GPU host"
    has "$verified " || bad "no verified line"
    run "saxpy example (GPU lane, real driver)" "$saxpy"
    [ "$rc" -eq 0 ] || bad "exit $rc, want 0 on a GPU host"
    has "saxpy: 1048576 elements, 0 wrong" || bad "no verified line"
  fi
  first=done
done

[ $fail -eq 0 ] && echo "PASS"
exit $fail
