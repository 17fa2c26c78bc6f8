"""The command line forgives what a new user types: a misspelt command or option gets a usage error
(exit 2) that names it and suggests the nearest real one, with sprof's prefix; `sprof top` alone
says what it needs."""
import os

from sprof_testlib import EXIT_USAGE, SOURCE_DIR, TempDirTestCase, run_sprof

PROFILE = os.path.join(SOURCE_DIR, "tests", "golden", "profiles", "train")


class Typos(TempDirTestCase):
    def test_misspelt_commands(self):
        for word, near in (("analyse", "analyze"), ("recrod", "record"), ("fetch-by-stp", "fetch-by-step"),
                           ("frobnicate", None)):
            with self.subTest(word=word):
                proc = run_sprof("-q", word, PROFILE, check=EXIT_USAGE)
                self.assertIn("sprof: '%s' is not a sprof command" % word, proc.stderr)
                if near:
                    self.assertIn("did you mean '%s'?" % near, proc.stderr)
                else:
                    self.assertNotIn("did you mean", proc.stderr)

    def test_misspelt_options(self):
        proc = run_sprof("analyze", PROFILE, "--jsn", check=EXIT_USAGE)
        self.assertIn("sprof analyze: unknown option --jsn (did you mean --json?)", proc.stderr)
        proc = run_sprof("export", PROFILE, "--on-cpus", check=EXIT_USAGE)
        self.assertIn("sprof export: unknown option --on-cpus (did you mean --on-cpu?)", proc.stderr)
        proc = run_sprof("nodes", PROFILE, "--xyzzy", check=EXIT_USAGE)
        self.assertIn("sprof nodes: unknown option --xyzzy;", proc.stderr)

    def test_top_alone(self):
        proc = run_sprof("top", check=EXIT_USAGE)
        self.assertIn("give a command to run", proc.stderr)
        self.assertNotIn("not both", proc.stderr)


if __name__ == "__main__":
    import unittest
    unittest.main()
