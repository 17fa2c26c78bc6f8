"""sprof dump on real CPython processes (every 3.6-3.13 and 2.7 pyenv build here and Debian's 3.11).

The targets are children of this test, not of sprof, so sprof reads a non-descendant: that
needs root or Yama ptrace_scope 0, or a target that allows it; the target script calls
prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) so the tests also pass under ptrace_scope 1.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

from sprof_testlib import EXIT_RUNTIME, TempDirTestCase, pythons, run_sprof

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_SOURCE = os.path.join(HERE, "data", "pyframes_target.py")
TARGET27_SOURCE = os.path.join(HERE, "data", "pyframes_target27.py")
TARGET_NAME = "cible_é.py"  # a non-ASCII file name


def marks(path):
    found = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = re.search(r"# MARK:(\w+)", line)
            if m:
                found[m.group(1)] = number
    return found


class Target:
    """A running copy of the target script under one interpreter."""

    def __init__(self, python, directory, mode="full", source=TARGET_SOURCE):
        self.path = os.path.join(directory, TARGET_NAME)
        shutil.copy(source, self.path)
        self.proc = subprocess.Popen([python, self.path, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=directory)
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            self.proc.kill()
            raise AssertionError("target did not start: %r %r" % (line, self.proc.stderr.read()))

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def dump(pid, *flags):
    proc = run_sprof("dump", "--pid", pid, "--json", *flags, timeout=120)
    if proc.returncode != 0:
        raise AssertionError("sprof dump failed (%d): %s" % (proc.returncode, proc.stderr))
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def by_name(sample):
    return {t["name"]: t for t in sample["threads"]}


# The GIL and CPU states are judged over STATE_DUMPS dumps, not one. A spinning thread that no
# other Python thread contends with keeps the GIL but for the instant it hands it over and takes
# it back (every 100 ticks on 2.7; on 3.x only on a drop request, which no other runnable thread
# here makes). One dump lands in that gap with a probability p of a few per cent, more on a loaded
# machine, where the thread can be preempted inside the gap: a single-dump assertion failed in
# 2 of 2 runs under load. Requiring the holder in at least half of 20 dumps fails with
# P(Binomial(20, p) > 10), under 1e-6 for p <= 0.15. A thread blocked on a lock or in sleep()
# never runs and never holds the GIL, so for those "never" is exact, and no dump has two holders.
STATE_DUMPS = 20


def thread_states(pid, flags, key):
    """{key(thread): {"dumps", "on_cpu", "holds_gil"}} over STATE_DUMPS dumps, and the most
    GIL holders any one dump saw."""
    states, most_holders = {}, 0
    for sample in dump(pid, "--count", str(STATE_DUMPS), "--interval", "0.02", *flags):
        most_holders = max(most_holders, sum(t["holds_gil"] for t in sample["threads"]))
        for t in sample["threads"]:
            k = key(t)
            if k is None:
                continue
            s = states.setdefault(k, {"dumps": 0, "on_cpu": 0, "holds_gil": 0})
            s["dumps"] += 1
            s["on_cpu"] += bool(t["on_cpu"])
            s["holds_gil"] += bool(t["holds_gil"])
    return states, most_holders


def stopped_or_traced_threads(pid):
    """Threads of `pid` that are stopped (T, t) or still have a tracer."""
    found = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                tracer = [l.split()[1] for l in f if l.startswith("TracerPid:")][0]
        except (OSError, IndexError):
            continue  # the thread ended
        if state in ("T", "t") or tracer != "0":
            found.append((tid, state, tracer))
    return found


class DumpTest(TempDirTestCase):
    def check_full_target(self, label, python, flags):
        target = Target(python, self.tmp)
        self.addCleanup(target.close)
        mark = marks(target.path)
        version = tuple(int(x) for x in subprocess.check_output(
            [python, "-c", "import sys; print('%d %d' % sys.version_info[:2])"]).split())
        # The main thread reaches its final statement just after printing "ready": poll.
        deadline = time.time() + 20
        while True:
            sample = dump(target.proc.pid, *flags)[0]
            threads = by_name(sample)
            main = threads.get("MainThread")
            if main and main["frames"] and main["frames"][0]["line"] == mark["main"] or time.time() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(sample["python_version"].rsplit(".", 1)[0], "%d.%d" % version)
        names = set(threads)
        for expected in ("MainThread", "spinner", "sleeper-lock", "deep", "generator", "async", "init"):
            self.assertIn(expected, names, "%s %s: threads %s" % (label, flags, sorted(names)))

        def frame(f, name, line_mark):
            self.assertEqual(f["name"], name)
            self.assertEqual(f["line"], mark[line_mark], "%s: %s" % (name, f))
            self.assertEqual(os.path.basename(f["file"]), TARGET_NAME)

        # The exact line of a known statement, non-ASCII function and file names.
        main = threads["MainThread"]
        frame(main["frames"][0], "睡眠_𠀀", "main")
        self.assertEqual([f["name"] for f in main["frames"][1:]], ["main", "<module>"])
        self.assertEqual(main["frames"][1]["line"], mark["call_main"])

        # Idle on a lock; spinning on-CPU and holding the GIL (see STATE_DUMPS).
        lock = threads["sleeper-lock"]
        frame(lock["frames"][0], "wait_on_lock", "lock")
        spinner = threads["spinner"]
        self.assertIn(spinner["frames"][0]["name"], ("spin_σ", "Event.is_set", "is_set"))
        states, most_holders = thread_states(target.proc.pid, flags, lambda t: t["name"])
        for name in ("MainThread", "sleeper-lock"):
            self.assertEqual((states[name]["on_cpu"], states[name]["holds_gil"]), (0, 0), "%s: %s" % (name, states))
        self.assertGreaterEqual(states["spinner"]["on_cpu"], STATE_DUMPS // 2, states)
        self.assertGreaterEqual(states["spinner"]["holds_gil"], STATE_DUMPS // 2, states)
        self.assertEqual(most_holders, 1)

        # Recursion 800 deep, in full.
        deep = threads["deep"]["frames"]
        recursion = [f for f in deep if f["name"] == "recurse"]
        self.assertEqual(len(recursion), 801)
        frame(deep[0], "recurse", "bottom")
        for f in deep[1:801]:
            frame(f, "recurse", "recurse")
        self.assertFalse(threads["deep"]["truncated"])

        # Generators and coroutines.
        g = threads["generator"]["frames"]
        frame(g[0], "gen", "gen")
        frame(g[1], "consume", "consume")
        a = threads["async"]["frames"]
        frame(a[0], "inner", "async_inner")
        frame(a[1], "outer", "async_outer")

        # Qualified names from 3.11; no interpreter-internal frames (3.12 shims, 3.13 __init__ cleanup).
        init = threads["init"]["frames"]
        frame(init[0], "Sleeper.__init__" if version >= (3, 11) else "__init__", "init")
        frame(init[1], "make", "make")
        for t in sample["threads"]:
            for f in t["frames"]:
                self.assertNotIn(f["file"], ("<shim>", "__init__", ""), "%s: %s" % (t["name"], f))
                self.assertNotIn("trampoline", f["name"])

        # Blocking or not, the target runs on afterwards: nothing stopped, nothing still traced.
        self.assertEqual(stopped_or_traced_threads(target.proc.pid), [])

    def test_python27(self):
        found = pythons(min_version=(2, 7), max_version=(2, 7))
        if not found:
            self.skipTest("no CPython 2.7 here")
        python = list(found.values())[0]
        for flags in ((), ("--nonblocking",)):
            with self.subTest(flags=flags):
                target = Target(python, self.tmp, source=TARGET27_SOURCE)
                self.addCleanup(target.close)
                mark = marks(target.path)
                deadline = time.time() + 20
                while True:
                    sample = dump(target.proc.pid, *flags)[0]
                    leaves = {t["frames"][0]["name"]: t for t in sample["threads"] if t["frames"]}
                    main = leaves.get("sleep_main")
                    if main or time.time() > deadline:
                        break
                    time.sleep(0.1)
                self.assertTrue(sample["python_version"].startswith("2.7."), sample["python_version"])
                self.assertEqual([(f["name"], f["line"]) for f in main["frames"][:2]],
                                 [("sleep_main", mark["main"]), ("main", mark["call_main"])])
                self.assertEqual(os.path.basename(main["frames"][0]["file"]), TARGET_NAME)
                self.assertEqual(leaves["wait_on_lock"]["frames"][0]["line"], mark["lock"])
                # GIL and CPU over several dumps (see STATE_DUMPS): 2.7 hands its GIL over every
                # 100 ticks even to nobody.
                states, most_holders = thread_states(
                    target.proc.pid, flags, lambda t: t["frames"][0]["name"] if t["frames"] else None)
                for leaf in ("sleep_main", "wait_on_lock"):
                    self.assertEqual((states[leaf]["on_cpu"], states[leaf]["holds_gil"]), (0, 0), (leaf, states))
                self.assertGreaterEqual(states["spin"]["on_cpu"], STATE_DUMPS // 2, states)
                self.assertGreaterEqual(states["spin"]["holds_gil"], STATE_DUMPS // 2, states)
                self.assertLessEqual(most_holders, 1)
                deep = leaves["recurse"]["frames"]
                self.assertEqual(sum(f["name"] == "recurse" for f in deep), 801)
                self.assertEqual(deep[0]["line"], mark["bottom"])
                self.assertEqual([(f["name"], f["line"]) for f in leaves["gen"]["frames"][:2]],
                                 [("gen", mark["gen"]), ("consume", mark["consume"])])
                self.assertEqual(stopped_or_traced_threads(target.proc.pid), [])

    def test_full_target_every_version(self):
        found = pythons(min_version=(3, 6))
        self.assertTrue(found, "no CPython 3.6+ installed")
        for label, python in sorted(found.items()):
            for flags in ((), ("--nonblocking",)):
                with self.subTest(python=label, flags=flags):
                    self.check_full_target(label, python, flags)

    def test_threads_that_start_and_end(self):
        for label, python in sorted(pythons(min_version=(3, 6)).items()):
            for flags in (("--blocking",), ("--nonblocking",)):
                with self.subTest(python=label, flags=flags):
                    target = Target(python, self.tmp, "churn")
                    try:
                        samples = dump(target.proc.pid, "--count", "40", "--interval", "0.01", *flags)
                    finally:
                        target.close()
                    self.assertEqual(len(samples), 40)
                    short = {t["name"] for s in samples for t in s["threads"] if (t["name"] or "").startswith("short-")}
                    self.assertGreaterEqual(len(short), 2, "short-lived threads seen: %s" % short)
                    churner = [t for s in samples for t in s["threads"] if t["name"] == "churner"]
                    self.assertTrue(churner)

    def test_target_that_exits_while_dumped(self):
        python = sorted(pythons(min_version=(3, 6)).values())[0]
        target = Target(python, self.tmp, "exit-soon")
        try:
            proc = run_sprof("dump", "--pid", target.proc.pid, "--json", "--count", "1000", "--interval", "0.01",
                             "--nonblocking", timeout=60)
        finally:
            target.close()
        self.assertEqual(proc.returncode, EXIT_RUNTIME, proc.stderr)
        self.assertIn("has exited", proc.stderr)

    def run_as_nobody(self, argv, **kwargs):
        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or not setpriv:
            self.skipTest("needs root and setpriv to switch users")
        return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + argv

    def test_permission_denied_explains_remedies(self):
        # Unprivileged sprof against root's process: refused, with the cause and the remedies.
        os.chmod(self.tmp, 0o755)
        target = Target("/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable,
                        self.tmp)
        self.addCleanup(target.close)
        proc = subprocess.run(self.run_as_nobody([os.environ["SPROF_BIN"], "dump", "--pid", str(target.proc.pid)]),
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, EXIT_RUNTIME, proc.stderr)
        for phrase in ("runs as uid 0 and sprof as uid 65534", "same user", "CAP_SYS_PTRACE"):
            self.assertIn(phrase, proc.stderr)
        # Yama advice only where the kernel has Yama.
        if os.path.exists("/proc/sys/kernel/yama/ptrace_scope"):
            with open("/proc/sys/kernel/yama/ptrace_scope") as f:
                if int(f.read()) >= 1:
                    self.assertIn("ptrace_scope", proc.stderr)
        else:
            self.assertNotIn("ptrace_scope", proc.stderr)
            self.assertNotIn("Yama", proc.stderr)

    def test_same_user_without_root(self):
        # Both sides unprivileged and the same user: reading works without root.
        os.chmod(self.tmp, 0o755)
        python = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else sys.executable
        path = os.path.join(self.tmp, TARGET_NAME)
        shutil.copy(TARGET_SOURCE, path)
        os.chmod(path, 0o644)
        target = subprocess.Popen(self.run_as_nobody([python, path, "churn"]), stdout=subprocess.PIPE,
                                  cwd=self.tmp)
        try:
            self.assertEqual(target.stdout.readline().strip(), b"ready")
            for flags in (["--blocking"], ["--nonblocking"]):
                proc = subprocess.run(self.run_as_nobody([os.environ["SPROF_BIN"], "dump", "--json", "--pid",
                                                          str(target.pid)] + flags),
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                names = {t["name"] for t in json.loads(proc.stdout)["threads"]}
                self.assertIn("MainThread", names)
        finally:
            target.kill()
            target.wait()
            target.stdout.close()

    def test_not_python(self):
        sleeper = subprocess.Popen(["/bin/sleep", "60"])
        try:
            proc = run_sprof("dump", "--pid", sleeper.pid)
        finally:
            sleeper.kill()
            sleeper.wait()
        self.assertEqual(proc.returncode, EXIT_RUNTIME)
        self.assertIn("is not a CPython interpreter", proc.stderr)
        self.assertIn(str(sleeper.pid), proc.stderr)

    def test_no_such_process(self):
        pid = 4194303  # above the kernel's default pid_max
        while os.path.exists("/proc/%d" % pid):
            pid -= 1
        proc = run_sprof("dump", "--pid", pid)
        self.assertEqual(proc.returncode, EXIT_RUNTIME)
        self.assertIn("no process with pid %d" % pid, proc.stderr)


if __name__ == "__main__":
    unittest.main()
