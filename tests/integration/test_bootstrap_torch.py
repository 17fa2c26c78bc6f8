"""Automatic PyTorch step detection on a real torch (Debian's python3-torch) through the real
marker channel: TRAIN steps from optimizer steps, FORWARD_PASS_END from the root module's
forward, EVAL/PREDICT steps, DataLoader lanes with worker pids, prestepzero/posthookclose."""
import os
import subprocess
import unittest

from bootstrap_testlib import ProbeTestCase
from sprof_testlib import DEBIAN_PYTHON


def have_torch():
    return subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


N_BATCHES = 6

TRAINING = """
import json, sys, time
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
mono = time.monotonic_ns
def log(**kw):
    print(json.dumps(kw)); sys.stdout.flush()
torch.manual_seed(0)
torch.set_num_threads(1)
data = TensorDataset(torch.randn(%(n)d * 8, 8), torch.randint(0, 2, (%(n)d * 8,)))
loader = DataLoader(data, batch_size=8, num_workers=2)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Sequential(nn.Linear(32, 32), nn.ReLU()), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
model.train()
for i, (x, y) in enumerate(loader):
    opt.zero_grad()
    t0 = mono(); out = model(x); t1 = mono()
    loss = loss_fn(out, y)
    loss.backward()
    t2 = mono(); opt.step(); t3 = mono()
    log(event="train", i=i, forward=[t0, t1], optimizer=[t2, t3])
model.eval()
with torch.no_grad():
    for i, (x, y) in enumerate(loader):
        t0 = mono(); model(x); t1 = mono()
        log(event="eval", i=i, forward=[t0, t1])
""" % {"n": N_BATCHES}


# torch 2's Module.__call__ (_wrapped_call_impl -> _call_impl) runs the hooks from a function nested
# in _call_impl, inner(); torch 1.13 runs them in _call_impl itself. Installed over 1.13's while
# torch.nn.modules.module is first executed, before sprof's import hook sees torch.
TORCH2_CALL = """
import importlib.abc, importlib.machinery, sys

def _wrapped_call_impl(self, *args, **kwargs):
    return self._call_impl(*args, **kwargs)

def _call_impl(self, *args, **kwargs):
    m = sys.modules["torch.nn.modules.module"]
    forward_call = self.forward
    if not (self._forward_hooks or self._forward_pre_hooks or m._global_forward_hooks
            or m._global_forward_pre_hooks):
        return forward_call(*args, **kwargs)
    result = None

    def inner():
        nonlocal result, args
        for hook in (*m._global_forward_pre_hooks.values(), *self._forward_pre_hooks.values()):
            out = hook(self, args)
            if out is not None:
                args = out if isinstance(out, tuple) else (out,)
        result = forward_call(*args, **kwargs)
        for hook in (*m._global_forward_hooks.values(), *self._forward_hooks.values()):
            out = hook(self, args, result)
            if out is not None:
                result = out
        return result

    return inner()

class Loader(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real
    def create_module(self, spec):
        return self.real.create_module(spec)
    def exec_module(self, module):
        self.real.exec_module(module)
        module.Module._wrapped_call_impl = _wrapped_call_impl
        module.Module._call_impl = _call_impl
        module.Module.__call__ = _wrapped_call_impl

class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch.nn.modules.module":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = Loader(spec.loader)
        return spec

sys.meta_path.insert(0, Finder())
"""


