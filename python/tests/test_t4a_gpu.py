"""Tests of the t4a_gpu package (unittest, standard library only).

Run by tests/consumers/test_python.sh: on the fake CUDA driver and fake NVRTC
in `make check`, on the real driver and NVRTC in the GPU lane. Environment:

  T4A_TEST_DRIVER   fake | real: what the backend runs on (the fake's device
                    names and count are checked only on the fake)
  T4A_LAYOUT        output of tests/bindings/layout (the C compiler's sizes,
                    offsets and constants); required
  T4A_GPU_LIBRARY, T4A_GPU_BACKEND_PATH, T4A_CUDA_LIBRARY, ... as for any
                    consumer
"""
import array
import ctypes
import gc
import os
import threading
import unittest

import t4a_gpu
from t4a_gpu import abi, errors

try:
    import numpy
except ImportError:  # optional: the numpy tests skip without it
    numpy = None

FAKE = os.environ.get("T4A_TEST_DRIVER", "fake") == "fake"

# Kernels, compiled at run time (the fake NVRTC finds the names, and the fake
# driver runs its own implementation of each; a GPU runs this code).
SOURCE = r"""
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float alpha, const float *x,
                                        float *y) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
extern "C" __global__ void t4a_fill_u32(unsigned int *p, unsigned int value,
                                        unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = value;
}
"""


def pattern(n, seed=1):
    """n deterministic bytes (an LCG), different per seed."""
    out, s = bytearray(n), seed
    for i in range(n):
        s = (s * 1103515245 + 12345) & 0x7FFFFFFF
        out[i] = s >> 16 & 0xFF
    return bytes(out)


def c_layout():
    path = os.environ.get("T4A_LAYOUT")
    if not path:
        raise AssertionError("T4A_LAYOUT is not set: it names the output of tests/bindings/"
                             "layout (tests/consumers/test_python.sh sets it)")
    facts = {}
    with open(path) as f:
        for line in f:
            kind, name, value = line.rstrip("\n").split(" ", 2)
            facts[(kind, name)] = value
    return facts


class Layout(unittest.TestCase):
    """The generated ctypes declarations against the C compiler's layout."""

    def test_every_struct_and_field(self):
        c = c_layout()
        seen = set()
        for cls in abi.STRUCTS:
            name = cls.__name__
            seen.add(("struct", name))
            self.assertEqual(c.get(("struct", name)),
                             "%d %d" % (ctypes.sizeof(cls), ctypes.alignment(cls)), name)
            for field, _ in cls._fields_:
                f = getattr(cls, field)
                key = ("field", "%s.%s" % (name, field))
                seen.add(key)
                self.assertEqual(c.get(key), "%d %d" % (f.offset, f.size), key)
        missing = [k for k in c if k[0] in ("struct", "field") and k not in seen]
        self.assertEqual(missing, [], "in C, not in the Python bindings")
        self.assertGreaterEqual(len(seen), 200)

    def test_every_constant(self):
        c = c_layout()
        consts = {name: int(v) for (kind, name), v in c.items() if kind == "const"}
        self.assertIn("T4A_WAIT_FOREVER", consts)
        for name, value in consts.items():
            self.assertEqual(getattr(abi, name), value, name)

    def test_slot_prototypes_match_the_header_order(self):
        slots = [n for n, t in abi.t4a_gpu_backend_v1._fields_ if n in abi.SLOT_DOCS]
        self.assertEqual(slots[0], "last_error")
        self.assertIn("raw_end", slots)  # v1.0's last; later minors append after it
        self.assertEqual(slots.index("raw_end"), 48)
        self.assertEqual(abi.size_through(abi.t4a_gpu_backend_v1, "raw_end"),
                         abi.T4A_GPU_BACKEND_V1_0_SIZE)
        launch = dict(abi.t4a_gpu_backend_v1._fields_)["launch"]
        self.assertIs(launch._restype_, ctypes.c_int)
        self.assertEqual(launch._argtypes_, (abi.t4a_runtime, abi.t4a_function,
                                             ctypes.POINTER(abi.t4a_launch_config),
                                             ctypes.POINTER(ctypes.c_void_p)))


