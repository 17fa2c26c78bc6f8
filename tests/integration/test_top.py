"""`sprof top` in a real terminal (tmux, 80x24): against a real workload the hot function is on top
within 3 s, the header shows the step and mode the bootstrap reports, a key press switches the
sort, q quits and leaves the target running; the same attached to a running process (--pid);
bad flags are usage errors."""

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

from sprof_testlib import TempDirTestCase, fake_nvml, run_sprof

WORKLOAD = r"""
import time
try:
    import sprof  # under sprof's bootstrap; not when attached to
except ImportError:
    sprof = None
def hot_function(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def cold_function():
    time.sleep(0.001)
if sprof:
    sprof.set_mode(sprof.TRAIN)
else:
    print("ready", flush=True)  # for the tests that attach (start_attached)
for i in range(10 ** 6):
    if sprof:
        sprof.step()
    hot_function(200000)
    cold_function()
"""


class TopTest(TempDirTestCase):
    def setUp(self):
        super().setUp()
        if not shutil.which("tmux"):
            self.skipTest("no tmux (scripts/install-deps installs it)")
        self.session = "sprof-top-%d" % os.getpid()
        # A tmux server of this test's own: with the shared default server, the previous test's
        # kill-session ends that server (its last session) while this test's new-session may
        # already be talking to it, and new-session then fails (seen once in scripts/test).
        self.socket = "sprof-top-%d-%s" % (os.getpid(), self._testMethodName)
        self.script = os.path.join(self.tmp, "hot_workload.py")
        with open(self.script, "w") as f:
            f.write(WORKLOAD)
        self.addCleanup(self.kill_workloads)
        self.addCleanup(lambda: subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True))

    def kill_workloads(self):
        subprocess.run(["pkill", "-f", self.script], capture_output=True)

    def tmux(self, *args):
        proc = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True)
        if proc.returncode != 0:
            self.fail("tmux %s exited %d: %s" % (" ".join(args[:1]), proc.returncode, proc.stderr.strip()))
        return proc.stdout

    def start(self, command):
        # The pane stays after sprof exits (remain-on-exit), so its last screen can be read.
        self.tmux("new-session", "-d", "-s", self.session, "-x", "80", "-y", "24", command)
        self.tmux("set-option", "-t", self.session, "remain-on-exit", "on")

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.session)

    def wait_for(self, predicate, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.2)
        return self.screen()

    def first_row(self, text):
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if "Function (filename:line)" in line and i + 1 < len(lines):
                return lines[i + 1]
        return ""

    def start_attached(self):
        """The workload as a process of its own, once its interpreter runs the script (after a
        fixed 0.5 s before: a loaded machine can take longer to start Python, and top then finds
        no interpreter to attach to)."""
        proc = subprocess.Popen([sys.executable, self.script], stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        self.assertEqual(proc.stdout.readline().strip(), "ready")
        return proc

    def workload_pids(self):
        out = subprocess.run(["pgrep", "-f", self.script], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def check_live_view(self, expect_steps):
        t0 = time.time()
        text = self.wait_for(lambda s: "hot_function" in self.first_row(s), 3.0)
        self.assertIn("hot_function", self.first_row(text), text)
        self.assertLess(time.time() - t0, 3.5)
        for line in text.splitlines():
            self.assertLessEqual(len(line), 80)
        if expect_steps:
            self.assertRegex(text, r"step \d+ \(train\), [\d.]+ steps/s")
        self.tmux("send-keys", "-t", self.session, "t")
        text = self.wait_for(lambda s: "t total*" in s, 3.0)
        self.assertIn("t total*", text)
        self.assertIn("<module>", self.first_row(text))  # the outermost frame has all the total time
        self.assertNotIn("sprof-bootstrap", text)  # sprof's own frames are not the program's
        self.tmux("send-keys", "-t", self.session, "q")
        self.wait_for(lambda s: "Pane is dead" in s or "sprof top" not in s, 5.0)
        time.sleep(0.5)
        self.assertTrue(self.workload_pids(), "q must leave the job running")

    def test_a_launched_command(self):
        self.start("%s top -- %s %s" % (os.environ["SPROF_BIN"], sys.executable, self.script))
        try:
            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:  # no NVML on this machine
            self.assertIn("GPU: none | keys:", self.wait_for(lambda s: "GPU: none" in s, 3.0))
        self.check_live_view(expect_steps=True)

    def test_gpu_utilization_from_nvml(self):
        # The fake NVML as libnvidia-ml.so.1: two GPUs at the utilization a file holds.
        env, utilization = fake_nvml(self.tmp, 77)
        self.start("env %s %s top -- %s %s" % (" ".join("%s=%s" % kv for kv in sorted(env.items())),
                                                os.environ["SPROF_BIN"], sys.executable, self.script))
        text = self.wait_for(lambda s: "GPU 77% 77%" in s, 3.0)
        self.assertIn("GPU 77% 77% | keys:", text)
        with open(utilization, "w") as f:
            f.write("12")
        text = self.wait_for(lambda s: "GPU 12% 12%" in s, 3.0)
        self.assertIn("GPU 12% 12% | keys:", text)
        self.tmux("send-keys", "-t", self.session, "q")

    def test_an_attached_process(self):
        proc = self.start_attached()
        self.start("%s top --pid %d" % (os.environ["SPROF_BIN"], proc.pid))
        self.check_live_view(expect_steps=False)
        self.assertIsNone(proc.poll())

    # Issue 29, defect 13: top -- CMD follows record's rules for signals and the exit status.

    def command_pids(self):
        # The Python command itself, not the shell around it (whose command line holds the path too).
        pattern = "^%s %s$" % (re.escape(sys.executable), re.escape(self.script))
        out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def status_file(self):
        return os.path.join(self.tmp, "status")

    def start_and_wait(self, command, width=80, height=24):
        self.tmux("new-session", "-d", "-s", self.session, "-x", str(width), "-y", str(height),
                  "%s; echo exit=$? > %s" % (command, self.status_file()))
        self.tmux("set-option", "-t", self.session, "remain-on-exit", "on")
        return self.wait_for(lambda s: "hot_function" in s, 5.0)

    def exit_status(self, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if os.path.exists(self.status_file()):
                with open(self.status_file()) as f:
                    text = f.read().strip()
                if text:
                    return int(text.split("=")[1])
            time.sleep(0.1)
        return None

    def test_ctrl_c_ends_the_command_and_gives_its_status(self):
        self.start_and_wait("%s top -- %s %s" % (os.environ["SPROF_BIN"], sys.executable, self.script))
        self.tmux("send-keys", "-t", self.session, "C-c")
        # Python's KeyboardInterrupt ends it by SIGINT (128 + 2), the status record gives too.
        self.assertEqual(self.exit_status(10), 130)
        self.assertEqual(self.command_pids(), [])

    def test_a_command_that_ignores_sigint_is_ended_after_the_grace(self):
        ignoring = os.path.join(self.tmp, "hot_ignoring.py")
        with open(ignoring, "w") as f:
            f.write("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + WORKLOAD)
        self.script = ignoring
        self.start_and_wait("%s top -- %s %s" % (os.environ["SPROF_BIN"], sys.executable, ignoring))
        self.tmux("send-keys", "-t", self.session, "C-c")
        self.assertEqual(self.exit_status(15), 128 + 15)  # SIGINT ignored, SIGTERM after 5 s ended it
        self.assertEqual(self.command_pids(), [])

    def test_a_closed_pipe_ends_top_and_the_command(self):
        started = time.time()
        proc = subprocess.run(["bash", "-c", "set -o pipefail; %s top -- %s %s | head -2; echo status=${PIPESTATUS[0]}"
                               % (os.environ["SPROF_BIN"], sys.executable, self.script)],
                              capture_output=True, text=True, timeout=60)
        self.assertLess(time.time() - started, 20)
        status = int(proc.stdout.rsplit("status=", 1)[1])
        self.assertNotEqual(status, 128 + 13, "killed by SIGPIPE")
        time.sleep(0.3)
        self.assertEqual(self.command_pids(), [])

    def test_attached_header_and_a_small_terminal(self):
        proc = self.start_attached()
        text = self.start_and_wait("%s top --pid %d" % (os.environ["SPROF_BIN"], proc.pid), width=60, height=8)
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("sprof top: pid %d (Python 3." % proc.pid), text)
        self.assertNotIn("CPU ?", text)
        self.assertRegex(text, r"CPU \d+%")
        time.sleep(2.5)  # redrawn on the last row: the title stays on the first
        self.assertTrue(self.screen().splitlines()[0].startswith("sprof top: pid"), self.screen())
        self.tmux("send-keys", "-t", self.session, "q")

    def test_bad_flags(self):
        out = run_sprof("top", check=2)
        self.assertIn("give a command to run (sprof top python3 train.py) or --pid PID", out.stderr)
        out = run_sprof("top", "--pid", "1", "--", "true", check=2)
        self.assertIn("not both", out.stderr)
        out = run_sprof("top", "--pid", "999999999", check=2)
        self.assertIn("no such process", out.stderr)


if __name__ == "__main__":
    unittest.main()
