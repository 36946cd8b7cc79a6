"""Tests of the ABI 1.1 capabilities through the idiomatic API, the struct
kernel arguments, the fast call path and the package's namespace (unittest,
standard library only; numpy where a strided array is the point).

Run by tests/consumers/test_python.sh on the fake driver (make check) and on
the real driver (make check-gpu); results are checked bit for bit against
references computed here. The kernels are CUDA C compiled at run time: the
fake NVRTC finds their names and the fake driver runs its own versions
(tests/fakecuda/fake_kernels.c: t4a_fill_u32, t4a_pair, t4a_empty).
"""
import ctypes
import gc
import os
import pydoc
import struct
import threading
import unittest

import t4a_gpu
from t4a_gpu import abi, errors

try:
    import numpy
except ImportError:  # optional: the strided tests skip without it
    numpy = None

FAKE = os.environ.get("T4A_TEST_DRIVER", "fake") == "fake"

SOURCE = r"""
struct Pair { double x; unsigned n; };
extern "C" __global__ void t4a_pair(Pair p, unsigned *out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long bits = (unsigned long long)__double_as_longlong(p.x);
    out[0] = (unsigned)(p.x * p.n);
    out[1] = p.n;
    out[2] = (unsigned)bits;
    out[3] = (unsigned)(bits >> 32);
  }
}
extern "C" __global__ void t4a_fill_u32(unsigned int *p, unsigned int value,
                                        unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = value;
}
extern "C" __global__ void t4a_empty(unsigned long long unused) {}
"""


class Pair(ctypes.Structure):
    _fields_ = [("x", ctypes.c_double), ("n", ctypes.c_uint32)]


