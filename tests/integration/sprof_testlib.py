"""Shared helpers for sprof's integration tests (stdlib only; run by ctest with Debian's python3).

ctest sets SPROF_BIN (the built binary), SPROF_SOURCE_DIR and SPROF_BINARY_DIR.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

SPROF_BIN = os.environ.get("SPROF_BIN", "")
SOURCE_DIR = os.environ.get("SPROF_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BINARY_DIR = os.environ.get("SPROF_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
# smdebug's test resources, vendored (see third_party/README.md).
SMDEBUG_FIXTURES = os.path.join(SOURCE_DIR, "third_party", "smdebug-test-resources")
DEBIAN_PYTHON = "/usr/bin/python3.11"

# Exit codes documented in man/sprof.1.
EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_ISSUES = 0, 1, 2, 3


def pyenv_root():
    root = os.environ.get("PYENV_ROOT")
    if root and os.path.isdir(root):
        return root
    for candidate in (os.path.expanduser("~/.pyenv"), "/root/.pyenv"):
        if os.path.isdir(candidate):
            return candidate
    return None


def interpreter_version(path):
    out = subprocess.run([path, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return tuple(int(x) for x in out.split("."))


def pythons(min_version=(3, 8), max_version=(3, 99)):
    """Every installed CPython in the range: {label: path}. Labels: 'debian-3.11', 'pyenv-3.8.18', ..."""
    found = {}
    if os.path.exists(DEBIAN_PYTHON):
        v = interpreter_version(DEBIAN_PYTHON)
        if min_version <= v[:2] <= max_version:
            found["debian-%d.%d" % v[:2]] = DEBIAN_PYTHON
    root = pyenv_root()
    if root:
        for d in sorted(glob.glob(os.path.join(root, "versions", "*"))):
            exe = os.path.join(d, "bin", "python")
            name = os.path.basename(d)
            if not re.fullmatch(r"\d+\.\d+\.\d+", name) or not os.path.exists(exe):
                continue
            v = tuple(int(x) for x in name.split("."))
            if min_version <= v[:2] <= max_version:
                found["pyenv-" + name] = exe
    return found


def python_for(minor):
    """The pyenv interpreter of a 3.x minor version (e.g. '3.8'), or None."""
    for label, path in pythons().items():
        if label.startswith("pyenv-%s." % minor):
            return path
    return None


def cxx_demangled(names):
    """Each name as the toolchains' demanglers print it: mangled C++ names ("_Z...") through binutils'
    c++filt, and those it leaves alone (some long cutlass kernel names) through LLVM's
    llvm-cxxfilt, as sprof demangles; other names as they are."""
    out = {n: n for n in names}
    for tool in (["c++filt"], sorted(glob.glob("/usr/lib/llvm-*/bin/llvm-cxxfilt"))[-1:]):
        mangled = sorted(n for n in out if out[n].startswith("_Z"))
        if not mangled or not tool:
            continue
        proc = subprocess.run(tool, input="\n".join(out[n] for n in mangled) + "\n", capture_output=True, text=True,
                              check=True)
        out.update(zip(mangled, proc.stdout.splitlines()))
    return out


def run_sprof(*args, check=None, timeout=600, env=None, **kwargs):
    """Run the sprof binary; returns CompletedProcess with text stdout/stderr.
    check: expected exit code (asserted) or None."""
    if not SPROF_BIN:
        raise unittest.SkipTest("SPROF_BIN is not set (run through ctest)")
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run([SPROF_BIN] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, **kwargs)
    if check is not None and proc.returncode != check:
        raise AssertionError("sprof %s exited %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(map(str, args)), proc.returncode, check, proc.stdout[-4000:],
                                proc.stderr[-4000:]))
    return proc


def hostile_names_workload(names, steps=6, seconds=0.03):
    """A program (run under sprof's bootstrap) whose functions carry `names`, set through their code
    objects as no `def` could: each busy for `seconds` in each of `steps` steps."""
    return """
import time, sprof
def make(name):
    def f(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
    f.__code__ = f.__code__.replace(co_name=name, co_qualname=name)
    return f
funcs = [make(n) for n in %r]
for step in range(%d):
    sprof.step()
    for f in funcs:
        f(%r)
sprof.step_end()
""" % (list(names), steps, seconds)


def fake_nvml(directory, utilization):
    """Sets up the fake NVML (tests/tools/fake_nvml.c, two GPUs) under `directory` as the
    libnvidia-ml.so.1 sprof loads, reporting `utilization` % until the returned file is rewritten.
    Returns (environment for sprof, the utilization file)."""
    lib = os.path.join(directory, "fake-nvml")
    os.mkdir(lib)
    os.symlink(os.path.join(BINARY_DIR, "tests", "libsprof_fake_nvml.so"), os.path.join(lib, "libnvidia-ml.so.1"))
    path = os.path.join(directory, "gpu-utilization")
    with open(path, "w") as f:
        f.write(str(utilization))
    return {"LD_LIBRARY_PATH": lib, "SPROF_FAKE_NVML_UTILIZATION": path}, path


class TempDirTestCase(unittest.TestCase):
    """A test case with a fresh temporary directory in self.tmp, removed afterwards."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sprof-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        # sprof's private files (the bootstrap, sockets) go under $TMPDIR; a test that kills sprof
        # with SIGKILL leaves them behind, so they go under this test's directory, not the system's.
        own = os.path.join(self.tmp, "test-tmpdir")  # a name no test makes or looks for
        os.mkdir(own)
        environment = mock.patch.dict(os.environ, {"TMPDIR": own})
        environment.start()
        self.addCleanup(environment.stop)
