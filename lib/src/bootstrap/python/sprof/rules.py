"""Write sprof rule programs in Python.

A rule program reads JSON records on stdin, one per line, and answers every ``evaluate`` record
with its verdict as one JSON line on stdout (see CUSTOM RULES in sprof(1)). This module does the
reading and answering; a rule subclasses ``Rule`` and decides, step by step, as smdebug's custom
rules do in ``invoke_at_step``::

    from sprof.rules import Rule

    class SlowStep(Rule):
        def invoke_at_step(self, step):
            return step["duration_s"] > 2.0   # True (or a message) when the step is an issue

    if __name__ == "__main__":
        SlowStep().run()

Records: ``{"type": "start", ...}`` once (the job: command, pid, host, python, start_us, live),
``{"type": "step", "mode", "step", "node", "pid", "start_us", "end_us", "duration_s",
"sampled_s", "functions": [{"function", "file", "line", "self_s", "total_s"}]}`` per step as it
ends, ``{"type": "system", "node", "timestamp_us", "metrics": {"CPUUtilization": {"cpu0": 12.5},
...}}`` per system tick, and ``{"type": "evaluate", "seq", "final"}``. The module uses only the
standard library and runs on Python 2.7 and 3.
"""
import json
import sys

try:
    _text = basestring  # Python 2: str and unicode
except NameError:
    _text = str


class Rule(object):
    """A rule program's state between evaluations: how often it triggered, on how many steps, and
    the last message. Subclasses override invoke_at_step (and, when they need them, on_start and
    on_system)."""

    #: The recommendation sprof shows with an IssuesFound verdict.
    recommendation = ""

    def __init__(self):
        self.job = {}
        self.triggered = 0
        self.datapoints = 0
        self.message = ""
        self.details = {}

    # -- what a rule overrides ------------------------------------------------------------
    def on_start(self, job):
        """The start record: the job's metadata."""
        self.job = job

    def on_system(self, tick):
        """One system tick: tick["metrics"][dimension][device] -> value."""

    def invoke_at_step(self, step):
        """One finished step. Return True, or a message, when the step meets the rule's
        condition; False or None when it does not."""
        return False

    def parameters(self):
        """The rule's parameters, shown as RuleParameters."""
        return {}

    # -- the protocol -----------------------------------------------------------------------
    def verdict(self, seq):
        out = {
            "seq": seq,
            "status": "IssuesFound" if self.triggered else ("NoIssuesFound" if self.datapoints else "NoData"),
            "triggered": self.triggered,
            "datapoints": self.datapoints,
            "message": self.message or ("no step yet" if not self.datapoints else
                                        "no issue in %d steps" % self.datapoints),
        }
        if self.recommendation:
            out["recommendation"] = self.recommendation
        if self.details:
            out["details"] = self.details
        params = self.parameters()
        if params:
            out["parameters"] = dict((str(k), str(v)) for k, v in params.items())
        return out

    def handle(self, record):
        kind = record.get("type")
        if kind == "start":
            self.on_start(record)
        elif kind == "step":
            self.datapoints += 1
            found = self.invoke_at_step(record)
            if found:
                self.triggered += 1
                self.message = found if isinstance(found, _text) else (
                    "%s step %s took %.3f s" % (record.get("mode"), record.get("step"), record.get("duration_s", 0)))
        elif kind == "system":
            self.on_system(record)
        elif kind == "evaluate":
            return self.verdict(record["seq"])
        return None

    def run(self, stdin=None, stdout=None):
        """Reads records until stdin ends, answering each evaluate record."""
        stdin = stdin or sys.stdin
        stdout = stdout or sys.stdout
        while True:
            line = stdin.readline()
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            answer = self.handle(json.loads(line))
            if answer is not None:
                stdout.write(json.dumps(answer) + "\n")
                stdout.flush()
