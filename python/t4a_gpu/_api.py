"""t4a_gpu._api -- the idiomatic layer over the generated ctypes declarations.

Ownership. Every native object (backend, runtime, buffer, host buffer,
witness, artifact, module, function, graph) is released exactly once: by its
close() (or the end of its `with` block), else by a safety net when the
Python object is collected (__del__; for a Backend and a Runtime a
weakref.finalize, which also runs at interpreter exit). The state a release
needs lives in a _Node, apart from the Python object, so that the safety net
keeps nothing alive. Nodes form the ownership tree of the header ("Objects,
ownership and lifetime"):

    backend -> runtimes, witnesses, artifacts
    runtime -> buffers, host buffers, modules, graphs;  module -> functions

A child holds a strong reference to its parent's Python object, so a
parent is never collected before its children. Closing a parent closes its
subtree first: a backend destroys its runtimes and releases its witnesses
and artifacts before t4a_gpu_close (which may unload the plugin); a runtime
is destroyed, and then its buffers, host buffers, modules, functions and
graphs are marked invalid without a call (runtime_destroy released them:
their handles are stale). Using an invalidated object raises errors.EHANDLE
without a call into the backend; no finalizer ever calls into a destroyed
runtime or a closed backend.

Calls. Backend.call(slot, ...) calls a slot through its generated prototype
(ctypes converts and checks every argument). The methods here call the same
function pointers bound once without argtypes (Backend._fast), which skips
ctypes' per-argument conversion: each argument is passed as the ctypes object
of its C type (a handle struct, c_uint64, byref, an array, a c_void_p, None
for NULL) or, for a parameter of at most 32 bits, a Python int the method
range-checked. $T4A_PY_CHECK_CALLS=1 (the test suite sets it) checks every
such call against the generated prototype.

Threads. Slots are thread-safe (the header's threading contract) and
ctypes releases the GIL during each call; last_error is read on the calling
thread right after the failing call. Closing is serialised by one lock.
"""
import ctypes
import operator
import os
import struct
import threading
import weakref
from collections import namedtuple
from ctypes import (byref, c_bool, c_char, c_char_p, c_int, c_int32, c_uint16, c_uint32, c_uint64,
                    c_void_p)

from . import _abi, _interop, _launch
from ._hostmem import borrow, host_range, host_rows
from ._launch import (ByValue, ConfigCache, Plan, f32, f64, i8, i16, i32, i64, make_config,
                      make_config_ex, parse_signature, ptr, u8, u16, u32, u64)
from ._loader import load_library
from .errors import T4AError, Unavailable, error_class

__all__ = [
    "Backend", "Runtime", "Buffer", "HostBuffer", "Witness", "Artifact", "Module", "Function",
    "Graph", "TensorView", "from_dlpack", "is_available",
    "BackendInfo", "Device", "CompilerInfo", "BackendEntry", "RawRuntime", "MemoryInfo",
    "RuntimeInfo", "GraphInfo", "ByValue",
    "list_backends", "loader_version", "loader_abi", "search_path", "plugin_dir",
    "status_name", "status_message", "WAIT_FOREVER", "fastcall_enabled",
    "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64", "ptr",
]

WAIT_FOREVER = _abi.T4A_WAIT_FOREVER
_lock = threading.RLock()
_TWO64 = 1 << 64
_TWO32 = 1 << 32


# ---------------------------------------------------------------------------
# Small helpers.
# ---------------------------------------------------------------------------


def _size(value, what):
    """A caller's byte count for a uint64 parameter: an integer in [0, 2^64)
    (ctypes would keep the low 64 bits of a larger one, and the object would
    then record a size the backend never allocated)."""
    if type(value) is int and 0 <= value < _TWO64:
        return value
    if isinstance(value, bool):
        raise TypeError("%s is %r; pass an integer number of bytes" % (what, value))
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError("%s is %r; pass an integer number of bytes" % (what, value)) from None
    if not 0 <= value < _TWO64:
        raise ValueError("%s is %d; pass a size in [0, 2^64)" % (what, value))
    return value


def _u32(value, what):
    """A caller's value for a uint32 parameter, range-checked."""
    if type(value) is int and 0 <= value < _TWO32:
        return value
    if isinstance(value, bool):
        raise TypeError("%s is %r; pass an int" % (what, value))
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError("%s is %r; pass an int" % (what, value)) from None
    if not 0 <= value < _TWO32:
        raise ValueError("%s is %d; pass a value in [0, 2^32)" % (what, value))
    return value


_U64 = {}  # small cache of c_uint64 objects (passed by value: never written)


def _c64(value):
    """c_uint64(value) for a value already checked to be in [0, 2^64)."""
    c = _U64.get(value)
    if c is None:
        c = c_uint64(value)
        if len(_U64) < 4096:
            _U64[value] = c
    return c


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


_STATUS = {value: (name, message) for name, value, message in _abi.STATUSES}


def status_name(status: int) -> str:
    """"T4A_EINVAL" for -1; "T4A_UNKNOWN" for a value the header does not list."""
    return _STATUS.get(status, ("T4A_UNKNOWN",))[0]


def status_message(status: int) -> str:
    """The one-line message of a status ("invalid argument")."""
    return _STATUS.get(status, (None, "unknown status"))[1]


def _loader_check(lib, rc, call):
    if rc != _abi.T4A_OK:
        raise error_class(rc)(rc, call, _text(lib.t4a_gpu_last_error()))


# ---------------------------------------------------------------------------
# Module-level loader functions.
# ---------------------------------------------------------------------------


def loader_version(library=None) -> tuple:
    """(major, minor, patch) of libt4a_gpu."""
    lib = load_library(library)
    v = [c_int(), c_int(), c_int()]
    lib.t4a_gpu_loader_version(*[byref(x) for x in v])
    return tuple(x.value for x in v)


def loader_abi(library=None) -> tuple:
    """(major, minor) of the backend ABI the loader speaks."""
    lib = load_library(library)
    v = [c_int(), c_int()]
    lib.t4a_gpu_loader_abi(*[byref(x) for x in v])
    return tuple(x.value for x in v)


def search_path(library=None) -> str:
    """The plugin directories searched, colon-separated."""
    return _text(load_library(library).t4a_gpu_search_path())


def plugin_dir(library=None) -> str:
    """The configured plugin directory."""
    return _text(load_library(library).t4a_gpu_plugin_dir())


BackendEntry = namedtuple("BackendEntry", "name path")
BackendEntry.__doc__ = "An installed backend plugin: its name ('cuda') and file."


def list_backends(library=None) -> list:
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


def is_available(backend=None, *, library=None) -> bool:
    """Whether `backend` (a name, a path, or None: $T4A_GPU_BACKEND, else
    "cuda") can be used here: it opens, initialises and has a device.

    False when the loader or the plugin is not installed (errors.ENOBACKEND)
    or the machine cannot run it (errors.Unavailable: no driver, a stub
    driver, no device, a driver too old or mismatched); other failures
    raise, as they are not a property of the machine. To learn why, open
    it: Backend(backend) raises the error with its message.
    """
    try:
        path = backend if backend is not None and "/" in str(backend) else None
        with Backend(None if path else backend, path=path, library=library) as b:
            return b.device_count() > 0
    except Unavailable:
        return False
    except T4AError as e:
        if e.status == _abi.T4A_ENOBACKEND:
            return False
        raise


# ---------------------------------------------------------------------------
# The ownership tree.
# ---------------------------------------------------------------------------


class _Node:
    """One native object's release, apart from its Python object.

    release: a callable doing the native release (None: nothing to call);
    owns_children: the release itself frees the children (runtime_destroy,
    module_unload), which are then only invalidated; otherwise (the backend)
    the children are closed, newest first, before the release. children and
    views are made when first needed (most nodes have neither).
    """


    def __init__(self, kind, parent, release, owns_children=False, owner=False):
        self.kind, self.release, self.owns_children = kind, release, owns_children
        self.children = {} if owner else None  # owner: a node that has children
        self.parent, self.alive, self.views = parent, True, None
        if parent is not None:
            # Without the lock (an allocation's hot path): the insertion comes first and
            # the parent's liveness is read after it. A parent's close sets alive = False
            # before it takes its children, so either this node is among them or this
            # check sees the parent closed (the GIL orders the two threads' steps).
            kids = parent.children
            if kids is None:
                with _lock:
                    kids = parent.children
                    if kids is None:
                        kids = parent.children = {}
            kids[id(self)] = self
            if not parent.alive:
                kids.pop(id(self), None)
                raise error_class(_abi.T4A_EHANDLE)(
                    _abi.T4A_EHANDLE, kind, "its %s is closed" % parent.kind)

    def _invalidate(self):
        self.alive = False
        kids, self.children = self.children, None
        if kids:
            for k in list(kids.values()):
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
            if views is None:
                views = self.views = []
            views[:] = [r for r in views if r() is not None and r is not ref]
            views.append(ref)
            return ref

    def drop(self, ref):
        """Undoes hold() (the export it guarded failed)."""
        with _lock:
            if self.views:
                self.views[:] = [r for r in self.views if r is not ref]

    def exported_views(self):
        """Views still held under this node (see HostBuffer.view, hold)."""
        n = sum(1 for ref in self.views or () if ref() is not None)
        kids = self.children
        return n + (sum(k.exported_views() for k in list(kids.values())) if kids else 0)

    def close(self, quiet=False):
        """Releases the subtree once; later calls do nothing. Errors of the
        release are raised (quiet: swallowed, for the finalizers)."""
        with _lock:
            if not self.alive:
                return
            if not quiet and (self.views or self.children) and self.exported_views():
                raise BufferError(
                    "cannot close the %s: views of its memory are still held (memoryviews of "
                    "pinned host memory, DLPack tensors another framework has not released, "
                    "objects whose __cuda_array_interface__ was read: a TensorView, or a "
                    "Buffer itself, which its consumer keeps); release them first "
                    "(view.release(); del the arrays, and those objects)" % self.kind)
            if self.children is None and not self.views:  # a leaf (a buffer): the short way
                try:
                    self._release()
                except T4AError:
                    self.alive = False
                    self._unlink()
                    if not quiet:
                        raise
                    return
                self.alive = False
                self._unlink()
                return
            err = None
            if not self.owns_children and self.children:  # the backend: children first
                for k in reversed(list(self.children.values())):
                    try:
                        k.close(quiet)
                    except T4AError as e:
                        err = err or e
            try:
                self._release()
            except T4AError as e:
                if e.status == _abi.T4A_ETIMEOUT and err is None:
                    raise  # nothing released: the object stays usable
                err = err or e
            self._invalidate()
            self._unlink()
            if err is not None and not quiet:
                raise err

    def _release(self):
        if self.release is not None:
            self.release()

    def _unlink(self):
        parent = self.parent
        if parent is not None:
            kids = parent.children
            if kids:
                kids.pop(id(self), None)


