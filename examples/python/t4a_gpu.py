"""t4a_gpu -- a small ctypes binding of libt4a_gpu and the t4a GPU backend ABI v1.

No compiled extension and no third-party package: the loader library
(libt4a_gpu) is opened with ctypes, and the backend's function table
(``t4a_gpu_backend_v1`` in <t4a/gpu_backend_v1.h>) is mirrored as a
ctypes.Structure, slot for slot, in header order.

Finding the library: $T4A_GPU_LIBRARY (a path) when set, else what
ctypes.util.find_library("t4a_gpu") finds, else "libt4a_gpu.so.0" through
the dynamic linker's usual search.

Usage::

    import t4a_gpu
    with t4a_gpu.Backend() as backend:          # open + init ... close
        for dev in backend.devices():
            print(dev.ordinal, dev.name)
        with backend.runtime(0) as rt:          # runtime_create ... destroy
            buf = rt.alloc(16)
            rt.upload(buf, b"\\0" * 16)
            data = rt.download(buf, 16)

Every failing call raises T4AError carrying the status, its name and the
backend's detail ("<what failed>; <what to do>").

The mirrors assume the C layout of the 64-bit Linux targets the backend is
built for (LP64); self_check() compares them with the header's frozen sizes.
Compatible with Python 3.7 and newer.
"""

import ctypes
import ctypes.util
import os
from collections import namedtuple
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    byref,
    c_bool,
    c_char,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

# ---------------------------------------------------------------------------
# Constants of <t4a/gpu_backend_v1.h>.
# ---------------------------------------------------------------------------

ABI_MAJOR = 1
ABI_MINOR = 0

# Status codes (T4A_STATUS_MAP). Names and messages come from the loader
# (t4a_gpu_status_name/_message); the values are needed to branch on.
T4A_OK = 0
T4A_EINVAL = -1
T4A_EHANDLE = -2
T4A_ENOMEM = -3
T4A_ENODRIVER = -4
T4A_ESTUBDRIVER = -5
T4A_ENODEVICE = -6
T4A_EDRIVEROLD = -7
T4A_EDRIVERMISMATCH = -8
T4A_ENOCOMPILER = -9
T4A_ECOMPILE = -10
T4A_ENOTFOUND = -11
T4A_ENOTREADY = -12
T4A_ETIMEOUT = -13
T4A_EUNSUPPORTED = -14
T4A_EABI = -15
T4A_EBUSY = -16
T4A_EDEVICEFAULT = -17
T4A_ENOBACKEND = -18
T4A_EDRIVER = -19
T4A_ERANGE = -20
T4A_EFOREIGNDEVICE = -21
T4A_ENOTINIT = -22
T4A_EINTERNAL = -23

WAIT_FOREVER = 2**64 - 1  # T4A_WAIT_FOREVER

# t4a_device_info.flags
DEVICE_MEMORY_POOLS = 0x1
DEVICE_INTEGRATED = 0x2
DEVICE_UNIFIED_ADDRESSING = 0x4

# host_alloc flags, artifact kinds, compile flags, compile cache selectors.
HOST_WRITE_COMBINED = 0x1
ARTIFACT_PTX = 1
ARTIFACT_CUBIN = 2
ARTIFACT_FATBIN = 3
COMPILE_PTX = 0x1
COMPILE_NO_CACHE = 0x2
CACHE_MEMORY = 0x1
CACHE_DISK = 0x2

# ---------------------------------------------------------------------------
# Handles: small structs holding a 64-bit value (all-zero = null handle).
# They are passed by value, exactly as the C structs are.
# ---------------------------------------------------------------------------


class _Handle(Structure):
    _fields_ = [("bits", c_uint64)]

    def __bool__(self):
        return self.bits != 0

    def __repr__(self):
        return "%s(0x%016x)" % (type(self).__name__, self.bits)


class t4a_runtime(_Handle):
    pass


class t4a_buffer(_Handle):
    pass


class t4a_host_buffer(_Handle):
    pass


class t4a_witness(_Handle):
    pass


class t4a_artifact(_Handle):
    pass


class t4a_module(_Handle):
    pass


class t4a_function(_Handle):
    pass


# ---------------------------------------------------------------------------
# Argument and info structs, field for field as in the header. Each begins
# with struct_size, which the caller sets to ctypes.sizeof(the struct).
# ---------------------------------------------------------------------------


class t4a_error_info(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("status", c_int32),
        ("native_code", c_int64),
        ("native_name", c_char_p),
        ("message", c_char_p),
    ]


