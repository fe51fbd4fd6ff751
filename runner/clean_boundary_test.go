package runner

import (
	"math/rand/v2"
	"testing"
)

// TestCleanClassifyBoundaries scripts the order of events at each edge of
// a clean session window and checks the verdict on one message: session
// 0 connects at 100, reads its SUBACK at 200, sends its fence at 800 and
// stops reading at 900; session 1 connects at 1000, reads its SUBACK at
// 1100 and lasts to the end of the run.
func TestCleanClassifyBoundaries(t *testing.T) {
	fenced := cleanSession{connect: 100, suback: 200, fence: 800, fenced: true, stop: 900}
	unfenced := fenced
	unfenced.fenced = false
	last := cleanSession{connect: 1000, suback: 1100}
	never := cleanSession{}
	cases := []struct {
		name string
		s    cleanSession
		m    cleanMessage
		want cleanClass
	}{
		// Start of the window.
		{"acked before CONNECT", fenced, cleanMessage{write: 50, ack: 99}, cleanNotExpected},
		{"acked at CONNECT", fenced, cleanMessage{write: 50, ack: 100}, cleanAmbiguous},
		{"written before CONNECT, acked after it", fenced, cleanMessage{write: 50, ack: 150}, cleanAmbiguous},
		{"written before CONNECT, never acked", fenced, cleanMessage{write: 50}, cleanAmbiguous},
		{"written between CONNECT and SUBACK", fenced, cleanMessage{write: 150, ack: 400}, cleanAmbiguous},
		{"written at SUBACK", fenced, cleanMessage{write: 200, ack: 400}, cleanAmbiguous},
		{"written after SUBACK, acked before the fence", fenced, cleanMessage{write: 201, ack: 400}, cleanExpected},
		{"no SUBACK read", cleanSession{connect: 100, stop: 900}, cleanMessage{write: 300, ack: 400}, cleanAmbiguous},
		{"session never began", never, cleanMessage{write: 300, ack: 400}, cleanNotExpected},
		// End of the window.
		{"acked just before the fence", fenced, cleanMessage{write: 700, ack: 799}, cleanExpected},
		{"acked at the fence", fenced, cleanMessage{write: 700, ack: 800}, cleanAmbiguous},
		{"acked after the fence", fenced, cleanMessage{write: 700, ack: 850}, cleanAmbiguous},
		{"acked after the reader stopped", fenced, cleanMessage{write: 850, ack: 950}, cleanAmbiguous},
		{"written at the stop", fenced, cleanMessage{write: 900, ack: 950}, cleanAmbiguous},
		{"written after the reader stopped", fenced, cleanMessage{write: 901, ack: 950}, cleanNotExpected},
		{"never acked, written in the window", fenced, cleanMessage{write: 500}, cleanAmbiguous},
		{"fence not back: acked long before it", unfenced, cleanMessage{write: 300, ack: 310}, cleanAmbiguous},
		// A window that lasts to the end of the run: the drain settles it.
		{"last window, acked", last, cleanMessage{write: 1200, ack: 1300}, cleanExpected},
		{"last window, never acked", last, cleanMessage{write: 1200}, cleanExpected},
		{"last window, written before its SUBACK", last, cleanMessage{write: 1050, ack: 1300}, cleanAmbiguous},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.classify(tc.m); got != tc.want {
				t.Errorf("classify(%+v) on %+v = %v, want %v", tc.m, tc.s, got, tc.want)
			}
		})
	}
}

