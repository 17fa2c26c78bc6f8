"""The build's layering (lib/stages.cmake): each stage's include tree holds its own and its
dependencies' headers and no other, so an include that reaches a later stage does not compile."""
import concurrent.futures
import os
import re
import subprocess
import unittest

from sprof_testlib import BINARY_DIR, SOURCE_DIR

STAGES_DIR = os.path.join(BINARY_DIR, "lib", "stages")
CXX = os.environ.get("SPROF_CXX", "c++")


FOLDERS = {}  # stage -> the folders of its sources (lib/src/<stage>/<folder>/)


def read_stages():
    """stage -> (direct deps, visible stages, public headers), in declaration order."""
    stages = {}
    with open(os.path.join(STAGES_DIR, "stages.txt")) as f:
        for line in f:
            if not line.strip():
                continue
            name, deps, visible, headers, folders = line.rstrip("\n").split("|")
            stages[name] = (deps.split(), visible.split(), headers.split())
            FOLDERS[name] = folders.split()
    return stages


def private_headers(stage):
    """The stage's private headers, as included below lib/src/<stage>/: its own and its folders'."""
    found = []
    for folder in [""] + FOLDERS.get(stage, []):
        path = os.path.join(SOURCE_DIR, "lib", "src", stage, folder)
        if os.path.isdir(path):
            found += [os.path.join(folder, f) if folder else f for f in os.listdir(path) if f.endswith(".hpp")]
    return sorted(found)


def preprocess(stage, include):
    """Runs the preprocessor on `#include "<include>"` with the stage's include tree."""
    proc = subprocess.run([CXX, "-std=c++20", "-E", "-x", "c++", "-", "-o", os.devnull,
                           "-I", os.path.join(STAGES_DIR, stage)],
                          input=f'#include "{include}"\n', capture_output=True, text=True)
    return proc.returncode, proc.stderr


class LayeringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stages = read_stages()

    def test_stages_name_only_earlier_stages(self):
        seen = set()
        for name, (deps, _, _) in self.stages.items():
            for dep in deps:
                self.assertIn(dep, seen, f"stage {name} depends on {dep}, declared after it")
            seen.add(name)

    def test_every_stage_sees_its_own_headers_and_none_later(self):
        cases = []  # (stage, include, should compile)
        for name, (_, visible, headers) in self.stages.items():
            for header in headers:
                cases.append((name, f"sprof/{header}.hpp", True))
            for private in private_headers(name):
                cases.append((name, f"{name}/{private}", True))
            for other, (_, _, other_headers) in self.stages.items():
                if other in visible:
                    continue
                if other_headers:
                    cases.append((name, f"sprof/{other_headers[0]}.hpp", False))
                privates = private_headers(other)
                if privates:
                    cases.append((name, f"{other}/{privates[0]}", False))
        self.assertGreater(len([c for c in cases if not c[2]]), 20)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda c: preprocess(c[0], c[1]), cases))
        for (stage, include, allowed), (rc, err) in zip(cases, results):
            with self.subTest(stage=stage, include=include):
                if allowed:
                    self.assertEqual(rc, 0, f"stage {stage} cannot include {include}:\n{err}")
                else:
                    self.assertNotEqual(rc, 0, f"stage {stage} can include {include}, a stage it does not depend on")
                    self.assertIn("No such file", err)

    def test_cmd_includes_public_headers_only(self):
        stages = set(self.stages)
        include = re.compile(r'#include "([a-z_]+)/')
        for root, _, files in os.walk(os.path.join(SOURCE_DIR, "cmd")):
            for file in files:
                with open(os.path.join(root, file)) as f:
                    for number, line in enumerate(f, 1):
                        m = include.match(line)
                        if m and m.group(1) in stages:
                            self.fail(f"{file}:{number} includes a private header of stage {m.group(1)}")


if __name__ == "__main__":
    unittest.main()