class t4a_backend_info(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("abi_major", c_uint16),
        ("abi_minor", c_uint16),
        ("name", c_char * 32),
        ("version", c_char * 32),
        ("driver_version", c_int32),
        ("device_count", c_int32),
        ("driver_path", c_char * 256),
    ]


class t4a_device_info(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("ordinal", c_int32),
        ("name", c_char * 256),
        ("uuid", c_uint8 * 16),
        ("cc_major", c_int32),
        ("cc_minor", c_int32),
        ("total_memory", c_uint64),
        ("pci_bus_id", c_char * 32),
        ("multiprocessors", c_int32),
        ("flags", c_uint32),
        ("max_threads_per_block", c_int32),
        ("max_block_dim", c_int32 * 3),
        ("max_grid_dim", c_int32 * 3),
        ("max_shared_per_block", c_int32),
        ("max_shared_per_block_optin", c_int32),
        ("warp_size", c_int32),
    ]


class t4a_compiler_info(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("status", c_int32),
        ("version_major", c_int32),
        ("version_minor", c_int32),
        ("path", c_char * 256),
        ("reason", c_char * 256),
    ]


class t4a_runtime_options(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("staging_bytes", c_uint64),
        ("pool_release_threshold", c_uint64),
        ("cache_limit_bytes", c_uint64),
        ("copy_threads", c_uint32),
        ("reserved", c_uint32),
    ]


class t4a_runtime_counters(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32)] + [
        (name, c_uint64)
        for name in (
            "launches",
            "copies_h2d_pinned",
            "copies_d2h_pinned",
            "copies_h2d_pageable",
            "copies_d2h_pageable",
            "copies_d2d",
            "copies_cross_runtime",
            "copies_peer",
            "copies_via_host",
            "bytes_h2d",
            "bytes_d2h",
            "bytes_d2d",
            "seals",
            "seal_events_recorded",
            "staging_events_recorded",
            "events_created",
            "pending_retirements",
            "quarantined",
            "staging_bytes",
            "staging_peak_bytes",
            "cache_hits",
            "cache_misses",
            "driver_allocations",
            "driver_frees",
            "live_buffers",
            "live_host_buffers",
            "raw_sections",
        )
    ]


class t4a_cache_stats(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32)] + [
        (name, c_uint64)
        for name in (
            "entries",
            "bytes",
            "hits",
            "misses",
            "limit_bytes",
            "pinned_entries",
            "pinned_bytes",
        )
    ]


class t4a_compile_options(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("source", c_char_p),
        ("source_size", c_uint64),
        ("name", c_char_p),
        ("options", POINTER(c_char_p)),
        ("option_count", c_uint32),
        ("device_ordinal", c_int32),
    ]


class t4a_compile_cache_stats(Structure):
    _fields_ = [("struct_size", c_uint32), ("reserved", c_uint32)] + [
        (name, c_uint64)
        for name in (
            "memory_entries",
            "memory_hits",
            "disk_entries",
            "disk_bytes",
            "disk_hits",
            "disk_rejected",
            "misses",
            "disk_limit_bytes",
        )
    ]


class t4a_function_attributes(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("max_threads_per_block", c_int32),
        ("num_registers", c_int32),
        ("static_shared_bytes", c_int32),
        ("max_dynamic_shared_bytes", c_int32),
        ("local_bytes", c_int32),
        ("ptx_version", c_int32),
        ("binary_version", c_int32),
    ]


class t4a_launch_config(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("grid", c_uint32 * 3),
        ("block", c_uint32 * 3),
        ("shared_bytes", c_uint32),
    ]


class t4a_raw_runtime(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("device_ordinal", c_int32),
        ("context", c_void_p),
        ("stream", c_void_p),
        ("device", c_int32),
    ]


class t4a_raw_section(Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("reserved", c_uint32),
        ("saved_context", c_void_p),
        ("runtime_bits", c_uint64),
    ]


# <t4a/gpu_loader.h>: one installed backend, as t4a_gpu_list reports it.
class t4a_gpu_backend_entry(Structure):
    _fields_ = [("name", c_char * 64), ("path", c_char * 4096)]


# ---------------------------------------------------------------------------
# The function table. Every slot returns int (a T4A status). The order and
# the types are the ABI: never reorder, only append (as the header does).
# ---------------------------------------------------------------------------


def _slot(*argtypes):
    """The C function pointer type ``int (*)(argtypes...)``."""
    return CFUNCTYPE(c_int, *argtypes)


_rt, _buf, _hb, _u64 = t4a_runtime, t4a_buffer, t4a_host_buffer, c_uint64


