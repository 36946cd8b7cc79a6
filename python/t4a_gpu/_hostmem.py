"""t4a_gpu._hostmem -- host memory of Python objects, without copies.

Copies accept any object with the buffer protocol: bytes, bytearray,
memoryview, array.array, mmap, numpy arrays... The memory is passed to the
backend in place (zero-copy) when it is C-contiguous; anything else is
refused with a ValueError that says so (there is no hidden copy that would
make a write land in a temporary). A destination must be writable.
"""
import ctypes
from contextlib import contextmanager

__all__ = ["borrow"]


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


def _view(obj, what):
    if isinstance(obj, str):
        raise TypeError("%s: a str has no bytes; encode it first (s.encode())" % what)
    try:
        m = memoryview(obj)
    except TypeError:
        raise TypeError("%s: %s does not support the buffer protocol (use bytes, bytearray, "
                        "memoryview, array.array or a numpy array)"
                        % (what, type(obj).__name__)) from None
    if not m.c_contiguous:
        m.release()
        raise ValueError("%s: the memory of this %s is not C-contiguous; copy it into a "
                         "contiguous object first (numpy.ascontiguousarray, bytes(...))"
                         % (what, type(obj).__name__))
    return m


@contextmanager
def borrow(obj, writable, what):
    """Yields (address, nbytes) of obj's memory for the duration of a call.

    Zero-copy; the object stays exported (a bytearray cannot be resized, ...)
    until the block ends. address is None when nbytes is 0.
    """
    m = _view(obj, what)
    try:
        if writable and m.readonly:
            raise TypeError("%s: the destination must be writable (bytearray, array.array, "
                            "a writable numpy array, ...), not a read-only %s"
                            % (what, type(obj).__name__))
        n = m.nbytes
        if n == 0:
            yield None, 0
        elif not m.readonly:
            arr = (ctypes.c_char * n).from_buffer(m)
            try:
                yield ctypes.addressof(arr), n
            finally:
                del arr  # drops its export of m, so m can be released
        elif _get_buffer is not None:
            view = _PyBuffer()
            _get_buffer(m, ctypes.byref(view), _PyBUF_SIMPLE)
            try:
                yield view.buf, n
            finally:
                _release_buffer(ctypes.byref(view))
        else:
            copy = (ctypes.c_char * n).from_buffer_copy(m)
            yield ctypes.addressof(copy), n
    finally:
        m.release()


def nbytes_of(obj, what):
    m = _view(obj, what)
    try:
        return m.nbytes
    finally:
        m.release()
