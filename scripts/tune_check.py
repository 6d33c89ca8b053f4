#!/usr/bin/env python3
"""The table of scripts/tune-check.sh: a tuned file against the shipped one in real runs.

    tune_check.py DIR SLO     SLO as `baton tune` takes it: priority_p99=15ms,others_p99=30ms

DIR holds shipped_K.json and tuned_K.json (`baton bench --rate R1,R2,.. --json`, K = 1..n, the
same seeds for both files). A run meets the SLO at a rate as `baton tune` scores a simulated one
(benches/src/tune/goodput.rs): it answered at least 97% of the requests the rate sends over the
measured interval, less three standard deviations of the Poisson count, without an error, and
each class's p99 (priority, others) is within its bound where the class sent requests. A file's
real goodput is the highest rate met in most of its runs.
"""
import glob
import json
import math
import re
import statistics
import sys

UNITS = {"us": 1, "µs": 1, "ms": 1e3, "s": 1e6}


def parse_slo(text):
    """{'priority': µs, 'others': µs} from `priority_p99=15ms,others_p99=30ms`."""
    slo = {}
    for part in text.split(","):
        key, value = part.split("=")
        m = re.fullmatch(r"([0-9.]+)(us|µs|ms|s)", value.strip())
        if not m or key.strip() not in ("priority_p99", "others_p99"):
            sys.exit(f"SLO: cannot read `{part}` (want priority_p99=X,others_p99=Y with us, ms or s)")
        slo[key.strip().removesuffix("_p99")] = float(m.group(1)) * UNITS[m.group(2)]
    return slo


def meets(point, slo):
    expected = point["load"] * point["seconds"]
    answered = point["requests"] >= 0.97 * expected - 3 * math.sqrt(expected)
    within = all(
        point[f"{cls}_latency"]["count"] == 0 or point[f"{cls}_latency"]["p99_us"] <= bound
        for cls, bound in slo.items()
    )
    return answered and within and point["errors"] == 0


def runs(d, file):
    """{rate: [points of the runs]} for one file."""
    by_rate = {}
    for f in sorted(glob.glob(f"{d}/{file}_*.json")):
        for p in json.load(open(f))["points"]:
            if p["mode"] == "open":
                by_rate.setdefault(p["load"], []).append(p)
    return by_rate


def goodput(by_rate, slo):
    met = [rate for rate, pts in by_rate.items() if 2 * sum(meets(p, slo) for p in pts) > len(pts)]
    return max(met, default=0.0)


def fmt_us(us):
    return f"{us / 1e3:.1f} ms" if us >= 1e3 else f"{us:.0f} µs"


def main(d, slo_text):
    slo = parse_slo(slo_text)
    files = {name: runs(d, name) for name in ("shipped", "tuned")}
    if not all(files.values()):
        sys.exit(f"{d}: needs shipped_K.json and tuned_K.json with open-loop points")
    print("| rate (req/s) | file | req/s | priority p99 | others p99 | meets the SLO (runs) | errors (all runs) |")
    print("|---|---|---|---|---|---|---|")
    for rate in sorted(set(files["shipped"]) | set(files["tuned"])):
        for name, by_rate in files.items():
            pts = by_rate.get(rate, [])
            if not pts:
                continue
            med = lambda f: statistics.median(f(p) for p in pts)  # noqa: E731
            print(
                f"| {rate:.0f} | {name} | {med(lambda p: p['throughput_rps']):.0f} "
                f"| {fmt_us(med(lambda p: p['priority_latency']['p99_us']))} "
                f"| {fmt_us(med(lambda p: p['others_latency']['p99_us']))} "
                f"| {sum(meets(p, slo) for p in pts)} of {len(pts)} | {sum(p['errors'] for p in pts)} |"
            )
    shipped, tuned = (goodput(files[n], slo) for n in ("shipped", "tuned"))
    ratio = f"{tuned / shipped:.2f} ×" if shipped > 0 else "no ratio (the shipped file met no rate)"
    named = lambda g: f"{g:.0f}" if g > 0 else "none of these rates"  # noqa: E731
    print(f"\nReal goodput (highest rate met in most runs): shipped {named(shipped)}, tuned {named(tuned)}: {ratio}.")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
