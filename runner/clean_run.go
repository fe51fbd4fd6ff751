package runner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/phase"
)

// Clean sessions across churn, in a run: the rule of clean_boundary.go
// wired to the clients. Where the accounting happens:
//
//   - Publisher side (cleanPub, only on a publisher that reaches a clean
//     churning subscriber): written is stored before each PUBLISH is
//     written, acked after each acknowledgement (a broker acknowledges a
//     connection's QoS 1 and QoS 2 publishes in the order it received
//     them, [MQTT-4.6.0-2] and -3, so the highest acknowledged sequence is
//     a prefix on one connection; a dropped connection's leftovers lower
//     it through abandoned), and the sequences it skipped (away, or a
//     failed write) go to a short log. Two atomic stores per message; its
//     sends book no expected delivery for the clean subscribers
//     (client.expected and expectedBy leave them out).
//   - Subscriber side (cleanSub): at its four events the subscriber reads,
//     for each publisher that reaches it (the list made once, at start),
//     r before CONNECT, w after SUBACK, a before the fence, x after its
//     reader stopped (cleanWindow). Its reader classifies each first
//     delivery in O(1) from its sequence, on the stream it already looks
//     up: read before w is known, or at most w, it is ambiguous; in the
//     window's last session (no planned leave left) it is received; else
//     it is received once its publisher's acknowledgement is in (seq ≤
//     acked, so acknowledged before the fence to come), and held until
//     then (a bounded list, released in order as acknowledgements come,
//     and settled by the fence: seq ≤ a received, above ambiguous).
//     Overflow makes the run INCOMPLETE.
//   - Booking: a window's expected deliveries (cleanWindow.expected: the
//     sequences in (w, a] the publisher wrote) are booked when it closes,
//     by phase, stage and due slot of each message, walking the schedule
//     once (amortised O(1) a message, as at send, off the hot path); the
//     windows still open when publishing ends are booked then (to the
//     publisher's last written sequence), before drain compares expected
//     with received, so its early stop stays exact; the ambiguous
//     messages (cleanAmbiguousCount's union) are booked when the run is
//     over.
//   - The fence: a QoS 1 PUBLISH of the leaving subscriber to
//     $mqplan/fence/<client id>, to which it subscribes with its plan's
//     filters (see clean_boundary.go for why it is not PINGREQ). One
//     more PUBLISH in and out of the broker per leave, which the broker
//     counter checks count (run.fences).

// fenceToken marks the fence's PUBLISH in the subscriber's in-flight
// window: its acknowledgement is not one of the plan's.
const fenceToken = mqttc.Token(math.MaxUint64)

// fencePrefix starts a fence's payload (the client id follows): a
// delivery that starts so on a clean subscriber is its fence coming back.
const fencePrefix = "\x00mqplan-fence\x00"

// maxCleanHeld bounds a clean subscriber's held deliveries, and
// maxCleanSkips a publisher's log of skipped sequences: beyond, the run
// is INCOMPLETE rather than wrong.
const (
	maxCleanHeld  = 4096
	maxCleanSkips = 4096
)

// States of a clean subscriber's session window (cleanSub.state).
const (
	cleanAway    uint32 = iota // no session
	cleanOpening               // connecting and subscribing: w not known
	cleanOpen                  // w known
	cleanFencing               // a known, the fence sent
)

// seqRange is the sequences (lo, hi] of a publisher.
type seqRange struct{ lo, hi uint32 }

// cleanPub is what a publisher shows the clean subscribers it reaches.
type cleanPub struct {
	written   atomic.Uint32 // highest sequence whose write began
	acked     atomic.Uint32 // highest sequence acknowledged
	abandoned atomic.Uint32 // lowest sequence left unacknowledged by a dropped connection, 0 if none
	mu        sync.Mutex
	skips     []seqRange // never written, in order (guarded by mu)
	overflow  bool
	// subs are the clean subscribers it reaches, with its index in
	// each one's peers.
	subs []cleanRef
}

type cleanRef struct {
	c    *client
	peer int
}