class _BufferNode(_Node):
    """A buffer's node: its release is buffer_free through the fast slot
    (no closure per buffer)."""

    __slots__ = ("rt_handle", "handle", "free", "backend", "a_free", "rt_bits")

    def __init__(self, runtime, handle):  # _Node.__init__, inlined (the alloc's hot path)
        self.rt_handle, self.handle = runtime.handle, handle
        self.free, self.backend = runtime._f_free, runtime.backend
        self.a_free, self.rt_bits = runtime._a_free, runtime._bits  # the compiled route's
        self.kind, self.release, self.owns_children, self.children = "buffer", None, False, None
        parent = self.parent = runtime._node
        self.alive, self.views = True, None
        kids = parent.children  # a runtime's: never None (see _Node.__init__ for the order)
        kids[id(self)] = self
        if not parent.alive:
            kids.pop(id(self), None)
            raise _dead(parent, "buffer_alloc")

    def _release(self):
        rc = self.free(self.rt_handle, self.handle)
        if rc:
            raise self.backend.error(rc, "buffer_free")

    def close(self, quiet=False):
        """_Node.close, the leaf's short way inlined when nothing is exported."""
        if self.views:
            return _Node.close(self, quiet)
        with _lock:
            if not self.alive:
                return
            self.alive = False
            kids = self.parent.children
            if kids:
                kids.pop(id(self), None)
            if _fc_free is not None:
                rc = _fc_free(self.a_free, self.rt_bits, self.handle.bits)
            else:
                rc = self.free(self.rt_handle, self.handle)
        if rc and not quiet:
            raise self.backend.error(rc, "buffer_free")


def _finalizer(obj, node):
    return weakref.finalize(obj, node.close, True)


class _Owned:
    """Base of the objects whose safety net is __del__ (cheaper to set up
    than a weakref.finalize): a collected object's node is closed quietly.
    At interpreter exit the Backend's finalizer has closed every node."""

    __slots__ = ()

    def __del__(self):
        node = getattr(self, "_node", None)
        if node is not None and node.alive:
            try:
                node.close(True)
            except Exception:  # noqa: BLE001 -- a safety net never raises
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def closed(self) -> bool:
        """Whether the object was closed (or its owner was)."""
        return not self._node.alive


def _dead(node, what):
    return error_class(_abi.T4A_EHANDLE)(
        _abi.T4A_EHANDLE, what, "the %s is closed (by close(), or when the object owning it "
        "closed); make a new one" % node.kind)


# ---------------------------------------------------------------------------
# Plain-Python views of the info structs.
# ---------------------------------------------------------------------------

BackendInfo = namedtuple("BackendInfo",
                         "name version abi driver_version driver_path device_count")
BackendInfo.__doc__ = "Backend.info(): the plugin's name, version, ABI and driver facts."
Device = namedtuple(
    "Device",
    "ordinal name uuid cc total_memory pci_bus_id multiprocessors flags max_threads_per_block "
    "max_block_dim max_grid_dim max_shared_per_block max_shared_per_block_optin warp_size "
    "max_pitch")
Device.__doc__ = ("Backend.device(i): the facts of one device (max_pitch: the largest row "
                  "pitch of a 2-D copy, 0 from a plugin older than ABI 1.1).")
CompilerInfo = namedtuple("CompilerInfo", "status available version path reason")
CompilerInfo.__doc__ = "Backend.compiler_info(): whether the run-time compiler loads, or why not."
RawRuntime = namedtuple("RawRuntime", "device_ordinal context stream device")
RawRuntime.__doc__ = "Runtime.raw(): the driver objects behind a runtime (the raw seam)."
MemoryInfo = namedtuple("MemoryInfo", "device_free device_total pool_reserved pool_used "
                        "pool_high_water cache_bytes staging_bytes held_bytes limit_bytes")
MemoryInfo.__doc__ = ("Runtime.memory_info(): the device's free and total memory and the "
                      "runtime's pool, block cache and staging, in bytes; what it holds and "
                      "its memory budget (held_bytes, limit_bytes: ABI 1.2, None from an "
                      "older plugin; limit_bytes None also when the runtime has no budget).")
RuntimeInfo = namedtuple("RuntimeInfo", "device_ordinal flags timing stream_priority "
                         "priority_least priority_greatest exec_flags clusters cooperative "
                         "graphs priorities capturing")
RuntimeInfo.__doc__ = ("Runtime.info(): the runtime's device, flags (timing: created with "
                       "timing=True), its stream priority, the device's priority range "
                       "(least: the lowest priority, usually 0; greatest: a lower number), "
                       "what launch_ex and graphs can do here (clusters, cooperative, graphs, "
                       "priorities; exec_flags: the T4A_EXEC_* bits) and whether a capture "
                       "is in progress.")
GraphInfo = namedtuple("GraphInfo", "nodes kernels copies replays")
GraphInfo.__doc__ = ("Graph.info(): the nodes of the graph as the driver counts them, the "
                     "kernels captured (Graph.set_args indices 0 .. kernels - 1), the copies "
                     "and memsets, and the replays so far.")


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
        if name not in skip and not name.startswith("reserved") and \
                f.offset + f.size <= s.struct_size:
            out[name] = getattr(s, name)
    return out


def _filled(s, name):
    """Whether the callee's struct_size covers field `name` (else it is 0)."""
    f = getattr(type(s), name)
    return f.offset + f.size <= s.struct_size


# ---------------------------------------------------------------------------
# Checked fast calls ($T4A_PY_CHECK_CALLS=1).
# ---------------------------------------------------------------------------

_RAW = ctypes.CFUNCTYPE(c_int)  # a slot's pointer, called without argtypes
_SMALL_INTS = (ctypes.c_int, c_int32, c_uint32, c_uint16, ctypes.c_uint8, c_bool)


def _checked(slot, fn, argtypes):
    """fn (called without argtypes) wrapped to refuse an argument whose
    ctypes object does not match the generated prototype: what a fast call
    passes must be what the prototype would have converted it to."""
    def check(*args):
        if len(args) != len(argtypes):
            raise AssertionError("%s: %d arguments, the prototype has %d"
                                 % (slot, len(args), len(argtypes)))
        for i, (a, t) in enumerate(zip(args, argtypes)):
            if isinstance(t, type) and issubclass(t, ctypes.Structure):
                ok = type(a) is t
            elif t in (c_uint64, ctypes.c_int64):
                ok = type(a) in (c_uint64, ctypes.c_int64)
            elif t in _SMALL_INTS or (isinstance(t, type) and issubclass(t, ctypes.c_int)):
                size = ctypes.sizeof(t)
                ok = (type(a) is int and not isinstance(a, bool) and
                      -(1 << (8 * size - 1)) <= a < (1 << (8 * size))) or \
                    (isinstance(a, ctypes._SimpleCData) and ctypes.sizeof(a) == size)
            else:  # a pointer: never a Python int (it would be passed as a C int)
                ok = a is None or type(a) is bytes or type(a).__name__ == "CArgObject" or \
                    isinstance(a, (c_void_p, c_char_p, ctypes.Array, ctypes._Pointer))
            if not ok:
                raise AssertionError("%s: argument %d is %r, the prototype says %s"
                                     % (slot, i, a, t.__name__))
        return fn(*args)
    return check


_CHECK_CALLS = os.environ.get("T4A_PY_CHECK_CALLS", "") not in ("", "0")


def _load_fastcall():
    """t4a_gpu._fastcall, the optional compiled route of the hottest calls
    (launch, alloc and free: see its source), or None: not built (a plain
    Python install), or $T4A_PY_FASTCALL=0. Both routes give the same
    results; the compiled one hands anything unusual back to Python."""
    if os.environ.get("T4A_PY_FASTCALL", "") == "0":
        return None
    try:
        from . import _fastcall
    except ImportError:
        return None
    return _fastcall


_FC = _load_fastcall()
_fc_launch = _FC.launch if _FC is not None else None
_fc_alloc = _FC.buffer_alloc if _FC is not None else None
_fc_free = _FC.buffer_free if _FC is not None else None


