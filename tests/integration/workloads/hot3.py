"""Three hot functions that take about 50/30/20 % of the run by construction and time themselves.

Usage: hot3.py SECONDS OUT.json
Writes {"shares": {"hot50": s, "hot30": s, "hot20": s}, "seconds": {...}} where each share is the
wall time measured around every call of that function (a clock read before and after each call),
divided by the time of all three. That is the ground truth the sampler's shares are compared with.
An idle thread ("idler") sleeps the whole time, so idle samples can be checked too.
Runs on every CPython 3.x (no f-strings with '=', no walrus).
"""
import json
import sys
import threading
import time

clock = time.perf_counter


def hot50(n):
    x = 0
    for _ in range(n): x += 1  # HOT50-LINE
    return x


def hot30(n):
    x = 0
    for _ in range(n): x += 1  # HOT30-LINE
    return x


def hot20(n):
    x = 0
    for _ in range(n): x += 1  # HOT20-LINE
    return x


def idler(stop):
    stop.wait()  # IDLE-LINE


def main():
    seconds = float(sys.argv[1])
    out = sys.argv[2]
    stop = threading.Event()
    t = threading.Thread(target=idler, args=(stop,), name="idler")
    t.start()
    unit = 20000  # a few milliseconds per call: many calls, each far longer than the clock reads
    spent = {"hot50": 0.0, "hot30": 0.0, "hot20": 0.0}
    plan = ((hot50, 5 * unit), (hot30, 3 * unit), (hot20, 2 * unit))
    end = clock() + seconds
    while clock() < end:
        for fn, n in plan:
            t0 = clock()
            fn(n)
            spent[fn.__name__] += clock() - t0
    stop.set()
    t.join()
    total = sum(spent.values())
    with open(out, "w") as f:
        json.dump({"shares": dict((k, v / total) for k, v in spent.items()), "seconds": spent}, f)


if __name__ == "__main__":
    main()
