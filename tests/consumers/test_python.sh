#!/bin/sh
# tests/consumers/test_python.sh -- the Python package (python/t4a_gpu: the
# generated ctypes layer and the API above it) and its example
# (examples/python/axpy.py):
#
#   0. the package's unittest suite (python/tests) from the source tree:
#      every struct, field and constant against tests/bindings/layout (the C
#      compiler's), statuses, loader, backend, memory (bytes, bytearray,
#      memoryview, array, numpy when installed), pinned views, ownership
#      and finalizers, kernels verified bit for bit, on the fake CUDA driver
#      and fake NVRTC: on the ctypes route (T4A_PY_FASTCALL=0), then
#   0b. the same suite with the compiled fast path built in
#      (python/build_fastcall.sh into a copy; T4A_TEST_FASTCALL=1: the
#      route must be in use and test_fastcall's tests must run), left out
#      saying why where it cannot be built (no Python.h: python3-dev);
#   1. without a driver, axpy exits 4 naming the driver problem;
#   2. on the fake driver (2 devices) axpy lists both devices and verifies;
#      2c. on the host backend (T4A_GPU_BACKEND=host) axpy verifies too;
#      bench/python_bench.py --smoke runs every row (a few calls; nothing is
#      timed against anything: the bench reports, it asserts nothing);
#   3. the offline install: `pip install --no-index --no-build-isolation`
#      of a copy of python/ into a fresh venv (--system-site-packages, for
#      Debian's setuptools and wheel), then the suite and axpy against the
#      installed package, not the source tree (skipped, saying why, when
#      this Python has no venv or pip: Debian's python3-venv, python3-pip);
#      and, when Debian's wheel files are there (python3-setuptools-whl,
#      python3-wheel-whl), `pip install --no-index --find-links
#      /usr/share/python-wheels` into a plain venv, build isolation kept;
#   4. in the GPU lane (make check-gpu) the suite (both routes) and axpy on
#      the real driver and NVRTC, which must verify; elsewhere axpy on the
#      real driver may exit 4 (no usable GPU here).
#
# Environment (set by the Automake harness): T4A_TEST_SRCDIR,
# T4A_TEST_BUILDDIR, T4A_TEST_LANE (any | gpu), T4A_GPU_BACKEND_PATH.
# Skips (77) only when python3 is missing.

src=$(cd "${T4A_TEST_SRCDIR:-.}" && pwd) || exit 99
b=$(cd "${T4A_TEST_BUILDDIR:-.}" && pwd) || exit 99
lane=${T4A_TEST_LANE:-any}

if [ -n "${T4A_TEST_SANITIZED:-}" ]; then # set by .ci/sanitizers
  echo "SKIP: this build is instrumented ($T4A_TEST_SANITIZED): its loader needs the sanitizer"
  echo "runtime in the executable, which python3 is not built with (the plain build runs this)"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found in PATH; the Python package needs it"
  exit 77
fi

T4A_GPU_LIBRARY=$b/loader/.libs/libt4a_gpu.so
T4A_GPU_BACKEND_PATH=${T4A_GPU_BACKEND_PATH:-$b/plugin-cuda/.libs}
PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the (possibly read-only) source tree
# Every fast call of the package (slots bound without argtypes) is checked
# against the generated prototype while the suite runs.
T4A_PY_CHECK_CALLS=1
export T4A_GPU_LIBRARY T4A_GPU_BACKEND_PATH PYTHONDONTWRITEBYTECODE T4A_PY_CHECK_CALLS
unset T4A_GPU_BACKEND FAKE_CUDA_VERSION FAKE_CUDA_MODE FAKE_CUDA_DEVICES PYTHONPATH

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM
T4A_CACHE_DIR=$tmp/cache # compiled kernels go to a private disk cache
export T4A_CACHE_DIR

fake_cuda=$b/tests/fakecuda/.libs/libfakecuda.so
fake_nvrtc=$b/tests/fakecuda/.libs/libfakenvrtc.so
for f in "$T4A_GPU_LIBRARY" "$fake_cuda" "$fake_nvrtc" "$b/tests/bindings/layout"; do
  [ -e "$f" ] || { echo "ERROR: $f is missing (run make check, not the script alone)"; exit 99; }
done
"$b/tests/bindings/layout" >"$tmp/layout" || { echo "ERROR: tests/bindings/layout failed"; exit 99; }
T4A_LAYOUT=$tmp/layout
export T4A_LAYOUT
axpy=$src/examples/python/axpy.py
out=$tmp/out