def fastcall_enabled() -> bool:
    """Whether the compiled fast path (t4a_gpu._fastcall) is in use."""
    return _FC is not None


# ---------------------------------------------------------------------------
# Backend.
# ---------------------------------------------------------------------------


class Backend:
    """An open backend plugin (t4a_gpu_open ... t4a_gpu_close).

    Backend(spec) opens by name ("cuda"), by path (a spec containing "/"),
    or the default ($T4A_GPU_BACKEND, else "cuda") for None. path= opens
    exactly that file (t4a_gpu_open_path). library= is the loader library to
    use (else see t4a_gpu.load_library). With init=True (the default) the
    backend is initialised at once and a failure (no driver, no device, ...:
    an errors.Unavailable) closes it and raises; init=False leaves that to
    init(), e.g. to read info() first. A context manager: close() at the end
    of the block.
    """

    def __init__(self, spec=None, *, path=None, library=None, init=True):
        lib = load_library(library)
        handle = ctypes.POINTER(_abi.t4a_gpu_backend)()
        if path is None and spec is not None and "/" in str(spec):
            spec, path = None, spec
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
        # which then read as absent, never past the end). _slots: through
        # the generated prototypes (call()); _fast: the same pointers bound
        # without argtypes, for the methods.
        self._slots, self._fast, self._addrs = {}, {}, {}
        protos = dict(_abi.t4a_gpu_backend_v1._fields_)
        for name, _ in _abi.t4a_gpu_backend_v1._fields_:
            if name in _abi.SLOT_DOCS and \
                    _abi.size_through(_abi.t4a_gpu_backend_v1, name) <= table.struct_size:
                fn = getattr(table, name)
                self._slots[name] = fn if fn else None
                if fn:
                    self._addrs[name] = ctypes.cast(fn, c_void_p).value  # _fastcall's
                    raw = _RAW(self._addrs[name])
                    self._fast[name] = _checked(name, raw, protos[name]._argtypes_) \
                        if _CHECK_CALLS else raw
        self.name = _text(table.name)
        self.version = _text(table.version)
        self._table = table

        def release(lib=lib, handle=handle):
            _loader_check(lib, lib.t4a_gpu_close(handle), "t4a_gpu_close")

        self._node = _Node("backend", None, release, owner=True)
        self._finalizer = _finalizer(self, self._node)
        if init:
            try:
                self.init()
            except BaseException:
                self.close()
                raise

    # -- lifetime ------------------------------------------------------------

    def close(self) -> None:
        """Destroys the runtimes, releases the witnesses and artifacts still
        open from this backend, then drops this open (the plugin unloads at
        its last close). Idempotent."""
        self._node.close()
        self._finalizer.detach()  # released: the safety net has nothing left to do

    @property
    def closed(self) -> bool:
        """Whether close() ran."""
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

    def has(self, slot: str) -> bool:
        """Whether the plugin provides `slot` (covered by struct_size, non-NULL)."""
        return self._slots.get(slot) is not None

    def error(self, status: int, call: str) -> T4AError:
        """The exception for `status` with this thread's last_error detail."""
        e = _sized(_abi.t4a_error_info)
        fn = self._slots.get("last_error")
        if fn is None or fn(byref(e)) != _abi.T4A_OK:
            return error_class(status)(status, call)
        return error_class(status)(status, call, _text(e.message), e.native_code,
                                   _text(e.native_name))

    def _missing(self, slot):
        if slot not in _abi.SLOT_DOCS:
            return AttributeError("the ABI has no slot %r" % slot)
        return error_class(_abi.T4A_EUNSUPPORTED)(
            _abi.T4A_EUNSUPPORTED, slot, "the backend %s (ABI %d.%d) does not provide %s; "
            "use a newer plugin" % (self.path, self.abi[0], self.abi[1], slot))

    def _fn(self, slot):
        """The fast function of `slot`; errors.EUNSUPPORTED when absent."""
        fn = self._fast.get(slot)
        if fn is None:
            raise self._missing(slot)
        return fn

    def call(self, slot: str, *args, ok=()) -> int:
        """Calls table slot `slot` with ctypes arguments; returns its status.

        Raises the status's exception unless it is T4A_OK or in `ok`;
        errors.EUNSUPPORTED when the plugin does not provide the slot. Every
        slot of the header is reachable here, including ones added after the
        idiomatic methods were written. The arguments go through the
        generated prototype (t4a_gpu.abi), which converts and checks them.
        """
        if not self._node.alive:
            raise _dead(self._node, slot)
        fn = self._slots.get(slot)
        if fn is None:
            raise self._missing(slot)
        rc = fn(*args)
        if rc != _abi.T4A_OK and rc not in ok:
            raise self.error(rc, slot)
        return rc

    # -- backend facts -----------------------------------------------------------

    def init(self) -> None:
        """Loads and initialises the driver (idempotent; a failure is final
        for the loaded plugin: errors.Unavailable when the machine cannot run
        it)."""
        self.call("init")

    def is_available(self) -> bool:
        """Whether init() succeeds and there is a device (False for an
        errors.Unavailable)."""
        try:
            self.init()
            return self.device_count() > 0
        except Unavailable:
            return False

    def last_error(self) -> T4AError:
        """This thread's last failure: a T4AError (status T4A_OK when none)."""
        e = _sized(_abi.t4a_error_info)
        self.call("last_error", byref(e))
        return T4AError(e.status, "last_error", _text(e.message), e.native_code,
                        _text(e.native_name))

    def info(self) -> BackendInfo:
        """The plugin's name, version, ABI and driver facts (callable before
        init; the driver's fields are then 0 or empty)."""
        i = _sized(_abi.t4a_backend_info)
        self.call("get_info", byref(i))
        return BackendInfo(_text(i.name), _text(i.version), (i.abi_major, i.abi_minor),
                           i.driver_version, _text(i.driver_path), i.device_count)

    def device_count(self) -> int:
        """The number of devices (>= 1 after a successful init)."""
        n = c_int32()
        self.call("device_count", byref(n))
        return n.value

    def device(self, ordinal: int) -> Device:
        """The facts of device `ordinal` (errors.EINVAL out of range)."""
        d = _sized(_abi.t4a_device_info)
        self.call("device_info", ordinal, byref(d))
        return Device(d.ordinal, _text(d.name), bytes(d.uuid).hex(), (d.cc_major, d.cc_minor),
                      d.total_memory, _text(d.pci_bus_id), d.multiprocessors, d.flags,
                      d.max_threads_per_block, tuple(d.max_block_dim), tuple(d.max_grid_dim),
                      d.max_shared_per_block, d.max_shared_per_block_optin, d.warp_size,
                      d.max_pitch if _filled(d, "max_pitch") else 0)

    def devices(self) -> list:
        """Every device's facts, by ordinal."""
        return [self.device(i) for i in range(self.device_count())]

    def compiler_info(self) -> CompilerInfo:
        """Whether the run-time compiler (NVRTC) can be loaded, its version
        and file, or why not (loads it; never fails for its absence)."""
        c = _sized(_abi.t4a_compiler_info)
        self.call("compiler_info", byref(c))
        return CompilerInfo(c.status, c.status == _abi.T4A_OK,
                            (c.version_major, c.version_minor), _text(c.path), _text(c.reason))

    def peer_access_supported(self, src: int, dst: int) -> bool:
        """Whether device `src` can read and write device `dst`'s memory."""
        ok = c_bool()
        self.call("peer_access_supported", src, dst, byref(ok))
        return ok.value

    def compile_cache_stats(self) -> dict:
        """The compiled-artifact caches (memory and disk), {field: value}."""
        s = _sized(_abi.t4a_compile_cache_stats)
        self.call("compile_cache_stats", byref(s))
        return _as_dict(s)

    def compile_cache_clear(self, memory: bool = True, disk: bool = True) -> None:
        """Empties the memory and/or disk compile cache (artifacts already
        returned stay valid)."""
        self.call("compile_cache_clear", (_abi.T4A_CACHE_MEMORY if memory else 0) |
                  (_abi.T4A_CACHE_DISK if disk else 0))

    # -- children ------------------------------------------------------------------

    def runtime(self, device: int = 0, **options) -> "Runtime":
        """A new Runtime on `device` (see Runtime for the options)."""
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

    def artifact_from_bytes(self, data, kind, name=None) -> "Artifact":
        """Wraps PTX text, CUBIN or fatbin bytes (kind: T4A_ARTIFACT_*; copied)."""
        handle = _abi.t4a_artifact()
        with borrow(data, False, "artifact_from_bytes") as (address, n):
            self.call("artifact_from_bytes", kind, address, n,
                      name.encode() if name else None, byref(handle))
        return Artifact(self, handle)


# ---------------------------------------------------------------------------
# Objects owned by the backend: witnesses and artifacts.
# ---------------------------------------------------------------------------


def _timeout_ns(timeout):
    if timeout is None:
        return WAIT_FOREVER
    if timeout < 0:
        raise ValueError("timeout must be >= 0 seconds or None")
    return min(int(timeout * 1e9), WAIT_FOREVER - 1)


