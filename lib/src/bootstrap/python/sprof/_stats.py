"""What this process recorded so far, aggregated (sprof.dumps / sprof.dump, as MXNet's
profiler.dumps): steps per mode, tasks, frames and events (durations), markers (counts) and
counters (values).

The layout is the one `sprof markers DIR` prints after the run from the same markers, so that
the two can be compared line for line: keep both in step (lib/src/render/marker_stats_render.cpp).
"""
import json

_steps = {}     # mode -> [count, total_ns, min_ns, max_ns]
_markers = {}   # "domain:name" -> count
_counters = {}  # "domain:name" -> [count, total, min, max, last]
_timed = {"task": {}, "frame": {}, "event": {}}  # kind -> "domain:name" -> [count, total_ns, min_ns, max_ns]
_TIMED_SECTIONS = (("task", "Tasks"), ("frame", "Frames"), ("event", "Events"))

SORT_KEYS = ("total", "avg", "min", "max", "count")


def _add_duration(table, key, duration_ns):
    s = table.get(key)
    if s is None:
        table[key] = [1, duration_ns, duration_ns, duration_ns]
    else:
        s[0] += 1
        s[1] += duration_ns
        s[2] = min(s[2], duration_ns)
        s[3] = max(s[3], duration_ns)


def step(mode, duration_ns):
    _add_duration(_steps, mode, duration_ns)


def timed(kind, domain, name, duration_ns):
    _add_duration(_timed[kind], "%s:%s" % (domain, name), duration_ns)


def marker(domain, name):
    key = "%s:%s" % (domain, name)
    _markers[key] = _markers.get(key, 0) + 1


def counter(domain, name, value):
    key = "%s:%s" % (domain, name)
    value = float(value)
    c = _counters.get(key)
    if c is None:
        _counters[key] = [1, value, value, value, value]
    else:
        c[0] += 1
        c[1] += value
        c[2] = min(c[2], value)
        c[3] = max(c[3], value)
        c[4] = value


def reset():
    _steps.clear()
    _markers.clear()
    _counters.clear()
    for table in _timed.values():
        table.clear()


def _ms(ns):
    return ns / 1e6


def _rows():
    """{section: [(name, count, total, min, max, avg, last or None)]}: steps in ms, counters in
    their own unit, markers with count only."""
    def durations(table):
        return [(k, s[0], _ms(s[1]), _ms(s[2]), _ms(s[3]), _ms(s[1]) / s[0], None) for k, s in table.items()]
    markers = [(k, n, float(n), None, None, None, None) for k, n in _markers.items()]
    counters = [(k, c[0], c[1], c[2], c[3], c[1] / c[0], c[4]) for k, c in _counters.items()]
    rows = {"Steps": durations(_steps), "Markers": markers, "Counters": counters}
    for kind, section in _TIMED_SECTIONS:
        rows[section] = durations(_timed[kind])
    return rows


def _sorted(rows, sort_by, ascending):
    index = {"count": 1, "total": 2, "min": 3, "max": 4, "avg": 5}[sort_by]
    # Markers have a count only: they sort by it whatever was asked.
    def key(r):
        v = r[index] if r[index] is not None else r[1]
        return (v if ascending else -v, r[0])
    return sorted(rows, key=key)


def _num(v):
    return "%.4f" % v


def dumps(reset_after=False, fmt="table", sort_by="total", ascending=False):
    if fmt not in ("table", "json"):
        raise ValueError("format must be 'table' or 'json', got %r" % (fmt,))
    if sort_by not in SORT_KEYS:
        raise ValueError("sort_by must be one of %s, got %r" % (", ".join(SORT_KEYS), sort_by))
    sections = {name: _sorted(rows, sort_by, ascending) for name, rows in _rows().items()}
    if fmt == "json":
        # The keys in the order `sprof markers --json` writes them.
        doc = {}
        units = {}
        for section in ["Steps"] + [name for _, name in _TIMED_SECTIONS if sections[name]]:
            doc[section] = {}
            units[section] = "ms"
            for r in sections[section]:
                doc[section][r[0]] = {"Total Count": r[1], "Total Time (ms)": r[2], "Min Time (ms)": r[3],
                                      "Max Time (ms)": r[4], "Avg Time (ms)": r[5]}
        doc["Markers"] = {}
        doc["Counters"] = {}
        for r in sections["Markers"]:
            doc["Markers"][r[0]] = {"Total Count": r[1]}
        for r in sections["Counters"]:
            doc["Counters"][r[0]] = {"Total Count": r[1], "Min Value": r[3], "Max Value": r[4],
                                     "Avg Value": r[5], "Last Value": r[6]}
        doc["Unit"] = units
        text = json.dumps(doc, indent=2, sort_keys=False)
    else:
        text = table(sections)
    if reset_after:
        reset()
    return text


def _durations(out, title, rows):
    out += [title, "=================",
            "%-40s %12s %16s %16s %16s %16s" % ("Name", "Total Count", "Time (ms)", "Min Time (ms)",
                                                "Max Time (ms)", "Avg Time (ms)"),
            "%-40s %12s %16s %16s %16s %16s" % ("----", "-----------", "---------", "-------------",
                                                "-------------", "-------------")]
    for r in rows:
        out.append("%-40s %12d %16s %16s %16s %16s" % (r[0], r[1], _num(r[2]), _num(r[3]), _num(r[4]), _num(r[5])))


def table(sections):
    out = ["Profile Statistics:", "\tNote the difference in units for different entries."]
    _durations(out, "Steps", sections["Steps"])
    # MXNet's Task, Frame and Event: only when the program used them.
    for _, title in _TIMED_SECTIONS:
        if sections[title]:
            out.append("")
            _durations(out, title, sections[title])
    out += ["", "Markers", "=================", "%-40s %12s" % ("Name", "Total Count"),
            "%-40s %12s" % ("----", "-----------")]
    for r in sections["Markers"]:
        out.append("%-40s %12d" % (r[0], r[1]))
    out += ["", "Counters", "=================",
            "%-40s %12s %16s %16s %16s %16s" % ("Name", "Total Count", "Min Value", "Max Value", "Avg Value",
                                                "Last Value"),
            "%-40s %12s %16s %16s %16s %16s" % ("----", "-----------", "---------", "---------", "---------",
                                                "----------")]
    for r in sections["Counters"]:
        out.append("%-40s %12d %16s %16s %16s %16s" % (r[0], r[1], _num(r[3]), _num(r[4]), _num(r[5]), _num(r[6])))
    return "\n".join(out) + "\n"
