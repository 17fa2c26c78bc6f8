"""sprof rules on generated profiles: for every rule a profile that makes it fire and one that does not,
with the expected counts worked out from the rule's definition (man/sprof.1, `sprof rules`;
smdebug's smdebug/profiler/analysis/rules/<rule>.py in awslabs/sagemaker-debugger at commit
2222c547a94623e2e3288a196e598f066eaee48d, the last one with the rule code) in the comments;
parameter validation; output formats; --fail-on; -o; --compat smdebug; smdebug's own files."""
import csv
import glob
import io
import json
import os
import statistics
import unittest

import rules_fixtures as fx
from sprof_testlib import EXIT_ISSUES, EXIT_OK, EXIT_USAGE, SMDEBUG_FIXTURES, TempDirTestCase, run_sprof


def rules_json(profile, *args, check=EXIT_OK):
    proc = run_sprof("rules", profile, "--json", *args, check=check)
    return {r["rule"]: r for r in json.loads(proc.stdout)["rules"]}


class RuleTestCase(TempDirTestCase):
    def profile(self, name):
        path = os.path.join(self.tmp, name)
        os.makedirs(path, exist_ok=True)
        return path

    def assert_counts(self, entry, status, triggered, violations=None, datapoints=None):
        self.assertEqual(entry["status"], status, entry["evidence"])
        self.assertEqual(entry["RuleTriggered"], triggered, entry["evidence"])
        if violations is not None:
            self.assertEqual(entry["Violations"], violations, entry["evidence"])
        if datapoints is not None:
            self.assertEqual(entry["Datapoints"], datapoints, entry["evidence"])


def bottleneck_profile(root, dimension, ticks=300, healthy_ticks=60):
    """Ticks every 0.5 s from T0, one GPU and two cores. The first `healthy_ticks` have the GPU at 50 %;
    after that the GPU is at 5 % while cpu0's `dimension` is at 95 %."""
    metrics = fx.SystemMetrics()
    for i in range(ticks):
        t = fx.T0 + i * 0.5
        busy = i >= healthy_ticks
        records = [fx.gpu("gpu0", 5 if busy else 50), fx.gpu_memory("gpu0", 20)]
        for core, value in (("cpu0", 95 if busy else 20), ("cpu1", 20)):
            records.append(fx.cpu(core, value if dimension == "CPUUtilization" else 20))
            records.append(fx.iowait(core, value if dimension == "I/OWaitPercentage" else 0))
        metrics.tick(t, records)
    metrics.write(root)


class BottleneckRules(RuleTestCase):
    # 300 ticks at 0.5 s: windows of 60 s hold 120, 120 and 60 ticks (snapshots). Bottlenecks start at
    # tick 60. Window 1: 60 of 120 = 50 %, not above 50. Window 2: 180 of 240 = 75 %. Window 3: 240 of
    # 300 = 80 %. So with patience 10: RuleTriggered 2, Violations 240, Datapoints 300.
    def check(self, rule, dimension, other_dimension):
        profile = self.profile(rule)
        bottleneck_profile(profile, dimension)
        r = rules_json(profile, "--rule", rule, "--param", rule + "_patience=10")[rule]
        self.assert_counts(r, "IssuesFound", 2, 240, 300)
        self.assertEqual(r["Details"]["low_gpu_utilization"], 240)
        self.assertEqual(len(r["Details"]["bottlenecks"]), 240)
        first = r["Details"]["bottlenecks"][repr(fx.T0 + 60 * 0.5)]
        self.assertEqual(first, {"GPUs": 1, "CPUs": 1})
        # Default patience 1000 > 300 snapshots: never evaluated.
        r = rules_json(profile, "--rule", rule)[rule]
        self.assert_counts(r, "NoIssuesFound", 0, 240, 300)
        # The other dimension busy instead: low GPU but no bottleneck of this kind.
        healthy = self.profile(rule + "-healthy")
        bottleneck_profile(healthy, other_dimension)
        r = rules_json(healthy, "--rule", rule, "--param", rule + "_patience=10")[rule]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 300)

    def test_cpu_bottleneck(self):
        self.check("CPUBottleneck", "CPUUtilization", "I/OWaitPercentage")

    def test_io_bottleneck(self):
        self.check("IOBottleneck", "I/OWaitPercentage", "CPUUtilization")

    def test_threshold_is_a_percentage_of_snapshots(self):
        # threshold 79: window 3 (80 %) fires, window 2 (75 %) does not.
        profile = self.profile("p")
        bottleneck_profile(profile, "CPUUtilization")
        r = rules_json(profile, "--rule", "cpubottleneck", "--param", "cpubottleneck_PATIENCE=10",
                       "--param", "CPUBottleneck_threshold=79")["CPUBottleneck"]
        self.assert_counts(r, "IssuesFound", 1, 240, 300)
        self.assertIn("threshold:79\ncpu_threshold:90\ngpu_threshold:10\npatience:10", r["RuleParameters"])

    def test_cpu_only_job_is_no_data(self):
        profile = self.profile("cpu-only")
        metrics = fx.SystemMetrics()
        for i in range(100):
            metrics.tick(fx.T0 + i, [fx.cpu("cpu0", 99), fx.iowait("cpu0", 99), fx.memory(50)])
        metrics.write(profile)
        out = rules_json(profile)
        for rule in ("CPUBottleneck", "IOBottleneck", "LowGPUUtilization", "GPUMemoryIncrease", "BatchSize",
                     "LoadBalancing"):
            self.assert_counts(out[rule], "NoData", 0)
        self.assertEqual(out["OverallSystemUsage"]["status"], "NoIssuesFound")
        self.assertEqual(out["ProfilerReport"]["status"], "NoIssuesFound")


