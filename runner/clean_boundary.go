package runner

// Clean sessions across churn (issue 10, scope item 2): the rule that
// decides, from observable events only, whether a message published around
// the moment a clean subscriber leaves or comes back is expected by that
// subscriber, not expected, or ambiguous. This file holds the rule and its
// design; clean_run.go wires it into a run (subscribing groups moved by
// stage clients: with a clean session are still refused,
// plans/stage_clients.go).
//
// A clean subscriber that leaves loses its subscriptions with its session,
// and subscribes again when it comes back: what is published while it is
// away is not expected. At the edges of a session window the broker's order
// decides, and mqplan sees only its own clients' events, all on the run's
// monotonic clock (ns since the epoch):
//
//	session k of a subscriber       a message m of a publisher reaching it
//	  R  CONNECT written              W  its PUBLISH about to be written
//	  S  SUBACK read                  A  its last acknowledgement read
//	  F  fence sent                      (PUBACK, or PUBCOMP), 0 if none
//	  X  reader stopped (Leave)
//
// and two facts about every broker: it routes a PUBLISH to the sessions
// subscribed when it handles it, and it acknowledges a PUBLISH only after
// routing it (QoS 1 and mochi's QoS 2: routed on PUBLISH, acknowledged
// after; Mosquitto's QoS 2: routed on PUBREL, PUBCOMP after, so the last
// acknowledgement is the one to read); and it adds a subscription before
// it sends its SUBACK.
//
//   - Not expected: A < R (the broker routed m before the session existed),
//     or W > X (the session read nothing after its publisher began writing
//     m). The brief's "written before the client reconnected" is not
//     enough: a PUBLISH written before R may be read by the broker after
//     the new subscription, and delivered; only its acknowledgement before
//     R rules that out, so such a message is ambiguous here.
//   - Expected: W > S (routed after the subscription existed) and, when
//     the session ended before the run did, m acknowledged before a fence
//     that the subscriber saw come back in order behind every delivery
//     the broker routed to it before the fence (A < F, fence trusted).
//   - Ambiguous: anything else. Counted apart (neither expected nor lost
//     nor a duplicate), so lost stays exact and never blames the broker
//     for the broker's order; an ambiguous message that arrives is not a
//     surplus, a second delivery of it is a duplicate.
//
// At most one session of a subscriber expects a message: session k expects
// it only when A < F(k), session k+1 only when W > S(k+1); but F(k) < X(k)
// < R(k+1) < S(k+1) and W < A. A message may be ambiguous in two adjacent
// sessions (away 0); it is still one message, delivered at most once
// legitimately.
//
// The fence (trap b). Messages acknowledged before the subscriber leaves
// were routed to it but may still sit in the broker's outbound queue or in
// the socket when it stops reading; counting them lost would blame the
// broker for mqplan's own DISCONNECT. The fence is a round trip that the
// broker answers behind everything it routed to the session before it, so
// that once the answer is read everything acknowledged before the fence was
// sent has been read too. A PINGREQ is not such a fence on either broker
// mqplan is tested with:
//   - mochi v2.7.9 writes PINGRESP straight to the connection
//     (server.go processPingreq → Client.WritePacket), while deliveries go
//     through the client's outbound channel and its WriteLoop
//     (server.go:1101, clients.go:197): once the socket is full and the
//     WriteLoop waits, a PINGRESP can overtake the deliveries still queued
//     in the channel (up to MaximumClientWritesPending, 2,048 in package
//     broker). A backlog that fits the socket buffers is not overtaken
//     (TestCleanFenceOrder).
//   - Mosquitto queues PINGRESP in the same ordered packet queue as the
//     deliveries it writes at once, but holds the deliveries beyond the
//     client's in-flight window (its Receive Maximum at MQTT 5, 64 for
//     mqplan's client; max_inflight_messages, 20 by default, at 3.1.1) in
//     the session's queue until PUBACKs free a slot: a PINGRESP overtakes
//     those (TestCleanFenceOrder: read after 64 of 300 at MQTT 5).
//
// The fence chosen is therefore a delivery itself: a QoS 1 PUBLISH by the
// leaving subscriber on a topic only it subscribes to, under $mqplan/ so
// that no plan filter matches it (# does not match a topic starting with
// $, [MQTT-4.7.2-1]; both brokers let a client publish there). Both brokers queue a
// client's deliveries first in, first out (mochi's outbound channel, with
// the send quota disabled by package broker's sendQuotaHook; Mosquitto's
// session queue, which releases held deliveries in order), so the fence
// comes back behind every delivery routed before it. A fence that does not
// come back before the subscriber must leave (the connect timeout) is not
// trusted, and the messages acknowledged before it are ambiguous, not
// expected.
//
// QoS 0 has no acknowledgement, so A, and with it both the start rule's
// "not expected" and the end rule's "expected", cannot be observed: a QoS 0
// publisher reaching a clean churning subscriber is to stay refused with a
// positioned plan error, as kept sessions refuse it today.

