package runner

import (
	"testing"
	"time"

	"github.com/mqplan/mqplan/internal/mqttc"
	"github.com/mqplan/mqplan/plans"
)

// poissonRun is a run of Poisson publishers, compiled as `mqplan run`
// compiles them, with their clients as the runner makes them.
func poissonRun(tb testing.TB, count int) (*run, []*client) {
	tb.Helper()
	p := &plans.Plan{
		File: "poisson.yaml", Name: "poisson", Seed: 5,
		Broker: plans.Broker{URLs: []string{plans.Embedded}, Protocol: 5},
		Groups: []plans.Group{
			{Name: "pub", Count: count, Start: 1, Publish: &plans.Publish{Topic: plans.MustTemplate("t/%i"), QoS: 1, Size: 64, Every: time.Millisecond, Arrival: plans.ArrivalPoisson}},
		},
		Warmup:   200 * time.Millisecond,
		Ramp:     300 * time.Millisecond,
		Duration: time.Hour,
	}
	prog, err := plans.Compile(p, plans.CompileOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	r := &run{prog: prog, rec: newRecorder(len(prog.Groups), prog.Drain)}
	var cs []*client
	for i := range prog.Clients {
		pc := &prog.Clients[i]
		if !pc.Publish.Schedule.Poisson {
			tb.Fatalf("%s: not a Poisson schedule", pc.ID)
		}
		cs = append(cs, &client{plan: pc, cur: newCursors(pc)})
	}
	return r, cs
}

// TestPoissonScheduleReads: each place that reads a Poisson publisher's
// schedule once per message (the pacer, the publish goroutine, the
// acknowledgement and answer handlers) gets the schedule's own times
// through its cursor, across the phases and many blocks of arrivals, and
// allocates nothing doing so.
func TestPoissonScheduleReads(t *testing.T) {
	r, cs := poissonRun(t, 3)
	for _, c := range cs {
		pub := c.plan.Publish
		cur := pub.Schedule.Cursor()
		for k := 0; k < 3000; k++ {
			want, wantOK := pub.Schedule.At(k)
			pace, paceOK := c.paceAt(k)
			off, ok := cur.At(k)
			ack, ackOK := c.ackCursor().at(&pub.Schedule, k)
			ans, ansOK := c.answerCursor().at(&pub.Schedule, k)
			if pace != want || off != want || ack != want || ans != want || !(paceOK && ok && ackOK && ansOK && wantOK) {
				t.Fatalf("%s: message %d at %v: pacer %v, publisher %v, acks %v, answers %v", c.plan.ID, k, want, pace, off, ack, ans)
			}
			ph, intended := r.sentAsAt(pub, c.ackCursor(), mqttc.Token(k+1))
			if ph != r.prog.PhaseOf(want) || intended != int64(want) { // epoch and start 0 in this run
				t.Fatalf("%s: message %d: sentAs %v %d, want %v %d", c.plan.ID, k, ph, intended, r.prog.PhaseOf(want), int64(want))
			}
		}
	}
	c := cs[0]
	pub := c.plan.Publish
	cur := pub.Schedule.Cursor()
	k := 0
	if n := testing.AllocsPerRun(2000, func() {
		c.paceAt(k + 1)
		cur.At(k)
		r.sentAsAt(pub, c.ackCursor(), mqttc.Token(k+1))
		c.answerCursor().at(&pub.Schedule, k)
		k++
	}); n != 0 {
		t.Errorf("%v allocations per message", n)
	}
}

// BenchmarkPoissonScheduleReads is what reading a Poisson publisher's
// schedule costs per QoS 1 message: the pacer's, the publisher's and the
// acknowledgement's reads, by random access (Schedule.At, as before the
// cursors) and through the cursors.
func BenchmarkPoissonScheduleReads(b *testing.B) {
	for _, bc := range []struct {
		name    string
		cursors bool
	}{{"At", false}, {"cursors", true}} {
		b.Run(bc.name, func(b *testing.B) {
			r, cs := poissonRun(b, 1)
			c := cs[0]
			pub := c.plan.Publish
			cur := pub.Schedule.Cursor()
			if !bc.cursors {
				c.cur = nil
			}
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				c.paceAt(k + 1)
				if bc.cursors {
					cur.At(k)
				} else {
					pub.Schedule.At(k)
				}
				r.sentAsAt(pub, c.ackCursor(), mqttc.Token(k+1))
				k++
			}
		})
	}
}
