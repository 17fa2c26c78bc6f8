"""Deterministic mode (`sprof record --python-profiler cprofile`): cProfile inside the target,
only within the profiling window, one pstats file per step interval (Python 3.8+).

Like smdebug's ProfilerConfigParser + cProfilePythonProfiler: profiling starts at activation
(pre-step-zero); at every step boundary (step start, step end) the running profile is stopped and
dumped, and a new one starts if the window holds the boundary's step; after hook close the last
interval (post-hook-close) is profiled in any case and dumped at interpreter exit. The intervals
are the step timeline's (lib/include/sprof/step_timeline.hpp): FORWARD_PASS_END does not split a
step, a zero-length gap between two steps gets no directory. The window logic is smdebug's
ProfileRange.can_start_profiling (C++ copy: sprof::window::WindowTracker).

Environment (docs/markers.md): SPROF_PYTHON_PROFILER=cprofile, SPROF_PROFILE_DIR,
SPROF_NODE_HOST, SPROF_CPROFILE_TIMER, SPROF_WINDOW.
Output: <profile>/framework/<pytorch|python>/cprofile/<pid>-<host>/<stats dir>/python_stats.
cProfile sees the thread that drives the steps (and, on 3.12+, every thread).
"""
import os
import sys
import time

from . import _channel as ch

PHASE_START, PHASE_STEPSTART, PHASE_STEPEND, PHASE_END = "start", "stepstart", "stepend", "end"
_CYCLE_START = 9  # smdebug's PYTHON_PROFILING_START_STEP_DEFAULT for cProfileTimer "default"

enabled = False
_profile_dir = ""
_host = ""
_timer_name = "total_time"
_window = None
_profiler = None   # the running cProfile.Profile
_start = None      # (mode, step text, phase, t_ns) of the running profile
_last_step_end = None  # (mode, step text) of the last step end: post-hook-close starts there
_closed = False
_offset_ns = 0     # Unix time minus monotonic time, read once
_framework = "python"
_written = []      # stats dirs written under framework/python (moved if torch shows up later)


def cpu_time():
    return time.process_time()


def off_cpu_time():
    # smdebug: elapsed - (user + system), with finer clocks than os.times().
    return time.perf_counter() - time.process_time()


class Window(object):
    """smdebug's ProfileRange.can_start_profiling(current_step, current_time)."""

    def __init__(self, spec):
        parts = spec.split()
        self.kind = parts[0] if parts else "all"
        if self.kind not in ("all", "steps", "time", "boundaries"):
            raise ValueError("bad SPROF_WINDOW %r" % spec)
        a = parts[1] if len(parts) > 1 and parts[1] != "-" else None
        b = parts[2] if len(parts) > 2 and parts[2] != "-" else None
        if self.kind == "steps":
            self.start = None if a is None else int(a)
            self.length = None if b is None else int(b)
        else:
            self.start = None if a is None else float(a)
            self.length = None if b is None else float(b)
        self.end_step = None

    def active(self, step, now_s):
        kind = self.kind
        if kind == "all":
            return True
        if kind == "steps":
            if self.start is None:
                self.start = step
            if self.length is None:
                self.length = 1
            return self.start <= step < self.start + self.length
        if kind == "time":
            if self.start is None:
                self.start = now_s
            if self.length is not None:
                return self.start <= now_s < self.start + self.length
            if self.start <= now_s:
                if self.end_step is None:
                    self.end_step = step + 1
                return step < self.end_step
        return False


def _timer_for(step):
    name = _timer_name
    if name == "default":
        if step == _CYCLE_START + 1:
            name = "cpu_time"
        elif step == _CYCLE_START + 2:
            name = "off_cpu_time"
        else:
            name = "total_time"
    if name == "cpu_time":
        return cpu_time
    if name == "off_cpu_time":
        return off_cpu_time
    return None  # cProfile's own clock


def _micros(t_ns):
    return (t_ns + _offset_ns) / 1000.0


