package runner

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// Request/response (plans/reqresp.go). A requester's request carries, as
// correlation data, the 16-byte measurement header of the request itself
// (its publisher number, sequence and intended send time): its answer
// then tells the requester which request it answers and when that was
// meant to leave, without a lookup or any state per request. The
// responder answers from its connection's reader, at QoS 0, with its own
// publisher number in the first 4 bytes of the answer, so that the
// requester keeps one sequence stream per responder, exactly as a
// subscriber does per publisher: a second answer of the same request
// from the same responder is a duplicate, and the timeouts are the
// answers expected minus those that came in time, fixed at the end.

// reqState is a requester's or responder's state, touched only by its
// connection's reader goroutine (as receive's is).
type reqState struct {
	// answer is a responder's reused answer payload; its first 4 bytes
	// are the responder's publisher number.
	answer []byte
	// answers are a requester's streams, one per responder heard from.
	answers map[uint32]*stream
	// corr is the requester's reused correlation buffer (its publisher
	// goroutine's only).
	corr [16]byte
}

// newReqState returns the request/response state of a client, nil when
// it neither requests nor responds.
func newReqState(prog *plans.Program, pc *plans.Client) *reqState {
	g := &prog.Plan.Groups[pc.Group]
	var q *reqState
	if g.Respond != nil {
		q = &reqState{answer: make([]byte, g.Respond.Size)}
		binary.BigEndian.PutUint32(q.answer, uint32(pc.Index))
	}
	if pc.Publish != nil && pc.Publish.ResponseTopic != "" {
		if q == nil {
			q = &reqState{}
		}
		q.answers = map[uint32]*stream{}
	}
	return q
}

// request handles a delivery that carries request/response properties, on
// the connection's reader goroutine: a request at a responder is received
// as any message and then answered; an answer (correlation data and no
// response topic) at a requester is matched to its request. It does not
// allocate once a requester has heard from each of its responders.
func (r *run) request(c *client, payload []byte, retained bool, req mqttc.Request[[]byte]) {
	if len(req.ResponseTopic) > 0 {
		r.receive(c, payload, retained)
		q := c.req
		if q == nil || q.answer == nil {
			return // not a responder: a request is only a message here
		}
		pc := c.plan
		ph := r.current()
		if h, ok := decodeHeader(req.Correlation); ok && h.intended >= r.epochWall {
			ph = r.prog.PhaseOf(time.Duration(h.intended - r.epochWall - r.pubStart.Load()))
		}
		failed := c.live.Load().Respond(req, q.answer) != nil
		r.rec.recordAnswerSent(pc.Index, ph, pc.Group, failed)
		return
	}
	r.answer(c, payload, req.Correlation)
}

// answer measures one answer at a requester.
func (r *run) answer(c *client, payload, corr []byte) {
	now := r.now()
	pc := c.plan
	q := c.req
	h, ok := decodeHeader(corr)
	if q == nil || q.answers == nil || !ok || len(corr) != plans.HeaderSize || len(payload) < 4 ||
		int(h.pub) != pc.Index || h.seq == 0 || h.intended < r.epochWall {
		r.rec.recordForeign(pc.Index, r.current(), pc.Group)
		return
	}
	// The intended time must be the schedule's for that sequence: the
	// correlation data came back as sent, or the answer is corrupt. A
	// sequence the schedule has no message for is corrupt too (sentAs
	// would give it offset 0, the first message's intended time).
	if _, in := c.answerCursor().at(&pc.Publish.Schedule, int(h.seq)-1); !in {
		r.rec.recordCorrupt(pc.Index, r.current(), pc.Group)
		return
	}
	ph, intended := r.sentAsAt(pc.Publish, c.answerCursor(), mqttc.Token(h.seq))
	if intended != h.intended {
		r.rec.recordCorrupt(pc.Index, ph, pc.Group)
		return
	}
	from := binary.BigEndian.Uint32(payload)
	if int(from) >= len(r.prog.Clients) || r.prog.Plan.Groups[r.prog.Clients[from].Group].Respond == nil {
		r.rec.recordForeign(pc.Index, ph, pc.Group)
		return
	}
	// The rest of the answer is what the responder wrote: its group's
	// size, zero after its number. An answer cut, grown or changed on
	// its way is corrupt, as a changed delivery is, not an answer.
	if len(payload) != r.prog.Plan.Groups[r.prog.Clients[from].Group].Respond.Size || !zeros(payload[4:]) {
		r.rec.recordCorrupt(pc.Index, ph, pc.Group)
		return
	}
	st := q.answers[from]
	if st == nil {
		st = &stream{}
		q.answers[from] = st
	}
	rtt := time.Duration(now - (h.intended - r.epochWall))
	kind := st.observe(h.seq)
	r.rec.recordAnswer(pc.Index, ph, pc.Group, kind == deliveryDuplicate, rtt, pc.Publish.ResponseTimeout)
}

