"""`sprof gpu TRACE VIEW` on real A100 traces written by torch.profiler (third_party/kineto-traces).

Every figure sprof prints is recomputed here from the raw trace events, in plain Python, with the
definitions the views document (nsys's stats columns, HTA's idle and temporal breakdowns), so
the test checks sprof against the trace and not against sprof's own earlier output.
"""

import csv
import gzip
import io
import json
import math
import os
import re
import statistics
import subprocess
import tempfile
import unittest

from sprof_testlib import SOURCE_DIR, SPROF_BIN, cxx_demangled

TRACES = os.path.join(SOURCE_DIR, "third_party", "kineto-traces")
ALEXNET = os.path.join(TRACES, "alexnet-benchmark_result_2869224_1695835535_trace.json.gz")
SIMPLE_ADD = os.path.join(TRACES, "simple_add-benchmark_result_493459_1694039959_trace.json.gz")
NCCL = os.path.join(TRACES, "nccl_parser_config-nccl_data.json.gz")
SAMPLED = os.path.join(TRACES, "trace_filter-sampled_rank-0.json.gz")
ALL = [ALEXNET, SIMPLE_ADD, NCCL, SAMPLED]
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def load(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    base = doc.get("baseTimeNanoseconds", 0)

    def ns(v):
        # Integers exactly; fractions rounded half away from zero, as C's llround.
        return (v * 1000 if isinstance(v, int) else math.floor(v * 1000 + 0.5)) + base

    events = []
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or "ts" not in e:
            continue
        e = dict(e)
        e["start"] = ns(e["ts"])
        e["end"] = e["start"] + ns(e.get("dur", 0)) - base
        events.append(e)
    return doc, events


def ops(events):
    return [e for e in events if e.get("cat") in GPU_CATS]


def stream_syncs(events):
    """cuda_sync events kineto puts on a stream: HTA's temporal breakdown counts them as busy."""
    return [e for e in events if e.get("cat") == "cuda_sync" and e["args"].get("stream", -1) != -1]


# HTA's kernel types (hta/common/types.py, get_kernel_type in hta/utils/utils.py), with re.match.
COMM = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
MEMORY = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
NOT_COMPUTE = re.compile(r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)|"
                         r"(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)|"
                         r"(^collective_subgraph_execution)")


def kernel_type(name):
    if COMM.match(name):
        return "communication"
    if MEMORY.match(name):
        return "memory"
    return "other" if NOT_COMPUTE.match(name) else "computation"


def calls(events):
    return {e["args"]["correlation"]: e for e in events
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}


def merge(intervals):
    out = []
    for lo, hi in sorted(intervals):
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def total(merged):
    return sum(hi - lo for lo, hi in merged)


def run(*args):
    proc = subprocess.run([SPROF_BIN, "gpu", *args], capture_output=True, text=True, timeout=120)
    return proc


