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

  // chart draws one chart into the element id: series are {label, values,
  // color?, dash?}; opts may set the x axis (xLog, xValues) and the y unit.
  function chart(id, x, series, opts) {
    var el = document.getElementById(id);
    if (!el) return;
    opts = opts || {};
    var title = el.dataset.title || "";
    var withData = series.filter(function (s) { return hasData(s.values); });
    if (x.length === 0 || withData.length === 0) {
      el.innerHTML = "";
      var h = document.createElement("h3");
      h.textContent = title;
      var p = document.createElement("p");
      p.className = "empty";
      p.textContent = "No data: the run measured nothing for this chart.";
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
    if (!opts.xLog) {
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
        { label: opts.xLabel || "seconds since start", values: opts.xValues, splits: opts.xSplits },
        { label: opts.yLabel || "", size: 60 }
      ],
      series: [{ label: opts.xName || "second", value: opts.xLegend }].concat(series.map(function (s, i) {
        return {
          label: s.label,
          stroke: colors[i],
          width: 1.5,
          dash: s.dash,
          spanGaps: !!opts.spanGaps,
          points: { show: x.length <= 60 }
        };
      })),
      hooks: {
        drawClear: opts.phases === false ? [] : [shadePhases],
        drawSeries: [function (u, si) {
          // Counted on the first drawing only: a redraw (zoom, resize)
          // need not read the canvas back again.
          if (!el.dataset.drawn) counts[si - 1] = seriesPixels(u, colors[si - 1]);
        }],
        draw: [function (u) {
          if (el.dataset.drawn) return;
          el.dataset.drawn = "true";
          el.dataset.series = String(withData.length);
          el.dataset.seriesPixels = series.map(function (s, i) { return s.label + "=" + counts[i]; }).join(";");
        }]
      }
    };
    var cols = [x].concat(series.map(function (s) { return s.values; }));
    new uPlot(uopts, cols, el);
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

  body.dataset.chartsDrawn = String(drawn);
})();
