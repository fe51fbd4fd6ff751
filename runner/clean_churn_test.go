package runner

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// cleanChurnPlan is churnPlan with subscribers that churn with a clean
// session: they subscribe again on each return, and what is published
// while they are away is not expected.
func cleanChurnPlan(protocol int, pubChurn bool) *plans.Plan {
	p := churnPlan(protocol, true, pubChurn)
	for i := range p.Groups {
		p.Groups[i].ClientID = plans.MustTemplate(fmt.Sprintf("clean-%s-v%d-%%i", p.Groups[i].Name, protocol))
	}
	p.Groups[0].CleanStart = true
	p.Groups[0].SessionExpiry = 0
	if pubChurn {
		// Not in step with the subscribers: some of their away windows
		// overlap, most do not.
		p.Groups[1].Churn = &plans.Churn{Lifetime: 450 * time.Millisecond, Away: 200 * time.Millisecond}
	}
	return p
}

// checkCleanRun holds a clean-churn run to the accounting's promises:
// nothing lost or duplicated, every expected delivery received, the
// ambiguous ones counted apart (at most all of them arrived), and fewer
// messages expected than sent (those published while a subscriber was
// away are not).
func checkCleanRun(t *testing.T, prog *plans.Program, st *stats.Stats) {
	t.Helper()
	m := all(st)
	if st.Incomplete != "" {
		t.Fatalf("incomplete: %s", st.Incomplete)
	}
	if m.ChurnDisconnects == 0 || m.ChurnDisconnects != m.ChurnReconnects {
		t.Errorf("churn disconnects %d reconnects %d", m.ChurnDisconnects, m.ChurnReconnects)
	}
	if m.Disconnects != 0 || m.ClientsLost != 0 || m.Errors != 0 {
		t.Errorf("disconnects %d clients lost %d errors %d (%v)", m.Disconnects, m.ClientsLost, m.Errors, st.ErrorSamples)
	}
	if m.Sent != planned(prog) || m.Unsent != 0 {
		t.Errorf("sent %d unsent %d, want the %d the timetable plans", m.Sent, m.Unsent, planned(prog))
	}
	if m.Lost != 0 || m.Duplicates != 0 || m.Received != m.Expected || m.Expected == 0 {
		t.Errorf("expected %d received %d lost %d duplicates %d", m.Expected, m.Received, m.Lost, m.Duplicates)
	}
	if m.ChurnAmbiguousReceived > m.ChurnAmbiguous {
		t.Errorf("ambiguous received %d, more than the %d ambiguous", m.ChurnAmbiguousReceived, m.ChurnAmbiguous)
	}
	// Each message reaches one subscriber: expected and ambiguous are
	// disjoint parts of what was sent, and the away windows leave a part
	// that is neither.
	if m.Expected+m.ChurnAmbiguous >= m.Sent {
		t.Errorf("expected %d + ambiguous %d, want less than the %d sent: what was published while a subscriber was away is not expected", m.Expected, m.ChurnAmbiguous, m.Sent)
	}
	if m.Unexpected != 0 || m.Foreign != 0 {
		t.Errorf("unexpected %d foreign %d: the fence is neither", m.Unexpected, m.Foreign)
	}
	t.Logf("sent %d expected %d received %d ambiguous %d (received %d)", m.Sent, m.Expected, m.Received, m.ChurnAmbiguous, m.ChurnAmbiguousReceived)
}

func TestCleanChurnEmbedded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pubChurn bool
	}{
		{name: "clean subscribers churn"},
		{name: "clean subscribers and publishers churn", pubChurn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := compile(t, cleanChurnPlan(5, tc.pubChurn))
			truth := newDeliveryTruth()
			st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{truth}}, Options{})
			checkCleanRun(t, prog, st)
			m := all(st)
			// The broker's side: what the subscribers acknowledged they
			// read, and what it wrote to them (read, or still unread in
			// the socket when a subscriber left), bound what mqplan
			// counted as read: received plus ambiguous received.
			read := m.Received + m.ChurnAmbiguousReceived
			wait.Until(t, "the broker to read the subscribers' acknowledgements", func() bool {
				_, hi := truth.lostBounds("clean-sub", read)
				return hi <= 0
			})
			lo, hi := truth.lostBounds("clean-sub", read)
			if lo > 0 || hi != 0 {
				t.Errorf("mqplan read %d deliveries; the broker wrote %d and saw %d acknowledged", read, read-lo, read-hi)
			}
			checkTimeline(t, st)
		})
	}
}

func TestCleanChurnMosquitto(t *testing.T) {
	url := mosquittotest.Start(t)
	for _, protocol := range []int{5, 4} {
		t.Run(fmt.Sprintf("protocol %d", protocol), func(t *testing.T) {
			prog := compile(t, cleanChurnPlan(protocol, true))
			st, _ := runAt(t, prog, url)
			checkCleanRun(t, prog, st)
		})
	}
}

// cleanDropHook drops every n-th measured delivery to a clean subscriber
// (never a fence), as a broker losing messages would, and counts them.
type cleanDropHook struct {
	mqtt.HookBase
	n             int64
	seen, dropped atomic.Int64
}

func (h *cleanDropHook) ID() string { return "test-clean-drop" }

func (h *cleanDropHook) Provides(b byte) bool { return b == mqtt.OnPacketEncode }

func (h *cleanDropHook) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type != packets.Publish || !strings.Contains(cl.ID, "clean-sub") {
		return pk
	}
	if _, ok := keyOf(pk.Payload); !ok || h.seen.Add(1)%h.n != 0 {
		return pk
	}
	if pk.FixedHeader.Qos > 0 && cl.State.Inflight.Delete(pk.PacketID) {
		cl.State.Inflight.IncreaseSendQuota()
	}
	h.dropped.Add(1)
	pk.FixedHeader.Type = packets.Reserved // mochi writes nothing
	return pk
}

// TestCleanChurnDrops: a broker that drops deliveries to clean churning
// subscribers shows them lost, each one that was expected: at least all
// of them less the ambiguous ones that never arrived, at most all.
func TestCleanChurnDrops(t *testing.T) {
	prog := compile(t, cleanChurnPlan(5, false))
	prog.Drain = time.Second
	drop := &cleanDropHook{n: 9}
	st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{drop}}, Options{})
	m := all(st)
	dropped := drop.dropped.Load()
	if dropped == 0 {
		t.Fatal("nothing dropped: the test proves nothing")
	}
	if lo := dropped - (m.ChurnAmbiguous - m.ChurnAmbiguousReceived); m.Lost < lo || m.Lost > dropped {
		t.Errorf("lost %d, want between %d and the %d dropped (ambiguous %d, received %d)", m.Lost, lo, dropped, m.ChurnAmbiguous, m.ChurnAmbiguousReceived)
	}
	if m.Duplicates != 0 || m.Received != m.Expected-m.Lost {
		t.Errorf("expected %d received %d lost %d duplicates %d", m.Expected, m.Received, m.Lost, m.Duplicates)
	}
	t.Logf("dropped %d lost %d ambiguous %d (received %d)", dropped, m.Lost, m.ChurnAmbiguous, m.ChurnAmbiguousReceived)
	checkTimeline(t, st)
}