class LowGpuUtilization(RuleTestCase):
    # 150 ticks at 1 s: windows hold 60, 60, 30 values. With patience 100 the rule evaluates after
    # windows 2 (120 values) and 3 (150). gpu0 at 30 %: p95 30 < 70, under-used. gpu1 alternating
    # 95/5: p95 95 > 70 and p5 5 < 10, fluctuating. 2 GPUs x 2 evaluations = 4.
    def test_fires_for_idle_and_fluctuating_gpus(self):
        profile = self.profile("p")
        metrics = fx.SystemMetrics()
        for i in range(150):
            metrics.tick(fx.T0 + i, [fx.gpu("gpu0", 30), fx.gpu("gpu1", 95 if i % 2 else 5), fx.cpu("cpu0", 50)])
        metrics.write(profile)
        r = rules_json(profile, "--rule", "LowGPUUtilization", "--param", "LowGPUUtilization_patience=100",
                       "--param", "LowGPUUtilization_window=50")["LowGPUUtilization"]
        self.assert_counts(r, "IssuesFound", 4, 4, 150)
        self.assertEqual(r["Details"]["algo-1"]["gpu0"]["gpu_95"], 30.0)
        self.assertEqual(r["Details"]["algo-1"]["gpu1"]["gpu_5"], 5.0)
        self.assertEqual(r["Details"]["last_timestamp"], fx.T0_US + 120 * 1000000)

    def test_busy_gpu_does_not_fire(self):
        profile = self.profile("p")
        metrics = fx.SystemMetrics()
        for i in range(150):
            metrics.tick(fx.T0 + i, [fx.gpu("gpu0", 90), fx.cpu("cpu0", 50)])
        metrics.write(profile)
        r = rules_json(profile, "--rule", "LowGPUUtilization", "--param", "LowGPUUtilization_patience=100",
                       "--param", "LowGPUUtilization_window=50")["LowGPUUtilization"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 150)


def outlier_threshold(durations, stddev=3):
    return statistics.fmean(durations) + stddev * statistics.pstdev(durations)


class StepOutlier(RuleTestCase):
    def test_fires_above_n_outliers(self):
        # 185 steps of 0.1 s and 15 of 1.0 s: mean 0.1675, population std 0.2370, threshold 0.879 s:
        # the 15 slow steps are outliers, 15 > n_outliers 10. All 200 steps (33.5 s) fall in one window.
        durations = [0.1] * 185 + [1.0] * 15
        self.assertEqual(sum(d > outlier_threshold(durations) for d in durations), 15)
        profile = self.profile("p")
        fx.write_trace(profile, fx.steps(durations))
        r = rules_json(profile, "--rule", "StepOutlier")["StepOutlier"]
        self.assert_counts(r, "IssuesFound", 1, 15, 200)
        details = r["Details"]["step_details"]["algo-1-100"]
        self.assertEqual(details["number_of_outliers"], 15)
        self.assertEqual(details["step_numbers"], [str(i) for i in range(185, 200)])
        self.assertEqual(details["phase"], "Step:ModeKeys.TRAIN")
        self.assertAlmostEqual(details["step_stats"]["mean"], 0.1675, places=9)
        self.assertEqual(details["stddev"], round(statistics.pstdev(durations), 2))
        self.assertEqual(sum(details["probs"]), 185)

    def test_few_outliers_do_not_fire(self):
        # 195 x 0.1 s and 5 x 1.0 s: 5 outliers, not more than 10; with n_outliers 4 they fire.
        durations = [0.1] * 195 + [1.0] * 5
        self.assertEqual(sum(d > outlier_threshold(durations) for d in durations), 5)
        profile = self.profile("p")
        fx.write_trace(profile, fx.steps(durations))
        self.assert_counts(rules_json(profile, "--rule", "StepOutlier")["StepOutlier"], "NoIssuesFound", 0, 0, 200)
        r = rules_json(profile, "--rule", "StepOutlier", "--param", "StepOutlier_n_outliers=4")["StepOutlier"]
        self.assert_counts(r, "IssuesFound", 1, 5, 200)

    def test_mode_selects_one_phase(self):
        # TRAIN steps are steady; EVAL steps have 15 outliers (as above). Each phase has 200 steps.
        profile = self.profile("p")
        train = fx.steps([0.1] * 200, mode="TRAIN")
        evals = fx.steps([0.1] * 185 + [1.0] * 15, start_us=fx.T0_US, mode="EVAL")
        fx.write_trace(profile, train + evals)
        r = rules_json(profile, "--rule", "StepOutlier", "--param", "StepOutlier_mode=TRAIN")["StepOutlier"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 200)
        self.assertIn("mode:TRAIN", r["RuleParameters"])
        r = rules_json(profile, "--rule", "StepOutlier", "--param", "StepOutlier_mode=eval")["StepOutlier"]
        self.assert_counts(r, "IssuesFound", 1, 15, 200)
        r = rules_json(profile, "--rule", "StepOutlier")["StepOutlier"]
        self.assert_counts(r, "IssuesFound", 1, 15, 400)
        # step_details shows TRAIN for compatibility; per_phase has both.
        self.assertEqual(r["Details"]["step_details"]["algo-1-100"]["phase"], "Step:ModeKeys.TRAIN")
        self.assertEqual(r["Details"]["per_phase"]["algo-1-100"]["Step:ModeKeys.EVAL"]["number_of_outliers"], 15)

    def test_no_steps_is_no_data(self):
        profile = self.profile("p")
        fx.write_trace(profile, [fx.event("Forward", "model", fx.T0_US, 1000)])
        self.assert_counts(rules_json(profile, "--rule", "StepOutlier")["StepOutlier"], "NoData", 0)


