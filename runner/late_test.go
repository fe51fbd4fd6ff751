package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

func TestEndRate(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name    string
		samples [][2]int64 // at (ms), got
		end     time.Duration
		got     int64
		want    int64
	}{
		{name: "no samples", end: s, got: 10, want: 0},
		{name: "steady 200/s over 3 s", samples: ramp(0, 3000, 100, 200), end: 3 * s, got: 600, want: 200},
		{name: "stopped 2 s before the end", samples: append(ramp(0, 1000, 100, 200), [2]int64{2000, 200}, [2]int64{2500, 200}), end: 3 * s, got: 200, want: 0},
		{name: "shorter than a second: over what it covers", samples: [][2]int64{{0, 0}, {100, 10}, {200, 20}}, end: 500 * time.Millisecond, got: 50, want: 100},
		{name: "samples closer than the step are skipped", samples: [][2]int64{{0, 0}, {10, 1}, {20, 2}, {1000, 100}}, end: 2 * s, got: 300, want: 200},
		{name: "the ring keeps the last second", samples: ramp(0, 10000, 100, 50), end: 10 * s, got: 500, want: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e endRate
			for _, sm := range tc.samples {
				e.sample(time.Duration(sm[0])*time.Millisecond, sm[1])
			}
			if got := e.rate(tc.end, tc.got); got != tc.want {
				t.Fatalf("rate %d, want %d", got, tc.want)
			}
		})
	}
}

// ramp is samples every step ms from a to b ms of a count growing at
// perSec.
func ramp(a, b, step, perSec int64) [][2]int64 {
	var out [][2]int64
	for at := a; at < b; at += step {
		out = append(out, [2]int64{at, at * perSec / 1000})
	}
	return out
}

// TestLateAccounting: against a broker that delays every delivery by
// 2 s, a 1 s drain ends with a second of messages on their way (a second,
// not less: the deliveries that arrive while the clients disconnect count
// too, and on a loaded machine that takes a while).
// In one process and split among shards (striped, so that every
// publisher's subscriber is on another shard) that loss is lost_late in
// every scope (phase, subscribing group, publishing group's own view),
// none of it the broker's, and the rate at drain's end is measured;
// with drain {max: 5s, quiet: 1s} every shard receives everything. The
// cases run one after another.
func TestLateAccounting(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	for _, tc := range []struct {
		name   string
		shards int
		quiet  time.Duration
	}{
		{name: "one process", shards: 1},
		{name: "three shards", shards: 3},
		{name: "three shards, drain {max, quiet}", shards: 3, quiet: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e2ePlan(4, 0, 2*time.Second)
			p.Drain = time.Second
			if tc.quiet > 0 {
				p.Drain, p.DrainQuiet = 5*time.Second, tc.quiet
			}
			p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
			prog := compile(t, p)
			b, err := broker.Start(broker.Options{Faults: broker.Faults{Delay: delay}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(5 * time.Second)
			var st *stats.Stats
			if tc.shards == 1 {
				st = runAgainst(t, prog, b.URL())
			} else {
				st, _ = runShards(t, prog, tc.shards, b.URL())
			}
			if st.Incomplete != "" {
				t.Fatalf("incomplete: %s", st.Incomplete)
			}
			m := all(st)
			t.Logf("lost %d late %d received %d of %d; rate %d/s, drain %v, quiet %v, phases %v", m.Lost, m.LostLate, m.Received, m.Expected, st.DrainEndRate, st.Drain, st.DrainQuiet, phaseSpans(st))
			if tc.quiet > 0 {
				if m.Lost != 0 || m.Received != m.Expected {
					t.Fatalf("lost %d, received %d of %d: drain {max, quiet} should have waited for them", m.Lost, m.Received, m.Expected)
				}
				return
			}
			// 50 messages a second over 4 publishers: a second is about
			// 200 deliveries on their way (more when a loaded machine
			// slows the broker's deliveries; at least 100 to test).
			if m.Lost < 100 || m.LostLate != m.Lost || m.LostUnsent != 0 || m.LostUnacked != 0 {
				t.Errorf("lost %d: late %d, unsent %d, unacked %d; want about 200, all late", m.Lost, m.LostLate, m.LostUnsent, m.LostUnacked)
			}
			for _, ph := range st.Phases {
				sub, pub := ph.Groups[0], ph.Groups[1]
				if sub.LostLate != sub.Lost || pub.LostLateOwn != pub.LostOwn || ph.Total.LostLate != ph.Total.Lost {
					t.Errorf("%s: sub lost %d late %d; pub lost %d late %d; total lost %d late %d", ph.Phase, sub.Lost, sub.LostLate, pub.LostOwn, pub.LostLateOwn, ph.Total.Lost, ph.Total.LostLate)
				}
			}
			// 200/s when the machine keeps up, never above what was
			// published.
			if st.DrainEndRate <= 0 || st.DrainEndRate > 300 {
				t.Errorf("rate at drain's end %d/s, want up to 200/s", st.DrainEndRate)
			}
			if st.Drain < time.Second || st.Drain > 2*time.Second {
				t.Errorf("drain lasted %v for a plan's 1s", st.Drain)
			}
		})
	}
	// In the same test, after the others: each of these runs wants the
	// machine's time to itself (three at once under -race, once, stretched
	// a 1 s drain to 8 s).
	t.Run("stages", testLateStages)
}

// runAgainst runs prog in one process against url.
func runAgainst(t *testing.T, prog *plans.Program, url string) *stats.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Run(ctx, prog, Options{BrokerURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// phaseSpans lists st's phases with their spans, for a failure's log.
func phaseSpans(st *stats.Stats) []string {
	var out []string
	for _, ph := range st.Phases {
		out = append(out, fmt.Sprintf("%s %v–%v", ph.Phase, ph.Start.Round(time.Millisecond), ph.End.Round(time.Millisecond)))
	}
	return out
}

// testLateStages: the late deliveries count in the stage their messages
// were intended in. A broker delaying 2 s against a 1 s drain leaves the
// second stage on its way: stage "b" loses about 200 deliveries, all
// late, stage "a" none.
func testLateStages(t *testing.T) {
	const plan = `name: late-stages
groups:
  - name: sub
    count: 4
    subscribe: {topic: "late/%i", qos: 0}
  - name: pub
    count: 4
    publish: {topic: "late/%i", qos: 0, size: 64}
stages:
  - {name: a, duration: 1s, every: 20ms}
  - {name: b, duration: 1s, every: 20ms}
drain: 1s
`
	p, err := plans.LoadBytes("late.yaml", []byte(plan), plans.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog := compile(t, p)
	b, err := broker.Start(broker.Options{Faults: broker.Faults{Delay: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	st := runAgainst(t, prog, b.URL())
	if len(st.Stages) != len(prog.Stages) {
		t.Fatalf("%d stages measured, the plan has %d", len(st.Stages), len(prog.Stages))
	}
	for _, s := range st.Stages {
		m := s.Metrics
		t.Logf("stage %s: expected %d received %d lost %d late %d", s.Name, m.Expected, m.Received, m.Lost, m.LostLate)
		if m.LostLate != m.Lost {
			t.Errorf("stage %s: lost %d, late %d; want all late", s.Name, m.Lost, m.LostLate)
		}
		if s.Name == "b" && m.Lost < 100 {
			t.Errorf("stage b: lost %d, want about 200", m.Lost)
		}
	}
}
