"""t4a <-> CuPy through DLPack and the CUDA Array Interface, zero-copy and
ordered, on a GPU (run by tests/gpu/frameworks.sh cupy; exit 0 / 77 / 1):

1. a t4a buffer filled by a t4a kernel behind a long t4a kernel (a gate),
   read by cupy.from_dlpack (CuPy's stream waits: not done while the gate
   holds t4a's stream) and by cupy.asarray through __cuda_array_interface__
   (CuPy synchronises on the runtime's stream: it returns only after the gate
   opened); same address both ways, the values;
2. a CuPy array written behind a long CuPy kernel (the same spin kernel,
   loaded by CuPy from PTX, on CuPy's stream), imported by
   t4a_gpu.from_dlpack: same address; t4a's stream waits for CuPy's; a t4a
   kernel writes half of it; CuPy reads after t4a's witness: both halves;
3. lifetimes both ways (CuPy's memory pool measures what is held);
4. issue #26: a view past its buffer never reaches CuPy (errors.ERANGE, for
   cupy.asarray as for cupy.from_dlpack); while CuPy holds an array made
   through __cuda_array_interface__ (of a view, or of the Buffer itself),
   closing the buffer or the runtime is a BufferError and the block is not
   handed out again; once CuPy dropped it, the buffer closes (a view) or is
   freed (the Buffer itself, once collected).
"""
import gc
import os
import tempfile
import time

import fwutil
from fwutil import check

cupy = fwutil.need("cupy")
import t4a_gpu  # noqa: E402

try:
    cupy.cuda.Device(0).use()
    cupy.cuda.runtime.getDeviceCount()
except Exception as e:  # noqa: BLE001
    fwutil.unusable("cupy %s cannot use a GPU: %s" % (cupy.__version__, e))
backend, rt = fwutil.runtime()
k = fwutil.Kernels(backend, rt)
print("cupy %s, CUDA runtime %d" % (cupy.__version__, cupy.cuda.runtime.runtimeGetVersion()))
N = 1 << 22
pool = cupy.get_default_memory_pool()

# -- 1. t4a -> CuPy (DLPack) ---------------------------------------------------------------
buf = rt.alloc(4 * N)
k.fill(buf, 0xFFFFFFFF, N)
# CuPy's kernels of this part, compiled and loaded before the gate: loading
# code may synchronise the context, which behind a closed gate never returns.
int((cupy.zeros(N, dtype=cupy.uint32) == 11).sum().get())
k.close_gate()
k.fill(buf, 11, N)
a = cupy.from_dlpack(buf.as_tensor("uint32", (N,)))
check(a.data.ptr == buf.address, "cupy.from_dlpack: same address (zero-copy)")
check(a.dtype == cupy.uint32 and a.shape == (N,), "cupy.from_dlpack: dtype and shape")
count = (a == 11).sum()  # on CuPy's stream, which must wait for t4a
time.sleep(0.3)
check(not cupy.cuda.get_current_stream().done, "CuPy's stream waits behind the t4a gate")
k.open_gate()
check(int(count.get()) == N, "CuPy reads the values the t4a kernel wrote")

# -- 1b. t4a -> CuPy (CUDA Array Interface: CuPy synchronises on our stream) -----------------
k.close_gate()
k.fill(buf, 12, N)
opener = k.open_gate_after(0.5)
c, seconds = fwutil.timed(lambda: cupy.asarray(buf.as_tensor("uint32", (N,))))
opener.join()
check(c.data.ptr == buf.address, "cupy.asarray(__cuda_array_interface__): same address")
check(seconds >= 0.3, "cupy.asarray waited for the runtime's stream (%.2f s)" % seconds)
check(int((c == 12).sum().get()) == N, "CuPy reads the values through the CAI")
del c

# -- 3a. the CuPy array outlives every Python handle of the buffer ----------------------------
live = rt.counters()["live_buffers"]
del buf
gc.collect()
check(int((a == 12).sum().get()) == N and rt.counters()["live_buffers"] == live,
      "the memory outlives the t4a handles while CuPy holds it")
del a, count
gc.collect()
check(rt.counters()["live_buffers"] == live - 1, "CuPy dropped it: the t4a buffer is freed")

# -- 2. CuPy -> t4a ------------------------------------------------------------------------------
with tempfile.NamedTemporaryFile(suffix=".ptx", delete=False) as f:
    f.write(fwutil.PTX)
