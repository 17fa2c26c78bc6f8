"""The test oracle for sprof's stats queries: smdebug's selection logic, restated from
smdebug/profiler/analysis/python_profile_analysis.py, .../utils/python_profile_analysis_utils.py
and .../python_stats_reader.py (awslabs/sagemaker-debugger), aggregated with Python's own
pstats.Stats.add exactly as smdebug's cProfileAnalysis does. Stdlib only (no pandas).

Two documented sprof decisions are layered on top, so the oracle also covers them:
- old-format names `<start_us>_<end_us>_<node_id>_<step>` (smdebug before Aug 2020) are read as
  mode `global`, step s from `stepstart` to `stepend`, step -1 as `prestepzero-*-start` to
  `global-0-stepstart`;
- records with equal (start time, node id) are ordered by path (smdebug: os.listdir order);
- job-phase initialization/finalization add every (start, end) mode pair they hold (smdebug keeps
  only the last one; `compat="smdebug"` reproduces that).
"""
import os
import pstats

# smdebug.profiler.python_profile_utils.PythonProfileModes, in enum order.
MODES = ["train", "eval", "predict", "global", "prestepzero", "posthookclose"]
PHASES = ["start", "stepstart", "forwardpassend", "stepend", "end"]
INF = float("inf")

CPROFILE_STATS_FILENAME = "python_stats"
PYINSTRUMENT_JSON_FILENAME = "python_stats.json"
PYINSTRUMENT_HTML_FILENAME = "python_stats.html"


class StepStats:
    """StepPythonProfileStats."""

    def __init__(self, framework, profiler_name, node_id, stats_dir, stats_path):
        parts = stats_dir.split("_")
        if len(parts) == 4:  # old format (sprof's reading of it)
            start_time, end_time, old_node, step = parts
            step = int(step)
            node_id = old_node
            if step == -1:
                start_mode, start_step, start_phase = "prestepzero", "*", "start"
                end_mode, end_step, end_phase = "global", "0", "stepstart"
            else:
                start_mode = end_mode = "global"
                start_step = end_step = str(step)
                start_phase, end_phase = "stepstart", "stepend"
        else:
            start_metadata, end_metadata = parts
            start_mode, start_step, start_phase, start_time = start_metadata.split("-")
            end_mode, end_step, end_phase, end_time = end_metadata.split("-")
        assert start_mode in MODES and end_mode in MODES, stats_dir
        assert start_phase in PHASES and end_phase in PHASES, stats_dir
        self.profiler_name = profiler_name
        self.framework = framework
        self.node_id = node_id
        self.start_mode = start_mode
        self.start_step = -1 if start_step == "*" else int(start_step)
        self.start_phase = start_phase
        self.start_time_since_epoch_in_micros = float(start_time)
        self.end_mode = end_mode
        self.end_step = INF if end_step == "*" else int(end_step)
        self.end_phase = end_phase
        self.end_time_since_epoch_in_micros = float(end_time)
        self.stats_path = stats_path
        self.stats_dir = stats_dir

    def has_start_and_end_mode(self, start_mode, end_mode):
        return self.start_mode == start_mode and self.end_mode == end_mode

    def in_time_interval(self, start_us, end_us):
        return (start_us <= self.start_time_since_epoch_in_micros <= end_us
                or start_us <= self.end_time_since_epoch_in_micros <= end_us)

    def in_step_interval(self, start_step, end_step, start_phase, end_phase):
        if start_step < self.start_step and end_step > self.end_step:
            return True
        elif start_step > self.start_step or end_step < self.end_step:
            return False
        else:
            if (start_step == self.start_step and start_phase in ("stepend", "forwardpassend")
                    and self.start_phase != start_phase):
                return False
            if (end_step == self.end_step and end_phase == "stepstart"
                    and self.end_phase != end_phase):
                return False
            return True

    def has_pre_step_zero_profile_stats(self):
        return self.start_phase == "start"

    def has_post_hook_close_profile_stats(self):
        return self.end_phase == "end"


def is_old_format(name):
    parts = name.split("_")
    if len(parts) != 4:
        return False
    try:
        float(parts[0]), float(parts[1]), int(parts[3])
    except ValueError:
        return False
    return True


def load_profiler_dir(profile_dir, skip=()):
    """LocalPythonStatsReader.load_python_profile_stats for one framework/<fw>/<profiler>
    directory (plus old-format stats dirs directly under it). Paths in `skip` are left out."""
    stats = []
    framework = os.path.basename(os.path.dirname(os.path.abspath(profile_dir)))
    for node_id in os.listdir(profile_dir):
        node_dir_path = os.path.join(profile_dir, node_id)
        if node_dir_path in skip:
            continue
        if is_old_format(node_id):
            entries = [(node_id, node_dir_path)]
        else:
            entries = [(d, os.path.join(node_dir_path, d)) for d in os.listdir(node_dir_path)]
        for stats_dir, stats_dir_path in entries:
            if stats_dir_path in skip:
                continue
            for filename in os.listdir(stats_dir_path):
                path = os.path.join(stats_dir_path, filename)
                if path in skip:
                    continue
                if filename == CPROFILE_STATS_FILENAME:
                    profiler_name = "cprofile"
                elif filename in (PYINSTRUMENT_JSON_FILENAME, PYINSTRUMENT_HTML_FILENAME):
                    profiler_name = "pyinstrument"
                else:
                    continue
                stats.append(StepStats(framework, profiler_name, node_id, stats_dir, path))
    stats.sort(key=lambda x: (x.start_time_since_epoch_in_micros, x.node_id, x.stats_path))
    return stats


