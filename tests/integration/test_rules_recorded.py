"""The rules on a real recorded run: examples/train_torch.py under `sprof record`, with a DataLoader
that loads slowly in the training process itself (no workers) and three steps that sleep. With
parameters scaled to a short run, the rules that should fire do (StepOutlier, Dataloader, InputBound,
OverallFrameworkMetrics: the loop waits for its data) and the others do not. What each rule should say is computed here from the recorded files and the rule's
definition (man/sprof.1, `sprof rules`; smdebug's smdebug/profiler/analysis/rules/<rule>.py in
awslabs/sagemaker-debugger at commit 2222c547a94623e2e3288a196e598f066eaee48d), not taken from
sprof."""
import glob
import json
import math
import os
import subprocess
import unittest

from sprof_testlib import DEBIAN_PYTHON, EXIT_ISSUES, EXIT_OK, SOURCE_DIR, TempDirTestCase, run_sprof

SLEEP_STEPS = (30, 60, 90)
STEP_SLEEP_S = 0.5
STEPS = 150  # more than the 100 StepOutlier needs: --size 2400 / --batch-size 16
PARAMS = ["StepOutlier_n_outliers=2", "MaxInitializationTime_threshold=1"]


def have_torch():
    return subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


def median(values):
    xs = sorted(values)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def read_system(profile):
    out = []
    for path in sorted(glob.glob(os.path.join(profile, "system", "*", "*", "*.json"))):
        with open(path) as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def read_events(profile):
    """Complete ("X") events of every pevents file: (lane, name, start_us, end_us, args)."""
    events = []
    for path in sorted(glob.glob(os.path.join(profile, "framework", "pevents", "*", "*.json"))):
        with open(path) as f:
            records = json.load(f)
        base, lanes = 0, {}
        for r in records:
            if r.get("ph") == "M" and r.get("name") == "process_name":
                if "start_time_since_epoch_in_micros" in r.get("args", {}):
                    base = r["args"]["start_time_since_epoch_in_micros"]
                elif "name" in r.get("args", {}):
                    lanes[r["pid"]] = r["args"]["name"]
        for r in records:
            if r.get("ph") == "X":
                start = base + r["ts"]
                events.append((lanes.get(r["pid"], ""), r["name"], start, start + r.get("dur", 0), r.get("args", {})))
    return events


