"""sprof's injected bootstrap and explicit `sprof` API on real interpreters, through the real
marker channel (sprof_marker_probe: prepare() + fork/exec + MarkerChannel + parser + timeline)."""
import json
import os
import signal
import subprocess
import sys
import unittest

from bootstrap_testlib import ProbeTestCase
from sprof_testlib import DEBIAN_PYTHON, pythons, pyenv_root

N_TRAIN = 5

EXPLICIT_API = """
import json, sys, time
import sprof
mono = time.monotonic_ns
def log(**kw):
    print(json.dumps(kw)); sys.stdout.flush()
def timed(name, fn, *args, **kwargs):
    t0 = mono(); fn(*args, **kwargs); t1 = mono()
    log(event=name, t=[t0, t1])
log(event="enabled", value=sprof.enabled())
timed("set_mode", sprof.set_mode, sprof.TRAIN)
for i in range(%(n)d):
    t0 = mono()
    with sprof.step_context():
        t1 = mono()
        time.sleep(0.002)
        timed("fwd", sprof.forward_pass_end)
        time.sleep(0.001)
        t2 = mono()
    t3 = mono()
    log(event="step", i=i, begin=[t0, t1], end=[t2, t3])
timed("eval_mode", sprof.set_mode, "eval")
timed("eval_step", sprof.step)
timed("eval_step", sprof.step)
timed("step_end", sprof.step_end)
c = sprof.Counter(sprof.Domain("metrics"), "loss", 10)
c += 5
c.decrement(3)
sprof.counter("lr", 0.125)
sprof.Marker(sprof.Domain("app"), "checkpoint saved").mark("global")
sprof.mark("-")
timed("pause", sprof.pause)
timed("resume", sprof.resume)
sprof.set_state("stop"); sprof.set_state("run")
sprof.step(mode="nonsense")
sprof.step(mode="nonsense")
sprof.step(step=-1)
log(event="done", torch_imported="torch" in sys.modules)
""" % {"n": N_TRAIN}