fail() {
  echo "FAIL: $*"
  exit 1
}
# run LABEL COMMAND...: output in $out (and the log), status in $rc.
run() {
  echo "== $1"
  shift
  "$@" >"$out" 2>&1
  rc=$?
  sed 's/^/    /' "$out"
}
has() { grep -F -q -e "$1" "$out"; }
# suite_ok LABEL [REASONS]: the suite ran all its tests and passed; a test
# may skip only for a missing numpy or for one of REASONS (an extended
# regular expression; the GPU lane allows a host without two peer devices;
# the ctypes route's runs, the compiled route's tests).
nofast="the compiled route is not in use"
suite_ok() {
  [ "$rc" -eq 0 ] || fail "$1: the unittest suite failed"
  grep -q "^ *Ran 79 tests" "$out" || fail "$1: not all 79 tests ran"
  allowed="numpy is not installed${2:+|$2}"
  if grep "\.\.\. skipped '" "$out" | grep -Ev "skipped '($allowed)'" | grep -q .; then
    fail "$1: a test skipped for a reason not allowed here (allowed: $allowed)"
  fi
}
fake_env="T4A_CUDA_LIBRARY=$fake_cuda T4A_NVRTC_LIBRARY=$fake_nvrtc T4A_TEST_DRIVER=fake"

# ---------------------------------------------------------------------------
# shellcheck disable=SC2086
run "0. the unittest suite from the source tree, fake driver, ctypes route ($(python3 --version 2>&1))" \
  env $fake_env T4A_PY_FASTCALL=0 PYTHONPATH="$src/python" \
  python3 -m unittest discover -v -s "$src/python/tests"
suite_ok "source tree" "$nofast"

# The compiled fast path, built into a copy of the package.
echo "== 0b. the compiled fast path (python/build_fastcall.sh)"
fast=
PYTHON=python3 sh "$src/python/build_fastcall.sh" "$tmp/fast" >"$out" 2>&1
case $? in
0) fast=$tmp/fast ;;
77) sed 's/^/    /' "$out"; echo "    left out: the suite runs on the ctypes route alone here" ;;
*) sed 's/^/    /' "$out"; fail "python/build_fastcall.sh failed" ;;
esac
if [ -n "$fast" ]; then
  # shellcheck disable=SC2086
  run "0b. the unittest suite, fake driver, compiled route" \
    env $fake_env T4A_TEST_FASTCALL=1 PYTHONPATH="$fast" \
    python3 -m unittest discover -v -s "$src/python/tests"
  suite_ok "compiled route"
fi

run "1. axpy without a driver: exit 4 naming the driver problem" \
  env T4A_CUDA_LIBRARY=/nonexistent/libcuda.so.1 PYTHONPATH="$src/python" python3 "$axpy" 1000
[ $rc -eq 4 ] || fail "axpy without a driver exited $rc, expected 4"
has "T4A_ENODRIVER" || fail "the output does not name T4A_ENODRIVER"
has "/nonexistent/libcuda.so.1" || fail "the output does not name the driver file"

# shellcheck disable=SC2086
run "2. axpy on the fake driver" env $fake_env PYTHONPATH="$src/python" python3 "$axpy" 100003
has "devices: 2" || fail "the fake driver's 2 devices are not listed"
[ "$(grep -c 'device [01]: Fake GPU [01]' "$out")" -eq 2 ] || fail "device lines missing"
[ $rc -eq 0 ] || fail "axpy on the fake driver exited $rc"
has "python example: axpy of 100003 floats verified on Fake GPU 0" || fail "no verified line"

# The same script, unchanged, on the host backend: its kernel compiled from
# CUDA C by the host C++ compiler (none on this machine: the step is left out).
if command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1; then
  run "2c. axpy on the host backend (T4A_GPU_BACKEND=host, no GPU)" \
    env T4A_GPU_BACKEND=host T4A_GPU_BACKEND_PATH="$b/plugin-host/.libs" \
    PYTHONPATH="$src/python" python3 "$axpy" 100003
  [ $rc -eq 0 ] || fail "axpy on the host backend exited $rc"
  has "python example: axpy of 100003 floats verified on " || fail "no verified line on host"
else
  echo "== 2c. left out: no host C++ compiler (c++, g++) for the host backend's kernels"
fi

# shellcheck disable=SC2086
run "2b. bench/python_bench.py --smoke on the fake driver (it runs; its numbers mean nothing)" \
  env $fake_env PYTHONPATH="$src/python" python3 "$src/bench/python_bench.py" --smoke \
  --json "$tmp/bench.json"
[ $rc -eq 0 ] || fail "the Python bench failed on the fake driver"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); rows = d["summary"]
assert len(rows) == 6 and all(r["t4a"] > 0 for r in rows.values()), rows
assert all(rows[r]["floor"] for r in rows if not r.startswith("pageable H2D") and not r.startswith("pageable D2H"))' \
  "$tmp/bench.json" || fail "the bench JSON lacks a row"

