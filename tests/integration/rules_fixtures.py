"""Profile directories for rule tests, written the way SageMaker and smdebug write them (not with sprof):
system metrics as JSON lines in minute files, framework events as Chrome-trace pevents files.

Times are epoch seconds (system) or microseconds (framework). T0 is minute-aligned, so the first
rule window starts at T0 when the first sample is at T0.
"""
import json
import os
import time

T0 = 1700000040  # 2023-11-14 22:14:00 UTC, a whole minute
T0_US = T0 * 1000000


class SystemMetrics:
    """Collects sampling ticks and writes system/incremental/<YYYYMMDDHH>/<minute>.<node>.json."""

    def __init__(self, node="algo-1"):
        self.node = node
        self.ticks = []  # (timestamp seconds, [(type, name, dimension, value)])

    def tick(self, t, records):
        self.ticks.append((t, records))

    def write(self, root):
        files = {}
        for t, records in self.ticks:
            minute = int(t) // 60 * 60
            files.setdefault(minute, []).extend(
                json.dumps({"Type": kind, "Name": name, "Dimension": dim, "Value": value,
                            "NodeId": self.node, "Timestamp": t})
                for kind, name, dim, value in records)
        for minute, lines in files.items():
            hour = time.strftime("%Y%m%d%H", time.gmtime(minute))
            path = os.path.join(root, "system", "incremental", hour, "%d.%s.json" % (minute, self.node))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a") as f:
                f.write("".join(line + "\n" for line in lines))


def cpu(name, value):
    return ("cpu", name, "CPUUtilization", value)


def iowait(name, value):
    return ("cpu", name, "I/OWaitPercentage", value)


def gpu(name, value):
    return ("gpu", name, "GPUUtilization", value)


def gpu_memory(name, value):
    return ("gpu", name, "GPUMemoryUtilization", value)


def memory(value):
    return ("memory", "MemoryUsedPercent", "", value)


def network(name, value):
    return ("network", name, "Algorithm", value)


def write_trace(root, events, node_id="100-algo-1", suffix="pythontimeline.json"):
    """One pevents file in smdebug's format. events: dicts with lane, name, start_us, dur_us, args."""
    base = min(e["start_us"] for e in events)
    end = max(e["start_us"] + e["dur_us"] for e in events)
    records = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": base}},
               {"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}}]
    lanes = {}
    for e in events:
        if e["lane"] not in lanes:
            lanes[e["lane"]] = len(lanes) + 1
            records.append({"name": "process_name", "ph": "M", "pid": lanes[e["lane"]], "args": {"name": e["lane"]}})
            records.append({"name": "process_sort_index", "ph": "M", "pid": lanes[e["lane"]],
                            "args": {"sort_index": lanes[e["lane"]]}})
        record = {"name": e["name"], "pid": lanes[e["lane"]], "ph": "X", "ts": e["start_us"] - base,
                  "dur": e["dur_us"]}
        if e.get("args"):
            record["args"] = e["args"]
        records.append(record)
    hour = time.strftime("%Y%m%d%H", time.gmtime(end // 1000000))
    path = os.path.join(root, "framework", "pevents", hour, "%d_%s_%s" % (end, node_id, suffix))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]")
    return path


def steps(durations_s, start_us=T0_US, mode="TRAIN", pid=100, gap_us=0, first_step=0):
    """Back-to-back Step:ModeKeys.<mode> events with the given durations (seconds)."""
    events, t = [], start_us
    for i, d in enumerate(durations_s):
        dur = int(round(d * 1000000))
        lane = "Step:ModeKeys." + mode
        events.append({"lane": lane, "name": lane, "start_us": t, "dur_us": dur,
                       "args": {"pid": pid, "step_num": str(first_step + i)}})
        t += dur + gap_us
    return events


def event(lane, name, start_us, dur_us, **args):
    return {"lane": lane, "name": name, "start_us": start_us, "dur_us": dur_us, "args": args}
