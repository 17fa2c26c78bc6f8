"""Iterations = input wait + step, on real training loops that time themselves
(workloads/input_loop.py): a torch loop whose DataLoader is the bottleneck is reported input-bound by
analyze (text, JSON, the report in a real browser) and by the rules, with its wait share within 5
points of the job's own timing; a compute-bound loop is not; a plain-Python loop recorded with
--step-fn shows what its training thread did while it waited (load_batch)."""
import json
import os
import re
import subprocess
import unittest

from browser_testlib import chromium
from sprof_testlib import DEBIAN_PYTHON, EXIT_ISSUES, EXIT_OK, TempDirTestCase, run_sprof

WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads", "input_loop.py")


def have_torch():
    return subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


class InputWait(TempDirTestCase):
    def record(self, name, kind, *args, record_args=()):
        profile = os.path.join(self.tmp, name)
        result = os.path.join(self.tmp, name + ".json")
        run_sprof("-q", "record", *record_args, "-o", profile, "--", DEBIAN_PYTHON, WORKLOAD, kind, result, *args,
                  check=EXIT_OK)
        with open(result) as f:
            own = json.load(f)
        return profile, own

    def analyze(self, profile):
        return json.loads(run_sprof("analyze", profile, "--json", check=EXIT_OK).stdout)

    def own_share(self, own, skip_first=False):
        # The job's own clock, counted as sprof counts: wait / (wait + step) over the iterations.
        waits, steps = own["waits"], own["steps"]
        if skip_first:
            waits, steps = waits[1:], steps[1:]
        return sum(waits) / (sum(waits) + sum(steps))

    def test_a_dataloader_bound_torch_loop(self):
        if not have_torch():
            self.skipTest("python3 has no torch (python3-torch)")
        # 2 workers, 8 items a batch, 2 ms an item: ~8 ms a batch per worker against a step of < 1 ms.
        profile, own = self.record("bound", "torch", "--workers", "2", "--item-sleep", "0.002")
        report = self.analyze(profile)
        it = report["iterations"]
        loop = it["modes"][0]
        self.assertEqual(loop["mode"], "TRAIN")
        # Every step counts: the first waits from the iterator's creation (the workers' start).
        self.assertEqual(loop["iterations"], len(own["steps"]))
        self.assertAlmostEqual(loop["input_wait_share"], self.own_share(own), delta=0.05)
        self.assertGreater(loop["dataloader_share"], 0.5 * loop["input_wait_share"])
        self.assertAlmostEqual(loop["input_wait_share"] + loop["step_share"], 1.0, places=9)
        self.assertEqual(loop["verdict"], "highly input-bound")
        self.assertRegex(it["headline"], r"^training loop \(TRAIN, \d+ iterations\): \d+\.\d% waiting for input "
                                         r"\(DataLoader \d+\.\d%\), \d+\.\d% in steps: highly input-bound$")
        slowest = report["steps"]["slowest"][0]
        self.assertIn("input_wait_s", slowest)

        # The text says it first, then per mode.
        text = run_sprof("analyze", profile, check=EXIT_OK).stdout.splitlines()
        self.assertEqual(text[1], it["headline"])
        self.assertTrue(any(line.startswith("ITERATIONS") for line in text))

        # The rules agree with what analyze prints.
        rules = {r["rule"]: r for r in json.loads(run_sprof("rules", profile, "--json", check=EXIT_OK).stdout)["rules"]}
        for name in ("InputBound", "Dataloader", "OverallFrameworkMetrics"):
            self.assertEqual(rules[name]["status"], "IssuesFound", "%s: %s" % (name, rules[name]["evidence"]))
        self.assertAlmostEqual(rules["InputBound"]["Details"]["input_wait_percent"], 100 * loop["input_wait_share"],
                               places=6)
        run_sprof("analyze", profile, "--fail-on", "InputBound", check=EXIT_ISSUES)

        # The report, opened in a real browser: the headline and the stacked bars drawn.
        if chromium():
            page = os.path.join(self.tmp, "report.html")
            run_sprof("report", profile, "-o", page, check=EXIT_OK)
            dom = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                  "--user-data-dir=" + os.path.join(self.tmp, "chromium"), "--virtual-time-budget=5000",
                                  "--dump-dom", "file://" + page], capture_output=True, text=True, timeout=120).stdout
            m = re.search(r'<p id="loop-headline"[^>]*>(.*?)</p>', dom)
            self.assertIsNotNone(m, "no headline in the report's page")
            self.assertEqual(m.group(1), it["headline"])
            self.assertIn('id="iterations-chart"', dom)
            self.assertIn('class="iterations-table"', dom)

    def test_a_compute_bound_torch_loop(self):
        if not have_torch():
            self.skipTest("python3 has no torch (python3-torch)")
        # Items in the training process, made in no time; a wide model's step takes milliseconds.
        profile, own = self.record("compute", "torch", "--workers", "0", "--item-sleep", "0", "--width", "1024",
                                   "--items", "480")
        loop = self.analyze(profile)["iterations"]["modes"][0]
        self.assertAlmostEqual(loop["input_wait_share"], self.own_share(own), delta=0.05)
        self.assertLess(loop["input_wait_share"], 0.2)
        rules = {r["rule"]: r for r in json.loads(run_sprof("rules", profile, "--json", check=EXIT_OK).stdout)["rules"]}
        self.assertEqual(rules["InputBound"]["status"], "NoIssuesFound", rules["InputBound"]["evidence"])
        self.assertEqual(rules["OverallFrameworkMetrics"]["status"], "NoIssuesFound",
                         rules["OverallFrameworkMetrics"]["evidence"])

    def test_a_plain_loop_waiting_in_its_own_loader(self):
        # --step-fn train_step: steps are its calls; the waits are load_batch's sleeps. The first call
        # has no step before it and no DataLoader: 29 measured iterations of 30.
        profile, own = self.record("plain", "plain", "--load-sleep", "0.02", "--steps", "30",
                                   record_args=("--step-fn", "train_step"))
        report = self.analyze(profile)
        it = report["iterations"]
        loop = it["modes"][0]
        self.assertEqual(loop["iterations"], len(own["steps"]) - 1)
        self.assertAlmostEqual(loop["input_wait_share"], self.own_share(own, skip_first=True), delta=0.05)
        self.assertEqual(loop["dataloader_s"], 0)
        self.assertEqual(it["wait_functions"][0]["function"], "load_batch", it["wait_functions"])
        self.assertIn("(in load_batch)", it["headline"])
        # Wall time while waiting: what was sampled then is no more than the waits themselves.
        self.assertLessEqual(it["wait_sampled_s"], loop["input_wait_s"] * 1.001 + 0.011)

        # The sleeping loader is in view by default everywhere (the step thread's wall time, the
        # waits marked), and leaves with --on-cpu.
        functions = report["functions"]
        self.assertEqual(functions["time_view"]["description"], "wall time of the step threads")
        top = functions["top"][0]
        self.assertEqual(top["function"], "load_batch", functions["top"][:3])
        # load_batch sleeps 20 ms a call; on a loaded machine the woken thread then waits for a core
        # in state R, which /proc reports as running: up to a scheduler slice or two (a few ms)
        # of each call. 70 % holds with 6 ms of such a wait per call (89 % seen under the flake
        # hunt's load; 90 % was the bound before).
        self.assertGreater(top["waiting_s"], 0.7 * top["self_s"])
        self.assertGreater(top["self_s"], 0.5 * sum(own["waits"]))
        on_cpu = json.loads(run_sprof("analyze", profile, "--json", "--on-cpu", check=EXIT_OK).stdout)["functions"]
        self.assertEqual(on_cpu["time_view"]["description"], "on-CPU time of the step threads")
        # Its sleeps leave the on-CPU view: what stays is the state-R time after each wake-up (the
        # bound above: under 30 % of its wall time), which on a loaded machine can still outweigh
        # the short train_step and keep it first, so the test weighs it, not its rank.
        on_cpu_load = [f for f in on_cpu["top"] if f["function"] == "load_batch"]
        self.assertLess(on_cpu_load[0]["self_s"] if on_cpu_load else 0, 0.35 * top["self_s"], on_cpu["top"][:3])
        text = run_sprof("analyze", profile, check=EXIT_OK).stdout
        self.assertIn("TOP FUNCTIONS (self time: wall time of the step threads; WAITING: of it off-CPU)", text)
        folded_path = os.path.join(self.tmp, "plain.folded")
        folded = run_sprof("export", profile, "-o", folded_path, check=EXIT_OK)
        with open(folded_path) as f:
            lines = f.read().splitlines()
        # Counted in samples, relative to the loop's (the stacks through plain()): a sampler starved
        # by a loaded machine takes fewer samples, not a different mix. Not relative to every
        # sample: the interpreter's start (imports) is CPU work a loaded machine stretches while
        # the sleeps stay 20 ms, and it was seen to take half of the samples (65 waiting of 135).
        # Within the loop the job's own clock gives load_batch's share of the time, at least 70 %
        # of which is off-CPU (the bound above), so the waiting share is at least 0.7 x that,
        # less the sampling error of a share of n samples (at most 0.5 / sqrt(n); three of them).
        loop = [(line.rpartition(" ")[0], int(line.rpartition(" ")[2])) for line in lines if ";plain (" in line]
        waiting = sum(n for stack, n in loop if "load_batch (" in stack and stack.endswith(";[waiting]"))
        total = sum(n for _, n in loop)
        bound = 0.7 * self.own_share(own) - 1.5 / total ** 0.5
        self.assertGreater(waiting, bound * total, "load_batch's waits in the export: %d of the loop's %d samples, "
                           "own share %.3f" % (waiting, total, self.own_share(own)))
        self.assertIn("wall time of the step threads", folded.stderr)
        page = os.path.join(self.tmp, "plain.html")
        run_sprof("report", profile, "-o", page, check=EXIT_OK)
        with open(page) as f:
            data = json.loads(re.search(r'<script type="application/json" id="sprof-data">(.*?)</script>', f.read(),
                                        re.S).group(1).replace("<\\/", "</"))
        first = data["flames"][0]
        self.assertEqual(first["label"], "whole run, wall time of the step threads")
        self.assertIn('"load_batch (', json.dumps(first["root"]))
        self.assertIn('"[waiting]"', json.dumps(first["root"]))


if __name__ == "__main__":
    unittest.main()
