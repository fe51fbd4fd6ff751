package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/internal/browsertest"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

func renderHTML(t *testing.T, r *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHTMLEscapes: what a plan or a broker wrote (names, descriptions,
// error messages) is text in the page, never markup or script, wherever it
// lands: in the body or in the chart data inside a script element.
func TestHTMLEscapes(t *testing.T) {
	const inject = `</script><img src=x onerror=alert(1)>`
	tests := []struct {
		name   string
		modify func(*Result)
	}{
		{"plan name", func(r *Result) { r.Plan.Name = inject }},
		{"description", func(r *Result) { r.Plan.Description = inject }},
		{"error sample", func(r *Result) { r.ErrorSamples = []string{inject} }},
		{"warning", func(r *Result) { r.Warnings = append(r.Warnings, inject) }},
		{"threshold", func(r *Result) { r.Thresholds[0].Expr = inject }},
		{"group name in the chart data", func(r *Result) { r.Distributions[1].Group = inject }},
		{"incomplete reason", func(r *Result) { r.Incomplete = inject }},
		{"baseline file name", func(r *Result) { r.Comparison = Compare(r, r, inject, "this run", DefaultTolerance) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPlan("p99 < 10ms")
			r := Evaluate(p, compile(t, p), fullStats(t))
			tt.modify(r)
			out := renderHTML(t, r)
			if strings.Contains(out, "<img") || strings.Contains(out, "onerror=alert(1)>") {
				t.Errorf("the page carries the injected markup")
			}
			if n := strings.Count(out, "</script>"); n != 3 {
				t.Errorf("%d </script> in the page, want the 3 of its own scripts", n)
			}
		})
	}
}

// TestHTMLSelfContained: the page fetches nothing (no src, no stylesheet
// link, no import) and its inlined assets cannot end their element early.
func TestHTMLSelfContained(t *testing.T) {
	for _, a := range []struct{ name, text, end string }{
		{"uPlot's script", uplotJS, "</script"}, {"the page script", pageJS, "</script"},
		{"uPlot's styles", uplotCSS, "</style"}, {"the page styles", pageCSS, "</style"},
	} {
		low := strings.ToLower(a.text)
		if strings.Contains(low, a.end) || strings.Contains(low, "<!--") {
			t.Errorf("%s contains %s or <!--: it cannot be inlined as it is", a.name, a.end)
		}
	}
	fetch := regexp.MustCompile(`(?i)\ssrc\s*=|<link\b|@import|url\(\s*['"]?(https?:)?//`)
	links := regexp.MustCompile(`(?i)href\s*=\s*"([^"]*)"`)
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			out := renderHTML(t, tc.r)
			if m := fetch.FindString(out); m != "" {
				t.Errorf("the page would fetch something: %q", m)
			}
			for _, m := range links.FindAllStringSubmatch(out, -1) {
				if m[1] != "https://github.com/leeoniya/uPlot" {
					t.Errorf("unexpected link %q", m[1])
				}
			}
			if len(out) > 150<<10 {
				t.Errorf("%d bytes for a short run, more than 150 KiB", len(out))
			}
		})
	}
}

// longStats is the fixture's stats with a timeline of n steady seconds,
// both processes sampled, an error every 1000th second and a latency
// spike (max 5 s) at second spike.
func longStats(t *testing.T, n, spike int) *stats.Stats {
	st := fullStats(t)
	st.Timeline = make([]stats.Second, 0, n)
	for s := 1; s <= n; s++ {
		sec := stats.Second{
			At: time.Duration(s) * time.Second, Phase: phase.Steady, Connected: 8,
			Sent: 12345, Received: 12344, P50: 1234 * time.Microsecond, P99: 23456 * time.Microsecond,
			Max: 123456 * time.Microsecond, LagMax: 345 * time.Microsecond,
			Groups: []stats.GroupSecond{
				{Group: "sub", Connected: 4, Received: 12344, P50: 1234 * time.Microsecond, P99: 23456 * time.Microsecond, Max: 123456 * time.Microsecond},
				{Group: "pub", Connected: 4, Sent: 12345, LagMax: 345 * time.Microsecond},
			},
			Broker: stats.ProcSample{Sampled: true, CPU: 123.456 + float64(s%7), RSS: 123456789 + int64(s)*4096},
			Self:   stats.ProcSample{Sampled: true, CPU: 45.678, RSS: 98765432},
		}
		if s%1000 == 0 {
			sec.Errors, sec.Groups[1].Errors = 1, 1
		}
		if s == spike {
			sec.Max, sec.Groups[0].Max = 5*time.Second, 5*time.Second
		}
		st.Timeline = append(st.Timeline, sec)
	}
	st.Elapsed = time.Duration(n) * time.Second
	return st
}