class t4a_gpu_backend_v1(Structure):
    _fields_ = [
        # header
        ("struct_size", c_uint32),
        ("abi_major", c_uint16),
        ("abi_minor", c_uint16),
        ("name", c_char_p),
        ("version", c_char_p),
        # errors
        ("last_error", _slot(POINTER(t4a_error_info))),
        # backend
        ("init", _slot()),
        ("get_info", _slot(POINTER(t4a_backend_info))),
        ("device_count", _slot(POINTER(c_int32))),
        ("device_info", _slot(c_int32, POINTER(t4a_device_info))),
        ("compiler_info", _slot(POINTER(t4a_compiler_info))),
        ("peer_access_supported", _slot(c_int32, c_int32, POINTER(c_bool))),
        # runtime
        ("runtime_create", _slot(c_int32, POINTER(t4a_runtime_options), POINTER(_rt))),
        ("runtime_destroy", _slot(_rt, _u64)),
        ("runtime_counters", _slot(_rt, POINTER(t4a_runtime_counters))),
        # device memory
        ("buffer_alloc", _slot(_rt, _u64, POINTER(_buf))),
        ("buffer_free", _slot(_rt, _buf)),
        ("buffer_size", _slot(_rt, _buf, POINTER(_u64))),
        ("cache_trim", _slot(_rt, _u64)),
        ("cache_stats", _slot(_rt, POINTER(t4a_cache_stats))),
        # pinned host memory
        ("host_alloc", _slot(_rt, _u64, c_uint32, POINTER(_hb), POINTER(c_void_p))),
        ("host_free", _slot(_rt, _hb)),
        # transfers
        ("copy_h2d_pinned", _slot(_rt, _buf, _u64, _hb, _u64, _u64)),
        ("copy_d2h_pinned", _slot(_rt, _hb, _u64, _buf, _u64, _u64)),
        ("copy_h2d", _slot(_rt, _buf, _u64, c_void_p, _u64)),
        ("copy_d2h", _slot(_rt, c_void_p, _buf, _u64, _u64)),
        ("copy_d2d", _slot(_rt, _buf, _u64, _buf, _u64, _u64)),
        ("copy_from_runtime", _slot(_rt, _buf, _u64, _rt, _buf, _u64, _u64)),
        ("copy_from_peer", _slot(_rt, _buf, _u64, _rt, _buf, _u64, _u64)),
        ("copy_from_peer_via_host", _slot(_rt, _buf, _u64, _rt, _buf, _u64, _u64)),
        # completion
        ("seal", _slot(_rt, POINTER(t4a_witness))),
        ("witness_query", _slot(t4a_witness)),
        ("witness_wait", _slot(t4a_witness, _u64)),
        ("witness_retain", _slot(t4a_witness)),
        ("witness_release", _slot(t4a_witness)),
        ("runtime_wait_witness", _slot(_rt, t4a_witness)),
        # code
        ("artifact_compile", _slot(POINTER(t4a_compile_options), POINTER(t4a_artifact))),
        # kind is the enum t4a_artifact_kind (int-sized)
        ("artifact_from_bytes", _slot(c_int, c_void_p, _u64, c_char_p, POINTER(t4a_artifact))),
        ("artifact_log", _slot(t4a_artifact, POINTER(c_void_p), POINTER(_u64))),
        ("artifact_data", _slot(t4a_artifact, POINTER(c_int), POINTER(c_void_p), POINTER(_u64))),
        ("artifact_release", _slot(t4a_artifact)),
        ("compile_cache_stats", _slot(POINTER(t4a_compile_cache_stats))),
        ("compile_cache_clear", _slot(c_uint32)),
        ("module_load", _slot(_rt, t4a_artifact, POINTER(t4a_module))),
        ("module_unload", _slot(_rt, t4a_module)),
        ("function_get", _slot(_rt, t4a_module, c_char_p, POINTER(t4a_function))),
        ("function_attributes", _slot(_rt, t4a_function, POINTER(t4a_function_attributes))),
        ("function_set_max_dynamic_shared", _slot(_rt, t4a_function, c_uint32)),
        ("launch", _slot(_rt, t4a_function, POINTER(t4a_launch_config), POINTER(c_void_p))),
        # raw seam
        ("raw_runtime", _slot(_rt, POINTER(t4a_raw_runtime))),
        ("buffer_device_address", _slot(_rt, _buf, POINTER(_u64))),
        ("raw_function", _slot(_rt, t4a_function, POINTER(c_void_p))),
        ("raw_begin", _slot(_rt, POINTER(t4a_raw_section))),
        ("raw_end", _slot(_rt, POINTER(t4a_raw_section))),
    ]


# ---------------------------------------------------------------------------
# Layout self-check against the header's frozen v1.0 sizes.
# ---------------------------------------------------------------------------

