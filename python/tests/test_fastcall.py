"""Tests of the optional compiled route (t4a_gpu._fastcall): its packing
against the Python route's, byte for byte, through a stand-in launch slot
(a ctypes callback that records what it was given), and every value it must
hand back to Python untouched (None: nothing called). The rest of the suite
runs on whichever route is in use; tests/consumers/test_python.sh runs it
on both (T4A_TEST_FASTCALL=1 where the compiled one is built: then these
tests must not skip). Standard library only.
"""
import ctypes
import os
import random
import struct
import unittest

import t4a_gpu
from t4a_gpu import _api, _launch, abi

_FC = _api._FC
_REQUIRED = os.environ.get("T4A_TEST_FASTCALL", "") == "1"

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, abi.t4a_runtime, abi.t4a_function, ctypes.c_void_p,
                          ctypes.POINTER(ctypes.c_void_p))
ALL_KINDS = "u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 ptr"


class Recorder:
    """A launch slot that keeps what it was called with: the handles, the
    config's address, and the argument block (size + slack bytes from the
    first argument's pointer, less its offset)."""

    def __init__(self, plan, status=0):
        self.plan, self.status, self.calls = plan, status, []
        self.fn = LAUNCH(self.launch)
        self.addr = ctypes.cast(self.fn, ctypes.c_void_p).value

    def launch(self, rt, fn, cfg, args):
        p = self.plan
        if p.n:
            base = args[0] - p.offsets[0]
            ptrs = [args[i] - base for i in range(p.n)]
        else:
            base, ptrs = args[0], []
        block = ctypes.string_at(base, p.size + _launch._SLACK)
        self.calls.append((rt.bits, fn.bits, cfg, ptrs, block))
        return self.status


