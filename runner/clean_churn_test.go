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
// messages expected than sent times fanout, the subscribers each reaches
// (those published while a subscriber was away are not).
func checkCleanRun(t *testing.T, prog *plans.Program, st *stats.Stats, fanout int64) {
	t.Helper()
	m := all(st)
	if st.Incomplete != "" {
		t.Fatalf("incomplete: %s", st.Incomplete)
	}
	leaves, returns := 0, 0
	for _, gp := range prog.Groups {
		if gp.Churn != nil {
			leaves += gp.Churn.Total()
			returns += gp.Churn.Returns()
		}
	}
	if leaves == 0 || m.ChurnDisconnects != int64(leaves) || m.ChurnReconnects != int64(returns) {
		t.Errorf("churn disconnects %d reconnects %d, want the %d and %d planned", m.ChurnDisconnects, m.ChurnReconnects, leaves, returns)
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
	// Expected and ambiguous are disjoint parts of the deliveries the
	// messages sent would make to subscribers always present, and the
	// away windows leave a part that is neither.
	if m.Expected+m.ChurnAmbiguous >= fanout*m.Sent {
		t.Errorf("expected %d + ambiguous %d, want less than %d × the %d sent: what was published while a subscriber was away is not expected", m.Expected, m.ChurnAmbiguous, fanout, m.Sent)
	}
	if m.Unexpected != 0 || m.Foreign != 0 {
		t.Errorf("unexpected %d foreign %d: the fence is neither", m.Unexpected, m.Foreign)
	}
	t.Logf("sent %d expected %d received %d ambiguous %d (received %d)", m.Sent, m.Expected, m.Received, m.ChurnAmbiguous, m.ChurnAmbiguousReceived)
}

// Not parallel: beside the package's parallel tests under -race its
// clean subscribers' fences came back late enough that most windows were
// ambiguous (154 of 240 messages) and the broker had not read the last
// acknowledgements when the wait ended; it runs before them, as
// TestLateIsNotLostByBroker does.
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
			checkCleanRun(t, prog, st, 1)
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
	t.Parallel()
	url := mosquittotest.Start(t)
	for _, protocol := range []int{5, 4} {
		t.Run(fmt.Sprintf("protocol %d", protocol), func(t *testing.T) {
			prog := compile(t, cleanChurnPlan(protocol, true))
			st, _ := runAt(t, prog, url)
			checkCleanRun(t, prog, st, 1)
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

// cleanStagePlan: 3 dashboards with a clean session hear 4 sensors; the
// stages take the dashboards 3 → 1 → 3 → 1, two of them away to the end
// (nothing is queued for them), and the sensors 4 → 2 → 4.
func cleanStagePlan(t *testing.T, protocol int, prefix string) *plans.Program {
	t.Helper()
	src := fmt.Sprintf(`
broker: {protocol: %d, connect_timeout: 5s}
groups:
  - {name: dashboards, count: 3, client_id: "%s-clean-sub-%%i", clean_start: true, subscribe: {topic: "cs/+", qos: 1}}
  - {name: sensors, count: 4, client_id: "%s-sen-%%i", publish: {topic: "cs/%%i", qos: 1}}
warmup: 300ms
drain: 3s
stages:
  - {duration: 400ms, every: 20ms, clients: {dashboards: 1, sensors: 2}}
  - {duration: 400ms, every: 20ms, clients: {dashboards: 3, sensors: 4}}
  - {duration: 400ms, every: 20ms, clients: {dashboards: 1}}
`, protocol, prefix, prefix)
	p, err := plans.LoadBytes("cs.yaml", []byte(src), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return compile(t, p)
}

func TestCleanStageClients(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		prog := cleanStagePlan(t, 5, "csemb")
		truth := newDeliveryTruth()
		st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{truth}}, Options{})
		checkCleanStageRun(t, prog, st)
		m := all(st)
		read := m.Received + m.ChurnAmbiguousReceived
		wait.Until(t, "the broker to read the dashboards' acknowledgements", func() bool {
			_, hi := truth.lostBounds("clean-sub", read)
			return hi <= 0
		})
		if lo, hi := truth.lostBounds("clean-sub", read); lo > 0 || hi != 0 {
			t.Errorf("mqplan read %d deliveries; the broker wrote %d and saw %d acknowledged", read, read-lo, read-hi)
		}
	})
	url := mosquittotest.Start(t)
	for _, protocol := range []int{5, 4} {
		t.Run(fmt.Sprintf("mosquitto protocol %d", protocol), func(t *testing.T) {
			prog := cleanStagePlan(t, protocol, fmt.Sprintf("csmq%d", protocol))
			st, _ := runAt(t, prog, url)
			checkCleanStageRun(t, prog, st)
		})
	}
}

// checkCleanStageRun: every planned leave and return, none a drop, and
// the clean accounting's promises (checkCleanRun's, with leaves that do
// not come back).
func checkCleanStageRun(t *testing.T, prog *plans.Program, st *stats.Stats) {
	t.Helper()
	s := prog.Groups[0].Churn
	if s.Total() == s.Returns() {
		t.Fatal("every dashboard comes back: the test would not cover clean sessions that end away")
	}
	checkCleanRun(t, prog, st, 3)
	// Each stage's cell books its messages' windows the same way.
	var exp int64
	for i := range st.Stages {
		sm := &st.Stages[i].Metrics
		if sm.Lost != 0 || sm.Duplicates != 0 || sm.Received != sm.Expected || sm.ChurnAmbiguousReceived > sm.ChurnAmbiguous {
			t.Errorf("stage %d: expected %d received %d lost %d duplicates %d ambiguous %d (received %d)", i, sm.Expected, sm.Received, sm.Lost, sm.Duplicates, sm.ChurnAmbiguous, sm.ChurnAmbiguousReceived)
		}
		exp += sm.Expected
	}
	if len(st.Stages) != 3 || exp == 0 {
		t.Errorf("%d stages expecting %d deliveries in all", len(st.Stages), exp)
	}
}

// fenceDropHook acknowledges a clean subscriber's fence (mochi does, on
// receipt) but never delivers it back, as a broker failing to route one
// QoS 1 message would.
type fenceDropHook struct {
	mqtt.HookBase
	dropped atomic.Int64
}

func (h *fenceDropHook) ID() string { return "test-fence-drop" }

func (h *fenceDropHook) Provides(b byte) bool { return b == mqtt.OnPacketEncode }

func (h *fenceDropHook) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type != packets.Publish || !strings.HasPrefix(string(pk.Payload), fencePrefix) {
		return pk
	}
	if pk.FixedHeader.Qos > 0 && cl.State.Inflight.Delete(pk.PacketID) {
		cl.State.Inflight.IncreaseSendQuota()
	}
	h.dropped.Add(1)
	pk.FixedHeader.Type = packets.Reserved // mochi writes nothing
	return pk
}

