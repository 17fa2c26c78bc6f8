"""sprof record as a launcher: exit status pass-through, signal forwarding, exec, wrappers, targets
that never become Python or exit mid-sample, output-directory rules, the status line."""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
import unittest

from sprof_testlib import DEBIAN_PYTHON, SPROF_BIN, TempDirTestCase, run_sprof
from record_helpers import collapsed, frames, inclusive_counts, manifest, wait_for_samples, workload

PY = DEBIAN_PYTHON


def start_sprof(args, **kwargs):
    if not SPROF_BIN:
        raise unittest.SkipTest("SPROF_BIN is not set (run through ctest)")
    return subprocess.Popen([SPROF_BIN] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)


def wait_for_line(stream, text, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        line = stream.readline()
        if text in line:
            return
        if not line:
            break
    raise AssertionError("never saw %r" % text)


class ExitStatusTest(TempDirTestCase):
    def test_exit_code_passes_through(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "-o", out, "--", PY, "-c", "import sys; sys.exit(7)")
        self.assertEqual(proc.returncode, 7, proc.stderr)
        self.assertEqual(manifest(out)["exit"]["status"], 7)

    def test_death_by_signal_is_128_plus_n(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "-o", out, "--", PY, workload("signals.py"), "selfkill")
        self.assertEqual(proc.returncode, 128 + signal.SIGKILL, proc.stderr)
        m = manifest(out)
        self.assertEqual(m["exit"]["signal"], signal.SIGKILL)
        self.assertEqual(m["state"], "complete")
        self.assertGreater(m["health"]["thread_samples"], 0)

    def test_the_command_keeps_its_own_flags_without_dashes(self):
        # Without "--" the command starts at the first word that is not one of sprof's options or
        # their values; everything from there on is the command's, its -d and --epochs included
        # (sprof has a -d of its own).
        out = os.path.join(self.tmp, "p")
        script = "import json, sys; print(json.dumps(sys.argv[1:]))"
        proc = run_sprof("record", "-q", "--rate", "50", "-o", out, PY, "-c", script, "-d", "5", "--epochs", "3", check=0)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout.strip().splitlines()[-1]), ["-d", "5", "--epochs", "3"])
        self.assertEqual(manifest(out)["command"], [PY, "-c", script, "-d", "5", "--epochs", "3"])
        # A typo of sprof's own option before the command is still a usage error, not a program.
        proc = run_sprof("record", "--rat", "50", "-o", os.path.join(self.tmp, "q"), PY, "-c", "pass", check=2)
        self.assertIn("--rat", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "q")))

    def test_missing_command_is_127(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "-o", out, "--", "/nonexistent/program")
        self.assertEqual(proc.returncode, 127)
        self.assertIn("command not found", proc.stderr)
        self.assertFalse(os.path.exists(out), "no profile for a command that never ran")

    def test_target_exits_mid_sample(self):
        # 10 kHz while the target leaves with os._exit between (or during) reads, threads busy.
        for attempt in range(3):
            out = os.path.join(self.tmp, "p%d" % attempt)
            proc = run_sprof("record", "-r", "10000", "-o", out, "--", PY, workload("exits_mid.py"),
                             "0.%d" % (3 + attempt), "9")
            self.assertEqual(proc.returncode, 9, proc.stderr)
            m = manifest(out)
            self.assertEqual(m["state"], "complete")
            self.assertGreater(m["health"]["thread_samples"], 100)
            self.assertTrue(inclusive_counts(collapsed(out), ("work",))["work"] > 0)


