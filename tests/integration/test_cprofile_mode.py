"""Deterministic mode (--python-profiler cprofile) and profiling windows on real processes.

The bootstrap's cProfile runs inside real interpreters (under sprof_marker_probe with the
variables `record` sets, and under `sprof record` itself); the stats are read back with the
interpreter's own pstats, and call counts are compared with cProfile run directly."""
import glob
import json
import marshal
import os
import re
import subprocess
import sys
import unittest

from bootstrap_testlib import ProbeTestCase
from sprof_testlib import SOURCE_DIR, pythons, run_sprof

HOST = "testhost"
NAME = re.compile(r"^(\w+)-(\*|\d+)-(\w+)-([0-9.e+]+)_(\w+)-(\*|\d+)-(\w+)-([0-9.e+]+)$")

# Step i (global step i) runs body(i): work() i + 1 times, fib(12) once (recursive: 465 calls, 1
# primitive), a 50 ms sleep and 50 ms of CPU; the gap after it calls gap_work() twice.
FUNCTIONS = """
import sys, time

def work(n):
    return sum(range(n))

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def nap(seconds):
    time.sleep(seconds)

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def body(i):
    for _ in range(i + 1):
        work(1000)
    fib(12)
    nap(0.05)
    spin(0.05)

def gap_work():
    return work(10)
"""

STEPS_PROGRAM = FUNCTIONS + """
import sprof
for i in range(7):
    sprof.step()
    body(i)
    sprof.step_end()
    gap_work()
    gap_work()
print("done")
"""

# cProfile run directly around what step 3 runs.
DIRECT_PROGRAM = FUNCTIONS + """
import cProfile, json, pstats
profiler = cProfile.Profile()
profiler.enable()
body(3)
profiler.disable()
stats = pstats.Stats(profiler).stats
print(json.dumps({k[2]: list(v[:2]) for k, v in stats.items() if k[0].endswith("direct.py")}))
"""


def read_stats(python, path):
    """{function name: [cc, nc, tt, ct]} as the given interpreter's pstats reads the file."""
    code = ("import json, pstats, sys\n"
            "s = pstats.Stats(sys.argv[1])\n"
            "print(json.dumps({'%s:%d:%s' % k if k[0] != '~' else k[2]: list(v[:4])"
            " for k, v in s.stats.items()}))\n")
    out = subprocess.run([python, "-c", code, path], capture_output=True, text=True, check=True)
    table = json.loads(out.stdout)
    by_name = {}
    for key, value in table.items():
        name = key.rsplit(":", 1)[-1] if ":" in key and not key.startswith("<") else key
        by_name[name] = value
    return by_name


class CprofileTestCase(ProbeTestCase):
    def cprofile_env(self, profile, window="all", timer="total_time"):
        return {"SPROF_PYTHON_PROFILER": "cprofile", "SPROF_PROFILE_DIR": profile,
                "SPROF_NODE_HOST": HOST, "SPROF_WINDOW": window, "SPROF_CPROFILE_TIMER": timer}

    def stats_dirs(self, profile, framework="python"):
        """{pid: [parsed names in start order]} under framework/<framework>/cprofile."""
        out = {}
        for node in glob.glob(os.path.join(profile, "framework", framework, "cprofile", "*")):
            pid, host = os.path.basename(node).split("-", 1)
            self.assertEqual(host, HOST)
            names = []
            for d in os.listdir(node):
                m = NAME.match(d)
                self.assertIsNotNone(m, d)
                self.assertEqual(os.listdir(os.path.join(node, d)), ["python_stats"], d)
                names.append((float(m.group(4)), m.groups(), os.path.join(node, d, "python_stats")))
            out[int(pid)] = [(g, path) for _, g, path in sorted(names)]
        return out

    @staticmethod
    def label(groups):
        """'train-2-stepstart_train-2-stepend' from a parsed name (times left out)."""
        return "%s-%s-%s_%s-%s-%s" % (groups[0], groups[1], groups[2], groups[4], groups[5], groups[6])


