package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// The HTML report's assets, inlined into every report so that it works
// offline: uPlot (MIT, vendored from the npm registry; see
// assets/uplot/README.md) draws the charts, html.js feeds it the data and
// html.css lays out the page.
var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uplot/uPlot.min.css
	uplotCSS string
	//go:embed assets/uplot/LICENSE
	uplotLicense string
	//go:embed assets/html.js
	pageJS string
	//go:embed assets/html.css
	pageCSS string
	//go:embed assets/html.tmpl
	pageTemplate string
)

// htmlTemplate is parsed once; html/template escapes every value by its
// context (text, attribute, the JSON data in a script), so a plan's name
// or an error message cannot inject markup.
var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"numeric": numericCell}).Parse(pageTemplate))

// WriteHTML writes the report as one self-contained HTML page: the
// verdict and thresholds, the plan, the charts over time with the phases
// shaded, the latency percentile curves and the tables of the summary.
// Nothing is fetched: the charting library, the styles and the data are
// all inline, so the file can be mailed, archived by CI or opened offline.
// Like every format it renders from the Result alone, so a saved JSON
// result renders the same page; secrets are masked as in the table.
//
// The charts are drawn in the browser from the data in the page (a
// <script type="application/json">); each chart's element gets
// data-drawn="true", data-series (the series with data) and
// data-series-pixels (the pixels each series painted) once drawn, and the
// body data-charts-drawn with their count and data-errors with the
// script errors seen, which the browser test reads.
func WriteHTML(w io.Writer, r *Result) error {
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, newHTMLView(r)); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	// Text from outside mqplan (a broker's warnings, reasons and error
	// samples, its URL, a topic, a hand-edited result's strings) shows
	// its control characters escaped, as the terminal table does:
	// html/template and encoding/json pass ESC, DEL and C1 through, and
	// the page is read in terminals and CI logs too. The chart data's
	// strings are escaped where they are made (chartData), since a
	// \x7f in its JSON would not parse; so is the page's own text (no
	// control characters), and this leaves them as they are.
	_, err := io.WriteString(w, TerminalSafe(b.String(), "\n\t"))
	return err
}

// htmlView is what the page template reads: texts and table cells
// already formatted as the table formats them, and the chart data.
type htmlView struct {
	Title, Verdict, VerdictClass, Summary string
	// Disturbance is mqplan's own disturbance over steady, "" when not
	// measured.
	Disturbance                 string
	Description                 []string
	BrokerURL, Started, Elapsed string
	// MqplanVersion is Result.MqplanVersion, "" when not known.
	MqplanVersion string
	Warnings      []string
	// Tiles are the headline figures over the thresholds.
	Tiles      []htmlTile
	Thresholds []htmlThreshold
	// BuiltinsFolded: every built-in check held, and the page shows them
	// as one row (BuiltinsHeld of them) that unfolds.
	BuiltinsFolded bool
	BuiltinsHeld   int
	// CommandLine is Result.CommandLine, secrets masked; PlanSource the
	// plan as run, as the JSON result echoes it.
	CommandLine, PlanSource string
	ErrorKinds              []htmlErrorKind
	// HistNote says why there is no latency histogram where the run had
	// latency (a result read back from JSON carries none).
	HistNote          string
	Comparison        *htmlComparison
	PlanGroups        []htmlPlanGroup
	Phases            []htmlPhase
	Tables            []htmlTable
	ErrorSamples      []string
	ErrorsTitle       string
	Data              htmlData
	UPlotJS, PageJS   template.JS
	UPlotCSS, PageCSS template.CSS
	UPlotLicense      string
	// MaxChartPoints is maxChartPoints, for the note over thinned charts.
	MaxChartPoints int
}

type htmlThreshold struct {
	Expr, Where, Measured, Reason string
	Pass                          bool
	// NotJudged: a failure mqplan's own disturbance explains (Reason
	// holds the evidence).
	NotJudged bool
}

// htmlComparison is the comparison with the baseline (Result.Comparison)
// as the page shows it, beside the thresholds that read baseline.*.
type htmlComparison struct {
	Title, Marked, Summary string
	// Worse is set when a change is marked worse: the summary is then
	// shown as a failure.
	Worse    bool
	Runs     []htmlComparedRun
	Notes    []string
	Head     []string
	Sections []htmlCompareSection
}

