"""Threads that start and end while being sampled: WAVES waves of short-lived workers.

Usage: threads.py WAVES
Each wave starts 4 named threads that compute for ~60 ms and exit; the main thread joins them.
"""
import sys
import threading
import time


def short_work(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for _ in range(500): x += 1
    return x


def main():
    waves = int(sys.argv[1])
    for wave in range(waves):
        workers = [threading.Thread(target=short_work, args=(0.06,), name="worker-%d-%d" % (wave, i))
                   for i in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    print("threads done")


if __name__ == "__main__":
    main()
