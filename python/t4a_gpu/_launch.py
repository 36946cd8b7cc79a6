"""t4a_gpu._launch -- kernel arguments and launch geometry, prepared once.

A launch hands the backend a launch config and an array of pointers to the
argument values (cuLaunchKernel's convention). Building those with ctypes on
every call (a struct, a c_uint32 * 3 per dimension, one ctypes object and a
cast per argument) cost more than the launch itself, so they are prepared
once and reused:

- a *plan* per Function and signature (or, without a signature, per tuple of
  argument types): a struct.Struct packing every argument at its own aligned
  offset of one block of memory, and the pointer array into that block, built
  once. A call converts only what needs converting (a Buffer to its address, a
  typed value to its value) and packs the rest in one pack_into, which checks
  every integer's range and every value's type in C. Blocks are taken from
  and returned to a per-plan pool (list.pop/append are atomic), so threads
  launching one Function never share a block; the backend copies the values
  during the call, so a block is reusable as soon as the call returned.
- a *config* per geometry: the launch config struct (and its byref) cached
  per (grid, block, shared bytes) on the Function, validated when made
  (every dimension an int in [0, 2^32), 1 to 3 of them) and read-only after.

When pack_into refuses a value (struct.error: out of range, wrong type),
the arguments are checked again one by one in Python to raise the precise
error (TypeError, OverflowError, naming the argument), so the fast path
costs no checks beyond the ones C does anyway.
"""
import ctypes
import operator
import struct
from ctypes import addressof, byref, c_char, c_uint32, c_void_p

from . import _abi

__all__ = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64", "ptr",
           "parse_signature"]

_TWO32 = 1 << 32

# A block's bytes past its last argument, zeroed: a kernel whose parameter is
# larger than the value given (a wrong signature) reads zeros from memory of
# ours, never past it. 4 KiB is the classic parameter limit of a kernel.
_SLACK = 4096
# What t4a_gpu._fastcall.launch packs at most (_fastcall.h: T4A_PY_FAST_*).
_FAST_ARGS, _FAST_BYTES = 64, 4096


class _Arg:
    """A kernel argument of an explicit C type: t4a_gpu.f32(2.5), u64(n)..."""

    __slots__ = ("value",)
    ctype = None
    kind = None  # "int", "float" or "ptr"
    code = None  # its struct format character

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.value)


def _arg_type(name, ctype, kind, code, bits=0, signed=False, doc=None):
    return type(name, (_Arg,), {
        "ctype": ctype, "kind": kind, "bits": bits, "signed": signed, "code": code,
        "size": ctypes.sizeof(ctype), "align": ctypes.alignment(ctype),
        "__slots__": (), "__module__": "t4a_gpu",
        "__doc__": doc or "A kernel argument of C type %s." % ctype.__name__})


u8 = _arg_type("u8", ctypes.c_uint8, "int", "B", 8)
i8 = _arg_type("i8", ctypes.c_int8, "int", "b", 8, True)
u16 = _arg_type("u16", ctypes.c_uint16, "int", "H", 16)
i16 = _arg_type("i16", ctypes.c_int16, "int", "h", 16, True)
u32 = _arg_type("u32", ctypes.c_uint32, "int", "I", 32)
i32 = _arg_type("i32", ctypes.c_int32, "int", "i", 32, True)
u64 = _arg_type("u64", ctypes.c_uint64, "int", "Q", 64)
i64 = _arg_type("i64", ctypes.c_int64, "int", "q", 64, True)
f32 = _arg_type("f32", ctypes.c_float, "float", "f")
f64 = _arg_type("f64", ctypes.c_double, "float", "d")
ptr = _arg_type("ptr", ctypes.c_uint64, "ptr", "Q", 64,
                doc="A device pointer argument (a Buffer, or an address as an int): 64 bits.")

