"""sprof's explicit API: tell `sprof record` where training steps, modes and phases are.

Outside `sprof record` every function here is a cheap no-op, so the calls can stay in a
program. Under `sprof record` each call sends one marker to the recorder (docs/python-api.md,
docs/markers.md). Nothing here ever raises into the program: a misuse (an unknown mode, say) is
reported once on stderr with a `sprof:` prefix and ignored.

    import sprof
    for epoch in range(epochs):
        sprof.set_mode(sprof.TRAIN)
        for batch in train_loader:
            with sprof.step_context():
                loss = model(batch)
                sprof.forward_pass_end()
                loss.backward(); optimizer.step()

This file is kept valid Python 2.7 syntax so that importing it never fails; the markers need
Python 3.8+.
"""
import os as _os
import sys as _sys

__all__ = [
    "ModeKeys", "TRAIN", "EVAL", "PREDICT", "GLOBAL", "StepPhase",
    "enabled", "set_mode", "get_mode", "step", "step_end", "step_context",
    "forward_pass_end", "phase", "pause", "resume", "set_state",
    "Domain", "Counter", "Marker", "Task", "Frame", "Event", "counter", "mark", "close", "set_epoch",
]

__version__ = "1"

_rt = None  # sprof._impl once the bootstrap is active in this process


class _Mode(object):
    __slots__ = ("name", "value")

    def __init__(self, name, value):
        self.name = name
        self.value = value

    def __repr__(self):
        return "<ModeKeys.%s: %d>" % (self.name, self.value)

    def __str__(self):
        return "ModeKeys." + self.name


class ModeKeys(object):
    """smdebug's modes (smdebug.core.modes.ModeKeys): TRAIN, EVAL, PREDICT, GLOBAL."""
    TRAIN = _Mode("TRAIN", 1)
    EVAL = _Mode("EVAL", 2)
    PREDICT = _Mode("PREDICT", 3)
    GLOBAL = _Mode("GLOBAL", 4)


TRAIN = ModeKeys.TRAIN
EVAL = ModeKeys.EVAL
PREDICT = ModeKeys.PREDICT
GLOBAL = ModeKeys.GLOBAL
_MODES_BY_VALUE = {1: TRAIN, 2: EVAL, 3: PREDICT, 4: GLOBAL}
_MODES_BY_NAME = {"TRAIN": 1, "EVAL": 2, "PREDICT": 3, "GLOBAL": 4}


class StepPhase(object):
    """smdebug's step phases (smdebug.profiler.python_profile_utils.StepPhase)."""
    START = "start"
    STEP_START = "stepstart"
    FORWARD_PASS_END = "forwardpassend"
    STEP_END = "stepend"
    END = "end"


def _mode_value(mode):
    """1..4 for a ModeKeys member, a name ("train", "ModeKeys.EVAL") or any object with a
    matching .name (smdebug's own ModeKeys); None when it is none of these."""
    name = getattr(mode, "name", mode)
    if isinstance(name, str):
        value = _MODES_BY_NAME.get(name.upper().replace("MODEKEYS.", ""))
        if value is not None:
            return value
    return None


def _report(error):
    # A bug in sprof, not in the program: say so once, keep the program running.
    try:
        from . import _channel
        _channel.warn_once("internal:" + type(error).__name__,
                           "internal error in the sprof API: %s: %s"
                           % (type(error).__name__, error))
    except Exception:
        pass


def _bad_mode(function, mode):
    _rt.user_error("mode", "sprof.%s: unknown mode %r (use sprof.TRAIN, EVAL, PREDICT or GLOBAL, "
                           "or their names); ignored" % (function, mode))


def _bad_step(function, step):
    _rt.user_error("step", "sprof.%s: step must be a non-negative int, got %r; ignored"
                   % (function, step))


def _step_number(step):
    if step is None:
        return -1
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return None
    return step


def enabled():
    """True when this process is running under `sprof record` with markers on."""
    rt = _rt
    return rt is not None and rt.active


