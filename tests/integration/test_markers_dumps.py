"""sprof.dumps() / sprof.dump() inside a process under `sprof record` (MXNet's profiler.dumps:
steps per mode, markers, counters) and `sprof markers DIR` after the run print the same table,
line for line, and the same JSON, from the same markers; on every interpreter the bootstrap runs
on (3.8+). Sorting, reset and bad arguments behave as documented."""

import json
import os
import unittest

from sprof_testlib import DEBIAN_PYTHON, TempDirTestCase, pythons, run_sprof

TARGET = r"""
import json, sys, time
import sprof
out = sys.argv[1]
d = sprof.Domain("app")
c = d.new_counter("loss", 10)
m = d.new_marker("checkpoint")
for i in range(5):
    sprof.step(mode=sprof.ModeKeys.TRAIN)
    time.sleep(0.002 * (i + 1))
    c.set_value(10 - i * 1.5)
    c += 0.25
    if i % 2 == 0:
        m.mark()
sprof.step_end()
for i in range(3):
    sprof.step(mode=sprof.ModeKeys.EVAL)
    time.sleep(0.001)
sprof.step_end()
sprof.counter("lr", 0.1)
sprof.mark("done")
with open(out + ".table", "w") as f:
    f.write(sprof.dumps())
with open(out + ".json", "w") as f:
    f.write(sprof.dumps(format="json", sort_by="count", ascending=True))
with open(out + ".avg", "w") as f:
    sprof.dump(sort_by="avg", file=f)
errors = []
for kwargs in ({"format": "xml"}, {"sort_by": "speed"}):
    try:
        sprof.dumps(**kwargs)
    except ValueError as e:
        errors.append(str(e))
with open(out + ".errors", "w") as f:
    json.dump(errors, f)
sprof.dumps(reset=True)
with open(out + ".after_reset", "w") as f:
    f.write(sprof.dumps(format="json"))
"""


class MarkersDumpsTest(TempDirTestCase):
    def record(self, python):
        script = os.path.join(self.tmp, "target.py")
        with open(script, "w") as f:
            f.write(TARGET)
        out = os.path.join(self.tmp, "p")
        base = os.path.join(self.tmp, "dumps")
        run_sprof("record", "-q", "--force", "-o", out, "--", python, script, base, check=0)
        with open(os.path.join(out, "sprof.json")) as f:
            pid = json.load(f)["target_pid"]
        return out, base, pid

    def read(self, path):
        with open(path) as f:
            return f.read()

    def test_dumps_and_markers_agree(self):
        for label, python in sorted(pythons(min_version=(3, 8)).items()):
            with self.subTest(python=label):
                out, base, pid = self.record(python)
                table = self.read(base + ".table")
                self.assertIn("train                                               5", table)
                self.assertIn("eval                                                3", table)
                self.assertIn("app:checkpoint                                      3", table)
                self.assertIn("app:loss                                           11", table)  # 1 + 5 set + 5 +=
                self.assertEqual(run_sprof("markers", out, "--pid", pid, check=0).stdout, table)
                self.assertEqual(run_sprof("markers", out, "--pid", pid, "--sort-by", "avg", check=0).stdout,
                                 self.read(base + ".avg"))
                theirs = json.loads(run_sprof("markers", out, "--pid", pid, "-f", "json", "--sort-by", "count",
                                              "--ascending", check=0).stdout)
                mine = json.loads(self.read(base + ".json"))
                self.assertEqual(mine, theirs)
                self.assertEqual(list(mine["Steps"]), ["eval", "train"])  # ascending by count
                self.assertEqual(mine["Counters"]["app:loss"]["Last Value"], 10 - 4 * 1.5 + 0.25)
                errors = json.loads(self.read(base + ".errors"))
                self.assertEqual(len(errors), 2)
                self.assertIn("'table' or 'json'", errors[0])
                self.assertIn("sort_by", errors[1])
                after = json.loads(self.read(base + ".after_reset"))
                self.assertEqual((after["Steps"], after["Markers"], after["Counters"]), ({}, {}, {}))

    def test_every_process_and_bad_flags(self):
        out, _, pid = self.record(DEBIAN_PYTHON)
        text = run_sprof("markers", out, check=0).stdout
        self.assertTrue(text.startswith("Process %d\nProfile Statistics:" % pid), text[:80])
        doc = json.loads(run_sprof("markers", out, "-f", "json", check=0).stdout)
        self.assertEqual(list(doc), [str(pid)])
        proc = run_sprof("markers", out, "--pid", "1", check=2)
        self.assertIn("--pid 1", proc.stderr)
        proc = run_sprof("markers", os.path.join(self.tmp, "nothing"), check=2)
        self.assertIn("not a profile directory", proc.stderr)


if __name__ == "__main__":
    unittest.main()
