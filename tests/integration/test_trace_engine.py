"""Every kind of Chrome trace sprof writes, loaded into the trace engine of the Chrome DevTools
Performance panel (@paulirish/trace_engine, the one Lighthouse uses; pinned by
tests/trace_engine/package-lock.json, installed by scripts/install-deps): a CPU recording
(`export -f chrome`, the step threads and every thread), a GPU profile (the same workload with
the GPU activity CUPTI would have recorded, in gpu/<pid>.gpu's documented format), its trace
windows (`record --trace-schedule`, gzip-compressed) and a kineto trace round trip (the GPU
export read back by `sprof gpu` as the torch.profiler trace it imitates). tests/trace_engine/
check-trace.mjs runs the engine; for each trace the test asserts what the panel would draw:

- no engine error (no exception, nothing it logs, none of its warnings);
- no slice dropped from a thread's tree (the engine silently skips a slice that starts inside
  another and ends after it);
- no `<module>` under an ordinary function, and more generally no Python slice under a function
  that never calls it in the profile's sampled stacks (`export -f collapsed`): equal slices
  nested upside down;
- every process and thread named (process_name / thread_name metadata);
- the engine's span equal to the profile's within one sampling interval: a trace window's to its
  window's in sprof.json, a whole export's to its own first and last event, inside the sampled
  process's attach .. detach.

The real torch.profiler traces in third_party/kineto-traces are the control: the engine loads
them, and drops the Stream Sync slices kineto leaves on a stream's row over its copies."""

import glob
import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
import unittest

from sprof_testlib import SOURCE_DIR, TempDirTestCase, run_sprof

ENGINE_DIR = os.path.join(SOURCE_DIR, "tests", "trace_engine")
CHECK = os.path.join(ENGINE_DIR, "check-trace.mjs")
INTEGRATION_DIR = os.path.dirname(os.path.abspath(__file__))
KINETO_TRACES = sorted(glob.glob(os.path.join(SOURCE_DIR, "third_party", "kineto-traces", "*.json.gz")))
RATE_HZ = 1000

# A training loop marked with sprof's API: per TRAIN step a data load, a forward pass of three
# layers, a backward pass, a loss read back from the device and a device synchronize; a few EVAL
# steps; a Python thread "loader" beside it. With a GPU directory (argv[1]) it writes, after
# each step, the GPU activity CUPTI records for such a step into gpu/<pid>.gpu, as
# libsprof_cupti.so's writer thread would: kernel launches at the moments the layers run, the
# backward kernels launched from the autograd engine's thread (a thread without Python, so one
# the sampler never sees), the loss's blocking device-to-host copy and the synchronize as the
# CUDA calls that block the Python thread while it waits, with the copy and the context sync
# they stand for.
WORKLOAD = textwrap.dedent("""\
    import sys, threading, time
    import sprof

    TRAIN_STEPS, EVAL_STEPS = 24, 3


    def busy(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass


    class NoGpu:
        def __getattr__(self, name):
            return lambda *args, **kwargs: None


    if sys.argv[1]:
        sys.path.insert(0, sys.argv[2])
        from synthetic_gpu import GpuFile
        gpu = GpuFile(sys.argv[1])
    else:
        gpu = NoGpu()


    def load_batch():
        busy(0.002)


    def layer(i):
        gpu.launch(time.monotonic_ns(), "layer%d_forward_kernel" % i, 250000)
        busy(0.001)


    def forward():
        for i in range(3):
            layer(i)


    def backward():
        t = time.monotonic_ns()
        busy(0.002)
        gpu.launch(t + 500000, "layer_backward_kernel", 800000, tid=gpu.engine_tid)


    def read_loss():  # loss.item(): a blocking copy back to the host
        t0 = time.monotonic_ns()
        time.sleep(0.002)
        gpu.copy_to_host(t0, time.monotonic_ns())


    def synchronize():  # torch.cuda.synchronize()
        t0 = time.monotonic_ns()
        time.sleep(0.003)
        gpu.synchronize(t0, time.monotonic_ns())


    def loader(stop):
        while not stop.is_set():
            busy(0.0005)
            time.sleep(0.001)


    stop = threading.Event()
    thread = threading.Thread(target=loader, args=(stop,), name="loader")
    thread.start()
    busy(0.02)
    sprof.set_mode(sprof.TRAIN)
    for _ in range(TRAIN_STEPS):
        with sprof.step_context():
            load_batch()
            forward()
            backward()
            read_loss()
            synchronize()
        gpu.flush()
    sprof.set_mode(sprof.EVAL)
    for _ in range(EVAL_STEPS):
        with sprof.step_context():
            forward()
            synchronize()
        gpu.flush()
    stop.set()
    thread.join()
    """)