class Aggregate:
    """What cProfileAnalysis._aggregate_stats returns: the pstats.Stats and the records."""

    def __init__(self, ps, records):
        self.ps = ps
        self.records = records


class Analysis:
    """cProfileAnalysis over a list of StepStats."""

    def __init__(self, all_stats, unreadable=()):
        self.all_stats = all_stats
        self.python_profile_stats = [s for s in all_stats if s.profiler_name == "cprofile"]
        # sprof skips unreadable files with a warning; smdebug would raise.
        self.unreadable = set(unreadable)

    def node_stats(self, node_id="any"):
        if not self.python_profile_stats:
            return []
        if node_id == "any":
            node_id = self.python_profile_stats[0].node_id
        return [s for s in self.python_profile_stats if s.node_id == node_id]

    def resolve_node(self, node_id="any"):
        return self.python_profile_stats[0].node_id if node_id == "any" else node_id

    def aggregate(self, stats):
        ps = pstats.Stats()
        used = []
        for step_stats in stats:
            if step_stats.stats_path in self.unreadable:
                continue
            ps.add(step_stats.stats_path)
            used.append(step_stats)
        return Aggregate(ps, used)

    def by_step(self, start_step, end_step=None, mode="train", start_phase="stepstart",
                end_phase="stepend", node_id="any"):
        if end_step is None:
            end_step = start_step
        return self.aggregate([
            s for s in self.node_stats(node_id)
            if s.in_step_interval(start_step, end_step, start_phase, end_phase)
            and s.has_start_and_end_mode(mode, mode)])

    def by_time(self, start_us, end_us, node_id="any"):
        return self.aggregate([s for s in self.node_stats(node_id)
                               if s.in_time_interval(start_us, end_us)])

    def between_modes(self, start_mode, end_mode, node_id="any"):
        return self.aggregate([s for s in self.node_stats(node_id)
                               if s.has_start_and_end_mode(start_mode, end_mode)])

    def pre_step_zero(self, node_id="any"):
        return self.aggregate([s for s in self.node_stats(node_id)
                               if s.has_pre_step_zero_profile_stats()])

    def post_hook_close(self, node_id="any"):
        return self.aggregate([s for s in self.node_stats(node_id)
                               if s.has_post_hook_close_profile_stats()])

    def by_training_phase(self, node_id="any"):
        """{(start_mode, end_mode): Aggregate}, in smdebug's iteration order."""
        out = {}
        for start_mode in MODES:
            for end_mode in MODES:
                selected = [s for s in self.node_stats(node_id)
                            if s.has_start_and_end_mode(start_mode, end_mode)]
                if selected:  # smdebug: _aggregate_stats returns None, which is left out
                    out[(start_mode, end_mode)] = self.aggregate(selected)
        return out

    def by_job_phase(self, node_id="any", compat="sprof"):
        """{phase: (Aggregate, [pair names])}."""
        phases = {}
        loop = pstats.Stats()
        loop_records, loop_parts = [], []
        init_parts, final_parts = [], []
        for (start_mode, end_mode), agg in self.by_training_phase(node_id).items():
            if start_mode == "prestepzero":
                init_parts.append(((start_mode, end_mode), agg))
            elif end_mode == "posthookclose":
                final_parts.append(((start_mode, end_mode), agg))
            else:
                loop.add(agg.ps)
                loop_records += agg.records
                loop_parts.append("%s-%s" % (start_mode, end_mode))
        if compat == "smdebug":
            # smdebug assigns job_phase_stats[...] once per pair: the last one wins.
            init_parts, final_parts = init_parts[-1:], final_parts[-1:]
        for name, parts in (("initialization", init_parts), ("finalization", final_parts)):
            if not parts:
                continue
            if len(parts) == 1:
                # smdebug stores the pair's own Stats object.
                phases[name] = (parts[0][1], ["%s-%s" % parts[0][0]])
            else:
                ps = pstats.Stats()
                records = []
                for _, agg in parts:
                    ps.add(agg.ps)
                    records += agg.records
                phases[name] = (Aggregate(ps, records), ["%s-%s" % p for p, _ in parts])
        phases["training_loop"] = (Aggregate(loop, loop_records), loop_parts)
        return phases


SORT_ARGS = {"tottime": "tottime", "cumtime": "cumulative", "ncalls": "ncalls",
             "pcalls": "pcalls"}


def sorted_keys(ps, sort="cumtime"):
    """The function order pstats prints after sort_stats."""
    if not ps.stats:
        return []
    ps.sort_stats(SORT_ARGS[sort])
    return list(ps.fcn_list)
