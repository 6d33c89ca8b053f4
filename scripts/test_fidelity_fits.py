#!/usr/bin/env python3
"""Unit tests of the fits behind scripts/fidelity.sh's terms: the runtime CPU line
(fit_cpu_terms.fit, fit_cpu_terms.point), a node's compute line (fidelity_terms.line_through, against
the profile over the batch sizes that ran, fidelity_terms.profile_ran) and
its real-time scale (fidelity_terms.realtime_scales); the real runs' repeatability beside the
model (fidelity_ceiling); where threads waited for a core in a
scheduling trace (sched_waits); and the rule against greedy over seeds (seed_ratios).

    python3 scripts/test_fidelity_fits.py      (cargo test -p baton-bench --test scripts runs it)
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity_ceiling  # noqa: E402
import fidelity_terms  # noqa: E402
import fit_cpu_terms  # noqa: E402
import sched_waits  # noqa: E402
import seed_ratios  # noqa: E402


class CpuLine(unittest.TestCase):
    def test_points_on_a_line_give_its_intercept_and_slope(self):
        request, batch = fit_cpu_terms.fit([(0.5, 20.0), (1.0, 30.0), (2.0, 50.0)])
        self.assertAlmostEqual(request, 10.0)
        self.assertAlmostEqual(batch, 20.0)

    def test_points_within_a_quarter_of_their_mean_batches_give_the_mean_per_request(self):
        # 5.5-5.84 batches a request: a slope through them would be noise (here 197 µs a batch).
        pts = [(5.84, 101.0), (5.73, 68.0), (5.5, 31.0), (5.67, 61.0), (5.62, 55.0)]
        request, batch = fit_cpu_terms.fit(pts)
        self.assertAlmostEqual(request, sum(y for _, y in pts) / len(pts))
        self.assertEqual(batch, 0.0)

    def test_a_negative_intercept_gives_the_line_through_the_origin(self):
        request, batch = fit_cpu_terms.fit([(1.0, 5.0), (2.0, 30.0)])
        self.assertEqual(request, 0.0)
        self.assertAlmostEqual(batch, (5.0 + 60.0) / 5.0)

    def test_a_negative_slope_gives_the_mean(self):
        self.assertEqual(fit_cpu_terms.fit([(1.0, 30.0), (2.0, 10.0)]), (20.0, 0.0))

    def test_the_scheduler_threads_cpu_per_request_is_taken_out_only_when_asked(self):
        # 2000 rounds/s of 10 µs at 1000 requests/s: 20 µs of each request's 50.
        q = {
            "throughput_rps": 1000.0,
            "cpu": {"batches_per_request": 1.5, "runtime_us_per_request": 50.0},
            "scheduler_ticks": {"rounds_per_s": 2000.0, "cpu_us_per_round": 10.0},
        }
        self.assertEqual(fit_cpu_terms.point(q), (1.5, 50.0))
        self.assertEqual(fit_cpu_terms.point(q, less_ticks=True), (1.5, 30.0))
        # A point without the ticks' record (an older bench) keeps its reading.
        self.assertEqual(fit_cpu_terms.point({**q, "scheduler_ticks": None}, less_ticks=True), (1.5, 50.0))

    def test_the_idle_workers_spinning_is_taken_out_only_when_asked(self):
        q = {"throughput_rps": 1000.0, "cpu": {"batches_per_request": 2.0, "runtime_us_per_request": 50.0}}
        spun = {**q, "cpu": {**q["cpu"], "spin_us_per_request": 35.0}}
        self.assertEqual(fit_cpu_terms.point(spun), (2.0, 50.0))
        self.assertEqual(fit_cpu_terms.point(spun, less_spins=True), (2.0, 15.0))
        # A point without the spins' record (an older bench) keeps its reading.
        self.assertEqual(fit_cpu_terms.point(q, less_spins=True), (2.0, 50.0))

    def test_the_loads_cpu_per_send_is_taken_out_only_when_asked(self):
        q = {"mode": "open", "send_cpu_us": 12.0, "cpu": {"batches_per_request": 2.0, "runtime_us_per_request": 50.0}}
        self.assertEqual(fit_cpu_terms.point(q), (2.0, 50.0))
        self.assertEqual(fit_cpu_terms.point(q, less_sends=True), (2.0, 38.0))
        # A closed-loop point's clients' sends, likewise; one without the record keeps its reading.
        self.assertEqual(fit_cpu_terms.point({**q, "mode": "closed"}, less_sends=True), (2.0, 38.0))
        closed = {"mode": "closed", "cpu": q["cpu"]}
        self.assertEqual(fit_cpu_terms.point(closed, less_sends=True), (2.0, 50.0))


    def test_a_tasks_hand_on_is_taken_out_per_task(self):
        q = {"cpu": {"batches_per_request": 2.0, "runtime_us_per_request": 50.0, "tasks_per_request": 4.0}}
        self.assertEqual(fit_cpu_terms.point(q), (2.0, 50.0))
        self.assertEqual(fit_cpu_terms.point(q, task_us=2.5), (2.0, 40.0))


    def test_the_workers_decisions_after_batches_are_taken_out_only_when_asked(self):
        # 1000 decisions a second of 2 µs at 500 requests/s: 4 µs of each request's 50.
        finishes = {"per_s": 1000.0, "mean_us": 2.0}
        q = {
            "throughput_rps": 500.0,
            "cpu": {"batches_per_request": 2.0, "runtime_us_per_request": 50.0},
            "scheduler_ticks": {"decisions": {"on_finishes": finishes}},
        }
        self.assertEqual(fit_cpu_terms.point(q), (2.0, 50.0))
        self.assertEqual(fit_cpu_terms.point(q, less_decisions=True), (2.0, 46.0))
        # A point without the record (an older bench) keeps its reading.
        self.assertEqual(fit_cpu_terms.point({**q, "scheduler_ticks": {}}, less_decisions=True), (2.0, 50.0))


class DecisionCpu(unittest.TestCase):
    def test_a_batchs_decision_is_the_recorded_decision_time_over_the_batches_median_over_the_points(self):
        def point(per_s, mean_us):
            nodes = [{"executions": 1000}, {"executions": 1000}]
            decisions = {"on_finishes": {"per_s": per_s, "mean_us": mean_us}}
            return {"seconds": 2.0, "nodes": nodes, "scheduler_ticks": {"decisions": decisions}}

        with tempfile.TemporaryDirectory() as d:
            # 2000 batches in 2 s; decisions of 1000/s × 1 µs, × 2 µs, × 3 µs: 1, 2, 3 µs a batch.
            with open(f"{d}/cap_p_1.json", "w") as f:
                json.dump({"points": [point(1000.0, 1.0), point(1000.0, 2.0)]}, f)
            with open(f"{d}/cap_p_2.json", "w") as f:
                json.dump({"points": [point(1000.0, 3.0), {**point(0.0, 0.0), "scheduler_ticks": None}]}, f)
            self.assertEqual(fidelity_terms.decision_cpu_us(d, "p"), 0.0, "not asked")
            os.environ["DECISION_CPU"] = "1"
            try:
                self.assertAlmostEqual(fidelity_terms.decision_cpu_us(d, "p"), 2.0)
            finally:
                del os.environ["DECISION_CPU"]


class TaskCpu(unittest.TestCase):
    def test_a_tasks_hand_on_is_the_concurrency_1_hand_on_time_over_the_tasks_median_over_the_runs(self):
        def run(hand_on_us):
            # Two nodes, 100 batches of one task each; the open and loaded points do not count.
            nodes = [{"tasks": 100, "executions": 100, "mean_hand_on_us": h} for h in hand_on_us]
            one = {"mode": "closed", "load": 1, "nodes": nodes}
            loaded = {"mode": "closed", "load": 32, "nodes": [{**n, "mean_hand_on_us": 99.0} for n in nodes]}
            return {"points": [one, loaded]}

        with tempfile.TemporaryDirectory() as d:
            for k, hand_on in enumerate(([0.4, 0.6], [0.5, 0.7], [2.0, 2.0]), 1):
                with open(f"{d}/cap_p_{k}.json", "w") as f:
                    json.dump(run(hand_on), f)
            self.assertEqual(fidelity_terms.task_cpu_us(d, "p"), 0.0, "not asked")
            os.environ["TASK_CPU"] = "1"
            try:
                self.assertAlmostEqual(fidelity_terms.task_cpu_us(d, "p"), 0.6, msg="the median of 0.5, 0.6, 2.0")
                self.assertEqual(fidelity_terms.task_cpu_us(d, "q"), 0.0, "no runs of q")
            finally:
                del os.environ["TASK_CPU"]


class ComputeLine(unittest.TestCase):
    def test_a_stretch_falling_with_the_rows_gives_a_scale_and_a_fixed_part(self):
        # 154 µs profiled at 4 rows ran 510; 1235 µs at 32 rows ran 2300.
        scale, offset = fidelity_terms.line_through([(154.0, 510.0), (1235.0, 2300.0)])
        self.assertAlmostEqual(offset + scale * 154.0, 510.0)
        self.assertAlmostEqual(offset + scale * 1235.0, 2300.0)
        self.assertGreater(offset, 0.0)

    def test_a_compute_that_did_not_grow_with_the_profile_gives_no_line(self):
        # 200 µs profiled ran 560; 800 µs profiled ran 555: a flat (here falling) line.
        self.assertIsNone(fidelity_terms.line_through([(200.0, 560.0), (800.0, 555.0)]))

    def test_batches_that_barely_grew_or_a_stretch_growing_with_the_rows_give_no_line(self):
        self.assertIsNone(fidelity_terms.line_through([(2.0, 3.0), (2.9, 10.0)]), "profile under 1.5x")
        self.assertIsNone(fidelity_terms.line_through([(83.0, 79.0), (440.0, 600.0)]), "offset below 0")
        self.assertIsNone(fidelity_terms.line_through([(83.0, 79.0)]), "one point")

    def test_with_growing_stretch_a_stretch_growing_with_the_rows_gives_a_line_below_the_origin(self):
        os.environ["GROWING_STRETCH"] = "1"
        try:
            # mlp: 40 µs profiled at 1 row ran 1.14 x; 270 µs at 16 rows ran 1.34 x.
            scale, offset = fidelity_terms.line_through([(40.0, 45.6), (270.0, 361.8)])
            self.assertAlmostEqual(offset + scale * 40.0, 45.6)
            self.assertAlmostEqual(offset + scale * 270.0, 361.8)
            self.assertLess(offset, 0.0)
            self.assertIsNone(fidelity_terms.line_through([(83.0, 79.0), (440.0, 600.0)]),
                              "the lowest point ran below its profile: no line")
            self.assertEqual(fidelity_terms.compute_flags({"mlp": (scale, offset)}),
                             f" --compute-scale mlp={scale:.2f} --compute-offset mlp={offset:.0f}")
        finally:
            del os.environ["GROWING_STRETCH"]

    def test_a_scale_below_the_floor_is_raised_and_the_offset_taken_from_the_highest_point(self):
        scale, offset = fidelity_terms.line_through([(100.0, 500.0), (400.0, 600.0)], floor=1.0)
        self.assertEqual(scale, 1.0)
        self.assertAlmostEqual(offset, 200.0)

    def test_a_node_without_a_line_takes_the_first_ratio_or_as_asked_the_capacitys_or_their_mean(self):
        xy = [(100.0, 120.0), (200.0, 300.0)]
        self.assertEqual(fidelity_terms.one_scale(xy), (1.2, 0.0))
        for at, scale in (("capacity", 1.5), ("both", 1.35), ("1", 1.2)):
            os.environ["ONE_SCALE_AT"] = at
            try:
                self.assertAlmostEqual(fidelity_terms.one_scale(xy)[0], scale, msg=at)
                os.environ["COMPUTE_OFFSET"] = "0"
                self.assertEqual(fidelity_terms.one_scale(xy), (1.2, 0.0), "COMPUTE_OFFSET=0: the first")
            finally:
                del os.environ["ONE_SCALE_AT"]
                os.environ.pop("COMPUTE_OFFSET", None)


class ProfileRan(unittest.TestCase):
    profile = {"nodes": {"mlp": {"batches": [{"batch": 1, "median_us": 177.0}, {"batch": 4, "median_us": 178.0},
                                             {"batch": 8, "median_us": 226.0}, {"batch": 32, "median_us": 491.0}]}}}

    def test_the_profile_over_the_batches_that_ran_is_the_mean_over_their_sizes(self):
        # Half the batches of 1 row, half of 8: 4.5 rows a batch on average.
        node = {"name": "mlp", "mean_batch": 4.5,
                "batch_times": [{"batch_size": 1, "buckets": [[170000, 180000, 30], [180000, 190000, 20]]},
                                {"batch_size": 8, "buckets": [[220000, 240000, 50]]}]}
        self.assertAlmostEqual(fidelity_terms.profile_ran(self.profile, node), (177.0 + 226.0) / 2)
        at_mean = 178.0 + (226.0 - 178.0) * 0.5 / 4
        self.assertLess(at_mean, (177.0 + 226.0) / 2, "the profile at the mean batch lies below")
        os.environ["PROFILE_AT_MEAN"] = "1"
        try:
            self.assertAlmostEqual(fidelity_terms.profile_ran(self.profile, node), at_mean)
        finally:
            del os.environ["PROFILE_AT_MEAN"]

    def test_a_record_without_sizes_takes_the_profile_at_its_mean_batch(self):
        node = {"name": "mlp", "mean_batch": 6.0, "batch_times": []}
        self.assertAlmostEqual(fidelity_terms.profile_ran(self.profile, node), 202.0)

    def test_a_profile_with_its_timed_runs_is_held_at_their_mean_which_the_draws_keep(self):
        # One slow run in five: the mean 120, the median 100; 2 rows between 1 and 4.
        profile = {"nodes": {"a": {"batches": [
            {"batch": 1, "median_us": 100.0, "samples_us": [100.0, 100.0, 100.0, 100.0, 200.0]},
            {"batch": 4, "median_us": 130.0, "samples_us": [130.0, 130.0, 130.0, 130.0, 130.0]}]}}}
        node = {"name": "a", "mean_batch": 1.0,
                "batch_times": [{"batch_size": 1, "buckets": [[100000, 110000, 3]]},
                                {"batch_size": 2, "buckets": [[120000, 130000, 1]]}]}
        at_two = 120.0 + (130.0 - 120.0) / 3
        self.assertAlmostEqual(fidelity_terms.profile_ran(profile, node), (3 * 120.0 + at_two) / 4)
        os.environ["PROFILE_CENTRE"] = "median"
        try:
            self.assertAlmostEqual(fidelity_terms.profile_ran(profile, node), (3 * 100.0 + 110.0) / 4)
        finally:
            del os.environ["PROFILE_CENTRE"]


class RealtimeScale(unittest.TestCase):
    def write(self, d, realtime):
        profile = {"nodes": {"speech": {"batches": [{"batch": 1, "median_us": 100.0}, {"batch": 2, "median_us": 160.0}]},
                             "mlp": {"batches": [{"batch": 1, "median_us": 70.0}]}}}
        json.dump(profile, open(f"{d}/p.profile.json", "w"))
        nodes = [{"name": "speech", "realtime_batch_times": realtime}, {"name": "mlp", "realtime_batch_times": []}]
        json.dump({"points": [{"mode": "closed", "load": 1, "nodes": nodes}]}, open(f"{d}/cap_p_1.json", "w"))

    def test_real_time_batches_compute_over_the_profile_at_their_sizes(self):
        with tempfile.TemporaryDirectory() as d:
            # 30 one-row batches in [70, 90) µs and 10 two-row ones in [120, 136) µs.
            self.write(d, [{"batch_size": 1, "buckets": [[70000, 90000, 30]]},
                           {"batch_size": 2, "buckets": [[120000, 136000, 10]]}])
            scales = fidelity_terms.realtime_scales(d, "p")
            self.assertEqual(list(scales), ["speech"], "a node without real-time batches gets no scale")
            self.assertAlmostEqual(scales["speech"], (30 * 80 + 10 * 128) / (30 * 100 + 10 * 160))
            self.assertEqual(fidelity_terms.realtime_flags(d, "p"), " --realtime-scale speech=0.80")

    def test_too_few_real_time_batches_give_no_scale(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, [{"batch_size": 1, "buckets": [[70000, 90000, 19]]}])
            self.assertEqual(fidelity_terms.realtime_scales(d, "p"), {})

    def test_with_rt_gaps_the_scale_leaves_out_what_the_models_gaps_add_down_to_the_profile(self):
        profile = {"nodes": {"speech": {"batches": [{"batch": 1, "median_us": 100.0}]}}}

        def point(load, mean_us, count=40):
            times = [{"batch_size": 1, "buckets": [[mean_us * 1000 - 1000, mean_us * 1000 + 1000, count]]}]
            return {"mode": "closed", "load": load, "nodes": [{"name": "speech", "realtime_batch_times": times}]}

        # The model's gaps add 0.5 of the profile at concurrency 1 and none at 16.
        gaps = fidelity_terms.realtime_gap_stretch([point(1, 250.0), point(16, 150.0)],
                                                   [point(1, 200.0), point(16, 150.0)], profile)
        self.assertEqual(gaps, {"speech": {"1": 0.5, "16": 0.0}})
        with tempfile.TemporaryDirectory() as d:
            self.write(d, [{"batch_size": 1, "buckets": [[299000, 301000, 30]]}])
            json.dump({"speech": {"1": 0.5}}, open(f"{d}/realtime_gaps_p.json", "w"))
            os.environ.pop("RT_GAPS", None)
            self.assertAlmostEqual(fidelity_terms.realtime_scales(d, "p")["speech"], 3.0, msg="without RT_GAPS")
            os.environ["RT_GAPS"] = "1"
            try:
                self.assertAlmostEqual(fidelity_terms.realtime_scales(d, "p")["speech"], 2.5)
                json.dump({"speech": {"1": 2.5}}, open(f"{d}/realtime_gaps_p.json", "w"))
                self.assertAlmostEqual(fidelity_terms.realtime_scales(d, "p")["speech"], 1.0, msg="not below the profile")
            finally:
                os.environ.pop("RT_GAPS")



class LoudStallRecord(unittest.TestCase):
    def test_a_record_stalled_over_twice_the_campaigns_median_gives_way_to_the_others_pooled(self):
        with tempfile.TemporaryDirectory() as d:
            # Over 1 s on two cores: 1%, 1.2%, 1.1% and 5% of the time stalled.
            for p, us in (("a", 10000.0), ("b", 12000.0), ("c", 11000.0), ("loud", 50000.0)):
                cores = [{"core": 0, "stalls_us": [us]}, {"core": 1, "stalls_us": [us]}]
                json.dump({"kind": "baton-core-stalls", "duration_s": 1.0, "cores": cores},
                          open(f"{d}/{p}.stalls.json", "w"))
            self.assertAlmostEqual(fidelity_terms.stalled_share(json.load(open(f"{d}/loud.stalls.json"))), 0.05)
            self.assertEqual([p for p in "a b c loud".split() if fidelity_terms.loud_record(d, p)], ["loud"])
            os.environ["STALLS_POOLED"] = "0"
            self.addCleanup(os.environ.pop, "STALLS_POOLED")
            record = lambda p: fidelity_terms.stall_flags(d, p).split()[1]
            self.assertEqual(record("a"), f"{d}/a.stalls.json")
            self.assertEqual(record("loud"), f"{d}/stalls-pooled-without-loud.json")
            pooled = json.load(open(record("loud")))
            self.assertEqual(pooled["duration_s"], 3.0)
            self.assertEqual(sorted(pooled["cores"][0]["stalls_us"]), [10000.0, 11000.0, 12000.0])
            os.environ["STALLS_LOUD"] = "keep"
            try:
                self.assertEqual(record("loud"), f"{d}/loud.stalls.json")
            finally:
                del os.environ["STALLS_LOUD"]

    def test_with_fewer_than_three_records_none_is_loud(self):
        with tempfile.TemporaryDirectory() as d:
            for p, us in (("a", 10000.0), ("loud", 50000.0)):
                json.dump({"kind": "baton-core-stalls", "duration_s": 1.0, "cores": [{"core": 0, "stalls_us": [us]}]},
                          open(f"{d}/{p}.stalls.json", "w"))
            self.assertFalse(fidelity_terms.loud_record(d, "loud"))


class SendWake(unittest.TestCase):
    def test_the_generators_wake_is_the_mean_timed_sleep_lateness_of_the_stall_record(self):
        with tempfile.TemporaryDirectory() as d:
            cores = [{"core": 0, "stalls_us": [], "sleep_lateness_us": [20.0, 30.0]},
                     {"core": 1, "stalls_us": [], "sleep_lateness_us": [40.0]}]
            json.dump({"kind": "baton-core-stalls", "cores": cores}, open(f"{d}/p.stalls.json", "w"))
            self.assertEqual(fidelity_terms.send_wake_us(d, "p"), 30.0)
            os.environ["SEND_WAKE"] = "0"
            try:
                self.assertEqual(fidelity_terms.send_wake_us(d, "p"), 0.0)
            finally:
                del os.environ["SEND_WAKE"]
            self.assertEqual(fidelity_terms.send_wake_us(d, "q"), 0.0, "no record")
            json.dump({"kind": "baton-core-stalls", "cores": [{"core": 0, "stalls_us": []}]},
                      open(f"{d}/q.stalls.json", "w"))
            self.assertEqual(fidelity_terms.send_wake_us(d, "q"), 0.0, "a record made before the sleeps")

    def test_a_light_open_loop_run_gives_the_generators_wake_as_its_sends_mean_lag(self):
        with tempfile.TemporaryDirectory() as d:
            cores = [{"core": 0, "stalls_us": [], "sleep_lateness_us": [20.0, 100.0]}]
            json.dump({"kind": "baton-core-stalls", "cores": cores}, open(f"{d}/p.stalls.json", "w"))
            json.dump({"points": [{"mean_send_lag_us": 41.0}]}, open(f"{d}/light_p.json", "w"))
            self.assertEqual(fidelity_terms.send_wake_us(d, "p"), 41.0)
            for how, wake in (("sleeps", 60.0), ("0", 0.0)):
                os.environ["SEND_WAKE"] = how
                try:
                    self.assertEqual(fidelity_terms.send_wake_us(d, "p"), wake, how)
                finally:
                    del os.environ["SEND_WAKE"]

    def test_the_light_runs_sends_by_their_sleep_give_the_wake_per_class_and_thin_classes_a_neighbours(self):
        def lag(below, sends, mean):
            return {"slept": True, "slept_below_us": below, "sends": sends, "mean_lag_us": mean}

        with tempfile.TemporaryDirectory() as d:
            # No sends below 10 µs measured, too few from 100 to 300 µs: the first takes the
            # class above it, the thin one the longer class beside it.
            classes = [{"slept": False, "slept_below_us": None, "sends": 500, "mean_lag_us": 3.0},
                       lag(30, 40, 14.0), lag(100, 200, 21.0), lag(300, 5, 90.0), lag(None, 900, 35.0)]
            json.dump({"points": [{"mean_send_lag_us": 30.0, "send_lags": classes}]}, open(f"{d}/light_p.json", "w"))
            self.assertEqual(fidelity_terms.send_wake_by_sleep_us(d, "p"), [14.0, 14.0, 21.0, 35.0, 35.0])
            os.environ["SEND_WAKE"] = "sleeps"
            try:
                self.assertIsNone(fidelity_terms.send_wake_by_sleep_us(d, "p"), "the one term asked for")
            finally:
                del os.environ["SEND_WAKE"]
            json.dump({"points": [{"mean_send_lag_us": 30.0}]}, open(f"{d}/light_q.json", "w"))
            self.assertIsNone(fidelity_terms.send_wake_by_sleep_us(d, "q"), "a run made before the classes")
            self.assertEqual(fidelity_terms.flag_value([14.0, -0.01, 3.25]), "14.0,0.0,3.2")


def node(name, tasks, queue, compute, hand_on=None):
    n = {"name": name, "tasks": tasks, "mean_queue_us": queue, "mean_compute_us": compute}
    return n if hand_on is None else {**n, "mean_hand_on_us": hand_on}


class WakeDelayFiles(unittest.TestCase):
    def test_the_wake_ups_come_from_the_capacity_runs_or_the_light_load_as_asked(self):
        with tempfile.TemporaryDirectory() as d:
            for name in ("cap_p_1.json", "cap_p_2.json", "light_p.json"):
                with open(f"{d}/{name}", "w") as f:
                    f.write("{}")
            self.assertEqual(fidelity_terms.wake_delay_files(d, "p"), [], "not asked")
            for how, files in (("1", [f"{d}/cap_p_1.json", f"{d}/cap_p_2.json"]), ("light", [f"{d}/light_p.json"])):
                os.environ["WAKE_DELAYS"] = how
                try:
                    self.assertEqual(fidelity_terms.wake_delay_files(d, "p"), files, how)
                    self.assertEqual(fidelity_terms.wake_delay_flags(d, "p"), " --wake-delays " + ",".join(files))
                    self.assertEqual(fidelity_terms.wake_delay_files(d, "q"), [], "no runs of q")
                finally:
                    del os.environ["WAKE_DELAYS"]


class NodeHops(unittest.TestCase):
    def test_a_nodes_hop_is_its_real_time_per_task_past_the_models_and_the_wake(self):
        runs = [{"requests": 100, "nodes": [node("a", 100, 10.0, 100.0, 5.0), node("b", 50, 0.0, 20.0, 1.0)]},
                {"requests": 100, "nodes": [node("a", 100, 30.0, 120.0, 5.0), node("b", 50, 0.0, 20.0, 1.0)]}]
        model = {"nodes": [node("a", 1000, 0.0, 80.0), node("b", 500, 2.0, 40.0), node("c", 0, 0.0, 0.0)]}
        hops = fidelity_terms.node_hops(runs, model, 5.0)
        # a: median of 115 and 155 is 135, less the model's 80 and the wake's 5.
        self.assertEqual(hops["a"], 50.0)
        self.assertEqual(hops["b"], 0.0, "a node faster in the real runs than in the model has none")
        self.assertNotIn("c", hops, "a node that did not run has none")
        self.assertEqual(fidelity_terms.visits(runs, "b"), 0.5)


class NodeHopSplit(unittest.TestCase):
    def test_the_hand_on_comes_from_the_open_load_and_concurrency_ones_excess_is_in_neither_term(self):
        ones = [{"nodes": [node("last", 10, 0.0, 0.0, 33.0), node("mid", 10, 0.0, 0.0, 2.0)]}]
        light = [{"nodes": [node("last", 10, 0.0, 0.0, 7.0), node("mid", 10, 0.0, 0.0, 3.0)]}]
        hops = {"last": 40.0, "mid": 10.0}
        # Concurrency 1's hand-on: held 33 µs, the other 7 routed.
        self.assertEqual(fidelity_terms.node_hop_split(ones, hops), ({"last": 33.0, "mid": 2.0}, {"last": 7.0, "mid": 8.0}))
        # The open load's: held 7 µs; its 26 µs less than concurrency 1's are in neither; the
        # route keeps what the hop exceeds the larger hand-on by.
        self.assertEqual(fidelity_terms.node_hop_split(ones, hops, light), ({"last": 7.0, "mid": 3.0}, {"last": 7.0, "mid": 7.0}))
        # Neither hand-on above the hop.
        self.assertEqual(fidelity_terms.node_hop_split(ones, {"last": 5.0, "mid": 10.0}, light)[0]["last"], 5.0)


class Slice(unittest.TestCase):
    def test_the_slice_is_the_median_the_records_measured_and_none_without_them(self):
        with tempfile.TemporaryDirectory() as d:
            for p, slice_us in (("a", 4010.0), ("b", 3990.0), ("c", 4100.0), ("old", None)):
                record = {"kind": "baton-core-stalls", "duration_s": 1.0, "cores": [{"core": 0, "stalls_us": []}]}
                if slice_us:
                    record["slice_us"] = slice_us
                json.dump(record, open(f"{d}/{p}.stalls.json", "w"))
            self.assertEqual(fidelity_terms.slice_flags(d, "a"), " --slice-us 4010")
            for env in ("SLICE", "STALLS"):
                os.environ[env] = "0"
                try:
                    self.assertEqual(fidelity_terms.slice_flags(d, "a"), "")
                finally:
                    del os.environ[env]
            os.remove(f"{d}/a.stalls.json")
            os.remove(f"{d}/b.stalls.json")
            os.remove(f"{d}/c.stalls.json")
            self.assertEqual(fidelity_terms.slice_flags(d, "old"), "", "records made before the slice")


class StallClocks(unittest.TestCase):
    def test_the_flags_and_the_pool_of_the_records_and_their_cpu_clocks(self):
        with tempfile.TemporaryDirectory() as d:
            for p in ("a", "b", "old"):
                core = {"core": 0, "stalls_us": [10.0]}
                if p != "old":
                    core.update(spun_us=1e6, spun_cpu_us=1e6, stalls_cpu_us=[4.0 if p == "a" else 6.0])
                json.dump({"kind": "baton-core-stalls", "duration_s": 1.0, "cores": [core]},
                          open(f"{d}/{p}.stalls.json", "w"))
            self.assertEqual(fidelity_terms.stall_flags(d, "a"), f" --core-stalls {d}/stalls-pooled.json",
                             "the campaign's records pooled")
            os.environ["STALLS_POOLED"] = "0"
            try:
                self.assertEqual(fidelity_terms.stall_flags(d, "a"), f" --core-stalls {d}/a.stalls.json")
                for env, flag in (("STALLS_COUNTED", "keep"), ("STALLS_IDLE", "1")):
                    os.environ[env] = flag
                    try:
                        option = " --core-stalls-whole" if env == "STALLS_COUNTED" else " --stalls-hold-idle"
                        self.assertEqual(fidelity_terms.stall_flags(d, "a"), f" --core-stalls {d}/a.stalls.json{option}")
                    finally:
                        del os.environ[env]
            finally:
                del os.environ["STALLS_POOLED"]
            pooled = json.load(open(fidelity_terms.pooled_stalls(d, leave_out="old")))["cores"][0]
            self.assertEqual((pooled["spun_us"], pooled["spun_cpu_us"]), (2e6, 2e6))
            self.assertEqual(pooled["stalls_cpu_us"], [4.0, 6.0], "each stall's reading, in the stalls' order")
            whole = json.load(open(fidelity_terms.pooled_stalls(d)))["cores"][0]
            self.assertNotIn("spun_us", whole, "a record without the clock: the pool has none")
            self.assertNotIn("stalls_cpu_us", whole, "a record without the stalls' readings: the pool has none")


class IdleExtras(unittest.TestCase):
    def test_the_idle_gaps_add_what_the_simulation_with_them_computes_past_the_one_without(self):
        def point(load, compute):
            return {"mode": "closed", "load": load,
                    "nodes": [{"name": "a", "executions": 10, "mean_compute_us": compute, "cpu_per_wall": 1.0},
                              {"name": "b", "executions": 0, "mean_compute_us": 0.0}]}
        extras = fidelity_terms.idle_extras([point(1, 300.0), point(32, 95.0)], [point(1, 200.0), point(32, 100.0)])
        self.assertEqual(extras, {("a", 1): 100.0, ("a", 32): 0.0})

    def test_the_extras_come_off_the_real_compute_down_to_the_profile_and_never_raise_it(self):
        def point(load, batch, compute):
            return {"mode": "closed", "load": load,
                    "nodes": [{"name": "a", "executions": 10, "mean_batch": batch, "mean_compute_us": compute,
                               "cpu_per_wall": 1.0}]}
        profile = {"nodes": {"a": {"batches": [{"batch": 1, "median_us": 80.0}, {"batch": 16, "median_us": 500.0}]}}}
        with tempfile.TemporaryDirectory() as d:
            json.dump(profile, open(f"{d}/p.profile.json", "w"))
            # The capacity runs ran faster than the profile (73 and 422 µs against 80 and 500).
            json.dump({"points": [point(1, 1.0, 73.0), point(32, 16.0, 422.0)]}, open(f"{d}/cap_p_1.json", "w"))
            untouched = fidelity_terms.measured_compute(d, "p")
            less = fidelity_terms.measured_compute(d, "p", lambda name, load: 8.0)
            self.assertEqual(less, untouched, "a compute below the profile's stays as measured")
            json.dump({"points": [point(1, 1.0, 100.0), point(32, 16.0, 450.0)]}, open(f"{d}/cap_p_1.json", "w"))
            scale, offset = fidelity_terms.measured_compute(d, "p", lambda name, load: 30.0 if load == 1 else 0.0)["a"]
            self.assertAlmostEqual(offset + scale * 80.0, 80.0, msg="100 less 30, not below the profile's 80")
            self.assertAlmostEqual(offset + scale * 500.0, 450.0)


class ParkedShare(unittest.TestCase):
    def test_wake_ups_from_two_microseconds_up_were_parked_workers_and_the_rest_spinning_ones(self):
        node = {"wakes": {"free_buckets": [[500, 600, 30], [12000, 13000, 50]],
                          "contended_buckets": [[2000, 2200, 20]]}}
        self.assertAlmostEqual(fidelity_terms.parked_share([{"nodes": [node]}]), 0.7)
        self.assertEqual(fidelity_terms.parked_share([{"nodes": [{"name": "a"}]}]), 1.0)


class RealtimeRoutes(unittest.TestCase):
    def test_a_real_time_batch_takes_its_nodes_route_less_the_normal_batches_compute_excess(self):
        rt = {"realtime_batch_times": [{"batch_size": 1, "buckets": [[100, 200, 5]]}]}
        runs = [{"nodes": [{**node("a", 10, 0.0, 150.0), **rt}, node("b", 10, 0.0, 50.0)]},
                {"nodes": [{**node("a", 10, 0.0, 170.0), **rt}, node("b", 10, 0.0, 50.0)]}]
        model = {"nodes": [node("a", 100, 0.0, 100.0), node("b", 100, 0.0, 40.0)]}
        # a: its real compute (median 160) is 60 past the model's, 60 of its 80 µs route.
        routes = fidelity_terms.realtime_routes(runs, model, {"a": 80.0, "b": 30.0})
        self.assertEqual(routes, {"a": 20.0}, "b ran no real-time batch: it keeps its one route")
        self.assertEqual(fidelity_terms.realtime_routes(runs, model, {"a": 50.0}), {"a": 0.0}, "never below 0")
        os.environ["RT_ROUTE"] = "0"
        try:
            self.assertEqual(fidelity_terms.realtime_routes(runs, model, {"a": 80.0}), {})
        finally:
            del os.environ["RT_ROUTE"]


class Queues(unittest.TestCase):
    def test_each_nodes_queue_figures_are_the_median_over_the_runs_beside_the_models(self):
        def point(load, wait, picked, wake, hand_on=None):
            n = {"name": "a", "queue": {"p99_us": wait, "picked_p99_us": picked}, "wakes": {"p99_us": wake}}
            if hand_on is not None:
                n["hand_on_p99_us"] = hand_on
            return {"load": load, "nodes": [n, {"name": "old", "wakes": {"p99_us": 1.0}}]}

        with tempfile.TemporaryDirectory() as d:
            for k, (wait, picked) in enumerate([(100.0, 80.0), (300.0, 250.0), (200.0, 150.0)], 1):
                json.dump({"points": [point(500.0, wait, picked, 20.0, 7.0)]}, open(f"{d}/real_p_{k}.json", "w"))
            json.dump({"points": [point(500.0, 90.0, 60.0, 14.0)]}, open(f"{d}/sim_p.json", "w"))
            text = fidelity_terms.queues(d, "p")
        # The median of 100, 300, 200 and of 80, 250, 150; the model's hand-on absent: 0. A node
        # without the record (measured before it) has no row.
        self.assertIn("| 500/s | a | 200 | 90 | 150 | 60 | 20 | 14 | 7 | 0 |", text)
        self.assertNotIn("| old |", text)


class Verdicts(unittest.TestCase):
    def test_a_figure_is_within_its_bar_noise_where_the_runs_spread_past_it_else_a_miss(self):
        # p99's bar is 30%: 1250 of a median of 1000 is within it wherever the runs lie.
        self.assertEqual(fidelity_terms.verdict(1250.0, 1000.0, 990.0, 1010.0, "p99"), "within")
        # 2000 is outside the bar: within runs that spread to 3000 it is noise, past them a miss.
        self.assertEqual(fidelity_terms.verdict(2000.0, 1000.0, 600.0, 3000.0, "p99"), "noise")
        self.assertEqual(fidelity_terms.verdict(4000.0, 1000.0, 600.0, 3000.0, "p99"), "miss")
        # Runs that stay within the bar tell every figure outside it apart from their median.
        self.assertEqual(fidelity_terms.verdict(1400.0, 1000.0, 800.0, 1290.0, "p99"), "miss")

    def test_the_runs_judge_a_figure_only_where_their_min_max_lies_within_its_bar(self):
        self.assertTrue(fidelity_terms.resolves(1000.0, 990.0, 1010.0, "mean"))
        self.assertFalse(fidelity_terms.resolves(1000.0, 990.0, 1200.0, "mean"), "15% bar")
        self.assertTrue(fidelity_terms.resolves(1000.0, 960.0, 1040.0, "throughput"))
        self.assertFalse(fidelity_terms.resolves(1000.0, 940.0, 1040.0, "throughput"), "5% bar")


class RealtimeWake(unittest.TestCase):
    def test_the_real_time_wake_is_the_light_runs_real_time_wake_ups_mean_at_the_buckets_middles(self):
        def node(name, realtime):
            wakes = {"free_buckets": [[1000, 1100, 50]], "contended_buckets": []}
            if realtime is not None:
                wakes["realtime_buckets"] = realtime
            return {"name": name, "wakes": wakes}

        with tempfile.TemporaryDirectory() as d:
            points = [{"nodes": [node("a", [[2000, 2200, 3]]), node("b", [[10000, 11000, 1]])]}]
            json.dump({"points": points}, open(f"{d}/light_p.json", "w"))
            # (2100 x 3 + 10500) / 4 ns; the free wake-ups count nowhere here.
            self.assertAlmostEqual(fidelity_terms.realtime_wake_us(d, "p"), 4.2)
            self.assertEqual(fidelity_terms.realtime_wake_flags(d, "p"), " --realtime-wake-us 4.2")
            json.dump({"points": [{"nodes": [node("a", None)]}]}, open(f"{d}/light_q.json", "w"))
            self.assertEqual(fidelity_terms.realtime_wake_flags(d, "q"), "", "a run from before the class")
            self.assertEqual(fidelity_terms.realtime_wake_flags(d, "none"), "", "no light run")
        # The last bucket, unbounded above, is an eighth of its lower bound wide.
        self.assertAlmostEqual(fidelity_terms.bucket_mean_us([[8000, 2**64 - 1, 2]]), 8.5)


class Ceiling(unittest.TestCase):
    def test_real_against_real_and_the_model_count_every_split_of_the_rounds_into_two_sets(self):
        def point(p99):
            return {"load": 100.0, "throughput_rps": 100.0, "errors": 0,
                    "latency": {"mean_us": 50.0, "p50_us": 40.0, "p99_us": p99}}

        with tempfile.TemporaryDirectory() as d:
            for k, p99 in enumerate([100.0, 100.0, 200.0, 200.0], 1):
                json.dump({"points": [point(p99)]}, open(f"{d}/real_p_{k}.json", "w"))
            json.dump({"points": [point(150.0)]}, open(f"{d}/sim_p.json", "w"))
            real, model, half, n = fidelity_ceiling.ceiling(d, "p", 2)
        self.assertEqual((half, n), (2, 4))
        # Of the six ordered splits into two pairs, {1,2} against {3,4} and back differ twice (p99
        # 100 against 200); the four mixed ones both hold 150.
        self.assertAlmostEqual(real["p99"][0], 4 / 6)
        self.assertEqual(real["p99"][1:], (0, 1, 1))
        # The model's 150 lies 1.5x the {1,2} pair's median, within 30% of the others' (150, 200).
        self.assertAlmostEqual(model["p99"][0], 5 / 6)
        self.assertEqual(real["throughput"][:3], (1, 1, 1))
        self.assertNotIn("prio p99", real, "no priority class in these runs")

    def test_too_few_rounds_for_two_sets_is_an_error_naming_the_pipeline(self):
        with tempfile.TemporaryDirectory() as d:
            json.dump({"points": []}, open(f"{d}/real_p_1.json", "w"))
            json.dump({"points": []}, open(f"{d}/sim_p.json", "w"))
            with self.assertRaisesRegex(SystemExit, "`p` has 1 real rounds"):
                fidelity_ceiling.ceiling(d, "p", 1)


def switch(cpu, t, prev, prev_pid, state, nxt, nxt_pid):
    return (f"  x-1 [{cpu:03d}] d..2. {t:.6f}: sched_switch: prev_comm={prev} prev_pid={prev_pid} "
            f"prev_prio=120 prev_state={state} ==> next_comm={nxt} next_pid={nxt_pid} next_prio=120")


class SchedWaits(unittest.TestCase):
    # cpu 0 runs the generator for 1 ms; a worker woken onto cpu 0 0.1 ms in waits the 0.9 ms
    # left, while cpu 1's worker ends 0.2 ms in and leaves cpu 1 idle.
    TRACE = [
        switch(0, 1.0, "swapper/0", 0, "R", "gen", 10),
        switch(1, 1.0, "swapper/1", 0, "R", "w-0", 20),
        "  gen-10 [000] d..2. 1.000100: sched_wakeup: comm=w2-0 pid=30 prio=120 target_cpu=000",
        switch(1, 1.0002, "w-0", 20, "S", "swapper/1", 0),
        switch(0, 1.001, "gen", 10, "R", "w2-0", 30),
        switch(1, 1.001, "swapper/1", 0, "R", "w-0", 20),
    ]

    def test_a_woken_thread_waits_from_its_wake_up_to_its_switch_in(self):
        names, segments, waits, on_core, span = sched_waits.analyse(self.TRACE)
        self.assertEqual([(pid, cpu) for pid, _, _, cpu in waits], [(30, 0)])
        self.assertAlmostEqual((waits[0][2] - waits[0][1]) * 1e6, 900.0, places=3)
        self.assertAlmostEqual(on_core[10], 0.001)
        self.assertAlmostEqual(span, 0.001)

    def test_a_long_wait_counts_what_ran_on_its_core_and_the_other_cores_idle_time(self):
        names, segments, waits, _, _ = sched_waits.analyse(self.TRACE)
        count, total, here, elsewhere = sched_waits.long_waits(names, segments, waits, 300e-6)
        self.assertEqual(count, 1)
        self.assertAlmostEqual(here["gen"], 0.0009)
        self.assertAlmostEqual(elsewhere["w"], 0.0001)
        self.assertAlmostEqual(elsewhere["idle"], 0.0008)
        self.assertEqual(sched_waits.long_waits(names, segments, waits, 1e-3)[0], 0, "none over 1 ms")


class SeedRatios(unittest.TestCase):
    @staticmethod
    def point(policy, load, prio_p50, others_p99, prio_count=10):
        latency = {"p50_us": 100.0, "p99_us": 200.0, "count": 10}
        return {"policy": policy, "load": load, "throughput_rps": load,
                "priority_latency": {"p50_us": prio_p50, "p99_us": 400.0, "count": prio_count},
                "others_latency": {**latency, "p99_us": others_p99}}

    def files(self, seeds):
        """One file per seed: (greedy's, the rule's) priority p50 and others' p99 at load 100."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        paths = []
        for k, ((g_p50, c_p50), (g_p99, c_p99)) in enumerate(seeds):
            path = os.path.join(d, f"{k}.json")
            with open(path, "w") as f:
                json.dump({"points": [self.point("greedy", 100.0, g_p50, g_p99),
                                      self.point("collaborative", 100.0, c_p50, c_p99)]}, f)
            paths.append(path)
        return paths

    def test_each_ratio_is_the_mean_over_the_seeds_with_its_t_interval(self):
        rows = seed_ratios.rows(self.files([((100.0, 50.0), (200.0, 200.0)), ((100.0, 70.0), (200.0, 300.0))]))
        (load, cells, throughput, _, _), = rows
        self.assertEqual(load, 100.0)
        prio_p50, _, _, others_p99 = cells
        self.assertAlmostEqual(prio_p50[0], 0.6)
        # Two seeds: t(1) = 12.706 times the standard error 0.1.
        self.assertAlmostEqual(prio_p50[2] - prio_p50[0], 12.706 * 0.1, places=6)
        self.assertAlmostEqual(others_p99[0], 1.25)
        self.assertEqual(throughput, 1.0)

    def test_a_class_without_requests_under_a_policy_has_no_ratio(self):
        paths = self.files([((100.0, 50.0), (200.0, 200.0))])
        data = json.load(open(paths[0]))
        data["points"][1]["priority_latency"]["count"] = 0
        json.dump(data, open(paths[0], "w"))
        (_, cells, _, _, _), = seed_ratios.rows(paths)
        self.assertIsNone(cells[0])
        self.assertIsNotNone(cells[3])

    def test_the_plot_draws_each_class_and_quantile_with_its_interval(self):
        rows = seed_ratios.rows(self.files([((100.0, 50.0), (200.0, 200.0)), ((100.0, 70.0), (200.0, 300.0))]))
        import xml.dom.minidom
        doc = xml.dom.minidom.parseString(seed_ratios.svg(rows, "t"))
        self.assertEqual(len(doc.getElementsByTagName("circle")), 4)
        labels = [t.firstChild.data for t in doc.getElementsByTagName("text")]
        for label in seed_ratios.LABELS:
            self.assertIn(label, labels)

    def test_a_fractional_load_keeps_its_figures_and_the_unit_is_named(self):
        paths = self.files([((100.0, 50.0), (200.0, 200.0))])
        for path in paths:
            data = json.load(open(path))
            for point in data["points"]:
                point["load"] = 5.6
            json.dump(data, open(path, "w"))
        rows = seed_ratios.rows(paths)
        table = seed_ratios.table(rows, 1, "sessions/s")
        self.assertIn("| load (sessions/s) |", table)
        self.assertIn("| 5.6 |", table)
        import xml.dom.minidom
        doc = xml.dom.minidom.parseString(seed_ratios.svg(rows, "t", "sessions/s"))
        labels = [t.firstChild.data for t in doc.getElementsByTagName("text")]
        self.assertIn("load (sessions/s)", labels)
        self.assertIn("5.6", labels)


if __name__ == "__main__":
    unittest.main()