def memory_profile(root, values):
    metrics = fx.SystemMetrics()
    for i, v in enumerate(values):
        metrics.tick(fx.T0 + i, [fx.gpu("gpu0", 80), fx.gpu_memory("gpu0", v), fx.cpu("cpu0", 50)])
    metrics.write(root)


class GpuMemoryIncrease(RuleTestCase):
    params = ("--rule", "GPUMemoryIncrease", "--param", "GPUMemoryIncrease_patience=20",
              "--param", "GPUMemoryIncrease_window=5")

    def test_a_jump_fires_once_per_sample(self):
        # 40 samples at 10 %, then 20 at 50 %. The 5-sample moving average rises by 40/5 = 8 > 5 points
        # for the 5 samples after the jump (samples 41-45, all past patience 20), then stays flat.
        profile = self.profile("p")
        memory_profile(profile, [10] * 40 + [50] * 20)
        r = rules_json(profile, *self.params)["GPUMemoryIncrease"]
        self.assert_counts(r, "IssuesFound", 5, 5, 60)
        self.assertAlmostEqual(r["Details"]["algo-1"]["gpu0"]["increase"], 8.0)
        self.assertEqual(r["Details"]["algo-1"]["gpu0"]["gpu_max"], 50.0)

    def test_slow_ramp_fires_only_with_smdebugs_slice(self):
        # Memory rising 4 points per sample (0, 4, ..., 96). The moving average rises 4 points per sample,
        # below 5: sprof does not fire. smdebug's second slice v[n-w-1:n-2] has 4 values and averages
        # 3.5 steps back instead of 1, so its "increase" is 1.5 x 4 = 6 > 5: it fires for samples 21-25.
        profile = self.profile("p")
        memory_profile(profile, [4 * i for i in range(25)])
        self.assert_counts(rules_json(profile, *self.params)["GPUMemoryIncrease"], "NoIssuesFound", 0, 0, 25)
        r = rules_json(profile, *self.params, "--compat", "smdebug")["GPUMemoryIncrease"]
        self.assert_counts(r, "IssuesFound", 5, 5, 25)
        self.assertAlmostEqual(r["Details"]["algo-1"]["gpu0"]["increase"], 6.0)

    def test_flat_memory_does_not_fire(self):
        profile = self.profile("p")
        memory_profile(profile, [30] * 60)
        self.assert_counts(rules_json(profile, *self.params)["GPUMemoryIncrease"], "NoIssuesFound", 0, 0, 60)


class BatchSize(RuleTestCase):
    params = ("--rule", "BatchSize", "--param", "BatchSize_patience=20", "--param", "BatchSize_window=10")

    def write(self, root, gpu_value):
        # 150 ticks at 1 s (windows of 60, 60, 30). Cores at 10 and 20 %: total CPU 15 %. GPU memory 30 %
        # except the first two samples (60 and 0), which only the whole-series box plot sees.
        metrics = fx.SystemMetrics()
        for i in range(150):
            mem = 60 if i == 0 else 0 if i == 1 else 30
            metrics.tick(fx.T0 + i, [fx.cpu("cpu0", 10), fx.cpu("cpu1", 20), fx.gpu("gpu0", gpu_value),
                                     fx.gpu_memory("gpu0", mem)])
        metrics.write(root)

    def test_all_low_fires_every_window(self):
        # Every window ends with more than 20 and 10 CPU values and p95s 15/20/30, all below 70: 3.
        profile = self.profile("p")
        self.write(profile, 20)
        r = rules_json(profile, *self.params)["BatchSize"]
        self.assert_counts(r, "IssuesFound", 3, 3, 150)
        details = r["Details"]["algo-1"]
        self.assertEqual(details["cpu"]["p50"], 15.0)
        # Memory p25 = p75 = 30: IQR 0, whiskers at 30.
        self.assertEqual((details["gpu0_memory"]["upper"], details["gpu0_memory"]["lower"]), (30.0, 30.0))
        # smdebug takes the memory IQR from the GPU's p25 (20): IQR 10, whiskers 45 and 15.
        r = rules_json(profile, *self.params, "--compat", "smdebug")["BatchSize"]
        details = r["Details"]["algo-1"]
        self.assertEqual((details["gpu0_memory"]["upper"], details["gpu0_memory"]["lower"]), (45.0, 15.0))

    def test_busy_gpu_does_not_fire(self):
        profile = self.profile("p")
        self.write(profile, 90)
        self.assert_counts(rules_json(profile, *self.params)["BatchSize"], "NoIssuesFound", 0, 0, 150)


