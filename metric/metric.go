// Package metric is the catalogue of every metric a threshold can name:
// its canonical name (a typed constant, so that a misspelt name does not
// compile), its kind (which fixes the Go type of its value) and a line of
// help. The threshold checker, the report's environment and tables, the
// built-in checks and docs/plan-format.md ("Metrics that thresholds can
// use") all go by this one table, so a metric cannot exist in one of them
// and be unknown to another.
//
// Besides its kind, a metric says whether it counts bytes (Unit: a size
// literal such as 2GiB compares with it) and whether it exists for the
// whole run only (WholeRun: the broker's and mqplan's processes and the
// broker's own counters, which no group or phase splits), so that the
// threshold checker types and scopes by the catalogue, not by name.
//
// It owns names, kinds and units only: it does not measure (package stats does),
// compute values (package report does) or judge them (package threshold
// does), and it imports nothing of mqplan.
package metric

import (
	"slices"
	"strings"
)

// Name is a metric's canonical dotted name, such as "latency.p99". Use the
// constants: a string converted to a Name is not checked against the
// catalogue (Lookup does that).
type Name string

// The metric names, in catalogue order (the order of plan-format.md). The
// part before a dot names a family (latency, ack, connect, ...): a
// threshold names a member, never a family alone.
const (
	// Sent counts PUBLISH packets sent.
	Sent Name = "sent"
	// Unsent counts messages the schedule called for that were never sent.
	Unsent Name = "unsent"
	// Acked counts PUBACK/PUBCOMP received for sent packets.
	Acked Name = "acked"
	// Expected counts the deliveries the subscriptions imply.
	Expected Name = "expected"
	// Received counts deliveries received by subscribers.
	Received Name = "received"
	// Lost counts deliveries expected but never received.
	Lost Name = "lost"
	// LostUnsent counts the lost deliveries of messages never sent.
	LostUnsent Name = "lost_unsent"
	// LostUnacked counts the lost deliveries of messages sent but never
	// acknowledged.
	LostUnacked Name = "lost_unacked"
	// LostBroker counts the lost deliveries of messages the broker
	// acknowledged.
	LostBroker Name = "lost_broker"
	// LostLate counts the lost deliveries that were still on their way
	// when drain ended: late, not dropped.
	LostLate Name = "lost_late"
	// LossRate is lost / expected.
	LossRate Name = "loss_rate"
	// Duplicates counts deliveries received again.
	Duplicates Name = "duplicates"
	// DupRate is duplicates / received.
	DupRate Name = "dup_rate"
	// Unexpected counts deliveries no subscription of their client implies.
	Unexpected Name = "unexpected"
	// OverlapCopies counts the extra copies sent for overlapping filters.
	OverlapCopies Name = "overlap_copies"
	// OutOfOrder counts deliveries behind one already seen on their stream.
	OutOfOrder Name = "out_of_order"
	// OOORate is out_of_order / received.
	OOORate Name = "ooo_rate"
	// Corrupted counts deliveries whose payload was not what was published.
	Corrupted Name = "corrupted"
	// SendRate is messages published per second.
	SendRate Name = "send_rate"
	// RecvRate is messages received per second.
	RecvRate Name = "recv_rate"
	// SentBytes counts payload bytes published.
	SentBytes Name = "sent_bytes"
	// ReceivedBytes counts payload bytes delivered.
	ReceivedBytes Name = "received_bytes"

	// LatencyMin is the least end-to-end latency.
	LatencyMin Name = "latency.min"
	// LatencyMean is the mean end-to-end latency.
	LatencyMean Name = "latency.mean"
	// LatencyP50 is the median end-to-end latency (alias p50).
	LatencyP50 Name = "latency.p50"
	// LatencyP90 is the 90th percentile of end-to-end latency (alias p90).
	LatencyP90 Name = "latency.p90"
	// LatencyP95 is the 95th percentile of end-to-end latency (alias p95).
	LatencyP95 Name = "latency.p95"
	// LatencyP99 is the 99th percentile of end-to-end latency (alias p99).
	LatencyP99 Name = "latency.p99"
	// LatencyP999 is the 99.9th percentile of end-to-end latency (alias
	// p999).
	LatencyP999 Name = "latency.p999"
	// LatencyMax is the greatest end-to-end latency.
	LatencyMax Name = "latency.max"
	// LatencyStddev is the standard deviation of end-to-end latency.
	LatencyStddev Name = "latency.stddev"

	// AckMin is the least PUBLISH to PUBACK/PUBCOMP latency.
	AckMin Name = "ack.min"
	// AckMean is the mean PUBLISH to PUBACK/PUBCOMP latency.
	AckMean Name = "ack.mean"
	// AckP50 is the median PUBLISH to PUBACK/PUBCOMP latency.
	AckP50 Name = "ack.p50"
	// AckP90 is the 90th percentile of PUBLISH to PUBACK/PUBCOMP latency.
	AckP90 Name = "ack.p90"
	// AckP95 is the 95th percentile of PUBLISH to PUBACK/PUBCOMP latency.
	AckP95 Name = "ack.p95"
	// AckP99 is the 99th percentile of PUBLISH to PUBACK/PUBCOMP latency.
	AckP99 Name = "ack.p99"
	// AckP999 is the 99.9th percentile of PUBLISH to PUBACK/PUBCOMP latency.
	AckP999 Name = "ack.p999"
	// AckMax is the greatest PUBLISH to PUBACK/PUBCOMP latency.
	AckMax Name = "ack.max"
	// AckStddev is the standard deviation of PUBLISH to PUBACK/PUBCOMP
	// latency.
	AckStddev Name = "ack.stddev"

	// ConnectAttempts counts CONNECT packets sent.
	ConnectAttempts Name = "connect.attempts"
	// ConnectOK counts successful CONNACKs.
	ConnectOK Name = "connect.ok"
	// ConnectFailed counts connections that failed.
	ConnectFailed Name = "connect.failed"
	// ConnectMean is the mean CONNECT to CONNACK time.
	ConnectMean Name = "connect.mean"
	// ConnectP50 is the median CONNECT to CONNACK time.
	ConnectP50 Name = "connect.p50"
	// ConnectP99 is the 99th percentile of CONNECT to CONNACK time.
	ConnectP99 Name = "connect.p99"
	// ConnectMax is the greatest CONNECT to CONNACK time.
	ConnectMax Name = "connect.max"
	// SubscribeMean is the mean SUBSCRIBE to SUBACK time.
	SubscribeMean Name = "subscribe.mean"
	// SubscribeP99 is the 99th percentile of SUBSCRIBE to SUBACK time.
	SubscribeP99 Name = "subscribe.p99"
	// SubscribeMax is the greatest SUBSCRIBE to SUBACK time.
	SubscribeMax Name = "subscribe.max"

	// Errors counts every error the report lists.
	Errors Name = "errors"
	// Disconnects counts unexpected disconnections.
	Disconnects Name = "disconnects"
	// Reconnects counts reconnections.
	Reconnects Name = "reconnects"
	// ChurnDisconnects counts the planned DISCONNECTs of lifetime or churn.
	ChurnDisconnects Name = "churn.disconnects"
	// ChurnReconnects counts the new sessions of lifetime or churn.
	ChurnReconnects Name = "churn.reconnects"
	// ChurnAmbiguous counts the deliveries to clean churning subscribers
	// that the broker's order decides (published as a session was being
	// made or ended): neither expected nor lost.
	ChurnAmbiguous Name = "churn.ambiguous"
	// ChurnAmbiguousReceived counts those that arrived (not in received).
	ChurnAmbiguousReceived Name = "churn.ambiguous_received"
	// QoSDowngrades counts subscriptions and QoS 2 publishes granted a
	// lower QoS than asked.
	QoSDowngrades Name = "qos_downgrades"
	// ClientsLost counts clients whose connection dropped for good.
	ClientsLost Name = "clients.lost"
	// LagP99 is the 99th percentile of how far sends fell behind their
	// schedule.
	LagP99 Name = "lag.p99"
	// LagMax is the furthest a send fell behind its schedule.
	LagMax Name = "lag.max"
	// LateRate is the share of sends more than 1 ms behind their schedule.
	LateRate Name = "late_rate"

	// BrokerCPUMax is the broker process's busiest second, in percent of
	// one core (sampled only when the plan's broker.metrics names it).
	BrokerCPUMax Name = "broker.cpu.max"
	// BrokerCPUMean is the broker process's mean CPU over its sampled
	// seconds, in percent of one core.
	BrokerCPUMean Name = "broker.cpu.mean"
	// BrokerRSSMax is the broker process's largest resident memory, bytes.
	BrokerRSSMax Name = "broker.rss.max"
	// SelfCPUMax is mqplan's own busiest second, in percent of one core:
	// near the machine's cores, mqplan rather than the broker may be the
	// bottleneck.
	SelfCPUMax Name = "self.cpu.max"
	// SelfRSSMax is mqplan's own largest resident memory, bytes.
	SelfRSSMax Name = "self.rss.max"
	// SelfCPUWait is how long mqplan's threads, summed, waited for a CPU
	// over the steady phase (Linux).
	SelfCPUWait Name = "self.cpu_wait"
	// SelfDisturbed is the share of the steady phase's seconds in which
	// mqplan was starved of CPU or saturated its own (Linux).
	SelfDisturbed Name = "self.disturbed"

	// BrokerClientsMax is the most clients the broker said were connected
	// (its own count: mqplan's clients, its $SYS monitor and any other),
	// from broker.metrics sys or prometheus.
	BrokerClientsMax Name = "broker.clients.max"
	// BrokerPublishReceived is how many PUBLISH packets the broker said it
	// received between the run's start and end: compared with sent, it
	// tells whether anything else published on the broker.
	BrokerPublishReceived Name = "broker.publish.received"
	// BrokerPublishSent is how many PUBLISH packets the broker said it sent
	// between the run's start and end ($SYS monitor's included).
	BrokerPublishSent Name = "broker.publish.sent"
	// BrokerDropped is how many messages the broker said it dropped between
	// the run's start and end: a broker that drops under load says so here
	// before a subscriber notices.
	BrokerDropped Name = "broker.dropped"
	// BrokerMemoryMax is the most memory the broker said it used, bytes
	// (its own figure: Mosquitto's heap, mochi's Go heap, EMQX's VM).
	BrokerMemoryMax Name = "broker.memory.max"
	// BrokerSubscriptionsMax is the most subscriptions the broker said it
	// held.
	BrokerSubscriptionsMax Name = "broker.subscriptions.max"
)

