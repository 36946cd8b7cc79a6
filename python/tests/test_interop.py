"""Tests of t4a_gpu's interop (DLPack, the CUDA Array Interface, external
memory, a framework's streams), standard library only: run by
tests/consumers/test_python.sh on the fake CUDA driver in `make check` and on
the real driver in the GPU lane. The frameworks themselves (PyTorch, CuPy,
JAX) are exercised by tests/frameworks on a GPU host.
"""
import ctypes
import gc
import os
import threading
import unittest

import t4a_gpu
from ptx_kernels import PTX  # python/tests, on the path under unittest discover
from t4a_gpu import abi, errors

FAKE = os.environ.get("T4A_TEST_DRIVER", "fake") == "fake"

_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi))
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
USED = b"used_dltensor"
# Capsule names outlive the capsules (a capsule keeps the pointer): module constants.
NAMES = {"legacy": b"dltensor", "versioned": b"dltensor_versioned", "used": USED,
         "wrong": b"dltensor_v2", "unnamed": None}


def tensor_of(capsule):
    """The managed tensor a capsule holds, as the generated ctypes struct."""
    if _is_valid(capsule, b"dltensor_versioned"):
        p = _get_pointer(capsule, b"dltensor_versioned")
        return ctypes.cast(p, ctypes.POINTER(abi.t4a_dl_managed_tensor_versioned)).contents
    p = _get_pointer(capsule, b"dltensor")
    return ctypes.cast(p, ctypes.POINTER(abi.t4a_dl_managed_tensor)).contents


def hostile_capsule(data, name="legacy", versioned=False, ndim=1, shape=(16,), strides=None,
                    null_shape=False, device=(abi.T4A_DL_CUDA, 0),
                    dtype=(abi.T4A_DL_UINT, 8, 1), major=abi.T4A_DLPACK_MAJOR, flags=0):
    """A capsule holding a hand-made managed tensor (no deleter, no
    destructor), its fields as given whatever they say, and what must stay
    alive as long as the capsule: (capsule, keep)."""
    m = abi.t4a_dl_managed_tensor_versioned() if versioned else abi.t4a_dl_managed_tensor()
    if versioned:
        m.version.major, m.version.minor, m.flags = major, 0, flags
    t = m.dl_tensor
    t.data = data
    t.device.device_type, t.device.device_id = device
    t.ndim = ndim
    t.dtype.code, t.dtype.bits, t.dtype.lanes = dtype
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    t.shape = None if null_shape else ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    st = None
    if strides is not None:
        st = (ctypes.c_int64 * max(len(strides), 1))(*strides)
        t.strides = ctypes.cast(st, ctypes.POINTER(ctypes.c_int64))
    return _new_capsule(ctypes.addressof(m), NAMES[name], None), (m, dims, st)


class Kernels:
    """The PTX kernels in a runtime, and a gate that holds its stream."""

    def __init__(self, backend, rt):
        self.rt = rt
        self.art = backend.artifact_from_bytes(PTX, abi.T4A_ARTIFACT_PTX, "interop")
        self.mod = rt.load(self.art)
        self.spin = self.mod.function("t4a_spin", "ptr")
        self.fill = self.mod.function("t4a_fill_u32", "ptr u32 u64")

    def close_gate(self):
        self.flag = self.rt.host_alloc(4)
        with self.flag.view() as v:
            v[:] = b"\0\0\0\0"
        self.spin.launch(1, 1, self.flag.address)

    def open_gate(self):
        with self.flag.view() as v:
            v[:] = b"\1\0\0\0"


