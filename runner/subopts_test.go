package runner

import (
	"fmt"
	"github.com/mqplan/mqplan/stats"
	"os"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/plans"
)

// optionBrokers is the embedded broker, and Mosquitto where installed
// (always in CI), for tests that check what a real broker does with an
// option rather than what mqplan sends.
func optionBrokers(t *testing.T) map[string]string {
	t.Helper()
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(5 * time.Second) })
	brokers := map[string]string{"embedded": b.URL()}
	if mosquittotest.Binary() != "" || os.Getenv("CI") != "" {
		brokers["mosquitto"] = mosquittotest.Start(t)
	} else {
		t.Log("mosquitto is not installed (apt-get install mosquitto): embedded broker only")
	}
	return brokers
}

// complete runs p against url and fails the test if the run did not
// complete.
func complete(t *testing.T, p *plans.Plan, url string) stats.Metrics {
	t.Helper()
	st, m := runAt(t, compile(t, p), url)
	if st.Incomplete != "" {
		t.Fatalf("incomplete: %s (errors %v)", st.Incomplete, st.ErrorSamples)
	}
	return m
}

// TestNoLocal: a chat room where every member publishes and subscribes to
// the room. With no_local the broker leaves each member's own messages
// out and the expectations do too, so a broker that ignored the option
// would show extra deliveries; without it every member hears itself.
func TestNoLocal(t *testing.T) {
	for name, url := range optionBrokers(t) {
		for _, noLocal := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/no_local=%v", name, noLocal), func(t *testing.T) {
				p := e2ePlan(1, 1, 300*time.Millisecond)
				p.Groups = []plans.Group{
					{Name: "chat", Count: 3, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000,
						ClientID:  plans.MustTemplate("chat-" + name + "-%i"),
						Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("room/#"), QoS: 1, NoLocal: noLocal}},
						Publish:   &plans.Publish{Topic: plans.MustTemplate("room/%i"), QoS: 1, Size: 100, Every: 50 * time.Millisecond}},
					{Name: "audit", Count: 1, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000,
						Subscribe: []plans.Subscription{{Topic: plans.MustTemplate("room/#"), QoS: 1}}},
				}
				prog := compile(t, p)
				want := int64(0)
				for _, ph := range prog.Phases {
					want += ph.Deliveries
				}
				m := complete(t, p, url)
				perMessage := int64(3) // two other members and the auditor
				if !noLocal {
					perMessage = 4
				}
				if m.Expected != m.Sent*perMessage || m.Received != m.Expected || m.Lost != 0 || m.Duplicates != 0 || m.Foreign != 0 || want != m.Expected {
					t.Fatalf("sent %d expected %d (planned %d, %d a message) received %d lost %d dup %d foreign %d",
						m.Sent, m.Expected, want, perMessage, m.Received, m.Lost, m.Duplicates, m.Foreign)
				}
			})
		}
	}
}

// TestRetainedMessages publishes retained state messages in one run, then
// runs again on the same broker. The second run's subscribers get the
// first run's retained messages replayed at subscribe time, as MQTT 5's
// retain_handling asks: they count as foreign, never as received,
// duplicates or out of order, on every protocol; live deliveries of
// retained publishes (retain flag cleared, or kept with
// retain_as_published) count as the run's own.
func TestRetainedMessages(t *testing.T) {
	t.Parallel()
	statePlan := func(name string, proto int, opts plans.Subscription) *plans.Plan {
		p := e2ePlan(1, 1, 300*time.Millisecond)
		opts.Topic, opts.QoS = plans.MustTemplate("state-"+name+"/+"), 1
		p.Groups = []plans.Group{
			{Name: "watch", Count: 2, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000, Protocol: proto,
				ClientID: plans.MustTemplate("w-%i"), Subscribe: []plans.Subscription{opts}},
			{Name: "dev", Count: 3, Start: 1, Keepalive: time.Minute, CleanStart: true, ConnectRate: 1000, Protocol: proto,
				ClientID: plans.MustTemplate("d-%i"),
				Publish:  &plans.Publish{Topic: plans.MustTemplate("state-" + name + "/%i"), QoS: 1, Size: 64, Every: 50 * time.Millisecond, Retain: true}},
		}
		return p
	}
	tests := []struct {
		name  string
		proto int
		opts  plans.Subscription
		// replayed is whether the second run's subscribers get the first
		// run's three retained messages.
		replayed bool
	}{
		{"v5 retain_handling 0 (send at subscribe)", 5, plans.Subscription{}, true},
		{"v5 retain_handling 1 (new subscription)", 5, plans.Subscription{RetainHandling: 1}, true},
		{"v5 retain_handling 2 (never)", 5, plans.Subscription{RetainHandling: 2}, false},
		{"v5 retain_as_published", 5, plans.Subscription{RetainAsPublished: true}, true},
		{"v5 retain_as_published, retain_handling 2", 5, plans.Subscription{RetainAsPublished: true, RetainHandling: 2}, false},
		{"v3.1.1", 4, plans.Subscription{}, true},
		{"v3.1", 3, plans.Subscription{}, true},
	}
	for bname, url := range optionBrokers(t) {
		for i, tt := range tests {
			t.Run(bname+"/"+tt.name, func(t *testing.T) {
				topic := fmt.Sprintf("%s%d", bname, i)
				first := complete(t, statePlan(topic, tt.proto, tt.opts), url)
				if first.Foreign != 0 || first.Received != first.Expected || first.Received == 0 {
					t.Fatalf("first run: foreign %d received %d of %d", first.Foreign, first.Received, first.Expected)
				}
				m := complete(t, statePlan(topic, tt.proto, tt.opts), url)
				wantForeign := int64(0)
				if tt.replayed {
					wantForeign = 2 * 3 // two watchers, three retained topics
				}
				if m.Foreign != wantForeign || m.Received != m.Expected || m.Lost != 0 || m.Duplicates != 0 || m.OutOfOrder != 0 || m.Corrupted != 0 {
					t.Fatalf("second run: foreign %d (want %d) received %d of %d lost %d dup %d ooo %d corrupted %d",
						m.Foreign, wantForeign, m.Received, m.Expected, m.Lost, m.Duplicates, m.OutOfOrder, m.Corrupted)
				}
			})
		}
	}
}
