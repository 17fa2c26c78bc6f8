"""`record --step-fn NAME` inside the target (Python 3.8+): every call of the named function is one
step, back-to-back calls included, because the function is wrapped where it is defined.

Names (SPROF_STEP_FN, comma separated):
  module:function, module:Class.method   wrapped as soon as the module has been imported
  function, Class.method                 found at its first call (in __main__ or any module) and
                                         wrapped there: its module's global or its class's attribute

A bare name is found with sys.monitoring on 3.12+ (one callback per code object, then disabled)
and with a call-only trace function before (one Python call per new frame until every bare name
has been found, then removed); the call that was found is a step too. A reference taken before
that first call (`fit(train_step)`) keeps the unwrapped function: name it as module:function.

The step's mode is TRAIN or EVAL from `model.training` of the first torch.nn.Module among the
arguments (or the attributes of the first argument, a Trainer's self.model), else
SPROF_STEP_FN_MODE. A call made while another step call is running (recursion, another thread)
is part of that step. PyTorch's automatic steps stand down: the named function defines the steps.
"""
import functools
import sys
import threading

from . import _channel as ch
from . import _impl

_MODES = {"train": _impl.TRAIN, "eval": _impl.EVAL, "predict": _impl.PREDICT, "global": _impl.GLOBAL}

default_mode = _impl.TRAIN
_by_module = {}      # module name -> [attribute path (tuple), ...] still to wrap
_bare = {}           # bare spec ("train_step", "Trainer.train_step") -> last component
_wrapped = set()     # ids of the functions wrapped, so none is wrapped twice
_in_step = False     # a step call is running (a nested or concurrent call belongs to it)
_search = None       # the bare-name search in use: _MonitoringSearch or _TraceSearch
_locator = None      # where the torch module sits in a step's arguments (see _mode_of)
_get_ident = threading.get_ident  # _TraceSearch: the thread whose found call is pending


def activate(env):
    """Parse SPROF_STEP_FN and start wrapping; returns a problem text or None."""
    global default_mode
    default_mode = _MODES.get(env.get("SPROF_STEP_FN_MODE", "train"), _impl.TRAIN)
    for spec in env.get("SPROF_STEP_FN", "").split(","):
        spec = spec.strip()
        if not spec:
            continue
        if spec.startswith("__main__:"):
            spec = spec[len("__main__:"):]  # defined while the script runs: found at its first call
        if ":" in spec:
            module, _, path = spec.partition(":")
            if not module or not path:
                return "--step-fn %s: expected module:function or module:Class.method" % spec
            _by_module.setdefault(module, []).append(tuple(path.split(".")))
        else:
            _bare[spec] = spec.rsplit(".", 1)[-1]
    # The named function defines the steps: PyTorch's automatic ones stand down from the start
    # (not from the first call, which would leave one automatic step before it).
    _impl.explicit = True
    for module in list(_by_module):
        if module in sys.modules:
            _wrap_in_module(sys.modules[module])
    if _by_module:
        sys.meta_path.insert(0, _ImportHook())
    if _bare:
        _start_search()
    return None


def stop_search():
    """A process that runs no steps (a DataLoader worker) stops looking for bare names."""
    _bare.clear()
    if _search is not None:
        _search.stop()
        if isinstance(_search, _TraceSearch) and not _in_step:
            sys.settrace(None)


# ---- the wrapper ----------------------------------------------------------------------------

def _mode_of(args, kwargs):
    """TRAIN/EVAL from the first nn.Module in the arguments (or in the first argument's
    attributes); the place that held it is remembered, so later calls look only there."""
    global _locator
    torch = sys.modules.get("torch")
    if torch is None:
        return default_mode
    module_type = torch.nn.Module
    if _locator is not None:
        try:
            kind, where, attr = _locator
            holder = args[where] if kind == "arg" else kwargs[where]
            m = getattr(holder, attr) if attr else holder
            if isinstance(m, module_type):
                return _impl.TRAIN if m.training else _impl.EVAL
        except Exception:
            pass
        _locator = None
    candidates = [("arg", i, a) for i, a in enumerate(args)] + [("kw", k, v) for k, v in kwargs.items()]
    for kind, where, value in candidates:
        if isinstance(value, module_type):
            _locator = (kind, where, None)
            return _impl.TRAIN if value.training else _impl.EVAL
    if args:
        for attr, value in getattr(args[0], "__dict__", {}).items():
            if isinstance(value, module_type):
                _locator = ("arg", 0, attr)
                return _impl.TRAIN if value.training else _impl.EVAL
    return default_mode


def _begin(args, kwargs):
    """Open a step for this call; False when the call belongs to a step already running."""
    global _in_step
    if _in_step or not _impl.active:
        return False
    _in_step = True
    try:
        _impl.begin_step(_mode_of(args, kwargs), soon=True)
    except Exception as e:
        ch.warn_once("step-fn", "--step-fn: step markers failed: %s: %s" % (type(e).__name__, e))
    return True