# (struct, its last v1.0 field, T4A_*_V1_0_SIZE, C sizeof on LP64), as a C
# compiler prints them from the header. The v1.0 sizes are frozen (a later
# minor appends fields but never changes them); sizeof includes tail
# padding (t4a_raw_runtime: 28 vs 32).
V1_0_SIZES = [
    (t4a_gpu_backend_v1, "raw_end", 416, 416),
    (t4a_error_info, "message", 32, 32),
    (t4a_backend_info, "driver_path", 336, 336),
    (t4a_device_info, "warp_size", 376, 376),
    (t4a_compiler_info, "reason", 528, 528),
    (t4a_runtime_options, "reserved", 40, 40),
    (t4a_runtime_counters, "raw_sections", 224, 224),
    (t4a_cache_stats, "pinned_bytes", 64, 64),
    (t4a_compile_options, "device_ordinal", 48, 48),
    (t4a_compile_cache_stats, "disk_limit_bytes", 72, 72),
    (t4a_function_attributes, "binary_version", 32, 32),
    (t4a_launch_config, "shared_bytes", 32, 32),
    (t4a_raw_runtime, "device", 28, 32),
    (t4a_raw_section, "runtime_bits", 24, 24),
]


def size_through(cls, field):
    """T4A_SIZE_THROUGH(cls, field): bytes up to the end of `field`."""
    f = getattr(cls, field)
    return f.offset + f.size


def self_check():
    """Returns a list of layout mismatches (empty when the mirrors match).

    Compares, for the function table and every growing struct, the bytes
    through its last v1.0 field with the header's T4A_*_V1_0_SIZE and
    ctypes.sizeof with the C sizeof, and checks that every table slot is
    pointer-sized and follows the previous one without a gap.
    """
    problems = []
    if ctypes.sizeof(c_void_p) != 8:
        problems.append("pointer size %d: the mirrors assume LP64" % ctypes.sizeof(c_void_p))
    for cls, last, v10, size in V1_0_SIZES:
        if not hasattr(cls, last):
            problems.append("%s has no field %s" % (cls.__name__, last))
            continue
        got = size_through(cls, last)
        if got != v10:
            problems.append("%s through %s: %d bytes, the header's v1.0 size is %d"
                            % (cls.__name__, last, got, v10))
        if ctypes.sizeof(cls) != size:
            problems.append("sizeof(%s): %d, C says %d" % (cls.__name__, ctypes.sizeof(cls), size))
    for cls in (t4a_runtime, t4a_buffer, t4a_host_buffer, t4a_witness, t4a_artifact, t4a_module,
                t4a_function):
        if ctypes.sizeof(cls) != 8:
            problems.append("sizeof(%s) is %d, not 8" % (cls.__name__, ctypes.sizeof(cls)))
    if ctypes.sizeof(t4a_gpu_backend_entry) != 64 + 4096:
        problems.append("sizeof(t4a_gpu_backend_entry) is %d, C says %d"
                        % (ctypes.sizeof(t4a_gpu_backend_entry), 64 + 4096))
    # Function slots: contiguous pointers from last_error to raw_end.
    names = [f[0] for f in t4a_gpu_backend_v1._fields_]
    expect = t4a_gpu_backend_v1.last_error.offset
    for name in names[names.index("last_error"):]:
        f = getattr(t4a_gpu_backend_v1, name)
        if f.offset != expect or f.size != ctypes.sizeof(c_void_p):
            problems.append("slot %s at %d (size %d), expected at %d"
                            % (name, f.offset, f.size, expect))
        expect = f.offset + f.size
    return problems


# ---------------------------------------------------------------------------
# The loader library.
# ---------------------------------------------------------------------------

_lib = None


