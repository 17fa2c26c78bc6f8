"""The Python side of scripts/bench-query: what smdebug's cProfileAnalysis does for
fetch_profile_stats_by_step / fetch_profile_stats_by_job_phase (listing, name parsing, selection,
pstats.Stats.add per file, the per-function list), using the port in
tests/integration/smdebug_semantics.py. Prints the totals so the two sides can be compared."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import smdebug_semantics as sm  # noqa: E402
import pstats  # noqa: E402


def function_list(ps):
    # cProfileStats.__init__: one cProfileFunctionStats per function.
    return [(pstats.func_std_string(k), v[0], v[1], v[2], v[3],
             [pstats.func_std_string(c) for c in v[4]]) for k, v in ps.stats.items()]


def main():
    what, profiler_dir = sys.argv[1], sys.argv[2]
    analysis = sm.Analysis(sm.load_profiler_dir(profiler_dir))
    if what == "by-step":
        agg = analysis.by_step(int(sys.argv[3]), int(sys.argv[4]))
        function_list(agg.ps)
        print(agg.ps.total_calls, len(agg.records))
    else:
        phases = analysis.by_job_phase()
        for name in sorted(phases):
            function_list(phases[name][0].ps)
        print(" ".join("%s=%d" % (n, phases[n][0].ps.total_calls) for n in sorted(phases)))


if __name__ == "__main__":
    main()
