package report

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/stats"
	"github.com/mqplan/mqplan/threshold"
)

// crossShare is latency.cross_share: the deliveries (latency's samples)
// that crossed shards over all; absent without deliveries.
func crossShare(m *stats.Metrics) (any, bool) {
	if m.Latency == nil {
		return nil, false
	}
	var cross int64
	if m.LatencyCross != nil {
		cross = m.LatencyCross.TotalCount()
	}
	return ratio(cross, m.Latency.TotalCount())
}

// addClock puts clock.* into set: 0 for a single process (one clock, no
// offset, nothing to be uncertain of), a sharded run's figures otherwise,
// clock.uncertainty absent when a part did not say (stats.Clock).
func addClock(set metric.Set, c *stats.Clock) {
	if c == nil {
		set[metric.ClockUncertainty], set[metric.ClockMaxOffset] = time.Duration(0), time.Duration(0)
		return
	}
	set[metric.ClockMaxOffset] = c.MaxOffset()
	if u, ok := c.Uncertainty(); ok {
		set[metric.ClockUncertainty] = u
	}
}

// dropUnsplit leaves latency_local.*, latency_cross.* and
// latency.cross_share out of every set when a part did not split its
// deliveries by shard (an older mqplan's): its cross-shard deliveries
// would pass for local ones. Absent, a threshold on them fails.
func dropUnsplit(m threshold.Measured, c *stats.Clock) {
	if c == nil {
		return
	}
	for _, s := range c.Shards {
		if s.PairsKnown {
			continue
		}
		sets := append([]metric.Set{m.Top}, slices.Collect(maps.Values(m.Groups))...)
		for _, set := range append(sets, slices.Collect(maps.Values(m.Phases))...) {
			for name := range set {
				if threshold.ShardSplit(name) {
					delete(set, name)
				}
			}
		}
		return
	}
}

// comparedClock are the figures of a sharded run that mqplan compare
// shows in the total when either result is sharded: latency within and
// between shards (a change in latency may be all in one of them), the
// share that crossed and the clock uncertainty. Those two are shown,
// never marked: they describe how the load was split and how far the
// cross-shard figures can be trusted, not the broker.
var comparedClock = []compared{
	{name: metric.LatencyLocalP50},
	{name: metric.LatencyLocalP99},
	{name: metric.LatencyCrossP50},
	{name: metric.LatencyCrossP99},
	{name: metric.LatencyCrossShare, neutral: true},
	{name: metric.ClockUncertainty, neutral: true},
}

// clockRows are comparedClock's rows of the total.
func clockRows(a, b metric.Set, tolerance float64) []CompareRow {
	rows := make([]CompareRow, len(comparedClock))
	for i, m := range comparedClock {
		rows[i] = m.row(present(a, m.name), present(b, m.name), tolerance)
	}
	return rows
}

// clockUncertain is how much clock uncertainty makes cross-shard latency
// worth a warning: a millisecond, or a tenth of latency_cross.p50.
const (
	clockUncertainAbs      = time.Millisecond
	clockUncertainFraction = 0.10
)

// clockWarnings are a sharded run's warnings about its clocks: an
// uncertainty large against a millisecond or the cross-shard latency
// itself, and shard pairs whose traffic disagrees with the offsets the
// coordinator measured. None for a single process.
func clockWarnings(c *stats.Clock, top metric.Set) []string {
	if c == nil {
		return nil
	}
	var out []string
	u, ok := top[metric.ClockUncertainty].(time.Duration)
	p50, has := top[metric.LatencyCrossP50].(time.Duration)
	switch {
	case !ok:
		out = append(out, "clock.uncertainty is unknown (a part lacks its clock figures: written by an older mqplan, or its clock sample after the run failed): cross-shard latency may be off by any amount; gate on latency_local.p99 where the parts split it")
	case has && (u > clockUncertainAbs || float64(u) > clockUncertainFraction*float64(p50)):
		out = append(out, fmt.Sprintf("cross-shard latency ±%s (clock.uncertainty, above 1ms or a tenth of latency_cross.p50 %s): gate on latency_local.p99 instead (exact whatever the clocks), or fix NTP on the shards' hosts",
			fmtDur(u), fmtDur(p50)))
	}
	for _, p := range c.PairChecks() {
		if !p.Agrees() {
			out = append(out, fmt.Sprintf("shards %d and %d: their traffic says shard %d's epoch is %s after shard %d's (least latency each way), beyond the ±%s the clock offsets allow: cross-shard latency is off by about that much; fix NTP or gate on latency_local.p99",
				p.A, p.B, p.A, fmtDur(p.Residual), p.B, fmtDur(p.Bound)))
		}
	}
	return out
}

// clocksHead is the Clocks section's header.
var clocksHead = []string{"shard", "θ", "δ", "drift", "ntp", "cross share", "offset from"}

