package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// A saved result is read back by mqplan report, compare and --baseline,
// which trust its figures: a gate compares against them. A hand-edited
// file with figures no run can give (a negative count, p50 above max,
// received beyond what was expected, a share above 1, a timeline out of
// order) would render a report or pass a gate that means nothing, so
// ReadJSON refuses it, naming the first impossible figure by its JSON
// path. The checks hold for every result WriteJSON writes of a real run.

// maxFigure bounds every floating-point figure of a result (rates, CPU
// percentages, plan rates): far above any measurement (a billion
// messages a second for a million seconds), far below where float64 loses
// whole numbers, so that 1e308 is refused rather than printed.
const maxFigure = 1e15

// checkResult returns the first impossible figure of a result read back,
// as "PATH: what is wrong", or nil.
func checkResult(r *Result) error {
	c := &resultCheck{}
	c.result(r)
	return c.err
}

// resultCheck keeps the first problem found.
type resultCheck struct{ err error }

func (c *resultCheck) fail(path, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
}

func (c *resultCheck) count(path string, n int64) {
	if n < 0 {
		c.fail(path, "%d is negative; no run counts below zero", n)
	}
}

func (c *resultCheck) duration(path string, d time.Duration) {
	if d < 0 {
		c.fail(path, "%s is negative; no run measures a negative time", d)
	}
}

func (c *resultCheck) figure(path string, f float64) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		c.fail(path, "%v is not a number", f)
	case f < 0:
		c.fail(path, "%g is negative", f)
	case f > maxFigure:
		c.fail(path, "%g is beyond any measurement (at most %g)", f, maxFigure)
	}
}

// ordered checks that durations named in order do not decrease (p50 ≤
// p99 ≤ max), each one being non-negative.
func (c *resultCheck) ordered(path string, names []string, ds []time.Duration) {
	for i, d := range ds {
		c.duration(path+"."+names[i], d)
		if i > 0 && d < ds[i-1] {
			c.fail(path+"."+names[i], "%s is below %s %s; a histogram's figures grow with the percentile", d, names[i-1], ds[i-1])
		}
	}
}

// text refuses a control character (but those in allowed) in a string
// mqplan never writes with one: a plan's name or description (which
// plans refuses), a group's name, a metric's, a threshold's. A
// hand-edited one would otherwise reach the terminal.
func (c *resultCheck) text(path, s, allowed string) {
	if hasControl(s, allowed) {
		c.fail(path, "%s holds a control character or is not UTF-8; mqplan never writes one there", strconv.QuoteToASCII(s))
	}
}

// names checks the names of a result's plan, groups, metrics and
// thresholds for control characters (text).
func (c *resultCheck) names(r *Result) {
	if pl := r.Plan; pl != nil {
		c.text("plan.name", pl.Name, "")
		c.text("plan.description", pl.Description, "\n\t")
		for i := range pl.Groups {
			c.text("plan.groups["+strconv.Itoa(i)+"].name", pl.Groups[i].Name, "")
		}
	}
	for i, g := range r.Groups {
		c.text("groups["+strconv.Itoa(i)+"].name", g.Name, "")
	}
	for i, t := range r.Thresholds {
		c.text("thresholds["+strconv.Itoa(i)+"].expr", t.Expr, "\n\t")
	}
	for i, l := range r.Latency {
		c.text("latency["+strconv.Itoa(i)+"].name", l.Name, "")
	}
	for i, d := range r.Distributions {
		c.text("distributions["+strconv.Itoa(i)+"].name", d.Name, "")
		c.text("distributions["+strconv.Itoa(i)+"].group", d.Group, "")
	}
	keys := func(p string, s metric.Set) {
		for _, name := range slices.Sorted(maps.Keys(s)) {
			c.text(p+" key", string(name), "")
		}
	}
	keys("metrics.top", r.Measured.Top)
	for _, scope := range []struct {
		p    string
		sets map[string]metric.Set
	}{{"metrics.groups", r.Measured.Groups}, {"metrics.phases", r.Measured.Phases}, {"metrics.stages", r.Measured.Stages}} {
		for _, name := range slices.Sorted(maps.Keys(scope.sets)) {
			c.text(scope.p+" key", name, "")
			keys(scope.p+"."+name, scope.sets[name])
		}
	}
}

