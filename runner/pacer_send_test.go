package runner

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// TestPaceSend drives the pacer's turn at one publisher (paceSend) in each
// situation it meets, on mqplan's real connection to a peer that reads
// everything and acknowledges nothing: what it writes and records, where
// the publisher's position ends, and who holds the publisher afterwards.
func TestPaceSend(t *testing.T) {
	hour := 3_600_000 // the hot plan's messages: one a millisecond for an hour
	tests := []struct {
		name       string
		next       int  // the publisher's position when its entry falls due
		fill       bool // the in-flight window is full already
		down       bool // the connection is down (a reconnect pending)
		peerClosed bool // the peer closed the connection: the write fails
		cancelled  bool // publishing has stopped
		// catchUp: publishing started 2.5 ms ago; every message due by
		// the end of the call must be written, none not due at its start.
		catchUp    bool
		wantSent   int64
		wantUnsent int64
		wantNext   int
		wantOwner  int32
		wantWake   bool
		wantErrors int64
	}{
		// Messages 0 to 2 at least are due (publishing started 2.5 ms
		// ago, one a millisecond): every due one is written, none early,
		// and the pacer keeps the publisher for its next message.
		{name: "due: written, the pacer keeps it", next: 0, catchUp: true, wantOwner: ownerPacer},
		// The entry fell due but the publisher is already ahead of it.
		{name: "not due yet: nothing written", next: hour - 1, wantNext: hour - 1, wantOwner: ownerPacer},
		// The goroutine waits for a slot and sends late, lag measured.
		{name: "window full: given back unsent", next: 0, fill: true, wantNext: 0, wantOwner: ownerGoroutine, wantWake: true},
		// The goroutine waits for the reconnect (or gives up).
		{name: "connection down: given back", next: 0, down: true, wantNext: 0, wantOwner: ownerGoroutine, wantWake: true},
		// Counted unsent and recorded as an error, as the goroutine does,
		// then the goroutine takes over (it sees whether a reconnect comes).
		{name: "write error: unsent, error, given back", next: 0, peerClosed: true, wantUnsent: 1, wantErrors: 1, wantNext: 1, wantOwner: ownerGoroutine, wantWake: true},
		{name: "schedule over: given back to return", next: hour, wantNext: hour, wantOwner: ownerGoroutine, wantWake: true},
		{name: "publishing stopped: given back", next: 0, cancelled: true, wantNext: 0, wantOwner: ownerGoroutine, wantWake: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, sub, _ := hotRun(t, 100)
			cn, bn := hotTransports[1].pair(t)
			c, _, _ := hotConn(t, cn, r, sub)
			if tt.peerClosed {
				bn.Close()
				<-c.Done() // the reader saw the end; the write now fails
			} else {
				go func() { _, _ = io.Copy(io.Discard, bn) }()
			}
			pub := &client{plan: &r.prog.Clients[1], wake: make(chan struct{}, 1)}
			pub.live.Store(c)
			pub.ready.Store(!tt.down)
			pub.ps = r.newPubState(pub)
			pub.next = tt.next
			// A clean subscriber reads this publisher (clean_run.go): it
			// must see each write begin, and each write that failed.
			pub.cleanPub = &cleanPub{}
			if tt.fill {
				for i := range c.Window() {
					if err := c.TryPublishProps("t/1", 1, false, nil, []byte("x"), mqttc.Token(1_000_000+i)); err != nil {
						t.Fatal(err)
					}
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			if tt.catchUp {
				r.pubStart.Store(r.now() - int64(2500*time.Microsecond))
			}
			pub.ps.owner.Store(ownerPacer)
			before := r.now()
			r.paceDue(ctx, pub)
			after := r.now()
			if tt.catchUp {
				// Sent: every message intended up to before, and none
				// intended after after.
				first, _ := pub.plan.Publish.Schedule.At(pub.next)
				last, _ := pub.plan.Publish.Schedule.At(pub.next - 1)
				if pub.next < 3 || r.pubStart.Load()+int64(first) <= before || r.pubStart.Load()+int64(last) > after {
					t.Errorf("stopped at message %d (intended %v after the start, the call ran from %v to %v)", pub.next, first, time.Duration(before-r.pubStart.Load()), time.Duration(after-r.pubStart.Load()))
				}
				tt.wantSent, tt.wantNext = int64(pub.next), pub.next
			}
			var m stats.Metrics
			for _, ps := range r.rec.merge() {
				m.Merge(&ps.Total)
			}
			if m.Sent != tt.wantSent || m.Unsent != tt.wantUnsent || m.Errors != tt.wantErrors {
				t.Errorf("sent %d unsent %d errors %d, want %d %d %d", m.Sent, m.Unsent, m.Errors, tt.wantSent, tt.wantUnsent, tt.wantErrors)
			}
			if pub.next != tt.wantNext {
				t.Errorf("publisher at message %d, want %d", pub.next, tt.wantNext)
			}
			if o := pub.ps.owner.Load(); o != tt.wantOwner {
				t.Errorf("owner %d, want %d", o, tt.wantOwner)
			}
			woken := len(pub.wake) == 1
			if woken != tt.wantWake {
				t.Errorf("goroutine woken: %v, want %v", woken, tt.wantWake)
			}
			// The clean subscriber's view: the last write that began (none
			// when the window was full), and the failed one as skipped.
			if w, want := pub.cleanPub.written.Load(), uint32(m.Sent+m.Unsent); w != want {
				t.Errorf("clean view: written %d, want %d", w, want)
			}
			if want := tt.wantUnsent > 0; (len(pub.cleanPub.skips) == 1) != want || want && pub.cleanPub.skips[0] != (seqRange{0, 1}) {
				t.Errorf("clean view: skips %v", pub.cleanPub.skips)
			}
			// Nothing taken from the window but what was written.
			wantPending := int(tt.wantSent)
			if tt.fill {
				wantPending = c.Window()
			}
			if c.Pending() != wantPending {
				t.Errorf("%d publishes in flight, want %d (window %d)", c.Pending(), wantPending, c.Window())
			}
		})
	}
	// A publisher the goroutine holds is only woken, as on the old path.
	t.Run("held by the goroutine: woken only", func(t *testing.T) {
		r, _, _ := hotRun(t, 100)
		pub := &client{plan: &r.prog.Clients[1], wake: make(chan struct{}, 1)}
		pub.ps = r.newPubState(pub)
		r.paceDue(context.Background(), pub)
		r.paceDue(context.Background(), pub) // a second signal never blocks
		if len(pub.wake) != 1 || pub.next != 0 || pub.ps.owner.Load() != ownerGoroutine {
			t.Errorf("wake %d next %d owner %d", len(pub.wake), pub.next, pub.ps.owner.Load())
		}
	})
}

// TestAwaitGiveBack: the goroutine hands its publisher to the pacer only
// while the next message is not due; one that fell due while it was
// handing over is taken back at once (else nobody would write it until the
// next entry), and a stop ends the wait.
func TestAwaitGiveBack(t *testing.T) {
	r, _, _ := hotRun(t, 100)
	pub := &client{plan: &r.prog.Clients[1], wake: make(chan struct{}, 1)}
	pub.ps = r.newPubState(pub)
	if !r.awaitGiveBack(context.Background(), pub, r.now()) {
		t.Fatal("a due message: not taken back")
	}
	if o := pub.ps.owner.Load(); o != ownerGoroutine {
		t.Errorf("owner %d after taking a due message back", o)
	}
	// Not due: the pacer holds it until it gives it back.
	done := make(chan bool)
	go func() { done <- r.awaitGiveBack(context.Background(), pub, r.now()+int64(time.Hour)) }()
	wait.Until(t, "the hand-over to the pacer", func() bool { return pub.ps.owner.Load() == ownerPacer })
	select {
	case <-done:
		t.Fatal("returned while the pacer held the publisher")
	default:
	}
	if !pub.ps.owner.CompareAndSwap(ownerPacer, ownerBusy) {
		t.Fatal("the pacer could not take the publisher")
	}
	r.giveBack(pub)
	if !<-done {
		t.Error("given back: the goroutine did not go on")
	}
	// A stop while the pacer holds it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r.awaitGiveBack(ctx, pub, r.now()+int64(time.Hour)) {
		t.Error("stopped: the goroutine went on")
	}
}

