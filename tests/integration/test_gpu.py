"""record --gpu: the injection library offered to the command, and what it finds in a process.

The record tests run real commands under sprof and read what the target saw in its environment and
what the manifest says. The injection tests load the real libsprof_cupti.so into a real Python
(ctypes) and call InitializeInjection as the CUDA driver would, against this machine's driver (none
here), a stand-in libcuda.so.1 compiled at test time, the toolkit's real libcupti, and wrong ones.
No GPU is needed; on a machine with a driver the no-driver case is skipped.
"""
import ast
import json
import os
import subprocess
import sys
import unittest

from sprof_testlib import BINARY_DIR, EXIT_USAGE, TempDirTestCase, run_sprof

PY = "/usr/bin/python3"
LIBRARY = os.path.join(BINARY_DIR, "lib", "libsprof_cupti.so")
HAS_DRIVER = os.path.exists("/proc/driver/nvidia/version")
SHOW_ENV = ("import json, os, sys; json.dump({k: os.environ.get(k) for k in "
            "('CUDA_INJECTION64_PATH', 'SPROF_GPU_DIR', 'SPROF_CUPTI_PATH')}, open(sys.argv[1], 'w'))")

# Calls InitializeInjection as the driver does: twice, and from several threads at once.
CALL_INJECTION = r"""
import ctypes, sys, threading
lib = ctypes.CDLL(sys.argv[1])
results = []
threads = [threading.Thread(target=lambda: results.append(lib.InitializeInjection())) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
results.append(lib.InitializeInjection())
print(results)
"""

FAKE_DRIVER = "extern \"C\" int cuInit(unsigned int) { return 100; }\n"


def toolkit_cupti():
    for path in ("/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/lib/libcupti.so.13"):
        if os.path.exists(path):
            return os.path.realpath(path)
    return None


class GpuRecordTest(TempDirTestCase):
    def setUp(self):
        super().setUp()
        if not os.path.exists(LIBRARY):
            self.skipTest("built without CUPTI (no %s)" % LIBRARY)

    def record(self, *flags, env=None, check=0):
        out = os.path.join(self.tmp, "p%d" % len(os.listdir(self.tmp)))
        seen = out + ".env.json"
        proc = run_sprof("record", "--no-system-metrics", "-o", out, *flags, "--", PY, "-c", SHOW_ENV, seen,
                         env=env, check=check)
        if check != 0:
            return proc, None, None
        with open(seen) as f:
            target_env = json.load(f)
        with open(os.path.join(out, "sprof.json")) as f:
            gpu = json.load(f)["gpu"]
        return proc, target_env, gpu

    def test_auto_offers_the_library(self):
        _, target_env, gpu = self.record()
        self.assertEqual(os.path.realpath(target_env["CUDA_INJECTION64_PATH"]), os.path.realpath(LIBRARY))
        self.assertTrue(target_env["SPROF_GPU_DIR"].endswith("/gpu"))
        self.assertIsNone(target_env["SPROF_CUPTI_PATH"])
        self.assertEqual(gpu["mode"], "auto")
        self.assertTrue(gpu["enabled"])
        self.assertEqual(gpu["driver"], HAS_DRIVER)
        self.assertIn("torch ships", gpu["cupti"])
        self.assertEqual(gpu["processes"], [])  # python -c never initialised CUDA

    def test_cupti_choice_reaches_the_target(self):
        cupti = toolkit_cupti() or "/usr/lib/x86_64-linux-gnu/libm.so.6"
        _, target_env, gpu = self.record("--gpu", "on", "--cupti", cupti)
        self.assertEqual(target_env["SPROF_CUPTI_PATH"], cupti)
        self.assertEqual(gpu["cupti"], "--cupti " + cupti)
        self.assertEqual(gpu["mode"], "on")

    def test_another_tools_injection_is_left_alone(self):
        proc, target_env, gpu = self.record(env={"CUDA_INJECTION64_PATH": "/opt/nsys/libToolsInjection64.so"})
        self.assertEqual(target_env["CUDA_INJECTION64_PATH"], "/opt/nsys/libToolsInjection64.so")
        self.assertIsNone(target_env["SPROF_GPU_DIR"])
        self.assertIn("CUDA_INJECTION64_PATH is already set", proc.stderr)
        self.assertEqual(proc.stderr.count("CUDA_INJECTION64_PATH is already set"), 1)
        self.assertFalse(gpu["enabled"])
        self.assertIn("libToolsInjection64.so", gpu["why_off"])

    def test_off(self):
        _, target_env, gpu = self.record("--gpu", "off")
        self.assertIsNone(target_env["CUDA_INJECTION64_PATH"])
        self.assertFalse(gpu["enabled"])
        self.assertEqual(gpu["why_off"], "--gpu off")

    def test_usage_errors(self):
        proc, _, _ = self.record("--cupti", os.path.join(self.tmp, "no-such-libcupti.so"), check=EXIT_USAGE)
        self.assertIn("no-such-libcupti.so: no such file", proc.stderr)
        proc, _, _ = self.record("--gpu", "off", "--cupti", LIBRARY, check=EXIT_USAGE)
        self.assertIn("--gpu is off", proc.stderr)
        proc, _, _ = self.record("--gpu", "sometimes", check=EXIT_USAGE)
        self.assertIn("--gpu", proc.stderr)


