"""One machine is one machine in every view: a torch job with two DataLoader workers recorded with
--subprocesses has three processes (three smdebug node ids "<pid>-<host>") and system metrics named
algo-1 on disk (the only name smdebug's reader takes); analyze (text, JSON, the report), nodes and
the rules' evidence show one machine, the host, with its processes under it."""
import glob
import json
import os
import re
import subprocess
import unittest

from sprof_testlib import DEBIAN_PYTHON, EXIT_OK, TempDirTestCase, run_sprof

WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads", "input_loop.py")
# smdebug's validate_system_profiler_file (smdebug/profiler/utils.py): a system file it reads.
SMDEBUG_SYSTEM_FILE = re.compile(r".+/system/.+/(\d{10}).algo-\d+.json")


def have_torch():
    return subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


class OneMachine(TempDirTestCase):
    def test_a_job_with_dataloader_workers(self):
        if not have_torch():
            self.skipTest("python3 has no torch (python3-torch)")
        profile = os.path.join(self.tmp, "p")
        run_sprof("-q", "record", "--subprocesses", "--system-interval-ms", "100", "-o", profile, "--",
                  DEBIAN_PYTHON, WORKLOAD, "torch", os.path.join(self.tmp, "own.json"), "--workers", "2",
                  "--items", "2400", check=EXIT_OK)  # workers that live ~3 s: record finds children once a second
        with open(os.path.join(profile, "sprof.json")) as f:
            manifest = json.load(f)
        host = manifest["host"]
        nodes = sorted(p["node_id"] for p in manifest["processes"])
        main = "%d-%s" % (manifest["target_pid"], host)
        self.assertIn(main, nodes)
        self.assertGreaterEqual(len(nodes), 3, "the main process and two DataLoader workers")

        # On disk: smdebug's names, which its reader takes.
        system_files = glob.glob(os.path.join(profile, "system", "incremental", "*", "*.json"))
        self.assertTrue(system_files)
        for path in system_files:
            self.assertRegex(path, SMDEBUG_SYSTEM_FILE)
        self.assertEqual(manifest["system_metrics"]["node_id"], "algo-1")

        # analyze: one machine, the host, all processes under it, its system metrics named.
        report = json.loads(run_sprof("analyze", profile, "--json", check=EXIT_OK).stdout)
        machines = report["job"]["machines"]
        self.assertEqual(len(machines), 1, machines)
        self.assertEqual(machines[0]["host"], host)
        self.assertEqual(machines[0]["system_node"], "algo-1")
        self.assertTrue(set(nodes) <= set(machines[0]["processes"]), (nodes, machines[0]["processes"]))
        self.assertEqual({m["machine"] for m in report["system"]["metrics"]}, {host})
        text = run_sprof("analyze", profile, check=EXIT_OK).stdout
        rows = [line for line in text.splitlines() if re.match(r"  machines? ", line)]
        self.assertEqual(len(rows), 1, text)
        self.assertIn("%s: %d processes" % (host, len(machines[0]["processes"])), rows[0])
        self.assertNotRegex(text, r"\n  algo-1 ")  # no system table row under the on-disk name

        # nodes: the host once, the workers under it with their parent.
        table = run_sprof("nodes", profile, check=EXIT_OK).stdout.splitlines()
        self.assertEqual(table[0].split()[:3], ["MACHINE", "NODE", "PARENT"])
        self.assertEqual([line.split()[0] for line in table[1:] if not line.startswith(" ")], [host])
        listed = json.loads(run_sprof("nodes", profile, "--json", check=EXIT_OK).stdout)["nodes"]
        self.assertEqual({n["machine"] for n in listed}, {host})
        workers = [n for n in listed if n["node_id"] != main]
        self.assertTrue(workers)
        for n in workers:
            self.assertEqual(n["parent"], main)

        # The rules' evidence names the machine; Details keep smdebug's node id.
        rules = {r["rule"]: r for r in json.loads(run_sprof("rules", profile, "--json", check=EXIT_OK).stdout)["rules"]}
        usage = rules["OverallSystemUsage"]
        self.assertTrue(usage["evidence"].startswith(host + " CPU"), usage["evidence"])
        self.assertIn("algo-1", usage["Details"]["CPU"])

        # The report's job table.
        page = os.path.join(self.tmp, "report.html")
        run_sprof("report", profile, "-o", page, check=EXIT_OK)
        with open(page) as f:
            html = f.read()
        data = json.loads(re.search(r'<script type="application/json" id="sprof-data">(.*?)</script>', html, re.S)
                          .group(1).replace("<\\/", "</"))
        self.assertEqual([m["host"] for m in data["analyze"]["job"]["machines"]], [host])


if __name__ == "__main__":
    unittest.main()