class Interop(unittest.TestCase):
    def setUp(self):
        self.backend = t4a_gpu.Backend()
        self.rt = self.backend.runtime(0)
        self.other = self.backend.runtime(0)  # a second runtime, as another framework

    def tearDown(self):
        gc.collect()
        self.other.close()  # first: it may hold tensors exported from self.rt's buffers
        self.backend.close()

    # -- exports ----------------------------------------------------------------------

    def test_device_and_cuda_array_interface(self):
        buf = self.rt.alloc(4096)
        self.assertEqual(buf.__dlpack_device__(), (abi.T4A_DL_CUDA, 0))
        cai = buf.__cuda_array_interface__
        self.assertEqual(cai["version"], 3)
        self.assertEqual(cai["shape"], (4096,))
        self.assertEqual(cai["typestr"], "|u1")
        self.assertEqual(cai["data"], (buf.address, False))
        self.assertIsNone(cai["strides"])
        self.assertEqual(cai["stream"], self.rt.raw().stream)
        self.assertNotIn(cai["stream"], (0, None))
        view = buf.as_tensor("float32", (4, 8), strides=(16, 2), offset=64, readonly=True)
        cai = view.__cuda_array_interface__
        self.assertEqual((cai["shape"], cai["typestr"], cai["strides"]),
                         ((4, 8), "<f4", (64, 8)))
        self.assertEqual(cai["data"], (buf.address + 64, True))
        with self.assertRaises(AttributeError):  # no typestr for bfloat16
            buf.as_tensor("bfloat16").__cuda_array_interface__
        with self.assertRaises(ValueError):
            buf.as_tensor("float128")
        self.assertEqual(buf.as_tensor("int64").shape, (512,))

    def test_capsules_legacy_and_versioned(self):
        buf = self.rt.alloc(8192)
        view = buf.as_tensor("float32", (8, 16), offset=256)
        cap = view.__dlpack__(stream=-1)
        self.assertTrue(_is_valid(cap, b"dltensor"))
        t = tensor_of(cap).dl_tensor
        self.assertEqual(t.data, buf.address + 256)
        self.assertEqual(t.byte_offset, 0)
        self.assertEqual((t.device.device_type, t.device.device_id), (abi.T4A_DL_CUDA, 0))
        self.assertEqual(t.ndim, 2)
        self.assertEqual((t.dtype.code, t.dtype.bits, t.dtype.lanes), (abi.T4A_DL_FLOAT, 32, 1))
        self.assertEqual([t.shape[i] for i in range(2)], [8, 16])
        self.assertEqual([t.strides[i] for i in range(2)], [16, 1])
        v = buf.as_tensor("int16", (3, 5), strides=(-5, 1), offset=100, readonly=True)
        cap2 = v.__dlpack__(stream=-1, max_version=(1, 0))
        self.assertTrue(_is_valid(cap2, b"dltensor_versioned"))
        m = tensor_of(cap2)
        self.assertEqual((m.version.major, m.version.minor),
                         (abi.T4A_DLPACK_MAJOR, abi.T4A_DLPACK_MINOR))
        self.assertEqual(m.flags, abi.T4A_DL_FLAG_READ_ONLY)
        self.assertEqual([m.dl_tensor.strides[i] for i in range(2)], [-5, 1])
        # the buffer cannot go while a consumer may hold them
        with self.assertRaises(BufferError):
            buf.close()
        with self.assertRaises(BufferError):
            self.rt.close()
        del cap, cap2, t, m  # unconsumed: their destructors call the deleters
        gc.collect()
        buf.close()

    def test_consumer_owns_the_deleter(self):
        buf = self.rt.alloc(1024)
        cap = buf.__dlpack__(stream=-1)
        tensor = tensor_of(cap)
        _set_name(cap, USED)  # what a consumer does when it takes the tensor
        del cap
        gc.collect()
        with self.assertRaises(BufferError):  # the consumer still has it
            buf.close()
        tensor.deleter(ctypes.pointer(tensor))  # the consumer is done
        buf.close()

    def test_stream_protocol(self):
        buf = self.rt.alloc(4096)
        with self.assertRaises(ValueError):
            buf.__dlpack__(stream=0)
        with self.assertRaises(ValueError):
            buf.__dlpack__(stream="default")
        with self.assertRaises(BufferError):
            buf.__dlpack__(stream=-1, dl_device=(abi.T4A_DL_CUDA, 1))
        with self.assertRaises(BufferError):
            buf.__dlpack__(stream=-1, copy=True)
        buf.__dlpack__(stream=None, dl_device=(abi.T4A_DL_CUDA, 0), copy=False)  # dropped
        # the consumer's stream waits for the producer's work (GPU-side)
        k = Kernels(self.backend, self.rt)
        k.close_gate()
        k.fill.launch(4, 64, buf, 0xabcdef01, 1024)
        consumer = self.other.raw().stream
        cap = buf.as_tensor("uint32").__dlpack__(stream=consumer)
        out = self.other.alloc(4096)
        out.copy_from(self.other.from_dlpack(cap))  # runs on the consumer's stream
        w = self.other.seal()
        self.assertFalse(w.query())  # held behind the producer's gate
        k.open_gate()
        w.wait()
        self.assertEqual(out.read(), bytes.fromhex("01efcdab") * 1024)
        w.close()
        k.flag.close()

    # -- imports -------------------------------------------------------------------------

    def test_from_dlpack_round_trip_and_lifetimes(self):
        n = 4096
        a = self.rt.alloc(4 * n)
        a.write(bytes(range(256)) * (4 * n // 256))
        view = a.as_tensor("uint32", (n,))
        b = t4a_gpu.from_dlpack(view, self.other)
        self.assertEqual(b.address, a.address)
        self.assertEqual((b.nbytes, b.dtype, b.shape, b.strides, b.tensor_offset),
                         (4 * n, "uint32", (n,), (1,), 0))
        self.assertEqual(b.read(), a.read())
        b.write(b"\x11" * 100, offset=8)  # through the other runtime's buffer
        self.other.synchronize()
        self.assertEqual(a.read(100, 8), b"\x11" * 100)
        del view
        gc.collect()
        with self.assertRaises(BufferError):  # b still uses a's memory
            a.close()
        b.close()
        self.other.synchronize()  # b's last use completed: the export is let go
        gc.collect()
        a.close()

    def test_from_dlpack_refusals_leave_the_capsule_usable(self):
        with self.assertRaises(TypeError):
            t4a_gpu.from_dlpack(object(), self.rt)
        buf = self.rt.alloc(1024)
        cap = buf.__dlpack__(stream=-1)
        x = t4a_gpu.from_dlpack(cap, self.other)
        self.assertTrue(_is_valid(cap, USED))  # consumed
        with self.assertRaises(TypeError):
            t4a_gpu.from_dlpack(cap, self.other)
        x.close()
        if self.backend.device_count() >= 2:
            far = self.backend.runtime(1)
            fb = far.alloc(1024)
            cap = fb.__dlpack__(stream=-1)
            with self.assertRaises(errors.EFOREIGNDEVICE):
                t4a_gpu.from_dlpack(cap, self.rt)
            self.assertTrue(_is_valid(cap, b"dltensor"))  # not consumed: still the producer's
            del cap
            gc.collect()
            fb.close()
            far.close()
        ro = buf.as_tensor(readonly=True)
        with self.assertRaises(errors.EINVAL):
            self.other.from_dlpack(ro)
        y = self.other.from_dlpack(ro, allow_read_only=True)
        y.close()
        self.other.synchronize()
        gc.collect()
        buf.close()

    def test_wrap_with_a_python_release(self):
        calls = []
        a = self.rt.alloc(65536)
        self.rt.synchronize()  # stream-ordered allocation: other streams use it after this
        w = self.other.wrap(a.address + 4096, 8192, release=lambda: calls.append(1))
        self.assertEqual(len(w), 8192)
        w.write(b"\x5a" * 8192)
        w.close()
        self.assertEqual(calls, [])  # its write has not been seen complete yet
        self.other.synchronize()
        self.assertEqual(calls, [1])
        self.assertEqual(a.read(8192, 4096), b"\x5a" * 8192)
        with self.assertRaises(errors.EINVAL):  # not memory the driver knows
            self.other.wrap(ctypes.addressof(ctypes.create_string_buffer(64)), 64)
        with self.assertRaises(TypeError):
            self.other.wrap(a.address, 16, release=42)
        for address, n in ((a.address + 2 ** 64, 16), (a.address, 2 ** 64 + 16), (-1, 16)):
            with self.assertRaises(ValueError):  # not the low 64 bits of either
                self.other.wrap(address, n)
        h = self.rt.host_alloc(8192)
        hw = self.rt.wrap(h.address, 8192, host=True)
        self.assertEqual(hw.__dlpack_device__(), (abi.T4A_DL_CUDA_HOST, 0))
        k = Kernels(self.backend, self.rt)
        k.fill.launch(1, 64, hw, 0x01020304, 100)
        hw.__dlpack__()  # stream None, host memory: the data is complete on return
        with h.view() as v:
            self.assertEqual(bytes(v[:400]), bytes.fromhex("04030201") * 100)
        hw.close()

    # -- #26: views in their buffers, exports recorded, hostile capsules --------------------

    def test_a_view_past_its_buffer_is_refused_whichever_protocol_exports_it(self):
        buf = self.rt.alloc(64)
        refused = [
            (("float32", (1000,)), {}),  # the view: 4,000 bytes of a 64-byte buffer
            (("float32", (1,)), {"offset": 61}),  # one element across the end
            (("uint8", None), {"offset": 65}),  # the default shape, from past the end
            (("float32", (3,)), {"strides": (-1,), "offset": 4}),  # 4 bytes below the start
            (("float32", (4, 8)), {"strides": (16, 2)}),  # 252 bytes by its strides
            (("uint8", (3,)), {"strides": (2 ** 62,)}),  # 2^63 + 1 bytes: wraps in int64
            (("uint8", (2, 2)), {"strides": (-2 ** 62, -2 ** 62), "offset": 63}),
            (("float32", (0, 10)), {"offset": 65}),  # empty, but from past the end
        ]
        for args, kw in refused:
            with self.subTest(args=args, kw=kw):
                with self.assertRaises(errors.ERANGE) as cm:
                    buf.as_tensor(*args, **kw)
                self.assertIn("outside the buffer's 64 bytes", str(cm.exception))
                with self.assertRaises(errors.ERANGE):  # the class itself checks
                    t4a_gpu.TensorView(buf, *args, **kw)
        accepted = [
            (("float32", (16,)), {}, (buf.address, (16,), None)),
            (("float32", (1,)), {"offset": 60}, (buf.address + 60, (1,), None)),
            (("float32", (3,)), {"strides": (-1,), "offset": 8}, (buf.address + 8, (3,), (-4,))),
            (("float32", (2, 4)), {"strides": (-4, 1), "offset": 16},
             (buf.address + 16, (2, 4), (-16, 4))),
            (("float32", (0, 10 ** 6)), {"offset": 64}, (0, (0, 10 ** 6), None)),  # touches nothing
            (("uint8", (0,)), {"strides": (2 ** 62,), "offset": 64}, (0, (0,), (2 ** 62,))),
            (("uint8", None), {"offset": 64}, (0, (0,), None)),
        ]
        for args, kw, (data, shape, strides) in accepted:
            with self.subTest(args=args, kw=kw):
                view = buf.as_tensor(*args, **kw)
                cai = view.__cuda_array_interface__
                self.assertEqual((cai["data"][0], cai["shape"], cai["strides"]),
                                 (data, shape, strides))
                cap = view.__dlpack__(stream=-1)  # the plugin's check agrees
                del cap, view, cai
        gc.collect()
        with self.assertRaises(AttributeError):  # a view cannot be widened after the check
            buf.as_tensor("float32", (4,)).shape = (1000,)
        # the bound is the size allocated: ctypes would keep the low 64 bits of 2^64 + 64
        # (64 bytes allocated) while the Buffer recorded 2^64 + 64
        for alloc in (self.rt.alloc, self.rt.host_alloc):
            with self.subTest(alloc=alloc.__name__):
                with self.assertRaises(ValueError):
                    alloc(2 ** 64 + 64)
                with self.assertRaises(ValueError):
                    alloc(-1)
                with self.assertRaises(TypeError):
                    alloc(64.0)
        for args, kw, cls in [
            (("float32", (-1,)), {}, ValueError),  # a negative extent
            (("uint8", (1,) * 65), {}, ValueError),  # past T4A_DLPACK_MAX_NDIM
            (("uint8", (1,)), {"strides": (2 ** 63,)}, ValueError),  # no int64
            (("float32", (1,)), {"strides": (2 ** 62,)}, ValueError),  # 2^64 bytes: no int64
            (("uint8", (2 ** 64,)), {"strides": (0,)}, ValueError),
            (("uint8", (4,)), {"offset": -1}, ValueError),
            (("uint8", (4.0,)), {}, TypeError),  # an extent is an integer
            (("uint8", (4,)), {"strides": (1.5,)}, TypeError),
            (((abi.T4A_DL_UINT, 0, 1),), {}, ValueError),  # no bits: no element size
            (((abi.T4A_DL_UINT, 8, 65536),), {}, ValueError),  # lanes are 16-bit
            (((256, 8, 1),), {}, ValueError),  # codes are 8-bit
        ]:
            with self.subTest(args=args, kw=kw):
                with self.assertRaises(cls):
                    buf.as_tensor(*args, **kw)
        buf.close()

    def test_broadcast_views_are_bounded_by_the_strides_they_use(self):
        buf = self.rt.alloc(16)
        # 2^64 elements of one float: refused only by a row-major element count
        v = buf.as_tensor("float32", (2 ** 32, 2 ** 32), strides=(0, 0))
        cai = v.__cuda_array_interface__
        self.assertEqual((cai["shape"], cai["strides"], cai["data"][0]),
                         ((2 ** 32, 2 ** 32), (0, 0), buf.address))
        big = v.__dlpack__(stream=-1)  # the plugin spans it by its strides too (#26 item 9)
        t = tensor_of(big).dl_tensor
        self.assertEqual([(t.shape[i], t.strides[i]) for i in range(2)],
                         [(2 ** 32, 0), (2 ** 32, 0)])
        del big, t
        w = buf.as_tensor("float32", (4, 4), strides=(1, 0))  # row-major it would take 64 bytes
        cap = w.__dlpack__(stream=-1)
        t = tensor_of(cap).dl_tensor
        self.assertEqual([t.strides[i] for i in range(2)], [1, 0])
        with self.assertRaises(errors.ERANGE):  # 5 floats by these strides
            buf.as_tensor("float32", (5, 4), strides=(1, 0))
        del v, w, cap, t, cai
        gc.collect()
        buf.close()

    def test_a_cuda_array_interface_export_holds_its_buffer(self):
        buf = self.rt.alloc(64)
        # CuPy, Numba and PyTorch keep the object whose interface they read (CuPy's
        # UnownedMemory owner): this list plays the consumer.
        consumer = [buf.as_tensor("float32", (16,))]
        consumer[0].__cuda_array_interface__
        with self.assertRaises(BufferError) as cm:
            buf.close()
        self.assertIn("__cuda_array_interface__", str(cm.exception))
        with self.assertRaises(BufferError):
            self.rt.close()
        with self.assertRaises(BufferError):
            self.backend.close()
        other = self.rt.alloc(64)  # the held block is not handed out again
        self.assertNotEqual(other.address, buf.address)
        consumer.clear()  # the consumer dropped the array, and with it the view
        buf.close()
        other.close()
        # a view whose interface nobody read holds nothing
        b2 = self.rt.alloc(64)
        v2 = b2.as_tensor("float32")
        b2.close()
        with self.assertRaises(errors.EHANDLE):
            v2.__cuda_array_interface__
        # the Buffer's own interface: the consumer holds the Buffer itself, which then
        # goes when the last reference goes (yours and the consumer's)
        live = self.rt.counters()["live_buffers"]
        b3 = self.rt.alloc(64)
        consumer.append(b3)
        b3.__cuda_array_interface__
        with self.assertRaises(BufferError) as cm:
            b3.close()
        self.assertIn("as_tensor", str(cm.exception))
        with self.assertRaises(BufferError):
            self.rt.close()
        del b3
        gc.collect()
        self.assertEqual(self.rt.counters()["live_buffers"], live + 1)  # the consumer's
        consumer.clear()
        gc.collect()
        self.assertEqual(self.rt.counters()["live_buffers"], live)
        self.rt.close()

    def test_a_close_racing_a_dlpack_export_is_refused(self):
        buf = self.rt.alloc(64)
        real, seen = buf._call, []

        def racing_call(slot, *args):  # another thread closes the buffer as the export returns
            out = real(slot, *args)
            if slot == "dlpack_export":
                def close():
                    try:
                        buf.close()
                        seen.append("closed")
                    except BufferError:
                        seen.append("BufferError")
                t = threading.Thread(target=close)
                t.start()
                t.join()
            return out

        buf._call = racing_call
        cap = buf.__dlpack__(stream=-1)
        self.assertEqual(seen, ["BufferError"])  # the capsule's block is still the buffer's
        self.assertEqual(tensor_of(cap).dl_tensor.data, buf.address)
        del cap
        gc.collect()
        buf.close()
        # a failed export leaves no record behind
        b2 = self.rt.alloc(64)
        with self.assertRaises(errors.EINVAL):  # a dtype code DLPack does not have
            b2.as_tensor((200, 8, 1)).__dlpack__(stream=-1)
        b2.close()
        with self.assertRaises(errors.EHANDLE):  # nor does an export of a closed buffer
            buf.__dlpack__(stream=-1)

    def test_hostile_capsules_raise_typed_errors(self):
        buf = self.rt.alloc(4096)
        d = buf.address
        cuda, foreign = (abi.T4A_DL_CUDA, 0), (abi.T4A_DL_CUDA, 7)
        cases = [
            ("ndim 2^28", dict(ndim=1 << 28), errors.EINVAL),
            ("ndim 2^31 - 1, NULL shape", dict(ndim=2 ** 31 - 1, null_shape=True), errors.EINVAL),
            ("ndim -1", dict(ndim=-1), errors.EINVAL),
            ("ndim 65", dict(ndim=65, shape=(1,) * 65), errors.EINVAL),
            ("NULL shape", dict(ndim=2, null_shape=True), errors.EINVAL),
            ("a negative extent", dict(shape=(-5,)), errors.EINVAL),
            ("huge strides", dict(ndim=2, shape=(3, 3), strides=(2 ** 62, 2 ** 62)),
             errors.ERANGE),
            ("INT64_MIN stride", dict(shape=(2,), strides=(-2 ** 63,)), errors.ERANGE),
            ("huge extent", dict(shape=(2 ** 62,)), errors.ERANGE),
            ("NULL data", dict(data=None), errors.EINVAL),
            ("data at the top of memory", dict(data=2 ** 64 - 8), errors.EINVAL),
            ("device type kDLCPU", dict(device=(1, 0)), errors.EUNSUPPORTED),
            ("device type 2^31 - 1", dict(device=(2 ** 31 - 1, 0)), errors.EUNSUPPORTED),
            ("another device", dict(device=foreign), errors.EFOREIGNDEVICE),
            ("0 bits", dict(dtype=(abi.T4A_DL_UINT, 0, 1)), errors.EINVAL),
            ("0 lanes", dict(dtype=(abi.T4A_DL_UINT, 8, 0)), errors.EINVAL),
            ("4-bit elements", dict(dtype=(abi.T4A_DL_INT, 4, 1)), errors.EUNSUPPORTED),
            # the version first: a major-2 tensor's fields are not read as 1.x's
            ("DLPack 2.0", dict(versioned=True, name="versioned", major=2, ndim=1 << 28,
                                null_shape=True), errors.EUNSUPPORTED),
            ("read-only", dict(versioned=True, name="versioned",
                               flags=abi.T4A_DL_FLAG_READ_ONLY), errors.EINVAL),
            ("an unnamed capsule", dict(name="unnamed"), TypeError),
            ("a wrongly named capsule", dict(name="wrong"), TypeError),
            ("a used capsule", dict(name="used"), TypeError),
        ]
        for what, kw, cls in cases:
            with self.subTest(what):
                kw = dict(kw)
                cap, keep = hostile_capsule(kw.pop("data", d), **kw)
                name = NAMES[kw.get("name", "legacy")]
                with self.assertRaises(cls) as cm:
                    t4a_gpu.from_dlpack(cap, self.rt)
                if issubclass(cls, errors.T4AError):
                    self.assertIn("; ", cm.exception.message)  # "<what failed>; <what to do>"
                if name is not None:
                    self.assertTrue(_is_valid(cap, name))  # refused: still the producer's
                del cap, keep

        class Producer:  # __dlpack__ hands back something that is not a capsule
            def __dlpack__(self, **kw):
                return 42

        for obj in (42, None, b"dltensor", Producer()):
            with self.subTest(obj=obj):
                with self.assertRaises(TypeError):
                    t4a_gpu.from_dlpack(obj, self.rt)
        # the same hand-made capsule, well formed, is taken (NULL strides: row-major)
        cap, keep = hostile_capsule(d + 64, ndim=2, shape=(4, 8), dtype=(abi.T4A_DL_FLOAT, 32, 1))
        got = t4a_gpu.from_dlpack(cap, self.rt)
        self.assertTrue(_is_valid(cap, USED))
        self.assertEqual((got.address, got.nbytes, got.shape, got.strides),
                         (d + 64, 128, (4, 8), None))
        got.close()
        self.rt.synchronize()
        del cap, keep
        buf.close()

    def test_framework_stream_and_event_waits(self):
        consumer = self.other.raw().stream
        self.rt.wait_stream(consumer)
        self.rt.wait_stream(None)

        class FakeStream:  # a framework stream object (PyTorch's .cuda_stream)
            cuda_stream = consumer

        self.rt.order_stream_after(FakeStream())
        w = self.rt.seal()
        self.rt.order_stream_after(consumer, w)
        w.close()
        with self.assertRaises(errors.EHANDLE):
            self.rt.order_stream_after(consumer, w)
        with self.assertRaises(errors.EINVAL):
            self.rt.wait_event(0)
        with self.assertRaises(TypeError):
            self.rt.wait_stream(1.5)


if __name__ == "__main__":
    unittest.main()
