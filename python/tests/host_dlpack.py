"""DLPack on the host backend (libt4a_host.so, no GPU): buffers export as
kDLCPU tensors that NumPy (np.from_dlpack) reads and writes in place, host
tensors (NumPy arrays) import without a copy, a round trip between two
runtimes shares the bytes, and the slots the host leaves NULL raise a typed
error instead of crashing. Not a test_*.py (the CUDA suite's discover does not
pick it up): tests/consumers/test_python_host.sh runs it with
T4A_GPU_BACKEND_PATH naming the host plugin. NumPy's tests skip without it.
"""
import ctypes
import gc
import unittest

import t4a_gpu
from t4a_gpu import abi, errors

try:
    import numpy as np
except ImportError:  # the tests that need it skip, saying so
    np = None

_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


class HostDLPack(unittest.TestCase):
    def setUp(self):
        self.backend = t4a_gpu.Backend("host")
        self.assertEqual(self.backend.name, "host")
        self.rt = self.backend.runtime(0)
        self.other = self.backend.runtime(0)

    def tearDown(self):
        gc.collect()
        self.other.close()
        self.backend.close()

    def test_export_is_a_cpu_tensor_over_the_buffer(self):
        buf = self.rt.alloc(4096)
        buf.write(bytes(range(256)) * 16)
        view = buf.as_tensor("uint8", (16, 256))
        self.assertEqual(view.__dlpack_device__(), (abi.T4A_DL_CPU, 0))
        self.assertEqual(buf.__dlpack_device__(), (abi.T4A_DL_CPU, 0))
        capsule = view.__dlpack__()
        t = ctypes.cast(_get_pointer(capsule, b"dltensor"),
                        ctypes.POINTER(abi.t4a_dl_managed_tensor)).contents.dl_tensor
        self.assertEqual((t.device.device_type, t.device.device_id), (abi.T4A_DL_CPU, 0))
        self.assertEqual(t.data, buf.address)  # the buffer's memory, not a copy
        self.assertEqual(ctypes.string_at(t.data + 255, 2), b"\xff\x00")
        del capsule, t
        with self.assertRaises(BufferError):  # a CPU tensor has no stream
            view.__dlpack__(stream=5)
        self.assertFalse(hasattr(view, "__cuda_array_interface__"))  # not CUDA memory

    def test_null_slots_raise_typed_errors(self):
        for call in (self.rt.raw, lambda: self.rt.wait_stream(1),
                     lambda: self.rt.wait_event(1), lambda: self.rt.order_stream_after(1)):
            with self.assertRaises(errors.EUNSUPPORTED) as cm:
                call()
            self.assertIn("does not provide", str(cm.exception))
        self.assertFalse(self.backend.has("raw_runtime"))
        self.assertTrue(self.backend.has("dlpack_export"))

    def test_round_trip_between_runtimes_shares_the_bytes(self):
        buf = self.rt.alloc(8192)
        buf.write(b"\x5a" * 8192)
        imported = self.other.from_dlpack(buf.as_tensor("float32", (32, 64)))
        self.assertEqual(imported.address, buf.address)
        self.assertEqual((imported.dtype, imported.shape), ("float32", (32, 64)))
        imported.write(b"\x01\x02\x03\x04", offset=16)
        self.other.synchronize()
        self.assertEqual(buf.read(8, offset=16), b"\x01\x02\x03\x04" + b"\x5a" * 4)
        imported.close()
        self.other.synchronize()

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_numpy_reads_and_writes_an_export_in_place(self):
        buf = self.rt.alloc(32 * 4)
        ref = np.arange(32, dtype=np.float32)
        buf.write(ref.tobytes())
        arr = np.from_dlpack(buf.as_tensor("float32", (4, 8)))
        self.assertEqual(arr.shape, (4, 8))
        self.assertEqual(arr.dtype, np.float32)
        self.assertEqual(arr.__array_interface__["data"][0], buf.address)  # no copy
        np.testing.assert_array_equal(arr.ravel(), ref)
        buf.write(np.float32(-2.5).tobytes(), offset=4 * 3)
        self.rt.synchronize()
        self.assertEqual(arr[0, 3], -2.5)  # the array sees the runtime's writes
        if arr.flags.writeable:  # NumPy 2 (versioned capsules); 1.x makes it read-only
            arr[1, 2] = -1.5  # NumPy writes the buffer's memory
            got = np.frombuffer(buf.read(), dtype=np.float32)
            self.assertEqual(got[10], -1.5)
        strided = np.from_dlpack(buf.as_tensor("float32", (4, 4), strides=(8, 2)))
        np.testing.assert_array_equal(strided, arr[:, ::2])
        del arr, strided
        gc.collect()

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_a_numpy_array_imports_without_a_copy(self):
        arr = np.arange(1024, dtype=np.int32).reshape(32, 32)
        imported = self.rt.from_dlpack(arr)
        self.assertEqual(imported.address, arr.__array_interface__["data"][0])
        self.assertEqual((imported.dtype, imported.shape), ("int32", (32, 32)))
        self.assertEqual(np.frombuffer(imported.read(16), dtype=np.int32).tolist(), [0, 1, 2, 3])
        imported.write(np.array([7, 8], dtype=np.int32).tobytes(), offset=8)
        self.rt.synchronize()
        self.assertEqual(arr[0, :4].tolist(), [0, 1, 7, 8])  # the runtime wrote the array
        again = np.from_dlpack(imported.as_tensor("int32", (32, 32)))  # and back to NumPy
        self.assertEqual(again.__array_interface__["data"][0], imported.address)
        self.assertEqual(again[0, 3], 8)
        del again
        gc.collect()
        imported.close()
        self.rt.synchronize()


if __name__ == "__main__":
    unittest.main()
