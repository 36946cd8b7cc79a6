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

sys.path.insert(0, os.path.join(os.environ.get("T4A_TEST_SRCDIR", "."), "python"))
import t4a_gpu  # noqa: E402
from t4a_gpu import abi  # noqa: E402

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


PTX = b"""//
.version 7.0
.target sm_70
.address_size 64

.visible .entry t4a_spin(.param .u64 flag)
{
  .reg .pred %p;
  .reg .b32 %r;
  .reg .b64 %a;
  ld.param.u64 %a, [flag];
$L_spin:
  ld.volatile.u32 %r, [%a];
  setp.eq.u32 %p, %r, 0;
  @%p bra $L_spin;
  ret;
}

.visible .entry t4a_fill_u32(.param .u64 p, .param .u32 v, .param .u64 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [v];
  ld.param.u64 %rd2, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  cvt.u64.u32 %rd3, %r5;
  mov.u32 %r2, %nctaid.x;
  mul.lo.u32 %r3, %r2, %r3;
  cvt.u64.u32 %rd4, %r3;
$L_loop:
  setp.ge.u64 %p, %rd3, %rd2;
  @%p bra $L_done;
  shl.b64 %rd5, %rd3, 2;
  add.s64 %rd6, %rd1, %rd5;
  st.u32 [%rd6], %r1;
  add.s64 %rd3, %rd3, %rd4;
  bra $L_loop;
$L_done:
  ret;
}
"""


GATE_WATCHDOG_S = 20.0


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
        self._forced = False
        self._watchdog = threading.Timer(GATE_WATCHDOG_S, self._force)
        self._watchdog.daemon = True
        self._watchdog.start()

    def _force(self):
        self._forced = True
        self._set(1)

    def open_gate(self):
        self._watchdog.cancel()
        self._set(1)
        check(not self._forced, "the test opened the gate (the watchdog did not: nothing blocked "
              "the host for %g s behind it)" % GATE_WATCHDOG_S)

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
