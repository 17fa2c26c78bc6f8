"""`record --trace-schedule`: per-step Chrome traces written while the job runs, on torch.profiler's
schedule, named by Composer's templates. A real Python training loop (the explicit API; a real
torch DataLoader loop for epochs without it) under `sprof record`: which windows are written, the
names their variables give (ranks from the environment torchrun sets, epochs from
sprof.set_epoch or DataLoader passes), each trace holding exactly its active steps and checked
against the Trace Event Format, a trace on disk while the job still runs, --trace-keep,
--trace-gzip, --trace-overwrite, and bad templates and schedules as usage errors."""

import gzip
import json
import os
import subprocess
import sys
import unittest

from sprof_testlib import DEBIAN_PYTHON, TempDirTestCase, run_sprof

# Two epochs of 10 training steps and 2 evaluation steps each; after the loop the script waits
# for the first trace to appear under the profile directory and prints what it saw.
TRAINING = r"""
import json, os, sys, time
import sprof
def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
sprof.set_mode(sprof.TRAIN)
for epoch in range(2):
    if %(set_epoch)s:
        sprof.set_epoch(epoch)
    for b in range(10):
        with sprof.step_context():
            work(2000000)
    sprof.set_mode(sprof.EVAL)
    for b in range(2):
        with sprof.step_context():
            work(300000)
    sprof.set_mode(sprof.TRAIN)
seen = []
deadline = time.time() + 20
while time.time() < deadline and not seen:
    for root, _, files in os.walk(sys.argv[1]):
        seen += [f for f in files if "trace" in root]
    time.sleep(0.1)
print(json.dumps({"live": sorted(seen)}))
"""

TORCH_TRAINING = r"""
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
torch.set_num_threads(1)
train = DataLoader(TensorDataset(torch.randn(48, 8), torch.randint(0, 2, (48,))), batch_size=8)
val = DataLoader(TensorDataset(torch.randn(16, 8), torch.randint(0, 2, (16,))), batch_size=8)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(3):
    model.train()
    for x, y in train:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        for x, y in val:
            model(x)
"""


def check_trace_event_format(test, doc):
    """Phases, µs timestamps, durations, matching flow ids."""
    test.assertIsInstance(doc["traceEvents"], list)
    starts, finishes = set(), set()
    for e in doc["traceEvents"]:
        test.assertIn(e["ph"], ("X", "M", "s", "f", "i", "C"), e)
        if e["ph"] != "M":
            test.assertIsInstance(e["ts"], (int, float), e)
            test.assertGreater(e["ts"], 1.6e15, e)  # epoch µs
        if e["ph"] == "X":
            test.assertGreaterEqual(e["dur"], 0, e)
        if e["ph"] == "s":
            starts.add(e["id"])
        if e["ph"] == "f":
            finishes.add(e["id"])
    test.assertEqual(starts, finishes)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def steps_of(doc):
    return [(e["name"], e["args"]["step_num"], e["ts"], e["ts"] + e["dur"])
            for e in doc["traceEvents"] if e.get("cat") == "user_annotation"]


