"""Every stats query of sprof equals smdebug's selection aggregated by Python's pstats.

Trees are written by real cProfile under Debian's python3.11 and every pyenv CPython 3.8+, two
nodes each (one profiling steps stepstart->stepend, one the PyTorch way stepstart->forwardpassend),
with pre-step-zero, train/eval steps, between-step and between-mode intervals and
post-hook-close. The expected answers are computed here by smdebug_semantics (smdebug's logic)
with pstats.Stats.add.
"""
import os
import shutil
import tempfile
import unittest

import smdebug_semantics as sm
from query_testlib import QueryAssertions, interpreters, make_tree, profiler_dir, sprof_json
from sprof_testlib import run_sprof

NODE_A = "0-algo-1"  # stepstart -> stepend
NODE_B = "1-algo-2"  # stepstart -> forwardpassend


class StatsQueryTest(QueryAssertions, unittest.TestCase):
    trees = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sprof-query-")
        for label, python in sorted(interpreters().items()):
            root = os.path.join(cls.tmp, label)
            make_tree(python, root, NODE_A)
            make_tree(python, root, NODE_B, "--within-end-phase", "forwardpassend",
                      "--train-steps", "2", "--eval-steps", "3", "--more-train-steps", "1")
            cls.trees[label] = root

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def each_tree(self):
        for label, root in sorted(self.trees.items()):
            analysis = sm.Analysis(sm.load_profiler_dir(profiler_dir(root)))
            with self.subTest(tree=label):
                yield root, analysis

    def check(self, root, agg, command, *args, sort="cumtime"):
        doc, _ = sprof_json(command, root, "--sort", sort, *args)
        self.assertEqual(doc["command"], command)
        self.assertEqual(doc["schema_version"], 1)
        self.assert_aggregate(doc, agg, sort)
        return doc

    def test_list_stats(self):
        for root, analysis in self.each_tree():
            doc, _ = sprof_json("list-stats", root)
            self.assertIn("sprof_version", doc)
            self.assert_records(doc["stats"], analysis.all_stats)
            self.assertEqual(doc["warnings"], [])
            # The framework/<framework>/<profiler> level (smdebug's local_profile_dir) reads the same.
            doc2, _ = sprof_json("list-stats", profiler_dir(root))
            self.assertEqual([s["stats_path"][len(profiler_dir(root)):] for s in doc2["stats"]],
                             [s["stats_path"][len(profiler_dir(root)):] for s in doc["stats"]])
            # CSV and table carry the same rows.
            csv = run_sprof("list-stats", root, "--format", "csv", check=0).stdout.splitlines()
            self.assertEqual(len(csv), len(analysis.all_stats) + 1)
            # Times print as Python's repr, the very text smdebug put in the directory name.
            header = csv[0].split(",")
            for line, record in zip(csv[1:], analysis.all_stats):
                row = dict(zip(header, line.split(",")))
                start, end = record.stats_dir.split("_")
                self.assertEqual(row["start_time_since_epoch_in_micros"], start.split("-")[3])
                self.assertEqual(row["end_time_since_epoch_in_micros"], end.split("-")[3])
            # The table lists each interval (stats directory) once, each file with --files.
            table = run_sprof("list-stats", root, check=0).stdout.splitlines()
            dirs = {os.path.dirname(s["stats_path"]) for s in doc["stats"]}
            self.assertEqual(len(table), len(dirs) + 1)
            self.assertTrue(table[0].startswith("PROFILERS"))
            self.assertEqual(sorted(line.split()[-1] for line in table[1:]), sorted(dirs))
            table = run_sprof("list-stats", root, "--files", check=0).stdout.splitlines()
            self.assertEqual(len(table), len(analysis.all_stats) + 1)
            self.assertTrue(table[0].startswith("PROFILER "))

    def test_nodes(self):
        for root, analysis in self.each_tree():
            doc, _ = sprof_json("nodes", root)
            self.assertEqual([n["node_id"] for n in doc["nodes"]], [NODE_A, NODE_B])
            counts = {n["node_id"]: n["cprofile_stats"] for n in doc["nodes"]}
            for node in (NODE_A, NODE_B):
                self.assertEqual(counts[node], len(analysis.node_stats(node)))

    def test_fetch_by_step(self):
        for root, a in self.each_tree():
            for node in ("any", NODE_A, NODE_B):
                n = ["--node", node]
                for step in range(0, 5):
                    self.check(root, a.by_step(step, node_id=node), "fetch-by-step",
                               "--start-step", str(step), *n)
                self.check(root, a.by_step(0, 4, node_id=node), "fetch-by-step",
                           "--start-step", "0", "--end-step", "4", *n, sort="tottime")
                self.check(root, a.by_step(-1, sm.INF, node_id=node), "fetch-by-step",
                           "--start-step", "*", "--end-step", "*", *n, sort="ncalls")
                self.check(root, a.by_step(1, 2, "train", "stepend", "stepstart", node_id=node),
                           "fetch-by-step", "--start-step", "1", "--end-step", "2",
                           "--start-phase", "stepend", "--end-phase", "stepstart", *n)
                self.check(root, a.by_step(0, 1, "train", "forwardpassend", "stepstart",
                                           node_id=node),
                           "fetch-by-step", "--step", "0", "--end-step", "1",
                           "--start-phase", "forwardpassend", "--end-phase", "stepstart", *n)
                self.check(root, a.by_step(0, 2, "eval", node_id=node), "fetch-by-step",
                           "--start-step", "0", "--end-step", "2", "--mode", "eval", *n,
                           sort="pcalls")
                # Nothing profiled in predict mode: an empty answer, not an error.
                doc = self.check(root, a.by_step(0, 9, "predict", node_id=node), "fetch-by-step",
                                 "--start-step", "0", "--end-step", "9", "--mode", "predict", *n)
                self.assertEqual(doc["functions"], [])

    def test_fetch_by_time(self):
        for root, a in self.each_tree():
            records = a.node_stats()
            mid = records[len(records) // 2]
            t0 = mid.start_time_since_epoch_in_micros
            t1 = records[-3].end_time_since_epoch_in_micros
            self.check(root, a.by_time(t0, t1), "fetch-by-time", "--start-time", repr(t0),
                       "--end-time", repr(t1))
            # The end of the interval alone overlapping counts too.
            self.check(root, a.by_time(mid.end_time_since_epoch_in_micros, t1),
                       "fetch-by-time", "--start-time", repr(mid.end_time_since_epoch_in_micros),
                       "--end-time", "%rus" % t1)
            # Seconds, converted as smdebug does (seconds * 1000000).
            secs = "%.3f" % (t0 / 1e6)
            self.check(root, a.by_time(float(secs) * 1000000, float("inf"), node_id=NODE_B),
                       "fetch-by-time", "--start-time", secs + "s", "--node", NODE_B)

    def test_between_modes_and_edges(self):
        for root, a in self.each_tree():
            for node in ("any", NODE_B):
                for start in sm.MODES:
                    for end in sm.MODES:
                        self.check(root, a.between_modes(start, end, node_id=node),
                                   "between-modes", "--start-mode", start, "--end-mode", end,
                                   "--node", node)
                self.check(root, a.pre_step_zero(node_id=node), "pre-step-zero", "--node", node)
                self.check(root, a.post_hook_close(node_id=node), "post-hook-close",
                           "--node", node, sort="tottime")

    def test_by_training_phase(self):
        for root, a in self.each_tree():
            for node in ("any", NODE_B):
                want = a.by_training_phase(node_id=node)
                doc, _ = sprof_json("by-phase", root, "--training-phase", "--node", node)
                self.assertEqual(doc["node_id"], a.resolve_node(node))
                self.assertEqual([(p["start_mode"], p["end_mode"]) for p in doc["phases"]],
                                 list(want))
                for phase in doc["phases"]:
                    self.assert_aggregate(phase, want[(phase["start_mode"], phase["end_mode"])])

    def test_by_job_phase(self):
        for root, a in self.each_tree():
            for compat in ("sprof", "smdebug"):
                want = a.by_job_phase(compat=compat)
                doc, _ = sprof_json("by-phase", root, "--job-phase", "--compat", compat)
                self.assertEqual(sorted(p["name"] for p in doc["phases"]), sorted(want))
                for phase in doc["phases"]:
                    agg, parts = want[phase["name"]]
                    self.assertEqual(phase["parts"], parts)
                    self.assert_aggregate(phase, agg)
                self.assertEqual(want["training_loop"][1],
                                 ["train-train", "train-eval", "eval-train", "eval-eval"])

    def test_job_phase_compat(self):
        # Two runs of a job into one node directory, the second ending after evaluation:
        # finalization holds the pairs train-posthookclose and eval-posthookclose, and smdebug
        # keeps only the last of them.
        python = interpreters()["debian-3.11"]
        root = os.path.join(self.tmp, "two-runs")
        make_tree(python, root, NODE_A)
        make_tree(python, root, NODE_A, "--more-train-steps", "0")
        a = sm.Analysis(sm.load_profiler_dir(profiler_dir(root)))
        finals = {}
        for compat in ("sprof", "smdebug"):
            want = a.by_job_phase(compat=compat)
            doc, _ = sprof_json("by-phase", root, "--job-phase", "--compat", compat)
            for phase in doc["phases"]:
                agg, parts = want[phase["name"]]
                self.assertEqual(phase["parts"], parts)
                self.assert_aggregate(phase, agg)
            finals[compat] = want["finalization"][1]
        self.assertEqual(finals["sprof"], ["train-posthookclose", "eval-posthookclose"])
        self.assertEqual(finals["smdebug"], ["eval-posthookclose"])

    def test_csv_and_table_agree_with_json(self):
        root = self.trees[sorted(self.trees)[0]]
        doc, _ = sprof_json("fetch-by-step", root, "--start-step", "0", "--end-step", "4")
        csv = run_sprof("fetch-by-step", root, "--start-step", "0", "--end-step", "4",
                        "-f", "csv", check=0).stdout.splitlines()
        self.assertEqual(csv[0].split(",")[:3], ["ncalls", "pcalls", "tottime"])
        self.assertEqual(len(csv) - 1, len(doc["functions"]))
        first = csv[1].split(",")
        self.assertEqual(float(first[4]), doc["functions"][0]["cumtime"])
        table = run_sprof("fetch-by-step", root, "--start-step", "0", "--end-step", "4",
                          "--limit", "5", check=0).stdout
        self.assertIn("ncalls  tottime  percall  cumtime  percall filename:lineno(function)", table)
        self.assertIn("List reduced from %d to 5" % len(doc["functions"]), table)
        self.assertIn("%d function calls" % doc["total_calls"], table)


if __name__ == "__main__":
    unittest.main()