// ackedPrefix is a sequence up to which every message written is
// acknowledged.
func (p *cleanPub) ackedPrefix() uint32 {
	a := p.acked.Load()
	if ab := p.abandoned.Load(); ab != 0 && ab-1 < a {
		a = ab - 1
	}
	return a
}

// skip logs (lo, hi] as never written.
func (p *cleanPub) skip(lo, hi uint32) {
	if hi <= lo {
		return
	}
	p.mu.Lock()
	if n := len(p.skips); n > 0 && p.skips[n-1].hi >= lo {
		p.skips[n-1].hi = max(p.skips[n-1].hi, hi)
	} else if n < maxCleanSkips {
		p.skips = append(p.skips, seqRange{lo, hi})
	} else {
		p.overflow = true
	}
	p.mu.Unlock()
}

// cleanPeer is one publisher as a clean subscriber sees it.
type cleanPeer struct {
	pub *client
	cur cleanWindow // the current window
	// booked is the sequence up to which the ambiguous messages of the
	// windows closed are booked: two adjacent windows' ranges may
	// overlap, and a message counts once (cleanAmbiguousCount).
	booked uint32
	// fin is the window open when publishing ended (fin.last), if any:
	// cur as booked to the publisher's last written sequence.
	fin cleanWindow
}

// heldDelivery is a first delivery waiting for its publisher's
// acknowledgement or the fence.
type heldDelivery struct {
	peer int32
	seq  uint32
	rec  recvRecord
}

// cleanSub is a clean churning subscriber's state.
type cleanSub struct {
	peers []cleanPeer
	slot  map[uint32]int32 // publisher index → peers index
	state atomic.Uint32
	// final: the current window lasts to the end of the run.
	final atomic.Bool
	// leaves is how many planned leaves the client has, window how many
	// it made (its churn goroutine only).
	leaves, window int
	fence          chan struct{}
	fenceTopic     string
	fencePayload   []byte
	mu             sync.Mutex // guards held
	held           []heldDelivery
	nheld          atomic.Int32
}

// setupClean gives every subscriber of a clean churning group its peers
// and every publisher that reaches one its counters, and takes those
// subscribers out of the publishers' expected deliveries. It runs once,
// before connecting: O(clean subscribers × publishers).
func (r *run) setupClean() {
	for _, c := range r.clients {
		if p := c.plan.Publish; p != nil {
			c.expected, c.expectedBy = int64(p.Expected), p.ExpectedByGroup
		}
	}
	for _, c := range r.clients {
		s, j := r.prog.ChurnOf(c.plan)
		if s == nil || len(c.plan.Subscriptions) == 0 || !r.prog.Plan.Groups[c.plan.Group].CleanStart {
			continue
		}
		cs := &cleanSub{slot: map[uint32]int32{}, leaves: s.Disconnects(j), fence: make(chan struct{}, 1),
			fenceTopic: "$mqplan/fence/" + c.plan.ID, fencePayload: []byte(fencePrefix + c.plan.ID)}
		cs.final.Store(cs.leaves == 0)
		cs.state.Store(cleanOpening)
		for _, p := range r.clients {
			if p.plan.Publish == nil || c.plan.Group >= len(p.plan.Publish.ExpectedByGroup) || p.plan.Publish.ExpectedByGroup[c.plan.Group] == 0 {
				continue // no client of c's group hears it
			}
			if own, shared := r.matches(c, uint32(p.plan.Index)); own+shared == 0 {
				continue
			}
			if p.cleanPub == nil {
				p.cleanPub = &cleanPub{}
				p.expectedBy = append([]int(nil), p.expectedBy...)
			}
			p.expected--
			p.expectedBy[c.plan.Group]--
			cs.slot[uint32(p.plan.Index)] = int32(len(cs.peers))
			p.cleanPub.subs = append(p.cleanPub.subs, cleanRef{c, len(cs.peers)})
			cs.peers = append(cs.peers, cleanPeer{pub: p})
		}
		c.clean = cs
	}
}