// TestCleanClassifyAcross checks the verdict over a subscriber's windows,
// away 100 between them: expected in the one window that expects it,
// ambiguous when a window is unsure and none expects it, not expected in
// between.
func TestCleanClassifyAcross(t *testing.T) {
	windows := []cleanSession{
		{connect: 100, suback: 200, fence: 800, fenced: true, stop: 900},
		{connect: 1000, suback: 1100},
	}
	cases := []struct {
		name string
		m    cleanMessage
		want cleanClass
	}{
		{"inside the first", cleanMessage{write: 300, ack: 310}, cleanExpected},
		{"while away", cleanMessage{write: 920, ack: 960}, cleanNotExpected},
		{"across the leave", cleanMessage{write: 850, ack: 950}, cleanAmbiguous},
		{"across the return", cleanMessage{write: 950, ack: 1050}, cleanAmbiguous},
		{"inside the second", cleanMessage{write: 1200, ack: 1210}, cleanExpected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyClean(tc.m, windows); got != tc.want {
				t.Errorf("classifyClean(%+v) = %v, want %v", tc.m, got, tc.want)
			}
		})
	}
}

// TestCleanClassifyOneExpecter checks, over random event orders that a
// real run can produce (each window's connect < suback < fence < stop,
// each window after the last one's stop, a message's ack after its
// write), that no message is expected by two windows of one subscriber:
// expected is booked at most once per message and subscriber.
func TestCleanClassifyOneExpecter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 2000; trial++ {
		var windows []cleanSession
		at := int64(0)
		step := func() int64 { at += 1 + rng.Int64N(20); return at }
		n := 1 + rng.IntN(4)
		for i := 0; i < n; i++ {
			s := cleanSession{connect: step(), suback: step(), fence: step(), fenced: rng.IntN(4) > 0, stop: step()}
			if i == n-1 && rng.IntN(2) == 0 {
				s.fence, s.fenced, s.stop = 0, false, 0
			}
			windows = append(windows, s)
		}
		for w := int64(0); w <= at+5; w++ {
			for _, ack := range []int64{0, w + 1 + rng.Int64N(30)} {
				m := cleanMessage{write: w, ack: ack}
				expecters := 0
				for i := range windows {
					if windows[i].classify(m) == cleanExpected {
						expecters++
					}
				}
				if expecters > 1 {
					t.Fatalf("message %+v expected by %d windows of %+v", m, expecters, windows)
				}
			}
		}
	}
}

// cleanScript is a random timeline that a run can produce: one publisher
// writing its messages in order (write[i] for sequence i+1), their last
// acknowledgements (0: never), and a subscriber's session windows.
type cleanScript struct {
	write, ack []int64
	sessions   []cleanSession
}

// newCleanScript draws a timeline; inOrder: every message acknowledged,
// in order.
func newCleanScript(rng *rand.Rand, inOrder bool) cleanScript {
	var sc cleanScript
	n := 20 + rng.IntN(60)
	at, lastAck := int64(0), int64(0)
	for i := 0; i < n; i++ {
		at += 1 + rng.Int64N(4)
		sc.write = append(sc.write, at)
		a := at + 1 + rng.Int64N(12)
		switch {
		case inOrder:
			a = max(a, lastAck+1)
			lastAck = a
		case rng.IntN(10) == 0:
			a = 0
		}
		sc.ack = append(sc.ack, a)
	}
	t := int64(rng.IntN(10))
	step := func() int64 { t += 1 + rng.Int64N(int64(n)); return t }
	for len(sc.sessions) < 1+rng.IntN(4) {
		s := cleanSession{connect: step(), suback: step(), fence: step(), fenced: rng.IntN(4) > 0, stop: step()}
		sc.sessions = append(sc.sessions, s)
	}
	if rng.IntN(2) == 0 {
		l := &sc.sessions[len(sc.sessions)-1]
		l.fence, l.fenced, l.stop = 0, false, 0
	}
	return sc
}

// written is the publisher's written counter at t: the highest sequence
// whose write began at or before t.
func (sc *cleanScript) written(t int64) uint32 {
	n := uint32(0)
	for i, w := range sc.write {
		if w <= t {
			n = uint32(i + 1)
		}
	}
	return n
}