class SignalForwardingTest(TempDirTestCase):
    def forward(self, sig, mode="handle"):
        out = os.path.join(self.tmp, "p%d" % sig)
        proc = start_sprof(["record", "-o", out, "--", PY, workload("signals.py"), mode])
        try:
            wait_for_line(proc.stdout, "READY")
            time.sleep(0.3)
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        return proc.returncode, stdout, stderr, out

    def test_sigint_sigterm_sighup_sigquit_reach_the_command(self):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            with self.subTest(signal=sig):
                code, stdout, stderr, out = self.forward(sig)
                self.assertEqual(code, 100 + sig, stderr)
                self.assertIn("got %d" % sig, stdout)
                self.assertEqual(manifest(out)["exit"]["status"], 100 + sig)

    def test_default_disposition_gives_128_plus_n(self):
        code, _, stderr, out = self.forward(signal.SIGTERM, "default")
        self.assertEqual(code, 128 + signal.SIGTERM, stderr)
        self.assertEqual(manifest(out)["exit"]["signal"], signal.SIGTERM)

    def test_sigint_keyboard_interrupt(self):
        # Python's own SIGINT handling: KeyboardInterrupt, a traceback, then (3.8+) it dies of
        # SIGINT so its parent sees why: 128+2.
        out = os.path.join(self.tmp, "kbd")
        proc = start_sprof(["record", "-o", out, "--", PY, "-u", "-c",
                            "import time\nprint('READY')\nwhile True: sum(range(1000))"])
        wait_for_line(proc.stdout, "READY")
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, stderr)
        self.assertIn("KeyboardInterrupt", stderr)
        self.assertEqual(manifest(out)["exit"]["signal"], signal.SIGINT)


class ExecAndWrappersTest(TempDirTestCase):
    def test_python_execs_another_python(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "-o", out, "--", PY, workload("exec_chain.py"), PY, workload("after_exec.py"))
        self.assertEqual(proc.returncode, 3, proc.stderr)
        counts = inclusive_counts(collapsed(out), ("before_exec", "after_exec"))
        self.assertGreater(counts["before_exec"], 20, counts)
        self.assertGreater(counts["after_exec"], 20, counts)
        self.assertEqual(len(manifest(out)["processes"]), 1)  # one pid, one log

    def test_python_execs_a_non_python_program(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "-o", out, "--", PY, workload("exec_chain.py"), "/bin/sh", "-c", "sleep 0.3; exit 4")
        self.assertEqual(proc.returncode, 4, proc.stderr)
        self.assertGreater(inclusive_counts(collapsed(out), ("before_exec",))["before_exec"], 20)

    def test_shell_wrapper_that_execs_python(self):
        out = os.path.join(self.tmp, "p")
        script = "sleep 0.2; exec %s %s" % (PY, workload("after_exec.py"))
        proc = run_sprof("record", "-o", out, "--", "/bin/sh", "-c", script)
        self.assertEqual(proc.returncode, 3, proc.stderr)
        self.assertGreater(inclusive_counts(collapsed(out), ("after_exec",))["after_exec"], 20)

    def test_shell_wrapper_that_forks_python(self):
        # Without --subprocesses the first descendant that becomes Python is followed.
        out = os.path.join(self.tmp, "p")
        script = "%s %s; echo done" % (PY, workload("after_exec.py"))
        proc = run_sprof("record", "-o", out, "--", "/bin/sh", "-c", script)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertGreater(inclusive_counts(collapsed(out), ("after_exec",))["after_exec"], 20)

    def test_command_that_never_becomes_python(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "-o", out, "--", "/bin/sh", "-c", "sleep 0.5; echo hello; exit 5")
        self.assertEqual(proc.returncode, 5, proc.stderr)
        self.assertIn("hello", proc.stdout)
        self.assertEqual(proc.stderr.count("never became a Python process"), 1, proc.stderr)
        self.assertEqual(manifest(out)["health"]["thread_samples"], 0)

    def test_old_pythons(self):
        # The stretch goal: 2.7 and 3.6 (no f-strings, no time.perf_counter in 2.7).
        for version in ("2.7.18", "3.6.15", "3.7.16"):
            python = "/root/.pyenv/versions/%s/bin/python" % version
            if not os.path.exists(python):
                continue
            with self.subTest(python=version):
                out = os.path.join(self.tmp, version)
                code = ("import time\ndef old_work():\n    end = time.time() + 1\n    x = 0\n"
                        "    while time.time() < end:\n        x += 1\nold_work()\n")
                proc = run_sprof("record", "-o", out, "--", python, "-c", code)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(manifest(out)["processes"][0]["python_version"][:3], version[:3])
                self.assertGreater(inclusive_counts(collapsed(out), ("old_work",))["old_work"], 30, proc.stderr)