class Witness(_Owned):
    """A completion token (from Runtime.seal): valid until closed, even after
    its runtime is destroyed. close() drops this reference."""


    def __init__(self, backend, handle):
        self._backend, self.handle = backend, handle
        fn = backend._fast["witness_release"]

        def release():
            rc = fn(handle)
            if rc:
                raise backend.error(rc, "witness_release")

        self._node = _Node("witness", backend._node, release)

    def _call(self, slot, *args, ok=()):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self._backend.call(slot, self.handle, *args, ok=ok)

    def query(self) -> bool:
        """True when the covered work completed, False when not yet;
        errors.EDEVICEFAULT when it failed. Never blocks."""
        return self._call("witness_query", ok=(_abi.T4A_ENOTREADY,)) == _abi.T4A_OK

    def wait(self, timeout=None) -> None:
        """Blocks until the work completed; timeout in seconds (None: no
        limit) -> errors.ETIMEOUT."""
        self._call("witness_wait", _timeout_ns(timeout))

    def elapsed_ns(self, end: "Witness", wait: bool = True) -> int:
        """GPU time in nanoseconds from this witness's completion point to
        `end`'s, both sealed by one runtime created with timing=True
        (errors.EUNSUPPORTED otherwise; two runtimes: errors.EINVAL; end
        sealed before this one: errors.EINVAL). wait=True first waits for
        `end` (its work and this one's); wait=False raises errors.ENOTREADY
        while either is not complete."""
        if not isinstance(end, Witness):
            raise TypeError("elapsed: the end is a Witness (Runtime.seal())")
        if not end._node.alive:
            raise _dead(end._node, "witness_elapsed")
        if wait:
            end.wait()
        ns = c_uint64()
        self._call("witness_elapsed", end.handle, byref(ns))
        return ns.value

    def elapsed(self, end: "Witness", wait: bool = True) -> float:
        """elapsed_ns(end, wait) in seconds."""
        return self.elapsed_ns(end, wait) * 1e-9

    def retain(self) -> "Witness":
        """Another reference to the same witness, closed separately."""
        self._call("witness_retain")
        return Witness(self._backend, self.handle)

    def close(self) -> None:
        """Drops this reference (the last one frees the witness)."""
        self._node.close()

    release = close


class Artifact(_Owned):
    """Compiled or loaded code (Backend.compile / artifact_from_bytes).
    Modules loaded from it stay loaded after close()."""


    def __init__(self, backend, handle):
        self._backend, self.handle = backend, handle
        self._node = _Node("artifact", backend._node,
                           lambda: backend.call("artifact_release", handle))

    def _call(self, slot, *args):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self._backend.call(slot, self.handle, *args)

    @property
    def log(self) -> str:
        """The compile log (str, possibly empty)."""
        p, n = c_char_p(), c_uint64()
        self._call("artifact_log", byref(p), byref(n))
        return _text(ctypes.string_at(p, n.value)) if p.value else ""

    def _data(self):
        kind, p, n = c_int(), c_void_p(), c_uint64()
        self._call("artifact_data", byref(kind), byref(p), byref(n))
        return kind.value, (ctypes.string_at(p, n.value) if p.value else b"")

    @property
    def kind(self) -> int:
        """T4A_ARTIFACT_PTX, _CUBIN or _FATBIN."""
        return self._data()[0]

    @property
    def data(self) -> bytes:
        """The code bytes (a copy)."""
        return self._data()[1]

    def close(self) -> None:
        """Drops the artifact (modules loaded from it stay loaded)."""
        self._node.close()

    release = close


# ---------------------------------------------------------------------------
# Runtime and its children.
# ---------------------------------------------------------------------------


def _set_option(opts, key, value):
    if key == "struct_size" or key.startswith("reserved") or \
            not hasattr(_abi.t4a_runtime_options, key):
        raise TypeError("unknown runtime option %r" % key)
    ctype = dict(_abi.t4a_runtime_options._fields_)[key]
    bits = 8 * ctypes.sizeof(ctype)
    signed = ctype(-1).value == -1
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("runtime option %s: %r is not an int" % (key, value))
    lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
    if not lo <= value < hi:  # ctypes would keep the low bits
        raise ValueError("runtime option %s: %d does not fit %s" % (key, value, ctype.__name__))
    setattr(opts, key, value)


