"""t4a_gpu.alloclog -- a runtime's allocation log (ABI 1.2) as JSON and as a
timeline plot.

A runtime created with ``alloc_log=True`` (or a number of events to keep)
records its allocations, frees, reuses from its cache, trims, allocations
that did not fit, and IPC exports and imports; Runtime.alloc_log() reads
them as AllocEvent tuples, oldest first::

    with backend.runtime(0, alloc_log=True) as rt:
        ...                                    # the work to look at
        events = rt.alloc_log()
    t4a_gpu.alloclog.write_json(events, "alloc.json")
    t4a_gpu.alloclog.plot(events, "alloc.png")  # matplotlib; .svg works without it

The JSON document (``to_dict``) is ``{"format": "t4a-alloc-log", "version":
1, "events": [...], "dropped": n, "peak_held_bytes": n}``: each event with
the fields of t4a_alloc_event and its kind by name; ``dropped`` counts the
events the runtime's ring no longer held (gaps in ``seq``). ``load_json``
reads it back.

The plot shows what the runtime held (its live buffers and cache, the
memory budget's count) over time, with the events marked by kind (an
allocation that did not fit in red). With matplotlib installed it writes any
format matplotlib writes (by the file's extension); without it, an SVG file
of its own (the path must end in .svg, else ImportError says so). No other
dependency.
"""
import json
from collections import namedtuple

from . import _abi

__all__ = ["AllocEvent", "KINDS", "to_dict", "to_json", "write_json", "load_json", "plot",
           "have_matplotlib"]

AllocEvent = namedtuple("AllocEvent",
                        "seq time_ns stream_seq buffer address bytes held_bytes kind detail")
AllocEvent.__doc__ = (
    "One event of a runtime's allocation log (t4a_alloc_event): its number, the monotonic "
    "time in ns, its place in the runtime's stream order, the buffer handle's bits, the "
    "block's address, the bytes (the buffer's size; for a trim the bytes given back; for an "
    "out-of-memory event what the allocation would hold), what the runtime held after it, "
    "its kind (T4A_ALLOC_EVENT_*) and detail (free: 1 when cached; out of memory: "
    "T4A_OUT_OF_MEMORY_*).")

KINDS = {
    _abi.T4A_ALLOC_EVENT_ALLOC: "alloc",
    _abi.T4A_ALLOC_EVENT_REUSE: "reuse",
    _abi.T4A_ALLOC_EVENT_FREE: "free",
    _abi.T4A_ALLOC_EVENT_TRIM: "trim",
    _abi.T4A_ALLOC_EVENT_OUT_OF_MEMORY: "out_of_memory",
    _abi.T4A_ALLOC_EVENT_IPC_EXPORT: "ipc_export",
    _abi.T4A_ALLOC_EVENT_IPC_IMPORT: "ipc_import",
}
_BY_NAME = {v: k for k, v in KINDS.items()}
_REASONS = {_abi.T4A_OUT_OF_MEMORY_LIMIT: "limit", _abi.T4A_OUT_OF_MEMORY_DEVICE: "device"}


def _kind_name(kind):
    return KINDS.get(kind, "kind_%d" % kind)


def to_dict(events):
    """The JSON-ready document of a list of AllocEvent (see the module)."""
    events = list(events)
    dropped = sum(b.seq - a.seq - 1 for a, b in zip(events, events[1:]) if b.seq > a.seq + 1)
    out = []
    for e in events:
        d = e._asdict()
        d["kind"] = _kind_name(e.kind)
        if e.kind == _abi.T4A_ALLOC_EVENT_OUT_OF_MEMORY:
            d["reason"] = _REASONS.get(e.detail, "reason_%d" % e.detail)
        elif e.kind == _abi.T4A_ALLOC_EVENT_FREE:
            d["cached"] = bool(e.detail)
        out.append(d)
    return {"format": "t4a-alloc-log", "version": 1, "events": out, "dropped": dropped,
            "peak_held_bytes": max((e.held_bytes for e in events), default=0)}


def to_json(events, indent=None) -> str:
    """to_dict(events) as a JSON string."""
    return json.dumps(to_dict(events), indent=indent, sort_keys=True)


