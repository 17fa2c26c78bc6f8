"""scripts/check-paths: the repository reads no path outside itself, and the check finds one that does."""
import os
import subprocess
import unittest

from sprof_testlib import SOURCE_DIR, TempDirTestCase

CHECK = os.path.join(SOURCE_DIR, "scripts", "check-paths")


def run_check(root):
    return subprocess.run([CHECK, root], capture_output=True, text=True)


class CheckPathsTest(TempDirTestCase):
    def test_the_repository_is_clean(self):
        proc = run_check(SOURCE_DIR)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_each_way_out_is_found(self):
        # Spelled with placeholders, so that this file itself passes the check.
        bad = {
            "tests/unit/a_test.cpp": 'auto p = fs::path(SPROF_SOURCE_DIR) / "{up}" / "x";',
            "tests/integration/b.py": 'F = os.path.join(SOURCE_DIR, "{up}", "data")',
            "lib/src/c.cpp": 'auto f = std::string(SPROF_SOURCE_DIR) + "/{up}/fixtures/x.json";',
            "scripts/d": 'cp {up}/{shared}/smdebug-fixtures/x .',
            "cmd/e.cpp": '// layout from {reference}/sampler.md',
            "CMakeLists.txt": 'set(DATA /{home}/someone/data)',
        }
        fill = {"up": "." + ".", "shared": "sha" + "red", "reference": "refer" + "ence", "home": "ho" + "me"}
        bad = {rel: line.format(**fill) for rel, line in bad.items()}
        for rel, line in bad.items():
            path = os.path.join(self.tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write("ok = 1\n" + line + "\n")
        proc = run_check(self.tmp)
        self.assertEqual(proc.returncode, 1, proc.stdout)
        for rel in bad:
            self.assertIn(rel + ":2:", proc.stdout)
        self.assertNotIn(":1:", proc.stdout)

    def test_paths_inside_the_repository_and_system_paths_pass(self):
        path = os.path.join(self.tmp, "tests", "ok.py")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write('ROOT = os.path.join(os.path.dirname(__file__), "..", "..")\n'
                    'PY = "/usr/bin/python3"\nPYENV = "/root/.pyenv"\n'
                    'F = os.path.join(SOURCE_DIR, "third_party", "smdebug-test-resources")\n')
        proc = run_check(self.tmp)
        self.assertEqual(proc.returncode, 0, proc.stdout)


if __name__ == "__main__":
    unittest.main()