func (c *resultCheck) result(r *Result) {
	c.names(r)
	c.duration("elapsed", r.Elapsed)
	c.duration("drain_quiet", r.DrainQuiet)
	c.duration("rate_window", r.RateWindow)
	c.count("unsent", r.Unsent)
	c.count("in_flight_at_end", r.InFlightAtEnd)
	c.count("late", r.Late)
	c.plan(r)
	for i, t := range r.Thresholds {
		p := "thresholds[" + strconv.Itoa(i) + "]"
		c.count(p+".line", int64(t.Pos.Line))
		c.count(p+".column", int64(t.Pos.Col))
		c.count(p+".late", int64(t.Late))
		for j, v := range t.Values {
			if !v.Missing {
				c.value(p+".values["+strconv.Itoa(j)+"].value", v.Ref.Metric, v.Value)
			}
		}
	}
	for i, ph := range r.Phases {
		p := "phases[" + strconv.Itoa(i) + "]"
		c.duration(p+".start", ph.Start)
		switch {
		case ph.End < ph.Start:
			c.fail(p+".end", "%s is before its start %s", ph.End, ph.Start)
		case ph.End > r.Elapsed:
			c.fail(p+".end", "%s is after the run's end (elapsed %s)", ph.End, r.Elapsed)
		}
	}
	for i, g := range r.Groups {
		p := "groups[" + strconv.Itoa(i) + "]"
		c.count(p+".clients", int64(g.Clients))
		c.count(p+".connected", int64(g.Connected))
		c.count(p+".connected_at_end", int64(g.ConnectedAtEnd))
		c.count(p+".lost", int64(g.Lost))
		c.count(p+".late", g.Late)
		switch {
		case g.Connected > g.Clients:
			c.fail(p+".connected", "%d clients connected of the %d the group has", g.Connected, g.Clients)
		case g.ConnectedAtEnd > g.Connected:
			c.fail(p+".connected_at_end", "%d clients connected at the end, more than the %d that ever connected", g.ConnectedAtEnd, g.Connected)
		}
	}
	for i, l := range r.Latency {
		p := "latency[" + strconv.Itoa(i) + "]"
		c.count(p+".samples", l.Samples)
		if l.Samples > 0 {
			c.ordered(p, []string{"min", "p50", "p90", "p99", "p999", "max"}, []time.Duration{l.Min, l.P50, l.P90, l.P99, l.P999, l.Max})
			if l.Mean < l.Min || l.Mean > l.Max {
				c.fail(p+".mean", "%s is outside min %s and max %s", l.Mean, l.Min, l.Max)
			}
		}
	}
	for i, d := range r.Distributions {
		p := "distributions[" + strconv.Itoa(i) + "]"
		c.count(p+".samples", d.Samples)
		for j, pt := range d.Points {
			pp := p + ".points[" + strconv.Itoa(j) + "]"
			if !(pt.Percentile >= 0 && pt.Percentile <= 100) {
				c.fail(pp+".percentile", "%v is not a percentile between 0 and 100", pt.Percentile)
			}
			c.duration(pp+".value", pt.Value)
			if j > 0 && (pt.Percentile < d.Points[j-1].Percentile || pt.Value < d.Points[j-1].Value) {
				c.fail(pp, "percentile %v at %s comes after %v at %s; the curve only grows", pt.Percentile, pt.Value, d.Points[j-1].Percentile, d.Points[j-1].Value)
			}
		}
	}
	c.histograms(r.Histograms)
	c.set("metrics.top", r.Measured.Top)
	if c.err == nil {
		// Every delivery received is an expected one or a duplicate of
		// one; none is lost that was not expected.
		top := r.Measured.Top
		exp, hasExp := top[metric.Expected].(int)
		rec, _ := top[metric.Received].(int)
		dup, _ := top[metric.Duplicates].(int)
		lost, _ := top[metric.Lost].(int)
		switch {
		case hasExp && rec-dup > exp:
			c.fail("metrics.top.received", "%d deliveries (%d of them duplicates) received of %d expected", rec, dup, exp)
		case hasExp && lost > exp:
			c.fail("metrics.top.lost", "%d lost of %d expected", lost, exp)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Measured.Groups)) {
		c.set("metrics.groups."+name, r.Measured.Groups[name])
	}
	for _, name := range slices.Sorted(maps.Keys(r.Measured.Phases)) {
		c.set("metrics.phases."+name, r.Measured.Phases[name])
	}
	for _, name := range slices.Sorted(maps.Keys(r.Measured.Stages)) {
		c.set("metrics.stages."+name, r.Measured.Stages[name])
	}
	// A second's groups are the plan's (the run's when the file has
	// no plan): a name the plan lacks was written by hand.
	planGroups := map[string]bool{}
	if r.Plan != nil {
		for i := range r.Plan.Groups {
			planGroups[r.Plan.Groups[i].Name] = true
		}
	} else {
		for _, g := range r.Groups {
			planGroups[g.Name] = true
		}
	}
	prev := time.Duration(0)
	for i := range r.Timeline {
		s := &r.Timeline[i]
		p := "timeline[" + strconv.Itoa(i) + "]"
		c.duration(p+".at", s.At)
		switch {
		case s.At < prev:
			c.fail(p+".at", "%s is before the previous second's %s; the timeline is in order", s.At, prev)
		case s.At > r.Elapsed:
			c.fail(p+".at", "%s is after the run's end (elapsed %s)", s.At, r.Elapsed)
		}
		prev = s.At
		c.count(p+".connected", int64(s.Connected))
		c.count(p+".lost", int64(s.Lost))
		c.second(p, s.Sent, s.Received, s.Errors, s.Disconnects, s.P50, s.P99, s.Max, s.LagMax)
		for j := range s.Groups {
			g := &s.Groups[j]
			gp := p + ".groups[" + strconv.Itoa(j) + "]"
			c.text(gp+".group", g.Group, "")
			if !planGroups[g.Group] {
				c.fail(gp+".group", "%s is not a group of the plan: the file was edited", strconv.QuoteToASCII(g.Group))
			}
			c.count(gp+".connected", int64(g.Connected))
			c.count(gp+".lost", int64(g.Lost))
			c.count(gp+".acked", g.Acked)
			c.count(gp+".duplicates", g.Duplicates)
			c.second(gp, g.Sent, g.Received, g.Errors, g.Disconnects, g.P50, g.P99, g.Max, g.LagMax)
		}
		c.proc(p+".broker", s.Broker)
		c.proc(p+".self", s.Self)
		if c.err != nil {
			return
		}
	}
	c.comparison(r)
	if b := r.Broker; b != nil {
		c.count("broker.messages_received", b.MessagesReceived)
		c.count("broker.messages_sent", b.MessagesSent)
		c.count("broker.messages_dropped", b.MessagesDropped)
		c.count("broker.inflight_dropped", b.InflightDropped)
		c.count("broker.clients_maximum", b.ClientsMaximum)
	}
}

