"""t4a_gpu._hostmem -- host memory of Python objects, without copies.

Copies accept any object with the buffer protocol: bytes, bytearray,
memoryview, array.array, mmap, numpy arrays... The memory is passed to the
backend in place (zero-copy) when it is C-contiguous; anything else is
refused with a ValueError that says so (there is no hidden copy that would
make a write land in a temporary). A destination must be writable.
"""
import ctypes
from contextlib import contextmanager
from ctypes import addressof, byref, c_char, c_void_p

__all__ = ["borrow", "host_range", "host_rows"]


class _PyBuffer(ctypes.Structure):
    """Py_buffer (stable ABI since Python 3.11, unchanged layout since 3.3)."""

    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p),
                ("len", ctypes.c_ssize_t), ("itemsize", ctypes.c_ssize_t),
                ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p),
                ("strides", ctypes.c_void_p), ("suboffsets", ctypes.c_void_p),
                ("internal", ctypes.c_void_p)]


# CPython's own buffer API, for the address of read-only memory (bytes, a
# read-only numpy array): ctypes' from_buffer needs a writable buffer.
# Elsewhere (PyPy) read-only sources are copied once instead.
try:
    _get_buffer = ctypes.pythonapi.PyObject_GetBuffer
    _get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
    _get_buffer.restype = ctypes.c_int
    _release_buffer = ctypes.pythonapi.PyBuffer_Release
    _release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
    _release_buffer.restype = None
except (AttributeError, ValueError):  # no ctypes.pythonapi
    _get_buffer = None

_PyBUF_SIMPLE = 0


def _view(obj, what, contiguous=True):
    if isinstance(obj, str):
        raise TypeError("%s: a str has no bytes; encode it first (s.encode())" % what)
    try:
        m = memoryview(obj)
    except TypeError:
        raise TypeError("%s: %s does not support the buffer protocol (use bytes, bytearray, "
                        "memoryview, array.array or a numpy array)"
                        % (what, type(obj).__name__)) from None
    if contiguous and not m.c_contiguous:
        m.release()
        raise ValueError("%s: the memory of this %s is not C-contiguous; copy it into a "
                         "contiguous object first (numpy.ascontiguousarray, bytes(...))"
                         % (what, type(obj).__name__))
    return m


class _Exported:
    """What keeps a read-only object's memory exported through one call:
    the Py_buffer taken by PyObject_GetBuffer (or a copy), and the view."""

    __slots__ = ("view", "m", "copy")

    def __init__(self, view, m, copy=None):
        self.view, self.m, self.copy = view, m, copy

    def release(self):
        if self.view is not None:
            _release_buffer(byref(self.view))
            self.view = None
        self.copy = None
        self.m.release()


def host_range(obj, writable, what):
    """(pointer argument, nbytes, holder) of obj's memory for one call.

    The pointer is a ctypes argument (bytes, a c_void_p, or None when
    nbytes is 0); holder (None, or an object with release()) keeps the
    memory exported until the call returned: call holder.release() then.
    Zero-copy (except on a Python without ctypes.pythonapi, where a
    read-only source is copied once). A bytes source costs no view at all.
    """
    if type(obj) is bytes:
        if writable:
            raise TypeError("%s: the destination must be writable (bytearray, array.array, "
                            "a writable numpy array, ...), not a read-only bytes" % what)
        return (obj if obj else None), len(obj), None
    m = _view(obj, what)
    try:
        readonly = m.readonly
        if writable and readonly:
            raise TypeError("%s: the destination must be writable (bytearray, array.array, "
                            "a writable numpy array, ...), not a read-only %s"
                            % (what, type(obj).__name__))
        n = m.nbytes
        if n == 0:
            m.release()
            return None, 0, None
        if not readonly:
            # The temporary c_char's export of m ends at once; m's export of obj keeps
            # the memory in place (a bytearray cannot be resized) until m.release().
            return c_void_p(addressof(c_char.from_buffer(m))), n, m
        if _get_buffer is not None:
            view = _PyBuffer()
            _get_buffer(m, byref(view), _PyBUF_SIMPLE)
            return c_void_p(view.buf), n, _Exported(view, m)
        copy = (c_char * n).from_buffer_copy(m)
        return c_void_p(addressof(copy)), n, _Exported(None, m, copy)
    except BaseException:
        m.release()
        raise


@contextmanager
def borrow(obj, writable, what):
    """Yields (address, nbytes) of obj's memory for the duration of a call.

    Zero-copy; the object stays exported (a bytearray cannot be resized, ...)
    until the block ends. address is None when nbytes is 0.
    """
    ptr, n, holder = host_range(obj, writable, what)
    try:
        if ptr is None or isinstance(ptr, c_void_p):
            yield (ptr.value if ptr is not None else None), n
        else:  # bytes: its address, for a c_void_p field
            yield ctypes.cast(ptr, c_void_p).value, n
    finally:
        if holder is not None:
            holder.release()


_PyBUF_STRIDES = 0x18  # PyBUF_ND | 0x10
_PyBUF_WRITABLE = 0x1


def host_rows(obj, writable, what):
    """(pointer, rows, width, pitch, holder) of a 2-D host array whose rows
    are contiguous (a numpy array or any buffer with strides: shape (rows,
    n), strides (pitch, itemsize) with pitch >= n * itemsize > 0); a 1-D
    C-contiguous object is one row. Only the rows' width bytes are read or
    written, all of them elements of `obj`. holder.release() after the
    call."""
    m = _view(obj, what, contiguous=False)
    try:
        if writable and m.readonly:
            raise TypeError("%s: the destination must be writable, not a read-only %s"
                            % (what, type(obj).__name__))
        if m.ndim == 1 and m.c_contiguous or m.ndim == 0:
            rows, width, pitch = (1, m.nbytes, m.nbytes)
        elif m.ndim == 2 and m.strides[1] == m.itemsize and m.strides[0] > 0 and \
                m.strides[0] >= m.shape[1] * m.itemsize:
            rows, width, pitch = m.shape[0], m.shape[1] * m.itemsize, m.strides[0]
        else:
            raise ValueError("%s: a 2-D array whose rows are contiguous and ascending "
                             "(strides (pitch, itemsize), pitch >= the row's bytes) or a 1-D "
                             "contiguous one; this one has shape %r and strides %r"
                             % (what, m.shape, m.strides))
        if rows == 0 or width == 0:
            m.release()
            return None, rows, width, max(pitch, width), None
        if _get_buffer is None:
            raise ValueError("%s: strided host arrays need ctypes.pythonapi (CPython)" % what)
        view = _PyBuffer()
        _get_buffer(m, byref(view), _PyBUF_STRIDES | (_PyBUF_WRITABLE if writable else 0))
        return c_void_p(view.buf), rows, width, pitch, _Exported(view, m)
    except BaseException:
        m.release()
        raise


def nbytes_of(obj, what):
    m = _view(obj, what)
    try:
        return m.nbytes
    finally:
        m.release()
