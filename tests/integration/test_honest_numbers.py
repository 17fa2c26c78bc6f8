"""Numbers a new user reads right (issue 31): a job whose main thread trains while a feeder thread
waits on a queue, recorded for real. Answers from samples say their wall time and whose samples
their times add (two threads' time is not passed off as the phase's), --thread picks one, a
step's functions never add up to more than the step per thread, sampled call counts are called
estimates, sprof's no-samples placeholder stays out of tables, and list-stats lists each interval
once."""
import json
import os
import tempfile
import unittest

from sprof_testlib import DEBIAN_PYTHON, EXIT_USAGE, run_sprof

STEPS = 6
WORKLOAD = """
import queue, threading, time
import sprof

def matmul_hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def feeder(q):
    while True:
        time.sleep(0.005)
        q.put(1)

q = queue.Queue()
threading.Thread(target=feeder, args=(q,), name="feeder", daemon=True).start()
sprof.set_mode(sprof.TRAIN)
for step in range(%d):
    with sprof.step_context():
        deadline = time.perf_counter() + 0.06
        while time.perf_counter() < deadline:
            matmul_hot(2000)
        q.get()
""" % STEPS


def sprof_json(*args):
    return json.loads(run_sprof(*args, "--json", check=0).stdout)


class HonestNumbers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="sprof-honest-")
        script = os.path.join(cls.root, "feeder_job.py")
        with open(script, "w") as f:
            f.write(WORKLOAD)
        cls.out = os.path.join(cls.root, "prof")
        run_sprof("-q", "record", "-o", cls.out, "--rate", "200", "--", DEBIAN_PYTHON, script, check=0)

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_phase_says_wall_time_and_whose_threads(self):
        doc = sprof_json("by-phase", self.out, "--job-phase", "--phase", "training_loop")
        phase = doc["phases"][0]
        names = {t["name"] for t in phase["threads"]}
        self.assertEqual(names, {"MainThread", "feeder"})
        # Each thread's time is at most the loop's wall time; together they exceed it, and the
        # text says so rather than calling the sum the phase's time.
        for t in phase["threads"]:
            self.assertLessEqual(t["seconds"], phase["wall_seconds"] + 1e-6, t)
        self.assertAlmostEqual(sum(t["seconds"] for t in phase["threads"]), phase["total_tt"], places=6)
        self.assertGreater(phase["total_tt"], phase["wall_seconds"] * 1.5)
        self.assertTrue(phase["estimated_from_samples"])
        text = run_sprof("by-phase", self.out, "--job-phase", "--phase", "training_loop", check=0).stdout
        self.assertIn("Wall time %.3f s; the times below add 2 threads' samples" % phase["wall_seconds"], text)
        self.assertIn("MainThread", text)
        self.assertIn("feeder", text)
        self.assertIn("function calls (estimated from samples) in", text)

        one = sprof_json("by-phase", self.out, "--job-phase", "--phase", "training_loop", "--thread", "MainThread")
        main = one["phases"][0]
        self.assertEqual([t["name"] for t in main["threads"]], ["MainThread"])
        self.assertLessEqual(main["total_tt"], main["wall_seconds"] + 1e-6)
        # The main thread fills the loop: its time is the wall time, less what the sampler missed.
        self.assertGreater(main["total_tt"], main["wall_seconds"] * 0.9)
        fed = sprof_json("by-phase", self.out, "--job-phase", "--phase", "training_loop", "--thread", "feeder")
        self.assertNotIn("matmul_hot", [f["function"] for f in fed["phases"][0]["functions"]])

    def test_every_phase_within_its_wall_time(self):
        # initialization included: its span opens at the process's start, and the first sample
        # after attaching stands for no more than the time since the attach (it once stood for
        # the time since the sampler's previous tick, 15 ms before this process was attached).
        doc = sprof_json("by-phase", self.out, "--job-phase")
        self.assertEqual([p["name"] for p in doc["phases"]], ["initialization", "training_loop", "finalization"])
        for phase in doc["phases"]:
            for t in phase["threads"]:
                with self.subTest(phase=phase["name"], thread=t["name"]):
                    self.assertLessEqual(t["seconds"], phase["wall_seconds"] + 1e-6)

    def test_steps_functions_within_the_step(self):
        for step in range(STEPS):
            with self.subTest(step=step):
                doc = sprof_json("fetch-by-step", self.out, "--start-step", str(step), "--end-step", str(step),
                                 "--start-phase", "stepstart", "--end-phase", "stepend", "--thread", "MainThread")
                self.assertEqual(len(doc["stats"]), 1)
                wall = doc["wall_seconds"]
                self.assertGreater(wall, 0.05)
                for f in doc["functions"]:
                    self.assertLessEqual(f["cumtime"], wall + 1e-6, f)
                hot = [f for f in doc["functions"] if f["function"] == "matmul_hot"]
                self.assertTrue(hot)
                self.assertLessEqual(hot[0]["tottime"], wall + 1e-6)

    def test_unknown_thread_is_a_usage_error(self):
        proc = run_sprof("by-phase", self.out, "--job-phase", "--thread", "Main", check=EXIT_USAGE)
        self.assertIn("--thread Main: no sampled thread has that name or TID; threads: MainThread, feeder",
                      proc.stderr)
        proc = run_sprof("pre-step-zero", self.out, "--source", "stats", "--thread", "MainThread", check=EXIT_USAGE)
        self.assertIn("--thread applies to answers from raw samples", proc.stderr)

    def test_no_samples_placeholder_stays_out_of_tables(self):
        for command in (["pre-step-zero"], ["post-hook-close"], ["by-phase", "--training-phase"],
                        ["by-phase", "--job-phase"], ["fetch-by-time", "--start-time", "0", "--end-time", "9e18"]):
            for source in ("samples", "stats"):
                with self.subTest(command=command, source=source):
                    proc = run_sprof(*command, self.out, "--source", source, check=0)
                    self.assertNotIn("no samples}", proc.stdout)
                    doc = sprof_json(*command, self.out, "--source", source)
                    for part in doc.get("phases", [doc]):
                        self.assertNotIn("<sprof: no samples>", [f["function"] for f in part["functions"]])

    def test_list_stats_one_row_per_interval(self):
        files = sprof_json("list-stats", self.out)["stats"]
        dirs = sorted({os.path.dirname(s["stats_path"]) for s in files})
        self.assertEqual(len(files), 3 * len(dirs))  # python_stats, .json, .html in each
        table = run_sprof("list-stats", self.out, check=0).stdout.splitlines()
        self.assertTrue(table[0].startswith("PROFILERS "))
        self.assertEqual(sorted(line.split()[-1] for line in table[1:]), dirs)
        self.assertTrue(all(line.split()[0] == "cprofile,pyinstrument" for line in table[1:]))
        per_file = run_sprof("list-stats", self.out, "--files", check=0).stdout.splitlines()
        self.assertEqual(len(per_file), len(files) + 1)


if __name__ == "__main__":
    unittest.main()