def _declare(lib):
    """Declares argtypes/restype of every function of <t4a/gpu_loader.h>."""
    p = c_void_p  # t4a_gpu_backend * (opaque)
    decl = {
        "t4a_gpu_open": (c_int, [c_char_p, POINTER(p)]),
        "t4a_gpu_open_path": (c_int, [c_char_p, POINTER(p)]),
        "t4a_gpu_close": (c_int, [p]),
        "t4a_gpu_backend_table": (POINTER(t4a_gpu_backend_v1), [p]),
        "t4a_gpu_backend_path": (c_char_p, [p]),
        "t4a_gpu_backend_abi": (c_int, [p, POINTER(c_uint16), POINTER(c_uint16)]),
        "t4a_gpu_list": (c_int, [POINTER(t4a_gpu_backend_entry), c_size_t, POINTER(c_size_t)]),
        "t4a_gpu_search_path": (c_char_p, []),
        "t4a_gpu_plugin_dir": (c_char_p, []),
        "t4a_gpu_last_error": (c_char_p, []),
        "t4a_gpu_status_name": (c_char_p, [c_int]),
        "t4a_gpu_status_message": (c_char_p, [c_int]),
        "t4a_gpu_loader_version": (None, [POINTER(c_int)] * 3),
        "t4a_gpu_loader_abi": (None, [POINTER(c_int)] * 2),
    }
    for name, (restype, argtypes) in decl.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def library():
    """The loaded libt4a_gpu (loaded and checked on first use).

    Raises OSError naming what was tried when it cannot be loaded, and
    T4AError(T4A_EABI) when it speaks another backend ABI major.
    """
    global _lib
    if _lib is not None:
        return _lib
    env = os.environ.get("T4A_GPU_LIBRARY")
    if env:
        candidates = [env]  # an explicit choice is never replaced silently
    else:
        candidates = [c for c in (ctypes.util.find_library("t4a_gpu"), "libt4a_gpu.so.0") if c]
    errors = []
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise OSError("cannot load libt4a_gpu (%s); build/install t4a-gpu or set "
                      "T4A_GPU_LIBRARY to the path of libt4a_gpu.so" % "; ".join(errors))
    _declare(lib)
    major, minor = c_int(), c_int()
    lib.t4a_gpu_loader_abi(byref(major), byref(minor))
    if major.value != ABI_MAJOR:
        raise T4AError(T4A_EABI, "t4a_gpu_loader_abi",
                       "the loader speaks backend ABI %d.%d, this binding %d.%d; use a "
                       "matching t4a_gpu.py" % (major.value, minor.value, ABI_MAJOR, ABI_MINOR))
    _lib = lib
    return lib


def _text(raw):
    """C string (bytes or None) -> str."""
    return raw.decode("utf-8", "replace") if raw else ""


def status_name(status):
    """"T4A_EINVAL" for -1 (through the loader's t4a_gpu_status_name)."""
    return _text(library().t4a_gpu_status_name(status))


# Names of the constants above, for errors raised before the library loaded.
_STATUS_NAMES = {v: k for k, v in list(globals().items()) if k.startswith("T4A_E") or k == "T4A_OK"}


def _name_of(status):
    """status_name() without loading the library (never raises)."""
    if _lib is not None:
        return _text(_lib.t4a_gpu_status_name(status))
    return _STATUS_NAMES.get(status, "T4A_UNKNOWN")


def status_message(status):
    """"invalid argument" for -1."""
    return _text(library().t4a_gpu_status_message(status))


def loader_version():
    """(major, minor, patch) of libt4a_gpu."""
    v = [c_int(), c_int(), c_int()]
    library().t4a_gpu_loader_version(*[byref(x) for x in v])
    return tuple(x.value for x in v)


def search_path():
    """The plugin directories searched, colon-separated."""
    return _text(library().t4a_gpu_search_path())


BackendEntry = namedtuple("BackendEntry", "name path")


def list_backends():
    """Installed backends [(name, path)], sorted by name (files not opened)."""
    lib = library()
    count = c_size_t()
    _check_loader(lib.t4a_gpu_list(None, 0, byref(count)), "t4a_gpu_list")
    entries = (t4a_gpu_backend_entry * max(count.value, 1))()
    _check_loader(lib.t4a_gpu_list(entries, len(entries), byref(count)), "t4a_gpu_list")
    found = entries[:min(count.value, len(entries))]  # more may have appeared meanwhile
    return [BackendEntry(_text(e.name), _text(e.path)) for e in found]


# ---------------------------------------------------------------------------
# Errors.
# ---------------------------------------------------------------------------


class T4AError(Exception):
    """A failed t4a call.

    status       the negative T4A_E* code
    name         its name ("T4A_ENODRIVER")
    what         the call that failed ("init", "artifact_compile", ...)
    detail       "<what failed>; <what to do>" from last_error (may be "")
    native_code  driver/compiler code (CUresult, nvrtcResult), 0 when none
    native_name  its name ("CUDA_ERROR_OUT_OF_MEMORY"), "" when none
    log          the compile log for T4A_ECOMPILE, else ""
    """

    def __init__(self, status, what, detail="", native_code=0, native_name="", log=""):
        self.status = status
        self.name = _name_of(status)
        self.what = what
        self.detail = detail
        self.native_code = native_code
        self.native_name = native_name
        self.log = log
        # "<what>: T4A_E...: <detail> [native]", without repeating what the
        # detail already says (the CUDA plugin's details start with the slot
        # name and often carry the native code).
        if detail.startswith(what + ":"):
            text = "%s: %s" % (self.name, detail)
        else:
            text = "%s: %s" % (what, self.name) + (": " + detail if detail else "")
        if native_name and native_name not in detail:
            text += " [%s=%d]" % (native_name, native_code)
        super().__init__(text)


