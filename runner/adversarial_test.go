package runner

import (
	"bufio"
	"github.com/mqplan/mqplan/stats"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// Faults found by trying to make a broker's misbehaviour pass unseen. Each
// case fails without the fix it names.

// misroute makes the embedded broker record other subscriptions than the
// ones its clients asked for (and granted them all the same): filters
// replaced for the clients named in filters (a routing bug, or a
// subscription a kept session brought from an earlier run), and, with
// ignoreNoLocal, no_local dropped, as a broker that ignores the option.
type misroute struct {
	mqtt.HookBase
	filters       map[string]string // client id → the filter recorded instead
	ignoreNoLocal bool
}

func (h *misroute) ID() string           { return "test-misroute" }
func (h *misroute) Provides(b byte) bool { return b == mqtt.OnSubscribe }
func (h *misroute) OnSubscribe(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	for i := range pk.Filters {
		if f, ok := h.filters[cl.ID]; ok {
			pk.Filters[i].Filter = f
		}
		if h.ignoreNoLocal {
			pk.Filters[i].NoLocal = false
		}
	}
	return pk
}

// TestUnexpectedDeliveriesHideNoLoss: a delivery that no subscription of
// its client implies is counted apart, never as received. Counted as
// received, the messages a misrouting broker took from one subscriber and
// gave another made the group's lost 0 (expected minus first deliveries),
// and a plan judged on loss_rate passed while a subscriber got nothing.
func TestUnexpectedDeliveriesHideNoLoss(t *testing.T) {
	oneToOne := func() *plans.Plan {
		p := e2ePlan(2, 1, 500*time.Millisecond)
		p.Drain = 500 * time.Millisecond
		p.Groups[0].ClientID = plans.MustTemplate("adv-sub-%i")
		p.Groups[1].ClientID = plans.MustTemplate("adv-pub-%i")
		return p
	}
	chat := func() *plans.Plan {
		p := e2ePlan(1, 1, 500*time.Millisecond)
		p.Groups = []plans.Group{{Name: "chat", Count: 3, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000,
			ClientID:  plans.MustTemplate("adv-chat-%i"),
			Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("room/#"), QoS: 1, NoLocal: true}},
			Publish:   &plans.Publish{Topic: plans.MustTemplate("room/%i"), QoS: 1, Size: 100, Every: 20 * time.Millisecond}}}
		return p
	}
	shared := func() *plans.Plan {
		p := oneToOne()
		// A lone member of a share group on e2e/1, to whom the broker
		// gives e2e/2's messages too.
		p.Groups = append([]plans.Group{{Name: "workers", Count: 1, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000,
			ClientID:  plans.MustTemplate("adv-w-%i"),
			Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("$share/g/e2e/1"), QoS: 1}}}}, p.Groups...)
		return p
	}
	tests := []struct {
		name string
		plan func() *plans.Plan
		hook *misroute
		// lostPubs is how many publishers' messages are lost entirely
		// (one subscriber each); unexpected how many deliveries, in
		// messages sent, come where no subscription asked for them.
		lostPubs   int64
		unexpected func(sent int64) int64
	}{
		{"e2e/2 delivered to sub-1 instead of sub-2", oneToOne, &misroute{filters: map[string]string{"adv-sub-1": "e2e/+", "adv-sub-2": "away/2"}},
			1, func(sent int64) int64 { return sent / 2 }},
		{"e2e/2 delivered to a share group member instead of sub-2", shared, &misroute{filters: map[string]string{"adv-w-1": "$share/g/e2e/+", "adv-sub-2": "away/2"}},
			1, func(sent int64) int64 { return sent / 2 }},
		{"no_local ignored: every member hears itself", chat, &misroute{ignoreNoLocal: true},
			0, func(sent int64) int64 { return sent }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := compile(t, tt.plan())
			st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{tt.hook}}, Options{})
			if st.Incomplete != "" || st.Interrupted {
				t.Fatalf("incomplete: %q interrupted=%v errors=%v", st.Incomplete, st.Interrupted, st.ErrorSamples)
			}
			m := all(st)
			pubs := int64(0)
			for _, g := range prog.Groups {
				if g.Publishes {
					pubs += int64(g.Count)
				}
			}
			wantLost := m.Sent / pubs * tt.lostPubs
			if m.Unsent != 0 || m.Duplicates != 0 {
				t.Fatalf("unsent %d duplicates %d: the broker was only to misroute", m.Unsent, m.Duplicates)
			}
			if m.Lost != wantLost || m.Unexpected != tt.unexpected(m.Sent) || m.Received != m.Expected-wantLost {
				t.Errorf("sent %d expected %d: received %d lost %d unexpected %d, want received %d lost %d unexpected %d",
					m.Sent, m.Expected, m.Received, m.Lost, m.Unexpected, m.Expected-wantLost, wantLost, tt.unexpected(m.Sent))
			}
			if lb := m.Lost - m.LostUnsent - m.LostUnacked; lb != wantLost {
				t.Errorf("lost by the broker %d, want %d", lb, wantLost)
			}
		})
	}
}

