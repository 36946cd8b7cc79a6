"""t4a_gpu._interop -- device memory shared with other frameworks, without
copies: DLPack (``__dlpack__``, ``__dlpack_device__``, ``from_dlpack``) and
the CUDA Array Interface (``__cuda_array_interface__``, version 3).

Exports. ``Buffer.as_tensor(dtype, shape, strides, offset)`` is a typed view
(a ``TensorView``) of a buffer range; a Buffer itself exports as a 1-D uint8
tensor. ``__dlpack__`` follows the DLPack stream protocol: the consumer's
stream (an int; ``None`` means the legacy default stream, ``-1`` no ordering)
is made to wait, GPU-side, for everything the buffer's runtime enqueued so
far (``seal`` + ``stream_wait_witness``); the capsule is versioned
(``"dltensor_versioned"``) when the consumer passes ``max_version >= (1, 0)``.
While a consumer holds an exported tensor (until it calls the deleter), the
Buffer stays alive and closing it, its runtime or its backend raises
``BufferError`` (as for ``HostBuffer.view()``): the memory must outlive the
tensor. ``__cuda_array_interface__`` gives the runtime's stream; a consumer
synchronises on it (the CAI v3 rule). The interface has no deleter, but a
consumer keeps the object whose interface it read: while that object (the
TensorView, or the Buffer itself) lives, the buffer counts as exported in the
same way. Every view lies in its buffer (checked when it is made).

Imports. ``from_dlpack(obj, runtime)`` asks ``obj.__dlpack__`` for a capsule
whose work is ordered before the runtime's stream (the producer makes our
stream wait), and wraps the tensor as an external Buffer (``dlpack_import``):
the producer's memory stays alive until that Buffer is closed and its last
use completed; then the producer's deleter runs. ``Runtime.wrap`` wraps any
device address the same way, with a Python callable as the release.

Ordering the other way: ``Runtime.order_stream_after(stream, witness)`` makes
a framework's stream wait for t4a's work; ``Runtime.wait_stream`` and
``Runtime.wait_event`` make the runtime wait for a framework's.
"""
import ctypes
import itertools
import operator
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_uint64, c_void_p, py_object

from . import _abi
from .errors import error_class

__all__ = ["TensorView", "DTYPES", "from_dlpack"]

# name: (DLPack code, bits, lanes, CUDA Array Interface typestr or None)
DTYPES = {
    "bool": (_abi.T4A_DL_BOOL, 8, 1, "|b1"),
    "int8": (_abi.T4A_DL_INT, 8, 1, "|i1"),
    "uint8": (_abi.T4A_DL_UINT, 8, 1, "|u1"),
    "int16": (_abi.T4A_DL_INT, 16, 1, "<i2"),
    "uint16": (_abi.T4A_DL_UINT, 16, 1, "<u2"),
    "int32": (_abi.T4A_DL_INT, 32, 1, "<i4"),
    "uint32": (_abi.T4A_DL_UINT, 32, 1, "<u4"),
    "int64": (_abi.T4A_DL_INT, 64, 1, "<i8"),
    "uint64": (_abi.T4A_DL_UINT, 64, 1, "<u8"),
    "float16": (_abi.T4A_DL_FLOAT, 16, 1, "<f2"),
    "float32": (_abi.T4A_DL_FLOAT, 32, 1, "<f4"),
    "float64": (_abi.T4A_DL_FLOAT, 64, 1, "<f8"),
    "bfloat16": (_abi.T4A_DL_BFLOAT, 16, 1, None),
    "complex64": (_abi.T4A_DL_COMPLEX, 64, 1, "<c8"),
    "complex128": (_abi.T4A_DL_COMPLEX, 128, 1, "<c16"),
}
_NAMES = {v[:3]: k for k, v in DTYPES.items()}


def _range_error(message, call="as_tensor"):
    return error_class(_abi.T4A_ERANGE)(_abi.T4A_ERANGE, call, message)


