"""Reports the signals it gets: prints READY, then exits with 100+N on SIGINT/SIGTERM/SIGHUP/SIGQUIT
(N = the signal number), after the time limit with 0. With 'default' as argument it keeps the
default dispositions instead (so SIGTERM kills it: status 128+15), and with 'selfkill' it kills
itself with SIGKILL after a moment of work."""
import os
import signal
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "handle"


def busy(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for _ in range(1000): x += 1


def handler(signum, frame):
    sys.stdout.write("got %d\n" % signum)
    sys.stdout.flush()
    os._exit(100 + signum)


if mode == "handle":
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, handler)
print("READY", flush=True)
if mode == "selfkill":
    busy(0.5)
    os.kill(os.getpid(), signal.SIGKILL)
busy(30)
