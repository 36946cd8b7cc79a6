"""t4a_gpu._api -- the idiomatic layer over the generated ctypes declarations.

Ownership. Every native object (backend, runtime, buffer, host buffer,
witness, artifact, module, function) is released exactly once: by its
close() (or the end of its `with` block), else by a weakref.finalize safety
net when the Python object is collected or the interpreter exits. The state
a release needs lives in a _Node, apart from the Python object, so that the
finalizer keeps nothing alive. Nodes form the ownership tree of the header
("Objects, ownership and lifetime"):

    backend -> runtimes, witnesses, artifacts
    runtime -> buffers, host buffers, modules;  module -> functions

A child holds a strong reference to its parent's Python object, so a
parent is never collected before its children. Closing a parent closes its
subtree first: a backend destroys its runtimes and releases its witnesses
and artifacts before t4a_gpu_close (which may unload the plugin); a runtime
is destroyed, and then its buffers, host buffers, modules and functions are
marked invalid without a call (runtime_destroy released them: their handles
are stale). Using an invalidated object raises errors.EHANDLE without a
call into the backend; no finalizer ever calls into a destroyed runtime or
a closed backend.

Threads. Slots are thread-safe (the header's threading contract) and
ctypes releases the GIL during each call; last_error is read on the calling
thread right after the failing call. Closing is serialised by one lock.
"""
import ctypes
import operator
import threading
import weakref
from collections import namedtuple
from ctypes import byref, c_bool, c_char_p, c_int, c_int32, c_uint16, c_uint32, c_uint64, c_void_p

from . import _abi, _interop
from ._hostmem import borrow
from ._loader import load_library
from .errors import T4AError, error_class

__all__ = [
    "Backend", "Runtime", "Buffer", "HostBuffer", "Witness", "Artifact", "Module", "Function",
    "TensorView", "from_dlpack",
    "BackendInfo", "Device", "CompilerInfo", "BackendEntry", "RawRuntime",
    "list_backends", "loader_version", "loader_abi", "search_path", "plugin_dir",
    "status_name", "status_message", "WAIT_FOREVER",
    "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64", "ptr",
]

WAIT_FOREVER = _abi.T4A_WAIT_FOREVER
_lock = threading.RLock()


# ---------------------------------------------------------------------------
# Module-level loader functions.
# ---------------------------------------------------------------------------


def _size(value, what):
    """A caller's byte count for a uint64 parameter: an integer in [0, 2^64)
    (ctypes would keep the low 64 bits of a larger one, and the object would
    then record a size the backend never allocated)."""
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError("%s is %r; pass an integer number of bytes" % (what, value)) from None
    if not 0 <= value < 1 << 64:
        raise ValueError("%s is %d; pass a size in [0, 2^64)" % (what, value))
    return value


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


_STATUS = {value: (name, message) for name, value, message in _abi.STATUSES}


def status_name(status):
    """"T4A_EINVAL" for -1; "T4A_UNKNOWN" for a value the header does not list."""
    return _STATUS.get(status, ("T4A_UNKNOWN",))[0]


def status_message(status):
    """The one-line message of a status ("invalid argument")."""
    return _STATUS.get(status, (None, "unknown status"))[1]


def _loader_check(lib, rc, call):
    if rc != _abi.T4A_OK:
        raise error_class(rc)(rc, call, _text(lib.t4a_gpu_last_error()))


def loader_version(library=None):
    """(major, minor, patch) of libt4a_gpu."""
    lib = load_library(library)
    v = [c_int(), c_int(), c_int()]
    lib.t4a_gpu_loader_version(*[byref(x) for x in v])
    return tuple(x.value for x in v)


def loader_abi(library=None):
    """(major, minor) of the backend ABI the loader speaks."""
    lib = load_library(library)
    v = [c_int(), c_int()]
    lib.t4a_gpu_loader_abi(*[byref(x) for x in v])
    return tuple(x.value for x in v)


def search_path(library=None):
    """The plugin directories searched, colon-separated."""
    return _text(load_library(library).t4a_gpu_search_path())


def plugin_dir(library=None):
    """The configured plugin directory."""
    return _text(load_library(library).t4a_gpu_plugin_dir())


BackendEntry = namedtuple("BackendEntry", "name path")


def list_backends(library=None):
    """The installed backends (BackendEntry: name, path), sorted by name."""
    lib = load_library(library)
    count = ctypes.c_size_t()
    _loader_check(lib, lib.t4a_gpu_list(None, 0, byref(count)), "t4a_gpu_list")
    while True:
        entries = (_abi.t4a_gpu_backend_entry * max(count.value, 1))()
        capacity = count.value
        _loader_check(lib, lib.t4a_gpu_list(entries, capacity, byref(count)), "t4a_gpu_list")
        if count.value <= capacity:  # else a plugin appeared meanwhile: again
            return [BackendEntry(_text(e.name), _text(e.path)) for e in entries[:count.value]]


# ---------------------------------------------------------------------------
# The ownership tree.
# ---------------------------------------------------------------------------