class RecordedTorchRules(TempDirTestCase):
    def setUp(self):
        super().setUp()
        if not have_torch():
            self.skipTest("python3 has no torch (python3-torch)")

    def test_expected_rules_fire(self):
        out = os.path.join(self.tmp, "profile")
        run_sprof("-q", "record", "--subprocesses", "-o", out, "--", DEBIAN_PYTHON,
                  os.path.join(SOURCE_DIR, "examples", "train_torch.py"), "--epochs", "1", "--size", str(STEPS * 16),
                  "--batch-size", "16", "--workers", "0", "--slow-loader", "0.006", "--sleep-steps",
                  ",".join(map(str, SLEEP_STEPS)), "--step-sleep", str(STEP_SLEEP_S), check=EXIT_OK)
        system = read_system(out)
        events = read_events(out)
        steps = [e for e in events if e[1] == "Step:ModeKeys.TRAIN"]
        self.assertGreaterEqual(len(steps), STEPS, "expected %d TRAIN steps in framework/pevents" % STEPS)
        self.assertTrue(system, "no system metrics")

        # smdebug's windows: whole minutes from the first sample or event, each event in the window of its
        # start, the rules evaluated at the end of every window over everything seen so far.
        first = min([int(m["Timestamp"] * 1e6) for m in system] + [e[2] for e in events])
        last = max([int(m["Timestamp"] * 1e6) for m in system] + [e[2] for e in events])
        window_ends = []
        w = first // 60000000 * 60000000
        while w <= last:
            window_ends.append(w + 60000000)
            w += 60000000

        # StepOutlier: a series of more than 100 steps, outliers above mean + 3 std, more than n_outliers.
        def outliers(durations):
            mean = sum(durations) / len(durations)
            std = math.sqrt(sum((d - mean) ** 2 for d in durations) / len(durations))
            return [i for i, d in enumerate(durations) if d > mean + 3 * std]

        step_outlier = False
        for end in window_ends:
            durations = [(e[3] - e[2]) / 1e6 for e in steps if e[2] < end]
            if len(durations) > 100 and len(outliers(durations)) > 2:
                step_outlier = True
        all_durations = [(e[3] - e[2]) / 1e6 for e in steps]
        slow = [e[4].get("step_num") for i, e in enumerate(steps) if i in outliers(all_durations)]
        self.assertTrue(set(map(str, SLEEP_STEPS)) <= set(slow), "sleeping steps %s, outliers %s" % (SLEEP_STEPS, slow))

        # Dataloader: distinct dataloader processes active in each second; median vs 70 % of the cores.
        cores = len({m["Name"] for m in system if m["Dimension"] == "CPUUtilization"})
        loader = [e for e in events if e[0] in ("DataLoaderWorker", "DataLoaderIter", "DataIterator") and "pid" in e[4]]
        dataloader = False
        for end in window_ends:
            seconds = {}
            for lane, _, start, stop, args in loader:
                if start >= end:
                    continue
                for s in range(start // 1000000, min(stop, end - 1) // 1000000 + 1):
                    seconds.setdefault(s, set()).add(args["pid"])
            counts = [len(p) for _, p in sorted(seconds.items())]
            if len(counts) > 10 and (int(median(counts)) < cores * 0.7 or int(median(counts)) > cores * 2.0):
                dataloader = True

        # MaxInitializationTime (threshold 1 minute): the first step starts more than a minute after the
        # job started (the first system sample).
        init_s = (min(e[2] for e in steps) - min(int(m["Timestamp"] * 1e6) for m in system)) / 1e6
        max_init = init_s > 60

        # Iterations (sprof's definition, man/sprof.1): per process, a step's input wait runs from the
        # previous step's end to its start; the first step's from the first DataLoader event before it.
        def union(ranges):
            out = []
            for a, b in sorted(ranges):
                if out and a <= out[-1][1]:
                    out[-1][1] = max(out[-1][1], b)
                else:
                    out.append([a, b])
            return out

        pids = {e[4].get("pid") for e in steps}
        self.assertEqual(len(pids), 1, "one training process")
        fetches = union([(e[2], e[3]) for e in events
                         if e[0] in ("DataLoaderIter", "DataLoaderIterInitialize", "DataIterator")
                         and e[4].get("pid") in pids])
        ordered = sorted(steps, key=lambda e: e[2])
        waits, in_loader, step_s = 0, 0, 0
        previous_end = fetches[0][0] if fetches and fetches[0][0] < ordered[0][2] else None
        iterations = 0
        for e in ordered:
            if previous_end is not None:
                iterations += 1
                waits += max(0, e[2] - previous_end)
                step_s += e[3] - e[2]
                in_loader += sum(max(0, min(b, e[2]) - max(a, previous_end)) for a, b in fetches)
            previous_end = max(previous_end or e[3], e[3])
        input_bound = iterations >= 10 and waits / (waits + step_s) > 0.20
        if in_loader / (waits + step_s) > 0.20:
            dataloader = True  # sprof's clause: the loop waits for its batches in the DataLoader
        # OverallFrameworkMetrics (sprof): time between steps in the loop span, at least 20 %.
        span = max(e[3] for e in steps) - min(e[2] for e in steps)
        between = span - sum(b - a for a, b in union([(e[2], e[3]) for e in steps]))
        framework = between / span >= 0.20

        expected = {"StepOutlier": step_outlier, "Dataloader": dataloader, "MaxInitializationTime": max_init,
                    "InputBound": input_bound, "OverallFrameworkMetrics": framework}
        # The faults are there: three slow steps, one process loading all data on a multi-core machine,
        # and the loop waiting for it.
        self.assertTrue(step_outlier)
        self.assertTrue(input_bound, "the slow loader holds the loop back: %.1f%% waiting" % (100 * waits / (waits + step_s)))
        if cores >= 2:
            self.assertTrue(dataloader, "a DataLoader without workers on %d cores" % cores)

        proc = run_sprof("rules", out, "--json", *sum((["--param", p] for p in PARAMS), []), check=EXIT_OK)
        results = {r["rule"]: r for r in json.loads(proc.stdout)["rules"]}
        for rule, result in results.items():
            if rule == "ProfilerReport":
                continue
            fired = result["status"] == "IssuesFound"
            self.assertEqual(fired, expected.get(rule, False), "%s: %s (%s)" % (rule, result["status"],
                                                                               result["evidence"]))
        self.assertEqual(results["ProfilerReport"]["status"],
                         "IssuesFound" if any(expected.values()) else "NoIssuesFound")
        # No GPU in the job: the GPU rules lack their inputs rather than passing.
        if not any(m["Type"] == "gpu" for m in system):
            for rule in ("LowGPUUtilization", "BatchSize", "GPUMemoryIncrease", "LoadBalancing"):
                self.assertEqual(results[rule]["status"], "NoData", rule)
        run_sprof("rules", out, "--fail-on", "StepOutlier", *sum((["--param", p] for p in PARAMS), []),
                  check=EXIT_ISSUES)

        # analyze tells the same story: the sleeping steps are its slowest, all outliers.
        report = json.loads(run_sprof("analyze", out, "--json", *sum((["--param", p] for p in PARAMS), []),
                                      check=EXIT_OK).stdout)
        train = next(m for m in report["steps"]["modes"] if m["mode"] == "TRAIN")
        self.assertEqual(train["count"], len(steps))
        self.assertEqual(sorted(train["outlier_steps"], key=int), sorted(slow, key=int))
        # Its slowest steps are the three longest in the trace (normally the sleeping ones; on a loaded
        # machine another step can be starved longer), flagged as outliers by the same definition.
        mean = sum(all_durations) / len(all_durations)
        threshold = mean + 3 * math.sqrt(sum((d - mean) ** 2 for d in all_durations) / len(all_durations))
        longest = sorted(steps, key=lambda e: e[2] - e[3])[:3]
        slowest = report["steps"]["slowest"]
        self.assertEqual([s["seconds"] for s in slowest], [(e[3] - e[2]) / 1e6 for e in longest])
        self.assertEqual([s["outlier"] for s in slowest], [(e[3] - e[2]) / 1e6 > threshold for e in longest])
        self.assertGreaterEqual(slowest[-1]["seconds"], STEP_SLEEP_S)
        self.assertEqual([p["phase"] for p in report["phases"]["phases"]],
                         ["initialization", "training_loop", "finalization"])
        self.assertEqual({r["rule"]: r["status"] for r in report["rules"]},
                         {k: v["status"] for k, v in results.items()})


if __name__ == "__main__":
    unittest.main()