_SIGNATURE = {t.__name__: t for t in (u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, ptr)}
_SIGNATURE.update({"float": f32, "double": f64, "int": i32, "unsigned": u32, "size_t": u64,
                   "int32_t": i32, "uint32_t": u32, "int64_t": i64, "uint64_t": u64,
                   "uint8_t": u8, "int8_t": i8, "uint16_t": u16, "int16_t": i16, "*": ptr})
# ctypes scalars passed without a signature, and ctypes types in a signature.
_CTYPES = {t.ctype: t for t in (u8, i8, u16, i16, u32, i32, u64, i64, f32, f64)}
_CTYPES[ctypes.c_void_p] = ptr


class ByValue:
    """A kernel parameter passed by value as `size` raw bytes aligned to
    `align` (a struct, as CUDA allows): what a ctypes.Structure type, a
    NumPy structured dtype or a "bytesN" signature token becomes."""

    __slots__ = ("size", "align", "type", "__weakref__")
    kind = "struct"

    def __init__(self, size, align=8, type=None):  # noqa: A002 -- the C notion
        self.size, self.align, self.type = int(size), int(align), type
        if not 0 < self.size <= _SLACK or self.align not in (1, 2, 4, 8, 16):
            raise ValueError("a by-value kernel argument of %d bytes aligned to %d: sizes 1 "
                             "to %d, alignments 1, 2, 4, 8 or 16" % (size, align, _SLACK))

    code = property(lambda self: "%ds" % self.size, doc="its struct format ('16s')")
    __name__ = property(lambda self: self.type.__name__ if isinstance(self.type, type) else
                        "bytes%d" % self.size)

    def __eq__(self, other):
        return isinstance(other, ByValue) and (self.size, self.align, self.type) == \
            (other.size, other.align, other.type)

    def __hash__(self):
        return hash((self.size, self.align, id(self.type)))

    def __repr__(self):
        return "ByValue(%d, %d%s)" % (self.size, self.align,
                                      ", %s" % self.__name__ if self.type is not None else "")


def _is_ctypes_struct(t):
    return isinstance(t, type) and issubclass(t, (ctypes.Structure, ctypes.Union, ctypes.Array))


def _spec_of_type(t, where):
    """One signature item -> an _Arg class or a ByValue."""
    if isinstance(t, str):
        if t in _SIGNATURE:
            return _SIGNATURE[t]
        if t.startswith("bytes") and t[5:].isdigit():
            n = int(t[5:])
            return ByValue(n, min(16, n & -n))
        raise ValueError("%s: unknown type %s (known: %s, bytesN)"
                         % (where, t, " ".join(sorted(_SIGNATURE))))
    if isinstance(t, type) and issubclass(t, _Arg) and t is not _Arg:
        return t
    if isinstance(t, ByValue):
        return t
    if t in _CTYPES:
        return _CTYPES[t]
    if _is_ctypes_struct(t):
        return ByValue(ctypes.sizeof(t), ctypes.alignment(t), t)
    if hasattr(t, "itemsize") and getattr(t, "fields", None) is not None:  # numpy dtype
        return ByValue(t.itemsize, t.alignment, t)
    raise ValueError("%s: %r is not a kernel argument type (a name such as 'u64', a t4a_gpu "
                     "type, a ctypes scalar, Structure or Union type, or a numpy structured "
                     "dtype)" % (where, t))


def parse_signature(signature):
    """The argument types of a signature: 'u64 f32 ptr ptr' (or
    comma-separated, or C names: 'uint64_t, float, *'; 'bytesN' for N bytes
    by value), or a sequence of those names, t4a_gpu types (u64, ptr, ...),
    ctypes types (c_float, a Structure subclass for a struct passed by
    value) or numpy structured dtypes."""
    if isinstance(signature, str):
        items = signature.replace(",", " ").split()
    else:
        items = list(signature)
    where = "signature %r" % (signature,)
    return tuple(_spec_of_type(t, where) for t in items)


# ---------------------------------------------------------------------------
# Launch geometry.
# ---------------------------------------------------------------------------


