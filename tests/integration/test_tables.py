"""sprof export -f tables: DuckDB runs docs/tables.md's queries over the tables of two profiles (the
golden CPU profile and a recording with GPU work) and gets the numbers `sprof analyze --json`
gives: step times per rank, top functions, kernel totals. A second job added to the tables leaves
the first's files as they were; a step's function rows never add up to more than the step lasted.
"""

import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

from sprof_testlib import SOURCE_DIR, TempDirTestCase, run_sprof
from test_trace_engine import WORKLOAD

DUCKDB_DIR = os.path.join(SOURCE_DIR, "tests", "duckdb")
DOC = os.path.join(SOURCE_DIR, "docs", "tables.md")
GOLDEN = os.path.join(SOURCE_DIR, "tests", "golden", "profiles", "train")
INTEGRATION_DIR = os.path.dirname(os.path.abspath(__file__))


def setUpModule():
    if not shutil.which("node"):
        raise unittest.SkipTest("no node (scripts/install-deps installs it)")
    if not os.path.isdir(os.path.join(DUCKDB_DIR, "node_modules", "@duckdb", "node-api")):
        raise unittest.SkipTest("no @duckdb/node-api in tests/duckdb/node_modules (scripts/install-deps runs npm ci there)")


def duckdb(tables):
    proc = subprocess.run(["node", os.path.join(DUCKDB_DIR, "run-queries.mjs"), tables, DOC], capture_output=True,
                          text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError("run-queries.mjs exited %d:\n%s" % (proc.returncode, proc.stderr[-4000:]))
    return json.loads(proc.stdout)


def files_of(tables, job):
    """Every file of a job's tables: path -> (size, mtime_ns, sha256)."""
    out = {}
    for path in glob.glob(os.path.join(tables, "table=*", "job=%s" % job, "**", "*.json.gz"), recursive=True):
        with open(path, "rb") as f:
            out[path] = (os.path.getsize(path), os.stat(path).st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return out


def rows(tables, table, job):
    out = []
    for path in glob.glob(os.path.join(tables, "table=%s" % table, "job=%s" % job, "**", "*.json.gz"), recursive=True):
        node = [p[5:] for p in path.split(os.sep) if p.startswith("node=")]
        with gzip.open(path, "rt") as f:
            for line in f:
                row = json.loads(line)
                row["node"] = node[0] if node else None
                out.append(row)
    return out


class Tables(TempDirTestCase):
    maxDiff = None

    def record_gpu_job(self):
        script = os.path.join(self.tmp, "train.py")
        with open(script, "w") as f:
            f.write(WORKLOAD)
        profile = os.path.join(self.tmp, "gpu-job")
        # No system metrics: a run this short may end before the monitor's first tick.
        run_sprof("record", "-q", "-r", "1000", "--no-system-metrics", "-o", profile, "--gpu", "off", "--",
                  sys.executable, script,
                  os.path.join(profile, "gpu"), INTEGRATION_DIR, check=0)
        return profile

    def test_duckdb_gives_analyzes_numbers(self):
        tables = os.path.join(self.tmp, "tables")
        gpu_job = self.record_gpu_job()
        run_sprof("export", GOLDEN, "-f", "tables", "-o", tables, "--job", "golden", check=0)
        before = files_of(tables, "golden")
        self.assertEqual(len(before), 5)  # jobs, steps, function_samples, system_metrics, rules: no GPU
        proc = run_sprof("export", gpu_job, "-f", "tables", "-o", tables, "--job", "gpu", check=0)
        self.assertRegex(proc.stderr, r"sprof: wrote job gpu to .*: 5 files, \d+ rows")
        self.assertEqual(sorted(re.search(r"table=(\w+)", p).group(1) for p in files_of(tables, "gpu")),
                         ["function_samples", "jobs", "kernels", "rules", "steps"])
        # Adding a job leaves the first one's files as they were, and a job is never written twice.
        self.assertEqual(files_of(tables, "golden"), before)
        again = run_sprof("export", GOLDEN, "-f", "tables", "-o", tables, "--job", "golden", check=2)
        self.assertIn("job golden is there already", again.stderr)
        self.assertEqual(files_of(tables, "golden"), before)

        answers = duckdb(tables)
        for name, answer in answers.items():
            self.assertNotIsInstance(answer, dict, "%s: %s" % (name, answer))
        for job, profile in (("golden", GOLDEN), ("gpu", gpu_job)):
            analyze = json.loads(run_sprof("analyze", profile, "--json", check=0).stdout)
            with self.subTest(job=job, query="step_time_per_rank"):
                got = {(r["node"], r["mode"]): r for r in answers["step_time_per_rank"] if r["job"] == job}
                want = {(m["node"], m["mode"]): m for m in analyze["steps"]["modes"]}
                self.assertEqual(sorted(got), sorted(want))
                for key, m in want.items():
                    self.assertEqual(int(got[key]["steps"]), m["count"])
                    for column in ("mean_s", "p50_s", "p95_s"):
                        self.assertAlmostEqual(got[key][column], m[column], delta=1e-9, msg=(key, column))
            with self.subTest(job=job, query="top_functions"):
                got = {(r["function"], r["file"], int(r["line"])): r for r in answers["top_functions"] if r["job"] == job}
                top = analyze["functions"]["top"]
                self.assertTrue(top)
                for f in top:
                    row = got[(f["function"], f["file"], f["line"])]
                    for column in ("self_s", "waiting_s", "total_s"):
                        self.assertAlmostEqual(row[column], f[column], delta=1e-9, msg=(f["function"], column))
                ordered = [r["function"] for r in answers["top_functions"] if r["job"] == job]
                self.assertEqual(ordered[:2], [f["function"] for f in top[:2]])
            with self.subTest(job=job, query="kernel_totals"):
                got = {r["kernel"]: r for r in answers["kernel_totals"] if r["job"] == job}
                if not analyze["gpu"]["present"]:
                    self.assertEqual(got, {})
                    continue
                self.assertEqual(sum(int(r["launches"]) for r in got.values()), analyze["gpu"]["kernels"])
                self.assertAlmostEqual(sum(r["total_s"] for r in got.values()), analyze["gpu"]["kernel_s"], delta=1e-9)
                for k in analyze["gpu"]["top_kernels"]:
                    self.assertAlmostEqual(got[k["name"]]["total_s"], k["total_s"], delta=1e-9, msg=k["name"])
                    self.assertEqual(int(got[k["name"]]["launches"]), k["instances"])
        self.assertTrue(answers["slowest_steps"])

        # A step's rows add up to no more than the step lasted, per thread (each sample's time is
        # split across the steps it overlaps), and every row's step is one of the steps table's.
        for job in ("golden", "gpu"):
            steps = {(r["node"], r["mode"], r["step"]): r["duration_s"] for r in rows(tables, "steps", job)}
            per_step = {}
            for r in rows(tables, "function_samples", job):
                if r["step"] is None:
                    continue
                key = (r["node"], r["mode"], r["step"])
                self.assertIn(key, steps)
                per_step.setdefault((key, r["tid"]), 0.0)
                per_step[(key, r["tid"])] += r["self_s"]
            self.assertTrue(per_step)
            for (key, tid), seconds in per_step.items():
                self.assertLessEqual(seconds, steps[key] + 2e-6, (job, key, tid))

    def test_usage_errors(self):
        for args, message in ((["-f", "tables"], "-f tables: give -o DIR"),
                              (["-f", "tables", "-o", self.tmp, "--mode", "train"], "-f tables exports the whole profile")):
            proc = run_sprof("export", GOLDEN, *args, check=2)
            self.assertIn(message, proc.stderr)


if __name__ == "__main__":
    unittest.main()
