"""Computes in before_exec(), then execs the program given on the command line.

Usage: exec_chain.py PROGRAM [ARGS...]   (e.g. another Python running after_exec.py)"""
import os
import sys
import time


def before_exec(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        for _ in range(1000): x += 1


before_exec(0.8)
os.execv(sys.argv[1], sys.argv[1:])