# ---------------------------------------------------------------------------
# 3. Offline install. Debian's Python (with python3-venv, -pip, -setuptools,
# -wheel) when there is one, else python3. pip builds in the source
# directory, so a copy is installed (the source tree may be read-only).
echo "== 3. pip install, offline, into a fresh venv"
py=
for p in /usr/bin/python3 "$(command -v python3)"; do
  if [ -x "$p" ] && "$p" -c 'import ensurepip, venv' 2>/dev/null; then py=$p; break; fi
done
installed=no
if [ -z "$py" ]; then
  echo "    skipped: no python3 with venv and ensurepip here (Debian: apt-get install python3-venv)"
else
  cp -R "$src/python" "$tmp/pysrc" && chmod -R u+w "$tmp/pysrc" || exit 99
  run "venv ($py, $("$py" --version 2>&1))" "$py" -m venv --system-site-packages "$tmp/venv"
  [ $rc -eq 0 ] || fail "python3 -m venv failed"
  run "pip install --no-index --no-build-isolation" \
    "$tmp/venv/bin/python" -m pip install --no-index --no-build-isolation --no-cache-dir \
    --disable-pip-version-check "$tmp/pysrc"
  [ $rc -eq 0 ] || fail "the offline install failed"
  has "Successfully installed t4a-gpu-0.1.0" || fail "pip did not install t4a-gpu 0.1.0"
  # From an empty directory, so that nothing but the installed package is importable.
  mkdir "$tmp/elsewhere" && cd "$tmp/elsewhere" || exit 99
  run "the installed package" "$tmp/venv/bin/python" -c \
    'import t4a_gpu, sys; print(t4a_gpu.__file__); sys.exit(t4a_gpu.__file__.startswith(sys.prefix) is False)'
  [ $rc -eq 0 ] || fail "t4a_gpu is not imported from the venv"
  # shellcheck disable=SC2086
  run "the suite against the installed package" env $fake_env \
    "$tmp/venv/bin/python" -m unittest discover -v -s "$tmp/pysrc/tests" -t "$tmp/pysrc/tests"
  suite_ok "installed" "$nofast"
  # shellcheck disable=SC2086
  run "axpy against the installed package" env $fake_env "$tmp/venv/bin/python" "$axpy" 5000
  [ $rc -eq 0 ] && has "verified on Fake GPU 0" || fail "axpy with the installed package"
  cd "$tmp" || exit 99
  installed=yes
  # The other offline route: build isolation kept, its setuptools and wheel
  # taken from Debian's wheel files (python3-setuptools-whl, python3-wheel-whl).
  whl=/usr/share/python-wheels
  if ls "$whl"/setuptools-*.whl "$whl"/wheel-*.whl >/dev/null 2>&1; then
    run "pip install --no-index --find-links $whl (build isolation, plain venv)" sh -c \
      "'$py' -m venv '$tmp/venv2' && '$tmp/venv2/bin/python' -m pip install --no-index \
        --find-links '$whl' --no-cache-dir --disable-pip-version-check '$tmp/pysrc'"
    [ $rc -eq 0 ] && has "Successfully installed t4a-gpu-0.1.0" || fail "the --find-links install failed"
    (cd "$tmp/elsewhere" && "$tmp/venv2/bin/python" -c \
      'import t4a_gpu; assert t4a_gpu.loader_abi() == (1, t4a_gpu.abi.T4A_GPU_BACKEND_ABI_MINOR); print("    imported", t4a_gpu.__file__)') ||
      fail "the --find-links install does not work"
    installed="$installed, also with --find-links $whl"
  else
    echo "    (no setuptools and wheel wheels in $whl: the --find-links route is not tested here)"
  fi
fi

# ---------------------------------------------------------------------------
echo "== 4. real driver (lane $lane)"
if [ "$lane" = gpu ]; then
  run "the unittest suite, real driver, ctypes route" env T4A_TEST_DRIVER=real \
    T4A_PY_FASTCALL=0 PYTHONPATH="$src/python" python3 -m unittest discover -v -s "$src/python/tests"
  suite_ok "GPU lane" "one device|no peer access between devices 0 and 1|$nofast"
  if [ -n "$fast" ]; then
    run "the unittest suite, real driver, compiled route" env T4A_TEST_DRIVER=real \
      T4A_TEST_FASTCALL=1 PYTHONPATH="$fast" python3 -m unittest discover -v -s "$src/python/tests"
    suite_ok "GPU lane, compiled route" "one device|no peer access between devices 0 and 1"
  fi
fi
run "axpy, real driver" env PYTHONPATH="$src/python" python3 "$axpy"
case $rc in
0) has "python example: axpy of 262144 floats verified on" || fail "exit 0 without the verified line" ;;
4) [ "$lane" != gpu ] || fail "no usable GPU in the gpu lane"
   echo "    (no usable GPU here: accepted outside the gpu lane)" ;;
*) fail "axpy on the real driver exited $rc" ;;
esac
route="not built here"
[ -z "$fast" ] || route=tested
echo "PASS (offline install tested: $installed; compiled route: $route)"
exit 0
