#!/usr/bin/env python3
"""bench/plot.py -- the figures of docs/performance.md, drawn as SVG from one
t4a_bench JSON file (bench/results/*.json):

  pageable-bandwidth.svg  pageable copies, t4a against the driver's own
                          pageable copies, both directions, 1 B .. 1 GiB:
                          bandwidth (log-log), then t4a's ratio to the driver
  pinned-bandwidth.svg    pinned copies, t4a against the driver, 4 KiB .. 1 GiB,
                          the same two panels
  launch-cost.svg         host time per launch: a launch, seal+wait after one
                          launch, and a chain of 10,000 launches + seal
  scaling.svg             the scaling report's threads rows (#33): aggregate
                          rate against 1-16 threads, each thread its own
                          runtime (own raw stream) or all on one (one raw
                          stream), empty launches and 4 KiB pageable H2D;
                          from SCALING.json (the report's JSON keys)

  python3 bench/plot.py [--check] RESULTS.json OUTDIR [SCALING.json]   (make figures)

With --check it also verifies what a reader would see wrong in each figure
and exits 1 naming it: an axis that is not logarithmic where the data span
decades, an x axis starting or ending far from the data, a legend that
covers a data point, a line, a bar or a label (tests/cpu/test_figures.sh).

Needs python3-matplotlib (Debian). The SVGs are committed; rebuilding them
needs no GPU, only the JSON. They carry no date, so the same data and
matplotlib version make the same files.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("agg")  # draws for --check; savefig writes the SVG
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullLocator  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "t4a"  # stable ids: reproducible files
matplotlib.rcParams["svg.fonttype"] = "none"

SIZE_TICKS = [1 << k for k in (0, 6, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)]
PROBLEMS = []  # what --check found


def human(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%g %s" % (n / size, unit)
    return "%d B" % n


def sweep(cases, prefix):
    """(sizes, t4a medians, raw medians) of cases named prefix*."""
    rows = sorted((c["size"], c) for c in cases if c["name"].startswith(prefix))
    return ([s for s, _ in rows], [c["t4a"]["median"] for _, c in rows],
            [c["raw"]["median"] for _, c in rows])


def size_axis(ax, sizes):
    """A log2 x axis of copy sizes spanning the data, ticks only inside it
    (a tick outside would stretch the axis to it)."""
    lo, hi = min(sizes), max(sizes)
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo / 1.6, hi * 1.6)
    ticks = [t for t in SIZE_TICKS if lo <= t <= hi]
    ax.set_xticks(ticks)
    ax.set_xticklabels([human(t) for t in ticks], rotation=45, ha="right", fontsize=8)
    ax.minorticks_off()


def bandwidth(cases, kind, title, out, meta):
    fig, (bw, ratio) = plt.subplots(2, 1, figsize=(8, 7.2), sharex=True,
                                    gridspec_kw={"height_ratios": [3, 2]})
    all_sizes, ratios = [], []
    for direction, color in (("h2d", "tab:blue"), ("d2h", "tab:orange")):
        sizes, ours, raw = sweep(cases, "%s %s sweep" % (kind, direction))
        if not sizes:
            continue
        label = direction.upper().replace("2", " to ")
        bw.plot(sizes, ours, "o-", color=color, label="t4a %s" % label)
        bw.plot(sizes, raw, "s--", color=color, alpha=0.6, label="driver %s" % label)
        r = [o / d for o, d in zip(ours, raw)]
        ratio.plot(sizes, r, "o-", color=color, label=label)
        all_sizes += sizes
        ratios += r
    bw.set_yscale("log")
    ys = [y for line in bw.lines for y in line.get_ydata()]
    if max(ys) / min(ys) < 100:  # few decades: label 1, 2, 5 of each
        bw.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
        bw.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        bw.yaxis.set_minor_locator(NullLocator())
    bw.set_ylabel("GB/s (median, log scale)")
    bw.set_title("%s\n%s" % (title, meta), fontsize=10)
    bw.grid(True, which="major", alpha=0.3)
    bw.legend(fontsize=8, loc="best")
    ratio.axhline(1.0, color="gray", linewidth=1, linestyle=":")
    ratio.set_yscale("log", base=2)
    lo = min(0.8, min(ratios) / 1.15)
    hi = max(1.25, max(ratios) * 1.6)  # headroom for the legend
    ratio.set_ylim(lo, hi)
    steps = (0.8, 0.9, 1, 1.1, 1.25, 1.5) if hi / lo < 4 else (0.5, 1, 1.5, 2, 3, 4, 6, 8, 12, 16)
    ticks = [t for t in steps if lo <= t <= hi]
    ratio.set_yticks(ticks)
    ratio.set_yticklabels(["%gx" % t for t in ticks], fontsize=8)
    ratio.minorticks_off()
    ratio.set_ylabel("t4a / driver\n(median GB/s)")
    ratio.grid(True, which="major", alpha=0.3)
    ratio.legend(fontsize=8, loc="best", title="t4a's ratio", title_fontsize=8)
    size_axis(ratio, all_sizes)  # shared with the bandwidth panel
    ratio.set_xlabel("bytes per copy")
    fig.tight_layout()
    check(fig, out, [(bw, all_sizes), (ratio, all_sizes)])
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)


def launches(cases, out, meta):
    want = [("launch (empty kernel), per launch", "launch", 1.0),
            ("seal+wait after one empty launch", "seal+wait after a launch", 1.0),
            ("warm chain 10000 launches + seal", "chain of 10,000, per launch", 1e-4)]
    names, ours, raw = [], [], []
    for name, label, scale in want:
        for c in cases:
            if c["name"] == name:
                names.append(label)
                ours.append(c["t4a"]["median"] * scale)
                raw.append(c["raw"]["median"] * scale)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], ours, 0.4, label="t4a")
    ax.bar([i + 0.2 for i in x], raw, 0.4, label="driver (cuLaunchKernel, synchronize)")
    for i in x:
        ax.annotate("%.2fx" % (ours[i] / raw[i]), (i, max(ours[i], raw[i])), ha="center",
                    va="bottom", fontsize=8, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("host microseconds (median)")
    ax.set_ylim(0, max(ours + raw) * 1.35)  # the legend sits above the tallest bar
    ax.set_title("Launch cost (t4a / driver above each pair)\n%s" % meta, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    check(fig, out, [(ax, None)])
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)


def scaling(rows, out, meta):
    """Rates against threads, t4a beside the driver, for (a) and (b)."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2), sharey=False)
    series = [("own runtime / own stream", "each thread its own runtime (raw: own stream)", "-"),
              ("one shared runtime / one stream", "one runtime for all (raw: one stream)", "--")]
    panels = [("empty launches", "Empty launches"), ("4 KiB pageable H2D", "4 KiB pageable H2D")]
    threads = sorted({r["threads"] for r in rows})
    for ax, (op, title) in zip(axes, panels):
        for prefix, label, style in series:
            pts = sorted((r["threads"], r["ours"], r["raw"]) for r in rows
                         if r["what"] == "%s, %s" % (prefix, op))
            if not pts:
                continue
            ts = [p[0] for p in pts]
            ax.plot(ts, [p[1] / 1e3 for p in pts], style, marker="o", color="C0",
                    label="t4a: " + label)
            ax.plot(ts, [p[2] / 1e3 for p in pts], style, marker="s", color="C1",
                    label="driver: " + label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads)
        ax.set_xticklabels([str(t) for t in threads])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlim(min(threads) / 1.3, max(threads) * 1.3)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("threads")
        ax.set_ylabel("thousand per second, all threads")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.suptitle("Scaling with threads: t4a against the driver\n%s" % meta, fontsize=10)
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    check(fig, out, [(ax, None) for ax in axes])
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)


