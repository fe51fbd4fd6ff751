package broker

import (
	"fmt"
	"github.com/mqplan/mqplan/internal/wait"
	"testing"
	"time"

	"github.com/mqplan/mqplan/stats"
)

// TestBrokerFaults checks that each fault hits exactly the deliveries it
// should, that the subscriber sees exactly that, and that the counters of
// the hook and of mochi agree with it.
func TestBrokerFaults(t *testing.T) {
	multiples := func(every, upTo int, except ...int) map[int]bool {
		m := map[int]bool{}
		for i := every; i <= upTo; i += every {
			m[i] = true
		}
		for _, e := range except {
			for i := e; i <= upTo; i += e {
				delete(m, i)
			}
		}
		return m
	}
	cases := []struct {
		name    string
		faults  Faults
		qos     byte
		msgs    int
		missing map[int]bool // message numbers never received
		twice   map[int]bool // message numbers received twice
	}{
		{"drop 1 in 100 qos0", Faults{DropEvery: 100}, 0, 1000, multiples(100, 1000), nil},
		{"drop 1 in 100 qos1", Faults{DropEvery: 100}, 1, 1000, multiples(100, 1000), nil},
		{"drop 1 in 100 qos2", Faults{DropEvery: 100}, 2, 1000, multiples(100, 1000), nil},
		{"duplicate 1 in 50 qos0", Faults{DuplicateEvery: 50}, 0, 1000, nil, multiples(50, 1000)},
		{"duplicate 1 in 50 qos1", Faults{DuplicateEvery: 50}, 1, 1000, nil, multiples(50, 1000)},
		{"duplicate 1 in 50 qos2", Faults{DuplicateEvery: 50}, 2, 1000, nil, multiples(50, 1000)},
		// Dropping wins over duplicating: 20, 40, ... are dropped, not doubled.
		{"drop 1 in 10 and duplicate 1 in 4", Faults{DropEvery: 10, DuplicateEvery: 4}, 1, 100,
			multiples(10, 100), multiples(4, 100, 20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := btStart(t, Options{Faults: tc.faults}, true)
			inbox := newBTInbox()
			sub := btConnect(t, b, "sub", 64, inbox)
			btSubscribe(t, sub, "f/x", tc.qos)
			pub := btConnect(t, b, "pub", 64, nil)

			// Message numbers equal delivery numbers: one subscriber, one
			// publisher publishing in order. A final sentinel (never
			// faulted: msgs+1 is not a multiple of any period here) proves
			// by its arrival that everything before it has arrived.
			sentinel := tc.msgs + 1
			for i := 1; i <= sentinel; i++ {
				btPublish(t, pub, "f/x", tc.qos, btNum(i, time.Now()))
			}
			inbox.waitUntil(t, "the sentinel", func(got [][]byte) bool {
				return len(got) > 0 && btNumOf(got[len(got)-1]) == sentinel
			})

			got, _ := inbox.snapshot()
			seen := map[int]int{}
			for _, p := range got {
				seen[btNumOf(p)]++
			}
			for i := 1; i <= sentinel; i++ {
				want := 1
				if tc.missing[i] {
					want = 0
				} else if tc.twice[i] {
					want = 2
				}
				if seen[i] != want {
					t.Errorf("message %d received %d times, want %d", i, seen[i], want)
				}
			}

			wantFC := FaultCounts{
				Published:  int64(sentinel),
				Deliveries: int64(sentinel),
				Dropped:    int64(len(tc.missing)),
				Duplicated: int64(len(tc.twice)),
			}
			if fc := b.FaultCounts(); fc != wantFC {
				t.Errorf("FaultCounts() = %+v, want %+v", fc, wantFC)
			}
			if int64(len(got)) != wantFC.Deliveries-wantFC.Dropped+wantFC.Duplicated {
				t.Errorf("received %d, want Deliveries - Dropped + Duplicated = %d",
					len(got), wantFC.Deliveries-wantFC.Dropped+wantFC.Duplicated)
			}

			// mochi counts only what was really written, and nothing is
			// left inflight: dropped QoS 1/2 deliveries do not wedge.
			wantSent := int64(len(got))
			wait.Until(t, "MessagesSent", func() bool { return b.Stats().MessagesSent == wantSent })
			wait.Until(t, "inflight to drain", func() bool { return btInflight(b) == 0 })
			want := stats.Broker{MessagesReceived: int64(sentinel), MessagesSent: wantSent, ClientsMaximum: 2}
			if s := b.Stats(); s != want {
				t.Errorf("Stats() = %+v, want %+v", s, want)
			}
		})
	}
}