def _end():
    global _in_step
    _in_step = False
    try:
        _impl.end_step(deferred=True)
    except Exception:
        pass


def _wrap(fn):
    if getattr(fn, "__sprof_step_fn__", False) or id(fn) in _wrapped:
        return fn
    _wrapped.add(id(fn))
    code = getattr(fn, "__code__", None)
    if code is not None and code.co_flags & 0x80:  # CO_COROUTINE: the step is the awaited call
        @functools.wraps(fn)
        async def step_fn(*args, **kwargs):
            if not _begin(args, kwargs):
                return await fn(*args, **kwargs)
            try:
                return await fn(*args, **kwargs)
            finally:
                _end()
    else:
        @functools.wraps(fn)
        def step_fn(*args, **kwargs):
            if not _begin(args, kwargs):
                return fn(*args, **kwargs)
            try:
                return fn(*args, **kwargs)
            finally:
                _end()
    step_fn.__sprof_step_fn__ = True
    return step_fn


def _replace(owner, name, is_class):
    """Wrap owner.name (a module's global or a class attribute) in place; True when done."""
    namespace = vars(owner) if is_class else owner
    raw = namespace.get(name)
    if raw is None:
        return False
    if isinstance(raw, staticmethod):
        setattr(owner, name, staticmethod(_wrap(raw.__func__)))
    elif isinstance(raw, classmethod):
        setattr(owner, name, classmethod(_wrap(raw.__func__)))
    elif callable(raw):
        wrapped = _wrap(raw)
        if is_class:
            setattr(owner, name, wrapped)
        else:
            namespace[name] = wrapped
    else:
        return False
    return True


def _wrap_in_module(module):
    paths = _by_module.get(module.__name__, [])
    for path in list(paths):
        owner, is_class = vars(module), False
        try:
            for part in path[:-1]:
                owner = owner[part] if not is_class else getattr(owner, part)
                is_class = True
            done = _replace(owner, path[-1], is_class)
        except Exception:
            done = False
        if done:
            paths.remove(path)
        else:
            ch.warn_once("step-fn:" + module.__name__,
                         "--step-fn %s:%s: no such function in %s" % (module.__name__, ".".join(path), module.__name__))
    if not paths:
        _by_module.pop(module.__name__, None)