def write_json(events, path) -> None:
    """Writes to_json(events) to the file at path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(to_json(events, indent=1))
        f.write("\n")


def load_json(source):
    """The AllocEvent list of a document written by write_json or to_json
    (a path, or the JSON text itself)."""
    text = source
    if not source.lstrip().startswith("{"):
        with open(source, encoding="utf-8") as f:
            text = f.read()
    doc = json.loads(text)
    if doc.get("format") != "t4a-alloc-log" or doc.get("version") != 1:
        raise ValueError("not a t4a allocation log (format t4a-alloc-log, version 1)")
    events = []
    for d in doc["events"]:
        kind = _BY_NAME.get(d["kind"])
        if kind is None:
            kind = int(d["kind"][len("kind_"):])
        events.append(AllocEvent(d["seq"], d["time_ns"], d["stream_seq"], d["buffer"],
                                 d["address"], d["bytes"], d["held_bytes"], kind, d["detail"]))
    return events


def have_matplotlib() -> bool:
    """Whether plot() can use matplotlib here."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


_COLOURS = {"alloc": "#1f77b4", "reuse": "#2ca02c", "free": "#7f7f7f", "trim": "#9467bd",
            "out_of_memory": "#d62728", "ipc_export": "#ff7f0e", "ipc_import": "#8c564b"}


def _series(events):
    """(ms since the first event, MiB held) per event, and the t0."""
    t0 = events[0].time_ns if events else 0
    return [((e.time_ns - t0) / 1e6, e.held_bytes / (1 << 20)) for e in events], t0


def plot(events, path, title="t4a allocation log") -> str:
    """Writes the timeline of events to path; returns "matplotlib" or "svg"
    (which one drew it)."""
    events = list(events)
    if have_matplotlib():
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        pts, _ = _series(events)
        fig, ax = plt.subplots(figsize=(10, 4))
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", color="black",
                linewidth=1, label="held")
        for name in KINDS.values():
            sel = [p for p, e in zip(pts, events) if _kind_name(e.kind) == name]
            if sel:
                ax.scatter([p[0] for p in sel], [p[1] for p in sel], s=12, label=name,
                           color=_COLOURS.get(name), marker="x" if name == "out_of_memory" else "o")
        ax.set_xlabel("time since the first event (ms)")
        ax.set_ylabel("held (MiB)")
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize="small")
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return "matplotlib"
    if not str(path).endswith(".svg"):
        raise ImportError("matplotlib is not installed: plot() can write only an .svg file "
                          "without it (pass a path ending in .svg, or install matplotlib)")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_svg(events, title))
    return "svg"


def _svg(events, title):
    """A dependency-free SVG: the held bytes as a step line, events as dots."""
    from xml.sax.saxutils import escape
    w, h, pad = 800, 300, 40
    pts, _ = _series(events)
    tmax = max((p[0] for p in pts), default=0) or 1.0
    ymax = max((p[1] for p in pts), default=0) or 1.0

    def xy(p):
        return (pad + p[0] / tmax * (w - 2 * pad), h - pad - p[1] / ymax * (h - 2 * pad))

    line, prev = [], None
    for p in pts:
        x, y = xy(p)
        if prev is not None:
            line.append("%.1f,%.1f" % (x, prev))
        line.append("%.1f,%.1f" % (x, y))
        prev = y
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (w, h),
           '<title>%s</title>' % escape(title),
           '<text x="%d" y="20">%s: held %.3f MiB at most, %d events over %.3f ms</text>'
           % (pad, escape(title), ymax if pts else 0, len(events), tmax if pts else 0),
           '<polyline fill="none" stroke="black" points="%s"/>' % " ".join(line)]
    for p, e in zip(pts, events):
        x, y = xy(p)
        name = _kind_name(e.kind)
        out.append('<circle class="%s" cx="%.1f" cy="%.1f" r="3" fill="%s"><title>#%d %s %d '
                   'bytes</title></circle>' % (name, x, y, _COLOURS.get(name, "black"), e.seq,
                                               name, e.bytes))
    out.append("</svg>")
    return "\n".join(out) + "\n"
