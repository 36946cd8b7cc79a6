#!/usr/bin/env python3
"""bench/python_bench.py -- the Python per-call cost of t4a_gpu against its peers.

Rows (each in one process, the same device, the same kernels):

  launch empty (1 arg)          t4a Function.launch | CuPy RawKernel | cuda.core launch
  launch axpy (n, a, x, y)      t4a Function.launch | CuPy RawKernel | PyTorch y.add_(x, alpha=a)
  alloc+free 1 MiB              t4a rt.alloc + close | CuPy cupy.empty + del | PyTorch
                                torch.empty + del | cuda.core Device.allocate + close
  pageable write 4 KiB          t4a Buffer.write(ndarray) | CuPy ndarray.set | PyTorch copy_
  pageable H2D / D2H 256 MiB    the same calls, in GB/s

and, for the t4a rows, the floor: the same table function called through
ctypes directly in the same process (function pointer bound once, arguments
prepared once), which is what the C table costs plus ctypes' own call. When
the package's compiled fast path is in use (t4a_gpu.fastcall_enabled()), the
launch and alloc rows are also run on its ctypes route ("t4a ctypes route":
what a pure-Python install costs), in the same process.

Each sample times a batch of calls (--calls, default 2000; large transfers 5)
with time.perf_counter (or the calling thread's CPU time, --clock thread, for
a shared host), after a warm-up; the device is drained (untimed) between
samples. The t4a sides of a row (the package, its floor, its ctypes route)
alternate sample by sample, the order rotating; each peer's rows run after. Reported per row and side: median and p99 over the samples
(--repeats, default 15; for bandwidth the 1st percentile), and the ratio of
t4a's median to the best peer's. A peer that is not importable or has no
device is skipped, saying why. --json PATH writes everything, with the
machine (GPU, driver, CPU, Python, library versions), for bench/results.

Run: make bench-python BENCH_PYTHON_ARGS="--json bench/results/NAME.json"
(or directly, with PYTHONPATH=python and T4A_GPU_LIBRARY / T4A_GPU_BACKEND_PATH
pointing at a build). --quick: fewer calls and 16 MiB transfers; --smoke: a
few calls of every row, to check that the bench runs (make check does, on the
fake driver; its numbers mean nothing). Not a test: it asserts nothing.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import socket
import statistics
import sys
import time

SOURCE = r"""
extern "C" __global__ void t4a_empty(unsigned long long unused) {}
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float alpha, const float *x,
                                        float *y) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