def set_mode(mode):
    """Set the mode of the following steps. A step of another mode that is still open ends."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        m = _mode_value(mode)
        if m is None:
            return _bad_mode("set_mode", mode)
        rt.explicit = True
        rt.set_mode(m)
    except Exception as e:
        _report(e)


def get_mode():
    """The current mode (GLOBAL until set; automatic PyTorch detection also sets it)."""
    rt = _rt
    if rt is None:
        return GLOBAL
    return _MODES_BY_VALUE.get(rt.mode, GLOBAL)


def step(mode=None, step=None):
    """A step boundary: the open step (if any) ends and the next one starts now.

    mode: the new step's mode (default: the current mode). step: its number (default: the
    mode's previous step + 1, from 0). The last step ends at step_end(), a mode change, close()
    or interpreter exit."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        m = rt.mode
        if mode is not None:
            m = _mode_value(mode)
            if m is None:
                return _bad_mode("step", mode)
        n = _step_number(step)
        if n is None:
            return _bad_step("step", step)
        rt.explicit = True
        rt.begin_step(m, None if n < 0 else n)
    except Exception as e:
        _report(e)


def step_end():
    """End the open step now (its STEP_END); the time until the next step is a gap."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        rt.explicit = True
        rt.end_step()
    except Exception as e:
        _report(e)


class step_context(object):
    """`with sprof.step_context():` one step from entering the block to leaving it (also when
    the block raises). Arguments as for step(); step_context(5) is step number 5."""
    __slots__ = ("_step", "_mode", "_global")

    def __init__(self, step=None, mode=None):
        self._step = step
        self._mode = mode
        self._global = None

    def __enter__(self):
        step(mode=self._mode, step=self._step)
        rt = _rt
        if rt is not None and rt.active and rt.open_mode:
            self._global = rt.open_global
        return self

    def __exit__(self, exc_type, exc, tb):
        rt = _rt
        if rt is not None and rt.active and self._global is not None:
            try:
                # Only our own step: a nested step() inside the block has already ended it.
                if rt.open_mode and rt.open_global == self._global:
                    rt.end_step()
            except Exception as e:
                _report(e)
        return False


def forward_pass_end():
    """FORWARD_PASS_END of the open step (the first call per step counts)."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        rt.explicit = True
        rt.forward_pass_end()
    except Exception as e:
        _report(e)


def phase(name):
    """A step phase by name. Within a step only StepPhase.FORWARD_PASS_END is a phase of its
    own; STEP_START and STEP_END are step() and step_end()."""
    rt = _rt
    if rt is None or not rt.active:
        return
    if name == StepPhase.FORWARD_PASS_END:
        return forward_pass_end()
    if name == StepPhase.STEP_START:
        return step()
    if name == StepPhase.STEP_END:
        return step_end()
    rt.user_error("phase", "sprof.phase: unknown phase %r (use sprof.StepPhase.FORWARD_PASS_END, "
                           "STEP_START or STEP_END); ignored" % (name,))


