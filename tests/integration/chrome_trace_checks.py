"""What a Chrome trace must hold for DevTools, Perfetto and speedscope to draw it as written: they
nest the complete ("X") events of a thread by time, make the first of two equal events the parent,
and drop an event that only partly overlaps its parent (Perfetto counts them as
slice_drop_overlapping_complete_event). Times are read as doubles."""
import collections


def folded_names(text):
    """Function names of each folded stack (sprof export -f collapsed), root first."""
    return [[frame.rsplit(" (", 1)[0] for frame in line.rpartition(" ")[0].split(";")] for line in text.splitlines()]


def in_some_stack(names, stacks):
    n = len(names)
    return any(stack[i:i + n] == names for stack in stacks for i in range(len(stack) - n + 1))


def nesting_problems(events, stacks=None):
    """(partial overlaps, groups of equal Python slices whose file order is no run of callers to
    callees in any of `stacks` (folded_names; without them, groups where the script's <module> is
    not first), non-integer times) over the X events, per (pid, tid)."""
    by_thread = collections.defaultdict(list)
    fractional = 0
    for i, e in enumerate(events):
        if e.get("ph") != "X":
            continue
        if e["ts"] != int(e["ts"]) or e["dur"] != int(e["dur"]):
            fractional += 1
        by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], i, e))
    partial, upside_down = [], []
    for slices in by_thread.values():
        slices.sort(key=lambda x: (x[0], -(x[1] - x[0]), x[2]))
        stack = []
        for start, end, _, e in slices:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                partial.append((e, stack[-1][2]))
            stack.append((start, end, e))
        groups = collections.defaultdict(list)
        for start, end, i, e in slices:
            if e.get("cat") == "python_function":
                groups[(start, end)].append((i, e["name"]))
        for group in groups.values():
            names = [n for _, n in sorted(group)]
            if stacks is not None:
                if len(names) > 1 and not in_some_stack(names, stacks):
                    upside_down.append(names)
            elif "<module>" in names and names[0] != "<module>":
                upside_down.append(names)
    return partial, upside_down, fractional


def coverage(events, name, pid, tid):
    """The share of [first start, last end] of `name`'s slices on one thread that they cover."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("ph") == "X" and e["name"] == name and e["pid"] == pid and e["tid"] == tid)
    if not spans:
        return 0.0
    covered, current = 0, list(spans[0])
    for start, end in spans[1:]:
        if start <= current[1]:
            current[1] = max(current[1], end)
        else:
            covered += current[1] - current[0]
            current = [start, end]
    covered += current[1] - current[0]
    return covered / max(spans[-1][1] - spans[0][0], 1)
