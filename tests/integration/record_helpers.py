"""Helpers for the `sprof record` / `sprof export` integration tests."""
import json
import os
import re
import subprocess
import time

from sprof_testlib import SOURCE_DIR, run_sprof

WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")


def workload(name):
    return os.path.join(WORKLOADS, name)


def marker_line(path, marker):
    """Line number (1-based) of the line containing `marker` in `path`."""
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if marker in line:
                return number
    raise AssertionError("marker %r not found in %s" % (marker, path))


VIEW_FLAGS = ("--on-cpu", "--all-threads", "--idle")


def sampler_view(flags):
    """These tests check what the sampler caught in every thread: without a view flag of their
    own, on-CPU samples of every thread (export's default is the step threads' wall time)."""
    return flags if any(f in VIEW_FLAGS for f in flags) else flags + ("--on-cpu", "--all-threads")


def parse_collapsed(text):
    stacks = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        stacks[stack] = stacks.get(stack, 0) + int(count)
    return stacks


def collapsed(profile_dir, *flags):
    """sprof export -f collapsed as {stack line: count}."""
    return parse_collapsed(run_sprof("export", profile_dir, "-f", "collapsed", *sampler_view(flags), check=0).stdout)


def wait_for_samples(profile_dir, name, more_than, timeout=60):
    """While a recording runs: waits until its sample log, as flushed so far, holds more than
    `more_than` samples of function `name`, and returns how many it holds (fewer only when
    `timeout` seconds passed first). Tests that stop a recording after it has sampled enough
    wait for this instead of a fixed time, which a loaded machine can outlast."""
    deadline = time.monotonic() + timeout
    count = 0
    while True:
        proc = run_sprof("export", profile_dir, "-f", "collapsed", *sampler_view(()), check=None)
        if proc.returncode == 0:  # before the first flush there may be nothing to read
            count = inclusive_counts(parse_collapsed(proc.stdout), (name,))[name]
        if count > more_than or time.monotonic() > deadline:
            return count
        time.sleep(0.2)


FRAME_RE = re.compile(r"^(?P<name>.*) \((?P<file>.*):(?P<line>-?\d+)\)$")


def frames(stack_line):
    """[(name, file, line)] root first, for one collapsed stack (process frames skipped)."""
    out = []
    for frame in stack_line.split(";"):
        m = FRAME_RE.match(frame)
        if m:
            out.append((m.group("name"), m.group("file"), int(m.group("line"))))
    return out


def inclusive_counts(stacks, names):
    """Samples whose stack contains each function name (counted once per sample)."""
    counts = dict((n, 0) for n in names)
    for stack, count in stacks.items():
        present = set(name for name, _, _ in frames(stack))
        for n in names:
            if n in present:
                counts[n] += count
    return counts


def manifest(profile_dir):
    with open(os.path.join(profile_dir, "sprof.json"), encoding="utf-8") as f:
        return json.load(f)


def speedscope(profile_dir, *flags):
    proc = run_sprof("export", profile_dir, "-f", "speedscope", *sampler_view(flags), check=0)
    return json.loads(proc.stdout)