def engine(*args):
    """check-trace.mjs's verdicts, one dict per trace."""
    proc = subprocess.run(["node", CHECK] + list(args), capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError("check-trace.mjs exited %d:\n%s" % (proc.returncode, proc.stderr[-4000:]))
    return [json.loads(line) for line in proc.stdout.splitlines()]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def event_span(path):
    """(first start, last end) of a trace's timed events, in µs."""
    events = [e for e in load(path)["traceEvents"] if e.get("ph") != "M" and "ts" in e]
    return min(e["ts"] for e in events), max(e["ts"] + e.get("dur", 0) for e in events)


def setUpModule():
    if not shutil.which("node"):
        raise unittest.SkipTest("no node (scripts/install-deps installs it)")
    if not os.path.isdir(os.path.join(ENGINE_DIR, "node_modules", "@paulirish", "trace_engine")):
        raise unittest.SkipTest("no @paulirish/trace_engine in tests/trace_engine/node_modules "
                                "(scripts/install-deps runs npm ci there)")


class TraceEngineTestCase(TempDirTestCase):
    maxDiff = None

    def record(self, name, *flags, gpu=False):
        """A recording of WORKLOAD: (profile directory, manifest)."""
        script = os.path.join(self.tmp, "train.py")
        with open(script, "w") as f:
            f.write(WORKLOAD)
        profile = os.path.join(self.tmp, name)
        # The GPU profile's activity comes from the workload, not from CUPTI: sprof's injection stays
        # out (--gpu off), as in test_gpu_callsites.
        if gpu:
            flags = ("--gpu", "off") + flags
        run_sprof("record", "-q", "-r", RATE_HZ, "-o", profile, "--no-system-metrics", *flags, "--", sys.executable,
                  script, os.path.join(profile, "gpu") if gpu else "", INTEGRATION_DIR, check=0)
        with open(os.path.join(profile, "sprof.json")) as f:
            return profile, json.load(f)

    def stacks(self, profile):
        """The profile's sampled stacks of every thread, folded."""
        path = os.path.join(self.tmp, os.path.basename(profile) + ".folded")
        run_sprof("export", profile, "-f", "collapsed", "--all-threads", "-o", path, check=0)
        return path

    def check_trace(self, result, manifest, span=None):
        """The assertions of the module's docstring on one of check-trace.mjs's results, all
        checked before one failure lists what went wrong; `span`: the profile's (first, last) in
        epoch µs, else the trace's own first and last event."""
        name = os.path.basename(result["file"])
        interval = 1e6 / manifest["sampling"]["rate_hz"]
        self.assertIsNone(result["error"], name)
        problems = []
        if result["consoleErrors"] or result["warnings"]:
            problems.append(("engine errors and warnings", result["consoleErrors"][:5], result["warnings"]))
        for t in result["threads"]:
            if t["dropped"]:
                problems.append(("slices the engine dropped from its tree", t["pid"], t["tid"], t["threadName"],
                                 t["dropped"], t["droppedExamples"][:3]))
        module = [(m["parent"], m["child"]) for m in result["moduleParents"] if m["ordinary"]]
        if module:
            problems.append(("<module> under an ordinary function", module[:3]))
        if result["unknownEdges"]:
            problems.append(("Python slices under a function that never calls them", result["unknownEdges"][:5]))
        if result["unnamedProcesses"] or result["unnamedThreads"]:
            problems.append(("processes and threads without a name", result["unnamedProcesses"],
                             result["unnamedThreads"]))
        bounds = result["bounds"]
        if span is None:
            span = event_span(result["file"])
            offset = manifest["clock"]["realtime_ns"] - manifest["clock"]["monotonic_ns"]
            for p in manifest["processes"]:
                attach, detach = (p["attach_ns"] + offset) / 1000, (p["detach_ns"] + offset) / 1000
                if bounds["min"] < attach - interval or bounds["max"] > detach + interval:
                    problems.append(("the trace reaches outside its process's sampling", bounds, attach, detach))
        if abs(bounds["min"] - span[0]) > interval or abs(bounds["max"] - span[1]) > interval:
            problems.append(("the engine's span is not the profile's", bounds, span))
        self.assertTrue(result["threads"], name)
        self.assertEqual(problems, [], name)


class CpuRecording(TraceEngineTestCase):
    def test_the_step_threads_and_every_thread(self):
        profile, manifest = self.record("cpu")
        steps = os.path.join(self.tmp, "steps.json.gz")
        every = os.path.join(self.tmp, "all-threads.json")
        run_sprof("export", profile, "-f", "chrome", "-o", steps, check=0)
        run_sprof("export", profile, "-f", "chrome", "--all-threads", "-o", every, check=0)
        results = engine("--stacks", self.stacks(profile), steps, every)
        for result in results:
            with self.subTest(trace=os.path.basename(result["file"])):
                self.check_trace(result, manifest)
        self.assertEqual(len(results[1]["threads"]), 2)
        self.assertIn("loader", {t["threadName"] for t in results[1]["threads"]})
        self.assertGreater(sum(t["slices"] for t in results[0]["threads"]), 100)


class GpuProfile(TraceEngineTestCase):
    def test_profile_windows_and_kineto_round_trip(self):
        # Cycles of 8 TRAIN steps (wait 3, warmup 1, active 4): windows of steps 4-7, 12-15, 20-23.
        profile, manifest = self.record("train", "--trace-schedule", "wait=3,warmup=1,active=4,repeat=3",
                                        "--trace-gzip", gpu=True)
        export = os.path.join(self.tmp, "gpu.json.gz")
        out = run_sprof("export", profile, "-f", "chrome", "-o", export, check=0)
        self.assertNotIn("warning", out.stderr)
        windows = manifest["trace_windows"]["files"]
        self.assertEqual(len(windows), 3, manifest["trace_windows"])
        paths = [os.path.join(profile, w["path"]) for w in windows]
        results = engine("--stacks", self.stacks(profile), export, *paths)
        offset = (manifest["clock"]["realtime_ns"] - manifest["clock"]["monotonic_ns"]) / 1000
        with self.subTest(trace="export"):
            self.check_trace(results[0], manifest)
            cats = {e.get("cat") for e in load(export)["traceEvents"]}
            self.assertTrue({"kernel", "gpu_memcpy", "cuda_runtime", "cuda_sync", "python_function"} <= cats, cats)
        for window, result in zip(windows, results[1:]):
            with self.subTest(trace=window["path"]):
                self.check_trace(result, manifest, (window["start_us"] + offset, window["end_us"] + offset))
        # The round trip: the export is a kineto trace to `sprof gpu`, which reads from it the
        # GPU work it reads from the profile (times in whole µs: each duration within 1 µs).
        for view, key in (("kernels", "name"), ("memcpy", "operation"), ("api", "name")):
            with self.subTest(view=view):
                rows = {}
                for source in (profile, export):
                    out = json.loads(run_sprof("gpu", source, view, "--json", check=0).stdout)
                    rows[source] = {r[key]: (r["instances"], r["total_us"]) for r in out["rows"]}
                self.assertTrue(rows[profile])
                self.assertEqual(sorted(rows[export]), sorted(rows[profile]))
                for name, (instances, total_us) in rows[profile].items():
                    self.assertEqual(rows[export][name][0], instances, name)
                    self.assertAlmostEqual(rows[export][name][1], total_us, delta=instances, msg=name)


class TorchProfilerTraces(unittest.TestCase):
    """The control: what torch.profiler itself writes, in the same engine."""

    def test_kineto_traces(self):
        self.assertEqual(len(KINETO_TRACES), 4)
        for result in engine(*KINETO_TRACES):
            with self.subTest(trace=os.path.basename(result["file"])):
                self.assertIsNone(result["error"])
                self.assertEqual(result["consoleErrors"], [])
                self.assertGreater(sum(t["entries"] for t in result["threads"]), 500)
                # kineto writes Stream Sync on the stream's row, over the copy it waits for: the
                # engine drops those, and only those (sprof's export moves them off the row).
                for t in result["threads"]:
                    for example in t["droppedExamples"]:
                        self.assertEqual(example["slice"]["cat"], "cuda_sync", example)


if __name__ == "__main__":
    unittest.main()
