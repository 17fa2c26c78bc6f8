"""scripts/build: a missing dependency is named with its Debian package, and a build directory left
half-configured by that failure is configured again by the next scripts/build."""
import os
import re
import subprocess
import unittest

from sprof_testlib import SOURCE_DIR, TempDirTestCase

BUILD = os.path.join(SOURCE_DIR, "scripts", "build")


def build(build_dir, *args, targets="sprof_fake_nvml"):
    env = dict(os.environ, SPROF_BUILD_TARGETS=targets)
    return subprocess.run([BUILD, build_dir, *args], capture_output=True, text=True, env=env, timeout=600)


class BuildScriptTest(TempDirTestCase):
    def test_missing_dependency_then_recovery(self):
        build_dir = os.path.join(self.tmp, "build")
        # As if libcli11-dev were not installed: CMake finds no CLI11.
        proc = build(build_dir, "-DCMAKE_DISABLE_FIND_PACKAGE_CLI11=TRUE")
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("missing dependency CLI11 (Debian package libcli11-dev)", proc.stderr)
        self.assertIn("scripts/install-deps", proc.stderr)
        self.assertNotIn("CMake Error", proc.stderr)  # one clear line, not CMake's trace
        self.assertTrue(os.path.exists(os.path.join(build_dir, "CMakeCache.txt")))
        self.assertFalse(os.path.exists(os.path.join(build_dir, "build.ninja")))
        self.assertFalse(os.path.exists(os.path.join(build_dir, "Makefile")))

        # The dependency is installed now: a plain scripts/build (no options) configures again
        # instead of failing on the missing build.ninja.
        cache = os.path.join(build_dir, "CMakeCache.txt")
        with open(cache) as f:
            text = f.read()
        with open(cache, "w") as f:
            f.write(re.sub(r"CMAKE_DISABLE_FIND_PACKAGE_CLI11:\w+=TRUE", "CMAKE_DISABLE_FIND_PACKAGE_CLI11:BOOL=FALSE",
                           text))
        proc = build(build_dir)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertTrue(any(os.path.exists(os.path.join(build_dir, f)) for f in ("build.ninja", "Makefile")))
        self.assertTrue(os.path.exists(os.path.join(build_dir, "tests", "libsprof_fake_nvml.so")))


if __name__ == "__main__":
    unittest.main()
