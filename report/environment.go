package report

import (
	"github.com/mqplan/mqplan/brokerstat"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/threshold"
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
//     Rates are over the steady phase's length, except in a plan without
//     publishers (mqplan sub), whose messages come from elsewhere whenever
//     they come: there they are over the window in which its deliveries
//     arrived (first to last), when there were at least two, so that a
//     burst received after half a minute of waiting reads as its own rate.
//   - Groups[name]: the same for one plan group (its own delivery window).
//   - Top also holds broker.cpu.*, broker.rss.max and self.*: the broker
//     process's and mqplan's own CPU and memory over every sampled second
//     of the timeline (the whole run, not one phase: a connection storm
//     loads the broker before the steady phase), absent when no second
//     was sampled. Groups and phases do not have them.
//   - Top also holds the broker's own counters (broker.metrics sys or
//     prometheus): broker.publish.received, broker.publish.sent and
//     broker.dropped as their change from the run's start to its end,
//     broker.clients.max, broker.memory.max and broker.subscriptions.max
//     as the largest reading; each absent when the broker did not report
//     it (at both ends, for a change).
//   - Phases[name]: one phase's own figures, for every name in
//     phase.All, even a phase the run never reached (its counts are 0).
//   - Stages[name]: a staged plan's stages (stages.go), each the messages
//     intended in its window, rates over its planned length.
//
// A metric with no samples (an empty histogram, a rate over zero time, a
// ratio with a zero denominator) is absent from its metric.Set, so that a
// threshold reading it fails instead of comparing against a made-up zero.
// Counts are always present: a zero count is a real measurement.
func Environment(p *plans.Plan, st *stats.Stats) threshold.Measured {
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

	listen := listenOnly(p)
	churns, clean := false, false
	for i := range groups {
		churns = churns || p.Churns(&groups[i])
		clean = clean || cleanChurns(p, &groups[i])
	}
	rateWindow := func(m *stats.Metrics) time.Duration {
		if w := m.ReceiveWindow(); listen && w > 0 {
			return w
		}
		return steadyDur
	}

	m := threshold.Measured{
		Top:    metricSet(view{msg: &steadyTotal, conn: &runConn, dur: rateWindow(&steadyTotal), subscriberView: true, churns: churns, clean: clean}),
		Groups: make(map[string]metric.Set, len(groups)),
		Phases: make(map[string]metric.Set, phase.Count),
	}
	addProcesses(m.Top, st.Timeline)
	addDisturbance(m.Top, st.Timeline)
	addBrokerCounters(m.Top, st.Timeline, st.CountersStart, st.CountersEnd, st.CountersUnchanged)
	addClock(m.Top, st.Clock)
	for gi, g := range groups {
		var gm stats.Metrics
		if steady != nil && gi < len(steady.Groups) {
			gm = steady.Groups[gi]
		}
		// A group that subscribes is judged by the deliveries to its
		// clients; a pure publisher by the deliveries of its messages.
		m.Groups[g.Name] = metricSet(view{msg: &gm, conn: &groupConn[gi], dur: rateWindow(&gm),
			subscriberView: receives(&g) || g.Publish == nil, churns: p.Churns(&g), clean: cleanChurns(p, &g)})
	}
	for _, p := range phase.All {
		var pm stats.Metrics
		var dur time.Duration
		if ph := st.Phase(p); ph != nil {
			pm = ph.Total
			dur = ph.Duration()
		}
		m.Phases[p.String()] = metricSet(view{msg: &pm, conn: &pm, dur: dur, subscriberView: true, churns: churns, clean: clean})
	}
	m.Stages = stageSets(st)
	dropUnsplit(m, st.Clock)
	return m
}

// listenOnly reports whether p has groups and none of them publishes (mqplan
// sub): it listens to messages sent by others, whenever they come, so its
// steady phase is mostly waiting and its rates cover the window in which
// its deliveries arrived instead.
func listenOnly(p *plans.Plan) bool {
	if p == nil || len(p.Groups) == 0 {
		return false
	}
	for _, g := range p.Groups {
		if g.Publish != nil {
			return false
		}
	}
	return true
}

// rateWindow is the window the top-level rates of st cover when it is not
// the steady phase: for a plan without publishers, first to last delivery
// of the steady phase when at least two arrived apart; 0 otherwise.
func rateWindow(p *plans.Plan, st *stats.Stats) time.Duration {
	if !listenOnly(p) {
		return 0
	}
	if steady := st.Phase(phase.Steady); steady != nil {
		return steady.Total.ReceiveWindow()
	}
	return 0
}

// addConnection adds the connection-related figures of src into dst. It
// touches neither src's histograms (merged into fresh ones, never shared)
// nor its message figures.
func addConnection(dst, src *stats.Metrics) {
	dst.Merge(&stats.Metrics{
		Errors:           src.Errors,
		Disconnects:      src.Disconnects,
		Reconnects:       src.Reconnects,
		ChurnDisconnects: src.ChurnDisconnects,
		ChurnReconnects:  src.ChurnReconnects,
		ClientsLost:      src.ClientsLost,
		QoSDowngrades:    src.QoSDowngrades,
		ConnectAttempts:  src.ConnectAttempts,
		ConnectOK:        src.ConnectOK,
		ConnectFailed:    src.ConnectFailed,
		SubscribeFailed:  src.SubscribeFailed,
		Connect:          src.Connect,
		Subscribe:        src.Subscribe,
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
	// churns: the scope has clients with lifetime or churn, so the
	// churn.* counts are measured (absent elsewhere); clean: among them
	// subscribers with a clean session, so churn.ambiguous* are.
	churns, clean bool
}

// cleanChurns reports whether g is a subscribing group that churns with a
// clean session (runner/clean_run.go).
func cleanChurns(p *plans.Plan, g *plans.Group) bool {
	return g.CleanStart && len(g.Subscribe) > 0 && p.Churns(g)
}

// metricSet fills every catalogue metric that has a value in v, converted to
// the Go type its kind promises (int, float64 or time.Duration).
func metricSet(v view) metric.Set {
	all := metric.All()
	set := make(metric.Set, len(all))
	for _, md := range all {
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
func conform(kind metric.Kind, v any) (any, bool) {
	switch kind {
	case metric.Count:
		if n, ok := v.(int64); ok {
			return int(n), true
		}
	case metric.Rate, metric.Fraction:
		if f, ok := v.(float64); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	case metric.Duration:
		if d, ok := v.(time.Duration); ok {
			return d, true
		}
	}
	return nil, false
}

// value computes one metric by its canonical name: int64 for counts,
// float64 for rates and fractions, time.Duration for durations. ok is false
// when the metric has no samples in this scope.
func (v view) value(name metric.Name) (any, bool) {
	m, c := v.msg, v.conn
	expected, received, lost := m.Expected, m.Received, m.Lost
	lostUnsent, lostUnacked, lostLate := m.LostUnsent, m.LostUnacked, m.LostLate
	if !v.subscriberView {
		expected, received, lost = m.ExpectedOwn, m.ReceivedOwn, m.LostOwn
		lostUnsent, lostUnacked, lostLate = m.LostUnsentOwn, m.LostUnackedOwn, m.LostLateOwn
	}
	// Late is what the broker had and was still delivering when drain
	// ended: never more than the other causes leave of lost (the raw
	// count may hold a message never sent or never acknowledged, which
	// those count). What was neither unsent, unacknowledged nor late, the
	// broker had and did not deliver.
	lostLate = max(0, min(lostLate, lost-lostUnsent-lostUnacked))
	lostBroker := max(0, lost-lostUnsent-lostUnacked-lostLate)
	switch name {
	case metric.Sent:
		return m.Sent, true
	case metric.Unsent:
		return m.Unsent, true
	case metric.LostUnsent:
		return lostUnsent, true
	case metric.LostUnacked:
		return lostUnacked, true
	case metric.LostBroker:
		return lostBroker, true
	case metric.LostLate:
		return lostLate, true
	case metric.Acked:
		return m.Acked, true
	case metric.Expected:
		return expected, true
	case metric.Received:
		return received, true
	case metric.Lost:
		return lost, true
	case metric.LossRate:
		return ratio(lost, expected)
	case metric.Duplicates:
		return m.Duplicates, true
	case metric.DupRate:
		// Duplicates and out-of-order are seen by the receiving clients, so
		// they are measured against the deliveries to them (m.Received), not
		// against the deliveries of a publishing group's messages: for a
		// pure publisher the rate is absent rather than a misleading 0.
		return ratio(m.Duplicates, m.Received)
	case metric.OutOfOrder:
		return m.OutOfOrder, true
	case metric.OverlapCopies:
		return m.OverlapCopies, true
	case metric.Unexpected:
		return m.Unexpected, true
	case metric.OOORate:
		return ratio(m.OutOfOrder, m.Received)
	case metric.Corrupted:
		return m.Corrupted, true
	case metric.SendRate:
		return perSecond(m.Sent, v.dur)
	case metric.RecvRate:
		return perSecond(received, v.dur)
	case metric.SentBytes:
		return m.SentBytes, true
	case metric.ReceivedBytes:
		return m.ReceivedBytes, true
	case metric.LateRate:
		return ratio(m.Late, m.Sent)
	case metric.Errors:
		return c.Errors, true
	case metric.Disconnects:
		return c.Disconnects, true
	case metric.Reconnects:
		return c.Reconnects, true
	case metric.ChurnDisconnects:
		return c.ChurnDisconnects, v.churns
	case metric.ChurnReconnects:
		return c.ChurnReconnects, v.churns
	case metric.ChurnAmbiguous:
		return m.ChurnAmbiguous, v.clean
	case metric.ChurnAmbiguousReceived:
		return m.ChurnAmbiguousReceived, v.clean
	case metric.ClientsLost:
		return c.ClientsLost, true
	case metric.QoSDowngrades:
		return c.QoSDowngrades, true
	case metric.ConnectAttempts:
		return c.ConnectAttempts, true
	case metric.ConnectOK:
		return c.ConnectOK, true
	case metric.ConnectFailed:
		return c.ConnectFailed, true
	case metric.LatencyCrossShare:
		return crossShare(m)
	}
	if val, ok, handled := reqRespValue(m, name); handled {
		return val, ok
	}
	family, stat, ok := name.Split()
	if !ok {
		return nil, false
	}
	var h *hdrhistogram.Histogram
	switch family {
	case "latency":
		h = m.Latency
	case "latency_local":
		h = m.LocalLatency()
	case "latency_cross":
		h = m.LatencyCross
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

// addProcesses puts the process metrics of a timeline into set: the
// broker's and mqplan's CPU (max and mean of the sampled seconds, percent
// of one core) and largest RSS (bytes). A process never sampled leaves its
// metrics absent.
func addProcesses(set metric.Set, timeline []stats.Second) {
	for _, p := range []struct {
		get             func(*stats.Second) stats.ProcSample
		cpuMax, cpuMean metric.Name
		rssMax          metric.Name
	}{
		{func(s *stats.Second) stats.ProcSample { return s.Broker }, metric.BrokerCPUMax, metric.BrokerCPUMean, metric.BrokerRSSMax},
		{func(s *stats.Second) stats.ProcSample { return s.Self }, metric.SelfCPUMax, "", metric.SelfRSSMax},
	} {
		u := usageOf(timeline, p.get)
		if u.Seconds == 0 {
			continue
		}
		set[p.cpuMax] = u.CPUMax
		if p.cpuMean != "" {
			set[p.cpuMean] = u.CPUMean
		}
		set[p.rssMax] = int(u.RSSMax)
	}
}

// procUsage sums up one process's sampled seconds.
type procUsage struct {
	// Seconds is how many seconds were sampled; the rest is meaningless
	// when it is 0.
	Seconds         int
	CPUMax, CPUMean float64
	RSSMax          int64
}

// usageOf is the usage of the process get picks out of each second.
func usageOf(timeline []stats.Second, get func(*stats.Second) stats.ProcSample) procUsage {
	var u procUsage
	var sum float64
	for i := range timeline {
		p := get(&timeline[i])
		if !p.Sampled {
			continue
		}
		u.Seconds++
		sum += p.CPU
		u.CPUMax = max(u.CPUMax, p.CPU)
		u.RSSMax = max(u.RSSMax, p.RSS)
	}
	if u.Seconds > 0 {
		u.CPUMean = sum / float64(u.Seconds)
	}
	return u
}

// addBrokerCounters puts the broker's own counters into set, each under
// its metric (counterMetric): the change of a cumulative counter from
// start to end (absent unless both hold it, or when it went down: the
// broker restarted) or 0 for one known unchanged though in neither
// reading (stats.Stats.CountersUnchanged), the largest reading of a gauge
// over the timeline and both ends.
func addBrokerCounters(set metric.Set, timeline []stats.Second, start, end brokerstat.Counters, unchanged []brokerstat.Counter) {
	for _, c := range unchanged {
		if c.Cumulative() {
			set[counterMetric[c]] = 0
		}
	}
	for c := range brokerstat.NumCounters {
		name := counterMetric[c]
		if c.Cumulative() {
			s, ok1 := start.Get(c)
			e, ok2 := end.Get(c)
			if ok1 && ok2 && e >= s {
				set[name] = int(e - s)
			}
			continue
		}
		best, seen := int64(0), false
		take := func(cs brokerstat.Counters) {
			if v, ok := cs.Get(c); ok && (!seen || v > best) {
				best, seen = v, true
			}
		}
		take(start)
		take(end)
		for i := range timeline {
			take(timeline[i].Counters)
		}
		if seen {
			set[name] = int(best)
		}
	}
}

// counterMetric is each counter's metric: the change over the run of a
// cumulative counter, the .max of a gauge.
var counterMetric = [brokerstat.NumCounters]metric.Name{
	brokerstat.Clients:         metric.BrokerClientsMax,
	brokerstat.PublishReceived: metric.BrokerPublishReceived,
	brokerstat.PublishSent:     metric.BrokerPublishSent,
	brokerstat.Dropped:         metric.BrokerDropped,
	brokerstat.MemoryBytes:     metric.BrokerMemoryMax,
	brokerstat.Subscriptions:   metric.BrokerSubscriptionsMax,
}
