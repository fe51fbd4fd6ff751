package runner

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds: 1 µs to 60 s at 3 significant digits (design.md).
// Values are recorded in microseconds; larger values are counted in
// Metrics.OverRange instead of being lost silently.
const (
	histMin    = 1
	histMax    = 60_000_000
	histDigits = 3
)

// NewHistogram returns an empty latency histogram in microseconds with the
// bounds every mqplan histogram shares, so that they can be merged.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histDigits)
}

// Metrics is what was measured for one scope: a phase, a group within a
// phase, or a merge of those. Message counts are attributed to the phase in
// which the message was intended to be sent, so deliveries of steady-phase
// messages that arrive during drain still count for steady.
//
// For a subscribing group, Expected/Received/Lost/Duplicates/OutOfOrder/
// Corrupted and Latency count deliveries to its clients; for a publishing
// group, Sent/Acked/Ack/Lag count its publishes and ExpectedOwn/ReceivedOwn/
// LostOwn count the deliveries of its messages. A merged scope (a whole
// phase) counts every delivery once.
type Metrics struct {
	// Sent counts PUBLISH packets written; Acked the PUBACK/PUBCOMP received.
	Sent, Acked int64
	// Unsent counts the messages the schedule called for that were never
	// sent: the connection was down, the client never connected, the
	// generator or the broker stalled, or publishing stopped first. Sent +
	// Unsent is what the schedule called for, so a broker that dies
	// mid-run cannot make its missing messages vanish from the figures.
	Unsent int64
	// SentBytes and ReceivedBytes count payload bytes.
	SentBytes, ReceivedBytes int64
	// Expected is the deliveries the subscriptions imply for the messages
	// the schedule called for, sent or not: a message that was never sent
	// is still a delivery that never arrived.
	Expected int64
	// Received counts every delivery, duplicates included.
	Received int64
	// Lost is Expected minus first-time deliveries, fixed when the run ends.
	Lost int64
	// LostUnsent and LostUnacked break Lost down by cause: deliveries of
	// messages never sent, and of messages sent but never acknowledged
	// (QoS 1/2: no PUBACK or PUBREC, because the run ended first or the
	// connection dropped) that did not arrive. The rest of Lost is the
	// broker's: messages it acknowledged (or, at QoS 0, that were written
	// to it) and never delivered.
	LostUnsent, LostUnacked int64
	// Duplicates counts a (publisher, sequence) received again by the same
	// subscriber or share group.
	Duplicates int64
	// OverlapCopies counts the extra copies of a message a broker sent a
	// subscriber for its other matching subscriptions (one per matching
	// filter, as MQTT 3.1.1 allows): not duplicates, and not in Received.
	OverlapCopies int64
	// OutOfOrder counts first-time deliveries with a lower sequence than one
	// already seen on the same publisher→subscriber stream.
	OutOfOrder int64
	// Corrupted counts deliveries that claim to be one of this run's
	// messages but whose payload differs from what was sent.
	Corrupted int64
	// Foreign counts deliveries that are not this run's messages at all
	// (wills, retained messages, other traffic on the broker). They are
	// neither received nor corrupted, and the report warns about them.
	Foreign int64
	// Unexpected counts deliveries of this run's messages to a client none
	// of whose subscriptions matches their topic (a subscription left by a
	// kept session of an earlier run, a broker that ignores no_local or
	// misroutes). They are not in Received: counted there they would hide
	// as many lost deliveries of the same group.
	Unexpected int64
	// ExpectedOwn, ReceivedOwn and LostOwn are the same accounting seen
	// from the publishing group: deliveries of this group's messages
	// (ReceivedOwn counts first deliveries only, so LostOwn is exact).
	ExpectedOwn, ReceivedOwn, LostOwn int64
	// LostUnsentOwn and LostUnackedOwn break LostOwn down by cause, as
	// LostUnsent and LostUnacked do Lost.
	LostUnsentOwn, LostUnackedOwn int64
	// Errors counts failed publishes, subscribes, and protocol errors.
	Errors int64
	// Disconnects counts connections lost unexpectedly; Reconnects counts
	// successful reconnects.
	Disconnects, Reconnects int64
	// QoSDowngrades counts what the broker granted below what the plan
	// asked: clients granted a lower QoS than asked on a subscription (in
	// the subscribe phase), and QoS 2 publishes acknowledged with PUBACK,
	// as QoS 1 (in the message's phase).
	QoSDowngrades int64
	// ClientsLost counts clients whose connection dropped and that were
	// not connected again when the run ended (no reconnect policy, or it
	// gave up), in the phase of their last loss.
	ClientsLost int64
	// ConnectAttempts, ConnectOK, ConnectFailed count CONNECT outcomes.
	ConnectAttempts, ConnectOK, ConnectFailed int64
	// SubscribeFailed counts SUBSCRIBE requests refused or timed out.
	SubscribeFailed int64
	// Late counts sends more than LateThreshold behind their schedule.
	Late int64
	// OverRange counts values above the histogram's 60 s maximum.
	OverRange int64
	// Latency is publish intent → delivery, Ack is PUBLISH → PUBACK/PUBCOMP,
	// Connect is CONNECT → CONNACK, Subscribe is SUBSCRIBE → SUBACK and Lag
	// is actual − intended send time, all in microseconds. Nil means no
	// samples were ever taken in this scope.
	Latency, Ack, Connect, Subscribe, Lag *hdrhistogram.Histogram
}

// LateThreshold is how far behind schedule a send may be before it counts
// as late (late_rate).
const LateThreshold = time.Millisecond

