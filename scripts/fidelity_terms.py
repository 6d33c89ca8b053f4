#!/usr/bin/env python3
"""The arithmetic of scripts/fidelity.sh: loads, the model's measured terms, the table.

    fidelity_terms.py rates DIR PIPELINE PERCENTS   the open-loop rates: PERCENTS of the capacity
    fidelity_terms.py base DIR PIPELINE             the terms measured without the model: CPU, compute scales
    fidelity_terms.py terms DIR PIPELINE CONFIG     every term flag (needs sim1_PIPELINE.json)
    fidelity_terms.py calibrate DIR PIPELINE        one round of the compute terms through the model
    fidelity_terms.py table DIR PIPELINES           simulated ÷ real, against the bars (markdown)

DIR holds `baton bench` JSON: cap_P_K.json (closed loop at concurrency 1 and the capacity's) and
real_P_K.json (the open-loop runs), sim1_P.json (`baton simulate` at concurrency 1 and the
capacity's with the base terms and no wake or hop) and sim_P.json (the simulated loads). The capacity is the median
closed-loop throughput at the largest concurrency. The terms (docs/simulate.md, "Measured
terms"):

- CPU terms: the line fitted by scripts/fit_cpu_terms.py through the real open-loop points
  and the capacity's closed-loop points above concurrency 1 (neither term negative). The
  concurrency-1 points are left out: there the process keeps about two cores busy while one
  batch runs (idle workers and the waiting client spin, yielding to any runnable thread), CPU
  that does not compete with the batches;
- at concurrency 1, the mean latency the model leaves out (real less simulated, not below 0)
  is split between the two per-hop terms: --wake-us takes the queue time per task the model
  leaves out (real less simulated, tasks-weighted over nodes, median over runs), up to that
  latency per hop; --hop-us the rest per hop. The hops: per connected part of the pipeline
  the longest path, each node weighted by the share of requests that visit it; the parts
  summed. (Where the real workers wait for a core the model slows their batches instead:
  the latency, not the queue alone, says what is missing);
- --compute-scale and --compute-offset: a node's batches under a load take offset + scale ×
  the profile's time. Per node, through its mean compute per batch at concurrency 1 and at the
  capacity's concurrency (medians over the capacity runs; the batches' CPU time where the
  runtime sampled it, `batch_compute_us`) against the profile over the batches it ran there
  (`profile_ran`: the profile's centre at each recorded batch size, averaged; the centre is its
  timed runs' mean, the draws' mean, `profile_centre`; PROFILE_CENTRE=median: the median), the line
  `line_through` fits: where the batches grew (the profile 1.5x or more) and the line holds a
  fixed part (offset >= 0; GROWING_STRETCH=1: or below 0). A node runs alone in the profile, its
  weights in the caches; under a load other nodes' batches run between its own, and the part of
  the stretch that does not grow with the rows (its weights fetched again) weighs most on small
  batches (`many_nodes`' deep nodes: 3.3-4x at 4 rows, 1.7-2x at 16-32, at every load). Else
  (one batch size, or a stretch that grows with the rows, as a lone MLP's does) the scale is
  the ratio at concurrency 1 and the offset 0 (`one_scale`): the open loads' batches stretch as
  concurrency 1's do, where the capacity's clients crowd the cores (ONE_SCALE_AT=capacity: the
  capacity's ratio, the model before 2026-12-07's twenty-eighth sitting); a sparse load's
  batches stretch more, which the idle gaps below take apart. COMPUTE_OFFSET=0: the
  concurrency-1 ratio and no offset for every node (the model before the offsets).
  With the idle gaps (`--idle-gaps`, the default of scripts/fidelity.sh where the profile
  measured them), the line is fitted through the real compute less what the model's gaps add
  at each concurrency (`idle_correct`; not below the profile's time): the real compute at
  concurrency 1 holds the nodes' idle gaps there, which the model then adds itself.
  Then optionally calibrated through the model (`calibrate`; CALIBRATE=N in
  scripts/fidelity.sh): a real compute measured as wall time holds the stretch of batches
  sharing the cores, which the model adds again where a request's branches overlap on more threads than
  cores (and where the CPU terms' jobs take cores); each round divides the real compute at
  each concurrency by the model's own stretch there (simulated ÷ its terms over the simulated
  batches; sim1_P.json simulates both concurrencies) and fits the terms through those
  targets again (or, where the measured terms have no offset, the ratio at the same
  concurrency as measured), kept in scales_P.json. A round takes out only what the model adds: a scale
  never falls below the smaller of 1 and the measured one (the model's stretch of a few-µs
  batch beside the CPU terms' jobs does not shrink with its scale, so an unbounded round would
  drive it toward 0).

The scheduler thread's CPU per tick is a term of its own (`--tick-cpu-us`, the capacity runs'
median of `scheduler_ticks.cpu_us_per_round`), taken out of each point's runtime CPU before
the fit; TICK_CPU=0 leaves it in the fitted terms (the model before it). The idle workers'
spinning (`cpu.spin_us_per_request`, sampled by the runtime) is taken out too and charged
nowhere: it yields its core to any runnable thread; SPIN_CPU=0 leaves it in the fitted terms.
CPU_TERMS=0 in the environment leaves the CPU terms out (the wake and hop terms then hold
what concurrency 1 shows of it); CPU_FIT=capacity fits them through the capacity runs alone,
so that no term comes from the open-loop runs the model predicts. WAKE_DELAYS=1 gives the load simulations the wake-ups the
runtime recorded in the capacity runs (`--wake-delays cap_P_*.json`) in place of --wake-us
(WAKE_DELAYS=light: the light open load's, `light_P.json`, whose workers park between requests);
BATCH_TIMES=1 their recorded batch times (`--batch-times cap_P_*.json`) in place of the compute
scales. TICK_DELAYS=1 gives every simulation, at concurrency 1 too (so the wake and hop terms
do not hold it), the scheduler ticks' lateness the runtime recorded in the capacity runs
(`--tick-delays cap_P_*.json`); without it the model's ticks come on time.
Batches at the real-time policy (`foreground_realtime` under the collaborative rule) take
their own scale (`--realtime-scale`): the capacity runs' real-time batches' compute
(`nodes[].realtime_batch_times`) ÷ the profile's centres at their sizes; REALTIME_SCALE=0 leaves
them at the profile's times (the model before it); RT_GAPS=1 fits that scale without what the
model's idle gaps add to those batches (`realtime_gap_stretch`), the model adding them itself
(`--realtime-idle-gaps`). SEND_CPU=1 gives the open-loop simulations
the load generator's thread (`--send-cpu-us`, the real runs' least `send_cpu_us`), and with
CLIENT_SEND=1 too the closed-loop ones the clients' sends in turn (`--client-send-us`, the
capacity runs' median), each taken out of the CPU fit, and the generator's wake from its sleeps
(`--send-wake-by-sleep`: per class of the sleep's length, the mean lag behind their schedule of
the sends after such a sleep in the light open-loop run at 10% of the capacity, light_P.json;
with SEND_WAKE=light, or a light run made before it recorded the classes, the one
`--send-wake-us` of all its sends' mean lag; without a light run or with SEND_WAKE=sleeps the
stall record's mean timed-sleep lateness; SEND_WAKE=0: none); LATENCY_FROM_SCHEDULE=1 counts the simulated
latencies from the schedule, as the real runs then do. TASK_CPU=1 charges each task's hand-on on
its worker at its batch's end (`--task-cpu-us`, the runtime's own timing of the hand-ons at
concurrency 1 ÷ the tasks), taken out of the CPU fit: the worker holds its node and a core for
it, where the fitted per-request term charges it at the request's arrival. DECISION_CPU=1
charges each worker's decision as its batch ends on its core (`--decision-cpu-us`, the capacity
runs' recorded decision time after batches ÷ their batches), taken out of the CPU fit.
"""
import glob
import json
import os
import statistics
import sys
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_cpu_terms  # noqa: E402

BARS = {"throughput": 0.05, "mean": 0.15, "p50": 0.15, "p99": 0.30}
# The priority class's quantiles, shown beside the bars' figures (held to the p50 and p99 bars, counted apart).
PRIORITY = {"prio p50": ("p50_us", 0.15), "prio p99": ("p99_us", 0.30)}


