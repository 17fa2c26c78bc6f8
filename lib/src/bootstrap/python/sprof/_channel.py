"""The marker channel: one line per marker, written with one os.write to the recorder's pipe.

Wire format: docs/markers.md. Every line is shorter than PIPE_BUF (4096 bytes), so a write is
atomic: lines of different processes and threads never interleave, and a non-blocking write
either writes the whole line or fails with EAGAIN.

Python 3.8+ only (imported by the bootstrap, never on older interpreters).
"""
import os
import stat
import sys
import time
import _thread

PROTOCOL_VERSION = 1
MAX_FIELD = 200          # characters kept of a user-supplied name (at most 800 bytes escaped)
MAX_TEXT = 500           # characters kept of a message or path (at most 2000 bytes escaped)
MAX_WRITE = 4096         # PIPE_BUF: writes up to this size are atomic
MAX_PENDING = 2048       # deferred markers are flushed before they grow past this
BATCH_NS = 1000000       # send_soon(): markers closer than this share a write
FULL_PIPE_WAIT_S = 0.05  # how long a write waits once for a full pipe before markers are dropped

mono = time.monotonic_ns
_native_id = _thread.get_native_id
_write = os.write

fd = -1          # our write end (non-blocking, close-on-exec), -1 when the channel is off
pid = os.getpid()
_guard_fd = -1   # a read end we hold so that a writer never sees EPIPE/SIGPIPE (see open_channel)
_dropped = 0     # markers lost to a full pipe, reported with the next marker that gets through
_pending = b""   # deferred markers, written together with the next sent one
_last_soon = 0   # when send_soon() last wrote
_congested = False
_reported = set()
on_failure = None  # called once when the channel closes for good (the bootstrap stands down)
_tls = _thread._local()  # per thread: b"<pid> <native tid>", the middle of every marker line


def who():
    """b"<pid> <tid>" of the calling thread. Cached per thread: get_native_id() is a system
    call and formatting two ints on every marker is a measurable share of its cost."""
    try:
        return _tls.who
    except AttributeError:
        value = _tls.who = b"%d %d" % (pid, _native_id())
        return value

# Percent-encode the bytes that would break the line format (controls, space, '%', DEL).
_ESCAPES = {c: "%%%02X" % c for c in range(0x21)}
_ESCAPES[0x25] = "%25"
_ESCAPES[0x7F] = "%7F"


def esc(value, limit=MAX_FIELD):
    """A user-supplied string as one field: truncated, percent-encoded UTF-8. The empty string
    is spelled "-", so a field that is exactly "-" is spelled "%2D"."""
    s = value if isinstance(value, str) else str(value)
    if len(s) > limit:
        s = s[:limit]
    if not s:
        return b"-"
    if s == "-":
        return b"%2D"
    return s.translate(_ESCAPES).encode("utf-8", "backslashreplace")


def warn_once(key, message):
    """Report a problem once per key on stderr with the `sprof:` prefix, and to the recorder."""
    if key in _reported:
        return
    _reported.add(key)
    try:
        sys.stderr.write("sprof: %s\n" % message)
        sys.stderr.flush()
    except Exception:
        pass
    if fd >= 0:
        send(b"err %d %s %s %s\n" % (mono(), who(), esc(key), esc(message, MAX_TEXT)))


def defer(data):
    """Queue a marker line to go out with the next send(): markers that nothing waits for
    (FORWARD_PASS_END, DataLoader waits) then cost no system call of their own. A process that
    dies mid-step loses at most these."""
    global _pending
    if fd < 0:
        return
    _pending += data
    if len(_pending) > MAX_PENDING:
        send(b"")


def send_soon(data, t):
    """send(), except that a marker at t less than BATCH_NS after the last one sent this way is
    deferred: back-to-back steps (--step-fn) then share a write, while a step that follows a
    pause still reaches the recorder at once."""
    global _last_soon
    if t - _last_soon < BATCH_NS:
        defer(data)
    else:
        _last_soon = t
        send(data)


def send(data):
    """Write a complete marker line (with any deferred ones) in one atomic write. Never raises,
    never blocks for long."""
    global _pending
    if _pending:
        if len(_pending) + len(data) <= MAX_WRITE:
            data, _pending = _pending + data, b""
        else:
            earlier, _pending = _pending, b""
            send(earlier)
    if not data:
        return
    try:
        _write(fd, data)
    except BlockingIOError:
        _pipe_full(data)
        return
    except OSError as e:
        _channel_failed(e)
        return
    if _dropped:
        _report_dropped()


