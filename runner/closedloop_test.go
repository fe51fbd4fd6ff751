package runner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// publishCount is a broker hook counting the PUBLISH packets the broker
// read from clients and wrote to them: the broker's side of the
// accounting.
type publishCount struct {
	mqtt.HookBase
	in, out atomic.Int64
}

func (h *publishCount) ID() string { return "test-publish-count" }

func (h *publishCount) Provides(b byte) bool {
	return b == mqtt.OnPacketRead || b == mqtt.OnPacketEncode
}

func (h *publishCount) OnPacketRead(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type == packets.Publish {
		h.in.Add(1)
	}
	return pk, nil
}

func (h *publishCount) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type == packets.Publish {
		h.out.Add(1)
	}
	return pk
}

// windowProxy is a TCP proxy that watches the closed loop on the wire:
// per connection, the QoS 1/2 PUBLISHes the client sent whose
// PUBACK/PUBCOMP has not yet been passed back to it, and the most of
// them at once. It holds each acknowledgement for ackDelay (a slower
// broker), so that a window is filled and a client that overran its
// window would be seen doing it; it counts an acknowledgement as done
// before passing it on, so that the count is never below what the client
// has in flight.
type windowProxy struct {
	ln       net.Listener
	target   string
	ackDelay time.Duration
	mu       sync.Mutex
	most     []int // per proxied connection
}

func startWindowProxy(t *testing.T, target string, ackDelay time.Duration) *windowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &windowProxy{ln: ln, target: target, ackDelay: ackDelay}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			i := len(p.most)
			p.most = append(p.most, 0)
			p.mu.Unlock()
			var inflight atomic.Int64
			wg.Add(2)
			go func() { // client → broker
				defer wg.Done()
				defer u.Close()
				_ = copyPackets(u, c, func(b0 byte) {
					if b0>>4 == mqttc.TypePublish && (b0>>1)&3 > 0 {
						n := int(inflight.Add(1))
						p.mu.Lock()
						p.most[i] = max(p.most[i], n)
						p.mu.Unlock()
					}
				})
			}()
			go func() { // broker → client
				defer wg.Done()
				defer c.Close()
				_ = copyPackets(c, u, func(b0 byte) {
					if t := b0 >> 4; t == mqttc.TypePuback || t == mqttc.TypePubcomp {
						time.Sleep(p.ackDelay) // the slower broker, not a synchronisation
						inflight.Add(-1)
					}
				})
			}()
		}
	}()
	return p
}

// URL is the proxy's mqtt:// URL.
func (p *windowProxy) URL() string { return "mqtt://" + p.ln.Addr().String() }

// copyPackets copies MQTT packets from src to dst one whole packet at a
// time, calling seen with each packet's first byte before passing it on.
func copyPackets(dst io.Writer, src io.Reader, seen func(b0 byte)) error {
	br := bufio.NewReader(src)
	var buf []byte
	for {
		b0, err := br.ReadByte()
		if err != nil {
			return err
		}
		n, err := mqttc.ReadVBI(br)
		if err != nil {
			return err
		}
		buf = mqttc.AppendVBI(append(buf[:0], b0), n)
		head := len(buf)
		buf = append(buf, make([]byte, n)...)
		if _, err := io.ReadFull(br, buf[head:]); err != nil {
			return err
		}
		seen(b0)
		if _, err := dst.Write(buf); err != nil {
			return err
		}
	}
}

// maxPlan is e2ePlan with its publishers in the closed loop.
func maxPlan(n int, qos byte, inflight int, steady time.Duration) *plans.Plan {
	p := e2ePlan(n, qos, steady)
	p.Warmup, p.Drain = 0, 2*time.Second
	pub := p.Groups[1].Publish
	pub.Every, pub.Max, pub.Inflight = 0, true, inflight
	return p
}