// zeros reports whether b holds only zero bytes.
func zeros(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// publishRequest sends message k of a requester, its header as
// correlation data.
func (c *client) publishRequest(ctx context.Context, buf []byte, k int) error {
	pub := c.plan.Publish
	copy(c.req.corr[:], buf[:plans.HeaderSize])
	return c.live.Load().PublishRequest(ctx, pub.Topic, pub.QoS, buf, mqttc.Token(k+1),
		mqttc.Request[string]{ResponseTopic: pub.ResponseTopic, Correlation: c.req.corr[:]})
}

// recordAnswerSent counts an answer a responder published (or failed to).
func (r *recorder) recordAnswerSent(client int, ph phase.Phase, group int, failed bool) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapAnswerSent, client: client, ph: ph, group: group, flag: failed})
	}
	m := st.cell(r.nGroups, ph, group)
	if failed {
		m.ReqResp.Failed++
	} else {
		m.ReqResp.Sent++
	}
	st.mu.Unlock()
}

// recordRequest counts a request sent and the answers it implies.
func (r *recorder) recordRequest(client int, ph phase.Phase, group int, expected int) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapRequest, client: client, ph: ph, group: group, n: int64(expected)})
	}
	m := st.cell(r.nGroups, ph, group)
	m.ReqResp.Requests++
	m.ReqResp.Expected += int64(expected)
	st.mu.Unlock()
}

// recordAnswer counts an answer at its requester, in the request's phase.
func (r *recorder) recordAnswer(client int, ph phase.Phase, group int, dup bool, rtt, timeout time.Duration) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapAnswer, client: client, ph: ph, group: group, flag: dup, d: rtt, d2: timeout})
	}
	m := st.cell(r.nGroups, ph, group)
	switch {
	case dup:
		m.ReqResp.Duplicates++
	case rtt > timeout:
		m.ReqResp.Late++
		record(&m.ReqResp.RTT, micros(rtt), &m.OverRange)
	default:
		m.ReqResp.Responses++
		record(&m.ReqResp.RTT, micros(rtt), &m.OverRange)
	}
	st.mu.Unlock()
}

// answerTotals are the answers expected so far and the first answers
// received (on time or late), over every phase and group: drain waits
// for them as for deliveries. Once per drain tick, never per message.
func (r *recorder) answerTotals() (expected, got int64) {
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		for j := range st.cells {
			q := &st.cells[j].ReqResp
			expected += q.Expected
			got += q.Responses + q.Late
		}
		st.mu.Unlock()
	}
	return expected, got
}

// answersIn reports whether every answer expected so far has come.
func (r *run) answersIn() bool {
	exp, got := r.rec.answerTotals()
	return got >= exp
}

// answerCounts are the answers responders published and the answers
// requesters received (duplicates included), for the cross-check with the
// broker's counters: answers are PUBLISH packets like any other (QoS 0,
// not retained, so Mosquitto counts them too). delivered leaves out the
// phases before warmup, as the cross-check's deliveries do.
func answerCounts(st *stats.Stats) (sent, delivered, deliveredAll int64) {
	for p := range st.Phases {
		q := &st.Phases[p].Total.ReqResp
		sent += q.Sent
		n := q.Responses + q.Late + q.Duplicates
		deliveredAll += n
		if phase.Phase(p) >= phase.Warmup {
			delivered += n
		}
	}
	return sent, delivered, deliveredAll
}