class MaxInitializationTime(RuleTestCase):
    def write(self, root, first_step_s):
        # System samples every second for 5 minutes; one step at T0 + first_step_s (None: no step).
        metrics = fx.SystemMetrics()
        for i in range(300):
            metrics.tick(fx.T0 + i, [fx.cpu("cpu0", 50)])
        metrics.write(root)
        if first_step_s is not None:
            fx.write_trace(root, fx.steps([0.5], start_us=fx.T0_US + first_step_s * 1000000))

    params = ("--rule", "MaxInitializationTime", "--param", "MaxInitializationTime_threshold=1")

    def test_late_first_step(self):
        # Windows start at T0 + 0, 60, 120, 180, 240 s. smdebug counts windows starting more than 1 min
        # after T0 with no step seen yet: the step at 250 s is in the window at 240, so 120 and 180 count.
        profile = self.profile("p")
        self.write(profile, 250)
        r = rules_json(profile, *self.params)["MaxInitializationTime"]
        self.assert_counts(r, "IssuesFound", 2, 2, 1)
        self.assertEqual(r["Details"]["step_num"]["first"], fx.T0_US + 250 * 1000000)
        self.assertEqual(r["Details"]["job_start"], fx.T0)

    def test_step_in_the_first_counted_window(self):
        # Step at 150 s, in the window starting at 120 s: no window counts, yet initialization took
        # 2.5 min > 1 min. sprof fires once; smdebug's windows alone do not.
        profile = self.profile("p")
        self.write(profile, 150)
        self.assert_counts(rules_json(profile, *self.params)["MaxInitializationTime"], "IssuesFound", 1, 1, 1)
        r = rules_json(profile, *self.params, "--compat", "smdebug")["MaxInitializationTime"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 1)

    def test_quick_start(self):
        profile = self.profile("p")
        self.write(profile, 30)
        self.assert_counts(rules_json(profile, *self.params)["MaxInitializationTime"], "NoIssuesFound", 0, 0, 1)
        self.assert_counts(rules_json(profile)["MaxInitializationTime"], "NoIssuesFound", 0, 0, 1)

    def test_no_step_yet_is_no_data(self):
        # 5 minutes without a step, under the default 20-minute threshold: too early to tell (issue
        # 31: "NoIssuesFound" for a job that never started training); smdebug's windows say no issues.
        profile = self.profile("p")
        self.write(profile, None)
        r = rules_json(profile, "--rule", "MaxInitializationTime")["MaxInitializationTime"]
        self.assert_counts(r, "NoData", 0, 0, 0)
        self.assertIn("no training step in 5.0 min of job (threshold 20 min): too early to tell", r["evidence"])
        r = rules_json(profile, "--rule", "MaxInitializationTime", "--compat", "smdebug")["MaxInitializationTime"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 0)


class LoadBalancing(RuleTestCase):
    params = ("--rule", "LoadBalancing", "--param", "LoadBalancing_patience=50")

    def write(self, root, gpu0, gpu1, ticks=100):
        metrics = fx.SystemMetrics()
        for i in range(ticks):
            metrics.tick(fx.T0 + i, [fx.gpu("gpu0", gpu0(i)), fx.gpu("gpu1", gpu1(i))])
        metrics.write(root)

    def test_disjoint_workloads_fire(self):
        # gpu0 always at 90 %, gpu1 at 10 %: disjoint histograms, Jensen-Shannon distance sqrt(ln 2) =
        # 0.8326 > 0.2. Windows end with 60 and 100 samples per GPU, both past patience 50: 2 triggers.
        profile = self.profile("p")
        self.write(profile, lambda i: 90, lambda i: 10)
        r = rules_json(profile, *self.params)["LoadBalancing"]
        self.assert_counts(r, "IssuesFound", 2, 2, 100)
        self.assertAlmostEqual(r["Details"]["algo-1"]["distances"]["gpu0"]["gpu1"], 0.8325546111576977, places=12)
        self.assertEqual(len(r["Details"]["algo-1"]["workloads"]["gpu0"]), 50)
        # smdebug's loop never compares two different GPUs.
        r = rules_json(profile, *self.params, "--compat", "smdebug")["LoadBalancing"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 100)
        self.assertEqual(len(r["Details"]["algo-1"]["workloads"]["gpu0"]), 49)

    def test_full_utilization_is_counted(self):
        # gpu0 at 100 %, gpu1 at 50 %: sprof's last bin holds 100 % (distance 0.83, fires); smdebug's
        # bins stop at 98 % and drop every gpu0 value.
        profile = self.profile("p")
        self.write(profile, lambda i: 100, lambda i: 50)
        r = rules_json(profile, *self.params)["LoadBalancing"]
        self.assert_counts(r, "IssuesFound", 2, 2, 100)
        self.assertEqual(sum(r["Details"]["algo-1"]["workloads"]["gpu0"]), 100)
        r = rules_json(profile, *self.params, "--compat", "smdebug")["LoadBalancing"]
        self.assertEqual(sum(r["Details"]["algo-1"]["workloads"]["gpu0"]), 0)

    def test_balanced_gpus_do_not_fire(self):
        profile = self.profile("p")
        self.write(profile, lambda i: 40 if i % 2 else 60, lambda i: 60 if i % 2 else 40)
        self.assert_counts(rules_json(profile, *self.params)["LoadBalancing"], "NoIssuesFound", 0, 0, 100)

    def test_single_gpu_is_no_data(self):
        profile = self.profile("p")
        metrics = fx.SystemMetrics()
        for i in range(100):
            metrics.tick(fx.T0 + i, [fx.gpu("gpu0", 50)])
        metrics.write(profile)
        self.assert_counts(rules_json(profile, *self.params)["LoadBalancing"], "NoData", 0)


