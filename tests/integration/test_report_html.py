"""`sprof report` (and `analyze --html`): one self-contained HTML page, opened in headless
Chromium. The page loads with no console error and no request outside the file, every chart has
drawn, the flame graph has frames, clicking a step in the slowest-steps list switches the flame
graph to that step, and a search finds frames. Made from the recorded profile in
tests/golden/profiles/train; a screenshot of the whole page goes under the build directory
(test-screenshots/report.png)."""

import json
import os
import re
import unittest

from browser_testlib import BrowserTestCase, screenshots_dir
from sprof_testlib import DEBIAN_PYTHON, SOURCE_DIR, hostile_names_workload, run_sprof

PROFILE = os.path.join(SOURCE_DIR, "tests", "golden", "profiles", "train")

# Steps whose functions are named like HTML that would end or comment out a <script> element.
HOSTILE = hostile_names_workload(["<!--<script>", "</script><script>", "busy"])

# Two forked workers (as DataLoader's or a pool's) busy for 3 s, and 40 steps of 2 ms, one of 0.3 s; first an
# import 15 modules deep that runs for 0.4 s at its bottom.
WORKERS = """
import multiprocessing, os, time
import sprof

def busy(seconds):
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass

def worker(seconds):
    busy(seconds)

if __name__ == "__main__":
    import deep.m0
    multiprocessing.set_start_method("fork")
    # 3 s: record looks for new children once a second.
    workers = [multiprocessing.Process(target=worker, args=(3.0,)) for _ in range(2)]
    for w in workers:
        w.start()
    sprof.set_mode(sprof.TRAIN)
    for step in range(40):
        with sprof.step_context():
            busy(0.3 if step == 20 else 0.002)
    for w in workers:
        w.join()
"""

HARNESS = """<!doctype html><html><body>
<iframe id="f" src="report.html" width="1280" height="1000"></iframe>
<pre id="result">pending</pre>
<script>
document.getElementById("f").addEventListener("load", function () {
  var w = this.contentWindow, r = {};
  try {
    var R = w.sprofReport, doc = w.document;
    r.views = R.views();
    r.initial = R.initialView();
    r.verdict = R.verdict();
    r.verdict_text = Array.prototype.map.call(doc.querySelectorAll("#verdict-list li"), function (li) { return li.textContent; });
    r.flame_height = R.flameHeight();
    r.empty_note = R.flameEmptyNote();
    r.timeline = R.timeline();
    r.timeline_drawn = (function () { var c = doc.getElementById("timeline-chart"); if (!c) return false;
      var d = c.getContext("2d").getImageData(230, 20, c.width - 240, c.height - 40).data;
      for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) return true; return false; })();
    r.process_options = Array.prototype.map.call(doc.querySelectorAll("#flame-process option"), function (o) { return o.textContent; });
    r.roles = Array.prototype.map.call(doc.querySelectorAll("table.processes-table tbody tr"), function (tr) {
      return tr.querySelectorAll("td")[1].textContent; });
    r.frames_all = R.flameFrames();
    r.root = R.flameRoot();
    r.empty_step_note = "";
    R.views().filter(function (v) { return v.indexOf("step:") === 0; }).some(function (v) {
      R.showView(v); r.empty_step_note = R.flameEmptyNote(); return r.empty_step_note !== ""; });
    R.showView(r.initial);
    r.initial_note = R.flameEmptyNote();
    r.charts = doc.querySelectorAll(".uplot").length;
    r.drawn_charts = Array.prototype.filter.call(doc.querySelectorAll(".uplot canvas"), function (c) {
      var d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
      return false; }).length;
    r.rules = doc.querySelectorAll("table.rules-table tbody tr").length;
    r.rule_rows = Array.prototype.map.call(doc.querySelectorAll("table.rules-table tbody tr"), function (tr) {
      var c = tr.querySelectorAll("td"); return [c[1].textContent, c[7].textContent]; });
    r.step_links = doc.querySelectorAll("a.step-link").length;
    r.clicked = R.clickStep(0);
    r.current = R.currentView();
    r.frames_step = R.flameFrames();
    r.root_step = R.flameRoot();
    r.hits = R.search("^busy");
    r.resources = w.performance.getEntriesByType("resource").map(function (e) { return e.name; });
  } catch (e) { r.error = String(e) + " " + e.stack; }
  document.getElementById("result").textContent = JSON.stringify(r);
});
</script></body></html>
"""


