"""The program exec_chain.py turns into: computes in after_exec(), exits with status 3."""
import sys
import time


def after_exec(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for _ in range(1000): x += 1


after_exec(0.8)
sys.exit(3)
