"""Helpers for the bootstrap tests: run a Python program under sprof_marker_probe (sprof's
bootstrap + marker channel, no sampling) and look at the markers and the step timeline it built."""
import json
import os
import subprocess
import textwrap
import unittest

from sprof_testlib import BINARY_DIR, TempDirTestCase

PROBE = os.path.join(BINARY_DIR, "tests", "sprof_marker_probe")


class ProbeResult(object):
    def __init__(self, completed, data):
        self.completed = completed
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.data = data
        self.markers = data["markers"]
        self.exit_code = data["exit_code"]
        self.pid = data["pid"]

    def kinds(self, kind, pid=None):
        return [m for m in self.markers if m["kind"] == kind and (pid is None or m["pid"] == pid)]

    def process(self, pid):
        for p in self.data.get("processes", []):
            if p["pid"] == pid:
                return p
        raise AssertionError("no timeline for pid %d; pids: %s"
                             % (pid, [p["pid"] for p in self.data.get("processes", [])]))

    def sprof_lines(self):
        return [l for l in self.stderr.splitlines() if l.startswith("sprof:")]


class ProbeTestCase(TempDirTestCase):
    def setUp(self):
        super().setUp()
        if not os.access(PROBE, os.X_OK):
            raise unittest.SkipTest("%s is not built" % PROBE)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def probe(self, argv, env=None, probe_args=(), timeout=600, cwd=None):
        """Run argv under the probe. The program's stdout/stderr are in result.stdout/stderr."""
        full_env = dict(os.environ)
        full_env.pop("PYTHONPATH", None)
        full_env["PYTHONDONTWRITEBYTECODE"] = "1"
        if env:
            full_env.update(env)
        json_path = os.path.join(self.tmp, "probe.json")
        completed = subprocess.run([PROBE, "--dir", os.path.join(self.tmp, "probe"), "--json", json_path]
                                   + list(probe_args) + ["--"] + list(argv), capture_output=True,
                                   text=True, timeout=timeout, env=full_env, cwd=cwd or self.tmp)
        if completed.returncode != 0:
            raise AssertionError("probe failed (%d):\n%s" % (completed.returncode, completed.stderr))
        with open(json_path) as f:
            return ProbeResult(completed, json.load(f))

    @staticmethod
    def program_log(result):
        """The JSON lines the program printed on its stdout."""
        return [json.loads(l) for l in result.stdout.splitlines() if l.startswith("{")]