def _dims(d, what):
    d = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(d) <= 3:
        raise ValueError("%s: 1 to 3 dimensions, got %r" % (what, d))
    out = []
    for x in d:
        if isinstance(x, bool):
            raise TypeError("%s: %r is not an int" % (what, x))
        try:
            x = operator.index(x)
        except TypeError:
            raise TypeError("%s: %r is not an int" % (what, x)) from None
        if not 0 <= x < _TWO32:  # ctypes would keep the low 32 bits
            raise OverflowError("%s: %d does not fit 32 bits" % (what, x))
        out.append(x)
    return out + [1] * (3 - len(out))


def _u32(value, what):
    if isinstance(value, bool):
        raise TypeError("%s: %r is not an int" % (what, value))
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError("%s: %r is not an int" % (what, value)) from None
    if not 0 <= value < _TWO32:
        raise OverflowError("%s: %d does not fit 32 bits" % (what, value))
    return value


def make_config(grid, block, shared_bytes):
    """A t4a_launch_config for the geometry (validated), its byref and its
    address (for t4a_gpu._fastcall; the tuple keeps the struct alive)."""
    cfg = _abi.t4a_launch_config()
    cfg.struct_size = ctypes.sizeof(cfg)
    cfg.grid = (c_uint32 * 3)(*_dims(grid, "grid"))
    cfg.block = (c_uint32 * 3)(*_dims(block, "block"))
    cfg.shared_bytes = _u32(shared_bytes, "shared_bytes")
    return cfg, byref(cfg), addressof(cfg)


def make_config_ex(grid, block, shared_bytes, cluster, flags, priority):
    """A t4a_launch_ex_config (validated), and its byref."""
    cfg = _abi.t4a_launch_ex_config()
    cfg.struct_size = ctypes.sizeof(cfg)
    cfg.flags = flags
    cfg.grid = (c_uint32 * 3)(*_dims(grid, "grid"))
    cfg.block = (c_uint32 * 3)(*_dims(block, "block"))
    cfg.shared_bytes = _u32(shared_bytes, "shared_bytes")
    if cluster is not None:
        cfg.cluster = (c_uint32 * 3)(*_dims(cluster, "cluster"))
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int) or \
                not -(1 << 31) <= priority < 1 << 31:
            raise TypeError("priority: %r is not a 32-bit int" % (priority,))
        cfg.priority = priority
    return cfg, byref(cfg)


class ConfigCache(dict):
    """Geometry -> (config, byref), bounded (cleared when it grows past 64)."""

    __slots__ = ()

    def get_config(self, key, make, *how):
        try:
            got = self.get(key)
        except TypeError:  # a list among the dimensions: unhashable, not cached
            return make(*how)
        if got is None:
            got = make(*how)
            if len(self) >= 64:
                self.clear()
            self[key] = got
        return got


# ---------------------------------------------------------------------------
# Argument plans.
# ---------------------------------------------------------------------------


