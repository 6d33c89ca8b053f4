#!/usr/bin/env python3
"""Fits `baton simulate`'s runtime CPU terms from `baton bench` JSON reports.

Each in-process point of `baton bench` reports `cpu.runtime_us_per_request`
(the process's CPU less the nodes' compute, per request) and
`cpu.batches_per_request`. A least-squares line through them,

    runtime_us_per_request = request_cpu_us + batch_cpu_us * batches_per_request,

gives `--request-cpu-us` (the intercept) and `--batch-cpu-us` (the slope);
`--task-cpu-us` stays 0 here (within one pipeline tasks per request are fixed,
so a per-task cost is not told apart from the per-request one by the fit; the
runtime's own timing of each batch's hand-on tells it, see
scripts/fidelity_terms.py's TASK_CPU). Where the
points' batches per request span less than MIN_SPREAD of their mean (a
pipeline whose loads all run about the same batches a request: `collab_early`
about one, `many_nodes` 5.5-5.8), a slope is the noise of a few points over a
sliver of x: the fit gives the mean as the per-request term and no per-batch
term. Neither term comes out negative: a line with a negative intercept
becomes the line through the origin, one with a negative slope the mean.

Usage: scripts/fit_cpu_terms.py BENCH.json [BENCH.json ...]
"""
import json
import sys


def point(p, less_ticks=False, less_spins=False, less_sends=False, task_us=0.0, less_decisions=False):
    """(batches per request, runtime µs per request) of one bench point, or None without a usable reading.
    With less_ticks, the scheduler thread's CPU per request (its rounds' CPU, where the point recorded
    it) is taken out: a model that charges the ticks themselves (--tick-cpu-us) fits the rest.
    With less_spins, the idle workers' spinning (`cpu.spin_us_per_request`, where the point recorded
    it) is taken out: it yields its core to any runnable thread, so it delays no batch and takes
    only cores nothing else wanted. With less_sends, the load's CPU per send (`send_cpu_us`, one
    send a request: the open loop's generator's, or the closed loop's clients') is taken out: a
    model that charges the sends themselves (--send-cpu-us, --client-send-us) fits the rest.
    With task_us, that much a task (`cpu.tasks_per_request` of them) is taken out: a model that
    charges each task's hand-on on its worker (--task-cpu-us) fits the rest. With less_decisions,
    the workers' decisions as their batches ended (`scheduler_ticks.decisions.on_finishes`, where
    the point recorded them) are taken out: a model that charges them (--decision-cpu-us) fits
    the rest."""
    c = p.get("cpu")
    if not c or c["runtime_us_per_request"] <= 0:
        return None
    runtime = c["runtime_us_per_request"]
    if less_spins:
        runtime -= c.get("spin_us_per_request", 0.0)
    if less_sends:
        runtime -= p.get("send_cpu_us", 0.0)
    runtime -= task_us * c.get("tasks_per_request", 0.0)
    if less_decisions and p.get("throughput_rps", 0) > 0:
        runtime -= finish_decisions_us_per_s(p) / p["throughput_rps"]
    t = p.get("scheduler_ticks") or {}
    if less_ticks and "cpu_us_per_round" in t and p["throughput_rps"] > 0:
        runtime -= t["rounds_per_s"] * t["cpu_us_per_round"] / p["throughput_rps"]
    return (c["batches_per_request"], runtime) if runtime > 0 else None


def finish_decisions_us_per_s(p):
    """The workers' decisions as their batches ended, µs of wall time a second (0 where the
    point did not record them)."""
    f = ((p.get("scheduler_ticks") or {}).get("decisions") or {}).get("on_finishes") or {}
    return f.get("per_s", 0.0) * f.get("mean_us", 0.0)


def points(files):
    out = (point(p) for f in files for p in json.load(open(f))["points"])
    return [x for x in out if x is not None]


# Batches per request the points must span for the per-batch term to be fitted.
MIN_SPREAD = 0.25


def fit(pts):
    """(request µs, batch µs), neither negative (see the module's docs)."""
    n = len(pts)
    xs = [x for x, _ in pts]
    mx = sum(xs) / n
    my = sum(y for _, y in pts) / n
    if max(xs) - min(xs) < MIN_SPREAD * mx:
        return my, 0.0
    sxx = sum((x - mx) ** 2 for x, _ in pts)  # > 0: the points span MIN_SPREAD of their mean
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    if slope < 0:
        return my, 0.0
    if my - slope * mx < 0:
        return 0.0, sum(x * y for x, y in pts) / sum(x * x for x in xs)
    return my - slope * mx, slope


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    pts = points(sys.argv[1:])
    if len(pts) < 2:
        raise SystemExit("need at least two points with a CPU reading (in-process runs, fixed --duration)")
    request, batch = fit(pts)
    print(f"{len(pts)} points: --request-cpu-us {request:.1f} --batch-cpu-us {batch:.1f}")