// TestHTMLLongRun: an hour's timeline keeps the page within a few hundred
// kilobytes, with both processes' CPU and memory charted; a day's is
// thinned to maxChartPoints points a series (24 s each) and stays within
// 600 KiB as an hour does, its latency spike and every error still on the charts.
func TestHTMLLongRun(t *testing.T) {
	tests := []struct {
		name    string
		seconds int
		limit   int
		bucket  int
	}{
		{"an hour: every second", 3600, 600 << 10, 1},
		{"a day: 24 s a point", 24 * 3600, 600 << 10, 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(testPlan(), nil, longStats(t, tt.seconds, tt.seconds/2))
			out := renderHTML(t, r)
			t.Logf("%d s: %d bytes", tt.seconds, len(out))
			if len(out) > tt.limit {
				t.Errorf("the report of %d s takes %d bytes, more than %d", tt.seconds, len(out), tt.limit)
			}
			d := chartData(r)
			if d.Bucket != tt.bucket || len(d.Timeline.T) != tt.seconds/tt.bucket {
				t.Fatalf("bucket %d s, %d points, want %d s, %d points", d.Bucket, len(d.Timeline.T), tt.bucket, tt.seconds/tt.bucket)
			}
			if got := slices.Max(derefs(d.Timeline.Max)); got != 5000 {
				t.Errorf("the latency spike of 5 s charted as %v ms", got)
			}
			if got := slices.Max(derefs(d.Timeline.Groups.P99)); got != 23.456 {
				t.Errorf("the groups' p99 charted up to %v ms, want 23.456", got)
			}
			var errs float64
			for _, e := range d.Timeline.Errors {
				errs += e
			}
			if want := float64(tt.seconds / 1000); errs != want {
				t.Errorf("the errors chart sums to %v, want every one of the run's %v", errs, want)
			}
			if tt.bucket > 1 {
				if want := fmt.Sprintf("One point per %d seconds", tt.bucket); !strings.Contains(out, want) {
					t.Errorf("the page does not say %q", want)
				}
				for _, id := range []string{"chart-rate", "chart-latency", "chart-errors", "chart-cpu", "chart-rss"} {
					if !strings.Contains(d.BucketNotes[id], fmt.Sprintf("Each point is %d s", tt.bucket)) {
						t.Errorf("%s's note %q does not say what a point is", id, d.BucketNotes[id])
					}
				}
			} else if len(d.BucketNotes) > 0 {
				t.Errorf("notes %v on a chart of every second", d.BucketNotes)
			}
		})
	}
}

// derefs is the values of a series with nulls, those of every group
// series too when given.
func derefs[T *float64 | htmlSeries](vals []T) []float64 {
	var out []float64
	for _, v := range vals {
		switch x := any(v).(type) {
		case *float64:
			if x != nil {
				out = append(out, *x)
			}
		case htmlSeries:
			out = append(out, derefs(x.Values)...)
		}
	}
	return append(out, 0)
}

// TestHTMLManyGroups: a plan with many groups draws the curves of the
// first maxGroupCurves and says how many it left out.
func TestHTMLManyGroups(t *testing.T) {
	r := manyGroups(t)
	if n := len(r.Distributions); n != 1+20+1 {
		t.Fatalf("%d distributions, want all groups' e2e, 20 groups' and the ack of all", n)
	}
	out := renderHTML(t, r)
	if !strings.Contains(out, `"g07"`) || strings.Contains(out, `"g08"`) {
		t.Errorf("the page does not draw exactly the first %d groups' curves", maxGroupCurves)
	}
	if !strings.Contains(out, `"distsLeftOut":{"e2e":12}`) {
		t.Errorf("the page does not count the 12 curves left out")
	}
	if !strings.Contains(out, `"leftOut":{"connected":12,"lag":12,"p99":12,"received":12,"sent":12}`) {
		t.Errorf("the page does not count the 12 groups' series left out of each timeline chart")
	}
}

