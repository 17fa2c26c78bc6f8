"""A real PyTorch CPU training job (examples/train_torch.py, DataLoader(num_workers=2)) recorded with
--subprocesses: the worker processes appear with their own samples, the main process shows
torch's own Python frames, and the sample log stays compact."""
import os
import subprocess
import unittest

from sprof_testlib import DEBIAN_PYTHON, SOURCE_DIR, TempDirTestCase, run_sprof
from record_helpers import collapsed, frames, inclusive_counts, manifest, speedscope

TRAIN = os.path.join(SOURCE_DIR, "examples", "train_torch.py")


def is_sprof_file(path):
    """A file of the bootstrap record injects (its private directory, or markers/python before)."""
    return "/sprof-bootstrap-" in path or "/markers/python/" in path


def have_torch():
    return subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


@unittest.skipUnless(have_torch(), "Debian's python3-torch is not installed (scripts/install-deps)")
class TorchTrainingTest(TempDirTestCase):
    def test_workers_and_torch_frames(self):
        out = os.path.join(self.tmp, "p")
        # The goal is at most 8 bytes per sample amortised over a run. Definitions (strings,
        # functions, frames, stacks) are paid once per process, and the example starts two new
        # DataLoader workers per epoch: with its default 1-second epochs a worker lives for only
        # ~300 samples, so the epochs here are made 4x longer (still short of a real job's).
        proc = run_sprof("record", "--subprocesses", "-o", out, "--", DEBIAN_PYTHON, TRAIN, "--size", "16384", check=0)
        self.assertIn("epoch 1:", proc.stdout)
        m = manifest(out)
        main_pid = m["target_pid"]
        sampled = [p for p in m["processes"] if p["samples"] > 0]
        workers = [p for p in sampled if p["ppid"] == main_pid]
        # Two workers per epoch (3 epochs, workers not persistent), each with its own log.
        self.assertGreaterEqual(len(workers), 4, [(p["pid"], p["ppid"]) for p in sampled])
        for w in workers:
            self.assertTrue(w["sample_log"].startswith("samples/%d-" % w["pid"]))
            counts = inclusive_counts(collapsed(out, "--pid", str(w["pid"]), "--idle"),
                                      ("_worker_loop", "SyntheticRegression.__getitem__"))
            self.assertGreater(counts["_worker_loop"], 0, "worker %d: %s" % (w["pid"], counts))
        self.assertTrue(any(inclusive_counts(collapsed(out, "--pid", str(w["pid"])),
                                             ("SyntheticRegression.__getitem__",))["SyntheticRegression.__getitem__"] > 0
                            for w in workers))

        main = collapsed(out, "--pid", str(main_pid))
        counts = inclusive_counts(main, ("Module._call_impl", "Regressor.forward", "Linear.forward", "train"))
        for name, count in counts.items():
            self.assertGreater(count, 10, counts)
        # Module._call_impl is the caller of the model's forward.
        self.assertTrue(any("Module._call_impl (" in s.split("Regressor.forward (")[0] for s in main if "Regressor.forward (" in s))

        # Compactness: bytes of sample log per thread sample, all processes together.
        size = sum(os.path.getsize(os.path.join(out, p["sample_log"])) for p in sampled)
        samples = sum(p["samples"] for p in sampled)
        print("sample log: %d bytes for %d samples = %.2f bytes/sample" % (size, samples, size / samples))
        self.assertLessEqual(size / samples, 8.0)

        # sprof's own frames (the bootstrap's DataLoader wrapper, its step hooks) are in no view:
        # the loop calls torch's DataLoader iterator directly. --sprof-frames shows them.
        def sprof_frames(stacks):
            return [f for s in stacks for f in frames(s) if is_sprof_file(f[1])]
        everything = collapsed(out, "--idle")
        self.assertEqual(sprof_frames(everything), [])
        self.assertTrue(any(("train", "_BaseDataLoaderIter.__next__") == tuple(n for n, _, _ in frames(s)[i:i + 2])
                            for s in everything for i in range(len(frames(s)))),
                        "no stack with train calling the DataLoader iterator")
        shown = run_sprof("--sprof-frames", "export", out, "-f", "collapsed", "--idle", check=0).stdout.splitlines()
        wrapper = [f for f in sprof_frames(l.rpartition(" ")[0] for l in shown) if f[1].endswith("/sprof/_torch.py")]
        self.assertTrue(wrapper, "--sprof-frames shows no frame of the wrapper")
        for directory, _, files in os.walk(out):
            self.assertEqual([f for f in files if f.endswith(".py")], [], directory)  # no copy of sprof's sources
            for name in files:
                if name == "python_stats.json":
                    with open(os.path.join(directory, name)) as f:
                        self.assertNotIn("sprof-bootstrap-", f.read())
        self.assertFalse(os.path.exists(os.path.dirname(wrapper[0][1])), "the bootstrap's directory is removed")

        # One speedscope profile per (pid, thread), weights in microseconds.
        doc = speedscope(out)
        pids = set(int(p["name"].split()[1]) for p in doc["profiles"])
        self.assertIn(main_pid, pids)
        self.assertGreaterEqual(len(pids), 3)
        for p in doc["profiles"]:
            self.assertEqual(len(p["samples"]), len(p["weights"]))
            self.assertEqual(p["unit"], "microseconds")
        self.assertEqual([f for f in doc["shared"]["frames"] if is_sprof_file(f.get("file", ""))], [])


if __name__ == "__main__":
    unittest.main()