// Split cuts a name at its first dot into its family and member
// ("latency.p99" → "latency", "p99"); ok is false for a name without a
// family ("sent").
func (n Name) Split() (family, member string, ok bool) {
	return strings.Cut(string(n), ".")
}

// Kind says what a metric measures, and so which Go type carries its value
// in a Set and what a threshold may compare it with.
type Kind int

// The metric kinds. The Go type of each is fixed so that the threshold
// compiler can type-check expressions before a run and the evaluator can
// rely on it after: a count is an int, a rate and a fraction are float64,
// a duration is a time.Duration (and is compared only with durations, so
// that `p99 < 10` cannot silently mean 10 nanoseconds).
const (
	// Count is a number of events (Go int).
	Count Kind = iota
	// Rate is events per second over the measured window (float64).
	Rate
	// Fraction is a share between 0 and 1 (float64).
	Fraction
	// Duration is a length of time (time.Duration).
	Duration
)

// String names the kind as the docs and error messages do.
func (k Kind) String() string {
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

// Unit says what a count counts when it is not events: a Bytes metric is
// compared with size literals (broker.rss.max < 2GiB) and shown as a size,
// while `sent < 2GiB` is a type error.
type Unit int

// The units of a metric.
const (
	// NoUnit is a metric in its kind's own terms: events, seconds,
	// events per second, a share.
	NoUnit Unit = iota
	// Bytes is a number of bytes (a Count, Go int): memory, payload
	// bytes.
	Bytes
)

// String names the unit as error messages do.
func (u Unit) String() string {
	if u == Bytes {
		return "bytes"
	}
	return ""
}

// Metric describes one metric that thresholds can read.
type Metric struct {
	// Name is the canonical dotted name.
	Name Name
	// Kind fixes the metric's Go type and what it compares with.
	Kind Kind
	// Unit is Bytes for a count of bytes (its kind stays Count, its Go
	// type int), NoUnit otherwise.
	Unit Unit
	// WholeRun marks a figure that exists only for the run as a whole:
	// the broker's and mqplan's processes and the broker's own counters
	// are not split by group or phase, so a threshold may not read them
	// under groups.<name>. or phases.<name>. (it could only ever fail,
	// "no samples").
	WholeRun bool
	// Help is a one-line description for docs, reports and error messages.
	Help string
}

// Set holds measured values by canonical metric name, each in its kind's
// Go type: int for Count, float64 for Rate and Fraction, time.Duration for
// Duration. A name absent from the set had no samples.
type Set map[Name]any

// The help of the two latency families, which share their statistics.
const (
	e2eHelp = "end-to-end latency, publish intent to delivery, "
	ackHelp = "PUBLISH to PUBACK/PUBCOMP latency, "
)

// catalogue is every metric, in the order of plan-format.md.
var catalogue = slices.Concat([]Metric{
	{Name: Sent, Kind: Count, Help: "PUBLISH packets sent"},
	{Name: Unsent, Kind: Count, Help: "messages the schedule called for that were never sent (connection down, generator or broker stalled, publishing stopped first)"},
	{Name: Acked, Kind: Count, Help: "PUBACK/PUBCOMP received for sent packets (QoS 1 and 2)"},
	{Name: Expected, Kind: Count, Help: "deliveries that the subscriptions imply for every message the schedule called for"},
	{Name: Received, Kind: Count, Help: "deliveries received by subscribers"},
	{Name: Lost, Kind: Count, Help: "deliveries expected but never received (after drain)"},
	{Name: LostUnsent, Kind: Count, Help: "lost because the message was never sent"},
	{Name: LostUnacked, Kind: Count, Help: "lost with the message sent but never acknowledged (still in flight when drain ended, or its connection dropped)"},
	{Name: LostBroker, Kind: Count, Help: "lost with the message acknowledged by the broker (at QoS 0: written to it) and never delivered, not late (see lost_late)"},
	{Name: LostLate, Kind: Count, Help: "lost because drain ended first: missing above the highest message received on a stream still delivering in drain's last second"},
	{Name: LossRate, Kind: Fraction, Help: "lost / expected"},
	{Name: Duplicates, Kind: Count, Help: "deliveries of a (publisher, sequence) already received by the same subscriber or share group"},
	{Name: DupRate, Kind: Fraction, Help: "duplicates / received"},
	{Name: Unexpected, Kind: Count, Help: "deliveries of the run's messages to a client none of whose subscriptions match their topic (no_local ignored, misrouting, a subscription left in a kept session): not received"},
	{Name: OverlapCopies, Kind: Count, Help: "extra copies a broker sent a subscriber for its other matching subscriptions (one per matching filter): not duplicates"},
	{Name: OutOfOrder, Kind: Count, Help: "deliveries with a lower sequence than one already seen on their stream"},
	{Name: OOORate, Kind: Fraction, Help: "out_of_order / received"},
	{Name: Corrupted, Kind: Count, Help: "deliveries whose payload differs from what was published"},
	{Name: SendRate, Kind: Rate, Help: "messages published per second over the window"},
	{Name: RecvRate, Kind: Rate, Help: "messages received per second over the window"},
	{Name: SentBytes, Kind: Count, Help: "payload bytes published", Unit: Bytes},
	{Name: ReceivedBytes, Kind: Count, Help: "payload bytes delivered", Unit: Bytes},

	{Name: LatencyMin, Kind: Duration, Help: e2eHelp + "minimum"},
	{Name: LatencyMean, Kind: Duration, Help: e2eHelp + "mean"},
	{Name: LatencyP50, Kind: Duration, Help: e2eHelp + "median"},
	{Name: LatencyP90, Kind: Duration, Help: e2eHelp + "90th percentile"},
	{Name: LatencyP95, Kind: Duration, Help: e2eHelp + "95th percentile"},
	{Name: LatencyP99, Kind: Duration, Help: e2eHelp + "99th percentile"},
	{Name: LatencyP999, Kind: Duration, Help: e2eHelp + "99.9th percentile"},
	{Name: LatencyMax, Kind: Duration, Help: e2eHelp + "maximum"},
	{Name: LatencyStddev, Kind: Duration, Help: e2eHelp + "standard deviation"},
}, clockMetrics, []Metric{

	{Name: AckMin, Kind: Duration, Help: ackHelp + "minimum"},
	{Name: AckMean, Kind: Duration, Help: ackHelp + "mean"},
	{Name: AckP50, Kind: Duration, Help: ackHelp + "median"},
	{Name: AckP90, Kind: Duration, Help: ackHelp + "90th percentile"},
	{Name: AckP95, Kind: Duration, Help: ackHelp + "95th percentile"},
	{Name: AckP99, Kind: Duration, Help: ackHelp + "99th percentile"},
	{Name: AckP999, Kind: Duration, Help: ackHelp + "99.9th percentile"},
	{Name: AckMax, Kind: Duration, Help: ackHelp + "maximum"},
	{Name: AckStddev, Kind: Duration, Help: ackHelp + "standard deviation"},

	{Name: Requests, Kind: Count, Help: "requests sent (publish.response_topic, MQTT 5)"},
	{Name: ResponsesExpected, Kind: Count, Help: "answers the requests sent imply: one per responder each request reached"},
	{Name: Responses, Kind: Count, Help: "first answers that came within response_timeout"},
	{Name: ResponsesLate, Kind: Count, Help: "first answers that came after response_timeout (counted in rtt.timeouts too)"},
	{Name: ResponsesDuplicates, Kind: Count, Help: "answers to a request received again from the same responder"},
	{Name: ResponsesSent, Kind: Count, Help: "answers published by a responder group (respond:)"},
	{Name: RTTTimeouts, Kind: Count, Help: "answers expected that did not come within response_timeout: responses_expected - responses"},
	{Name: RTTMin, Kind: Duration, Help: rttHelp + "minimum"},
	{Name: RTTMean, Kind: Duration, Help: rttHelp + "mean"},
	{Name: RTTP50, Kind: Duration, Help: rttHelp + "median"},
	{Name: RTTP90, Kind: Duration, Help: rttHelp + "90th percentile"},
	{Name: RTTP95, Kind: Duration, Help: rttHelp + "95th percentile"},
	{Name: RTTP99, Kind: Duration, Help: rttHelp + "99th percentile"},
	{Name: RTTP999, Kind: Duration, Help: rttHelp + "99.9th percentile"},
	{Name: RTTMax, Kind: Duration, Help: rttHelp + "maximum"},
	{Name: RTTStddev, Kind: Duration, Help: rttHelp + "standard deviation"},

	{Name: ConnectAttempts, Kind: Count, Help: "CONNECT packets sent"},
	{Name: ConnectOK, Kind: Count, Help: "successful CONNACKs"},
	{Name: ConnectFailed, Kind: Count, Help: "connections that failed (refused, timed out or dropped)"},
	{Name: ConnectMean, Kind: Duration, Help: "CONNECT to CONNACK, mean"},
	{Name: ConnectP50, Kind: Duration, Help: "CONNECT to CONNACK, median"},
	{Name: ConnectP99, Kind: Duration, Help: "CONNECT to CONNACK, 99th percentile"},
	{Name: ConnectMax, Kind: Duration, Help: "CONNECT to CONNACK, maximum"},
	{Name: SubscribeMean, Kind: Duration, Help: "SUBSCRIBE to SUBACK, mean"},
	{Name: SubscribeP99, Kind: Duration, Help: "SUBSCRIBE to SUBACK, 99th percentile"},
	{Name: SubscribeMax, Kind: Duration, Help: "SUBSCRIBE to SUBACK, maximum"},
	{Name: Errors, Kind: Count, Help: "errors"},
	{Name: Disconnects, Kind: Count, Help: "unexpected disconnections"},
	{Name: Reconnects, Kind: Count, Help: "reconnections"},
	{Name: ChurnDisconnects, Kind: Count, Help: "planned disconnections of lifetime or churn (not in disconnects); only in a plan that churns"},
	{Name: ChurnReconnects, Kind: Count, Help: "planned reconnections of lifetime or churn (not in reconnects; their CONNECTs are in connect.*); only in a plan that churns"},
	{Name: ChurnAmbiguous, Kind: Count, Help: "deliveries to subscribers with a clean session across churn published as a session was being made or ended, whose fate the broker's order decides: neither expected nor lost; only with such subscribers"},
	{Name: ChurnAmbiguousReceived, Kind: Count, Help: "the churn.ambiguous deliveries that arrived (first deliveries; not in received); only with such subscribers"},
	{Name: QoSDowngrades, Kind: Count, Help: "subscriptions granted a lower QoS than asked (one per client) and QoS 2 publishes acknowledged as QoS 1"},
	{Name: ClientsLost, Kind: Count, Help: "clients whose connection dropped and did not come back before the run ended"},
	{Name: LagP99, Kind: Duration, Help: "how far sends fell behind their schedule, 99th percentile"},
	{Name: LagMax, Kind: Duration, Help: "how far sends fell behind their schedule, maximum"},
	{Name: LateRate, Kind: Fraction, Help: "share of sends more than 1 ms behind their schedule"},

	{Name: BrokerCPUMax, Kind: Rate, Help: "the broker process's CPU in its busiest second, percent of one core (broker.metrics)", WholeRun: true},
	{Name: BrokerCPUMean, Kind: Rate, Help: "the broker process's mean CPU over the run, percent of one core (broker.metrics)", WholeRun: true},
	{Name: BrokerRSSMax, Kind: Count, Help: "the broker process's largest resident memory, bytes (broker.metrics)", Unit: Bytes, WholeRun: true},
	{Name: SelfCPUMax, Kind: Rate, Help: "mqplan's own CPU in its busiest second, percent of one core", WholeRun: true},
	{Name: SelfRSSMax, Kind: Count, Help: "mqplan's own largest resident memory, bytes", Unit: Bytes, WholeRun: true},
	{Name: SelfCPUWait, Kind: Duration, Help: "how long mqplan's threads, summed, waited for a CPU over steady (Linux)", WholeRun: true},
	{Name: SelfDisturbed, Kind: Fraction, Help: "the share of steady's seconds in which mqplan was starved of CPU or busy at the limit of its CPUs (Linux)", WholeRun: true},

	{Name: BrokerClientsMax, Kind: Count, Help: "the most clients the broker said were connected (broker.metrics sys or prometheus)", WholeRun: true},
	{Name: BrokerPublishReceived, Kind: Count, Help: "PUBLISH packets the broker said it received during the run (broker.metrics sys or prometheus)", WholeRun: true},
	{Name: BrokerPublishSent, Kind: Count, Help: "PUBLISH packets the broker said it sent during the run (broker.metrics sys or prometheus)", WholeRun: true},
	{Name: BrokerDropped, Kind: Count, Help: "messages the broker said it dropped during the run (broker.metrics sys or prometheus)", WholeRun: true},
	{Name: BrokerMemoryMax, Kind: Count, Help: "the most memory the broker said it used, bytes (broker.metrics sys or prometheus)", Unit: Bytes, WholeRun: true},
	{Name: BrokerSubscriptionsMax, Kind: Count, Help: "the most subscriptions the broker said it held (broker.metrics sys or prometheus)", WholeRun: true},
})

// aliases are the percentile shortcuts, in alphabetical order: "p99" is
// latency.p99, because end-to-end latency is what users mean by p99.
var aliases = []struct {
	alias string
	name  Name
}{
	{"p50", LatencyP50},
	{"p90", LatencyP90},
	{"p95", LatencyP95},
	{"p99", LatencyP99},
	{"p999", LatencyP999},
}

// familyAliases are the other names of a family: "e2e" is latency, because
// the report's latency table calls end-to-end latency e2e, and a threshold
// copied from a row of that table (e2e.p99) must mean what the row shows.
// Every other row of that table (ack, connect, subscribe, rtt) is already a
// family's name.
var familyAliases = map[string]string{"e2e": "latency"}

// Family returns the canonical family a family name or family alias
// stands for (e2e → latency, ack → ack), and false when name is neither.
func Family(name string) (string, bool) {
	if fam, ok := familyAliases[name]; ok {
		return fam, true
	}
	if Members(name) != nil {
		return name, true
	}
	return "", false
}

// index finds a catalogue entry by canonical name.
var index = func() map[Name]int {
	idx := make(map[Name]int, len(catalogue))
	for i, m := range catalogue {
		idx[m.Name] = i
	}
	return idx
}()

// All lists every metric in catalogue order. The slice is the caller's
// own: the catalogue itself cannot be edited.
func All() []Metric { return slices.Clone(catalogue) }

// Lookup finds a metric by its canonical name, an alias ("p99") or a
// family alias ("e2e.p99"). The returned Metric always carries the
// canonical name.
func Lookup(name string) (Metric, bool) {
	for _, a := range aliases {
		if a.alias == name {
			name = string(a.name)
			break
		}
	}
	if fam, member, ok := strings.Cut(name, "."); ok {
		if canon, ok := familyAliases[fam]; ok {
			name = canon + "." + member
		}
	}
	i, ok := index[Name(name)]
	if !ok {
		return Metric{}, false
	}
	return catalogue[i], true
}

// Aliases lists the shortcuts a threshold may write for a canonical name
// (p50, p90, p95, p99, p999), in alphabetical order.
func Aliases() []string {
	out := make([]string, len(aliases))
	for i, a := range aliases {
		out[i] = a.alias
	}
	return out
}

// Alias returns the shortcut for a canonical name (latency.p99 → p99), if
// it has one.
func Alias(n Name) (string, bool) {
	for _, a := range aliases {
		if a.name == n {
			return a.alias, true
		}
	}
	return "", false
}

// Members lists the members of a family in catalogue order ("latency" →
// min, mean, p50, ...; a family alias lists its family's), or nil when
// family is not one.
func Members(family string) []string {
	if canon, ok := familyAliases[family]; ok {
		family = canon
	}
	var out []string
	for _, m := range catalogue {
		if fam, member, ok := m.Name.Split(); ok && fam == family {
			out = append(out, member)
		}
	}
	return out
}
