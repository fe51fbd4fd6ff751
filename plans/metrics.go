package plans

import "strings"

// MetricKind says what a metric measures, and so which Go type carries its
// value in a MetricSet and what a threshold may compare it with.
type MetricKind int

// The metric kinds. The Go type of each is fixed so that the threshold
// compiler can type-check expressions before a run and the evaluator can
// rely on it after: a count is an int, a rate and a fraction are float64,
// a duration is a time.Duration (and is compared only with durations, so
// that `p99 < 10` cannot silently mean 10 nanoseconds).
const (
	// Count is a number of events (Go int).
	Count MetricKind = iota
	// Rate is events per second over the measured window (float64).
	Rate
	// Fraction is a share between 0 and 1 (float64).
	Fraction
	// Duration is a length of time (time.Duration).
	Duration
)

// String names the kind as the docs and error messages do.
func (k MetricKind) String() string {
	switch k {
	case Count:
		return "count"
	case Rate:
		return "rate"
	case Fraction:
		return "fraction"
	case Duration:
		return "duration"
	}
	return "unknown"
}

// Metric describes one metric that thresholds can read.
type Metric struct {
	// Name is the canonical dotted name, such as "latency.p99".
	Name string
	// Kind fixes the metric's Go type and what it compares with.
	Kind MetricKind
	// Help is a one-line description for docs, reports and error messages.
	Help string
}

// Metrics is the catalogue of every metric a threshold can name, in the
// order of plan-format.md ("Metrics that thresholds can use"). The threshold
// compiler, the report and the docs all read this one table, so a metric
// cannot exist in one of them and be unknown to another.
var Metrics = buildMetrics()

// MetricAliases maps the percentile shortcuts to their canonical names:
// "p99" is "latency.p99" (end-to-end latency is what users mean by p99).
var MetricAliases = map[string]string{
	"p50":  "latency.p50",
	"p90":  "latency.p90",
	"p95":  "latency.p95",
	"p99":  "latency.p99",
	"p999": "latency.p999",
}

// metricIndex finds a catalogue entry by canonical name.
var metricIndex = func() map[string]int {
	idx := make(map[string]int, len(Metrics))
	for i, m := range Metrics {
		idx[m.Name] = i
	}
	return idx
}()

// LookupMetric finds a metric by its canonical name or an alias ("p99").
// The returned Metric always carries the canonical name.
func LookupMetric(name string) (Metric, bool) {
	if canon, ok := MetricAliases[name]; ok {
		name = canon
	}
	i, ok := metricIndex[name]
	if !ok {
		return Metric{}, false
	}
	return Metrics[i], true
}

// metricFamilies are the dotted prefixes of the catalogue ("latency",
// "connect", ...) in catalogue order; a threshold must name one of their
// members, never a family alone.
var metricFamilies = func() []string {
	var fams []string
	seen := map[string]bool{}
	for _, m := range Metrics {
		if fam, _, ok := strings.Cut(m.Name, "."); ok && !seen[fam] {
			seen[fam] = true
			fams = append(fams, fam)
		}
	}
	return fams
}()

// buildMetrics writes the catalogue out. The two latency families share
// their statistics, so they are generated rather than typed twice.
func buildMetrics() []Metric {
	ms := []Metric{
		{"sent", Count, "PUBLISH packets sent"},
		{"unsent", Count, "messages the schedule called for that were never sent (connection down, generator or broker stalled, publishing stopped first)"},
		{"acked", Count, "PUBACK/PUBCOMP received for sent packets (QoS 1 and 2)"},
		{"expected", Count, "deliveries that the subscriptions imply for every message the schedule called for"},
		{"received", Count, "deliveries received by subscribers"},
		{"lost", Count, "deliveries expected but never received (after drain)"},
		{"lost_unsent", Count, "lost because the message was never sent"},
		{"lost_unacked", Count, "lost with the message sent but never acknowledged (still in flight when drain ended, or its connection dropped)"},
		{"lost_broker", Count, "lost with the message acknowledged by the broker (at QoS 0: written to it) and never delivered"},
		{"loss_rate", Fraction, "lost / expected"},
		{"duplicates", Count, "deliveries of a (publisher, sequence) already received by the same subscriber or share group"},
		{"dup_rate", Fraction, "duplicates / received"},
		{"unexpected", Count, "deliveries of the run's messages to a client none of whose subscriptions match their topic (no_local ignored, misrouting, a subscription left in a kept session): not received"},
		{"overlap_copies", Count, "extra copies a broker sent a subscriber for its other matching subscriptions (one per matching filter): not duplicates"},
		{"out_of_order", Count, "deliveries with a lower sequence than one already seen on their stream"},
		{"ooo_rate", Fraction, "out_of_order / received"},
		{"corrupted", Count, "deliveries whose payload differs from what was published"},
		{"send_rate", Rate, "messages published per second over the window"},
		{"recv_rate", Rate, "messages received per second over the window"},
		{"sent_bytes", Count, "payload bytes published"},
		{"received_bytes", Count, "payload bytes delivered"},
	}
	stats := []struct{ name, help string }{
		{"min", "minimum"}, {"mean", "mean"}, {"p50", "median"},
		{"p90", "90th percentile"}, {"p95", "95th percentile"}, {"p99", "99th percentile"},
		{"p999", "99.9th percentile"}, {"max", "maximum"}, {"stddev", "standard deviation"},
	}
	for _, fam := range []struct{ name, help string }{
		{"latency", "end-to-end latency, publish intent to delivery"},
		{"ack", "PUBLISH to PUBACK/PUBCOMP latency"},
	} {
		for _, s := range stats {
			ms = append(ms, Metric{fam.name + "." + s.name, Duration, fam.help + ", " + s.help})
		}
	}
	ms = append(ms,
		Metric{"connect.attempts", Count, "CONNECT packets sent"},
		Metric{"connect.ok", Count, "successful CONNACKs"},
		Metric{"connect.failed", Count, "connections that failed (refused, timed out or dropped)"},
		Metric{"connect.mean", Duration, "CONNECT to CONNACK, mean"},
		Metric{"connect.p50", Duration, "CONNECT to CONNACK, median"},
		Metric{"connect.p99", Duration, "CONNECT to CONNACK, 99th percentile"},
		Metric{"connect.max", Duration, "CONNECT to CONNACK, maximum"},
		Metric{"subscribe.mean", Duration, "SUBSCRIBE to SUBACK, mean"},
		Metric{"subscribe.p99", Duration, "SUBSCRIBE to SUBACK, 99th percentile"},
		Metric{"subscribe.max", Duration, "SUBSCRIBE to SUBACK, maximum"},
		Metric{"errors", Count, "errors"},
		Metric{"disconnects", Count, "unexpected disconnections"},
		Metric{"reconnects", Count, "reconnections"},
		Metric{"qos_downgrades", Count, "subscriptions granted a lower QoS than asked (one per client) and QoS 2 publishes acknowledged as QoS 1"},
		Metric{"clients.lost", Count, "clients whose connection dropped and did not come back before the run ended"},
		Metric{"lag.p99", Duration, "how far sends fell behind their schedule, 99th percentile"},
		Metric{"lag.max", Duration, "how far sends fell behind their schedule, maximum"},
		Metric{"late_rate", Fraction, "share of sends more than 1 ms behind their schedule"},
	)
	return ms
}
