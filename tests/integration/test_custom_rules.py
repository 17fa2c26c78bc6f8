"""Rules users write themselves: threshold rules from a JSON rule file and rule programs (the
example in examples/rules/, written with sprof/rules.py), run by `sprof rules` on a real
recording and by `sprof record` while a real job runs — a job that becomes slow halfway is
stopped by a declarative rule; a crashing, a hanging and a babbling rule program are disabled
with one message each and the recording completes."""

import glob
import json
import os
import statistics
import sys
import time
import unittest

from sprof_testlib import DEBIAN_PYTHON, SOURCE_DIR, TempDirTestCase, run_sprof

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "rules")


def train_step_durations(profile):
    """(step, seconds) of every Step:ModeKeys.TRAIN event in the profile's framework trace."""
    out = []
    for path in glob.glob(os.path.join(profile, "framework", "pevents", "*", "*model_timeline.json")):
        with open(path) as f:
            for e in json.load(f):
                if e.get("ph") == "X" and e.get("name") == "Step:ModeKeys.TRAIN":
                    out.append((int(e["args"]["step_num"]), e["dur"] / 1e6))
    return out

# A training loop whose data loading becomes slow at step SLOW_FROM; prints each step it starts.
# At the end it writes its own clock next to itself: each step's seconds in load_batch and in the
# step body. On a loaded machine compute() keeps the stack while the thread waits for a core, so
# its 10 ms can take 50 ms and load_batch's share of a slow step falls from 0.92 towards 0.7:
# what sprof must measure is the share the job's clock saw, not the share the sleeps asked for.
WORKLOAD = r"""
import json, os, sys, time
import sprof
STEPS, SLOW_FROM = %(steps)d, %(slow_from)d
def load_batch(slow):
    time.sleep(0.12 if slow else 0.01)
def compute():
    deadline = time.perf_counter() + 0.01
    while time.perf_counter() < deadline:
        pass
sprof.set_mode(sprof.TRAIN)
own = []
for i in range(STEPS):
    print("step", i, flush=True)
    with sprof.step_context():
        t0 = time.perf_counter()
        load_batch(i >= SLOW_FROM)
        t1 = time.perf_counter()
        compute()
        own.append({"load_batch_s": t1 - t0, "step_s": time.perf_counter() - t0})
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "own_clock.json"), "w") as f:
    json.dump(own, f)
print("finished", flush=True)
"""

RATE_HZ = 200  # what the recordings below sample at


def share_error(seconds, share):
    """How far a share of the samples taken over `seconds` may stand from the job's own clock:
    three binomial errors of the share over n = seconds x RATE_HZ samples (on a loaded machine
    the sampler's ticks slip, so they count as falling at random, not evenly spaced, which also
    covers where ticks land inside the stretch), plus one sample at each end of the stretch (a
    tick lands anywhere within its period)."""
    n = max(1.0, seconds * RATE_HZ)
    return 3 * (share * (1 - share) / n) ** 0.5 + 2 / n

THRESHOLD_RULES = [
    {"name": "SlowSteps", "metric": "step_time", "aggregation": "mean", "window": {"steps": 5, "mode": "train"},
     "comparison": ">", "threshold": 0.08, "message": "{window} averaged {value} s",
     "recommendation": "look at the data loader"},
    {"name": "LoaderShare", "metric": "function", "function": "load_batch", "aggregation": "share",
     "window": {"steps": 5}, "comparison": ">", "threshold": 80},
]

# Rule programs that go wrong in each way a program can.
CRASHING = "import sys\nsys.stdin.readline()\nsys.exit(3)\n"
HANGING = "import sys, time\nfor line in sys.stdin:\n    time.sleep(600)\n"
BABBLING = "import sys\nfor line in sys.stdin:\n    print('hello', flush=True)\n"
# Answers each evaluation with a verdict nested 100,000 deep (a 200 KB line): parsed by recursion
# it overflowed sprof's stack (issue 29, defect 1).
NESTED = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "evaluate":
        print('{"seq": %d, "status": "NoData", "details": {"x": %s%s}}' % (m["seq"], "[" * 100000, "]" * 100000), flush=True)