// acked is the publisher's acked counter just before t: the highest
// sequence up to which every message was acknowledged before t.
func (sc *cleanScript) acked(t int64) uint32 {
	for i, a := range sc.ack {
		if a == 0 || a >= t {
			return uint32(i)
		}
	}
	return uint32(len(sc.ack))
}

// windows reads the thresholds as the runner is to: each counter on the
// safe side of its event.
func (sc *cleanScript) windows() []cleanWindow {
	out := make([]cleanWindow, len(sc.sessions))
	for i, s := range sc.sessions {
		cw := cleanWindow{r: sc.acked(s.connect), w: sc.written(s.suback)}
		if s.stop == 0 {
			cw.last = true
		} else {
			cw.a, cw.x, cw.fenced = sc.acked(s.fence), sc.written(s.stop), s.fenced
		}
		out[i] = cw
	}
	return out
}

// TestCleanWindowMatchesTimeRule checks the reduction of the time rule to
// sequence thresholds over random timelines: the same verdict for every
// message and window when every message is acknowledged in order, and
// never a verdict the time rule contradicts otherwise (acknowledgements
// out of order or missing only make a message ambiguous).
func TestCleanWindowMatchesTimeRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 3000; trial++ {
		inOrder := trial%2 == 0
		sc := newCleanScript(rng, inOrder)
		windows := sc.windows()
		for k := range sc.sessions {
			for i := range sc.write {
				byTime := sc.sessions[k].classify(cleanMessage{write: sc.write[i], ack: sc.ack[i]})
				bySeq := windows[k].classify(uint32(i + 1))
				if inOrder && byTime != bySeq || bySeq != cleanAmbiguous && bySeq != byTime {
					t.Fatalf("trial %d (in order %v), message %d (write %d, ack %d), window %+v (%+v): by time %v, by sequence %v",
						trial, inOrder, i+1, sc.write[i], sc.ack[i], sc.sessions[k], windows[k], byTime, bySeq)
				}
			}
		}
	}
}

// TestCleanWindowCounts checks expected and cleanAmbiguousCount against
// the verdicts message by message, with some sequences never sent (skipped
// while the publisher was away, or never written).
func TestCleanWindowCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 3000; trial++ {
		sc := newCleanScript(rng, trial%2 == 0)
		windows := sc.windows()
		last := uint32(len(sc.write))
		unsent := map[uint32]bool{}
		for seq := uint32(1); seq <= last; seq++ {
			if rng.IntN(8) == 0 {
				unsent[seq] = true
			}
		}
		sent := func(lo, hi uint32) int64 {
			n := int64(0)
			for seq := lo + 1; seq <= hi && seq <= last; seq++ {
				if !unsent[seq] {
					n++
				}
			}
			return n
		}
		wantExpected := make([]int64, len(windows))
		var wantAmbiguous int64
		for seq := uint32(1); seq <= last; seq++ {
			if unsent[seq] {
				continue
			}
			expecters, ambiguous := 0, false
			for k := range windows {
				switch windows[k].classify(seq) {
				case cleanExpected:
					wantExpected[k]++
					expecters++
				case cleanAmbiguous:
					ambiguous = true
				}
			}
			if expecters > 1 || expecters == 1 && ambiguous {
				t.Fatalf("trial %d: message %d expected by %d windows, ambiguous in one: %v (%+v)", trial, seq, expecters, ambiguous, windows)
			}
			if ambiguous {
				wantAmbiguous++
			}
		}
		for k := range windows {
			if got := windows[k].expected(sent, last); got != wantExpected[k] {
				t.Fatalf("trial %d: window %d %+v expects %d, counted one by one %d", trial, k, windows[k], got, wantExpected[k])
			}
		}
		if got := cleanAmbiguousCount(windows, sent); got != wantAmbiguous {
			t.Fatalf("trial %d: %d ambiguous, counted one by one %d (%+v)", trial, got, wantAmbiguous, windows)
		}
	}
}