class ExplicitApiTest(ProbeTestCase):
    def check_explicit_api(self, python):
        script = self.write("loop.py", EXPLICIT_API)
        r = self.probe([python, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        log = self.program_log(r)
        self.assertEqual(log[0], {"event": "enabled", "value": True})
        self.assertFalse(log[-1]["torch_imported"], "the bootstrap imported torch")
        self.assertEqual(r.data["parser"]["skipped"], 0, r.data["parser"])
        pid = r.pid
        p = r.process(pid)
        self.assertEqual(p["start_reason"], "start")
        self.assertEqual(p["python"], ".".join(map(str, python_version(python))))

        # Every marker time lies between the script's own clock readings around the call:
        # markers and script share CLOCK_MONOTONIC.
        steps = [s for s in p["steps"] if s["mode"] == "train"]
        logged = [e for e in log if e["event"] == "step"]
        fwd = [e for e in log if e["event"] == "fwd"]
        self.assertEqual(len(steps), N_TRAIN)
        for i, (s, e, f) in enumerate(zip(steps, logged, fwd)):
            self.assertEqual((s["step"], s["global_step"]), (i, i))
            self.assertTrue(e["begin"][0] <= s["begin"] <= e["begin"][1], (s, e))
            self.assertTrue(e["end"][0] <= s["end"] <= e["end"][1], (s, e))
            self.assertTrue(f["t"][0] <= s["forward_pass_end"] <= f["t"][1], (s, f))
            self.assertTrue(s["ended_by_marker"])

        evals = [s for s in p["steps"] if s["mode"] == "eval"]
        self.assertEqual([(s["step"], s["global_step"]) for s in evals], [(0, N_TRAIN), (1, N_TRAIN + 1)])
        eval_calls = [e for e in log if e["event"] == "eval_step"]
        step_end = [e for e in log if e["event"] == "step_end"][0]
        self.assertTrue(eval_calls[1]["t"][0] <= evals[0]["end"] == evals[1]["begin"] <= eval_calls[1]["t"][1])
        self.assertTrue(step_end["t"][0] <= evals[1]["end"] <= step_end["t"][1])
        self.assertEqual([m["mode"] for m in p["mode_changes"]], ["train", "eval"])

        self.assertEqual([(c["domain"], c["name"], c["value"]) for c in p["counters"]],
                         [("metrics", "loss", 10), ("metrics", "loss", 15), ("metrics", "loss", 12),
                          ("sprof", "lr", 0.125)])
        self.assertEqual([(i["domain"], i["name"], i["scope"]) for i in p["instants"]],
                         [("app", "checkpoint saved", "global"), ("sprof", "-", "process")])
        pause = [e for e in log if e["event"] == "pause"][0]
        resume = [e for e in log if e["event"] == "resume"][0]
        self.assertEqual(len(p["paused"]), 2)
        self.assertTrue(pause["t"][0] <= p["paused"][0][0] <= pause["t"][1])
        self.assertTrue(resume["t"][0] <= p["paused"][0][1] <= resume["t"][1])

        # Misuse is reported once per kind on stderr and to the recorder, never raised.
        self.assertEqual(sorted(e["key"] for e in p["errors"]), ["api:mode", "api:step"])
        self.assertEqual(len(r.sprof_lines()), 2, r.stderr)

        # The intervals tile the process: prestepzero, steps and gaps, posthookclose.
        kinds = [i["kind"] for i in p["intervals"]]
        self.assertEqual(kinds[0], "pre_step_zero")
        self.assertEqual(kinds[-1], "post_hook_close")
        self.assertEqual(kinds.count("step"), N_TRAIN + 2)
        self.assertEqual(kinds.count("between_modes"), 1)
        for a, b in zip(p["intervals"], p["intervals"][1:]):
            self.assertEqual(a["end"]["t"], b["start"]["t"])
        first, last = p["intervals"][0], p["intervals"][-1]
        self.assertEqual((first["start"]["mode"], first["start"]["step"], first["start"]["phase"]),
                         ("prestepzero", "*", "start"))
        self.assertEqual((first["end"]["mode"], first["end"]["step"], first["end"]["phase"]),
                         ("train", 0, "stepstart"))
        self.assertEqual((last["end"]["mode"], last["end"]["step"], last["end"]["phase"]),
                         ("posthookclose", "*", "end"))
        self.assertEqual(last["end"]["t"], r.data["exit_ns"])
        self.assertEqual([m["reason"] for m in r.kinds("close", pid)], ["exit"])
        self.assertIsNotNone(p["close"])

    def test_every_supported_python(self):
        found = pythons(min_version=(3, 8), max_version=(3, 13))
        self.assertIn("debian-3.11", found)
        for minor in range(8, 14):
            self.assertTrue(any(label.startswith("pyenv-3.%d." % minor) for label in found),
                            "no pyenv Python 3.%d installed" % minor)
        for label, python in sorted(found.items()):
            with self.subTest(python=label):
                self.check_explicit_api(python)

    def test_old_pythons_run_unchanged(self):
        root = pyenv_root()
        if not root:
            self.skipTest("no pyenv")
        script = self.write("old.py", """
            import sprof
            sprof.set_mode(sprof.TRAIN)
            with sprof.step_context():
                sprof.forward_pass_end()
            sprof.step()
            print("enabled=%s" % sprof.enabled())
            """)
        ran = 0
        for version in ("2.7.18", "3.6.15", "3.7.16"):
            python = os.path.join(root, "versions", version, "bin", "python")
            if not os.path.exists(python):
                continue
            with self.subTest(python=version):
                r = self.probe([python, script])
                self.assertEqual(r.exit_code, 0, r.stderr)
                self.assertEqual(r.stdout.strip(), "enabled=False")
                self.assertEqual(r.stderr, "")
                self.assertEqual(r.markers, [])
                ran += 1
        if ran == 0:
            self.skipTest("no Python 2.7/3.6/3.7 under pyenv")


def python_version(python):
    out = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                         capture_output=True, text=True, check=True).stdout
    return tuple(int(x) for x in out.split("."))


class SitecustomizeChainTest(ProbeTestCase):
    """The user's own sitecustomize still runs, once, as the module `sitecustomize`."""

    def all_pythons(self):
        found = dict(pythons(min_version=(2, 7), max_version=(3, 13)))
        root = pyenv_root()
        for version in ("2.7.18", "3.6.15", "3.7.16"):
            exe = os.path.join(root or "/nonexistent", "versions", version, "bin", "python")
            if os.path.exists(exe):
                found["pyenv-" + version] = exe
        return found

    def test_user_sitecustomize_runs_once(self):
        site_dir = os.path.join(self.tmp, "usersite")
        self.write("usersite/sitecustomize.py", """
            import os, sys
            with open(os.environ["SITE_LOG"], "a") as f:
                f.write("ran %s %s\\n" % (__name__, "sprof" in sys.modules))
            sys.sprof_test_user_site = True
            """)
        script = self.write("check.py", """
            import sys, sitecustomize
            print(sitecustomize.__file__)
            print(getattr(sys, "sprof_test_user_site", False))
            """)
        for label, python in sorted(self.all_pythons().items()):
            with self.subTest(python=label):
                log = os.path.join(self.tmp, "site-%s.log" % label)
                r = self.probe([python, script], env={"PYTHONPATH": site_dir, "SITE_LOG": log})
                self.assertEqual(r.exit_code, 0, r.stderr)
                out = r.stdout.split()
                self.assertEqual(os.path.realpath(out[0].replace(".pyc", ".py")),
                                 os.path.realpath(os.path.join(site_dir, "sitecustomize.py")))
                self.assertEqual(out[1], "True")
                with open(log) as f:
                    # Once, before sprof's bootstrap loaded anything.
                    self.assertEqual(f.read(), "ran sitecustomize False\n")
                self.assertEqual(r.stderr, "")
                self.assertEqual(bool(r.kinds("hello")), python_version(python) >= (3, 8))

    def test_failing_user_sitecustomize_reported_as_without_sprof(self):
        site_dir = os.path.join(self.tmp, "badsite")
        self.write("badsite/sitecustomize.py", "raise RuntimeError('user site is broken')\n")
        script = self.write("ok.py", "print('program ran')\n")
        for label in ("debian-3.11",):
            python = DEBIAN_PYTHON
            with self.subTest(python=label):
                r = self.probe([python, script], env={"PYTHONPATH": site_dir})
                plain = subprocess.run([python, script], capture_output=True, text=True,
                                       env=dict(os.environ, PYTHONPATH=site_dir))
                self.assertEqual(r.exit_code, 0)
                self.assertEqual(r.stdout, plain.stdout)
                self.assertEqual(r.stderr, plain.stderr)
                self.assertIn("Error in sitecustomize", r.stderr)
                self.assertTrue(r.kinds("hello"), "the bootstrap did not run after the user's error")

    def test_debian_sitecustomize_still_runs(self):
        r = self.probe([DEBIAN_PYTHON, "-c", "import sitecustomize; print(sitecustomize.__file__)"])
        plain = subprocess.run([DEBIAN_PYTHON, "-c", "import sitecustomize; print(sitecustomize.__file__)"],
                               capture_output=True, text=True)
        self.assertEqual(r.stdout, plain.stdout)
        self.assertTrue(r.kinds("hello"))


class NoRecorderTest(ProbeTestCase):
    """Without the recorder's variables the `sprof` module is a no-op and nothing is opened."""

    def test_no_env_no_markers(self):
        self.probe([DEBIAN_PYTHON, "-c", "pass"])  # writes the Python files into <tmp>/probe/bootstrap
        bootstrap = os.path.join(self.tmp, "probe", "bootstrap")
        script = self.write("noop.py", """
            import os, sys
            fds = sorted(os.listdir("/proc/self/fd"))
            import sprof
            sprof.set_mode(sprof.TRAIN)
            for i in range(1000):
                sprof.step()
                sprof.forward_pass_end()
            with sprof.step_context(3, mode="eval"):
                pass
            sprof.Counter(None, "x", 1).increment()
            sprof.mark("m")
            sprof.pause(); sprof.resume(); sprof.close()
            print(sprof.enabled(), sprof.get_mode())
            print(sorted(m for m in sys.modules if m.startswith("sprof")))
            print(any(type(f).__name__ == "TorchImportHook" for f in sys.meta_path))
            print(fds == sorted(os.listdir("/proc/self/fd")))
            """)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPROF_")}
        for label, python in sorted(pythons(min_version=(3, 8)).items()):
            with self.subTest(python=label):
                baseline = subprocess.run([python, "-c", "import os; print(len(os.listdir('/proc/self/fd')))"],
                                          capture_output=True, text=True, env=env).stdout
                env_with = dict(env, PYTHONPATH=bootstrap)
                r = subprocess.run([python, script], capture_output=True, text=True, env=env_with)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stderr, "")
                self.assertEqual(r.stdout.splitlines(),
                                 ["False ModeKeys.GLOBAL", "['sprof']", "False", "True"])
                fd_count = subprocess.run([python, "-c", "import os; print(len(os.listdir('/proc/self/fd')))"],
                                          capture_output=True, text=True, env=env_with).stdout
                self.assertEqual(fd_count, baseline)


