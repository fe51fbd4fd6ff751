package runner

import (
	"github.com/mqplan/mqplan/stats"
	"strconv"
	"strings"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/natstest"
	"github.com/mqplan/mqplan/plans"
)

// onProtocol sets every group of p to MQTT protocol level v.
func onProtocol(p *plans.Plan, v int) *plans.Plan {
	p.Broker.Protocol = v
	for i := range p.Groups {
		p.Groups[i].Protocol = v
	}
	return p
}

// overlapping gives each subscriber of an e2ePlan a second filter that
// matches its publisher's topic too.
func overlapping(p *plans.Plan) *plans.Plan {
	p.Groups[0].Subscribe = append(p.Groups[0].Subscribe,
		plans.Subscription{Topic: plans.MustTemplate("+/%i"), QoS: p.Groups[0].Subscribe[0].QoS})
	return p
}

func hasNotice(st *stats.Stats, s string) bool {
	for _, n := range st.Notices {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// TestNATS runs mqplan against NATS server's MQTT gateway, an independent
// MQTT 3.1.1 implementation: exact accounting at QoS 0, 1 and 2, and the
// ways it differs from the other brokers reported as such.
func TestNATS(t *testing.T) {
	t.Parallel()
	url := natstest.Start(t)
	for _, qos := range []byte{0, 1, 2} {
		t.Run("MQTT 3.1.1 QoS "+string('0'+qos)+": every message delivered exactly once", func(t *testing.T) {
			prog := compile(t, onProtocol(e2ePlan(5, qos, time.Second), 4))
			st, m := runAt(t, prog, url)
			want := planned(prog)
			if st.Incomplete != "" || m.Sent != want || m.Expected != want || m.Received != want || m.Lost != 0 || m.Duplicates != 0 || m.Errors != 0 {
				t.Errorf("incomplete %q: sent %d expected %d received %d lost %d dup %d errors %d (want %d; %v)",
					st.Incomplete, m.Sent, m.Expected, m.Received, m.Lost, m.Duplicates, m.Errors, want, st.ErrorSamples)
			}
		})
	}
	t.Run("MQTT 5: refused with a line that says to use protocol 4", func(t *testing.T) {
		prog := compile(t, e2ePlan(2, 1, time.Second))
		st, _ := runAt(t, prog, url)
		if !strings.Contains(st.Incomplete, "does not speak MQTT 5; try broker.protocol: 4") {
			t.Errorf("incomplete = %q", st.Incomplete)
		}
	})
	t.Run("overlapping subscriptions: a copy per filter, counted as overlap_copies, not duplicates", func(t *testing.T) {
		prog := compile(t, overlapping(onProtocol(e2ePlan(3, 1, time.Second), 4)))
		st, m := runAt(t, prog, url)
		want := planned(prog)
		if m.OverlapCopies != want || m.Duplicates != 0 || m.Received != want || m.Lost != 0 {
			t.Errorf("overlap copies %d duplicates %d received %d lost %d, want %d, 0, %d, 0", m.OverlapCopies, m.Duplicates, m.Received, m.Lost, want, want)
		}
		_ = st
	})
	t.Run("$share: no shared subscriptions, and the run says so", func(t *testing.T) {
		p := onProtocol(e2ePlan(3, 1, time.Second), 4)
		p.Groups[0].Subscribe[0].Topic = plans.MustTemplate("$share/g/e2e/#")
		prog := compile(t, p)
		st, m := runAt(t, prog, url)
		// NATS grants the subscription and takes $share/g/e2e/# for a
		// plain topic, which nobody publishes to.
		if !hasNotice(st, `shared subscription "$share/g/e2e/#" received nothing: the broker may not support shared subscriptions`) {
			t.Errorf("no notice that the share group heard nothing: notices %v, errors %v", st.Notices, st.ErrorSamples)
		}
		if m.Received != 0 || m.Lost != m.Expected {
			t.Errorf("received %d lost %d expected %d", m.Received, m.Lost, m.Expected)
		}
	})
}

// TestOverlapOneCopy checks that brokers that send one copy per client
// for overlapping subscriptions (as MQTT 5 asks) show neither overlap
// copies nor duplicates.
func TestOverlapOneCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"embedded", nil},
		{"mosquitto", func(t *testing.T) string { return mosquittotest.Start(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := compile(t, overlapping(e2ePlan(3, 1, time.Second)))
			var st *stats.Stats
			if tc.url == nil {
				st, _ = runWith(t, prog, broker.Options{}, Options{})
			} else {
				st, _ = runAt(t, prog, tc.url(t))
			}
			m := all(st)
			want := planned(prog)
			if m.Received != want || m.Duplicates != 0 || m.Lost != 0 {
				t.Errorf("received %d duplicates %d lost %d overlap copies %d, want %d, 0, 0", m.Received, m.Duplicates, m.Lost, m.OverlapCopies, want)
			}
		})
	}
}