def _check_loader(rc, what):
    if rc != T4A_OK:
        raise T4AError(rc, what, _text(library().t4a_gpu_last_error()))


# ---------------------------------------------------------------------------
# Plain-Python views of the info structs.
# ---------------------------------------------------------------------------


def _sized(cls):
    """A zeroed `cls` with struct_size set, ready to pass to a slot."""
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    return s


BackendInfo = namedtuple("BackendInfo", "name version abi driver_version driver_path device_count")
Device = namedtuple(
    "Device",
    "ordinal name uuid cc total_memory pci_bus_id multiprocessors flags max_threads_per_block "
    "max_block_dim max_grid_dim max_shared_per_block max_shared_per_block_optin warp_size",
)
CompilerInfo = namedtuple("CompilerInfo", "status available version path reason")


def _device(d):
    return Device(
        ordinal=d.ordinal,
        name=_text(d.name),
        uuid=bytes(d.uuid).hex(),
        cc=(d.cc_major, d.cc_minor),
        total_memory=d.total_memory,
        pci_bus_id=_text(d.pci_bus_id),
        multiprocessors=d.multiprocessors,
        flags=d.flags,
        max_threads_per_block=d.max_threads_per_block,
        max_block_dim=tuple(d.max_block_dim),
        max_grid_dim=tuple(d.max_grid_dim),
        max_shared_per_block=d.max_shared_per_block,
        max_shared_per_block_optin=d.max_shared_per_block_optin,
        warp_size=d.warp_size,
    )


# ---------------------------------------------------------------------------
# Backend.
# ---------------------------------------------------------------------------


