package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mqplan/mqplan/plans"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/threshold"
)

// DefaultTolerance is the relative change mqplan compare lets pass
// unmarked: run-to-run noise of a latency percentile on a quiet machine
// is a few percent.
const DefaultTolerance = 0.05

// MaxTolerance bounds --tolerance: beyond 1000% nothing would ever be
// marked, which is better said by not comparing.
const MaxTolerance = 10.0

// Mark says how a compared metric changed, given the tolerance.
type Mark int

// The marks. A change is marked only when it goes beyond the tolerance.
const (
	// Same: within the tolerance, or nothing to compare.
	Same Mark = iota
	// Better: beyond the tolerance toward better (lower latency, higher
	// rate, less loss).
	Better
	// Worse: beyond the tolerance toward worse, or measured in A and
	// without samples in B.
	Worse
	// Disturbed: a latency beyond the tolerance toward worse in a run
	// whose generator was short of CPU (compare_disturb.go): not a
	// regression.
	Disturbed
)

// String is the mark as the table shows it.
func (m Mark) String() string {
	switch m {
	case Better:
		return "better"
	case Worse:
		return "WORSE"
	case Disturbed:
		return "disturbed"
	}
	return ""
}

// compared is one key metric of the comparison and which way is better.
type compared struct {
	name         metric.Name
	higherBetter bool
	// neutral: a change is shown, never marked (the broker's PUBLISH
	// counts follow the plan's load, neither better nor worse).
	neutral bool
}

// comparedMetrics are the key metrics mqplan compare shows, in order:
// throughput, latency, delivery, errors, connections.
var comparedMetrics = []compared{
	{name: metric.SendRate, higherBetter: true},
	{name: metric.RecvRate, higherBetter: true},
	{name: metric.LatencyP50, higherBetter: false},
	{name: metric.LatencyP90, higherBetter: false},
	{name: metric.LatencyP99, higherBetter: false},
	{name: metric.LatencyMax, higherBetter: false},
	{name: metric.AckP99, higherBetter: false},
	{name: metric.Lost, higherBetter: false},
	{name: metric.LossRate, higherBetter: false},
	{name: metric.Duplicates, higherBetter: false},
	{name: metric.Errors, higherBetter: false},
	{name: metric.ConnectP99, higherBetter: false},
}

// comparedBroker are the broker's own counters (broker.metrics sys or
// prometheus) that the total shows when both results measured them.
var comparedBroker = []compared{
	{name: metric.BrokerDropped},
	{name: metric.BrokerPublishReceived, neutral: true},
	{name: metric.BrokerPublishSent, neutral: true},
	{name: metric.BrokerMemoryMax},
}

// Comparison is two results side by side: their key metrics over the
// measured window, in total and for each group both have, with the change
// from A to B and which changes go beyond the tolerance. It is built from
// Results alone, so saved JSON results compare as well as fresh ones, and
// it holds what its outputs show and nothing more (not the Results), so
// that a run's comparison with its baseline is saved in the run's JSON
// and re-renders from it (Result.Comparison).
type Comparison struct {
	// A is the reference (the last release, a baseline); B is compared
	// with it.
	A, B ComparedRun
	// Tolerance is the relative change (0.05 is 5%) within which a change
	// is not marked.
	Tolerance float64
	// Sections are the total, then each group both results have, in B's
	// order.
	Sections []CompareSection
	// OnlyA and OnlyB are the groups only one of the results has: their
	// figures have nothing to compare with.
	OnlyA, OnlyB []string
	// Notes say what makes the comparison less than like for like
	// (different plans, an incomplete run, warnings).
	Notes []string
	// Disturbed, when B's generator was short of CPU over its steady
	// phase, is the evidence: B's latency changes toward worse are marked
	// Disturbed, not Worse, and --fail-on-regression does not fail on
	// them.
	Disturbed string
}

// ComparedRun names one side of a Comparison as its outputs show it.
type ComparedRun struct {
	// Label names the run in the output: its file name as given, or
	// "this run" for a run judged against a baseline.
	Label string
	// Plan is the plan's name; Started, Elapsed and Verdict the run's.
	Plan    string
	Started time.Time
	Elapsed time.Duration
	Verdict string
	// MqplanVersion is the mqplan that made the run (Result.MqplanVersion),
	// "" when not known.
	MqplanVersion string
}

