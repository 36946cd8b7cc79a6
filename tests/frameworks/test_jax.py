"""t4a -> JAX through DLPack, zero-copy and ordered, on a GPU (run by
tests/gpu/frameworks.sh jax; exit 0 / 77 / 1; XLA_PYTHON_CLIENT_PREALLOCATE
is false so that JAX leaves the device memory to both):

1. a t4a buffer filled by a t4a kernel behind a long t4a kernel (a gate,
   opened by a timer after 0.5 s), read by jax.dlpack.from_dlpack: same
   address (unsafe_buffer_pointer), dtype, shape; reading it on the host
   returns only after the gate opened (JAX's stream waited), with the
   values;
2. lifetimes: the JAX array outlives every Python handle of the buffer (the
   memory stays until JAX drops it, then the buffer is freed);
3. JAX -> t4a: a JAX array imported by t4a_gpu.from_dlpack (read-only if JAX
   says so), same address, the values read by t4a.
"""
import gc
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import fwutil  # noqa: E402
from fwutil import check  # noqa: E402

jax = fwutil.need("jax")
import jax.dlpack  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import t4a_gpu  # noqa: E402

try:
    gpus = jax.devices("gpu")
except RuntimeError as e:
    gpus = []
    reason = str(e)
if not gpus:
    fwutil.unusable("jax %s sees no GPU (%s)" % (jax.__version__, locals().get("reason", "")))
backend, rt = fwutil.runtime()
k = fwutil.Kernels(backend, rt)
print("jax %s on %s" % (jax.__version__, gpus[0]))
N = 1 << 22

# -- 1. t4a -> JAX, ordered behind a long t4a kernel -------------------------------------------
buf = rt.alloc(4 * N)
k.fill(buf, 0xFFFFFFFF, N)
k.close_gate()
k.fill(buf, 5, N)
view = buf.as_tensor("int32", (N,))
try:
    arr = jax.dlpack.from_dlpack(view)  # the protocol: JAX passes its stream
    protocol = True
except TypeError:  # an older JAX takes capsules only: no stream to hand over
    rt.order_stream_after(None)
    arr = jax.dlpack.from_dlpack(view.__dlpack__(stream=None))
    protocol = False
check(protocol, "jax.dlpack.from_dlpack takes a producer object (the stream protocol)")
check(arr.unsafe_buffer_pointer() == buf.address, "jax.dlpack.from_dlpack: same address")
check(arr.dtype == jnp.int32 and arr.shape == (N,), "jax.dlpack.from_dlpack: dtype and shape")
opener = k.open_gate_after(0.5)
host, seconds = fwutil.timed(lambda: np.asarray(arr))
opener.join()
check(seconds >= 0.3, "JAX waited for the t4a gate before reading (%.2f s)" % seconds)
check(bool((host == 5).all()), "JAX reads the values the t4a kernel wrote")
check(int(jnp.sum(arr == 5)) == N, "a JAX computation on it")

# -- 2. the JAX array outlives every Python handle of the buffer ---------------------------------
live = rt.counters()["live_buffers"]
del buf, view
gc.collect()
check(int(jnp.sum(arr == 5)) == N and rt.counters()["live_buffers"] == live,
      "the memory outlives the t4a handles while JAX holds it")
del arr, host
check(fwutil.eventually(lambda: rt.counters()["live_buffers"] == live - 1),
      "JAX dropped it: the t4a buffer is freed (JAX may release it from its own thread)")

# -- 3. JAX -> t4a -------------------------------------------------------------------------------
x = jnp.arange(N, dtype=jnp.int32) * 3
b = t4a_gpu.from_dlpack(x, rt, allow_read_only=True)
check(b.address == x.unsafe_buffer_pointer() and b.nbytes == 4 * N,
      "t4a_gpu.from_dlpack(jax array): same address and size")
got = np.frombuffer(b.read(), dtype=np.int32)
check(bool((got == np.arange(N, dtype=np.int32) * 3).all()), "t4a reads JAX's values")
b.close()
rt.synchronize()
del x
rt.close()
backend.close()
fwutil.finish()