class BrokenTorchTest(ProbeTestCase):
    """A torch that fails on import or lacks what sprof patches never breaks the program."""

    def test_torch_raising_on_import(self):
        fakes = os.path.join(self.tmp, "fakes")
        self.write("fakes/torch/__init__.py", "raise ImportError('fake torch is broken')\n")
        script = self.write("prog.py", """
            try:
                import torch
            except ImportError as e:
                print("import failed: %s" % e)
            print("done")
            """)
        r = self.probe([DEBIAN_PYTHON, script], env={"PYTHONPATH": fakes})
        plain = subprocess.run([DEBIAN_PYTHON, script], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=fakes))
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout, plain.stdout)
        self.assertEqual(r.stdout, "import failed: fake torch is broken\ndone\n")
        self.assertEqual(r.sprof_lines(), [])
        self.assertEqual(r.kinds("fw"), [])

    def test_torch_without_expected_attributes(self):
        fakes = os.path.join(self.tmp, "fakes")
        self.write("fakes/torch/__init__.py", "__version__ = '0.0-hollow'\n")
        script = self.write("prog.py", """
            import torch, sprof
            sprof.step(mode="train")
            sprof.step_end()
            print("torch", torch.__version__)
            """)
        r = self.probe([DEBIAN_PYTHON, script], env={"PYTHONPATH": fakes})
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.stdout, "torch 0.0-hollow\n")
        lines = r.sprof_lines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn("PyTorch instrumentation incomplete", lines[0])
        self.assertEqual([e["key"] for e in r.kinds("err")], ["torch"])
        self.assertEqual(len(r.process(r.pid)["steps"]), 1)