def activate(env, t_ns):
    """Read the settings and start pre-step-zero profiling. Returns None or the reason it is off."""
    global enabled, _profile_dir, _host, _timer_name, _window, _offset_ns
    if env.get("SPROF_PYTHON_PROFILER", "") != "cprofile":
        return None
    _profile_dir = env.get("SPROF_PROFILE_DIR", "")
    if not _profile_dir:
        return "SPROF_PROFILE_DIR is not set"
    _host = env.get("SPROF_NODE_HOST", "") or "localhost"
    _timer_name = env.get("SPROF_CPROFILE_TIMER", "") or "total_time"
    if _timer_name not in ("total_time", "cpu_time", "off_cpu_time", "default"):
        return "bad SPROF_CPROFILE_TIMER %r" % _timer_name
    _window = Window(env.get("SPROF_WINDOW", "all"))
    _offset_ns = time.time_ns() - time.monotonic_ns()
    enabled = True
    _begin("prestepzero", "*", PHASE_START, None, t_ns)
    return None


def _begin(mode, step_text, phase, step, t_ns):
    global _profiler, _start
    import cProfile
    timer = _timer_for(step)
    profiler = cProfile.Profile() if timer is None else cProfile.Profile(timer)
    _start = (mode, step_text, phase, t_ns)
    _profiler = profiler
    profiler.enable()


def _stop(mode, step_text, phase, t_ns):
    """Stop the running profile and write it as the interval ending here."""
    global _profiler, _start
    profiler, start = _profiler, _start
    if profiler is None:
        return
    profiler.disable()
    _profiler = _start = None
    if t_ns <= start[3]:
        return  # a zero-length gap between two steps: no interval
    name = "%s-%s-%s-%r_%s-%s-%s-%r" % (
        start[0], start[1], start[2], _micros(start[3]), mode, step_text, phase, _micros(t_ns))
    _dump(profiler, name)


def _node_dir(framework):
    return os.path.join(_profile_dir, "framework", framework, "cprofile", "%d-%s" % (os.getpid(), _host))


def _dump(profiler, name):
    global _framework
    import pstats
    if _framework == "python" and "torch" in sys.modules:
        _framework = "pytorch"
        _move_to_pytorch()
    target = os.path.join(_node_dir(_framework), name)
    os.makedirs(target, exist_ok=True)
    path = os.path.join(target, "python_stats")
    temporary = path + ".tmp%d" % os.getpid()
    stats = pstats.Stats(profiler)
    if os.environ.get("SPROF_SPROF_FRAMES") != "1":
        stats.stats = without_sprof_functions(stats.stats, _sprof_files)
    stats.dump_stats(temporary)
    os.replace(temporary, path)
    if _framework == "python":
        _written.append(name)


# sprof's own files (this package and the sitecustomize beside it): their functions are left out
# of the stats, as every view of sampled stacks leaves them out.
_sprof_files = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
                os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sitecustomize.py"))


def _split(total, shares):
    """`total` calls split by `shares` (summing to 1) into whole numbers >= 0 that add up to it:
    the floors, and what is left to the largest remainders."""
    exact = [total * s for s in shares]
    parts = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: parts[i] - exact[i])
    for i in order[:max(0, total - sum(parts))]:
        parts[i] += 1
    return parts


def without_sprof_functions(stats, prefixes):
    """A pstats dict without the functions whose file starts with one of `prefixes`. A caller
    edge from such a function goes to its nearest callers outside them (split by their share of
    its cumulative time), so a function the DataLoader wrapper called is called by the loop."""
    def hidden(func):
        return func[0].startswith(prefixes)

    def visible_callers(func, weight, seen, out):
        callers = stats[func][4] if func in stats else {}
        total = sum(edge[3] for edge in callers.values())
        for caller, edge in callers.items():
            share = weight * (edge[3] / total if total > 0 else 1.0 / len(callers))
            if not hidden(caller):
                out[caller] = out.get(caller, 0.0) + share
            elif caller not in seen:
                visible_callers(caller, share, seen | {caller}, out)
        return out

    kept = {}
    for func, (cc, nc, tt, ct, callers) in stats.items():
        if hidden(func):
            continue
        new_callers = {}
        for caller, edge in callers.items():
            if not hidden(caller):
                new_callers[caller] = tuple(a + b for a, b in zip(new_callers.get(caller, (0, 0, 0.0, 0.0)), edge))
                continue
            targets = sorted(visible_callers(caller, 1.0, {caller}, {}).items())
            shares = [share for _, share in targets]
            for (target, share), nc_part, cc_part in zip(targets, _split(edge[0], shares), _split(edge[1], shares)):
                part = (nc_part, cc_part, edge[2] * share, edge[3] * share)
                new_callers[target] = tuple(a + b for a, b in zip(new_callers.get(target, (0, 0, 0.0, 0.0)), part))
        kept[func] = (cc, nc, tt, ct, new_callers)
    # pstats cannot load an empty dict (cProfile's own disable entry makes this unlikely).
    return kept or {("~", 0, "<sprof: no samples>"): (0, 0, 0.0, 0.0, {})}


