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

HARNESS = """<!doctype html><html><body>
<iframe id="f" src="report.html" width="1280" height="1000"></iframe>
<pre id="result">pending</pre>
<script>
document.getElementById("f").addEventListener("load", function () {
  var w = this.contentWindow, r = {};
  try {
    var R = w.sprofReport, doc = w.document;
    r.views = R.views();
    r.frames_all = R.flameFrames();
    r.root = R.flameRoot();
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
        self.assertGreater(r["frames_all"], 20)
        samples = analyze["functions"]["kept_samples"]
        self.assertIn("%d samples" % samples, r["root"])
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
        self.assertLess(r["frames_step"], r["frames_all"])
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
        self.assertGreater(r["frames_all"], 5)
        self.assertEqual(r["drawn_charts"], r["charts"])
        for name in ("<!--<script>", "</script><script>"):
            self.assertGreater(self.search(name), 0, name)

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
