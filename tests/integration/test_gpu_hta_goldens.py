"""`sprof gpu` against HolisticTraceAnalysis's own figures on the vendored kineto traces.

tests/golden/hta/*.json were written by HTA's code (tests/golden/hta/generate, run on HTA's
source; the commit is in each file), in two modes: "exact" (HTA with include_last_profiler_step
and its ns rounding off) must match sprof's defaults, "hta_defaults" (HTA as users run it) must
match sprof with --drop-last-step --round-us. Every figure agrees within 0.5 % (or 0.01 µs, for
HTA's float noise on tiny values); counts exactly.
"""

import glob
import json
import os
import subprocess
import unittest

from sprof_testlib import SOURCE_DIR, SPROF_BIN, cxx_demangled

GOLDENS = os.path.join(SOURCE_DIR, "tests", "golden", "hta")
TRACES = os.path.join(SOURCE_DIR, "third_party", "kineto-traces")
MODES = {"exact": [], "hta_defaults": ["--drop-last-step", "--round-us"]}
REL = 0.005


def sprof(trace, view, flags):
    proc = subprocess.run([SPROF_BIN, "gpu", trace, view, "--json", *flags], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"sprof gpu {view} {flags}: exit {proc.returncode}: {proc.stderr}")
    return json.loads(proc.stdout)["rows"]


class GpuViewsAgreeWithHta(unittest.TestCase):
    def setUp(self):
        self.goldens = sorted(glob.glob(os.path.join(GOLDENS, "*.json")))
        self.assertEqual(len(self.goldens), 4, "one golden per vendored trace")

    def close(self, got, want, what):
        if want is None:
            return
        self.assertLessEqual(abs(got - want), max(REL * abs(want), 0.01), f"{what}: sprof {got}, HTA {want}")

    def each(self):
        for path in self.goldens:
            with open(path) as f:
                golden = json.load(f)
            trace = os.path.join(TRACES, golden["trace"])
            for mode, flags in MODES.items():
                yield trace, flags, golden["modes"][mode], f"{golden['trace']} {mode}"

    def test_temporal_breakdown(self):
        for trace, flags, hta, name in self.each():
            (want,) = hta["temporal_breakdown"]
            (got,) = sprof(trace, "breakdown", flags)
            self.close(got["span_us"], want["kernel_time(us)"], f"{name} span")
            self.close(got["idle_us"], want["idle_time(us)"], f"{name} idle")
            self.close(got["compute_us"], want["compute_time(us)"], f"{name} compute")
            self.close(got["non_compute_us"], want["non_compute_time(us)"], f"{name} non-compute")

    def test_idle_time_breakdown_per_stream(self):
        for trace, flags, hta, name in self.each():
            want = {}
            for r in hta["idle_time_breakdown"]["breakdown"]:
                want.setdefault(r["stream"], {})[r["idle_category"]] = r["idle_time"]
            got = {r["stream"]: r for r in sprof(trace, "idle", flags)}
            self.assertEqual(set(got), set(want), name)
            for stream, categories in want.items():
                for category in ("host_wait", "kernel_wait", "other"):
                    # HTA's frame rounds to 2 decimals and leaves out a category with no gap.
                    self.close(got[stream][f"{category}_us"], categories.get(category, 0.0), f"{name} stream {stream} {category}")

    def test_comm_comp_overlap(self):
        for trace, flags, hta, name in self.each():
            (want,) = hta["comm_comp_overlap"]
            (got,) = sprof(trace, "overlap", flags)
            if want["comp_comm_overlap_pctg"] is None:  # no communication kernel: HTA divides 0 by 0
                self.assertEqual(got["communication_us"], 0, name)
                continue
            self.close(100 * got["overlap_share"], want["comp_comm_overlap_pctg"], f"{name} overlap %")

    def test_kernel_launch_stats(self):
        for trace, flags, hta, name in self.each():
            want = hta["cuda_kernel_launch_stats"]["0"]
            (got,) = sprof(trace, "launch", flags)
            self.assertEqual(got["launches"], want["row_count"], name)
            self.assertEqual(got["gpu_shorter_than_cpu"], want["short_gpu_kernels"], name)
            self.assertEqual(got["long_launches"], want["runtime_outliers"], name)
            self.assertEqual(got["long_delays"], want["launch_delay_outliers"], name)
            self.close(got["delay_avg_us"] * got["launches"], want["sums"]["launch_delay"], f"{name} total launch delay")

    def test_gpu_kernel_breakdown(self):
        for trace, flags, hta, name in self.each():
            kernels = {r["name"]: r for r in sprof(trace, "kernels", flags)}
            copies = {r["operation"]: r for r in sprof(trace, "memcpy", flags)}
            want = hta["gpu_kernel_breakdown"]["kernels"]
            self.assertEqual(len(want), len(kernels) + len(copies), name)
            # HTA keeps kineto's names; sprof shows mangled ones (cutlass's) demangled, as binutils
            # would print them.
            readable = cxx_demangled([w["name"] for w in want])
            for w in want:
                got = (copies if w["kernel_type"] == "MEMORY" else kernels)[readable[w["name"]]]
                self.close(got["total_us"], w["sum (us)"], f"{name} {w['name'][:40]} total")
                self.close(got["avg_us"], w["mean (us)"], f"{name} {w['name'][:40]} mean")
                self.close(got["min_us"], w["min (us)"], f"{name} {w['name'][:40]} min")
                self.close(got["max_us"], w["max (us)"], f"{name} {w['name'][:40]} max")
                self.close(got["stddev_us"], w["stddev"], f"{name} {w['name'][:40]} stddev")



if __name__ == "__main__":
    unittest.main()