class OutputDirectoryTest(TempDirTestCase):
    def test_refuses_to_overwrite_without_force(self):
        out = os.path.join(self.tmp, "p")
        run_sprof("record", "-o", out, "--", PY, "-c", "pass", check=0)
        marker = os.path.join(out, "keep-me")
        open(marker, "w").close()
        proc = run_sprof("record", "-o", out, "--", PY, "-c", "print('ran')", check=2)
        self.assertIn("--force", proc.stderr)
        self.assertNotIn("ran", proc.stdout)  # refused before anything started
        self.assertTrue(os.path.exists(marker))
        run_sprof("record", "-o", out, "--force", "--", PY, "-c", "pass", check=0)
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(manifest(out)["state"], "complete")

    def test_force_only_replaces_profiles(self):
        other = os.path.join(self.tmp, "notes")
        os.mkdir(other)
        open(os.path.join(other, "important.txt"), "w").close()
        proc = run_sprof("record", "-o", other, "--force", "--", PY, "-c", "pass", check=2)
        self.assertIn("sprof.json", proc.stderr)
        self.assertTrue(os.path.exists(os.path.join(other, "important.txt")))

    def test_default_name(self):
        proc = run_sprof("record", "--", PY, "-c", "pass", check=0, cwd=self.tmp)
        made = [d for d in os.listdir(self.tmp) if d.startswith("sprof-")]
        self.assertEqual(len(made), 1, proc.stderr)
        pid, stamp = made[0].split("-")[1:]
        self.assertEqual(int(pid), manifest(os.path.join(self.tmp, made[0]))["target_pid"])
        self.assertRegex(stamp, r"^\d{8}T\d{6}Z$")
        self.assertIn(made[0], proc.stderr)


class DurationAndKillTest(TempDirTestCase):
    def test_duration_stops_sampling_but_not_the_command(self):
        out = os.path.join(self.tmp, "p")
        start = time.time()
        proc = run_sprof("record", "-d", "0.7", "-o", out, "--", PY, workload("after_exec.py"))
        self.assertEqual(proc.returncode, 3, proc.stderr)  # the command ran to its end
        m = manifest(out)
        self.assertLess(m["duration_s"], 0.7 + 0.3)
        self.assertGreater(time.time() - start, 0.8)

    def test_log_survives_sigkill_of_sprof(self):
        out = os.path.join(self.tmp, "p")
        proc = start_sprof(["record", "-r", "1000", "-o", out, "--", PY, workload("signals.py")])
        target = None
        try:
            wait_for_line(proc.stdout, "READY")
            # Killed once the flushed log holds what the end checks (after a fixed 2.5 s before).
            wait_for_samples(out, "busy", 500)
            target = manifest(out)["target_pid"]
            proc.kill()
            proc.wait()
        finally:
            if target:
                os.kill(target, signal.SIGKILL)
        m = manifest(out)
        self.assertEqual(m["state"], "recording")
        counts = inclusive_counts(collapsed(out), ("busy",))
        self.assertGreater(counts["busy"], 500)  # what the wait above saw flushed, kept through the kill


class StatusLineTest(TempDirTestCase):
    def run_on_pty(self, *flags):
        if not SPROF_BIN:
            raise unittest.SkipTest("SPROF_BIN is not set")
        master, slave = pty.openpty()
        out = os.path.join(self.tmp, "p%d" % len(flags))
        proc = subprocess.Popen([SPROF_BIN] + list(flags) + ["record", "-o", out, "--", PY, workload("after_exec.py")],
                                stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        data = b""
        while True:
            ready, _, _ = select.select([master], [], [], 10)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        proc.wait()
        os.close(master)
        return data.decode(errors="replace")

    def test_status_line_on_a_terminal_only(self):
        text = self.run_on_pty()
        self.assertIn("\r", text)
        self.assertRegex(text, r"\d+\.\d s, \d+ samples, 1 process, \d+ threads?, \d+\.\d% invalid")
        self.assertNotIn("samples, ", self.run_on_pty("-q"))
        out = os.path.join(self.tmp, "plain")
        proc = run_sprof("record", "-o", out, "--", PY, workload("after_exec.py"))
        self.assertNotIn("\r", proc.stderr)
        self.assertIn("Top functions by self time", proc.stderr)


if __name__ == "__main__":
    unittest.main()
