"""`sprof analyze DIR`: the one-page summary on smdebug's own directories (no samples), on
synthetic step timelines whose statistics Python computes here from the definitions, and on a real
`sprof record` run; sections without data say so; --fail-on and bad input as documented."""
import glob
import json
import math
import os
import re
import shutil

from sprof_testlib import (DEBIAN_PYTHON, EXIT_ISSUES, EXIT_OK, EXIT_USAGE, SMDEBUG_FIXTURES, SOURCE_DIR,
                           TempDirTestCase, run_sprof)
import rules_fixtures as rf


def quantile(values, q):
    """numpy's default (linear) quantile."""
    xs = sorted(values)
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def expected_step_stats(durations, stddev=3.0):
    mean = sum(durations) / len(durations)
    std = math.sqrt(sum((d - mean) ** 2 for d in durations) / len(durations))
    return {"count": len(durations), "mean_s": mean, "p50_s": quantile(durations, 0.5),
            "p95_s": quantile(durations, 0.95), "max_s": max(durations), "min_s": min(durations),
            "outlier_threshold_s": mean + stddev * std}


def chrome_steps(root):
    """(mode, step, start_us, dur_us) of every Step:ModeKeys X event, read straight from the files."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, "framework", "pevents", "*", "*.json"))):
        with open(path) as f:
            events = json.load(f)
        base = next(e["args"]["start_time_since_epoch_in_micros"] for e in events
                    if e.get("ph") == "M" and "start_time_since_epoch_in_micros" in e.get("args", {}))
        for e in events:
            if e.get("ph") == "X" and "Step:ModeKeys" in e["name"]:
                out.append((e["name"].split(".")[-1], e["args"].get("step_num"), base + e["ts"], e["dur"]))
    return out


def analyze_json(path, *flags, check=EXIT_OK):
    proc = run_sprof("analyze", path, "--json", *flags, check=check)
    return json.loads(proc.stdout)


class AnalyzeSmdebugDirectories(TempDirTestCase):
    def test_merge_traces_steps(self):
        root = os.path.join(SMDEBUG_FIXTURES, "merge_traces")
        report = analyze_json(root)
        self.assertEqual(report["job"]["source"], "smdebug")
        raw = chrome_steps(root)
        self.assertTrue(raw)
        modes = {m["mode"]: m for m in report["steps"]["modes"]}
        self.assertEqual(set(modes), {m for m, _, _, _ in raw})
        for mode, got in modes.items():
            durations = [d / 1e6 for m, _, _, d in raw if m == mode]
            want = expected_step_stats(durations)
            for key, value in want.items():
                self.assertAlmostEqual(got[key], value, places=6, msg="%s %s" % (mode, key))
            outliers = [s for m, s, _, d in raw if m == mode and d / 1e6 > want["outlier_threshold_s"]]
            self.assertEqual(got["outlier_steps"], outliers)
            self.assertEqual(got["outliers"], len(outliers))
        # The phases: the loop runs from the first step's start to the last step's end.
        first = min(s for _, _, s, _ in raw)
        last = max(s + d for _, _, s, d in raw)
        phases = {p["phase"]: p for p in report["phases"]["phases"]}
        self.assertEqual(phases["training_loop"]["start_us"], first)
        self.assertEqual(phases["training_loop"]["end_us"], last)
        self.assertEqual(phases["initialization"]["end_us"], first)
        self.assertEqual(phases["finalization"]["start_us"], last)
        self.assertAlmostEqual(sum(p["share"] for p in phases.values()), 1.0, places=9)
        slowest = report["steps"]["slowest"]
        self.assertEqual(slowest[0]["seconds"], max(d for _, _, _, d in raw) / 1e6)
        # No samples and no system metrics here: those sections say so.
        self.assertIsNotNone(report["functions"]["note"])
        self.assertEqual(report["functions"]["top"], [])
        self.assertIsNotNone(report["system"]["note"])
        table = run_sprof("analyze", root, check=EXIT_OK).stdout
        for heading in ("JOB", "JOB PHASES", "STEP TIMES", "SLOWEST STEPS", "TOP FUNCTIONS", "SYSTEM USAGE", "RULES"):
            self.assertIn("\n" + heading, table)
        self.assertIn("no raw samples", table)
        self.assertIn("no system metrics", table)

    def test_test_traces_system_usage(self):
        root = os.path.join(SMDEBUG_FIXTURES, "test_traces")
        report = analyze_json(root)
        # CPU per tick = mean over the cores of that tick, computed here from the raw JSON lines.
        ticks = {}
        for path in glob.glob(os.path.join(root, "system", "**", "*.json"), recursive=True):
            with open(path) as f:
                for line in f:
                    r = json.loads(line)
                    if r["Type"] == "cpu" and r["Dimension"] == "CPUUtilization":
                        ticks.setdefault(r["Timestamp"], []).append(r["Value"])
        per_tick = [sum(v) / len(v) for v in ticks.values()]
        cpu = [m for m in report["system"]["metrics"] if m["metric"].startswith("CPUUtilization")]
        self.assertEqual(len(cpu), 1)
        self.assertEqual(cpu[0]["ticks"], len(per_tick))
        self.assertAlmostEqual(cpu[0]["p50"], quantile(per_tick, 0.5), places=9)
        self.assertAlmostEqual(cpu[0]["max"], max(per_tick), places=9)
        self.assertAlmostEqual(cpu[0]["mean"], sum(per_tick) / len(per_tick), places=9)
        if not any("Step:ModeKeys" in m for m, _, _, _ in chrome_steps(root)):
            self.assertEqual(report["steps"]["modes"], [])
            self.assertIn("Step:ModeKeys", report["steps"]["note"])
            self.assertIsNotNone(report["phases"]["note"])
        names = [r["rule"] for r in report["rules"]]
        self.assertEqual(names[0], "ProfilerReport")
        self.assertEqual(len(names), 13)


class AnalyzeSyntheticSteps(TempDirTestCase):
    def make(self):
        """120 TRAIN steps of ~0.1 s with 8 slow ones, then 20 EVAL steps; system metrics from 5 s before
        the first step to 3 s after the last."""
        durations = [0.1 + 0.001 * (i % 7) for i in range(120)]
        slow = [10, 25, 40, 55, 70, 85, 100, 115]
        for i in slow:
            durations[i] = 1.0
        t0 = rf.T0_US + 5000000
        events = rf.steps(durations, start_us=t0)
        loop_end = events[-1]["start_us"] + events[-1]["dur_us"]
        events += rf.steps([0.05] * 20, start_us=loop_end, mode="EVAL", first_step=0)
        loop_end = events[-1]["start_us"] + events[-1]["dur_us"]
        rf.write_trace(self.tmp, events)
        metrics = rf.SystemMetrics()
        t = rf.T0
        while t * 1e6 <= loop_end + 3e6:
            metrics.tick(t, [rf.cpu("cpu0", 50.0), rf.cpu("cpu1", 30.0), rf.memory(40.0)])
            t += 0.5
        metrics.write(self.tmp)
        return durations, slow, t0, loop_end, (t - 0.5)

    def test_statistics_phases_and_fail_on(self):
        durations, slow, loop_start, loop_end, last_tick = self.make()
        report = analyze_json(self.tmp)
        modes = {m["mode"]: m for m in report["steps"]["modes"]}
        want = expected_step_stats(durations)
        for key, value in want.items():
            self.assertAlmostEqual(modes["TRAIN"][key], value, places=6, msg=key)
        self.assertEqual(modes["TRAIN"]["outlier_steps"], [str(i) for i in slow])
        self.assertEqual(modes["EVAL"]["count"], 20)
        self.assertEqual(modes["EVAL"]["outliers"], 0)
        phases = [(p["phase"], p["start_us"], p["end_us"]) for p in report["phases"]["phases"]]
        self.assertEqual(phases, [("initialization", rf.T0_US, loop_start), ("training_loop", loop_start, loop_end),
                                  ("finalization", loop_end, int(last_tick * 1e6))])
        self.assertEqual(report["job"]["duration_s"], last_tick - rf.T0)
        self.assertEqual([s["step"] for s in report["steps"]["slowest"]], ["10", "25", "40"])
        self.assertTrue(all(s["outlier"] for s in report["steps"]["slowest"]))
        cpu = next(m for m in report["system"]["metrics"] if m["metric"].startswith("CPUUtilization"))
        self.assertEqual(cpu["metric"], "CPUUtilization (mean of 2 cores)")
        self.assertEqual((cpu["p50"], cpu["max"]), (40.0, 40.0))
        # StepOutlier (more than 100 steps) sees 8 outliers: not more than its default 10 ...
        rules = {r["rule"]: r for r in report["rules"]}
        self.assertEqual(rules["StepOutlier"]["status"], "NoIssuesFound")
        run_sprof("analyze", self.tmp, "--fail-on", "any", check=EXIT_OK)
        # ... but more than 5; the stddev parameter also moves analyze's own outlier threshold.
        report = analyze_json(self.tmp, "--param", "StepOutlier_n_outliers=5", "--fail-on", "StepOutlier",
                              check=EXIT_ISSUES)
        self.assertEqual({r["rule"]: r for r in report["rules"]}["StepOutlier"]["status"], "IssuesFound")
        run_sprof("analyze", self.tmp, "-p", "StepOutlier_n_outliers=5", "--fail-on", "LowGPUUtilization,BatchSize",
                  check=EXIT_OK)
        report = analyze_json(self.tmp, "--param", "stepoutlier_stddev=10")
        self.assertEqual(report["steps"]["outlier_stddev"], 10)
        modes = {m["mode"]: m for m in report["steps"]["modes"]}
        self.assertAlmostEqual(modes["TRAIN"]["outlier_threshold_s"], expected_step_stats(durations, 10.0)[
            "outlier_threshold_s"], places=6)
        self.assertEqual(modes["TRAIN"]["outliers"], 0)

    def test_bad_input(self):
        self.make()
        proc = run_sprof("analyze", os.path.join(self.tmp, "missing"), check=EXIT_USAGE)
        self.assertIn("missing", proc.stderr)
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        proc = run_sprof("analyze", empty, check=EXIT_USAGE)
        self.assertIn("not a profile directory", proc.stderr)
        proc = run_sprof("analyze", self.tmp, "--fail-on", "NoSuchRule", check=EXIT_USAGE)
        self.assertIn("NoSuchRule", proc.stderr)
        proc = run_sprof("analyze", self.tmp, "--param", "StepOutlier_bogus=1", check=EXIT_USAGE)
        self.assertIn("bogus", proc.stderr)
        # An unreadable trace file is skipped and said once (the rules read the same events).
        pevents = os.path.dirname(sorted(glob.glob(os.path.join(self.tmp, "framework", "pevents", "*", "*.json")))[0])
        bad = os.path.join(pevents, "9999_bad_model_timeline.json")
        with open(bad, "w") as f:
            f.write('{"bad')
        proc = run_sprof("analyze", self.tmp, check=EXIT_OK)
        self.assertEqual(proc.stderr.count("9999_bad_model_timeline.json"), 1, proc.stderr)
        self.assertIn("9999_bad_model_timeline.json", analyze_json(self.tmp)["warnings"][0])
        os.remove(bad)
        # A corrupt line in the middle of a metrics file: the file and line are named.
        path = sorted(glob.glob(os.path.join(self.tmp, "system", "*", "*", "*.json")))[0]
        with open(path) as f:
            lines = f.readlines()
        lines[3] = '{"Type": "cpu", "Name": \n'
        with open(path, "w") as f:
            f.writelines(lines)
        proc = run_sprof("analyze", self.tmp, check=EXIT_USAGE)
        self.assertIn(os.path.basename(path), proc.stderr)
        self.assertIn("4", proc.stderr)


BUSY = """
import time
def burn_cpu(seconds):
    end = time.process_time() + seconds  # CPU time: a loaded machine only makes it take longer
    x = 0
    while time.process_time() < end:
        x += 1
    return x
