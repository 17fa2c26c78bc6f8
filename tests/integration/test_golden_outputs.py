"""Golden outputs: what sprof prints for fixed inputs in the repository (a recorded profile in
tests/golden/profiles/train, smdebug's own test traces, the vendored kineto traces), compared byte
for byte with tests/golden/expected/. They pin what users read (the rendered pages, the pstats
tables, the GPU views, the exports, the report's data, and the errors: message and status) so
that moving code between stages is proven to change nothing. After a deliberate change of
output, `tests/golden/regenerate` rewrites them; read the diff before committing."""

import os
import shutil
import subprocess
import tempfile
import unittest

from sprof_testlib import SOURCE_DIR, SPROF_BIN

GOLDEN = os.path.join(SOURCE_DIR, "tests", "golden")
EXPECTED = os.path.join(GOLDEN, "expected")
PROFILE = "profiles/train"  # relative: the outputs name it as given
SMDEBUG = "../../third_party/smdebug-test-resources/test_traces"
KINETO = "../../third_party/kineto-traces"
CORRUPT = "profiles/corrupt-manifest"  # a sprof.json that is not JSON
UPDATE = os.environ.get("SPROF_UPDATE_GOLDEN") == "1"

CASES = [
    ("analyze.txt", ["analyze", PROFILE]),
    ("analyze.json", ["analyze", "-f", "json", PROFILE]),
    ("analyze-smdebug.txt", ["analyze", SMDEBUG]),
    ("rules.txt", ["rules", PROFILE]),
    ("rules.json", ["rules", "-f", "json", PROFILE]),
    ("rules-smdebug.json", ["rules", "-f", "json", SMDEBUG]),
    ("rules-smdebug.csv", ["rules", "-f", "csv", SMDEBUG]),
    ("list-stats.txt", ["list-stats", PROFILE]),
    ("list-stats.csv", ["list-stats", "-f", "csv", PROFILE]),
    ("nodes.txt", ["nodes", PROFILE]),
    ("fetch-by-step-samples.txt", ["fetch-by-step", PROFILE, "--step", "2", "--end-step", "6"]),
    ("fetch-by-step-stats.txt", ["fetch-by-step", PROFILE, "--step", "2", "--end-step", "6", "--source", "stats"]),
    ("fetch-by-step-eval.json", ["fetch-by-step", PROFILE, "--mode", "eval", "--step", "0", "--end-step", "2",
                                 "-f", "json"]),
    ("fetch-by-step-cpu.csv", ["fetch-by-step", PROFILE, "--step", "5", "--python-timer", "cpu_time", "-f", "csv"]),
    ("by-phase-training.txt", ["by-phase", "--training-phase", PROFILE, "-l", "8"]),
    ("by-phase-job.json", ["by-phase", "--job-phase", "-f", "json", PROFILE]),
    ("pre-step-zero.txt", ["pre-step-zero", PROFILE, "--sort", "tottime", "-l", "15"]),
    ("post-hook-close.txt", ["post-hook-close", PROFILE, "-l", "15"]),
    ("export-collapsed.txt", ["export", "-f", "collapsed", PROFILE]),
    ("export-speedscope.json", ["export", "-f", "speedscope", PROFILE]),
    ("export-chrome.json", ["export", "-f", "chrome", PROFILE]),
    ("markers.txt", ["markers", PROFILE]),
    ("gpu-kernels.txt", ["gpu", KINETO + "/simple_add-benchmark_result_493459_1694039959_trace.json.gz", "kernels"]),
    ("gpu-breakdown.json", ["gpu", KINETO + "/alexnet-benchmark_result_2869224_1695835535_trace.json.gz", "breakdown",
                            "-f", "json"]),
    ("gpu-launch.csv", ["gpu", KINETO + "/nccl_parser_config-nccl_data.json.gz", "launch", "-f", "csv"]),
    ("gpu-idle.txt", ["gpu", KINETO + "/trace_filter-sampled_rank-0.json.gz", "idle"]),
    ("report-data.json", ["report", PROFILE, "-o", "{tmp}/report.html"]),
]