// cleanSession is what a clean subscriber observed of one session window,
// ns since the run's epoch (0: the event did not happen).
type cleanSession struct {
	// connect is when its CONNECT was written: a message acknowledged
	// before it was routed before the session existed.
	connect int64
	// suback is when its SUBACK was read: a message its publisher began
	// writing later was routed to the session.
	suback int64
	// fence is when the fence was sent, and fenced whether it came back,
	// in order behind every delivery routed before it, before the
	// session ended. Unused when stop is 0.
	fence  int64
	fenced bool
	// stop is when the session's reader stopped before its DISCONNECT;
	// 0 for a session that lasts to the end of the run, whose messages
	// the run's drain and unacknowledged accounting settle as any.
	stop int64
}

// cleanMessage is what the publisher observed of one message, ns since the
// run's epoch.
type cleanMessage struct {
	// write is when its PUBLISH was about to be written.
	write int64
	// ack is when its last acknowledgement was read, 0 if it never was.
	ack int64
}

// cleanClass is the verdict on one message for one clean subscriber.
type cleanClass uint8

const (
	cleanNotExpected cleanClass = iota // routed while the subscriber had no session
	cleanExpected                      // routed to a session that read everything routed to it
	cleanAmbiguous                     // the broker's order decides: counted apart
)

func (c cleanClass) String() string {
	switch c {
	case cleanNotExpected:
		return "not expected"
	case cleanExpected:
		return "expected"
	case cleanAmbiguous:
		return "ambiguous"
	}
	return "cleanClass(?)"
}

// classify is the verdict on message m for session s (see the rules above).
func (s *cleanSession) classify(m cleanMessage) cleanClass {
	switch {
	case s.connect == 0:
		return cleanNotExpected // the session never began
	case m.ack != 0 && m.ack < s.connect:
		return cleanNotExpected
	case s.stop != 0 && m.write > s.stop:
		return cleanNotExpected
	case s.suback == 0 || m.write <= s.suback:
		return cleanAmbiguous
	case s.stop == 0:
		return cleanExpected
	case s.fenced && m.ack != 0 && m.ack < s.fence:
		return cleanExpected
	}
	return cleanAmbiguous
}

// classifyClean is the verdict on message m for a subscriber whose session
// windows, in order, are sessions: expected when one of them expects it
// (at most one can), else ambiguous when one of them is unsure, else not
// expected. The runner is to call it only for messages near a planned
// boundary, which the compiled timetable locates; between boundaries the
// count of sessions present is constant and booked at send as today.
func classifyClean(m cleanMessage, sessions []cleanSession) cleanClass {
	verdict := cleanNotExpected
	for i := range sessions {
		switch sessions[i].classify(m) {
		case cleanExpected:
			return cleanExpected
		case cleanAmbiguous:
			verdict = cleanAmbiguous
		}
	}
	return verdict
}