def _pipe_full(data):
    """The recorder is not keeping up (or is gone while we hold the guard read end): wait once,
    briefly, then drop markers until a write goes through again."""
    global _dropped, _congested
    if not _congested:
        try:
            import select
            select.select([], [fd], [], FULL_PIPE_WAIT_S)
            _write(fd, data)
            return
        except BlockingIOError:
            _congested = True
        except OSError as e:
            _channel_failed(e)
            return
    _dropped += data.count(b"\n")


def _report_dropped():
    global _dropped, _congested
    n, _dropped, _congested = _dropped, 0, False
    try:
        _write(fd, b"drop %d %s %d\n" % (mono(), who(), n))
    except OSError:
        _dropped += n


def _channel_failed(error):
    global fd
    if fd < 0:
        return
    fd = -1
    try:
        sys.stderr.write("sprof: marker channel closed (%s); markers disabled\n" % error)
    except Exception:
        pass
    if on_failure is not None:
        try:
            on_failure()
        except Exception:
            pass


def _verify(f, inode):
    st = os.fstat(f)
    if not stat.S_ISFIFO(st.st_mode):
        raise OSError("not a pipe")
    if inode is not None and st.st_ino != inode:
        raise OSError("a different pipe (inode %d, expected %d)" % (st.st_ino, inode))


def _move_high(f):
    """Move an fd out of the low range a program might close and reuse (os.closerange + open),
    so markers can never land in one of the program's own files."""
    try:
        import fcntl
        for low in (1000, 500, 100):
            try:
                high = fcntl.fcntl(f, fcntl.F_DUPFD_CLOEXEC, low)
            except OSError:
                continue
            os.close(f)
            return high
    except Exception:
        pass
    return f


def _sigpipe_ignored():
    try:
        import _signal  # not `signal`, which imports enum: milliseconds at every start
        return _signal.getsignal(_signal.SIGPIPE) == _signal.SIG_IGN
    except Exception:
        return False


def open_channel(environ, first_line):
    """Open the channel named by SPROF_MARKER_FD / SPROF_MARKER_INODE / SPROF_MARKER_PATH and
    write first_line() (the hello) to it.

    We re-open the pipe through /proc instead of writing to the inherited fd: our own
    description can be non-blocking and close-on-exec without touching the inherited one, and a
    second, read-only open (the guard) gives this process a reader of its own, so a dead
    recorder can fill the pipe (we then drop markers) but never raise SIGPIPE in a program that
    restores SIG_DFL. The hello goes out before the guard exists: while SIGPIPE is still
    ignored (Python ignores it at startup), a recorder that is already gone shows as EPIPE.
    Returns None on success, else the reason the channel is off."""
    global fd, _guard_fd, pid
    inode_s = environ.get("SPROF_MARKER_INODE", "")
    inode = int(inode_s) if inode_s.isdigit() else None
    sources = []
    fd_s = environ.get("SPROF_MARKER_FD", "")
    if fd_s.isdigit():
        sources.append(("fd", int(fd_s)))
    path = environ.get("SPROF_MARKER_PATH", "")
    if path:
        sources.append(("path", path))
    reasons = []
    for kind, source in sources:
        try:
            if kind == "fd":
                _verify(source, inode)  # a reused fd number is not our pipe: EBADF or mismatch
                source = "/proc/self/fd/%d" % source
            # Writer first: a FIFO with no reader left refuses it (ENXIO), so a dead recorder
            # is noticed here rather than by a full pipe later.
            w = os.open(source, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                _verify(w, inode)
                pid = os.getpid()
                if _sigpipe_ignored():
                    _write(w, first_line())
                    first = None
                else:
                    first = first_line()
                g = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except BaseException:
                os.close(w)
                raise
        except OSError as e:
            reasons.append("%s %s: %s" % (kind, source, e.strerror or e))
            continue
        fd = _move_high(w)
        _guard_fd = _move_high(g)
        if first is not None:
            send(first)
        return None
    return "; ".join(reasons) or "no SPROF_MARKER_FD or SPROF_MARKER_PATH"


def after_fork_in_child():
    global pid, _dropped, _congested, _tls, _pending
    pid = os.getpid()
    _pending = b""  # the parent's to send
    _tls = _thread._local()  # the forking thread's cached ids are the parent's
    _dropped = 0
    _congested = False