// silentBroker accepts MQTT 5 connections, answers CONNECT with a
// CONNACK and then reads and discards everything without answering: a
// broker that stopped acknowledging. It returns its mqtt:// URL.
func silentBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := bufio.NewReader(nc)
				if _, err := br.ReadByte(); err != nil { // CONNECT
					return
				}
				n, err := mqttc.ReadVBI(br)
				if err != nil {
					return
				}
				if _, err := br.Discard(n); err != nil {
					return
				}
				// CONNACK: no session, success, no properties.
				if _, err := nc.Write([]byte{mqttc.TypeConnack << 4, 3, 0, 0, 0}); err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, br)
			}()
		}
	}()
	return "mqtt://" + ln.Addr().String()
}

// TestUnacknowledgedPublishesFail: a publish still unacknowledged when
// drain ends is an error, so the built-in errors check fails the run. A
// plan of publishers only (nothing to deliver, so nothing to lose) used
// to pass against a broker that acknowledged none of its QoS 1/2
// publishes, with only a warning. At QoS 0 there is no acknowledgement:
// a PINGREQ sent when publishing stops must be answered by the end of
// drain, or a broker that stopped reading (paused for good) passed a plan
// of QoS 0 publishers, their messages left in socket buffers.
func TestUnacknowledgedPublishesFail(t *testing.T) {
	pubOnly := func(qos byte) *plans.Program {
		p := e2ePlan(2, qos, 300*time.Millisecond)
		p.Groups = p.Groups[1:]
		p.Warmup, p.Drain = 0, 300*time.Millisecond
		return compile(t, p)
	}
	const (
		unacked    = "awaiting their acknowledgement when drain ended"
		unanswered = "did not answer PINGREQ by the end of drain"
	)
	for _, tt := range []struct {
		name   string
		qos    byte
		silent bool
		want   string // the error each publisher gets on the silent broker
	}{
		{"qos0, broker answers nothing", 0, true, unanswered},
		{"qos1, broker acknowledges nothing", 1, true, unacked},
		{"qos2, broker acknowledges nothing", 2, true, unacked},
		{"qos0, healthy broker", 0, false, ""},
		{"qos1, healthy broker", 1, false, ""},
		{"qos2, healthy broker", 2, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog := pubOnly(tt.qos)
			var st *stats.Stats
			if tt.silent {
				st, _ = runAt(t, prog, silentBroker(t))
			} else {
				st, _ = runWith(t, prog, broker.Options{}, Options{})
			}
			if st.Incomplete != "" || st.Interrupted {
				t.Fatalf("incomplete: %q interrupted=%v errors=%v", st.Incomplete, st.Interrupted, st.ErrorSamples)
			}
			m := all(st)
			if m.Sent != planned(prog) || m.Unsent != 0 {
				t.Fatalf("sent %d unsent %d, the schedule called for %d", m.Sent, m.Unsent, planned(prog))
			}
			if !tt.silent {
				if m.Errors != 0 || st.InFlightAtEnd != 0 || tt.qos > 0 && m.Acked != m.Sent {
					t.Errorf("errors %d in flight %d acked %d of %d on a healthy broker: %v", m.Errors, st.InFlightAtEnd, m.Acked, m.Sent, st.ErrorSamples)
				}
				return
			}
			flagged := false
			for _, e := range st.ErrorSamples {
				flagged = flagged || strings.Contains(e, tt.want)
			}
			if tt.qos > 0 && (m.Acked != 0 || st.InFlightAtEnd != m.Sent) {
				t.Errorf("acked %d, in flight at the end %d, want 0 and %d", m.Acked, st.InFlightAtEnd, m.Sent)
			}
			if m.Errors != 2 || !flagged {
				t.Errorf("errors %d (want one per publisher, 2, saying %q) %v: a broker that answered nothing passes the built-in checks", m.Errors, tt.want, st.ErrorSamples)
			}
		})
	}
}