def load_points(pattern):
    out = []
    for f in sorted(glob.glob(pattern)):
        out.extend(json.load(open(f))["points"])
    return out


def capacity(d, p):
    pts = [q for q in load_points(f"{d}/cap_{p}_*.json") if q["mode"] == "closed"]
    top = max(q["load"] for q in pts)
    return statistics.median(q["throughput_rps"] for q in pts if q["load"] == top)


def rates(d, p, percents):
    cap = capacity(d, p)
    return ",".join(str(round(cap * int(x) / 100)) for x in percents.split(","))


def node_graph(config):
    """Each node's successors, and the nodes the pipeline's inputs reach."""
    spec = tomllib.load(open(config, "rb"))
    succ = {n: set() for n in spec["nodes"]}
    for e in spec.get("edges", []):
        succ[e["from"].split(".")[0]].add(e["to"].split(".")[0])
    entries = {t.split(".")[0] for i in spec["inputs"].values() for t in i["to"]}
    return succ, entries


def components(succ):
    undirected = {n: set(s) for n, s in succ.items()}
    for n, s in succ.items():
        for m in s:
            undirected[m].add(n)
    seen, parts = set(), []
    for n in succ:
        if n in seen:
            continue
        part, todo = set(), [n]
        while todo:
            m = todo.pop()
            if m not in part:
                part.add(m)
                todo.extend(undirected[m])
        seen |= part
        parts.append(part)
    return parts


def longest_path(succ, starts, cost, hops):
    """(cost, hops) of the costliest path from any start, by memoised depth-first search."""
    memo = {}

    def best(n):
        if n not in memo:
            tail = max((best(m) for m in succ[n]), default=(0.0, 0.0))
            memo[n] = (cost[n] + tail[0], hops[n] + tail[1])
        return memo[n]

    return max((best(n) for n in starts), default=(0.0, 0.0))


def concurrency_one(d, p):
    return [q for q in load_points(f"{d}/cap_{p}_*.json") if q["mode"] == "closed" and q["load"] == 1]


def hops_on_way(point, succ, entries):
    """The nodes a request meets on its way (see the module's docs), at least a tiny positive count."""
    served = point["requests"]
    cost, hops = {}, {}
    for n in point["nodes"]:
        visits = n["tasks"] / served if served else 0.0
        cost[n["name"]] = (n["mean_queue_us"] + n["mean_compute_us"]) * visits
        hops[n["name"]] = visits
    return max(sum(longest_path(succ, entries & part, cost, hops)[1] for part in components(succ)), 1e-9)


def profile_median(profile, node, batch):
    """The profile's median µs at `batch` rows (linear between measured sizes)."""
    return profile_at(profile, node, batch, lambda t: t["median_us"])


def profile_centre(profile, node, batch):
    """The centre of the model's draws at `batch` rows, µs (linear between measured sizes): the
    mean of the profile's timed runs (`samples_us`), which the simulator draws from, where the
    profile holds them; else (or PROFILE_CENTRE=median) the median. A compute scale is the real
    batches' mean over this centre, so the scaled draws keep the real mean: the timed runs'
    mean lies 3-6% above their median for the real models (a tail of slow runs), and a scale
    taken over the median would put that tail in twice."""
    if os.environ.get("PROFILE_CENTRE") == "median":
        return profile_median(profile, node, batch)
    return profile_at(profile, node, batch,
                      lambda t: statistics.fmean(t["samples_us"]) if t.get("samples_us") else t["median_us"])


def profile_at(profile, node, batch, centre):
    """`centre` of the profile's measured size at `batch` rows, µs (linear between sizes)."""
    sizes = sorted((t["batch"], centre(t)) for t in profile["nodes"][node]["batches"])
    for (b0, m0), (b1, m1) in zip(sizes, sizes[1:]):
        if b0 <= batch <= b1:
            return m0 + (m1 - m0) * (batch - b0) / (b1 - b0)
    return sizes[0][1] if batch < sizes[0][0] else sizes[-1][1]


def profile_ran(profile, node):
    """The profile's µs over the batches bench node `node` ran: the mean over its recorded
    batch sizes (`batch_times`), each size at the profile's centre for it (`profile_centre`). A node's
    batch time grows with its rows unevenly (flat to 4 rows, then steeper, for `mlp`), so
    the profile at the mean batch is not the mean of the profile over the batches: at 16
    rows a batch on average, 264 µs against 275-284. PROFILE_AT_MEAN=1, or a record without
    sizes: the profile at the mean batch."""
    sizes = [(t["batch_size"], sum(c for _, _, c in t["buckets"])) for t in node.get("batch_times") or []]
    count = sum(c for _, c in sizes)
    if os.environ.get("PROFILE_AT_MEAN") == "1" or count == 0:
        return profile_centre(profile, node["name"], node["mean_batch"])
    return sum(c * profile_centre(profile, node["name"], b) for b, c in sizes) / count


def compute_terms(d, p):
    """Per node (scale, offset µs): the calibrated ones (scales_P.json) where `calibrate` wrote
    them, else the measured ones."""
    kept = f"{d}/scales_{p}.json"
    if os.path.exists(kept):
        return {n: tuple(v) for n, v in json.load(open(kept)).items()}
    return measured_compute(d, p)


def batch_compute_us(node, wall=False):
    """A node's compute per batch, µs: its CPU time where the runtime sampled it (the wall
    time × `cpu_per_wall`: without the waits for a core, which the model adds itself), else
    the wall time. `wall` or COMPUTE_CLOCK=wall: the wall time always."""
    share = node.get("cpu_per_wall")
    if share is None or wall or os.environ.get("COMPUTE_CLOCK") == "wall":
        return node["mean_compute_us"]
    return node["mean_compute_us"] * share


def sampled(points):
    """Whether the runtime sampled its batches' CPU time in these bench points."""
    return any(n.get("cpu_per_wall") is not None for q in points for n in q["nodes"])


def capacity_compute(points, name, profile, wall=False):
    """(the profile's µs over its batches, `profile_ran`; compute µs per batch,
    `batch_compute_us`) of node `name` at each closed-loop concurrency of `points` where it
    ran: the median over runs, by concurrency."""
    by_load = {}
    for q in points:
        n = next(n for n in q["nodes"] if n["name"] == name)
        if q["mode"] == "closed" and n["executions"] > 0:
            by_load.setdefault(q["load"], []).append((profile_ran(profile, n), batch_compute_us(n, wall)))
    return {load: (statistics.median(b for b, _ in v), statistics.median(c for _, c in v))
            for load, v in sorted(by_load.items())}


# The smallest scale a compute line may have: a flatter line (the compute barely grew while the
# profile did) is no line, and a node gets one scale.
MIN_SCALE = 0.05


def growing_stretch():
    """GROWING_STRETCH=1: a compute line may have a negative offset (a stretch over the profile
    that grows with the rows), where the line keeps its lowest point at or above the profile."""
    return os.environ.get("GROWING_STRETCH") == "1"


def line_through(points, floor=0.0):
    """(scale, offset) of compute = offset + scale × profile through the (profile µs, compute
    µs) of the lowest and the highest concurrency, where the batches grew enough to tell the
    two apart (the profile 1.5x or more) and the line holds a fixed part (offset >= 0; with
    `growing_stretch`, a negative one where the lowest point's compute is at least its
    profile's); the scale not below `floor` (the offset then from the highest point). Else None."""
    if len(points) < 2:
        return None
    (x1, y1), (x2, y2) = points[0], points[-1]
    if x2 < 1.5 * x1:
        return None
    scale = (y2 - y1) / (x2 - x1)
    offset = y1 - scale * x1
    kept = offset >= 0 or (growing_stretch() and y1 >= x1)
    if not kept or scale < MIN_SCALE:
        return None
    if scale < floor:
        scale, offset = floor, max(y2 - floor * x2, 0.0)
    return scale, offset


