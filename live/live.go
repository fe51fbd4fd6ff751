// Package live owns the live view of a run for Prometheus: the metrics
// `mqplan run --metrics-listen ADDR` serves on /metrics while the run goes,
// the HTTP endpoint that serves them, and the remote-write pusher that
// `--metrics-push URL` sends them with. Every series carries the run's
// run_id.
//
// It is fed once a second with the runner's per-second timeline
// (runner.Options.Second): counters are the per-second counts added up, so
// that at the end of a run they equal the run's totals exactly; gauges are
// the last second's figures; the deliveries lost so far are the runner's
// own reckoning (runner.Options.LostSoFar); the e2e and ack latency
// histograms merge the recorder's per-second histograms
// (runner.Options.Latency and Ack) and are served with classic buckets
// and as native histograms. What is known only when the run is over
// (unsent messages, payload bytes, connect latency, threshold outcomes)
// comes once, from Finish. It must not touch the hot path (nothing here runs per message),
// judge thresholds, or know about plans beyond the names it labels with.
package live

import (
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Metric is one metric family the exporter serves, as documented in
// docs/outputs.md and docs/plan-format.md and queried by the Grafana dashboard in
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
	// not one value per group, and for histograms).
	value func(*groupState) float64
	// hist picks a histogram family's histogram for one group (µs; nil
	// while it has no sample).
	hist func(*groupState) *hdrhistogram.Histogram
}

// groupState is one group's counters (sums of its seconds so far) and
// gauges (its last second).
type groupState struct {
	sent, acked, received, duplicates, errors, disconnects int64
	// unsent and the payload bytes are the run's figures, set by Finish.
	unsent, sentBytes, receivedBytes int64
	connected, down                  int
	// lost is the deliveries lost so far as of the last second observed;
	// pendingLost the runner's figure for the second being observed.
	lost, pendingLost int64
	// p50, p99 and max are seconds; NaN when the last second had no
	// delivery to the group.
	p50, p99, max float64
	// latency holds every end-to-end latency of the group's deliveries
	// so far (µs), and pending those of the second being observed, until
	// Observe adds them: allocated on the group's first delivery. ack and
	// pendingAck are the same for the acknowledgements of its publishes.
	latency, pending *hdrhistogram.Histogram
	ack, pendingAck  *hdrhistogram.Histogram
}

