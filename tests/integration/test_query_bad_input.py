"""Bad input to the stats queries: each case gets a message naming the path and the documented
exit code (2), and where other stats are valid they still answer, equal to the oracle over the
valid ones."""
import marshal
import os
import shutil
import unittest

import smdebug_semantics as sm
from query_testlib import QueryAssertions, interpreters, make_tree, profiler_dir, sprof_json
from sprof_testlib import EXIT_USAGE, TempDirTestCase, run_sprof

NODE = "0-algo-1"


class BadInputTest(QueryAssertions, TempDirTestCase):
    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.tmp, "profile")
        self.written = make_tree(interpreters()["debian-3.11"], self.root, NODE)
        self.node_dir = os.path.join(profiler_dir(self.root), NODE)

    def oracle(self, skip=(), unreadable=()):
        return sm.Analysis(sm.load_profiler_dir(profiler_dir(self.root), skip=set(skip)),
                           unreadable=unreadable)

    def stats_file(self, step):
        for d in self.written:
            if os.path.basename(d).startswith("train-%d-stepstart" % step):
                return os.path.join(d, "python_stats")
        raise AssertionError("no stats for train step %d" % step)

    def assert_still_answers(self, warned_path, skip=(), unreadable=()):
        """Queries warn about warned_path, exit 0, and equal the oracle without it; --strict
        turns the same input into exit 2 naming the path."""
        a = self.oracle(skip=skip, unreadable=unreadable)
        doc, proc = sprof_json("fetch-by-step", self.root, "--start-step", "0", "--end-step", "4")
        self.assertIn(warned_path, proc.stderr)
        self.assertIn("warning", proc.stderr)
        self.assert_aggregate(doc, a.by_step(0, 4))
        proc = run_sprof("fetch-by-step", self.root, "--start-step", "0", "--end-step", "4",
                         "--strict", check=EXIT_USAGE)
        self.assertIn(warned_path, proc.stderr)
        self.assertEqual(proc.stdout, "")

    # --- the profile directory itself

    def test_missing_directory(self):
        missing = os.path.join(self.tmp, "no-such-profile")
        for command in (["list-stats"], ["nodes"], ["pre-step-zero"],
                        ["fetch-by-step", "--start-step", "0"], ["by-phase", "--job-phase"]):
            proc = run_sprof(command[0], missing, *command[1:], check=EXIT_USAGE)
            self.assertIn(missing, proc.stderr)
            self.assertIn(missing + ": no such directory", proc.stderr)

    def test_empty_directory(self):
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        proc = run_sprof("list-stats", empty, check=EXIT_USAGE)
        self.assertIn(empty, proc.stderr)
        self.assertIn(empty + ": not a profile directory", proc.stderr)

    def test_file_as_profile_directory(self):
        path = os.path.join(self.tmp, "a-file")
        with open(path, "w") as f:
            f.write("x")
        proc = run_sprof("fetch-by-step", path, "--start-step", "0", check=EXIT_USAGE)
        self.assertIn(path, proc.stderr)
        self.assertIn("not a directory", proc.stderr)

    # --- entries inside it

    def test_file_where_a_node_directory_belongs(self):
        stray = os.path.join(profiler_dir(self.root), "2-algo-1")
        with open(stray, "w") as f:
            f.write("not a node directory")
        self.assert_still_answers(stray, skip=[stray])

    def test_file_where_a_stats_directory_belongs(self):
        stray = os.path.join(self.node_dir, "train-9-stepstart-1.0_train-9-stepend-2.0")
        with open(stray, "w") as f:
            f.write("not a directory")
        self.assert_still_answers(stray, skip=[stray])

    def test_directory_where_python_stats_belongs(self):
        d = os.path.join(self.node_dir, "train-7-stepstart-1.0_train-7-stepend-2.0")
        os.makedirs(os.path.join(d, "python_stats"))
        self.assert_still_answers(os.path.join(d, "python_stats"), skip=[d])

    def test_malformed_names(self):
        bad = ["not-a-stats-dir", "train-1-stepstart-1.0_bogus-1-stepend-2.0",
               "train-x-stepstart-1.0_train-1-stepend-2.0",
               "train-1-middle-1.0_train-1-stepend-2.0", "train-1-stepstart-abc_train-1-stepend-2.0",
               "train-1-stepstart-0x10_train-1-stepend-2.0", "a_b_c", "1.0_2.0_node_x"]
        paths = []
        for name in bad:
            path = os.path.join(self.node_dir, name)
            os.makedirs(path)
            shutil.copy(self.stats_file(1), os.path.join(path, "python_stats"))
            paths.append(path)
        a = self.oracle(skip=paths)
        doc, proc = sprof_json("list-stats", self.root)
        for path in paths:
            self.assertIn(path, proc.stderr)
        self.assertEqual(len(doc["warnings"]), len(bad))
        self.assert_records(doc["stats"], a.all_stats)
        proc = run_sprof("list-stats", self.root, "--strict", check=EXIT_USAGE)
        self.assertTrue(any(path in proc.stderr for path in paths), proc.stderr)
        self.assertIn("--strict", proc.stderr)

    def test_truncated_python_stats(self):
        target = self.stats_file(2)
        with open(target, "rb") as f:
            data = f.read()
        with open(target, "wb") as f:
            f.write(data[: len(data) // 2])
        self.assert_still_answers(target, unreadable=[target])

    def test_corrupt_python_stats(self):
        target = self.stats_file(3)
        with open(target, "wb") as f:
            f.write(bytes(range(256)) * 4)
        self.assert_still_answers(target, unreadable=[target])

    def test_zero_byte_python_stats(self):
        target = self.stats_file(0)
        open(target, "wb").close()
        self.assert_still_answers(target, unreadable=[target])

    def test_marshal_types_pstats_never_writes(self):
        for i, value in enumerate([[1, 2, 3], {("f.py", 1, "f"): (1, 1, 0.5j, 0.0, {})},
                                   {("f.py", 1, "f"): (1, 1, 0.0, 0.0, frozenset())}]):
            with self.subTest(case=i):
                target = self.stats_file(1)
                with open(target, "wb") as f:
                    marshal.dump(value, f)
                self.assert_still_answers(target, unreadable=[target])

    def test_symlink_loop(self):
        loop = os.path.join(self.node_dir, "loop")
        os.symlink("loop", loop)
        self_loop = os.path.join(profiler_dir(self.root), "cycle")
        os.symlink(".", self_loop)  # a node directory that is the profiler directory itself
        doc, proc = sprof_json("list-stats", self.root)
        self.assertIn(loop, proc.stderr)
        self.assertIn(self_loop, proc.stderr)
        a = self.oracle(skip=[loop, self_loop])
        self.assert_records(doc["stats"], a.all_stats)
        self.assert_still_answers(loop, skip=[loop, self_loop])

    @unittest.skipIf(os.geteuid() == 0, "root reads unreadable directories")
    def test_unreadable_directory(self):
        d = os.path.join(self.node_dir, os.path.basename(self.written[1]))
        os.chmod(d, 0)
        self.addCleanup(os.chmod, d, 0o755)
        self.assert_still_answers(d, skip=[d])

    def test_every_selected_file_unreadable(self):
        target = self.stats_file(1)
        open(target, "wb").close()
        proc = run_sprof("fetch-by-step", self.root, "--start-step", "1", check=EXIT_USAGE)
        self.assertIn(target, proc.stderr)
        self.assertIn("could be read", proc.stderr)

    def test_only_pyinstrument_stats(self):
        d = os.path.join(self.tmp, "pyi", "framework", "pytorch", "pyinstrument", NODE,
                         "train-1-stepstart-1.0_train-1-stepend-2.0")
        os.makedirs(d)
        for name in ("python_stats.json", "python_stats.html"):
            with open(os.path.join(d, name), "w") as f:
                f.write('{"root_frame": null}')
        doc, _ = sprof_json("list-stats", os.path.join(self.tmp, "pyi"))
        self.assertEqual([s["profiler_name"] for s in doc["stats"]], ["pyinstrument"] * 2)
        proc = run_sprof("pre-step-zero", os.path.join(self.tmp, "pyi"), check=EXIT_USAGE)
        self.assertIn("no cProfile stats", proc.stderr)

    # --- arguments

    def test_bad_arguments(self):
        cases = [
            (["fetch-by-step", "--start-step", "x"], "--start-step"),
            (["fetch-by-step", "--start-step", "1", "--mode", "training"], "--mode"),
            (["fetch-by-step", "--start-step", "1", "--start-phase", "middle"], "--start-phase"),
            (["fetch-by-step"], "--start-step"),
            (["fetch-by-time", "--start-time", "yesterday"], "--start-time"),
            (["fetch-by-time", "--start-time", "10s", "--end-time", "1s"], "--end-time"),
            (["between-modes", "--start-mode", "train"], "--end-mode"),
            (["by-phase"], "--training-phase"),
            (["by-phase", "--training-phase", "--job-phase"], "--job-phase"),
            (["fetch-by-step", "--start-step", "1", "--sort", "name"], "--sort"),
            (["fetch-by-step", "--start-step", "1", "--format", "xml"], "--format"),
            (["pre-step-zero", "--node", "9-algo-9"], "9-algo-9"),
        ]
        for args, needle in cases:
            with self.subTest(args=args):
                proc = run_sprof(args[0], self.root, *args[1:], check=EXIT_USAGE)
                self.assertIn(needle, proc.stderr)


if __name__ == "__main__":
    unittest.main()
