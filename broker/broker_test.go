package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/mqplan/mqplan/internal/wait"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/stats"
)

// btStart starts a broker for one test and closes it when the test ends.
func btStart(t *testing.T, opts Options, quotaWorkaround bool) *Broker {
	t.Helper()
	b, err := start(opts, quotaWorkaround)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		// Generous: on a loaded CI machine with the race detector, mochi's
		// shutdown (a DISCONNECT to each client, then every connection
		// goroutine) has been seen to take over 5 s; a hang still fails.
		if err := b.Close(30 * time.Second); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return b
}

// btInbox collects the payloads a subscriber receives, with their arrival
// times, and wakes waiters on every arrival.
type btInbox struct {
	mu      sync.Mutex
	got     [][]byte
	at      []time.Time
	notify  chan struct{}
	handler func(*paho.Publish) // optional, runs before recording
}

func newBTInbox() *btInbox { return &btInbox{notify: make(chan struct{}, 1)} }

func (in *btInbox) receive(pr paho.PublishReceived) (bool, error) {
	now := time.Now()
	if in.handler != nil {
		in.handler(pr.Packet)
	}
	in.mu.Lock()
	in.got = append(in.got, append([]byte(nil), pr.Packet.Payload...))
	in.at = append(in.at, now)
	in.mu.Unlock()
	select {
	case in.notify <- struct{}{}:
	default:
	}
	return true, nil
}

func (in *btInbox) len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.got)
}

func (in *btInbox) snapshot() ([][]byte, []time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([][]byte(nil), in.got...), append([]time.Time(nil), in.at...)
}

// waitUntil waits until done reports true for the received payloads.
func (in *btInbox) waitUntil(t *testing.T, what string, done func(got [][]byte) bool) {
	t.Helper()
	deadline := time.NewTimer(wait.Timeout)
	defer deadline.Stop()
	for {
		in.mu.Lock()
		ok := done(in.got)
		n := len(in.got)
		in.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-in.notify:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s (received %d messages)", what, n)
		}
	}
}

func (in *btInbox) waitN(t *testing.T, n int) {
	t.Helper()
	in.waitUntil(t, fmt.Sprintf("%d messages", n), func(got [][]byte) bool { return len(got) >= n })
}

// btConnect connects an MQTT 5 client with the given Receive Maximum,
// delivering publishes to inbox (if not nil), and disconnects it when the
// test ends.
func btConnect(t *testing.T, b *Broker, id string, receiveMax uint16, inbox *btInbox) *paho.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", b.Addr(), wait.Timeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	cfg := paho.ClientConfig{Conn: conn}
	if inbox != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){inbox.receive}
	}
	c := paho.NewClient(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), wait.Timeout)
	defer cancel()
	ca, err := c.Connect(ctx, &paho.Connect{
		ClientID:   id,
		CleanStart: true,
		KeepAlive:  30,
		Properties: &paho.ConnectProperties{ReceiveMaximum: &receiveMax},
	})
	if err != nil {
		_ = conn.Close()
		t.Fatalf("connect %s: %v", id, err)
	}
	if ca.ReasonCode != 0 {
		t.Fatalf("connect %s: reason %d", id, ca.ReasonCode)
	}
	t.Cleanup(func() {
		_ = c.Disconnect(&paho.Disconnect{ReasonCode: 0})
	})
	return c
}

func btSubscribe(t *testing.T, c *paho.Client, topic string, qos byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait.Timeout)
	defer cancel()
	sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: qos}}})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if len(sa.Reasons) != 1 || sa.Reasons[0] != qos {
		t.Fatalf("subscribe: reasons %v, want [%d]", sa.Reasons, qos)
	}
}

func btPublish(t *testing.T, c *paho.Client, topic string, qos byte, payload []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait.Timeout)
	defer cancel()
	if _, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: qos, Payload: payload}); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

// btNum encodes message number n (and optionally a send time) as a payload.
func btNum(n int, sent time.Time) []byte {
	p := make([]byte, 12)
	binary.BigEndian.PutUint32(p, uint32(n))
	binary.BigEndian.PutUint64(p[4:], uint64(sent.UnixNano()))
	return p
}

func btNumOf(p []byte) int { return int(binary.BigEndian.Uint32(p)) }

func btSentOf(p []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(p[4:]))) }

func btInflight(b *Broker) int64 { return atomic.LoadInt64(&b.srv.Info.Inflight) }