class Runtime:
    """One device, one stream, one memory pool (runtime_create ...
    runtime_destroy). All its work runs on its stream in call order.

    Options (keywords): timing=True (completion points record GPU time:
    Witness.elapsed), alloc_log=True or a number of events (ABI 1.2: keep
    an allocation log, read with alloc_log(); see t4a_gpu.alloclog),
    stream_priority (the driver's convention, lower runs first, within
    info().priority_greatest .. priority_least), and the t4a_runtime_options
    fields staging_bytes, pool_release_threshold, cache_limit_bytes,
    copy_threads, pool_limit_bytes (ABI 1.2: the memory budget).
    """

    def __init__(self, backend, device=0, *, timing=False, alloc_log=False, **options):
        self.backend, self.device = backend, device
        opts = None
        if options or timing or alloc_log:
            opts = _sized(_abi.t4a_runtime_options)
            for key, value in options.items():
                _set_option(opts, key, value)
            if timing:
                opts.flags |= _abi.T4A_RUNTIME_TIMING
            if alloc_log:
                opts.flags |= _abi.T4A_RUNTIME_ALLOC_LOG
                if alloc_log is not True:
                    _set_option(opts, "alloc_log_events", alloc_log)
        handle = _abi.t4a_runtime()
        backend.call("runtime_create", device, byref(opts) if opts is not None else None,
                     byref(handle))
        self.handle = handle
        self._timeout = WAIT_FOREVER
        self._capture = None  # the Graph being captured, see capture()
        self._deferred = []  # (witness handle, export) of unregistered host memory
        fast = backend._fast
        self._f_alloc, self._f_free = fast["buffer_alloc"], fast["buffer_free"]
        self._f_h2d, self._f_d2h = fast["copy_h2d"], fast["copy_d2h"]
        self._f_launch = fast["launch"]
        self._f_address = fast["buffer_device_address"]
        # the compiled route's: the slots' addresses and the handle's bits
        self._bits = handle.bits
        addrs = backend._addrs
        self._a_launch, self._a_alloc = addrs["launch"], addrs["buffer_alloc"]
        self._a_free = addrs["buffer_free"]

        def release(self_ref=weakref.ref(self)):
            me = self_ref()
            timeout = me._timeout if me is not None else WAIT_FOREVER
            backend.call("runtime_destroy", handle, timeout)
            if me is not None:
                me._deferred = []  # destroy waited for every use of that memory

        self._node = _Node("runtime", backend._node, release, owns_children=True, owner=True)
        self._finalizer = _finalizer(self, self._node)

    def _call(self, slot, *args, ok=()):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self.backend.call(slot, self.handle, *args, ok=ok)

    def close(self, timeout=None) -> None:
        """Waits for the outstanding work (timeout in seconds; None: no
        limit), then releases everything the runtime owns: its Buffers,
        HostBuffers, Modules, Functions and Graphs become invalid.
        errors.ETIMEOUT leaves the runtime open and usable;
        errors.EDEVICEFAULT closes it (after a device fault) and is raised."""
        self._timeout = _timeout_ns(timeout)
        try:
            self._node.close()
            self._finalizer.detach()  # released: the safety net has nothing left to do
        finally:
            self._timeout = WAIT_FOREVER

    destroy = close

    @property
    def closed(self) -> bool:
        """Whether the runtime was closed (or its backend was)."""
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

    def __repr__(self):
        return "<t4a_gpu.Runtime on device %d of %s%s>" % (
            self.device, self.backend.name, "" if self._node.alive else " (closed)")

    # -- facts -----------------------------------------------------------------------

    def info(self) -> RuntimeInfo:
        """The runtime's device, flags and stream priority, the device's
        priority range, what launch_ex and graphs can do here, and whether a
        capture is in progress (RuntimeInfo)."""
        i = _sized(_abi.t4a_runtime_info)
        self._call("runtime_info", byref(i))
        x = i.exec_flags
        return RuntimeInfo(i.device_ordinal, i.flags, bool(i.flags & _abi.T4A_RUNTIME_TIMING),
                           i.stream_priority, i.priority_least, i.priority_greatest, x,
                           bool(x & _abi.T4A_EXEC_CLUSTERS), bool(x & _abi.T4A_EXEC_COOPERATIVE),
                           bool(x & _abi.T4A_EXEC_GRAPHS), bool(x & _abi.T4A_EXEC_PRIORITIES),
                           bool(i.capturing))

    def memory_info(self) -> MemoryInfo:
        """The device's free and total memory (all processes, as the driver
        says) and this runtime's pool, block cache and staging (MemoryInfo)."""
        m = _sized(_abi.t4a_memory_info)
        self._call("runtime_memory_info", byref(m))
        v12 = m.struct_size >= _abi.T4A_MEMORY_INFO_V1_2_SIZE  # an older plugin fills less
        return MemoryInfo(m.device_free, m.device_total, m.pool_reserved, m.pool_used,
                          m.pool_high_water, m.cache_bytes, m.staging_bytes,
                          m.held_bytes if v12 else None,
                          (None if m.limit_bytes == WAIT_FOREVER else m.limit_bytes) if v12
                          else None)

    def alloc_log(self, start: int = 0) -> list:
        """The allocation log (a runtime made with alloc_log=...; ABI 1.2):
        its events numbered `start` and later, oldest first, as
        t4a_gpu.alloclog.AllocEvent tuples. The runtime keeps only the
        newest ones: a gap in the numbers is what it dropped. A runtime
        without a log raises errors.EUNSUPPORTED."""
        from .alloclog import AllocEvent
        chunk = 1024
        events, buf = [], (_abi.t4a_alloc_event * chunk)()
        count, nxt = ctypes.c_uint32(), ctypes.c_uint64()
        seq = start
        while True:
            self._call("alloc_log_read", seq, buf, chunk, byref(count), byref(nxt))
            for e in buf[:count.value]:
                events.append(AllocEvent(e.seq, e.time_ns, e.stream_seq, e.buffer, e.address,
                                         e.bytes, e.held_bytes, e.kind, e.detail))
            if count.value < chunk:
                return events
            seq = nxt.value

    def counters(self) -> dict:
        """A snapshot of the runtime's counters, {name: value}."""
        c = _sized(_abi.t4a_runtime_counters)
        self._call("runtime_counters", byref(c))
        return _as_dict(c)

    # -- memory ------------------------------------------------------------------

    def alloc(self, nbytes: int) -> "Buffer":
        """nbytes of device memory (content undefined) -> Buffer.
        Stream-ordered, served from the runtime's block cache when it can."""
        if type(nbytes) is not int or not 0 <= nbytes < _TWO64:
            nbytes = _size(nbytes, "alloc: nbytes")  # the bound of every view (as_tensor)
        node = self._node
        if not node.alive:
            raise _dead(node, "buffer_alloc")
        if _fc_alloc is not None:
            rc, bits = _fc_alloc(self._a_alloc, self._bits, nbytes)
            h = _abi.t4a_buffer(bits)
        else:
            h = _abi.t4a_buffer()
            rc = self._f_alloc(self.handle, _c64(nbytes), byref(h))
        if rc:
            raise self.backend.error(rc, "buffer_alloc")
        b = Buffer.__new__(Buffer)
        b._setup(self, h, nbytes, False)
        return b

    def host_alloc(self, nbytes: int, write_combined: bool = False) -> "HostBuffer":
        """nbytes of pinned host memory -> HostBuffer."""
        return HostBuffer(self, nbytes, write_combined)

    def register(self, host, *, read_only=None) -> "HostBuffer":
        """Pins the memory of `host` (a C-contiguous buffer-protocol object:
        a numpy array, bytearray, ...) in place (host_register) and returns
        it as a HostBuffer that every pinned copy accepts, offsets from its
        start. A context manager: the end of the block (or close()) unpins
        it. read_only=True (the default for a read-only object): the device
        only reads it (copies into it are errors.EINVAL). While registered,
        and until the work enqueued on it completed, `host` stays exported
        (a bytearray cannot be resized) and alive."""
        self._drain_deferred()
        return HostBuffer._register(self, host, read_only)

    def _drain_deferred(self):
        """Lets go the exports of unregistered host memory whose last use
        completed (see HostBuffer._register)."""
        if not self._deferred:
            return
        fast = self.backend._fast
        keep = []
        with _lock:
            pending, self._deferred = self._deferred, []
        for w, export in pending:
            rc = fast["witness_query"](w) if w is not None else _abi.T4A_OK
            if rc == _abi.T4A_ENOTREADY:
                keep.append((w, export))
                continue
            if w is not None:
                fast["witness_release"](w)
            export.release()
        if keep:
            with _lock:
                self._deferred.extend(keep)

    def cache_trim(self, keep_bytes: int = 0) -> None:
        """Returns cached free blocks to the pool until at most keep_bytes
        remain cached, and trims the pool."""
        self._call("cache_trim", _size(keep_bytes, "cache_trim: keep_bytes"))

    def cache_stats(self) -> dict:
        """The runtime's block cache, {field: value}."""
        s = _sized(_abi.t4a_cache_stats)
        self._call("cache_stats", byref(s))
        return _as_dict(s)

    # -- completion ----------------------------------------------------------------

    def seal(self) -> Witness:
        """A Witness covering all work enqueued so far."""
        w = _abi.t4a_witness()
        self._call("seal", byref(w))
        return Witness(self.backend, w)

    def synchronize(self, timeout=None) -> None:
        """Seals and waits: returns once all enqueued work completed."""
        with self.seal() as w:
            w.wait(timeout)
        self._drain_deferred()

    def wait_for(self, witness: Witness) -> None:
        """Work enqueued after this call runs after `witness`'s work
        (GPU-side; the host does not block). The witness may come from any
        runtime of this backend."""
        if not witness._node.alive:
            raise _dead(witness._node, "runtime_wait_witness")
        self._call("runtime_wait_witness", witness.handle)

    # -- graphs ----------------------------------------------------------------------

    def capture(self) -> "Graph":
        """Captures the work this runtime enqueues inside a `with` block
        into a Graph, which replays it (Graph.launch) without re-issuing it::

            with rt.capture() as g:
                fn.launch(grid, block, n, x, y)    # recorded, not run
            g.launch()                             # runs it; again and again

        Inside the block only what the graph can hold may be enqueued
        (launches, the pinned and device copies, fills); what blocks the host
        or changes memory (alloc, close of a buffer, pageable copies, seal)
        is errors.EBUSY. The graph is made when the block ends; a failure
        inside it (or of the instantiation) discards the capture."""
        return Graph(self)

    # -- other frameworks' memory and streams (see t4a_gpu._interop) -------------------

    def wrap(self, address, nbytes, *, host=False, release=None) -> "Buffer":
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

    def from_dlpack(self, obj, *, allow_read_only=False) -> "Buffer":
        """t4a_gpu.from_dlpack(obj, self)."""
        return _interop.from_dlpack(obj, self, allow_read_only=allow_read_only)

    def order_stream_after(self, stream=None, witness=None) -> None:
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

    def wait_stream(self, stream) -> None:
        """Work this runtime enqueues after this call runs after everything a
        framework enqueued on `stream` so far (GPU-side)."""
        self._call("runtime_wait_stream", c_void_p(_interop.stream_handle(stream)))

    def wait_event(self, event) -> None:
        """Work this runtime enqueues after this call runs after a framework's
        CUevent (an int, or an object with .cuda_event / .ptr), as last
        recorded (GPU-side)."""
        for attr in ("cuda_event", "ptr"):
            event = getattr(event, attr, event)
        self._call("runtime_wait_event", c_void_p(event))

    # -- code ----------------------------------------------------------------------

    def compile(self, source, **kw) -> Artifact:
        """Backend.compile for this runtime's device."""
        kw.setdefault("device", self.device)
        return self.backend.compile(source, **kw)

    def load(self, artifact: Artifact) -> "Module":
        """Loads an Artifact into this runtime -> Module."""
        return Module(self, artifact)

    def launch(self, function, grid, block, *args, **kw) -> None:
        """Enqueues `function` (grid, block: an int or up to 3 ints); the
        same as function.launch(grid, block, *args, **kw), which documents
        the arguments and options."""
        if function._runtime is not self:
            raise ValueError("launch: the function belongs to another runtime")
        function.launch(grid, block, *args, **kw)

    def raw(self) -> RawRuntime:
        """The CUcontext, CUstream and CUdevice behind the runtime (the raw
        seam; see the header)."""
        r = _sized(_abi.t4a_raw_runtime)
        self._call("raw_runtime", byref(r))
        return RawRuntime(r.device_ordinal, r.context, r.stream, r.device)


def _copy_2d(dst_offset, dst_pitch, src_offset, src_pitch, width, rows, what):
    """A validated t4a_copy_2d (pitches default to the width)."""
    g = _sized(_abi.t4a_copy_2d)
    g.width, g.rows = _size(width, what + ": width"), _size(rows, what + ": rows")
    g.dst_offset = _size(dst_offset, what + ": offset")
    g.src_offset = _size(src_offset, what + ": src_offset")
    g.dst_pitch = _size(width if dst_pitch is None else dst_pitch, what + ": pitch")
    g.src_pitch = _size(width if src_pitch is None else src_pitch, what + ": src_pitch")
    return g


def _writable_view(obj):
    """memoryview(obj) when it is writable, C-contiguous and not empty (the
    short way of write and read_into), else None (host_range then checks
    and explains)."""
    if type(obj) is str:
        return None
    try:
        m = memoryview(obj)
    except TypeError:
        return None
    if m.readonly or not m.c_contiguous or not m.nbytes:
        m.release()
        return None
    return m


# fill(): dtype name -> (struct code, bytes)
_FILL = {"uint8": ("B", 1), "int8": ("b", 1), "bool": ("?", 1), "uint16": ("H", 2),
         "int16": ("h", 2), "float16": ("e", 2), "uint32": ("I", 4), "int32": ("i", 4),
         "float32": ("f", 4), "uint64": ("Q", 8), "int64": ("q", 8), "float64": ("d", 8)}


def _dtype_name(dtype):
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)  # a numpy dtype
    if not isinstance(name, str):
        name = getattr(dtype, "__name__", None)  # numpy.float32, ...
    return name if isinstance(name, str) else repr(dtype)