def one_scale(xy):
    """(scale, 0) of a node without a line: its compute ÷ the profile at the lowest
    concurrency of its (profile µs, compute µs) points, concurrency 1. The open loads'
    batches stretch as concurrency 1's do, not as the capacity's: there 16-32 clients build
    and copy requests on the cores beside the batches, where an open load has one generator
    thread and concurrency 1 one client (`mlp`, 2026-12-07 11:10 UTC: its batches' CPU time
    over the profile 1.00-1.04 at concurrency 1, 0.92-1.06 at 30-70%, 1.14-1.16 at 32).
    ONE_SCALE_AT=capacity: at the highest concurrency (the model before 2026-12-07's
    twenty-eighth sitting); ONE_SCALE_AT=both: the mean of the two ratios."""
    at = "1" if os.environ.get("COMPUTE_OFFSET") == "0" else os.environ.get("ONE_SCALE_AT", "1")
    if at == "both":
        return statistics.fmean(y / x for x, y in (xy[0], xy[-1])), 0.0
    x, y = xy[-1 if at == "capacity" else 0]
    return y / x, 0.0


def measured_compute(d, p, less=None):
    """Per node (scale, offset): the line through its compute at concurrency 1 and at the
    capacity's (`line_through`), else its compute ÷ the profile over its batches at the capacity's
    concurrency (or at 1, where it ran only there) and no offset. COMPUTE_OFFSET=0: the
    concurrency-1 ratio and no offset for every node (the model before the offsets).
    `less(name, concurrency)`: µs taken off the node's compute there first (`idle_correct`),
    not below the profile's time (its warm runs back to back), and never raising a compute
    already below it (the profile ran slower than the capacity runs)."""
    profile = json.load(open(f"{d}/{p}.profile.json"))
    points = load_points(f"{d}/cap_{p}_*.json")
    out = {}
    for node in points[0]["nodes"]:
        name = node["name"]
        ran = capacity_compute(points, name, profile)
        if 1 not in ran:
            continue
        xy = []
        for load, (x, compute) in ran.items():
            xy.append((x, max(compute - less(name, load), min(compute, x)) if less else compute))
        line = line_through(xy) if os.environ.get("COMPUTE_OFFSET") != "0" else None
        out[name] = line or one_scale(xy)
    return out


def idle_extras(with_gaps, without):
    """Per (node, concurrency): the compute per batch µs the idle gaps add in the model, the
    simulation with `--idle-gaps` less the one without (bench points of both; at least 0)."""
    def by_load(points):
        return {(n["name"], q["load"]): batch_compute_us(n) for q in points if q["mode"] == "closed"
                for n in q["nodes"] if n["executions"] > 0}
    off = by_load(without)
    return {k: max(v - off[k], 0.0) for k, v in by_load(with_gaps).items() if k in off}


def idle_correct(d, p):
    """The compute terms fitted through the capacity runs' compute less what the model's idle
    gaps add at each concurrency (sim1_P.json with `--idle-gaps`, sim1_warm_P.json without),
    written to scales_P.json: the real compute at concurrency 1 holds its nodes' idle gaps,
    which the model adds itself with `--idle-gaps`. Returns the terms before and after."""
    with_gaps = json.load(open(f"{d}/sim1_{p}.json"))["points"]
    without = json.load(open(f"{d}/sim1_warm_{p}.json"))["points"]
    extras = idle_extras(with_gaps, without)
    if os.environ.get("RT_GAPS") == "1":
        profile = json.load(open(f"{d}/{p}.profile.json"))
        json.dump(realtime_gap_stretch(with_gaps, without, profile), open(f"{d}/realtime_gaps_{p}.json", "w"), indent=1)
    before = measured_compute(d, p)
    after = measured_compute(d, p, lambda name, load: extras.get((name, load), 0.0))
    json.dump(after, open(f"{d}/scales_{p}.json", "w"), indent=1)
    moved = {n: f"{before[n][0]:.2f}+{before[n][1]:.0f} -> {after[n][0]:.2f}+{after[n][1]:.0f}" for n in after}
    return f"{p}: compute terms less the idle gaps: {moved}"


def calibrate(d, p):
    """One calibration round (see the module's docs), written to scales_P.json; prints the
    largest change. At each concurrency the model ran (sim1_P.json), the node's simulated
    compute ÷ what its terms give over the simulated batches is the model's own stretch there;
    the real compute ÷ that stretch is the target, and the terms become the line through the
    targets (or the scale alone, times real ÷ simulated at concurrency 1, as measured)."""
    measured = measured_compute(d, p)
    kept = f"{d}/scales_{p}.json"
    terms = {n: tuple(v) for n, v in json.load(open(kept)).items()} if os.path.exists(kept) else dict(measured)
    profile = json.load(open(f"{d}/{p}.profile.json"))
    real_points = load_points(f"{d}/cap_{p}_*.json")
    sim_points = json.load(open(f"{d}/sim1_{p}.json"))["points"]
    worst = 1.0
    for node in real_points[0]["nodes"]:
        name = node["name"]
        if name not in terms:
            continue
        scale, offset = terms[name]
        # The simulated compute on the real record's clock (a simulation reports both).
        real = capacity_compute(real_points, name, profile)
        sim = capacity_compute(sim_points, name, profile, wall=not sampled(real_points))
        targets = []
        for load, (x, compute) in real.items():
            if load in sim:
                x_sim = sim[load][0]
                stretch = sim[load][1] / (offset + scale * x_sim)
                targets.append((x, compute / stretch))
        if not targets:
            continue
        floor = min(1.0, measured[name][0])
        line = line_through(targets, floor) if measured[name][1] != 0 else None
        if line is None:
            scale, _ = one_scale(targets)
            line = (max(scale, floor), 0.0)
        before = offset + scale * targets[0][0]
        after = line[1] + line[0] * targets[0][0]
        worst = max(worst, after / before, before / after)
        terms[name] = line
    json.dump(terms, open(kept, "w"), indent=1)
    return f"{p}: the concurrency-1 compute moved by up to {worst:.2f}x"


def base_terms(d, p):
    if os.environ.get("CPU_TERMS") == "0":
        return {}, compute_terms(d, p)
    tick = tick_cpu_us(d, p)
    send = send_cpu_us(d, p)
    client = client_send_us(d, p)
    real = [] if os.environ.get("CPU_FIT") == "capacity" else load_points(f"{d}/real_{p}_*.json")
    task = task_cpu_us(d, p)
    decision = decision_cpu_us(d, p)
    pts = [
        fit_cpu_terms.point(q, less_ticks=tick > 0, less_spins=os.environ.get("SPIN_CPU") != "0",
                            less_sends=(send if q["mode"] == "open" else client) > 0, task_us=task,
                            less_decisions=decision > 0)
        for q in real + load_points(f"{d}/cap_{p}_*.json")
        if q["load"] != 1 or q["mode"] == "open"
    ]
    pts = [x for x in pts if x is not None]
    request, batch = fit_cpu_terms.fit(pts) if len(pts) >= 2 else (0.0, 0.0)
    flags = {"--request-cpu-us": max(request, 0.0), "--batch-cpu-us": max(batch, 0.0)}
    flags = {**flags, "--task-cpu-us": task} if task > 0 else flags
    flags = {**flags, "--decision-cpu-us": decision} if decision > 0 else flags
    flags = {**flags, "--tick-cpu-us": tick} if tick > 0 else flags
    flags = {**flags, "--send-cpu-us": send} if send > 0 else flags
    by_sleep = send_wake_by_sleep_us(d, p) if send > 0 else None
    wake = send_wake_us(d, p) if send > 0 and by_sleep is None else 0.0
    flags = {**flags, "--send-wake-us": wake} if wake > 0 else flags
    flags = {**flags, "--send-wake-by-sleep": by_sleep} if by_sleep else flags
    flags = {**flags, "--client-send-us": client} if client > 0 else flags
    return flags, compute_terms(d, p)


