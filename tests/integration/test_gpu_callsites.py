"""`sprof gpu DIR callsites`: GPU time tied to the Python line that launched it.

A real `sprof record` samples a real Python workload whose main thread runs two known loops
(each on its own line) at times it logs itself, on its own thread id. The test then writes GPU
activity into the profile (gpu/<pid>.gpu, the documented format, as libsprof_cupti.so writes
it) on that schedule: launch calls on the workload's thread in the middle of each loop, kernels
correlated with them. The call sites must come out on the loops' lines with the kernel times of
the schedule: correlation id -> launch call -> thread -> sample -> Python line.
"""

import json
import os
import struct
import textwrap
import zlib

from chrome_trace_checks import folded_names, nesting_problems
from sprof_testlib import TempDirTestCase, run_sprof

WORKLOAD = textwrap.dedent("""\
    import json, os, sys, threading, time
    sys.path.insert(0, sys.argv[2])
    import fakelib

    def forward(log):
        t0 = time.monotonic_ns()
        end = time.monotonic() + 0.3
        while time.monotonic() < end: pass  # FORWARD
        log.append(("forward", t0, time.monotonic_ns()))

    def backward(log):
        t0 = time.monotonic_ns()
        fakelib.spin(0.3)  # BACKWARD
        log.append(("backward", t0, time.monotonic_ns()))

    log = []
    for _ in range(3):
        forward(log)
        backward(log)
    with open(sys.argv[1], "w") as f:
        json.dump({"pid": os.getpid(), "tid": threading.get_native_id(), "log": log}, f)
    """)