func TestBrokerStartClose(t *testing.T) {
	cases := []struct {
		name string
		// setup connects whatever should be connected when Close is called.
		setup   func(t *testing.T, b *Broker) (check func(t *testing.T))
		timeout time.Duration
	}{
		{
			name:    "idle",
			setup:   func(*testing.T, *Broker) func(*testing.T) { return nil },
			timeout: 2 * time.Second,
		},
		{
			// mochi sends these a DISCONNECT and closes them gracefully.
			name: "connected clients",
			setup: func(t *testing.T, b *Broker) func(*testing.T) {
				var cs []*paho.Client
				for i := range 3 {
					c := btConnect(t, b, fmt.Sprintf("c%d", i), 64, newBTInbox())
					btSubscribe(t, c, "t/#", 1)
					cs = append(cs, c)
				}
				return func(t *testing.T) {
					for _, c := range cs {
						select {
						case <-c.Done():
						case <-time.After(wait.Timeout):
							t.Errorf("client still connected after Close")
						}
					}
				}
			},
			timeout: 2 * time.Second,
		},
		{
			// A socket that never sends CONNECT makes mochi's own Close
			// wait forever (#424): Close must force it shut in time.
			name: "socket without CONNECT",
			setup: func(t *testing.T, b *Broker) func(*testing.T) {
				raw, err := net.Dial("tcp", b.Addr())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { raw.Close() })
				// Make sure mochi has accepted it before Close.
				wait.Until(t, "the connection to be accepted", func() bool {
					b.ln.mu.Lock()
					defer b.ln.mu.Unlock()
					return len(b.ln.conns) == 1
				})
				return func(t *testing.T) {
					_ = raw.SetReadDeadline(time.Now().Add(wait.Timeout))
					if _, err := raw.Read(make([]byte, 1)); err == nil {
						t.Errorf("raw socket still open after Close")
					}
				}
			},
			timeout: time.Second,
		},
		{
			// A subscriber that stops reading: mochi's writer blocks on the
			// full socket holding the client's lock, so its DISCONNECT
			// write blocks too; Close must force the socket shut.
			name: "subscriber not reading",
			setup: func(t *testing.T, b *Broker) func(*testing.T) {
				release := make(chan struct{})
				var once sync.Once
				inbox := newBTInbox()
				inbox.handler = func(*paho.Publish) { <-release }
				sub := btConnect(t, b, "stuck", 1, inbox)
				t.Cleanup(func() { once.Do(func() { close(release) }) })
				btSubscribe(t, sub, "big", 0)
				pub := btConnect(t, b, "pub", 64, nil)
				big := make([]byte, 256<<10)
				for range 64 { // 16 MiB, more than loopback socket buffers hold
					btPublish(t, pub, "big", 0, big)
				}
				wait.Until(t, "the broker's writer to block", func() bool {
					return b.Stats().MessagesSent < 64 && b.Stats().MessagesReceived == 64
				})
				return func(t *testing.T) {
					// paho notices the closed socket once its reader is free.
					once.Do(func() { close(release) })
					select {
					case <-sub.Done():
					case <-time.After(wait.Timeout):
						t.Errorf("stuck client still connected after Close")
					}
				}
			},
			timeout: time.Second,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Start(Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close(time.Second) }) // if the test stops early
			host, port, err := net.SplitHostPort(b.Addr())
			if err != nil || host != "127.0.0.1" || port == "0" {
				t.Fatalf("Addr() = %q: want 127.0.0.1 and a real port", b.Addr())
			}
			if b.URL() != "mqtt://"+b.Addr() {
				t.Errorf("URL() = %q", b.URL())
			}
			check := tc.setup(t, b)

			start := time.Now()
			if err := b.Close(tc.timeout); err != nil {
				t.Fatalf("Close: %v", err)
			}
			took := time.Since(start)
			t.Logf("Close took %v", took)
			if took > tc.timeout+500*time.Millisecond {
				t.Errorf("Close took %v, bound %v", took, tc.timeout)
			}
			if check != nil {
				check(t)
			}
			// Idempotent, and immediate the second time.
			start = time.Now()
			if err := b.Close(tc.timeout); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if took := time.Since(start); took > 100*time.Millisecond {
				t.Errorf("second Close took %v", took)
			}
		})
	}
}