// TestQoSDowngrade runs a QoS 2 plan over MQTT 3.1.1 on a broker that
// grants and accepts QoS 1 at most, as RabbitMQ does: the granted QoS and
// the PUBACKs for QoS 2 publishes are reported, and the accounting stays
// exact.
func TestQoSDowngrade(t *testing.T) {
	one := byte(1)
	prog := compile(t, onProtocol(e2ePlan(3, 2, time.Second), 4))
	st, _ := runWith(t, prog, broker.Options{MaximumQoS: &one}, Options{})
	m := all(st)
	if !hasNotice(st, "group sub: asked QoS 2, the broker granted QoS 1 (3 of 3 clients)") {
		t.Errorf("no notice of the subscription downgrade: %v", st.Notices)
	}
	if !hasNotice(st, "group pub: "+strconv.FormatInt(m.Sent, 10)+" QoS 2 publishes were acknowledged with PUBACK") {
		t.Errorf("no notice of the %d publishes downgraded: %v", m.Sent, st.Notices)
	}
	if m.QoSDowngrades != 3+m.Sent {
		t.Errorf("qos_downgrades %d, want 3 subscriptions + %d publishes", m.QoSDowngrades, m.Sent)
	}
	if want := planned(prog); m.Received != want || m.Lost != 0 {
		t.Errorf("received %d lost %d, want %d, 0", m.Received, m.Lost, want)
	}
}

// refuseSubscriptions makes the broker refuse every subscription, by
// turning each filter into an invalid one before mochi checks it (SUBACK
// 0x8F topic filter invalid on MQTT 5, 0x80 on 3.1.1).
type refuseSubscriptions struct{ mqtt.HookBase }

func (h *refuseSubscriptions) ID() string           { return "test-refuse-subscriptions" }
func (h *refuseSubscriptions) Provides(b byte) bool { return b == mqtt.OnSubscribe }
func (h *refuseSubscriptions) OnSubscribe(_ *mqtt.Client, pk packets.Packet) packets.Packet {
	for i := range pk.Filters {
		pk.Filters[i].Filter = "refused/#/invalid"
	}
	return pk
}

// TestNoSubscriptionGranted checks that a subscribing group none of whose
// subscriptions the broker granted makes the run incomplete before
// anything is published, as a group none of whose clients connects does.
func TestNoSubscriptionGranted(t *testing.T) {
	for _, v := range []int{4, 5} {
		t.Run("MQTT "+strconv.Itoa(v), func(t *testing.T) {
			prog := compile(t, onProtocol(e2ePlan(3, 1, time.Second), v))
			st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{&refuseSubscriptions{}}}, Options{})
			if !strings.Contains(st.Incomplete, "group sub: none of its 3 clients could subscribe") || !strings.Contains(st.Incomplete, "refused") {
				t.Errorf("incomplete = %q", st.Incomplete)
			}
			if m := all(st); m.Sent != 0 || m.SubscribeFailed != 3 {
				t.Errorf("sent %d, subscriptions failed %d, want 0 and 3", m.Sent, m.SubscribeFailed)
			}
		})
	}
}

// TestDuplicatesWithOverlappingFilters: on a broker that sends one copy
// per client, a repeat on a stream with overlapping filters is a
// duplicate, not an overlap copy, even though one delivery at a time the
// two look alike. Counted as copies, a duplicating broker passed
// `dup_rate == 0` with subscribers whose filters overlap.
func TestDuplicatesWithOverlappingFilters(t *testing.T) {
	prog := compile(t, overlapping(e2ePlan(3, 1, time.Second)))
	st, b := runWith(t, prog, broker.Options{Faults: broker.Faults{DuplicateEvery: 10}}, Options{})
	m := all(st)
	fc := b.FaultCounts()
	if fc.Duplicated == 0 || m.Duplicates != int64(fc.Duplicated) || m.OverlapCopies != 0 {
		t.Errorf("duplicates %d overlap copies %d, the broker duplicated %d", m.Duplicates, m.OverlapCopies, fc.Duplicated)
	}
	if want := planned(prog); m.Received != want+m.Duplicates || m.Lost != 0 {
		t.Errorf("received %d lost %d, want %d + the duplicates, 0", m.Received, m.Lost, want)
	}
}
