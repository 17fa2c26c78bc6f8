"""Activation of sprof in a target process (Python 3.8+): open the marker channel, say hello,
arrange for forks and interpreter exit, and hook torch's import. Idempotent.

Environment (set by `sprof record`, see docs/markers.md):
  SPROF_MARKER_FD     the inherited write end of the recorder's pipe
  SPROF_MARKER_INODE  that pipe's inode, to tell it from an unrelated file on a reused fd number
  SPROF_MARKER_PATH   /proc/<recorder pid>/fd/<n>: the same pipe, for processes that did not
                      inherit the fd (subprocess.Popen closes fds by default, spawn workers)
  SPROF_TORCH         "0" turns automatic PyTorch detection off
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
            from . import _torch
            _torch.install()
        except Exception as e:
            ch.warn_once("torch", "PyTorch instrumentation disabled: %s: %s" % (type(e).__name__, e))


def _stand_down():
    _impl.active = False


def _at_exit():
    try:
        _impl.close(b"exit")
    except Exception:
        pass


def _after_fork_in_child():
    # The child inherits our descriptors and patches; it starts its own step sequence and
    # tags its markers with its own pid.
    try:
        ch.after_fork_in_child()
        _impl.reset_steps()
        torch_hooks = sys.modules.get(__package__ + "._torch")
        if torch_hooks is not None:
            torch_hooks.after_fork_in_child()
        if _impl.active:
            _impl.hello(b"fork")
    except Exception:
        pass