class ReportHtmlTest(BrowserTestCase):
    def test_report_opens_and_responds(self):
        page = os.path.join(self.tmp, "report.html")
        proc = run_sprof("report", PROFILE, "-o", page, check=0)
        self.assertIn("flame graphs", proc.stderr)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        # Self-contained: no external script, style or image.
        self.assertIsNone(re.search(r'<(script|link|img)[^>]+(src|href)=', html))
        self.assertLess(len(html), 5e6)
        analyze = json.loads(run_sprof("analyze", "-f", "json", PROFILE, check=0).stdout)
        r, console = self.run_harness(HARNESS)
        self.assertNotIn("error", r)
        self.assertEqual(console, [], "console messages")
        self.assertEqual(r["resources"], [], "the page fetched something")
        # Views: the whole run twice, every mode, every phase, every step.
        steps = sum(m["count"] for m in analyze["steps"]["modes"])
        phases = len(analyze["phases"]["phases"])
        modes = len(analyze["steps"]["modes"])
        self.assertEqual(len(r["views"]), 2 + modes + phases + steps)
        # The page opens on the training loop's flame graph, under a verdict of three findings,
        # the largest first (here the hot function: the golden job is CPU-bound, without a GPU).
        self.assertEqual(r["initial"], "phase:training_loop")
        self.assertEqual(sorted(r["verdict"]), ["function", "gpu", "input"])
        self.assertEqual(r["verdict"][0], "function")
        self.assertIn("Hottest function in the training loop: busy (train.py:9)", r["verdict_text"][0])
        self.assertTrue(any(t.startswith("Input wait: ") for t in r["verdict_text"]), r["verdict_text"])
        self.assertTrue(any(t.startswith("GPU: ") for t in r["verdict_text"]), r["verdict_text"])
        self.assertGreater(r["frames_all"], 5)
        self.assertIn("samples", r["root"])
        # The timeline drew the main thread's spans and the steps.
        self.assertEqual(r["timeline"]["rows"], 1)
        self.assertGreater(r["timeline"]["spans"], 10)
        self.assertTrue(r["timeline_drawn"])
        # Steps chart and one chart per unit of system metrics, all drawn.
        self.assertGreaterEqual(r["charts"], 2)
        self.assertEqual(r["drawn_charts"], r["charts"])
        self.assertEqual(r["rules"], len(analyze["rules"]))
        # A recommendation only where a rule found issues (issue 31: NoData rules gave advice).
        for verdict, recommendation in r["rule_rows"]:
            if verdict != "IssuesFound":
                self.assertEqual(recommendation, "", verdict)
        self.assertTrue(any(v == "NoData" for v, _ in r["rule_rows"]), r["rule_rows"])
        # The first step listed is the slowest: clicking it shows its flame graph.
        slowest = analyze["steps"]["slowest"][0]
        self.assertEqual(r["step_links"], steps)  # fewer than 20 steps: all listed
        self.assertEqual(r["clicked"], r["current"])
        self.assertTrue(r["current"].startswith("step:") and r["current"].endswith(":%s:%s" % (slowest["mode"], slowest["step"])),
                        (r["current"], slowest))
        self.assertNotEqual(r["root_step"], r["root"])
        self.assertGreater(r["hits"], 0)

        png = os.path.join(screenshots_dir(self.tmp), "report.png")
        self.browser("--hide-scrollbars", "--window-size=1280,3200", "--virtual-time-budget=5000",
                     "--screenshot=" + png, "file://" + page)
        self.assertGreater(os.path.getsize(png), 50000)

    def test_hostile_function_names_leave_every_section_drawn(self):
        # A function named "<!--<script>" made the embedded data's <script> element swallow the
        # page's own script: a blank page (issue 29, defect 7). JSON data now holds '<' as \u003c.
        script = os.path.join(self.tmp, "hostile.py")
        with open(script, "w") as f:
            f.write(HOSTILE)
        profile = os.path.join(self.tmp, "p")
        run_sprof("record", "-o", profile, "-r", "200", "--", DEBIAN_PYTHON, script, check=0)
        page = os.path.join(self.tmp, "report.html")
        run_sprof("report", profile, "-o", page, check=0)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        data = html[html.index('id="sprof-data">'):]
        data = data[:data.index("</script>")]
        self.assertNotIn("<", data[len('id="sprof-data">'):])
        r, console = self.run_harness(HARNESS)
        self.assertNotIn("error", r)
        self.assertEqual(console, [], "console messages")
        self.assertGreater(len(r["views"]), 2)
        self.assertGreaterEqual(r["frames_all"], 3)
        self.assertEqual(r["drawn_charts"], r["charts"])
        for name in ("<!--<script>", "</script><script>"):
            self.assertGreater(self.search(name), 0, name)

    def test_workers_empty_steps_and_deep_imports(self):
        # A job whose steps are mostly shorter than the sampling interval, with two forked workers
        # and a 15-module-deep import chain (about 100 frames): the processes are labelled and filterable, a step
        # without samples says how to get them, and the import chain folds so that the flame graph
        # fits its height.
        pkg = os.path.join(self.tmp, "deep")
        os.makedirs(pkg)
        for k in range(15):
            with open(os.path.join(pkg, "m%d.py" % k), "w") as f:
                f.write("import time\n" + ("from deep import m%d\n" % (k + 1) if k < 14 else
                                            "t = time.perf_counter()\nwhile time.perf_counter() - t < 0.4: pass\n"))
        open(os.path.join(pkg, "__init__.py"), "w").close()
        script = os.path.join(self.tmp, "workers.py")
        with open(script, "w") as f:
            f.write(WORKERS)
        profile = os.path.join(self.tmp, "p")
        run_sprof("record", "--subprocesses", "-o", profile, "-r", "50", "--", DEBIAN_PYTHON, script, check=0, cwd=self.tmp)
        page = os.path.join(self.tmp, "report.html")
        run_sprof("report", profile, "-o", page, check=0)
        analyze = json.loads(run_sprof("analyze", "-f", "json", profile, check=0).stdout)
        roles = sorted(p["role"] for p in analyze["job"]["processes"])
        self.assertEqual(roles, ["main", "worker", "worker"])
        r, console = self.run_harness(HARNESS)
        self.assertNotIn("error", r)
        self.assertEqual(console, [], "console messages")
        self.assertEqual(sorted(r["roles"])[:1], ["main"])
        self.assertEqual(len(r["process_options"]), 4)  # all, and each process
        self.assertEqual(sum("worker" in o for o in r["process_options"]), 2)
        self.assertGreaterEqual(r["timeline"]["rows"], 3)
        self.assertTrue(r["timeline_drawn"])
        # Of 39 steps of 2 ms at 50 Hz some have no sample (each has one with odds near 1 in 10): the
        # page says how to get some; a view with samples says nothing.
        self.assertIn("No sample fell in this step", r["empty_step_note"])
        self.assertIn("sprof record --rate", r["empty_step_note"])
        self.assertEqual(r["initial_note"], "")
        # The whole run holds the ~100-frame import chain; folded, the chart stays under 60 rows of 18 px.
        r, _ = self.run_harness(HARNESS.replace("R.showView(r.initial);", 'R.showView("all"); r.all_height = R.flameHeight();'))
        self.assertGreater(r["all_height"], 0)
        self.assertLess(r["all_height"], 60 * 18)

    def search(self, name):
        pattern = json.dumps(re.escape(name)).replace("<", "\\u003c")  # inside the harness's own <script>
        r, _ = self.run_harness(HARNESS.replace('R.search("^busy")', "R.search(%s)" % pattern))
        return r["hits"]

    def test_analyze_html_writes_the_same_report(self):
        page = os.path.join(self.tmp, "a.html")
        proc = run_sprof("analyze", PROFILE, "--html", page, check=0)
        self.assertIn("TOP FUNCTIONS", proc.stdout)  # the text page still prints
        with open(page, encoding="utf-8") as f:
            self.assertIn('id="sprof-data"', f.read())

    def test_bad_output_path(self):
        path = os.path.join(self.tmp, "no", "such", "dir", "r.html")
        proc = run_sprof("report", PROFILE, "-o", path, check=1)  # the man page's I/O exit status
        self.assertIn(path + ": cannot write", proc.stderr)


if __name__ == "__main__":
    unittest.main()
