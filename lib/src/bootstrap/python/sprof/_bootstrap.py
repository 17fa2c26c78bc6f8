"""Activation of sprof in a target process (Python 3.8+): open the marker channel, say hello,
arrange for forks and interpreter exit, and hook torch's import. Idempotent.

Environment (set by `sprof record`, see docs/markers.md):
  SPROF_MARKER_FD     the inherited write end of the recorder's pipe
  SPROF_MARKER_INODE  that pipe's inode, to tell it from an unrelated file on a reused fd number
  SPROF_MARKER_PATH   /proc/<recorder pid>/fd/<n>: the same pipe, for processes that did not
                      inherit the fd (subprocess.Popen closes fds by default, spawn workers)
  SPROF_TORCH         "0" turns automatic PyTorch detection off
  SPROF_STEP_FN, SPROF_STEP_FN_MODE
                      --step-fn's names and --step-fn-mode (_step_fn.py)
  SPROF_PYTHON_PROFILER, SPROF_PROFILE_DIR, SPROF_NODE_HOST, SPROF_CPROFILE_TIMER, SPROF_WINDOW
                      deterministic mode (_cprofile.py)
"""
import atexit
import os
import sys

from . import _channel as ch
from . import _impl

_activated = False


def activate():
    global _activated
    if _activated:
        return
    _activated = True
    env = os.environ
    problem = ch.open_channel(env, lambda: _impl.hello_line(b"start"))
    if problem is not None:
        ch.warn_once("channel", "markers disabled: cannot open the marker channel (%s)" % problem)
        return
    _impl.active = True
    ch.on_failure = _stand_down
    package = sys.modules.get(__package__)
    if package is not None:
        package._rt = _impl
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    if env.get("SPROF_TORCH", "1") != "0":
        try:
            torch = sys.modules.get("torch")
            if torch is not None:  # imported before the bootstrap ran (-S, then import sprof)
                _torch_imported(torch, late=True)
            else:
                sys.meta_path.insert(0, TorchImportHook())
        except Exception as e:
            ch.warn_once("torch", "PyTorch instrumentation disabled: %s: %s"
                         % (type(e).__name__, e))
    if env.get("SPROF_STEP_FN"):
        try:
            from . import _step_fn
            problem = _step_fn.activate(env)
            if problem is not None:
                ch.warn_once("step-fn", problem)
        except Exception as e:
            ch.warn_once("step-fn", "--step-fn disabled in the target: %s: %s" % (type(e).__name__, e))
    if env.get("SPROF_PYTHON_PROFILER", "") == "cprofile":
        # Last: pre-step-zero profiling starts here.
        try:
            from . import _cprofile
            problem = _cprofile.activate(env, ch.mono())
            if problem is not None:
                ch.warn_once("cprofile", "cProfile mode disabled: %s" % problem)
            elif _cprofile.enabled:
                _impl.cprof = _cprofile
        except Exception as e:
            ch.warn_once("cprofile", "cProfile mode disabled: %s: %s" % (type(e).__name__, e))


def _torch_imported(torch, late=False):
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TorchImportHook)]
    try:
        from . import _torch
        _torch.after_import(torch, late)
    except Exception as e:
        ch.warn_once("torch", "PyTorch instrumentation disabled: %s: %s" % (type(e).__name__, e))


class TorchImportHook(object):
    """A meta path finder that answers only for "torch": it lets the real finders locate it and
    patches torch right after torch's own __init__ has run. One-shot."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None:
                return None
            loader = spec.loader
            original = loader.exec_module

            def exec_module(module):
                try:
                    del loader.exec_module  # back to the loader class's own method
                except AttributeError:
                    pass
                original(module)  # torch's own errors propagate unchanged
                _torch_imported(module)

            loader.exec_module = exec_module
            return spec
        except Exception as e:
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
            ch.warn_once("torch", "PyTorch instrumentation disabled: import hook failed: %s: %s"
                         % (type(e).__name__, e))
            return None


def _stand_down():
    _impl.active = False


def _at_exit():
    try:
        _impl.close(b"exit")
    except Exception:
        pass
    cprof = _impl.cprof
    if cprof is not None:
        cprof.finish(ch.mono())


def _after_fork_in_child():
    # The child inherits our descriptors and patches; it starts its own step sequence and
    # tags its markers with its own pid.
    try:
        ch.after_fork_in_child()
        _impl.reset_steps()
        if __package__ + "._step_fn" in sys.modules:
            _impl.explicit = True  # --step-fn's functions define the steps here too
        torch_hooks = sys.modules.get(__package__ + "._torch")
        if torch_hooks is not None:
            torch_hooks.after_fork_in_child()
        if _impl.active:
            _impl.hello(b"fork")
        if _impl.cprof is not None:
            _impl.cprof.after_fork_in_child(ch.mono())
    except Exception:
        pass