@unittest.skipUnless(_FC is not None or _REQUIRED, "the compiled route is not in use")
class Fastcall(unittest.TestCase):
    def setUp(self):
        self.assertIsNotNone(_FC, "T4A_TEST_FASTCALL=1 but t4a_gpu._fastcall is not in use")
        self.backend = t4a_gpu.Backend()
        self.rt = self.backend.runtime(0)

    def tearDown(self):
        self.backend.close()

    def call(self, rec, args, spec=None):
        p = rec.plan
        return _FC.launch(rec.addr, 0x1234, 0x5678, 0x9ABC, spec or p.fast_spec, tuple(args),
                          t4a_gpu.Buffer, self.rt)

    def test_in_use_when_built(self):
        self.assertTrue(t4a_gpu.fastcall_enabled())

    def test_packs_every_kind_as_struct_does(self):
        rng = random.Random(20261202)
        buf = self.rt.alloc(64)
        addr = buf.address
        for sig in (ALL_KINDS, "u8 f64", "i16 u8 u64 u8 f32 ptr", "f32", "ptr ptr u32", ""):
            plan = _launch.Plan(t4a_gpu.parse_signature(sig), True, t4a_gpu.Buffer)
            self.assertIsNotNone(plan.fast_spec, sig)
            rec = Recorder(plan)
            for trial in range(50):
                values, packed = [], []
                for s in plan.specs:
                    if s is t4a_gpu.ptr:
                        v = buf if rng.random() < 0.5 else rng.getrandbits(64)
                        values.append(v)
                        packed.append(addr if v is buf else v)
                    elif s.kind == "float":
                        v = rng.choice([rng.uniform(-1e6, 1e6), float(rng.getrandbits(20)),
                                        rng.getrandbits(24), 0.0, -0.0, float("inf"),
                                        3.4e38, 1e-45])
                        values.append(v)
                        packed.append(v)
                    else:
                        lo = -(1 << (s.bits - 1)) if s.signed else 0
                        hi = (1 << (s.bits - 1 if s.signed else s.bits)) - 1
                        v = rng.choice([lo, hi, 0, rng.randint(lo, hi)])
                        values.append(v)
                        packed.append(v)
                self.assertEqual(self.call(rec, values), 0)
                rt_bits, fn_bits, cfg, ptrs, block = rec.calls[-1]
                self.assertEqual((rt_bits, fn_bits, cfg), (0x1234, 0x5678, 0x9ABC))
                self.assertEqual(ptrs, list(plan.offsets))
                want = plan.packer.pack(*packed)
                self.assertEqual(block[:plan.size], want, "signature %r, values %r" % (sig, values))
                self.assertEqual(block[plan.size:], bytes(_launch._SLACK))  # the slack is zero

    def test_the_status_comes_back(self):
        plan = _launch.Plan(t4a_gpu.parse_signature("u32"), True, t4a_gpu.Buffer)
        self.assertEqual(self.call(Recorder(plan, status=abi.T4A_EINVAL), [7]), abi.T4A_EINVAL)

    def test_what_python_must_check_comes_back_uncalled(self):
        other = self.backend.runtime(0)
        foreign = other.alloc(16)
        foreign.address
        closed = self.rt.alloc(16)
        closed.address
        closed.close()
        fresh = self.rt.alloc(16)  # its address not asked yet: the Python route asks it
        cases = {
            "u8": [256, -1, True, 1.0, "1", None, t4a_gpu.u8(1)],
            "i8": [128, -129, False],
            "u16": [1 << 16, -1],
            "i16": [1 << 15, -(1 << 15) - 1],
            "u32": [1 << 32, -1, 2.0],
            "i32": [1 << 31, -(1 << 31) - 1],
            "u64": [1 << 64, -1, 1.5],
            "i64": [1 << 63, -(1 << 63) - 1],
            "f32": [1e39, -1e39, 1 << 200, True, "x", t4a_gpu.f32(1.0)],
            "f64": [1 << 2000, None],
            "ptr": [-1, 1 << 64, foreign, closed, fresh, 1.0, ctypes.c_uint64(1)],
        }
        for sig, bad in cases.items():
            plan = _launch.Plan(t4a_gpu.parse_signature(sig), True, t4a_gpu.Buffer)
            rec = Recorder(plan)
            for v in bad:
                self.assertIsNone(self.call(rec, [v]), "%s given %r" % (sig, v))
            self.assertEqual(rec.calls, [], sig)
        plan = _launch.Plan(t4a_gpu.parse_signature("u32 u32"), True, t4a_gpu.Buffer)
        rec = Recorder(plan)
        self.assertIsNone(self.call(rec, [1]))  # a count Python reports
        self.assertIsNone(self.call(rec, [1, 2, 3]))
        self.assertEqual(rec.calls, [])
        other.close()

    def test_plans_without_a_compiled_route(self):
        untyped = _launch.Plan([t4a_gpu.u32], False, t4a_gpu.Buffer)
        self.assertIsNone(untyped.fast_spec)  # values carry their own types
        struct_arg = _launch.Plan(t4a_gpu.parse_signature("bytes12 u32"), True, t4a_gpu.Buffer)
        self.assertIsNone(struct_arg.fast_spec)
        many = _launch.Plan(t4a_gpu.parse_signature("u8 " * 65), True, t4a_gpu.Buffer)
        self.assertIsNone(many.fast_spec)

    def test_malformed_calls_raise(self):
        plan = _launch.Plan(t4a_gpu.parse_signature("u32"), True, t4a_gpu.Buffer)
        rec = Recorder(plan)
        with self.assertRaises(TypeError):
            _FC.launch(rec.addr, 1, 2, 3, plan.fast_spec, (1,), t4a_gpu.Buffer)
        with self.assertRaises(ValueError):
            self.call(rec, [1], spec=plan.fast_spec + b"\x00")
        with self.assertRaises(ValueError):
            self.call(rec, [1], spec=struct.pack("<I", 4) + struct.pack("<cBH", b"I", 0, 9))
        with self.assertRaises(ValueError):
            _FC.launch(0, 1, 2, 3, plan.fast_spec, (1,), t4a_gpu.Buffer, self.rt)
        with self.assertRaises(ValueError):
            _FC.buffer_free(0, 1, 2)
        with self.assertRaises(TypeError):
            _FC.buffer_alloc(1, 2)
        self.assertEqual(rec.calls, [])

    def test_alloc_and_free_through_the_table(self):
        a = self.rt._a_alloc
        rc, bits = _FC.buffer_alloc(a, self.rt._bits, 4096)
        self.assertEqual(rc, 0)
        self.assertNotEqual(bits, 0)
        self.assertEqual(_FC.buffer_free(self.rt._a_free, self.rt._bits, bits), 0)
        rc = _FC.buffer_free(self.rt._a_free, self.rt._bits, bits)  # freed already
        self.assertEqual(rc, abi.T4A_EHANDLE)
        rc, _ = _FC.buffer_alloc(a, self.rt._bits + 1, 16)  # no such runtime
        self.assertEqual(rc, abi.T4A_EHANDLE)


if __name__ == "__main__":
    unittest.main()
