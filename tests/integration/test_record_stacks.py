"""What sprof record reads out of real interpreters: deep recursion, generators, coroutines, threads
that come and go (every CPython 3.8-3.13 here), code objects replaced at the same address (every
CPython 2.7-3.13), attaching with --pid, and --subprocesses."""
import json
import math
import os
import re
import signal
import subprocess
import textwrap
import time
import unittest

from sprof_testlib import DEBIAN_PYTHON, SPROF_BIN, TempDirTestCase, pythons, run_sprof
from record_helpers import (collapsed, frames, inclusive_counts, manifest, marker_line, speedscope, wait_for_samples,
                            workload)

PY = DEBIAN_PYTHON
SHAPES = workload("shapes.py")
DEPTH = 800


class StackShapesTest(TempDirTestCase):
    def test_recursion_generators_coroutines(self):
        spin_line = marker_line(SHAPES, "SPIN-LINE")
        for label, python in sorted(pythons((3, 8), (3, 13)).items()):
            with self.subTest(python=label):
                out = os.path.join(self.tmp, label)
                run_sprof("record", "-q", "-r", "500", "-o", out, "--", python, SHAPES, "3", str(DEPTH), check=0)
                stacks = collapsed(out)

                # Recursion 800 deep: the whole chain, root <module> down to spin() on its line.
                deepest = max((frames(s) for s in stacks if "spin (" in s), key=len)
                depth = sum(1 for f in deepest if f[0] == "recurse")
                self.assertEqual(depth, DEPTH, "%s: deepest stack has %d recurse frames" % (label, depth))
                self.assertEqual(deepest[0][0], "<module>")
                self.assertEqual(deepest[-1][:1], ("spin",))
                self.assertEqual(deepest[-1][2], spin_line)
                deep_samples = sum(c for s, c in stacks.items() if s.count("recurse (") == DEPTH)
                self.assertGreater(deep_samples, 10)

                # Generator frames sit under the consumer that resumes them.
                gen = [frames(s) for s in stacks if "numbers (" in s]
                self.assertTrue(gen, label)
                names = [f[0] for f in max(gen, key=len)]
                self.assertLess(names.index("consume"), names.index("numbers"))
                # Coroutine frames sit under the event loop that runs them.
                co = [frames(s) for s in stacks if "crunch (" in s]
                self.assertTrue(co, label)
                names = [f[0] for f in max(co, key=len)]
                self.assertIn("coroutine_main", names)
                self.assertLess(names.index("coroutine_main"), names.index("crunch"))
                self.assertTrue(any("run" in n for n in names[:names.index("coroutine_main")]), names)

                # ~1 s each at 500 Hz; an 800-frame walk is one read per frame before 3.11, so on a
                # loaded machine far fewer deep samples arrive in time.
                counts = inclusive_counts(stacks, ("recurse", "numbers", "crunch"))
                for name, count in counts.items():
                    self.assertGreater(count, 10 if name == "recurse" else 50, "%s: %s" % (label, counts))

    def test_threads_that_start_and_end(self):
        out = os.path.join(self.tmp, "threads")
        proc = run_sprof("record", "-r", "1000", "-o", out, "--", PY, workload("threads.py"), "12", check=0)
        self.assertIn("threads done", proc.stdout)
        doc = speedscope(out)
        workers = [p for p in doc["profiles"] if "worker-" in p["name"]]
        # 48 short-lived threads: most are caught and named.
        self.assertGreater(len(workers), 24, [p["name"] for p in doc["profiles"]])
        frame_names = [f["name"] for f in doc["shared"]["frames"]]
        self.assertIn("short_work", frame_names)
        m = manifest(out)
        self.assertLess(m["health"]["invalid_share"], 0.02)