// checkClosedLoop checks a closed-loop run's accounting: something was
// sent, every message delivered exactly once, acknowledged at QoS 1/2,
// no lag recorded (there is no schedule) and a latency per delivery. At
// QoS 0 nothing holds the loop back but the socket: as fast as possible
// outruns the broker, which drops what its queues cannot hold and still
// has messages unread when drain ends, so only the accounting identity is
// checked (lost = expected - received, nothing duplicated or corrupted).
func checkClosedLoop(t *testing.T, st *stats.Stats, qos byte) stats.Metrics {
	t.Helper()
	if st.Incomplete != "" {
		t.Fatalf("incomplete: %s (%v)", st.Incomplete, st.ErrorSamples)
	}
	m := all(st)
	if m.Sent == 0 {
		t.Fatal("the closed loop sent nothing")
	}
	if qos == 0 {
		if m.Expected != m.Sent || m.Lost != m.Expected-m.Received || m.Duplicates != 0 || m.Unsent != 0 || m.Corrupted != 0 {
			t.Errorf("sent %d expected %d received %d lost %d dup %d unsent %d corrupt %d: want lost = expected - received, and nothing else",
				m.Sent, m.Expected, m.Received, m.Lost, m.Duplicates, m.Unsent, m.Corrupted)
		}
	} else if m.Expected != m.Sent || m.Received != m.Sent || m.Lost != 0 || m.Duplicates != 0 || m.Unsent != 0 || m.Corrupted != 0 || m.OutOfOrder != 0 {
		t.Errorf("sent %d expected %d received %d lost %d dup %d unsent %d corrupt %d ooo %d: want every message delivered once",
			m.Sent, m.Expected, m.Received, m.Lost, m.Duplicates, m.Unsent, m.Corrupted, m.OutOfOrder)
	}
	if qos > 0 && m.Acked != m.Sent {
		t.Errorf("acked %d of %d", m.Acked, m.Sent)
	}
	if m.Lag != nil && m.Lag.TotalCount() != 0 {
		t.Errorf("%d lag samples: a closed loop has no schedule to lag behind", m.Lag.TotalCount())
	}
	if m.Latency == nil || m.Latency.TotalCount() != m.Received {
		t.Errorf("latency samples %v, want one per delivery (%d)", m.Latency, m.Received)
	}
	if ph := st.Phase(phase.Steady); ph == nil || ph.Total.Sent == 0 {
		t.Error("nothing sent in steady")
	}
	return m
}

// TestClosedLoopEmbedded runs the closed loop on the embedded broker
// behind a windowProxy and checks it against the broker's own view (the
// PUBLISH packets it read and wrote are mqplan's sent and received) and
// the wire's: each publisher had exactly its window unacknowledged at
// most (acknowledgements held 1 ms fill it).
func TestClosedLoopEmbedded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		qos      byte
		inflight int
	}{
		{name: "qos1_inflight1", qos: 1, inflight: 1},
		{name: "qos1_inflight8", qos: 1, inflight: 8},
		{name: "qos2_inflight4", qos: 2, inflight: 4},
		{name: "qos0", qos: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prog := compile(t, maxPlan(2, tc.qos, tc.inflight, 600*time.Millisecond))
			count := &publishCount{}
			b, err := broker.Start(broker.Options{Hooks: []mqtt.Hook{count}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close(5 * time.Second) })
			proxy := startWindowProxy(t, b.Addr(), time.Millisecond)
			st, _ := runAt(t, prog, proxy.URL())
			m := checkClosedLoop(t, st, tc.qos)
			in, out := count.in.Load(), count.out.Load()
			if tc.qos == 0 {
				// The broker read no more than was sent, and wrote no
				// fewer than were received.
				if in > m.Sent || out < m.Received {
					t.Errorf("broker read %d PUBLISH and wrote %d; mqplan sent %d and received %d", in, out, m.Sent, m.Received)
				}
				return
			}
			if in != m.Sent || out != m.Received {
				t.Errorf("broker read %d PUBLISH and wrote %d; mqplan sent %d and received %d", in, out, m.Sent, m.Received)
			}
			proxy.mu.Lock()
			defer proxy.mu.Unlock()
			publishers := 0
			for _, most := range proxy.most {
				if most > 0 {
					publishers++
				}
				if most > tc.inflight || most > 0 && most < tc.inflight {
					t.Errorf("a publisher had at most %d unacknowledged on the wire, want %d (its window, filled)", most, tc.inflight)
				}
			}
			if publishers != 2 {
				t.Errorf("%d connections published, want 2", publishers)
			}
		})
	}
}