def pause(profile_process="worker"):
    """Pause profiling of this process (MXNet's profiler.pause): the recorder leaves the
    samples until resume() out of the profile. Steps keep counting."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        rt.pause()
    except Exception as e:
        _report(e)


def resume(profile_process="worker"):
    """Resume profiling after pause() (MXNet's profiler.resume)."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        rt.resume()
    except Exception as e:
        _report(e)


def set_state(state="stop", profile_process="worker"):
    """MXNet's profiler.set_state: "run" profiles, "stop" pauses."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        if state == "run":
            rt.resume(b"run")
        elif state == "stop":
            rt.pause(b"stop")
        else:
            rt.user_error("state", "sprof.set_state: state must be 'run' or 'stop', got %r; "
                                   "ignored" % (state,))
    except Exception as e:
        _report(e)


def _domain_name(domain):
    if domain is None:
        return "sprof"
    return getattr(domain, "name", domain)


class Domain(object):
    """A namespace for counters and markers (MXNet's profiler.Domain)."""

    def __init__(self, name):
        self.name = name

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def __str__(self):
        return str(self.name)


class Counter(object):
    """A named value drawn as a counter track in the timeline (MXNet's profiler.Counter):
    every set_value/increment/decrement (and += / -=) records the new value."""

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = name
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        self.value = value
        rt = _rt
        if rt is None or not rt.active:
            return
        try:
            rt.counter(_domain_name(self.domain), self.name, value)
        except (TypeError, ValueError):
            rt.user_error("counter", "sprof.Counter %r: value must be a number, got %r; ignored"
                          % (self.name, value))
        except Exception as e:
            _report(e)

    def increment(self, delta=1):
        self.set_value(self.value + delta)

    def decrement(self, delta=1):
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self


class Marker(object):
    """An instant event in the timeline (MXNet's profiler.Marker)."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = name

    def mark(self, scope="process"):
        """scope: "global", "process" or "thread" (Chrome trace instant scope g/p/t)."""
        mark(self.name, scope, self.domain)


class Task(object):
    """A named span of work in a domain (MXNet's profiler.Task): start() and stop(), or a with
    block. Drawn as a slice in the timeline; sprof.dumps() and `sprof markers` total them."""

    _kind = b"task"

    def __init__(self, domain, name):
        self.domain = domain
        self.name = name
        self._begin = None

    def start(self):
        rt = _rt
        if rt is None or not rt.active:
            return
        self._begin = rt.mono()

    def stop(self):
        rt = _rt
        if rt is None or not rt.active:
            return
        if self._begin is None:
            return rt.user_error("range", "sprof.%s %r: stop() without start(); ignored"
                                 % (type(self).__name__, self.name))
        try:
            begin, self._begin = self._begin, None
            rt.timed(self._kind, _domain_name(self.domain), self.name, begin)
        except Exception as e:
            _report(e)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False


class Frame(Task):
    """A frame, e.g. one iteration of a loop (MXNet's profiler.Frame): as Task."""

    _kind = b"frame"


class Event(Task):
    """A span with a name and no domain (MXNet's profiler.Event): as Task."""

    _kind = b"event"

    def __init__(self, name):
        Task.__init__(self, None, name)


def counter(name, value, domain=None):
    """Record a counter value once (see Counter)."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        rt.counter(_domain_name(domain), name, value)
    except (TypeError, ValueError):
        rt.user_error("counter", "sprof.counter %r: value must be a number, got %r; ignored"
                      % (name, value))
    except Exception as e:
        _report(e)


def set_epoch(epoch):
    """Say which epoch the training loop is in (0 for the first), for the {epoch} and
    {batch_in_epoch} of `record --trace-filename`. The same as counter("epoch", epoch) in the
    "sprof" domain; once called, new passes over a PyTorch DataLoader no longer count epochs."""
    rt = _rt
    if rt is None or not rt.active:
        return
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        return rt.user_error("epoch", "sprof.set_epoch: epoch must be a whole number >= 0, got %r; "
                                      "ignored" % (epoch,))
    try:
        rt.counter("sprof", "epoch", epoch)
    except Exception as e:
        _report(e)


def mark(name, scope="process", domain=None):
    """Record an instant marker now (see Marker)."""
    rt = _rt
    if rt is None or not rt.active:
        return
    try:
        if scope not in rt.SCOPES:
            return rt.user_error("scope", "sprof.mark: scope must be 'global', 'process' or "
                                          "'thread', got %r; ignored" % (scope,))
        rt.mark(_domain_name(domain), name, scope)
    except Exception as e:
        _report(e)


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """What this process recorded so far, aggregated, as MXNet's profiler.dumps: steps per mode,
    tasks, frames and events (count, total, min, max and average time in ms), markers (count)
    and counters (count, min,
    max, average and last value). format "table" or "json"; sort_by "total", "avg", "min", "max"
    or "count"; reset=True starts the aggregates afresh. `sprof markers DIR` prints the same table
    after the run. Empty outside `sprof record`."""
    from . import _stats
    return _stats.dumps(reset, format, sort_by, ascending)


def dump(reset=False, format="table", sort_by="total", ascending=False, file=None):
    """Print dumps(...) (to sys.stdout, or file)."""
    (file or _sys.stdout).write(dumps(reset, format, sort_by, ascending))


def close():
    """Close the hook now, as smdebug's hook.close(): the open step ends and POST_HOOK_CLOSE
    starts. Runs by itself at interpreter exit."""
    rt = _rt
    if rt is None:
        return
    try:
        rt.close(b"api")
    except Exception as e:
        _report(e)


def _activate_from_import():
    # Normally sprof's sitecustomize has activated the bootstrap before the program runs. Under
    # `python -S` (no site) the first `import sprof` does it instead.
    if _rt is not None or _sys.version_info < (3, 8):
        return
    env = _os.environ
    if not (env.get("SPROF_MARKER_FD") or env.get("SPROF_MARKER_PATH")):
        return
    try:
        from . import _bootstrap
        _bootstrap.activate()
    except Exception as e:
        try:
            _sys.stderr.write("sprof: bootstrap disabled: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass


_activate_from_import()