// second checks the figures a second and a group's share of it share.
func (c *resultCheck) second(p string, sent, received, errs, disconnects int64, p50, p99, mx, lag time.Duration) {
	c.count(p+".sent", sent)
	c.count(p+".received", received)
	c.count(p+".errors", errs)
	c.count(p+".disconnects", disconnects)
	c.ordered(p, []string{"p50", "p99", "max"}, []time.Duration{p50, p99, mx})
	c.duration(p+".lag_max", lag)
}

func (c *resultCheck) proc(p string, s stats.ProcSample) {
	if s.Sampled {
		c.figure(p+".cpu_percent", s.CPU)
		c.count(p+".rss_bytes", s.RSS)
	}
}

// plan checks the plan echo's durations, counts and rates.
func (c *resultCheck) plan(r *Result) {
	pl := r.Plan
	if pl == nil {
		return
	}
	c.duration("plan.warmup", pl.Warmup)
	c.duration("plan.ramp", pl.Ramp)
	c.duration("plan.duration", pl.Duration)
	c.duration("plan.drain", pl.Drain)
	c.duration("plan.drain_quiet", pl.DrainQuiet)
	c.count("plan.seed", int64(pl.Seed))
	if d := pl.Disturbance; d != "" && d != plans.DisturbanceInconclusive && d != plans.DisturbanceFail {
		c.fail("plan.disturbance", "%q is not a disturbance (inconclusive or fail)", d)
	}
	for i, st := range pl.Stages {
		p := "plan.stages[" + strconv.Itoa(i) + "]"
		c.duration(p+".duration", st.Duration)
		c.figure(p+".rate", st.Rate)
		c.duration(p+".every", st.Every)
	}
	c.duration("plan.broker.connect_timeout", pl.Broker.ConnectTimeout)
	for i := range pl.Groups {
		g := &pl.Groups[i]
		p := "plan.groups[" + strconv.Itoa(i) + "]"
		c.count(p+".count", int64(g.Count))
		c.count(p+".start", int64(g.Start))
		c.duration(p+".keepalive", g.Keepalive)
		c.duration(p+".session_expiry", g.SessionExpiry)
		c.figure(p+".connect_rate", g.ConnectRate)
		if rc := g.Reconnect; rc != nil {
			c.duration(p+".reconnect.after", rc.After)
			c.count(p+".reconnect.max", int64(rc.Max))
		}
		if pub := g.Publish; pub != nil {
			if pub.QoS > 2 {
				c.fail(p+".publish.qos", "%d is not a QoS (0, 1 or 2)", pub.QoS)
			}
			c.count(p+".publish.size", int64(pub.Size))
			c.duration(p+".publish.every", pub.Every)
			c.figure(p+".publish.rate", pub.Rate)
			for j, st := range pub.Stages {
				sp := p + ".publish.stages[" + strconv.Itoa(j) + "]"
				c.duration(sp+".duration", st.Duration)
				c.figure(sp+".rate", st.Rate)
				c.duration(sp+".every", st.Every)
			}
			c.count(p+".publish.count", int64(pub.Count))
			if b := pub.Burst; b != nil {
				c.duration(p+".publish.burst.every", b.Every)
				c.count(p+".publish.burst.messages", int64(b.Messages))
			}
			if d := pub.StartDelay; d != nil {
				c.duration(p+".publish.start_delay.min", d.Min)
				c.duration(p+".publish.start_delay.max", d.Max)
				if d.Max < d.Min {
					c.fail(p+".publish.start_delay.max", "%s is below min %s", time.Duration(d.Max), time.Duration(d.Min))
				}
			}
			if a := pub.Arrival; a != "" && a != plans.ArrivalUniform && a != plans.ArrivalPoisson {
				c.fail(p+".publish.arrival", "%q is not an arrival (uniform or poisson)", a)
			}
			if pub.Inflight < 0 || pub.Inflight > plans.MaxInflight || pub.Inflight > 0 && !pub.Max {
				c.fail(p+".publish.inflight", "%d is not a closed loop's window (1 to %d, with max)", pub.Inflight, plans.MaxInflight)
			}
		}
	}
}