class Buffer(_Owned):
    """Device memory of one runtime (stream-ordered alloc and free), or
    memory it wraps (Runtime.wrap, from_dlpack). Other frameworks read it in
    place through __dlpack__ / __cuda_array_interface__ (as uint8 bytes) or
    as_tensor(dtype, shape, ...)."""


    def __init__(self, runtime, nbytes):
        nbytes = _size(nbytes, "alloc: nbytes")  # the bound of every view (as_tensor)
        handle = _abi.t4a_buffer()
        runtime._call("buffer_alloc", nbytes, byref(handle))
        self._setup(runtime, handle, nbytes, False)

    __slots__ = ("_runtime", "handle", "nbytes", "_host", "_addr", "_interface_read", "_node",
                 "__dict__", "__weakref__")  # __dict__: from_dlpack's dtype, shape, ...

    def _setup(self, runtime, handle, nbytes, host):
        self._runtime, self.handle, self.nbytes, self._host = runtime, handle, nbytes, host
        self._addr, self._interface_read = None, False
        # Its views (exports still held by a consumer, _Node.hold): DLPack tensors' marks,
        # objects whose __cuda_array_interface__ was read.
        self._node = _BufferNode(runtime, handle)

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
    def runtime(self) -> Runtime:
        """The Runtime the buffer belongs to."""
        return self._runtime

    def __len__(self):
        return self.nbytes

    def __repr__(self):
        return "<t4a_gpu.Buffer of %d bytes%s>" % (self.nbytes,
                                                  "" if self._node.alive else " (closed)")

    def _call(self, slot, *args):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self._runtime._call(slot, *args)

    def close(self) -> None:
        """Stream-ordered free: work already enqueued may still use it.
        BufferError while an export is held: a DLPack tensor a consumer has
        not released, a TensorView whose __cuda_array_interface__ was read,
        or this Buffer itself once its own interface was read."""
        node = self._node
        if self._interface_read and node.alive:
            raise BufferError(
                "cannot close the buffer: its own __cuda_array_interface__ was read, so a "
                "consumer (CuPy, Numba, PyTorch ...) may keep this Buffer for as long as it "
                "lives, and the interface has no deleter to say when it is done; drop every "
                "reference to it (it is freed once collected, the consumer's too), or export "
                "buf.as_tensor(), whose view the consumer keeps instead")
        node.close()

    free = close

    @property
    def address(self) -> int:
        """The device address (CUdeviceptr) as an int (asked once, then
        remembered: it is fixed for the buffer's life)."""
        node = self._node
        if not node.alive:
            raise _dead(node, "buffer_device_address")
        a = self._addr
        if a is None:
            out = c_uint64()
            rt = self._runtime
            rc = rt._f_address(rt.handle, self.handle, byref(out))
            if rc:
                raise rt.backend.error(rc, "buffer_device_address")
            a = self._addr = out.value
        return a

    def size(self) -> int:
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
        """(device type, device id) of the memory (the DLPack protocol)."""
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

    def write(self, data, offset: int = 0) -> None:
        """Copies `data` (any C-contiguous buffer-protocol object: bytes,
        bytearray, memoryview, array.array, a numpy array) to the buffer at
        `offset`, in place (no copy of `data`); returns once `data` may be
        reused (the device write completes in stream order)."""
        node = self._node
        if not node.alive:
            raise _dead(node, "copy_h2d")
        if type(offset) is not int or not 0 <= offset < _TWO64:
            offset = _size(offset, "Buffer.write: offset")
        rt = self._runtime
        if type(data) is bytes:
            n = len(data)
            rc = rt._f_h2d(rt.handle, self.handle, _c64(offset), data if n else None, _c64(n))
        else:
            m = _writable_view(data)
            if m is not None:  # the common case (numpy, bytearray): no holder object
                try:
                    arr = c_char.from_buffer(m)  # exports m until deleted
                    rc = rt._f_h2d(rt.handle, self.handle, _c64(offset), byref(arr),
                                   _c64(m.nbytes))
                    del arr
                finally:
                    m.release()
            else:
                src, n, holder = host_range(data, False, "Buffer.write")
                try:
                    rc = rt._f_h2d(rt.handle, self.handle, _c64(offset), src, _c64(n))
                finally:
                    if holder is not None:
                        holder.release()
        if rc:
            raise rt.backend.error(rc, "copy_h2d")

    def read_into(self, out, offset: int = 0):
        """Fills `out` (a writable, C-contiguous buffer-protocol object) from
        the buffer at `offset`; waits for the work ahead of it. Returns `out`."""
        node = self._node
        if not node.alive:
            raise _dead(node, "copy_d2h")
        if type(offset) is not int or not 0 <= offset < _TWO64:
            offset = _size(offset, "Buffer.read_into: offset")
        rt = self._runtime
        m = _writable_view(out)
        if m is not None:
            try:
                arr = c_char.from_buffer(m)
                rc = rt._f_d2h(rt.handle, byref(arr), self.handle, _c64(offset), _c64(m.nbytes))
                del arr
            finally:
                m.release()
        else:
            dst, n, holder = host_range(out, True, "Buffer.read_into")
            try:
                rc = rt._f_d2h(rt.handle, dst, self.handle, _c64(offset), _c64(n))
            finally:
                if holder is not None:
                    holder.release()
        if rc:
            raise rt.backend.error(rc, "copy_d2h")
        return out

    def read(self, nbytes=None, offset: int = 0) -> bytes:
        """nbytes (default: to the end) from `offset` as bytes."""
        if nbytes is None:
            nbytes = max(self.nbytes - offset, 0)
        out = bytearray(_size(nbytes, "Buffer.read: nbytes"))
        self.read_into(out, offset)
        return bytes(out)

    # -- fills ----------------------------------------------------------------------

    def memset(self, pattern: int, element_size: int = 1, offset: int = 0,
               count=None) -> None:
        """Fills `count` elements of element_size bytes (1, 2 or 4) from byte
        `offset` with the integer `pattern`, on the runtime's stream in call
        order (count default: to the end of the buffer, which must then be a
        whole number of elements). The backend checks the range (ERANGE) and
        the alignment of offset (EINVAL)."""
        if element_size not in (1, 2, 4):
            raise ValueError("memset: element_size is 1, 2 or 4, not %r" % (element_size,))
        offset = _size(offset, "memset: offset")
        pattern = _u32(pattern, "memset: pattern")
        if pattern >> (8 * element_size):
            raise ValueError("memset: pattern %#x does not fit %d bytes"
                             % (pattern, element_size))
        if count is None:
            rest = max(self.nbytes - offset, 0)
            if rest % element_size:
                raise ValueError("memset: the %d bytes from offset %d are not a whole number "
                                 "of %d-byte elements; pass count" % (rest, offset,
                                                                      element_size))
            count = rest // element_size
        count = _size(count, "memset: count")
        node = self._node
        if not node.alive:
            raise _dead(node, "memset")
        rt = self._runtime
        rc = rt.backend._fn("memset")(rt.handle, self.handle, _c64(offset), pattern,
                                      element_size, _c64(count))
        if rc:
            raise rt.backend.error(rc, "memset")

    def fill(self, value, dtype="uint8", offset: int = 0, count=None) -> None:
        """Sets `count` elements of `dtype` (a name or numpy dtype: uint8,
        int8, bool, uint16, int16, float16, uint32, int32, float32; and the
        8-byte uint64, int64, float64 for a value whose two 4-byte halves are
        equal, such as 0, -1 or 0.0) from byte `offset` to `value`, e.g.
        buf.fill(1.5, "float32"). count default: to the end. Enqueued
        (memset); bit-exact: the value's bytes as the dtype stores them."""
        name = _dtype_name(dtype)
        if name not in _FILL:
            raise ValueError("fill: dtype %s is not one of %s" % (name, ", ".join(_FILL)))
        code, size = _FILL[name]
        try:
            raw = struct.pack("<" + code, value)
        except (struct.error, OverflowError, TypeError) as e:
            raise (OverflowError if isinstance(e, OverflowError) or "range" in str(e) or
                   "<=" in str(e) else TypeError)(
                "fill: %r is not a %s value (%s)" % (value, name, e)) from None
        if count is not None:
            count = _size(count, "fill: count")
        if size == 8:
            if raw[:4] != raw[4:]:
                raise ValueError("fill: %r as %s is not two equal 4-byte halves, which is all "
                                 "a memset of 4-byte elements can write; launch a kernel"
                                 % (value, name))
            raw, size = raw[:4], 4
            count = None if count is None else count * 2
        self.memset(int.from_bytes(raw, "little"), size, offset, count)

    # -- device, cross-runtime and pinned copies ---------------------------------------

    def copy_from(self, src, *, offset=0, src_offset=0, nbytes=None, via_host=False) -> None:
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

    # -- 2-D copies -----------------------------------------------------------------

    def write_2d(self, src, *, pitch=None, offset: int = 0) -> None:
        """Copies the rows of a 2-D host array (numpy or any buffer with
        strides; rows contiguous, e.g. a[:, 2:5]) into `rows` rows of this
        buffer from byte `offset`, `pitch` bytes apart (default: packed).
        Pageable (copy_2d_h2d, through the staging): returns once `src` may
        be reused. Only the elements of `src` are read; the backend checks
        every device row (ERANGE) and the pitches (EINVAL)."""
        p, rows, width, src_pitch, holder = host_rows(src, False, "Buffer.write_2d")
        try:
            g = _copy_2d(offset, pitch, 0, src_pitch, width, rows, "write_2d")
            self._call("copy_2d_h2d", self.handle, p, byref(g))
        finally:
            if holder is not None:
                holder.release()

    def read_2d_into(self, out, *, pitch=None, offset: int = 0):
        """Fills the rows of a writable 2-D host array (rows contiguous, e.g.
        a[:, 2:5] of a numpy array) from rows of this buffer starting at byte
        `offset`, `pitch` bytes apart (default: packed); waits for the work
        ahead of it (copy_2d_d2h). Only the elements of `out` are written.
        Returns `out`."""
        p, rows, width, dst_pitch, holder = host_rows(out, True, "Buffer.read_2d_into")
        try:
            g = _copy_2d(0, dst_pitch, offset, pitch, width, rows, "read_2d_into")
            self._call("copy_2d_d2h", p, self.handle, byref(g))
        finally:
            if holder is not None:
                holder.release()
        return out

    def copy_2d_from(self, src, width: int, rows: int, *, pitch=None, src_pitch=None,
                     offset: int = 0, src_offset: int = 0) -> None:
        """Enqueues the rectangle of `rows` rows of `width` bytes of `src`
        (rows src_pitch apart from src_offset) into this buffer (rows pitch
        apart from offset); pitches default to the width. src: a Buffer of
        this runtime (copy_2d_d2d; overlapping spans are errors.EINVAL) or
        a HostBuffer (the asynchronous copy_2d_h2d_pinned: leave its memory
        alone until a witness covering the copy is ready)."""
        g = _copy_2d(offset, pitch, src_offset, src_pitch, width, rows, "copy_2d_from")
        if isinstance(src, HostBuffer):
            if src._runtime is not self._runtime:
                raise ValueError("copy_2d_from: the host buffer belongs to another runtime")
            src._check()
            self._call("copy_2d_h2d_pinned", self.handle, src.handle, byref(g))
            return
        if not isinstance(src, Buffer) or src._runtime is not self._runtime:
            raise ValueError("copy_2d_from: a Buffer of the same runtime or a HostBuffer "
                             "(host arrays: write_2d)")
        if not src._node.alive:
            raise _dead(src._node, "copy_2d_d2d")
        self._call("copy_2d_d2d", self.handle, src.handle, byref(g))