def dtype_of(dtype):
    """(name, code, bits, lanes) of a dtype given by name ("float32"), by a
    numpy or framework dtype (its str: "float32", "torch.float32"), or as
    (code, bits, lanes)."""
    if isinstance(dtype, tuple) and len(dtype) == 3:
        code, bits, lanes = (operator.index(x) for x in dtype)
        for what, value, top in (("code", code, 255), ("bits", bits, 255),
                                 ("lanes", lanes, 65535)):
            if not (0 if what == "code" else 1) <= value <= top:
                raise ValueError("dtype %r: %s %d does not fit a DLDataType; pass a code of "
                                 "0 to 255, bits of 1 to 255 and lanes of 1 to 65535"
                                 % (dtype, what, value))
        return _NAMES.get((code, bits, lanes), "dl%d_%dx%d" % (code, bits, lanes)), code, bits, \
            lanes
    name = str(getattr(dtype, "name", None) or dtype)
    name = name.rsplit(".", 1)[-1]  # torch.float32, jnp.float32 ...
    if name not in DTYPES:
        raise ValueError("dtype %r: not one of %s (or pass (code, bits, lanes))"
                         % (dtype, ", ".join(DTYPES)))
    return (name,) + DTYPES[name][:3]


# ---------------------------------------------------------------------------
# PyCapsules through ctypes (CPython's C API; the GIL is held in each call).
# ---------------------------------------------------------------------------

_api = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(py_object, c_void_p, c_char_p, c_void_p)(
    ("PyCapsule_New", _api))
_capsule_is_valid = ctypes.PYFUNCTYPE(c_int, py_object, c_char_p)(("PyCapsule_IsValid", _api))
_capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, py_object, c_char_p)(
    ("PyCapsule_GetPointer", _api))
_capsule_set_name = ctypes.PYFUNCTYPE(c_int, py_object, c_char_p)(("PyCapsule_SetName", _api))
# In the destructor the capsule is being freed: it is passed as a bare
# address, never as an object (no reference may be taken on it).
_raw_is_valid = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api))
_raw_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api))

# Capsule names: static (a capsule keeps the pointer), as the protocol names them.
_VERSIONED, _LEGACY = b"dltensor_versioned", b"dltensor"
_USED_VERSIONED, _USED_LEGACY = b"used_dltensor_versioned", b"used_dltensor"


def _capsule_destructor(capsule):
    """An exported capsule nobody consumed: its tensor's deleter runs (a
    consumer renames the capsule "used_..." and calls the deleter itself)."""
    for name, cls in ((_VERSIONED, _abi.t4a_dl_managed_tensor_versioned),
                      (_LEGACY, _abi.t4a_dl_managed_tensor)):
        if _raw_is_valid(capsule, name):
            tensor = ctypes.cast(_raw_pointer(capsule, name), POINTER(cls))
            if tensor.contents.deleter:
                tensor.contents.deleter(tensor)
            return


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)(_capsule_destructor)

# ---------------------------------------------------------------------------
# Live exports and release callbacks: keyed by a token that crosses C as the
# `user` pointer; the C side calls one module-level ctypes callback.
# ---------------------------------------------------------------------------

_tokens = itertools.count(1)
_live = {}  # token -> what must stay alive, or the Python release callable
_live_lock = threading.Lock()


class _ExportMark:
    """Held while an export lives; its weak reference counts as a view of
    the buffer (closing the buffer meanwhile is a BufferError)."""

    __slots__ = ("__weakref__",)


def _register(value):
    with _live_lock:
        token = next(_tokens)
        _live[token] = value
    return token


def _on_export_deleted(user):
    with _live_lock:
        entry = _live.pop(user, None)  # drops the mark and the reference to the buffer
    if entry is None:
        return
    _, view, stream = entry
    # The consumer may drop its tensor while its kernels on that stream still
    # read the memory (PyTorch calls the deleter at once): when it named a
    # default stream (which never goes away), later reuse of the block by the
    # runtime waits for what that stream holds now. An explicit stream is the
    # consumer's to order (Runtime.wait_stream) before it drops the tensor.
    if stream in (None, 1, 2) and not view.buffer.runtime.closed:
        try:
            view.buffer.runtime.wait_stream(stream)
        except Exception:  # noqa: BLE001 -- a deleter must not raise
            pass