// TestBrokerFaultDropLast: when the last delivery of a burst is dropped,
// the deliveries before it still arrive. mochi coalesces writes while a
// client's queue is non-empty and flushes at the next successful write;
// a dropped delivery is a failed write, so without unbuffered writes (see
// start) the tail of the burst would sit in mochi's buffer.
func TestBrokerFaultDropLast(t *testing.T) {
	const n = 2000
	b := btStart(t, Options{Faults: Faults{DropEvery: 2}}, true)
	inbox := newBTInbox()
	sub := btConnect(t, b, "sub", 64, inbox)
	btSubscribe(t, sub, "s/x", 0)
	pub := btConnect(t, b, "pub", 64, nil)
	for i := 1; i <= n; i++ {
		btPublish(t, pub, "s/x", 0, btNum(i, time.Now()))
	}
	inbox.waitN(t, n/2)
	got, _ := inbox.snapshot()
	for i, p := range got {
		if btNumOf(p) != 2*i+1 {
			t.Fatalf("message %d is number %d, want %d", i+1, btNumOf(p), 2*i+1)
		}
	}
	if fc := b.FaultCounts(); fc.Deliveries != n || fc.Dropped != n/2 {
		t.Errorf("FaultCounts() = %+v", fc)
	}
}

// TestBrokerFaultDelay checks that Delay holds each delivery at least that
// long, keeps order, and does not add up across a burst.
func TestBrokerFaultDelay(t *testing.T) {
	const (
		delay = 20 * time.Millisecond
		n     = 50
	)
	for _, qos := range []byte{0, 1} {
		t.Run(fmt.Sprintf("qos%d", qos), func(t *testing.T) {
			b := btStart(t, Options{Faults: Faults{Delay: delay}}, true)
			inbox := newBTInbox()
			sub := btConnect(t, b, "sub", 64, inbox)
			btSubscribe(t, sub, "d/x", qos)
			pub := btConnect(t, b, "pub", 64, nil)

			start := time.Now()
			for i := 1; i <= n; i++ {
				btPublish(t, pub, "d/x", qos, btNum(i, time.Now()))
			}
			inbox.waitN(t, n)
			got, at := inbox.snapshot()
			span := at[len(at)-1].Sub(start)
			var minLat time.Duration = -1
			for i, p := range got {
				if btNumOf(p) != i+1 {
					t.Fatalf("message %d is number %d: want in order", i+1, btNumOf(p))
				}
				lat := at[i].Sub(btSentOf(p))
				if minLat < 0 || lat < minLat {
					minLat = lat
				}
			}
			t.Logf("min latency %v, burst of %d took %v", minLat, n, span)
			if minLat < delay {
				t.Errorf("min latency %v < Delay %v", minLat, delay)
			}
			// Delays applied one after another would take n × delay = 1 s.
			if span > n*delay/2 {
				t.Errorf("burst took %v: delays seem to add up", span)
			}
			if fc := b.FaultCounts(); fc.Delayed != n || fc.Deliveries != n || fc.Dropped != 0 {
				t.Errorf("FaultCounts() = %+v, want %d delayed", fc, n)
			}
			wait.Until(t, "inflight to drain", func() bool { return btInflight(b) == 0 })
		})
	}
}

// TestBrokerFaultsSpareSys: the faults hit the plan's traffic only. With
// every delivery dropped, a $SYS subscriber still gets the broker's
// figures, and they are not numbered among the deliveries the faults
// count.
func TestBrokerFaultsSpareSys(t *testing.T) {
	b := btStart(t, Options{Faults: Faults{DropEvery: 1}, SysInterval: time.Second}, true)
	inbox := newBTInbox()
	mon := btConnect(t, b, "mon", 64, inbox)
	btSubscribe(t, mon, "$SYS/#", 0)
	inbox.waitUntil(t, "a $SYS message through DropEvery 1", func(got [][]byte) bool { return len(got) > 0 })
	if fc := b.FaultCounts(); fc.Deliveries != 0 || fc.Dropped != 0 {
		t.Errorf("FaultCounts() = %+v after $SYS messages only, want nothing counted", fc)
	}
}
