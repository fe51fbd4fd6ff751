// Package stats holds what a run measured: counts and latency histograms
// per phase and group (Metrics), the per-second timeline, the clients'
// fates and the embedded broker's own counters, and the exact merge of
// those. The runner produces it, the report reads it, and a sharded run
// merges it across processes; so it holds data and arithmetic only: no
// clocks, sockets, plans or verdicts.
package stats

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

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
	// LostLate is the part of the broker's loss that was late rather than
	// dropped: on a publisher→subscriber stream that was still delivering
	// in drain's last second, the messages above the highest sequence it
	// received (a broker delivers a publisher's messages in order on a
	// subscription, so those were on their way; a hole below the highest
	// was skipped, and stays the broker's). Counted when the run is over,
	// by the receiver's shard. It is a raw count, summed as such by a
	// merge: the report bounds it by Lost less LostUnsent and LostUnacked
	// (a stream's missing tail may hold a message never sent or never
	// acknowledged, counted there), so that the four causes add up to Lost.
	LostLate int64
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
	// LostLateOwn is LostLate seen from the publishing group.
	LostLateOwn int64
	// Errors counts failed publishes, subscribes, and protocol errors.
	Errors int64
	// Disconnects counts connections lost unexpectedly; Reconnects counts
	// successful reconnects.
	Disconnects, Reconnects int64
	// ChurnDisconnects and ChurnReconnects count the planned session ends
	// and new sessions of groups with lifetime or churn: apart from
	// Disconnects and Reconnects, which stay unplanned drops and recoveries.
	ChurnDisconnects, ChurnReconnects int64
	// ChurnAmbiguous counts, for a subscribing group with a clean session
	// across churn, the deliveries at the edges of its session windows
	// whose fate the broker's order decides (published while the session
	// was being made or ended): neither expected nor lost, so Lost never
	// blames the broker for mqplan's own leave and return.
	// ChurnAmbiguousReceived counts those that arrived (first deliveries
	// only: a second one is a duplicate); they are not in Received.
	ChurnAmbiguous, ChurnAmbiguousReceived int64
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
	// FirstReceived and LastReceived are when the first and the last
	// delivery counted in Received arrived, as offsets from the run's start
	// (LastReceived is 0 when none did). A plan without publishers (mqplan
	// sub) has no schedule to measure rates against, so its rates cover the
	// window between them (see report.Environment). Merge keeps the earliest
	// first and the latest last.
	FirstReceived, LastReceived time.Duration
	// Latency is publish intent → delivery, Ack is PUBLISH → PUBACK/PUBCOMP,
	// Connect is CONNECT → CONNACK, Subscribe is SUBSCRIBE → SUBACK and Lag
	// is actual − intended send time, all in microseconds. Nil means no
	// samples were ever taken in this scope.
	Latency, Ack, Connect, Subscribe, Lag *hdrhistogram.Histogram
	// LatencyCross holds, in a sharded run, the Latency samples of the
	// deliveries whose publisher ran on another shard than the receiver:
	// only those depend on two clocks (clock.go). Latency stays the union,
	// what one process measures; the local ones are Latency minus these
	// (LocalLatency). Nil in a single process: every delivery is local.
	LatencyCross *hdrhistogram.Histogram
	// ReqResp is request/response (reqresp.go); zero without it.
	ReqResp ReqResp
}

// ReceiveWindow is how long deliveries kept arriving: LastReceived −
// FirstReceived, 0 when fewer than two arrived at different times.
func (m *Metrics) ReceiveWindow() time.Duration {
	if m.LastReceived == 0 {
		return 0
	}
	return m.LastReceived - m.FirstReceived
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
	m.LostLate += o.LostLate
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
	m.LostLateOwn += o.LostLateOwn
	m.Errors += o.Errors
	m.Disconnects += o.Disconnects
	m.Reconnects += o.Reconnects
	m.ChurnDisconnects += o.ChurnDisconnects
	m.ChurnReconnects += o.ChurnReconnects
	m.ChurnAmbiguous += o.ChurnAmbiguous
	m.ChurnAmbiguousReceived += o.ChurnAmbiguousReceived
	m.ClientsLost += o.ClientsLost
	m.QoSDowngrades += o.QoSDowngrades
	m.ConnectAttempts += o.ConnectAttempts
	m.ConnectOK += o.ConnectOK
	m.ConnectFailed += o.ConnectFailed
	m.SubscribeFailed += o.SubscribeFailed
	m.Late += o.Late
	m.OverRange += o.OverRange
	if o.LastReceived > 0 {
		if m.LastReceived == 0 || o.FirstReceived < m.FirstReceived {
			m.FirstReceived = o.FirstReceived
		}
		m.LastReceived = max(m.LastReceived, o.LastReceived)
	}
	m.Latency = mergeHist(m.Latency, o.Latency)
	m.Ack = mergeHist(m.Ack, o.Ack)
	m.Connect = mergeHist(m.Connect, o.Connect)
	m.Subscribe = mergeHist(m.Subscribe, o.Subscribe)
	m.Lag = mergeHist(m.Lag, o.Lag)
	m.LatencyCross = mergeHist(m.LatencyCross, o.LatencyCross)
	m.ReqResp.Merge(&o.ReqResp)
}