class Plan:
    """The packing of one argument list: specs (an _Arg class or ByValue
    per argument), the struct.Struct writing them, and a pool of blocks."""

    __slots__ = ("specs", "n", "packer", "offsets", "size", "pool", "ptr_ok", "typed", "fill",
                 "fast_spec", "__weakref__")

    def __init__(self, specs, typed, buffer_type):
        self.specs, self.n, self.typed = tuple(specs), len(specs), typed
        fmt, off, offsets = ["<"], 0, []
        for s in self.specs:
            pad = -off % s.align
            if pad:
                fmt.append("%dx" % pad)
            offsets.append(off + pad)
            off += pad + s.size
            fmt.append(s.code)
        self.packer = struct.Struct("".join(fmt))
        self.offsets, self.size = tuple(offsets), off
        self.pool = []
        self.ptr_ok = tuple(s is ptr for s in self.specs)
        self.fill = self.compile(buffer_type)
        self.fast_spec = self._fast_spec()

    def _fast_spec(self):
        """The packing as t4a_gpu._fastcall.launch takes it (see its source),
        or None when this plan has no compiled route: no signature (values
        carry their own types), a struct by value, or more arguments or
        bytes than it packs."""
        if not self.typed or self.n > _FAST_ARGS or self.size > _FAST_BYTES or \
                any(isinstance(s, ByValue) for s in self.specs):
            return None
        return struct.pack("<I", self.size) + b"".join(
            struct.pack("<cBH", b"P" if s is ptr else s.code.encode(), 0, o)
            for s, o in zip(self.specs, self.offsets))

    def compile(self, buffer_type):
        """fill(args, runtime, storage): packs `args` into storage, a
        function generated for this plan (one straight line per argument,
        no loop, no list: the launch's hot path). Fast for what needs no
        conversion (ints and floats under a signature, a live Buffer of the
        runtime for a pointer, a typed value of the parameter's type);
        everything else goes through _value_of, which checks and converts
        with precise errors. Wrong counts raise ValueError (see values())."""
        names = ["a%d" % i for i in range(self.n)]
        lines = ["def fill(args, rt, storage):"]
        if self.n:
            lines.append("    %s, = args" % ", ".join(names))
        else:
            lines.append("    if args: raise ValueError('arguments given')")
        for i, (a, s) in enumerate(zip(names, self.specs)):
            slow = "%s = _slow(%d, %s, _specs[%d], rt, _Buffer)" % (a, i, a, i)
            if isinstance(s, ByValue):
                lines.append("    " + slow)
                continue
            nums = "int" if s.kind in ("int", "ptr") else "int or _t is float"
            fast = "_t is %s" % nums if self.typed else "False"
            lines += ["    _t = type(%s)" % a,
                      "    if %s: pass" % fast]
            if s is ptr:
                lines += ["    elif _t is _Buffer and %s._runtime is rt and %s._addr is not None "
                          "and %s._node.alive: %s = %s._addr" % (a, a, a, a, a)]
            lines += ["    elif _t is _specs[%d] and type(%s.value) is %s: %s = %s.value"
                      % (i, a, "int" if s.kind != "float" else "float", a, a),
                      "    else: " + slow]
        lines.append("    _pack_into(storage, 0%s)" % "".join(", " + a for a in names))
        env = {"_slow": _value_of, "_specs": self.specs, "_Buffer": buffer_type,
               "_pack_into": self.packer.pack_into}
        exec("\n".join(lines), env)  # noqa: S102 -- our own code, from the plan's types
        return env["fill"]

    def block(self):
        """A new (storage, pointer array)."""
        storage = (c_char * (self.size + _SLACK))()
        base = addressof(storage)
        ptrs = (c_void_p * max(self.n, 1))(*[base + o for o in self.offsets])
        return storage, ptrs


def _value_of(i, value, want, runtime, buffer_type):
    """One argument -> what the plan's packer takes for `want` (an _Arg
    class or ByValue), with every check and a precise error."""
    if isinstance(value, buffer_type):
        if want is not ptr:
            raise TypeError("launch argument %d: a Buffer is passed as a pointer, but the "
                            "signature says %s" % (i, want.__name__))
        if value._runtime is not runtime:
            raise ValueError("launch argument %d: the buffer belongs to another runtime; "
                             "copy it into this one (Buffer.copy_from)" % i)
        return value.address  # EHANDLE when closed
    if isinstance(want, ByValue):
        return _bytes_of(i, value, want)
    if isinstance(value, _Arg):
        if type(value) is not want:
            raise TypeError("launch argument %d: %r, but the signature says %s"
                            % (i, value, want.__name__))
        value = value.value
    elif isinstance(value, ctypes._SimpleCData):
        if _CTYPES.get(type(value)) is not want:
            raise TypeError("launch argument %d: %r, but the signature says %s"
                            % (i, value, want.__name__))
        value = value.value
    if want.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = operator.index(value) if not hasattr(value, "__float__") \
                    else float(value)
            except TypeError:
                raise TypeError("launch argument %d: %r is not a number" % (i, value)) \
                    from None
        try:
            struct.pack(want.code, value)
        except (OverflowError, struct.error):
            raise OverflowError("launch argument %d: %r does not fit %s"
                                % (i, value, want.__name__)) from None
        return value
    if isinstance(value, bool) or isinstance(value, float):
        raise TypeError("launch argument %d: %r is not an int (%s)" % (i, value, want.__name__))
    try:
        value = operator.index(value)  # ints, numpy integers
    except TypeError:
        raise TypeError("launch argument %d: %r is not an int (%s)"
                        % (i, value, want.__name__)) from None
    lo = -(1 << (want.bits - 1)) if want.signed else 0
    hi = (1 << (want.bits - 1 if want.signed else want.bits)) - 1
    if not lo <= value <= hi:
        raise OverflowError("launch argument %d: %d does not fit %s" % (i, value, want.__name__))
    return value


