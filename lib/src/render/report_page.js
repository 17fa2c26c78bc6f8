// The sprof report page: draws the data embedded in the page (script#sprof-data) with uPlot and
// d3-flame-graph, both inlined before this script. No network access. window.sprofReport exposes
// the page's actions for tests.
"use strict";
(function () {
  var D = JSON.parse(document.getElementById("sprof-data").textContent);
  var A = D.analyze;
  var MODE_COLOURS = { TRAIN: "#1f77b4", EVAL: "#ff7f0e", PREDICT: "#2ca02c", GLOBAL: "#7f7f7f" };
  var LINE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                      "#bcbd22", "#17becf"];

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "onclick") e.addEventListener("click", attrs[k]);
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function table(parent, headers, rows, cls) {
    var t = el("table", cls ? { class: cls } : {});
    t.appendChild(el("thead", {}, [el("tr", {}, headers.map(function (h) { return el("th", { text: h }); }))]));
    var body = el("tbody");
    rows.forEach(function (r) {
      body.appendChild(el("tr", r.cls ? { class: r.cls } : {}, (r.cells || r).map(function (c) {
        return c instanceof Node ? el("td", {}, [c]) : el("td", { text: c === null || c === undefined ? "" : String(c) });
      })));
    });
    t.appendChild(body);
    parent.appendChild(t);
    return t;
  }
  function note(parent, text) { if (text) parent.appendChild(el("p", { class: "note", text: text })); }
  function seconds(s) {
    if (s === null || s === undefined || isNaN(s)) return "";
    return s < 1 ? (s * 1000).toFixed(1) + " ms" : s.toFixed(3) + " s";
  }
  function pct(x) { return (100 * x).toFixed(1) + " %"; }
  // Axis ticks that differ where the values do: a step-time axis of 1-2 ms reads 1.0 ms, 1.5 ms.
  function secondsTick(s) {
    if (s === null || s === undefined) return "";
    var a = Math.abs(s);
    if (a === 0) return "0";
    if (a < 1e-3) return +(s * 1e6).toPrecision(3) + " µs";
    if (a < 1) return +(s * 1e3).toPrecision(3) + " ms";
    return +s.toPrecision(3) + " s";
  }
  function unitTick(unit) {
    return function (v) {
      if (v === null || v === undefined) return "";
      if (unit === "%") return +v.toPrecision(3) + " %";
      var a = Math.abs(v), prefixes = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
      for (var i = 0; i < prefixes.length; ++i) {
        if (a >= prefixes[i][0]) return +(v / prefixes[i][0]).toPrecision(3) + " " + prefixes[i][1] + (unit || "");
      }
      return +v.toPrecision(3) + (unit ? " " + unit : "");
    };
  }
  // Every chart over time shares the job's time axis, so that a step lines up with its metrics.
  var JOB_S = Math.max(A.job.duration_s || 0, 1e-3);
  function timeAxes(yLabel, yTick) {
    return [{ label: "seconds since the job started", values: function (u, splits) { return splits.map(function (v) { return +v.toPrecision(4) + " s"; }); } },
            { label: yLabel, size: 80, values: function (u, splits) { return splits.map(yTick); } }];
  }
  function timeSeries() { return { label: "time" }; }
  function timeScales() { return { x: { time: false, range: [0, JOB_S] } }; }
  function section(id) { return document.getElementById(id); }
  // smdebug names a machine's system metrics algo-<n>; the job's machines say which host that is.
  var MACHINE_OF = {};
  (A.job.machines || []).forEach(function (m) { if (m.system_node) MACHINE_OF[m.system_node] = m.host; });
  function machineOf(node) { return MACHINE_OF[node] || node; }

  var PROCESS_BY_PID = {};
  (A.job.processes || []).forEach(function (p) { PROCESS_BY_PID[p.pid] = p; });
  function processLabel(pid) {
    var p = PROCESS_BY_PID[pid];
    return "pid " + pid + (p && p.role && p.role !== "main" ? " (" + p.role + ")" : "");
  }

  // Verdict: the biggest findings of the analysis with their numbers, largest share first (as
  // TensorBoard's overview opens on "input-bound X %"), then what the rules found.
  var VERDICT = [];
  (function () {
    var box = section("verdict"), findings = [];
    var loop = (A.iterations.modes || [])[0];
    if (loop) {
      findings.push({ id: "input", share: loop.input_wait_share,
                      text: "Input wait: " + pct(loop.input_wait_share) + " of the " + loop.mode + " loop's " + loop.iterations +
                            " iterations" + (loop.dataloader_s > 0 ? " (" + pct(loop.dataloader_share) + " in DataLoader fetches)" : "") +
                            (loop.verdict ? ": " + loop.verdict : "") });
    } else {
      findings.push({ id: "input", share: -1, text: "Input wait: not measured (" + (A.steps.note || "no training loop found") + ")" });
    }
    var g = A.gpu;
    if (g && g.present && g.devices && g.devices.length) {
      var worst = g.devices.slice().sort(function (a, b) { return b.idle_share - a.idle_share; })[0];
      findings.push({ id: "gpu", share: worst.idle_share,
                      text: "GPU idle: " + pct(worst.idle_share) + " of device " + worst.device + (worst.name ? " (" + worst.name + ")" : "") +
                            "'s " + seconds(worst.span_s) + "; computing " + pct(worst.compute_share) });
    } else {
      findings.push({ id: "gpu", share: -2, text: "GPU: " + (g && g.note ? g.note : "no GPU activity") });
    }
    // The hottest function of the training loop (the whole run's is `import torch`'s machinery in
    // a torch job), of the whole run when there is no loop: its own time against the loop's wall time.
    var loopPhase = ((A.phases || {}).phases || []).filter(function (p) { return p.phase === "training_loop"; })[0];
    var pool = loopPhase && loopPhase.top_functions && loopPhase.top_functions.length ? loopPhase.top_functions : (A.functions.top || []);
    var top = pool[0], whole = loopPhase && pool === loopPhase.top_functions ? loopPhase.seconds : A.functions.kept_s;
    if (top && whole > 0) {
      var share = Math.min(1, top.self_s / whole);
      findings.push({ id: "function", share: share,
                      text: "Hottest function" + (whole === A.functions.kept_s ? "" : " in the training loop") + ": " + top.function +
                            " (" + top.file.split("/").pop() + ":" + top.line + "), " + seconds(top.self_s) + " in itself" +
                            (top.waiting_s > 0 ? " (" + pct(top.waiting_s / top.self_s) + " of it off-CPU)" : "") + ", " +
                            pct(share) + " of the " + (whole === A.functions.kept_s ? "sampled time" : "loop's " + seconds(whole)) +
                            " (" + A.functions.time_view.description + ")" });
    } else {
      findings.push({ id: "function", share: -3, text: "Functions: " + (A.functions.note || "no samples") });
    }
    findings.sort(function (a, b) { return b.share - a.share; });
    var list = el("ol", { id: "verdict-list" });
    findings.forEach(function (f) { list.appendChild(el("li", { class: "finding finding-" + f.id, text: f.text })); });
    box.appendChild(list);
    var rules = A.rules || [], issues = rules.filter(function (r) { return r.status === "IssuesFound" && r.rule !== "ProfilerReport"; });
    var noData = rules.filter(function (r) { return r.status === "NoData"; }).length;
    note(box, issues.length ? "Rules: " + issues.length + " found issues: " + issues.map(function (r) { return r.rule; }).join(", ") + " (see Rules)"
                            : "Rules: none found issues" + (noData ? " (" + noData + " of " + rules.length + " had no data to judge)" : "") + ".");
    VERDICT = findings.map(function (f) { return f.id; });
  })();

  // Job overview.
  (function () {
    var j = A.job, rows = [];
    rows.push(["profile", A.profile]);
    if (j.command && j.command.length) rows.push(["command", j.command.join(" ")]);
    rows.push(["state", j.state + (j.exit_status !== null && j.exit_status !== undefined ? ", exit status " + j.exit_status : "")]);
    rows.push(["duration", seconds(j.duration_s)]);
    rows.push(["started", new Date(j.start_us / 1000).toISOString()]);
    rows.push(["processes", String((j.processes || []).length)]);
    (j.machines || []).forEach(function (m) {
      rows.push(["machine " + m.host, m.processes.length + " process" + (m.processes.length === 1 ? "" : "es") +
                 (m.processes.length ? " (" + m.processes.slice(0, 6).join(", ") + (m.processes.length > 6 ? ", ..." : "") + ")" : "") +
                 (m.system_node ? (m.processes.length ? "; " : "") + "system metrics" + (m.system_node !== m.host ? " as " + m.system_node : "") : "")]);
    });
    rows.push(["Python", (j.python_versions || []).join(", ")]);
    if (A.iterations.headline) rows.push(["training loop", A.iterations.headline.replace(/^training loop /, "")]);
    if (D.sampling.rate_hz) {
      rows.push(["sampling", D.sampling.rate_hz + " Hz asked, " + D.sampling.achieved_rate_hz.toFixed(0) + " Hz achieved, " +
                 D.sampling.thread_samples + " thread samples, " + (100 * D.sampling.invalid_share).toFixed(2) + " % invalid"]);
    }
    (A.own_costs || []).forEach(function (c) {
      rows.push(["sprof's own cost: " + c.name + (c.after_sampling ? " (after the job)" : ""),
                 seconds(c.cpu_s) + " CPU over " + seconds(c.wall_s) + " (" + pct(c.core_share) + " of a core)"]);
    });
    table(section("job"), ["", ""], rows, "kv");
    note(section("job"), (A.warnings || []).join("; "));
    var procs = j.processes || [];
    if (procs.length > 1) {
      section("job").appendChild(el("h3", { text: "Processes" }));
      table(section("job"), ["pid", "role", "Python", "samples", "command"], procs.map(function (p) {
        return [p.pid, p.role + (p.role !== "main" ? " of " + p.ppid : ""), p.python_version, p.samples, (p.cmdline || []).join(" ")];
      }), "processes-table");
    }
  })();

  // Flame graph: one chart, the view chosen in the list.
  var flame = null, flameViews = {}, flameSearchHits = 0, INITIAL_VIEW = null, STEP_BY_VIEW = {};
  D.steps.forEach(function (s) { STEP_BY_VIEW["step:" + s.pid + ":" + s.mode + ":" + s.step] = s; });
  (function () {
    var box = section("flame");
    if (!D.flames.length) { note(box, D.flames_note || "no samples"); return; }
    var select = el("select", { id: "flame-view" });
    D.flames.forEach(function (v) {
      flameViews[v.id] = v;
      select.appendChild(el("option", { value: v.id, text: v.label + " (" + v.samples + " samples)" }));
    });
    // The process filter: with several processes, the views of one (its whole run and its steps).
    var pids = [];
    D.flames.forEach(function (v) { var m = /^process:(\d+)$/.exec(v.id); if (m) pids.push(+m[1]); });
    var filter = el("select", { id: "flame-process" });
    filter.appendChild(el("option", { value: "", text: "all processes" }));
    pids.forEach(function (pid) { filter.appendChild(el("option", { value: String(pid), text: processLabel(pid) })); });
    filter.addEventListener("change", function () { filterProcess(filter.value); });
    var search = el("input", { id: "flame-search", type: "search", placeholder: "search (regular expression)" });
    var reset = el("button", { id: "flame-reset", text: "Reset zoom" });
    var matched = el("span", { id: "flame-matched" });
    box.appendChild(el("div", { class: "controls" }, (pids.length ? [filter] : []).concat([select, search, reset, matched])));
    var empty = el("p", { id: "flame-empty", class: "note" });
    box.appendChild(empty);
    var chart = el("div", { id: "flame-chart" });
    box.appendChild(chart);
    var details = el("div", { id: "flame-details", class: "note" });
    box.appendChild(details);
    note(box, D.flames_note);
    flame = flamegraph.default()
      .width(Math.max(600, chart.clientWidth || 1100))
      .cellHeight(18)
      .transitionDuration(0)
      .minFrameSize(1)
      .sort(true)
      .setDetailsElement(details)
      .setSearchHandler(function (results, sum, total) {
        flameSearchHits = results.length;
        matched.textContent = search.value ? results.length + " frames, " + (total ? (100 * sum / total).toFixed(1) : 0) + " % of the samples" : "";
      });
    // The page opens on the training loop (a torch job's whole run is mostly `import torch`).
    var loopView = flameViews["phase:training_loop"];
    var first = loopView && loopView.samples > 0 ? loopView : D.flames[0];
    select.value = first.id;
    d3.select(chart).datum(first.root).call(flame);
    INITIAL_VIEW = first.id;
    explainEmpty(first);
    select.addEventListener("change", function () { showView(select.value); });
    search.addEventListener("input", function () {
      if (search.value) flame.search(search.value); else { flame.clear(); matched.textContent = ""; }
    });
    reset.addEventListener("click", function () { flame.resetZoom(); });
  })();
  // A view without samples (a step shorter than the sampling interval) says how to get them.
  function explainEmpty(v) {
    var box = document.getElementById("flame-empty");
    if (!box) return;
    if (v.samples > 0) { box.textContent = ""; return; }
    var step = STEP_BY_VIEW[v.id], rate = D.sampling.rate_hz;
    box.textContent = "No sample fell in this " + (step ? "step (" + seconds(step.seconds) + ")" : "view") +
      (rate ? ": sampling at " + rate + " Hz takes one sample every " + seconds(1 / rate) : "") +
      ". Record again with a higher rate (sprof record --rate 1000) to see " + (step ? "steps this short." : "it.");
  }
  function filterProcess(pid) {
    var select = document.getElementById("flame-view");
    Array.prototype.forEach.call(select.options, function (o) {
      o.hidden = pid !== "" && !(o.value === "process:" + pid || o.value.indexOf("step:" + pid + ":") === 0);
    });
    showView(pid === "" ? INITIAL_VIEW : "process:" + pid);
  }
  function showView(id) {
    var v = flameViews[id];
    if (!v || !flame) return false;
    document.getElementById("flame-view").value = id;
    flame.update(v.root);
    explainEmpty(v);
    var q = document.getElementById("flame-search").value;
    if (q) flame.search(q);
    return true;
  }
  function stepView(s) { return "step:" + s.pid + ":" + s.mode + ":" + s.step; }
  function goToStep(s) {
    return function (e) {
      if (e) e.preventDefault();
      if (showView(stepView(s))) section("flame").scrollIntoView();
    };
  }

  // Iterations of the training loop's mode, in order: one stacked bar each, the step at the bottom,
  // then the input wait inside DataLoader fetches, then the rest of the wait. More iterations than
  // pixels share a column (their mean). Drawn on a canvas: thousands of steps stay cheap.
  function iterationBars(box, steps) {
    var it = A.iterations;
    if (!it.modes.length) return;
    var loop = it.modes[0];
    box.appendChild(el("h3", { text: "Iterations: input wait + step" }));
    box.appendChild(el("p", { id: "loop-headline", class: "headline", text: it.headline }));
    var rows = steps.filter(function (s) { return s.mode === loop.mode && s.wait_s !== null && s.wait_s !== undefined; })
                    .sort(function (a, b) { return a.start_s - b.start_s; });
    var width = Math.max(600, box.clientWidth || 1100), height = 200, left = 60, bottom = 20;
    var canvas = el("canvas", { id: "iterations-chart", width: width, height: height });
    box.appendChild(canvas);
    var columns = Math.min(rows.length, width - left), per = rows.length / columns, bars = [];
    for (var c = 0; c < columns; ++c) {
      var from = Math.floor(c * per), to = Math.max(from + 1, Math.floor((c + 1) * per)), b = [0, 0, 0];
      for (var i = from; i < to; ++i) {
        b[0] += rows[i].seconds; b[1] += rows[i].dataloader_s; b[2] += rows[i].wait_s - rows[i].dataloader_s;
      }
      bars.push(b.map(function (x) { return x / (to - from); }));
    }
    var top = 0;
    bars.forEach(function (b) { top = Math.max(top, b[0] + b[1] + b[2]); });
    var g = canvas.getContext("2d"), colours = ["#1f77b4", "#ff7f0e", "#bbbbbb"], barWidth = (width - left) / Math.max(1, columns);
    g.font = "11px sans-serif";
    g.fillStyle = "#333";
    g.fillText(seconds(top), 2, 10);
    g.fillText("0", 2, height - bottom);
    bars.forEach(function (b, c) {
      var y = height - bottom;
      b.forEach(function (v, k) {
        var h = top > 0 ? v / top * (height - bottom - 4) : 0;
        g.fillStyle = colours[k];
        g.fillRect(left + c * barWidth, y - h, Math.max(1, barWidth - (barWidth > 3 ? 1 : 0)), h);
        y -= h;
      });
    });
    note(box, loop.mode + " iterations in order (" + rows.length + (columns < rows.length ? ", " + per.toFixed(1) + " a column" : "") +
         "): blue the step, orange waiting in the DataLoader, grey the rest of the wait. p50: iteration " +
         seconds(loop.iteration.p50_s) + ", step " + seconds(loop.step.p50_s) + ", input wait " + seconds(loop.input_wait.p50_s) +
         "; p95: " + seconds(loop.iteration.p95_s) + ", " + seconds(loop.step.p95_s) + ", " + seconds(loop.input_wait.p95_s) + ".");
    table(box, ["mode", "iterations", "iteration p50", "p95", "step p50", "p95", "input wait p50", "p95", "waiting", "in DataLoader"],
          it.modes.map(function (m) {
            return [m.mode, m.iterations, seconds(m.iteration.p50_s), seconds(m.iteration.p95_s), seconds(m.step.p50_s),
                    seconds(m.step.p95_s), seconds(m.input_wait.p50_s), seconds(m.input_wait.p95_s), pct(m.input_wait_share),
                    m.dataloader_s > 0 ? pct(m.dataloader_share) : "-"];
          }), "iterations-table");
    if (it.wait_functions.length) {
      note(box, "While the " + loop.mode + " loop waited for input, its step threads were in: " + it.wait_functions.map(function (f) {
        return f.function + " " + pct(it.wait_sampled_s > 0 ? f.self_s / it.wait_sampled_s : 0);
      }).join(", ") + ".");
    }
  }

  // Timeline: a row per sampled thread (its leaf function over time, paler while off-CPU) and per
  // GPU stream, steps on top, on the job's time axis; hover names what ran. Canvas: cheap for the
  // tens of thousands of spans a long run has.
  var TIMELINE = { rows: 0, spans: 0, drawn: false };
  (function () {
    var box = section("timeline"), T = D.timeline;
    if (!T || !T.rows.length) { note(box, "no samples and no GPU activity to draw"); return; }
    var labelW = 230, rowH = 16, top = 18, width = Math.max(700, box.clientWidth || 1100);
    var height = top + rowH * T.rows.length + 20;
    var canvas = el("canvas", { id: "timeline-chart", width: width, height: height });
    box.appendChild(canvas);
    var hover = el("div", { id: "timeline-hover", class: "note", text: "hover a span for what ran" });
    box.appendChild(hover);
    var g = canvas.getContext("2d"), x = function (t) { return labelW + (width - labelW - 10) * t / JOB_S; };
    function colour(name, idle) {
      var h = 0;
      for (var i = 0; i < name.length; ++i) h = (h * 31 + name.charCodeAt(i)) >>> 0;
      return "hsl(" + (h % 360) + "," + (idle ? "25%" : "65%") + "," + (idle ? "80%" : "55%") + ")";
    }
    g.font = "11px sans-serif";
    // Steps, by mode, in the top band.
    D.steps.forEach(function (s) {
      g.fillStyle = MODE_COLOURS[s.mode] || "#999";
      g.fillRect(x(s.start_s), 2, Math.max(1, x(s.start_s + s.seconds) - x(s.start_s)), top - 6);
    });
    g.fillStyle = "#333";
    g.fillText("steps", 4, 12);
    T.rows.forEach(function (row, k) {
      var y = top + k * rowH;
      g.fillStyle = row.gpu ? "#7a3" : "#333";
      g.fillText(row.label.length > 34 ? row.label.slice(0, 33) + "…" : row.label, 4, y + 12);
      for (var i = 0; i < row.spans.length; i += 4) {
        g.fillStyle = colour(T.names[row.spans[i + 2]], row.spans[i + 3]);
        g.fillRect(x(row.spans[i]), y + 2, Math.max(1, x(row.spans[i + 1]) - x(row.spans[i])), rowH - 4);
        TIMELINE.spans++;
      }
    });
    g.fillStyle = "#333";
    for (var t = 0; t <= 4; ++t) g.fillText(secondsTick(JOB_S * t / 4), Math.min(x(JOB_S * t / 4), width - 50), height - 4);
    canvas.addEventListener("mousemove", function (e) {
      var r = canvas.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
      var k = Math.floor((py - top) / rowH), row = T.rows[k];
      if (!row || px < labelW) { hover.textContent = ""; return; }
      var t = (px - labelW) / (width - labelW - 10) * JOB_S;
      for (var i = 0; i < row.spans.length; i += 4) {
        if (row.spans[i] <= t && t < row.spans[i + 1]) {
          hover.textContent = row.label + ": " + T.names[row.spans[i + 2]] + (row.spans[i + 3] ? " (off-CPU)" : "") + ", " +
            secondsTick(row.spans[i]) + " to " + secondsTick(row.spans[i + 1]);
          return;
        }
      }
      hover.textContent = row.label + ": nothing sampled at " + secondsTick(t);
    });
    note(box, T.rows.length + " rows: each sampled thread's leaf function (paler: off-CPU)" +
         (T.rows.some(function (r) { return r.gpu; }) ? ", each GPU stream's kernels and copies" : "") +
         "; steps on top, coloured by mode." + (T.note ? " " + T.note + "." : ""));
    TIMELINE.rows = T.rows.length;
    TIMELINE.drawn = true;
  })();

  // Step times: one chart over the run, points per mode, outliers ringed in red; a click on a
  // point shows that step's flame graph.
  (function () {
    var box = section("steps");
    var steps = D.steps;
    if (!steps.length) { note(box, A.steps.note || "no steps"); return; }
    var order = steps.map(function (s, i) { return i; }).sort(function (a, b) { return steps[a].start_s - steps[b].start_s; });
    var modes = [];
    steps.forEach(function (s) { if (modes.indexOf(s.mode) < 0) modes.push(s.mode); });
    var xs = order.map(function (i) { return steps[i].start_s; });
    var data = [xs];
    var series = [timeSeries()];
    modes.forEach(function (m) {
      data.push(order.map(function (i) { return steps[i].mode === m ? steps[i].seconds : null; }));
      series.push({ label: m + " step", stroke: MODE_COLOURS[m] || "#333", paths: function () { return null; },
                    points: { show: true, size: 6, fill: MODE_COLOURS[m] || "#333" } });
    });
    data.push(order.map(function (i) { return steps[i].outlier ? steps[i].seconds : null; }));
    series.push({ label: "outlier", stroke: "#d62728", paths: function () { return null; },
                  points: { show: true, size: 12, width: 2, fill: "transparent", stroke: "#d62728" } });
    var div = el("div", { id: "steps-chart", class: "chart" });
    box.appendChild(div);
    var plot = new uPlot({ width: Math.max(600, box.clientWidth || 1100), height: 260, series: series, legend: { live: false },
                           scales: timeScales(), axes: timeAxes("step time", secondsTick) }, data, div);
    plot.over.addEventListener("click", function () {
      var i = plot.cursor.idx;
      if (i !== null && i !== undefined) goToStep(steps[order[i]])();
    });
    var stats = (A.steps.modes || []).map(function (m) {
      return [m.mode, m.node, m.count, seconds(m.mean_s), seconds(m.p50_s), seconds(m.p95_s), seconds(m.max_s),
              m.outliers + (m.outlier_steps.length ? " (" + m.outlier_steps.join(", ") + ")" : "")];
    });
    table(box, ["mode", "process", "steps", "mean", "p50", "p95", "max", "outliers (> mean + " + A.steps.outlier_stddev + " σ)"], stats);
    iterationBars(box, steps);
    // Several ranks or nodes: their step times side by side, the straggler named.
    var skew = A.steps.skew;
    if (skew) {
      box.appendChild(el("h3", { text: skew.mode + " step times by rank (the slowest sets the pace)" }));
      table(box, ["rank", "machine", "process", "steps", "mean", "p50", "p95", "vs fastest"], skew.ranks.map(function (r) {
        return { cls: r.node_id === skew.straggler ? "straggler" : "",
                 cells: [r.rank === null ? "-" : r.rank, r.host, r.node_id, r.steps, seconds(r.mean_s), seconds(r.median_s),
                         seconds(r.p95_s), "+" + pct(r.vs_fastest)] };
      }), "skew-table");
      if (skew.nodes.length > 1) {
        table(box, ["machine", "ranks", "steps", "p50", "vs fastest"], skew.nodes.map(function (n) {
          return { cls: n.host === skew.straggler_node ? "straggler" : "",
                   cells: [n.host, n.ranks, n.steps, seconds(n.median_s), "+" + pct(n.vs_fastest)] };
        }), "skew-nodes-table");
      }
      var slow = skew.ranks.filter(function (r) { return r.node_id === skew.straggler; })[0];
      note(box, "Straggler: " + (slow.rank === null ? "process " + slow.node_id : "rank " + slow.rank) + " on " + slow.host +
           ", its median step " + pct(skew.skew) + " slower than the fastest rank's" +
           (skew.straggler_node ? "; slowest machine: " + skew.straggler_node : "") + ".");
    }
    // The slowest steps and the outliers, each linked to its flame graph.
    var listed = steps.slice().sort(function (a, b) { return b.seconds - a.seconds; }).slice(0, 20);
    steps.forEach(function (s) { if (s.outlier && listed.indexOf(s) < 0) listed.push(s); });
    box.appendChild(el("h3", { text: "Slowest steps (click a step for its flame graph)" }));
    table(box, ["step", "mode", "pid", "time", "starts at"], listed.map(function (s) {
      var a = el("a", { href: "#flame", class: "step-link", "data-view": stepView(s), onclick: goToStep(s), text: String(s.step) });
      return { cls: s.outlier ? "outlier" : "", cells: [a, s.mode, s.pid, seconds(s.seconds), seconds(s.start_s)] };
    }), "steps-table");
  })();

  // System metrics over time, one chart per unit and node, steps shaded by mode.
  (function () {
    var box = section("system");
    if (!D.system.length) { note(box, D.system_note); return; }
    var bands = D.steps.map(function (s) { return [s.start_s, s.start_s + s.seconds, MODE_COLOURS[s.mode] || "#999"]; });
    D.system.forEach(function (node) {
      var units = {};
      node.series.forEach(function (s) { (units[s.unit || "value"] = units[s.unit || "value"] || []).push(s); });
      Object.keys(units).forEach(function (unit) {
        box.appendChild(el("h3", { text: machineOf(node.node) + ": " + unit }));
        var div = el("div", { class: "chart system-chart" });
        box.appendChild(div);
        var data = [node.t_s];
        var series = [timeSeries()], tick = unitTick(unit === "value" ? "" : unit);
        units[unit].forEach(function (s, k) {
          data.push(s.values.map(function (v) { return v === null ? null : v; }));
          series.push({ label: s.name, stroke: LINE_COLOURS[k % LINE_COLOURS.length], width: 1.5 });
        });
        new uPlot({ width: Math.max(600, box.clientWidth || 1100), height: 220, series: series, scales: timeScales(), legend: { live: false },
                    axes: timeAxes(unit, tick),
                    hooks: { drawClear: [function (u) {
                      var ctx = u.ctx, top = u.bbox.top, height = u.bbox.height;
                      ctx.save();
                      ctx.globalAlpha = 0.08;
                      bands.forEach(function (b) {
                        var x0 = u.valToPos(b[0], "x", true), x1 = u.valToPos(b[1], "x", true);
                        ctx.fillStyle = b[2];
                        ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
                      });
                      ctx.restore();
                    }] } }, data, div);
      });
    });
    note(box, "Shaded: the steps, coloured by mode (" + Object.keys(MODE_COLOURS).map(function (m) { return m.toLowerCase(); }).join(", ") + ").");
  })();

  // Top functions, job phases, dataloader share.
  (function () {
    var box = section("functions"), f = A.functions;
    if (!f.top || !f.top.length) { note(box, f.note || "no samples"); return; }
    var total = f.kept_s || 1;
    table(box, ["function", "where", "self", "self %", "total", "total %"], f.top.map(function (t) {
      return [t.function, t.file + ":" + t.line, seconds(t.self_s), pct(t.self_s / total), seconds(t.total_s), pct(t.total_s / total)];
    }));
    note(box, f.samples + " thread samples, " + f.kept_samples + " kept (" + seconds(f.kept_s) + "), " + f.idle_samples + " idle; " +
         f.processes + " processes, " + f.threads + " threads" + (f.note ? "; " + f.note : ""));
  })();
  (function () {
    var box = section("phases"), p = A.phases;
    if (!p.phases || !p.phases.length) { note(box, p.note); return; }
    table(box, ["phase", "time", "share", "top functions"], p.phases.map(function (ph) {
      return [ph.phase, seconds(ph.seconds), pct(ph.share), (ph.top_functions || []).map(function (t) { return t.function; }).join(", ")];
    }));
  })();

  // Rules, as smdebug's ProfilerReport lists them; a recommendation only where the rule found
  // issues (one for a rule that had no data to judge would be advice about nothing).
  (function () {
    var box = section("rules");
    if (!A.rules || !A.rules.length) { note(box, "no rules evaluated"); return; }
    table(box, ["rule", "verdict", "triggered", "violations", "datapoints", "parameters", "evidence", "recommendation"],
          A.rules.map(function (r) {
            return { cls: "rule-" + String(r.status).toLowerCase(),
                     cells: [r.rule, r.status, r.RuleTriggered, r.Violations, r.Datapoints, r.RuleParameters, r.evidence,
                             r.status === "IssuesFound" ? r.recommendation : ""] };
          }), "rules-table");
  })();

  // GPU.
  (function () {
    var box = section("gpu"), g = A.gpu;
    if (!g || !g.present) { note(box, g ? g.note : "no GPU activity"); return; }
    note(box, g.kernels + " kernels (" + seconds(g.kernel_s) + "), " + g.copies + " copies and memsets (" + seconds(g.copy_s) + ")");
    table(box, ["device", "name", "span", "compute", "other GPU work", "idle"], (g.devices || []).map(function (d) {
      return [d.device, d.name, seconds(d.span_s), pct(d.compute_share), pct(d.non_compute_share), pct(d.idle_share)];
    }));
    box.appendChild(el("h3", { text: "Top kernels" }));
    table(box, ["kernel", "instances", "total", "average", "share"], (g.top_kernels || []).map(function (k) {
      return [k.name, k.instances, seconds(k.total_s), (k.avg_us).toFixed(1) + " µs", pct(k.share)];
    }));
    box.appendChild(el("h3", { text: "Call sites" }));
    if (g.call_sites && g.call_sites.length) {
      table(box, ["Python line", "GPU time", "share", "kernels", "top kernel"], g.call_sites.map(function (c) {
        return [c.site, seconds(c.gpu_s), pct(c.share), c.kernels, c.top_kernel];
      }));
    } else {
      note(box, g.call_sites_note);
    }
  })();

  window.sprofReport = {
    views: function () { return D.flames.map(function (v) { return v.id; }); },
    showView: showView,
    flameFrames: function () { return document.querySelectorAll("#flame-chart g.frame").length; },
    flameRoot: function () { return flame ? document.querySelector("#flame-chart g.frame title").textContent : null; },
    search: function (term) { var s = document.getElementById("flame-search"); s.value = term; s.dispatchEvent(new Event("input")); return flameSearchHits; },
    clickStep: function (k) { var a = document.querySelectorAll("a.step-link")[k]; a.click(); return a.getAttribute("data-view"); },
    currentView: function () { var s = document.getElementById("flame-view"); return s ? s.value : null; },
    initialView: function () { return INITIAL_VIEW; },
    verdict: function () { return VERDICT; },
    flameHeight: function () { var s = document.querySelector("#flame-chart svg"); return s ? s.getBoundingClientRect().height : 0; },
    flameEmptyNote: function () { var e = document.getElementById("flame-empty"); return e ? e.textContent : ""; },
    filterProcess: function (pid) { filterProcess(String(pid)); return document.getElementById("flame-view").value; },
    timeline: function () { return TIMELINE; }
  };
})();