// cleanOpened is called once the client subscribed (first or again): the
// window's w is read and the reader told.
func (r *run) cleanOpened(c *client, subscribed bool) {
	cs := c.clean
	for i := range cs.peers {
		p := &cs.peers[i]
		if subscribed {
			p.cur.w = p.pub.cleanPub.written.Load()
		} else {
			p.cur.w = math.MaxUint32 // no SUBACK: all of it ambiguous
		}
	}
	cs.mu.Lock()
	cs.final.Store(cs.final.Load() || cs.window >= cs.leaves)
	cs.mu.Unlock()
	cs.state.Store(cleanOpen)
}

// cleanReturn starts a clean subscriber's next session: r read before its
// CONNECT, a new subscription, w after the SUBACK.
func (r *run) cleanReturn(ctx context.Context, c *client) bool {
	cs := c.clean
	for i := range cs.peers {
		p := &cs.peers[i]
		p.cur = cleanWindow{r: p.pub.cleanPub.ackedPrefix()}
	}
	cs.window++
	cs.state.Store(cleanOpening)
	if !r.dial(ctx, c) {
		cs.state.Store(cleanAway)
		return false
	}
	r.cleanOpened(c, r.subscribe(ctx, c))
	return true
}

// cleanFence sends the fence of a leaving clean subscriber (a read first)
// and waits, at most the connect timeout, for it to come back; it
// reports whether it did.
func (r *run) cleanFence(c *client) bool {
	cs := c.clean
	mc := c.live.Load()
	if mc == nil || cs.state.Load() != cleanOpen {
		return false
	}
	for i := range cs.peers {
		p := &cs.peers[i]
		p.cur.a = p.pub.cleanPub.ackedPrefix()
	}
	select { // a fence from an earlier session that came back too late
	case <-cs.fence:
	default:
	}
	cs.state.Store(cleanFencing)
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	if err := mc.Publish(ctx, cs.fenceTopic, 1, false, cs.fencePayload, fenceToken); err != nil {
		return false
	}
	r.fences.Add(1)
	select {
	case <-cs.fence:
		return true
	case <-ctx.Done():
		if r.ctx.Err() == nil {
			// The broker acknowledged a QoS 1 PUBLISH to a topic this
			// client subscribes to and did not deliver it: a fault of its
			// own, and the session's last moments become ambiguous
			// because of it, so it must not pass as a notice alone (a
			// broker that delivered nothing to clean subscribers would
			// otherwise see every window ambiguous and lost == 0).
			r.fail(c.plan, fmt.Errorf("%s: the broker acknowledged the client's fence (QoS 1 to %s) but did not deliver it back within broker.connect_timeout (%s)", c.plan.ID, cs.fenceTopic, r.timeout))
		}
	case <-mc.Done():
	}
	return false
}

// cleanClose ends a clean subscriber's window once its reader stopped: x
// is read, held deliveries left without a fence are ambiguous, and the
// window's expected deliveries are booked.
func (r *run) cleanClose(c *client, fenced bool) {
	cs := c.clean
	if cs.state.Swap(cleanAway) == cleanAway {
		return
	}
	cs.mu.Lock()
	for i := range cs.held {
		r.rec.recordAmbiguousReceived(c.plan.Index, &cs.held[i].rec)
	}
	cs.held = cs.held[:0]
	cs.nheld.Store(0)
	cs.mu.Unlock()
	if !fenced {
		r.note(fmt.Sprintf("group %s: a clean subscriber's fence did not come back before it left (broker.connect_timeout): what was published in its session's last moments is counted ambiguous, not expected", r.prog.Groups[c.plan.Group].Name))
	}
	for i := range cs.peers {
		p := &cs.peers[i]
		p.cur.x = p.pub.cleanPub.written.Load()
		p.cur.w = min(p.cur.w, p.cur.x)
		p.cur.fenced = fenced
		p.cur.expected(func(lo, hi uint32) int64 { return r.bookClean(c, p, lo, hi, false) }, 0)
		r.bookAmbiguous(c, p, p.cur)
	}
}

