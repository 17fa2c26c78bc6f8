"""Headless Chromium for the tests that open sprof's pages and exports in a real browser
(Debian's chromium package, which scripts/install-deps installs)."""

import json
import os
import re
import shutil
import subprocess

from sprof_testlib import TempDirTestCase


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshots_dir(fallback):
    """Where screenshots go for people to look at: <build>/test-screenshots."""
    path = os.path.join(os.environ.get("SPROF_BINARY_DIR", fallback), "test-screenshots")
    os.makedirs(path, exist_ok=True)
    return path


class BrowserTestCase(TempDirTestCase):
    def setUp(self):
        super().setUp()
        if not chromium():
            self.skipTest("no chromium (scripts/install-deps installs Debian's package)")

    def browser(self, *args):
        return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--user-data-dir=" + os.path.join(self.tmp, "chromium")] + list(args),
                              capture_output=True, text=True, timeout=120)

    def run_harness(self, html, name="harness.html"):
        """Opens `html` (a page that writes JSON into <pre id="result">) with file access, and
        returns (that JSON, the console lines)."""
        with open(os.path.join(self.tmp, name), "w") as f:
            f.write(html)
        proc = self.browser("--allow-file-access-from-files", "--virtual-time-budget=10000", "--window-size=1280,1000",
                            "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + os.path.join(self.tmp, name))
        m = re.search(r'<pre id="result">(.*?)</pre>', proc.stdout, re.S)
        self.assertIsNotNone(m, "no result in the page (stderr: %s)" % proc.stderr[-2000:])
        console = [l for l in proc.stderr.splitlines() if "CONSOLE" in l]
        return json.loads(m.group(1)), console