def client_send_us(d, p):
    """With SEND_CPU=1: a closed-loop client's CPU per send, the median over the capacity runs'
    points above concurrency 1 that recorded it (`send_cpu_us` at closed-loop points; 0 where none
    did, as in runs before the bench measured it) with CLIENT_SEND=1 and SEND_CPU=1; else 0 (every
    client sends at once)."""
    if os.environ.get("SEND_CPU") != "1" or os.environ.get("CLIENT_SEND") != "1":
        return 0.0
    sends = [q["send_cpu_us"] for q in load_points(f"{d}/cap_{p}_*.json")
             if q["mode"] == "closed" and q["load"] > 1 and q.get("send_cpu_us", 0) > 0]
    return statistics.median(sends) if sends else 0.0


def send_cpu_us(d, p):
    """With SEND_CPU=1: the load generator's CPU per send, the least over the real open-loop
    points that recorded it (`send_cpu_us`: the densest load's, where the generator sleeps least
    between sends, so the send's own cost); else 0 (the model without the generator's thread)."""
    if os.environ.get("SEND_CPU") != "1":
        return 0.0
    sends = [q["send_cpu_us"] for q in load_points(f"{d}/real_{p}_*.json") if q.get("send_cpu_us", 0) > 0]
    return min(sends, default=0.0)


def send_wake_us(d, p):
    """With the generator's thread (SEND_CPU=1): its wake from a sleep until a send is due, the
    mean lag of the sends behind their schedule in P's light open-loop run (DIR/light_P.json, 10%
    of the capacity: the generator sleeps before nearly every send, and no send queues behind
    another); without that run (campaigns before it) or with SEND_WAKE=sleeps, the mean lateness
    of the timed sleeps in P's stall record (`sleep_lateness_us`, `baton stalls`); 0 where neither
    holds one, or with SEND_WAKE=0."""
    how = os.environ.get("SEND_WAKE", "")
    if how == "0":
        return 0.0
    light = [q["mean_send_lag_us"] for q in load_points(f"{d}/light_{p}.json") if "mean_send_lag_us" in q]
    if light and how != "sleeps":
        return statistics.median(light)
    record = f"{d}/{stall_record_name(p)}"
    if not os.path.exists(record):
        return 0.0
    late = [us for c in json.load(open(record)).get("cores", []) for us in c.get("sleep_lateness_us", [])]
    return statistics.mean(late) if late else 0.0


# The sends a sleep class of the light run must hold for its own mean lag (else a neighbour's).
MIN_CLASS_SENDS = 30


def send_wake_by_sleep_us(d, p):
    """With the generator's thread (SEND_CPU=1): its wake per class of the sleep's length
    (`--send-wake-by-sleep`), the mean lag of the light run's sends in each class of the sleep
    before them (`send_lags`, recorded by `baton bench` since 2026-12-06): a sleep shorter than
    the guest's idle poll ends with the timer's delay alone, a longer one pays the halted core's
    wake too. A class with fewer than MIN_CLASS_SENDS sends takes the nearest class's with
    enough, the longer first. None without such a run or with SEND_WAKE set (the one
    `--send-wake-us`: SEND_WAKE=light the light run's mean lag, as before the classes)."""
    if os.environ.get("SEND_WAKE", ""):
        return None
    light = load_points(f"{d}/light_{p}.json")
    classes = [c for q in light for c in q.get("send_lags", []) if c["slept"]]
    if not classes:
        return None
    bounds = [c["slept_below_us"] for c in classes]
    measured = {b: c["mean_lag_us"] for b, c in zip(bounds, classes) if c["sends"] >= MIN_CLASS_SENDS}
    if not measured:
        return None
    # The classes in order: below 10, 30, 100, 300 µs, and the rest (`None`).
    order = [10, 30, 100, 300, None]
    values = []
    for k, bound in enumerate(order):
        nearest = sorted((j for j in range(len(order)) if order[j] in measured),
                         key=lambda j: (abs(j - k), j < k))
        values.append(measured[order[nearest[0]]])
    return values


def task_cpu_us(d, p):
    """With TASK_CPU=1: each task's hand-on on its worker (routing its outputs on, the join
    tables, the next buffers), as the runtime times it at the end of each batch: over the
    capacity runs' concurrency-1 points (a batch is one task, the workers not contended), the
    nodes' hand-on time ÷ their tasks, the median over the runs. 0 without it (the hand-ons'
    CPU then stays in the fitted per-request term, charged at the request's arrival)."""
    if os.environ.get("TASK_CPU") != "1":
        return 0.0
    per_task = []
    for q in concurrency_one(d, p):
        tasks = sum(n["tasks"] for n in q["nodes"])
        hand_on = sum(n.get("mean_hand_on_us", 0.0) * n["executions"] for n in q["nodes"])
        if tasks > 0:
            per_task.append(hand_on / tasks)
    return statistics.median(per_task) if per_task else 0.0


def decision_cpu_us(d, p):
    """With DECISION_CPU=1: a worker's decision as its batch ends, µs a batch: over the capacity
    runs' points that recorded the decisions, their wall time a second ÷ the batches a second
    (every node's), the median. 0 without it (their CPU then stays in the fitted terms)."""
    if os.environ.get("DECISION_CPU") != "1":
        return 0.0
    per_batch = []
    for q in load_points(f"{d}/cap_{p}_*.json"):
        batches = sum(n["executions"] for n in q["nodes"])
        us_per_s = fit_cpu_terms.finish_decisions_us_per_s(q)
        if batches > 0 and us_per_s > 0 and q.get("seconds", 0) > 0:
            per_batch.append(us_per_s * q["seconds"] / batches)
    return statistics.median(per_batch) if per_batch else 0.0


def tick_cpu_us(d, p):
    """The scheduler thread's CPU per round, the median over the capacity runs that recorded it
    (0 where none did, or with TICK_CPU=0: the tick CPU stays in the fitted CPU terms)."""
    if os.environ.get("TICK_CPU") == "0":
        return 0.0
    rounds = [
        q["scheduler_ticks"]["cpu_us_per_round"]
        for q in load_points(f"{d}/cap_{p}_*.json")
        if "cpu_us_per_round" in (q.get("scheduler_ticks") or {})
    ]
    return statistics.median(rounds) if rounds else 0.0


def compute_flags(compute, code=""):
    """--compute-scale and --compute-offset (the nodes with one) of per-node (scale, offset)."""
    scales = ",".join(f"{n}={s:.2f}" for n, (s, _) in compute.items())
    offsets = ",".join(f"{n}={o:.0f}" for n, (_, o) in compute.items() if abs(o) >= 0.5)
    text = f" {code}--compute-scale {scales}{code}" if scales else ""
    return text + (f" {code}--compute-offset {offsets}{code}" if offsets else "")


def flag_value(v):
    """A term's value on the command line: µs to one decimal, a list of them joined by commas."""
    return ",".join(f"{max(x, 0.0):.1f}" for x in v) if isinstance(v, list) else f"{max(v, 0.0):.1f}"


def flags_text(flags, compute):
    # Every term is a non-negative number of µs: a rounding error below 0 is 0, not `-0.0`
    # (which the command line would read as an option).
    text = " ".join(f"{k} {flag_value(v)}" for k, v in flags.items())
    text += " --cpu-off-path" if "--request-cpu-us" in flags else ""
    return text + compute_flags(compute)


def queue_per_task(point):
    nodes = point["nodes"]
    return sum(n["mean_queue_us"] * n["tasks"] for n in nodes) / max(sum(n["tasks"] for n in nodes), 1)


def light_run(d, p):
    """The light open load's real points and its simulation with the base terms."""
    return load_points(f"{d}/light_{p}.json"), json.load(open(f"{d}/simlight_{p}.json"))["points"][0]


def one_run(d, p):
    """The capacity runs' concurrency-1 points and their simulation with the base terms."""
    return concurrency_one(d, p), next(q for q in json.load(open(f"{d}/sim1_{p}.json"))["points"] if q["load"] == 1)


def missing_and_wake(ones, sim, succ, entries):
    """(hops on a request's way, the mean latency the model leaves out, the wake term) of the
    real points `ones` against their simulation `sim` (see the module's docs)."""
    hop_count = statistics.median(hops_on_way(q, succ, entries) for q in ones)
    missing = max(statistics.median(q["latency"]["mean_us"] for q in ones) - sim["latency"]["mean_us"], 0.0)
    queued = statistics.median(queue_per_task(q) for q in ones) - queue_per_task(sim)
    return hop_count, missing, min(max(queued, 0.0), missing / hop_count)


