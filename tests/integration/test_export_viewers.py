"""sprof's exports opened in the viewers people open them in.

The flame graph SVG (`export -f flamegraph`, `fetch-by-step ... -f flamegraph`) of the recorded
profile in tests/golden/profiles/train: well-formed SVG, one frame per node of the stack tree
that the collapsed export of the same selection gives, widths in proportion to the samples, the
script that zooms and searches inlined and nothing fetched from anywhere; then opened in headless
Chromium (Debian's package, which scripts/install-deps installs): no console error, labels drawn,
search highlights, a click zooms and Reset restores.

The speedscope and collapsed exports loaded into speedscope itself (the built app, vendored in
third_party/speedscope), as its command-line tool loads a file: imported without an error, and
its Sandwich view's heaviest function by self time is the one the collapsed stacks say.

Each browser test saves a screenshot under the build directory (test-screenshots/) for people to
look at."""

import collections
import json
import os
import re
import unittest
import xml.etree.ElementTree as ET

from browser_testlib import BrowserTestCase, screenshots_dir
from chrome_trace_checks import coverage, nesting_problems
from sprof_testlib import SOURCE_DIR, TempDirTestCase, run_sprof

PROFILE = os.path.join(SOURCE_DIR, "tests", "golden", "profiles", "train")
SVG = "{http://www.w3.org/2000/svg}"


def fold_import_machinery(frames):
    """The SVG's rule (man page, export): each run of importlib's frames drawn as one frame."""
    out = []
    for frame in frames:
        machinery = " (<frozen importlib._bootstrap" in frame
        if machinery and out and out[-1] == "[import machinery]":
            continue
        out.append("[import machinery]" if machinery else frame)
    return tuple(out)


def collapsed_tree(text):
    """{path tuple: samples} for every prefix of every folded stack, import machinery folded."""
    tree = collections.Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = fold_import_machinery(stack.split(";"))
        total += int(count)
        for depth in range(1, len(frames) + 1):
            tree[frames[:depth]] += int(count)
    return tree, total


def svg_tree(path):
    """(root element, {path tuple: samples}, total) from the frames' titles and data attributes,
    the path rebuilt from depth and position (a frame's parent is the frame one level down whose
    sample range holds it)."""
    root = ET.parse(path).getroot()
    frames = []
    for g in root.iter(SVG + "g"):
        if "f" not in g.get("class", "").split():
            continue
        title = g.find(SVG + "title").text
        name = title[:title.rindex(" (")]
        frames.append((int(g.get("data-d")), int(g.get("data-x")), int(g.get("data-w")), name, g))
    frames.sort(key=lambda f: (f[0], f[1]))
    paths = {}
    by_depth = collections.defaultdict(list)
    for d, x, w, name, g in frames:
        if d == 0:
            path = ()
        else:
            parents = [p for p in by_depth[d - 1] if p[0] <= x and x + w <= p[0] + p[1]]
            assert len(parents) == 1, "frame %s at depth %d has %d parents" % (name, d, len(parents))
            path = parents[0][2] + (name,)
        by_depth[d].append((x, w, path))
        paths[path] = paths.get(path, 0) + w
    total = paths.pop((), 0)
    return root, paths, total


