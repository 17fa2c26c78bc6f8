"""Starts Python children with every multiprocessing start method, plus a non-Python child.

Each Python child computes in child_work() for SECONDS; the parent computes in parent_work()
meanwhile, then waits for them and prints the children's pids as JSON."""
import json
import multiprocessing as mp
import subprocess
import sys
import time


def child_work(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for _ in range(1000): x += 1


def parent_work(seconds):
    child_work(seconds)


def main():
    seconds = float(sys.argv[1])
    procs = []
    for method in ("fork", "spawn", "forkserver"):
        p = mp.get_context(method).Process(target=child_work, args=(seconds,))
        p.start()
        procs.append(p)
    sleeper = subprocess.Popen(["sleep", str(seconds)])
    parent_work(seconds / 2)
    for p in procs:
        p.join()
    sleeper.wait()
    print(json.dumps({"children": [p.pid for p in procs], "sleep": sleeper.pid}))


if __name__ == "__main__":
    main()