# A recorded wake-up below this took a worker that was spinning for work (ns); a parked
# worker's wake-up through the OS takes several µs.
SPIN_WAKE_NS = 2000


def parked_share(points):
    """The share of the told workers in `points` (bench points with each node's recorded
    wake-ups) that were parked, not spinning: wake-ups from SPIN_WAKE_NS up. 1 without any."""
    total = parked = 0
    for q in points:
        for n in q["nodes"]:
            wakes = n.get("wakes") or {}
            for lower, _, count in wakes.get("free_buckets", []) + wakes.get("contended_buckets", []):
                total += count
                parked += count if lower >= SPIN_WAKE_NS else 0
    return parked / total if total else 1.0


def terms(d, p, config):
    flags, compute = base_terms(d, p)
    ones, sim = light_run(d, p) if os.environ.get("LIGHT_TERMS") == "1" else one_run(d, p)
    succ, entries = node_graph(config)
    hop_count, missing, wake = missing_and_wake(ones, sim, succ, entries)
    if os.environ.get("LIGHT_WAKE") != "0" and os.path.exists(f"{d}/simlight_{p}.json"):
        # The wake of a worker parked between the open loop's requests, from the light run.
        wake = missing_and_wake(*light_run(d, p), succ, entries)[2]
        if os.environ.get("SPIN_WAKES") == "1":
            # The model gives the wake term to parked workers alone (`--spin-wakes`).
            wake /= max(parked_share(light_run(d, p)[0]), 0.05)
    hops = node_hops(ones, sim, wake) if os.environ.get("NODE_HOPS") != "0" else {}
    # Each node's own hop is its share of what is missing; the one hop term takes the rest.
    own = sum(h * visits(ones, n) for n, h in hops.items())
    hop = max(missing - wake * hop_count - own, 0.0) / hop_count
    flags = {"--wake-us": wake, "--hop-us": hop, **flags}
    # The workers' hand-on as the light open load measured it (HAND_ON_AT=one: as concurrency 1's).
    light = f"{d}/light_{p}.json"
    hand_ons = load_points(light) if os.environ.get("HAND_ON_AT") != "one" and os.path.exists(light) else None
    split = node_hop_split(ones, hops, hand_ons)
    realtime = realtime_routes(ones, sim, split[1])
    json.dump({**flags, "--compute": compute, "--node-hops": split, "--realtime-route-us": realtime},
              open(f"{d}/terms_{p}.json", "w"), indent=1)
    text = flags_text(flags, compute) + node_hop_flags(split, realtime=realtime)
    text += wake_delay_flags(d, p)
    if os.environ.get("BATCH_TIMES") == "1":
        # The runtime's recorded batch times in place of the compute scales (kept for nodes without any).
        text += " --batch-times " + ",".join(capacity_files(d, p))
    text += record_flags(d, p) + sparse_flags(d, p)
    # Latency as the real runs counted it (LATENCY_FROM_SCHEDULE=1 in scripts/fidelity.sh), and
    # the generator's policy and nice as they ran it.
    text += " --latency-from-schedule" if os.environ.get("LATENCY_FROM_SCHEDULE") else ""
    return text + generator_flags()


def generator_flags():
    """The generator thread's policy and nice as the real runs ran it (GENERATOR_POLICY, default
    normal; GENERATOR_NICE, default 0)."""
    return (" --generator-policy " + os.environ.get("GENERATOR_POLICY", "normal")
            + " --generator-nice " + os.environ.get("GENERATOR_NICE", "0"))


# Real-time batches a node must have run in the capacity runs for a real-time scale.
MIN_REALTIME_BATCHES = 20


def realtime_sums(points, profile):
    """Per (node, concurrency) of closed-loop `points`: (real-time batches, their compute µs,
    the profile's centres at their sizes µs, `profile_centre`), from
    `nodes[].realtime_batch_times` (each bucket at its midpoint)."""
    sums = {}
    for q in points:
        if q["mode"] != "closed":
            continue
        for n in q["nodes"]:
            for t in n.get("realtime_batch_times") or []:
                for lo, hi, count in t["buckets"]:
                    s = sums.setdefault((n["name"], q["load"]), [0, 0.0, 0.0])
                    s[0] += count
                    s[1] += count * bucket_middle_ns(lo, hi) / 1000.0
                    s[2] += count * profile_centre(profile, n["name"], t["batch_size"])
    return sums


def realtime_scales(d, p):
    """Per node that ran real-time batches in the capacity runs (MIN_REALTIME_BATCHES at
    least): their compute ÷ the profile's centres at their sizes (`realtime_sums`), over both
    concurrencies. With RT_GAPS=1, once `idle_correct` has run: the compute less what the
    model's idle gaps add to a real-time batch at each concurrency (`realtime_gap_stretch`,
    realtime_gaps_P.json), the model then adding the gaps itself (`--realtime-idle-gaps`).
    REALTIME_SCALE=0: none (real-time batches at the profile's times)."""
    if os.environ.get("REALTIME_SCALE") == "0":
        return {}
    profile = json.load(open(f"{d}/{p}.profile.json"))
    kept = f"{d}/realtime_gaps_{p}.json"
    gaps = json.load(open(kept)) if os.environ.get("RT_GAPS") == "1" and os.path.exists(kept) else {}
    totals = {}
    for (name, load), (count, ran, profiled) in realtime_sums(load_points(f"{d}/cap_{p}_*.json"), profile).items():
        if profiled <= 0:
            continue
        gap = gaps.get(name, {}).get(str(load), 0.0)
        t = totals.setdefault(name, [0, 0.0, 0.0])
        t[0] += count
        # Never below the profile's time (nor below the compute, where it ran faster).
        t[1] += max(ran - gap * profiled, min(ran, profiled))
        t[2] += profiled
    return {name: ran / profiled for name, (count, ran, profiled) in totals.items() if count >= MIN_REALTIME_BATCHES}


def realtime_gap_stretch(with_gaps, without, profile):
    """Per node, per concurrency: what the model's idle gaps add to its real-time batches, in
    units of the profile's time over the batches that ran (the stretch over the profile with
    `--idle-gaps --realtime-idle-gaps` less the one without; at least 0)."""
    stretch = lambda points: {k: ran / profiled for k, (_, ran, profiled) in realtime_sums(points, profile).items()
                              if profiled > 0}  # noqa: E731
    off = stretch(without)
    out = {}
    for (name, load), on in stretch(with_gaps).items():
        if (name, load) in off:
            out.setdefault(name, {})[str(load)] = max(on - off[(name, load)], 0.0)
    return out


def realtime_flags(d, p):
    """--realtime-scale of the nodes with one (see `realtime_scales`)."""
    scales = realtime_scales(d, p)
    return " --realtime-scale " + ",".join(f"{n}={f:.2f}" for n, f in scales.items()) if scales else ""


def tick_flags(d, p):
    """With TICK_DELAYS=1: the runtime's recorded tick lateness for every simulation of P."""
    return " --tick-delays " + ",".join(capacity_files(d, p)) if os.environ.get("TICK_DELAYS") == "1" else ""


def visits(ones, name):
    """Tasks of node `name` per request at concurrency 1 (median over the runs)."""
    return statistics.median(
        sum(n["tasks"] for n in q["nodes"] if n["name"] == name) / max(q["requests"], 1) for q in ones
    )


def node_hops(ones, sim, wake):
    """Unless NODE_HOPS=0: per node that ran, what its own time per task at concurrency 1 in the
    real runs (queue, compute and the worker's hand-on; median over the runs) exceeds the model's
    at concurrency 1 (queue and compute) and the wake term: the node's own hop, given as its
    --hand-on-us (a delay before its outputs go on). At concurrency 1 a batch is one task."""
    model = {n["name"]: n for n in sim["nodes"] if n["tasks"] > 0}
    hops = {}
    for name, m in model.items():
        real = [
            n["mean_queue_us"] + n["mean_compute_us"] + n.get("mean_hand_on_us", 0.0)
            for q in ones
            for n in q["nodes"]
            if n["name"] == name and n["tasks"] > 0
        ]
        if real:
            hops[name] = max(statistics.median(real) - m["mean_queue_us"] - m["mean_compute_us"] - wake, 0.0)
    return hops


