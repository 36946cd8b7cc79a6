#!/usr/bin/env python3
"""axpy.py -- y = alpha * x + y on the GPU from Python, with the t4a_gpu package.

    python3 axpy.py [N]          (N floats, default 262144)
    python3 axpy.py --help

Lists the installed backends and the default backend's devices, then on
device 0: uploads x and y (deterministic pseudo-random floats), compiles a
CUDA C kernel with NVRTC, launches it, seals the runtime's work and waits
for the witness, downloads y and checks it against a pure-Python reference.

Needs the t4a_gpu package (pip install ./python, or PYTHONPATH=python).
Environment: T4A_GPU_LIBRARY (path of libt4a_gpu.so), T4A_GPU_BACKEND,
T4A_GPU_BACKEND_PATH (which plugin), T4A_CUDA_LIBRARY, T4A_NVRTC_LIBRARY
(which driver and compiler the CUDA plugin loads).

Exit status (as t4a-gpu info):
  0  the result was verified
  1  a wrong result, or a call that should have worked failed
  2  usage error
  3  no backend: the loader or the plugin could not be found or loaded
     (T4A_ENOBACKEND, T4A_EABI)
  4  the backend loaded but cannot be used here: no driver, a stub driver,
     no device, ... (init), or no run-time compiler (T4A_ENOCOMPILER);
     the reason is printed
"""
import sys
from array import array

import t4a_gpu
from t4a_gpu import T4AError, errors

EXIT_OK, EXIT_WRONG, EXIT_USAGE, EXIT_NOBACKEND, EXIT_UNUSABLE = 0, 1, 2, 3, 4
USAGE = """usage: axpy.py [N]   (N >= 1 floats, default 262144)
       axpy.py --help
y = alpha * x + y on device 0 of the default backend, checked against Python.
exit status: 0 verified, 1 a call failed or the result is wrong, 2 usage error,
             3 no backend found, 4 the backend cannot be used here (reason printed)"""

SOURCE = r"""
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float alpha, const float *x,
                                        float *y) {
  /* grid-stride loop: any grid covers any n */
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
"""


def say(*args):
    print("axpy:", *args, flush=True)


def fail(status, message):
    sys.stdout.flush()
    print("axpy: " + message, file=sys.stderr)
    return status


def pseudo_random_floats(n, seed):
    """n floats in [-1, 1) from a 32-bit LCG: the same on every host."""
    out, state = array("f", bytes(4 * n)), seed & 0xFFFFFFFF
    for i in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = (state >> 8) / float(1 << 23) - 1.0  # 24 bits: exact in float32
    return out


def axpy_on_device(backend, dev, n):
    alpha = 2.5
    x, y = pseudo_random_floats(n, 12345), pseudo_random_floats(n, 67890)
    with backend.runtime(dev.ordinal) as rt:
        with rt.compile(SOURCE, name="axpy.cu") as art:  # the module keeps the code
            module = rt.load(art)
        kernel = module.function("t4a_axpy_f32", signature="u64 f32 ptr ptr")
        dx, dy = rt.alloc(4 * n), rt.alloc(4 * n)
        dx.write(x)  # any buffer-protocol object, passed without a copy
        dy.write(y)
        block = 256
        kernel.launch(max(1, min((n + block - 1) // block, 4096)), block, n, alpha, dx, dy)
        with rt.seal() as done:  # a witness covering everything enqueued so far
            done.wait()
        got = dy.read_into(array("f", bytes(4 * n)))
    # leaving the block destroyed the runtime and everything it owned

    # The exact product and sum in double; the GPU rounds to float32 (once
    # with FMA, twice without), well inside the tolerance.
    wrong = 0
    for i in range(n):
        ref = alpha * x[i] + y[i]
        if not abs(got[i] - ref) <= 1e-6 * abs(ref) + 1e-6:  # also catches NaN
            if wrong < 5:
                say("y[%d] = %r, expected %r" % (i, got[i], ref))
            wrong += 1
    if wrong:
        return fail(EXIT_WRONG, "%d of %d results wrong on %s" % (wrong, n, dev.name))
    print("python example: axpy of %d floats verified on %s" % (n, dev.name))
    return EXIT_OK


def main(argv):
    if argv[1:] in (["--help"], ["-h"]):
        print(USAGE)
        return EXIT_OK
    try:
        if len(argv) > 2:
            raise ValueError
        n = int(argv[1]) if len(argv) > 1 else 1 << 18
        if n < 1:
            raise ValueError
    except ValueError:
        return fail(EXIT_USAGE, "unexpected argument '%s'\n%s" % (" ".join(argv[1:]), USAGE))
    try:
        say("libt4a_gpu %d.%d.%d, search path %s"
            % (t4a_gpu.loader_version() + (t4a_gpu.search_path(),)))
        backends = t4a_gpu.list_backends()
        backend = t4a_gpu.Backend(init=False)  # $T4A_GPU_BACKEND or "cuda"
    except (errors.ENOBACKEND, errors.EABI) as e:
        return fail(EXIT_NOBACKEND, "no backend: %s" % e)
    say("%d backend(s) installed" % len(backends))
    for entry in backends:
        say("  backend %s: %s" % (entry.name, entry.path))
    with backend:
        info = backend.info()
        say("backend %s %s (ABI %d.%d) from %s"
            % (info.name, info.version, backend.abi[0], backend.abi[1], backend.path))
        try:
            backend.init()
        except T4AError as e:
            return fail(EXIT_UNUSABLE, "backend unusable here: %s" % e)
        info = backend.info()
        say("driver CUDA %d.%d (%s)" % (info.driver_version // 1000,
                                        info.driver_version % 1000 // 10, info.driver_path))
        devices = backend.devices()
        say("devices: %d" % len(devices))
        for d in devices:
            say("  device %d: %s (sm_%d%d, %d MiB, %d SMs, pci %s)"
                % (d.ordinal, d.name, d.cc[0], d.cc[1], d.total_memory >> 20, d.multiprocessors,
                   d.pci_bus_id or "?"))
        compiler = backend.compiler_info()
        say("compiler: " + ("NVRTC %d.%d (%s)" % (compiler.version + (compiler.path,))
                            if compiler.available else "unavailable (%s)" % compiler.reason))
        try:
            return axpy_on_device(backend, devices[0], n)
        except errors.ENOCOMPILER as e:
            return fail(EXIT_UNUSABLE, "cannot compile here: %s" % e)
        except T4AError as e:
            if e.log:
                print(e.log, file=sys.stderr)
            return fail(EXIT_WRONG, "failed: %s" % e)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
