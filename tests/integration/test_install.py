"""`cmake --install` puts sprof where it is found before glibc's sprof (Debian's libc-devtools has a
/usr/bin/sprof and its man page): the binary runs from its prefix (RUNPATH $ORIGIN/../lib), is the
one a shell finds with the prefix's bin first on PATH, and `man sprof` opens this manual. The
default prefix is /usr/local, whose bin and man directories come before /usr's."""
import os
import re
import shutil
import subprocess
import unittest

from sprof_testlib import BINARY_DIR, TempDirTestCase, run_sprof


class Install(TempDirTestCase):
    def test_install_comes_first(self):
        prefix = os.path.join(self.tmp, "prefix")
        proc = subprocess.run(["cmake", "--install", BINARY_DIR, "--prefix", prefix], capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        env = {"PATH": os.path.join(prefix, "bin") + ":/usr/bin:/bin", "HOME": self.tmp}
        found = subprocess.run(["sh", "-c", "command -v sprof"], env=env, capture_output=True, text=True)
        self.assertEqual(found.stdout.strip(), os.path.join(prefix, "bin", "sprof"))
        version = subprocess.run(["sprof", "--version"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertEqual(version.stdout, run_sprof("--version", check=0).stdout)
        # A command glibc's sprof would answer with "unrecognized option".
        rules = subprocess.run(["sprof", "rules", "--list"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(rules.returncode, 0, rules.stderr)
        self.assertIn("ProfilerReport", rules.stdout)
        if shutil.which("man") is None:
            self.skipTest("no man-db: `man sprof` not checked")
        page = subprocess.run(["man", "-w", "sprof"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(page.stdout.strip(), os.path.join(prefix, "share", "man", "man1", "sprof.1"), page.stderr)

    def test_default_prefix_is_ahead_of_usr(self):
        with open(os.path.join(BINARY_DIR, "CMakeCache.txt")) as f:
            prefix = re.search(r"^CMAKE_INSTALL_PREFIX:PATH=(.*)$", f.read(), re.M).group(1)
        self.assertEqual(prefix, "/usr/local")
        if shutil.which("manpath") is None:
            self.skipTest("no man-db")
        # Debian's PATH lists /usr/local/bin first; man-db derives its search order from PATH.
        proc = subprocess.run(["manpath"], env={"PATH": "/usr/local/bin:/usr/bin:/bin"}, capture_output=True,
                              text=True)
        order = proc.stdout.strip().split(":")
        self.assertLess(order.index("/usr/local/share/man"), order.index("/usr/share/man"))


if __name__ == "__main__":
    unittest.main()
