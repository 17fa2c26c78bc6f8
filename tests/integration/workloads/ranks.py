"""A torchrun-like launcher: starts N copies of rank_work.py as separate interpreters with RANK,
LOCAL_RANK and WORLD_SIZE set, waits for them, and exits with the worst status."""
import os
import subprocess
import sys

n = int(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
procs = []
for rank in range(n):
    env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(n))
    procs.append(subprocess.Popen([sys.executable, os.path.join(here, "rank_work.py")], env=env))
sys.exit(max(p.wait() for p in procs))
