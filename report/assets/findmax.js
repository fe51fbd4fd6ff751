// mqplan find-max's page: draws the trials from #findmax-data with uPlot,
// the value tried on x, the achieved send rate and the p99 latency as
// points, each coloured by its verdict. The chart's element gets
// data-drawn="true" and data-points (the points drawn) once drawn, and
// the body data-charts-drawn with the charts drawn (1, or 0 without
// trials), when the script has run to its end; script
// errors are counted on the body (data-errors) for the browser test.
(function () {
  "use strict";
  var body = document.body;
  body.dataset.errors = "0";
  window.addEventListener("error", function (e) {
    body.dataset.errors = String(Number(body.dataset.errors) + 1);
    body.dataset.lastError = String(e.message);
  });
  var data = JSON.parse(document.getElementById("findmax-data").textContent);
  var el = document.getElementById("findmax-chart");
  // Points sorted by value; uPlot wants ascending x.
  var trials = data.trials.slice().sort(function (a, b) { return a.value - b.value; });
  var xs = [], rate = [], p99 = [];
  trials.forEach(function (t) {
    xs.push(t.value);
    rate.push(t.send_rate === null ? null : t.send_rate);
    p99.push(t.p99_seconds === null ? null : t.p99_seconds * 1000);
  });
  var colour = { PASS: "#1a7f37", FAIL: "#cf222e", INCOMPLETE: "#bf8700", UNHEALTHY: "#bf8700" };
  var drawnPoints = 0;
  // drawPoints paints series si's points, each in its trial's colour,
  // a confirmation larger, a p99 point hollow.
  function drawPoints(u, si, hollow) {
    var ctx = u.ctx, scale = u.series[si].scale;
    ctx.save();
    trials.forEach(function (t, i) {
      var y = u.data[si][i];
      if (y === null || y === undefined) return;
      var cx = u.valToPos(u.data[0][i], "x", true), cy = u.valToPos(y, scale, true);
      var r = (t.confirm ? 6 : 4) * devicePixelRatio;
      ctx.beginPath();
      ctx.arc(cx, cy, r, 0, 2 * Math.PI);
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.strokeStyle = colour[t.verdict] || "#57606a";
      ctx.fillStyle = ctx.strokeStyle;
      if (hollow) ctx.stroke(); else ctx.fill();
      drawnPoints++;
    });
    ctx.restore();
  }
  function fromZero(u, min, max) { return [0, max > 0 ? max * 1.08 : 1]; }
  if (xs.length === 0) {
    el.textContent = "No trial ran.";
    el.dataset.drawn = "empty";
    body.dataset.chartsDrawn = "0";
    return;
  }
  var opts = {
    width: Math.max(320, Math.min(1000, el.clientWidth || 800)),
    height: 320,
    // Both axes from zero: a p99 axis cut at its lowest trial exaggerates
    // the noise between trials into a trend.
    scales: { x: { time: false }, rate: { range: fromZero }, ms: { range: fromZero } },
    axes: [
      { label: data.knob + " (" + data.unit + ")" },
      { scale: "rate", label: "sent/s" },
      { scale: "ms", side: 1, label: "p99 (ms)", grid: { show: false } }
    ],
    series: [
      {},
      { label: "sent/s", scale: "rate", stroke: "#0969da", width: 1, points: { show: false } },
      { label: "p99 (ms)", scale: "ms", stroke: "#8250df", width: 1, dash: [4, 4], points: { show: false } }
    ],
    hooks: {
      // uPlot draws after the constructor returns: what the test reads
      // is recorded once the points are painted.
      draw: [function (u) {
        drawnPoints = 0;
        drawPoints(u, 1, false);
        drawPoints(u, 2, true);
        el.dataset.drawn = "true";
        el.dataset.points = String(drawnPoints);
        body.dataset.chartsDrawn = "1";
      }]
    }
  };
  new uPlot(opts, [xs, rate, p99], el);
})();
