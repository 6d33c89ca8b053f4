#!/usr/bin/env python3
"""Collaborative ÷ greedy per load over seeds, from `baton simulate --json` files.

    scripts/seed_ratios.py [--svg FILE] [--title TEXT] [--unit TEXT] FILE...
        (one file per seed, each holding both policies)

For each load and class (priority, others) and quantile (p50, p99): the ratio of the
collaborative rule's figure to greedy's in each file, then the mean over the files with
its 95% confidence interval (Student's t over the seeds: the seeds' spread, not the
model's error). Prints a markdown table; greedy's medians over the seeds come last.
`--svg FILE` also plots the four ratios against the load, each with its interval. `--unit`
names the load's unit (default requests/s; sessions/s for the collab example's sessions).
"""
import json
import statistics
import sys

# Student's t, 97.5% quantile, by degrees of freedom (1-30); beyond 30, the normal's.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042]
COLUMNS = [("priority_latency", "p50_us"), ("priority_latency", "p99_us"),
           ("others_latency", "p50_us"), ("others_latency", "p99_us")]
LABELS = ["priority p50", "priority p99", "others p50", "others p99"]


def t975(df):
    return T975[df - 1] if df <= len(T975) else 1.96


def mean_ci(xs):
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, m, m
    h = t975(len(xs) - 1) * statistics.stdev(xs) / len(xs) ** 0.5
    return m, m - h, m + h


def by_policy_and_load(path):
    out = {}
    for q in json.load(open(path))["points"]:
        out[(q["policy"], round(q["load"], 3))] = q
    return out


def ratios_at(runs, load, cls, q):
    """Collaborative ÷ greedy of figure `q` (of class `cls`, None: the point's own) in each run
    holding both policies at `load` and, for a class, requests of it under both."""
    out = []
    for r in runs:
        g, c = r.get(("greedy", load)), r.get(("collaborative", load))
        if g is None or c is None:
            continue
        gv, cv = (g[q], c[q]) if cls is None else (g[cls][q], c[cls][q])
        if gv > 0 and (cls is None or g[cls]["count"] > 0 and c[cls]["count"] > 0):
            out.append(cv / gv)
    return out


def rows(files):
    """Per load (ascending): (load, [(mean, low, high) or None per COLUMNS], mean throughput
    ratio or None, greedy's median priority p99, greedy's median others p99)."""
    runs = [by_policy_and_load(f) for f in files]
    loads = sorted({load for r in runs for (policy, load) in r if policy == "greedy"})
    out = []
    for load in loads:
        cells = []
        for cls, q in COLUMNS:
            rs = ratios_at(runs, load, cls, q)
            cells.append(mean_ci(rs) if rs else None)
        tp = ratios_at(runs, load, None, "throughput_rps")
        greedy = [r[("greedy", load)] for r in runs if ("greedy", load) in r]
        prio = statistics.median(g["priority_latency"]["p99_us"] for g in greedy)
        others = statistics.median(g["others_latency"]["p99_us"] for g in greedy)
        out.append((load, cells, statistics.mean(tp) if tp else None, prio, others))
    return out


def load_text(load):
    """A load as the tables and plots print it: whole above 100, else three figures (5.6)."""
    return f"{load:.0f}" if load >= 100 else f"{load:.3g}"


def table(rs, seeds, unit="requests/s"):
    lines = [f"| load ({unit}) | priority p50 | priority p99 | others p50 | others p99 | throughput | "
             "greedy's priority / others p99 (µs, median) |",
             "|---|---|---|---|---|---|---|"]
    for load, cells, tp, prio, others in rs:
        text = [f"{c[0]:.2f} ({c[1]:.2f}-{c[2]:.2f})" if c else "-" for c in cells]
        text.append(f"{tp:.2f}" if tp is not None else "-")
        lines.append(f"| {load_text(load)} | " + " | ".join(text) + f" | {prio:.0f} / {others:.0f} |")
    lines.append(f"\n(collaborative ÷ greedy, mean of {seeds} seeds, 95% CI over the seeds.)")
    return "\n".join(lines)


def svg(rs, title, unit="requests/s"):
    """The four ratios against the load (in `unit`), each point with its interval; a dashed
    line at 1 (greedy's own figure)."""
    width, height, left, right, top, bottom = 640, 400, 60, 150, 40, 50
    loads = [load for load, *_ in rs]
    highs = [c[2] for _, cells, *_ in rs for c in cells if c]
    lows = [c[1] for _, cells, *_ in rs for c in cells if c]
    y_max = max([1.2] + highs) * 1.05
    y_min = min([0.0] + lows)
    x_lo, x_hi = min(loads), max(loads)
    span = (x_hi - x_lo) or 1.0

    def x(load):
        return left + (load - x_lo) / span * (width - left - right)

    def y(v):
        return top + (y_max - v) / (y_max - y_min) * (height - top - bottom)

    colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{title}</text>',
           f'<line x1="{left}" y1="{y(1):.1f}" x2="{width - right}" y2="{y(1):.1f}" stroke="#888" '
           'stroke-dasharray="4 4"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
           f'<text x="{(left + width - right) / 2:.0f}" y="{height - 12}" text-anchor="middle">load ({unit})</text>',
           f'<text x="14" y="{(top + height - bottom) / 2:.0f}" transform="rotate(-90 14 '
           f'{(top + height - bottom) / 2:.0f})" text-anchor="middle">collaborative ÷ greedy</text>']
    steps = 5
    for k in range(steps + 1):
        v = y_min + (y_max - y_min) * k / steps
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    for load in loads:
        out.append(f'<text x="{x(load):.1f}" y="{height - bottom + 16}" text-anchor="middle">{load_text(load)}</text>')
    for i, label in enumerate(LABELS):
        colour = colours[i]
        # Each series a little apart from the others, so the intervals do not hide each other.
        shift = (i - 1.5) * 4
        pts = [(x(load) + shift, cells[i]) for load, cells, *_ in rs if cells[i]]
        if pts:
            path = " ".join(f"{px:.1f},{y(c[0]):.1f}" for px, c in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}"/>')
        for px, (m, lo, hi) in pts:
            out.append(f'<line x1="{px:.1f}" y1="{y(lo):.1f}" x2="{px:.1f}" y2="{y(hi):.1f}" stroke="{colour}"/>')
            out.append(f'<circle cx="{px:.1f}" cy="{y(m):.1f}" r="3" fill="{colour}"/>')
        ly = top + 16 * i
        out.append(f'<line x1="{width - right + 10}" y1="{ly}" x2="{width - right + 30}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 35}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(args):
    options = {"--svg": None, "--title": "collaborative ÷ greedy", "--unit": "requests/s"}
    while args and args[0] in options:
        if len(args) < 2:
            raise SystemExit(f"{args[0]} needs a value\n{__doc__}")
        options[args[0]] = args[1]
        args = args[2:]
    svg_file, title, unit = options["--svg"], options["--title"], options["--unit"]
    if not args:
        raise SystemExit(__doc__)
    rs = rows(args)
    print(table(rs, len(args), unit))
    if svg_file:
        with open(svg_file, "w") as f:
            f.write(svg(rs, title, unit))


if __name__ == "__main__":
    main(sys.argv[1:])
