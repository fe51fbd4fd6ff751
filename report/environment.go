package report

import (
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"math"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/plans"
)

// Environment turns what a run measured into the metric environment that
// thresholds are evaluated against (plan-format.md, "Metrics that thresholds
// can use"):
//
//   - Top: the steady phase's message metrics (the measured window, with the
//     deliveries of its messages that arrived during drain), plus connection
//     figures (connect.*, subscribe.*, errors, disconnects, reconnects) summed
//     over every phase, because clients connect in the connect phase and
//     `connect.failed == 0` must see those failures.
//   - Groups[name]: the same for one plan group.
//   - Phases[name]: one phase's own figures, for every name in
//     phase.All, even a phase the run never reached (its counts are 0).
//
// A metric with no samples (an empty histogram, a rate over zero time, a
// ratio with a zero denominator) is absent from its MetricSet, so that a
// threshold reading it fails instead of comparing against a made-up zero.
// Counts are always present: a zero count is a real measurement.
func Environment(p *plans.Plan, st *stats.Stats) plans.Measured {
	if st == nil {
		st = &stats.Stats{}
	}
	var groups []plans.Group
	if p != nil {
		groups = p.Groups
	}

	steady := st.Phase(phase.Steady)
	var steadyTotal stats.Metrics
	var steadyDur time.Duration
	if steady != nil {
		steadyTotal = steady.Total
		steadyDur = steady.Duration()
	}

	// Connection figures over the whole run, for the run and per group.
	var runConn stats.Metrics
	groupConn := make([]stats.Metrics, len(groups))
	for i := range st.Phases {
		ph := &st.Phases[i]
		addConnection(&runConn, &ph.Total)
		for gi := range groupConn {
			if gi < len(ph.Groups) {
				addConnection(&groupConn[gi], &ph.Groups[gi])
			}
		}
	}

	m := plans.Measured{
		Top:    metricSet(view{msg: &steadyTotal, conn: &runConn, dur: steadyDur, subscriberView: true}),
		Groups: make(map[string]plans.MetricSet, len(groups)),
		Phases: make(map[string]plans.MetricSet, phase.Count),
	}
	for gi, g := range groups {
		var gm stats.Metrics
		if steady != nil && gi < len(steady.Groups) {
			gm = steady.Groups[gi]
		}
		// A group that subscribes is judged by the deliveries to its
		// clients; a pure publisher by the deliveries of its messages.
		m.Groups[g.Name] = metricSet(view{msg: &gm, conn: &groupConn[gi], dur: steadyDur,
			subscriberView: len(g.Subscribe) > 0 || g.Publish == nil})
	}
	for _, p := range phase.All {
		var pm stats.Metrics
		var dur time.Duration
		if ph := st.Phase(p); ph != nil {
			pm = ph.Total
			dur = ph.Duration()
		}
		m.Phases[p.String()] = metricSet(view{msg: &pm, conn: &pm, dur: dur, subscriberView: true})
	}
	return m
}

// addConnection adds the connection-related figures of src into dst. It
// touches neither src's histograms (merged into fresh ones, never shared)
// nor its message figures.
func addConnection(dst, src *stats.Metrics) {
	dst.Merge(&stats.Metrics{
		Errors:          src.Errors,
		Disconnects:     src.Disconnects,
		Reconnects:      src.Reconnects,
		ClientsLost:     src.ClientsLost,
		QoSDowngrades:   src.QoSDowngrades,
		ConnectAttempts: src.ConnectAttempts,
		ConnectOK:       src.ConnectOK,
		ConnectFailed:   src.ConnectFailed,
		SubscribeFailed: src.SubscribeFailed,
		Connect:         src.Connect,
		Subscribe:       src.Subscribe,
	})
}

// view is one scope's figures: message metrics from msg, connection
// metrics from conn (the same Metrics for a phase, the whole run for the
// top level and groups), rates over dur.
type view struct {
	msg, conn *stats.Metrics
	dur       time.Duration
	// subscriberView selects Expected/Received/Lost (deliveries to the
	// scope's clients) over ExpectedOwn/ReceivedOwn/LostOwn (deliveries of
	// the scope's messages, for a pure publishing group).
	subscriberView bool
}

// metricSet fills every catalogue metric that has a value in v, converted to
// the Go type its kind promises (int, float64 or time.Duration).
func metricSet(v view) plans.MetricSet {
	set := make(plans.MetricSet, len(plans.Metrics))
	for _, md := range plans.Metrics {
		val, ok := v.value(md.Name)
		if !ok {
			continue
		}
		if val, ok = conform(md.Kind, val); ok {
			set[md.Name] = val
		}
	}
	return set
}

// conform converts a raw figure to the Go type of kind. It refuses a value it
// cannot convert (leaving the metric absent, so a threshold on it fails
// loudly) rather than guess; the catalogue test makes sure that never happens.
func conform(kind plans.MetricKind, v any) (any, bool) {
	switch kind {
	case plans.Count:
		if n, ok := v.(int64); ok {
			return int(n), true
		}
	case plans.Rate, plans.Fraction:
		if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	case plans.Duration:
		if d, ok := v.(time.Duration); ok {
			return d, true
		}
	}
	return nil, false
}

