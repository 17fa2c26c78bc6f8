"""Profiles a small workload with cProfile and with the pure-Python profile module.

Usage: workload.py VARIANT OUT_PREFIX
Writes OUT_PREFIX.cprofile (cProfile.Profile.dump_stats), OUT_PREFIX.stats
(pstats.Stats(profile).dump_stats) and OUT_PREFIX.profile (profile.Profile.dump_stats,
whose callers values are plain ints). VARIANT changes which functions run, so files of
different variants share some functions and not others.
Runs on every CPython 3.8+.
"""
import cProfile
import profile
import pstats
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def helper(xs):
    return sorted(xs, key=lambda x: -x)


def größe(xs):  # a non-ASCII function name (marshal writes it as 'u'/'t', not ASCII)
    return len(xs) + sum(xs)


def a():
    return helper(list(range(50))) + [fib(12)]


def b():
    return [len(helper([i, i + 1])) for i in range(20)]


class Model:
    def step(self, i):
        return isinstance(i, int) and sum(map(abs, range(i))) + größe([i])


# Code with a file name longer than 255 characters ('a' strings) and a non-ASCII one.
_namespace = {}
exec(compile("def long_file_function(n):\n    return [n] * n\n",
             "/generated/" + "long_directory_name/" * 14 + "module.py", "exec"), _namespace)
exec(compile("def datei_function(n):\n    return str(n)\n", "/generated/dätei.py", "exec"),
     _namespace)


def main(variant):
    model = Model()
    for i in range(3 + variant):
        a()
        b()
        model.step(i)
    if variant % 2:
        fib(8)
        _namespace["long_file_function"](3)
    if variant == 2:
        import json
        json.dumps({"x": list(range(10))})
        _namespace["datei_function"](7)


if __name__ == "__main__":
    variant, prefix = int(sys.argv[1]), sys.argv[2]
    prof = cProfile.Profile()
    prof.enable()
    main(variant)
    prof.disable()
    prof.dump_stats(prefix + ".cprofile")
    pstats.Stats(prof).dump_stats(prefix + ".stats")
    old = profile.Profile()
    old.runcall(main, variant)
    old.dump_stats(prefix + ".profile")
