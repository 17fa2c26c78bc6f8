# -*- coding: utf-8 -*-
"""pyframes_target.py for Python 2.7: threads parked at "MARK:<name>" statements."""
import sys
import threading
import time


def allow_any_tracer():
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.prctl(0x59616D61, ctypes.c_ulong((1 << 64) - 1), 0, 0, 0)  # PR_SET_PTRACER, any
    except Exception:
        pass


arrived = []


def spin(ev):
    ev.set()
    x = 0
    while True:
        x += 1  # MARK:spin


def wait_on_lock(ev, lock):
    ev.set()
    lock.acquire()  # MARK:lock


def recurse(ev, n):
    if n:
        return recurse(ev, n - 1)  # MARK:recurse
    ev.set()
    time.sleep(1000)  # MARK:bottom


def gen(ev):
    yield 1
    ev.set()
    time.sleep(1000)  # MARK:gen


def consume(ev):
    for _ in gen(ev):  # MARK:consume
        pass


def sleep_main():
    time.sleep(1000)  # MARK:main


def start(target, *args):
    ev = threading.Event()
    arrived.append(ev)
    t = threading.Thread(target=target, args=(ev,) + args)
    t.daemon = True
    t.start()


def main():
    allow_any_tracer()
    sys.setrecursionlimit(5000)
    lock = threading.Lock()
    lock.acquire()
    start(spin)
    start(wait_on_lock, lock)
    start(recurse, 800)
    start(consume)
    for ev in arrived:
        ev.wait()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sleep_main()  # MARK:call_main


main()