def node_hop_split(ones, hops, open_points=None):
    """A node's own hop as the simulator takes it: its worker's measured hand-on (which holds
    the worker, `--hand-on-us`; at most the hop) and the rest as its route (`--route-us`, which
    does not), each {node: µs}; the hand-on measured in `ones`, or in the open-loop points
    `open_points` where given. Then what the hand-on in `ones` (closed loop, concurrency 1)
    exceeds the open load's is in neither: there the node that answers a request wakes the
    client waiting on it, whose thread then takes the worker's core in the middle of its
    hand-on, and an open loop's generator waits on no answer (`collab_early`'s `text` 31-39
    µs at concurrency 1 against 6-7 in every open load, 2026-12-07)."""
    def measured(points, n):
        got = [x["mean_hand_on_us"] for q in points for x in q["nodes"]
               if x["name"] == n and "mean_hand_on_us" in x and x.get("tasks", 0) > 0]
        return statistics.median(got) if got else 0.0

    hand_ons, routes = {}, {}
    for n, h in hops.items():
        at_one = min(h, measured(ones, n))
        hand_ons[n] = at_one if open_points is None else min(h, measured(open_points, n))
        routes[n] = h - max(at_one, hand_ons[n])
    return hand_ons, routes


def realtime_routes(ones, sim, routes):
    """Unless RT_ROUTE=0: per node that ran real-time batches at concurrency 1 (the real runs'
    `nodes[].realtime_batch_times`), its route less its compute per batch beyond the model's there
    (real mean compute less simulated, median over the runs; not below 0): that part of the node's
    hop at concurrency 1 was its normal-class batches' stretch, which a real-time batch, at its own
    `--realtime-scale`, does not have. {node: µs}; `--realtime-route-us`."""
    if os.environ.get("RT_ROUTE") == "0":
        return {}
    model = {n["name"]: n["mean_compute_us"] for n in sim["nodes"] if n["tasks"] > 0}
    out = {}
    for name, route in routes.items():
        ran = [n for q in ones for n in q["nodes"] if n["name"] == name and n["tasks"] > 0]
        if name not in model or not any(n.get("realtime_batch_times") for n in ran):
            continue
        excess = max(statistics.median(n["mean_compute_us"] for n in ran) - model[name], 0.0)
        out[name] = max(route - excess, 0.0)
    return out


def node_hop_flags(split, code="", realtime=None):
    """`--hand-on-us` and `--route-us` of a `node_hop_split` (none without node hops), and
    `--realtime-route-us` of `realtime_routes` where any."""
    hand_ons, routes = split
    if not hand_ons:
        return ""

    def items(values):
        return ",".join(f"{n}={v:.1f}" for n, v in sorted(values.items()))

    text = f" {code}--hand-on-us {items(hand_ons)}{code} {code}--route-us {items(routes)}{code}"
    return text + (f" {code}--realtime-route-us {items(realtime)}{code}" if realtime else "")


def hand_on_flags(d, p):
    """With HAND_ON=1: --hand-on-us of every node that ran in the capacity runs at concurrency 1,
    the median of its worker's time handing a batch's outputs on (`nodes[].mean_hand_on_us`), for
    every simulation of P: the concurrency-1 one too, so the hop term leaves it out."""
    if os.environ.get("HAND_ON") != "1" or os.environ.get("NODE_HOPS") != "0":
        return ""
    per_node = {}
    for q in concurrency_one(d, p):
        for n in q["nodes"]:
            if n["executions"] > 0 and "mean_hand_on_us" in n:
                per_node.setdefault(n["name"], []).append(n["mean_hand_on_us"])
    items = [f"{n}={statistics.median(v):.1f}" for n, v in sorted(per_node.items())]
    return " --hand-on-us " + ",".join(items) if items else ""


def stall_record_name(p):
    duty = os.environ.get("STALLS_DUTY", "1")
    return f"{p}.stalls.json" if duty == "1" else f"{p}.stalls-d{duty}.json"


def stall_records(d):
    """The campaign's stall records (`baton stalls`), one per pipeline: {pipeline: record}."""
    suffix = stall_record_name("")
    records = {}
    for f in sorted(glob.glob(f"{d}/{stall_record_name('*')}")):
        record = json.load(open(f))
        if record.get("kind") == "baton-core-stalls":
            records[os.path.basename(f)[:-len(suffix)]] = record
    return records


def stalled_share(record):
    """The share of a stall record's time its cores stood stalled (the mean over its cores)."""
    cores = record["cores"]
    return sum(sum(c["stalls_us"]) for c in cores) / 1e6 / record["duration_s"] / max(len(cores), 1)


# A pipeline's stall record stalled more than this many times the campaign's median share is
# a loud moment of the machine: its simulations take the campaign's other records pooled.
LOUD_RECORD = 2.0


def pooled_stalls(d, leave_out=None):
    """The campaign's stall records in one (DIR/stalls-pooled[-dD].json, or, leaving pipeline
    `leave_out`'s record out, DIR/stalls-pooled-without-P[-dD].json): per core their stalls
    one after another, their durations added. A stall of several ms comes a few times a
    minute, so one 5-s record sees it or not by chance; the campaign's records together give
    its rate from the whole campaign."""
    duty = os.environ.get("STALLS_DUTY", "1")
    name = "stalls-pooled" + (f"-without-{leave_out}" if leave_out else "")
    out = f"{d}/{name}.json" if duty == "1" else f"{d}/{name}-d{duty}.json"
    # Every simulation of the campaign asks for the pool: it is written again only where a
    # record is newer than it.
    sources = glob.glob(f"{d}/{stall_record_name('*')}")
    if os.path.exists(out) and sources and os.path.getmtime(out) >= max(map(os.path.getmtime, sources)):
        return out
    records = [r for p, r in stall_records(d).items() if p != leave_out]
    if not records:
        return None
    pooled = dict(records[0], duration_s=sum(r["duration_s"] for r in records), cores=[])
    for core in records[0]["cores"]:
        same = [c for r in records for c in r["cores"] if c["core"] == core["core"]]
        pooled_core = {"core": core["core"], "stalls_us": [s for c in same for s in c["stalls_us"]]}
        for clock in ("spun_us", "spun_cpu_us"):
            if all(clock in c for c in same):
                pooled_core[clock] = sum(c[clock] for c in same)
        if all(len(c.get("stalls_cpu_us", [])) == len(c["stalls_us"]) for c in same):
            pooled_core["stalls_cpu_us"] = [s for c in same for s in c.get("stalls_cpu_us", [])]
        pooled["cores"].append(pooled_core)
    with open(out, "w") as f:
        json.dump(pooled, f)
    return out


def loud_record(d, p):
    """Whether P's stall record caught a loud moment: its stalled share above LOUD_RECORD × the
    median share of the campaign's records (three records at least)."""
    shares = {q: stalled_share(r) for q, r in stall_records(d).items()}
    if p not in shares or len(shares) < 3:
        return False
    return shares[p] > LOUD_RECORD * statistics.median(shares.values())


def stall_flags(d, p):
    """The machine's core stalls the campaign recorded (`baton stalls`), for every simulation of
    P: the concurrency-1 one too, so the wake and hop terms leave them out (STALLS=0, or
    measurements taken before the records: none). The campaign's records pooled: the long
    stalls, which the records' CPU clocks leave out, come a few times a minute, so one 5-s
    record sees them or not by chance. STALLS_POOLED=0: P's own record (the one beside its
    profile), where it did not catch a loud moment (`loud_record`; else the others pooled,
    STALLS_LOUD=keep: its own). The simulator draws the stalls' parts the records' CPU clocks
    did not count (`baton simulate --core-stalls`); STALLS_COUNTED=keep: every stall
    (`--core-stalls-whole`). STALLS_IDLE=1: a stall holds the idle threads on its core too
    (`--stalls-hold-idle`)."""
    if os.environ.get("STALLS", "1") != "1" or not os.path.exists(f"{d}/{stall_record_name(p)}"):
        return ""
    if os.environ.get("STALLS_POOLED", "1") == "1":
        record = pooled_stalls(d)
    elif os.environ.get("STALLS_LOUD") != "keep" and loud_record(d, p):
        record = pooled_stalls(d, leave_out=p)
    else:
        record = f"{d}/{stall_record_name(p)}"
    whole = " --core-stalls-whole" if os.environ.get("STALLS_COUNTED") == "keep" else ""
    idle = " --stalls-hold-idle" if os.environ.get("STALLS_IDLE") == "1" else ""
    return f" --core-stalls {record}{whole}{idle}"