# A "library": its frames are not the user's, so the call site is the user's line that called it.
FAKELIB = textwrap.dedent("""\
    import time

    def spin(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end: pass  # LIBRARY
    """)


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def svarint(v):
    return varint((v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1)


class Chunk:
    """A chunk body of docs/gpu-activity.md's format."""

    def __init__(self, pid):
        self.body = bytearray()
        self.strings = {}
        self.last_start = 0
        cupti = self.string("/fake/libcupti.so")
        self.body += bytes([0x02]) + varint(pid) + svarint(-1) + svarint(-1) + svarint(-1) + svarint(0) + svarint(0)
        self.body += varint(130001) + varint(cupti)

    def string(self, text):
        if text not in self.strings:
            data = text.encode()
            self.body += bytes([0x01]) + varint(len(data)) + data
            self.strings[text] = len(self.strings)
        return self.strings[text]

    def time(self, start, end):
        out = svarint(start - self.last_start) + varint(end - start)
        self.last_start = start
        return out

    def api(self, start, end, tid, correlation):
        name = self.string("cudaLaunchKernel")
        self.body += bytes([0x13]) + self.time(start, end) + varint(0) + varint(211) + varint(name)
        self.body += varint(tid) + varint(correlation) + varint(0)

    def kernel(self, start, end, correlation, name):
        n = self.string(name)
        self.body += bytes([0x10]) + self.time(start, end)
        for v in (0, 1, 7, correlation, 64, 1, 1, 128, 1, 1, 32, 0, 0, n):
            self.body += varint(v)

    def framed(self):
        body = bytes(self.body)
        return b"SPGC" + struct.pack("<II", len(body), zlib.crc32(body)) + body


def line_of(source, marker):
    return next(i for i, text in enumerate(source.splitlines(), 1) if marker in text)


class GpuCallSites(TempDirTestCase):
    def setUp(self):
        super().setUp()
        lib = os.path.join(self.tmp, "venv", "lib", "python3.11", "site-packages")
        os.makedirs(lib)
        with open(os.path.join(lib, "fakelib.py"), "w") as f:
            f.write(FAKELIB)
        self.script = os.path.join(self.tmp, "train.py")
        with open(self.script, "w") as f:
            f.write(WORKLOAD)
        self.schedule = os.path.join(self.tmp, "schedule.json")
        self.profile = os.path.join(self.tmp, "profile")
        run_sprof("record", "-q", "-r", "200", "--gpu", "off", "-o", self.profile, "--", "/usr/bin/python3",
                  self.script, self.schedule, lib, check=0)
        with open(self.schedule) as f:
            self.run_info = json.load(f)
        # Per window: 4 launches spread over its middle half; forward kernels 1 ms, backward 2.5 ms.
        chunk = Chunk(self.run_info["pid"])
        self.expected = {"forward": 0, "backward": 0}
        correlation = 0
        events = []
        for kind, t0, t1 in self.run_info["log"]:
            for k in range(4):
                at = t0 + (t1 - t0) * (k + 2) // 8
                correlation += 1
                duration = 1_000_000 if kind == "forward" else 2_500_000
                events.append((at, at + 8_000, correlation, at + 20_000, at + 20_000 + duration, kind))
                self.expected[kind] += duration
        for at, at_end, corr, k0, k1, kind in events:
            chunk.api(at, at_end, self.run_info["tid"], corr)
        for at, at_end, corr, k0, k1, kind in sorted(events, key=lambda e: e[3]):
            chunk.kernel(k0, k1, corr, f"{kind}_kernel(float*)")
        os.makedirs(os.path.join(self.profile, "gpu"), exist_ok=True)
        header = b"SPROFGPU" + struct.pack("<II", 1, 16)
        with open(os.path.join(self.profile, "gpu", "%d.gpu" % self.run_info["pid"]), "wb") as f:
            f.write(header + chunk.framed())

    def sites(self, *flags):
        out = run_sprof("gpu", self.profile, "callsites", "--format", "json", *flags, check=0)
        return json.loads(out.stdout)["rows"]

    def test_kernels_land_on_the_lines_that_launched_them(self):
        # Launches sit 75 ms or more inside their loop: a 50 ms reach cannot cross into the other
        # loop, and rides out the sampler's late ticks on a loaded machine.
        rows = self.sites("--max-distance-ms", "50")
        by_line = {(os.path.basename(r["file"] or ""), r.get("line")): r for r in rows}
        forward = by_line.get(("train.py", line_of(WORKLOAD, "# FORWARD")))
        backward = by_line.get(("train.py", line_of(WORKLOAD, "# BACKWARD")))
        self.assertIsNotNone(forward, rows)
        self.assertIsNotNone(backward, rows)
        self.assertEqual(forward["function"], "forward")
        self.assertEqual(backward["function"], "backward")
        self.assertAlmostEqual(forward["gpu_us"], self.expected["forward"] / 1000, delta=0.01)
        self.assertAlmostEqual(backward["gpu_us"], self.expected["backward"] / 1000, delta=0.01)
        self.assertEqual(forward["kernels"], 12)
        self.assertEqual(forward["launches"], 12)
        self.assertEqual(backward["top_kernels"][0]["name"], "backward_kernel(float*)")
        self.assertEqual(rows[0], backward)  # the most GPU time first
        total = self.expected["forward"] + self.expected["backward"]
        self.assertAlmostEqual(backward["share"], self.expected["backward"] / total, places=4)

    def test_default_reach_attributes_everything_between_samples(self):
        rows = self.sites()
        attributed = sum(r["gpu_us"] for r in rows if r["file"])
        # Every launch lies between two samples of its thread, however late a tick came.
        self.assertEqual(attributed, sum(r["gpu_us"] for r in rows), rows)

    def test_leaf_reports_the_library_line(self):
        rows = self.sites("--leaf", "--max-distance-ms", "50")
        lib_line = line_of(FAKELIB, "# LIBRARY")
        library = [r for r in rows if r["file"] and r["file"].endswith("fakelib.py")]
        self.assertEqual(len(library), 1, rows)
        self.assertEqual(library[0]["line"], lib_line)
        self.assertEqual(library[0]["function"], "spin")

    def test_work_without_a_launch_or_a_sample_is_named_not_dropped(self):
        path = os.path.join(self.profile, "gpu", "%d.gpu" % self.run_info["pid"])
        chunk = Chunk(self.run_info["pid"])
        end = max(t1 for _, _, t1 in self.run_info["log"])
        chunk.kernel(end + 10**9, end + 10**9 + 5_000, 0, "orphan")           # no correlation
        chunk.api(end + 60 * 10**9, end + 60 * 10**9 + 1000, self.run_info["tid"], 999)  # long after the run
        chunk.kernel(end + 60 * 10**9 + 2000, end + 60 * 10**9 + 9000, 999, "late")
        with open(path, "ab") as f:
            f.write(chunk.framed())
        rows = self.sites()
        why = sorted(r["unattributed"] for r in rows if r["file"] is None)
        self.assertEqual(why, ["no launch call recorded for it", "no sample of the launching thread near the launch"])

    def test_analyze_has_a_gpu_section(self):
        out = run_sprof("analyze", self.profile, "--format", "json", check=0)
        gpu = json.loads(out.stdout)["gpu"]
        self.assertTrue(gpu["present"], gpu)
        self.assertEqual(gpu["kernels"], 24)
        total = self.expected["forward"] + self.expected["backward"]
        self.assertAlmostEqual(gpu["kernel_s"], total / 1e9, places=6)
        self.assertEqual([k["name"] for k in gpu["top_kernels"]], ["backward_kernel(float*)", "forward_kernel(float*)"])
        self.assertEqual(gpu["top_kernels"][0]["instances"], 12)
        # The kernels do not overlap: the device is busy for their sum, over first start .. last end.
        kernels = []
        for kind, t0, t1 in self.run_info["log"]:
            for k in range(4):
                at = t0 + (t1 - t0) * (k + 2) // 8
                kernels.append((at + 20_000, at + 20_000 + (1_000_000 if kind == "forward" else 2_500_000)))
        span = max(e for _, e in kernels) - min(s for s, _ in kernels)
        (device,) = gpu["devices"]
        self.assertAlmostEqual(device["span_s"], span / 1e9, places=6)
        self.assertAlmostEqual(device["compute_share"], total / span, places=4)
        self.assertAlmostEqual(device["idle_share"], 1 - total / span, places=4)
        sites = gpu["call_sites"]
        self.assertTrue(sites[0]["site"].endswith("train.py:%d backward" % line_of(WORKLOAD, "# BACKWARD")), sites)
        self.assertEqual(sites[0]["top_kernel"], "backward_kernel(float*)")
        text = run_sprof("analyze", self.profile, check=0).stdout
        self.assertIn("GPU (sprof gpu DIR VIEW for more)", text)
        # No NVML here: the rules take GPUUtilization from the kernels, one value per system tick
        # interval, which is what OverallSystemUsage's GPU line summarises.
        rules = run_sprof("rules", self.profile, "--format", "json", check=0)
        self.assertIn("GPUUtilization taken from the 24 kernels recorded in gpu/", rules.stderr)
        by_rule = {r["rule"]: r for r in json.loads(rules.stdout)["rules"]}
        self.assertNotEqual(by_rule["LowGPUUtilization"]["status"], "NoData")
        self.assertGreater(by_rule["LowGPUUtilization"]["Datapoints"], 0)
        # The evidence names the machine (sprof.json's host); Details keep smdebug's algo-1.
        with open(os.path.join(self.profile, "sprof.json")) as f:
            host = json.load(f)["host"]
        self.assertIn(host + " GPU p50", by_rule["OverallSystemUsage"]["evidence"])
        self.assertIn("algo-1", by_rule["OverallSystemUsage"]["Details"]["GPU"])
        self.assertIn("backward_kernel(float*)", text)

    def test_report_timeline_has_the_stream_and_the_thread(self):
        page = os.path.join(self.tmp, "report.html")
        run_sprof("report", self.profile, "-o", page, check=0)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        start = html.index('id="sprof-data">') + len('id="sprof-data">')
        data = json.loads(html[start:html.index("</script>", start)])
        rows = data["timeline"]["rows"]
        gpu = [r for r in rows if r["gpu"]]
        self.assertEqual(len(gpu), 1, [r["label"] for r in rows])
        self.assertRegex(gpu[0]["label"], r"^GPU \d+ stream \d+$")
        spans = [gpu[0]["spans"][i:i + 4] for i in range(0, len(gpu[0]["spans"]), 4)]
        names = data["timeline"]["names"]
        self.assertEqual(len(spans), 24)  # the kernels never touch: one span each
        for begin, end, name, idle in spans:
            want = 0.001 if names[name] == "forward_kernel(float*)" else 0.0025
            self.assertAlmostEqual(end - begin, want, delta=2e-6)
        # The workload's thread is a row too, and its spans cover the loops it logged.
        main = [r for r in rows if not r["gpu"] and r["pid"] == self.run_info["pid"]]
        self.assertTrue(main)
        covered = sum(r["spans"][i + 1] - r["spans"][i] for r in main for i in range(0, len(r["spans"]), 4))
        logged = sum(t1 - t0 for _, t0, t1 in self.run_info["log"]) / 1e9
        self.assertGreater(covered, logged * 0.9)

    def test_a_trace_file_has_no_call_sites(self):
        trace = os.path.join(self.tmp, "t.json")
        with open(trace, "w") as f:
            json.dump({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
                                        "args": {"device": 0, "stream": 7, "correlation": 1}}]}, f)
        out = run_sprof("gpu", trace, "callsites", check=2)
        self.assertIn("callsites needs a profile directory", out.stderr)


