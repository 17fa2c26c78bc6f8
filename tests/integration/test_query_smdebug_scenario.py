"""smdebug's test_python_analysis, run against sprof: seven profiled intervals, each calling one
distinct function, written by real cProfile (Debian python3.11, pyenv 3.8 and 3.13); every query
returns only its own function, and equals the pstats.Stats.add oracle."""
import os
import shutil
import tempfile
import unittest

import smdebug_semantics as sm
from query_testlib import QueryAssertions, interpreters, make_tree, profiler_dir, sprof_json

FUNCTIONS = ["pre_step_zero_function", "start_end_step_function", "end_start_step_function",
             "between_modes_function", "eval_function", "post_hook_close_function",
             "time_function"]


class SmdebugScenarioTest(QueryAssertions, unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sprof-smdebug-scenario-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def validate(self, doc, expected):
        """smdebug's _validate_analysis for cProfile: each of the seven functions is in the
        answer iff it is expected."""
        names = [f["function"] for f in doc["functions"]]
        self.assertTrue(names, "no stats found")
        for function in FUNCTIONS:
            if function in expected:
                self.assertIn(function, names)
            else:
                self.assertNotIn(function, names)

    def test_seven_intervals(self):
        pythons = interpreters()
        chosen = [label for label in sorted(pythons)
                  if label == "debian-3.11" or label.startswith(("pyenv-3.8.", "pyenv-3.13."))]
        for label in chosen:
            with self.subTest(python=label):
                root = os.path.join(self.tmp, label)
                make_tree(pythons[label], root, "0-algo-1", "--scenario", "smdebug-test",
                          "--framework", "tensorflow")
                a = sm.Analysis(sm.load_profiler_dir(profiler_dir(root, "tensorflow")))

                doc, _ = sprof_json("list-stats", root)
                self.assertEqual(len(doc["stats"]), 7)

                def query(agg, expected, *args):
                    doc, _ = sprof_json(*args)
                    self.assert_aggregate(doc, agg)
                    self.validate(doc, expected)

                query(a.pre_step_zero(), ["pre_step_zero_function"], "pre-step-zero", root)
                query(a.by_step(1), ["start_end_step_function"],
                      "fetch-by-step", root, "--start-step", "1")
                query(a.by_step(1, 2, start_phase="stepend", end_phase="stepstart"),
                      ["end_start_step_function"], "fetch-by-step", root, "--start-step", "1",
                      "--end-step", "2", "--start-phase", "stepend", "--end-phase", "stepstart")
                query(a.between_modes("train", "eval"), ["between_modes_function"],
                      "between-modes", root, "--start-mode", "train", "--end-mode", "eval")
                query(a.by_step(1, mode="eval"), ["eval_function"],
                      "fetch-by-step", root, "--start-step", "1", "--mode", "eval")
                query(a.post_hook_close(), ["post_hook_close_function"], "post-hook-close", root)
                last = a.python_profile_stats[-1]
                start_s = last.start_time_since_epoch_in_micros / 1000000
                query(a.by_time(start_s * 1000000, float("inf")), ["time_function"],
                      "fetch-by-time", root, "--start-time", repr(start_s) + "s")

                doc, _ = sprof_json("by-phase", root, "--training-phase")
                phases = {(p["start_mode"], p["end_mode"]): p for p in doc["phases"]}
                self.validate(phases[("train", "train")],
                              ["start_end_step_function", "end_start_step_function",
                               "time_function"])
                doc, _ = sprof_json("by-phase", root, "--job-phase")
                loop = [p for p in doc["phases"] if p["name"] == "training_loop"][0]
                self.assert_aggregate(loop, a.by_job_phase()["training_loop"][0])
                self.validate(loop, ["start_end_step_function", "end_start_step_function",
                                     "between_modes_function", "eval_function", "time_function"])


if __name__ == "__main__":
    unittest.main()