class Statuses(unittest.TestCase):
    def test_classes_names_and_messages_match_the_loader(self):
        lib = t4a_gpu.load_library()
        for name, value, message in abi.STATUSES:
            self.assertEqual(lib.t4a_gpu_status_name(value).decode(), name)
            self.assertEqual(lib.t4a_gpu_status_message(value).decode(), message)
            self.assertEqual(t4a_gpu.status_name(value), name)
            if value == abi.T4A_OK:
                continue
            cls = getattr(errors, name[len("T4A_"):])
            self.assertIs(errors.error_class(value), cls)
            self.assertTrue(issubclass(cls, t4a_gpu.T4AError))
            e = cls(value, "call", "detail", 7, "NATIVE")
            self.assertEqual((e.status, e.name, e.call, e.native_code), (value, name, "call", 7))
            self.assertIn("detail", str(e))
            self.assertIn("NATIVE = 7", str(e))
        self.assertIs(errors.error_class(-12345), t4a_gpu.T4AError)
        self.assertEqual(t4a_gpu.status_name(-12345), "T4A_UNKNOWN")
        self.assertEqual(len(abi.STATUSES), 25)


class Loader(unittest.TestCase):
    def test_versions_and_search(self):
        self.assertEqual(t4a_gpu.loader_abi(),
                         (abi.T4A_GPU_BACKEND_ABI_MAJOR, abi.T4A_GPU_BACKEND_ABI_MINOR))
        self.assertEqual(t4a_gpu.loader_version(), (0, 1, 0))
        names = [e.name for e in t4a_gpu.list_backends()]
        self.assertIn("cuda", names)
        if os.environ.get("T4A_GPU_BACKEND_PATH"):
            self.assertEqual(t4a_gpu.search_path(), os.environ["T4A_GPU_BACKEND_PATH"])
        self.assertTrue(t4a_gpu.plugin_dir())

    def test_open_errors(self):
        with self.assertRaises(errors.ENOBACKEND) as cm:
            t4a_gpu.Backend("no_such_backend")
        self.assertIn("libt4a_no_such_backend.so", cm.exception.message)
        with self.assertRaises(errors.EINVAL):
            t4a_gpu.Backend("Bad-Name")
        with self.assertRaises(errors.ENOBACKEND):
            t4a_gpu.Backend(path="/nonexistent/libt4a_x.so")
        with self.assertRaises(errors.ENOBACKEND):
            t4a_gpu.load_library("/nonexistent/libt4a_gpu.so.0")

    def test_explicit_library_and_path(self):
        lib = t4a_gpu.load_library()
        same = t4a_gpu.load_library(t4a_gpu.library_path(lib))
        self.assertIs(same, lib)
        with t4a_gpu.Backend() as a:
            with t4a_gpu.Backend(path=a.path, library=t4a_gpu.library_path(lib)) as b:
                self.assertEqual(a.path, b.path)  # the same plugin, reference counted
                self.assertEqual(b.abi, (1, abi.T4A_GPU_BACKEND_ABI_MINOR))


class BackendTests(unittest.TestCase):
    def test_info_devices_compiler(self):
        with t4a_gpu.Backend() as b:
            info = b.info()
            self.assertEqual(info.name, "cuda")
            self.assertEqual(info.abi, (1, abi.T4A_GPU_BACKEND_ABI_MINOR))
            self.assertGreaterEqual(info.device_count, 1)
            devices = b.devices()
            self.assertEqual(len(devices), b.device_count())
            self.assertEqual([d.ordinal for d in devices], list(range(len(devices))))
            if FAKE:
                self.assertEqual([d.name for d in devices], ["Fake GPU 0", "Fake GPU 1"])
                self.assertEqual(devices[0].cc, (9, 0))
            for d in devices:
                self.assertGreater(d.total_memory, 0)
                self.assertEqual(d.warp_size, 32)
            c = b.compiler_info()
            self.assertTrue(c.available, c.reason)
            with self.assertRaises(errors.EINVAL):
                b.device(len(devices))
            self.assertTrue(b.has("launch"))
            self.assertIn("cuda", repr(b))

    def test_generic_call_and_closed_backend(self):
        b = t4a_gpu.Backend()
        n = ctypes.c_int32()
        self.assertEqual(b.call("device_count", ctypes.byref(n)), abi.T4A_OK)
        self.assertEqual(n.value, b.device_count())
        with self.assertRaises(AttributeError):
            b.call("no_such_slot")
        b.close()
        b.close()  # idempotent
        self.assertTrue(b.closed)
        with self.assertRaises(errors.EHANDLE):
            b.device_count()

    def test_init_false_then_error_detail(self):
        with t4a_gpu.Backend(init=False) as b:
            self.assertEqual(b.info().name, "cuda")
            b.init()
            with self.assertRaises(errors.EINVAL) as cm:
                b.runtime(10_000)
            self.assertTrue(cm.exception.message)  # the backend's detail
            self.assertEqual(cm.exception.call, "runtime_create")