def sparse_stretches(d, p):
    """With SPARSE=1: per node that ran in the light open load (light_P.json), its compute
    per batch there (`batch_compute_us`) ÷ the model's for its batches (`profile_ran` ×
    the node's scale + its offset): how much slower a batch runs when the cores halt between
    sparse arrivals. With the light run's rate and the capacity: {node: factor}, rate, capacity."""
    if os.environ.get("SPARSE") != "1" or not os.path.exists(f"{d}/light_{p}.json"):
        return {}, 0.0, 0.0
    profile = json.load(open(f"{d}/{p}.profile.json"))
    compute = compute_terms(d, p)
    light = load_points(f"{d}/light_{p}.json")
    factors = {}
    for n in light[0]["nodes"]:
        if n["executions"] == 0 or n["name"] not in compute:
            continue
        scale, offset = compute[n["name"]]
        model = profile_ran(profile, n) * scale + offset
        if model > 0:
            factors[n["name"]] = batch_compute_us(n) / model
    return factors, light[0]["load"], capacity(d, p)


def sparse_flags(d, p):
    """--sparse-stretch with its rates (see `sparse_stretches`; none without SPARSE=1)."""
    factors, rate, dense = sparse_stretches(d, p)
    if not factors or dense <= rate:
        return ""
    items = ",".join(f"{n}={f:.2f}" for n, f in sorted(factors.items()))
    return f" --sparse-stretch {items} --sparse-rate {rate:.1f} --dense-rate {dense:.1f}"


def slice_flags(d, p):
    """The OS's time slice (`--slice-us`): the median of the `slice_us` the campaign's stall
    records measured (two threads spinning on one core, `baton stalls`); none where no record
    holds one, as before 2026-12-08, or with SLICE=0 (or STALLS=0)."""
    if os.environ.get("SLICE", "1") != "1" or os.environ.get("STALLS", "1") != "1":
        return ""
    slices = [r["slice_us"] for r in stall_records(d).values() if r.get("slice_us")]
    return f" --slice-us {statistics.median(slices):.0f}" if slices else ""


def record_flags(d, p):
    """The terms every simulation of P takes from the measurements as they are, the
    concurrency-1 one included: real-time scales and wake-up, tick lateness, core stalls, the
    OS's slice, hand-on."""
    return (realtime_flags(d, p) + realtime_wake_flags(d, p) + tick_flags(d, p) + stall_flags(d, p)
            + slice_flags(d, p) + hand_on_flags(d, p))


def bucket_mean_us(buckets):
    """The mean of `[lower ns, upper ns, count]` buckets at their middles, µs (the last bucket,
    unbounded above, an eighth of its lower bound wide as the others are); None without counts."""
    total = sum(c for _, _, c in buckets)
    if not total:
        return None
    return sum(bucket_middle_ns(lo, hi) * c for lo, hi, c in buckets) / total / 1000.0


def bucket_middle_ns(lo, hi):
    """A log bucket's middle, ns (the last bucket, unbounded above, an eighth of its lower bound wide)."""
    return (lo + (hi if hi < 2**63 else lo + lo / 8)) / 2


def realtime_wake_us(d, p):
    """The real-time workers' mean wake-up in the light open load (every node's wake-ups at the
    real-time policy, `nodes[].wakes.realtime_buckets`), µs; None where it recorded none."""
    if not os.path.exists(f"{d}/light_{p}.json"):
        return None
    buckets = [b for q in load_points(f"{d}/light_{p}.json") for n in q["nodes"]
               for b in (n.get("wakes") or {}).get("realtime_buckets", [])]
    return bucket_mean_us(buckets)


def realtime_wake_flags(d, p):
    """`--realtime-wake-us` from the light open load, where its workers woke at the real-time
    policy (RT_WAKE=0: none, those workers wake after --wake-us as the others). RT_WAKE=light
    draws them from that run's record instead (`--realtime-wake-delays`), RT_WAKE=all from it
    and the capacity runs'."""
    how = os.environ.get("RT_WAKE", "")
    us = None if how == "0" else realtime_wake_us(d, p)
    if us is None:
        return ""
    files = {"light": [f"{d}/light_{p}.json"], "all": [f"{d}/light_{p}.json"] + capacity_files(d, p)}.get(how, [])
    return f" --realtime-wake-us {us:.1f}" + (" --realtime-wake-delays " + ",".join(files) if files else "")


def wake_delay_files(d, p):
    """The runs whose recorded wake-ups the load simulations draw in place of the one wake term
    (kept for nodes without any): WAKE_DELAYS=1 the capacity runs', WAKE_DELAYS=light the light
    open load's (its workers park between requests, as at the open loads); else none."""
    how = os.environ.get("WAKE_DELAYS", "")
    if how == "1":
        return capacity_files(d, p)
    if how == "light" and os.path.exists(f"{d}/light_{p}.json"):
        return [f"{d}/light_{p}.json"]
    return []


def wake_delay_flags(d, p):
    files = wake_delay_files(d, p)
    return " --wake-delays " + ",".join(files) if files else ""


def capacity_files(d, p):
    return sorted(glob.glob(f"{d}/cap_{p}_*.json"))


def real_medians(d, p):
    by_load = {}
    for q in load_points(f"{d}/real_{p}_*.json"):
        by_load.setdefault(q["load"], []).append(q)
    return {load: figures_median(qs) for load, qs in sorted(by_load.items())}


def figures(q):
    lat, prio = q["latency"], q.get("priority_latency") or {}
    out = {"throughput": q["throughput_rps"], "mean": lat["mean_us"], "p50": lat["p50_us"], "p99": lat["p99_us"]}
    if prio.get("count", 0) > 0:
        out.update({k: prio[field] for k, (field, _) in PRIORITY.items()})
    return out


def figures_median(qs):
    fs = [figures(q) for q in qs]
    keys = [k for k in list(BARS) + list(PRIORITY) if all(k in f for f in fs)]
    out = {k: statistics.median(f[k] for f in fs) for k in keys}
    out["errors"] = "/".join(str(q["errors"]) for q in qs)
    out["range"] = {k: (min(f[k] for f in fs), max(f[k] for f in fs)) for k in keys}
    return out


def within(ratio, key):
    return abs(ratio - 1.0) <= bar_of(key)


def bar_of(key):
    return BARS[key] if key in BARS else PRIORITY[key][1]


def verdict(sim, median, lo, hi, key):
    """How one simulated figure stands against the real runs of its point: "within" its bar
    around their median; else "noise" where the real runs themselves spread past the bar and
    the figure lies within their min-max (the runs cannot tell it from the median); else "miss"."""
    if median and within(sim / median, key):
        return "within"
    return "noise" if lo <= sim <= hi and not resolves(median, lo, hi, key) else "miss"


def resolves(median, lo, hi, key):
    """Whether the real runs of a point can judge a figure at its bar: their min-max (for five
    runs, about a 94% interval of their median) lies within the bar around their median."""
    bar = bar_of(key)
    return median * (1 - bar) <= lo and hi <= median * (1 + bar)


def ratio_cell(s, real, key):
    r = s[key] / real[key] if real[key] else float("inf")
    ok = within(r, key)
    return ok, (f"{r:.2f}" if ok else f"**{r:.2f}**")