def _on_release(user):
    with _live_lock:
        release = _live.pop(user, None)
    if release is not None:
        release()


_EXPORT_DELETED = ctypes.CFUNCTYPE(None, c_void_p)(_on_export_deleted)
_RELEASE = ctypes.CFUNCTYPE(None, c_void_p)(_on_release)


def release_callback(release):
    """(ctypes callback, user) running `release()` once, or (None, None)."""
    if release is None:
        return None, None
    if not callable(release):
        raise TypeError("release must be callable (or None)")
    return _RELEASE, _register(release)


def forget(user):
    """Drops a registration whose handover failed (nothing will call it)."""
    if user is not None:
        with _live_lock:
            _live.pop(user, None)


def stream_handle(stream):
    """A consumer's stream as the C slots take it: an int (CUstream), an
    object with .cuda_stream (PyTorch) or .ptr (CuPy), or None (the legacy
    default stream)."""
    if stream is None:
        return None
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            stream = getattr(stream, attr)
            break
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError("a stream is an int (a CUstream), or a framework stream object")
    return stream


# ---------------------------------------------------------------------------
# Exports.
# ---------------------------------------------------------------------------


_INT64 = 1 << 63  # int64 values lie in [-_INT64, _INT64)


def _int64(value, what, lo=-_INT64):
    """A caller's integer (an int or anything with __index__, e.g. a numpy
    integer; not a float), in [lo, 2^63)."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError("%s is %r; pass an integer" % (what, value)) from None
    if not lo <= value < _INT64:
        raise ValueError("%s is %d; pass one in [%d, 2^63)" % (what, value, lo))
    return value


class TensorView:
    """A range of a Buffer seen as a tensor (dtype, shape, strides in
    elements, offset in bytes to element 0), exported without copies through
    __dlpack__ and __cuda_array_interface__. Made by Buffer.as_tensor.

    Every element the view names lies in the buffer: the bytes from the
    lowest to the highest element its shape and strides (the given ones, else
    row-major) reach, computed exactly, must lie in [0, nbytes) (an empty
    view, any extent 0, touches nothing and needs only offset <= nbytes);
    else errors.ERANGE, as dlpack_export says for the same view. A view is
    immutable: its fields are what was checked."""

    __slots__ = ("_buffer", "_dtype", "_code", "_bits", "_lanes", "_itemsize", "_shape",
                 "_strides", "_offset", "_readonly", "__weakref__")

    def __init__(self, buffer, dtype="uint8", shape=None, strides=None, offset=0,
                 readonly=False):
        self._buffer = buffer
        self._dtype, self._code, self._bits, self._lanes = dtype_of(dtype)
        if self._bits * self._lanes % 8:
            raise ValueError("dtype %s: elements are not whole bytes; use a byte type"
                             % self._dtype)
        self._itemsize = e = self._bits * self._lanes // 8
        offset = _int64(offset, "offset", 0)
        if shape is None:
            shape = (max(buffer.nbytes - offset, 0) // e,)
        else:
            try:
                shape = (operator.index(shape),)  # one extent
            except TypeError:
                shape = tuple(shape)
        shape = tuple(_int64(n, "shape[%d]" % i, 0) for i, n in enumerate(shape))
        if len(shape) > _abi.T4A_DLPACK_MAX_NDIM:
            raise ValueError("shape has %d dimensions; use 0 to %d"
                             % (len(shape), _abi.T4A_DLPACK_MAX_NDIM))
        if strides is not None:
            strides = tuple(strides)
            if len(strides) != len(shape):
                raise ValueError("strides has %d entries, shape %d; pass one stride per "
                                 "dimension" % (len(strides), len(shape)))
            strides = tuple(_int64(s, "strides[%d]" % i) for i, s in enumerate(strides))
            for i, s in enumerate(strides):  # the interface's strides are in bytes
                if not -_INT64 <= s * e < _INT64:
                    raise ValueError("strides[%d] is %d elements, %d bytes: more than int64 "
                                     "counts; pass a smaller stride" % (i, s, s * e))
        self._shape, self._strides, self._offset = shape, strides, offset
        self._readonly = bool(readonly)
        self._check_span(buffer.nbytes)

    def _check_span(self, nbytes):
        """errors.ERANGE unless every element lies in the buffer's nbytes
        (Python ints: nothing overflows)."""
        offset, e, shape = self._offset, self._itemsize, self._shape
        if 0 in shape:  # no element: the view touches nothing
            if offset <= nbytes:
                return
            raise _range_error("as_tensor: an empty view at offset %d lies outside the "
                               "buffer's %d bytes; pass an offset of at most %d"
                               % (offset, nbytes, nbytes))
        strides = self._strides
        if strides is None:
            strides, step = [0] * len(shape), 1
            for i in reversed(range(len(shape))):
                strides[i], step = step, step * shape[i]
        lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0) * e
        hi = (sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + 1) * e
        if offset + lo < 0 or offset + hi > nbytes:
            raise _range_error("as_tensor: elements at bytes [%d, %d) from offset %d lie "
                               "outside the buffer's %d bytes; check the offset, shape and "
                               "strides" % (lo, hi, offset, nbytes))

    buffer = property(lambda self: self._buffer, doc="the Buffer viewed")
    dtype = property(lambda self: self._dtype, doc="the dtype's name")
    itemsize = property(lambda self: self._itemsize, doc="bytes per element")
    shape = property(lambda self: self._shape, doc="extents (a tuple of ints)")
    strides = property(lambda self: self._strides,
                       doc="strides in elements (a tuple), or None: row-major")
    offset = property(lambda self: self._offset, doc="bytes from the buffer's start to "
                      "element 0")
    readonly = property(lambda self: self._readonly, doc="exported read-only where the "
                        "protocol can say so")

    def __repr__(self):
        return "<t4a_gpu.TensorView %s%r of %r>" % (self.dtype, self.shape, self.buffer)

    # -- DLPack ----------------------------------------------------------------

    def __dlpack_device__(self):
        """(device type, device id): (kDLCUDA, ordinal), or (kDLCUDAHost, 0)
        for a buffer wrapping page-locked host memory; on the host backend
        (kDLCPU, 0): its memory is the CPU's (what dlpack_export says)."""
        if _on_cpu(self.buffer.runtime):
            return (_abi.T4A_DL_CPU, 0)
        if self.buffer._host:
            return (_abi.T4A_DL_CUDA_HOST, 0)
        return (_abi.T4A_DL_CUDA, self.buffer.runtime.device)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this view (the DLPack Python protocol)."""
        if copy:
            raise BufferError("t4a exports its memory in place; copy=True would need a copy "
                              "it does not make (copy the buffer first)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError("dl_device %r: the memory is on %r and t4a does not move it"
                              % (tuple(dl_device), self.__dlpack_device__()))
        buf, rt = self.buffer, self.buffer.runtime
        if stream == 0 or (stream is not None and
                           (isinstance(stream, bool) or not isinstance(stream, int))):
            raise ValueError("stream %r: pass None, -1 (no ordering) or a CUstream (1: legacy "
                             "default, 2: per-thread default); 0 is ambiguous" % (stream,))
        device = self.__dlpack_device__()[0]
        if device == _abi.T4A_DL_CPU and stream not in (None, -1):
            raise BufferError("stream %r: a kDLCPU tensor has no stream; pass None (the data "
                              "is complete on return) or -1" % (stream,))
        if device in (_abi.T4A_DL_CUDA_HOST, _abi.T4A_DL_CPU) and stream is None:
            rt.synchronize()  # host memory for a host consumer: the data must be there
        elif device == _abi.T4A_DL_CPU:
            pass  # -1: the consumer orders itself
        elif stream != -1:
            rt.order_stream_after(stream)  # None: the legacy default stream
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        q = _abi.t4a_dlpack_export()
        q.struct_size = ctypes.sizeof(q)
        q.flags = (_abi.T4A_DLPACK_VERSIONED if versioned else 0) | \
            (_abi.T4A_DLPACK_READ_ONLY if versioned and self.readonly else 0)
        q.offset = self.offset
        q.dtype = _abi.t4a_dl_data_type(self._code, self._bits, self._lanes)
        q.ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(len(self.shape), 1))(*self.shape)
        strides = (ctypes.c_int64 * max(len(self.shape), 1))(*(self.strides or ()))
        q.shape = ctypes.cast(shape, POINTER(ctypes.c_int64))
        q.strides = ctypes.cast(strides, POINTER(ctypes.c_int64)) if self.strides else None
        # The export is recorded before it exists: a close() on another thread from here on
        # is a BufferError, never a free of the block the capsule will name.
        mark = _ExportMark()
        held = buf._node.hold(mark, "dlpack_export")
        token = _register((mark, self, stream))
        q.on_delete = _EXPORT_DELETED
        q.user = token
        out = c_void_p()
        try:
            buf._call("dlpack_export", buf.handle, byref(q), byref(out))
        except BaseException:
            forget(token)
            buf._node.drop(held)
            raise
        name = _VERSIONED if versioned else _LEGACY
        try:
            return _capsule_new(out, name, ctypes.cast(_CAPSULE_DESTRUCTOR, c_void_p))
        except BaseException:  # no capsule (out of memory): nobody else can delete it
            cls = _abi.t4a_dl_managed_tensor_versioned if versioned else \
                _abi.t4a_dl_managed_tensor
            tensor = ctypes.cast(out, POINTER(cls))
            tensor.contents.deleter(tensor)
            raise

    # -- CUDA Array Interface -------------------------------------------------

    @property
    def __cuda_array_interface__(self):
        """Version 3: the runtime's stream is given; a consumer synchronises
        on it before using the data. The consumer keeps this view (CuPy's
        and Numba's owner, PyTorch's deleter) and the interface has no
        deleter: from now on, while the view lives, the buffer counts as
        exported (closing it, its runtime or its backend is a BufferError)."""
        return self._interface(self)

    def _interface(self, holder):
        """The interface's dict; `holder` (the object the consumer keeps) is
        recorded as an export of the buffer before the dict is returned."""
        if _on_cpu(self._buffer.runtime):  # hasattr() must say False: it is not CUDA memory
            raise AttributeError("__cuda_array_interface__: the host backend's memory is the "
                                 "CPU's, not CUDA memory; export it through __dlpack__ "
                                 "(kDLCPU)")
        typestr = DTYPES.get(self.dtype, (None,) * 4)[3]
        if typestr is None:
            raise AttributeError("dtype %s has no CUDA Array Interface typestr; export it "
                                 "through __dlpack__" % self.dtype)
        buf, empty = self._buffer, 0 in self._shape
        cai = {
            "shape": self._shape,
            "typestr": typestr,
            "data": (0 if empty else buf.address + self._offset, self._readonly),
            "strides": None if self._strides is None else
            tuple(s * self._itemsize for s in self._strides),
            "version": 3,
            "stream": buf.runtime.raw().stream,
        }
        # Recorded before the address leaves: a close() since the address was read made
        # this EHANDLE; one from now on is a BufferError.
        buf._node.hold(holder, "__cuda_array_interface__")
        return cai


# ---------------------------------------------------------------------------
# Imports.
# ---------------------------------------------------------------------------


def _on_cpu(runtime):
    """Whether the runtime's memory is the CPU's (the host backend, whose
    exports are kDLCPU and which has no CUDA stream to order)."""
    return runtime.backend.name == "host"


def _refuse(status, message):
    return error_class(status)(status, "from_dlpack", message)


def _read_tensor(ptr, versioned):
    """(device, dtype name, shape, strides) of a producer's tensor, each
    count and pointer checked before what it counts or points to is read
    (the checks dlpack_import makes, first: a hostile ndim must not make
    Python read past the shape). errors.EINVAL / EUNSUPPORTED, as the plugin
    says for the same tensor."""
    if not ptr:
        raise _refuse(_abi.T4A_EINVAL, "from_dlpack: the capsule holds a NULL tensor; pass "
                      "a DLPack producer's capsule")
    if versioned:
        m = ctypes.cast(ptr, POINTER(_abi.t4a_dl_managed_tensor_versioned)).contents
        if m.version.major != _abi.T4A_DLPACK_MAJOR:  # its other fields may be laid out anew
            raise _refuse(_abi.T4A_EUNSUPPORTED,
                          "from_dlpack: the tensor is DLPack %d.%d, t4a reads major %d; ask "
                          "the producer for DLPack %d (max_version)"
                          % (m.version.major, m.version.minor, _abi.T4A_DLPACK_MAJOR,
                             _abi.T4A_DLPACK_MAJOR))
        t = m.dl_tensor
    else:
        t = ctypes.cast(ptr, POINTER(_abi.t4a_dl_managed_tensor)).contents.dl_tensor
    ndim = t.ndim
    if not 0 <= ndim <= _abi.T4A_DLPACK_MAX_NDIM:
        raise _refuse(_abi.T4A_EINVAL, "from_dlpack: ndim %d; use 0 to %d dimensions"
                      % (ndim, _abi.T4A_DLPACK_MAX_NDIM))
    if ndim and not t.shape:
        raise _refuse(_abi.T4A_EINVAL, "from_dlpack: shape is NULL with ndim %d; pass ndim "
                      "extents" % ndim)
    shape = tuple(t.shape[i] for i in range(ndim))
    strides = tuple(t.strides[i] for i in range(ndim)) if ndim and t.strides else None
    name = _NAMES.get((t.dtype.code, t.dtype.bits, t.dtype.lanes),
                      "dl%d_%dx%d" % (t.dtype.code, t.dtype.bits, t.dtype.lanes))
    return (t.device.device_type, t.device.device_id), name, shape, strides


def from_dlpack(obj, runtime, *, allow_read_only=False):
    """Wraps a DLPack producer's tensor (an object with __dlpack__, or a
    capsule) as an external Buffer of `runtime`, without a copy. The
    producer orders its pending work before the runtime's stream (the
    DLPack stream protocol); a bare capsule carries no such promise. The
    Buffer has .tensor_offset (bytes from its start to element 0), .dtype,
    .shape and .strides (elements; None: row-major) of the tensor. The
    producer's memory is let go (its deleter runs) once the Buffer is closed
    and its last use completed."""
    from ._api import Buffer  # noqa: PLC0415 (the API module imports this one)

    capsule = obj
    if hasattr(obj, "__dlpack__"):
        host = hasattr(obj, "__dlpack_device__") and \
            obj.__dlpack_device__()[0] in (_abi.T4A_DL_CUDA_HOST, _abi.T4A_DL_CPU)
        # host memory, or a runtime without streams (the host backend): no stream to order
        stream = None if host or _on_cpu(runtime) else runtime.raw().stream
        try:
            capsule = obj.__dlpack__(stream=stream, max_version=(_abi.T4A_DLPACK_MAJOR,
                                                                 _abi.T4A_DLPACK_MINOR))
        except TypeError:  # a producer older than max_version
            capsule = obj.__dlpack__(stream=stream)
    if _capsule_is_valid(capsule, _VERSIONED):
        versioned, name, used = True, _VERSIONED, _USED_VERSIONED
    elif _capsule_is_valid(capsule, _LEGACY):
        versioned, name, used = False, _LEGACY, _USED_LEGACY
    else:
        raise TypeError("from_dlpack: %r is neither a DLPack producer nor an unused DLPack "
                        "capsule (a capsule is consumed once)" % (obj,))
    ptr = _capsule_pointer(capsule, name)
    device, dtype, shape, strides = _read_tensor(ptr, versioned)
    flags = (_abi.T4A_DLPACK_VERSIONED if versioned else 0) | \
        (_abi.T4A_DLPACK_ALLOW_READ_ONLY if allow_read_only else 0)
    handle, offset = _abi.t4a_buffer(), c_uint64()
    runtime._call("dlpack_import", c_void_p(ptr), flags, byref(handle), byref(offset))
    _capsule_set_name(capsule, used)  # ours now: the capsule must not delete it
    buf = Buffer._adopt(runtime, handle, host=device[0] == _abi.T4A_DL_CUDA_HOST and
                        not _on_cpu(runtime))
    buf.tensor_offset, buf.dtype, buf.shape, buf.strides = offset.value, dtype, shape, strides
    return buf
