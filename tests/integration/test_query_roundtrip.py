"""`-o FILE.pstats` writes the aggregate as a pstats file that `python3 -m pstats` and
pstats.Stats load under every interpreter here, equal to pstats.Stats.add of the inputs."""
import marshal
import os
import subprocess
import unittest

import smdebug_semantics as sm
from query_testlib import interpreters, make_tree, profiler_dir
from sprof_testlib import EXIT_USAGE, TempDirTestCase, run_sprof


class RoundTripTest(TempDirTestCase):
    def setUp(self):
        super().setUp()
        self.pythons = interpreters()
        self.root = os.path.join(self.tmp, "profile")
        make_tree(self.pythons["debian-3.11"], self.root, "0-algo-1")
        self.analysis = sm.Analysis(sm.load_profiler_dir(profiler_dir(self.root)))

    def assert_loads_everywhere(self, path, want):
        with open(path, "rb") as f:
            got = marshal.load(f)
        self.assertEqual(got, want.stats)  # every count, time and caller, exactly
        self.assertEqual(list(got), list(want.stats))  # and in pstats' order
        for label, python in sorted(self.pythons.items()):
            with self.subTest(python=label):
                proc = subprocess.run(
                    [python, "-c", "import pstats, sys; s = pstats.Stats(sys.argv[1]); "
                     "print(len(s.stats), s.total_calls, repr(s.total_tt))", path],
                    capture_output=True, text=True, timeout=120)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stdout.split(),
                                 [str(len(want.stats)), str(want.total_calls),
                                  repr(sum(v[2] for v in want.stats.values()))])
                browser = subprocess.run([python, "-m", "pstats", path],
                                         input="sort cumulative\nstats 5\nquit\n",
                                         capture_output=True, text=True, timeout=120)
                self.assertEqual(browser.returncode, 0, browser.stderr)
                self.assertIn("function calls", browser.stdout)

    def test_fetch_by_step_output(self):
        out = os.path.join(self.tmp, "steps.pstats")
        proc = run_sprof("fetch-by-step", self.root, "--start-step", "0", "--end-step", "4",
                         "-o", out, check=0)
        self.assertEqual(proc.stdout, "")  # -o alone prints no table
        self.assertIn(out, proc.stderr)
        self.assert_loads_everywhere(out, self.analysis.by_step(0, 4).ps)

    def test_job_phase_output(self):
        out = os.path.join(self.tmp, "loop.pstats")
        proc = run_sprof("by-phase", self.root, "--job-phase", "--phase", "training_loop",
                         "-o", out, "--json", check=0)
        self.assertIn('"training_loop"', proc.stdout)  # --json asked for output as well
        self.assert_loads_everywhere(out, self.analysis.by_job_phase()["training_loop"][0].ps)
        # -o needs one phase.
        proc = run_sprof("by-phase", self.root, "--job-phase", "-o", out, check=EXIT_USAGE)
        self.assertIn("--phase", proc.stderr)

    def test_empty_selection_writes_nothing(self):
        out = os.path.join(self.tmp, "none.pstats")
        proc = run_sprof("fetch-by-step", self.root, "--start-step", "0", "--mode", "predict",
                         "-o", out, check=EXIT_USAGE)
        self.assertIn(out, proc.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