class Backend:
    """An open backend plugin.

    Backend(spec) opens it (spec: a name such as "cuda", a path, or None for
    the default, $T4A_GPU_BACKEND or "cuda"); T4AError T4A_ENOBACKEND or
    T4A_EABI when it cannot be found or loaded. As a context manager it
    calls init() on entry and close() on exit.
    """

    def __init__(self, spec=None):
        lib = library()
        handle = c_void_p()
        rc = lib.t4a_gpu_open(spec.encode() if spec else None, byref(handle))
        _check_loader(rc, "t4a_gpu_open(%s)" % (spec or "default"))
        self._lib = lib
        self._handle = handle
        self._table = lib.t4a_gpu_backend_table(handle).contents
        self.path = _text(lib.t4a_gpu_backend_path(handle))
        major, minor = c_uint16(), c_uint16()
        lib.t4a_gpu_backend_abi(handle, byref(major), byref(minor))
        self.abi = (major.value, minor.value)

    # -- lifetime --------------------------------------------------------

    def init(self):
        """Loads and initialises the driver (idempotent)."""
        self.call("init")

    def close(self):
        """Drops this open; the plugin unloads at its last close."""
        if self._handle is not None:
            handle, self._handle, self._table = self._handle, None, None
            _check_loader(self._lib.t4a_gpu_close(handle), "t4a_gpu_close")

    def __enter__(self):
        try:
            self.init()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- calling slots ----------------------------------------------------

    @property
    def table(self):
        """The mirrored t4a_gpu_backend_v1 (valid until close)."""
        if self._table is None:
            raise T4AError(T4A_EINVAL, "backend", "the backend is closed; open it again")
        return self._table

    def has(self, slot):
        """Whether the plugin provides `slot` (covered by struct_size, non-NULL)."""
        t = self.table
        return t.struct_size >= size_through(t4a_gpu_backend_v1, slot) and bool(getattr(t, slot))

    def last_error(self):
        """The calling thread's last failure: (status, detail, native_code, native_name)."""
        e = _sized(t4a_error_info)
        if self.table.last_error(byref(e)) != T4A_OK:
            return (T4A_EINTERNAL, "", 0, "")
        return (e.status, _text(e.message), e.native_code, _text(e.native_name))

    def call(self, slot, *args, **kw):
        """Calls table slot `slot`; raises T4AError unless it returns T4A_OK
        or a status in kw["ok"]. Returns the status."""
        ok = kw.get("ok", ())
        if not self.has(slot):
            raise T4AError(T4A_EUNSUPPORTED, slot, "the backend %s does not provide %s; use a "
                           "newer plugin" % (self.path, slot))
        rc = getattr(self.table, slot)(*args)
        if rc != T4A_OK and rc not in ok:
            _, detail, native_code, native_name = self.last_error()
            raise T4AError(rc, slot, detail, native_code, native_name)
        return rc

    # -- facts --------------------------------------------------------------

    def info(self):
        """Backend name, version and driver facts (BackendInfo)."""
        i = _sized(t4a_backend_info)
        self.call("get_info", byref(i))
        return BackendInfo(_text(i.name), _text(i.version), (i.abi_major, i.abi_minor),
                           i.driver_version, _text(i.driver_path), i.device_count)

    def device_count(self):
        n = c_int32()
        self.call("device_count", byref(n))
        return n.value

    def device(self, ordinal):
        d = _sized(t4a_device_info)
        self.call("device_info", ordinal, byref(d))
        return _device(d)

    def devices(self):
        """Every device the driver exposes (list of Device)."""
        return [self.device(i) for i in range(self.device_count())]

    def compiler_info(self):
        """Whether the run-time compiler (NVRTC) is usable, or why not."""
        c = _sized(t4a_compiler_info)
        self.call("compiler_info", byref(c))
        return CompilerInfo(c.status, c.status == T4A_OK, (c.version_major, c.version_minor),
                            _text(c.path), _text(c.reason))

    # -- code ---------------------------------------------------------------

    def compile(self, source, device=0, name="t4a.cu", options=(), ptx=False, cache=True):
        """CUDA C source -> t4a_artifact for `device` (-1: options name the arch).

        On T4A_ECOMPILE the artifact is released and T4AError.log holds the
        compiler's log. The caller owns the returned artifact: release() it
        (modules loaded from it stay loaded).
        """
        src = source.encode() if isinstance(source, str) else bytes(source)
        opts = [o.encode() if isinstance(o, str) else o for o in options]
        o = _sized(t4a_compile_options)
        o.flags = (COMPILE_PTX if ptx else 0) | (0 if cache else COMPILE_NO_CACHE)
        o.source = src
        o.source_size = len(src)
        o.name = name.encode()
        o.options = (c_char_p * len(opts))(*opts) if opts else None
        o.option_count = len(opts)
        o.device_ordinal = device
        art = t4a_artifact()
        try:
            self.call("artifact_compile", byref(o), byref(art))
        except T4AError as e:
            if e.status == T4A_ECOMPILE and art:  # the artifact carries the log
                e.log = self.artifact_log(art)
                self.release(art)
            raise
        return art

    def artifact_log(self, art):
        """The artifact's compile log (str, possibly empty)."""
        p, n = c_void_p(), c_uint64()
        self.call("artifact_log", art, byref(p), byref(n))
        return _text(ctypes.string_at(p, n.value)) if p.value else ""

    def release(self, art):
        """Drops the caller's reference to an artifact."""
        self.call("artifact_release", art)

    def runtime(self, ordinal=0, **options):
        """A new Runtime on device `ordinal`. Keyword options are fields of
        t4a_runtime_options (staging_bytes, cache_limit_bytes, ...)."""
        return Runtime(self, ordinal, **options)


# ---------------------------------------------------------------------------
# Runtime and witnesses.
# ---------------------------------------------------------------------------


