package runner

import (
	"fmt"
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/mosquittotest"
	"github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// stageClientsPlan: devices with kept sessions go 3 → 1 → 3 over the
// stages and take commands; sensors go 4 → 1 → 4 → 2 and publish, two of
// them away to the end.
func stageClientsPlan(t *testing.T, protocol int, prefix string) *plans.Program {
	t.Helper()
	src := fmt.Sprintf(`
broker: {protocol: %d, connect_timeout: 5s}
groups:
  - {name: devices, count: 3, client_id: "%s-dev-%%i", clean_start: false, session_expiry: 1h, subscribe: {topic: "sc/cmd/%%i", qos: 1}}
  - {name: backend, count: 3, client_id: "%s-be-%%i", publish: {topic: "sc/cmd/%%i", qos: 1}}
  - {name: sensors, count: 4, client_id: "%s-sen-%%i", publish: {topic: "sc/s/%%i", qos: 1}}
  - {name: sink, client_id: "%s-sink", subscribe: {topic: "sc/s/+", qos: 1}}
warmup: 300ms
drain: 3s
stages:
  - {duration: 400ms, every: 20ms, clients: {devices: 1, sensors: 1}}
  - {duration: 400ms, every: 20ms, clients: {devices: 3, sensors: 4}}
  - {duration: 400ms, every: 20ms, clients: {sensors: 2}}
`, protocol, prefix, prefix, prefix, prefix)
	p, err := plans.LoadBytes("sc.yaml", []byte(src), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return compile(t, p)
}

// checkStageClientsRun holds a run to the stage clients' timetable: every
// planned leave and return happened, none counted as a drop, the
// publishers sent exactly their connected windows, and every expected
// delivery arrived once.
func checkStageClientsRun(t *testing.T, prog *plans.Program, st *stats.Stats) {
	t.Helper()
	m := all(st)
	leaves, returns := int64(0), int64(0)
	for _, gp := range prog.Groups {
		if gp.Churn != nil {
			leaves += int64(gp.Churn.Total())
			returns += int64(gp.Churn.Returns())
		}
	}
	if leaves == 0 || returns == 0 || returns == leaves {
		t.Fatalf("%d leaves and %d returns: the test would not cover leaves without a return", leaves, returns)
	}
	if m.ChurnDisconnects != leaves || m.ChurnReconnects != returns {
		t.Errorf("churn disconnects %d, reconnects %d, want %d and %d", m.ChurnDisconnects, m.ChurnReconnects, leaves, returns)
	}
	if m.Disconnects != 0 || m.Reconnects != 0 || m.ClientsLost != 0 || m.Errors != 0 {
		t.Errorf("disconnects %d reconnects %d clients lost %d errors %d (%v): a planned leave is none of them",
			m.Disconnects, m.Reconnects, m.ClientsLost, m.Errors, st.ErrorSamples)
	}
	if want := int64(len(prog.Clients)) + returns; m.ConnectOK != want {
		t.Errorf("connect.ok %d, want %d: the first connects and every return", m.ConnectOK, want)
	}
	if m.Sent != planned(prog) || m.Unsent != 0 {
		t.Errorf("sent %d unsent %d, want the %d the timetable plans (away windows left out)", m.Sent, m.Unsent, planned(prog))
	}
	if m.Expected != m.Sent || m.Received != m.Expected || m.Lost != 0 || m.Duplicates != 0 {
		t.Errorf("expected %d received %d lost %d duplicates %d for %d sent", m.Expected, m.Received, m.Lost, m.Duplicates, m.Sent)
	}
}

func TestStageClientsEmbedded(t *testing.T) {
	prog := stageClientsPlan(t, 5, "scemb")
	truth := newDeliveryTruth()
	sess := &sessionTruth{sessions: map[string]int{}, resumed: map[string]int{}, disconnects: map[string]int{}}
	st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{truth, sess}}, Options{})
	checkStageClientsRun(t, prog, st)
	// The broker's side: what it wrote to the devices and saw acknowledged
	// is every command the backend sent (the devices' kept sessions queue
	// what they miss), once each.
	devExpected := int64(0)
	end := prog.Warmup + prog.Ramp + prog.Steady
	for i := range prog.Clients {
		if c := &prog.Clients[i]; c.Group == 1 {
			devExpected += int64(prog.Sends(c, 0, end))
		}
	}
	if lo, hi := truth.lostBounds("scemb-dev", devExpected); lo != 0 || hi != 0 {
		t.Errorf("the broker wrote all but %d and saw acknowledged all but %d of the %d commands", lo, hi, devExpected)
	}
	for _, g := range []struct {
		gi     int
		prefix string
	}{{0, "scemb-dev"}, {2, "scemb-sen"}} {
		s := prog.Groups[g.gi].Churn
		if g.gi == 0 {
			if got := sess.sum(sess.resumed, g.prefix); got != s.Returns() {
				t.Errorf("the broker resumed %d kept sessions of %s, want one per planned return (%d)", got, g.prefix, s.Returns())
			}
		}
		if got := sess.sum(sess.sessions, g.prefix); got != s.Clients+s.Returns() {
			t.Errorf("the broker established %d sessions for %s, want %d", got, g.prefix, s.Clients+s.Returns())
		}
		// Every planned leave is a DISCONNECT, and the run's own at its
		// end goes to the clients still connected (those back).
		want := s.Total() + s.Clients - (s.Total() - s.Returns())
		wait.Until(t, fmt.Sprintf("the broker to read %d DISCONNECTs from %s", want, g.prefix), func() bool {
			return sess.sum(sess.disconnects, g.prefix) >= want
		})
		if got := sess.sum(sess.disconnects, g.prefix); got != want {
			t.Errorf("the broker read %d DISCONNECTs from %s, want %d", got, g.prefix, want)
		}
	}
}

func TestStageClientsMosquitto(t *testing.T) {
	t.Parallel()
	url := mosquittotest.Start(t)
	for _, protocol := range []int{5, 4} {
		t.Run(fmt.Sprintf("protocol %d", protocol), func(t *testing.T) {
			st, _ := runAt(t, stageClientsPlan(t, protocol, fmt.Sprintf("scmq%d", protocol)), url)
			checkStageClientsRun(t, stageClientsPlan(t, protocol, "x"), st)
		})
	}
}