class CodeAddressReuseTest(TempDirTestCase):
    def test_code_objects_made_at_a_freed_ones_address_keep_their_own_names(self):
        # recompiled.py makes "even" and "odd" in turns, each new code object at the address of
        # the one freed just before, each call spinning 4 ms. A sampler that trusts a code
        # object's address names the samples after whichever of the two it last read the header
        # of: sprof did, for up to a second (CI once saw `python2.7 -c`'s function named after
        # encodings/utf_8.py's <module>, whose code object it replaced).
        calls = 250
        for label, python in sorted(pythons((2, 7), (3, 13)).items()):
            with self.subTest(python=label):
                out = os.path.join(self.tmp, label)
                proc = run_sprof("record", "-r", "1000", "-o", out, "--", python, workload("recompiled.py"),
                                 str(calls), check=0)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                reused = re.search(r"reused (\d+) of (\d+)", proc.stdout)
                self.assertIsNotNone(reused, proc.stdout)
                # The case this tests happened (alone: every time; under sprof, whose bootstrap
                # allocates too, 35 % of the time on 3.10): once is enough to misname a second.
                self.assertGreater(int(reused.group(1)), calls // 10, proc.stdout)
                counts = {"even": 0, "odd": 0}
                for stack, count in collapsed(out).items():
                    leaf = (frames(stack) or [("", "", 0)])[-1]
                    if leaf[0] in counts:
                        self.assertEqual(leaf[1], leaf[0] + ".py", stack)
                        counts[leaf[0]] += count
                total = sum(counts.values())
                self.assertGreater(total, 100, counts)
                # The calls alternate and last the same, so even's share is 0.5 but for how many
                # samples each call got: with k per call (mean m, sd s <= m even when a loaded
                # machine bunches them), its sd is at most 0.5 / sqrt(calls) (0.032); 4 sd, plus
                # one call cut short at either end. A misnamed run is off by up to 0.5.
                bound = 4 * 0.5 / math.sqrt(calls) + 2.0 / calls
                self.assertLess(abs(counts["even"] / float(total) - 0.5), bound, counts)


class AttachTest(TempDirTestCase):
    def start_target(self):
        target = subprocess.Popen([PY, workload("signals.py")], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: target.poll() is None and target.kill())
        self.assertEqual(target.stdout.readline().strip(), "READY")
        return target

    def test_attach_for_a_duration(self):
        target = self.start_target()
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "--pid", target.pid, "-d", "1.5", "-o", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIsNone(target.poll(), "the target must keep running after sprof detaches")
        counts = inclusive_counts(collapsed(out), ("busy",))
        self.assertGreater(counts["busy"], 100)
        m = manifest(out)
        self.assertEqual(m["mode"], "attach")
        self.assertEqual(m["processes"][0]["pid"], target.pid)
        self.assertAlmostEqual(m["duration_s"], 1.5, delta=0.5)
        # Not left stopped: it still reacts to signals (handler exits 100+N).
        target.send_signal(signal.SIGTERM)
        self.assertEqual(target.wait(timeout=10), 100 + signal.SIGTERM)

    def test_attach_until_sigint(self):
        target = self.start_target()
        out = os.path.join(self.tmp, "p")
        proc = subprocess.Popen([SPROF_BIN, "record", "--pid", str(target.pid), "-o", out, "--blocking"],
                                stderr=subprocess.PIPE, text=True)
        # SIGINT once the flushed samples hold what the end checks (after a fixed 1.5 s before,
        # which an attach slowed by a loaded machine could leave short).
        wait_for_samples(out, "busy", 50)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 0, stderr)
        self.assertIsNone(target.poll())
        m = manifest(out)
        self.assertEqual(m["state"], "complete")
        self.assertEqual(m["sampling"]["mode"], "blocking")
        self.assertGreater(inclusive_counts(collapsed(out), ("busy",))["busy"], 50)

    def test_attach_errors(self):
        sleeper = subprocess.Popen(["sleep", "30"])
        self.addCleanup(sleeper.kill)
        proc = run_sprof("record", "--pid", sleeper.pid, "-o", os.path.join(self.tmp, "p"), check=1)
        self.assertIn("not a CPython", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "p")))
        proc = run_sprof("record", "--pid", "999999999", "-o", os.path.join(self.tmp, "q"), check=2)


class SubprocessesTest(TempDirTestCase):
    def test_fork_spawn_forkserver_children(self):
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "--subprocesses", "-o", out, "--", PY, workload("children.py"), "2", check=0)
        pids = json.loads(proc.stdout.strip().splitlines()[-1])
        m = manifest(out)
        sampled = set(p["pid"] for p in m["processes"] if p["samples"] > 0)
        for child in pids["children"]:
            self.assertIn(child, sampled, "child %d (of %s) not sampled" % (child, pids))
            counts = inclusive_counts(collapsed(out, "--pid", str(child)), ("child_work",))
            self.assertGreater(counts["child_work"], 50, "child %d" % child)
        # The non-Python child is skipped quietly.
        self.assertNotIn(pids["sleep"], [p["pid"] for p in m["processes"]])
        self.assertNotIn("warn", proc.stderr.split("Top functions")[0])
        # Collapsed stacks of several processes start with the process.
        self.assertTrue(all(s.startswith("process ") for s in collapsed(out)))

    def test_a_fork_that_execs_another_program(self):
        # A fork found before it exec'd a non-Python program (subprocess's child on a loaded
        # machine) is left out; one that worked in Python longer than a second first is kept.
        script = os.path.join(self.tmp, "forks.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""\
                import json, os, sys, time
                def work(seconds):
                    end = time.perf_counter() + seconds
                    while time.perf_counter() < end:
                        pass
                pids = {}
                for name, seconds in (("brief", 0.3), ("long", 1.6)):
                    pid = os.fork()
                    if pid == 0:
                        work(seconds)
                        os.execv("/bin/sleep", ["sleep", "0.5"])
                    pids[name] = pid
                for pid in pids.values():
                    os.waitpid(pid, 0)
                print(json.dumps(pids))
                """))
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "--subprocesses", "-o", out, "--", PY, script, check=0)
        pids = json.loads(proc.stdout.strip().splitlines()[-1])
        listed = [p["pid"] for p in manifest(out)["processes"]]
        self.assertNotIn(pids["brief"], listed)
        self.assertIn(pids["long"], listed)
        self.assertFalse(any(str(pids["brief"]) in s.split(";")[0] for s in collapsed(out)))

    def test_rank_processes(self):
        # Ranks started the way torchrun starts them: separate interpreters with $RANK set.
        out = os.path.join(self.tmp, "p")
        proc = run_sprof("record", "--subprocesses", "-o", out, "--", PY, workload("ranks.py"), "2", check=0)
        m = manifest(out)
        ranks = dict((p["rank"], p) for p in m["processes"] if p.get("rank"))
        self.assertEqual(sorted(ranks), ["0", "1"], m["processes"])
        for rank, p in ranks.items():
            self.assertIn("rank %s pid %d" % (rank, p["pid"]), proc.stdout)
            counts = inclusive_counts(collapsed(out, "--pid", str(p["pid"])), ("rank_work",))
            self.assertGreater(counts["rank_work"], 50)

    def test_without_subprocesses_only_the_command(self):
        out = os.path.join(self.tmp, "p")
        run_sprof("record", "-o", out, "--", PY, workload("children.py"), "1", check=0)
        m = manifest(out)
        self.assertEqual([p["pid"] for p in m["processes"]], [m["target_pid"]])
        self.assertEqual(inclusive_counts(collapsed(out), ("child_work",))["child_work"],
                         inclusive_counts(collapsed(out), ("parent_work",))["parent_work"])


if __name__ == "__main__":
    unittest.main()
