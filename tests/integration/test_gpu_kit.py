"""The GPU kit: scripts/gpu-bundle makes a relocatable sprof that runs with nothing of the build tree
or of the Debian packages it was built with, and scripts/gpu-check, on a machine without a GPU,
does what it can, names what needs one and exits 2 (its GPU parts run on GPU machines only)."""
import json
import os
import re
import shutil
import subprocess
import unittest

from sprof_testlib import BINARY_DIR, DEBIAN_PYTHON, SOURCE_DIR, TempDirTestCase

BUNDLE_SCRIPT = os.path.join(SOURCE_DIR, "scripts", "gpu-bundle")
CHECK_SCRIPT = os.path.join(SOURCE_DIR, "scripts", "gpu-check")
# The C and C++ runtimes, glibc's parts all of them.
RUNTIME = re.compile(r"^(linux-vdso|libc|libm|libmvec|libstdc\+\+|libgcc_s|libpthread|libdl|librt|libresolv|libutil|libanl|"
                     r"libnss_[a-z]*|ld-linux[-a-z0-9_]*)\.so")

# A CPU training loop: the torch step detection gives 30 TRAIN steps.
CPU_LOOP = """\
import torch
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(128, 64), torch.randint(0, 10, (128,))
for _ in range(30):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def has_torch():
    return subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0


class GpuBundle(TempDirTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.shared = os.path.join(BINARY_DIR, "tests", "gpu-kit")
        shutil.rmtree(cls.shared, ignore_errors=True)
        os.makedirs(cls.shared)
        cls.bundle = os.path.join(cls.shared, "bundle")
        cls.proc = subprocess.run([BUNDLE_SCRIPT, "--build", BINARY_DIR, cls.bundle], capture_output=True, text=True,
                                  timeout=600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.shared, ignore_errors=True)
        super().tearDownClass()

    def moved_bundle(self):
        """The bundle somewhere else: nothing in it may depend on where it was made."""
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        moved = os.path.join(self.tmp, "elsewhere", "sprof")
        shutil.copytree(self.bundle, moved, symlinks=True)
        return moved

    def test_bundle_holds_sprof_and_what_it_loads(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        bundle = self.moved_bundle()
        lib = os.path.join(bundle, "lib")
        names = os.listdir(lib)
        self.assertIn("libsprof_cupti.so", names)
        self.assertTrue(any(n.startswith("libsprof.so") for n in names), names)
        # Debian's libraries that a GPU machine's image lacks travel with it.
        for needed in ("libfmt.so", "libspdlog.so", "libcurl.so"):
            self.assertTrue(any(n.startswith(needed) for n in names), (needed, names))
        files = [os.path.join(bundle, "bin", "sprof")] + [os.path.join(lib, n) for n in names
                                                          if not os.path.islink(os.path.join(lib, n))]
        for path in files:
            out = subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                m = re.match(r"\s*(\S+) => (\S+)", line)
                if not m:
                    continue
                name, where = m.groups()
                self.assertNotEqual(where, "not", (path, line))
                if not RUNTIME.match(name):
                    self.assertTrue(where.startswith(bundle + "/"), (path, line))
            dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
            self.assertRegex(dynamic, r"R(UN)?PATH.*\[\$ORIGIN(/\.\./lib)?\]", path)
            self.assertNotIn(BINARY_DIR, dynamic, path)
            symbols = subprocess.run(["readelf", "-S", path], capture_output=True, text=True, check=True).stdout
            self.assertNotIn(".debug_info", symbols, path)  # stripped
        size = sum(os.path.getsize(p) for p in files)
        self.assertLess(size, 48 << 20)
        self.assertRegex(self.proc.stdout, r"\d+\.\d MiB; needs glibc >= 2\.\d+, libstdc\+\+ with GLIBCXX_3\.4\.\d+")

    @unittest.skipUnless(has_torch(), "Debian's python3-torch is not installed")
    def test_bundle_records_and_analyzes_with_an_empty_environment(self):
        bundle = self.moved_bundle()
        script = os.path.join(self.tmp, "loop.py")
        with open(script, "w") as f:
            f.write(CPU_LOOP)
        profile = os.path.join(self.tmp, "profile")
        env = ["env", "-i", "PATH=/usr/bin:/bin", "HOME=" + self.tmp]
        sprof = os.path.join(bundle, "bin", "sprof")
        rec = subprocess.run(env + [sprof, "record", "-o", profile, "--", DEBIAN_PYTHON, script], capture_output=True,
                             text=True, timeout=300, cwd=self.tmp)
        self.assertEqual(rec.returncode, 0, rec.stdout + rec.stderr)
        out = subprocess.run(env + [sprof, "analyze", profile, "--json"], capture_output=True, text=True, timeout=120,
                             cwd=self.tmp)
        self.assertEqual(out.returncode, 0, out.stderr)
        analyze = json.loads(out.stdout)
        self.assertEqual(sum(m["count"] for m in analyze["steps"]["modes"]), 30, analyze["steps"])
        # --gpu auto found the injection library beside libsprof in the bundle.
        with open(os.path.join(profile, "sprof.json")) as f:
            gpu = json.load(f)["gpu"]
        self.assertTrue(gpu["library"].startswith(os.path.join(bundle, "lib")), gpu)
        # S3 opens libcurl at its first request, from the bundle: with no server there, the error
        # is the connection's, not a library that cannot be loaded.
        s3 = subprocess.run(env + ["LD_DEBUG=libs", sprof, "--endpoint-url", "http://127.0.0.1:9", "--retries", "0",
                                   "--cache-dir", os.path.join(self.tmp, "cache"), "nodes", "s3://bucket/job"],
                            capture_output=True, text=True, timeout=120, cwd=self.tmp)
        self.assertNotEqual(s3.returncode, 0)
        self.assertNotIn("cannot load libcurl", s3.stderr)
        loaded = [os.path.normpath(m) for m in re.findall(r"calling init: (\S*libcurl\.so\.4)", s3.stderr)]
        self.assertEqual(loaded, [os.path.join(bundle, "lib", "libcurl.so.4")], s3.stderr[-3000:])

    def test_gpu_check_without_a_gpu_says_what_needs_one(self):
        bundle = self.moved_bundle()
        out_dir = os.path.join(self.tmp, "check")
        proc = subprocess.run([CHECK_SCRIPT, "--sprof", bundle, "--python", DEBIAN_PYTHON, "--time-limit", "200",
                               out_dir], capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        with open(os.path.join(out_dir, "summary.json")) as f:
            summary = json.load(f)
        by = {(r["part"], r["check"]): r for r in summary["results"]}
        self.assertEqual(by[("environment", "sprof runs")]["status"], "pass")
        self.assertEqual(by[("environment", "libsprof_cupti.so beside libsprof")]["status"], "pass")
        # The CPU-only program ran under record --gpu on: its exit status came through.
        self.assertEqual(by[("no CUDA", "exit status kept")]["status"], "pass", by[("no CUDA", "exit status kept")])
        self.assertEqual(by[("no CUDA", "no CUDA process reported")]["status"], "pass")
        needs = sorted(r["part"] for r in summary["results"] if r["status"] == "needs_gpu")
        self.assertEqual(needs, ["attached", "diff/tables", "failure paths", "overhead", "recording", "starved",
                                 "torch.profiler"])
        self.assertFalse([r for r in summary["results"] if r["status"] == "fail"], summary["results"])
        with open(os.path.join(out_dir, "summary.txt")) as f:
            text = f.read()
        self.assertIn("needs_gpu", text)
        self.assertTrue(os.path.exists(os.path.join(out_dir, "artifacts.tar")))

    def test_gpu_check_without_sprof_is_a_usage_error(self):
        proc = subprocess.run([CHECK_SCRIPT, "--sprof", os.path.join(self.tmp, "nothing"), os.path.join(self.tmp, "o")],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertIn("nothing/bin/sprof", proc.stderr)


if __name__ == "__main__":
    unittest.main()