spin = cupy.RawModule(path=f.name).get_function("t4a_spin")
os.unlink(f.name)
x = cupy.arange(N, dtype=cupy.uint32)
bool(((x * 3)[:N // 2] == 0xABCD).all())  # CuPy's kernels below, loaded before the spin
cupy.cuda.get_current_stream().synchronize()
gate = rt.host_alloc(4)


def set_gate(v):
    with gate.view() as m:
        m[:] = bytes([v, 0, 0, 0])


set_gate(0)
watchdog = fwutil.Watchdog(lambda: set_gate(1))  # as fwutil's gate: a failure, not a hang
spin((1,), (1,), (cupy.uint64(gate.address),))  # a long CuPy kernel
y = x * 3  # written behind it
b = t4a_gpu.from_dlpack(y, rt)
check(b.address == y.data.ptr and b.nbytes == 4 * N, "t4a_gpu.from_dlpack(cupy array): same "
      "address and size")
k.fill(b, 0xABCD, N // 2)
w = rt.seal()
time.sleep(0.2)
check(not w.query(), "t4a's stream waits for CuPy's pending work")
watchdog.cancel()
set_gate(1)
check(not watchdog.fired, "the test opened CuPy's gate (the watchdog did not)")
rt.order_stream_after(cupy.cuda.get_current_stream(), w)
check(bool((y[:N // 2] == 0xABCD).all()), "CuPy reads t4a's write (after CuPy's own)")
check(bool((y[N // 2:] == x[N // 2:] * 3).all()), "CuPy's other half is intact")
w.close()

# -- 3b. the t4a buffer outlives the CuPy array ---------------------------------------------------
cupy.cuda.get_current_stream().synchronize()
del x
gc.collect()
before = pool.used_bytes()
del y
gc.collect()
check(pool.used_bytes() == before, "CuPy keeps the memory t4a still holds")
got = bytearray(4)
b.read_into(got, offset=4 * (N - 1))
check(bytes(got) == ((N - 1) * 3).to_bytes(4, "little"), "t4a reads it after CuPy dropped it")
b.close()
rt.synchronize()
gc.collect()
check(pool.used_bytes() <= before - 4 * N, "t4a let go: CuPy's pool got the memory back")


# -- 4. #26: views in their buffers; an interface export holds its buffer ------------------------
def raises(cls, fn):
    try:
        fn()
    except cls:
        return True
    except Exception as e:  # noqa: BLE001 -- the wrong error is a failed check
        print("     (got %s: %s)" % (type(e).__name__, e))
    return False


small = rt.alloc(64)
check(raises(t4a_gpu.errors.ERANGE, lambda: cupy.asarray(small.as_tensor("float32", (1000,)))),
      "cupy.asarray of 4,000 bytes of a 64-byte buffer: ERANGE at as_tensor")
check(raises(t4a_gpu.errors.ERANGE,
             lambda: cupy.from_dlpack(small.as_tensor("float32", (3,), strides=(-1,)))),
      "a view reaching below its buffer (negative stride): ERANGE")
at = small.address
held = cupy.asarray(small.as_tensor("float32", (16,)))
held.fill(3)
check(raises(BufferError, small.close), "closing a buffer while CuPy holds its interface "
      "export is a BufferError")
again = rt.alloc(64)
check(again.address != at, "the held block is not handed out again")
again.close()
check(float(held.sum()) == 48.0, "CuPy still reads and writes the held memory")
if not check(raises(BufferError, rt.close), "closing the runtime meanwhile is a BufferError"):
    fwutil.finish()  # the runtime is gone: nothing below can run
del held
gc.collect()
check(not raises(BufferError, small.close), "CuPy dropped the array: the buffer closes")
live = rt.counters()["live_buffers"]
whole = rt.alloc(256)
arr = cupy.asarray(whole)  # CuPy keeps the Buffer itself
check(arr.data.ptr == whole.address and arr.nbytes == 256, "cupy.asarray(buf): the whole buffer")
check(raises(BufferError, whole.close), "a Buffer whose own interface CuPy read cannot be closed")
del whole
gc.collect()
arr.fill(1)
check(int(arr.sum()) == 256 and rt.counters()["live_buffers"] == live + 1,
      "CuPy keeps the Buffer, and its memory, after the caller dropped it")
del arr
gc.collect()
check(rt.counters()["live_buffers"] == live, "CuPy dropped it: the Buffer is freed")

gate.close()
rt.close()
backend.close()
fwutil.finish()