def _move_to_pytorch():
    """The process turned out to train with torch: its earlier intervals move to
    framework/pytorch, where smdebug's readers look for a PyTorch job's stats."""
    old, new = _node_dir("python"), _node_dir("pytorch")
    for name in _written:
        os.makedirs(new, exist_ok=True)
        os.replace(os.path.join(old, name), os.path.join(new, name))
    del _written[:]
    for path in (old, os.path.dirname(old), os.path.dirname(os.path.dirname(old))):
        try:
            os.rmdir(path)
        except OSError:
            break


def _drop_profiler():
    """Stops and forgets the running profiler, if any, without letting its errors out."""
    global _profiler
    profiler, _profiler = _profiler, None
    if profiler is not None:
        try:
            profiler.disable()
        except Exception:
            pass


def _guarded(function, *args):
    """Profiling must never break the target: the first failure is reported and the mode stops."""
    global enabled
    try:
        function(*args)
    except Exception as e:
        enabled = False
        _drop_profiler()
        ch.warn_once("cprofile", "cProfile mode disabled: %s: %s" % (type(e).__name__, e))


def _boundary(mode, step, phase, t_ns):
    global _last_step_end
    step_text = str(step)
    _stop(mode, step_text, phase, t_ns)
    if phase == PHASE_STEPEND:
        _last_step_end = (mode, step_text)
    if not _closed and _window.active(step, (t_ns + _offset_ns) / 1e9):
        _begin(mode, step_text, phase, step, t_ns)


def step_begin(mode, global_step, t_ns):
    if enabled:
        _guarded(_boundary, mode, global_step, PHASE_STEPSTART, t_ns)


def step_end(mode, global_step, t_ns):
    if enabled:
        _guarded(_boundary, mode, global_step, PHASE_STEPEND, t_ns)


def _close(t_ns):
    global _closed
    _closed = True
    if _profiler is None and _last_step_end is not None:
        # Post-hook-close is profiled whatever the window (smdebug starts it at hook close).
        _begin(_last_step_end[0], _last_step_end[1], PHASE_STEPEND, None, t_ns)


def close(t_ns):
    """Hook close (after the open step has ended)."""
    if enabled and not _closed:
        _guarded(_close, t_ns)


def finish(t_ns):
    """Interpreter exit: the running profile becomes the last interval."""
    if enabled:
        if not _closed:
            _guarded(_close, t_ns)
        _guarded(_stop, "posthookclose", "*", PHASE_END, t_ns)


def after_fork_in_child(t_ns):
    """A forked child has its own timeline: drop the parent's profile, start pre-step-zero."""
    global _start, _last_step_end, _closed, _written, _framework, _window
    if not enabled:
        return
    _drop_profiler()
    _start = _last_step_end = None
    _closed = False
    _window = Window(os.environ.get("SPROF_WINDOW", "all"))
    _written = []
    _framework = "python"
    _guarded(_begin, "prestepzero", "*", PHASE_START, None, t_ns)
    # multiprocessing children leave through os._exit after running multiprocessing's
    # finalizers, never through atexit.
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        try:
            util.Finalize(None, lambda: finish(time.monotonic_ns()), exitpriority=-1000)
        except Exception:
            pass