class TraceWindows(TempDirTestCase):
    def record(self, *flags, set_epoch=True, env=None, check=0):
        script = os.path.join(self.tmp, "train.py")
        with open(script, "w") as f:
            f.write(TRAINING % {"set_epoch": set_epoch})
        out = os.path.join(self.tmp, "prof")
        proc = run_sprof("record", "-o", out, "--force", "--no-system-metrics", *flags, "--", sys.executable, script,
                         out, check=check, env=env)
        return out, proc

    def traces(self, out):
        found = {}
        for root, _, files in os.walk(out):
            for name in files:
                if "torch_traces" in root or "mine" in root:
                    found[os.path.relpath(os.path.join(root, name), out)] = os.path.join(root, name)
        return found

    def test_windows_names_and_contents(self):
        env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1"}
        out, proc = self.record("--trace-schedule", "wait=1,warmup=1,active=2,repeat=3,skip_first=2",
                                "--run-name", "myrun", "--trace-filename",
                                "r{rank}of{world_size}.l{local_rank}of{local_world_size}.n{node_rank}."
                                "e{epoch}.b{batch:03d}.{batch_in_epoch}.{mode}{step}.pt.trace.json", env=env)
        # Training steps are counted 0..19 (evaluation steps do not count): skip 0-1; cycles of
        # 4 from index 2: wait 2, warmup 3, active 4-5; wait 6, warmup 7, active 8-9; wait 10,
        # warmup 11, active 12-13; repeat=3 ends there. Index 10 is epoch 1's first step.
        expected = {
            "myrun/torch_traces/r3of4.l1of2.n1.e0.b006.6.train5.pt.trace.json": [4, 5],
            "myrun/torch_traces/r3of4.l1of2.n1.e0.b010.10.train9.pt.trace.json": [8, 9],
            "myrun/torch_traces/r3of4.l1of2.n1.e1.b014.4.train13.pt.trace.json": [12, 13],
        }
        found = self.traces(out)
        self.assertEqual(set(found), set(expected), proc.stderr)
        live = json.loads(proc.stdout.strip().splitlines()[-1])["live"]
        self.assertTrue(live, "no trace was on disk while the job ran")
        with open(os.path.join(out, "sprof.json")) as f:
            section = json.load(f)["trace_windows"]
        self.assertEqual(section["written"], 3)
        self.assertEqual(section["schedule"], {"skip_first": 2, "wait": 1, "warmup": 1, "active": 2, "repeat": 3})
        self.assertEqual(sorted(f["path"] for f in section["files"]), sorted(expected))
        for name, steps in expected.items():
            with self.subTest(trace=name):
                doc = load(found[name])
                check_trace_event_format(self, doc)
                got = steps_of(doc)
                self.assertEqual([(n, s) for n, s, _, _ in got], [("Step:ModeKeys.TRAIN", s) for s in steps])
                begin, end = got[0][2], got[-1][3]
                slices = [e for e in doc["traceEvents"] if e.get("cat") == "python_function"]
                self.assertTrue(any(e["name"] == "work" for e in slices), slices[:5])
                for e in slices:  # only the window's samples
                    self.assertGreaterEqual(e["ts"], begin - 1)
                    self.assertLessEqual(e["ts"] + e["dur"], end + 1)
                pids = {e["pid"] for e in doc["traceEvents"] if e["ph"] != "M"}
                self.assertEqual(len(pids), 1, pids)  # the one process whose steps they are
        self.assertIn("3 step traces in", proc.stderr)

    def test_an_open_window_is_written_at_the_end_and_keep_deletes_the_oldest(self):
        # repeat=0: windows forever; cycles of 7 (wait 1, active 6): indices 1-6, 8-13, then 15-19
        # still open when the job ends (written as it is). --trace-keep 2 leaves the newest two.
        out, proc = self.record("--trace-schedule", "wait=1,warmup=0,active=6,repeat=0", "--trace-keep", "2",
                                "--trace-gzip", "--trace-folder", "mine", "--trace-filename", "{batch}.json")
        self.assertEqual(sorted(self.traces(out)), ["mine/14.json.gz", "mine/20.json.gz"])
        with open(os.path.join(out, "sprof.json")) as f:
            section = json.load(f)["trace_windows"]
        self.assertEqual(section["written"], 3)
        self.assertEqual(section["deleted"], 1)
        self.assertEqual([(f["batch"], f["complete"], f.get("deleted", False)) for f in section["files"]],
                         [(7, True, True), (14, True, False), (20, False, False)])
        doc = load(os.path.join(out, "mine", "20.json.gz"))
        check_trace_event_format(self, doc)
        train = [s for name, s, _, _ in steps_of(doc) if name == "Step:ModeKeys.TRAIN"]
        self.assertEqual(train, [15, 16, 17, 18, 19])
        self.assertEqual(len([1 for name, _, _, _ in steps_of(doc) if name == "Step:ModeKeys.EVAL"]), 2)

    def test_each_rank_of_a_torchrun_style_job_names_its_own_traces(self):
        # Two ranks started as torchrun starts them (RANK, LOCAL_RANK, WORLD_SIZE in each child's
        # environment); each process counts its own steps and gets its own file.
        script = os.path.join(self.tmp, "train.py")
        with open(script, "w") as f:
            f.write(TRAINING % {"set_epoch": True})
        launcher = os.path.join(self.tmp, "launch.py")
        with open(launcher, "w") as f:
            f.write("import os, subprocess, sys\n"
                    "procs = [subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2]], env=dict(os.environ, "
                    "RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE='2')) for r in range(2)]\n"
                    "sys.exit(max(p.wait() for p in procs))\n")
        out = os.path.join(self.tmp, "prof")
        run_sprof("record", "-o", out, "--subprocesses", "--no-system-metrics", "--trace-schedule",
                  "wait=2,warmup=0,active=3", "--trace-filename", "rank{rank}of{world_size}.{batch}.json", "--",
                  sys.executable, launcher, script, out, check=0)
        found = self.traces(out)
        names = sorted(os.path.basename(p) for p in found)
        self.assertEqual(names, ["rank0of2.5.json", "rank1of2.5.json"])
        pids = set()
        for path in found.values():
            doc = load(path)
            check_trace_event_format(self, doc)
            self.assertEqual([s for _, s, _, _ in steps_of(doc)], [2, 3, 4])
            pids |= {e["pid"] for e in doc["traceEvents"] if e["ph"] != "M"}
        self.assertEqual(len(pids), 2)

    def test_epochs_from_dataloader_passes(self):
        if subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
            self.skipTest("no torch for " + DEBIAN_PYTHON)
        script = os.path.join(self.tmp, "torch_train.py")
        with open(script, "w") as f:
            f.write(TORCH_TRAINING)
        out = os.path.join(self.tmp, "prof")
        # 6 training batches per epoch, 3 epochs; cycles of 6 (wait 3, warmup 1, active 2): the
        # last two batches of each epoch. The validation loader's passes (in eval mode) do not count.
        run_sprof("record", "-o", out, "--no-system-metrics", "--trace-schedule", "wait=3,warmup=1,active=2,repeat=0",
                  "--trace-folder", "mine", "--trace-filename", "e{epoch}.{batch_in_epoch}.{batch}.json", "--",
                  DEBIAN_PYTHON, script, check=0)
        self.assertEqual(sorted(self.traces(out)), ["mine/e0.6.6.json", "mine/e1.6.12.json", "mine/e2.6.18.json"])

    def test_an_existing_file_is_kept_without_overwrite(self):
        out, proc = self.record("--trace-schedule", "wait=0,warmup=0,active=2,repeat=2", "--trace-folder", "mine",
                                "--trace-filename", "same.json")
        doc = load(os.path.join(out, "mine", "same.json"))
        self.assertEqual([s for _, s, _, _ in steps_of(doc)], [0, 1])
        self.assertIn("exists already (--trace-overwrite replaces it)", proc.stderr)
        out, proc = self.record("--trace-schedule", "wait=0,warmup=0,active=2,repeat=2", "--trace-folder", "mine",
                                "--trace-filename", "same.json", "--trace-overwrite")
        doc = load(os.path.join(out, "mine", "same.json"))
        self.assertEqual([s for _, s, _, _ in steps_of(doc)], [2, 3])

    def test_bad_flags_are_usage_errors(self):
        cases = [
            (["--trace-schedule", "active=2", "--trace-filename", "rank{rnk}.json"], "unknown variable {rnk}"),
            (["--trace-schedule", "active=2", "--trace-folder", "{run_name"], "without a closing"),
            (["--trace-schedule", "active=2", "--trace-filename", "{batch:q}.json"], "bad format spec 'q'"),
            (["--trace-schedule", "active=2", "--trace-filename", "{mode:05d}.json"], "bad format spec"),
            (["--trace-schedule", "actve=2"], "unknown word 'actve'"),
            (["--trace-schedule", "active=0"], "active must be at least 1"),
            (["--trace-schedule", "wait=-1"], "wait=-1 is not a whole number"),
            (["--trace-schedule", "active=1", "--trace-keep", "0"], "--trace-keep 0"),
            (["--trace-folder", "x"], "--trace-folder needs --trace-schedule"),
            (["--trace-gzip"], "--trace-gzip needs --trace-schedule"),
        ]
        for flags, message in cases:
            with self.subTest(flags=flags):
                proc = run_sprof("record", "-o", os.path.join(self.tmp, "never"), *flags, "--", sys.executable, "-c",
                                 "pass", check=2)
                self.assertIn(message, proc.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "never")))


if __name__ == "__main__":
    unittest.main()