// set checks each metric of a set by its kind, and that a latency
// family's percentiles do not decrease.
func (c *resultCheck) set(p string, s metric.Set) {
	for _, name := range slices.Sorted(maps.Keys(s)) {
		c.value(p+"."+string(name), name, s[name])
	}
	for _, fam := range []string{"latency", "ack", "latency_local", "latency_cross"} {
		var names []string
		var ds []time.Duration
		for _, m := range []string{"min", "p50", "p90", "p95", "p99", "p999", "max"} {
			if d, ok := s[metric.Name(fam+"."+m)].(time.Duration); ok {
				names, ds = append(names, fam+"."+m), append(ds, d)
			}
		}
		c.ordered(p, names, ds)
	}
}

// value checks one metric value by its kind: a count or a duration is
// not negative, a rate is a finite figure (NaN, written as null, is a
// rate without a window), a fraction lies between 0 and 1.
func (c *resultCheck) value(p string, name metric.Name, v any) {
	m, known := metric.Lookup(string(name))
	if !known {
		return // a newer mqplan's metric: its rules are not known here
	}
	switch x := v.(type) {
	case int:
		c.count(p, int64(x))
	case time.Duration:
		c.duration(p, x)
	case float64:
		if math.IsNaN(x) {
			return
		}
		if m.Kind == metric.Fraction && !(x >= 0 && x <= 1) {
			c.fail(p, "%g is not a share between 0 and 1", x)
			return
		}
		c.figure(p, x)
	}
}

// comparison checks the saved comparison with the baseline: its values
// by their kinds; this run's side (b) against this result's own
// measured figures, which it was computed from (Compare), so that a
// report cannot show one p99 in its latency table and another in its
// comparison; the baseline's side (a) against the baseline's figures
// that the thresholds reading baseline.* recorded, where they read one;
// and its rows and sections against those Compare gives for those
// figures (compareSets), so that a row or a section cannot be left out.
func (c *resultCheck) comparison(r *Result) {
	cmp := r.Comparison
	if cmp == nil {
		return
	}
	groups := make(map[string]Group, len(r.Groups))
	for _, g := range r.Groups {
		groups[g.Name] = g
	}
	base := c.baselineValues(r)
	if c.err != nil {
		return
	}
	sections := map[string]bool{}
	for i, s := range cmp.Sections {
		p := "baseline.sections[" + strconv.Itoa(i) + "]"
		own := r.Measured.Top
		if s.Group != "" {
			if _, ok := groups[s.Group]; !ok {
				c.fail(p+".group", "this run has no group %s", strconv.Quote(s.Group))
				return
			}
			own = r.Measured.Groups[s.Group]
		}
		sections[s.Group] = true
		for j, row := range s.Rows {
			rp := p + ".rows[" + strconv.Itoa(j) + "]"
			if row.A != nil {
				c.value(rp+".a", row.Metric, row.A)
			}
			if row.B != nil {
				c.value(rp+".b", row.Metric, row.B)
			}
			if c.err != nil {
				return
			}
			if mine := present(own, row.Metric); mine != row.B {
				c.fail(rp+".b", "%s disagrees with this run's own %s, %s: the file was edited",
					compareValue(row.Metric, row.B), s.ref(row.Metric), compareValue(row.Metric, mine))
				return
			}
			if rec, ok := base[s.Group][row.Metric]; ok && rec.value != row.A {
				c.fail(rp+".a", "%s disagrees with the baseline's %s, %s, as %s read it: the file was edited",
					compareValue(row.Metric, row.A), s.ref(row.Metric), compareValue(row.Metric, rec.value), rec.path)
				return
			}
		}
		c.sectionRows(p, s, own, base[s.Group], groups[s.Group].Publishes, cmp.Tolerance)
		if c.err != nil {
			return
		}
	}
	// Compare gives the total and every group both runs have.
	onlyB := map[string]bool{}
	for _, g := range cmp.OnlyB {
		onlyB[g] = true
	}
	if !sections[""] {
		c.fail("baseline.sections", "no section for the total, which mqplan compare always gives: the file was edited")
	}
	for _, g := range r.Groups {
		if !sections[g.Name] && !onlyB[g.Name] {
			c.fail("baseline.sections", "no section for group %s, which the baseline has (it is not in only_b): the file was edited", strconv.Quote(g.Name))
		}
	}
}