// thisRun labels the run itself in its comparison with its baseline.
const thisRun = "this run"

// comparedRun is r's identity, labelled label.
func comparedRun(r *Result, label string) ComparedRun {
	return ComparedRun{Label: label, Plan: r.name(), Started: r.Started, Elapsed: r.Elapsed, Verdict: r.Verdict(), MqplanVersion: r.MqplanVersion}
}

// CompareSection is the rows of one scope: the total or one group.
type CompareSection struct {
	// Group is the group's name, empty for the total.
	Group string
	Rows  []CompareRow
}

// CompareRow is one metric in A and in B.
type CompareRow struct {
	Metric metric.Name
	// A and B are the values in their kind's Go type (see metric.Set),
	// nil when that result has no samples of it.
	A, B any
	// Change is (B - A) / A: 0.1 is 10% more. NaN when either is absent,
	// ±Inf when A is 0 and B is not.
	Change float64
	// Mark is Worse or Better when Change goes beyond the tolerance.
	Mark Mark
}

// Compare compares B with A. tolerance is a fraction (0.05 for 5%).
func Compare(a, b *Result, labelA, labelB string, tolerance float64) *Comparison {
	c := &Comparison{A: comparedRun(a, labelA), B: comparedRun(b, labelB), Tolerance: tolerance}
	total := compareSets(a.Measured.Top, b.Measured.Top, tolerance, nil)
	if a.Clock != nil || b.Clock != nil {
		total = append(total, clockRows(a.Measured.Top, b.Measured.Top, tolerance)...)
	}
	c.Sections = append(c.Sections, CompareSection{Rows: total})
	inA := map[string]Group{}
	for _, g := range a.Groups {
		inA[g.Name] = g
	}
	inB := map[string]bool{}
	for _, gb := range b.Groups {
		inB[gb.Name] = true
		ga, ok := inA[gb.Name]
		if !ok {
			c.OnlyB = append(c.OnlyB, gb.Name)
			continue
		}
		publishes := ga.Publishes || gb.Publishes
		keep := func(n metric.Name) bool { return n != metric.SendRate || publishes }
		rows := compareSets(a.Measured.Groups[gb.Name], b.Measured.Groups[gb.Name], tolerance, keep)
		c.Sections = append(c.Sections, CompareSection{Group: gb.Name, Rows: rows})
	}
	for _, g := range a.Groups {
		if !inB[g.Name] {
			c.OnlyA = append(c.OnlyA, g.Name)
		}
	}
	c.Notes = compareNotes(c, a, b)
	markDisturbed(c, b)
	return c
}

// compareSets builds the rows of one scope. The total shows every key
// metric, and the broker's own counters that both runs measured; a group (keep non-nil) only those one of the two measured and
// keep allows.
func compareSets(a, b metric.Set, tolerance float64, keep func(metric.Name) bool) []CompareRow {
	var rows []CompareRow
	metrics := append(slices.Clip(comparedMetrics), comparedRequests...)
	if keep == nil {
		metrics = append(metrics, comparedBroker...)
	}
	for _, m := range metrics {
		va, vb := present(a, m.name), present(b, m.name)
		if keep != nil && (!keep(m.name) || va == nil && vb == nil) {
			continue
		}
		if slices.Contains(comparedRequests, m) && va == nil && vb == nil {
			// Request/response, only when either run had it.
			continue
		}
		if slices.Contains(comparedBroker, m) && (va == nil || vb == nil) {
			// The broker's counters, only when both runs read them.
			continue
		}
		rows = append(rows, m.row(va, vb, tolerance))
	}
	return rows
}