"""
AXPY_N = 1 << 12
AXPY_GRID, AXPY_BLOCK = 16, 256
ALLOC = 1 << 20
SMALL = 4096


def percentile(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Bench:
    def __init__(self, args):
        self.args = args
        self.clock = time.thread_time if args.clock == "thread" else time.perf_counter
        self.rows = {}  # row -> {side: result}
        self.skipped = {}  # side -> reason

    def time_calls(self, fn, calls, drain, warm=None):
        """Per-call seconds of `calls` calls of fn, one sample per repeat."""
        clock = self.clock
        for _ in range(warm if warm is not None else max(1, calls // 10)):
            fn()
        drain()
        samples = []
        for _ in range(self.args.repeats):
            t0 = clock()
            for _ in range(calls):
                fn()
            t1 = clock()
            drain()
            samples.append((t1 - t0) / calls)
        return samples

    def time_sides(self, sides, calls, drain):
        """{side: per-call seconds, one sample per repeat} for sides given as
        (name, fn, enter, leave): the sides alternate sample by sample (the
        order rotating each repeat), so a slow stretch of a shared host hits
        them alike; enter/leave (untimed) switch a side's route on and off."""
        for name, fn, enter, leave in sides:
            enter()
            for _ in range(max(1, calls // 10)):
                fn()
            leave()
        drain()
        out = {name: [] for name, _, _, _ in sides}
        clock = self.clock
        for r in range(self.args.repeats):
            k = r % len(sides)
            for name, fn, enter, leave in sides[k:] + sides[:k]:
                enter()
                t0 = clock()
                for _ in range(calls):
                    fn()
                t1 = clock()
                leave()
                drain()
                out[name].append((t1 - t0) / calls)
        return out

    def add(self, row, side, samples, unit="us", nbytes=None):
        if unit == "GB/s":
            vals = [nbytes / s / 1e9 for s in samples]
            res = {"median": statistics.median(vals), "p1": percentile(vals, 0.01),
                   "unit": unit, "samples": vals}
        else:
            vals = [s * 1e6 for s in samples]
            res = {"median": statistics.median(vals), "p99": percentile(vals, 0.99),
                   "unit": unit, "samples": vals}
        self.rows.setdefault(row, {})[side] = res
        tail = res.get("p99", res.get("p1"))
        print("  %-28s %-22s %10.2f %s  (%s %.2f)" % (row, side, res["median"], unit,
                                                      "p99" if unit == "us" else "p1", tail),
              flush=True)

    def run(self, label, fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 -- a peer's failure is reported, not fatal
            self.skipped[label] = "%s: %s" % (type(e).__name__, e)
            print("  %s: skipped (%s)" % (label, self.skipped[label]), flush=True)


# ---------------------------------------------------------------------------
# t4a.
# ---------------------------------------------------------------------------


def bench_t4a(b, np):
    import t4a_gpu
    from t4a_gpu import abi
    a = b.args
    backend = t4a_gpu.Backend(a.backend)
    rt = backend.runtime(0)
    b.t4a = (backend, rt)
    dev = backend.device(0)
    b.machine["device"] = dev.name
    b.machine["driver_version"] = backend.info().driver_version
    b.machine["backend"] = "%s %s (%s)" % (backend.name, backend.version, backend.path)
    from t4a_gpu import _api
    b.machine["fastcall"] = t4a_gpu.fastcall_enabled()
    print("  t4a_gpu: %s route (%s)" % ("compiled" if b.machine["fastcall"] else "ctypes",
                                        t4a_gpu.__file__), flush=True)
    mod = rt.load(rt.compile(SOURCE, name="python_bench.cu"))
    empty = mod.function("t4a_empty", "u64")
    axpy = mod.function("t4a_axpy_f32", "u64 f32 ptr ptr")
    x, y = rt.alloc(4 * AXPY_N), rt.alloc(4 * AXPY_N)
    x.fill(1.0, "float32")
    y.fill(0.0, "float32")
    drain = rt.synchronize
    calls = a.calls
    # The process's first timed row would also pay for the CPU's clock ramp
    # and cold caches (the 1-argument launch measured 1.3x the 4-argument one
    # when it ran first): a short untimed warm-up of the same call first.
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        empty.launch(1, 32, 0)
    drain()

    # The floor: the table functions through ctypes, everything prepared once.
    fast = backend._fast
    launch, alloc, free, h2d = (fast["launch"], fast["buffer_alloc"], fast["buffer_free"],
                                fast["copy_h2d"])
    cfg = abi.t4a_launch_config()
    cfg.struct_size = ctypes.sizeof(cfg)
    cfg.grid[:], cfg.block[:] = [1, 1, 1], [32, 1, 1]
    cfg_ref = ctypes.byref(cfg)
    v = ctypes.c_uint64(0)
    argv = (ctypes.c_void_p * 1)(ctypes.addressof(v))
    rh, fh = rt.handle, empty.handle
    cfg4 = abi.t4a_launch_config()
    cfg4.struct_size = ctypes.sizeof(cfg4)
    cfg4.grid[:], cfg4.block[:] = [AXPY_GRID, 1, 1], [AXPY_BLOCK, 1, 1]
    cfg4_ref = ctypes.byref(cfg4)
    vals = [ctypes.c_uint64(AXPY_N), ctypes.c_float(0.5), ctypes.c_uint64(x.address),
            ctypes.c_uint64(y.address)]
    argv4 = (ctypes.c_void_p * 4)(*[ctypes.addressof(o) for o in vals])
    ah = axpy.handle
    hb = abi.t4a_buffer()
    hb_ref, size = ctypes.byref(hb), ctypes.c_uint64(ALLOC)

    def alloc_free():
        rt.alloc(ALLOC).close()

    def raw_alloc_free():
        alloc(rh, size, hb_ref)
        free(rh, hb)

    # The package's ctypes route, when the compiled one is in use: the same
    # calls with the module switched off (what a pure-Python install costs).
    saved = _api._fc_launch, _api._fc_alloc, _api._fc_free

    def ctypes_route():
        _api._fc_launch = _api._fc_alloc = _api._fc_free = None

    def compiled_route():
        _api._fc_launch, _api._fc_alloc, _api._fc_free = saved

    def nothing():
        pass

    rows = [("launch empty (1 arg)", lambda: empty.launch(1, 32, 0),
             lambda: launch(rh, fh, cfg_ref, argv)),
            ("launch axpy (4 args)", lambda: axpy.launch(AXPY_GRID, AXPY_BLOCK, AXPY_N, 0.5, x, y),
             lambda: launch(rh, ah, cfg4_ref, argv4)),
            ("alloc+free 1 MiB", alloc_free, raw_alloc_free)]
    for row, ours, floor in rows:
        sides = [("t4a", ours, nothing, nothing),
                 ("t4a floor (ctypes)", floor, nothing, nothing)]
        if b.machine["fastcall"]:
            sides.append(("t4a ctypes route", ours, ctypes_route, compiled_route))
        try:
            got = b.time_sides(sides, calls, drain)
        finally:
            compiled_route()
        for side, _, _, _ in sides:
            b.add(row, side, got[side])
    small = np.arange(SMALL, dtype=np.uint8) if np is not None else bytes(SMALL)
    dsmall = rt.alloc(SMALL)
    host = ctypes.create_string_buffer(SMALL)
    zero, n4k, dh = ctypes.c_uint64(0), ctypes.c_uint64(SMALL), dsmall.handle
    got = b.time_sides([("t4a", lambda: dsmall.write(small), nothing, nothing),
                        ("t4a floor (ctypes)", lambda: h2d(rh, dh, zero, host, n4k), nothing,
                         nothing)], calls, drain)
    for side in ("t4a", "t4a floor (ctypes)"):
        b.add("pageable write 4 KiB", side, got[side])

    big = a.big
    if np is not None:
        hbig = np.ones(big, dtype=np.uint8)
        back = np.empty(big, dtype=np.uint8)
    else:
        hbig, back = bytes(big), bytearray(big)
    dbig = rt.alloc(big)
    tcalls = a.transfer_calls
    b.add("pageable H2D %d MiB" % (big >> 20), "t4a", b.time_calls(
        lambda: dbig.write(hbig), tcalls, drain, warm=1), "GB/s", big)
    b.add("pageable D2H %d MiB" % (big >> 20), "t4a", b.time_calls(
        lambda: dbig.read_into(back), tcalls, drain, warm=1), "GB/s", big)
    dbig.close()


# ---------------------------------------------------------------------------
# Peers.
# ---------------------------------------------------------------------------


def bench_cupy(b, np):
    import cupy
    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("no CUDA device")
    b.versions["cupy"] = cupy.__version__
    a, calls = b.args, b.args.calls
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        mod = cupy.RawModule(code=SOURCE)
        empty, axpy = mod.get_function("t4a_empty"), mod.get_function("t4a_axpy_f32")
        x = cupy.ones(AXPY_N, dtype=cupy.float32)
        y = cupy.zeros(AXPY_N, dtype=cupy.float32)
        drain = stream.synchronize
        zero = np.uint64(0)
        b.add("launch empty (1 arg)", "CuPy", b.time_calls(
            lambda: empty((1,), (32,), (zero,)), calls, drain))
        n, alpha = np.uint64(AXPY_N), np.float32(0.5)
        b.add("launch axpy (4 args)", "CuPy", b.time_calls(
            lambda: axpy((AXPY_GRID,), (AXPY_BLOCK,), (n, alpha, x, y)), calls, drain))

        def alloc_free():
            cupy.empty(ALLOC, dtype=cupy.uint8)  # dropped at once: back to CuPy's pool
        b.add("alloc+free 1 MiB", "CuPy", b.time_calls(alloc_free, calls, drain))
        small = np.arange(SMALL, dtype=np.uint8)
        dsmall = cupy.empty(SMALL, dtype=cupy.uint8)
        b.add("pageable write 4 KiB", "CuPy", b.time_calls(lambda: dsmall.set(small), calls,
                                                           drain))
        big = a.big
        hbig, back = np.ones(big, dtype=np.uint8), np.empty(big, dtype=np.uint8)
        dbig = cupy.empty(big, dtype=cupy.uint8)
        b.add("pageable H2D %d MiB" % (big >> 20), "CuPy", b.time_calls(
            lambda: dbig.set(hbig), a.transfer_calls, drain, warm=1), "GB/s", big)
        b.add("pageable D2H %d MiB" % (big >> 20), "CuPy", b.time_calls(
            lambda: dbig.get(out=back), a.transfer_calls, drain, warm=1), "GB/s", big)


def bench_torch(b, np):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    b.versions["torch"] = torch.__version__
    a, calls = b.args, b.args.calls
    dev = torch.device("cuda", 0)
    drain = torch.cuda.synchronize
    x = torch.ones(AXPY_N, dtype=torch.float32, device=dev)
    y = torch.zeros(AXPY_N, dtype=torch.float32, device=dev)
    b.add("launch axpy (4 args)", "PyTorch add_", b.time_calls(
        lambda: y.add_(x, alpha=0.5), calls, drain))

    def alloc_free():
        torch.empty(ALLOC, dtype=torch.uint8, device=dev)  # back to the caching allocator
    b.add("alloc+free 1 MiB", "PyTorch", b.time_calls(alloc_free, calls, drain))
    small = torch.from_numpy(np.arange(SMALL, dtype=np.uint8))
    dsmall = torch.empty(SMALL, dtype=torch.uint8, device=dev)
    b.add("pageable write 4 KiB", "PyTorch", b.time_calls(lambda: dsmall.copy_(small), calls,
                                                          drain))
    big = a.big
    hbig = torch.from_numpy(np.ones(big, dtype=np.uint8))
    back = torch.from_numpy(np.empty(big, dtype=np.uint8))
    dbig = torch.empty(big, dtype=torch.uint8, device=dev)
    b.add("pageable H2D %d MiB" % (big >> 20), "PyTorch", b.time_calls(
        lambda: dbig.copy_(hbig), a.transfer_calls, drain, warm=1), "GB/s", big)
    b.add("pageable D2H %d MiB" % (big >> 20), "PyTorch", b.time_calls(
        lambda: back.copy_(dbig), a.transfer_calls, drain, warm=1), "GB/s", big)


def bench_cuda_core(b, np):
    try:
        from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    import cuda.core
    b.versions["cuda.core"] = getattr(cuda.core, "__version__", "?")
    calls = b.args.calls
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    arch = "sm_%d%d" % dev.compute_capability
    prog = Program(SOURCE, code_type="c++", options=ProgramOptions(arch=arch))
    mod = prog.compile("cubin")
    kernel = mod.get_kernel("t4a_empty")
    cfg = LaunchConfig(grid=1, block=32)
    zero = np.uint64(0)
    try:  # cuda.core >= 0.2: launch(stream, config, kernel, *args)
        launch(stream, cfg, kernel, zero)

        def one():
            launch(stream, cfg, kernel, zero)
    except TypeError:  # 0.1: the stream is in the config
        cfg = LaunchConfig(grid=1, block=32, stream=stream)

        def one():
            launch(kernel, cfg, zero)
    b.add("launch empty (1 arg)", "cuda.core", b.time_calls(one, calls, stream.sync))

    def alloc_free():
        dev.allocate(ALLOC, stream=stream).close(stream)
    b.add("alloc+free 1 MiB", "cuda.core", b.time_calls(alloc_free, calls, stream.sync))


# ---------------------------------------------------------------------------


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"host": socket.gethostname(), "cpu": cpu, "cpus": os.cpu_count(),
            "python": sys.version.split()[0], "platform": platform.platform()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=2000, help="calls per sample (default 2000)")
    p.add_argument("--repeats", type=int, default=15, help="samples per row (default 15)")
    p.add_argument("--big", type=int, default=256 << 20,
                   help="bytes of the large transfers (default 256 MiB)")
    p.add_argument("--transfer-calls", type=int, default=5,
                   help="large transfers per sample (default 5)")
    p.add_argument("--clock", choices=("wall", "thread"), default="wall",
                   help="wall: time.perf_counter (default); thread: the calling thread's "
                   "CPU time (a shared host)")
    p.add_argument("--backend", default=None, help="t4a backend (default: $T4A_GPU_BACKEND "
                   "or cuda)")
    p.add_argument("--peers", default="cupy,cuda.core,torch",
                   help="comma-separated peers to try (default cupy,cuda.core,torch; '' none)")
    p.add_argument("--quick", action="store_true", help="500 calls, 7 repeats, 16 MiB")
    p.add_argument("--smoke", action="store_true", help="a few calls of every row: checks "
                   "that the bench runs")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON")
    a = p.parse_args(argv)
    if a.quick:
        a.calls, a.repeats, a.big, a.transfer_calls = 500, 7, 16 << 20, 3
    if a.smoke:
        a.calls, a.repeats, a.big, a.transfer_calls = 20, 3, 1 << 20, 1
    try:
        import numpy as np
    except ImportError:
        np = None
    b = Bench(a)
    b.machine = machine()
    b.versions = {"numpy": np.__version__ if np is not None else None}
    print("python_bench: %d calls x %d samples, %s clock, transfers of %d MiB"
          % (a.calls, a.repeats, a.clock, a.big >> 20), flush=True)
    bench_t4a(b, np)  # t4a failing is fatal: there is nothing to compare
    import t4a_gpu
    b.versions["t4a_gpu"] = t4a_gpu.__version__
    peers = [s for s in a.peers.split(",") if s]
    fns = {"cupy": ("CuPy", bench_cupy), "cuda.core": ("cuda.core", bench_cuda_core),
           "torch": ("PyTorch", bench_torch)}
    for name in peers:
        label, fn = fns[name]
        if np is None:
            b.skipped[label] = "numpy is not installed"
            print("  %s: skipped (numpy is not installed)" % label)
            continue
        b.run(label, lambda fn=fn: fn(b, np))
    backend, rt = b.t4a
    rt.close()
    backend.close()

    print("\n%-28s %-22s %10s %10s %8s" % ("row", "side", "median", "p99/p1", "t4a/x"))
    summary = {}
    for row, sides in b.rows.items():
        t4a = sides.get("t4a")
        peers_here = {s: r for s, r in sides.items() if not s.startswith("t4a")}
        better_low = t4a["unit"] == "us"
        best = None
        if peers_here:
            best = (min if better_low else max)(peers_here.items(),
                                                 key=lambda kv: kv[1]["median"])
        summary[row] = {"t4a": t4a["median"], "unit": t4a["unit"],
                        "floor": sides.get("t4a floor (ctypes)", {}).get("median"),
                        "ctypes_route": sides.get("t4a ctypes route", {}).get("median"),
                        "best_peer": best[0] if best else None,
                        "best_peer_median": best[1]["median"] if best else None,
                        "ratio": t4a["median"] / best[1]["median"] if best else None}
        for side, r in sides.items():
            ratio = t4a["median"] / r["median"] if r["median"] else float("nan")
            print("%-28s %-22s %10.2f %10.2f %8.2f %s" % (
                row, side, r["median"], r.get("p99", r.get("p1")), ratio, r["unit"]))
    for label, why in b.skipped.items():
        print("skipped %s: %s" % (label, why))
    if a.json:
        out = {"tool": "bench/python_bench.py", "date": datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec="seconds"), "machine": b.machine,
            "versions": b.versions, "options": vars(a), "rows": b.rows, "summary": summary,
            "skipped": b.skipped}
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
        print("wrote %s" % a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