// htmlComparedRun is one side of the comparison: Role is "baseline" or
// "this run".
type htmlComparedRun struct {
	Role, File, Plan, Started, Elapsed, Verdict string
}

type htmlCompareSection struct {
	Title string
	Rows  []htmlCompareRow
}

// htmlCompareRow is one metric's cells; Class marks the row "worse" or
// "better" as the mark column says.
type htmlCompareRow struct {
	Class string
	Cells []string
}

// comparisonView is r's comparison with its baseline for the page, nil
// without one. Its cells are those of the terminal and the Markdown
// summary (compareCells).
func comparisonView(r *Result) *htmlComparison {
	c := r.Comparison
	if c == nil {
		return nil
	}
	v := &htmlComparison{Title: "Compared with the baseline " + c.A.Label, Marked: "Marked: " + c.marked() + ".",
		Summary: c.Summary(), Worse: len(c.Worse()) > 0, Notes: c.Notes, Head: baselineHead}
	for _, run := range []struct {
		role string
		run  ComparedRun
	}{{"baseline", c.A}, {thisRun, c.B}} {
		v.Runs = append(v.Runs, htmlComparedRun{Role: run.role, File: orDash(run.run.Label), Plan: orDash(run.run.Plan),
			Started: startedText(run.run.Started), Elapsed: fmtDuration(run.run.Elapsed), Verdict: run.run.Verdict})
	}
	for _, s := range c.Sections {
		hs := htmlCompareSection{Title: s.title()}
		for i, cells := range compareCells(s) {
			hs.Rows = append(hs.Rows, htmlCompareRow{Class: strings.ToLower(s.Rows[i].Mark.String()), Cells: cells})
		}
		v.Sections = append(v.Sections, hs)
	}
	return v
}

type htmlPlanGroup struct {
	Name, Role, Clients, Connect, Publish, Subscribe string
}

type htmlPhase struct{ Name, Start, Duration string }

type htmlTable struct {
	Title string
	Head  []string
	Rows  [][]string
	Notes []string
}

// htmlData is the chart data, as the page script reads it: times in
// seconds from the start, latencies in milliseconds, null for a second
// without deliveries (never a 0, which would read as a measurement).
type htmlData struct {
	// Elapsed is the run's length, the time axis's end.
	Elapsed float64 `json:"elapsed"`
	// Started is the run's wall-clock start, in milliseconds since the
	// epoch, for the wall-clock axis; 0 when not known.
	Started float64 `json:"started"`
	// Hists are the latency histograms, counts per bucket.
	Hists    []htmlHist      `json:"hists"`
	Phases   []htmlDataPhase `json:"phases"`
	Timeline htmlTimeline    `json:"timeline"`
	Dists    []htmlDist      `json:"dists"`
	// DistsLeftOut counts, by curve name, the groups' curves left out of
	// the page (see maxGroupCurves).
	DistsLeftOut map[string]int `json:"distsLeftOut"`
	// Charts are the further charts over the timeline, each drawn the
	// same way whatever it shows (see sampledCharts); only those with a
	// series sampled at least once.
	Charts []htmlChart `json:"charts"`
	// Bucket is how many seconds each point over the timeline
	// aggregates: 1, unless the run is longer than maxChartPoints
	// seconds (see thinTimeline).
	Bucket int `json:"bucket"`
	// BucketNotes say, by chart element id, how each point of a thinned
	// chart aggregates its seconds; empty when Bucket is 1.
	BucketNotes map[string]string `json:"bucketNotes"`
}

// htmlChart is one chart over the timeline whose series the page script
// draws as they come: a figure sampled once a second beside the run's
// own (the processes' CPU and memory) needs only its series here, not
// a script of its own. Its element has the id ID.
type htmlChart struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Unit   string     `json:"unit"`
	Series []htmlLine `json:"series"`
	// note says how a point aggregates its seconds, for a thinned
	// chart's note.
	note string
}

// htmlLine is one series of an htmlChart: a value per second of the
// timeline, null where it was not sampled (a gap, never a 0). Color is
// the series' own, so that a process keeps its colour whichever other
// series are drawn.
type htmlLine struct {
	Label  string     `json:"label"`
	Color  string     `json:"color"`
	Values []*float64 `json:"values"`
	// agg is how a thinned chart's point aggregates its seconds.
	agg aggregate
}