// row is m's row with va in A and vb in B: the change and its mark
// beyond tolerance. Compare builds its rows with it, and ReadJSON
// derives a saved comparison's from its values with it, so that a saved
// row cannot show a mark its figures do not give.
func (m compared) row(va, vb any, tolerance float64) CompareRow {
	row := CompareRow{Metric: m.name, A: va, B: vb, Change: math.NaN()}
	switch {
	case va != nil && vb == nil:
		// Measured before, not now: no samples must never pass
		// for no change.
		row.Mark = Worse
	case va != nil && vb != nil:
		row.Change = change(number(va), number(vb))
		if math.Abs(row.Change) > tolerance && !m.neutral {
			if (row.Change > 0) == m.higherBetter {
				row.Mark = Better
			} else {
				row.Mark = Worse
			}
		}
	}
	return row
}

// allCompared is every metric a comparison may show, in order.
func allCompared() []compared {
	return slices.Concat(comparedMetrics, comparedRequests, comparedBroker, comparedClock)
}

// lookupCompared finds a key metric of the comparison by name.
func lookupCompared(name metric.Name) (compared, bool) {
	all := allCompared()
	i := slices.IndexFunc(all, func(m compared) bool { return m.name == name })
	if i < 0 {
		return compared{}, false
	}
	return all[i], true
}

// change is the relative change from a to b: 0 when equal, ±Inf from 0.
func change(a, b float64) float64 {
	switch {
	case a == b:
		return 0
	case a == 0:
		return math.Inf(int(math.Copysign(1, b)))
	}
	return (b - a) / math.Abs(a)
}

// present is m's value in s, or nil when s lacks it or it is not a
// finite number (a rate over no time).
func present(s metric.Set, m metric.Name) any {
	v, ok := s[m]
	if !ok {
		return nil
	}
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil
	}
	return v
}

// number is a metric value as a float64 (a duration in nanoseconds).
func number(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	case time.Duration:
		return float64(x)
	}
	return math.NaN()
}

// compareNotes says what makes the two results less than like for like.
func compareNotes(c *Comparison, a, b *Result) []string {
	var notes []string
	for _, s := range []struct {
		label string
		r     *Result
	}{{"A", a}, {"B", b}} {
		if v := s.r.Verdict(); v == VerdictIncomplete {
			notes = append(notes, fmt.Sprintf("%s is %s: its figures cover only part of a run", s.label, v))
		}
		if n := len(s.r.headerWarnings()); n > 0 {
			// The run compared with its baseline shows its warnings in
			// the same report, at the top.
			see := "mqplan report " + c.label(s.label)
			if c.label(s.label) == thisRun {
				see = "this report's warnings"
			}
			notes = append(notes, fmt.Sprintf("%s has %d %s: see %s", s.label, n, plural(n, "warning"), see))
		}
	}
	if na, nb := a.name(), b.name(); na != nb {
		notes = append(notes, fmt.Sprintf("A and B ran different plans (%s, %s)", orDash(na), orDash(nb)))
	} else if d := planDifferences(a.Plan, b.Plan); len(d) > 0 {
		notes = append(notes, fmt.Sprintf("A and B ran plan %s with different settings: %s", orDash(na), strings.Join(d, ", ")))
	}
	if sa, sb := a.steadyLength(), b.steadyLength(); sa != sb {
		notes = append(notes, fmt.Sprintf("the steady phases differ in length (%s, %s): counts (lost, duplicates, errors) do not compare, rates and latencies do",
			orDash(strings.TrimPrefix(sa, ", ")), orDash(strings.TrimPrefix(sb, ", "))))
	}
	for _, only := range []struct {
		label  string
		groups []string
	}{{"A", c.OnlyA}, {"B", c.OnlyB}} {
		if len(only.groups) > 0 {
			notes = append(notes, fmt.Sprintf("only %s has %s %s: not compared", only.label, pluralWord(len(only.groups), "group", "groups"), strings.Join(only.groups, ", ")))
		}
	}
	return notes
}

// label is the file name of A or B.
func (c *Comparison) label(which string) string {
	if which == "A" {
		return c.A.Label
	}
	return c.B.Label
}

// ref is how a threshold names the row's metric in its section.
func (s CompareSection) ref(m metric.Name) string {
	if s.Group == "" {
		return threshold.Ref{Metric: m}.String()
	}
	return threshold.Ref{Scope: threshold.Groups, Name: s.Group, Metric: m}.String()
}

