#!/usr/bin/env python3
"""Where threads waited for a core, from a tracefs text trace of `sched_switch` and
`sched_wakeup` (scripts/sched-trace.sh records one around a `baton bench` run).

A thread waits from its wake-up, or from being preempted (switched out still runnable), to
its next switch in. Per thread: its waits (count, mean, p50, p99, max, sum) and its time on a
core. For the waits over a threshold: the time they spent with each thread on the waiting
thread's own core and on the other cores, and with those cores idle.

    python3 scripts/sched_waits.py TRACE [--over-us 300]
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r"\[(\d+)\].*?\s(\d+\.\d+): (sched_switch|sched_wakeup): (.*)")
SWITCH = re.compile(r"prev_comm=(.*) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)")
PID = re.compile(r"pid=(\d+)")
COMM = re.compile(r"comm=(.*) pid=")


def parse(lines):
    """The trace's events: (cpu, seconds, kind, fields); lines of other events are skipped."""
    for line in lines:
        m = LINE.search(line)
        if m:
            yield int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)


def analyse(lines):
    """Per thread: its waits (µs) and its time on a core (s); per cpu: who ran when
    [(start, end, pid)]; the names; every wait as (pid, start, end, cpu it ran on next)."""
    names = {0: "idle"}
    running = {}  # cpu -> (pid, since)
    segments = collections.defaultdict(list)
    runnable_since = {}
    waits = []
    on_core = collections.defaultdict(float)
    first = last = None
    for cpu, t, kind, rest in parse(lines):
        first = t if first is None else first
        last = t
        if kind == "sched_wakeup":
            pid = int(PID.search(rest).group(1))
            names.setdefault(pid, COMM.search(rest).group(1))
            runnable_since.setdefault(pid, t)
            continue
        m = SWITCH.search(rest)
        prev, state, nxt = int(m.group(2)), m.group(3), int(m.group(5))
        if prev:
            names[prev] = m.group(1)
        if nxt:
            names[nxt] = m.group(4)
        if cpu in running:
            pid, since = running[cpu]
            segments[cpu].append((since, t, pid))
            on_core[pid] += t - since
        if prev and state.startswith("R"):
            runnable_since[prev] = t
        if nxt and nxt in runnable_since:
            waits.append((nxt, runnable_since.pop(nxt), t, cpu))
        running[cpu] = (nxt, t)
    span = (last - first) if first is not None else 0.0
    return names, segments, waits, on_core, span


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def thread_table(names, waits, on_core, span):
    """Rows (name, pid, waits, mean, p50, p99, max µs, sum ms, share of a core), the most waited first."""
    by_pid = collections.defaultdict(list)
    for pid, start, end, _ in waits:
        by_pid[pid].append((end - start) * 1e6)
    rows = []
    for pid, w in by_pid.items():
        share = on_core[pid] / span if span else 0.0
        rows.append((names.get(pid, "?"), pid, len(w), sum(w) / len(w), quantile(w, 0.5), quantile(w, 0.99), max(w), sum(w) / 1e3, share))
    return sorted(rows, key=lambda r: -r[7])


def kind(name):
    """A thread's kind: its name less the worker index and the kernel's truncation."""
    return re.sub(r"-\d+$", "", name)


def long_waits(names, segments, waits, over_s):
    """For the waits over `over_s`: their count and total (s), and per thread kind the time
    it ran on the waiting thread's core and on the other cores (s; `idle`: the core idle)."""
    here = collections.defaultdict(float)
    elsewhere = collections.defaultdict(float)
    count, total = 0, 0.0
    for _, start, end, cpu in waits:
        if end - start < over_s:
            continue
        count += 1
        total += end - start
        for c, segs in segments.items():
            into = here if c == cpu else elsewhere
            for a, b, pid in segs:
                if b > start and a < end:
                    into[kind(names.get(pid, "?"))] += min(b, end) - max(a, start)
    return count, total, dict(here), dict(elsewhere)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--over-us", type=float, default=300.0, help="the long waits' threshold, µs")
    ap.add_argument("--threads", type=int, default=12, help="threads listed")
    args = ap.parse_args()
    with open(args.trace) as f:
        names, segments, waits, on_core, span = analyse(f)
    if not waits:
        sys.exit(f"{args.trace}: no sched_switch / sched_wakeup events")
    print(f"{span:.3f} s traced, {len(segments)} cpus")
    print(f"{'thread':18s} {'pid':>7s} {'waits':>7s} {'mean µs':>8s} {'p50 µs':>7s} {'p99 µs':>8s} {'max µs':>8s} {'sum ms':>7s} {'on core':>7s}")
    for row in thread_table(names, waits, on_core, span)[: args.threads]:
        print("%-18s %7d %7d %8.1f %7.1f %8.1f %8.1f %7.1f %7.2f" % row)
    count, total, here, elsewhere = long_waits(names, segments, waits, args.over_us / 1e6)
    if not count:
        print(f"no wait over {args.over_us:.0f} µs")
        return
    print(f"\n{count} waits over {args.over_us:.0f} µs, {total * 1e3:.1f} ms in all; meanwhile (ms):")
    for title, spent in (("on the waiting thread's core", here), ("on the other cores", elsewhere)):
        top = sorted(spent.items(), key=lambda kv: -kv[1])[:8]
        print(f"  {title}: " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in top))


if __name__ == "__main__":
    main()
