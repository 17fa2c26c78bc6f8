"""One torchrun rank: computes in rank_work() for a moment, then reports its rank and pid."""
import os
import time


def rank_work(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for _ in range(1000): x += 1


rank_work(1.5)
print("rank %s pid %d" % (os.environ.get("RANK"), os.getpid()), flush=True)