// manyGroups is the fixture run with 20 subscribing groups instead of
// its own two, each with its own latency.
func manyGroups(t *testing.T) *Result {
	st := fullStats(t)
	ph := st.Phase(phase.Steady)
	st.Groups, ph.Groups = nil, nil
	for i := range 20 {
		st.Groups = append(st.Groups, stats.GroupInfo{Name: fmt.Sprintf("g%02d", i), Clients: 1, Connected: 1})
		ph.Groups = append(ph.Groups, stats.Metrics{Latency: hist(t, 1000+50*int64(i), 10)})
	}
	for s := range st.Timeline {
		sec := &st.Timeline[s]
		sec.Groups = nil
		for i := range 20 {
			d := time.Duration(i) * 50 * time.Microsecond
			sec.Groups = append(sec.Groups, stats.GroupSecond{Group: fmt.Sprintf("g%02d", i), Connected: 1,
				Sent: 40, Received: 40, P50: time.Millisecond + d, P99: 1500*time.Microsecond + d, Max: 2*time.Millisecond + d,
				LagMax: 100*time.Microsecond + d})
		}
	}
	return Evaluate(nil, nil, st)
}

func TestHTMLContent(t *testing.T) {
	p := testPlan("p99 < 10ms", "loss_rate == 0")
	r := Evaluate(p, withBuiltins(t, p), faultStats(t))
	out := renderHTML(t, r)
	for _, want := range []string{
		"<title>mqplan 1to1-qos1: FAIL</title>",
		`<header class="verdict fail">`,
		"<code>loss_rate == 0</code></td><td>line 31</td><td><code>loss_rate=0.007453</code></td><td>FAIL: lost_late=5 of the loss: deliveries still arriving when drain ended, late rather than dropped by the broker</td>",
		"<code>unsent == 0</code></td><td>built in</td>",
		"bench/%i, QoS 1, 1000 B, 800 msg/s for the group",
		"bench/%i (QoS 1)",
		"<td>steady</td><td class=\"num\">1.1s</td><td class=\"num\">10s</td>",
		"group sub: asked QoS 2, the broker granted QoS 1",
		`<tr><td class="num">2</td><td><code>publish pub-3: connection closed</code></td></tr>`,
		"Embedded broker",
		`"dists":[{"name":"e2e","group":"","samples":7993`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestHTMLBaseline: with a baseline, the page compares the two runs
// beside the thresholds, as mqplan compare does: both runs named, a
// table per scope with the changes marked, and the summary; without
// one, nothing of it.
func TestHTMLBaseline(t *testing.T) {
	var with, without *Result
	for _, tc := range goldenCases(t) {
		switch tc.name {
		case "baseline":
			with = tc.r
		case "fail":
			without = tc.r
		}
	}
	tests := []struct {
		name       string
		r          *Result
		want, lack []string
	}{
		{"with a baseline", with, []string{
			`<section id="baseline">`,
			"<h2>Compared with the baseline last-release.json</h2>",
			"<tr><td>baseline</td><td>last-release.json</td><td>1to1-qos1</td><td>2025-01-02T03:04:05Z</td><td class=\"num\">11.7s</td><td>PASS</td></tr>",
			"<tr><td>this run</td><td>this run</td><td>1to1-qos1</td>",
			"<th>metric</th><th>baseline</th><th>this run</th><th>change</th><th>change %</th><th></th>",
			"<h3>Total (steady phase, deliveries during drain included)</h3>",
			"<h3>Group sub</h3>",
			`<tr class="worse"><td>lost</td><td class="num">0</td><td class="num">10</td><td class="num">&#43;10</td><td>from 0</td><td>WORSE</td></tr>`, // html/template writes + as &#43;
			`<tr><td>latency.p99</td><td class="num">1.5ms</td><td class="num">1.5ms</td><td class="num">0</td><td class="num">0%</td><td></td></tr>`,
			`<p class="summary worse">WORSE: 10 changes beyond 5%`,
		}, nil},
		{"without", without, nil, []string{`id="baseline"`, "Compared with the baseline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := renderHTML(t, tt.r)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, l := range tt.lack {
				if strings.Contains(out, l) {
					t.Errorf("the page has %q", l)
				}
			}
			// Between the thresholds and the plan.
			if i, j, k := strings.Index(out, `id="thresholds"`), strings.Index(out, `id="baseline"`), strings.Index(out, `id="plan"`); tt.r == with && !(i < j && j < k) {
				t.Errorf("the comparison is not between the thresholds and the plan (%d, %d, %d)", i, j, k)
			}
		})
	}
}

// TestHTMLInBrowser opens the report of each fixture run in headless
// Chromium: no console error, nothing fetched, every chart drawn, or
// showing its "no data" note for a run that measured nothing. The
// screenshots are left in $TMPDIR/mqplan-screenshots/report-*.png.
func TestHTMLInBrowser(t *testing.T) {
	if browsertest.Binary() == "" && os.Getenv("CI") == "" {
		t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	// The fixture's groups: sub receives, pub sends, so only the
	// connections chart has two groups' lines, besides its totals.
	// Its timeline has the broker's and mqplan's CPU and memory: each
	// chart of them has both; and the broker's own counters: its memory
	// in the memory chart, the change of its PUBLISH counters (no dropped
	// count in the timeline), its clients and subscriptions. A run that
	// measured nothing has none of these charts (the others show their
	// "no data" note).
	full := map[string]int{
		"chart-rate": 2, "chart-latency": 3, "chart-connections": 2 + 2, "chart-errors": 2, "chart-lag": 1,
		"chart-dist-e2e": 2, "chart-dist-ack": 2, "chart-cpu": 2, "chart-rss": 3,
		"chart-broker-publish": 2, "chart-broker-clients": 2, "chart-hist-e2e": 1, "chart-hist-ack": 1,
	}
	none := map[string]int{}
	for id := range full {
		if id != "chart-cpu" && id != "chart-rss" && !strings.HasPrefix(id, "chart-broker-") {
			none[id] = 0
		}
	}
	// Twenty groups that all send and receive: the totals and the first
	// maxGroupCurves groups' lines.
	many := map[string]int{
		"chart-rate": 2 + 2*maxGroupCurves, "chart-latency": 3 + maxGroupCurves, "chart-connections": 2 + maxGroupCurves,
		"chart-errors": 2, "chart-lag": 1 + maxGroupCurves, "chart-dist-e2e": 1 + maxGroupCurves, "chart-dist-ack": 1,
		"chart-cpu": 2, "chart-rss": 3, "chart-broker-publish": 2, "chart-broker-clients": 2, "chart-hist-e2e": 1, "chart-hist-ack": 1,
	}
	// Only mqplan's own figures sampled (a run on the embedded broker
	// without broker.metrics): its line alone in the processes' charts,
	// and no chart of the broker's own counters.
	selfOnly := fullStats(t)
	for i := range selfOnly.Timeline {
		selfOnly.Timeline[i].Broker = stats.ProcSample{}
		selfOnly.Timeline[i].Counters = brokerstat.Counters{}
	}
	selfOnly.CountersStart, selfOnly.CountersEnd = brokerstat.Counters{}, brokerstat.Counters{}
	self := map[string]int{}
	for id, n := range full {
		if !strings.HasPrefix(id, "chart-broker-") {
			self[id] = n
		}
	}
	self["chart-cpu"], self["chart-rss"] = 1, 1
	// A day's run, thinned to a point every 24 s: the same charts as
	// any run with both processes sampled and no broker counters.
	day := map[string]int{
		"chart-rate": 2, "chart-latency": 3, "chart-connections": 2 + 2, "chart-errors": 2, "chart-lag": 1,
		"chart-dist-e2e": 2, "chart-dist-ack": 2, "chart-cpu": 2, "chart-rss": 2, "chart-hist-e2e": 1, "chart-hist-ack": 1,
	}
	procs := map[string][]string{"fail": {"broker", "mqplan"}, "pass": {"broker", "mqplan"}, "faults": {"broker", "mqplan"}, "baseline": {"broker", "mqplan"}, "stages": {"broker", "mqplan"},
		"many-groups": {"broker", "mqplan"}, "self-only": {"mqplan"}, "day": {"broker", "mqplan"}}
	want := map[string]map[string]int{"fail": full, "pass": full, "faults": full, "baseline": full, "stages": full, "incomplete": none, "many-groups": many, "self-only": self, "day": day}
	cases := append(goldenCases(t), []struct {
		name string
		r    *Result
	}{{"many-groups", manyGroups(t)}, {"self-only", Evaluate(testPlan(), nil, selfOnly)}, {"day", Evaluate(testPlan(), nil, longStats(t, 24*3600, 12*3600))}}...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(path, []byte(renderHTML(t, tc.r)), 0o644); err != nil {
				t.Fatal(err)
			}
			p := browsertest.Open(t, path, 1400, browsertest.ChartsReady, browsertest.ChartsState)
			browsertest.SaveScreenshot(t, p, "report-"+tc.name)
			for _, e := range p.Errors {
				t.Errorf("browser error: %s", e)
			}
			for _, u := range p.Requests {
				t.Errorf("the page fetched %s: it must work offline", u)
			}
			browsertest.CheckCharts(t, p, want[tc.name])
			if labels := procs[tc.name]; labels != nil {
				browsertest.CheckSeries(t, p, "chart-cpu", labels...)
				rss := labels
				if tc.name != "self-only" && tc.name != "day" {
					rss = append(slices.Clip(labels), "broker (its own report)")
					browsertest.CheckSeries(t, p, "chart-broker-publish", "publish in", "publish out")
					browsertest.CheckSeries(t, p, "chart-broker-clients", "clients", "subscriptions")
				}
				browsertest.CheckSeries(t, p, "chart-rss", rss...)
			}
		})
	}
}