class InjectionTest(TempDirTestCase):
    def setUp(self):
        super().setUp()
        if not os.path.exists(LIBRARY):
            self.skipTest("built without CUPTI (no %s)" % LIBRARY)

    def fake_driver(self, folder):
        """A libcuda.so.1 with cuInit, compiled now, in tmp/<folder>/."""
        cxx = os.environ.get("SPROF_CXX", "c++")
        directory = os.path.join(self.tmp, folder)
        os.makedirs(directory, exist_ok=True)
        source = os.path.join(self.tmp, "fake_cuda.cpp")
        with open(source, "w") as f:
            f.write(FAKE_DRIVER)
        subprocess.run([cxx, "-shared", "-fPIC", "-o", os.path.join(directory, "libcuda.so.1"), source], check=True)
        return directory

    def inject(self, env=None, gpu_dir=True):
        """Runs InitializeInjection in a fresh Python; returns (its return values, the state written or None)."""
        states = os.path.join(self.tmp, "states%d" % len(os.listdir(self.tmp)))
        os.makedirs(states)
        full_env = dict(os.environ)
        full_env.pop("SPROF_CUPTI_PATH", None)
        if gpu_dir:
            full_env["SPROF_GPU_DIR"] = states
        full_env.update(env or {})
        proc = subprocess.run([PY, "-c", CALL_INJECTION, LIBRARY], capture_output=True, text=True, env=full_env,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "")  # the target's output is never touched
        files = os.listdir(states)
        self.assertLessEqual(len(files), 1, files)  # one state per process, however often it is called
        state = None
        if files:
            self.assertTrue(files[0].endswith(".json") and files[0][:-5].isdigit(), files)
            with open(os.path.join(states, files[0])) as f:
                state = json.load(f)
        return ast.literal_eval(proc.stdout), state

    def test_outside_sprof_it_does_nothing(self):
        results, state = self.inject(gpu_dir=False)
        self.assertEqual(results, [1] * 5)
        self.assertIsNone(state)

    def test_no_driver(self):
        if HAS_DRIVER:
            self.skipTest("this machine has an NVIDIA driver")
        results, state = self.inject()
        self.assertEqual(results, [1] * 5)
        self.assertEqual(state["state"], "no_driver")
        self.assertIn("libcuda.so.1", state["detail"])
        self.assertGreater(state["pid"], 0)

    def test_stub_driver(self):
        stubs = self.fake_driver(os.path.join("toolkit", "lib64", "stubs"))
        _, state = self.inject({"LD_LIBRARY_PATH": stubs})
        self.assertEqual(state["state"], "stub_driver")
        self.assertIn("/stubs/", state["detail"])

    def test_forced_cupti_that_is_missing_or_not_cupti(self):
        driver = self.fake_driver("driver")
        missing = os.path.join(self.tmp, "nowhere", "libcupti.so.13")
        _, state = self.inject({"LD_LIBRARY_PATH": driver, "SPROF_CUPTI_PATH": missing})
        self.assertEqual(state["state"], "cupti_missing")
        self.assertIn(missing, state["detail"])
        _, state = self.inject({"LD_LIBRARY_PATH": driver, "SPROF_CUPTI_PATH": os.path.join(driver, "libcuda.so.1")})
        self.assertEqual(state["state"], "not_cupti")
        self.assertIn("not a CUPTI library", state["detail"])

    def test_real_cupti_against_a_driver_that_is_not_one(self):
        cupti = toolkit_cupti()
        if cupti is None:
            self.skipTest("no toolkit libcupti.so.13")
        driver = self.fake_driver("driver")
        for env, source in (({"SPROF_CUPTI_PATH": cupti}, "SPROF_CUPTI_PATH"), ({}, "system")):
            env = dict(env, LD_LIBRARY_PATH=driver + ":" + os.path.dirname(cupti))
            results, state = self.inject(env)
            self.assertEqual(results, [1] * 5)
            self.assertEqual(state["cupti_source"], source)
            self.assertEqual(os.path.realpath(state["cupti"]), cupti)
            self.assertGreaterEqual(state["cupti_version"], 130000)
            # CUPTI cannot subscribe through a driver that is only cuInit: a failure, said, not a crash.
            self.assertIn(state["state"], ("cupti_error", "driver_too_old"))
            self.assertIn("CUPTI 13.", state["detail"])


if __name__ == "__main__":
    unittest.main()
