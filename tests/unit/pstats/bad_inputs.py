"""Writes marshal files that are not valid pstats data, one per case, into OUT_DIR.

Usage: bad_inputs.py OUT_DIR
Each file is named after its case; the C++ test knows which error each must give.
Also writes good_v0 .. good_v4: one small valid stats dict in every marshal version.
"""
import marshal
import os
import sys

KEY = ("/src/train.py", 10, "step")
CALLER = ("/src/train.py", 1, "main")
VALUE = (2, 5, 0.02, 0.05, {CALLER: (5, 2, 0.02, 0.05)})


def stats(value=VALUE, key=KEY):
    return {key: value, CALLER: (1, 1, 0.5, 0.5, {})}


def deep_tuple(depth):
    t = ()
    for _ in range(depth):
        t = (t,)
    return t


CASES = {
    "top_list": [KEY, VALUE],
    "top_int": 7,
    "empty_dict": {},
    "code_object": stats((2, 5, 0.02, compile("1", "f", "eval"), {})),
    "set_callers": stats((2, 5, 0.02, 0.05, {1, 2})),
    "frozenset_callers": stats((2, 5, 0.02, 0.05, frozenset({1}))),
    "list_callers": stats((2, 5, 0.02, 0.05, [])),
    "complex_time": stats((2, 5, 1j, 0.05, {})),
    "bytes_file": stats(key=(b"/src/train.py", 10, "step")),
    "none_time": stats((2, 5, None, 0.05, {})),
    "ellipsis_count": stats((Ellipsis, 5, 0.02, 0.05, {})),
    "stopiteration_count": stats((StopIteration, 5, 0.02, 0.05, {})),
    "float_count": stats((2.5, 5, 0.02, 0.05, {})),
    "str_line": stats(key=("/src/train.py", "10", "step")),
    "key_not_tuple": {"step": VALUE},
    "key_two_items": {("/src/train.py", 10): VALUE},
    "value_four_items": stats((2, 5, 0.02, 0.05)),
    "value_list": stats([2, 5, 0.02, 0.05, {}]),
    "caller_value_str": stats((2, 5, 0.02, 0.05, {CALLER: "x"})),
    "caller_value_three": stats((2, 5, 0.02, 0.05, {CALLER: (5, 2, 0.02)})),
    "caller_key_int": stats((2, 5, 0.02, 0.05, {3: (5, 2, 0.02, 0.05)})),
    "count_beyond_int64": stats((2**70, 5, 0.02, 0.05, {})),
    "negative_beyond_int64": stats((2, -(2**63) - 1, 0.02, 0.05, {})),
    "deep_tuple_key": {deep_tuple(1500): VALUE},
    "deep_tuple_file": stats(key=(deep_tuple(1500), 10, "step")),
    "sampled_marker": {("__sampled__",): True, KEY: VALUE},
}

GOOD = {
    # near the int64 extremes (the totals over both entries still fit): marshal's 'l' encoding
    "good_extremes": stats((2**63 - 2, -(2**63) + 1, -0.0, float("inf"),
                            {CALLER: (2**40, -(2**31) - 1, 5e-324, 1e308)})),
    # bool counts are ints to pstats
    "good_bools": stats((True, False, 0.02, 0.05, {CALLER: True})),
    # the old profile module's int callers
    "good_int_callers": stats((2, 5, 0.02, 0.05, {CALLER: 5, KEY: 1})),
    # ints where pstats has floats
    "good_int_times": stats((2, 5, 2, 3, {CALLER: (5, 2, 1, 0)})),
}


def main():
    out = sys.argv[1]
    for name, obj in CASES.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(marshal.dumps(obj))
    for name, obj in GOOD.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(marshal.dumps(obj))
    for version in range(5):
        with open(os.path.join(out, "good_v%d" % version), "wb") as f:
            f.write(marshal.dumps(stats(), version))


if __name__ == "__main__":
    main()