@unittest.skipUnless(os.path.exists(DEBIAN_PYTHON) and have_torch(), "needs Debian's python3 with torch")
class TorchTrainingTest(ProbeTestCase):
    def test_training_run(self):
        script = self.write("train.py", TRAINING)
        r = self.probe([DEBIAN_PYTHON, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.sprof_lines(), [], r.stderr)
        self.assertEqual(r.data["parser"]["skipped"], 0)
        log = self.program_log(r)
        main = r.process(r.pid)
        self.assertEqual(main["framework"], "pytorch")
        self.assertTrue(main["framework_version"].startswith("1.") or main["framework_version"][0].isdigit())

        # N TRAIN steps whose boundaries lie within the script's own clock readings: the step
        # begins inside the root model's call, FORWARD_PASS_END at its end, and the step ends
        # inside optimizer.step().
        train = [s for s in main["steps"] if s["mode"] == "train"]
        logged = [e for e in log if e["event"] == "train"]
        self.assertEqual(len(train), N_BATCHES)
        self.assertEqual(len(logged), N_BATCHES)
        for i, (s, e) in enumerate(zip(train, logged)):
            self.assertEqual((s["step"], s["global_step"]), (i, i))
            self.assertTrue(e["forward"][0] <= s["begin"] <= s["forward_pass_end"] <= e["forward"][1], (s, e))
            self.assertTrue(e["optimizer"][0] <= s["end"] <= e["optimizer"][1], (s, e))
            self.assertTrue(s["ended_by_marker"])

        # The eval pass: one EVAL step per forward (an optimizer exists, so not PREDICT).
        evals = [s for s in main["steps"] if s["mode"] == "eval"]
        logged_eval = [e for e in log if e["event"] == "eval"]
        self.assertEqual(len(evals), N_BATCHES)
        for i, (s, e) in enumerate(zip(evals, logged_eval)):
            self.assertEqual((s["step"], s["global_step"]), (i, N_BATCHES + i))
            self.assertTrue(e["forward"][0] <= s["begin"] <= s["end"] <= e["forward"][1], (s, e))
            self.assertEqual(s["forward_pass_end"], s["end"])
        self.assertEqual([m["mode"] for m in main["mode_changes"]], ["train", "eval"])

        kinds = [i["kind"] for i in main["intervals"]]
        self.assertEqual(kinds[0], "pre_step_zero")
        self.assertEqual(kinds[-1], "post_hook_close")
        self.assertEqual(kinds.count("step"), 2 * N_BATCHES)
        self.assertEqual(kinds.count("between_modes"), 1)
        self.assertTrue(all("forward_pass_end" in i for i in main["intervals"] if i["kind"] == "step"))
        self.assertIsNotNone(main["close"])

        # DataLoader lanes: one iterator per epoch, N+1 next() calls each (the last raises
        # StopIteration), the time waited before each batch, and two worker processes per epoch.
        inits = main["dataloader_inits"]
        self.assertEqual([(i["class"], i["num_workers"], i["pin_memory"]) for i in inits],
                         [("_MultiProcessingDataLoaderIter", 2, False)] * 2)
        waits = main["dataloader_waits"]
        self.assertEqual(len(waits), 2 * (N_BATCHES + 1))
        self.assertEqual([w["outcome"] for w in waits].count("stop"), 2)
        for w in waits:
            self.assertLessEqual(w["begin"], w["end"])
            self.assertEqual(w["class"], "_MultiProcessingDataLoaderIter")
        # Each wait ends before the step that uses its batch begins.
        for s, w in zip(train, waits):
            self.assertLessEqual(w["end"], s["begin"])
        workers = [p for p in r.data["processes"] if "worker" in p]
        self.assertEqual(len(workers), 4)
        self.assertEqual(sorted(p["worker"]["worker_id"] for p in workers), [0, 0, 1, 1])
        for p in workers:
            self.assertEqual(p["ppid"], r.pid)
            self.assertEqual(p["worker"]["ppid"], r.pid)
            self.assertEqual(p["start_reason"], "fork")
            self.assertIsNotNone(p["worker"]["end"])
            self.assertEqual(p["steps"], [])
        self.assertEqual(len({p["pid"] for p in workers}), 4)

    def test_torch2_module_call_machinery(self):
        # Hooks called from _call_impl's nested inner(): the root is still found, so a TRAIN step
        # runs from the forward to the end of optimizer.step(), not around optimizer.step() alone.
        script = self.write("train2.py", TORCH2_CALL + TRAINING)
        r = self.probe([DEBIAN_PYTHON, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.sprof_lines(), [], r.stderr)
        self.assertIn("def inner", TORCH2_CALL)
        log = self.program_log(r)
        train = [s for s in r.process(r.pid)["steps"] if s["mode"] == "train"]
        logged = [e for e in log if e["event"] == "train"]
        self.assertEqual(len(train), N_BATCHES)
        for s, e in zip(train, logged):
            self.assertTrue(e["forward"][0] <= s["begin"] <= s["forward_pass_end"] <= e["forward"][1], (s, e))
            self.assertTrue(e["optimizer"][0] <= s["end"] <= e["optimizer"][1], (s, e))

    def test_inference_only_gives_predict_steps(self):
        script = self.write("predict.py", """
            import torch, torch.nn as nn
            model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
            model.eval()
            with torch.no_grad():
                for _ in range(3):
                    model(torch.randn(2, 4))
            """)
        r = self.probe([DEBIAN_PYTHON, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        main = r.process(r.pid)
        self.assertEqual([(s["mode"], s["step"]) for s in main["steps"]], [("predict", i) for i in range(3)])

    def test_gradient_accumulation_failures_and_second_model(self):
        # Two forwards per optimizer step are one step; a forward that raises (the very first
        # one, while the root is being discovered) does not derail detection; a second model
        # evaluated later is found as a root too; the loss module is never a root.
        script = self.write("accumulate.py", """
            import json, time, torch, torch.nn as nn
            mono = time.monotonic_ns
            model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
            opt = torch.optim.Adam(model.parameters())
            loss_fn = nn.MSELoss()
            try:
                model(torch.randn(2, 5))   # wrong shape: raises inside the root's forward
            except RuntimeError:
                pass
            marks = []
            for step in range(3):
                t0 = mono()
                for micro in range(2):
                    loss_fn(model(torch.randn(2, 4)), torch.randn(2, 1)).backward()
                opt.step(); opt.zero_grad()
                marks.append([t0, mono()])
            other = nn.Linear(4, 2)
            other.eval()
            with torch.no_grad():
                other(torch.randn(1, 4))
                other(torch.randn(1, 4))
            print(json.dumps({"marks": marks}))
            """)
        r = self.probe([DEBIAN_PYTHON, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.sprof_lines(), [])
        main = r.process(r.pid)
        steps = [(s["mode"], s["step"]) for s in main["steps"]]
        # The failed first forward opened TRAIN step 0 that its optimizer step then closed.
        self.assertEqual(steps, [("train", 0), ("train", 1), ("train", 2), ("eval", 0), ("eval", 1)])
        marks = self.program_log(r)[0]["marks"]
        for s, (t0, t1) in zip(main["steps"][1:3], marks[1:]):
            self.assertTrue(t0 <= s["begin"] <= s["end"] <= t1)

    def test_explicit_api_takes_over(self):
        script = self.write("explicit.py", """
            import torch, torch.nn as nn, sprof
            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sprof.set_mode(sprof.TRAIN)
            for i in range(4):
                with sprof.step_context():
                    model(torch.randn(2, 4)).sum().backward()
                    opt.step()
            """)
        r = self.probe([DEBIAN_PYTHON, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        main = r.process(r.pid)
        self.assertEqual([(s["mode"], s["step"]) for s in main["steps"]], [("train", i) for i in range(4)])
        self.assertTrue(all(s["forward_pass_end"] is None for s in main["steps"]))

    def test_spawn_workers_and_model_serialisation(self):
        # Spawned workers do not inherit the pipe (multiprocessing closes fds) and import torch
        # afresh: they reopen the channel by path and report themselves. sprof's wrapper sits on
        # the root's class, so pickling and scripting the model are unaffected.
        script = self.write("spawn.py", """
            import io, torch, torch.nn as nn
            from torch.utils.data import DataLoader, TensorDataset
            if __name__ == "__main__":
                data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
                loader = DataLoader(data, batch_size=4, num_workers=2, multiprocessing_context="spawn")
                model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for x, y in loader:
                    opt.zero_grad()
                    ((model(x) - y) ** 2).mean().backward()
                    opt.step()
                buffer = io.BytesIO()
                torch.save(model, buffer)
                buffer.seek(0)
                print(type(torch.load(buffer)).__name__, tuple(torch.jit.script(model)(torch.randn(2, 4)).shape))
            """)
        r = self.probe([DEBIAN_PYTHON, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.stdout, "Sequential (2, 1)\n")
        self.assertEqual(r.sprof_lines(), [])
        main = r.process(r.pid)
        self.assertEqual([(s["mode"], s["step"]) for s in main["steps"]], [("train", i) for i in range(4)])
        workers = [p for p in r.data["processes"] if "worker" in p]
        self.assertEqual(sorted(p["worker"]["worker_id"] for p in workers), [0, 1])
        for p in workers:
            self.assertEqual((p["start_reason"], p["ppid"]), ("start", r.pid))
            self.assertIsNotNone(p["worker"]["end"])

    def test_no_torch_option(self):
        script = self.write("plain.py", """
            import sys, torch, torch.nn as nn
            model = nn.Linear(2, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.randn(1, 2)).sum().backward()
            opt.step()
            print(type(nn.Linear.__call__).__name__, hasattr(opt.step, "_sprof_original"))
            """)
        r = self.probe([DEBIAN_PYTHON, script], probe_args=["--no-torch"])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.stdout, "function False\n")
        self.assertEqual(r.process(r.pid)["steps"], [])
        self.assertEqual(r.kinds("fw"), [])


if __name__ == "__main__":
    unittest.main()