"""
# A verdict without "status" and 100 KB of details: the message shows its start, not all of it.
STATUSLESS = r"""
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "evaluate":
        print(json.dumps({"seq": m["seq"], "details": {"x": "y" * 100000}}), flush=True)
"""
# Keeps every record it reads (one JSON file per evaluation), then answers as sprof/rules.py does.
RECORDING = r"""
import json, sys
from sprof.rules import Rule
class Keep(Rule):
    def __init__(self, path):
        super().__init__()
        self.path, self.records = path, []
    def handle(self, record):
        self.records.append(record)
        if record["type"] == "evaluate":
            with open(self.path, "w") as f:
                json.dump(self.records, f)
        return super().handle(record)
Keep(sys.argv[1]).run()
"""


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def by_rule(doc):
    return {r["rule"]: r for r in doc["rules"]}


class CustomRulesAfterTheRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="sprof-custom-rules-")
        cls.script = write(os.path.join(cls.tmp, "train.py"), WORKLOAD % {"steps": 30, "slow_from": 15})
        cls.out = os.path.join(cls.tmp, "prof")
        run_sprof("record", "-o", cls.out, "--rate", str(RATE_HZ), "--", DEBIAN_PYTHON, cls.script, check=0)
        with open(os.path.join(cls.tmp, "own_clock.json")) as f:
            cls.own = json.load(f)
        cls.rule_file = write(os.path.join(cls.tmp, "rules.json"), json.dumps(THRESHOLD_RULES))
        # What the rules must find follows from the step times the job recorded, not from the
        # sleeps it asked for: on a loaded machine a 20 ms step's sleep overshoots, and a window
        # of fast steps can average over SlowSteps' 0.08 s too.
        cls.durations = [d for _, d in sorted(train_step_durations(cls.out))]
        cls.slow_windows = ["train steps %d-%d" % (w, w + 4) for w in range(0, 30, 5)
                            if statistics.mean(cls.durations[w:w + 5]) > 0.08]

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def rules_json(self, *flags, check=0):
        proc = run_sprof("rules", self.out, "--json", *flags, check=check)
        return json.loads(proc.stdout), proc

    def test_threshold_rules_count_complete_windows(self):
        doc, _ = self.rules_json("--rule-file", self.rule_file)
        names = [r["rule"] for r in doc["rules"]]
        # The built-ins first, ProfilerReport summing up only them; then the custom rules.
        self.assertEqual(names[0], "ProfilerReport")
        self.assertEqual(names[-2:], ["SlowSteps", "LoaderShare"])
        plain, _ = self.rules_json()
        self.assertEqual(by_rule(doc)["ProfilerReport"], by_rule(plain)["ProfilerReport"])
        slow = by_rule(doc)["SlowSteps"]
        # Six windows of five train steps; the three after step 15 are slow (0.13 s steps: a
        # sleep never ends early), earlier ones only where the machine's load made them so.
        self.assertEqual(self.slow_windows[-3:], ["train steps 15-19", "train steps 20-24", "train steps 25-29"])
        self.assertEqual((slow["status"], slow["Datapoints"], slow["RuleTriggered"]),
                         ("IssuesFound", 6, len(self.slow_windows)))
        last = statistics.mean(self.durations[25:30])
        self.assertTrue(slow["evidence"].startswith("train steps 25-29 averaged %.4g s [mean step_time" % last),
                        slow["evidence"])
        self.assertEqual(slow["recommendation"], "look at the data loader")
        self.assertEqual([w["window"] for w in slow["Details"]["triggered_windows"]], self.slow_windows)
        # load_batch's share of each window of five steps, by the job's own clock: about 92 % of
        # a slow window and 50 % of a fast one on a quiet machine, less of a slow one under load
        # (WORKLOAD says why). A window clearly above 80 % must trigger, one clearly below must
        # not, and each triggered window's share must be the job's; near 80 % samples decide.
        share = by_rule(doc)["LoaderShare"]
        self.assertEqual(share["Datapoints"], 6)
        triggered = {w["window"]: w["value"] for w in share["Details"]["triggered_windows"]}
        self.assertEqual(share["RuleTriggered"], len(triggered))
        for w in range(0, 30, 5):
            steps = self.own[w:w + 5]
            seconds = sum(s["step_s"] for s in steps)
            own = sum(s["load_batch_s"] for s in steps) / seconds
            error = share_error(seconds, own)
            name = "all steps %d-%d" % (w, w + 4)
            if own * 100 > 80 + error * 100:
                self.assertIn(name, triggered, "own share %.3f, error %.3f" % (own, error))
            if own * 100 < 80 - error * 100:
                self.assertNotIn(name, triggered, "own share %.3f, error %.3f" % (own, error))
            if name in triggered:
                self.assertLessEqual(abs(triggered[name] / 100 - own), error, name)
        if triggered:
            self.assertIn("share of time in load_batch", share["evidence"])
        # Only the rules named run.
        doc, _ = self.rules_json("--rule-file", self.rule_file, "--rule", "loadershare")
        self.assertEqual([r["rule"] for r in doc["rules"]], ["LoaderShare"])

    def test_analyze_and_report_show_custom_rules(self):
        doc = json.loads(run_sprof("analyze", self.out, "--json", "--rule-file", self.rule_file, check=0).stdout)
        rules = {r["rule"]: r for r in doc["rules"]}
        self.assertEqual(rules["SlowSteps"]["RuleTriggered"], len(self.slow_windows))
        # The same verdict `sprof rules` gives (whether a window triggers is the test above's).
        alone, _ = self.rules_json("--rule-file", self.rule_file, "--rule", "LoaderShare")
        self.assertEqual((rules["LoaderShare"]["status"], rules["LoaderShare"]["RuleTriggered"]),
                         (alone["rules"][0]["status"], alone["rules"][0]["RuleTriggered"]))
        run_sprof("analyze", self.out, "--rule-file", self.rule_file, "--fail-on", "SlowSteps", check=3)
        page = os.path.join(self.tmp, "report.html")
        run_sprof("report", self.out, "-o", page, "--rule-file", self.rule_file, check=0)
        with open(page) as f:
            html = f.read()
        self.assertIn("SlowSteps", html)
        self.assertIn("train steps 25-29 averaged", html)

    def test_the_example_rule_program_names_the_slow_function(self):
        doc, proc = self.rules_json("--rule-file", os.path.join(EXAMPLE, "rules.json"), "--rule", "StepRegression")
        rule = by_rule(doc)["StepRegression"]
        self.assertEqual(rule["status"], "IssuesFound", proc.stderr)
        # Every step over 1.5x the first five's median, as the recorded times say: the 15 slow
        # ones, and any fast one the load stretched.
        baseline = statistics.median(self.durations[:5])
        slow_steps = [i for i, d in enumerate(self.durations) if i >= 5 and d > 1.5 * baseline]
        self.assertEqual(slow_steps[-15:], list(range(15, 30)))
        self.assertEqual(rule["RuleTriggered"], len(slow_steps))
        self.assertEqual(rule["Datapoints"], 30)
        # The function named holds at least half the step's samples: load_batch, unless the job's
        # own clock puts its share within sampling error of a half (WORKLOAD says why it can fall).
        own = self.own[29]["load_batch_s"] / self.own[29]["step_s"]
        culprit = "load_batch" if own - share_error(self.own[29]["step_s"], own) > 0.5 else r"\S+"
        self.assertRegex(rule["evidence"], r"^train step 29 took %s s, .* in %s \(%s:\d+\)$"
                         % (("%.3f" % self.durations[29]).replace(".", r"\."), culprit,
                            self.script.replace(".", r"\.")))
        self.assertEqual(rule["RuleParameters"], "baseline_steps:5\nfactor:1.5")
        # The program keeps the last 20 slow steps in its details (all 15 of the slow half, and
        # the fast ones a loaded machine stretched, may be more than 20).
        self.assertEqual(rule["Details"]["slow_steps"], slow_steps[-20:])
        # --rule-program NAME=COMMAND runs the same program.
        doc, _ = self.rules_json("--rule-program", "regress=" + os.path.join(EXAMPLE, "step_regression.py"),
                                 "--rule", "regress")
        self.assertEqual(by_rule(doc)["regress"]["RuleTriggered"], len(slow_steps))

    def test_a_program_reads_the_job_its_steps_and_the_system(self):
        kept = os.path.join(self.tmp, "records.json")
        program = write(os.path.join(self.tmp, "keep.py"), RECORDING)
        self.rules_json("--rule-program", "Keep=%s %s %s" % (DEBIAN_PYTHON, program, kept), "--rule", "Keep")
        with open(kept) as f:
            records = json.load(f)
        start = records[0]
        self.assertEqual(start["type"], "start")
        self.assertEqual((start["rule"], start["live"], start["profile"]), ("Keep", False, self.out))
        self.assertEqual(start["command"], [DEBIAN_PYTHON, self.script])
        self.assertEqual(records[-1], {"type": "evaluate", "seq": 1, "final": True})
        steps = [r for r in records if r["type"] == "step"]
        self.assertEqual([s["step"] for s in steps], list(range(30)))
        self.assertTrue(all(s["mode"] == "train" for s in steps))
        slow = steps[20]
        self.assertGreaterEqual(slow["duration_s"], 0.13)  # 0.12 s of sleep and 0.01 s of work, or more
        self.assertAlmostEqual(slow["duration_s"], self.durations[20], delta=1e-6)
        self.assertAlmostEqual(slow["duration_s"], (slow["end_us"] - slow["start_us"]) / 1e6, delta=1e-6)
        self.assertEqual(slow["functions"][0]["function"], "<module>")
        loader = [f for f in slow["functions"] if f["function"] == "load_batch"][0]
        own = self.own[20]["load_batch_s"] / self.own[20]["step_s"]
        self.assertLessEqual(abs(loader["total_s"] / slow["sampled_s"] - own),
                             share_error(self.own[20]["step_s"], own))
        ticks = [r for r in records if r["type"] == "system"]
        self.assertTrue(ticks)
        self.assertIn("cpu0", ticks[0]["metrics"]["CPUUtilization"])
        times = [r.get("end_us", r.get("timestamp_us")) for r in records[1:-1]]
        self.assertEqual(times, sorted(times))

    def test_rules_list_shows_custom_rules(self):
        proc = run_sprof("rules", "--list", "--rule-file", self.rule_file, "--rule-program", "/bin/true", check=0)
        self.assertIn("SlowSteps  (custom: %s)\n  mean step_time over 5 train steps > 0.08\n" % self.rule_file,
                      proc.stdout)
        self.assertIn("true  (custom: --rule-program)\n  rule program: /bin/true\n", proc.stdout)
        self.assertTrue(proc.stdout.startswith("ProfilerReport\n"))

    def test_bad_rule_files_are_usage_errors(self):
        bad = write(os.path.join(self.tmp, "bad.json"), json.dumps([dict(THRESHOLD_RULES[0], metric="steptime")]))
        proc = run_sprof("rules", self.out, "--rule-file", bad, check=2)
        self.assertIn("--rule-file %s: rule SlowSteps: unknown metric \"steptime\" (known: step_time," % bad, proc.stderr)
        bad = write(os.path.join(self.tmp, "bad.json"), json.dumps([dict(THRESHOLD_RULES[0], treshold=1)]))
        proc = run_sprof("record", "--rule-file", bad, "--", DEBIAN_PYTHON, "-c", "pass", check=2)
        self.assertIn("rule SlowSteps: unknown key \"treshold\"", proc.stderr)
        proc = run_sprof("rules", self.out, "--rule-file", self.rule_file, "--rule", "SlowStep", check=2)
        self.assertIn("unknown rule 'SlowStep'", proc.stderr)
        self.assertIn("SlowSteps, LoaderShare", proc.stderr)
        proc = run_sprof("rules", self.out, "--rule-program", "x=/nonexistent/rule", check=0)
        self.assertIn("rule x (/nonexistent/rule) disabled: cannot run /nonexistent/rule: No such file or directory",
                      proc.stderr)

    def test_broken_programs_are_disabled_once_and_the_rest_runs(self):
        flags = ["--rule-timeout", "2", "--rule-file", self.rule_file]
        for name, text in (("crashing", CRASHING), ("hanging", HANGING), ("babbling", BABBLING), ("nested", NESTED),
                           ("statusless", STATUSLESS)):
            flags += ["--rule-program", "%s=%s %s" % (name, DEBIAN_PYTHON, write(os.path.join(self.tmp, name + ".py"), text))]
        started = time.monotonic()
        doc, proc = self.rules_json(*flags)
        self.assertLess(time.monotonic() - started, 30)
        results = by_rule(doc)
        self.assertEqual(results["SlowSteps"]["RuleTriggered"], len(self.slow_windows))
        expected = {
            "crashing": "it gave no verdict: it exited with status 3",
            "hanging": "it did not answer within 2 s (--rule-timeout)",
            "babbling": "it wrote \"hello\", not a verdict (a JSON object with \"seq\")",
            "nested": "it wrote a verdict nested deeper than 128 levels",
            "statusless": "its verdict {\"details\":{\"x\":\"" + "y" * 183 + "... (100028 bytes): no \"status\"",
        }
        for name, why in expected.items():
            self.assertEqual(results[name]["status"], "NoData")
            self.assertEqual(results[name]["evidence"], "rule program disabled: " + why)
            self.assertEqual(proc.stderr.count("rule %s (" % name), 1, proc.stderr)
            self.assertIn(why, proc.stderr)


class CustomRulesLive(TempDirTestCase):
    def record(self, *flags, steps=200, slow_from=10, check=None):
        script = write(os.path.join(self.tmp, "train.py"), WORKLOAD % {"steps": steps, "slow_from": slow_from})
        out = os.path.join(self.tmp, "prof")
        started = time.monotonic()
        proc = run_sprof("record", "-o", out, "--rate", str(RATE_HZ), *flags, "--", DEBIAN_PYTHON, script, check=check,
                         cwd=self.tmp)
        with open(os.path.join(out, "sprof.json")) as f:
            manifest = json.load(f)
        return out, proc, manifest, time.monotonic() - started

    def test_a_declarative_rule_stops_a_job_that_became_slow(self):
        rule_file = write(os.path.join(self.tmp, "rules.json"), json.dumps(THRESHOLD_RULES[:1]))
        out, proc, manifest, took = self.record("--rule-file", rule_file, "--rule-interval", "1",
                                                "--action", "SlowSteps=stop", "--stop-grace", "5")
        self.assertEqual(proc.returncode, 130, proc.stderr)  # the job's status: SIGINT
        self.assertNotIn("finished", proc.stdout)
        started = [int(l.split()[1]) for l in proc.stdout.splitlines() if l.startswith("step ")]
        # The first slow window (steps 10-14) ends about 1.9 s in; two rule intervals later at
        # most ~8 more 0.13 s steps have run.
        self.assertLess(max(started), 15 + 2 * 8 + 4, proc.stderr)
        section = manifest["live_rules"]
        self.assertEqual(section["stopped_by"]["rule"], "SlowSteps")
        self.assertIn("averaged", section["stopped_by"]["evidence"])
        self.assertEqual([r["name"] for r in section["custom_rules"]], ["SlowSteps"])
        self.assertIn("sprof: rule SlowSteps found issues: stopping the job", proc.stderr)
        # The profile is whole: the steps that ran, and the verdict in the rule-output layout.
        self.assertEqual(manifest["state"], "complete")
        report = os.path.join(out, section["output"], "profiler-output", "profiler-reports", "SlowSteps.json")
        with open(report) as f:
            self.assertGreaterEqual(json.load(f)["RuleTriggered"], 1)
        modes = json.loads(run_sprof("analyze", out, "--json", check=0).stdout)["steps"]["modes"]
        recorded = modes[0]["count"]
        self.assertIn(recorded, (len(started) - 1, len(started)))  # the step SIGINT cut short may end
        doc = json.loads(run_sprof("rules", out, "--rule-file", rule_file, "--json", "--rule", "SlowSteps",
                                   check=0).stdout)
        self.assertEqual(doc["rules"][0]["Datapoints"], recorded // 5)

    def test_a_rule_program_live_runs_its_exec_action(self):
        log = os.path.join(self.tmp, "notified")
        out, proc, manifest, _ = self.record(
            "--rule-file", os.path.join(EXAMPLE, "rules.json"), "--rule", "StepRegression", "--rule-interval", "1",
            "--action", "StepRegression=exec:env | grep ^SPROF_ > %s" % log, steps=40, slow_from=20, check=0)
        self.assertIn("finished", proc.stdout)
        with open(log) as f:
            env = dict(line.split("=", 1) for line in f.read().splitlines())
        self.assertEqual(env["SPROF_RULE"], "StepRegression")
        self.assertEqual(env["SPROF_RULE_STATUS"], "IssuesFound")
        self.assertIn("in load_batch (", env["SPROF_RULE_MESSAGE"])
        self.assertEqual(env["SPROF_PROFILE_DIR"], out)
        section = manifest["live_rules"]
        self.assertGreaterEqual(section["evaluations"], 2)
        final = [f for f in section["findings"] if f["rule"] == "StepRegression"][-1]
        # The program kept its count across evaluations: it judged every step once, as the
        # recorded step times say (over 1.5x the median of the first five). Not a fixed 20: on a
        # loaded machine a 20 ms step's sleep can overshoot by 10 ms and make it slow too (24 seen).
        durations = [d for _, d in sorted(train_step_durations(out))]
        baseline = statistics.median(durations[:5])
        expected = sum(d > 1.5 * baseline for d in durations[5:])
        self.assertGreaterEqual(expected, 20)  # the 20 slow steps, at least
        self.assertEqual(final["triggered"], expected)

    def test_broken_programs_never_stop_the_recording(self):
        flags = ["--rule-timeout", "1", "--rule-interval", "1"]
        for name, text in (("crashing", CRASHING), ("hanging", HANGING), ("nested", NESTED)):
            flags += ["--rule-program", "%s=%s %s" % (name, DEBIAN_PYTHON, write(os.path.join(self.tmp, name + ".py"), text))]
        out, proc, manifest, took = self.record(*flags, steps=30, slow_from=30, check=0)
        self.assertIn("finished", proc.stdout)
        self.assertEqual(manifest["state"], "complete")
        self.assertEqual(proc.stderr.count("rule crashing ("), 1, proc.stderr)
        self.assertEqual(proc.stderr.count("rule hanging ("), 1, proc.stderr)
        self.assertIn("disabled: it did not answer within 1 s (--rule-timeout)", proc.stderr)
        self.assertIn("rule nested (", proc.stderr)
        self.assertIn("disabled: it wrote a verdict nested deeper than 128 levels", proc.stderr)
        modes = json.loads(run_sprof("analyze", out, "--json", check=0).stdout)["steps"]["modes"]
        self.assertEqual([(m["mode"], m["count"]) for m in modes], [("TRAIN", 30)])


if __name__ == "__main__":
    unittest.main()
