#!/usr/bin/env python3
"""axpy.py -- y = alpha * x + y on the GPU from Python, through t4a_gpu (ctypes).

    python3 axpy.py [N]

Lists the installed backends and the default backend's devices, then on
device 0: uploads x and y (deterministic pseudo-random floats), compiles a
CUDA C kernel with NVRTC, launches it, seals the runtime's work and waits
for the witness, downloads y and checks it against a pure-Python reference.

Environment: T4A_GPU_LIBRARY (path of libt4a_gpu.so), T4A_GPU_BACKEND,
T4A_GPU_BACKEND_PATH (which plugin), T4A_CUDA_LIBRARY, T4A_NVRTC_LIBRARY
(which driver and compiler the CUDA plugin loads).

Exit status (as t4a-gpu info):
  0  the result was verified
  1  a wrong result, or a call that should have worked failed
  3  no backend: the loader or the plugin could not be found or loaded
     (T4A_ENOBACKEND, T4A_EABI)
  4  the backend loaded but cannot be used here: no driver, a stub driver,
     no device, ... (init), or no run-time compiler (T4A_ENOCOMPILER);
     the reason is printed
"""

import os
import sys
from array import array
from ctypes import c_float, c_uint64

# t4a_gpu.py lives next to this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import t4a_gpu  # noqa: E402
from t4a_gpu import T4AError  # noqa: E402

EXIT_OK, EXIT_WRONG, EXIT_NOBACKEND, EXIT_UNUSABLE = 0, 1, 3, 4

KERNEL_NAME = "t4a_axpy_f32"
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
    print("axpy:", *args)
    sys.stdout.flush()


def fail(status, message):
    """Prints `message` to stderr and returns the exit status."""
    sys.stdout.flush()
    print("axpy: " + message, file=sys.stderr)
    return status


def pseudo_random_floats(n, seed):
    """n floats in [-1, 1) from a 32-bit LCG: the same on every host."""
    out = array("f", bytes(4 * n))
    state = seed & 0xFFFFFFFF
    for i in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = (state >> 8) / float(1 << 23) - 1.0  # 24 bits: exact in float32
    return out


def describe(dev):
    return "%s (sm_%d%d, %d MiB, %d SMs, pci %s)" % (
        dev.name, dev.cc[0], dev.cc[1], dev.total_memory >> 20, dev.multiprocessors,
        dev.pci_bus_id or "?")


def axpy_on_device(backend, dev, n):
    """Runs and verifies the kernel on `dev`; returns the exit status."""
    alpha = 2.5
    x = pseudo_random_floats(n, 12345)
    y = pseudo_random_floats(n, 67890)
    nbytes = 4 * n

    with backend.runtime(dev.ordinal) as rt:
        # Compile for this device, load the code into the runtime, take the
        # kernel. The module keeps the code loaded; the artifact can go.
        art = rt.compile(SOURCE, name="axpy.cu")
        try:
            module = rt.module(art)
        finally:
            backend.release(art)
        kernel = rt.function(module, KERNEL_NAME)

        dx = rt.alloc(nbytes)
        dy = rt.alloc(nbytes)
        rt.upload(dx, x)
        rt.upload(dy, y)

        # Kernel arguments: one ctypes value per parameter, of its exact C
        # type; a pointer parameter gets the buffer's device address.
        args = [c_uint64(n), c_float(alpha), c_uint64(rt.address(dx)), c_uint64(rt.address(dy))]
        block = 256
        grid = max(1, min((n + block - 1) // block, 4096))
        rt.launch(kernel, grid, block, args)

        # seal: a witness covering everything enqueued so far; wait on it.
        with rt.seal() as done:
            done.wait()

        got = array("f")
        got.frombytes(rt.download(dy, nbytes))
        rt.free(dx)
        rt.free(dy)
        rt.unload(module)
    # leaving the block destroyed the runtime (runtime_destroy)

    # Reference: the exact product and sum in double; the GPU rounds to
    # float32 (once with FMA, twice without), well inside the tolerance.
    wrong = 0
    for i in range(n):
        ref = alpha * x[i] + y[i]
        if not abs(got[i] - ref) <= 1e-6 * abs(ref) + 1e-6:  # also catches NaN
            if wrong < 5:
                say("y[%d] = %r, expected %r (x=%r, y=%r)" % (i, got[i], ref, x[i], y[i]))
            wrong += 1
    if wrong:
        return fail(EXIT_WRONG, "%d of %d results wrong on %s" % (wrong, n, dev.name))
    print("python example: axpy of %d floats verified on %s" % (n, dev.name))
    return EXIT_OK


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 1 << 18
    if n < 1:
        return fail(2, "usage: axpy.py [N >= 1]")

    # The loader, and the backends it can see.
    try:
        lib_version = t4a_gpu.loader_version()
    except (OSError, T4AError) as e:
        return fail(EXIT_NOBACKEND, "no loader: %s" % e)
    say("libt4a_gpu %d.%d.%d, search path %s" % (lib_version + (t4a_gpu.search_path(),)))
    backends = t4a_gpu.list_backends()
    say("%d backend(s) installed" % len(backends))
    for entry in backends:
        say("  backend %s: %s" % (entry.name, entry.path))

    # Open the default backend ($T4A_GPU_BACKEND or "cuda").
    try:
        backend = t4a_gpu.Backend()
    except T4AError as e:
        return fail(EXIT_NOBACKEND, "no backend: %s" % e)

    try:
        info = backend.info()
        say("backend %s %s (ABI %d.%d) from %s" % (info.name, info.version, backend.abi[0],
                                                   backend.abi[1], backend.path))
        try:
            backend.init()
        except T4AError as e:
            return fail(EXIT_UNUSABLE, "backend unusable here: %s" % e)
        info = backend.info()
        say("driver CUDA %d.%d (%s)" % (info.driver_version // 1000,
                                        info.driver_version % 1000 // 10, info.driver_path))

        devices = backend.devices()
        say("devices: %d" % len(devices))
        for dev in devices:
            say("  device %d: %s" % (dev.ordinal, describe(dev)))
        if not devices:
            return fail(EXIT_UNUSABLE, "backend unusable here: no device")

        compiler = backend.compiler_info()
        if compiler.available:
            say("compiler: NVRTC %d.%d (%s)" % (compiler.version + (compiler.path,)))
        else:
            say("compiler: unavailable (%s)" % compiler.reason)

        try:
            return axpy_on_device(backend, devices[0], n)
        except T4AError as e:
            if e.status == t4a_gpu.T4A_ENOCOMPILER:
                return fail(EXIT_UNUSABLE, "cannot compile here: %s" % e)
            if e.log:
                print(e.log, file=sys.stderr)
            return fail(EXIT_WRONG, "failed: %s" % e)
    finally:
        backend.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
