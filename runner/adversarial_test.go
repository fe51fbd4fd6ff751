package runner

import (
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

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
			st, _ := runWith(t, prog, BrokerOptions{Hooks: []mqtt.Hook{tt.hook}}, Options{})
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
