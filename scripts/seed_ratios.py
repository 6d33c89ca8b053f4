#!/usr/bin/env python3
"""Collaborative ÷ greedy per load over seeds, from `baton simulate --json` files.

    scripts/seed_ratios.py FILE...        (one file per seed, each holding both policies)

For each load and class (priority, others) and quantile (p50, p99): the ratio of the
collaborative rule's figure to greedy's in each file, then the mean over the files with
its 95% confidence interval (Student's t over the seeds: the seeds' spread, not the
model's error). Prints a markdown table; greedy's medians over the seeds come last.
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


def main(files):
    if not files:
        raise SystemExit(__doc__)
    runs = [by_policy_and_load(f) for f in files]
    loads = sorted({load for r in runs for (policy, load) in r if policy == "greedy"})
    print("| load | priority p50 | priority p99 | others p50 | others p99 | throughput | "
          "greedy's priority / others p99 (µs, median) |")
    print("|---|---|---|---|---|---|---|")
    for load in loads:
        cells = []
        for cls, q in COLUMNS + [(None, "throughput_rps")]:
            ratios = []
            for r in runs:
                g, c = r.get(("greedy", load)), r.get(("collaborative", load))
                if g is None or c is None:
                    continue
                gv, cv = (g[q], c[q]) if cls is None else (g[cls][q], c[cls][q])
                if gv > 0 and (cls is None or g[cls]["count"] > 0 and c[cls]["count"] > 0):
                    ratios.append(cv / gv)
            if not ratios:
                cells.append("-")
            elif cls is None:
                cells.append(f"{statistics.mean(ratios):.2f}")
            else:
                m, lo, hi = mean_ci(ratios)
                cells.append(f"{m:.2f} ({lo:.2f}-{hi:.2f})")
        greedy = [r[("greedy", load)] for r in runs if ("greedy", load) in r]
        prio = statistics.median(g["priority_latency"]["p99_us"] for g in greedy)
        others = statistics.median(g["others_latency"]["p99_us"] for g in greedy)
        print(f"| {load:.0f}/s | " + " | ".join(cells) + f" | {prio:.0f} / {others:.0f} |")
    print(f"\n(collaborative ÷ greedy, mean of {len(files)} seeds, 95% CI over the seeds.)")


if __name__ == "__main__":
    main(sys.argv[1:])