class OverallSystemUsage(RuleTestCase):
    def test_summary_per_node(self):
        # Two cores at 10 and 30 %: total 40 / 2 cores = 20 % at every tick. Memory 40-49 %.
        # Network 1000 + 3000 B/s per tick. Never fires.
        profile = self.profile("p")
        metrics = fx.SystemMetrics()
        for i in range(10):
            metrics.tick(fx.T0 + i, [fx.cpu("cpu0", 10), fx.cpu("cpu1", 30), fx.memory(40 + i),
                                     fx.network("ReceiveBytesPerSecond", 1000),
                                     fx.network("TransmitBytesPerSecond", 3000)])
        metrics.write(profile)
        r = rules_json(profile, "--rule", "OverallSystemUsage")["OverallSystemUsage"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 10)
        self.assertEqual(r["Details"]["CPU"]["algo-1"], {"max": 20.0, "p99": 20.0, "p95": 20.0, "p50": 20.0, "min": 20.0})
        self.assertEqual(r["Details"]["CPU memory"]["algo-1"]["max"], 49.0)
        self.assertEqual(r["Details"]["CPU memory"]["algo-1"]["p50"], 44.5)  # linear between 44 and 45
        self.assertEqual(r["Details"]["Network"]["algo-1"]["p50"], 4000.0)
        self.assertEqual(r["Details"]["GPU"], {})

    def test_no_system_metrics_is_no_data(self):
        profile = self.profile("p")
        fx.write_trace(profile, fx.steps([0.1] * 3))
        self.assert_counts(rules_json(profile, "--rule", "OverallSystemUsage")["OverallSystemUsage"], "NoData", 0)


def dataloader_profile(root, workers, seconds=30, cores=4, pin_memory=False):
    """The training process (pid 100) fetches a batch every 0.5 s; `workers` worker processes (pids 101..)
    live for the whole run, as sprof's DataLoaderWorker lane records them."""
    metrics = fx.SystemMetrics()
    for i in range(seconds):
        metrics.tick(fx.T0 + i, [fx.cpu("cpu%d" % c, 50) for c in range(cores)])
    metrics.write(root)
    events = [fx.event("DataLoaderIterInitialize", "_MultiProcessingDataLoaderIter.__init__", fx.T0_US, 1000,
                       num_workers=workers, pin_memory=pin_memory, pid=100)]
    for w in range(workers):
        events.append(fx.event("DataLoaderWorker", "_worker_loop", fx.T0_US + 1000, seconds * 1000000 - 2000,
                               pid=101 + w, worker_id=w))
    for k in range(2 * seconds):
        events.append(fx.event("DataLoaderIter", "_MultiProcessingDataLoaderIter::GetNext",
                               fx.T0_US + k * 500000 + 2000, 100000, pid=100))
    fx.write_trace(root, events)


class Dataloader(RuleTestCase):
    def test_too_few_workers(self):
        # 1 worker + the training process: 2 processes active in each of the 30 seconds (30 > patience
        # 10); 2 < 70 % of 4 cores = 2.8. One window, one violation, RuleTriggered 1.
        profile = self.profile("p")
        dataloader_profile(profile, workers=1)
        r = rules_json(profile, "--rule", "Dataloader")["Dataloader"]
        self.assert_counts(r, "IssuesFound", 1, 1, 1 + 60)
        self.assertEqual(r["Details"]["dataloaders"], 2)
        self.assertEqual(r["Details"]["cores"], 4)
        self.assertEqual(r["Details"]["num_workers"], 1)
        self.assertIs(r["Details"]["pin_memory"], False)
        self.assertIs(r["Details"]["prefetch"], False)
        self.assertAlmostEqual(r["Details"]["dataloading_time"]["p50"], 0.1)

    def test_enough_workers(self):
        # 3 workers + 1: 4 processes, between 2.8 and 8 (200 % of 4 cores).
        profile = self.profile("p")
        dataloader_profile(profile, workers=3)
        r = rules_json(profile, "--rule", "Dataloader")["Dataloader"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 3 + 60)
        self.assertEqual(r["Details"]["dataloaders"], 4)

    def test_too_many_workers(self):
        # 10 workers + 1 = 11 > 8.
        profile = self.profile("p")
        dataloader_profile(profile, workers=10)
        self.assert_counts(rules_json(profile, "--rule", "Dataloader")["Dataloader"], "IssuesFound", 1, 1)

    def test_patience(self):
        # 8 seconds of data: 8 per-second counts, not more than patience 10; with patience 5 it fires.
        profile = self.profile("p")
        dataloader_profile(profile, workers=1, seconds=8)
        self.assert_counts(rules_json(profile, "--rule", "Dataloader")["Dataloader"], "NoIssuesFound", 0, 0)
        r = rules_json(profile, "--rule", "Dataloader", "--param", "Dataloader_patience=5")["Dataloader"]
        self.assert_counts(r, "IssuesFound", 1, 1)