// baselineRecord is one of the baseline's figures as a threshold read it
// (nil: the baseline lacked it), and where.
type baselineRecord struct {
	value any
	path  string
}

// baselineValues are the baseline's figures that the thresholds reading
// baseline.* recorded, by comparison section (the group, "" for the
// total) and metric, as Compare would see them (present). Two that
// disagree were edited.
func (c *resultCheck) baselineValues(r *Result) map[string]map[metric.Name]baselineRecord {
	out := map[string]map[metric.Name]baselineRecord{}
	for i, t := range r.Thresholds {
		for j, v := range t.Values {
			ref := v.Ref
			if !ref.Baseline || ref.Scope != threshold.Top && ref.Scope != threshold.Groups {
				continue
			}
			rec := baselineRecord{path: "thresholds[" + strconv.Itoa(i) + "]"}
			if !v.Missing {
				rec.value = present(metric.Set{ref.Metric: v.Value}, ref.Metric)
			}
			if out[ref.Name] == nil {
				out[ref.Name] = map[metric.Name]baselineRecord{}
			}
			if prev, ok := out[ref.Name][ref.Metric]; ok {
				if prev.value != rec.value {
					c.fail(rec.path+".values["+strconv.Itoa(j)+"].value", "%s disagrees with the %s %s read: the file was edited",
						compareValue(ref.Metric, rec.value), compareValue(ref.Metric, prev.value), prev.path)
					return nil
				}
				continue
			}
			out[ref.Name][ref.Metric] = rec
		}
	}
	return out
}

// sectionRows checks that a section has exactly the rows Compare gives
// for its figures: this run's (own), the baseline's as its rows and the
// thresholds (base) give them. publishes says this run's group
// publishes (its send rate is compared).
func (c *resultCheck) sectionRows(p string, s CompareSection, own metric.Set, base map[metric.Name]baselineRecord, publishes bool, tolerance float64) {
	a := metric.Set{}
	for name, rec := range base {
		if rec.value != nil {
			a[name] = rec.value
		}
	}
	have := map[metric.Name]bool{}
	for _, row := range s.Rows {
		have[row.Metric] = true
		if row.A != nil {
			a[row.Metric] = row.A
		}
	}
	var keep func(metric.Name) bool
	if s.Group != "" {
		// The baseline's group publishes too when its send rate is
		// there.
		publishes = publishes || have[metric.SendRate]
		keep = func(n metric.Name) bool { return n != metric.SendRate || publishes }
	}
	want := map[metric.Name]bool{}
	for _, row := range compareSets(a, own, tolerance, keep) {
		want[row.Metric] = true
		if !have[row.Metric] {
			c.fail(p+".rows", "no row for %s, which mqplan compare gives for these runs' figures: the file was edited", s.ref(row.Metric))
			return
		}
	}
	for j, row := range s.Rows {
		if !want[row.Metric] {
			c.fail(p+".rows["+strconv.Itoa(j)+"].metric", "mqplan compare gives no row for %s when %s: the file was edited",
				s.ref(row.Metric), noRowReason(row))
			return
		}
	}
}

// noRowReason says why Compare leaves out a row: neither run has the
// figure, or (the broker's counters) one of them lacks it.
func noRowReason(row CompareRow) string {
	if row.A == nil && row.B == nil {
		return "neither run has it"
	}
	return "one of the runs lacks it"
}
