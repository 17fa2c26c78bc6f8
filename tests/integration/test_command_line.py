"""The command line forgives what a new user types: a misspelt command or option gets a usage error
(exit 2) that names it and suggests the nearest real one, with sprof's prefix; `sprof top` alone
says what it needs."""
import os
import re
import shutil

from sprof_testlib import EXIT_USAGE, SOURCE_DIR, TempDirTestCase, run_sprof

PROFILE = os.path.join(SOURCE_DIR, "tests", "golden", "profiles", "train")


class Typos(TempDirTestCase):
    def test_misspelt_commands(self):
        for word, near in (("analyz", "analyze"), ("recrod", "record"), ("fetch-by-stp", "fetch-by-step"),
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

    def test_british_spelling_runs_analyze(self):
        british = run_sprof("analyse", PROFILE, "--json")
        american = run_sprof("analyze", PROFILE, "--json")
        self.assertEqual(british.stdout, american.stdout)
        self.assertTrue(british.stdout.startswith("{"))

    def test_top_alone(self):
        proc = run_sprof("top", check=EXIT_USAGE)
        self.assertIn("give a command to run", proc.stderr)
        self.assertNotIn("not both", proc.stderr)

    def test_one_wording_per_kind_of_error(self):
        # Each kind the man page's EXIT STATUS lists, made to happen: the last stderr line has that
        # wording and the status is the documented one.
        not_profile = os.path.join(self.tmp, "empty")
        os.makedirs(not_profile)
        a_file = os.path.join(self.tmp, "file")
        open(a_file, "w").close()
        cases = [
            (["recrod", PROFILE], 2, r"^sprof: 'recrod' is not a sprof command \(did you mean 'record'\?\); see sprof --help$"),
            (["analyze", PROFILE, "--jsn"], 2,
             r"^sprof analyze: unknown option --jsn \(did you mean --json\?\); see sprof analyze --help$"),
            (["analyze", os.path.join(self.tmp, "nope")], 2, r"^sprof: error: .*/nope: no such directory$"),
            (["analyze", a_file], 2, r"^sprof: error: .*/file: not a directory$"),
            (["analyze", not_profile], 2, r"^sprof: error: .*/empty: not a profile directory \(.*\)$"),
            (["fetch-by-step", PROFILE, "--start-step", "x"], 2, r"^sprof: error: --start-step: .+$"),
            (["report", PROFILE, "-o", os.path.join(self.tmp, "no", "r.html")], 1,
             r"^sprof: error: .*/no/r\.html: cannot write: .+$"),
            (["record", "-o", os.path.join(self.tmp, "p")], 2,
             r"^sprof: error: record: give a command to run \(sprof record python3 train\.py\) or --pid PID$"),
            (["top"], 2, r"^sprof: error: top: give a command to run \(sprof top python3 train\.py\) or --pid PID$"),
            (["record", "-o", os.path.join(self.tmp, "p"), "--", os.path.join(self.tmp, "no-such-program")], 127,
             r"^sprof: error: .*/no-such-program: command not found$"),
        ]
        for args, status, wording in cases:
            with self.subTest(args=args):
                proc = run_sprof(*args, check=status)
                self.assertRegex(proc.stderr.strip().splitlines()[-1], wording)
        with open(os.path.join(SOURCE_DIR, "man", "sprof.1")) as f:
            man = f.read()
        for documented in ("is not a sprof command", ": unknown option ", ": no such directory", ": cannot write: ",
                           ": command not found", ": give a command to run"):
            self.assertIn(documented, man.replace("\\-", "-").replace('"', ""))

    def test_parent_of_recordings(self):
        # A directory that holds profiles but is none (the system's temporary directory, a runs/
        # folder) gets the same one line from every command, naming the profiles inside it; list-stats
        # used to walk it as a profiler directory and cite a file of one of the profiles below.
        parent = os.path.join(self.tmp, "runs")
        for name in ("a", "b"):
            shutil.copytree(PROFILE, os.path.join(parent, name))
        os.makedirs(os.path.join(parent, "logs", "deeper"))
        expected = r"^sprof: error: %s: not a profile directory \(none of sprof.json, samples/, system/, framework/\); " \
                   r"profiles inside it: %s, %s$" % (re.escape(parent), re.escape(os.path.join(parent, "a")),
                                                    re.escape(os.path.join(parent, "b")))
        for command in (["list-stats"], ["nodes"], ["analyze"], ["rules"], ["fetch-by-step", "--start-step", "0"],
                        ["by-phase", "--job-phase"]):
            with self.subTest(command=command[0]):
                proc = run_sprof(command[0], parent, *command[1:], check=EXIT_USAGE)
                self.assertRegex(proc.stderr.strip(), expected)
        proc = run_sprof("list-stats", os.path.join(parent, "logs"), check=EXIT_USAGE)
        self.assertRegex(proc.stderr.strip(), r"^sprof: error: .*/runs/logs: not a profile directory \(.*\)$")


if __name__ == "__main__":
    import unittest
    unittest.main()