class OverallFrameworkMetrics(RuleTestCase):
    def test_phases_and_time_between_steps(self):
        # Steps [0, 1 s] and [2 s, 3 s]: loop span 3 s, steps 2 s, between steps 1 s: TRAIN 66.7 %,
        # others 33.3 %. A 0.25 s Forward event is "general". 20 % of the loop between steps or more:
        # sprof's fires (smdebug's never does).
        profile = self.profile("p")
        events = fx.steps([1.0, 1.0], gap_us=1000000) + [fx.event("Forward", "model", fx.T0_US + 100, 250000)]
        fx.write_trace(profile, events)
        r = rules_json(profile, "--rule", "OverallFrameworkMetrics")["OverallFrameworkMetrics"]
        self.assert_counts(r, "IssuesFound", 1)
        self.assertIn("33.3% between steps", r["evidence"])
        compat = rules_json(profile, "--rule", "OverallFrameworkMetrics", "--compat", "smdebug")["OverallFrameworkMetrics"]
        self.assert_counts(compat, "NoIssuesFound", 0)
        self.assertAlmostEqual(r["Details"]["phase"]["Step:ModeKeys.TRAIN"], 200 / 3)
        self.assertAlmostEqual(r["Details"]["phase"]["others"], 100 / 3)
        self.assertEqual(r["Details"]["general"], {"Forward": 100.0})

    def test_parameters_cannot_be_overridden(self):
        proc = run_sprof("rules", self.tmp, "--param", "OverallFrameworkMetrics_scan_interval_us=1000",
                         check=EXIT_USAGE)
        self.assertIn("BatchSize, CPUBottleneck, Dataloader", proc.stderr)


class InputBound(RuleTestCase):
    def test_fires_above_the_threshold(self):
        # 12 steps of 0.1 s, 0.05 s apart: 11 measured iterations (the first has no step or
        # DataLoader event before it), each 0.05 s of wait in 0.15 s: 33.3 % > 20 %.
        profile = self.profile("p")
        fx.write_trace(profile, fx.steps([0.1] * 12, gap_us=50000))
        r = rules_json(profile, "--rule", "InputBound")["InputBound"]
        self.assert_counts(r, "IssuesFound", 1, 1, 11)
        self.assertAlmostEqual(r["Details"]["input_wait_percent"], 100 / 3)
        self.assertEqual(r["Details"]["dataloader_percent"], 0)
        self.assertEqual(r["Details"]["verdict"], "highly input-bound")
        # A higher threshold, or fewer iterations than needed: no issue.
        r = rules_json(profile, "--rule", "InputBound", "--param", "InputBound_threshold=40")["InputBound"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 11)
        r = rules_json(profile, "--rule", "InputBound", "--param", "InputBound_min_iterations=12")["InputBound"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 11)

    def test_the_dataloader_part_and_the_first_fetch(self):
        # Iterator created 0.2 s before the first step; each 0.05 s gap a DataLoader fetch of 0.04 s.
        # 12 measured iterations: waits 0.2 + 11 x 0.05 = 0.75 s, steps 1.2 s: 38.5 % waiting,
        # fetches 0.2 (creation) + 11 x 0.04 = 0.64 s: 32.8 %.
        profile = self.profile("p")
        t0 = fx.T0_US + 1000000
        events = fx.steps([0.1] * 12, start_us=t0, gap_us=50000)
        events.append(fx.event("DataLoaderIterInitialize", "_SingleProcessDataLoaderIter.__init__", t0 - 200000,
                               200000, pid=100, num_workers=0, pin_memory=False))
        for i in range(1, 12):
            start = t0 + i * 150000 - 50000
            events.append(fx.event("DataLoaderIter", "_SingleProcessDataLoaderIter::GetNext", start, 40000, pid=100))
        fx.write_trace(profile, events)
        r = rules_json(profile, "--rule", "InputBound")["InputBound"]
        self.assert_counts(r, "IssuesFound", 1, 1, 12)
        self.assertAlmostEqual(r["Details"]["input_wait_percent"], 100 * 0.75 / 1.95)
        self.assertAlmostEqual(r["Details"]["dataloader_percent"], 100 * 0.64 / 1.95)

    def test_back_to_back_steps_do_not_fire(self):
        profile = self.profile("p")
        fx.write_trace(profile, fx.steps([0.1] * 20))
        r = rules_json(profile, "--rule", "InputBound")["InputBound"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, 19)
        self.assertEqual(r["Details"]["input_wait_percent"], 0)
        self.assertEqual(r["Details"]["verdict"], "not input-bound")

    def test_no_data(self):
        profile = self.profile("p")
        fx.write_trace(profile, fx.steps([0.1]))
        r = rules_json(profile, "--rule", "InputBound")["InputBound"]
        self.assertEqual(r["status"], "NoData")
        self.assertIn("no wait before any step", r["evidence"])