def table(d, pipelines):
    lines, met, total, prio_met, prio_total, in_range = [], 0, 0, 0, 0, 0
    verdicts, resolved, resolved_met = {"within": 0, "noise": 0, "miss": 0}, 0, 0
    for p in pipelines.split(","):
        if not os.path.exists(f"{d}/sim_{p}.json"):
            continue
        sim_points = json.load(open(f"{d}/sim_{p}.json"))["points"]
        sim = {q["load"]: figures(q) for q in sim_points}
        sim_errors = {q["load"]: q["errors"] for q in sim_points}
        real_points = real_medians(d, p)
        prio = [k for k in PRIORITY if all(k in f for f in list(sim.values()) + list(real_points.values()))]
        flags = json.load(open(f"{d}/terms_{p}.json"))
        compute = flags.pop("--compute", {})
        split = flags.pop("--node-hops", ({}, {}))
        realtime = flags.pop("--realtime-route-us", {})
        sparse = sparse_flags(d, p).strip()
        lines += [f"\n`{p}` (capacity {capacity(d, p):.0f} requests/s; "
                  + " ".join(f"`{k} {flag_value(v)}`" for k, v in flags.items())
                  + compute_flags(compute, "`")
                  + node_hop_flags(split, "`", realtime)
                  + (f" `{sparse}`" if sparse else "")
                  + ")\n",
                  "| load | | req/s | mean µs | p50 µs | p99 µs | " + "".join(f"{k} µs | " for k in prio) + "errors |",
                  "|---|---|---|---|---|---|" + "---|" * len(prio) + "---|"]
        for load, real in real_points.items():
            s = sim[load]
            keys = list(BARS) + prio
            lines.append(f"| {load:.0f}/s | real | " + " | ".join(f"{real[k]:.0f}" for k in keys) + f" | {real['errors']} |")
            lines.append("| | real min-max | " + " | ".join(f"{lo:.0f}-{hi:.0f}" for lo, hi in (real["range"][k] for k in keys)) + " | |")
            lines.append("| | simulated | " + " | ".join(f"{s[k]:.0f}" for k in keys) + f" | {sim_errors[load]} |")
            in_range += sum(real["range"][k][0] <= s[k] <= real["range"][k][1] for k in BARS)
            for k in BARS:
                lo, hi = real["range"][k]
                v = verdict(s[k], real[k], lo, hi, k)
                verdicts[v] += 1
                if resolves(real[k], lo, hi, k):
                    resolved, resolved_met = resolved + 1, resolved_met + (v == "within")
            cells = []
            for k in keys:
                ok, cell = ratio_cell(s, real, k)
                if k in BARS:
                    met, total = met + ok, total + 1
                else:
                    prio_met, prio_total = prio_met + ok, prio_total + 1
                cells.append(cell)
            lines.append("| | sim ÷ real | " + " | ".join(cells) + " | |")
    extra = open(f"{d}/sim_flags.txt").read().strip() if os.path.exists(f"{d}/sim_flags.txt") else ""
    if os.environ.get("BATCH_TIMES") == "1":
        lines.append("\nEvery load simulation above stretched its batches as the capacity runs recorded "
                     "(`--batch-times cap_P_*.json`, BATCH_TIMES=1) in place of the compute scales.")
    if os.environ.get("TICK_DELAYS") == "1":
        lines.append("\nEvery simulation above drew its scheduler ticks' lateness from the capacity runs' records "
                     "(`--tick-delays cap_P_*.json`, TICK_DELAYS=1).")
    if os.environ.get("HAND_ON") == "1":
        lines.append("\nEvery simulation above gave each node's hand-on the capacity runs' time at concurrency 1 "
                     "(`--hand-on-us`, HAND_ON=1).")
    if os.environ.get("STALLS", "1") == "1" and glob.glob(f"{d}/*.stalls*.json"):
        duty = os.environ.get("STALLS_DUTY", "1")
        lines.append("\nEvery simulation above took cores away as the machine's stalls recorded beside each "
                     f"profile at duty {duty} say, where one was recorded (`--core-stalls`; STALLS=0: none).")
    if os.environ.get("WAKE_DELAYS") == "1":
        lines.append("\nEvery load simulation above drew its workers' wake-ups from the capacity runs' records "
                     "(`--wake-delays cap_P_*.json`, WAKE_DELAYS=1) in place of `--wake-us`.")
    if os.environ.get("WAKE_DELAYS") == "light":
        lines.append("\nEvery load simulation above drew its workers' wake-ups from the light open load's record "
                     "(`--wake-delays light_P.json`, WAKE_DELAYS=light) in place of `--wake-us`.")
    if extra:
        lines.append(f"\nEvery simulation above also ran with `{extra}` (SIM_FLAGS).")
    lines.append(f"\n{met} of {total} figures within the bars (bold: outside; throughput 5%, mean and p50 15%, p99 30%).")
    lines.append(f"{in_range} of {total} simulated figures within the real runs' own range (min-max over the runs).")
    lines.append(f"The real runs can judge {resolved} of {total} figures (their min-max within the bar around their "
                 f"median); the model is within the bars at {resolved_met} of those.")
    lines.append(f"Outside the bars: {verdicts['noise']} within the real runs' min-max where it spreads past the bar "
                 f"(the runs cannot tell them from their median), {verdicts['miss']} misses.")
    if prio_total:
        lines.append(f"Priority class: {prio_met} of {prio_total} within the p50 and p99 bars.")
    return "\n".join(lines)


QUEUE_FIGURES = (("wait p99", lambda n: n["queue"]["p99_us"]), ("picked p99", lambda n: n["queue"]["picked_p99_us"]),
                 ("wake p99", lambda n: n["wakes"]["p99_us"]), ("hand-on p99", lambda n: n.get("hand_on_p99_us", 0.0)))


def node_queues(points):
    """Per node of one load's points (the real runs, or one simulation): the median over the
    points of each queue figure (`QUEUE_FIGURES`), µs; points without the queue record give none."""
    by_node = {}
    for q in points:
        for n in q["nodes"]:
            if "queue" in n:
                by_node.setdefault(n["name"], []).append(n)
    return {name: [statistics.median(f(n) for n in ns) for _, f in QUEUE_FIGURES] for name, ns in by_node.items()}


def queues(d, pipelines):
    """Where each node's tasks waited, real (median of the runs) against the model, per load:
    the whole wait's p99, its part before the node was picked, the wake-up's and the hand-on's."""
    head = " | ".join(f"real {k} | model {k}" for k, _ in QUEUE_FIGURES)
    lines = []
    for p in pipelines.split(","):
        if not os.path.exists(f"{d}/sim_{p}.json"):
            continue
        by_load = {}
        for q in load_points(f"{d}/real_{p}_*.json"):
            by_load.setdefault(q["load"], []).append(q)
        sim = {q["load"]: node_queues([q]) for q in json.load(open(f"{d}/sim_{p}.json"))["points"]}
        rows = []
        for load, qs in sorted(by_load.items()):
            real, model = node_queues(qs), sim.get(load, {})
            for name in sorted(set(real) & set(model)):
                cells = " | ".join(f"{r:.0f} | {m:.0f}" for r, m in zip(real[name], model[name]))
                rows.append(f"| {load:.0f}/s | {name} | {cells} |")
        if rows:
            lines += [f"\n`{p}`, µs\n", f"| load | node | {head} |", "|---|---|" + "---|---|" * len(QUEUE_FIGURES)]
            lines += rows
    return "\n".join(lines) if lines else "No real run holds the queue record (measured before 2026-12-06 09:40 UTC)."


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "rates":
        print(rates(*args))
    elif cmd == "base":
        print(flags_text(*base_terms(*args)) + record_flags(*args))
    elif cmd == "base-open":
        # The base terms for an open-loop simulation, counted as the real open-loop runs count.
        text = flags_text(*base_terms(*args)) + record_flags(*args) + sparse_flags(*args)
        text += " --latency-from-schedule" if os.environ.get("LATENCY_FROM_SCHEDULE") else ""
        print(text + generator_flags())
    elif cmd == "terms":
        print(terms(*args))
    elif cmd == "calibrate":
        print(calibrate(*args))
    elif cmd == "idle-correct":
        print(idle_correct(*args))
    elif cmd == "table":
        print(table(*args))
    elif cmd == "queues":
        print(queues(*args))
    else:
        raise SystemExit(__doc__)
