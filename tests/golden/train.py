"""The workload of the golden profile (tests/golden/profiles/train): a training-like loop with
train and eval steps marked through sprof's API, one slow train step in a known function, and a
data-loading phase. `tests/golden/regenerate` records it from a neutral path."""
import time

import sprof


def busy(seconds):
    deadline = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < deadline:
        x += 1
    return x


def load_batch():
    busy(0.02)


def forward_backward():
    busy(0.06)


def slow_checkpoint():
    time.sleep(0.15)


def evaluate():
    busy(0.04)


busy(0.1)  # initialization
sprof.set_mode(sprof.TRAIN)
for step in range(8):
    with sprof.step_context():
        load_batch()
        forward_backward()
        if step == 5:
            slow_checkpoint()
sprof.set_mode(sprof.EVAL)
for step in range(3):
    with sprof.step_context():
        evaluate()
