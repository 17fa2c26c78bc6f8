"""The bundled example (examples/train_cprofile_demo.py, run by scripts/demo) writes stats that
sprof lists and queries, equal to the pstats.Stats.add oracle."""
import os
import re
import subprocess
import unittest

import smdebug_semantics as sm
from query_testlib import QueryAssertions, profiler_dir, sprof_json
from sprof_testlib import DEBIAN_PYTHON, SOURCE_DIR, TempDirTestCase

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "train_cprofile_demo.py")


class ExampleTest(QueryAssertions, TempDirTestCase):
    def test_example_profile(self):
        out = os.path.join(self.tmp, "demo")
        proc = subprocess.run([DEBIAN_PYTHON, EXAMPLE, out, "--epochs", "2", "--steps", "3",
                               "--eval-steps", "1"], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        written = int(re.search(r"wrote (\d+) stats files", proc.stdout).group(1))
        a = sm.Analysis(sm.load_profiler_dir(profiler_dir(out)))
        doc, _ = sprof_json("list-stats", out)
        self.assertEqual(len(doc["stats"]), written)
        self.assert_records(doc["stats"], a.all_stats)
        doc, _ = sprof_json("fetch-by-step", out, "--start-step", "0", "--end-step", "5",
                            "--sort", "tottime")
        self.assert_aggregate(doc, a.by_step(0, 5), "tottime")
        self.assertIn("train_step", [f["function"] for f in doc["functions"]])


if __name__ == "__main__":
    unittest.main()