class ProcessesTest(ProbeTestCase):
    def test_fork_and_subprocess_report_their_own_pid(self):
        script = self.write("procs.py", """
            import json, os, subprocess, sys
            import sprof
            sprof.step(mode=sprof.TRAIN)
            child = os.fork()
            if child == 0:
                sprof.step()
                sprof.step_end()
                os._exit(0)
            os.waitpid(child, 0)
            # close_fds (the default) drops the inherited pipe: the grandchild reopens it by path.
            r = subprocess.run([sys.executable, "-c",
                                "import os, sprof; sprof.step(mode='predict'); print(sprof.enabled(), os.getpid())"],
                               capture_output=True, text=True)
            enabled, grandchild = r.stdout.split()
            print(json.dumps({"child": child, "grandchild": int(grandchild), "enabled": enabled}))
            """)
        r = self.probe([DEBIAN_PYTHON, script])
        self.assertEqual(r.exit_code, 0, r.stderr)
        info = self.program_log(r)[0]
        self.assertEqual(info["enabled"], "True")
        child = r.process(info["child"])
        self.assertEqual((child["start_reason"], child["ppid"]), ("fork", r.pid))
        self.assertEqual([(s["mode"], s["global_step"]) for s in child["steps"]], [("global", 0)])
        grandchild = r.process(info["grandchild"])
        self.assertEqual((grandchild["start_reason"], grandchild["ppid"]), ("start", r.pid))
        self.assertEqual([(s["mode"], s["step"]) for s in grandchild["steps"]], [("predict", 0)])
        main = r.process(r.pid)
        self.assertEqual([(s["mode"], s["step"]) for s in main["steps"]], [("train", 0)])

    def test_reused_fd_number_is_never_written(self):
        # A shell that redirects the marker fd's number to its own file before starting Python:
        # the bootstrap sees a different inode there and reopens the pipe by path instead.
        victim = os.path.join(self.tmp, "victim.txt")
        script = self.write("prog.py", "import sprof; sprof.step(); sprof.step_end(); print('ok')\n")
        r = self.probe(["/bin/bash", "-c", 'eval "exec $SPROF_MARKER_FD>%s"; exec %s %s'
                        % (victim, DEBIAN_PYTHON, script)])
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.stdout, "ok\n")
        self.assertEqual(os.path.getsize(victim), 0)
        steps = [p for p in r.data["processes"] if p["steps"]]
        self.assertEqual(len(steps), 1)