class _Node:
    """One native object's release, apart from its Python object.

    release: a callable doing the native release (None: nothing to call);
    owns_children: the release itself frees the children (runtime_destroy,
    module_unload), which are then only invalidated; otherwise (the backend)
    the children are closed, newest first, before the release.
    """

    __slots__ = ("kind", "release", "owns_children", "children", "parent", "alive", "views",
                 "__weakref__")

    def __init__(self, kind, parent, release, owns_children=False):
        self.kind, self.release, self.owns_children = kind, release, owns_children
        self.children, self.parent, self.alive, self.views = {}, parent, True, None
        if parent is not None:
            with _lock:
                if not parent.alive:
                    raise error_class(_abi.T4A_EHANDLE)(
                        _abi.T4A_EHANDLE, kind, "its %s is closed" % parent.kind)
                parent.children[id(self)] = self

    def _invalidate(self):
        self.alive = False
        kids, self.children = list(self.children.values()), {}
        for k in kids:
            k._invalidate()

    def hold(self, obj, call):
        """Records `obj` (weakly) as a view of this node's memory: closing
        the node, or one above it, while `obj` lives is a BufferError.
        errors.EHANDLE if the node is closed. Returns the record, for drop();
        recording an object twice records it once."""
        with _lock:
            if not self.alive:
                raise _dead(self, call)
            ref = weakref.ref(obj)
            views = self.views
            views[:] = [r for r in views if r() is not None and r is not ref]
            views.append(ref)
            return ref

    def drop(self, ref):
        """Undoes hold() (the export it guarded failed)."""
        with _lock:
            self.views[:] = [r for r in self.views if r is not ref]

    def exported_views(self):
        """Views still held under this node (see HostBuffer.view, hold)."""
        n = sum(1 for ref in self.views or () if ref() is not None)
        return n + sum(k.exported_views() for k in list(self.children.values()))

    def close(self, quiet=False):
        """Releases the subtree once; later calls do nothing. Errors of the
        release are raised (quiet: swallowed, for the finalizers)."""
        with _lock:
            if not self.alive:
                return
            if not quiet and self.exported_views():
                raise BufferError(
                    "cannot close the %s: views of its memory are still held (memoryviews of "
                    "pinned host memory, DLPack tensors another framework has not released, "
                    "objects whose __cuda_array_interface__ was read: a TensorView, or a "
                    "Buffer itself, which its consumer keeps); release them first "
                    "(view.release(); del the arrays, and those objects)" % self.kind)
            err = None
            if not self.owns_children:  # the backend: children first, every one
                for k in reversed(list(self.children.values())):
                    try:
                        k.close(quiet)
                    except T4AError as e:
                        err = err or e
            if self.release is not None:
                try:
                    self.release()
                except T4AError as e:
                    if e.status == _abi.T4A_ETIMEOUT and err is None:
                        raise  # nothing released: the object stays usable
                    err = err or e
            self._invalidate()
            if self.parent is not None:
                self.parent.children.pop(id(self), None)
            if err is not None and not quiet:
                raise err


def _finalizer(obj, node):
    f = weakref.finalize(obj, node.close, True)
    return f


def _dead(node, what):
    return error_class(_abi.T4A_EHANDLE)(
        _abi.T4A_EHANDLE, what, "the %s is closed (by close(), or when the object owning it "
        "closed); make a new one" % node.kind)


# ---------------------------------------------------------------------------
# Plain-Python views of the info structs.
# ---------------------------------------------------------------------------

BackendInfo = namedtuple("BackendInfo",
                         "name version abi driver_version driver_path device_count")
Device = namedtuple(
    "Device",
    "ordinal name uuid cc total_memory pci_bus_id multiprocessors flags max_threads_per_block "
    "max_block_dim max_grid_dim max_shared_per_block max_shared_per_block_optin warp_size")
CompilerInfo = namedtuple("CompilerInfo", "status available version path reason")
RawRuntime = namedtuple("RawRuntime", "device_ordinal context stream device")


def _sized(cls):
    s = cls()
    s.struct_size = ctypes.sizeof(cls)
    return s


def _as_dict(s, skip=("struct_size", "reserved")):
    """A counters/stats struct as {field: value}; fields beyond what the
    callee filled (its returned struct_size) are left out."""
    out = {}
    for name, _ in type(s)._fields_:
        f = getattr(type(s), name)
        if name not in skip and f.offset + f.size <= s.struct_size:
            out[name] = getattr(s, name)
    return out


# ---------------------------------------------------------------------------
# Kernel arguments.
# ---------------------------------------------------------------------------


class _Arg:
    """A kernel argument of an explicit C type: t4a_gpu.f32(2.5), u64(n)..."""

    __slots__ = ("value",)
    ctype = None
    kind = None  # "int" or "float"

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.value)


def _arg_type(name, ctype, kind, bits=0, signed=False):
    return type(name, (_Arg,), {"ctype": ctype, "kind": kind, "bits": bits, "signed": signed,
                                "__slots__": (), "__module__": "t4a_gpu",
                                "__doc__": "A kernel argument of C type %s." % ctype.__name__})


u8 = _arg_type("u8", ctypes.c_uint8, "int", 8)
i8 = _arg_type("i8", ctypes.c_int8, "int", 8, True)
u16 = _arg_type("u16", ctypes.c_uint16, "int", 16)
i16 = _arg_type("i16", ctypes.c_int16, "int", 16, True)
u32 = _arg_type("u32", ctypes.c_uint32, "int", 32)
i32 = _arg_type("i32", ctypes.c_int32, "int", 32, True)
u64 = _arg_type("u64", ctypes.c_uint64, "int", 64)
i64 = _arg_type("i64", ctypes.c_int64, "int", 64, True)
f32 = _arg_type("f32", ctypes.c_float, "float")
f64 = _arg_type("f64", ctypes.c_double, "float")
# A device pointer (a Buffer, or an address as an int): 64 bits.
ptr = _arg_type("ptr", ctypes.c_uint64, "ptr", 64)

_SIGNATURE = {t.__name__: t for t in (u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, ptr)}
_SIGNATURE.update({"float": f32, "double": f64, "int": i32, "unsigned": u32, "size_t": u64,
                   "int32_t": i32, "uint32_t": u32, "int64_t": i64, "uint64_t": u64,
                   "uint8_t": u8, "int8_t": i8, "uint16_t": u16, "int16_t": i16, "*": ptr})