class WindowedStepsTest(CprofileTestCase):
    def run_steps(self, python, window, timer="total_time"):
        program = self.write("steps.py", STEPS_PROGRAM)
        profile = os.path.join(self.tmp, "profile-%s" % os.path.basename(python))
        result = self.probe([python, program], env=self.cprofile_env(profile, window, timer))
        self.assertEqual(result.exit_code, 0, result.stderr)
        self.assertIn("done", result.stdout)
        self.assertEqual(result.sprof_lines(), [])
        return result, profile

    def test_step_window_gives_exactly_those_steps(self):
        result, profile = self.run_steps("/usr/bin/python3", "steps 2 3")
        dirs = self.stats_dirs(profile)
        self.assertEqual(list(dirs), [result.pid])
        labels = [self.label(g) for g, _ in dirs[result.pid]]
        self.assertEqual(labels, [
            "prestepzero-*-start_global-0-stepstart",
            "global-2-stepstart_global-2-stepend",
            "global-2-stepend_global-3-stepstart",
            "global-3-stepstart_global-3-stepend",
            "global-3-stepend_global-4-stepstart",
            "global-4-stepstart_global-4-stepend",
            "global-4-stepend_global-5-stepstart",
            "global-6-stepend_posthookclose-*-end",
        ])
        # The intervals are the step timeline's: same labels, and times within 1 ms of the
        # markers' (one monotonic-to-Unix offset apart).
        timeline = {}
        for interval in result.process(result.pid)["intervals"]:
            s, e = interval["start"], interval["end"]
            timeline["%s-%s-%s_%s-%s-%s" % (s["mode"], s["step"], s["phase"], e["mode"], e["step"], e["phase"])] = (
                (e["t"] - s["t"]) / 1e3)
        for groups, _ in dirs[result.pid]:
            label = self.label(groups)
            if label.startswith("prestepzero") or label.endswith("posthookclose-*-end"):
                continue
            self.assertIn(label, timeline)
            self.assertAlmostEqual(float(groups[7]) - float(groups[3]), timeline[label], delta=1000)

        # python3 -m pstats loads every file.
        for _, path in dirs[result.pid]:
            browse = subprocess.run(["/usr/bin/python3", "-m", "pstats", path], input="stats 3\nquit\n",
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(browse.returncode, 0, browse.stderr)
            self.assertIn("function calls", browse.stdout)

        # Exact call counts: step i calls work() i + 1 times; fib(12) is 465 calls, 1 primitive.
        for groups, path in dirs[result.pid]:
            stats = read_stats("/usr/bin/python3", path)
            if groups[2] == "stepstart":
                step = int(groups[1])
                self.assertEqual(stats["work"][:2], [step + 1, step + 1], groups)
                self.assertEqual(stats["fib"][:2], [1, 465], groups)
                self.assertNotIn("gap_work", stats)
            elif groups[2] == "stepend" and groups[4] != "posthookclose":
                self.assertEqual(stats["gap_work"][:2], [2, 2], groups)
                self.assertEqual(stats["work"][:2], [2, 2], groups)
                self.assertNotIn("fib", stats)

    def test_call_counts_match_cprofile_run_directly(self):
        result, profile = self.run_steps("/usr/bin/python3", "steps 3 1")
        step3 = [p for g, p in self.stats_dirs(profile)[result.pid] if g[1] == "3" and g[2] == "stepstart"]
        self.assertEqual(len(step3), 1)
        ours = read_stats("/usr/bin/python3", step3[0])
        direct = subprocess.run(["/usr/bin/python3", self.write("direct.py", DIRECT_PROGRAM)],
                                capture_output=True, text=True, check=True)
        expected = json.loads(direct.stdout)
        self.assertEqual(sorted(expected), ["body", "fib", "nap", "spin", "work"])
        self.assertEqual({k: ours[k][:2] for k in expected}, expected)

    def test_every_supported_python(self):
        # The bootstrap runs on 3.8+; every interpreter's own pstats reads its files.
        for label, python in pythons(min_version=(3, 8)).items():
            with self.subTest(python=label):
                result, profile = self.run_steps(python, "steps 1 2")
                dirs = self.stats_dirs(profile)[result.pid]
                steps = [g for g, _ in dirs if g[2] == "stepstart" and g[0] != "prestepzero"]
                self.assertEqual([g[1] for g in steps], ["1", "2"])
                for groups, path in dirs:
                    stats = read_stats(python, path)
                    if groups[2] == "stepstart":
                        self.assertEqual(stats["work"][:2], [int(groups[1]) + 1] * 2)
                        self.assertEqual(stats["fib"][:2], [1, 465])

    def test_timers(self):
        # nap() sleeps 50 ms and spin() burns 50 ms of CPU in every step.
        measured = {}
        for timer in ("total_time", "cpu_time", "off_cpu_time"):
            result, profile = self.run_steps("/usr/bin/python3", "steps 2 1", timer)
            path = [p for g, p in self.stats_dirs(profile)[result.pid] if g[1] == "2" and g[2] == "stepstart"][0]
            stats = read_stats("/usr/bin/python3", path)
            measured[timer] = (stats["nap"][3], stats["spin"][3])  # cumulative seconds
        total, cpu, off = measured["total_time"], measured["cpu_time"], measured["off_cpu_time"]
        self.assertGreater(total[0], 0.045)   # the sleep is wall time...
        self.assertLess(cpu[0], 0.01)         # ...but no CPU time
        self.assertGreater(off[0], 0.045)     # ...and all off-CPU
        self.assertGreater(total[1], 0.045)   # the spin is wall time
        self.assertGreater(cpu[1], 0.045)     # and CPU time (its off-CPU share depends on the load)

    def test_time_window_and_default_cycle(self):
        # A start time in the past with a long duration: every step; the "default" timer cycles.
        result, profile = self.run_steps("/usr/bin/python3", "time 1 1e12", "default")
        steps = [g for g, _ in self.stats_dirs(profile)[result.pid] if g[2] == "stepstart" and g[0] == "global"]
        self.assertEqual([g[1] for g in steps], [str(i) for i in range(7)])
        # A start time far in the future: only pre-step-zero and post-hook-close.
        result, profile = self.run_steps("/usr/bin/python3", "time 1e11 -")
        labels = [self.label(g) for g, _ in self.stats_dirs(profile)[result.pid]]
        self.assertEqual(labels, ["prestepzero-*-start_global-0-stepstart", "global-6-stepend_posthookclose-*-end"])

    def test_failure_never_breaks_the_target(self):
        program = self.write("steps.py", STEPS_PROGRAM)
        blocker = self.write("blocker", "a file, not a directory\n")
        result = self.probe(["/usr/bin/python3", program], env=self.cprofile_env(os.path.join(blocker, "p")))
        self.assertEqual(result.exit_code, 0, result.stderr)
        self.assertIn("done", result.stdout)
        lines = result.sprof_lines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn("cProfile mode disabled", lines[0])
        # The markers still flow.
        self.assertEqual(len(result.kinds("sb")), 7)


class TorchTest(CprofileTestCase):
    def test_torch_training_goes_under_pytorch(self):
        try:
            subprocess.run(["/usr/bin/python3", "-c", "import torch"], check=True, capture_output=True)
        except subprocess.CalledProcessError:
            raise unittest.SkipTest("no torch for /usr/bin/python3")
        profile = os.path.join(self.tmp, "profile")
        example = os.path.join(SOURCE_DIR, "examples", "train_torch.py")
        result = self.probe(["/usr/bin/python3", example, "--epochs", "1", "--workers", "0", "--size", "640"],
                            env=self.cprofile_env(profile, "steps 2 3"))
        self.assertEqual(result.exit_code, 0, result.stderr)
        self.assertEqual(result.sprof_lines(), [])
        self.assertFalse(os.path.exists(os.path.join(profile, "framework", "python")))
        dirs = self.stats_dirs(profile, "pytorch")[result.pid]
        labels = [self.label(g) for g, _ in dirs]
        self.assertEqual(labels[0], "prestepzero-*-start_train-0-stepstart")
        self.assertEqual([l for l in labels if "-stepstart_" in l and not l.startswith("prestepzero")],
                         ["train-2-stepstart_train-2-stepend", "train-3-stepstart_train-3-stepend",
                          "train-4-stepstart_train-4-stepend"])
        self.assertTrue(labels[-1].endswith("_posthookclose-*-end"), labels)
        for groups, path in dirs:
            if groups[2] == "stepstart" and groups[0] == "train":
                stats = read_stats("/usr/bin/python3", path)
                self.assertIn("forward", stats)  # the model ran inside the step
                self.assertIn("backward", stats)
        # sprof's own functions (the DataLoader wrapper, the step hooks) are in no stats file; the
        # loop calls the DataLoader iterator directly.
        loop_calls_iterator = False
        for _, path in dirs:
            with open(path, "rb") as f:
                raw = marshal.load(f)
            for (file, line, name), (cc, nc, tt, ct, callers) in raw.items():
                self.assertNotRegex(file, r"/sprof/_[a-z_]+\.py$|sitecustomize\.py$", (path, name))
                for caller in callers:
                    self.assertNotRegex(caller[0], r"/sprof/_[a-z_]+\.py$|sitecustomize\.py$", (path, name))
                if name == "__next__" and file.endswith("torch/utils/data/dataloader.py"):
                    loop_calls_iterator |= any(c[2] == "train" and c[0] == example for c in callers)
        self.assertTrue(loop_calls_iterator, "no python_stats has train calling the DataLoader iterator")


@unittest.skipUnless(os.path.exists(os.environ.get("SPROF_BIN", "")), "sprof is not built")
class RecordFlagsTest(CprofileTestCase):
    def test_conflicting_window_flags(self):
        out = run_sprof("record", "--python-start-step", "2", "--python-start-time", "1700000000", "-o",
                        os.path.join(self.tmp, "p"), "--", "/usr/bin/python3", "-c", "pass")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--python-start-step", out.stderr)
        self.assertIn("--python-start-time", out.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "p")))

    def test_bad_window_values(self):
        for flags in (["--python-num-steps", "0"], ["--python-duration", "-1"], ["--python-start-step", "-3"]):
            out = run_sprof("record", *flags, "--", "/usr/bin/python3", "-c", "pass")
            self.assertEqual(out.returncode, 2, (flags, out.stderr))

    def test_bad_profiler_config_names_the_file(self):
        cases = {
            "broken.json": '{"ProfilingParameters": ',
            "name.json": json.dumps({"ProfilingParameters": {"PythonProfilingConfig":
                                                             "{'StartStep': 1, 'ProfilerName': 'perf'}"}}),
            "both.json": json.dumps({"ProfilingParameters": {"PythonProfilingConfig":
                                                             "{'StartStep': 1, 'DurationInSeconds': 3}"}}),
        }
        for name, text in cases.items():
            path = self.write(name, text)
            out = run_sprof("record", "--profiler-config", path, "--", "/usr/bin/python3", "-c", "pass")
            self.assertEqual(out.returncode, 2, (name, out.stderr))
            self.assertIn(path, out.stderr)
        missing = os.path.join(self.tmp, "missing.json")
        out = run_sprof("record", "--profiler-config", missing, "--", "/usr/bin/python3", "-c", "pass")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn(missing, out.stderr)

    def test_cprofile_needs_a_launched_command(self):
        out = run_sprof("record", "--python-profiler", "cprofile", "--pid", str(os.getpid()))
        self.assertEqual(out.returncode, 2, out.stderr)
        if self.record_injects():
            out = run_sprof("record", "--python-profiler", "cprofile", "--no-inject", "--", "/usr/bin/python3",
                            "-c", "pass")
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertIn("--no-inject", out.stderr)

    def record_injects(self):
        help_text = run_sprof("record", "--help").stdout
        return "--no-inject" in help_text

    def test_record_cprofile_window(self):
        if not self.record_injects():
            self.skipTest("this record does not inject the bootstrap yet")
        program = self.write("steps.py", STEPS_PROGRAM)
        config = self.write("profilerconfig.json", json.dumps({"ProfilingParameters": {
            "PythonProfilingConfig": '{"StartStep": 2, "NumSteps": 3, "ProfilerName": "cProfile", }'}}))
        for how, flags in (("flags", ["--python-profiler", "cprofile", "--python-start-step", "2",
                                      "--python-num-steps", "3"]),
                           ("config", ["--profiler-config", config])):
            with self.subTest(how=how):
                profile = os.path.join(self.tmp, "rec-" + how)
                out = run_sprof("record", "-q", "-o", profile, *flags, "--", "/usr/bin/python3", program)
                self.assertEqual(out.returncode, 0, out.stderr)
                with open(os.path.join(profile, "sprof.json")) as f:
                    manifest = json.load(f)
                self.assertEqual(manifest["python_profiling"]["profiler"], "cprofile")
                nodes = glob.glob(os.path.join(profile, "framework", "python", "cprofile", "*"))
                self.assertEqual([os.path.basename(n) for n in nodes],
                                 [p["node_id"] for p in manifest["processes"]])
                names = sorted(os.listdir(nodes[0]), key=lambda n: float(NAME.match(n).group(4)))
                steps = [NAME.match(n).group(2) for n in names if NAME.match(n).group(3) == "stepstart"
                         and NAME.match(n).group(1) == "global"]
                self.assertEqual(steps, ["2", "3", "4"])
                for n in names:
                    if NAME.match(n).group(3) == "stepstart" and NAME.match(n).group(1) == "global":
                        stats = read_stats("/usr/bin/python3", os.path.join(nodes[0], n, "python_stats"))
                        self.assertEqual(stats["work"][:2], [int(NAME.match(n).group(2)) + 1] * 2)

    def test_window_selects_sampled_stats(self):
        if not self.record_injects():
            self.skipTest("this record does not inject the bootstrap yet")
        program = self.write("steps.py", STEPS_PROGRAM)
        profile = os.path.join(self.tmp, "sampled")
        out = run_sprof("record", "-q", "-o", profile, "--python-start-step", "2", "--python-num-steps", "3",
                        "--", "/usr/bin/python3", program)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertFalse(os.path.exists(os.path.join(profile, "framework", "python", "cprofile")))
        nodes = glob.glob(os.path.join(profile, "framework", "python", "pyinstrument", "*"))
        self.assertEqual(len(nodes), 1, nodes)
        names = sorted(os.listdir(nodes[0]), key=lambda n: float(NAME.match(n).group(4)))
        self.assertEqual([self.label(NAME.match(n).groups()) for n in names], [
            "prestepzero-*-start_global-0-stepstart",
            "global-2-stepstart_global-2-stepend", "global-2-stepend_global-3-stepstart",
            "global-3-stepstart_global-3-stepend", "global-3-stepend_global-4-stepstart",
            "global-4-stepstart_global-4-stepend", "global-4-stepend_global-5-stepstart",
            "global-6-stepend_posthookclose-*-end",
        ])

        # stats-dirs after the fact: another timer keeps record's window; another window replaces
        # the directories; --every-interval gives them all.
        def labels():
            return [self.label(NAME.match(n).groups())
                    for n in sorted(os.listdir(nodes[0]), key=lambda n: float(NAME.match(n).group(4)))]
        recorded = labels()
        with open(os.path.join(profile, "sprof.json")) as f:
            self.assertEqual(json.load(f)["interval_stats"]["window"], "3 steps from 2")
        run_sprof("-q", "stats-dirs", profile, "--python-timer", "cpu_time", check=0)
        self.assertEqual(labels(), recorded)
        run_sprof("-q", "stats-dirs", profile, "--python-start-step", "4", "--python-num-steps", "2", check=0)
        self.assertEqual(labels(), [
            "prestepzero-*-start_global-0-stepstart",
            "global-4-stepstart_global-4-stepend", "global-4-stepend_global-5-stepstart",
            "global-5-stepstart_global-5-stepend", "global-5-stepend_global-6-stepstart",
            "global-6-stepend_posthookclose-*-end",
        ])
        with open(os.path.join(profile, "sprof.json")) as f:
            section = json.load(f)["interval_stats"]
        self.assertEqual(section["timer"], "total_time")
        self.assertEqual(section["window"], "2 steps from 4")
        run_sprof("-q", "stats-dirs", profile, "--every-interval", check=0)
        everything = labels()
        self.assertEqual(len(everything), 2 * 7 + 1)  # 7 steps: each one and the gap after it, and before step 0
        self.assertIn("global-0-stepstart_global-0-stepend", everything)
        proc = run_sprof("stats-dirs", profile, "--every-interval", "--python-start-step", "1", check=2)
        self.assertIn("--every-interval", proc.stderr)


if __name__ == "__main__":
    unittest.main()