def wait_a_bit():
    time.sleep(0.5)
burn_cpu(1.5)
wait_a_bit()
"""


class AnalyzeRecordedRun(TempDirTestCase):
    def test_recorded_without_steps(self):
        script = os.path.join(self.tmp, "busy.py")
        with open(script, "w") as f:
            f.write(BUSY)
        out = os.path.join(self.tmp, "profile")
        run_sprof("-q", "record", "--system-interval-ms", "100", "-o", out, "--", DEBIAN_PYTHON, script,
                  check=EXIT_OK)
        report = analyze_json(out)
        job = report["job"]
        self.assertEqual(job["source"], "sprof")
        self.assertEqual(job["command"], [DEBIAN_PYTHON, script])
        self.assertEqual(job["state"], "complete")
        self.assertEqual(job["exit_status"], 0)
        self.assertGreater(job["duration_s"], 1.9)
        self.assertEqual(len(job["python_versions"]), 1)
        self.assertTrue(job["python_versions"][0].startswith("3.11."))
        self.assertIn(job["processes"][0]["pid"], [p["pid"] for p in job["processes"]])
        self.assertEqual(report["functions"]["top"][0]["function"], "burn_cpu")
        self.assertIsNone(report["functions"]["note"])
        # No steps in a plain script.
        self.assertEqual(report["steps"]["modes"], [])
        self.assertIsNotNone(report["steps"]["note"])
        self.assertEqual(report["phases"]["phases"], [])
        # System usage for the whole run, the target's process tree included.
        self.assertEqual(report["system"]["interval_ms"], 100)
        self.assertGreaterEqual(report["system"]["monitor_cpu_share"], 0)
        # sprof's own costs, each under its own name; the parts measured while sampling add up
        # to no more than all of sprof's CPU time then.
        # (analyze leaves out parts under 1 ms of CPU; sprof.json has every measured figure).
        costs = {(c["name"], c["after_sampling"]): c for c in report["own_costs"]}
        for name in ("sampler", "system monitor"):
            self.assertIn((name, False), costs, report["own_costs"])
        self.assertGreater(costs[("sampler", False)]["cpu_s"], 0)
        self.assertLess(costs[("sampler", False)]["core_share"], 1.0)
        self.assertTrue(all(c["cpu_s"] >= 0.001 for c in report["own_costs"]), report["own_costs"])
        with open(os.path.join(out, "sprof.json")) as f:
            recorded = json.load(f)
        parts = recorded["own_costs"]
        self.assertEqual(sorted(parts), ["markers", "stats_directories", "system_monitor"])
        self.assertGreater(parts["markers"]["while_sampling_cpu_s"], 0)  # drained every ~20 ms
        self.assertGreater(parts["stats_directories"]["after_sampling_cpu_s"], 0)
        self.assertGreaterEqual(parts["stats_directories"]["after_sampling_wall_s"],
                                parts["stats_directories"]["after_sampling_cpu_s"] * 0.5)
        during = (recorded["health"]["sampler_cpu_s"] + recorded["system_metrics"]["thread_cpu_s"] +
                  sum(p["while_sampling_cpu_s"] for p in parts.values()))
        self.assertLessEqual(during, recorded["health"]["process_cpu_s"] + 0.005)
        metrics = {m["metric"]: m for m in report["system"]["metrics"]}
        self.assertIn("process tree CPUUtilization", metrics)
        self.assertIn("process tree ResidentMemoryBytes", metrics)
        # The script burns one core while it can get one; on a loaded 2-core machine that was ~20 %.
        self.assertGreater(metrics["process tree CPUUtilization"]["max"], 5)
        cov = report["system"]["coverage"][0]
        self.assertLess(cov["first_s"] - job["start_us"] / 1e6, 1.0)
        self.assertLess(job["end_us"] / 1e6 - cov["last_s"], 2.0)
        table = run_sprof("analyze", out, check=EXIT_OK).stdout
        self.assertIn("burn_cpu", table)
        self.assertRegex(table, r"sprof's cost +sampler \d+\.\d\d%, system monitor \d+\.\d\d%")
        self.assertIn("process tree CPUUtilization", table)

    def test_why_no_system_metrics(self):
        # A job shorter than the monitor's interval has no reading; one recorded without the monitor
        # has none either: the note says which, from sprof.json.
        out = os.path.join(self.tmp, "short")
        run_sprof("-q", "record", "--system-interval-ms", "5000", "-o", out, "--", DEBIAN_PYTHON, "-c", "pass",
                  check=EXIT_OK)
        self.assertRegex(analyze_json(out)["system"]["note"],
                         r"^no system metrics: the job ended \(\d+\.\d{3} s\) before the monitor's first reading "
                         r"\(every 5000 ms\)$")
        off = os.path.join(self.tmp, "off")
        run_sprof("-q", "record", "--no-system-metrics", "-o", off, "--", DEBIAN_PYTHON, "-c", "pass", check=EXIT_OK)
        self.assertEqual(analyze_json(off)["system"]["note"], "no system metrics (recorded with --no-system-metrics)")


STEPPED = """
import time
import sprof
sprof.set_mode(sprof.TRAIN)
for i in range(6):
    with sprof.step_context():
        time.sleep(0.3 if i == 4 else 0.05)