class Witness:
    """A completion token from Runtime.seal(); release() it (or use `with`)."""

    def __init__(self, backend, handle):
        self._backend = backend
        self.handle = handle

    def query(self):
        """True when the covered work completed, False when not yet."""
        return self._backend.call("witness_query", self.handle, ok=(T4A_ENOTREADY,)) == T4A_OK

    def wait(self, timeout_ns=WAIT_FOREVER):
        """Blocks until the covered work completed (T4AError on fault/timeout)."""
        self._backend.call("witness_wait", self.handle, timeout_ns)

    def release(self):
        if self.handle:
            handle, self.handle = self.handle, t4a_witness()
            self._backend.call("witness_release", handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False


def _is_ctypes_value(v):
    """Whether v is a ctypes instance (scalar, struct, array): it has a C size."""
    try:
        ctypes.sizeof(v)
        return True
    except TypeError:
        return False


class Runtime:
    """One device, one stream, one memory pool: runtime_create ... runtime_destroy.

    Buffers, modules and functions are the ABI's handle structs; all work
    runs on the runtime's stream in call order.
    """

    def __init__(self, backend, ordinal=0, **options):
        self.backend = backend
        self.device = ordinal
        opts = None
        if options:
            opts = _sized(t4a_runtime_options)
            for key, value in options.items():
                setattr(opts, key, value)
        self.handle = t4a_runtime()
        backend.call("runtime_create", ordinal, byref(opts) if opts is not None else None,
                     byref(self.handle))

    def destroy(self, timeout_ns=WAIT_FOREVER):
        """Waits for outstanding work, then releases everything it owns."""
        if self.handle:
            self.backend.call("runtime_destroy", self.handle, timeout_ns)
            self.handle = t4a_runtime()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.destroy()
        except T4AError:
            if exc_type is None:  # do not mask the exception already in flight
                raise
        return False

    def _call(self, slot, *args, **kw):
        return self.backend.call(slot, self.handle, *args, **kw)

    # -- memory -------------------------------------------------------------

    def alloc(self, nbytes):
        """Device memory of `nbytes` (content undefined) -> t4a_buffer."""
        buf = t4a_buffer()
        self._call("buffer_alloc", nbytes, byref(buf))
        return buf

    def free(self, buf):
        """Stream-ordered free; the handle is stale at once."""
        self._call("buffer_free", buf)

    def address(self, buf):
        """The buffer's device address (CUdeviceptr) as an int."""
        addr = c_uint64()
        self._call("buffer_device_address", buf, byref(addr))
        return addr.value

    def upload(self, buf, data, offset=0):
        """Copies bytes-like `data` (bytes, bytearray, array, memoryview) to
        `buf` at `offset`. Returns once `data` may be reused."""
        view = memoryview(data).cast("B")
        n = len(view)
        if view.readonly:  # ctypes needs a writable buffer to point into
            src = (c_char * n).from_buffer_copy(view) if n else None
        else:
            src = (c_char * n).from_buffer(view) if n else None
        self._call("copy_h2d", buf, offset, src, n)

    def download(self, buf, nbytes, offset=0):
        """`nbytes` of `buf` from `offset` as bytes (waits for earlier work)."""
        dst = ctypes.create_string_buffer(nbytes)
        self._call("copy_d2h", dst, buf, offset, nbytes)
        return dst.raw

    # -- code ---------------------------------------------------------------

    def compile(self, source, **kw):
        """Backend.compile for this runtime's device -> t4a_artifact."""
        kw.setdefault("device", self.device)
        return self.backend.compile(source, **kw)

    def module(self, artifact):
        """Loads an artifact into this runtime -> t4a_module."""
        mod = t4a_module()
        self._call("module_load", artifact, byref(mod))
        return mod

    def function(self, module, name):
        """The kernel `name` of `module` -> t4a_function (T4A_ENOTFOUND if absent)."""
        fn = t4a_function()
        self._call("function_get", module, name.encode(), byref(fn))
        return fn

    def unload(self, module):
        self._call("module_unload", module)

    def launch(self, function, grid, block, args, shared_bytes=0):
        """Enqueues `function` with `grid`/`block` (int or up to 3 ints).

        `args` are the kernel's arguments in order, each a ctypes scalar of
        the kernel parameter's exact type (c_uint64(n), c_float(a), ...); a
        t4a_buffer is passed as its device address (a pointer parameter).
        """
        def dims(d):
            d = (d,) if isinstance(d, int) else tuple(d)
            return (c_uint32 * 3)(*(d + (1,) * (3 - len(d))))

        cfg = _sized(t4a_launch_config)
        cfg.grid = dims(grid)
        cfg.block = dims(block)
        cfg.shared_bytes = shared_bytes
        # Keep every argument object alive until the call returns.
        values = [c_uint64(self.address(a)) if isinstance(a, t4a_buffer) else a for a in args]
        for i, v in enumerate(values):
            if isinstance(v, type) or not _is_ctypes_value(v):
                raise TypeError("launch argument %d: %r is not a ctypes value; wrap it in "
                                "the kernel parameter's type (c_uint64, c_float, ...)" % (i, v))
        ptrs = (c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.pointer(v), c_void_p) for v in values])
        self._call("launch", function, byref(cfg), ptrs)

    # -- completion -----------------------------------------------------------

    def seal(self):
        """A Witness covering all work enqueued so far."""
        w = t4a_witness()
        self._call("seal", byref(w))
        return Witness(self.backend, w)

    def wait(self, timeout_ns=WAIT_FOREVER):
        """seal + witness wait + release: blocks until the enqueued work is done."""
        with self.seal() as w:
            w.wait(timeout_ns)

    def counters(self):
        """A snapshot of the runtime's counters (t4a_runtime_counters)."""
        c = _sized(t4a_runtime_counters)
        self._call("runtime_counters", byref(c))
        return c


if __name__ == "__main__":
    import sys

    bad = self_check()
    for p in bad:
        print("t4a_gpu self-check: " + p)
    print("t4a_gpu self-check: %s" % ("FAILED" if bad else "ok"))
    sys.exit(1 if bad else 0)
