// Package live owns the live view of a run for Prometheus: the metrics
// `mqplan run --metrics-listen ADDR` serves on /metrics while the run goes,
// and the HTTP endpoint that serves them.
//
// It is fed once a second with the runner's per-second timeline
// (runner.Options.Second): counters are the per-second counts added up, so
// that at the end of a run they equal the run's totals exactly; gauges are
// the last second's figures; the latency histogram merges the recorder's
// per-second histograms (runner.Options.Latency). It must not touch the hot path (nothing
// here runs per message), judge thresholds, or know about plans beyond the
// group names it labels with.
package live

import (
	"math"
	"net/http"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric is one metric family the exporter serves, as documented in
// README and docs/plan-format.md and queried by the Grafana dashboard in
// deploy/grafana/: one list, so that a test can check the three agree.
type Metric struct {
	Name   string
	Labels []string
	Help   string
	// Type is counter, gauge or histogram (a histogram's series are
	// Name_bucket, Name_sum and Name_count).
	Type string
	// value reads the family's value for one group from the exporter's
	// state (nil for mqplan_phase and mqplan_latency_seconds, which are
	// not one value per group).
	value func(*groupState) float64
}

// groupState is one group's counters (sums of its seconds so far) and
// gauges (its last second).
type groupState struct {
	sent, acked, received, duplicates, errors, disconnects int64
	connected, down                                        int
	// p50, p99 and max are seconds; NaN when the last second had no
	// delivery to the group.
	p50, p99, max float64
	// latency holds every end-to-end latency of the group's deliveries
	// so far (µs), and pending those of the second being observed, until
	// Observe adds them: allocated on the group's first delivery.
	latency, pending *hdrhistogram.Histogram
}

// latencyBuckets are mqplan_e2e_latency_seconds' upper bounds, µs: from
// 100µs, a local broker's, to 10s, a broker that is falling over.
var latencyBuckets = []int64{100, 250, 500, 1000, 2500, 5000, 10_000, 25_000, 50_000,
	100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000}

// Metrics lists every metric family the exporter serves, in the order
// of /metrics.
var Metrics = []Metric{
	{Name: "mqplan_messages_sent_total", Labels: []string{"group"}, Type: "counter",
		Help:  "PUBLISH packets written by the group's clients since the run started.",
		value: func(g *groupState) float64 { return float64(g.sent) }},
	{Name: "mqplan_messages_acked_total", Labels: []string{"group"}, Type: "counter",
		Help:  "PUBACK/PUBCOMP received for the group's QoS 1/2 publishes since the run started (refusals are errors, not acks).",
		value: func(g *groupState) float64 { return float64(g.acked) }},
	{Name: "mqplan_messages_received_total", Labels: []string{"group"}, Type: "counter",
		Help:  "Deliveries to the group's clients since the run started, duplicates included.",
		value: func(g *groupState) float64 { return float64(g.received) }},
	{Name: "mqplan_messages_duplicated_total", Labels: []string{"group"}, Type: "counter",
		Help:  "Deliveries to the group's clients that repeated one they already had (included in mqplan_messages_received_total).",
		value: func(g *groupState) float64 { return float64(g.duplicates) }},
	{Name: "mqplan_errors_total", Labels: []string{"group"}, Type: "counter",
		Help:  "Errors of the group's clients since the run started (connect, subscribe, publish, protocol).",
		value: func(g *groupState) float64 { return float64(g.errors) }},
	{Name: "mqplan_disconnects_total", Labels: []string{"group"}, Type: "counter",
		Help:  "Unplanned connection losses of the group's clients since the run started.",
		value: func(g *groupState) float64 { return float64(g.disconnects) }},
	{Name: "mqplan_clients_connected", Labels: []string{"group"}, Type: "gauge",
		Help:  "The group's clients connected at the end of the last second.",
		value: func(g *groupState) float64 { return float64(g.connected) }},
	{Name: "mqplan_clients_down", Labels: []string{"group"}, Type: "gauge",
		Help:  "The group's clients whose connection dropped and is not back (yet) at the end of the last second.",
		value: func(g *groupState) float64 { return float64(g.down) }},
	{Name: "mqplan_latency_seconds", Labels: []string{"group", "quantile"}, Type: "gauge",
		Help: `End-to-end latency of the deliveries to the group's clients in the last second: quantile "0.5", "0.99" or "1" (the maximum); NaN when the group received nothing in that second.`},
	{Name: "mqplan_e2e_latency_seconds", Labels: []string{"group"}, Type: "histogram",
		Help: "End-to-end latency of every delivery to the group's clients since the run started (bucket counts at the run's histogram precision, 3 significant digits; the sum from its mean)."},
	{Name: "mqplan_phase", Labels: []string{"phase"}, Type: "gauge",
		Help: "1 for the phase the run is in (connect, subscribe, warmup, ramp, steady, drain, disconnect), 0 for the others."},
}

// Exporter is the live state of one run as a prometheus.Collector. Every
// scrape reads one consistent state: the figures of the seconds observed
// so far, never half of one.
type Exporter struct {
	descs []*prometheus.Desc

	mu      sync.Mutex
	groups  []string
	state   []groupState
	phase   phase.Phase
	started bool // a second was observed: phase holds the run's
}

// New returns an exporter for a run of the named groups (plan order, as
// stats.Second.Groups). Every series exists from the start, at zero (the
// latencies NaN), so that rates are right from the first scrape.
func New(groups []string) *Exporter {
	x := &Exporter{groups: append([]string(nil), groups...), state: make([]groupState, len(groups))}
	for i := range x.state {
		x.state[i].p50, x.state[i].p99, x.state[i].max = math.NaN(), math.NaN(), math.NaN()
	}
	for _, m := range Metrics {
		x.descs = append(x.descs, prometheus.NewDesc(m.Name, m.Help, m.Labels, nil))
	}
	return x
}

// ObserveLatency takes the end-to-end latencies (µs) of one group's
// deliveries in the second being taken (runner.Options.Latency); the
// next Observe adds them to mqplan_e2e_latency_seconds together with the
// second's counts, so that a scrape never sees one without the other. h
// is only read.
func (x *Exporter) ObserveLatency(group int, h *hdrhistogram.Histogram) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if group < 0 || group >= len(x.state) || h == nil {
		return
	}
	st := &x.state[group]
	if st.pending == nil {
		st.pending = stats.NewHistogram()
	}
	st.pending.Merge(h)
}