// value computes one metric by its canonical name: int64 for counts,
// float64 for rates and fractions, time.Duration for durations. ok is false
// when the metric has no samples in this scope.
func (v view) value(name string) (any, bool) {
	m, c := v.msg, v.conn
	expected, received, lost := m.Expected, m.Received, m.Lost
	lostUnsent, lostUnacked := m.LostUnsent, m.LostUnacked
	if !v.subscriberView {
		expected, received, lost = m.ExpectedOwn, m.ReceivedOwn, m.LostOwn
		lostUnsent, lostUnacked = m.LostUnsentOwn, m.LostUnackedOwn
	}
	// What was neither unsent nor unacknowledged, the broker had and did
	// not deliver.
	lostBroker := max(0, lost-lostUnsent-lostUnacked)
	switch name {
	case "sent":
		return m.Sent, true
	case "unsent":
		return m.Unsent, true
	case "lost_unsent":
		return lostUnsent, true
	case "lost_unacked":
		return lostUnacked, true
	case "lost_broker":
		return lostBroker, true
	case "acked":
		return m.Acked, true
	case "expected":
		return expected, true
	case "received":
		return received, true
	case "lost":
		return lost, true
	case "loss_rate":
		return ratio(lost, expected)
	case "duplicates":
		return m.Duplicates, true
	case "dup_rate":
		// Duplicates and out-of-order are seen by the receiving clients, so
		// they are measured against the deliveries to them (m.Received), not
		// against the deliveries of a publishing group's messages: for a
		// pure publisher the rate is absent rather than a misleading 0.
		return ratio(m.Duplicates, m.Received)
	case "out_of_order":
		return m.OutOfOrder, true
	case "overlap_copies":
		return m.OverlapCopies, true
	case "unexpected":
		return m.Unexpected, true
	case "ooo_rate":
		return ratio(m.OutOfOrder, m.Received)
	case "corrupted":
		return m.Corrupted, true
	case "send_rate":
		return perSecond(m.Sent, v.dur)
	case "recv_rate":
		return perSecond(received, v.dur)
	case "sent_bytes":
		return m.SentBytes, true
	case "received_bytes":
		return m.ReceivedBytes, true
	case "late_rate":
		return ratio(m.Late, m.Sent)
	case "errors":
		return c.Errors, true
	case "disconnects":
		return c.Disconnects, true
	case "reconnects":
		return c.Reconnects, true
	case "clients.lost":
		return c.ClientsLost, true
	case "qos_downgrades":
		return c.QoSDowngrades, true
	case "connect.attempts":
		return c.ConnectAttempts, true
	case "connect.ok":
		return c.ConnectOK, true
	case "connect.failed":
		return c.ConnectFailed, true
	}
	family, stat, ok := strings.Cut(name, ".")
	if !ok {
		return nil, false
	}
	var h *hdrhistogram.Histogram
	switch family {
	case "latency":
		h = m.Latency
	case "ack":
		h = m.Ack
	case "lag":
		h = m.Lag
	case "connect":
		h = c.Connect
	case "subscribe":
		h = c.Subscribe
	default:
		return nil, false
	}
	return histStat(h, stat)
}

// ratio is num/den, absent when den is 0 (nothing to measure against).
func ratio(num, den int64) (any, bool) {
	if den == 0 {
		return nil, false
	}
	return float64(num) / float64(den), true
}

// perSecond is n per second over d, absent when d is 0.
func perSecond(n int64, d time.Duration) (any, bool) {
	if d <= 0 {
		return nil, false
	}
	return float64(n) / d.Seconds(), true
}

// quantiles maps a statistic's name to the percent ValueAtQuantile takes
// (it takes 99 for p99, not 0.99).
var quantiles = map[string]float64{
	"p50":  50,
	"p90":  90,
	"p95":  95,
	"p99":  99,
	"p999": 99.9,
}

// histStat reads one statistic from a microsecond histogram as a
// time.Duration; absent when the histogram holds no samples.
func histStat(h *hdrhistogram.Histogram, stat string) (any, bool) {
	if h == nil || h.TotalCount() == 0 {
		return nil, false
	}
	switch stat {
	case "min":
		return micros(h.Min()), true
	case "max":
		return micros(h.Max()), true
	case "mean":
		return microsF(h.Mean()), true
	case "stddev":
		return microsF(h.StdDev()), true
	}
	if q, ok := quantiles[stat]; ok {
		return micros(h.ValueAtQuantile(q)), true
	}
	return nil, false
}

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// microsF keeps the sub-microsecond part of a mean or deviation, rounded to
// the nanosecond.
func microsF(us float64) time.Duration {
	return time.Duration(math.Round(us * float64(time.Microsecond)))
}