// bookAmbiguous books window cw's ambiguous messages of p's publisher for
// c, less those an earlier window booked: windows close in order, so the
// union is cleanAmbiguousCount's, without keeping the windows.
func (r *run) bookAmbiguous(c *client, p *cleanPeer, cw cleanWindow) {
	cleanAmbiguousCount([]cleanWindow{cw}, func(lo, hi uint32) int64 {
		lo = max(lo, p.booked)
		if hi <= lo {
			return 0
		}
		p.booked = hi
		return r.bookClean(c, p, lo, hi, true)
	})
}

// cleanPublishingOver books, once every publisher has returned and every
// client's churn is done, the windows still open: to the end of the run,
// up to each publisher's last written sequence; their held deliveries
// are received. It runs before drain.
func (r *run) cleanPublishingOver() {
	for _, c := range r.clients {
		cs := c.clean
		if cs == nil {
			continue
		}
		cs.mu.Lock()
		cs.final.Store(true)
		open := cs.state.Load() != cleanAway
		if open {
			for i := range cs.held {
				r.rec.recordReceive(c.plan.Index, &cs.held[i].rec)
			}
			cs.held = cs.held[:0]
			cs.nheld.Store(0)
		}
		cs.mu.Unlock()
		if !open {
			continue
		}
		for i := range cs.peers {
			p := &cs.peers[i]
			last := p.pub.cleanPub.written.Load()
			p.fin = p.cur // the reader may still read cur
			p.fin.last = true
			p.fin.w = min(p.fin.w, last)
			p.fin.expected(func(lo, hi uint32) int64 { return r.bookClean(c, p, lo, hi, false) }, last)
			r.bookAmbiguous(c, p, p.fin)
		}
	}
}

// cleanSettle says, when the run is over, whether a bound made the clean
// sessions' accounting incomplete.
func (r *run) cleanSettle() string {
	why := ""
	for _, c := range r.clients {
		cs := c.clean
		if cs == nil {
			continue
		}
		for i := range cs.peers {
			p := &cs.peers[i]
			p.pub.cleanPub.mu.Lock()
			if p.pub.cleanPub.overflow {
				why = fmt.Sprintf("publisher %s skipped its schedule more than %d times: the clean sessions' accounting lost track", p.pub.plan.ID, maxCleanSkips)
			}
			p.pub.cleanPub.mu.Unlock()
		}
	}
	if r.cleanOverflow.Load() {
		why = fmt.Sprintf("a clean subscriber held more than %d deliveries awaiting their publishers' acknowledgements: the clean sessions' accounting lost track", maxCleanHeld)
	}
	return why
}

// bookClean books the messages (lo, hi] of p's publisher that it wrote
// as expected by (or ambiguous for) clean subscriber c, each in its
// phase, stage and due slot, and returns how many. It walks the
// schedule's offsets once: amortised O(1) a message, as booking at send.
func (r *run) bookClean(c *client, p *cleanPeer, lo, hi uint32, ambiguous bool) int64 {
	if hi <= lo {
		return 0
	}
	pub := p.pub
	cp := pub.cleanPub
	// The publisher appends to its log rarely (a skip), so the log is
	// read under its lock, from the first range that can matter.
	cp.mu.Lock()
	defer cp.mu.Unlock()
	skips := cp.skips
	cur := pub.plan.Publish.Schedule.Cursor()
	start := r.pubStart.Load()
	var n, run int64
	ph, stage, b := phase.Phase(0), -2, int64(-1)
	flush := func() {
		if run > 0 {
			r.rec.recordClean(c.plan.Index, pub.plan.Group, c.plan.Group, ph, stage, b, run, ambiguous)
			n += run
			run = 0
		}
	}
	si := sort.Search(len(skips), func(i int) bool { return skips[i].hi > lo })
	for s := lo + 1; s <= hi && s != 0; s++ {
		for si < len(skips) && skips[si].hi < s {
			si++
		}
		if si < len(skips) && s > skips[si].lo {
			s = skips[si].hi // the loop's s++ moves past the skipped range
			continue
		}
		off, ok := cur.At(int(s - 1))
		if !ok {
			break
		}
		p2, st2, b2 := r.prog.PhaseOf(off), r.prog.StageOf(off), r.rec.bucket(start+int64(off))
		if p2 != ph || st2 != stage || b2 != b {
			flush()
			ph, stage, b = p2, st2, b2
		}
		run++
	}
	flush()
	return n
}

