"""One node of a synthetic many-rank job, made from a real recording of one node (scripts/bench-ranks).

    python3 scripts/bench_ranks_job.py SOURCE DEST --node K --ranks-per-node R --world W --shift-us US

SOURCE was recorded with SM_CURRENT_HOST=node-000 and GROUP_RANK=0 (system node id algo-1), its
ranks' RANK = LOCAL_RANK. DEST becomes node K of the job: host node-KKK (the same width, so names
and sample logs keep their lengths), system node id algo-(K+1), each rank's RANK K*R + LOCAL_RANK,
GROUP_RANK K, WORLD_SIZE W, and every wall-clock time shifted by US microseconds (the manifest's
clock, the stats directories' names, the step timelines' start and names, the system metrics):
nodes of a real job start a little apart. Monotonic times (sample logs, markers) stay: they are
read through the manifest's clock, as a real node's own monotonic clock would be.
"""

import argparse
import json
import os
import re
import shutil

SOURCE_HOST = "node-000"
SOURCE_SYSTEM_ID = "algo-1"


def shift_stats_dir_name(name, shift_us):
    # <mode>-<step>-<event>-<epoch us>_<mode>-<step>-<event>-<epoch us>: the two times move.
    return re.sub(r"-(\d{13,17}(?:\.\d+)?)(?=_|$)",
                  lambda m: "-%s" % format_like(m.group(1), float(m.group(1)) + shift_us), name)


def format_like(text, value):
    if "." in text:
        return "%.*f" % (len(text.split(".")[1]), value)
    return "%d" % round(value)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("dest")
    ap.add_argument("--node", type=int, required=True)
    ap.add_argument("--ranks-per-node", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--shift-us", type=int, default=0)
    a = ap.parse_args()
    host = "node-%03d" % a.node
    if len(host) != len(SOURCE_HOST):
        raise SystemExit("bench_ranks_job: node %d does not fit node-NNN" % a.node)
    system_id = "algo-%d" % (a.node + 1)
    shift_us = a.shift_us

    for dirpath, dirnames, filenames in os.walk(a.source):
        rel = os.path.relpath(dirpath, a.source)
        parts = [] if rel == "." else rel.split(os.sep)
        new_parts = []
        for i, p in enumerate(parts):
            p = p.replace(SOURCE_HOST, host)
            if i >= 3 and parts[0] == "framework" and parts[1] != "pevents":
                p = shift_stats_dir_name(p, shift_us)  # framework/<fw>/<profiler>/<node>/<stats dir>
            new_parts.append(p)
        out_dir = os.path.join(a.dest, *new_parts)
        os.makedirs(out_dir, exist_ok=True)
        for name in filenames:
            src = os.path.join(dirpath, name)
            new_name = name.replace(SOURCE_HOST, host)
            if parts[:1] == ["framework"] and parts[1:2] == ["pevents"]:
                stamp, rest = new_name.split("_", 1)
                new_name = "%d_%s" % (int(stamp) + shift_us, rest)
                with open(src) as f:
                    text = f.read()
                text = re.sub(r'("start_time_since_epoch_in_micros": )(\d+)',
                              lambda m: m.group(1) + str(int(m.group(2)) + shift_us), text)
                with open(os.path.join(out_dir, new_name), "w") as f:
                    f.write(text.replace(SOURCE_HOST, host))
            elif parts[:1] == ["system"]:
                new_name = new_name.replace("." + SOURCE_SYSTEM_ID + ".", "." + system_id + ".")
                with open(src) as f, open(os.path.join(out_dir, new_name), "w") as out:
                    for line in f:
                        if not line.strip():
                            continue
                        row = json.loads(line)
                        row["NodeId"] = system_id
                        row["Timestamp"] = row["Timestamp"] + shift_us / 1e6
                        out.write(json.dumps(row) + "\n")
            elif name == "sprof.json":
                with open(src) as f:
                    doc = json.loads(f.read().replace(SOURCE_HOST, host))
                doc["clock"]["realtime_ns"] += shift_us * 1000
                if doc.get("system_metrics", {}).get("node_id") == SOURCE_SYSTEM_ID:
                    doc["system_metrics"]["node_id"] = system_id
                for key in ("start", "end"):
                    if key in doc and "epoch_us" in doc[key]:
                        doc[key]["epoch_us"] += shift_us
                for p in doc["processes"]:
                    if p.get("group_rank") not in (None, ""):
                        p["group_rank"] = str(a.node)
                    if p.get("local_rank") not in (None, ""):
                        p["rank"] = str(a.node * a.ranks_per_node + int(p["local_rank"]))
                        p["world_size"] = str(a.world)
                text = json.dumps(doc, indent=2)
                # The step trace files it lists carry the shifted times in their names.
                text = re.sub(r"framework/pevents/(\d+)/(\d+)_",
                              lambda m: "framework/pevents/%s/%d_" % (m.group(1), int(m.group(2)) + shift_us), text)
                text = re.sub(r'(pyinstrument|cprofile)/([^"/]+)/([^"/]+)/',
                              lambda m: "%s/%s/%s/" % (m.group(1), m.group(2), shift_stats_dir_name(m.group(3), shift_us)),
                              text)
                with open(os.path.join(out_dir, new_name), "w") as f:
                    f.write(text)
            elif name.endswith((".json", ".html")):
                with open(src, encoding="utf-8", errors="surrogateescape") as f:
                    text = f.read()
                with open(os.path.join(out_dir, new_name), "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(text.replace(SOURCE_HOST, host))
            else:
                shutil.copyfile(src, os.path.join(out_dir, new_name))


if __name__ == "__main__":
    main()
