"""t4a_gpu.errors -- one exception class per status of T4A_STATUS_MAP.

Every failing call raises a subclass of T4AError named after its status
without the T4A_ prefix (T4A_EINVAL -> t4a_gpu.errors.EINVAL), carrying the
status, the call that failed, the backend's detail ("<what failed>; <what to
do>") and the native (driver/compiler) code and name when there is one::

    try:
        buf.read(16, offset=1 << 40)
    except t4a_gpu.errors.ERANGE as e:
        print(e.status, e.message)

The statuses that mean "this backend cannot be used on this machine" (no
driver, a stub driver, no device, a driver too old, a mismatched driver:
ENODRIVER, ESTUBDRIVER, ENODEVICE, EDRIVEROLD, EDRIVERMISMATCH) share one
base class, Unavailable, so a consumer falls back with one except clause::

    try:
        backend = t4a_gpu.Backend()
    except t4a_gpu.errors.Unavailable as e:
        print("no GPU here:", e.message)   # use the CPU path

The classes are made from the generated status list (t4a_gpu.abi.STATUSES),
so a status appended to the header gets its class with no edit here. A
status this module does not know (a newer plugin's) raises T4AError itself.
"""
from . import _abi

__all__ = ["T4AError", "Unavailable", "error_class", "UNAVAILABLE_STATUSES"]


class T4AError(Exception):
    """A T4A status other than T4A_OK.

    Attributes: status (int, T4A_E*), name ("T4A_EINVAL"), call (the slot or
    loader function), message (the backend's detail; may be empty),
    native_code and native_name (the driver's or compiler's, 0 and "" when
    none), log (the compile log for T4A_ECOMPILE, else None).
    """

    status = None  # the subclasses' status; an instance's own in self.status

    def __init__(self, status, call, message="", native_code=0, native_name="", log=None):
        self.status = status
        self.name = _NAMES.get(status, "T4A_UNKNOWN")
        self.call = call
        self.message = message
        self.native_code = native_code
        self.native_name = native_name
        self.log = log
        text = "%s: %s (%d): %s" % (call, self.name, status, message or _MESSAGES.get(
            status, "unknown status"))
        if native_name and native_name not in (message or ""):
            text += " [%s = %d]" % (native_name, native_code)
        super().__init__(text)

    def __reduce__(self):  # picklable (e.g. across multiprocessing)
        return (type(self), (self.status, self.call, self.message, self.native_code,
                             self.native_name, self.log))


class Unavailable(T4AError):
    """The backend cannot be used on this machine (no driver, a stub driver,
    no device, a driver too old or mismatched): the base of ENODRIVER,
    ESTUBDRIVER, ENODEVICE, EDRIVEROLD and EDRIVERMISMATCH. Not a bug in
    the caller: fall back, or install what the message names."""


# The statuses of Unavailable (the README's exit code 4 of t4a-gpu).
UNAVAILABLE_STATUSES = frozenset(getattr(_abi, "T4A_" + n) for n in (
    "ENODRIVER", "ESTUBDRIVER", "ENODEVICE", "EDRIVEROLD", "EDRIVERMISMATCH"))

_NAMES = {value: name for name, value, _ in _abi.STATUSES}
_MESSAGES = {value: message for _, value, message in _abi.STATUSES}
_BY_STATUS = {}

for _name, _value, _message in _abi.STATUSES:
    if _value == _abi.T4A_OK:
        continue
    _base = Unavailable if _value in UNAVAILABLE_STATUSES else T4AError
    _cls = type(_name[len("T4A_"):], (_base,), {
        "status": _value,
        "__doc__": "%s (%d): %s." % (_name, _value, _message),
        "__module__": __name__,
    })
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
    _BY_STATUS[_value] = _cls


def error_class(status: int) -> type:
    """The exception class of `status` (T4AError for one not in the header)."""
    return _BY_STATUS.get(status, T4AError)