class FlamegraphExportTest(TempDirTestCase):
    def check_against_collapsed(self, svg_args, collapsed_args):
        svg = os.path.join(self.tmp, "graph.svg")
        if svg_args[0] == "export":
            run_sprof(*svg_args, "-o", svg, check=0)
        else:  # the selection commands print it
            with open(svg, "w", encoding="utf-8") as f:
                f.write(run_sprof(*svg_args, check=0).stdout)
        collapsed, total = collapsed_tree(run_sprof(*collapsed_args, check=0).stdout)
        root, paths, svg_total = svg_tree(svg)
        self.assertGreater(total, 0)
        self.assertEqual(svg_total, total)
        # Every node of the collapsed tree wider than the drawing threshold (0.1 px of 1180) is a
        # frame with its samples.
        width = float(root.get("data-width")) - 2 * float(root.get("data-pad"))
        for path, samples in collapsed.items():
            if samples * width / total >= 0.1:
                self.assertEqual(paths.get(path), samples, "frame %s" % (path,))
        self.assertEqual(set(paths) - set(collapsed), set(), "frames that no stack has")
        # Self-contained: the script is inline and nothing refers to the network.
        scripts = list(root.iter(SVG + "script"))
        self.assertEqual(len(scripts), 1)
        self.assertIn("function zoom", scripts[0].text)
        self.assertIsNone(scripts[0].get("href"))
        with open(svg, encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn("http://", text.replace("http://www.w3.org/2000/svg", ""))
        self.assertNotIn("https://", text)
        return root

    def test_whole_profile(self):
        root = self.check_against_collapsed(["export", PROFILE, "-f", "flamegraph"],
                                            ["export", PROFILE, "-f", "collapsed"])
        title = root.find(SVG + "text[@id='title']").text
        self.assertIn("wall time of the step threads", title)  # export's default view

    def test_idle_samples_and_name_inference(self):
        svg = os.path.join(self.tmp, "all.svg")
        proc = run_sprof("export", PROFILE, "--idle", "-o", svg, check=0)
        self.assertIn("samples", proc.stderr)
        _, _, total = svg_tree(svg)
        _, collapsed_total = collapsed_tree(run_sprof("export", PROFILE, "--idle", "-f", "collapsed", check=0).stdout)
        self.assertEqual(total, collapsed_total)

    def test_step_selection(self):
        args = ["fetch-by-step", PROFILE, "--step", "2", "--end-step", "6"]
        self.check_against_collapsed(args + ["-f", "flamegraph"], args + ["-f", "collapsed"])

    def test_names_are_escaped(self):
        # A title with XML's special characters still gives a well-formed file.
        svg = os.path.join(self.tmp, "esc.svg")
        run_sprof("export", PROFILE, "-f", "flamegraph", "--title", "a <b> & \"c\"", "-o", svg, check=0)
        root = ET.parse(svg).getroot()
        self.assertEqual(root.find(SVG + "text[@id='title']").text, "a <b> & \"c\"")


# Opens the SVG in an iframe and drives it through the script's own actions (window.flamegraph),
# writing what it saw into the page, which --dump-dom prints.
HARNESS = """<!doctype html><html><body>
<iframe id="f" src="graph.svg" width="1200" height="700"></iframe>
<pre id="result">pending</pre>
<script>
document.getElementById("f").addEventListener("load", function () {
  var w = this.contentWindow, r = {};
  try {
    var fg = w.flamegraph, doc = w.document;
    r.frames = fg.frames();
    r.labelled = Array.prototype.filter.call(doc.querySelectorAll("g.f text"),
                                             function (t) { return t.textContent.length > 0; }).length;
    r.hit = fg.search("^busy ");
    r.matched = doc.getElementById("matched").textContent;
    r.highlighted = doc.querySelectorAll("g.match").length;
    fg.search(null);
    r.highlighted_after_reset = doc.querySelectorAll("g.match").length;
    var g = doc.querySelector("g.f[data-d='2']");
    r.clicked_samples = +g.getAttribute("data-w");
    g.dispatchEvent(new w.MouseEvent("click"));
    r.zoomed_width = +g.querySelector("rect").getAttribute("width");
    r.zoomed_frames = fg.frames();
    r.reset_shown = !doc.getElementById("unzoom").classList.contains("hide");
    doc.getElementById("unzoom").dispatchEvent(new w.MouseEvent("click"));
    r.unzoomed_frames = fg.frames();
  } catch (e) { r.error = String(e); }
  document.getElementById("result").textContent = JSON.stringify(r);
});
</script></body></html>
"""


class FlamegraphBrowserTest(BrowserTestCase):
    def test_opens_and_responds_in_chromium(self):
        svg = os.path.join(self.tmp, "graph.svg")
        run_sprof("export", PROFILE, "-f", "flamegraph", "-o", svg, check=0)
        collapsed, total = collapsed_tree(run_sprof("export", PROFILE, "-f", "collapsed", check=0).stdout)
        busy = sum(n for path, n in collapsed.items() if path[-1].startswith("busy (")
                   and not any(p.startswith("busy (") for p in path[:-1]))
        r, console = self.run_harness(HARNESS)
        self.assertNotIn("error", r)
        self.assertEqual(console, [], "console messages")
        _, paths, _ = svg_tree(svg)
        self.assertEqual(r["frames"], len(paths) + 1)  # and the root
        self.assertGreater(r["labelled"], 5)
        self.assertEqual(r["hit"], busy)
        self.assertEqual(r["matched"], "Matched: %.1f%%" % (100.0 * busy / total))
        self.assertGreater(r["highlighted"], 0)
        self.assertEqual(r["highlighted_after_reset"], 0)
        self.assertAlmostEqual(r["zoomed_width"], 1180, delta=0.5)  # the clicked frame fills the width
        self.assertLess(r["zoomed_frames"], r["frames"])
        self.assertTrue(r["reset_shown"])
        self.assertEqual(r["unzoomed_frames"], r["frames"])

        png = os.path.join(screenshots_dir(self.tmp), "flamegraph.png")
        proc = self.browser("--hide-scrollbars", "--window-size=1200,600", "--screenshot=" + png, "file://" + svg)
        self.assertTrue(os.path.getsize(png) > 10000, proc.stderr[-2000:])


SPEEDSCOPE = os.path.join(SOURCE_DIR, "third_party", "speedscope", "release", "index.html")

# After the import: switch to the Sandwich view and write its table's first ten rows (the
# heaviest functions by self time, three cells each) into the page.
SANDWICH_PROBE = """;
(function () {
  var clicked = false, tries = 0;
  function poll() {
    var text = document.body ? document.body.innerText : "";
    if (!clicked) {
      var tab = Array.prototype.filter.call(document.querySelectorAll("div"), function (d) {
        return d.children.length === 1 && /Sandwich$/.test(d.textContent); })[0];
      // The tabs show once a profile is imported.
      if (tab) { tab.click(); clicked = true; }
    }
    // The table is a virtual list: its first row from the rendered text (Total, Self, Symbol Name).
    var at = text.indexOf("Symbol Name");
    var lines = at < 0 ? [] : text.substring(at + "Symbol Name".length).split("\\n")
        .map(function (l) { return l.trim(); }).filter(function (l) { return l.length > 0; });
    if (lines.length >= 3 || ++tries > 100) {
      var pre = document.createElement("pre");
      pre.id = "probe";
      pre.textContent = JSON.stringify({found: lines.length >= 3, cells: lines.slice(0, 30), title: document.title});
      document.body.appendChild(pre);
      return;
    }
    setTimeout(poll, 100);
  }
  setTimeout(poll, 100);
})();
"""


class SpeedscopeBrowserTest(BrowserTestCase):
    def load(self, path, screenshot):
        import base64
        with open(path, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        loader = os.path.join(self.tmp, "load.js")
        with open(loader, "w") as f:
            f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps(os.path.basename(path)), json.dumps(data)))
            f.write(SANDWICH_PROBE)
        url = "file://%s#localProfilePath=%s" % (SPEEDSCOPE, loader)
        proc = self.browser("--allow-file-access-from-files", "--virtual-time-budget=15000", "--window-size=1200,800",
                            "--enable-logging=stderr", "--v=0", "--dump-dom", url)
        errors = [l for l in proc.stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "rror" in l)]
        self.assertEqual(errors, [], "console errors")
        imported = [l for l in proc.stderr.splitlines() if "CONSOLE" in l and "Importing as" in l]
        m = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
        self.assertIsNotNone(m, "speedscope did not show the sandwich view (stderr: %s)" % proc.stderr[-2000:])
        probe = json.loads(m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
        self.browser("--allow-file-access-from-files", "--virtual-time-budget=5000", "--hide-scrollbars",
                     "--window-size=1200,800", "--screenshot=" + os.path.join(screenshots_dir(self.tmp), screenshot), url)
        return imported, probe

    def heaviest_self_weight(self, path):
        """(function name, share of the weight) of the frame with the most self weight in a
        speedscope file."""
        with open(path) as f:
            doc = json.load(f)
        frames = doc["shared"]["frames"]
        weights = collections.Counter()
        total = 0
        for p in doc["profiles"]:
            for sample, weight in zip(p["samples"], p["weights"]):
                weights[(frames[sample[-1]]["name"], frames[sample[-1]].get("file"), frames[sample[-1]].get("line"))] += weight
                total += weight
        (name, _, _), w = weights.most_common(1)[0]
        return name, w / total

    def heaviest_self(self):
        """(function name, share of samples) of the leaf with the most samples, from the collapsed export."""
        counts = collections.Counter()
        total = 0
        for line in run_sprof("export", PROFILE, "-f", "collapsed", check=0).stdout.splitlines():
            stack, _, count = line.rpartition(" ")
            counts[stack.split(";")[-1]] += int(count)
            total += int(count)
        leaf, n = counts.most_common(1)[0]
        return leaf[:leaf.rindex(" (")], n / total

    def test_speedscope_export(self):
        path = os.path.join(self.tmp, "train.speedscope.json")
        run_sprof("export", PROFILE, "-o", path, check=0)
        imported, probe = self.load(path, "speedscope-json.png")
        self.assertTrue(any("speedscope json" in l for l in imported), imported)
        # Weights are the samples' measured intervals.
        name, share = self.heaviest_self_weight(path)
        self.assertTrue(probe["found"], probe)
        self.assertEqual(probe["cells"][2], name, probe)
        self.assertEqual(name, self.heaviest_self()[0])
        shown = float(re.search(r"\(([0-9.]+)%\)", probe["cells"][1]).group(1))
        self.assertAlmostEqual(shown, 100 * share, delta=1)

    def test_chrome_trace_export(self):
        # The Chrome trace (Trace Event Format): speedscope imports its slices, one profile per
        # thread; the first thread's heaviest rows by self time are the training script's
        # functions (the Python slices cover the steps whole: steps keep little self time), the
        # sleeping checkpoint among them (wall time is export's default).
        path = os.path.join(self.tmp, "train.trace.json")
        run_sprof("export", PROFILE, "-f", "chrome", "-o", path, check=0)
        imported, probe = self.load(path, "speedscope-chrome-trace.png")
        self.assertTrue(any("trace event" in l.lower() or "chrome" in l.lower() for l in imported), imported)
        self.assertTrue(probe["found"], probe)
        self.assertEqual(probe["title"], "train.trace.json - speedscope")
        names = [c.split(" {")[0] for c in probe["cells"][2::3]]
        self.assertEqual(names[0], "busy", probe)
        self.assertIn("slow_checkpoint", names, probe)
        with open(path) as f:
            slices = {e["name"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X"}
        self.assertTrue({"Step:ModeKeys.TRAIN", "forward_backward", "load_batch"} <= slices, slices)

    def test_chrome_trace_nests_as_written(self):
        # Issue 26: stacks drawn upside down (equal slices leaf first), Python slices crossing step
        # edges (dropped by viewers), holes where the sampling interval jittered, timestamps finer
        # than a double holds. The golden profile's steps run on the sampled thread.
        path = os.path.join(self.tmp, "train.trace.json")
        run_sprof("export", PROFILE, "-f", "chrome", "-o", path, check=0)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        partial, upside_down, fractional = nesting_problems(events)
        self.assertEqual(partial[:3], [])
        self.assertEqual(upside_down[:3], [])
        self.assertEqual(fractional, 0)
        module = [e for e in events if e.get("ph") == "X" and e["name"] == "<module>"][0]
        # The script's <module> frame is on every sample of the main thread: its slices cover its
        # span but for the one gap an off-CPU stretch of the runtime leaves.
        self.assertGreater(coverage(events, "<module>", module["pid"], module["tid"]), 0.95)

    def test_collapsed_export(self):
        path = os.path.join(self.tmp, "train.folded")
        run_sprof("export", PROFILE, "-o", path, check=0)
        imported, probe = self.load(path, "speedscope-collapsed.png")
        self.assertTrue(any("collapsed" in l.lower() for l in imported), imported)
        name, share = self.heaviest_self()
        self.assertTrue(probe["found"], probe)
        # speedscope names a frame of folded stacks by its whole text, file and line included.
        self.assertTrue(probe["cells"][2].startswith(name + " ("), probe)
        shown = float(re.search(r"\(([0-9.]+)%\)", probe["cells"][1]).group(1))
        self.assertAlmostEqual(shown, 100 * share, delta=1)


if __name__ == "__main__":
    unittest.main()