class ProfilerReportAndCli(RuleTestCase):
    def test_report_fires_iff_a_sub_rule_fires(self):
        busy = self.profile("busy")
        bottleneck_profile(busy, "CPUUtilization")
        out = rules_json(busy, "--param", "CPUBottleneck_patience=10")
        self.assertEqual(list(out)[0], "ProfilerReport")
        self.assertEqual(len(out), 13)  # ProfilerReport, smdebug's eleven, sprof's InputBound
        compat = rules_json(busy, "--param", "CPUBottleneck_patience=10", "--compat", "smdebug")
        self.assertEqual(len(compat), 12)  # smdebug's ProfilerReport: its eleven
        self.assertNotIn("InputBound", compat)
        self.assertIn("InputBound", rules_json(busy, "--rule", "InputBound", "--compat", "smdebug"))
        self.assertEqual(out["ProfilerReport"]["status"], "IssuesFound")
        self.assertEqual(out["ProfilerReport"]["Details"]["rules"]["CPUBottleneck"], "IssuesFound")
        out = rules_json(busy)
        self.assertEqual(out["ProfilerReport"]["status"], "NoIssuesFound")
        self.assertEqual(out["CPUBottleneck"]["status"], "NoIssuesFound")

    def test_fail_on(self):
        busy = self.profile("busy")
        bottleneck_profile(busy, "CPUUtilization")
        fire = ("--param", "CPUBottleneck_patience=10")
        run_sprof("rules", busy, *fire, "--fail-on", "any", check=EXIT_ISSUES)
        run_sprof("rules", busy, *fire, "--fail-on", "cpubottleneck,StepOutlier", check=EXIT_ISSUES)
        run_sprof("rules", busy, *fire, "--fail-on", "StepOutlier", check=EXIT_OK)
        run_sprof("rules", busy, "--fail-on", "any", check=EXIT_OK)
        proc = run_sprof("rules", busy, "--rule", "StepOutlier", "--fail-on", "CPUBottleneck", check=EXIT_USAGE)
        self.assertIn("--fail-on CPUBottleneck", proc.stderr)

    def test_output_directory_layout(self):
        busy = self.profile("busy")
        bottleneck_profile(busy, "CPUUtilization")
        out = os.path.join(self.tmp, "out")
        run_sprof("rules", busy, "--param", "CPUBottleneck_patience=10", "-o", out, check=EXIT_OK)
        reports = glob.glob(os.path.join(out, "rule-output", "ProfilerReport-*", "profiler-output", "profiler-reports",
                                         "*.json"))
        names = sorted(os.path.basename(p)[:-5] for p in reports)
        self.assertEqual(names, sorted(["BatchSize", "CPUBottleneck", "Dataloader", "GPUMemoryIncrease", "IOBottleneck",
                                        "InputBound", "LoadBalancing", "LowGPUUtilization", "MaxInitializationTime",
                                        "OverallFrameworkMetrics", "OverallSystemUsage", "StepOutlier"]))
        self.assertRegex(reports[0], r"ProfilerReport-\d{10}/")
        cpu = json.load(open([p for p in reports if p.endswith("/CPUBottleneck.json")][0]))
        self.assertEqual(list(cpu), ["RuleTriggered", "Violations", "Details", "Datapoints", "RuleParameters"])
        self.assertEqual((cpu["RuleTriggered"], cpu["Violations"], cpu["Datapoints"]), (2, 240, 300))
        summary = glob.glob(os.path.join(out, "rule-output", "ProfilerReport-*", "profiler-output", "rules-summary.json"))
        self.assertEqual(json.load(open(summary[0]))["rules"][0]["status"], "IssuesFound")

    def test_table_and_csv(self):
        busy = self.profile("busy")
        bottleneck_profile(busy, "CPUUtilization")
        table = run_sprof("rules", busy, "--param", "CPUBottleneck_patience=10", check=EXIT_OK).stdout
        lines = table.splitlines()
        self.assertEqual(lines[0].split()[:4], ["RULE", "STATUS", "TRIGGERED", "DATAPOINTS"])
        row = [line for line in lines if line.startswith("CPUBottleneck ")][0].split()
        self.assertEqual(row[1:4], ["IssuesFound", "2", "300"])
        self.assertIn("NoData", table)
        rows = list(csv.DictReader(io.StringIO(run_sprof("rules", busy, "-f", "csv", check=EXIT_OK).stdout)))
        self.assertEqual(len(rows), 13)
        by_rule = {r["rule"]: r for r in rows}
        self.assertEqual(by_rule["CPUBottleneck"]["datapoints"], "300")
        self.assertEqual(by_rule["LowGPUUtilization"]["status"], "NoIssuesFound")

    def test_list(self):
        out = run_sprof("rules", "--list", check=EXIT_OK).stdout
        self.assertIn("CPUBottleneck_cpu_threshold=90", out)
        self.assertIn("LoadBalancing_threshold=0.2", out)
        self.assertIn("Dataloader_patience=10", out)