func TestDistributions(t *testing.T) {
	pts := func(d Distribution) (ps []float64, vs []time.Duration) {
		for _, p := range d.Points {
			ps, vs = append(ps, p.Percentile), append(vs, p.Value)
		}
		return
	}
	tests := []struct {
		name string
		h    func(t *testing.T) *stats.Metrics
		// points is the curve's length; first and last its ends.
		points      int
		first, last time.Duration
	}{
		{"one sample: its value at 0 and at 100", func(t *testing.T) *stats.Metrics {
			return &stats.Metrics{Latency: hist(t, 700, 1)}
		}, 2, 700 * time.Microsecond, 700 * time.Microsecond},
		{"8000 samples: stops at one in 8000, then the maximum", func(t *testing.T) *stats.Metrics {
			return &stats.Metrics{Latency: hist(t, 1000, 7900, 1500, 90, 2000, 10)}
		}, 66, time.Millisecond, 2 * time.Millisecond},
		{"a billion samples: bounded at p99.9999", func(t *testing.T) *stats.Metrics {
			return &stats.Metrics{Latency: hist(t, 100, 1e9, 900, 1)}
		}, distTicks*distHalvings + 2, 100 * time.Microsecond, 900 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &stats.Stats{Phases: phasesAt(), Groups: []stats.GroupInfo{{Name: "sub"}, {Name: "pub"}}}
			st.Phase(phase.Steady).Total = *tt.h(t)
			ds := distributions(st)
			if len(ds) != 1 || ds[0].Name != "e2e" || ds[0].Group != "" {
				t.Fatalf("distributions %+v, want the e2e of all groups alone", ds)
			}
			ps, vs := pts(ds[0])
			if len(ps) != tt.points || vs[0] != tt.first || vs[len(vs)-1] != tt.last || ps[0] != 0 || ps[len(ps)-1] != 100 {
				t.Errorf("%d points from %v@%v to %v@%v, want %d from %v@0 to %v@100",
					len(ps), vs[0], ps[0], vs[len(vs)-1], ps[len(ps)-1], tt.points, tt.first, tt.last)
			}
			for i := 1; i < len(ps); i++ {
				if ps[i] <= ps[i-1] || vs[i] < vs[i-1] {
					t.Errorf("point %d (%v@%v) after %v@%v: the curve must rise", i, vs[i], ps[i], vs[i-1], ps[i-1])
				}
			}
		})
	}
	t.Run("per group, in plan order, e2e then ack", func(t *testing.T) {
		r := Evaluate(testPlan(), nil, fullStats(t))
		var got []string
		for _, d := range r.Distributions {
			got = append(got, d.Name+"/"+d.Group)
		}
		if want := "e2e/ e2e/sub ack/ ack/pub"; strings.Join(got, " ") != want {
			t.Errorf("distributions %q, want %q", got, want)
		}
		if r := Evaluate(testPlan(), nil, emptyStats(t)); len(r.Distributions) != 0 {
			t.Errorf("a run that measured nothing has distributions %+v", r.Distributions)
		}
	})
}