// latencyBuckets are the latency histograms' classic upper bounds, µs:
// from 100µs, a local broker's, to 10s, a broker that is falling over.
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
	{Name: "mqplan_messages_lost", Labels: []string{"group"}, Type: "gauge",
		Help: "Deliveries to the group's clients lost so far: those expected of the messages intended to be sent more than the plan's drain (at least 1s) ago or never sent, less the first-time deliveries of them. " +
			"A gauge: a message that arrives later still takes its delivery back. When the run is over it is the run's lost deliveries to the group (all phases).",
		value: func(g *groupState) float64 { return float64(g.lost) }},
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
	{Name: "mqplan_latency_seconds", Labels: []string{"group", "stat"}, Type: "gauge",
		Help: `End-to-end latency of the deliveries to the group's clients in the last second: stat "p50", "p99" or "max"; NaN when the group received nothing in that second.`},
	{Name: "mqplan_e2e_latency_seconds", Labels: []string{"group"}, Type: "histogram",
		Help: "End-to-end latency of every delivery to the group's clients since the run started (bucket counts at the run's histogram precision, 3 significant digits; the sum from its mean; classic buckets and a native histogram).",
		hist: func(g *groupState) *hdrhistogram.Histogram { return g.latency }},
	{Name: "mqplan_ack_latency_seconds", Labels: []string{"group"}, Type: "histogram",
		Help: "PUBLISH to PUBACK/PUBCOMP latency of every acknowledged QoS 1/2 publish of the group's clients since the run started (as mqplan_e2e_latency_seconds: 3 significant digits, the sum from the mean, classic and native buckets).",
		hist: func(g *groupState) *hdrhistogram.Histogram { return g.ack }},
	{Name: "mqplan_phase", Labels: []string{"phase"}, Type: "gauge",
		Help: "1 for the phase the run is in (connect, subscribe, warmup, ramp, steady, drain, disconnect), 0 for the others."},
	{Name: "mqplan_messages_unsent", Labels: []string{"group"}, Type: "gauge",
		Help:  "Messages the schedule called for that the group's clients never sent (all phases); known when the run is over, 0 until then.",
		value: func(g *groupState) float64 { return float64(g.unsent) }},
	{Name: "mqplan_payload_sent_bytes_total", Labels: []string{"group"}, Type: "counter",
		Help:  "Payload bytes the group's clients published (all phases); the run's total, known when the run is over, 0 until then.",
		value: func(g *groupState) float64 { return float64(g.sentBytes) }},
	{Name: "mqplan_payload_received_bytes_total", Labels: []string{"group"}, Type: "counter",
		Help:  "Payload bytes delivered to the group's clients, duplicates included (all phases); the run's total, known when the run is over, 0 until then.",
		value: func(g *groupState) float64 { return float64(g.receivedBytes) }},
	{Name: "mqplan_connect_latency_seconds", Labels: []string{"stat"}, Type: "gauge",
		Help: `CONNECT to CONNACK latency of every client of the run: stat "p50", "p99" or "max"; known when the run is over, NaN until then.`},
	{Name: "mqplan_threshold_passed", Labels: []string{"threshold"}, Type: "gauge",
		Help: "1 when the threshold (as the plan wrote it, or a built-in check) passed, 0 when it failed; judged when the run is over, NaN until then."},
	{Name: "mqplan_run_info", Labels: []string{"plan", "broker"}, Type: "gauge",
		Help: "1, labelled with the run's plan and broker URL (its password removed)."},
	{Name: "mqplan_build_info", Labels: []string{"version", "goversion", "revision"}, Type: "gauge",
		Help: "1, labelled with the mqplan that runs: its version, Go release and VCS revision."},
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
	// created is when the exporter was made: the native histograms'
	// created timestamp (their counts start there).
	created time.Time
	info    Info
	// thresholds are the threshold series' expressions, each once.
	thresholds []string
	// final holds the figures known only when the run is over (Finish);
	// nil until then.
	final *Final
}

// New returns an exporter for a run of the named groups (plan order, as
// stats.Second.Groups). Every series exists from the start, at zero (the
// latencies NaN), so that rates are right from the first scrape.
// Every series carries the label run_id=info.RunID.
func New(groups []string, info Info) *Exporter {
	x := &Exporter{groups: append([]string(nil), groups...), state: make([]groupState, len(groups)), created: time.Now(), info: info}
	for i := range x.state {
		x.state[i].p50, x.state[i].p99, x.state[i].max = math.NaN(), math.NaN(), math.NaN()
	}
	for _, t := range info.Thresholds {
		x.addThreshold(t)
	}
	x.info.Thresholds = nil
	for _, m := range Metrics {
		x.descs = append(x.descs, prometheus.NewDesc(m.Name, m.Help, m.Labels, prometheus.Labels{"run_id": info.RunID}))
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
	mergeHist(&x.state[group].pending, h)
}

// ObserveAck takes the ack latencies (µs) of one group's publishes
// acknowledged in the second being taken (runner.Options.Ack); the next
// Observe adds them to mqplan_ack_latency_seconds. h is only read.
func (x *Exporter) ObserveAck(group int, h *hdrhistogram.Histogram) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if group < 0 || group >= len(x.state) || h == nil {
		return
	}
	mergeHist(&x.state[group].pendingAck, h)
}

// ObserveLost takes one group's deliveries lost so far as of the second
// being taken (runner.Options.LostSoFar); the next Observe shows it in
// mqplan_messages_lost. A negative figure is taken as 0.
func (x *Exporter) ObserveLost(group int, n int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if group < 0 || group >= len(x.state) {
		return
	}
	x.state[group].pendingLost = max(0, n)
}