// Merge adds o into m. Histograms are merged, never shared.
func (m *Metrics) Merge(o *Metrics) {
	if o == nil {
		return
	}
	m.Sent += o.Sent
	m.Acked += o.Acked
	m.Unsent += o.Unsent
	m.SentBytes += o.SentBytes
	m.ReceivedBytes += o.ReceivedBytes
	m.Expected += o.Expected
	m.Received += o.Received
	m.Lost += o.Lost
	m.LostUnsent += o.LostUnsent
	m.LostUnacked += o.LostUnacked
	m.Duplicates += o.Duplicates
	m.OutOfOrder += o.OutOfOrder
	m.OverlapCopies += o.OverlapCopies
	m.Corrupted += o.Corrupted
	m.Foreign += o.Foreign
	m.Unexpected += o.Unexpected
	m.ExpectedOwn += o.ExpectedOwn
	m.ReceivedOwn += o.ReceivedOwn
	m.LostOwn += o.LostOwn
	m.LostUnsentOwn += o.LostUnsentOwn
	m.LostUnackedOwn += o.LostUnackedOwn
	m.Errors += o.Errors
	m.Disconnects += o.Disconnects
	m.Reconnects += o.Reconnects
	m.ClientsLost += o.ClientsLost
	m.QoSDowngrades += o.QoSDowngrades
	m.ConnectAttempts += o.ConnectAttempts
	m.ConnectOK += o.ConnectOK
	m.ConnectFailed += o.ConnectFailed
	m.SubscribeFailed += o.SubscribeFailed
	m.Late += o.Late
	m.OverRange += o.OverRange
	m.Latency = mergeHist(m.Latency, o.Latency)
	m.Ack = mergeHist(m.Ack, o.Ack)
	m.Connect = mergeHist(m.Connect, o.Connect)
	m.Subscribe = mergeHist(m.Subscribe, o.Subscribe)
	m.Lag = mergeHist(m.Lag, o.Lag)
}

func mergeHist(dst, src *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if src == nil {
		return dst
	}
	if dst == nil {
		dst = NewHistogram()
	}
	dst.Merge(src)
	return dst
}

// PhaseStats is one phase of the run as it happened.
type PhaseStats struct {
	// Name is one of plans.PhaseNames.
	Name string
	// Start and End are offsets from the run's start. A phase that the plan
	// does not have (no warmup, say) has Start == End.
	Start, End time.Duration
	// Total merges every group.
	Total Metrics
	// Groups holds one Metrics per plan group, in plan order.
	Groups []Metrics
}

// Duration is how long the phase lasted.
func (p *PhaseStats) Duration() time.Duration { return p.End - p.Start }

// GroupInfo describes one group's clients at the end of the run.
type GroupInfo struct {
	Name string
	// Clients is the group's planned count; Connected the number that
	// completed CONNECT at least once; ConnectedAtEnd the number still
	// connected when the run ended; Lost the number whose connection
	// dropped and did not come back (Connected - ConnectedAtEnd).
	Clients, Connected, ConnectedAtEnd, Lost int
}

// Second is one entry of the per-second timeline: figures for the second
// that ended At after the run's start. It holds summaries, never a whole
// histogram, so a run of any length keeps flat memory.
type Second struct {
	At        time.Duration
	Phase     string
	Connected int
	// Lost is the number of clients whose connection was down at that
	// moment (dropped and not yet back).
	Lost                   int
	Sent, Received, Errors int64
	Disconnects            int64
	P50, P99, Max          time.Duration // latency of deliveries received in that second
	LagMax                 time.Duration
}

// BrokerStats are the embedded broker's own counters, so that broker drops
// are never mistaken for mqplan's losses. Nil for an external broker.
type BrokerStats struct {
	MessagesReceived int64 // PUBLISH packets the broker received
	MessagesSent     int64 // PUBLISH packets the broker sent
	MessagesDropped  int64 // dropped because a client's outbound queue was full
	InflightDropped  int64 // dropped because a client's inflight store was full
	ClientsMaximum   int64
}

// Stats is everything one run measured.
type Stats struct {
	// Started is the wall-clock start, for reports.
	Started time.Time
	// Elapsed is the whole run's length.
	Elapsed time.Duration
	// Broker is the URL used (the embedded broker's real address included).
	BrokerURL string
	// Phases holds every phase in plans.PhaseNames order.
	Phases []PhaseStats
	// Groups describes each plan group's clients, in plan order.
	Groups []GroupInfo
	// Timeline is the per-second history.
	Timeline []Second
	// Broker holds the embedded broker's counters (nil when external).
	Broker *BrokerStats
	// Interrupted is set when a signal or context cancelled the run.
	Interrupted bool
	// Incomplete, when non-empty, says why the run could not complete
	// (exit code 3), for example "group sub: no client could connect".
	Incomplete string
	// ErrorSamples holds the first distinct error messages, for the report,
	// each with how often errors of its kind occurred ("(and 29 more like
	// it)"); Errors counts them all (the errors metric, over the whole run).
	ErrorSamples []string
	// InFlightAtEnd counts the QoS 1/2 publishes still awaiting their
	// acknowledgement when drain ended: non-zero means drain was too short
	// for what the broker had in hand (or the broker stalled).
	InFlightAtEnd int64
	// DrainQuiet is how long drain kept listening after the last expected
	// delivery, to catch duplicates that follow it.
	DrainQuiet time.Duration
	// Notices say where the broker did otherwise than the plan asked (QoS
	// downgrades, no shared subscriptions, a copy per overlapping
	// subscription), for the report's warnings.
	Notices []string
}

// Phase returns the named phase, or nil.
func (s *Stats) Phase(name string) *PhaseStats {
	for i := range s.Phases {
		if s.Phases[i].Name == name {
			return &s.Phases[i]
		}
	}
	return nil
}
