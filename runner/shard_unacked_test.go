package runner

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/plans"
)

// ackDropHook withholds every n-th PUBACK the broker sends a publisher:
// the message is delivered, its publisher never learns it was taken.
type ackDropHook struct {
	mqtt.HookBase
	n             int64
	seen, dropped atomic.Int64
}

func (h *ackDropHook) ID() string { return "test-ack-drop" }

func (h *ackDropHook) Provides(b byte) bool { return b == mqtt.OnPacketEncode }

func (h *ackDropHook) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type != packets.Puback || !strings.Contains(cl.ID, "-pub-") || h.seen.Add(1)%h.n != 0 {
		return pk
	}
	h.dropped.Add(1)
	pk.FixedHeader.Type = packets.Pingresp // a PINGRESP instead, which the publisher takes as nothing
	return pk
}

// TestShardsUnacked: the lost_unacked cause with every subscriber on
// another shard than its publisher. The publisher's shard alone cannot
// see its messages arrive: it used to count every unacknowledged message
// lost_unacked, delivered or not (24 of 120 delivered ones here, with
// nothing lost). The shards now exchange the unacknowledged messages at
// the end and each counts what its own receivers missed: none of those
// the broker delivered without acknowledging them; each one it swallowed
// (dropping its publisher) when it was never delivered, and loss is then
// unsent plus unacknowledged, as in one process (TestLostUnacked).
func TestShardsUnacked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delivered bool
	}{
		{"delivered, never acknowledged", true},
		{"swallowed, publisher dropped", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e2ePlan(3, 1, 600*time.Millisecond)
			p.Drain = time.Second
			p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
			prog := compile(t, p)
			ackDrop := &ackDropHook{n: 5}
			var hook mqtt.Hook = ackDrop
			if !tc.delivered {
				hook = &swallowHook{match: "-pub-", at: 10, seen: map[string]int{}}
			}
			b, err := broker.Start(broker.Options{Hooks: []mqtt.Hook{hook}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(5 * time.Second)
			st, _ := runShards(t, prog, 2, b.URL())
			if st.Incomplete != "" {
				t.Fatalf("incomplete: %s", st.Incomplete)
			}
			m := all(st)
			if tc.delivered {
				if ackDrop.dropped.Load() == 0 || st.InFlightAtEnd == 0 {
					t.Fatalf("%d PUBACKs withheld, %d unacknowledged at the end: the test tests nothing", ackDrop.dropped.Load(), st.InFlightAtEnd)
				}
				if m.Sent != planned(prog) || m.Received != m.Expected || m.Lost != 0 || m.LostUnacked != 0 {
					t.Errorf("sent %d of %d, expected %d, received %d, lost %d, lost_unacked %d: want everything received and nothing lost",
						m.Sent, planned(prog), m.Expected, m.Received, m.Lost, m.LostUnacked)
				}
				return
			}
			// Each publisher's 10th message was swallowed, and the
			// publisher dropped with it: 3 unacknowledged, undelivered.
			if m.LostUnacked != 3 || m.Lost != m.LostUnsent+m.LostUnacked || m.Unsent == 0 {
				t.Errorf("lost %d = unsent %d + unacked %d (want 3) + %d by the broker, which acknowledged nothing it lost", m.Lost, m.LostUnsent, m.LostUnacked, m.Lost-m.LostUnsent-m.LostUnacked)
			}
		})
	}
}
