package runner

import (
	"fmt"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/internal/wait"
	"github.com/mqplan/mqplan/plans"
)

// TestChurnRandomLifetimes: with lifetime: {min, max} the runner follows
// the drawn timetable (plans/sessions_random.go) as it follows a periodic
// one: every planned leave is a DISCONNECT the broker reads, every return
// a session it resumes, the publishers skip exactly their away windows,
// and every expected delivery arrives once.
func TestChurnRandomLifetimes(t *testing.T) {
	p := churnPlan(5, true, true)
	p.Seed = 11
	for i := range p.Groups {
		p.Groups[i].ClientID = plans.MustTemplate(fmt.Sprintf("rl-%s-%%i", p.Groups[i].Name))
		if p.Groups[i].Churn != nil {
			p.Groups[i].Churn = &plans.Churn{Lifetime: 150 * time.Millisecond, LifetimeMax: 600 * time.Millisecond, Away: 200 * time.Millisecond}
		}
	}
	prog := compile(t, p)
	for _, gi := range []int{0, 1} {
		if s := prog.Groups[gi].Churn; !s.Drawn() || s.Total() < s.Clients {
			t.Fatalf("group %d: drawn %v, %d leaves: the test would prove little", gi, s.Drawn(), s.Total())
		}
	}
	truth := newDeliveryTruth()
	sess := &sessionTruth{sessions: map[string]int{}, resumed: map[string]int{}, disconnects: map[string]int{}}
	st, _ := runWith(t, prog, broker.Options{Hooks: []mqtt.Hook{truth, sess}}, Options{})
	checkChurnRun(t, prog, st)
	m := all(st)
	if lo, hi := truth.lostBounds("rl-sub", m.Expected); lo != 0 || hi != 0 {
		t.Errorf("the broker wrote all but %d and saw acknowledged all but %d of the %d expected deliveries", lo, hi, m.Expected)
	}
	for gi, prefix := range []string{"rl-sub", "rl-pub"} {
		planned := prog.Groups[gi].Churn.Total()
		if gi == 0 {
			if got := sess.sum(sess.resumed, prefix); got != planned {
				t.Errorf("the broker resumed %d kept sessions of %s, want one per planned return (%d)", got, prefix, planned)
			}
		}
		want := planned + prog.Groups[gi].Count // and the run's own DISCONNECT at its end
		wait.Until(t, fmt.Sprintf("the broker to read %d DISCONNECTs from %s", want, prefix), func() bool {
			return sess.sum(sess.disconnects, prefix) >= want
		})
		if got := sess.sum(sess.disconnects, prefix); got != want {
			t.Errorf("the broker read %d DISCONNECTs from %s, want %d", got, prefix, want)
		}
	}
}
