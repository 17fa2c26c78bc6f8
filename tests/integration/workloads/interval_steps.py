"""A plain training-like loop marked with sprof's explicit API: steps busy on the CPU, except
one step that sleeps 200 ms in a known function. Prints, as JSON, each step's own
CLOCK_MONOTONIC boundaries and the CPU time its thread got in it, so tests can compare them
with sprof's (on a loaded machine a 100 ms busy loop gets less than 100 ms of CPU)."""
import json
import sys
import time

import sprof

SLEEPY_STEP = int(sys.argv[1]) if len(sys.argv) > 1 else 2
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def busy_loop(seconds):
    deadline = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < deadline:
        x += 1
    return x


def sleepy():
    time.sleep(0.2)


def setup():
    busy_loop(0.1)


setup()
sprof.set_mode(sprof.TRAIN)
steps = []
cpu = []
for i in range(STEPS):
    with sprof.step_context():
        t0 = time.monotonic_ns()
        c0 = time.thread_time_ns()
        if i == SLEEPY_STEP:
            sleepy()
        else:
            busy_loop(0.1)
        c1 = time.thread_time_ns()
        t1 = time.monotonic_ns()
    steps.append([t0, t1])
    cpu.append(c1 - c0)
busy_loop(0.05)
print(json.dumps({"enabled": sprof.enabled(), "steps": steps, "cpu_ns": cpu}))
