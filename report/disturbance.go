package report

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// This file is the INCONCLUSIVE verdict: a run whose only failures are
// latency thresholds that mqplan's own lack of CPU can explain.
//
// Latency is measured from each message's intended send time to its
// delivery, and both ends are mqplan's: a generator that waited for a CPU
// sends late and reads deliveries late, and both delays land in the
// latency as if they were the broker's. The disturbance cannot create or
// hide a message, so every count threshold is judged as usual; it can
// only make a latency larger, never smaller.
//
// What is measured, per second of the timeline (stats.GenSecond): how long
// mqplan's threads together waited in the run queue for a CPU, and its
// CPU use as a share of the CPUs it was given (GOMAXPROCS, --procs). A
// second is
//   - starved when its threads waited starvedWait or more in it (a
//     quarter of a CPU-second denied to the generator) and, on average,
//     starvedDelay or more each time one of them was given a CPU. The
//     total alone also counts a generator that wakes very often and waits
//     a little each time: fanout-qos0 (50 deliveries per message) on a
//     quiet machine waited 200-340 ms a second, 0.12-0.21 ms a time, and
//     held p99 < 5 ms. Measured on a 2-core machine shared with other
//     builds: quiet runs of the shipped plans waited 0.02-0.21 ms a time;
//     beside two busy loops pinned on their CPUs, 0.3-0.7 ms a time in
//     the median second (up to 16 ms), about 500 ms a second in all for
//     plans/1to1-qos1.yaml, with sends up to 360 ms late;
//   - saturated when it used saturatedBusy or more of its CPUs: it was at
//     its own ceiling, so its schedule slipped whatever the broker did
//     (20,000 msg/s on one CPU ran at 90-92 % with sends 170 ms late).
//
// A run is disturbed when the disturbed (starved or saturated) seconds
// are at least disturbedShare of its measured window: one bad second in
// a long run is not enough to discard a verdict.
//
// A failing threshold is explained by the disturbance, and then not
// judged, when every value that made it fail can be: substituting the
// smallest value (zero) for each explained value makes it hold. A
// value is explained when its run was disturbed and
//   - it is a latency statistic (latency.*, ack.*, rtt.*, and a sharded
//     run's latency_local.* and latency_cross.*, at the top level, per
//     group, per stage or per phase) at quantile q (min 0, p50 and mean
//     0.5, p90 0.9, ..., stddev as p99, max 1): its window's disturbed
//     share is at least 1-q, so that the seconds the statistic is read
//     from can all be disturbed ones (a median needs half the window
//     disturbed, a maximum one second), and the generator's own lateness
//     is of the order of the value: its p99 send lag in that window (for
//     a maximum, the largest lag of a disturbed second) is at least
//     1/explainRatio of it, or its threads waited at least the value for
//     a CPU in one disturbed second. The send lag alone understates a
//     generator starved on its receiving side: beside two busy loops,
//     fanout-qos0 (50 deliveries per message) read p99 809 ms with a p99
//     send lag of 330 ms, its threads waiting 2.2 s a second. A broker
//     that delays every message by 50 ms on an undisturbed machine reads
//     p99 = 50 ms with a lag of a few milliseconds and no disturbed
//     second: still a FAIL;
//   - it is a measure of the generator itself (lag.*, late_rate): its
//     run was disturbed, which is what makes it fail.
//
// connect.* and subscribe.* are judged as usual: they are measured over
// the whole run, not the window the disturbance is read over, and have no
// schedule whose lag would say how much of them is mqplan's.
const (
	starvedWait    = 250 * time.Millisecond
	starvedDelay   = 250 * time.Microsecond
	saturatedBusy  = 0.9
	disturbedShare = 0.10
	explainRatio   = 2
)

// Disturbance sums up how disturbed mqplan was over one window (the
// steady phase, or another phase).
type Disturbance struct {
	// Phase is the window.
	Phase phase.Phase
	// Seconds counts the window's measured seconds; Starved and Saturated
	// those of each kind, Disturbed those of either.
	Seconds, Starved, Saturated, Disturbed int
	// Wait is how long mqplan's threads waited for a CPU over the window;
	// WaitMax the most they waited in one disturbed second.
	Wait, WaitMax time.Duration
	// BusyMax is mqplan's busiest second, as a share of its CPUs.
	BusyMax float64
	// Pressure is how long the machine's runnable tasks waited for a CPU
	// (some of them) over the window, when HasPressure.
	Pressure    time.Duration
	HasPressure bool
	// LagP99 is the p99 send lag over the window (lag.p99); LagMax the
	// largest lag of a disturbed second.
	LagP99, LagMax time.Duration
}

// Share is the disturbed share of the window's measured seconds.
func (d *Disturbance) Share() float64 {
	if d == nil || d.Seconds == 0 {
		return 0
	}
	return float64(d.Disturbed) / float64(d.Seconds)
}

// Significant reports whether the window was disturbed enough that its
// latency may be the generator's.
func (d *Disturbance) Significant() bool {
	return d != nil && d.Disturbed > 0 && d.Share() >= disturbedShare
}

