/* The sprof diff page: a differential flame graph from the embedded data (red grew, blue shrank,
   by time per step). */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("sprof-diff-data").textContent);
  var box = document.getElementById("flame-chart");
  var width = document.getElementById("flame-width");
  var details = document.getElementById("flame-details");
  if (!D.flame) { return; }
  // Widths from one side (NEW by default: what the change runs; BASE shows what vanished); the
  // colour is always NEW - BASE, in µs per step.
  function tree(n, side) {
    var out = { name: n.name, value: Math.max(side === "base" ? n.base_us : n.new_us, 0), delta: n.new_us - n.base_us,
                base_us: n.base_us, new_us: n.new_us };
    if (n.children) out.children = n.children.map(function (c) { return tree(c, side); });
    return out;
  }
  // Brendan Gregg's differential colours: the largest change of any frame is the deepest red (grew)
  // or blue (shrank), the others in proportion; unchanged frames grey. (d3-flame-graph's own mapper
  // weighs a change against its frame's width, which leaves a slowdown in a wide frame pale.)
  var maxDelta = 0;
  (function walk(n) {
    maxDelta = Math.max(maxDelta, Math.abs(n.new_us - n.base_us));
    (n.children || []).forEach(walk);
  })(D.flame);
  function color(d, original) {
    if (d.highlight) return original;
    var delta = d.data.delta, v = maxDelta > 0 ? Math.min(Math.abs(delta) / maxDelta, 1) : 0;
    if (v < 0.01) return "rgb(220,220,220)";
    var fade = Math.round(220 * (1 - v));
    return delta > 0 ? "rgb(235," + fade + "," + fade + ")" : "rgb(" + fade + "," + fade + ",235)";
  }
  var flame = flamegraph.default()
    .width(Math.max(600, box.clientWidth || 1100))
    .cellHeight(18)
    .transitionDuration(0)
    .minFrameSize(1)
    .sort(true)
    .computeDelta(false)
    .setColorMapper(color)
    .setDetailsElement(details)
    .setLabelHandler(function (d) {
      var b = d.data.base_us, n = d.data.new_us, change = n - b;
      return d.data.name + ": " + (b / 1000).toFixed(3) + " → " + (n / 1000).toFixed(3) + " ms per step (" +
        (change >= 0 ? "+" : "") + (change / 1000).toFixed(3) + " ms)";
    });
  function draw() {
    box.innerHTML = "";
    d3.select(box).datum(tree(D.flame, width.value)).call(flame);
    document.body.setAttribute("data-flame-drawn", width.value);
  }
  width.addEventListener("change", draw);
  draw();
})();