class Fixture(unittest.TestCase):
    def setUp(self):
        self.backend = t4a_gpu.Backend()
        self.rt = self.backend.runtime(0)

    def tearDown(self):
        self.backend.close()


@unittest.skipUnless(hasattr(os, "fork"), "os.fork is not available here")
class Fork(Fixture):
    """ABI 1.2: a child forked after the backend was set up gets errors.EFORKED."""

    def test_a_forked_child_gets_eforked_and_the_parent_goes_on(self):
        data = pattern(4096, seed=3)
        buf = self.rt.alloc(len(data))
        buf.write(data)
        witness = self.rt.seal()
        witness.wait()
        import warnings
        with warnings.catch_warnings():  # "multi-threaded, use of fork()": that is the point
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: no unittest machinery, only an exit status
            code = 3
            try:
                buf.read()
            except errors.EFORKED as e:
                code = 0 if "fork()" in str(e) and e.call == "copy_d2h" else 2
            except BaseException:
                code = 4
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertTrue(os.WIFEXITED(status), "the child was killed")
        self.assertEqual(os.WEXITSTATUS(status), 0, "the child did not get EFORKED from copy_d2h")
        self.assertEqual(buf.read(), data)  # the parent is unaffected
        witness.wait()


class Memory(Fixture):
    def test_round_trips_of_every_buffer_kind(self):
        data = pattern(4096)
        buf = self.rt.alloc(len(data))
        self.assertEqual(buf.size(), 4096)
        for src in (data, bytearray(data), memoryview(data), array.array("B", data),
                    memoryview(bytearray(data)).cast("I")):
            buf.write(bytes(4096))
            buf.write(src)
            self.assertEqual(buf.read(), data)
        out = bytearray(4096)
        self.assertIs(buf.read_into(out), out)
        self.assertEqual(out, data)
        doubles = array.array("d", [1.5, -2.25, 1e300, float("inf")])
        d = self.rt.alloc(32)
        d.write(doubles)
        back = array.array("d", bytes(32))
        d.read_into(back)
        self.assertEqual(back.tobytes(), doubles.tobytes())

    def test_offsets_and_partial_reads(self):
        buf = self.rt.alloc(64)
        buf.write(bytes(64))
        buf.write(b"\xff" * 8, offset=10)
        got = buf.read()
        self.assertEqual(got, bytes(10) + b"\xff" * 8 + bytes(46))
        self.assertEqual(buf.read(4, offset=12), b"\xff" * 4)
        window = bytearray(16)
        buf.read_into(memoryview(window)[4:12], offset=8)
        self.assertEqual(window, bytes(6) + b"\xff" * 6 + bytes(4))
        self.assertEqual(buf.read(0, offset=64), b"")
        buf.write(b"", offset=64)

    def test_refusals(self):
        buf = self.rt.alloc(16)
        with self.assertRaises(errors.ERANGE) as cm:
            buf.read(8, offset=12)
        self.assertEqual(cm.exception.status, abi.T4A_ERANGE)
        self.assertIn("exceeds", cm.exception.message)
        with self.assertRaises(errors.ERANGE):
            buf.write(b"x" * 17)
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            buf.write(memoryview(bytes(32))[::2])
        with self.assertRaisesRegex(TypeError, "writable"):
            buf.read_into(bytes(16))
        with self.assertRaisesRegex(TypeError, "encode"):
            buf.write("text")
        with self.assertRaisesRegex(TypeError, "buffer protocol"):
            buf.write(12)

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_numpy_zero_copy(self):
        a = numpy.arange(1024, dtype=numpy.float32) * 0.5
        buf = self.rt.alloc(a.nbytes)
        buf.write(a)
        out = numpy.empty_like(a)
        buf.read_into(out)
        self.assertTrue(numpy.array_equal(out, a))
        buf.write(a[::-1].copy())
        view = out[::2]  # not contiguous: refused, not silently copied
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            buf.read_into(view)
        ro = a.copy()
        ro.flags.writeable = False
        buf.write(ro)  # a read-only source is fine
        with self.assertRaisesRegex(TypeError, "writable"):
            buf.read_into(ro)
        m = numpy.arange(12, dtype=numpy.int64).reshape(3, 4)
        b2 = self.rt.alloc(m.nbytes)
        b2.write(m)
        self.assertEqual(b2.read(), m.tobytes())

    def test_device_and_cross_runtime_copies(self):
        data = pattern(1000, 3)
        a, b = self.rt.alloc(1000), self.rt.alloc(1000)
        a.write(data)
        b.write(bytes(1000))
        b.copy_from(a, offset=100, src_offset=0, nbytes=500)
        self.assertEqual(b.read(), bytes(100) + data[:500] + bytes(400))
        with self.backend.runtime(0) as other:
            c = other.alloc(1000)
            c.copy_from(a)  # copy_from_runtime, ordered GPU-side
            self.assertEqual(c.read(), data)
            c.copy_from(b, via_host=True)
            self.assertEqual(c.read(), b.read())
        self.assertEqual(self.rt.counters()["copies_d2d"], 1)

    def test_peer_copy(self):
        if self.backend.device_count() < 2:
            self.skipTest("one device")
        if not self.backend.peer_access_supported(1, 0):
            self.skipTest("no peer access between devices 0 and 1")
        data = pattern(3000, 9)
        with self.backend.runtime(1) as r1:
            src = self.rt.alloc(3000)
            src.write(data)
            dst = r1.alloc(3000)
            dst.copy_from(src)
            self.assertEqual(dst.read(), data)
            self.assertEqual(r1.counters()["copies_peer"], 1)

    def test_pinned_copies_and_views(self):
        n = 1 << 16
        data = pattern(n, 5)
        hb = self.rt.host_alloc(n)
        view = hb.view()
        self.assertEqual((view.format, view.nbytes, view.readonly), ("B", n, False))
        view[:] = data
        buf = self.rt.alloc(n)
        buf.copy_from(hb)
        back = self.rt.host_alloc(n)
        back.copy_from(buf)
        with self.rt.seal() as w:
            w.wait()
            self.assertTrue(w.query())
        self.assertEqual(bytes(back.view()), data)
        c = self.rt.counters()
        self.assertEqual((c["copies_h2d_pinned"], c["copies_d2h_pinned"]), (1, 1))
        with self.assertRaises(BufferError):
            hb.close()  # `view` still exports the memory
        with self.assertRaises(BufferError):
            self.backend.close()
        view.release()
        hb.close()
        with self.assertRaises(errors.EHANDLE):
            hb.view()

    def test_views_keep_the_host_buffer_alive(self):
        view = self.rt.host_alloc(64).view()  # the HostBuffer itself is dropped at once
        gc.collect()
        view[:3] = b"abc"
        self.assertEqual(bytes(view[:3]), b"abc")
        self.assertEqual(self.rt.counters()["live_host_buffers"], 1)
        view.release()
        del view
        gc.collect()
        self.assertEqual(self.rt.counters()["live_host_buffers"], 0)

    def test_cache_stats_and_trim(self):
        b = self.rt.alloc(1 << 20)
        b.close()
        self.rt.synchronize()
        stats = self.rt.cache_stats()
        self.assertIn("entries", stats)
        self.rt.cache_trim(0)
        self.assertEqual(self.rt.cache_stats()["bytes"], 0)