// Worse lists the changes marked Worse, each as the metric's threshold
// name and its change ("groups.sub.latency.p99 +33.3%", "errors from 0
// to 3", "ack.p99 (no samples in B)"); empty when none.
func (c *Comparison) Worse() []string {
	var out []string
	for _, s := range c.Sections {
		for _, r := range s.Rows {
			if r.Mark != Worse {
				continue
			}
			switch {
			case r.B == nil:
				out = append(out, s.ref(r.Metric)+" (no samples in B)")
			case math.IsInf(r.Change, 0):
				out = append(out, fmt.Sprintf("%s from 0 to %s", s.ref(r.Metric), compareValue(r.Metric, r.B)))
			default:
				out = append(out, s.ref(r.Metric)+" "+r.changePercent())
			}
		}
	}
	return out
}

// Summary is the comparison's last line: which changes are worse than
// the tolerance, or that none is.
func (c *Comparison) Summary() string {
	tol := fmtPercent(c.Tolerance)
	worse := c.Worse()
	if len(worse) == 0 {
		return "no change worse than " + tol
	}
	shown := worse
	more := ""
	if len(shown) > summaryWorse {
		shown = shown[:summaryWorse]
		more = fmt.Sprintf(" and %d more", len(worse)-summaryWorse)
	}
	return fmt.Sprintf("WORSE: %d %s beyond %s: %s%s", len(worse), pluralWord(len(worse), "change", "changes"), tol, strings.Join(shown, ", "), more)
}

// summaryWorse is how many worse changes the summary line names; the
// tables above mark every one.
const summaryWorse = 8

// CompareFormat is one way of writing a Comparison: the --out
// FORMAT=FILE of mqplan compare.
type CompareFormat struct {
	// Name is what --out calls it.
	Name string
	// Help is a few words for --help.
	Help string
	// Write renders c whole, or nothing on error.
	Write func(w io.Writer, c *Comparison) error
}

// compareFormats lists the comparison's formats in the order --help
// shows them.
var compareFormats = []CompareFormat{
	{Name: "table", Help: "the side-by-side table the terminal shows", Write: WriteComparison},
	{Name: "json", Help: "the same figures for scripts", Write: WriteComparisonJSON},
}

// LookupCompareFormat finds a comparison format by name.
func LookupCompareFormat(name string) (CompareFormat, bool) {
	i := slices.IndexFunc(compareFormats, func(f CompareFormat) bool { return f.Name == name })
	if i < 0 {
		return CompareFormat{}, false
	}
	return compareFormats[i], true
}

