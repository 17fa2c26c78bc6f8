"""Hostile profile files: strings read from a file never name a path outside the profile, and JSON
nested without bound is a clear error, never a crash (issue: the recorder never lies)."""
import json
import os
import shutil
import subprocess
import unittest

from sprof_testlib import DEBIAN_PYTHON, EXIT_USAGE, TempDirTestCase, run_sprof

# A second of steps: a 30 ms script ended before a sampler on a loaded machine read it, and the
# profile every test copies had no samples/ (flake hunt, issue 33).
SCRIPT = "import time\ndef step():\n    time.sleep(0.01)\nfor i in range(100):\n    step()\n"


class HostileProfileTest(TempDirTestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.root = tempfile.mkdtemp(prefix="sprof-hostile-")
        script = os.path.join(cls.root, "t.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        cls.recorded = os.path.join(cls.root, "recorded")
        run_sprof("record", "--rate", "200", "--no-system-metrics", "-o", cls.recorded, "--", DEBIAN_PYTHON, script,
                  check=0)
        assert os.path.isdir(os.path.join(cls.recorded, "samples")), "the recording every test copies has samples"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def copy(self):
        # Three levels below self.tmp, so that a "../../.." escape would land inside self.tmp.
        profile = os.path.join(self.tmp, "a", "b", "prof")
        shutil.rmtree(profile, ignore_errors=True)  # a failed subtest's copy
        shutil.copytree(self.recorded, profile)
        return profile

    def edit_manifest(self, profile, change):
        path = os.path.join(profile, "sprof.json")
        with open(path) as f:
            manifest = json.load(f)
        change(manifest)
        with open(path, "w") as f:
            json.dump(manifest, f)

    def everything_under(self):
        return sorted(os.path.relpath(os.path.join(d, n), self.tmp) for d, _, files in os.walk(self.tmp) for n in files)

    def assert_nothing_outside(self, profile, before):
        after = self.everything_under()
        outside = [p for p in after if p not in before and not p.startswith(os.path.relpath(profile, self.tmp) + "/")]
        self.assertEqual(outside, [])

    def test_node_id_that_climbs_out(self):
        for bad in ("../../../../escape", "a/b", "..", "x" * 300, "nul\u0000byte"):
            with self.subTest(node_id=bad):
                profile = self.copy()
                self.edit_manifest(profile, lambda m: m["processes"][0].__setitem__("node_id", bad))
                before = self.everything_under()
                proc = run_sprof("stats-dirs", profile, check=EXIT_USAGE)
                self.assertIn("sprof.json: node_id of pid", proc.stderr)
                self.assertIn("outside the profile directory", proc.stderr)
                self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
                self.assert_nothing_outside(profile, before)
                shutil.rmtree(os.path.join(self.tmp, "a"))

    def test_framework_from_the_markers_that_climbs_out(self):
        profile = self.copy()
        markers = os.path.join(profile, "markers", "markers.log")
        with open(markers) as f:
            first = f.readline().split()
        with open(markers, "a") as f:
            f.write("fw %s %s %s ../../../../escape 1.0\n" % (first[1], first[2], first[3]))
        before = self.everything_under()
        proc = run_sprof("stats-dirs", profile, check=EXIT_USAGE)
        self.assertIn("framework of pid", proc.stderr)
        self.assert_nothing_outside(profile, before)

    def test_nesting_bomb_in_the_manifest(self):
        profile = self.copy()
        with open(os.path.join(profile, "sprof.json"), "w") as f:
            f.write("[" * 100000 + "]" * 100000)
        for args in (["export", profile, "-f", "collapsed"], ["analyze", profile], ["stats-dirs", profile],
                     ["fetch-by-step", profile, "--step", "0"]):
            with self.subTest(command=args[0]):
                proc = run_sprof(*args, check=None)
                self.assertEqual(proc.returncode, EXIT_USAGE, proc.stderr)
                self.assertIn("nested deeper than 128 levels", proc.stderr)

    def test_wrong_type_names_the_key(self):
        profile = self.copy()
        self.edit_manifest(profile, lambda m: m.__setitem__("target_pid", "not a number"))
        proc = run_sprof("analyze", profile, check=EXIT_USAGE)
        self.assertIn('"target_pid" has the wrong type (string)', proc.stderr)

    def test_nesting_bomb_in_a_profiler_config(self):
        config = os.path.join(self.tmp, "profilerconfig.json")
        with open(config, "w") as f:
            f.write('{"ProfilingParameters": ' + "[" * 100000 + "]" * 100000 + "}")
        proc = run_sprof("record", "--profiler-config", config, "-o", os.path.join(self.tmp, "p"), "--",
                         DEBIAN_PYTHON, "-c", "pass", check=EXIT_USAGE)
        self.assertIn(config, proc.stderr)
        self.assertIn("nested deeper than 128 levels", proc.stderr)



class OptionValuesTest(TempDirTestCase):
    """Every numeric option is finite and in range, or a usage error naming the option; nothing runs."""

    def test_bad_numbers_are_usage_errors(self):
        marker = os.path.join(self.tmp, "ran")
        command = ["--", DEBIAN_PYTHON, "-c", "open(%r, 'w').close()" % marker]
        cases = [
            (["record", "--rate", "nan"], "--rate"),
            (["record", "--rate", "inf"], "--rate"),
            (["record", "--rate", "0.5"], "--rate"),
            (["record", "--duration", "1e300"], "--duration"),
            (["record", "--duration", "nan"], "--duration"),
            (["record", "--duration", "-1"], "--duration"),
            (["record", "--python-start-time", "nan"], "--python-start-time"),
            (["record", "--python-duration", "inf"], "--python-duration"),
            (["stats-dirs", self.tmp, "--python-duration", "nan"], "--python-duration"),
        ]
        for args, option in cases:
            with self.subTest(args=args):
                out = ["-o", os.path.join(self.tmp, "p")] if args[0] == "record" else []
                proc = run_sprof(*args, *out, *(command if args[0] == "record" else []), check=EXIT_USAGE)
                self.assertIn(option, proc.stderr)
                self.assertFalse(os.path.exists(marker), "the command ran")
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "p")))


if __name__ == "__main__":
    unittest.main()