def parse_signature(signature):
    """'u64 f32 ptr ptr' (or comma-separated, or C names: 'uint64_t, float, *')
    -> the argument types."""
    tokens = signature.replace(",", " ").split()
    try:
        return tuple(_SIGNATURE[t] for t in tokens)
    except KeyError as e:
        raise ValueError("signature %r: unknown type %s (known: %s)"
                         % (signature, e, " ".join(sorted(_SIGNATURE)))) from None


def _convert(i, value, want, runtime):
    """One launch argument -> a ctypes value of its C type."""
    if isinstance(value, Buffer):
        if want not in (None, ptr):
            raise TypeError("launch argument %d: a Buffer is passed as a pointer, but the "
                            "signature says %s" % (i, want.__name__))
        if value._runtime is not runtime:
            raise ValueError("launch argument %d: the buffer belongs to another runtime; "
                             "copy it into this one (Buffer.copy_from)" % i)
        return c_uint64(value.address)
    if isinstance(value, _Arg):
        if want is not None and type(value) is not want:
            raise TypeError("launch argument %d: %r, but the signature says %s"
                            % (i, value, want.__name__))
        want, value = type(value), value.value
    if isinstance(value, ctypes._SimpleCData) and want is None:
        return value
    if want is None:
        raise TypeError("launch argument %d: %r has no C type; wrap it (t4a_gpu.u64(%r), "
                        "t4a_gpu.f32(...)) or pass a signature" % (i, value, value))
    if want.kind == "float":
        if not isinstance(value, (int, float)):
            raise TypeError("launch argument %d: %r is not a number" % (i, value))
        return want.ctype(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("launch argument %d: %r is not an int (%s)" % (i, value, want.__name__))
    lo = -(1 << (want.bits - 1)) if want.signed else 0
    hi = (1 << (want.bits - 1 if want.signed else want.bits)) - 1
    if not lo <= value <= hi:
        raise OverflowError("launch argument %d: %d does not fit %s" % (i, value, want.__name__))
    return want.ctype(value)


def _dims(d, what):
    d = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(d) <= 3:
        raise ValueError("%s: 1 to 3 dimensions, got %r" % (what, d))
    return (c_uint32 * 3)(*(d + (1,) * (3 - len(d))))


# ---------------------------------------------------------------------------
# Backend.
# ---------------------------------------------------------------------------


class Backend:
    """An open backend plugin (t4a_gpu_open ... t4a_gpu_close).

    Backend(spec) opens by name ("cuda"), by path (a spec containing "/"),
    or the default ($T4A_GPU_BACKEND, else "cuda") for None. path= opens
    exactly that file (t4a_gpu_open_path). library= is the loader library to
    use (else see t4a_gpu.load_library). With init=True (the default) the
    backend is initialised at once and a failure (no driver, no device, ...)
    closes it and raises; init=False leaves that to init(), e.g. to read
    info() first. A context manager: close() at the end of the block.
    """

    def __init__(self, spec=None, *, path=None, library=None, init=True):
        lib = load_library(library)
        handle = ctypes.POINTER(_abi.t4a_gpu_backend)()
        if path is not None:
            rc, call = lib.t4a_gpu_open_path(str(path).encode(), byref(handle)), \
                "t4a_gpu_open_path(%s)" % path
        else:
            rc, call = lib.t4a_gpu_open(spec.encode() if spec else None, byref(handle)), \
                "t4a_gpu_open(%s)" % (spec or "default")
        _loader_check(lib, rc, call)
        self._lib = lib
        table = lib.t4a_gpu_backend_table(handle).contents
        self.path = _text(lib.t4a_gpu_backend_path(handle))
        major, minor = c_uint16(), c_uint16()
        lib.t4a_gpu_backend_abi(handle, byref(major), byref(minor))
        self.abi = (major.value, minor.value)
        # The slots the table's struct_size covers (the loader normalises
        # the table to its own header; these bindings may know more slots,
        # which then read as absent, never past the end).
        self._slots = {}
        for name, _ in _abi.t4a_gpu_backend_v1._fields_:
            if name in _abi.SLOT_DOCS and \
                    _abi.size_through(_abi.t4a_gpu_backend_v1, name) <= table.struct_size:
                fn = getattr(table, name)
                self._slots[name] = fn if fn else None
        self.name = _text(table.name)
        self.version = _text(table.version)
        self._table = table

        def release(lib=lib, handle=handle):
            _loader_check(lib, lib.t4a_gpu_close(handle), "t4a_gpu_close")

        self._node = _Node("backend", None, release)
        self._finalizer = _finalizer(self, self._node)
        if init:
            try:
                self.init()
            except BaseException:
                self.close()
                raise

    # -- lifetime ------------------------------------------------------------

    def close(self):
        """Destroys the runtimes, releases the witnesses and artifacts still
        open from this backend, then drops this open (the plugin unloads at
        its last close). Idempotent."""
        self._node.close()
        self._finalizer.detach()  # released: the safety net has nothing left to do

    @property
    def closed(self):
        return not self._node.alive

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.close()
        except (T4AError, BufferError):
            if exc_type is None:  # never mask the exception already in flight
                raise
        return False

    def __repr__(self):
        state = "" if self._node.alive else " (closed)"
        return "<t4a_gpu.Backend %s %s from %s%s>" % (self.name, self.version, self.path, state)

    # -- slots -----------------------------------------------------------------

    @property
    def table(self):
        """The generated t4a_gpu_backend_v1 (read only the slots `has` confirms)."""
        if not self._node.alive:
            raise _dead(self._node, "table")
        return self._table

    def has(self, slot):
        """Whether the plugin provides `slot` (covered by struct_size, non-NULL)."""
        return self._slots.get(slot) is not None

    def error(self, status, call):
        """The exception for `status` with this thread's last_error detail."""
        e = _sized(_abi.t4a_error_info)
        fn = self._slots.get("last_error")
        if fn is None or fn(byref(e)) != _abi.T4A_OK:
            return error_class(status)(status, call)
        return error_class(status)(status, call, _text(e.message), e.native_code,
                                   _text(e.native_name))

    def call(self, slot, *args, ok=()):
        """Calls table slot `slot` with ctypes arguments; returns its status.

        Raises the status's exception unless it is T4A_OK or in `ok`;
        errors.EUNSUPPORTED when the plugin does not provide the slot. Every
        slot of the header is reachable here, including ones added after the
        idiomatic methods were written.
        """
        if not self._node.alive:
            raise _dead(self._node, slot)
        fn = self._slots.get(slot)
        if fn is None:
            if slot not in _abi.SLOT_DOCS:
                raise AttributeError("the ABI has no slot %r" % slot)
            raise error_class(_abi.T4A_EUNSUPPORTED)(
                _abi.T4A_EUNSUPPORTED, slot, "the backend %s (ABI %d.%d) does not provide %s; "
                "use a newer plugin" % (self.path, self.abi[0], self.abi[1], slot))
        rc = fn(*args)
        if rc != _abi.T4A_OK and rc not in ok:
            raise self.error(rc, slot)
        return rc

    # -- backend facts -----------------------------------------------------------

    def init(self):
        """Loads and initialises the driver (idempotent; a failure is final
        for the loaded plugin)."""
        self.call("init")

    def last_error(self):
        """This thread's last failure: a T4AError (status T4A_OK when none)."""
        e = _sized(_abi.t4a_error_info)
        self.call("last_error", byref(e))
        return T4AError(e.status, "last_error", _text(e.message), e.native_code,
                        _text(e.native_name))

    def info(self):
        i = _sized(_abi.t4a_backend_info)
        self.call("get_info", byref(i))
        return BackendInfo(_text(i.name), _text(i.version), (i.abi_major, i.abi_minor),
                           i.driver_version, _text(i.driver_path), i.device_count)

    def device_count(self):
        n = c_int32()
        self.call("device_count", byref(n))
        return n.value

    def device(self, ordinal):
        d = _sized(_abi.t4a_device_info)
        self.call("device_info", ordinal, byref(d))
        return Device(d.ordinal, _text(d.name), bytes(d.uuid).hex(), (d.cc_major, d.cc_minor),
                      d.total_memory, _text(d.pci_bus_id), d.multiprocessors, d.flags,
                      d.max_threads_per_block, tuple(d.max_block_dim), tuple(d.max_grid_dim),
                      d.max_shared_per_block, d.max_shared_per_block_optin, d.warp_size)

    def devices(self):
        return [self.device(i) for i in range(self.device_count())]

    def compiler_info(self):
        c = _sized(_abi.t4a_compiler_info)
        self.call("compiler_info", byref(c))
        return CompilerInfo(c.status, c.status == _abi.T4A_OK,
                            (c.version_major, c.version_minor), _text(c.path), _text(c.reason))

    def peer_access_supported(self, src, dst):
        ok = c_bool()
        self.call("peer_access_supported", src, dst, byref(ok))
        return ok.value

    def compile_cache_stats(self):
        s = _sized(_abi.t4a_compile_cache_stats)
        self.call("compile_cache_stats", byref(s))
        return _as_dict(s)

    def compile_cache_clear(self, memory=True, disk=True):
        self.call("compile_cache_clear", (_abi.T4A_CACHE_MEMORY if memory else 0) |
                  (_abi.T4A_CACHE_DISK if disk else 0))

    # -- children ------------------------------------------------------------------

    def runtime(self, device=0, **options):
        """A new Runtime on `device`; options are t4a_runtime_options fields
        (staging_bytes, pool_release_threshold, cache_limit_bytes, copy_threads)."""
        return Runtime(self, device, **options)

    def compile(self, source, device=0, *, name=None, options=(), ptx=False, cache=True):
        """CUDA C -> an Artifact for `device`'s architecture (device=-1: the
        options name it, e.g. "-arch=sm_90"). A compile error raises
        errors.ECOMPILE whose .log holds the compiler's log."""
        src = source.encode() if isinstance(source, str) else bytes(source)
        opts = [o.encode() if isinstance(o, str) else bytes(o) for o in options]
        o = _sized(_abi.t4a_compile_options)
        o.flags = (_abi.T4A_COMPILE_PTX if ptx else 0) | \
            (0 if cache else _abi.T4A_COMPILE_NO_CACHE)
        o.source, o.source_size = src, len(src)
        o.name = name.encode() if name else None
        keep = (c_char_p * max(len(opts), 1))(*opts)
        o.options = keep if opts else None
        o.option_count = len(opts)
        o.device_ordinal = device
        handle = _abi.t4a_artifact()
        try:
            self.call("artifact_compile", byref(o), byref(handle))
        except T4AError as e:
            if e.status == _abi.T4A_ECOMPILE and handle:  # the artifact carries the log
                art = Artifact(self, handle)
                e.log = art.log
                art.close()
            raise
        return Artifact(self, handle)

    def artifact_from_bytes(self, data, kind, name=None):
        """Wraps PTX text, CUBIN or fatbin bytes (kind: T4A_ARTIFACT_*; copied)."""
        handle = _abi.t4a_artifact()
        with borrow(data, False, "artifact_from_bytes") as (address, n):
            self.call("artifact_from_bytes", kind, address, n,
                      name.encode() if name else None, byref(handle))
        return Artifact(self, handle)


# ---------------------------------------------------------------------------
# Objects owned by the backend: witnesses and artifacts.
# ---------------------------------------------------------------------------


class Witness:
    """A completion token (from Runtime.seal): valid until closed, even after
    its runtime is destroyed. close() drops this reference."""

    def __init__(self, backend, handle):
        self._backend, self.handle = backend, handle
        self._node = _Node("witness", backend._node,
                           lambda: backend.call("witness_release", handle))
        self._finalizer = _finalizer(self, self._node)

    def _call(self, slot, *args, ok=()):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self._backend.call(slot, self.handle, *args, ok=ok)

    def query(self):
        """True when the covered work completed, False when not yet;
        errors.EDEVICEFAULT when it failed. Never blocks."""
        return self._call("witness_query", ok=(_abi.T4A_ENOTREADY,)) == _abi.T4A_OK

    def wait(self, timeout=None):
        """Blocks until the work completed; timeout in seconds (None: no
        limit) -> errors.ETIMEOUT."""
        self._call("witness_wait", _timeout_ns(timeout))

    def retain(self):
        """Another reference to the same witness, closed separately."""
        self._call("witness_retain")
        return Witness(self._backend, self.handle)

    def close(self):
        self._node.close()
        self._finalizer.detach()  # released: the safety net has nothing left to do

    release = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _timeout_ns(timeout):
    if timeout is None:
        return WAIT_FOREVER
    if timeout < 0:
        raise ValueError("timeout must be >= 0 seconds or None")
    return min(int(timeout * 1e9), WAIT_FOREVER - 1)


class Artifact:
    """Compiled or loaded code (Backend.compile / artifact_from_bytes).
    Modules loaded from it stay loaded after close()."""

    def __init__(self, backend, handle):
        self._backend, self.handle = backend, handle
        self._node = _Node("artifact", backend._node,
                           lambda: backend.call("artifact_release", handle))
        self._finalizer = _finalizer(self, self._node)

    def _call(self, slot, *args):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self._backend.call(slot, self.handle, *args)

    @property
    def log(self):
        """The compile log (str, possibly empty)."""
        p, n = c_char_p(), c_uint64()
        self._call("artifact_log", byref(p), byref(n))
        return _text(ctypes.string_at(p, n.value)) if p.value else ""

    def _data(self):
        kind, p, n = c_int(), c_void_p(), c_uint64()
        self._call("artifact_data", byref(kind), byref(p), byref(n))
        return kind.value, (ctypes.string_at(p, n.value) if p.value else b"")

    @property
    def kind(self):
        """T4A_ARTIFACT_PTX, _CUBIN or _FATBIN."""
        return self._data()[0]

    @property
    def data(self):
        """The code bytes (a copy)."""
        return self._data()[1]

    def close(self):
        self._node.close()
        self._finalizer.detach()  # released: the safety net has nothing left to do

    release = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ---------------------------------------------------------------------------
# Runtime and its children.
# ---------------------------------------------------------------------------


class Runtime:
    """One device, one stream, one memory pool (runtime_create ...
    runtime_destroy). All its work runs on its stream in call order."""

    def __init__(self, backend, device=0, **options):
        self.backend, self.device = backend, device
        opts = None
        if options:
            opts = _sized(_abi.t4a_runtime_options)
            for key, value in options.items():
                if key in ("struct_size",) or not hasattr(_abi.t4a_runtime_options, key):
                    raise TypeError("unknown runtime option %r" % key)
                setattr(opts, key, value)
        handle = _abi.t4a_runtime()
        backend.call("runtime_create", device, byref(opts) if opts is not None else None,
                     byref(handle))
        self.handle = handle
        self._timeout = WAIT_FOREVER

        def release(self_ref=weakref.ref(self)):
            me = self_ref()
            timeout = me._timeout if me is not None else WAIT_FOREVER
            backend.call("runtime_destroy", handle, timeout)

        self._node = _Node("runtime", backend._node, release, owns_children=True)
        self._finalizer = _finalizer(self, self._node)

    def _call(self, slot, *args, ok=()):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self.backend.call(slot, self.handle, *args, ok=ok)

    def close(self, timeout=None):
        """Waits for the outstanding work (timeout in seconds; None: no
        limit), then releases everything the runtime owns: its Buffers,
        HostBuffers, Modules and Functions become invalid. errors.ETIMEOUT
        leaves the runtime open and usable; errors.EDEVICEFAULT closes it
        (after a device fault) and is raised."""
        self._timeout = _timeout_ns(timeout)
        try:
            self._node.close()
            self._finalizer.detach()  # released: the safety net has nothing left to do
        finally:
            self._timeout = WAIT_FOREVER

    destroy = close

    @property
    def closed(self):
        return not self._node.alive

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.close()
        except (T4AError, BufferError):
            if exc_type is None:
                raise
        return False

    # -- memory ------------------------------------------------------------------

    def alloc(self, nbytes):
        """nbytes of device memory (content undefined) -> Buffer."""
        return Buffer(self, nbytes)

    def host_alloc(self, nbytes, write_combined=False):
        """nbytes of pinned host memory -> HostBuffer."""
        return HostBuffer(self, nbytes, write_combined)

    def cache_trim(self, keep_bytes=0):
        self._call("cache_trim", keep_bytes)

    def cache_stats(self):
        s = _sized(_abi.t4a_cache_stats)
        self._call("cache_stats", byref(s))
        return _as_dict(s)

    def counters(self):
        """A snapshot of the runtime's counters, {name: value}."""
        c = _sized(_abi.t4a_runtime_counters)
        self._call("runtime_counters", byref(c))
        return _as_dict(c)

    # -- completion ----------------------------------------------------------------

    def seal(self):
        """A Witness covering all work enqueued so far."""
        w = _abi.t4a_witness()
        self._call("seal", byref(w))
        return Witness(self.backend, w)

    def synchronize(self, timeout=None):
        """Seals and waits: returns once all enqueued work completed."""
        with self.seal() as w:
            w.wait(timeout)

    def wait_for(self, witness):
        """Work enqueued after this call runs after `witness`'s work
        (GPU-side; the host does not block). The witness may come from any
        runtime of this backend."""
        if not witness._node.alive:
            raise _dead(witness._node, "runtime_wait_witness")
        self._call("runtime_wait_witness", witness.handle)

    # -- other frameworks' memory and streams (see t4a_gpu._interop) -------------------

    def wrap(self, address, nbytes, *, host=False, release=None):
        """Device memory this runtime did not allocate (an int address on its
        device; host=True: page-locked host memory) as a Buffer usable by
        every copy and launch. The memory is never freed here; `release()`
        (any callable, or None) is called once, after the Buffer was closed
        and its last use completed (from the thread of a later call on this
        runtime). Another device's memory is errors.EFOREIGNDEVICE."""
        m = _sized(_abi.t4a_external_memory)
        m.flags = _abi.T4A_EXTERNAL_HOST if host else 0
        m.address, m.bytes = _size(address, "wrap: address"), _size(nbytes, "wrap: nbytes")
        m.device_ordinal = -1 if host else self.device
        fn, user = _interop.release_callback(release)
        if fn is not None:
            m.release, m.user = fn, user
        handle = _abi.t4a_buffer()
        try:
            self._call("buffer_wrap_external", byref(m), byref(handle))
        except BaseException:
            _interop.forget(user)
            raise
        return Buffer._adopt(self, handle, host=host)

    def from_dlpack(self, obj, *, allow_read_only=False):
        """t4a_gpu.from_dlpack(obj, self)."""
        return _interop.from_dlpack(obj, self, allow_read_only=allow_read_only)

    def order_stream_after(self, stream=None, witness=None):
        """Work a framework enqueues on `stream` (an int CUstream, a PyTorch or
        CuPy stream object; None: the legacy default stream) after this call
        runs after `witness` (default: everything this runtime enqueued so
        far). GPU-side: the host does not wait."""
        own = witness is None
        w = self.seal() if own else witness
        try:
            if not w._node.alive:
                raise _dead(w._node, "stream_wait_witness")
            self._call("stream_wait_witness", c_void_p(_interop.stream_handle(stream)), w.handle)
        finally:
            if own:
                w.close()

    def wait_stream(self, stream):
        """Work this runtime enqueues after this call runs after everything a
        framework enqueued on `stream` so far (GPU-side)."""
        self._call("runtime_wait_stream", c_void_p(_interop.stream_handle(stream)))

    def wait_event(self, event):
        """Work this runtime enqueues after this call runs after a framework's
        CUevent (an int, or an object with .cuda_event / .ptr), as last
        recorded (GPU-side)."""
        for attr in ("cuda_event", "ptr"):
            event = getattr(event, attr, event)
        self._call("runtime_wait_event", c_void_p(event))

    # -- code ----------------------------------------------------------------------

    def compile(self, source, **kw):
        """Backend.compile for this runtime's device."""
        kw.setdefault("device", self.device)
        return self.backend.compile(source, **kw)

    def load(self, artifact):
        """Loads an Artifact into this runtime -> Module."""
        return Module(self, artifact)

    def launch(self, function, grid, block, *args, shared_bytes=0):
        """Enqueues `function` (grid, block: an int or up to 3 ints).

        args: the kernel's arguments in order: a Buffer (its device
        address), a typed value (t4a_gpu.u64(n), f32(x), ...), a ctypes
        scalar, or plain int/float when the function has a signature.
        """
        function._launch(self, grid, block, args, shared_bytes)

    def raw(self):
        """The CUcontext, CUstream and CUdevice behind the runtime (the raw
        seam; see the header)."""
        r = _sized(_abi.t4a_raw_runtime)
        self._call("raw_runtime", byref(r))
        return RawRuntime(r.device_ordinal, r.context, r.stream, r.device)


class Buffer:
    """Device memory of one runtime (stream-ordered alloc and free), or
    memory it wraps (Runtime.wrap, from_dlpack). Other frameworks read it in
    place through __dlpack__ / __cuda_array_interface__ (as uint8 bytes) or
    as_tensor(dtype, shape, ...)."""

    def __init__(self, runtime, nbytes):
        nbytes = _size(nbytes, "alloc: nbytes")  # the bound of every view (as_tensor)
        handle = _abi.t4a_buffer()
        runtime._call("buffer_alloc", nbytes, byref(handle))
        self._setup(runtime, handle, nbytes, False)

    def _setup(self, runtime, handle, nbytes, host):
        self._runtime, self.handle, self.nbytes, self._host = runtime, handle, nbytes, host
        rt_handle, backend = runtime.handle, runtime.backend
        self._node = _Node("buffer", runtime._node,
                           lambda: backend.call("buffer_free", rt_handle, handle))
        # Exports still held by a consumer (weak refs, _Node.hold): DLPack tensors' marks,
        # objects whose __cuda_array_interface__ was read.
        self._node.views = []
        self._interface_read = False  # this Buffer's own __cuda_array_interface__ was
        self._finalizer = _finalizer(self, self._node)

    @classmethod
    def _adopt(cls, runtime, handle, host=False):
        """A Buffer for a handle the backend just made (external memory)."""
        self = cls.__new__(cls)
        n = c_uint64()
        try:
            runtime._call("buffer_size", handle, byref(n))
        except BaseException:
            runtime._call("buffer_free", handle)
            raise
        self._setup(runtime, handle, n.value, host)
        return self

    @property
    def runtime(self):
        return self._runtime

    def __len__(self):
        return self.nbytes

    def _call(self, slot, *args):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self._runtime._call(slot, *args)

    def close(self):
        """Stream-ordered free: work already enqueued may still use it.
        BufferError while an export is held: a DLPack tensor a consumer has
        not released, a TensorView whose __cuda_array_interface__ was read,
        or this Buffer itself once its own interface was read."""
        if self._interface_read and self._node.alive:
            raise BufferError(
                "cannot close the buffer: its own __cuda_array_interface__ was read, so a "
                "consumer (CuPy, Numba, PyTorch ...) may keep this Buffer for as long as it "
                "lives, and the interface has no deleter to say when it is done; drop every "
                "reference to it (it is freed once collected, the consumer's too), or export "
                "buf.as_tensor(), whose view the consumer keeps instead")
        self._node.close()
        self._finalizer.detach()  # released: the safety net has nothing left to do

    free = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def address(self):
        """The device address (CUdeviceptr) as an int."""
        a = c_uint64()
        self._call("buffer_device_address", self.handle, byref(a))
        return a.value

    def size(self):
        """The size requested at allocation, as the backend reports it."""
        n = c_uint64()
        self._call("buffer_size", self.handle, byref(n))
        return n.value

    # -- other frameworks (t4a_gpu._interop) ----------------------------------------

    def as_tensor(self, dtype="uint8", shape=None, strides=None, offset=0, readonly=False):
        """A TensorView: this buffer's bytes from `offset` as a tensor of
        `dtype` (a name such as "float32", a numpy or framework dtype) and
        `shape` (default: 1-D, to the end), `strides` in elements (default:
        row-major), for torch.from_dlpack, cupy.from_dlpack, jax.dlpack ...
        Every element must lie in the buffer (by the strides used; an empty
        view touches nothing): else errors.ERANGE, whichever protocol would
        export it."""
        return _interop.TensorView(self, dtype, shape, strides, offset, readonly)

    def __dlpack__(self, **kw):
        """The whole buffer as a 1-D uint8 DLPack tensor (see TensorView)."""
        return _interop.TensorView(self).__dlpack__(**kw)

    def __dlpack_device__(self):
        return _interop.TensorView(self).__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        """The whole buffer as 1-D uint8 (CUDA Array Interface v3). The
        consumer keeps this Buffer, and may use its memory as long as it
        does: from now on the Buffer counts as exported for as long as it
        lives (close() is a BufferError; it is freed once collected). To
        close explicitly later, export a view: buf.as_tensor()."""
        cai = _interop.TensorView(self)._interface(self)
        self._interface_read = True
        return cai

    # -- pageable transfers (return once host memory is consumed/filled) ---------

    def write(self, data, offset=0):
        """Copies `data` (any C-contiguous buffer-protocol object) to the
        buffer at `offset`; returns once `data` may be reused."""
        with borrow(data, False, "Buffer.write") as (address, n):
            self._call("copy_h2d", self.handle, offset, address, n)

    def read_into(self, out, offset=0):
        """Fills `out` (a writable, C-contiguous buffer-protocol object) from
        the buffer at `offset`; waits for the work ahead of it."""
        with borrow(out, True, "Buffer.read_into") as (address, n):
            self._call("copy_d2h", address, self.handle, offset, n)
        return out

    def read(self, nbytes=None, offset=0):
        """nbytes (default: to the end) from `offset` as bytes."""
        if nbytes is None:
            nbytes = max(self.nbytes - offset, 0)
        out = bytearray(nbytes)
        self.read_into(out, offset)
        return bytes(out)

    # -- device, cross-runtime and pinned copies ---------------------------------------

    def copy_from(self, src, *, offset=0, src_offset=0, nbytes=None, via_host=False):
        """Enqueues a copy of `src` into this buffer at `offset`.

        src: a Buffer of this runtime (copy_d2d), of another runtime on the
        same device (copy_from_runtime), of another device (copy_from_peer;
        via_host=True: copy_from_peer_via_host), or a HostBuffer (the
        asynchronous copy_h2d_pinned: do not touch its memory until a
        witness covering the copy is ready).
        """
        if nbytes is None:
            nbytes = max(min(src.nbytes - src_offset, self.nbytes - offset), 0)
        if isinstance(src, HostBuffer):
            if src._runtime is not self._runtime:
                raise ValueError("copy_from: the host buffer belongs to another runtime")
            src._check()
            self._call("copy_h2d_pinned", self.handle, offset, src.handle, src_offset, nbytes)
            return
        if not isinstance(src, Buffer):
            raise TypeError("copy_from: a Buffer or HostBuffer (host memory: Buffer.write)")
        if not src._node.alive:
            raise _dead(src._node, "copy_from")
        if src._runtime is self._runtime:
            self._call("copy_d2d", self.handle, offset, src.handle, src_offset, nbytes)
            return
        slot = "copy_from_runtime"
        if via_host:
            slot = "copy_from_peer_via_host"
        elif src._runtime.device != self._runtime.device:
            slot = "copy_from_peer"
        self._call(slot, self.handle, offset, src._runtime.handle, src.handle, src_offset,
                   nbytes)


class HostBuffer:
    """Pinned (page-locked) host memory of one runtime.

    view() exposes the memory as a writable memoryview; closing the host
    buffer (or its runtime or backend) while a view is held raises
    BufferError, as mmap does, and a held view keeps the HostBuffer alive.
    """

    def __init__(self, runtime, nbytes, write_combined=False):
        nbytes = _size(nbytes, "host_alloc: nbytes")  # the length of every view()
        handle, p = _abi.t4a_host_buffer(), c_void_p()
        runtime._call("host_alloc", nbytes,
                      _abi.T4A_HOST_WRITE_COMBINED if write_combined else 0, byref(handle),
                      byref(p))
        self._runtime, self.handle, self.nbytes, self.address = runtime, handle, nbytes, p.value
        rt_handle, backend = runtime.handle, runtime.backend
        self._node = _Node("host buffer", runtime._node,
                           lambda: backend.call("host_free", rt_handle, handle))
        # Weak references to the arrays behind view()s (a list: ctypes arrays are unhashable).
        self._node.views = []
        self._view_type = None
        self._finalizer = _finalizer(self, self._node)

    @property
    def runtime(self):
        return self._runtime

    def __len__(self):
        return self.nbytes

    def _check(self):
        if not self._node.alive:
            raise _dead(self._node, "host buffer")

    def view(self):
        """A writable memoryview (format 'B') of the pinned memory."""
        self._check()
        if self._view_type is None:  # an array type whose instances take attributes
            self._view_type = type("pinned_bytes", (ctypes.c_char * self.nbytes,), {})
        arr = self._view_type.from_address(self.address)
        arr.owner = self  # the view keeps the memory's owner alive
        self._node.views[:] = [r for r in self._node.views if r() is not None]
        self._node.views.append(weakref.ref(arr))
        return memoryview(arr).cast("B")

    def close(self):
        """The memory is reused only after the enqueued work using it completed."""
        self._node.close()
        self._finalizer.detach()  # released: the safety net has nothing left to do

    free = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def copy_from(self, src, *, offset=0, src_offset=0, nbytes=None):
        """Enqueues the asynchronous copy_d2h_pinned of a Buffer of this
        runtime into this host buffer at `offset`: read the memory only once
        a witness covering it is ready."""
        self._check()
        if not isinstance(src, Buffer) or src._runtime is not self._runtime:
            raise ValueError("HostBuffer.copy_from: a Buffer of the same runtime")
        if nbytes is None:
            nbytes = max(min(src.nbytes - src_offset, self.nbytes - offset), 0)
        src._call("copy_d2h_pinned", self.handle, offset, src.handle, src_offset, nbytes)


class Module:
    """An Artifact loaded into a runtime (module_load ... module_unload)."""

    def __init__(self, runtime, artifact):
        if not artifact._node.alive:
            raise _dead(artifact._node, "module_load")
        handle = _abi.t4a_module()
        runtime._call("module_load", artifact.handle, byref(handle))
        self._runtime, self.handle = runtime, handle
        rt_handle, backend = runtime.handle, runtime.backend
        self._node = _Node("module", runtime._node,
                           lambda: backend.call("module_unload", rt_handle, handle),
                           owns_children=True)
        self._finalizer = _finalizer(self, self._node)

    def function(self, name, signature=None):
        """The kernel `name` -> Function (errors.ENOTFOUND when absent).
        signature ('u64 f32 ptr ptr') lets launch take plain ints/floats."""
        if not self._node.alive:
            raise _dead(self._node, "function_get")
        handle = _abi.t4a_function()
        self._runtime._call("function_get", self.handle, name.encode(), byref(handle))
        return Function(self, name, handle, signature)

    def close(self):
        """Unloaded after the runtime's enqueued work completed; its
        Functions become invalid."""
        self._node.close()
        self._finalizer.detach()  # released: the safety net has nothing left to do

    unload = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Function:
    """A kernel of a Module; invalid once the module unloads."""

    def __init__(self, module, name, handle, signature=None):
        self.module, self.name, self.handle = module, name, handle
        self.signature = parse_signature(signature) if signature else None
        self._node = _Node("function", module._node, None)
        self._finalizer = _finalizer(self, self._node)  # only unlinks the node

    def _call(self, slot, *args):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self.module._runtime._call(slot, self.handle, *args)

    def attributes(self):
        a = _sized(_abi.t4a_function_attributes)
        self._call("function_attributes", byref(a))
        return _as_dict(a)

    def set_max_dynamic_shared(self, nbytes):
        self._call("function_set_max_dynamic_shared", nbytes)

    def raw(self):
        """The CUfunction behind the function (an int address)."""
        p = c_void_p()
        self._call("raw_function", byref(p))
        return p.value

    def launch(self, grid, block, *args, shared_bytes=0):
        """Enqueues the kernel on its module's runtime (see Runtime.launch)."""
        self._launch(self.module._runtime, grid, block, args, shared_bytes)

    __call__ = launch

    def _launch(self, runtime, grid, block, args, shared_bytes):
        if runtime is not self.module._runtime:
            raise ValueError("launch: the function belongs to another runtime")
        if self.signature is not None and len(args) != len(self.signature):
            raise TypeError("launch of %s: %d arguments, the signature has %d"
                            % (self.name, len(args), len(self.signature)))
        want = self.signature or (None,) * len(args)
        values = [_convert(i, a, w, runtime) for i, (a, w) in enumerate(zip(args, want))]
        cfg = _sized(_abi.t4a_launch_config)
        cfg.grid, cfg.block = _dims(grid, "grid"), _dims(block, "block")
        cfg.shared_bytes = shared_bytes
        pointers = (c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.pointer(v), c_void_p) for v in values])
        self._call("launch", byref(cfg), pointers)


TensorView = _interop.TensorView


def from_dlpack(obj, runtime, *, allow_read_only=False):
    """Wraps a DLPack producer's tensor (torch, cupy, jax arrays, a capsule)
    as an external Buffer of `runtime`, without a copy (see
    t4a_gpu._interop.from_dlpack)."""
    return _interop.from_dlpack(obj, runtime, allow_read_only=allow_read_only)