class _ImportHook(object):
    """Wraps module:function names right after their module has executed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _by_module:
            return None
        for finder in list(sys.meta_path):
            if finder is self or getattr(finder, "find_spec", None) is None:
                continue
            try:
                spec = finder.find_spec(fullname, path, target)
            except Exception:
                continue
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                continue
            loader, original = spec.loader, spec.loader.exec_module

            def exec_module(module):
                try:
                    del loader.exec_module
                except AttributeError:
                    pass
                original(module)
                try:
                    _wrap_in_module(module)
                except Exception as e:
                    ch.warn_once("step-fn", "--step-fn: cannot wrap in %s: %s" % (fullname, e))

            loader.exec_module = exec_module
            return spec
        return None


# ---- finding bare names at their first call -------------------------------------------------

def _matches(spec, code, frame):
    qualname = getattr(code, "co_qualname", None)  # 3.11+
    if qualname is not None:
        return qualname == spec or qualname.endswith("." + spec)
    if code.co_name != _bare[spec]:
        return False
    if "." not in spec:
        return True
    # Before 3.11 a code object knows only its bare name: Trainer.train_step must be found in a
    # class of that name (the first argument's, or one at module level).
    class_name = spec.rsplit(".", 2)[-2]
    return any(k.__name__ == class_name for k in _classes_holding(code, frame))


def _classes_holding(code, frame):
    """The classes whose attribute code.co_name is the function of this code."""
    owners = []
    if code.co_argcount:
        first = frame.f_locals.get(code.co_varnames[0])
        owners.append(first if isinstance(first, type) else type(first))
    qualname = getattr(code, "co_qualname", "")
    if "." in qualname and "<locals>" not in qualname:
        owners.append(frame.f_globals.get(qualname.split(".")[0]))
    found = []
    for owner in owners:
        for klass in getattr(owner, "__mro__", ()):
            raw = vars(klass).get(code.co_name)
            raw = getattr(raw, "__func__", raw)
            if getattr(raw, "__code__", None) is code and klass not in found:
                found.append(klass)
    return found


def _found(code, frame):
    """The first call of a bare name's code: wrap it where it is defined. Returns whether this
    call itself opened a step (so the search ends it when the call returns)."""
    wrapped = False
    for spec in [s for s in _bare if _matches(s, code, frame)]:
        name = code.co_name
        done = False
        fn = frame.f_globals.get(name)
        if getattr(fn, "__code__", None) is code:
            done = _replace(frame.f_globals, name, False)
        else:
            for klass in _classes_holding(code, frame):
                done = _replace(klass, name, True)
                break
        if not done:
            ch.warn_once("step-fn:" + spec, "--step-fn %s: found at %s:%d but not where it can be wrapped "
                         "(a nested function?); name it as module:function" % (spec, code.co_filename, code.co_firstlineno))
        wrapped = wrapped or done
        del _bare[spec]
    if not wrapped:
        return False
    f_locals = frame.f_locals
    return _begin(tuple(f_locals.get(n) for n in code.co_varnames[:code.co_argcount]), {})


def _start_search():
    global _search
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        _search = _MonitoringSearch(monitoring)
    else:
        _search = _TraceSearch()
    _search.start()


class _MonitoringSearch(object):
    """3.12+: PY_START for every code object once (DISABLE after the first look), and the found
    call's own return or unwind."""

    def __init__(self, monitoring):
        self.m = monitoring
        self.tool = None
        self.pending = {}  # code -> frame of the found call that opened a step

    def start(self):
        m = self.m
        for tool in (m.PROFILER_ID, 3, 4):
            if m.get_tool(tool) is None:
                self.tool = tool
                break
        if self.tool is None:
            ch.warn_once("step-fn", "--step-fn: sys.monitoring has no free tool id; name the function as module:function")
            return
        m.use_tool_id(self.tool, "sprof --step-fn")
        E = m.events
        m.register_callback(self.tool, E.PY_START, self.on_start)
        m.register_callback(self.tool, E.PY_RETURN, self.on_return)
        m.register_callback(self.tool, E.PY_UNWIND, self.on_unwind)
        m.set_events(self.tool, E.PY_START)

    def on_start(self, code, offset):
        try:
            if self.tool is None or not any(_matches(s, code, sys._getframe(1)) for s in _bare):
                return self.m.DISABLE
            frame = sys._getframe(1)
            if _found(code, frame):
                self.pending[code] = frame
                self.m.set_local_events(self.tool, code, self.m.events.PY_RETURN)
            if not _bare:
                self.stop()
        except Exception as e:
            ch.warn_once("step-fn", "--step-fn: search failed: %s: %s" % (type(e).__name__, e))
            self.free()
        return self.m.DISABLE

    def on_return(self, code, offset, value):
        self._returned(code, sys._getframe(1))

    def on_unwind(self, code, offset, exc):
        self._returned(code, sys._getframe(1))

    def _returned(self, code, frame):
        if self.pending.get(code) is frame:
            del self.pending[code]
            _end()
            self.m.set_local_events(self.tool, code, 0)
            if not self.pending and not _bare:
                self.free()

    def stop(self):
        if self.tool is not None:
            self.m.set_events(self.tool, self.m.events.PY_UNWIND if self.pending else 0)
            if not self.pending:
                self.free()

    def free(self):
        if self.tool is not None:
            self.m.set_events(self.tool, 0)
            self.m.free_tool_id(self.tool)
            self.tool = None


class _TraceSearch(object):
    """Before 3.12: a call-only trace function (no line events: it returns None for every frame
    but the found one) until every bare name has been found."""

    def __init__(self):
        self.names = set()
        self.active = False
        self.found_in = None  # the thread whose found call still needs its "return" event

    def start(self):
        if sys.gettrace() is not None:
            ch.warn_once("step-fn", "--step-fn: a trace function (debugger, coverage) is set; "
                         "name the function as module:function")
            return
        self.names = set(_bare.values())
        self.active = True
        sys.settrace(self.on_call)
        threading.settrace(self.on_call)

    def on_call(self, frame, event, arg):
        if not _bare and _get_ident() != self.found_in:
            sys.settrace(None)  # a thread started during the search: it looks no more
            return None
        if event != "call" or frame.f_code.co_name not in self.names:
            return None
        try:
            code = frame.f_code
            if not any(_matches(s, code, frame) for s in _bare):
                return None
            opened = _found(code, frame)
            if not _bare:
                self.stop()
            if opened:
                self.found_in = _get_ident()
                return self.on_found_event
            if not _bare:
                sys.settrace(None)
        except Exception as e:
            ch.warn_once("step-fn", "--step-fn: search failed: %s: %s" % (type(e).__name__, e))
            self.stop()
            sys.settrace(None)
        return None

    def on_found_event(self, frame, event, arg):
        if event == "return":  # also when the call raised
            _end()
            self.found_in = None
            if not _bare:
                sys.settrace(None)
            return None
        return self.on_found_event

    def stop(self):
        # The found call's frame needs tracing on until its "return" (on_found_event removes the
        # trace function then); new threads need none.
        if self.active:
            self.active = False
            threading.settrace(None)