func TestBrokerOptionsValidation(t *testing.T) {
	cases := []struct {
		name   string
		opts   Options
		errHas string
	}{
		{"negative DropEvery", Options{Faults: Faults{DropEvery: -1}}, "DropEvery"},
		{"negative DuplicateEvery", Options{Faults: Faults{DuplicateEvery: -2}}, "DuplicateEvery"},
		{"negative Delay", Options{Faults: Faults{Delay: -time.Second}}, "Delay"},
		{"unusable address", Options{Listen: "127.0.0.1:notaport"}, "listen"},
		{"minimum protocol 2", Options{MinimumProtocol: 2}, "minimum protocol 2: must be 3, 4 or 5"},
		{"minimum protocol 6", Options{MinimumProtocol: 6}, "minimum protocol 6: must be 3, 4 or 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Start(tc.opts)
			if err == nil {
				b.Close(time.Second)
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("error %q does not mention %q", err, tc.errHas)
			}
		})
	}
}

// TestBrokerRoundTrip checks delivery at each QoS and that Stats counts
// what was sent and received.
func TestBrokerRoundTrip(t *testing.T) {
	const n = 200
	for _, qos := range []byte{0, 1, 2} {
		t.Run(fmt.Sprintf("qos%d", qos), func(t *testing.T) {
			b := btStart(t, Options{}, true)
			inbox := newBTInbox()
			sub := btConnect(t, b, "sub", 64, inbox)
			btSubscribe(t, sub, "rt/+", qos)
			pub := btConnect(t, b, "pub", 64, nil)
			for i := 1; i <= n; i++ {
				btPublish(t, pub, "rt/x", qos, btNum(i, time.Now()))
			}
			inbox.waitN(t, n)
			got, _ := inbox.snapshot()
			for i, p := range got {
				if btNumOf(p) != i+1 {
					t.Fatalf("message %d is number %d: want in order", i+1, btNumOf(p))
				}
			}
			wait.Until(t, "MessagesSent to reach n", func() bool { return b.Stats().MessagesSent == n })
			wait.Until(t, "inflight to drain", func() bool { return btInflight(b) == 0 })
			want := stats.Broker{MessagesReceived: n, MessagesSent: n, ClientsMaximum: 2}
			if s := b.Stats(); s != want {
				t.Errorf("Stats() = %+v, want %+v", s, want)
			}
			if fc := b.FaultCounts(); fc != (FaultCounts{}) {
				t.Errorf("FaultCounts() = %+v without faults", fc)
			}
		})
	}
}

// TestBrokerFanOut: a burst of QoS 1 messages published without waiting
// for acknowledgements, fanned out to 100 MQTT 5 subscribers with Receive
// Maximum 64: every subscriber gets every message, the broker drops
// nothing, and an extra hook (Options.Hooks) sees every write.
func TestBrokerFanOut(t *testing.T) {
	const (
		subs = 100
		msgs = 40
	)
	var received atomic.Int64
	done := make(chan struct{})
	counter := &btCountHook{}
	b := btStart(t, Options{Hooks: []mqtt.Hook{counter}}, true)
	for i := range subs {
		inbox := newBTInbox()
		inbox.handler = func(*paho.Publish) {
			if received.Add(1) == subs*msgs {
				close(done)
			}
		}
		c := btConnect(t, b, fmt.Sprintf("sub%d", i), 64, inbox)
		btSubscribe(t, c, "fan/+", 1)
	}
	pub := btConnect(t, b, "pub", 64, nil)
	for i := 1; i <= msgs; i++ {
		_, err := pub.PublishWithOptions(context.Background(),
			&paho.Publish{Topic: "fan/x", QoS: 1, Payload: btNum(i, time.Now())},
			paho.PublishOptions{Method: paho.PublishMethod_AsyncSend})
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	select {
	case <-done:
	case <-time.After(wait.Timeout):
		t.Fatalf("received %d of %d", received.Load(), subs*msgs)
	}
	// The extra hook runs after mochi counted the write.
	wait.Until(t, "the extra hook to see every delivery", func() bool { return counter.publishes.Load() == subs*msgs })
	wait.Until(t, "inflight to drain", func() bool { return btInflight(b) == 0 })
	want := stats.Broker{MessagesReceived: msgs, MessagesSent: subs * msgs, ClientsMaximum: subs + 1}
	if s := b.Stats(); s != want {
		t.Errorf("Stats() = %+v, want %+v", s, want)
	}
}

// btCountHook is an extra hook (Options.Hooks) counting PUBLISH
// packets written.
type btCountHook struct {
	mqtt.HookBase
	publishes atomic.Int64
}

func (h *btCountHook) ID() string { return "bt-count" }

func (h *btCountHook) Provides(b byte) bool { return b == mqtt.OnPacketSent }

func (h *btCountHook) OnPacketSent(_ *mqtt.Client, pk packets.Packet, _ []byte) {
	if pk.FixedHeader.Type == packets.Publish {
		h.publishes.Add(1)
	}
}