# Errors: the message on stderr and the status are what users read.
ERROR_CASES = [
    ("error-missing-profile.txt", ["analyze", "profiles/no-such-profile"]),
    ("error-not-a-profile.txt", ["analyze", "expected"]),
    ("error-corrupt-manifest.txt", ["analyze", CORRUPT]),
    ("error-usage.txt", ["fetch-by-step", PROFILE, "--start-step", "two"]),
    ("error-unknown-command.txt", ["analyse-this", PROFILE]),
    ("error-s3-no-bucket.txt", ["--endpoint-url", "{endpoint}", "--retries", "0", "analyze", "s3://no-such-bucket/job"]),
]


def report_data(html):
    """The report page's data block (the page around it is vendored libraries and the script)."""
    start = html.index('id="sprof-data">') + len('id="sprof-data">')
    return html[start:html.index("</script>", start)] + "\n"


class GoldenOutputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sprof-golden-")
        cls.server = None
        cls.endpoint = None

    @classmethod
    def tearDownClass(cls):
        if cls.server is not None:
            cls.server.kill()
            cls.server.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def s3_endpoint(self):
        if self.endpoint is None:
            from test_s3 import SECRET, start_server
            type(self).server, type(self).endpoint = start_server(self.tmp)
            type(self).s3_env = {"AWS_ACCESS_KEY_ID": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET,
                                 "AWS_REGION": "us-east-1"}
        return self.endpoint

    def run_case(self, args):
        env = dict(os.environ, TZ="UTC", LC_ALL="C", XDG_CACHE_HOME=os.path.join(self.tmp, "cache"))
        real = []
        for a in args:
            if "{endpoint}" in a:
                a = a.replace("{endpoint}", self.s3_endpoint())
                env.update(self.s3_env)
            real.append(a.replace("{tmp}", self.tmp))
        return subprocess.run([SPROF_BIN, "--color", "never"] + real, cwd=GOLDEN, capture_output=True, text=True,
                              env=env, timeout=300)

    def compare(self, name, args, got, stderr):
        path = os.path.join(EXPECTED, name)
        if UPDATE:
            with open(path, "w") as f:
                f.write(got)
            return
        with self.subTest(output=name):
            self.assertTrue(os.path.exists(path), "%s is missing: run tests/golden/regenerate" % path)
            with open(path) as f:
                want = f.read()
            self.assertEqual(got, want, "sprof %s differs from %s (stderr: %s)" % (" ".join(args), path, stderr[-2000:]))

    def test_outputs_match(self):
        if not SPROF_BIN:
            raise unittest.SkipTest("SPROF_BIN is not set")
        os.makedirs(EXPECTED, exist_ok=True)
        for name, args in CASES:
            proc = self.run_case(args)
            out = proc.stdout
            if name == "report-data.json":
                with open(os.path.join(self.tmp, "report.html"), encoding="utf-8") as f:
                    out = report_data(f.read())
            self.compare(name, args, "$ sprof %s\nexit %d\n%s" % (" ".join(args), proc.returncode, out), proc.stderr)

    def test_errors_match(self):
        if not SPROF_BIN:
            raise unittest.SkipTest("SPROF_BIN is not set")
        for name, args in ERROR_CASES:
            proc = self.run_case(args)
            stderr = proc.stderr.replace(self.endpoint or "{endpoint}", "{endpoint}")
            self.assertNotEqual(proc.returncode, 0, name)
            self.compare(name, args, "$ sprof %s\nexit %d\nstdout:\n%sstderr:\n%s" % (
                " ".join(args), proc.returncode, proc.stdout, stderr), proc.stderr)

    def test_enough_cases(self):
        self.assertGreaterEqual(len(CASES) + len(ERROR_CASES), 30)
        self.assertGreaterEqual(len(ERROR_CASES), 5)


if __name__ == "__main__":
    unittest.main()
