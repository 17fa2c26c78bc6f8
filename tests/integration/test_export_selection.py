"""`sprof export` with the selection flags (--mode, --start-step/--end-step, --start-time/--end-time)
on the recorded profile in tests/golden/profiles/train: a step selection keeps exactly the samples
that time windows over the same steps keep (the steps' times taken from the Chrome trace export:
two ways to the same samples), a window over the whole run keeps everything, a Chrome trace keeps
only the selected steps, and bad flags are usage errors that name the flag."""

import collections
import json
import os
import unittest

from sprof_testlib import SOURCE_DIR, TempDirTestCase, run_sprof

PROFILE = os.path.join(SOURCE_DIR, "tests", "golden", "profiles", "train")


def folded(text):
    return sorted(l for l in text.splitlines() if l.strip())


class ExportSelectionTest(TempDirTestCase):
    def steps(self):
        """[(mode, step_num, start µs, end µs)] from the Chrome trace export."""
        path = os.path.join(self.tmp, "all.json")
        run_sprof("export", PROFILE, "-f", "chrome", "-o", path, check=0)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        return [(e["name"].rsplit(".", 1)[1], e["args"]["step_num"], e["ts"], e["ts"] + e["dur"])
                for e in events if e.get("cat") == "user_annotation"]

    def test_steps_match_their_time_windows(self):
        steps = self.steps()
        self.assertEqual(len(steps), 11)
        # --end-step is included, as fetch-by-step's (one definition for every command).
        for flags, mode, first, end in ((["--start-step", "2", "--end-step", "5"], None, 2, 6),
                                        (["--mode", "eval", "--start-step", "0", "--end-step", "1"], "EVAL", 0, 2)):
            with self.subTest(flags=flags):
                mine = collections.Counter()
                for line in folded(run_sprof("export", PROFILE, "-f", "collapsed", *flags, check=0).stdout):
                    stack, count = line.rsplit(" ", 1)
                    mine[stack] += int(count)
                windows = collections.Counter()
                chosen = [s for s in steps if (mode is None or s[0] == mode) and first <= s[1] < end]
                self.assertTrue(chosen)
                for _, _, start_us, end_us in chosen:
                    out = run_sprof("export", PROFILE, "-f", "collapsed", "--start-time", "%.3f" % start_us,
                                    "--end-time", "%.3f" % end_us, check=0).stdout
                    for line in folded(out):
                        stack, count = line.rsplit(" ", 1)
                        windows[stack] += int(count)
                self.assertTrue(mine)
                self.assertEqual(mine, windows)
                whole = run_sprof("export", PROFILE, "-f", "collapsed", check=0).stdout
                self.assertLess(sum(mine.values()), sum(int(l.rsplit(" ", 1)[1]) for l in folded(whole)))

    def test_window_over_the_whole_run_keeps_everything(self):
        with open(os.path.join(PROFILE, "sprof.json")) as f:
            m = json.load(f)
        start, end = m["start"]["epoch_us"] - 1e6, m["end"]["epoch_us"] + 1e6
        inside = run_sprof("export", PROFILE, "-f", "collapsed", "--start-time", "%.0f" % start,
                           "--end-time", "%.0f" % end, check=0).stdout
        self.assertEqual(folded(inside), folded(run_sprof("export", PROFILE, "-f", "collapsed", check=0).stdout))
        before = run_sprof("export", PROFILE, "-f", "collapsed", "--end-time", "%.0f" % (start + 0.5e6), check=0)
        self.assertEqual(folded(before.stdout), [])

    def test_chrome_trace_keeps_the_selected_steps(self):
        path = os.path.join(self.tmp, "eval.json")
        run_sprof("export", PROFILE, "-f", "chrome", "--mode", "eval", "-o", path, check=0)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        steps = [e["name"] for e in events if e.get("cat") == "user_annotation"]
        self.assertEqual(steps, ["Step:ModeKeys.EVAL"] * 3)

    def test_every_command_takes_the_same_steps(self):
        # One definition of --start-step A --end-step B: steps A to B, both included, in export's
        # samples and Chrome trace as in fetch-by-step's stats directories.
        for first, last in ((2, 5), (0, 0), (6, 7)):
            with self.subTest(first=first, last=last):
                flags = ["--start-step", str(first), "--end-step", str(last)]
                path = os.path.join(self.tmp, "sel.json")
                run_sprof("export", PROFILE, "-f", "chrome", "--mode", "train", *flags, "-o", path, check=0)
                with open(path) as f:
                    exported = sorted(set(int(e["args"]["step_num"]) for e in json.load(f)["traceEvents"]
                                          if e.get("cat") == "user_annotation"))
                self.assertEqual(exported, list(range(first, last + 1)))
                doc = json.loads(run_sprof("fetch-by-step", PROFILE, *flags, "--json", check=0).stdout)
                fetched = sorted(set(s["start_step"] for s in doc["stats"] if s["start_phase"] == "stepstart"))
                self.assertEqual(fetched, list(range(first, last + 1)))

    def test_bad_selections(self):
        proc = run_sprof("export", PROFILE, "-f", "collapsed", "--start-step", "2", "--start-time", "1s", check=2)
        self.assertIn("not both", proc.stderr)
        proc = run_sprof("export", PROFILE, "-f", "collapsed", "--start-step", "500", check=2)
        self.assertIn("no step of", proc.stderr)
        proc = run_sprof("export", PROFILE, "-f", "collapsed", "--start-time", "soon", check=2)
        self.assertIn("--start-time", proc.stderr)


if __name__ == "__main__":
    unittest.main()
