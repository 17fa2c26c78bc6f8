"""Regenerates the pstats fuzz seeds in this folder (run it from here: python3 make_seeds.py).

cprofile.seed: cProfile.Profile().dump_stats of a tiny recursive workload (tuple callers,
               FLAG_REF back-references, short ASCII strings).
profile.seed:  the same workload under the pure-Python profile module (int callers).
v0.seed..v4.seed: one small stats dict in every marshal version (v0/v1 have text floats and
               long-form tuples and strings; v3+ have back-references).
"""
import cProfile
import marshal
import profile


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    return sorted([fib(5), len("ab")])


def write(name, data):
    with open(name, "wb") as f:
        f.write(data)


def small_dict():
    caller = ("train.py", 1, "main")
    return {("train.py", 10, "step"): (2, 5, 0.02, 0.05, {caller: (5, 2, 0.02, 0.05)}),
            caller: (1, 1, 0.5, 0.5, {}),
            ("~", 0, "<built-in method builtins.len>"): (3, 3, 1e-6, 1e-6, {caller: 3})}


if __name__ == "__main__":
    prof = cProfile.Profile()
    prof.runcall(main)
    prof.dump_stats("cprofile.seed")
    old = profile.Profile()
    old.runcall(main)
    old.dump_stats("profile.seed")
    for version in range(5):
        write("v%d.seed" % version, marshal.dumps(small_dict(), version))
