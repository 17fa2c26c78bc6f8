"""Per-process step state and the markers it emits (Python 3.8+, loaded only under sprof).

One process has one step sequence, whichever thread drives it: at most one step is open, a new
step closes the open one, a mode change closes a step of another mode. Step numbers follow
smdebug: each mode counts its own steps from 0, and the global step counts every step of every
mode from 0 (smdebug's stats directory names use the global step, its Step:ModeKeys.* trace
events the mode step).
"""
import os
import sys

from . import _channel as ch
from . import _stats

TRAIN, EVAL, PREDICT, GLOBAL = 1, 2, 3, 4
MODE_NAMES = {TRAIN: b"train", EVAL: b"eval", PREDICT: b"predict", GLOBAL: b"global"}
MODE_TEXT = {TRAIN: "train", EVAL: "eval", PREDICT: "predict", GLOBAL: "global"}
SCOPES = {"global": b"g", "process": b"p", "thread": b"t", "g": b"g", "p": b"p", "t": b"t"}

active = False     # the channel is open and close() has not run
explicit = False   # the program drives steps through the sprof API: automatic steps stand down
mode = GLOBAL
mode_steps = {TRAIN: -1, EVAL: -1, PREDICT: -1, GLOBAL: -1}
global_step = -1
open_mode = 0      # mode of the open step, 0 when none is open
open_step = -1
open_global = -1
open_t = 0         # when the open step began
forward_done = False
paused = False
cprof = None       # sprof._cprofile in deterministic mode (--python-profiler cprofile)

mono = ch.mono
who = ch.who
send = ch.send


def reset_steps():
    global mode, global_step, open_mode, open_step, open_global, forward_done, paused, explicit
    mode = GLOBAL
    for m in mode_steps:
        mode_steps[m] = -1
    global_step = -1
    open_mode = 0
    open_step = open_global = -1
    forward_done = paused = explicit = False


def hello_line(reason):
    return b"hello %d %s %d %d %s %s %s\n" % (
        mono(), who(), ch.PROTOCOL_VERSION, os.getppid(), reason,
        ch.esc("%d.%d.%d" % sys.version_info[:3]), ch.esc(sys.executable or "-", ch.MAX_TEXT))


def hello(reason):
    send(hello_line(reason))


def set_mode(m, t=None):
    """Switch mode; a step of another mode that is still open ends here."""
    global mode
    if m == mode:
        return
    if t is None:
        t = mono()
    if open_mode and open_mode != m:
        end_step(t)
    mode = m
    send(b"mode %d %s %s\n" % (t, who(), MODE_NAMES[m]))


def begin_step(m, step=None, t=None, soon=False):
    """Start a step of mode m (ending the open one); step overrides the mode's own counter.
    soon: steps closer than ch.BATCH_NS share a write (ch.send_soon)."""
    global global_step, open_mode, open_step, open_global, forward_done, open_t
    if t is None:
        t = mono()
    if open_mode:
        end_step(t)
    if m != mode:
        set_mode(m, t)
    n = mode_steps[m] + 1 if step is None else step
    mode_steps[m] = n
    global_step += 1
    open_mode, open_step, open_global, forward_done, open_t = m, n, global_step, False, t
    line = b"sb %d %s %s %d %d\n" % (t, who(), MODE_NAMES[m], n, global_step)
    if soon:
        ch.send_soon(line, t)
    else:
        send(line)
    if cprof is not None:
        cprof.step_begin(MODE_TEXT[m], global_step, t)


def end_step(t=None, deferred=False):
    """End the open step. deferred: the STEP_END line goes out with the next marker (the next
    step's begin, at the latest the exit's close): one system call per step instead of two."""
    global open_mode
    if not open_mode:
        return
    if t is None:
        t = mono()
    m, open_mode = open_mode, 0
    (ch.defer if deferred else send)(b"se %d %s %s %d %d\n" % (t, who(), MODE_NAMES[m], open_step, open_global))
    _stats.step(MODE_TEXT[m], t - open_t)
    if cprof is not None:
        cprof.step_end(MODE_TEXT[m], open_global, t)


def forward_pass_end(t=None):
    """FORWARD_PASS_END of the open step; only the first one of a step counts."""
    global forward_done
    if not open_mode or forward_done:
        return
    forward_done = True
    if t is None:
        t = mono()
    ch.defer(b"ph %d %s forwardpassend %s %d %d\n" % (
        t, who(), MODE_NAMES[open_mode], open_step, open_global))


def pause(reason=b"pause"):
    global paused
    if paused:
        return
    paused = True
    send(b"pause %d %s %s\n" % (mono(), who(), reason))


def resume(reason=b"resume"):
    global paused
    if not paused:
        return
    paused = False
    send(b"resume %d %s %s\n" % (mono(), who(), reason))


def counter(domain, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = float(value)
    text = b"%d" % value if isinstance(value, int) else repr(float(value)).encode()
    send(b"ctr %d %s %s %s %s\n" % (mono(), who(), ch.esc(domain), ch.esc(name), text))
    _stats.counter(domain, name, value)


def mark(domain, name, scope):
    send(b"mark %d %s %s %s %s\n" % (
        mono(), who(), ch.esc(domain), ch.esc(name), SCOPES.get(scope, b"p")))
    _stats.marker(domain, name)


def timed(kind, domain, name, t_begin):
    """A Task, Frame or Event ended now (kind b"task", b"frame" or b"event")."""
    t = mono()
    send(b"rng %d %s %d %s %s %s\n" % (t, who(), t_begin, kind, ch.esc(domain), ch.esc(name)))
    _stats.timed(kind.decode(), domain, name, t - t_begin)


def framework(name, version):
    send(b"fw %d %s %s %s\n" % (mono(), who(), ch.esc(name), ch.esc(version)))


def close(reason):
    """Hook close: the open step ends, POST_HOOK_CLOSE starts. Later step markers are ignored."""
    global active
    if not active:
        return
    t = mono()
    end_step(t)
    active = False
    if cprof is not None:
        cprof.close(t)
    send(b"close %d %s %s\n" % (t, who(), reason))


def user_error(key, message):
    """A misuse of the API: reported once per kind, never raised into the program."""
    ch.warn_once("api:" + key, message)