class DeadRecorderTest(ProbeTestCase):
    """A recorder that is gone must neither hang nor kill the target."""

    def bootstrap_dir(self):
        self.probe([DEBIAN_PYTHON, "-c", "pass"])
        return os.path.join(self.tmp, "probe", "bootstrap")

    def env_for(self, w, bootstrap):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPROF_")}
        env.update(PYTHONPATH=bootstrap, SPROF_MARKER_FD=str(w), SPROF_MARKER_INODE=str(os.fstat(w).st_ino),
                   SPROF_MARKER_PATH="/proc/%d/fd/%d" % (os.getpid(), w))
        return env

    def test_recorder_gone_before_start(self):
        bootstrap = self.bootstrap_dir()
        r, w = os.pipe()
        os.close(r)
        try:
            p = subprocess.run([DEBIAN_PYTHON, "-c", "import sprof; sprof.step(); print('ran', sprof.enabled())"],
                               capture_output=True, text=True, env=self.env_for(w, bootstrap),
                               pass_fds=(w,), timeout=60)
        finally:
            os.close(w)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "ran False\n")
        lines = [l for l in p.stderr.splitlines() if l.startswith("sprof:")]
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("cannot open the marker channel", lines[0])

    def test_recorder_dies_mid_run(self):
        bootstrap = self.bootstrap_dir()
        r, w = os.pipe()
        script = self.write("flood.py", """
            import signal, sys, sprof
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a write to a reader-less pipe would kill us
            print("ready", flush=True)
            sys.stdin.readline()
            for i in range(100000):
                sprof.mark("flood")
                if i % 1000 == 0:
                    sprof.step()
            print("survived", sprof.enabled(), flush=True)
            """)
        p = subprocess.Popen([DEBIAN_PYTHON, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=self.env_for(w, bootstrap), pass_fds=(w,))
        try:
            self.assertEqual(p.stdout.readline(), "ready\n")
            hello = os.read(r, 4096)
            self.assertTrue(hello.startswith(b"hello "), hello)
            os.close(r)
            os.close(w)
            p.stdin.write("go\n")
            p.stdin.flush()
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out, "survived True\n")
        self.assertEqual(err, "")


if __name__ == "__main__":
    unittest.main()