// TestCleanFenceNotDeliveredIsAnError: a broker that acknowledges a
// leaving clean subscriber's fence and never delivers it makes that
// session's last moments ambiguous; it must count as an error (so the
// built-in errors == 0 fails the run), not pass as a notice: a broker
// that delivered nothing to clean subscribers would otherwise see every
// window ambiguous and nothing lost.
func TestCleanFenceNotDeliveredIsAnError(t *testing.T) {
	p := cleanChurnPlan(5, false)
	// Each dropped fence is waited for this long. With one second, CI
	// once counted 8 errors for 7 drops, beside another package's tests
	// under race: most likely a fence the broker had not yet written when
	// the wait ended (an error the hook never saw; not reproduced alone,
	// 6 of 6 passed beside busy loops).
	p.Broker.ConnectTimeout = 3 * time.Second
	prog := compile(t, p)
	drop := &fenceDropHook{}
	st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{drop}}, Options{})
	m := all(st)
	if drop.dropped.Load() == 0 {
		t.Fatal("no fence dropped: the test proves nothing")
	}
	if m.Errors != drop.dropped.Load() {
		t.Errorf("errors %d, want one per fence the broker kept (%d)", m.Errors, drop.dropped.Load())
	}
	for _, s := range st.ErrorSamples {
		if !strings.Contains(s, "did not deliver it back") {
			t.Errorf("error %q: want the undelivered fence", s)
		}
	}
}