class ParameterValidation(RuleTestCase):
    def expect_usage_error(self, *args, message):
        proc = run_sprof("rules", self.tmp, *args, check=EXIT_USAGE)
        self.assertIn(message, proc.stderr)

    def test_errors(self):
        self.expect_usage_error("--rule", "CPUBottlenek", message="valid rules (case insensitive): ProfilerReport, "
                                                                 "BatchSize, CPUBottleneck")
        self.expect_usage_error("--param", "CPUBottleneck_threshhold=5", message="valid parameters: threshold, "
                                                                                 "gpu_threshold, cpu_threshold")
        self.expect_usage_error("--param", "Foo_threshold=5", message="Foo is not a rule")
        self.expect_usage_error("--param", "CPUBottleneck_threshold=120", message="threshold must be a valid "
                                                                                 "percentile")
        self.expect_usage_error("--param", "LowGPUUtilization_threshold_p5=-1", message="threshold_p5 must be a "
                                                                                       "valid percentile")
        self.expect_usage_error("--param", "StepOutlier_n_outliers=0", message="n_outliers must be a positive integer")
        self.expect_usage_error("--param", "BatchSize_window=2.5", message="window must be a positive integer")
        self.expect_usage_error("--param", "GPUMemoryIncrease_increase=0", message="increase must be positive")
        self.expect_usage_error("--param", "MaxInitializationTime_threshold=abc", message="'abc' is not a number")
        self.expect_usage_error("--param", "threshold=5", message="does not follow <Rule>_<parameter>")
        self.expect_usage_error("--param", "CPUBottleneck_threshold", message="expected <Rule>_<parameter>=<value>")
        self.expect_usage_error("--compat", "pandas", message="compat")

    def test_valid_parameters_are_accepted(self):
        bottleneck_profile(self.tmp, "CPUUtilization", ticks=10)
        run_sprof("rules", self.tmp, "--param", "lowgpuutilization_THRESHOLD_P95=0", "--param",
                  "StepOutlier_stddev=2.5", "--param", "StepOutlier_mode=None", "--param", "opt_out_telemetry=true",
                  "--param", "LoadBalancing_threshold=0.5", "--param", "MaxInitializationTime_threshold=0.5",
                  check=EXIT_OK)

    def test_not_a_profile(self):
        proc = run_sprof("rules", os.path.join(self.tmp, "missing"), check=EXIT_USAGE)
        self.assertIn("missing: no such directory", proc.stderr)
        proc = run_sprof("rules", self.tmp, check=EXIT_USAGE)
        self.assertIn("not a profile directory", proc.stderr)


class CorruptMetrics(RuleTestCase):
    def test_corrupt_line_in_the_middle(self):
        bottleneck_profile(self.tmp, "CPUUtilization", ticks=20)
        path = glob.glob(os.path.join(self.tmp, "system", "incremental", "*", "*.json"))[0]
        lines = open(path).read().splitlines(True)
        lines[3] = lines[3][:25] + "\n"
        open(path, "w").write("".join(lines))
        proc = run_sprof("rules", self.tmp, check=EXIT_USAGE)
        self.assertIn(path, proc.stderr)
        self.assertIn("line 4 of %d" % len(lines), proc.stderr)

    def test_truncated_last_line_is_tolerated(self):
        bottleneck_profile(self.tmp, "CPUUtilization", ticks=20)
        path = glob.glob(os.path.join(self.tmp, "system", "incremental", "*", "*.json"))[0]
        text = open(path).read()
        open(path, "w").write(text[:-30])
        r = rules_json(self.tmp, "--rule", "OverallSystemUsage")["OverallSystemUsage"]
        self.assertEqual(r["Datapoints"], 20)


class SmdebugFixtures(RuleTestCase):
    def test_step_events_of_merge_traces(self):
        # StepOutlier's Datapoints are the step events it read: count them straight from the JSON.
        root = os.path.join(SMDEBUG_FIXTURES, "merge_traces")
        expected = 0
        for path in glob.glob(os.path.join(root, "framework", "pevents", "*", "*.json")):
            expected += sum(1 for e in json.load(open(path)) if "Step:ModeKeys" in e.get("name", "")
                            and e.get("ph") == "X")
        self.assertGreater(expected, 0)
        r = rules_json(root, "--rule", "StepOutlier")["StepOutlier"]
        self.assert_counts(r, "NoIssuesFound", 0, 0, expected)

    def test_every_fixture_runs(self):
        for name in ("test_traces", "merge_traces", "model_timeline_traces", "horovod_timeline_traces"):
            out = rules_json(os.path.join(SMDEBUG_FIXTURES, name))
            self.assertEqual(len(out), 13, name)
            run_sprof("rules", os.path.join(SMDEBUG_FIXTURES, name), "--compat", "smdebug", check=EXIT_OK)

    def test_system_metrics_of_test_traces(self):
        # OverallSystemUsage reads the 78 records; its Datapoints are algo-1's distinct CPU timestamps.
        root = os.path.join(SMDEBUG_FIXTURES, "test_traces")
        stamps = set()
        for path in glob.glob(os.path.join(root, "system", "incremental", "*.json")):
            for line in open(path):
                record = json.loads(line)
                if record["Dimension"] == "CPUUtilization":
                    stamps.add(record["Timestamp"])
        r = rules_json(root, "--rule", "OverallSystemUsage")["OverallSystemUsage"]
        self.assertEqual(r["Datapoints"], len(stamps))


if __name__ == "__main__":
    unittest.main()
