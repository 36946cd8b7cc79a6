"""t4a_gpu -- Python bindings of the t4a GPU backend (libt4a_gpu and its plugins).

Python over ctypes, no third-party dependency; an optional compiled module
(t4a_gpu._fastcall, built at install time where a C compiler and Python's
headers are found; t4a_gpu.fastcall_enabled() says whether it is in use)
takes the hottest calls (launch, alloc, free), with the same results::

    import t4a_gpu
    with t4a_gpu.Backend() as backend:              # open + init ... close
        with backend.runtime(0) as rt:              # runtime_create ... destroy
            buf = rt.alloc(16)
            buf.write(b"0123456789abcdef")
            assert buf.read() == b"0123456789abcdef"

The API: Backend (a plugin: devices, compiler, runtimes), Runtime (one
device, one stream, one memory pool: alloc, host_alloc, register, seal,
capture, launch, memory_info, info, alloc_log), Buffer (device memory: write, read,
fill, 2-D copies, DLPack and the CUDA Array Interface), HostBuffer (pinned
memory), Witness (completion, GPU time), Artifact, Module, Function (a
kernel: launch, occupancy), Graph (captured work, replayed), and the
kernel argument types u8 ... f64, ptr. t4a_gpu.is_available() says whether
a backend can run here. t4a_gpu.alloclog turns a runtime's allocation log
into JSON and a timeline plot.

Failures raise t4a_gpu.errors.<STATUS> (subclasses of T4AError) with the
backend's detail; errors.Unavailable is the base of the statuses that mean
"cannot run on this machine". Backend.call(slot, ...) reaches any slot of
the table, including ones newer than the methods here.

The generated ctypes layer (every struct, handle, constant and status of the
C headers) is t4a_gpu.abi; its names are still reachable as attributes of
this package (t4a_gpu.T4A_EINVAL), as before, but are not part of its
namespace listing.

The loader library is found through an explicit path (Backend(library=...),
load_library(path)), $T4A_GPU_LIBRARY, or the dynamic linker's search for
libt4a_gpu.so.0.
"""
from . import _abi as abi  # the generated layer, public as t4a_gpu.abi
from . import _api, alloclog, errors
from ._api import (Artifact, Backend, BackendEntry, BackendInfo, Buffer, ByValue, CompilerInfo,
                   Device, Function, Graph, GraphInfo, HostBuffer, MemoryInfo, Module, RawRuntime,
                   Runtime, RuntimeInfo, TensorView, WAIT_FOREVER, Witness, f32, f64,
                   fastcall_enabled, from_dlpack, i8, i16, i32, i64, is_available, list_backends, loader_abi, loader_version,
                   plugin_dir, ptr, search_path, status_message, status_name, u8, u16, u32, u64)
from ._launch import parse_signature
from ._loader import library_path, load_library
from .errors import T4AError, Unavailable, error_class

__all__ = _api.__all__ + ["abi", "alloclog", "errors", "parse_signature", "library_path",
                          "load_library", "T4AError", "Unavailable", "error_class"]
__version__ = "0.1.0"


def __getattr__(name):
    """Backward compatibility: the generated names (T4A_* constants, the
    ctypes structs) were once imported into this namespace; they are
    t4a_gpu.abi's now, and still found here."""
    if name in abi.__all__:
        return getattr(abi, name)
    raise AttributeError("module 't4a_gpu' has no attribute %r" % name)


def __dir__():
    return sorted(set(__all__) | {"__version__"})
