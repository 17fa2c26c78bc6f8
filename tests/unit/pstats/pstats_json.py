"""Prints what Python's own pstats makes of pstats files, as JSON (floats as repr strings).

Usage: pstats_json.py load FILE            pstats.Stats(FILE)
       pstats_json.py add FILE MORE...     s = pstats.Stats(FILE); s.add(*MORE)
       pstats_json.py add_each FILE MORE...  s = pstats.Stats(FILE); s.add(m) for each m
       pstats_json.py empty_add FILE...    s = pstats.Stats(); s.add(f) for each f
"""
import json
import pstats
import sys


def number(v):
    return repr(float(v))


def text(s):
    """A str as JSON; lone surrogates (which JSON parsers reject) as hex of their bytes."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return {"surrogatepass_hex": s.encode("utf-8", "surrogatepass").hex()}


def dump(stats):
    entries = []
    for (file, line, name), (cc, nc, tt, ct, callers) in stats.stats.items():
        caller_list = []
        for (cfile, cline, cname), value in callers.items():
            if isinstance(value, tuple):
                nc2, cc2, tt2, ct2 = value
                caller_list.append([text(cfile), int(cline), text(cname),
                                    [int(nc2), int(cc2), number(tt2), number(ct2)]])
            else:
                caller_list.append([text(cfile), int(cline), text(cname), int(value)])
        entries.append([text(file), int(line), text(name), int(cc), int(nc), number(tt), number(ct),
                        caller_list])
    return {"total_calls": int(stats.total_calls), "prim_calls": int(stats.prim_calls),
            "total_tt": number(stats.total_tt), "entries": entries}


def main():
    mode, files = sys.argv[1], sys.argv[2:]
    if mode == "load":
        stats = pstats.Stats(files[0])
    elif mode == "add":
        stats = pstats.Stats(files[0])
        stats.add(*files[1:])
    elif mode == "add_each":
        stats = pstats.Stats(files[0])
        for f in files[1:]:
            stats.add(f)
    elif mode == "empty_add":
        stats = pstats.Stats()
        for f in files:
            stats.add(f)
    else:
        raise SystemExit("unknown mode " + mode)
    print(json.dumps(dump(stats)))


if __name__ == "__main__":
    main()
