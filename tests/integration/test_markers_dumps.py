"""sprof.dumps() / sprof.dump() inside a process under `sprof record` (MXNet's profiler.dumps:
steps per mode, tasks, frames, events, markers, counters) and `sprof markers DIR` after the run print the same table,
line for line, and the same JSON, from the same markers; on every interpreter the bootstrap runs
on (3.8+). Sorting, reset and bad arguments behave as documented."""

import json
import os
import unittest

from sprof_testlib import DEBIAN_PYTHON, TempDirTestCase, pythons, run_sprof
from test_trace_windows import check_trace_event_format

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
# MXNet's Task, Frame and Event.
load = d.new_task("load")
for i in range(4):
    load.start()
    time.sleep(0.001)
    load.stop()
with sprof.Frame(d, "iteration"):
    time.sleep(0.003)
with sprof.Event("save"):
    time.sleep(0.002)
sprof.Task(d, "never-started").stop()
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
                self.assertIn("\nTasks\n=================\n", table)
                self.assertIn("app:load                                            4", table)
                self.assertIn("\nFrames\n=================\n", table)
                self.assertIn("\nEvents\n=================\n", table)
                self.assertIn("sprof:save                                          1", table)
                self.assertNotIn("never-started", table)
                self.assertEqual(run_sprof("markers", out, "--pid", pid, check=0).stdout, table)
                self.assertEqual(run_sprof("markers", out, "--pid", pid, "--sort-by", "avg", check=0).stdout,
                                 self.read(base + ".avg"))
                theirs = json.loads(run_sprof("markers", out, "--pid", pid, "-f", "json", "--sort-by", "count",
                                              "--ascending", check=0).stdout)
                mine = json.loads(self.read(base + ".json"))
                self.assertEqual(mine, theirs)
                self.assertEqual(list(mine["Steps"]), ["eval", "train"])  # ascending by count
                self.assertEqual(mine["Counters"]["app:loss"]["Last Value"], 10 - 4 * 1.5 + 0.25)
                self.assertGreaterEqual(mine["Tasks"]["app:load"]["Min Time (ms)"], 1.0)
                self.assertGreaterEqual(mine["Frames"]["app:iteration"]["Total Time (ms)"], 3.0)
                self.assertEqual(mine["Unit"], {"Steps": "ms", "Tasks": "ms", "Frames": "ms", "Events": "ms"})
                errors = json.loads(self.read(base + ".errors"))
                self.assertEqual(len(errors), 2)
                self.assertIn("'table' or 'json'", errors[0])
                self.assertIn("sort_by", errors[1])
                after = json.loads(self.read(base + ".after_reset"))
                self.assertEqual((after["Steps"], after["Markers"], after["Counters"]), ({}, {}, {}))
                self.assertNotIn("Tasks", after)

    def test_every_process_and_bad_flags(self):
        out, _, pid = self.record(DEBIAN_PYTHON)
        text = run_sprof("markers", out, check=0).stdout
        self.assertTrue(text.startswith("Process %d\nProfile Statistics:" % pid), text[:80])
        doc = json.loads(run_sprof("markers", out, "-f", "json", check=0).stdout)
        self.assertEqual(list(doc), [str(pid)])
        # The same in the Chrome trace: tasks, frames and events as slices, markers as instants,
        # counters as counter tracks.
        trace = os.path.join(self.tmp, "trace.json")
        run_sprof("export", out, "-f", "chrome", "-o", trace, check=0)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        check_trace_event_format(self, {"traceEvents": events})
        loads = [e for e in events if e["name"] == "load"]
        self.assertEqual([(e["ph"], e["cat"], e["args"]["domain"]) for e in loads], [("X", "task", "app")] * 4)
        self.assertTrue(all(e["dur"] >= 1000 for e in loads))  # 1 ms sleeps, in µs
        self.assertEqual([e["cat"] for e in events if e["name"] in ("iteration", "save")], ["frame", "event"])
        self.assertEqual(len([e for e in events if e["ph"] == "i" and e["name"] == "checkpoint"]), 3)
        losses = [e["args"]["loss"] for e in events if e["ph"] == "C" and e["name"] == "app:loss"]
        self.assertEqual(len(losses), 11)
        self.assertEqual(losses[-1], 10 - 4 * 1.5 + 0.25)
        proc = run_sprof("markers", out, "--pid", "1", check=2)
        self.assertIn("--pid 1", proc.stderr)
        proc = run_sprof("markers", os.path.join(self.tmp, "nothing"), check=2)
        self.assertIn("no such directory", proc.stderr)


if __name__ == "__main__":
    unittest.main()
