#!/usr/bin/env python3
"""bench/plot.py -- the figures of docs/performance.md, drawn as SVG from one
t4a_bench JSON file (bench/results/*.json):

  pageable-bandwidth.svg  pageable copies, t4a against the driver's own
                          pageable copies, both directions, 1 B .. 1 GiB
  pinned-bandwidth.svg    pinned copies, t4a against the driver, 4 KiB .. 1 GiB
  launch-cost.svg         host time per launch: a launch, seal+wait after one
                          launch, and a chain of 10,000 launches + seal

  python3 bench/plot.py RESULTS.json OUTDIR      (make figures)

Needs python3-matplotlib (Debian). The SVGs are committed; rebuilding them
needs no GPU, only the JSON.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

matplotlib.rcParams["svg.hashsalt"] = "t4a"  # stable ids: reproducible files
matplotlib.rcParams["svg.fonttype"] = "none"


def human(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%g %s" % (n / size, unit)
    return "%d B" % n


def sweep(cases, prefix):
    """(sizes, t4a medians, raw medians, t4a p99s) of cases named prefix*."""
    rows = sorted((c["size"], c) for c in cases if c["name"].startswith(prefix))
    return ([s for s, _ in rows], [c["t4a"]["median"] for _, c in rows],
            [c["raw"]["median"] for _, c in rows], [c["t4a"]["p99"] for _, c in rows])


def bandwidth(cases, kind, title, out, meta):
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for direction, color in (("h2d", "tab:blue"), ("d2h", "tab:orange")):
        sizes, ours, raw, _ = sweep(cases, "%s %s sweep" % (kind, direction))
        if not sizes:
            continue
        label = direction.upper().replace("2", " to ")
        ax.plot(sizes, ours, "o-", color=color, label="t4a %s" % label)
        ax.plot(sizes, raw, "s--", color=color, alpha=0.6, label="driver %s" % label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per copy")
    ax.set_ylabel("GB/s (median)")
    ax.set_title("%s\n%s" % (title, meta), fontsize=10)
    ticks = [s for s in (1, 64, 1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22,
                         1 << 24, 1 << 26, 1 << 28, 1 << 30)]
    ax.set_xticks(ticks)
    ax.set_xticklabels([human(t) for t in ticks], rotation=45, ha="right", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
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
    fig, ax = plt.subplots(figsize=(7, 4))
    x = range(len(names))
    ax.bar([i - 0.2 for i in x], ours, 0.4, label="t4a")
    ax.bar([i + 0.2 for i in x], raw, 0.4, label="driver (cuLaunchKernel, synchronize)")
    for i in x:
        ax.annotate("%.2fx" % (ours[i] / raw[i]), (i, max(ours[i], raw[i])), ha="center",
                    va="bottom", fontsize=8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("host microseconds (median)")
    ax.set_title("Launch cost\n%s" % meta, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    meta = "%d x %s, driver CUDA %s, %d CPUs, %s" % (data["gpus"], data["gpu"],
                                                      data["driver_cuda"], data["cpus"],
                                                      data["date"])
    cases = data["cases"]
    bandwidth(cases, "pageable", "Pageable copies: t4a (bounded staging) against the driver",
              os.path.join(outdir, "pageable-bandwidth.svg"), meta)
    bandwidth(cases, "pinned", "Pinned copies: t4a against the driver",
              os.path.join(outdir, "pinned-bandwidth.svg"), meta)
    launches(cases, os.path.join(outdir, "launch-cost.svg"), meta)


if __name__ == "__main__":
    main()
