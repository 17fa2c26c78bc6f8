#!/usr/bin/env python3
"""An example sprof rule program: a training step is an issue when it takes more than FACTOR
times the median of the first BASELINE training steps; the message names the function that took
most of the slow step.

    sprof rules DIR --rule-program examples/rules/step_regression.py
    sprof record --rule-program examples/rules/step_regression.py --rule-interval 10 \\
        --action step_regression=stop -- python3 train.py

FACTOR and BASELINE come from the environment (STEP_REGRESSION_FACTOR, default 1.5;
STEP_REGRESSION_BASELINE, default 5).
"""
import os
import statistics

from sprof.rules import Rule


class StepRegression(Rule):
    recommendation = ("Steps became slower than at the start of the run: look at the named function, "
                      "or compare the slow steps with early ones (sprof fetch-by-step DIR --step N).")

    def __init__(self):
        super().__init__()
        self.factor = float(os.environ.get("STEP_REGRESSION_FACTOR", "1.5"))
        self.baseline_steps = int(os.environ.get("STEP_REGRESSION_BASELINE", "5"))
        self.baseline = []
        self.slow = []

    def parameters(self):
        return {"factor": self.factor, "baseline_steps": self.baseline_steps}

    def invoke_at_step(self, step):
        if step["mode"] != "train":
            return False
        if len(self.baseline) < self.baseline_steps:
            self.baseline.append(step["duration_s"])
            return False
        median = statistics.median(self.baseline)
        if step["duration_s"] <= self.factor * median:
            return False
        # The deepest function that holds most of the step: the last one on the list of functions
        # by total time whose total is at least half the step's samples.
        culprit = None
        for f in step.get("functions", []):
            if f["total_s"] >= 0.5 * step.get("sampled_s", 0):
                culprit = f
        self.slow.append(step["step"])
        self.details = {"slow_steps": self.slow[-20:], "baseline_median_s": median}
        where = " in %s (%s:%d)" % (culprit["function"], culprit["file"], culprit["line"]) if culprit else ""
        return "train step %d took %.3f s, %.1fx the baseline median %.3f s%s" % (
            step["step"], step["duration_s"], step["duration_s"] / median, median, where)


if __name__ == "__main__":
    StepRegression().run()