class HostBuffer(_Owned):
    """Pinned (page-locked) host memory of one runtime: allocated
    (Runtime.host_alloc) or the caller's, registered (Runtime.register).

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
        self._view_type, self.read_only = None, False
        rt_handle, backend = runtime.handle, runtime.backend
        self._node = _Node("host buffer", runtime._node,
                           lambda: backend.call("host_free", rt_handle, handle))

    @classmethod
    def _register(cls, runtime, host, read_only):
        self = cls.__new__(cls)
        ptr_arg, n, holder = host_range(host, False, "Runtime.register")
        try:
            if holder is None:  # bytes, or nothing: keep an export all the same
                if n == 0:
                    raise ValueError("Runtime.register: an empty object has no memory to pin")
                holder = memoryview(host)
                ptr_arg = c_void_p(ctypes.cast(ptr_arg, c_void_p).value)
            if read_only is None:
                read_only = memoryview(host).readonly
            elif not read_only and memoryview(host).readonly:
                raise TypeError("Runtime.register: a read-only %s can only be registered "
                                "read_only=True" % type(host).__name__)
            handle = _abi.t4a_host_buffer()
            runtime._call("host_register", ptr_arg, _c64(n),
                          _abi.T4A_HOST_REGISTER_READ_ONLY if read_only else 0, byref(handle))
        except BaseException:
            if holder is not None:
                holder.release()
            raise
        self._runtime, self.handle, self.nbytes = runtime, handle, n
        self.address, self._view_type, self.read_only = ptr_arg.value, None, bool(read_only)
        rt_handle, backend = runtime.handle, runtime.backend
        seal, unregister = backend._fast["seal"], backend._fast["host_unregister"]

        def release():
            rc = unregister(rt_handle, handle)
            if rc:
                holder.release()  # nothing pinned any more (a destroyed runtime)
                raise backend.error(rc, "host_unregister")
            # The memory may still be read or written by enqueued copies: the export
            # (which keeps `host` alive and unresized) goes only once they completed.
            w = _abi.t4a_witness()
            w = w if seal(rt_handle, byref(w)) == _abi.T4A_OK else None  # None: at destroy
            with _lock:
                runtime._deferred.append((w, holder))

        self._node = _Node("registered host memory", runtime._node, release)
        return self

    @property
    def runtime(self) -> Runtime:
        """The Runtime the host buffer belongs to."""
        return self._runtime

    def __len__(self):
        return self.nbytes

    def _check(self):
        if not self._node.alive:
            raise _dead(self._node, "host buffer")

    def view(self) -> memoryview:
        """A writable memoryview (format 'B') of the pinned memory."""
        self._check()
        if self._view_type is None:  # an array type whose instances take attributes
            self._view_type = type("pinned_bytes", (ctypes.c_char * self.nbytes,), {})
        arr = self._view_type.from_address(self.address)
        arr.owner = self  # the view keeps the memory's owner alive
        self._node.hold(arr, "view")
        m = memoryview(arr).cast("B")
        return m.toreadonly() if self.read_only else m

    def close(self) -> None:
        """The memory is reused (or, registered, unpinned and let go) only
        after the enqueued work using it completed."""
        self._node.close()

    free = close
    unregister = close

    def copy_from(self, src, *, offset=0, src_offset=0, nbytes=None) -> None:
        """Enqueues the asynchronous copy_d2h_pinned of a Buffer of this
        runtime into this host buffer at `offset`: read the memory only once
        a witness covering it is ready."""
        self._check()
        if not isinstance(src, Buffer) or src._runtime is not self._runtime:
            raise ValueError("HostBuffer.copy_from: a Buffer of the same runtime")
        if nbytes is None:
            nbytes = max(min(src.nbytes - src_offset, self.nbytes - offset), 0)
        src._call("copy_d2h_pinned", self.handle, offset, src.handle, src_offset, nbytes)

    def copy_2d_from(self, src, width: int, rows: int, *, pitch=None, src_pitch=None,
                     offset: int = 0, src_offset: int = 0) -> None:
        """Enqueues the asynchronous copy_2d_d2h_pinned of a rectangle of a
        Buffer of this runtime (see Buffer.copy_2d_from) into this host
        buffer: read the memory only once a witness covering it is ready."""
        self._check()
        if not isinstance(src, Buffer) or src._runtime is not self._runtime:
            raise ValueError("HostBuffer.copy_2d_from: a Buffer of the same runtime")
        g = _copy_2d(offset, pitch, src_offset, src_pitch, width, rows, "copy_2d_from")
        src._call("copy_2d_d2h_pinned", self.handle, src.handle, byref(g))


class Module(_Owned):
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
                           owns_children=True, owner=True)

    @property
    def runtime(self) -> Runtime:
        """The Runtime the module is loaded into."""
        return self._runtime

    def function(self, name: str, signature=None) -> "Function":
        """The kernel `name` -> Function (errors.ENOTFOUND when absent).
        signature ('u64 f32 ptr ptr', or a sequence of types: see
        t4a_gpu.parse_signature) lets launch take plain ints and floats and
        checks every argument against it."""
        if not self._node.alive:
            raise _dead(self._node, "function_get")
        handle = _abi.t4a_function()
        self._runtime._call("function_get", self.handle, name.encode(), byref(handle))
        return Function(self, name, handle, signature)

    def close(self) -> None:
        """Unloaded after the runtime's enqueued work completed; its
        Functions become invalid."""
        self._node.close()

    unload = close


_PLAN_SIZED = object()  # an untyped key whose plan depends on the values' sizes


class Function(_Owned):
    """A kernel of a Module; invalid once the module unloads.

    launch(grid, block, *args) enqueues it. The launch configuration of each
    geometry and the argument layout of the signature are prepared once and
    reused (see t4a_gpu._launch), so a launch costs one pack of the
    arguments and one call.
    """


    def __init__(self, module, name, handle, signature=None):
        self.module, self.name, self.handle = module, name, handle
        self._bits = handle.bits  # for the compiled route
        self._runtime = module._runtime
        self.signature = parse_signature(signature) if signature is not None else None
        self._plan = Plan(self.signature, True, Buffer) if self.signature is not None \
            else None
        self._plans, self._cfg, self._cfg_ex = {}, ConfigCache(), ConfigCache()
        self._node = _Node("function", module._node, None)

    def __repr__(self):
        return "<t4a_gpu.Function %s%s>" % (self.name, "" if self._node.alive else " (closed)")

    def _call(self, slot, *args):
        if not self._node.alive:
            raise _dead(self._node, slot)
        return self._runtime._call(slot, self.handle, *args)

    def close(self) -> None:
        """Forgets the function (it is released with its module)."""
        self._node.close()

    def attributes(self) -> dict:
        """The driver's attributes of the kernel: max_threads_per_block,
        num_registers, static_shared_bytes, max_dynamic_shared_bytes,
        local_bytes, ptx_version, binary_version."""
        a = _sized(_abi.t4a_function_attributes)
        self._call("function_attributes", byref(a))
        return _as_dict(a)

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        """Opts in to more dynamic shared memory than the default 48 KiB,
        up to the device's opt-in limit."""
        self._call("function_set_max_dynamic_shared", _u32(nbytes, "nbytes"))

    def raw(self) -> int:
        """The CUfunction behind the function (an int address)."""
        p = c_void_p()
        self._call("raw_function", byref(p))
        return p.value

    # -- occupancy -------------------------------------------------------------------

    def max_active_blocks(self, block: int, shared_bytes: int = 0) -> int:
        """How many blocks of `block` threads (with shared_bytes of dynamic
        shared memory) one multiprocessor holds at once (0: none fits)."""
        n = c_uint32()
        self._call("occupancy_max_active_blocks", _u32(block, "block"),
                   _u32(shared_bytes, "shared_bytes"), byref(n))
        return n.value

    def suggest_block_size(self, shared_bytes: int = 0, block_limit: int = 0) -> tuple:
        """(block threads, min grid): the block size that maximises
        occupancy (at most block_limit threads; 0: the kernel's limit) and
        the smallest grid that fills the device at that size."""
        b, g = c_uint32(), c_uint32()
        self._call("occupancy_suggest_block_size", _u32(shared_bytes, "shared_bytes"),
                   _u32(block_limit, "block_limit"), byref(b), byref(g))
        return b.value, g.value

    def max_active_clusters(self, grid, block, cluster, shared_bytes: int = 0,
                            non_portable: bool = False) -> int:
        """How many clusters of shape `cluster` (of `block`-thread blocks,
        shared_bytes each) can be resident on the device at once."""
        flags = _abi.T4A_LAUNCH_CLUSTER_NON_PORTABLE if non_portable else 0
        cfg, ref = make_config_ex(grid, block, shared_bytes, cluster, flags, None)
        n = c_uint32()
        self._call("occupancy_max_active_clusters", ref, byref(n))
        return n.value

    # -- launch ----------------------------------------------------------------------

    def _plan_for(self, args):
        plan = self._plan
        if plan is not None:
            return plan
        plans = self._plans
        key = tuple(map(type, args))
        plan = plans.get(key)
        if plan is None or plan is _PLAN_SIZED:
            full = _launch.untyped_key(args)
            plan = plans.get(full)
            if plan is None:
                plan = _launch.untyped_plan(args, Buffer)
                if len(plans) >= 64:
                    plans.clear()
                plans[full] = plan
                if full != key:
                    plans[key] = _PLAN_SIZED
        return plan

    def _pack(self, plan, args, rt):
        """A block of the plan's pool holding `args` (give it back after)."""
        try:
            st = plan.pool.pop()
        except IndexError:
            st = plan.block()
        try:
            plan.fill(args, rt, st[0])
        except (struct.error, OverflowError, TypeError, ValueError):
            plan.pool.append(st)
            _launch.values(plan, args, rt, Buffer)  # raises the precise error
            raise
        return st

    def launch(self, grid, block, *args, shared_bytes: int = 0, cluster=None,
               cooperative: bool = False, priority=None,
               non_portable_cluster: bool = False) -> None:
        """Enqueues the kernel on its module's runtime.

        grid, block: an int or up to 3 ints. args: the kernel's arguments in
        order: a Buffer (its device address), a typed value (t4a_gpu.u64(n),
        f32(x), ...), a ctypes scalar, a struct passed by value (a
        ctypes.Structure, a numpy structured scalar, or bytes of the
        parameter's size), or plain ints and floats when the function has a
        signature (range-checked against it). shared_bytes: dynamic shared
        memory per block.

        cluster (blocks per cluster, up to 3 ints dividing the grid;
        non_portable_cluster=True for more than 8 blocks where the device
        allows), cooperative=True (every block co-resident, grid-wide sync
        allowed) and priority (the driver's convention, see Runtime.info)
        launch through launch_ex; errors.EUNSUPPORTED where the device or
        driver cannot.
        """
        node = self._node
        if not node.alive:
            raise _dead(node, "launch")
        rt = self._runtime
        if cluster is None and not cooperative and priority is None:
            slot, fn = "launch", rt._f_launch
            try:
                got = self._cfg.get((grid, block, shared_bytes))
            except TypeError:  # a list among the dimensions: not cached
                got = make_config(grid, block, shared_bytes)
            if got is None:
                got = self._cfg.get_config((grid, block, shared_bytes), make_config, grid,
                                           block, shared_bytes)
        else:
            slot, fn = "launch_ex", rt.backend._fn("launch_ex")
            flags = (_abi.T4A_LAUNCH_COOPERATIVE if cooperative else 0) | \
                (_abi.T4A_LAUNCH_CLUSTER_NON_PORTABLE if non_portable_cluster else 0) | \
                (_abi.T4A_LAUNCH_PRIORITY if priority is not None else 0)
            if isinstance(cluster, list):
                cluster = tuple(cluster)
            got = self._cfg_ex.get_config((grid, block, shared_bytes, cluster, flags, priority),
                                          make_config_ex, grid, block, shared_bytes, cluster,
                                          flags, priority)
        plan = self._plan
        if plan is None:
            plan = self._plan_for(args)
        spec = plan.fast_spec
        if spec is not None and _fc_launch is not None and slot == "launch":
            # the compiled route: packs on its own stack and calls; None when
            # an argument needs the Python route (which raises the precise error)
            rc = _fc_launch(rt._a_launch, rt._bits, self._bits, got[2], spec, args, Buffer, rt)
            if rc is not None:
                if rc:
                    raise rt.backend.error(rc, slot)
                cap = rt._capture
                if cap is not None:
                    cap._kernels.append(self)
                return
        # _pack, inlined: a method call is a tenth of a launch's Python cost
        pool = plan.pool
        try:
            st = pool.pop()
        except IndexError:
            st = plan.block()
        try:
            plan.fill(args, rt, st[0])
        except (struct.error, OverflowError, TypeError, ValueError):
            pool.append(st)
            _launch.values(plan, args, rt, Buffer)  # raises the precise error
            raise
        rc = fn(rt.handle, self.handle, got[1], st[1])
        pool.append(st)
        if rc:
            raise rt.backend.error(rc, slot)
        cap = rt._capture
        if cap is not None:
            cap._kernels.append(self)

    __call__ = launch