def _bytes_of(i, value, want):
    """A struct argument's bytes, of exactly the parameter's size."""
    if want.type is not None and _is_ctypes_struct(want.type) and \
            not isinstance(value, want.type):
        raise TypeError("launch argument %d: %r, but the signature says %s"
                        % (i, value, want.__name__))
    if isinstance(value, (ctypes.Structure, ctypes.Union, ctypes.Array)):
        data = bytes(memoryview(value).cast("B"))
    elif hasattr(value, "dtype") and hasattr(value, "tobytes") and \
            getattr(value.dtype, "fields", None) is not None:  # numpy structured scalar
        data = value.tobytes()
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError("launch argument %d: %r is not a struct (a ctypes.Structure, a numpy "
                        "structured scalar, or bytes)" % (i, value))
    if len(data) != want.size:
        raise ValueError("launch argument %d: %d bytes, but the parameter is %d (%s)"
                         % (i, len(data), want.size, want.__name__))
    return data


def _untyped_spec(i, value, buffer_type):
    """The type of an argument given without a signature."""
    t = type(value)
    if t in _SIGNATURE.values():
        return t
    if isinstance(value, buffer_type):
        return ptr
    if t in _CTYPES:
        return _CTYPES[t]
    if isinstance(value, (ctypes.Structure, ctypes.Union)):
        return ByValue(ctypes.sizeof(value), ctypes.alignment(value), t)
    dtype = getattr(value, "dtype", None)
    if dtype is not None and getattr(dtype, "fields", None) is not None and \
            hasattr(value, "tobytes"):
        return ByValue(dtype.itemsize, dtype.alignment, dtype)
    if isinstance(value, bytes):
        n = len(value)
        return ByValue(n, min(16, n & -n) if n else 1)
    raise TypeError("launch argument %d: %r has no C type; wrap it (t4a_gpu.u64(%r), "
                    "t4a_gpu.f32(...)) or pass a signature" % (i, value, value))


def untyped_key(args):
    """The plan key of arguments given without a signature: their types,
    and the size of those whose type does not fix it."""
    key = []
    for v in args:
        t = type(v)
        if t is bytes:
            key.append((t, len(v)))
        elif hasattr(v, "dtype") and getattr(v.dtype, "fields", None) is not None:
            key.append((t, v.dtype))
        else:
            key.append(t)
    return tuple(key)


def untyped_plan(args, buffer_type):
    return Plan([_untyped_spec(i, v, buffer_type) for i, v in enumerate(args)], False,
                buffer_type)


def values(plan, args, runtime, buffer_type):
    """The packer's values of `args` under `plan` (all checks, precise errors)."""
    if len(args) != plan.n:
        raise TypeError("launch: %d arguments, the signature has %d" % (len(args), plan.n))
    return [_value_of(i, v, s, runtime, buffer_type) for i, (v, s) in
            enumerate(zip(args, plan.specs))]