// From times to sequence numbers. Keeping W and A per message would be
// work per message; the rule needs none. A publisher writes its messages
// in sequence order, and a broker acknowledges one connection's QoS 1
// messages in order in practice, so each edge of a window is a sequence
// threshold per publisher, read once per boundary from two per-publisher
// counters: written (the highest sequence whose write has begun, stored
// before the write begins) and acked (the highest sequence up to which
// every message is acknowledged). The subscriber reads, for each
// publisher that reaches it:
//
//	r  acked, just before writing CONNECT      seq ≤ r: A < R
//	w  written, just after reading SUBACK      seq > w: W > S
//	a  acked, just before sending the fence    seq ≤ a: A < F
//	x  written, just after the reader stopped  seq > x: W > X
//
// Each is read on the safe side of its event (a message acknowledged out
// of order only moves from expected or not expected to ambiguous, never
// the other way), so cleanWindow.classify never expects a message the
// time rule does not, and never refuses one it expects. Then a delivery is
// classified by comparing its sequence with its window's thresholds, O(1)
// on the stream it already looks up, and what a window expects is a
// closed form over the publisher's timetable (expected), per boundary and
// publisher, never per message.

// cleanWindow is one clean session window of a subscriber as sequence
// thresholds of one publisher (see above).
type cleanWindow struct {
	// r, w, a and x are the thresholds above; a window whose SUBACK
	// never came has w = x (all of it ambiguous).
	r, w, a, x uint32
	// fenced: the fence came back before the session ended (a is
	// trusted); last: the window lasts to the end of the run (a, x and
	// fenced unused).
	fenced, last bool
}

// classify is the verdict on the publisher's message seq (1-based) for
// the window: the time rule of cleanSession.classify, on sequences.
func (cw *cleanWindow) classify(seq uint32) cleanClass {
	switch {
	case seq <= cw.r:
		return cleanNotExpected
	case !cw.last && seq > cw.x:
		return cleanNotExpected
	case seq <= cw.w:
		return cleanAmbiguous
	case cw.last:
		return cleanExpected
	case cw.fenced && seq <= cw.a:
		return cleanExpected
	}
	return cleanAmbiguous
}

// expected is how many of the publisher's messages the window expects,
// given sent(lo, hi), how many of its sequences in (lo, hi] it sent (its
// timetable less the messages skipped while away or never written), and
// its last sequence.
func (cw *cleanWindow) expected(sent func(lo, hi uint32) int64, last uint32) int64 {
	hi := cw.a
	switch {
	case cw.last:
		hi = last
	case !cw.fenced:
		return 0
	}
	if hi <= cw.w {
		return 0
	}
	return sent(cw.w, hi)
}

// cleanAmbiguous counts the publisher's messages ambiguous for a
// subscriber with windows (in order): in (r, w] of any window, or (a, x]
// (all of (w, x] when unfenced) of any but a last one, each counted once
// where two adjacent windows' ranges overlap. No window expects a message
// another finds ambiguous (cleanSession's rule: W > S(k+1) > X(k) for
// the next, A < F(k) < R(k+1) for the one before), so the union is
// exactly the ambiguous messages.
func cleanAmbiguousCount(windows []cleanWindow, sent func(lo, hi uint32) int64) int64 {
	var n int64
	done := uint32(0) // every sequence up to done is counted
	add := func(lo, hi uint32) {
		lo = max(lo, done)
		if hi > lo {
			n += sent(lo, hi)
			done = hi
		}
	}
	for i := range windows {
		cw := &windows[i]
		add(cw.r, cw.w)
		if cw.last {
			continue
		}
		if cw.fenced {
			add(max(cw.a, cw.w), cw.x)
		} else {
			add(cw.w, cw.x)
		}
	}
	return n
}

// clean_run.go wires these into a run: where the counters are kept, read
// and booked is written there.