def words(data):
    return list(struct.unpack("<%dI" % (len(data) // 4), data))


def pair_expected(x, n):
    lo, hi = struct.unpack("<II", struct.pack("<d", x))
    return [int(x * n), n, lo, hi]  # x >= 0: (unsigned) of a negative double is undefined


class Fixture(unittest.TestCase):
    timing = False

    def setUp(self):
        self.backend = t4a_gpu.Backend()
        self.rt = self.backend.runtime(0, timing=self.timing)
        art = self.rt.compile(SOURCE, name="t4a_v11.cu")
        self.mod = self.rt.load(art)
        art.close()
        self.fill = self.mod.function("t4a_fill_u32", "ptr u32 u64")

    def tearDown(self):
        self.backend.close()


class Namespace(unittest.TestCase):
    def test_top_level_is_the_api(self):
        names = set(dir(t4a_gpu))
        for name in ("Backend", "Runtime", "Buffer", "Graph", "is_available", "errors", "abi",
                     "u64", "f32", "ptr", "ByValue", "MemoryInfo", "T4AError", "Unavailable"):
            self.assertIn(name, names)
        self.assertFalse([n for n in names if n.startswith("t4a_") or n.startswith("T4A_")],
                         "the generated layer stays under t4a_gpu.abi")
        # ... and is still reachable from the top level, as before
        self.assertIs(t4a_gpu.T4A_EINVAL, abi.T4A_EINVAL)
        self.assertIs(t4a_gpu.t4a_launch_config, abi.t4a_launch_config)
        with self.assertRaises(AttributeError):
            t4a_gpu.no_such_name  # noqa: B018
        text = pydoc.render_doc(t4a_gpu, renderer=pydoc.plaintext)
        self.assertIn("class Runtime", text)
        self.assertNotIn("class t4a_launch_config", text)
        self.assertLess(len(text.splitlines()), 3000)

    def test_every_public_method_has_a_docstring(self):
        missing = []
        for name in t4a_gpu.__all__:
            obj = getattr(t4a_gpu, name)
            if not isinstance(obj, type) and not callable(obj):
                continue
            if not (obj.__doc__ or "").strip():
                missing.append(name)
            if isinstance(obj, type) and obj.__module__.startswith("t4a_gpu"):
                for attr, value in vars(obj).items():
                    if attr.startswith("_") or not (callable(value) or
                                                    isinstance(value, property)):
                        continue
                    if isinstance(value, type) and not value.__module__.startswith("t4a_gpu"):
                        continue  # a ctypes type the class names (u64.ctype)
                    if not (getattr(value, "__doc__", None) or "").strip():
                        missing.append("%s.%s" % (name, attr))
        self.assertEqual(missing, [])

    def test_typed_marker_ships(self):
        here = os.path.dirname(t4a_gpu.__file__)
        self.assertTrue(os.path.exists(os.path.join(here, "py.typed")))

    def test_unavailable_statuses_share_a_base(self):
        for name in ("ENODRIVER", "ESTUBDRIVER", "ENODEVICE", "EDRIVEROLD", "EDRIVERMISMATCH"):
            self.assertTrue(issubclass(getattr(errors, name), errors.Unavailable), name)
        for name in ("EINVAL", "ENOBACKEND", "EDEVICEFAULT"):
            self.assertFalse(issubclass(getattr(errors, name), errors.Unavailable), name)
        self.assertTrue(issubclass(errors.Unavailable, t4a_gpu.T4AError))

    def test_is_available(self):
        self.assertTrue(t4a_gpu.is_available())
        self.assertTrue(t4a_gpu.is_available("cuda"))
        self.assertFalse(t4a_gpu.is_available("no_such_backend"))
        with t4a_gpu.Backend() as b:
            self.assertTrue(b.is_available())
            self.assertTrue(t4a_gpu.is_available(b.path))


class FastCalls(Fixture):
    def test_calls_are_checked_against_the_prototypes_in_this_suite(self):
        # tests/consumers/test_python.sh sets T4A_PY_CHECK_CALLS=1: every fast call is
        # checked against the generated prototype (an int where a pointer or a uint64 goes
        # would be cut to a C int by ctypes).
        if os.environ.get("T4A_PY_CHECK_CALLS") != "1":
            self.skipTest("T4A_PY_CHECK_CALLS is not set")
        with self.assertRaisesRegex(AssertionError, "prototype"):
            self.backend._fast["buffer_size"](self.rt.handle, 0, None)

    def test_launch_configs_and_plans_are_reused_and_checked(self):
        buf = self.rt.alloc(4 * 64)
        for v in (1, 2, 3):
            self.fill.launch(2, 32, buf, v, 64)
            self.assertEqual(words(buf.read()), [v] * 64)
        self.assertEqual(len(self.fill._cfg), 1)
        self.assertEqual(len(self.fill._plan.pool), 1)
        self.fill.launch([1], [32, 1], buf, 4, 64)  # lists: not cached, the same launch
        self.assertEqual(words(buf.read()), [4] * 64)
        with self.assertRaises(OverflowError):
            self.fill.launch(1 << 32, 32, buf, 1, 1)  # ctypes would have kept 0
        with self.assertRaises(OverflowError):
            self.fill.launch(1, 32, buf, -1, 64)
        with self.assertRaises(TypeError):
            self.fill.launch(1, 32, buf, True, 64)
        with self.assertRaises(TypeError):
            self.fill.launch(1, 32, 1.5, 1, 64)
        with self.assertRaises(TypeError):
            self.fill.launch(1, 32, buf, 1)
        buf.close()
        with self.assertRaises(errors.EHANDLE):  # a closed buffer's cached address is not used
            self.fill.launch(1, 32, buf, 1, 64)
        self.assertEqual(self.rt.counters()["launches"], 4)

    def test_threads_launch_one_function(self):
        bufs = [self.rt.alloc(4 * 256) for _ in range(4)]
        failures = []

        def worker(i):
            try:
                for v in range(50):
                    self.fill.launch(1, 64, bufs[i], i * 1000 + v, 256)
            except Exception as e:  # noqa: BLE001 -- reported below
                failures.append(repr(e))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        for i, b in enumerate(bufs):
            self.assertEqual(words(b.read()), [i * 1000 + 49] * 256)


class StructArguments(Fixture):
    def run_pair(self, fn, value):
        out = self.rt.alloc(16)
        out.fill(0xFFFFFFFF, "uint32")
        fn.launch(1, 32, value, out)
        return words(out.read())

    def test_a_ctypes_structure_passes_by_value(self):
        fn = self.mod.function("t4a_pair")
        self.assertEqual(self.run_pair(fn, Pair(10.5, 7)), pair_expected(10.5, 7))
        typed = self.mod.function("t4a_pair", (Pair, "ptr"))
        self.assertEqual(self.run_pair(typed, Pair(2.25, 3)), pair_expected(2.25, 3))
        with self.assertRaisesRegex(TypeError, "signature says Pair"):
            typed.launch(1, 1, Pair2(1, 2), self.rt.alloc(16))

    def test_bytes_of_the_parameters_size(self):
        fn = self.mod.function("t4a_pair", "bytes16 ptr")
        self.assertEqual(self.run_pair(fn, bytes(Pair(3.0, 5))), pair_expected(3.0, 5))
        with self.assertRaisesRegex(ValueError, "12 bytes, but the parameter is 16"):
            fn.launch(1, 1, b"x" * 12, self.rt.alloc(16))
        untyped = self.mod.function("t4a_pair")
        self.assertEqual(self.run_pair(untyped, bytes(Pair(0.5, 9))), pair_expected(0.5, 9))

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_a_numpy_structured_scalar(self):
        dt = numpy.dtype([("x", "f8"), ("n", "u4")], align=True)
        self.assertEqual(dt.itemsize, 16)
        value = numpy.array([(6.25, 4)], dtype=dt)[0]
        fn = self.mod.function("t4a_pair")
        self.assertEqual(self.run_pair(fn, value), pair_expected(6.25, 4))
        typed = self.mod.function("t4a_pair", [dt, t4a_gpu.ptr])
        self.assertEqual(self.run_pair(typed, value), pair_expected(6.25, 4))


class Pair2(ctypes.Structure):
    _fields_ = [("a", ctypes.c_double), ("b", ctypes.c_uint32)]


class Fills(Fixture):
    def test_fill_every_dtype_bit_exact(self):
        buf = self.rt.alloc(64)
        cases = [("uint8", 0xAB, "<B"), ("int8", -3, "<b"), ("uint16", 0xBEEF, "<H"),
                 ("int16", -2, "<h"), ("float16", 1.5, "<e"), ("uint32", 0xDEADBEEF, "<I"),
                 ("int32", -7, "<i"), ("float32", -0.1, "<f"), ("float64", 0.0, "<d"),
                 ("int64", -1, "<q")]
        for dtype, value, fmt in cases:
            buf.fill(0, "uint8")
            buf.fill(value, dtype)
            want = struct.pack(fmt, value) * (64 // struct.calcsize(fmt))
            self.assertEqual(buf.read(), want, dtype)
        if numpy is not None:
            buf.fill(2.5, numpy.float32)
            self.assertEqual(buf.read(), struct.pack("<f", 2.5) * 16)

    def test_ranges_counts_and_refusals(self):
        buf = self.rt.alloc(32)
        buf.fill(0, "uint8")
        buf.fill(7, "uint16", offset=2, count=3)
        self.assertEqual(buf.read(), bytes(2) + b"\x07\x00" * 3 + bytes(24))
        buf.memset(0x11, 1, offset=30)
        self.assertEqual(buf.read()[28:], b"\x00\x00\x11\x11")
        with self.assertRaises(errors.ERANGE):
            buf.fill(1, "uint32", offset=16, count=5)
        with self.assertRaises(errors.EINVAL):  # an offset that is no multiple of 4
            buf.fill(1, "uint32", offset=2, count=1)
        with self.assertRaises(ValueError):
            buf.fill(1, "uint32", offset=2)  # 30 bytes are no whole number of words
        with self.assertRaises(ValueError):
            buf.fill(1.5, "float64")  # two different halves: not a 4-byte memset
        with self.assertRaises(OverflowError):
            buf.fill(256, "uint8")
        with self.assertRaises(ValueError):
            buf.fill(1, "complex64")
        with self.assertRaises(ValueError):
            buf.memset(0x100, 1)
        buf.close()
        with self.assertRaises(errors.EHANDLE):
            buf.fill(0)


class Copies2D(Fixture):
    def test_device_rows_with_pitches(self):
        width, rows, pitch = 12, 5, 40
        src = bytes(range(width * rows))
        dev = self.rt.alloc(pitch * rows)
        dev.fill(0xEE, "uint8")
        dev.write_2d(memoryview(bytearray(src)).cast("B", (rows, width)), pitch=pitch)
        got = dev.read()
        for r in range(rows):
            self.assertEqual(got[r * pitch:r * pitch + width], src[r * width:(r + 1) * width])
            self.assertEqual(got[r * pitch + width:(r + 1) * pitch], b"\xee" * (pitch - width))
        back = bytearray(width * rows)
        dev.read_2d_into(memoryview(back).cast("B", (rows, width)), pitch=pitch)
        self.assertEqual(bytes(back), src)
        packed = self.rt.alloc(width * rows)
        packed.copy_2d_from(dev, width, rows, src_pitch=pitch)  # d2d, pitched -> packed
        self.assertEqual(packed.read(), src)
        hb = self.rt.host_alloc(pitch * rows)
        hb.copy_2d_from(packed, width, rows, pitch=pitch)  # d2h pinned
        self.rt.synchronize()
        view = hb.view()
        self.assertEqual(bytes(view[2 * pitch:2 * pitch + width]), src[2 * width:3 * width])
        view.release()
        with self.assertRaises(errors.ERANGE):
            dev.write_2d(src, pitch=pitch, offset=pitch * rows)
        with self.assertRaises(errors.EINVAL):  # a pitch below the width
            packed.copy_2d_from(dev, width, rows, src_pitch=width - 1)

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_numpy_strided_arrays(self):
        a = numpy.arange(6 * 8, dtype=numpy.float32).reshape(6, 8)
        part = a[1:5, 2:7]  # rows contiguous, 32-byte host pitch
        dev = self.rt.alloc(4 * 5 * 4)
        dev.write_2d(part)  # packed on the device
        self.assertEqual(dev.read(), numpy.ascontiguousarray(part).tobytes())
        out = numpy.full((6, 8), -1, dtype=numpy.float32)
        dev.read_2d_into(out[0:4, 3:8])
        want = numpy.full((6, 8), -1, dtype=numpy.float32)
        want[0:4, 3:8] = part
        self.assertTrue(numpy.array_equal(out, want))
        with self.assertRaisesRegex(ValueError, "rows are contiguous"):
            dev.write_2d(a[:, ::2])
        with self.assertRaisesRegex(TypeError, "writable"):
            ro = out.copy()
            ro.flags.writeable = False
            dev.read_2d_into(ro[:4, :5])


class MemoryAndRegister(Fixture):
    def test_memory_info(self):
        before = self.rt.memory_info()
        self.assertGreater(before.device_total, 0)
        self.assertLessEqual(before.device_free, before.device_total)
        self.assertGreater(before.staging_bytes, 0)
        buf = self.rt.alloc(1 << 20)
        after = self.rt.memory_info()
        self.assertGreaterEqual(after.pool_used, before.pool_used + (1 << 20))
        self.assertGreaterEqual(after.pool_high_water, after.pool_used)
        buf.close()

    def test_register_as_a_context_manager(self):
        host = bytearray(4096)
        dev = self.rt.alloc(4096)
        self.fill.launch(4, 256, dev, 0x0A0B0C0D, 1024)
        with self.rt.register(host) as hb:
            self.assertEqual((hb.nbytes, hb.read_only), (4096, False))
            with self.assertRaises(BufferError):
                host.extend(b"x")  # exported while registered: cannot move
            hb.copy_from(dev)  # d2h pinned into the caller's memory
            self.rt.synchronize()
        self.assertEqual(bytes(host), bytes([0x0D, 0x0C, 0x0B, 0x0A]) * 1024)
        self.assertTrue(hb.closed)
        with self.assertRaises(errors.EHANDLE):
            hb.copy_from(dev)
        self.rt.synchronize()  # the unregistered memory's export goes once its work is done
        host.extend(b"x")
        src = bytes(range(256)) * 16
        with self.rt.register(src) as ro:  # bytes: read-only, the device only reads it
            self.assertTrue(ro.read_only)
            dev.copy_from(ro)
            self.assertEqual(dev.read(), src)
            with self.assertRaises(errors.EINVAL):
                ro.copy_from(dev)
        with self.assertRaises(TypeError):
            self.rt.register(src, read_only=False)


class Timing(Fixture):
    timing = True

    def test_elapsed_between_witnesses(self):
        self.assertTrue(self.rt.info().timing)
        buf = self.rt.alloc(4 * 4096)
        start = self.rt.seal()
        self.fill.launch(16, 256, buf, 1, 4096)
        end = self.rt.seal()
        ns = start.elapsed_ns(end)
        self.assertGreaterEqual(ns, 0)
        self.assertAlmostEqual(start.elapsed(end), ns * 1e-9)
        with self.assertRaises(errors.EINVAL):
            end.elapsed_ns(start)  # a negative span
        start.close()
        end.close()

    def test_without_timing_it_is_unsupported(self):
        with self.backend.runtime(0) as plain:
            self.assertFalse(plain.info().timing)
            a, b = plain.seal(), plain.seal()
            with self.assertRaises(errors.EUNSUPPORTED):
                a.elapsed(b)


class Execution(Fixture):
    def test_runtime_info_and_priorities(self):
        info = self.rt.info()
        self.assertEqual(info.device_ordinal, 0)
        self.assertFalse(info.capturing)
        self.assertLessEqual(info.priority_greatest, info.priority_least)
        if info.priorities:
            with self.backend.runtime(0, stream_priority=info.priority_greatest) as hi:
                self.assertEqual(hi.info().stream_priority, info.priority_greatest)
        with self.assertRaises(ValueError):
            self.backend.runtime(0, stream_priority=1 << 40)
        with self.assertRaises(TypeError):
            self.backend.runtime(0, no_such_option=1)

    def test_launch_ex_options(self):
        info = self.rt.info()
        buf = self.rt.alloc(4 * 512)
        if info.clusters:
            self.fill.launch(4, 64, buf, 21, 512, cluster=2)
            self.assertEqual(words(buf.read()), [21] * 512)
            self.assertGreater(self.fill.max_active_clusters(4, 64, 2), 0)
            with self.assertRaises(errors.EINVAL):
                self.fill.launch(3, 64, buf, 1, 512, cluster=2)  # 2 does not divide 3
        if info.cooperative:
            self.fill.launch(2, 64, buf, 22, 512, cooperative=True)
            self.assertEqual(words(buf.read()), [22] * 512)
        if info.priorities:
            self.fill.launch(2, 64, buf, 23, 512, priority=info.priority_greatest)
            self.assertEqual(words(buf.read()), [23] * 512)
            with self.assertRaises(errors.ERANGE):
                self.fill.launch(1, 64, buf, 1, 512, priority=info.priority_greatest - 100)

    def test_occupancy(self):
        blocks = self.fill.max_active_blocks(128)
        self.assertGreater(blocks, 0)
        block, grid = self.fill.suggest_block_size()
        self.assertTrue(1 <= block <= self.fill.attributes()["max_threads_per_block"])
        self.assertGreaterEqual(grid, 1)
        with self.assertRaises(errors.EINVAL):
            self.fill.max_active_blocks(0)

    def test_graph_capture_replay_and_new_arguments(self):
        if not self.rt.info().graphs:
            self.skipTest("no graphs here")
        a, b = self.rt.alloc(4 * 256), self.rt.alloc(4 * 256)
        a.fill(0, "uint32")
        b.fill(0, "uint32")
        with self.rt.capture() as g:
            self.assertTrue(self.rt.info().capturing)
            b.fill(9, "uint32")
            self.fill.launch(1, 256, a, 5, 256)
            with self.assertRaises(errors.EBUSY):
                self.rt.alloc(16)  # what changes memory is refused during a capture
        info = g.info()
        self.assertEqual((info.kernels, info.replays), (1, 0))
        self.assertEqual(words(a.read()), [0] * 256)  # captured, not run
        g.launch()
        self.assertEqual(words(a.read()), [5] * 256)
        self.assertEqual(words(b.read()), [9] * 256)
        g.set_args(0, b, 6, 128)
        g.launch()
        self.assertEqual(words(b.read()), [6] * 128 + [9] * 128)
        self.assertEqual(g.info().replays, 2)
        with self.assertRaises(OverflowError):
            g.set_args(0, b, -1, 128)
        with self.assertRaises(errors.ERANGE):
            g.set_args(1, b, 6, 128, function=self.fill)
        g.close()
        with self.assertRaises(errors.EHANDLE):
            g.launch()
        self.assertEqual(self.rt.counters()["live_graphs"], 0)

    def test_a_failed_capture_is_discarded(self):
        if not self.rt.info().graphs:
            self.skipTest("no graphs here")
        with self.assertRaises(RuntimeError):
            with self.rt.capture() as g:
                raise RuntimeError("in the block")
        self.assertFalse(self.rt.info().capturing)
        self.assertTrue(g.closed)
        buf = self.rt.alloc(16)  # the runtime works on
        buf.fill(1, "uint32")
        self.assertEqual(words(buf.read()), [1] * 4)
        gc.collect()
        self.assertEqual(self.rt.counters()["live_graphs"], 0)


if __name__ == "__main__":
    unittest.main()
