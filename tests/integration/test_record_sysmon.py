"""System metrics during `sprof record`: files in smdebug's layout with node names its reader accepts,
ticks for the whole run, and the CPU and RSS of the target's process tree (a parent and a child that
both burn CPU and the child holding a known amount of memory, then children too brief for any tick)."""
import collections
import glob
import json
import os
import re
import time

from sprof_testlib import DEBIAN_PYTHON, EXIT_OK, EXIT_USAGE, TempDirTestCase, run_sprof
from record_helpers import manifest

# smdebug's validate_system_profiler_file regex, and its directory level (<YYYYMMDDHH>).
SMDEBUG_SYSTEM_FILE = re.compile(r".+/system/.+/(\d{10}).algo-\d+.json")

TREE = """
import json, multiprocessing, os, sys, time
def spin(cpu_seconds, megabytes):
    ballast = bytearray(megabytes << 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1  # touch every page so it is resident
    end = time.process_time() + cpu_seconds  # CPU time, so a loaded machine only makes it slower
    while time.process_time() < end:
        pass
if __name__ == "__main__":
    # A child that lives less than the monitor's full-scan period, then brief ones that may start
    # and be reaped between two ticks (their time reaches the tree only through the parent's cutime).
    child = multiprocessing.Process(target=spin, args=(0.8, 200))
    child.start()
    spin(1.2, 0)
    child.join()
    for _ in range(4):
        brief = multiprocessing.Process(target=spin, args=(0.1, 0))
        brief.start()
        brief.join()
    t = os.times()
    with open(sys.argv[1], "w") as f:  # CPU time of the whole tree, as the kernel accounts it
        json.dump(t.user + t.system + t.children_user + t.children_system, f)
"""


def records(profile):
    out = []
    for path in sorted(glob.glob(os.path.join(profile, "system", "**", "*.json"), recursive=True)):
        with open(path) as f:
            out.extend((path, json.loads(line)) for line in f if line.strip())
    return out


class RecordSystemMetrics(TempDirTestCase):
    def test_whole_run_with_process_tree(self):
        out = os.path.join(self.tmp, "profile")
        script = os.path.join(self.tmp, "tree.py")
        with open(script, "w") as f:
            f.write(TREE)
        began = time.time()
        cpu_file = os.path.join(self.tmp, "cpu.json")
        run_sprof("-q", "record", "--subprocesses", "--system-interval-ms", "100", "-o", out, "--", DEBIAN_PYTHON,
                  script, cpu_file, check=EXIT_OK)
        ended = time.time()
        recs = records(out)
        self.assertTrue(recs, "no system metrics written")
        for path, r in recs:
            self.assertRegex(path, SMDEBUG_SYSTEM_FILE)
            minute = int(os.path.basename(path).split(".")[0])
            self.assertEqual(minute % 60, 0)
            self.assertEqual(os.path.basename(os.path.dirname(path)), time.strftime("%Y%m%d%H", time.gmtime(minute)))
            self.assertEqual(r["NodeId"], "algo-1")
            self.assertTrue(minute <= r["Timestamp"] < minute + 60, (path, r))
            self.assertEqual(list(r), ["Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"])
        ticks = collections.OrderedDict()
        for _, r in recs:
            ticks.setdefault(r["Timestamp"], []).append(r)
        stamps = sorted(ticks)
        m = manifest(out)
        start = m["start"]["epoch_us"] / 1e6
        # The whole run: the first tick one interval after the target started, the last within a few
        # intervals of the end, no gap much longer than the interval.
        self.assertLess(stamps[0] - start, 1.0, "first tick %.3f s after start" % (stamps[0] - start))
        self.assertLess(ended - stamps[-1], 1.0, "last tick %.3f s before record returned" % (ended - stamps[-1]))
        self.assertGreaterEqual(stamps[-1] - stamps[0], 1.0)
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        self.assertLess(max(gaps), 1.0, "a gap of %.3f s between ticks at 100 ms" % max(gaps))
        self.assertGreater(len(stamps), (stamps[-1] - stamps[0]) / 0.1 * 0.7)
        self.assertLessEqual(stamps[-1], ended + 0.1)
        self.assertGreaterEqual(stamps[0], began - 0.1)
        # Every tick has the standard records; the process tree is there while the target runs.
        cores = os.cpu_count()
        for stamp in stamps:
            kinds = collections.Counter((r["Type"], r["Dimension"]) for r in ticks[stamp])
            self.assertEqual(kinds[("cpu", "CPUUtilization")], cores)
            self.assertEqual(kinds[("memory", "")], 1)
        tree = [{r["Name"]: r["Value"] for r in ticks[s] if r["Type"] == "process"} for s in stamps]
        tree = [t for t in tree if t]
        self.assertGreater(len(tree), len(stamps) // 2)
        # The tree's CPU over the ticks adds up to the CPU time the kernel charged the parent and its
        # child (less what ran after the last tick), and at some tick the child (≥ 200 MiB) is counted.
        with open(cpu_file) as f:
            kernel_cpu = json.load(f)
        measured, previous = 0.0, stamps[0] - 0.1
        for stamp in stamps:
            cpu = next((r["Value"] for r in ticks[stamp] if r["Type"] == "process" and r["Name"] == "CPUUtilization"), 0)
            measured += cpu / 100 * (stamp - previous)
            previous = stamp
        self.assertGreater(kernel_cpu, 2.3)
        self.assertAlmostEqual(measured, kernel_cpu, delta=max(0.4, 0.15 * kernel_cpu))
        self.assertGreaterEqual(max(t["ProcessCount"] for t in tree), 2)
        self.assertGreater(max(t["ResidentMemoryBytes"] for t in tree), 200 << 20)
        # The manifest says what ran.
        self.assertEqual(m["system_metrics"]["interval_ms"], 100)
        self.assertGreater(m["system_metrics"]["ticks"], 10)

    def test_interval_is_checked_and_metrics_can_be_turned_off(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "--system-interval-ms", "300", "-o", out, "--", DEBIAN_PYTHON, "-c", "pass",
                         check=EXIT_USAGE)
        self.assertIn("--system-interval-ms 300", proc.stderr)
        self.assertFalse(os.path.exists(out))
        run_sprof("-q", "record", "--no-system-metrics", "-o", out, "--", DEBIAN_PYTHON, "-c",
                  "import time; time.sleep(0.8)", check=EXIT_OK)
        self.assertFalse(os.path.exists(os.path.join(out, "system")))
        self.assertNotIn("system_metrics", manifest(out))

    def test_default_interval_is_500_ms(self):
        out = os.path.join(self.tmp, "p")
        run_sprof("-q", "record", "-o", out, "--", DEBIAN_PYTHON, "-c", "import time; time.sleep(2.2)", check=EXIT_OK)
        stamps = sorted({r["Timestamp"] for _, r in records(out)})
        self.assertGreaterEqual(len(stamps), 3)
        gaps = sorted(b - a for a, b in zip(stamps, stamps[1:]))
        self.assertAlmostEqual(gaps[len(gaps) // 2], 0.5, delta=0.1)
        self.assertEqual(manifest(out)["system_metrics"]["interval_ms"], 500)


if __name__ == "__main__":
    import unittest
    unittest.main()