// mergeHist adds h into *dst, allocated on first use.
func mergeHist(dst **hdrhistogram.Histogram, h *hdrhistogram.Histogram) {
	if *dst == nil {
		*dst = stats.NewHistogram()
	}
	(*dst).Merge(h)
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
		st.lost = st.pendingLost
		for _, p := range []struct{ to, from **hdrhistogram.Histogram }{{&st.latency, &st.pending}, {&st.ack, &st.pendingAck}} {
			if *p.from != nil && (*p.from).TotalCount() > 0 {
				mergeHist(p.to, *p.from)
				(*p.from).Reset()
			}
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
		switch {
		case m.hist != nil:
			for g, name := range x.groups {
				emitHistogram(ch, d, m.hist(&x.state[g]), x.created, name)
			}
		case m.Name == "mqplan_phase":
			for _, p := range phase.All {
				v := 0.0
				if x.started && p == x.phase {
					v = 1
				}
				emit(ch, d, prometheus.GaugeValue, v, p.String())
			}
		case m.Name == "mqplan_latency_seconds":
			for g, name := range x.groups {
				st := &x.state[g]
				emit(ch, d, prometheus.GaugeValue, st.p50, name, "p50")
				emit(ch, d, prometheus.GaugeValue, st.p99, name, "p99")
				emit(ch, d, prometheus.GaugeValue, st.max, name, "max")
			}
		case m.value == nil:
			x.collectRun(ch, d, m.Name)
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
	return promhttp.HandlerFor(x.registry(), promhttp.HandlerOpts{
		// A scrape is cheap; a few at once are plenty, more are refused
		// rather than queued behind the run.
		MaxRequestsInFlight: 4,
	})
}

// registry is a registry of the exporter alone, pedantic so that a
// family that breaks its own description fails the scrape.
func (x *Exporter) registry() *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(x)
	return reg
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

// nativeSchema is the native histograms' resolution: bucket boundaries
// 2^(2^-3) ≈ 1.09 apart, about Prometheus' default bucket factor of 1.1
// (prometheus.HistogramOpts.NativeHistogramBucketFactor), and finer than
// that than the run's 3 significant digits only below 1ms.
const nativeSchema = 3

// emitHistogram sends one group's latency histogram (h in µs, nil when
// the group has no sample) as one Prometheus histogram with both kinds of
// buckets: the classic cumulative ones of latencyBuckets, for scrapers of
// the text format, and the native (sparse, exponential) ones that a
// scraper negotiating the protobuf format can keep. A value counts in
// the first bucket whose bound is at least the highest value the
// histogram cannot tell it from, as its quantiles do.
func emitHistogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h *hdrhistogram.Histogram, created time.Time, group string) {
	counts := make([]uint64, len(latencyBuckets))
	native := map[int]int64{}
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
			native[nativeIndex(float64(b.To)/1e6)] += b.Count
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
	classic, err := prometheus.NewConstHistogram(d, count, sum, buckets, group)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d, err)
		return
	}
	sparse, err := prometheus.NewConstNativeHistogram(d, count, sum, native, nil, 0, nativeSchema,
		prometheus.DefNativeHistogramZeroThreshold, created, group)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(d, err)
		return
	}
	ch <- bothHistograms{classic: classic, native: sparse}
}

// nativeIndex is the native histogram bucket (of nativeSchema) that v > 0
// falls in: bucket i holds (2^((i-1)/8), 2^(i/8)].
func nativeIndex(v float64) int {
	const per = 1 << nativeSchema
	i := int(math.Ceil(math.Log2(v) * per))
	// Log2 is not exact: move to the bucket whose bounds hold v.
	for i > math.MinInt32 && v <= math.Exp2(float64(i-1)/per) {
		i--
	}
	for i < math.MaxInt32 && v > math.Exp2(float64(i)/per) {
		i++
	}
	return i
}

// bothHistograms is one histogram sample with classic buckets and native
// ones: client_golang makes each kind of constant histogram on its own, a
// scraper wants both in one sample.
type bothHistograms struct {
	classic, native prometheus.Metric
}

// Desc is the family's (prometheus.Metric).
func (b bothHistograms) Desc() *prometheus.Desc { return b.classic.Desc() }

// Write writes the native histogram with the classic buckets added
// (prometheus.Metric).
func (b bothHistograms) Write(out *dto.Metric) error {
	var classic dto.Metric
	if err := b.classic.Write(&classic); err != nil {
		return err
	}
	if err := b.native.Write(out); err != nil {
		return err
	}
	if out.Histogram == nil || classic.Histogram == nil {
		return errors.New("a constant histogram wrote no histogram")
	}
	out.Histogram.Bucket = classic.Histogram.Bucket
	return nil
}
