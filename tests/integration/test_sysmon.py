"""The system monitor over a real busy process tree: its files are what smdebug's reader accepts
(file names, JSON lines, one Timestamp per tick) and what sprof's rules read."""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import time
import unittest

from sprof_testlib import DEBIAN_PYTHON, EXIT_OK, EXIT_USAGE, TempDirTestCase, run_sprof

# smdebug's validate_system_profiler_file regex.
SMDEBUG_SYSTEM_FILE = re.compile(r".+/system/.+/(\d{10}).algo-\d+.json")

BUSY_TREE = """
import multiprocessing, time
def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass
if __name__ == "__main__":
    child = multiprocessing.Process(target=spin, args=(8,))
    child.start()
    spin(8)
    child.join()
"""


def tree_cpu_seconds(root):
    """utime + stime of `root` and its descendants, read from /proc independently of sprof."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    tree, total = [root], 0
    while tree:
        pid = tree.pop()
        total += stats.get(pid, (0, 0))[1]
        tree.extend(p for p, (ppid, _) in stats.items() if ppid == pid)
    return total / os.sysconf("SC_CLK_TCK")


class SystemMonitorRun(TempDirTestCase):
    def test_busy_tree(self):
        busy = subprocess.Popen([DEBIAN_PYTHON, "-c", BUSY_TREE])
        self.addCleanup(busy.wait)
        self.addCleanup(busy.kill)
        time.sleep(0.5)  # let it fork its worker
        out = os.path.join(self.tmp, "profile")
        cpu_before = tree_cpu_seconds(busy.pid)
        proc = run_sprof("-q", "sysmon", "-o", out, "--pid", busy.pid, "--duration", "3", "--system-interval-ms",
                         "100", "--no-gpu", check=EXIT_OK)
        cpu_used = tree_cpu_seconds(busy.pid) - cpu_before
        stats = json.loads(proc.stdout)
        self.assertGreaterEqual(stats["ticks"], 20)

        files = sorted(glob.glob(os.path.join(out, "system", "incremental", "*", "*")))
        self.assertTrue(files)
        records = []
        for path in files:
            self.assertRegex(path, SMDEBUG_SYSTEM_FILE)
            minute = int(os.path.basename(path).split(".")[0])
            self.assertEqual(minute % 60, 0)
            self.assertEqual(os.path.basename(os.path.dirname(path)), time.strftime("%Y%m%d%H", time.gmtime(minute)))
            with open(path) as f:
                for line in f:
                    record = json.loads(line)
                    self.assertEqual(list(record), ["Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"])
                    self.assertEqual(record["NodeId"], "algo-1")
                    self.assertEqual(int(record["Timestamp"]) // 60 * 60, minute)
                    records.append(record)

        ticks = collections.OrderedDict()
        for r in records:
            ticks.setdefault(r["Timestamp"], []).append(r)
        self.assertEqual(len(ticks), stats["ticks"])
        cores = os.cpu_count()
        for ts, tick in ticks.items():
            kinds = collections.Counter((r["Type"], r["Dimension"]) for r in tick)
            self.assertEqual(kinds[("cpu", "CPUUtilization")], cores)
            self.assertEqual(kinds[("cpu", "I/OWaitPercentage")], cores)
            self.assertEqual(kinds[("memory", "")], 1)
            self.assertEqual(kinds[("i/o", "")], 3)
            self.assertEqual(kinds[("network", "Algorithm")], 2)
            self.assertEqual(kinds[("process", "ProcessTree")], 3)
            for r in tick:
                if r["Dimension"] in ("CPUUtilization", "I/OWaitPercentage") and r["Type"] == "cpu":
                    self.assertTrue(0 <= r["Value"] <= 100, r)

        by_name = collections.defaultdict(list)
        for r in records:
            if r["Type"] == "process":
                by_name[r["Name"]].append(r["Value"])
        # The CPU time the records add up to (percent of a core x 0.1 s per tick) is what /proc says the
        # two spinning processes used over the run, give or take the monitor's start and stop.
        measured = sum(v / 100 * 0.1 for v in by_name["CPUUtilization"])
        self.assertGreater(cpu_used, 0.2)
        self.assertAlmostEqual(measured, cpu_used, delta=0.2 * cpu_used + 0.1)
        self.assertGreaterEqual(max(by_name["ProcessCount"]), 2)
        self.assertGreater(min(by_name["ResidentMemoryBytes"]), 1 << 20)

        # sprof's reader reads it all: OverallSystemUsage's Datapoints are the CPU timestamps.
        rules = json.loads(run_sprof("rules", out, "--rule", "OverallSystemUsage", "--json", check=EXIT_OK).stdout)
        self.assertEqual(rules["rules"][0]["Datapoints"], len(ticks))
        self.assertEqual(rules["rules"][0]["status"], "NoIssuesFound")

    def test_interval_must_be_smdebugs(self):
        proc = run_sprof("sysmon", "-o", self.tmp, "--system-interval-ms", "250", "--duration", "1", check=EXIT_USAGE)
        self.assertIn("--system-interval-ms 250", proc.stderr)

    def test_without_nvml_says_so_once(self):
        proc = run_sprof("sysmon", "-o", self.tmp, "--duration", "0.3", "--system-interval-ms", "100", check=EXIT_OK)
        gpus = json.loads(proc.stdout)["gpus"]
        if gpus:
            self.skipTest("this machine has NVML and %d GPU(s)" % gpus)
        self.assertEqual(proc.stderr.count("no GPU metrics"), 1, proc.stderr)
        for path in glob.glob(os.path.join(self.tmp, "system", "incremental", "*", "*.json")):
            with open(path) as f:
                self.assertNotIn('"gpu"', f.read())


if __name__ == "__main__":
    unittest.main()
