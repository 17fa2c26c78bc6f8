"""`record --step-fn` with the bootstrap in the target: every call is one step, back-to-back calls
included, on every CPython 3.8-3.13 here, in each spelling of the name (bare, Class.method,
module:function, module:Class.method), with the mode from a torch model's .training; and, without
the bootstrap, the sampled inference's warning that back-to-back calls merged."""
import json
import os
import subprocess
import textwrap

from sprof_testlib import BINARY_DIR, DEBIAN_PYTHON, SOURCE_DIR, TempDirTestCase, pythons, run_sprof
from record_helpers import manifest

DUMP = os.path.join(BINARY_DIR, "tests", "sprof_timeline_dump")
TRAIN = os.path.join(SOURCE_DIR, "examples", "train_torch.py")

# Calls back to back (nothing between them, each about 2 ms of work) the way a loop over
# prefetched batches calls its step; the script counts its own calls and times them.
LOOP = textwrap.dedent("""\
    import json, sys, time
    sys.path.insert(0, sys.argv[3])
    import steplib

    def train_step(batch):
        return steplib.work(batch)

    class Trainer(object):
        def train_step(self, batch):
            return steplib.work(batch)

    calls = []
    def timed(fn, *args):
        t = time.monotonic_ns()
        fn(*args)
        calls.append((t, time.monotonic_ns()))

    n = int(sys.argv[2])
    kind = sys.argv[1]
    if len(sys.argv) > 4:
        steplib.SECONDS = float(sys.argv[4])
    trainer = Trainer()
    for i in range(n):
        if kind == "function":
            timed(train_step, i)
        elif kind == "method":
            timed(trainer.train_step, i)
        elif kind == "module":
            timed(steplib.module_step, i)
        else:
            timed(steplib.Runner().run, i)
    print(json.dumps(calls))
    """)

STEPLIB = textwrap.dedent("""\
    import time

    SECONDS = 0.002  # a call's work

    def work(batch):
        end = time.perf_counter() + SECONDS
        x = 0
        while time.perf_counter() < end:
            x += 1
        return x

    def module_step(batch):
        return work(batch)

    class Runner(object):
        def run(self, batch):
            return work(batch)
    """)

# A torch model switched between train() and eval(): the steps' modes follow .training.
TORCH_MODES = textwrap.dedent("""\
    import torch

    model = torch.nn.Linear(4, 2)
    data = torch.randn(8, 4)

    def step(model, batch):
        return model(batch).sum()

    for epoch in range(2):
        model.train()
        for i in range(7):
            step(model, data)
        model.eval()
        with torch.no_grad():
            for i in range(3):
                step(model, data)
    """)


def timeline_steps(profile, pid):
    proc = subprocess.run([DUMP, profile], capture_output=True, text=True, check=True)
    processes = {p["pid"]: p for p in json.loads(proc.stdout)["processes"]}
    return processes[pid]["steps"]