// clocksCells is a sharded run's Clocks section, for every format: its
// title and per shard its offset θ, the offset's uncertainty δ, the
// drift found after the run, the NTP status, the share of its deliveries
// that crossed shards and where its offset came from. No rows for a
// single process, whose outputs stay as they were.
func clocksCells(r *Result) (string, [][]string) {
	c := r.Clock
	if c == nil || len(c.Shards) == 0 {
		return "", nil
	}
	title := "Clocks (θ = coordinator − shard, measured ± δ as the shard joined; drift = the alignment error found after the run"
	if u, ok := r.Measured.Top[metric.ClockUncertainty].(time.Duration); ok {
		title += "; cross-shard latency ± " + fmtDur(u)
	}
	title += ")"
	var rows [][]string
	for _, s := range c.Shards {
		drift := "unknown"
		switch {
		case s.SameHost:
			drift = "0 (one clock)"
		case s.DriftKnown:
			drift = fmtDur(s.Drift) + " ± " + fmtDur(s.DriftDelay)
		}
		ntp := "unknown"
		if s.NTP.Known {
			ntp = "unsynced"
			if s.NTP.Synced {
				ntp = "synced ± " + fmtDur(s.NTP.EstError)
			}
		}
		share := "unknown"
		if s.PairsKnown {
			all, cross := c.Received(s.Index)
			share = absent
			if all > 0 {
				share = fmt.Sprintf("%.1f%%", 100*float64(cross)/float64(all))
			}
		}
		rows = append(rows, []string{fmt.Sprint(s.Index), fmtDur(s.Offset), fmtDur(s.Delay), drift, ntp, share, s.Source})
	}
	return title, rows
}

// writeClocks writes the table's Clocks section (clocksCells).
func writeClocks(b *bytes.Buffer, r *Result) error {
	title, rows := clocksCells(r)
	if rows == nil {
		return nil
	}
	section(b, title)
	return render(newTableAligned(b, []align{alignLeft, alignRight, alignRight, alignRight, alignLeft, alignRight, alignLeft}, clocksHead...), rows)
}

// mdClocks writes the Markdown's Clocks section (clocksCells).
func mdClocks(b *bytes.Buffer, r *Result) {
	title, rows := clocksCells(r)
	if rows == nil {
		return
	}
	b.WriteString("### Clocks\n\n" + mdText(title) + "\n\n")
	mdTable(b, clocksHead, 1, rows)
}

// fmtDur writes a clock figure to the microsecond, or to 10 ns under one
// (a same-host shard's δ, which is not 0).
func fmtDur(d time.Duration) string {
	if d != 0 && d.Abs() < time.Microsecond {
		return d.Round(10 * time.Nanosecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// jsonClock is Result.Clock in the JSON report (key "clock", added in
// version 1 later: absent for a single process and in older documents).
type jsonClock struct {
	Shards []jsonShardClock `json:"shards"`
	Pairs  []jsonShardPair  `json:"pairs"`
}

type jsonShardClock struct {
	Index      int           `json:"index"`
	Offset     jsonDuration  `json:"offset"`
	Delay      jsonDuration  `json:"delay"`
	Drift      *jsonDuration `json:"drift"`
	DriftDelay jsonDuration  `json:"drift_delay"`
	Source     string        `json:"source"`
	NTP        *jsonNTP      `json:"ntp"`
	PairsKnown bool          `json:"pairs_known"`
}

type jsonNTP struct {
	Synced   bool         `json:"synced"`
	MaxError jsonDuration `json:"max_error"`
	EstError jsonDuration `json:"est_error"`
}

type jsonShardPair struct {
	From       int          `json:"from"`
	To         int          `json:"to"`
	Deliveries int64        `json:"deliveries"`
	Min        jsonDuration `json:"min"`
}

// clockJSON is c's JSON form, nil for nil.
func clockJSON(c *stats.Clock) *jsonClock {
	if c == nil {
		return nil
	}
	out := &jsonClock{Shards: []jsonShardClock{}, Pairs: []jsonShardPair{}}
	for _, s := range c.Shards {
		js := jsonShardClock{Index: s.Index, Offset: jsonDuration(s.Offset), Delay: jsonDuration(s.Delay),
			DriftDelay: jsonDuration(s.DriftDelay), Source: s.Source, PairsKnown: s.PairsKnown}
		if s.DriftKnown {
			d := jsonDuration(s.Drift)
			js.Drift = &d
		}
		if s.NTP.Known {
			js.NTP = &jsonNTP{Synced: s.NTP.Synced, MaxError: jsonDuration(s.NTP.MaxError), EstError: jsonDuration(s.NTP.EstError)}
		}
		out.Shards = append(out.Shards, js)
	}
	for _, p := range c.Pairs {
		out.Pairs = append(out.Pairs, jsonShardPair{From: p.From, To: p.To, Deliveries: p.Deliveries, Min: jsonDuration(p.Min)})
	}
	return out
}

// clock reads the JSON form back.
func (jc *jsonClock) clock() *stats.Clock {
	if jc == nil {
		return nil
	}
	c := &stats.Clock{}
	for _, js := range jc.Shards {
		s := stats.ShardClock{Index: js.Index, Offset: js.Offset.duration(), Delay: js.Delay.duration(),
			DriftDelay: js.DriftDelay.duration(), Source: js.Source, SameHost: js.Source == stats.SourceSameHost, PairsKnown: js.PairsKnown}
		if js.Drift != nil {
			s.Drift, s.DriftKnown = js.Drift.duration(), true
		}
		if n := js.NTP; n != nil {
			s.NTP = stats.NTP{Known: true, Synced: n.Synced, MaxError: n.MaxError.duration(), EstError: n.EstError.duration()}
		}
		c.Shards = append(c.Shards, s)
	}
	for _, p := range jc.Pairs {
		c.Pairs = append(c.Pairs, stats.ShardPair{From: p.From, To: p.To, Deliveries: p.Deliveries, Min: p.Min.duration()})
	}
	return c
}
