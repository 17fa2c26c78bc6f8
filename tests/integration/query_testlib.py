"""Helpers of the stats-query integration tests: build stats trees with real cProfile under
real interpreters, ask sprof for JSON, and compare it with smdebug_semantics (pstats.Stats.add)."""
import json
import os
import subprocess

import smdebug_semantics as sm
from sprof_testlib import SOURCE_DIR, pythons, run_sprof

MAKE_STATS_TREE = os.path.join(SOURCE_DIR, "tests", "integration", "fixtures", "make_stats_tree.py")


def interpreters():
    """{label: path} of the interpreters the trees are written with: Debian's 3.11 and every
    pyenv 3.8+ build (at least 3.8 and 3.13 are required)."""
    found = pythons(min_version=(3, 8))
    labels = " ".join(sorted(found))
    for need in ("debian-3.11", "pyenv-3.8.", "pyenv-3.13."):
        if not any(label.startswith(need) for label in found):
            raise AssertionError("interpreter %s is missing (found: %s)" % (need, labels))
    return found


def make_tree(python, out, node, *args):
    """Run the fixture generator; returns the stats dirs it wrote."""
    proc = subprocess.run([python, MAKE_STATS_TREE, out, "--node", node] + list(args),
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError("make_stats_tree.py failed under %s:\n%s" % (python, proc.stderr))
    return proc.stdout.split()


def profiler_dir(root, framework="pytorch"):
    return os.path.join(root, "framework", framework, "cprofile")


def sprof_json(*args, check=0):
    proc = run_sprof(*(list(args) + ["--json"]), check=check)
    return json.loads(proc.stdout), proc


def caller_key(c):
    return (c["file"], c["line"], c["function"])


class QueryAssertions:
    """Mixin for unittest.TestCase: sprof's JSON answer equals the oracle's pstats.Stats."""

    def assert_records(self, doc_stats, records):
        self.assertEqual([os.path.normpath(s["stats_path"]) for s in doc_stats],
                         [os.path.normpath(r.stats_path) for r in records])
        for got, want in zip(doc_stats, records):
            self.assertEqual(got["node_id"], want.node_id)
            self.assertEqual(got["profiler_name"], want.profiler_name)
            self.assertEqual(got["framework"], want.framework)
            self.assertEqual(got["start_mode"], want.start_mode)
            self.assertEqual(got["end_mode"], want.end_mode)
            self.assertEqual(got["start_phase"], want.start_phase)
            self.assertEqual(got["end_phase"], want.end_phase)
            self.assertEqual(got["start_step"], want.start_step)
            self.assertEqual(sm.INF if got["end_step"] is None else got["end_step"], want.end_step)
            self.assertEqual(got["start_time_since_epoch_in_micros"],
                             want.start_time_since_epoch_in_micros)
            self.assertEqual(got["end_time_since_epoch_in_micros"],
                             want.end_time_since_epoch_in_micros)

    def assert_aggregate(self, doc, agg, sort="cumtime"):
        """doc: a JSON object with stats/total_*/functions (a query answer or one phase)."""
        self.assert_records(doc["stats"], agg.records)
        ps = agg.ps
        self.assertEqual(doc["total_calls"], ps.total_calls)
        self.assertEqual(doc["primitive_calls"], ps.prim_calls)
        self.assertEqual(doc["total_tt"], ps.total_tt)  # exact: same float additions
        self.assertEqual(doc["function_count"], len(ps.stats))
        got_keys = [(f["file"], f["line"], f["function"]) for f in doc["functions"]]
        self.assertEqual(got_keys, sm.sorted_keys(ps, sort))
        for f in doc["functions"]:
            key = (f["file"], f["line"], f["function"])
            cc, nc, tt, ct, callers = ps.stats[key]
            self.assertEqual((f["pcalls"], f["ncalls"], f["tottime"], f["cumtime"]),
                             (cc, nc, tt, ct), key)
            got_callers = [(caller_key(c), (c["ncalls"], c["pcalls"], c["tottime"], c["cumtime"]))
                           for c in f["callers"]]
            self.assertEqual(got_callers, list(callers.items()), key)