def check(fig, out, axes):
    """--check: what a reader would see wrong, appended to PROBLEMS."""
    if "--check" not in sys.argv:
        return
    name = os.path.basename(out)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax, sizes in axes:
        if sizes:
            if ax.get_xscale() != "log":
                PROBLEMS.append("%s: the size axis is not logarithmic" % name)
            lo, hi = ax.get_xlim()
            if lo < min(sizes) / 4 or hi > max(sizes) * 4:
                PROBLEMS.append("%s: the x axis spans %s .. %s, the data %s .. %s"
                                % (name, human(int(lo)), human(int(hi)), human(min(sizes)),
                                   human(max(sizes))))
            ys = [y for line in ax.lines for y in line.get_ydata() if y > 0]
            if ys and max(ys) / min(ys) > 100 and ax.get_yscale() != "log":
                PROBLEMS.append("%s: the y axis is linear over %.0fx" % (name, max(ys) / min(ys)))
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer).padded(2)
        for line in ax.lines:
            if line.get_label().startswith("_"):  # the 1.0 reference line
                continue
            pts = ax.transData.transform(line.get_xydata())
            for (x0, y0), (x1, y1) in zip(pts, pts[1:]):  # the segments, sampled
                if any(box.contains(x0 + (x1 - x0) * t / 20, y0 + (y1 - y0) * t / 20)
                       for t in range(21)):
                    PROBLEMS.append("%s: the legend covers the line '%s'"
                                    % (name, line.get_label()))
                    break
        for bar in ax.patches:
            if box.overlaps(bar.get_window_extent(renderer)):
                PROBLEMS.append("%s: the legend covers a bar" % name)
        for text in ax.texts:
            if box.overlaps(text.get_window_extent(renderer)):
                PROBLEMS.append("%s: the legend covers the label '%s'" % (name, text.get_text()))


def run_meta(data):
    """The figure's second title line: the machine and date of a run."""
    return "%d x %s, driver CUDA %s, %d CPUs, %s" % (data["gpus"], data["gpu"], data["driver_cuda"],
                                                    data["cpus"], data["date"])


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    with open(args[0]) as f:
        data = json.load(f)
    outdir = args[1]
    os.makedirs(outdir, exist_ok=True)
    meta = run_meta(data)
    cases = data["cases"]
    bandwidth(cases, "pageable", "Pageable copies: t4a (bounded staging) against the driver",
              os.path.join(outdir, "pageable-bandwidth.svg"), meta)
    bandwidth(cases, "pinned", "Pinned copies: t4a against the driver",
              os.path.join(outdir, "pinned-bandwidth.svg"), meta)
    launches(cases, os.path.join(outdir, "launch-cost.svg"), meta)
    if len(args) == 3:
        with open(args[2]) as f:
            sdata = json.load(f)
        if not sdata.get("scaling_threads"):
            sys.exit("plot.py: %s has no scaling_threads rows" % args[2])
        scaling(sdata["scaling_threads"], os.path.join(outdir, "scaling.svg"), run_meta(sdata))
    for p in sorted(set(PROBLEMS), key=PROBLEMS.index):
        print("plot.py --check: " + p, file=sys.stderr)
    sys.exit(1 if PROBLEMS else 0)


if __name__ == "__main__":
    main()