// TestClosedLoopMosquitto runs the closed loop against Mosquitto.
func TestClosedLoopMosquitto(t *testing.T) {
	url := mosquittotest.Start(t)
	prog := compile(t, maxPlan(2, 1, 16, 600*time.Millisecond))
	st, _ := runAt(t, prog, url)
	checkClosedLoop(t, st, 1)
}

// TestClosedLoopCountEndsEarly: a closed loop with publish.count ends
// publishing when every publisher has sent its count, not at the end of a
// long steady phase, and sends exactly its counts.
func TestClosedLoopCountEndsEarly(t *testing.T) {
	p := maxPlan(2, 1, 4, time.Hour)
	p.Groups[1].Publish.Count = 500
	prog := compile(t, p)
	began := time.Now()
	st, _ := runWith(t, prog, broker.Options{}, Options{})
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the run took %s: it waited for the planned end of steady", took)
	}
	if m := checkClosedLoop(t, st, 1); m.Sent != 1000 {
		t.Errorf("sent %d, want 1000 (500 per publisher)", m.Sent)
	}
}

// TestClosedLoopDoesNotAllocate runs the real closed loop (publishMax)
// over loopback TCP against a fakeBroker that acknowledges everything,
// for 500 and then 5,500 messages, and counts the heap allocations of the
// whole process in between: the difference, 5,000 messages' worth, must
// be no more than a few (the runtime's own), never one per message.
func TestClosedLoopDoesNotAllocate(t *testing.T) {
	for _, qos := range []byte{0, 1, 2} {
		t.Run(fmt.Sprintf("qos%d", qos), func(t *testing.T) {
			p := maxPlan(1, qos, 8, time.Hour)
			if qos == 0 {
				p.Groups[1].Publish.Inflight = 0
			}
			prog := compile(t, p)
			r := &run{prog: prog, rec: newRecorder(len(prog.Groups), prog.Drain), pattern: padPattern(prog.MaxPayload), epoch: time.Now()}
			pc := &prog.Clients[1]
			c := &client{plan: pc, wake: make(chan struct{}, 1)}
			cn, bn := hotTransports[1].pair(t)
			_ = bn.SetDeadline(time.Now().Add(wait.Timeout))
			go fakeBroker(bn, make(chan [4]byte, 1))
			mc := mqttc.NewConn(cn, mqttc.Version5, r.now, mqttc.Handlers{Acked: func(a mqttc.Ack) {
				ph, _ := r.sentAs(pc.Publish, a.Token)
				r.rec.recordAck(pc.Index, ph, pc.Group, a.Latency, a.Reason.Failed())
				ackedWake(c)
			}})
			t.Cleanup(mc.Close)
			c.live.Store(mc)
			c.ready.Store(true)
			start := r.now()
			r.pubStart.Store(start)
			publish := func(n int) {
				pc.Publish.Schedule.Count = n
				r.publishMax(context.Background(), c, start)
				if c.next != n-1 {
					t.Fatalf("stopped at message %d of %d", c.next+1, n)
				}
				wait.Until(t, "every publish acknowledged", func() bool { return mc.Pending() == 0 })
			}
			publish(500)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			publish(5500)
			runtime.ReadMemStats(&after)
			if n := after.Mallocs - before.Mallocs; n > 50 {
				t.Errorf("%d allocations for 5,000 messages", n)
			}
			if m := all(&stats.Stats{Phases: r.rec.merge()}); m.Sent != 6000 || (qos > 0 && m.Acked != 6000) {
				t.Errorf("sent %d acked %d, want 6000", m.Sent, m.Acked)
			}
		})
	}
}
