#!/usr/bin/env python3
"""How often the real runs meet the fidelity bars against themselves, beside how often the model does.

    fidelity_ceiling.py DIR PIPELINES [HALF]

The fidelity table (scripts/fidelity_terms.py) holds the model against the median of a campaign's
real runs. That median is itself a noisy measurement: run the same loads again and it moves. This
script measures how far, from a campaign with at least 2 x HALF rounds (`ROUNDS=10
scripts/fidelity.sh DIR`; HALF defaults to 5, the table's runs per point, or half the rounds where
there are fewer):

- *real against real*: for every way to take two disjoint sets of HALF rounds (A, B), the figures
  where B's median lies within the bar around A's (`fidelity_terms.within`, the table's bars);
- *the model*: for every set A of HALF rounds, the figures where the simulation lies within the
  bar around A's median.

Each is the mean over the sets, with its least and most. Both count the same figures (each load's
throughput, mean, p50 and p99, and the priority class's p50 and p99 apart), so the model's count is
read against what a second measurement of the same loads scores. A model equal to the loads'
true medians would score above real against real (one noisy side instead of two), so real against
real is a floor for such a model, not its ceiling: the table says where the model stands below it.
"""
import itertools
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity_terms  # noqa: E402
from fidelity_terms import BARS, PRIORITY  # noqa: E402


def rounds(d, p):
    """{round: {load: figures}} of a pipeline's real runs (real_P_K.json, K the round)."""
    out = {}
    for name in os.listdir(d):
        m = re.fullmatch(rf"real_{re.escape(p)}_(\d+)\.json", name)
        if m:
            points = json.load(open(os.path.join(d, name)))["points"]
            out[int(m.group(1))] = {q["load"]: fidelity_terms.figures(q) for q in points}
    return out


def medians(runs, keys):
    """{load: {figure: median over the runs}} for the loads and figures every run holds."""
    loads = set.intersection(*(set(r) for r in runs))
    out = {}
    for load in loads:
        fs = [r[load] for r in runs]
        out[load] = {k: statistics.median(f[k] for f in fs) for k in keys if all(k in f for f in fs)}
    return out


def hits(candidate, reference):
    """{figure: (within, counted)}: how many of the candidate's figures lie within the bars around the reference's."""
    out = {}
    for load, ref in reference.items():
        for k, v in ref.items():
            if k in candidate.get(load, {}) and v:
                ok = fidelity_terms.within(candidate[load][k] / v, k)
                w, n = out.get(k, (0, 0))
                out[k] = (w + ok, n + 1)
    return out


def summary(scores):
    """Mean, least and most of the per-set counts, {figure: [(within, counted), ...]} -> {figure: (mean, lo, hi, n)}."""
    return {k: (statistics.mean(w for w, _ in v), min(w for w, _ in v), max(w for w, _ in v), v[0][1])
            for k, v in scores.items()}


def ceiling(d, p, half):
    """(real against real, the model against a set's median, half, rounds) for one pipeline, each {figure: summary}."""
    by_round = rounds(d, p)
    keys = list(BARS) + list(PRIORITY)
    half = half or min(5, len(by_round) // 2)
    if half < 1 or len(by_round) < 2 * half:
        raise SystemExit(f"{d}: `{p}` has {len(by_round)} real rounds; two sets of {half} need {2 * half}")
    sim = {q["load"]: fidelity_terms.figures(q) for q in json.load(open(f"{d}/sim_{p}.json"))["points"]}
    names = sorted(by_round)
    real, model = {}, {}
    for a in itertools.combinations(names, half):
        ref = medians([by_round[k] for k in a], keys)
        for k, v in hits(sim, ref).items():
            model.setdefault(k, []).append(v)
        rest = [k for k in names if k not in a]
        for b in itertools.combinations(rest, half):
            for k, v in hits(medians([by_round[j] for j in b], keys), ref).items():
                real.setdefault(k, []).append(v)
    return summary(real), summary(model), half, len(names)


def cell(s):
    mean, lo, hi, n = s
    return f"{mean:.1f} ({lo}-{hi}) of {n}"


def total(s, keys):
    """The summaries' means summed over the keys, and the figures counted."""
    return sum(s[k][0] for k in keys if k in s), sum(s[k][3] for k in keys if k in s)


def report(d, pipelines, half=None):
    lines = ["| pipeline | figure | real against real | the model |", "|---|---|---|---|"]
    per_pipeline = ["| pipeline | real against real | the model | priority: real against real | the model |",
                    "|---|---|---|---|---|"]
    sums = {"real": [0.0, 0], "model": [0.0, 0], "real prio": [0.0, 0], "model prio": [0.0, 0]}
    used = set()
    for p in pipelines.split(","):
        if not os.path.exists(f"{d}/sim_{p}.json"):
            continue
        real, model, h, n = ceiling(d, p, half)
        used.add((h, n))
        for k in list(BARS) + list(PRIORITY):
            if k in real and k in model:
                lines.append(f"| `{p}` | {k} | {cell(real[k])} | {cell(model[k])} |")
        cells = []
        for name, s, keys in (("real", real, BARS), ("model", model, BARS),
                              ("real prio", real, PRIORITY), ("model prio", model, PRIORITY)):
            got, of = total(s, keys)
            sums[name][0] += got
            sums[name][1] += of
            cells.append(f"{got:.1f} of {of}" if of else "")
        per_pipeline.append(f"| `{p}` | " + " | ".join(cells) + " |")
    lines += [""] + per_pipeline
    sets = ", ".join(f"{h} of {n} rounds" for h, n in sorted(used))
    lines.append(f"\nMedians of {sets}; each cell: figures within the bars, the mean over the sets (least-most) of "
                 "the loads' figures.")
    lines.append(f"Within the bars, mean over the sets: real against real {sums['real'][0]:.1f} of {sums['real'][1]}, "
                 f"the model {sums['model'][0]:.1f} of {sums['model'][1]}.")
    if sums["real prio"][1]:
        lines.append(f"Priority class: real against real {sums['real prio'][0]:.1f} of {sums['real prio'][1]}, "
                     f"the model {sums['model prio'][0]:.1f} of {sums['model prio'][1]}.")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    print(report(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) == 4 else None))