"""


class AnalyzeRecordedSteps(TempDirTestCase):
    def test_steps_from_the_trace_or_the_markers(self):
        script = os.path.join(self.tmp, "stepped.py")
        with open(script, "w") as f:
            f.write(STEPPED)
        out = os.path.join(self.tmp, "profile")
        run_sprof("-q", "record", "-o", out, "--", DEBIAN_PYTHON, script, check=EXIT_OK)
        raw = chrome_steps(out)
        self.assertEqual(len(raw), 6)
        report = analyze_json(out)
        (train,) = report["steps"]["modes"]
        self.assertEqual((train["mode"], train["count"]), ("TRAIN", 6))
        want = expected_step_stats([d / 1e6 for _, _, _, d in raw])
        for key, value in want.items():
            self.assertAlmostEqual(train[key], value, places=6, msg=key)
        self.assertEqual(report["steps"]["slowest"][0]["step"], "4")
        self.assertGreaterEqual(report["steps"]["slowest"][0]["seconds"], 0.3)
        # Phases from the recording's own start and end.
        phases = {p["phase"]: p for p in report["phases"]["phases"]}
        self.assertEqual(phases["initialization"]["start_us"], report["job"]["start_us"])
        self.assertEqual(phases["finalization"]["end_us"], report["job"]["end_us"])
        # A recording cut short before the trace was written still has its steps in markers.log.
        shutil.rmtree(os.path.join(out, "framework"))
        again = analyze_json(out)
        self.assertEqual(again["steps"]["modes"], report["steps"]["modes"])
        self.assertTrue(any("markers.log" in w for w in again["warnings"]))


class AnalyzeManPage(TempDirTestCase):
    def test_flags_documented(self):
        with open(os.path.join(SOURCE_DIR, "man", "sprof.1")) as f:
            man = f.read().replace("\\-", "-")
        self.assertIn("analyze", run_sprof("--help", check=EXIT_OK).stdout)
        section = re.search(r'^\.SS "sprof analyze .*?(?=^\.S[SH] )', man, re.S | re.M).group(0)
        flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", run_sprof("analyze", "--help").stdout))
        flags -= {"-h", "--help"}
        self.assertIn("--fail-on", flags)
        for flag in sorted(flags):
            self.assertRegex(section, r"(?<![\w-])%s(?![\w-])" % re.escape(flag))
        record = re.search(r'^\.SS "sprof record .*?(?=^\.S[SH] )', man, re.S | re.M).group(0)
        for flag in ("--system-interval-ms", "--no-system-metrics"):
            self.assertIn(flag, run_sprof("record", "--help").stdout)
            self.assertIn(flag, record)


if __name__ == "__main__":
    import unittest
    unittest.main()
