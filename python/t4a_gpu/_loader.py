"""t4a_gpu._loader -- finding and opening libt4a_gpu, the loader library.

Which file: an explicit path (load_library(path), Backend(library=...)),
else $T4A_GPU_LIBRARY when set, else "libt4a_gpu.so.0" through the dynamic
linker's usual search (LD_LIBRARY_PATH, the ld.so cache, the default
directories), else what ctypes.util.find_library("t4a_gpu") finds. The
prototypes come from the generated t4a_gpu._abi.LOADER_FUNCTIONS, so a
function added to <t4a/gpu_loader.h> needs no edit here.
"""
import ctypes
import ctypes.util
import os
import threading

from . import _abi
from .errors import error_class

__all__ = ["load_library", "library_path"]

SONAME = "libt4a_gpu.so.0"
_lock = threading.Lock()
_libraries = {}  # path as asked -> configured CDLL
_default = None


def _configure(lib):
    for name, restype, argtypes, _params, _doc in _abi.LOADER_FUNCTIONS:
        fn = getattr(lib, name, None)
        if fn is None:  # a loader older than these bindings: the function is absent
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def _open(path):
    lib = _libraries.get(path)
    if lib is None:
        lib = _libraries[path] = _configure(ctypes.CDLL(path))
        lib._t4a_path = path
    return lib


def _not_found(message):
    return error_class(_abi.T4A_ENOBACKEND)(_abi.T4A_ENOBACKEND, "load_library", message)


def load_library(path=None):
    """The loader library as a ctypes.CDLL with every prototype set.

    Raises T4AError T4A_ENOBACKEND (status -18) naming what was tried when
    no file can be loaded. Thread-safe; the same file is opened once.
    """
    global _default
    with _lock:
        if path is not None:
            try:
                return _open(os.fspath(path))
            except OSError as e:
                raise _not_found("cannot load the loader library %s: %s; pass the path of "
                                 "libt4a_gpu.so.0" % (path, e)) from None
        if _default is not None:
            return _default
        env = os.environ.get("T4A_GPU_LIBRARY")
        tried = []
        candidates = [env] if env else [SONAME, ctypes.util.find_library("t4a_gpu")]
        for candidate in candidates:
            if not candidate:
                continue
            try:
                _default = _open(candidate)
                return _default
            except OSError as e:
                tried.append("%s (%s)" % (candidate, e))
        raise _not_found("the loader library libt4a_gpu was not found: tried %s; install "
                         "t4a-gpu-backend, or set T4A_GPU_LIBRARY to the path of "
                         "libt4a_gpu.so.0" % ", ".join(tried or ["$T4A_GPU_LIBRARY (empty)"]))


def library_path(lib=None):
    """The name or path the loader library was opened by."""
    return (lib or load_library())._t4a_path