// cleanDeliver decides a clean subscriber's first delivery of seq from
// the publisher of its stream (peer): received, held or ambiguous. It
// runs on the reader goroutine.
func (r *run) cleanDeliver(c *client, peer int32, seq uint32, d *recvRecord) {
	cs := c.clean
	p := &cs.peers[peer]
	switch cs.state.Load() {
	case cleanOpen:
		if seq <= p.cur.w {
			break
		}
		if cs.nheld.Load() > 0 {
			r.cleanRelease(c)
		}
		if cs.final.Load() || seq <= p.pub.cleanPub.ackedPrefix() {
			r.rec.recordReceive(c.plan.Index, d)
			return
		}
		cs.mu.Lock()
		switch {
		case cs.final.Load():
			r.rec.recordReceive(c.plan.Index, d)
		case len(cs.held) < maxCleanHeld:
			cs.held = append(cs.held, heldDelivery{peer: peer, seq: seq, rec: *d})
			cs.nheld.Add(1)
		default:
			r.cleanOverflow.Store(true)
			r.rec.recordAmbiguousReceived(c.plan.Index, d)
		}
		cs.mu.Unlock()
		return
	case cleanFencing:
		if seq > p.cur.w && seq <= p.cur.a {
			r.rec.recordReceive(c.plan.Index, d)
			return
		}
	}
	r.rec.recordAmbiguousReceived(c.plan.Index, d)
}

// cleanRelease receives, in order, the held deliveries whose
// publishers' acknowledgements are now in.
func (r *run) cleanRelease(c *client) {
	cs := c.clean
	cs.mu.Lock()
	k := 0
	for k < len(cs.held) {
		h := &cs.held[k]
		if h.seq > cs.peers[h.peer].pub.cleanPub.ackedPrefix() {
			break
		}
		r.rec.recordReceive(c.plan.Index, &h.rec)
		k++
	}
	if k > 0 {
		n := copy(cs.held, cs.held[k:])
		cs.held = cs.held[:n]
		cs.nheld.Store(int32(n))
	}
	cs.mu.Unlock()
}

// cleanFenceBack is the reader's side of the fence: everything the broker
// routed to the session before it has been read, so the held deliveries
// are settled against a.
func (r *run) cleanFenceBack(c *client) {
	cs := c.clean
	if cs.state.Load() != cleanFencing {
		return
	}
	cs.mu.Lock()
	for i := range cs.held {
		h := &cs.held[i]
		if h.seq <= cs.peers[h.peer].cur.a {
			r.rec.recordReceive(c.plan.Index, &h.rec)
		} else {
			r.rec.recordAmbiguousReceived(c.plan.Index, &h.rec)
		}
	}
	cs.held = cs.held[:0]
	cs.nheld.Store(0)
	cs.mu.Unlock()
	r.fencesBack.Add(1)
	select {
	case cs.fence <- struct{}{}:
	default:
	}
}

// isFence reports whether a clean subscriber's delivery is its fence.
func (cs *cleanSub) isFence(payload []byte) bool {
	return len(payload) == len(cs.fencePayload) && string(payload) == string(cs.fencePayload)
}

// cleanLostUnacked counts, for an unacknowledged message tok of publisher
// c, the clean subscribers whose last window expected it and did not get
// it: lost before acknowledgement, not the broker's loss.
func (r *run) cleanLostUnacked(c *client, tok mqttc.Token, ph phase.Phase, stage int) {
	if c.cleanPub == nil {
		return
	}
	for _, ref := range c.cleanPub.subs {
		cs := ref.c.clean
		p := &cs.peers[ref.peer]
		if !p.fin.last || uint64(tok) <= uint64(p.fin.w) {
			continue
		}
		if st := ref.c.streams[uint32(c.plan.Index)]; st != nil && st.has(uint32(tok)) {
			continue
		}
		r.rec.recordLostUnacked(ph, c.plan.Group, ref.c.plan.Group, 1)
		r.rec.recordStageLostUnacked(stage, 1)
	}
}