// Observe adds one second of the run's timeline: its per-group counts to
// the counters, its connections, latency and phase to the gauges. Seconds
// must come in order, each once (as runner.Options.Second gives them); a
// group the second has beyond those New named is ignored.
func (x *Exporter) Observe(s stats.Second) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.phase, x.started = s.Phase, true
	for i := range s.Groups {
		if i >= len(x.state) {
			break
		}
		gs, st := &s.Groups[i], &x.state[i]
		st.sent += gs.Sent
		st.acked += gs.Acked
		st.received += gs.Received
		st.duplicates += gs.Duplicates
		st.errors += gs.Errors
		st.disconnects += gs.Disconnects
		st.connected, st.down = gs.Connected, gs.Lost
		if st.pending != nil && st.pending.TotalCount() > 0 {
			if st.latency == nil {
				st.latency = stats.NewHistogram()
			}
			st.latency.Merge(st.pending)
			st.pending.Reset()
		}
		// Max is zero only when the second had no latency sample (see
		// stats.GroupSecond).
		if gs.Max == 0 {
			st.p50, st.p99, st.max = math.NaN(), math.NaN(), math.NaN()
		} else {
			st.p50, st.p99, st.max = gs.P50.Seconds(), gs.P99.Seconds(), gs.Max.Seconds()
		}
	}
}

// Describe sends every family's description (prometheus.Collector).
func (x *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range x.descs {
		ch <- d
	}
}

// Collect sends the current state (prometheus.Collector).
func (x *Exporter) Collect(ch chan<- prometheus.Metric) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, m := range Metrics {
		d := x.descs[i]
		switch m.Name {
		case "mqplan_e2e_latency_seconds":
			for g, name := range x.groups {
				emitHistogram(ch, d, x.state[g].latency, name)
			}
		case "mqplan_phase":
			for _, p := range phase.All {
				v := 0.0
				if x.started && p == x.phase {
					v = 1
				}
				emit(ch, d, prometheus.GaugeValue, v, p.String())
			}
		case "mqplan_latency_seconds":
			for g, name := range x.groups {
				st := &x.state[g]
				emit(ch, d, prometheus.GaugeValue, st.p50, name, "0.5")
				emit(ch, d, prometheus.GaugeValue, st.p99, name, "0.99")
				emit(ch, d, prometheus.GaugeValue, st.max, name, "1")
			}
		default:
			t := prometheus.GaugeValue
			if m.Type == "counter" {
				t = prometheus.CounterValue
			}
			for g, name := range x.groups {
				emit(ch, d, t, m.value(&x.state[g]), name)
			}
		}
	}
}

// Handler serves the exporter's metrics in the Prometheus exposition
// formats (text, or what the scraper negotiates), from a registry of its
// own: no Go runtime or process metrics, only the run's.
func (x *Exporter) Handler() http.Handler {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(x)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A scrape is cheap; a few at once are plenty, more are refused
		// rather than queued behind the run.
		MaxRequestsInFlight: 4,
	})
}

// emit sends one sample, or, when its labels are not valid (a group name
// that is not UTF-8), an invalid metric that fails the scrape with the
// reason: user input never panics.
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

// emitHistogram sends one group's latency histogram (h in µs, nil when
// the group has received nothing) as cumulative Prometheus buckets. A
// value counts in the first bucket whose bound is at least the highest
// value the histogram cannot tell it from, as its quantiles do.
func emitHistogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h *hdrhistogram.Histogram, group string) {
	counts := make([]uint64, len(latencyBuckets))
	var count uint64
	var sum float64
	if h != nil && h.TotalCount() > 0 {
		// Distribution allocates a bar per histogram bucket up to the
		// largest value: once per scrape, never per message.
		for _, b := range h.Distribution() {
			if b.Count == 0 {
				continue
			}
			for i, le := range latencyBuckets {
				if b.To <= le {
					counts[i] += uint64(b.Count)
					break
				}
			}
		}
		count = uint64(h.TotalCount())
		sum = h.Mean() * float64(count) / 1e6
	}
	buckets := make(map[float64]uint64, len(latencyBuckets))
	var cum uint64
	for i, le := range latencyBuckets {
		cum += counts[i]
		buckets[float64(le)/1e6] = cum
	}
	m, err := prometheus.NewConstHistogram(d, count, sum, buckets, group)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}
