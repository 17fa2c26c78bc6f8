"""Golden outputs: what sprof prints for fixed inputs in the repository (a recorded profile in
tests/golden/profiles/train, smdebug's own test traces), compared byte for byte with
tests/golden/expected/. They pin the rendered pages (analyze, rules, list-stats, the pstats
table) so that moving code between stages is proven to change nothing. After a deliberate
change of output, `tests/golden/regenerate` rewrites them; read the diff before committing."""

import os
import subprocess
import unittest

from sprof_testlib import SOURCE_DIR, SPROF_BIN

GOLDEN = os.path.join(SOURCE_DIR, "tests", "golden")
EXPECTED = os.path.join(GOLDEN, "expected")
PROFILE = "profiles/train"  # relative: the outputs name it as given
SMDEBUG = "../../third_party/smdebug-test-resources/test_traces"
UPDATE = os.environ.get("SPROF_UPDATE_GOLDEN") == "1"

CASES = [
    ("analyze.txt", ["analyze", PROFILE]),
    ("analyze.json", ["analyze", "-f", "json", PROFILE]),
    ("analyze-smdebug.txt", ["analyze", SMDEBUG]),
    ("rules.txt", ["rules", PROFILE]),
    ("rules.json", ["rules", "-f", "json", PROFILE]),
    ("rules-smdebug.json", ["rules", "-f", "json", SMDEBUG]),
    ("rules-smdebug.csv", ["rules", "-f", "csv", SMDEBUG]),
    ("list-stats.txt", ["list-stats", PROFILE]),
    ("list-stats.csv", ["list-stats", "-f", "csv", PROFILE]),
    ("nodes.txt", ["nodes", PROFILE]),
    ("fetch-by-step-samples.txt", ["fetch-by-step", PROFILE, "--step", "2", "--end-step", "6"]),
    ("fetch-by-step-stats.txt", ["fetch-by-step", PROFILE, "--step", "2", "--end-step", "6", "--source", "stats"]),
    ("fetch-by-step-eval.json", ["fetch-by-step", PROFILE, "--mode", "eval", "--step", "0", "--end-step", "2",
                                 "-f", "json"]),
    ("fetch-by-step-cpu.csv", ["fetch-by-step", PROFILE, "--step", "5", "--python-timer", "cpu_time", "-f", "csv"]),
    ("by-phase-training.txt", ["by-phase", "--training-phase", PROFILE, "-l", "8"]),
    ("by-phase-job.json", ["by-phase", "--job-phase", "-f", "json", PROFILE]),
    ("pre-step-zero.txt", ["pre-step-zero", PROFILE, "--sort", "tottime", "-l", "15"]),
    ("post-hook-close.txt", ["post-hook-close", PROFILE, "-l", "15"]),
    ("export-collapsed.txt", ["export", "-f", "collapsed", PROFILE]),
]


class GoldenOutputTest(unittest.TestCase):
    def test_outputs_match(self):
        if not SPROF_BIN:
            raise unittest.SkipTest("SPROF_BIN is not set")
        os.makedirs(EXPECTED, exist_ok=True)
        env = dict(os.environ, TZ="UTC", LC_ALL="C")
        for name, args in CASES:
            proc = subprocess.run([SPROF_BIN, "--color", "never"] + args, cwd=GOLDEN, capture_output=True, text=True,
                                  env=env, timeout=300)
            got = "$ sprof %s\nexit %d\n%s" % (" ".join(args), proc.returncode, proc.stdout)
            path = os.path.join(EXPECTED, name)
            if UPDATE:
                with open(path, "w") as f:
                    f.write(got)
                continue
            with self.subTest(output=name):
                self.assertTrue(os.path.exists(path), "%s is missing: run tests/golden/regenerate" % path)
                with open(path) as f:
                    want = f.read()
                self.assertEqual(got, want, "sprof %s differs from %s (stderr: %s)" % (" ".join(args), path,
                                                                                   proc.stderr[-2000:]))


if __name__ == "__main__":
    unittest.main()
