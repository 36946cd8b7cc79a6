"""t4a <-> PyTorch through DLPack, zero-copy, ordered, on a GPU (run by
tests/gpu/frameworks.sh torch; exit 0 / 77 / 1, see fwutil.py):

1. a t4a buffer filled by a t4a kernel behind a long t4a kernel (a gate),
   read by torch.from_dlpack: same address, dtype, shape, device; torch's
   stream waits (not done while the gate holds t4a's stream); the values;
2. a torch tensor still being written behind a long torch kernel
   (torch.cuda._sleep), imported by t4a_gpu.from_dlpack: same address; t4a's
   stream waits for torch's; a t4a kernel writes half of it; torch reads
   after t4a's witness (order_stream_after): both halves right;
3. lifetimes both ways: a torch tensor outliving every Python handle of the
   t4a buffer (the memory stays until torch drops it, then the buffer is
   freed), and a t4a buffer outliving the torch tensor (torch's memory
   stays until the t4a buffer is closed, then torch gets it back); and the
   runtime destroyed with an import still open.
"""
import gc
import time

import fwutil
from fwutil import check

torch = fwutil.need("torch")
import t4a_gpu  # noqa: E402

if not torch.cuda.is_available():
    fwutil.unusable("torch %s sees no CUDA device" % torch.__version__)
backend, rt = fwutil.runtime()
k = fwutil.Kernels(backend, rt)
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
print("torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda,
                                  torch.cuda.get_device_name(dev)))
N = 1 << 22  # 16 MiB of int32

# -- 1. t4a -> torch -------------------------------------------------------------------
buf = rt.alloc(4 * N)
k.fill(buf, 0xFFFFFFFF, N)  # poison: what torch would read if it did not wait
# torch's kernels of this part, run once before the gate: loading one may
# synchronise the context, which behind a closed gate never returns (fwutil).
int((torch.zeros(N, dtype=torch.int32, device=dev) == 7).sum().item())
k.close_gate()
k.fill(buf, 7, N)  # behind the gate
t = torch.from_dlpack(buf.as_tensor("int32", (N,)))
check(t.data_ptr() == buf.address, "torch.from_dlpack: same address (zero-copy)")
check(t.device == dev and t.dtype == torch.int32 and tuple(t.shape) == (N,),
      "torch.from_dlpack: device, dtype and shape")
count = (t == 7).sum()  # enqueued on torch's stream, which must wait for t4a
time.sleep(0.3)
check(not torch.cuda.current_stream().query(), "torch's stream waits behind the t4a gate")
k.open_gate()
check(int(count.item()) == N, "torch reads the values the t4a kernel wrote")
t2 = torch.from_dlpack(buf.as_tensor("int32", (4, N // 4), strides=(1, 4)))  # strided view
check(t2.stride() == (1, 4) and int(t2.sum().item()) == 7 * N, "a strided view")
del t2

# -- 3a. the torch tensor outlives every Python handle of the buffer --------------------
live = rt.counters()["live_buffers"]
del buf
gc.collect()
check(int((t == 7).sum().item()) == N, "the memory outlives the t4a handles while torch holds it")
check(rt.counters()["live_buffers"] == live, "... and the buffer is not freed meanwhile")
del t, count
gc.collect()
torch.cuda.synchronize()
check(rt.counters()["live_buffers"] == live - 1, "torch dropped it: the t4a buffer is freed")

# -- 2. torch -> t4a -------------------------------------------------------------------------
x = torch.arange(N, dtype=torch.int32, device=dev)
# the kernels below, loaded before the long one: a load that synchronised the
# context would wait for it, and t4a's stream would no longer be waiting
torch.cuda._sleep(1)
torch.equal(x * 3, torch.full((N,), 0xABCD, dtype=torch.int32, device=dev))
torch.cuda.synchronize()
torch.cuda._sleep(int(3e9))  # a long torch kernel (~1.5 s on an H200)
y = x * 3  # written behind it
b = t4a_gpu.from_dlpack(y, rt)
check(b.address == y.data_ptr() and b.nbytes == 4 * N and b.dtype == "int32",
      "t4a_gpu.from_dlpack(torch tensor): same address, size, dtype")
k.fill(b, 0xABCD, N // 2)  # t4a writes the first half
w = rt.seal()
check(not w.query(), "t4a's stream waits for torch's pending work")
rt.order_stream_after(torch.cuda.current_stream(), w)  # torch reads after t4a's kernel
half = torch.full((N // 2,), 0xABCD, dtype=torch.int32, device=dev)
check(torch.equal(y[:N // 2], half), "torch reads t4a's write (after torch's own)")
check(torch.equal(y[N // 2:], x[N // 2:] * 3), "torch's other half is intact")
w.close()

# -- 3b. the t4a buffer outlives the torch tensor ----------------------------------------------
torch.cuda.synchronize()
before = torch.cuda.memory_allocated(dev)
del y
gc.collect()
check(torch.cuda.memory_allocated(dev) == before, "torch keeps the memory t4a still holds")
got = bytearray(8)
b.read_into(got, offset=4 * (N - 2))
check(bytes(got) == ((N - 2) * 3).to_bytes(4, "little") + ((N - 1) * 3).to_bytes(4, "little"),
      "t4a reads it after torch dropped its tensor")
b.close()
rt.synchronize()  # the buffer's last use completed: torch's deleter runs
gc.collect()
check(torch.cuda.memory_allocated(dev) == before - 4 * N, "t4a let go: torch freed the memory")

# -- 3c. the runtime destroyed with an import open ---------------------------------------------
z = torch.ones(1 << 20, dtype=torch.float32, device=dev)
zb = t4a_gpu.from_dlpack(z, rt)
del z
gc.collect()
torch.cuda.synchronize()
before = torch.cuda.memory_allocated(dev)
rt.close()  # releases the import: torch's deleter
gc.collect()
check(torch.cuda.memory_allocated(dev) == before - 4 * (1 << 20),
      "runtime_destroy let the imported torch memory go")
check(zb._node.alive is False, "and invalidated the Buffer")
backend.close()
fwutil.finish()
