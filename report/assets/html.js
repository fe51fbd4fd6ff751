// mqplan's HTML report: draws the charts from the data in #mqplan-data
// with uPlot. Each chart's element gets data-drawn="true" and
// data-series (the series that have data) once drawn, data-series-pixels
// (per series, the canvas pixels in its colour: "p50=412;p99=388"), and
// the body data-charts-drawn with the count
// of charts drawn: the browser test reads them back from the DOM. Script
// errors are counted on the body (data-errors), so that a broken page
// shows it even where no console is read.
(function () {
  "use strict";
  var body = document.body;
  body.dataset.errors = "0";
  window.addEventListener("error", function (e) {
    body.dataset.errors = String(Number(body.dataset.errors) + 1);
    body.dataset.lastError = String(e.message);
  });

  var data = JSON.parse(document.getElementById("mqplan-data").textContent);
  // Ten colours: the percentile plots draw all groups and at most eight
  // groups (maxGroupCurves in html.go), each in its own.
  var palette = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#0a7ea4", "#d1242f", "#57606a", "#e16f24", "#6639ba"];
  // One tint per phase, the same in every report: steady is always green.
  var phaseFill = {
    connect: "rgba(9,105,218,0.07)", subscribe: "rgba(130,80,223,0.09)", warmup: "rgba(191,135,0,0.07)",
    ramp: "rgba(191,135,0,0.13)", steady: "rgba(26,127,55,0.06)", drain: "rgba(87,96,106,0.09)",
    disconnect: "rgba(207,34,46,0.07)"
  };
  var drawn = 0;
  // The page's colours (light, dark or print) for the axes and grid, read
  // from its stylesheet so that uPlot's canvas follows prefers-color-scheme.
  var css = getComputedStyle(document.documentElement);
  var axisColor = (css.getPropertyValue("--fg") || "#1f2328").trim();
  var gridColor = (css.getPropertyValue("--line") || "#d0d7de").trim();
  // plots are the charts drawn, for the wall-clock toggle's redraw.
  var plots = [];
  var wall = false;
  var wallBox = document.getElementById("wallclock");

  // fmtNum shows a legend figure with three significant digits at most,
  // without exponent.
  function fmtNum(v) {
    if (v == null || !isFinite(v)) return "-";
    var a = Math.abs(v);
    if (a >= 1000 || v === Math.round(v)) return String(Math.round(v));
    return String(Number(v.toPrecision(3)));
  }
  // seriesStats are a series' min, mean and max over its points with a
  // value, shown in the legend when the cursor is off the chart, so that a
  // screenshot, a PDF or a print has figures.
  function seriesStats(values) {
    var n = 0, sum = 0, lo = Infinity, hi = -Infinity;
    for (var i = 0; i < values.length; i++) {
      var v = values[i];
      if (v == null) continue;
      n++; sum += v;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (n === 0) return "no data";
    return "min " + fmtNum(lo) + " · mean " + fmtNum(sum / n) + " · max " + fmtNum(hi);
  }
  // wallTime is second t of the run as UTC wall-clock time (HH:MM:SS).
  function wallTime(t) {
    return new Date(data.started + t * 1000).toISOString().slice(11, 19);
  }

  // shadePhases fills each phase's span under the series, its name on top.
  function shadePhases(u) {
    var ctx = u.ctx, bb = u.bbox;
    ctx.save();
    ctx.font = (11 * devicePixelRatio) + "px system-ui, sans-serif";
    ctx.textBaseline = "top";
    data.phases.forEach(function (ph) {
      var x0 = u.valToPos(ph.start, "x", true), x1 = u.valToPos(ph.end, "x", true);
      x0 = Math.max(x0, bb.left);
      x1 = Math.min(x1, bb.left + bb.width);
      if (!(x1 > x0)) return;
      ctx.fillStyle = phaseFill[ph.name] || "rgba(87,96,106,0.06)";
      ctx.fillRect(x0, bb.top, x1 - x0, bb.height);
      // The name only where it fits: drain and disconnect are often
      // a sliver.
      if (ctx.measureText(ph.name).width + 6 * devicePixelRatio <= x1 - x0) {
        ctx.fillStyle = "#57606a";
        ctx.fillText(ph.name, x0 + 3 * devicePixelRatio, bb.top + 2 * devicePixelRatio);
      }
    });
    ctx.restore();
  }

  // seriesPixels counts the canvas pixels painted in one colour: called
  // right after a series is drawn (before the next can cover it), it is
  // the proof that the series' line was drawn, not just the axes and the
  // shading (whose colours are pale and translucent).
  function seriesPixels(u, hex) {
    var c = u.ctx.canvas, px = u.ctx.getImageData(0, 0, c.width, c.height).data, n = 0;
    var r = parseInt(hex.slice(1, 3), 16), g = parseInt(hex.slice(3, 5), 16), b = parseInt(hex.slice(5, 7), 16);
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] >= 250 && Math.abs(px[i] - r) <= 6 && Math.abs(px[i + 1] - g) <= 6 && Math.abs(px[i + 2] - b) <= 6) n++;
    }
    return n;
  }

  function hasData(col) {
    for (var i = 0; i < col.length; i++) if (col[i] != null) return true;
    return false;
  }

  // setText changes a legend cell's text in place: uPlot keeps its text
  // node and writes to it on every cursor move.
  function setText(el, text) {
    if (el.firstChild) el.firstChild.nodeValue = text;
    else el.appendChild(document.createTextNode(text));
  }

  // timeValues and timeLegend show the x axis of a chart over the run:
  // seconds since the start, or the wall-clock time when the toggle is on.
  function timeValues(u, splits) {
    return splits.map(function (v) { return wall ? wallTime(v) : fmtNum(v); });
  }
  function timeLegend(u, v) {
    if (v == null) return "";
    return wall ? wallTime(v) + " UTC (" + fmtNum(v) + " s)" : fmtNum(v) + " s";
  }

  // chart draws one chart into the element id: series are {label, values,
  // color?, dash?, stats?} (stats: the legend's text off the cursor, its
  // min, mean and max by default); opts may set the x axis (xLog, xValues) and the y unit.
  function chart(id, x, series, opts) {
    var el = document.getElementById(id);
    if (!el) return;
    opts = opts || {};
    var title = el.dataset.title || "";
    var withData = series.filter(function (s) { return hasData(s.values); });
    // A timeline of one point draws no line: a run that ended within its
    // first second (an INCOMPLETE run with milliseconds of data) shows a
    // note, not a full-size empty chart.
    var tooShort = !opts.xLog && !opts.xRange && x.length < 2;
    if (x.length === 0 || withData.length === 0 || tooShort) {
      el.innerHTML = "";
      var h = document.createElement("h3");
      h.textContent = title;
      var p = document.createElement("p");
      p.className = "empty";
      p.textContent = tooShort && withData.length > 0 ?
        "No data to chart: the run lasted " + fmtNum(data.elapsed * 1000) + " ms, less than the two seconds a line needs." :
        "No data: the run measured nothing for this chart.";
      el.appendChild(h);
      el.appendChild(p);
      el.dataset.drawn = "empty";
      el.dataset.series = "0";
      return;
    }
    var width = Math.max(400, el.clientWidth || 1200);
    var colors = series.map(function (s, i) { return s.color || palette[i % palette.length]; });
    var counts = series.map(function () { return 0; });
    var xscale = { time: false, distr: opts.xLog ? 3 : 1 };
    if (opts.xRange) {
      xscale.range = function () { return opts.xRange; };
    } else if (!opts.xLog) {
      // The whole run, from its start: connect and subscribe have no
      // point of their own when they last less than a second.
      xscale.range = function (u, min, max) { return [0, Math.max(max, data.elapsed)]; };
    }
    var uopts = {
      title: title,
      width: width,
      height: opts.height || 240,
      // From zero: a rate or a latency read against a cut axis looks
      // worse (or better) than it is.
      scales: { x: xscale, y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.08 : 1]; } } },
      axes: [
        { label: opts.xLabel || "seconds since start", values: opts.xValues || timeValues, splits: opts.xSplits,
          stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor } },
        { label: opts.yLabel || "", size: 60, stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor } }
      ],
      series: [{ label: opts.xName || "second", value: opts.xLegend || timeLegend }].concat(series.map(function (s, i) {
        return {
          label: s.label,
          stroke: colors[i],
          fill: opts.bars ? colors[i] : undefined,
          paths: opts.bars ? uPlot.paths.bars({ size: [0.85, 80] }) : undefined,
          width: opts.bars ? 0 : 1.5,
          dash: s.dash,
          spanGaps: !!opts.spanGaps,
          points: { show: !opts.bars && x.length <= 60 }
        };
      })),
      hooks: {
        drawClear: opts.phases === false ? [] : [shadePhases],
        drawSeries: [function (u, si) {
          // Counted on the first drawing only: a redraw (zoom, resize)
          // need not read the canvas back again.
          if (!el.dataset.drawn) counts[si - 1] = seriesPixels(u, colors[si - 1]);
        }],
        setLegend: [function (u) { if (u.cursor.idx == null) legendStats(u); }],
        draw: [function (u) {
          if (el.dataset.drawn) return;
          legendStats(u);
          el.dataset.drawn = "true";
          el.dataset.series = String(withData.length);
          el.dataset.seriesPixels = series.map(function (s, i) { return s.label + "=" + counts[i]; }).join(";");
        }]
      }
    };
    // Off the chart, the legend shows each series' min, mean and max
    // (uPlot's "--" says nothing on a screenshot or a print).
    var legendText = series.map(function (s) { return s.stats || seriesStats(s.values); });
    function legendStats(u) {
      var cells = u.root.querySelectorAll(".u-legend .u-series");
      for (var i = 1; i < cells.length && i <= legendText.length; i++) {
        var v = cells[i].querySelector(".u-value");
        if (v) setText(v, legendText[i - 1]);
      }
      if (cells.length > 0) {
        var xv = cells[0].querySelector(".u-value");
        if (xv) setText(xv, "");
      }
    }
    var cols = [x].concat(series.map(function (s) { return s.values; }));
    var u = new uPlot(uopts, cols, el);
    if (!opts.xLog && !opts.xRange) plots.push(u);
    drawn++;
  }

  var tl = data.timeline;
  var tg = tl.groups || {};
  var leftOut = tl.leftOut || {};

  // perGroup adds a series per group for metric m (dashed, "label
  // group"), when at least two groups have data for it: with one, the
  // group's line is the total's. ids collects the metrics whose groups
  // were cut short, for the note under the chart.
  function perGroup(series, m, label, notes) {
    var gs = tg[m] || [];
    if (gs.length < 2) return series;
    gs.forEach(function (g) {
      series.push({ label: label + " " + g.group, values: g.values, dash: [5, 3] });
    });
    if (leftOut[m] > 0) notes.push(leftOut[m] + " more groups' " + label + " left out here; the JSON and CSV results have them all.");
    return series;
  }
  // bucketNotes say, on a long run's thinned charts, how each point
  // aggregates its seconds (data.bucket of them).
  var bucketNotes = data.bucketNotes || {};
  var thinned = (data.bucket || 1) > 1;
  function noteAfter(id, notes) {
    if (bucketNotes[id]) notes = notes.concat([bucketNotes[id]]);
    var el = document.getElementById(id);
    if (!el) return;
    // Each goes right under the chart: the last first, so they read in order.
    notes.slice().reverse().forEach(function (text) {
      var p = document.createElement("p");
      p.className = "note";
      p.textContent = text;
      el.after(p);
    });
  }

  var notes = [];
  var rate = [{ label: "sent/s", values: tl.sent }];
  perGroup(rate, "sent", "sent/s", notes);
  rate.push({ label: "received/s", values: tl.received, dash: (tg.received || []).length >= 2 ? undefined : [6, 3] });
  perGroup(rate, "received", "received/s", notes);
  chart("chart-rate", tl.t, rate, { yLabel: "msg/s" });
  noteAfter("chart-rate", notes);

  notes = [];
  chart("chart-latency", tl.t, perGroup([
    { label: "p50", values: tl.p50 },
    { label: "p99", values: tl.p99 },
    { label: "max", values: tl.max }
  ], "p99", "p99", notes), { yLabel: "ms" });
  noteAfter("chart-latency", notes);

  notes = [];
  chart("chart-connections", tl.t, perGroup([
    { label: "connected", values: tl.connected },
    { label: "down (lost, not back)", values: tl.lost }
  ], "connected", "connected", notes), { yLabel: "clients" });
  noteAfter("chart-connections", notes);

  // Thinned, a point is the sum over its seconds, not a rate.
  var per = thinned ? " per " + data.bucket + " s" : "/s";
  chart("chart-errors", tl.t, [
    { label: "errors" + per, values: tl.errors },
    { label: "disconnects" + per, values: tl.disconnects }
  ], { yLabel: thinned ? "per " + data.bucket + " s" : "per second" });
  noteAfter("chart-errors", []);

  notes = [];
  chart("chart-lag", tl.t, perGroup([
    { label: "lag max", values: tl.lag }
  ], "lag", "lag max", notes), { yLabel: "ms" });
  noteAfter("chart-lag", notes);

  // The charts of figures sampled once a second beside the run's own
  // (the processes' CPU and memory), each drawn from its series alone.
  (data.charts || []).forEach(function (c) {
    chart(c.id, tl.t, c.series.map(function (s) {
      return { label: s.label, values: s.values, color: s.color || undefined };
    }), { yLabel: c.unit });
    noteAfter(c.id, []);
  });

  // The percentile plots: x is 1/(1-p), log scale, so that 90%, 99%,
  // 99.9% ... are evenly spaced; the maximum (p = 100) sits at one in
  // samples, where it belongs among N samples.
  function percentileLabel(x) {
    if (x <= 1) return "0%";
    var p = 100 * (1 - 1 / x);
    var s = p.toFixed(6).replace(/0+$/, "").replace(/\.$/, "");
    return s + "%";
  }
  function distChart(id, name) {
    var ds = data.dists.filter(function (d) { return d.name === name; });
    var tables = ds.map(function (d) {
      var xs = [], ys = [];
      for (var i = 0; i < d.p.length; i++) {
        var x = d.p[i] >= 100 ? Math.max(d.samples, xs.length ? xs[xs.length - 1] : 1) : 1 / (1 - d.p[i] / 100);
        // Equal x (the maximum at the last percentile's place) keeps the
        // larger value: x must increase for uPlot.
        if (xs.length && x <= xs[xs.length - 1]) {
          ys[ys.length - 1] = Math.max(ys[ys.length - 1], d.v[i]);
          continue;
        }
        xs.push(x);
        ys.push(d.v[i]);
      }
      return [xs, ys];
    });
    if (tables.length === 0) {
      chart(id, [], [], {});
      return;
    }
    var joined = uPlot.join(tables);
    var left = (data.distsLeftOut || {})[name] || 0;
    if (left > 0) {
      var note = document.createElement("p");
      note.className = "note";
      note.textContent = left + " more groups' curves are left out here; the JSON result has them all.";
      document.getElementById(id).after(note);
    }
    var series = ds.map(function (d, i) {
      return { label: (d.group === "" ? "all groups" : "group " + d.group) + " (" + d.samples + ")", values: joined[i + 1],
        dash: d.group === "" ? undefined : [6, 3], color: palette[i % palette.length] };
    });
    chart(id, joined[0], series, {
      xLog: true, phases: false, spanGaps: true, height: 280,
      xLabel: "percentile", xName: "percentile",
      xLegend: function (u, v) { return v == null ? "-" : percentileLabel(v); },
      xValues: function (u, splits) { return splits.map(percentileLabel); },
      // One tick per nine: 0%, 90%, 99%, 99.9% ...
      xSplits: function (u, axisIdx, min, max) {
        var s = [];
        for (var x = 1; x <= max * 1.0001; x *= 10) s.push(x);
        return s;
      },
      yLabel: "ms"
    });
  }
  distChart("chart-dist-e2e", "e2e");
  distChart("chart-dist-ack", "ack");

  // The latency histograms: a bar per bucket, labelled by its upper
  // bound, on a categorical axis (the buckets are already log-spaced).
  function histChart(id, name) {
    var h = (data.hists || []).filter(function (d) { return d.name === name; })[0];
    if (!h || !h.counts || h.counts.length === 0) {
      chart(id, [], [], {});
      return;
    }
    var xs = h.counts.map(function (c, i) { return i; });
    var label = function (i) { return i == null || h.upper[i] == null ? "" : "≤ " + fmtNum(h.upper[i]) + " ms"; };
    chart(id, xs, [{ label: "count", values: h.counts, color: palette[0], stats: h.samples + " in all, in " + xs.length + " buckets" }], {
      bars: true, phases: false, height: 220, xRange: [-0.5, xs.length - 0.5],
      xLabel: "latency bucket (upper bound)", xName: "bucket",
      xLegend: function (u, v) { return label(v); },
      // At most about a dozen labels, so that they do not run together.
      xValues: function (u, splits) {
        var step = Math.ceil(xs.length / 12);
        return splits.map(function (v) { return v === Math.round(v) && v % step === 0 ? label(v) : ""; });
      },
      xSplits: function () { return xs; },
      yLabel: "count"
    });
  }
  histChart("chart-hist-e2e", "e2e");
  histChart("chart-hist-ack", "ack");

  // The wall-clock toggle redraws the charts over the run with UTC times
  // on their x axis (to line them up with a broker's log or Grafana).
  if (wallBox) {
    if (!data.started) {
      wallBox.disabled = true;
      wallBox.parentNode.title = "the run's start time is not known";
    }
    wallBox.addEventListener("change", function () {
      wall = wallBox.checked;
      plots.forEach(function (u) {
        u.axes[0].label = wall ? "UTC time" : "seconds since start";
        u.redraw(false, true);
      });
      body.dataset.wallclock = String(wall);
    });
  }

  body.dataset.chartsDrawn = String(drawn);
})();