// add appends the series label, with value's figure for each second,
// when at least one second has one; agg is how a thinned chart
// aggregates its seconds.
func (c *htmlChart) add(label, color string, agg aggregate, timeline []stats.Second, value func(*stats.Second) *float64) {
	vals := make([]*float64, len(timeline))
	has := false
	for i := range timeline {
		if vals[i] = value(&timeline[i]); vals[i] != nil {
			has = true
		}
	}
	if has {
		c.Series = append(c.Series, htmlLine{Label: label, Color: color, Values: vals, agg: agg})
	}
}

// addValues appends the series label with its values, when at least one
// is not nil.
func (c *htmlChart) addValues(label, color string, agg aggregate, vals []*float64) {
	for _, v := range vals {
		if v != nil {
			c.Series = append(c.Series, htmlLine{Label: label, Color: color, Values: vals, agg: agg})
			return
		}
	}
}

// processColors are the processes' colours in their charts (from the
// page script's palette, whose exact colours the browser test counts).
var processColors = map[string]string{"broker": "#0969da", "mqplan": "#8250df"}

// brokerOwnColor is the broker's own memory figure's colour, and
// counterColors its counters', from the same palette.
var (
	brokerOwnColor = "#0a7ea4"
	counterColors  = map[brokerstat.Counter]string{
		brokerstat.PublishReceived: "#0969da", brokerstat.PublishSent: "#1a7f37", brokerstat.Dropped: "#cf222e",
		brokerstat.Clients: "#0969da", brokerstat.Subscriptions: "#bf8700",
	}
)

