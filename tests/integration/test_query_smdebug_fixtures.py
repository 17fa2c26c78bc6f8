"""The real smdebug cProfile fixtures (old directory-name format
<start_us>_<end_us>_<node_id>_<step>, written by smdebug in 2020) are listed and queried."""
import os
import shutil
import unittest

import smdebug_semantics as sm
from query_testlib import QueryAssertions, sprof_json
from sprof_testlib import SMDEBUG_FIXTURES, TempDirTestCase, run_sprof

FIXTURES = os.path.join(SMDEBUG_FIXTURES, "cprofile_python_stats")


class SmdebugFixturesTest(QueryAssertions, TempDirTestCase):
    def setUp(self):
        super().setUp()
        if not os.path.isdir(FIXTURES):
            self.fail("missing smdebug fixtures: %s" % FIXTURES)
        self.analysis = sm.Analysis(sm.load_profiler_dir(FIXTURES))

    def test_list_stats(self):
        doc, _ = sprof_json("list-stats", FIXTURES)
        self.assert_records(doc["stats"], self.analysis.all_stats)
        self.assertEqual(len(doc["stats"]), len(os.listdir(FIXTURES)))
        self.assertEqual({s["name_format"] for s in doc["stats"]}, {"old"})
        self.assertEqual({s["node_id"] for s in doc["stats"]}, {"151-algo-1"})
        table = run_sprof("list-stats", FIXTURES, check=0).stdout
        for name in os.listdir(FIXTURES):
            self.assertIn(name, table)

    def test_queries(self):
        a = self.analysis
        steps = sorted(s.start_step for s in a.python_profile_stats)
        doc, _ = sprof_json("fetch-by-step", FIXTURES, "--mode", "global",
                            "--start-step", str(steps[0]), "--end-step", str(steps[-1]))
        self.assert_aggregate(doc, a.by_step(steps[0], steps[-1], mode="global"))
        self.assertEqual(len(doc["stats"]), len(steps))
        for step in steps:
            doc, _ = sprof_json("fetch-by-step", FIXTURES, "--mode", "global",
                                "--start-step", str(step), "--sort", "tottime")
            self.assert_aggregate(doc, a.by_step(step, mode="global"), "tottime")
        first = a.python_profile_stats[0]
        doc, _ = sprof_json("fetch-by-time", FIXTURES, "--start-time",
                            repr(first.start_time_since_epoch_in_micros), "--end-time",
                            repr(first.end_time_since_epoch_in_micros))
        self.assert_aggregate(doc, a.by_time(first.start_time_since_epoch_in_micros,
                                             first.end_time_since_epoch_in_micros))
        doc, _ = sprof_json("by-phase", FIXTURES, "--training-phase")
        self.assertEqual([p["name"] for p in doc["phases"]], ["global-global"])
        self.assert_aggregate(doc["phases"][0], a.by_training_phase()[("global", "global")])

    def test_default_mode_misses_old_format_with_a_hint(self):
        doc, proc = sprof_json("fetch-by-step", FIXTURES, "--start-step", "2")
        self.assertEqual(doc["stats"], [])
        self.assertIn("old-format", proc.stderr)
        self.assertIn("--mode global", proc.stderr)

    def test_old_layout_from_profile_root(self):
        # smdebug's own tree kept these under framework/tensorflow/cProfile/ (no node level).
        profiler = os.path.join(self.tmp, "framework", "tensorflow", "cProfile")
        shutil.copytree(FIXTURES, profiler)
        doc, _ = sprof_json("list-stats", self.tmp)
        self.assertEqual(len(doc["stats"]), len(os.listdir(FIXTURES)))
        self.assertEqual({s["framework"] for s in doc["stats"]}, {"tensorflow"})
        a = sm.Analysis(sm.load_profiler_dir(profiler))
        doc, _ = sprof_json("fetch-by-step", self.tmp, "--mode", "global", "--start-step", "0",
                            "--end-step", "10")
        self.assert_aggregate(doc, a.by_step(0, 10, mode="global"))


if __name__ == "__main__":
    unittest.main()