class Graph(_Owned):
    """Work of one runtime captured once (Runtime.capture) and replayed by
    launch(), in call order with the runtime's other work; replays cost one
    call however much work the graph holds."""


    def __init__(self, runtime):
        self._runtime, self.handle, self._node, self._kernels = runtime, None, None, []

    def __enter__(self):
        rt = self._runtime
        if self._node is not None or self._kernels:
            raise ValueError("capture: this Graph was captured already; use rt.capture() again")
        rt._call("graph_begin")
        rt._capture = self
        return self

    def __exit__(self, exc_type, exc, tb):
        rt = self._runtime
        rt._capture = None
        h = _abi.t4a_graph()
        try:
            rt._call("graph_end", byref(h))
        except T4AError:
            self._node = _Node("graph", None, None)  # nothing came back: closed, no handle
            self._node.alive = False
            if exc_type is None:
                raise
            return False
        backend, rt_handle = rt.backend, rt.handle
        self.handle = h
        self._node = _Node("graph", rt._node,
                           lambda: backend.call("graph_release", rt_handle, h))
        if exc_type is not None:
            self.close()
        return False

    def _live(self, what):
        node = self._node
        if node is None:
            raise ValueError("%s: the graph is not captured yet (leave the `with "
                             "rt.capture()` block first)" % what)
        if not node.alive:
            raise _dead(node, what)

    @property
    def closed(self) -> bool:
        """Whether the graph was released (or its runtime was)."""
        return self._node is not None and not self._node.alive

    @property
    def runtime(self) -> Runtime:
        """The Runtime whose work the graph holds."""
        return self._runtime

    def launch(self) -> None:
        """Enqueues one replay on the runtime's stream (seal covers it).
        errors.EHANDLE names a buffer or function released since the
        capture."""
        self._live("graph_launch")
        rt = self._runtime
        rc = rt.backend._fn("graph_launch")(rt.handle, self.handle)
        if rc:
            raise rt.backend.error(rc, "graph_launch")

    __call__ = launch

    def set_args(self, kernel: int, *args, function=None) -> None:
        """Replaces the arguments of captured kernel `kernel` (0-based, in
        capture order) for the replays enqueued after this call, checked
        as Function.launch checks them: against the signature of `function`
        (default: the Function captured at that index)."""
        self._live("graph_set_kernel_args")
        kernel = _size(kernel, "set_args: kernel")
        if function is None:
            if kernel >= len(self._kernels):
                raise IndexError("set_args: kernel %d: %d kernels were launched through "
                                 "t4a_gpu during the capture; pass function= for others"
                                 % (kernel, len(self._kernels)))
            function = self._kernels[kernel]
        rt = self._runtime
        if function._runtime is not rt:
            raise ValueError("set_args: the function belongs to another runtime")
        plan = function._plan_for(args)
        st = function._pack(plan, args, rt)
        try:
            rc = rt.backend._fn("graph_set_kernel_args")(rt.handle, self.handle, _c64(kernel),
                                                         st[1])
        finally:
            plan.pool.append(st)
        if rc:
            raise rt.backend.error(rc, "graph_set_kernel_args")

    def info(self) -> GraphInfo:
        """What the graph holds and how often it was replayed (GraphInfo)."""
        self._live("graph_info")
        i = _sized(_abi.t4a_graph_info)
        self._runtime._call("graph_info", self.handle, byref(i))
        return GraphInfo(i.nodes, i.kernels, i.copies, i.replays)

    def close(self) -> None:
        """Releases the graph (destroyed after its last replay completed)."""
        if self._node is not None:
            self._node.close()

    release = close


TensorView = _interop.TensorView


def from_dlpack(obj, runtime, *, allow_read_only=False) -> Buffer:
    """Wraps a DLPack producer's tensor (torch, cupy, jax arrays, a capsule)
    as an external Buffer of `runtime`, without a copy (see
    t4a_gpu._interop.from_dlpack)."""
    return _interop.from_dlpack(obj, runtime, allow_read_only=allow_read_only)
