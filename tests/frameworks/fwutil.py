"""Shared by the framework tests (tests/frameworks/test_*.py, run by
tests/gpu/frameworks.sh): the verdicts, the t4a side (a runtime, the test
kernels as PTX: a gate that holds a stream, a 32-bit fill), and timing.

Exit status: 0 every check passed; 77 skipped (the framework is not
importable, or no usable GPU outside the GPU lane); 1 a check failed, or
no usable GPU / framework CUDA in the GPU lane (make check-gpu). Every check
prints one line ("ok ..." / "FAIL ...").
"""
import gc
import importlib
import os
import sys
import threading
import time

_src = os.environ.get("T4A_TEST_SRCDIR", ".")
sys.path[:0] = [os.path.join(_src, "python"), os.path.join(_src, "python", "tests")]
import t4a_gpu  # noqa: E402
from t4a_gpu import abi  # noqa: E402
from ptx_kernels import PTX  # noqa: E402  (the package tests' kernels)

LANE = os.environ.get("T4A_TEST_LANE", "any")
_failures = []


def skip(reason):
    print("SKIP: %s" % reason)
    sys.exit(77)


def unusable(reason):
    """No GPU (or the framework cannot reach it): a failure in the GPU lane."""
    if LANE in ("gpu", "multigpu"):
        print("FAIL: %s (the %s lane needs it)" % (reason, LANE))
        sys.exit(1)
    skip(reason)


def need(module):
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 -- any import failure means "absent here"
        skip("%s is not importable by %s (%s: %s)" % (module, sys.executable,
                                                        type(e).__name__, e))


def check(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    sys.stdout.flush()
    if not ok:
        _failures.append(what)
    return ok


def finish():
    gc.collect()
    if _failures:
        print("FAILED: %d check(s):\n  %s" % (len(_failures), "\n  ".join(_failures)))
        sys.exit(1)
    print("PASS")
    sys.exit(0)


def runtime():
    """The backend and a runtime on device 0, or a skip/failure saying why."""
    try:
        backend = t4a_gpu.Backend()
        return backend, backend.runtime(0)
    except t4a_gpu.T4AError as e:
        unusable("no usable GPU for t4a: %s" % e)




GATE_WATCHDOG_S = 20.0


class Watchdog:
    """Calls open_gate() if the test has not cancelled it within
    GATE_WATCHDOG_S: a gate forgotten behind a blocked host becomes a failed
    check (the caller tests .fired) instead of a hang."""

    def __init__(self, open_gate):
        self.fired = False
        self._open_gate = open_gate
        self._timer = threading.Timer(GATE_WATCHDOG_S, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self):
        self.fired = True
        self._open_gate()

    def cancel(self):
        self._timer.cancel()


class Kernels:
    """The test kernels in a runtime: fill(buffer, value, n) and a gate, a
    t4a kernel that spins on the runtime's stream until opened (a "long t4a
    kernel" whose end the test decides)."""

    def __init__(self, backend, rt):
        self.rt = rt
        self.art = backend.artifact_from_bytes(PTX, abi.T4A_ARTIFACT_PTX, "frameworks")
        self.mod = rt.load(self.art)
        self._spin = self.mod.function("t4a_spin", "ptr")
        self._fill = self.mod.function("t4a_fill_u32", "ptr u32 u64")
        self.flag = rt.host_alloc(4)

    def fill(self, buf, value, n):
        self._fill.launch(min((n + 255) // 256, 4096), 256, buf, value, n)

    def close_gate(self):
        """Holds the runtime's stream until open_gate. Whatever the test does
        meanwhile must not block the host on the device: the driver may
        synchronise the whole context to load code (CUDA's lazy loading: a
        framework's first use of a kernel), which would wait for the gate
        forever. So a test runs its framework's kernels once before closing
        the gate, and a watchdog opens a gate left closed for GATE_WATCHDOG_S
        and fails the test instead of hanging it."""
        self._set(0)
        self._spin.launch(1, 1, self.flag.address)
        self._watchdog = Watchdog(lambda: self._set(1))

    def open_gate(self):
        self._watchdog.cancel()
        self._set(1)
        check(not self._watchdog.fired, "the test opened the gate (the watchdog did not: nothing "
              "blocked the host for %g s behind it)" % GATE_WATCHDOG_S)

    def open_gate_after(self, seconds):
        t = threading.Timer(seconds, self.open_gate)
        t.start()
        return t

    def _set(self, v):
        with self.flag.view() as m:
            m[:] = bytes([v, 0, 0, 0])


def timed(fn):
    """(result, seconds) of fn()."""
    t0 = time.monotonic()
    r = fn()
    return r, time.monotonic() - t0


def eventually(pred, seconds=10.0):
    """pred() turned true within `seconds` (a framework that releases memory
    from another thread, later than the call that dropped it)."""
    deadline = time.monotonic() + seconds
    while not pred():
        if time.monotonic() > deadline:
            return False
        gc.collect()
        time.sleep(0.01)
    return True