class Lifetime(Fixture):
    def live(self):
        return self.rt.counters()["live_buffers"]

    def test_explicit_close_is_exactly_once(self):
        b = self.rt.alloc(64)
        self.assertEqual(self.live(), 1)
        b.close()
        b.close()
        self.assertEqual(self.live(), 0)
        with self.assertRaises(errors.EHANDLE):
            b.read()
        self.assertTrue(b.closed)
        del b
        gc.collect()  # the safety net of a closed buffer calls nothing
        self.assertEqual(self.live(), 0)

    def test_finalizer_frees_a_dropped_buffer(self):
        for _ in range(5):
            self.rt.alloc(128)  # dropped at once
        self.assertEqual(self.live(), 0)  # each freed as its last reference went
        kept = self.rt.alloc(128)
        gc.collect()
        self.assertEqual(self.live(), 1)  # a live object is never released early
        self.assertFalse(kept.closed)
        del kept
        self.assertEqual(self.live(), 0)  # its last reference went: freed

    def test_runtime_close_invalidates_children_without_calls(self):
        buf = self.rt.alloc(64)
        hb = self.rt.host_alloc(64)
        art = self.rt.compile(SOURCE)
        mod = self.rt.load(art)
        fn = mod.function("t4a_fill_u32")
        w = self.rt.seal()
        self.rt.close()
        self.rt.close()
        for obj, call in ((buf, buf.read), (hb, hb.view), (fn, fn.attributes),
                          (mod, lambda m=mod: m.function("t4a_fill_u32"))):
            with self.assertRaises(errors.EHANDLE, msg=type(obj).__name__):
                call()
        w.wait()  # witnesses outlive their runtime
        self.assertTrue(w.query())
        buf.close()  # no call: its handle died with the runtime
        del buf, hb, mod, fn
        gc.collect()
        self.assertEqual(art.kind in (abi.T4A_ARTIFACT_CUBIN, abi.T4A_ARTIFACT_PTX), True)
        art.close()
        w.close()

    def test_backend_close_closes_everything(self):
        b = t4a_gpu.Backend()
        rt = b.runtime(0)
        buf = rt.alloc(16)
        w = rt.seal()
        art = b.compile(SOURCE)
        b.close()
        for obj in (rt, buf, w, art):
            self.assertFalse(obj._node.alive, type(obj).__name__)
        with self.assertRaises(errors.EHANDLE):
            w.query()
        with self.assertRaises(errors.EHANDLE):
            rt.alloc(1)

    def test_threads_share_a_runtime(self):
        failures = []

        def worker(seed):
            try:
                data = pattern(10000, seed)
                buf = self.rt.alloc(len(data))
                for _ in range(20):
                    buf.write(data)
                    if buf.read() != data:
                        failures.append("seed %d: data differs" % seed)
                    with self.assertRaises(errors.ERANGE):
                        buf.read(1, offset=len(data))
                buf.close()
            except Exception as e:  # noqa: BLE001 -- reported below
                failures.append(repr(e))

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(1, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        self.assertEqual(self.live(), 0)


class Code(Fixture):
    def module(self):
        art = self.rt.compile(SOURCE, name="t4a_test.cu")
        try:
            return self.rt.load(art)
        finally:
            art.close()

    def axpy_inputs(self, n):
        # Exactly representable products and sums: bit-exact with or without FMA.
        x = array.array("f", [(i % 1024) / 8.0 for i in range(n)])
        y = array.array("f", [float(i % 77) for i in range(n)])
        return x, y, array.array("f", [2.5 * a + b for a, b in zip(x, y)])

    def test_axpy_with_signature_and_with_typed_values(self):
        n = 100003
        x, y, want = self.axpy_inputs(n)
        mod = self.module()
        dx, dy = self.rt.alloc(4 * n), self.rt.alloc(4 * n)
        dx.write(x)
        dy.write(y)
        axpy = mod.function("t4a_axpy_f32", signature="u64 f32 ptr ptr")
        axpy.launch(256, 256, n, 2.5, dx, dy)
        self.rt.synchronize()
        got = array.array("f", bytes(4 * n))
        dy.read_into(got)
        self.assertEqual(got.tobytes(), want.tobytes())
        plain = mod.function("t4a_axpy_f32")
        dy.write(y)
        self.rt.launch(plain, (128, 1), (256,), t4a_gpu.u64(n), t4a_gpu.f32(2.5), dx, dy)
        dy.read_into(got)
        self.assertEqual(got.tobytes(), want.tobytes())
        self.assertEqual(self.rt.counters()["launches"], 2)

    def test_fill_u32_and_argument_errors(self):
        mod = self.module()
        fill = mod.function("t4a_fill_u32", "ptr, uint32_t, uint64_t")
        buf = self.rt.alloc(4 * 1000)
        fill(8, 128, buf, 0xDEADBEEF, 1000)
        self.assertEqual(buf.read(), (0xDEADBEEF).to_bytes(4, "little") * 1000)
        with self.assertRaises(OverflowError):
            fill(1, 1, buf, 1 << 32, 1000)
        with self.assertRaises(TypeError):
            fill(1, 1, buf, 1.5, 1000)
        with self.assertRaises(TypeError):
            fill(1, 1, buf, 1)  # one argument missing
        untyped = mod.function("t4a_fill_u32")
        with self.assertRaisesRegex(TypeError, "has no C type"):
            untyped(1, 1, buf, 7, 1000)
        with self.assertRaises(errors.EINVAL) as cm:
            fill((1, 1, 1), 0, buf, 1, 1000)  # an empty block: checked by the backend
        self.assertIn("block", cm.exception.message)
        with self.assertRaises(ValueError):
            fill((1, 1, 1, 1), 1, buf, 1, 1000)
        with self.assertRaises(ValueError):
            parse = t4a_gpu.parse_signature
            parse("u64 quux")
        with self.backend.runtime(0) as other:
            foreign = other.alloc(4)
            with self.assertRaisesRegex(ValueError, "another runtime"):
                fill(1, 1, foreign, 1, 1)

    def test_lookup_compile_errors_and_artifacts(self):
        mod = self.module()
        with self.assertRaises(errors.ENOTFOUND) as cm:
            mod.function("no_such_kernel")
        self.assertIn("no_such_kernel", cm.exception.message)
        with self.assertRaises(errors.ECOMPILE) as cm:
            self.rt.compile('#error "deliberate"\n__global__ void k() {}\n')
        self.assertIn("deliberate", cm.exception.log)
        ptx = self.rt.compile(SOURCE, ptx=True)
        self.assertEqual(ptx.kind, abi.T4A_ARTIFACT_PTX)
        text = ptx.data
        self.assertIn(b".entry t4a_fill_u32", text)
        ptx.close()
        again = self.backend.artifact_from_bytes(text, abi.T4A_ARTIFACT_PTX, name="again.ptx")
        fill = self.rt.load(again).function("t4a_fill_u32", "ptr u32 u64")
        again.close()  # the module keeps the code loaded
        buf = self.rt.alloc(40)
        fill(1, 32, buf, 7, 10)
        self.assertEqual(buf.read(), (7).to_bytes(4, "little") * 10)
        attrs = fill.attributes()
        self.assertGreater(attrs["max_threads_per_block"], 0)
        self.assertNotEqual(fill.raw(), 0)

    def test_witnesses_across_runtimes_and_raw(self):
        mod = self.module()
        fill = mod.function("t4a_fill_u32", "ptr u32 u64")
        buf = self.rt.alloc(4096)
        fill(4, 256, buf, 0x01020304, 1024)
        w = self.rt.seal()
        extra = w.retain()
        w.close()
        with self.backend.runtime(0) as other:
            other.wait_for(extra)
            copy = other.alloc(4096)
            copy.copy_from(buf)
            self.assertEqual(copy.read(), bytes([4, 3, 2, 1]) * 1024)
        extra.wait(timeout=60)
        extra.close()
        raw = self.rt.raw()
        self.assertEqual(raw.device_ordinal, 0)
        self.assertTrue(raw.context and raw.stream)


if __name__ == "__main__":
    unittest.main()