// stallHook holds the at-th PUBLISH of each client whose id contains match
// for hold before the broker takes it (the fault), so that the broker reads
// nothing more from that client meanwhile and its acknowledgements stop;
// and it counts every PUBLISH the broker took, by publisher and sequence
// (the ground truth).
type stallHook struct {
	mqtt.HookBase
	match string
	at    int
	hold  time.Duration
	mu    sync.Mutex
	seen  map[string]int
	took  map[msgKey]int
}

func (h *stallHook) ID() string           { return "test-stall" }
func (h *stallHook) Provides(b byte) bool { return b == mqtt.OnPublish }

func (h *stallHook) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if !strings.Contains(cl.ID, h.match) {
		return pk, nil
	}
	h.mu.Lock()
	h.seen[cl.ID]++
	n := h.seen[cl.ID]
	if k, ok := keyOf(pk.Payload); ok {
		h.took[k]++
	}
	h.mu.Unlock()
	if n == h.at {
		time.Sleep(h.hold) // the fault: the client's reader is held
	}
	return pk, nil
}

// TestPacerFullWindow: a QoS 1 publisher whose broker stops acknowledging
// for 600 ms fills its in-flight window (256) after about 256 ms at one
// message a millisecond. The pacer must give it back to its goroutine,
// which waits for a slot and then catches up: every message of the
// schedule is sent, each taken by the broker exactly once, none unsent or
// lost, and the wait shows as lag.
func TestPacerFullWindow(t *testing.T) {
	p := e2ePlan(1, 1, 1500*time.Millisecond)
	p.Groups[1].Publish.Every = time.Millisecond
	p.Drain = 3 * time.Second
	prog := compile(t, p)
	h := &stallHook{match: "-pub-", at: 400, hold: 600 * time.Millisecond, seen: map[string]int{}, took: map[msgKey]int{}}
	st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{h}}, Options{})
	m := all(st)
	want := planned(prog)
	if m.Sent != want || m.Unsent != 0 || m.Lost != 0 || m.Received != m.Expected {
		t.Errorf("sent %d of %d planned, unsent %d, lost %d, received %d of %d expected", m.Sent, want, m.Unsent, m.Lost, m.Received, m.Expected)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if int64(len(h.took)) != want {
		t.Errorf("the broker took %d distinct messages, %d were planned", len(h.took), want)
	}
	for k, n := range h.took {
		if n != 1 || k.seq < 1 || int64(k.seq) > want {
			t.Errorf("message %d taken %d times by the broker", k.seq, n)
		}
	}
	// The window was full for about 350 ms: a message waited that long.
	var lag time.Duration
	for _, s := range st.Timeline {
		lag = max(lag, s.LagMax)
	}
	if lag < 250*time.Millisecond {
		t.Errorf("largest lag %v: no message waited for the full window", lag)
	}
	if sp := st.Phase(phase.Steady).Total; sp.Sent == 0 {
		t.Error("nothing sent in steady")
	}
}
