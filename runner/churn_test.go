package runner

import (
	"fmt"
	"strings"
	"sync"
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

// sessionTruth counts, by client id, the sessions the broker established
// and how many of them resumed a kept session, and the DISCONNECT packets
// it read (a planned leave, not a dropped connection).
type sessionTruth struct {
	mqtt.HookBase
	mu          sync.Mutex
	sessions    map[string]int
	resumed     map[string]int
	disconnects map[string]int
}

func (h *sessionTruth) ID() string { return "test-session-truth" }

func (h *sessionTruth) Provides(b byte) bool {
	return b == mqtt.OnSessionEstablished || b == mqtt.OnPacketRead
}

func (h *sessionTruth) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[cl.ID]++
	if !pk.Connect.Clean && h.sessions[cl.ID] > 1 {
		h.resumed[cl.ID]++
	}
}

func (h *sessionTruth) OnPacketRead(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type == packets.Disconnect {
		h.mu.Lock()
		h.disconnects[cl.ID]++
		h.mu.Unlock()
	}
	return pk, nil
}

// sum adds the counts of m's client ids containing match (m is one of
// h's maps: read under its lock, the broker may still be writing).
func (h *sessionTruth) sum(m map[string]int, match string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for id, v := range m {
		if strings.Contains(id, match) {
			n += v
		}
	}
	return n
}

// churnPlan: 3 subscribers on their own topics with kept sessions, 3
// publishers every 20 ms; the subscribers churn when subChurn, the
// publishers when pubChurn (each leaves every 600 ms, 250 ms away, in
// turn).
func churnPlan(protocol int, subChurn, pubChurn bool) *plans.Plan {
	p := e2ePlan(3, 1, 2*time.Second)
	p.Broker.Protocol = protocol
	p.Broker.ConnectTimeout = 5 * time.Second
	ch := &plans.Churn{Lifetime: 350 * time.Millisecond, Away: 250 * time.Millisecond}
	for i := range p.Groups {
		p.Groups[i].Protocol = protocol
		// Ids of their own per protocol: a kept session of one run must not
		// serve the next.
		p.Groups[i].ClientID = plans.MustTemplate(fmt.Sprintf("churn-%s-v%d-%%i", p.Groups[i].Name, protocol))
	}
	if subChurn {
		sub := &p.Groups[0]
		sub.Churn = ch
		sub.CleanStart = false
		sub.SessionExpiry = time.Hour
	}
	if pubChurn {
		p.Groups[1].Churn = ch
	}
	return p
}

// checkChurnRun holds a churning run to its plan and to the broker's
// record: every planned leave and return happened as a DISCONNECT and a
// new session, nothing counted as a drop, and every expected delivery
// arrived exactly once.
func checkChurnRun(t *testing.T, prog *plans.Program, st *stats.Stats) {
	t.Helper()
	m := all(st)
	plannedLeaves := int64(0)
	for _, gp := range prog.Groups {
		if gp.Churn != nil {
			plannedLeaves += int64(gp.Churn.Total())
		}
	}
	if plannedLeaves == 0 {
		t.Fatal("the plan has no planned leave: the test would prove nothing")
	}
	if m.ChurnDisconnects != plannedLeaves || m.ChurnReconnects != plannedLeaves {
		t.Errorf("churn disconnects %d, reconnects %d, want the %d planned", m.ChurnDisconnects, m.ChurnReconnects, plannedLeaves)
	}
	if m.Disconnects != 0 || m.Reconnects != 0 || m.ClientsLost != 0 || m.Errors != 0 {
		t.Errorf("disconnects %d reconnects %d clients lost %d errors %d (%v): a planned leave is none of them",
			m.Disconnects, m.Reconnects, m.ClientsLost, m.Errors, st.ErrorSamples)
	}
	if want := int64(len(prog.Clients)) + plannedLeaves; m.ConnectOK != want {
		t.Errorf("connect.ok %d, want %d: the first connects and every return", m.ConnectOK, want)
	}
	if m.Sent != planned(prog) || m.Unsent != 0 {
		t.Errorf("sent %d unsent %d, want the %d the timetable plans (away windows left out)", m.Sent, m.Unsent, planned(prog))
	}
	if m.Expected != m.Sent || m.Received != m.Expected || m.Lost != 0 || m.Duplicates != 0 {
		t.Errorf("expected %d received %d lost %d duplicates %d for %d sent", m.Expected, m.Received, m.Lost, m.Duplicates, m.Sent)
	}
	checkTimeline(t, st)
}

func TestChurnEmbedded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		subChurn, pubChurn bool
	}{
		{name: "subscribers with kept sessions churn: everything queued while away arrives once", subChurn: true},
		{name: "publishers churn: their away windows are skipped, not unsent", pubChurn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog := compile(t, churnPlan(5, tc.subChurn, tc.pubChurn))
			truth := newDeliveryTruth()
			sess := &sessionTruth{sessions: map[string]int{}, resumed: map[string]int{}, disconnects: map[string]int{}}
			st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{truth, sess}}, Options{})
			checkChurnRun(t, prog, st)
			m := all(st)
			// The broker's side: what it wrote to the subscribers and saw
			// acknowledged is every expected delivery, once each.
			if lo, hi := truth.lostBounds("churn-sub", m.Expected); lo != 0 || hi != 0 {
				t.Errorf("the broker wrote all but %d and saw acknowledged all but %d of the %d expected deliveries", lo, hi, m.Expected)
			}
			churned := "churn-pub"
			if tc.subChurn {
				churned = "churn-sub"
				if got := sess.sum(sess.resumed, churned); int64(got) != m.ChurnReconnects {
					t.Errorf("the broker resumed %d kept sessions, want one per return (%d)", got, m.ChurnReconnects)
				}
			}
			if got := sess.sum(sess.sessions, churned); int64(got) != 3+m.ChurnReconnects {
				t.Errorf("the broker established %d sessions for %s, want %d", got, churned, 3+m.ChurnReconnects)
			}
			// Every planned leave is a DISCONNECT the broker read during
			// publishing, plus the run's own at its end (which the broker
			// may still be reading when the run returns).
			want := int(m.ChurnDisconnects) + 3
			wait.Until(t, fmt.Sprintf("the broker to read %d DISCONNECTs from %s", want, churned), func() bool {
				return sess.sum(sess.disconnects, churned) >= want
			})
			if got := sess.sum(sess.disconnects, churned); got != want {
				t.Errorf("the broker read %d DISCONNECTs from %s, want %d", got, churned, want)
			}
		})
	}
}

func TestChurnMosquitto(t *testing.T) {
	t.Parallel()
	url := mosquittotest.Start(t)
	for _, protocol := range []int{5, 4} {
		t.Run(fmt.Sprintf("protocol %d", protocol), func(t *testing.T) {
			prog := compile(t, churnPlan(protocol, true, true))
			st, _ := runAt(t, prog, url)
			checkChurnRun(t, prog, st)
		})
	}
}