def rows(*args):
    proc = run(*args, "--format", "json")
    if proc.returncode != 0:
        raise AssertionError(f"sprof gpu {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout)["rows"]


class GpuViewsOnKinetoTraces(unittest.TestCase):
    def assertUs(self, sprof_us, ns, msg=None):
        # sprof prints µs rounded to the ns; Python's sums are exact ns.
        self.assertAlmostEqual(sprof_us, ns / 1000, delta=0.0011, msg=msg)

    def test_kernels_match_sums_over_the_events(self):
        for path in ALL:
            _, events = load(path)
            by_name = {}
            for e in ops(events):
                if e["cat"] == "kernel":
                    by_name.setdefault(e["name"], []).append(e["end"] - e["start"])
            if not by_name:
                continue
            # Mangled names (the nccl trace's cutlass kernels) are shown demangled.
            readable = cxx_demangled(list(by_name))
            by_name = {readable[name]: d for name, d in by_name.items()}
            all_ns = sum(sum(v) for v in by_name.values())
            got = rows(path, "kernels")
            self.assertFalse([r["name"] for r in got if r["name"].startswith("_Z")], path)
            self.assertEqual(len(got), len(by_name), path)
            self.assertEqual(sum(r["instances"] for r in got), sum(len(v) for v in by_name.values()))
            totals = [r["total_us"] for r in got]
            self.assertEqual(totals, sorted(totals, reverse=True), "sorted by total time")
            for r in got:
                d = sorted(by_name[r["name"]])
                self.assertEqual(r["instances"], len(d), r["name"])
                self.assertUs(r["total_us"], sum(d))
                self.assertUs(r["min_us"], d[0])
                self.assertUs(r["max_us"], d[-1])
                self.assertUs(r["avg_us"], sum(d) / len(d))
                self.assertUs(r["median_us"], statistics.median(d))
                self.assertUs(r["stddev_us"], statistics.stdev(d) if len(d) > 1 else 0)
                self.assertAlmostEqual(r["share"], sum(d) / all_ns, places=5)

    def test_memcpy_by_operation_with_bytes_and_throughput(self):
        for path in ALL:
            _, events = load(path)
            by_name = {}
            for e in ops(events):
                if e["cat"] != "kernel":
                    acc = by_name.setdefault(e["name"], [0, 0, 0])
                    acc[0] += 1
                    acc[1] += e["args"]["bytes"]
                    acc[2] += e["end"] - e["start"]
            got = {r["operation"]: r for r in rows(path, "memcpy")}
            self.assertEqual(set(got), set(by_name), path)
            for name, (count, nbytes, t) in by_name.items():
                self.assertEqual(got[name]["instances"], count)
                self.assertEqual(got[name]["bytes"], nbytes)
                self.assertUs(got[name]["total_us"], t)
                if t:
                    self.assertAlmostEqual(got[name]["throughput_gb_s"], nbytes / t, places=4)

    def test_api_calls_by_name(self):
        _, events = load(NCCL)
        by_name = {}
        for e in events:
            if e.get("cat") in ("cuda_runtime", "cuda_driver"):
                by_name.setdefault(e["name"], []).append(e["end"] - e["start"])
        got = {r["name"]: r for r in rows(NCCL, "api")}
        self.assertEqual(set(got), set(by_name))
        for name, d in by_name.items():
            self.assertEqual(got[name]["instances"], len(d))
            self.assertUs(got[name]["total_us"], sum(d))
            self.assertUs(got[name]["median_us"], statistics.median(d))

    def test_idle_breakdown_follows_hta(self):
        for path in ALL:
            _, events = load(path)
            launch = calls(events)
            streams = {}
            for e in ops(events):
                streams.setdefault((e["args"]["device"], e["args"]["stream"]), []).append(e)
            got = {(r["device"], r["stream"]): r for r in rows(path, "idle")}
            self.assertEqual(set(got), set(streams), path)
            for key, s in streams.items():
                s.sort(key=lambda e: e["start"])
                host = kernel = other = 0
                for prev, cur in zip(s, s[1:]):
                    gap = cur["start"] - prev["end"]
                    if gap <= 0:
                        continue
                    call = launch.get(cur["args"].get("correlation"))
                    if call is not None and call["start"] > prev["end"]:
                        host += gap
                    elif gap < 30_000:  # HTA's consecutive_kernel_delay, 30, compared with gaps in µs
                        kernel += gap
                    else:
                        other += gap
                r = got[key]
                span = max(e["end"] for e in s) - s[0]["start"]
                self.assertEqual(r["ops"], len(s))
                self.assertUs(r["span_us"], span)
                self.assertUs(r["host_wait_us"], host, f"{path} {key}")
                self.assertUs(r["kernel_wait_us"], kernel)
                self.assertUs(r["other_us"], other)
                self.assertUs(r["idle_us"], host + kernel + other)

    def test_temporal_breakdown_whole_trace_and_per_step(self):
        for path in ALL:
            _, events = load(path)
            gpu = ops(events)
            merged = merge([(e["start"], e["end"]) for e in gpu + stream_syncs(events)])
            compute = merge([(e["start"], e["end"]) for e in gpu if kernel_type(e["name"]) == "computation"])
            span = merged[-1][1] - merged[0][0]
            (r,) = rows(path, "breakdown")
            self.assertUs(r["span_us"], span)
            self.assertUs(r["idle_us"], span - total(merged))
            self.assertUs(r["compute_us"], total(compute))
            self.assertUs(r["non_compute_us"], total(merged) - total(compute))

        _, events = load(NCCL)
        steps = sorted((int(e["name"].split("#")[1]), e["start"], e["end"]) for e in events
                       if e["name"].startswith("ProfilerStep#"))
        got = rows(NCCL, "breakdown", "--per-step")
        self.assertEqual([r["step"] for r in got], [s[0] for s in steps if any(
            s[1] <= e["start"] < s[2] for e in ops(events))])
        for r in got:
            _, lo, hi = next(s for s in steps if s[0] == r["step"])
            merged = merge([(e["start"], e["end"]) for e in ops(events) + stream_syncs(events) if lo <= e["start"] < hi])
            self.assertUs(r["span_us"], merged[-1][1] - merged[0][0])
            self.assertUs(r["idle_us"], merged[-1][1] - merged[0][0] - total(merged))

    def test_step_selection_keeps_work_started_in_the_steps(self):
        _, events = load(NCCL)
        step5 = next(e for e in events if e["name"] == "ProfilerStep#5")
        inside = [e for e in ops(events) if e["cat"] == "kernel" and step5["start"] <= e["start"] < step5["end"]]
        got = rows(NCCL, "kernels", "--start-step", "5", "--end-step", "5")
        self.assertEqual(sum(r["instances"] for r in got), len(inside))
        self.assertUs(sum(r["total_us"] for r in got), sum(e["end"] - e["start"] for e in inside))

    def test_launch_delays_and_short_kernels(self):
        hta_apis = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync")
        for path in (ALEXNET, SAMPLED, NCCL):
            _, events = load(path)
            launch = calls(events)
            kernels = [e for e in ops(events) if e["cat"] == "kernel"]
            # HTA's rows: every op (kernel, copy, memset) launched by one of its four runtime calls.
            rows_hta = [(e, launch[e["args"]["correlation"]]) for e in ops(events)
                        if e["args"].get("correlation") in launch and launch[e["args"]["correlation"]]["name"] in hta_apis]
            delays = sorted(max(0, e["start"] - c["end"]) for e, c in rows_hta)
            (r,) = rows(path, "launch")
            self.assertEqual(r["kernels"], len(kernels))
            self.assertEqual(r["unmatched_kernels"], sum(1 for k in kernels if k["args"].get("correlation") not in launch))
            self.assertEqual(r["launches"], len(delays))
            self.assertEqual(r["short_kernels"], sum(1 for k in kernels if k["end"] - k["start"] < 10_000))
            self.assertUs(r["delay_median_us"], statistics.median(delays))
            self.assertUs(r["delay_max_us"], delays[-1])
            self.assertEqual(r["outliers"][0]["delay_us"], r["delay_max_us"])
            self.assertEqual(r["long_delays"], sum(1 for d in delays if d > 100_000))
            self.assertEqual(r["long_launches"], sum(1 for _, c in rows_hta if c["end"] - c["start"] > 50_000))
            self.assertEqual(r["gpu_shorter_than_cpu"], sum(
                1 for e, c in rows_hta
                if c["end"] - c["start"] <= 50_000 and e["end"] - e["start"] < c["end"] - c["start"]))
            everything = rows(path, "launch", "--launch-scope", "all")[0]
            self.assertEqual(everything["launches"], sum(1 for e in ops(events) if e["args"].get("correlation") in launch))

    def test_repeated_correlation_ids_tie_each_op_to_its_nearest_launch(self):
        # 1,000 launch/kernel pairs that all carry correlation 7, each kernel 5 µs after its call:
        # matched by id alone, every kernel took the first call (average delay ~50 ms).
        events = []
        for i in range(1000):
            t = 1_000_000 + i * 100
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
                           "ts": t, "dur": 4, "args": {"correlation": 7}})
            events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t + 9, "dur": 20,
                           "args": {"device": 0, "stream": 7, "correlation": 7}})
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "repeated.json")
            with open(path, "w") as f:
                json.dump({"traceEvents": events}, f)
            proc = run(path, "launch", "--json")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            (r,) = json.loads(proc.stdout)["rows"]
            self.assertEqual(r["launches"], 1000)
            self.assertEqual(r["delay_avg_us"], 5.0)
            self.assertEqual(r["delay_max_us"], 5.0)
            self.assertIn("999 launch call(s) repeat another's correlation id", proc.stderr)
            (idle,) = rows(path, "idle")
            # Each call began after the previous kernel ended: every 80 µs gap is host wait.
            self.assertEqual(idle["host_wait_us"], 999 * 80)

    def test_overlap_of_nccl_with_computation(self):
        _, events = load(NCCL)
        kernels = ops(events)
        comm = merge([(k["start"], k["end"]) for k in kernels if kernel_type(k["name"]) == "communication"])
        comp = merge([(k["start"], k["end"]) for k in kernels if kernel_type(k["name"]) == "computation"])
        overlapped = 0
        for lo, hi in comm:
            for clo, chi in comp:
                overlapped += max(0, min(hi, chi) - max(lo, clo))
        (r,) = rows(NCCL, "overlap")
        self.assertGreater(total(comm), 0)
        self.assertUs(r["communication_us"], total(comm))
        self.assertUs(r["overlapped_us"], overlapped)
        self.assertAlmostEqual(r["overlap_share"], overlapped / total(comm), places=5)

    def test_table_and_csv_agree_with_json(self):
        table = run(ALEXNET, "kernels", "--limit", "3")
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("GPU 0: NVIDIA A100-PG509-200, 108 SMs", table.stdout)
        top = rows(ALEXNET, "kernels", "--limit", "3")
        self.assertEqual(len(top), 3)
        for r in top:
            self.assertIn(r["name"][:40], table.stdout)
        out = run(ALEXNET, "memcpy", "--format", "csv")
        parsed = list(csv.reader(io.StringIO(out.stdout)))
        self.assertEqual(parsed[0][-1], "Operation")
        self.assertEqual(len(parsed) - 1, len(rows(ALEXNET, "memcpy")))

    def test_bad_input_is_named_with_the_documented_exit_codes(self):
        missing = run("/nonexistent/trace.json", "kernels")
        self.assertEqual(missing.returncode, 2)  # bad input files exit 2 (man page, EXIT STATUS)
        self.assertIn("/nonexistent/trace.json", missing.stderr)
        bad_view = run(ALEXNET, "kernel")
        self.assertEqual(bad_view.returncode, 2)  # usage
        no_steps = run(ALEXNET, "kernels", "--start-step", "1")
        self.assertEqual(no_steps.returncode, 2)
        self.assertIn("ProfilerStep", no_steps.stderr)
        no_device = run(ALEXNET, "kernels", "--device", "3")
        self.assertEqual(no_device.returncode, 2)
        self.assertIn("--device 3", no_device.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            broken = os.path.join(tmp, "t.json.gz")
            with open(ALEXNET, "rb") as f:
                data = f.read()
            with open(broken, "wb") as f:
                f.write(data[: len(data) // 2])
            truncated = run(broken, "kernels")
            self.assertEqual(truncated.returncode, 2)
            self.assertIn(broken, truncated.stderr)
            cpu_only = os.path.join(tmp, "cpu.json")
            with open(cpu_only, "w") as f:
                json.dump({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}, f)
            empty = run(cpu_only, "kernels")
            self.assertEqual(empty.returncode, 2)
            self.assertIn("no GPU events", empty.stderr)


if __name__ == "__main__":
    unittest.main()
