"""Two functions, "even" (even.py) and "odd" (odd.py), made afresh in turns from one template,
each spinning for the same time, so each must get half of the samples spent in either.

Each new code object lands at the address of the one freed just before it (the allocator hands
back the block it freed last; measured on every CPython here: every time), as a module's code
object freed after its import is replaced by the next code compiled: a sampler that names a code
object by its address alone names one function after the other. Prints how many code objects
took the previous one's address.

usage: recompiled.py ITERATIONS [SPIN_SECONDS]
"""
import sys
import time
import types

iterations = int(sys.argv[1])
spin = float(sys.argv[2]) if len(sys.argv) > 2 else 0.004
source = "def spin():\n    end = clock() + %r\n    while clock() < end:\n        pass\n" % spin
template = [c for c in compile(source, "template.py", "exec").co_consts if isinstance(c, types.CodeType)][0]


def renamed(code, name, filename):
    """A new code object: `code` under another name and file."""
    if hasattr(code, "replace"):  # 3.8+
        names = {"co_name": name, "co_filename": filename}
        if hasattr(code, "co_qualname"):  # 3.11+: what samplers show
            names["co_qualname"] = name
        return code.replace(**names)
    args = [code.co_argcount]
    if sys.version_info[0] >= 3:
        args.append(code.co_kwonlyargcount)
    args += [code.co_nlocals, code.co_stacksize, code.co_flags, code.co_code, code.co_consts, code.co_names,
             code.co_varnames, filename, name, code.co_firstlineno, code.co_lnotab, code.co_freevars,
             code.co_cellvars]
    return types.CodeType(*args)


scope = {"clock": time.time}
reused = 0
last = None
for i in range(iterations):
    name = "even" if i % 2 == 0 else "odd"
    code = renamed(template, name, name + ".py")
    types.FunctionType(code, scope)()
    reused += id(code) == last
    last = id(code)
    del code  # the function is gone already: this frees the code object
print("reused %d of %d" % (reused, iterations - 1))