# PyTorch's backward pass of CUDA tensors: the autograd engine launches its kernels from a thread
# of its own that runs no Python, while the caller waits in torch/autograd/.
AUTOGRAD_WORKLOAD = textwrap.dedent("""\
    import importlib.util, json, os, sys, threading, time
    spec = importlib.util.spec_from_file_location("graph", sys.argv[2])
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)

    def spin(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end: pass  # ELSEWHERE

    def step(log, first):
        t0 = time.monotonic_ns()
        if first:
            graph.run_backward(0.4)  # BACKWARD A
        else:
            graph.run_backward(0.4)  # BACKWARD B
        log.append(("backward", t0, time.monotonic_ns()))
        t0 = time.monotonic_ns()
        spin(0.4)
        log.append(("elsewhere", t0, time.monotonic_ns()))

    log = []
    step(log, True)
    step(log, False)
    with open(sys.argv[1], "w") as f:
        json.dump({"pid": os.getpid(), "tid": threading.get_native_id(), "log": log}, f)
    """)

# torch/autograd/graph.py's _engine_run_backward, as far as a sampler sees it: a wait.
FAKE_AUTOGRAD = textwrap.dedent("""\
    import time

    def run_backward(seconds):
        time.sleep(seconds)
    """)


class AutogradThreadLaunches(TempDirTestCase):
    def test_launches_from_a_thread_without_python_go_to_the_nearest_backward_caller(self):
        autograd = os.path.join(self.tmp, "venv", "lib", "python3.11", "site-packages", "torch", "autograd")
        os.makedirs(autograd)
        with open(os.path.join(autograd, "graph.py"), "w") as f:
            f.write(FAKE_AUTOGRAD)
        script = os.path.join(self.tmp, "train.py")
        with open(script, "w") as f:
            f.write(AUTOGRAD_WORKLOAD)
        schedule = os.path.join(self.tmp, "schedule.json")
        profile = os.path.join(self.tmp, "profile")
        run_sprof("record", "-q", "-r", "200", "--gpu", "off", "-o", profile, "--", "/usr/bin/python3", script,
                  schedule, os.path.join(autograd, "graph.py"), check=0)
        with open(schedule) as f:
            info = json.load(f)
        # Launches from a thread id the sampler never saw (the engine's thread): in each backward
        # window, and early in the window after it, which is nearer to that backward than to the
        # next one.
        engine_tid = info["tid"] + 100000
        chunk = Chunk(info["pid"])
        correlation = 0
        launches = []
        for n, (kind, t0, t1) in enumerate(info["log"]):
            for k in ((3, 5) if kind == "backward" else (1,)):
                at = t0 + (t1 - t0) * k // 8
                correlation += 1
                launches.append((at, correlation, "%s%d_kernel" % (kind, n // 2)))
                chunk.api(at, at + 8_000, engine_tid, correlation)
        for at, corr, name in launches:
            chunk.kernel(at + 20_000, at + 1_020_000, corr, name)
        os.makedirs(os.path.join(profile, "gpu"), exist_ok=True)
        with open(os.path.join(profile, "gpu", "%d.gpu" % info["pid"]), "wb") as f:
            f.write(b"SPROFGPU" + struct.pack("<II", 1, 16) + chunk.framed())
        rows = json.loads(run_sprof("gpu", profile, "callsites", "--format", "json", check=0).stdout)["rows"]
        by_line = {r["line"]: r for r in rows}
        self.assertEqual(len(rows), 2, rows)
        for marker, n in (("# BACKWARD A", 0), ("# BACKWARD B", 1)):
            row = by_line[line_of(AUTOGRAD_WORKLOAD, marker)]
            self.assertEqual((os.path.basename(row["file"]), row["function"]), ("train.py", "step"))
            self.assertEqual(sorted((k["name"], k["instances"]) for k in row["top_kernels"]),
                             [("backward%d_kernel" % n, 2), ("elsewhere%d_kernel" % n, 1)])

    def test_without_autograd_waits_they_stay_unattributed(self):
        script = os.path.join(self.tmp, "plain.py")
        with open(script, "w") as f:
            f.write("import json, os, sys, threading, time\n"
                    "end = time.monotonic() + 0.5\n"
                    "while time.monotonic() < end: pass\n"
                    "json.dump({'pid': os.getpid(), 'tid': threading.get_native_id(), 't': time.monotonic_ns()},"
                    " open(sys.argv[1], 'w'))\n")
        info_path, profile = os.path.join(self.tmp, "info.json"), os.path.join(self.tmp, "profile")
        run_sprof("record", "-q", "-r", "200", "--gpu", "off", "-o", profile, "--", "/usr/bin/python3", script,
                  info_path, check=0)
        with open(info_path) as f:
            info = json.load(f)
        chunk = Chunk(info["pid"])
        at = info["t"] - 200_000_000
        chunk.api(at, at + 8_000, info["tid"] + 100000, 1)
        chunk.kernel(at + 20_000, at + 1_020_000, 1, "k")
        os.makedirs(os.path.join(profile, "gpu"), exist_ok=True)
        with open(os.path.join(profile, "gpu", "%d.gpu" % info["pid"]), "wb") as f:
            f.write(b"SPROFGPU" + struct.pack("<II", 1, 16) + chunk.framed())
        rows = json.loads(run_sprof("gpu", profile, "callsites", "--format", "json", check=0).stdout)["rows"]
        self.assertEqual([r["unattributed"] for r in rows],
                         ["no samples of the launching thread (pid %d, tid %d)" % (info["pid"], info["tid"] + 100000)])


class ChromeTraceExport(GpuCallSites):
    """The same profile as one Chrome trace: checked against the Trace Event Format."""

    # Only this class's own test (the call-site tests run once, above).
    test_kernels_land_on_the_lines_that_launched_them = None
    test_default_reach_attributes_everything_between_samples = None
    test_leaf_reports_the_library_line = None
    test_work_without_a_launch_or_a_sample_is_named_not_dropped = None
    test_a_trace_file_has_no_call_sites = None

    def test_kernels_launches_flows_and_python_slices(self):
        out = os.path.join(self.tmp, "trace.json.gz")
        run_sprof("export", self.profile, "-f", "chrome", "-o", out, check=0)
        import gzip
        with gzip.open(out, "rt") as f:
            doc = json.load(f)
        events = doc["traceEvents"]
        self.assertEqual(doc["schemaVersion"], 1)
        # Python slices, steps, CUDA calls and kernels nest as viewers draw them (chrome_trace_checks):
        # equal slices in caller-to-callee order, as the same view's folded stacks have them.
        stacks = folded_names(run_sprof("export", self.profile, "-f", "collapsed", "-o", "-", check=0).stdout)
        partial, upside_down, fractional = nesting_problems(events, stacks)
        self.assertEqual(partial[:3], [])
        self.assertEqual(upside_down[:3], [])
        self.assertEqual(fractional, 0)
        for e in events:
            self.assertIn(e["ph"], ("X", "M", "s", "f"), e)
            if e["ph"] == "X":
                self.assertIsInstance(e["ts"], (int, float))
                self.assertGreaterEqual(e["dur"], 0, e)
        kernels = [e for e in events if e.get("cat") == "kernel"]
        self.assertEqual(len(kernels), 24)
        for k in kernels:
            self.assertEqual(k["args"]["stream"], 7)
            self.assertGreaterEqual(k["pid"], 1_000_000_000)  # GPU rows sort after the processes
        launches = [e for e in events if e.get("cat") == "cuda_runtime"]
        self.assertEqual({e["tid"] for e in launches}, {self.run_info["tid"]})
        starts = {e["id"]: e for e in events if e["ph"] == "s"}
        finishes = {e["id"]: e for e in events if e["ph"] == "f"}
        self.assertEqual(set(starts), set(finishes))
        self.assertEqual(len(starts), 24)
        for i, f in finishes.items():
            self.assertEqual(f["bp"], "e")
            self.assertLessEqual(starts[i]["ts"], f["ts"])
        # Timestamps are epoch µs: the kernels sit inside the run's own wall-clock time.
        first = min(k["ts"] for k in kernels)
        self.assertGreater(first, 1.6e15)
        slices = [e for e in events if e.get("cat") == "python_function" and e["tid"] == self.run_info["tid"]]
        names = {e["name"] for e in slices}
        self.assertTrue({"forward", "backward", "<module>"} <= names, names)
        # Slices of one thread nest: each one ends before its enclosing one does.
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in slices:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - 1e-6:
                stack.pop()
            if stack:
                self.assertLessEqual(e["ts"] + e["dur"], stack[-1]["ts"] + stack[-1]["dur"] + 1e-3)
            stack.append(e)
