"""t4a_gpu -- Python bindings of the t4a GPU backend (libt4a_gpu and its plugins).

Pure Python over ctypes: no compiled extension, no third-party dependency.
Two layers:

- t4a_gpu._abi (generated from the C headers by bindgen/t4a_bindgen.py):
  every struct, handle, constant, status, table slot and loader function;
- this package's classes, built on it::

    import t4a_gpu
    with t4a_gpu.Backend() as backend:              # open + init ... close
        with backend.runtime(0) as rt:              # runtime_create ... destroy
            buf = rt.alloc(16)
            buf.write(b"0123456789abcdef")
            assert buf.read() == b"0123456789abcdef"

Failures raise t4a_gpu.errors.<STATUS> (subclasses of T4AError) with the
backend's detail. Backend.call(slot, ...) reaches any slot of the table,
including ones newer than the methods here.

The loader library is found through an explicit path (Backend(library=...),
load_library(path)), $T4A_GPU_LIBRARY, or the dynamic linker's search for
libt4a_gpu.so.0.
"""
from . import _abi as abi  # the generated layer, public as t4a_gpu.abi
from . import _abi, _api, errors
from ._abi import *  # noqa: F401,F403  (T4A_* constants and statuses, the ctypes structs)
from ._api import *  # noqa: F401,F403
from ._api import parse_signature
from ._loader import library_path, load_library
from .errors import T4AError, error_class

__all__ = ["abi", "errors", "parse_signature", "library_path", "load_library", "T4AError",
           "error_class"]
__all__ += _abi.__all__
__all__ += _api.__all__
__version__ = "0.1.0"