// MeasureDisturbance sums up the seconds of timeline in phase ph; lagP99
// is the window's p99 send lag. Seconds without a measurement (not Linux)
// are left out: a window with none has Seconds 0 and is never disturbed.
func MeasureDisturbance(timeline []stats.Second, ph phase.Phase, lagP99 time.Duration) Disturbance {
	d := Disturbance{Phase: ph, LagP99: lagP99}
	for i := range timeline {
		s := &timeline[i]
		if s.Phase != ph || !s.Gen.Sampled {
			continue
		}
		g := s.Gen
		d.Seconds++
		d.Wait += g.Wait
		d.BusyMax = max(d.BusyMax, g.Busy)
		if g.HasPressure {
			d.Pressure += g.Pressure
			d.HasPressure = true
		}
		starved, saturated := g.Wait >= starvedWait && g.Delay >= starvedDelay, g.Busy >= saturatedBusy
		if starved {
			d.Starved++
		}
		if saturated {
			d.Saturated++
		}
		if starved || saturated {
			d.Disturbed++
			d.LagMax = max(d.LagMax, s.LagMax)
			d.WaitMax = max(d.WaitMax, g.Wait)
		}
	}
	return d
}

// latencyFamily reports whether a metric family times messages against
// mqplan's own clock at both ends, so that a starved generator inflates
// it: end-to-end (and its local and cross-shard parts), acknowledgement
// and request round-trip latency.
func latencyFamily(fam string) bool {
	switch fam {
	case "latency", "latency_local", "latency_cross", "ack", "rtt":
		return true
	}
	return false
}

// quantileOf is the quantile a latency statistic reads, for the
// explanation rule; ok is false for a member that is not one.
func quantileOf(member string) (float64, bool) {
	switch member {
	case "min":
		return 0, true
	case "p50", "mean":
		return 0.5, true
	case "p90":
		return 0.9, true
	case "p95":
		return 0.95, true
	case "p99", "stddev":
		return 0.99, true
	case "p999":
		return 0.999, true
	case "max":
		return 1, true
	}
	return 0, false
}

// Explains reports whether d explains metric m reading v (see the rule
// above). A value of another type, or of a metric the disturbance cannot
// move, is not explained.
func (d *Disturbance) Explains(m metric.Name, v any) bool {
	if !d.Significant() {
		return false
	}
	switch m {
	case metric.LagP99, metric.LagMax, metric.LateRate:
		return true
	}
	fam, member, _ := m.Split()
	if !latencyFamily(fam) {
		return false
	}
	q, ok := quantileOf(member)
	dur, isDur := v.(time.Duration)
	if !ok || !isDur || d.Share() < 1-q {
		return false
	}
	ref := d.LagP99
	if member == "max" {
		ref = d.LagMax
	}
	return ref*explainRatio >= dur || d.WaitMax >= dur
}

// judgeDisturbance marks the failed thresholds of r that the disturbance
// explains as not judged (ThresholdOutcome.NotJudged), unless the plan
// asks for disturbance: fail. It keeps the steady window's figures in
// r.Disturbance for the outputs.
func judgeDisturbance(r *Result, ths []*plans.Threshold, st *stats.Stats) {
	lag := func(set metric.Set) time.Duration { d, _ := set[metric.LagP99].(time.Duration); return d }
	steady := MeasureDisturbance(st.Timeline, phase.Steady, lag(r.Measured.Top))
	if steady.Seconds > 0 {
		r.Disturbance = &steady
	}
	if r.Plan != nil && r.Plan.Disturbance == plans.DisturbanceFail {
		return
	}
	windows := map[string]*Disturbance{}
	window := func(ref threshold.Ref) *Disturbance {
		if ref.Scope != threshold.Phases {
			return &steady
		}
		if d, ok := windows[ref.Name]; ok {
			return d
		}
		ph, _ := phase.Parse(ref.Name)
		d := MeasureDisturbance(st.Timeline, ph, lag(r.Measured.Phases[ref.Name]))
		windows[ref.Name] = &d
		return &d
	}
	for i := range r.Thresholds {
		o := &r.Thresholds[i]
		if o.Pass || o.Builtin || i >= len(ths) || ths[i] == nil {
			continue
		}
		env, explained := explainedEnv(r.Measured, o.Values, window)
		if len(explained) == 0 || !ths[i].Eval(env).Pass {
			continue
		}
		// The evidence of the first explained value's window: the
		// steady phase's, unless the threshold reads a phase.
		o.NotJudged = notJudged(window(explained[0].Ref), explained)
	}
}

