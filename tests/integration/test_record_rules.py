"""`record --rule ... --action ...`: SageMaker Debugger's rules evaluated while a real Python job
runs (every --rule-interval seconds, and at the end), verdict lines on stderr, the rule-output
layout in the profile, actions fired once per new finding (exec: a notifier with the verdict in its
environment; stop: SIGINT, then SIGTERM after --stop-grace for a job that ignores SIGINT), sprof
exiting with the job's status, --fail-on, and bad flags as usage errors."""

import json
import os
import sys
import time
import unittest

from sprof_testlib import TempDirTestCase, fake_nvml, run_sprof

# Every tenth step is much longer: StepOutlier with stddev=1 finds them.
WORKLOAD = r"""
import signal, sys, time
import sprof
if %(ignore_sigint)s:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
sprof.set_mode(sprof.TRAIN)
for i in range(%(steps)d):
    with sprof.step_context():
        work(100000 if i %% 10 else 1500000)
print("finished")
"""


class RecordRules(TempDirTestCase):
    def record(self, *flags, steps=300, ignore_sigint=False, check=None):
        script = os.path.join(self.tmp, "train.py")
        with open(script, "w") as f:
            f.write(WORKLOAD % {"steps": steps, "ignore_sigint": ignore_sigint})
        out = os.path.join(self.tmp, "prof")
        proc = run_sprof("record", "-o", out, "--force", "--no-system-metrics", *flags, "--", sys.executable, script,
                         check=check, cwd=self.tmp)
        with open(os.path.join(out, "sprof.json")) as f:
            manifest = json.load(f)
        return out, proc, manifest

    def test_exec_fires_once_per_finding_and_the_layout_is_written(self):
        log = os.path.join(self.tmp, "notify.log")
        out, proc, manifest = self.record(
            "--rule", "StepOutlier:stddev=1,n_outliers=1", "--rule-interval", "1", "--action",
            "StepOutlier=exec:printf '%s %s %s\\n' \"$SPROF_RULE\" \"$SPROF_RULE_STATUS\" \"$SPROF_PROFILE_DIR\" >> "
            + log, check=0)
        self.assertIn("finished", proc.stdout)
        # Once per minute window: twice when the run crosses a UTC minute.
        self.assertRegex(proc.stderr, r"sprof: rule StepOutlier: IssuesFound, triggered [12] times?: .*outlier")
        with open(log) as f:
            lines = f.read().splitlines()
        section = manifest["live_rules"]
        self.assertGreaterEqual(section["evaluations"], 2)  # at least one while running, one at the end
        # One notification per new finding (the rule's trigger count grew), not one per evaluation.
        fired = [f for f in section["findings"] if f["action"] == "exec"]
        self.assertTrue(fired)
        self.assertEqual(lines, ["StepOutlier IssuesFound %s" % out] * len(fired))
        triggered = [f["triggered"] for f in section["findings"]]
        self.assertEqual(triggered, sorted(set(triggered)))
        self.assertLess(len(fired), section["evaluations"])
        self.assertIsNone(section["stopped_by"])
        report = os.path.join(out, section["output"], "profiler-output", "profiler-reports", "StepOutlier.json")
        with open(report) as f:
            # Once per minute window (smdebug's scan_interval_us) in which it fired: a run that
            # crosses a UTC minute can count twice.
            self.assertEqual(json.load(f)["RuleTriggered"], max(triggered))
        # --fail-on: the command succeeded, the rule found issues: 3.
        self.record("--rule", "StepOutlier:stddev=1,n_outliers=1", "--fail-on", "StepOutlier", check=3)

    def test_stop_ends_the_job_gracefully(self):
        t0 = time.time()
        out, proc, manifest = self.record("--rule", "StepOutlier:stddev=1,n_outliers=1", "--rule-interval", "1",
                                          "--action", "StepOutlier=stop", steps=100000, check=130)
        self.assertLess(time.time() - t0, 60)
        self.assertNotIn("finished", proc.stdout)
        self.assertIn("rule StepOutlier found issues: stopping the job", proc.stderr)
        self.assertEqual(manifest["state"], "complete")
        self.assertEqual(manifest["live_rules"]["stopped_by"]["rule"], "StepOutlier")
        self.assertIn("outlier", manifest["live_rules"]["stopped_by"]["evidence"])

    def test_stop_escalates_to_sigterm(self):
        out, proc, manifest = self.record("--rule", "StepOutlier:stddev=1,n_outliers=1", "--rule-interval", "1",
                                          "--action", "StepOutlier=stop", "--stop-grace", "1", steps=100000,
                                          ignore_sigint=True, check=143)
        self.assertEqual(manifest["live_rules"]["stopped_by"]["rule"], "StepOutlier")

    def test_low_gpu_utilization_stops_a_job_whose_gpus_starve(self):
        # Two "GPUs" (the fake NVML, loaded by sprof's system monitor as libnvidia-ml.so.1) busy at
        # 90 % until the job's data loading becomes slow at step 20; then at 3 %.
        env, utilization = fake_nvml(self.tmp, 90)
        script = os.path.join(self.tmp, "starve.py")
        with open(script, "w") as f:
            f.write("import time\nimport sprof\nsprof.set_mode(sprof.TRAIN)\nfor i in range(400):\n"
                    "    with sprof.step_context():\n        if i == 20:\n"
                    "            open(%r, 'w').write('3')\n            print('starved at', time.time(), flush=True)\n"
                    "        time.sleep(0.25 if i >= 20 else 0.05)\nprint('finished')\n" % utilization)
        out = os.path.join(self.tmp, "prof")
        proc = run_sprof("record", "-o", out, "--system-interval-ms", "100",
                         "--rule", "LowGPUUtilization:patience=5,window=10,scan_interval_us=1000000",
                         "--rule-interval", "1", "--action", "LowGPUUtilization=stop", "--", sys.executable, script,
                         env=env, check=130)
        self.assertNotIn("finished", proc.stdout)
        starved = float(proc.stdout.split("starved at")[1].split()[0])
        with open(os.path.join(out, "sprof.json")) as f:
            section = json.load(f)["live_rules"]
        stopped = section["stopped_by"]
        self.assertEqual(stopped["rule"], "LowGPUUtilization")
        self.assertIn("algo-1/gpu0", stopped["evidence"])
        # Within two rule intervals of the window (10 samples, 1 s) filling with starved values.
        self.assertLess(stopped["at_epoch_s"] - starved, 1 + 2 * 1 + 1.5)
        # Nothing fired while the GPUs were busy.
        self.assertTrue(all(f["at_epoch_s"] >= int(starved) for f in section["findings"]))

    def test_bad_flags(self):
        for flags, message in ((["--rule", "NoSuchRule"], "no such rule"),
                               (["--rule", "StepOutlier:stddev"], "is not param=value"),
                               (["--rule", "StepOutlier:bogus=1"], "bogus"),
                               (["--rule", "StepOutlier", "--action", "CPUBottleneck=stop"], "not among the --rule"),
                               (["--rule", "StepOutlier", "--action", "StepOutlier=explode"], "is not stop, log"),
                               (["--action", "StepOutlier=stop"], "--action needs --rule")):
            with self.subTest(flags=flags):
                proc = run_sprof("record", "-o", os.path.join(self.tmp, "never"), *flags, "--", sys.executable, "-c",
                                 "pass", check=2)
                self.assertIn(message, proc.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "never")))


if __name__ == "__main__":
    unittest.main()
