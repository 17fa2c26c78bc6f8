"""A real PyTorch CPU training job (examples/train_torch.py, DataLoader(num_workers=2)) recorded with
--subprocesses: the worker processes appear with their own samples, the main process shows
torch's own Python frames, and the sample log stays compact."""
import os
import subprocess
import unittest

from sprof_testlib import DEBIAN_PYTHON, SOURCE_DIR, TempDirTestCase, run_sprof
from record_helpers import collapsed, inclusive_counts, manifest, speedscope

TRAIN = os.path.join(SOURCE_DIR, "examples", "train_torch.py")


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

        # One speedscope profile per (pid, thread), weights in microseconds.
        doc = speedscope(out)
        pids = set(int(p["name"].split()[1]) for p in doc["profiles"])
        self.assertIn(main_pid, pids)
        self.assertGreaterEqual(len(pids), 3)
        for p in doc["profiles"]:
            self.assertEqual(len(p["samples"]), len(p["weights"]))
            self.assertEqual(p["unit"], "microseconds")


if __name__ == "__main__":
    unittest.main()