class ExactStepFnTest(TempDirTestCase):
    def setUp(self):
        super().setUp()
        self.loop = self.write("loop.py", LOOP)
        self.write("steplib.py", STEPLIB)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def record(self, python, kind, name, n, *flags, seconds=None):
        out = os.path.join(self.tmp, "p-%s-%s" % (os.path.basename(os.path.dirname(os.path.dirname(python))), kind))
        extra = [] if seconds is None else [seconds]
        proc = run_sprof("record", "--step-fn", name, *flags, "-o", out, "--", python, self.loop, kind, n,
                         self.tmp, *extra, check=0)
        return proc, out, json.loads(proc.stdout.strip().splitlines()[-1])

    def check_exact(self, label, out, calls):
        m = manifest(out)
        self.assertEqual(m["steps"]["steps"], {"train": len(calls)}, label)
        steps = timeline_steps(out, m["target_pid"])
        self.assertEqual(len(steps), len(calls), label)
        # Each step lies inside the script's own timing of its call (the wrapper runs inside it).
        for step, (begin, end) in zip(steps, calls):
            self.assertLessEqual(begin, step["begin"], label)
            self.assertLessEqual(step["end"], end, label)
        self.assertEqual([s["step"] for s in steps], list(range(len(calls))), label)

    def test_back_to_back_calls_every_python(self):
        for label, python in sorted(pythons((3, 8), (3, 13)).items()):
            with self.subTest(python=label):
                proc, out, calls = self.record(python, "function", "train_step", 30)
                self.assertEqual(len(calls), 30)
                self.check_exact(label, out, calls)
                self.assertNotIn("may have merged", proc.stderr)

    def test_each_spelling(self):
        spellings = [("method", "Trainer.train_step"), ("module", "steplib:module_step"),
                     ("class", "steplib:Runner.run"), ("function", "__main__:train_step")]
        for label, python in sorted(pythons((3, 8), (3, 13)).items()):
            if label not in ("debian-3.11",) and not label.startswith(("pyenv-3.8.", "pyenv-3.13.")):
                continue
            for kind, name in spellings:
                with self.subTest(python=label, name=name):
                    proc, out, calls = self.record(python, kind, name, 12)
                    self.check_exact("%s %s" % (label, name), out, calls)

    def test_a_method_name_is_not_a_function_of_that_name(self):
        # Trainer.train_step names the method only, also before 3.11, where frames know no class.
        for label, python in sorted(pythons((3, 8), (3, 13)).items()):
            if label not in ("debian-3.11",) and not label.startswith("pyenv-3.8."):
                continue
            with self.subTest(python=label):
                _, out, calls = self.record(python, "function", "Trainer.train_step", 5)
                self.assertEqual(manifest(out)["steps"]["steps"], {}, label)

    def test_the_search_leaves_no_trace_function_behind(self):
        # Before 3.12 a bare name is found with a trace function; once found, no thread keeps it
        # (one started during the search included), so calls cost nothing more after that.
        script = self.write("threads.py", textwrap.dedent("""\
            import json, sys, threading, time
            done, seen = threading.Event(), []
            def helper():
                while not done.is_set():
                    time.sleep(0.001)
                seen.append(sys.gettrace() is None)
            def train_step(i):
                return sum(range(1000))
            t = threading.Thread(target=helper)
            t.start()
            time.sleep(0.05)
            for i in range(20):
                train_step(i)
            time.sleep(0.05)
            done.set()
            t.join()
            print(json.dumps({"main": sys.gettrace() is None, "helper": seen[0]}))
            """))
        for label, python in sorted(pythons((3, 8), (3, 13)).items()):
            with self.subTest(python=label):
                out = os.path.join(self.tmp, "threads-" + label)
                proc = run_sprof("record", "--step-fn", "train_step", "-o", out, "--", python, script, check=0)
                self.assertEqual(json.loads(proc.stdout.strip().splitlines()[-1]), {"main": True, "helper": True})
                self.assertEqual(manifest(out)["steps"]["steps"], {"train": 20})

    def test_mode_from_the_model_and_from_the_flag(self):
        script = self.write("modes.py", TORCH_MODES)
        out = os.path.join(self.tmp, "torch")
        run_sprof("record", "-q", "--step-fn", "step", "-o", out, "--", DEBIAN_PYTHON, script, check=0)
        steps = timeline_steps(out, manifest(out)["target_pid"])
        self.assertEqual([s["mode"] for s in steps], (["train"] * 7 + ["eval"] * 3) * 2)
        self.assertEqual(manifest(out)["steps"]["steps"], {"train": 14, "eval": 6})

        _, out, calls = self.record(DEBIAN_PYTHON, "function", "train_step", 4, "--step-fn-mode", "eval")
        self.assertEqual(manifest(out)["steps"]["steps"], {"eval": 4})

    def test_a_torch_job_with_dataloader_workers(self):
        # The model's forward is the step: 2 epochs of 16 batches and 3 evaluated batches each.
        # PyTorch's automatic steps stand down from the start, and the forked DataLoader workers
        # (sampled with --subprocesses) stop looking for the name and report no steps.
        out = os.path.join(self.tmp, "torch")
        proc = run_sprof("record", "--subprocesses", "--step-fn", "Regressor.forward", "-o", out, "--",
                         DEBIAN_PYTHON, TRAIN, "--epochs", "2", "--size", "1024", "--eval-batches", "3", check=0)
        self.assertIn("epoch 1: loss", proc.stdout)
        m = manifest(out)
        self.assertEqual(m["steps"]["steps"], {"train": 32, "eval": 6}, proc.stderr[-2000:])
        main = [p for p in m["steps"]["processes"] if p["pid"] == m["target_pid"]]
        self.assertEqual(main[0]["steps"], {"train": 32, "eval": 6})
        workers = [p for p in m["steps"]["processes"] if "dataloader_worker" in p]
        self.assertTrue(workers, m["steps"]["processes"])
        self.assertTrue(all(not p["steps"] for p in workers), workers)

    def test_bad_names_are_usage_errors(self):
        for name in ("a:b:c", "mod:", ":f", "a..b", "train step"):
            with self.subTest(name=name):
                proc = run_sprof("record", "--step-fn", name, "-o", os.path.join(self.tmp, "bad"), "--",
                                 DEBIAN_PYTHON, "-c", "pass", check=2)
                self.assertIn("--step-fn %s" % name, proc.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "bad")))

    def test_sampled_inference_warns_when_calls_merged(self):
        # Without the bootstrap the same loop is one long run of samples inside train_step. The
        # warning needs most of the process's samples inside the run: 1 s of calls (~100 samples
        # at 100 Hz, +-10) against the interpreter's start (~0.1 s, up to ~0.5 s on a loaded
        # machine: at most ~50 samples). With 30 calls of 2 ms (60 ms, ~6 samples) a slow start
        # outweighed the loop and the warning did not come (a CI run under load, stop 37).
        # It also needs the run whole, or cut in two: a run cut three times or more by gaps of
        # several samples looks like real steps with pauses between them. Only a sample between
        # two calls cuts it, and the loop spends a few us there per call. On a loaded machine the
        # process is also descheduled now and then, and a wait that starts between two calls puts
        # all its samples there. With 500 calls of 2 ms the loop spent ~0.1 % of its time between
        # calls, and the run was once cut into three "steps" and no warning came (scripts/test
        # beside a flake hunt, load 13; the loop took 3.1 s). Ten calls of 0.1 s spend 50 times
        # less there: by an estimate of one wait every few ms under such load (~1,000 a run),
        # ~0.02 waits between calls a run, and two in one run ~2e-4.
        proc, out, calls = self.record(DEBIAN_PYTHON, "function", "train_step", 10, "--no-inject", "--rate", "100",
                                       seconds=0.1)
        self.assertLess(manifest(out)["steps"]["steps"].get("train", 0), 10)
        self.assertIn("calls of train_step may have merged", proc.stderr)

    def test_no_steps_says_how_to_get_them(self):
        hint = "no training steps found: for a non-PyTorch loop use --step-fn NAME or sprof.step()"
        out = os.path.join(self.tmp, "nosteps")
        proc = run_sprof("record", "-o", out, "--", DEBIAN_PYTHON, self.loop, "function", 5, self.tmp, check=0)
        self.assertEqual(proc.stderr.count(hint), 1, proc.stderr)
        text = run_sprof("analyze", out, check=0).stdout.splitlines()
        self.assertEqual(text[1], hint)  # right under the title
        doc = json.loads(run_sprof("analyze", out, "--json", check=0).stdout)
        self.assertTrue(doc["steps"]["note"].startswith(hint), doc["steps"])
        # With steps, neither says it.
        proc, out, _ = self.record(DEBIAN_PYTHON, "function", "train_step", 3)
        self.assertNotIn(hint, proc.stderr)
        self.assertNotIn(hint, run_sprof("analyze", out, check=0).stdout)
