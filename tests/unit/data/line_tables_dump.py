"""Dump the line-number tables of stdlib code objects with the interpreter's own answers.

Run by tests/unit/pyframes_line_table_test.cpp with every installed CPython (2.7 and 3.x; keep
this file free of syntax newer than 2.7). Prints one JSON document:
  {"version": [major, minor], "codes": [{"name", "first", "table" (hex), "expect": [[offset, line|null], ...]}]}
Offsets are byte offsets into co_code; "expect" comes from co_lines() on 3.10+ and from
dis.findlinestarts() before.
"""
import binascii
import dis
import json
import os
import sys
import types

MODULES = ["argparse.py", "json/decoder.py", "collections/__init__.py", "difflib.py", "textwrap.py",
           "typing.py", "dataclasses.py", "asyncio/base_events.py"]


def walk(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            for inner in walk(const):
                yield inner


def instruction_offsets(code):
    raw = code.co_code
    if sys.version_info >= (3, 6):
        return list(range(0, len(raw), 2))
    offsets = []
    i = 0
    while i < len(raw):
        offsets.append(i)
        op = raw[i] if isinstance(raw[i], int) else ord(raw[i])
        i += 1 if op < dis.HAVE_ARGUMENT else 3
    return offsets


def expect_from_linestarts(code):
    starts = list(dis.findlinestarts(code))
    out = []
    k = -1
    for offset in instruction_offsets(code):
        while k + 1 < len(starts) and starts[k + 1][0] <= offset:
            k += 1
        out.append([offset, starts[k][1] if k >= 0 else code.co_firstlineno])
    return out


def expect_from_co_lines(code):
    out = []
    for start, end, line in code.co_lines():
        for offset in range(start, end, 2):
            out.append([offset, line])
    return out


def main():
    stdlib = os.path.dirname(os.__file__)
    codes = []
    for rel in MODULES:
        path = os.path.join(stdlib, rel)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            source = f.read()
        top = compile(source, path, "exec")
        for code in walk(top):
            if sys.version_info >= (3, 10):
                table = code.co_linetable
                expect = expect_from_co_lines(code)
            else:
                table = code.co_lnotab
                expect = expect_from_linestarts(code)
            codes.append({"name": code.co_name, "first": code.co_firstlineno,
                          "table": binascii.hexlify(table).decode("ascii"), "expect": expect})
    json.dump({"version": list(sys.version_info[:2]), "codes": codes}, sys.stdout)


main()