// sampledCharts are the charts of what was sampled once a second besides
// the run's own figures: the broker process's (broker.metrics) and
// mqplan's own CPU, in percent of one core, and resident memory, in MiB.
// Then the broker's own counters ($SYS or Prometheus, broker.metrics
// sys or prometheus): its memory beside its RSS, the change of its
// PUBLISH counters per second, its clients and subscriptions. A chart
// without a series sampled is left out; a further set of figures is one
// more htmlChart here, with an add per series.
func sampledCharts(r *Result) []htmlChart {
	cpu := htmlChart{ID: "chart-cpu", Title: "CPU, % of one core (from /proc, once a second)", Unit: "%", note: "each line is the mean of its seconds"}
	rss := htmlChart{ID: "chart-rss", Title: "Resident memory, MiB (from /proc, once a second)", Unit: "MiB", note: "each line is the maximum of its seconds"}
	for _, p := range processes {
		cpu.add(p.name, processColors[p.name], aggMean, r.Timeline, func(s *stats.Second) *float64 {
			ps := p.get(s)
			return num(math.Round(ps.CPU*10)/10, ps.Sampled)
		})
		rss.add(p.name, processColors[p.name], aggMax, r.Timeline, func(s *stats.Second) *float64 {
			ps := p.get(s)
			return num(math.Round(float64(ps.RSS)/(1<<20)*100)/100, ps.Sampled)
		})
	}
	// The broker's own memory figure ($SYS or Prometheus) beside its RSS:
	// two views of one process that a reader compares at a glance.
	rss.add("broker (its own report)", brokerOwnColor, aggMax, r.Timeline, func(s *stats.Second) *float64 {
		v, ok := s.Counters.Get(brokerstat.MemoryBytes)
		return num(math.Round(float64(v)/(1<<20)*100)/100, ok)
	})
	msgs := htmlChart{ID: "chart-broker-publish", Unit: "per second", note: "each line is the mean change per second of its seconds",
		Title: "The broker's own PUBLISH counters, change per second ($SYS or Prometheus; a change is spread over the seconds the counter was held, up to 10 s)"}
	for _, c := range []struct {
		label string
		c     brokerstat.Counter
	}{{"publish in", brokerstat.PublishReceived}, {"publish out", brokerstat.PublishSent}, {"dropped", brokerstat.Dropped}} {
		msgs.addValues(c.label, counterColors[c.c], aggMean, counterRates(r.CountersStart, r.Timeline, c.c))
	}
	clients := htmlChart{ID: "chart-broker-clients", Unit: "count", note: "each line is the minimum of its seconds",
		Title: "The broker's own clients and subscriptions ($SYS or Prometheus; every client of the broker, mqplan's monitor included)"}
	for _, c := range []struct {
		label string
		c     brokerstat.Counter
	}{{"clients", brokerstat.Clients}, {"subscriptions", brokerstat.Subscriptions}} {
		clients.add(c.label, counterColors[c.c], aggMin, r.Timeline, func(s *stats.Second) *float64 {
			v, ok := s.Counters.Get(c.c)
			return num(float64(v), ok)
		})
	}
	out := []htmlChart{}
	for _, c := range []htmlChart{cpu, rss, msgs, clients} {
		if len(c.Series) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// maxGroupCurves bounds the groups' curves a percentile plot draws: past
// a handful the lines and the legend are unreadable, and a plan may have
// hundreds of groups. The JSON keeps them all.
const maxGroupCurves = 8

type htmlDataPhase struct {
	Name  string  `json:"name"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// htmlTimeline is the timeline's series, a point a second or, thinned,
// a point a bucket of seconds (htmlData.Bucket): counts are then means
// (sent, received), minimums (connected), maximums (lost) or sums
// (errors, disconnects), see thinTimeline.
type htmlTimeline struct {
	T           []float64  `json:"t"`
	Sent        []float64  `json:"sent"`
	Received    []float64  `json:"received"`
	P50         []*float64 `json:"p50"`
	P99         []*float64 `json:"p99"`
	Max         []*float64 `json:"max"`
	Connected   []float64  `json:"connected"`
	Lost        []float64  `json:"lost"`
	Disconnects []float64  `json:"disconnects"`
	Errors      []float64  `json:"errors"`
	Lag         []float64  `json:"lag"`
	// Groups are the per-group series of the charts, by metric: only
	// the groups with data for it (a subscriber sends nothing), at most
	// maxGroupCurves of them; LeftOut counts the others by metric.
	Groups  htmlGroupSeries `json:"groups"`
	LeftOut map[string]int  `json:"leftOut"`
}

// htmlGroupSeries holds, for each chart metric, one series per group.
type htmlGroupSeries struct {
	Sent      []htmlSeries `json:"sent"`
	Received  []htmlSeries `json:"received"`
	P99       []htmlSeries `json:"p99"`
	Connected []htmlSeries `json:"connected"`
	Lag       []htmlSeries `json:"lag"`
}

// htmlSeries is one group's values, null where the group had no sample.
type htmlSeries struct {
	Group  string     `json:"group"`
	Values []*float64 `json:"values"`
}

type htmlDist struct {
	Name    string    `json:"name"`
	Group   string    `json:"group"`
	Samples int64     `json:"samples"`
	P       []float64 `json:"p"`
	V       []float64 `json:"v"`
}

func newHTMLView(r *Result) *htmlView {
	v := &htmlView{
		Title:          r.titled(),
		Verdict:        r.Verdict(),
		VerdictClass:   strings.ToLower(r.Verdict()),
		Summary:        r.Summary(),
		Disturbance:    disturbanceLine(r),
		BrokerURL:      r.brokerLabel(),
		MqplanVersion:  r.MqplanVersion,
		Elapsed:        fmtDuration(r.Elapsed),
		Warnings:       r.headerWarnings(),
		ErrorSamples:   r.ErrorSamples,
		ErrorsTitle:    fmt.Sprintf("Errors (%s in all, by kind, over the whole run)", count(r.Measured.Top, metric.Errors)),
		UPlotJS:        template.JS(uplotJS),
		PageJS:         template.JS(pageJS),
		UPlotCSS:       template.CSS(uplotCSS),
		PageCSS:        template.CSS(pageCSS),
		UPlotLicense:   uplotLicense,
		MaxChartPoints: maxChartPoints,
	}
	if !r.Started.IsZero() {
		v.Started = r.Started.UTC().Format(time.RFC3339)
	}
	if r.Plan != nil {
		for _, line := range strings.Split(strings.TrimSpace(r.Plan.Description), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				v.Description = append(v.Description, line)
			}
		}
	}
	for _, th := range r.Thresholds {
		ht := htmlThreshold{Expr: th.Expr, Measured: measuredValues(th.Values), Pass: th.Pass}
		switch {
		case th.Builtin:
			ht.Where = "built in"
		case th.Pos.Line > 0:
			ht.Where = fmt.Sprintf("line %d", th.Pos.Line)
		}
		if !th.Pass && th.Reason != "false" {
			ht.Reason = th.Reason
		}
		if th.NotJudged != "" {
			ht.Reason, ht.NotJudged = th.NotJudged, true
		}
		v.Thresholds = append(v.Thresholds, ht)
	}
	v.Tiles = tiles(r)
	if v.BuiltinsFolded = builtinsFolded(v.Thresholds); v.BuiltinsFolded {
		for _, t := range v.Thresholds {
			if t.Where == "built in" {
				v.BuiltinsHeld++
			}
		}
	}
	v.CommandLine = r.CommandLine
	v.PlanSource = planSource(r)
	v.ErrorKinds = errorKinds(r.ErrorSamples)
	if len(r.Histograms) == 0 && len(r.Distributions) > 0 {
		v.HistNote = "No latency histogram: this result was saved by an mqplan that did not record one."
	}
	v.Comparison = comparisonView(r)
	v.PlanGroups = planGroups(r)
	for _, ph := range r.Phases {
		if ph.Duration() > 0 {
			v.Phases = append(v.Phases, htmlPhase{Name: ph.Phase.String(), Start: fmtDuration(ph.Start), Duration: fmtDuration(ph.Duration())})
		}
	}
	v.Tables = htmlTables(r)
	v.Data = chartData(r)
	return v
}

// planGroups describes each plan group in a line per column: what it
// connects, publishes and subscribes. Passwords, wills' payloads and TLS
// files are left out: the page is for reading results.
func planGroups(r *Result) []htmlPlanGroup {
	if r.Plan == nil {
		return nil
	}
	var out []htmlPlanGroup
	for i := range r.Plan.Groups {
		g := &r.Plan.Groups[i]
		role := Group{Publishes: g.Publish != nil, Subscribes: receives(g)}.role()
		hg := htmlPlanGroup{Name: g.Name, Role: role, Clients: itoa(g.Count), Connect: "all at once"}
		if g.ConnectRate > 0 {
			hg.Connect = fmtRate(g.ConnectRate) + " connections/s"
		}
		if p := g.Publish; p != nil {
			var rate string
			switch {
			case p.Max:
				rate = closedLoopRate(p)
			case p.Rate > 0:
				rate = fmtRate(p.Rate) + " msg/s for the group"
			case p.Every > 0:
				rate = "every " + fmtDuration(p.Every) + " per client"
				if g.Count > 0 {
					rate += fmt.Sprintf(" (%s msg/s for the group)", fmtRate(float64(g.Count)/p.Every.Seconds()))
				}
			case p.Burst != nil:
				rate = fmt.Sprintf("bursts of %d every %s for the group", p.Burst.Messages, fmtDuration(p.Burst.Every))
			case len(r.Plan.Stages) > 0:
				rate = fmt.Sprintf("the plan's %d stages", len(r.Plan.Stages))
			}
			if p.Arrival == plans.ArrivalPoisson {
				rate += ", poisson arrivals"
			}
			if d := p.StartDelay; d != nil {
				rate += fmt.Sprintf(", start delays in [%s, %s)", fmtDuration(d.Min), fmtDuration(d.Max))
			}
			hg.Publish = fmt.Sprintf("%s, QoS %d, %s, %s", p.Topic.String(), p.QoS, planPayloadSize(p), rate)
			if p.Count > 0 {
				hg.Publish += fmt.Sprintf(", %d per client", p.Count)
			}
		}
		var subs []string
		for _, s := range g.Subscribe {
			subs = append(subs, fmt.Sprintf("%s (QoS %d)", s.Topic.String(), s.QoS))
		}
		hg.Subscribe = strings.Join(subs, ", ")
		out = append(out, hg)
	}
	return out
}

// htmlTables are the summary table's sections, with the same cells.
func htmlTables(r *Result) []htmlTable {
	var out []htmlTable

	groups := htmlTable{Title: "Groups (messages: steady phase" + r.steadyLength() + "; clients and disconnects: whole run)",
		Head: groupsHead, Rows: groupsCells(r)}
	out = append(out, groups)
	if rows := stagesCells(r); rows != nil {
		out = append(out, htmlTable{Title: stagesTitle, Head: stagesHead, Rows: rows})
	}

	lat := htmlTable{Title: "Latency (e2e and ack over the steady phase; connect and subscribe over the whole run)",
		Head: latencyHead, Rows: latencyCells(r)}
	out = append(out, lat)
	if title, rows := clocksCells(r); rows != nil {
		out = append(out, htmlTable{Title: title, Head: clocksHead, Rows: rows})
	}

	del := htmlTable{Title: "Delivery (steady-phase messages, deliveries during drain included)",
		Head: deliveryHead, Rows: deliveryCells(r),
		Notes: []string{"A subscribing group counts deliveries to its clients; a publishing group, deliveries of its messages.",
			"lost = unsent (never sent) + unacked (sent, never acknowledged) + by broker (acknowledged or written, never delivered) + late (still arriving when drain ended)."}}
	if note := ambiguousNote(r); note != "" {
		del.Notes = append(del.Notes, note+".")
	}
	out = append(out, del)
	if rows := requestsCells(r); rows != nil {
		out = append(out, htmlTable{Title: requestsTitle, Head: requestsHead, Rows: rows})
	}

	health := htmlTable{Title: "Generator health (steady phase; lag = actual - intended send time; late = lag over " + fmtDuration(stats.LateThreshold) + ")",
		Head: healthHead, Rows: healthCells(r)}
	out = append(out, health)

	if br := r.Broker; br != nil {
		out = append(out, htmlTable{Title: "Embedded broker (its own counters: drops here are the broker's, not mqplan's)",
			Head: []string{"publishes in", "publishes out", "dropped: queue full", "dropped: inflight full", "max clients"},
			Rows: [][]string{{fmt.Sprint(br.MessagesReceived), fmt.Sprint(br.MessagesSent),
				fmt.Sprint(br.MessagesDropped), fmt.Sprint(br.InflightDropped), fmt.Sprint(br.ClientsMaximum)}}})
	}
	if rows := countersCells(r); rows != nil {
		out = append(out, htmlTable{Title: countersTitle, Head: countersHead, Rows: rows})
	}
	if rows := processesCells(r); len(rows) > 0 {
		out = append(out, htmlTable{Title: processesTitle, Head: processesHead, Rows: rows})
	}
	return out
}

// chartData converts the timeline and the percentile curves for the
// page script.
func chartData(r *Result) htmlData {
	d := htmlData{Elapsed: r.Elapsed.Seconds(), Started: startedMillis(r.Started), Hists: histData(r), Phases: []htmlDataPhase{}, Dists: []htmlDist{}, DistsLeftOut: map[string]int{}}
	for _, ph := range r.Phases {
		if ph.Duration() > 0 {
			d.Phases = append(d.Phases, htmlDataPhase{Name: ph.Phase.String(), Start: ph.Start.Seconds(), End: ph.End.Seconds()})
		}
	}
	tl := &d.Timeline
	n := len(r.Timeline)
	size := bucketSize(n)
	d.Bucket, d.BucketNotes = size, map[string]string{}
	t, sent, received := make([]float64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	p50, p99, mx := make([]*float64, 0, n), make([]*float64, 0, n), make([]*float64, 0, n)
	connected, lost := make([]int, 0, n), make([]int, 0, n)
	disconnects, errs, lag := make([]int64, 0, n), make([]int64, 0, n), make([]float64, 0, n)
	for _, s := range r.Timeline {
		t = append(t, s.At.Seconds())
		sent = append(sent, s.Sent)
		received = append(received, s.Received)
		if s.Received > 0 {
			p50 = append(p50, msPtr(s.P50))
			p99 = append(p99, msPtr(s.P99))
			mx = append(mx, msPtr(s.Max))
		} else {
			p50, p99, mx = append(p50, nil), append(p99, nil), append(mx, nil)
		}
		connected = append(connected, s.Connected)
		lost = append(lost, s.Lost)
		disconnects = append(disconnects, s.Disconnects)
		errs = append(errs, s.Errors)
		lag = append(lag, ms(s.LagMax))
	}
	// thinTimeline: each series aggregated by what a reader looks for
	// in it (see aggregate), the x axis at each bucket's first second.
	tl.T = thinNum(t, size, aggFirst)
	tl.Sent, tl.Received = thinNum(sent, size, aggMean), thinNum(received, size, aggMean)
	tl.P50, tl.P99, tl.Max = thinPtr(p50, size, aggMean), thinPtr(p99, size, aggMax), thinPtr(mx, size, aggMax)
	tl.Connected, tl.Lost = thinNum(connected, size, aggMin), thinNum(lost, size, aggMax)
	tl.Disconnects, tl.Errors, tl.Lag = thinNum(disconnects, size, aggSum), thinNum(errs, size, aggSum), thinNum(lag, size, aggMax)
	if size > 1 {
		for id, what := range map[string]string{
			"chart-rate":        "each line is the mean rate of its seconds",
			"chart-latency":     "p50 is the mean of its seconds' p50, p99 and max the maximum of theirs",
			"chart-connections": "connected is the minimum of its seconds, down the maximum",
			"chart-errors":      "errors and disconnects are the sums of its seconds, not rates",
			"chart-lag":         "each line is the maximum lag of its seconds",
		} {
			d.BucketNotes[id] = bucketNote(size, what)
		}
	}
	groupCurves := map[string]int{}
	groupSeries(r, tl, size)
	d.Charts = sampledCharts(r)
	for i := range d.Charts {
		c := &d.Charts[i]
		for j := range c.Series {
			c.Series[j].Values = thinPtr(c.Series[j].Values, size, c.Series[j].agg)
		}
		if size > 1 {
			d.BucketNotes[c.ID] = bucketNote(size, c.note)
		}
	}
	for _, dist := range r.Distributions {
		if dist.Group != "" {
			if groupCurves[dist.Name]++; groupCurves[dist.Name] > maxGroupCurves {
				d.DistsLeftOut[TerminalSafe(dist.Name, "")]++
				continue
			}
		}
		hd := htmlDist{Name: TerminalSafe(dist.Name, ""), Group: TerminalSafe(dist.Group, ""), Samples: dist.Samples}
		for _, pt := range dist.Points {
			hd.P = append(hd.P, pt.Percentile)
			hd.V = append(hd.V, ms(pt.Value))
		}
		d.Dists = append(d.Dists, hd)
	}
	return d
}

// groupSeries fills tl.Groups from the timeline's per-group seconds
// (absent in a timeline saved before they were kept), a point per size
// seconds.
func groupSeries(r *Result, tl *htmlTimeline, size int) {
	tl.LeftOut = map[string]int{}
	var names []string
	for _, s := range r.Timeline {
		if len(s.Groups) > len(names) {
			names = names[:0]
			for _, g := range s.Groups {
				names = append(names, TerminalSafe(g.Group, ""))
			}
		}
	}
	metrics := []struct {
		name string
		dst  *[]htmlSeries
		// value is the group's figure in a second, or nil for none.
		value func(g stats.GroupSecond) *float64
		// agg is how a thinned chart aggregates the seconds, as for
		// the totals' lines.
		agg aggregate
	}{
		{"sent", &tl.Groups.Sent, func(g stats.GroupSecond) *float64 { return num(float64(g.Sent), g.Sent > 0) }, aggMean},
		{"received", &tl.Groups.Received, func(g stats.GroupSecond) *float64 { return num(float64(g.Received), g.Received > 0) }, aggMean},
		{"p99", &tl.Groups.P99, func(g stats.GroupSecond) *float64 { return num(ms(g.P99), g.Max > 0) }, aggMax},
		{"connected", &tl.Groups.Connected, func(g stats.GroupSecond) *float64 { return num(float64(g.Connected), g.Connected > 0) }, aggMin},
		{"lag", &tl.Groups.Lag, func(g stats.GroupSecond) *float64 { return num(ms(g.LagMax), g.LagMax > 0) }, aggMax},
	}
	for _, m := range metrics {
		*m.dst = []htmlSeries{}
		for gi, name := range names {
			vals := make([]*float64, len(r.Timeline))
			has := false
			for i, s := range r.Timeline {
				if gi >= len(s.Groups) {
					continue
				}
				// A second with nothing of this group's is 0 for counts
				// (null for latency and lag, which have no value then),
				// once the group has data at all.
				if v := m.value(s.Groups[gi]); v != nil {
					vals[i], has = v, true
				} else if m.name != "p99" && m.name != "lag" {
					zero := 0.0
					vals[i] = &zero
				}
			}
			if !has {
				continue
			}
			if len(*m.dst) == maxGroupCurves {
				tl.LeftOut[m.name]++
				continue
			}
			*m.dst = append(*m.dst, htmlSeries{Group: name, Values: thinPtr(vals, size, m.agg)})
		}
	}
}

// num is &x when ok, else nil.
func num(x float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &x
}

// ms is d in milliseconds, rounded to the nanosecond's three decimals so
// that the page does not carry float noise.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}

func msPtr(d time.Duration) *float64 {
	f := ms(d)
	return &f
}
