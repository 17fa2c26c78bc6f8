# -*- coding: utf-8 -*-
"""A target for sprof's pyframes tests: threads parked at known statements.

Lines the tests look for carry a "MARK:<name>" comment; the tests compute the line numbers from
this file, so the file can change freely. Usage: python pyframes_target.py [churn|exit-soon]   (CPython 3.6+; pyframes_target27.py for 2.7)
"""
import asyncio
import sys
import threading
import time


def allow_any_tracer():
    # With Yama ptrace_scope=1 only ancestors may read a process; sprof runs as our sibling
    # in the tests, so allow it explicitly (no effect without Yama).
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        PR_SET_PTRACER = 0x59616D61
        libc.prctl(PR_SET_PTRACER, ctypes.c_ulong((1 << 64) - 1), 0, 0, 0)
    except Exception:
        pass


stop = threading.Event()
arrived = []


def arrive():
    ev = threading.Event()
    arrived.append(ev)
    return ev


def spin_σ(ev):
    ev.set()
    x = 0
    while not stop.is_set():
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


async def inner(ev):
    ev.set()
    time.sleep(1000)  # MARK:async_inner


async def outer(ev):
    await inner(ev)  # MARK:async_outer


def run_async(ev):
    loop = asyncio.new_event_loop()  # not asyncio.run: 3.6 has none
    loop.run_until_complete(outer(ev))


class Sleeper:
    def __init__(self, ev):
        if ev is not None:
            ev.set()
            time.sleep(1000)  # MARK:init


def make(ev):
    return Sleeper(ev)  # MARK:make


def 睡眠_𠀀():
    time.sleep(1000)  # MARK:main


def churn():
    i = 0
    while not stop.is_set():
        t = threading.Thread(target=time.sleep, args=(0.02,), name="short-%d" % i)
        t.start()
        i += 1
        time.sleep(0.01)


def start(name, target, *args):
    ev = arrive()
    t = threading.Thread(target=target, args=(ev,) + args, name=name)
    t.daemon = True
    t.start()
    return t


def main():
    allow_any_tracer()
    mode = sys.argv[1] if len(sys.argv) > 1 else "full"
    if mode == "exit-soon":
        print("ready", flush=True)
        time.sleep(0.5)
        return
    if mode == "churn":
        t = threading.Thread(target=churn, name="churner")
        t.daemon = True
        t.start()
    else:
        sys.setrecursionlimit(5000)
        for _ in range(5000):  # warm the call site so 3.13 specialises it (CALL_ALLOC_AND_ENTER_INIT)
            make(None)
        lock = threading.Lock()
        lock.acquire()
        start("spinner", spin_σ)
        start("sleeper-lock", wait_on_lock, lock)
        start("deep", recurse, 800)
        start("generator", consume)
        start("async", run_async)
        start("init", make)
        for ev in arrived:
            ev.wait()
    print("ready", flush=True)
    睡眠_𠀀()  # MARK:call_main


main()
