package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/plans"
)

// TestCleanDeliverHeld scripts a clean subscriber's reader through one
// window: a delivery at most w is ambiguous; one above w whose publisher's
// ack is in is received; one whose ack is not is held, released when the
// ack comes, and settled by the fence (received up to a, ambiguous
// above); past maxCleanHeld held deliveries the run is incomplete.
func TestCleanDeliverHeld(t *testing.T) {
	pub := &client{cleanPub: &cleanPub{}}
	sub := &client{plan: &plans.Client{}, clean: &cleanSub{peers: []cleanPeer{{pub: pub}}, fence: make(chan struct{}, 1)}}
	r := &run{rec: newRecorder(1, time.Second), clients: []*client{sub, pub}}
	cs := sub.clean
	cs.leaves = 1
	p := &cs.peers[0]
	counts := func() (received, ambiguous int64) {
		for _, m := range r.rec.merge() {
			received += m.Total.Received
			ambiguous += m.Total.ChurnAmbiguousReceived
		}
		return
	}
	deliver := func(seq uint32) { d := recvRecord{kind: deliveryFirst}; r.cleanDeliver(sub, 0, seq, &d) }
	want := func(step string, received, ambiguous int64, held int) {
		t.Helper()
		gr, ga := counts()
		if gr != received || ga != ambiguous || len(cs.held) != held {
			t.Errorf("%s: received %d ambiguous %d held %d, want %d %d %d", step, gr, ga, len(cs.held), received, ambiguous, held)
		}
	}

	cs.state.Store(cleanOpening)
	deliver(1)
	want("before the SUBACK", 0, 1, 0)
	p.cur = cleanWindow{r: 0, w: 2}
	cs.state.Store(cleanOpen)
	deliver(2)
	want("at w", 0, 2, 0)
	pub.cleanPub.acked.Store(3)
	deliver(3)
	want("acknowledged", 1, 2, 0)
	deliver(4)
	deliver(5)
	deliver(6)
	want("not yet acknowledged", 1, 2, 3)
	pub.cleanPub.acked.Store(4)
	deliver(7)
	want("the ack of 4 releases it", 2, 2, 3)
	p.cur.a = 5 // read before the fence: 4 and 5 acknowledged
	cs.state.Store(cleanFencing)
	r.cleanFenceBack(sub)
	want("the fence settles the held", 3, 4, 0)
	select {
	case <-cs.fence:
	default:
		t.Error("the fence did not signal its return")
	}

	// Overflow: the run says it is incomplete rather than count wrong.
	cs.state.Store(cleanOpen)
	for i := 0; i <= maxCleanHeld; i++ {
		deliver(uint32(100 + i))
	}
	if why := r.cleanSettle(); !strings.Contains(why, "held more than") {
		t.Errorf("after %d held deliveries: incomplete %q", maxCleanHeld+1, why)
	}
}
