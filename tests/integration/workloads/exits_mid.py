"""Computes, then leaves with os._exit(CODE) in the middle of it, with a worker thread still busy."""
import os
import sys
import threading
import time


def work(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for _ in range(300): x += 1


threading.Thread(target=work, args=(10,), daemon=True).start()
work(float(sys.argv[1]))
os._exit(int(sys.argv[2]))