// explainedEnv is m with every value the disturbance explains set to
// zero, the least a latency (or a lag) can be, and the values it set.
func explainedEnv(m threshold.Measured, vals []threshold.Value, window func(threshold.Ref) *Disturbance) (threshold.Measured, []threshold.Value) {
	var explained []threshold.Value
	out := m
	copied := map[*map[string]metric.Set]bool{}
	for _, v := range vals {
		if v.Missing || v.Ref.Baseline || !window(v.Ref).Explains(v.Ref.Metric, v.Value) {
			continue
		}
		zero := any(time.Duration(0))
		if _, ok := v.Value.(float64); ok {
			zero = 0.0
		}
		switch v.Ref.Scope {
		case threshold.Top:
			if !copied[nil] {
				out.Top, copied[nil] = maps.Clone(out.Top), true
			}
			out.Top[v.Ref.Metric] = zero
		default:
			scopes := map[threshold.Scope]*map[string]metric.Set{threshold.Groups: &out.Groups, threshold.Phases: &out.Phases, threshold.Stages: &out.Stages}
			p, ok := scopes[v.Ref.Scope]
			if !ok {
				continue
			}
			if !copied[p] {
				*p, copied[p] = maps.Clone(*p), true
			}
			(*p)[v.Ref.Name] = maps.Clone((*p)[v.Ref.Name])
			(*p)[v.Ref.Name][v.Ref.Metric] = zero
		}
		explained = append(explained, v)
	}
	return out, explained
}

// notJudged is the evidence a threshold that was not judged carries:
// what the latency read, and how disturbed the generator was.
func notJudged(d *Disturbance, vals []threshold.Value) string {
	read := make([]string, 0, len(vals))
	for _, v := range vals {
		read = append(read, v.Ref.String()+" read "+fmtValue(v.Value))
	}
	return "not judged: " + strings.Join(read, ", ") + ", and " + d.Evidence()
}

// Evidence says how disturbed the window was, for example "mqplan waited
// 1.9s for a CPU in 10s of steady (4 of 10 seconds disturbed); its p99
// send lag was 310ms".
func (d *Disturbance) Evidence() string {
	kinds := []string{}
	if d.Starved > 0 {
		kinds = append(kinds, fmt.Sprintf("%d starved", d.Starved))
	}
	if d.Saturated > 0 {
		kinds = append(kinds, fmt.Sprintf("%d at %s or more of its CPUs", d.Saturated, fmtPercent(saturatedBusy)))
	}
	detail := ""
	if len(kinds) > 0 {
		detail = ": " + strings.Join(kinds, ", ")
	}
	s := fmt.Sprintf("mqplan waited %s for a CPU in %ds of %s (%d of %d %s disturbed%s); its p99 send lag was %s",
		fmtDuration(d.Wait), d.Seconds, d.Phase, d.Disturbed, d.Seconds, pluralWord(d.Seconds, "second", "seconds"), detail, fmtDuration(d.LagP99))
	if d.HasPressure {
		s += fmt.Sprintf("; the machine's tasks waited for a CPU %s of the time", fmtPercent(d.Pressure.Seconds()/float64(d.Seconds)))
	}
	return s
}

// inconclusiveSummary is the verdict line of an INCONCLUSIVE run, for
// example "INCONCLUSIVE: mqplan waited 1.9s for a CPU in 10s of steady
// (...); its p99 send lag was 310ms; latency thresholds are not judged
// (p99 < 10ms read 154ms)".
func (r *Result) inconclusiveSummary() string {
	var read []string
	for _, t := range r.Thresholds {
		if t.Pass || t.NotJudged == "" {
			continue
		}
		read = append(read, t.Expr+" read "+measuredValues(t.Values))
	}
	ev := "mqplan was short of CPU"
	if r.Disturbance != nil {
		ev = r.Disturbance.Evidence()
	}
	return VerdictInconclusive + ": " + ev + "; latency thresholds are not judged (" + strings.Join(read, "; ") + ")"
}

// addDisturbance puts mqplan's own disturbance over steady into set
// (self.cpu_wait, self.disturbed), absent where it was not measured.
func addDisturbance(set metric.Set, timeline []stats.Second) {
	d := MeasureDisturbance(timeline, phase.Steady, 0)
	if d.Seconds == 0 {
		return
	}
	set[metric.SelfCPUWait] = d.Wait
	set[metric.SelfDisturbed] = d.Share()
}

// notJudgedMark is the result a table shows for a threshold whose failure
// mqplan's disturbance explains.
const notJudgedMark = "NOT JUDGED"

// disturbanceLine is the outputs' one line on mqplan's own disturbance
// over steady, "" when it was not measured.
func disturbanceLine(r *Result) string {
	d := r.Disturbance
	if d == nil {
		return ""
	}
	s := "Disturbance: " + d.Evidence()
	switch {
	case r.Verdict() == VerdictInconclusive:
		s += ": the latency failures are mqplan's as much as the broker's, so they are not judged"
	case d.Significant():
		s += ": disturbed enough to explain latency failures"
	}
	return s
}

// writeDisturbance is the table's Disturbance line.
func writeDisturbance(b *bytes.Buffer, r *Result) error {
	if l := disturbanceLine(r); l != "" {
		b.WriteString("\n" + l + "\n")
	}
	return nil
}