// CompareFormatNames lists the comparison formats' names for messages.
func CompareFormatNames() string {
	names := make([]string, len(compareFormats))
	for i, f := range compareFormats {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// CompareFormatHelp describes every comparison format, one per line.
func CompareFormatHelp() string {
	var b strings.Builder
	for _, f := range compareFormats {
		fmt.Fprintf(&b, "  %-6s %s\n", f.Name, f.Help)
	}
	return b.String()
}

// WriteComparison writes the side-by-side table: a header naming A and B,
// the notes, one table for the total and one per common group, and the
// Summary line. Values show as the report's table shows them, absent ones
// as "-"; a fraction's change is in percentage points (pp).
func WriteComparison(w io.Writer, c *Comparison) error {
	var b bytes.Buffer
	b.WriteString("mqplan compare: B against A\n")
	for _, s := range []struct {
		label string
		run   ComparedRun
	}{{"A", c.A}, {"B", c.B}} {
		fmt.Fprintf(&b, "%s: %s | %s | %s | %s | %s", s.label, orDash(s.run.Label), orDash(s.run.Plan),
			startedText(s.run.Started), fmtDuration(s.run.Elapsed), s.run.Verdict)
		if s.run.MqplanVersion != "" {
			fmt.Fprintf(&b, " | mqplan %s", s.run.MqplanVersion)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "marked: %s\n", c.marked())
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "NOTE: %s\n", n)
	}
	for _, s := range c.Sections {
		section(&b, s.title())
		t := newTableAligned(&b, []align{alignLeft}, "metric", "A", "B", "change", "change %", "")
		if err := render(t, compareCells(s)); err != nil {
			return err
		}
	}
	b.WriteByte('\n')
	b.WriteString(c.Summary())
	b.WriteByte('\n')
	// A file name given on the command line, a saved result's notes:
	// escaped rather than acting on the terminal (TerminalSafe).
	_, err := io.WriteString(w, TerminalSafe(b.String(), "\n"))
	return err
}

// marked says which changes the comparison marks, and how.
func (c *Comparison) marked() string {
	return "changes beyond " + fmtPercent(c.Tolerance) + ", WORSE toward higher latency, loss, duplicates or errors and lower rates, better the other way"
}

// title is the section's title: the total, or the group.
func (s CompareSection) title() string {
	if s.Group == "" {
		return "Total (steady phase, deliveries during drain included)"
	}
	return "Group " + s.Group
}

// startedText is a run's start for the header, "-" when unknown.
func startedText(t time.Time) string {
	if t.IsZero() {
		return absent
	}
	return t.Format(time.RFC3339)
}

// compareValue shows a value as the report's table does: rates rounded,
// fractions as percentages, durations with three digits.
func compareValue(m metric.Name, v any) string {
	if v == nil {
		return absent
	}
	mm, _ := metric.Lookup(string(m))
	switch mm.Kind {
	case metric.Rate:
		return fmtRate(number(v))
	case metric.Fraction:
		return fmtPercent(number(v))
	}
	return fmtValue(v)
}

// delta is B - A in the metric's unit, signed ("0" for none); "-" when
// either is absent.
func (r CompareRow) delta() string {
	if r.A == nil || r.B == nil {
		return absent
	}
	d := number(r.B) - number(r.A)
	sign := "+"
	switch {
	case d == 0:
		return "0"
	case d < 0:
		sign = ""
	}
	mm, _ := metric.Lookup(string(r.Metric))
	switch mm.Kind {
	case metric.Duration:
		return sign + fmtDuration(time.Duration(d))
	case metric.Rate:
		return sign + fmtRate(d)
	case metric.Fraction:
		return sign + strings.TrimSuffix(fmtPercent(d), "%") + "pp"
	}
	return sign + fmtFloat(d)
}

// changePercent is Change as a signed percentage: "+33.3%", "-5%", "0%";
// "-" when either is absent or A is 0 (no ratio).
func (r CompareRow) changePercent() string {
	switch {
	case r.A != nil && r.B == nil:
		return "no samples in B"
	case math.IsNaN(r.Change):
		return absent
	case math.IsInf(r.Change, 0):
		return "from 0"
	case r.Change > 0:
		return "+" + fmtPercent(r.Change)
	}
	return fmtPercent(r.Change)
}

// planDifferences names what differs between two runs' plans that changes
// what is measured: the broker, each group (by name), and the timeline.
// The file, the description and the thresholds do not change the
// figures, so they are left out. It compares the plans as the JSON report
// echoes them, so that a saved result and a live one compare alike.
func planDifferences(a, b *plans.Plan) []string {
	if a == nil || b == nil {
		return nil
	}
	ja, jb := planJSON(a), planJSON(b)
	same := func(x, y any) bool {
		bx, errX := json.Marshal(x)
		by, errY := json.Marshal(y)
		return errX == nil && errY == nil && bytes.Equal(bx, by)
	}
	var out []string
	if !same(ja.Broker, jb.Broker) {
		out = append(out, "broker")
	}
	groups := map[string]jsonPlanGroup{}
	for _, g := range jb.Groups {
		groups[g.Name] = g
	}
	for _, g := range ja.Groups {
		if other, ok := groups[g.Name]; ok && !same(g, other) {
			out = append(out, "group "+g.Name)
		}
	}
	for _, f := range []struct {
		name string
		x, y jsonDuration
	}{{"warmup", ja.Warmup, jb.Warmup}, {"ramp", ja.Ramp, jb.Ramp}, {"duration", ja.Duration, jb.Duration}, {"drain", ja.Drain, jb.Drain}, {"drain.quiet", ja.DrainQuiet, jb.DrainQuiet}} {
		if f.x != f.y {
			out = append(out, f.name)
		}
	}
	return out
}
