package plans

import (
	"math"
	"strings"
	"testing"
	"time"
)

// clientsAt is the oracle of a group's connected count at offset t over the
// stages (float, from the definition in stage_clients.go).
func clientsAt(stages []Stage, name string, count int, start, t time.Duration) float64 {
	ta, a := start, float64(count)
	for _, st := range stages {
		tb, b := ta+st.Duration, a
		if n, ok := st.Clients[name]; ok {
			b = float64(n)
		}
		if t < tb {
			if t < ta {
				return a
			}
			return a + (b-a)*float64(t-ta)/float64(tb-ta)
		}
		ta, a = tb, b
	}
	return a
}

// TestStageSessions holds the stage clients' windows to the count: client
// j is away exactly when the count is below j+1 (checked off the
// transition instants), the highest-numbered leaves first, and Sends
// counts exactly the messages intended while connected.
func TestStageSessions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stages []Stage
		count  int
		warmup time.Duration
	}{
		{name: "0 → 10 → 4 with a jump", count: 10, warmup: 500 * time.Millisecond, stages: []Stage{
			{Duration: 0, Clients: map[string]int{"g": 0}}, {Duration: 2 * time.Second, Clients: map[string]int{"g": 10}}, {Duration: time.Second, Clients: map[string]int{"g": 4}}, {Duration: time.Second}}},
		{name: "down and up and down, unnamed stages hold", count: 7, stages: []Stage{
			{Duration: 3 * time.Second, Clients: map[string]int{"g": 1}}, {Duration: time.Second}, {Duration: 1500 * time.Millisecond, Clients: map[string]int{"g": 7}}, {Duration: 700 * time.Millisecond, Clients: map[string]int{"g": 3}}}},
		{name: "other groups' counts do not move this one", count: 3, stages: []Stage{
			{Duration: time.Second, Clients: map[string]int{"h": 0}}, {Duration: time.Second, Clients: map[string]int{"g": 2, "h": 5}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := tc.warmup + StagesTotal(tc.stages)
			s := newStageSessions(tc.stages, "g", tc.count, tc.warmup, end)
			var edges []time.Duration
			for j := 0; j < tc.count; j++ {
				for k := 0; k < s.Disconnects(j); k++ {
					edges = append(edges, s.DisconnectAt(j, k), s.BackAt(j, k))
				}
			}
			near := func(t time.Duration) bool {
				for _, e := range edges {
					if t >= e-2 && t <= e+2 {
						return true
					}
				}
				return false
			}
			for j := 0; j < tc.count; j++ {
				for t0 := time.Duration(0); t0 < end+time.Second; t0 += 7 * time.Millisecond {
					if near(t0) {
						continue
					}
					_, away := s.Back(j, t0)
					want := t0 < end && clientsAt(tc.stages, "g", tc.count, tc.warmup, t0) < float64(j+1)-1e-9
					if t0 >= end { // after publishing the state stays as it was at the end
						want = clientsAt(tc.stages, "g", tc.count, tc.warmup, end-1) < float64(j+1)-1e-9
					}
					if away != want {
						t.Fatalf("client %d at %v: away %v, want %v (count %.3f)", j, t0, away, want, clientsAt(tc.stages, "g", tc.count, tc.warmup, t0))
					}
				}
				// LIFO: a higher-numbered client leaves no later and
				// returns no earlier than a lower-numbered one.
				if j > 0 && s.Disconnects(j-1) > 0 && s.Disconnects(j) > 0 && s.DisconnectAt(j, 0) > s.DisconnectAt(j-1, 0) {
					t.Errorf("client %d first leaves at %v, after client %d (%v)", j, s.DisconnectAt(j, 0), j-1, s.DisconnectAt(j-1, 0))
				}
			}
			sc := Schedule{Interval: 13 * time.Millisecond, Warmup: tc.warmup, Steady: end - tc.warmup}
			for j := 0; j < tc.count; j++ {
				var due []time.Duration
				for k := 0; ; k++ {
					at, ok := sc.At(k)
					if !ok {
						break
					}
					due = append(due, at)
				}
				points := append([]time.Duration{0, end / 3, end}, edges...)
				for _, from := range points {
					for _, to := range points {
						want := 0
						for _, at := range due {
							if _, away := s.Back(j, at); at >= from && at < to && !away {
								want++
							}
						}
						if got := s.Sends(sc, j, from, to); got != want {
							t.Fatalf("client %d: Sends[%v, %v) = %d, want %d", j, from, to, got, want)
						}
					}
				}
			}
			returns := 0
			for j := 0; j < tc.count; j++ {
				for k := 0; k < s.Disconnects(j); k++ {
					if s.BackAt(j, k) != math.MaxInt64 {
						returns++
					}
				}
			}
			if s.Returns() != returns || s.Reconnects(0, math.MaxInt64) != returns {
				t.Errorf("Returns %d, Reconnects %d, want %d", s.Returns(), s.Reconnects(0, math.MaxInt64), returns)
			}
		})
	}
}

func TestStageClientsPlan(t *testing.T) {
	const head = "broker: {protocol: 5}\n"
	for _, tc := range []struct {
		name, plan, want string
	}{
		{name: "unknown group", plan: "groups:\n  - {name: devices, publish: {topic: t}}\nstages:\n  - {duration: 1s, every: 1s, clients: {device: 1}}\n", want: `stages[0].clients.device: no group is named "device": did you mean "devices"?`},
		{name: "more than the count", plan: "groups:\n  - {name: d, count: 2, publish: {topic: t}}\nstages:\n  - {duration: 1s, every: 1s, clients: {d: 3}}\n", want: "must be at most the group's count (2), got 3"},
		{name: "not a mapping", plan: "groups:\n  - {name: d, publish: {topic: t}}\nstages:\n  - {duration: 1s, every: 1s, clients: 3}\n", want: "must be a mapping of group name to connected clients"},
		{name: "negative", plan: "groups:\n  - {name: d, publish: {topic: t}}\nstages:\n  - {duration: 1s, every: 1s, clients: {d: -1}}\n", want: "stages[0].clients.d: must be at least 0"},
		{name: "subscriber away at the end", plan: "groups:\n  - {name: s, count: 2, clean_start: false, session_expiry: 1h, subscribe: {topic: t, qos: 1}}\n  - {name: p, publish: {topic: t, qos: 1}}\nstages:\n  - {duration: 1s, every: 1s, clients: {s: 1}}\n", want: "leaves 1 of subscribing group s's 2 clients away at the end of the stages"},
		{name: "session shorter than the time away", plan: "groups:\n  - {name: s, count: 2, clean_start: false, session_expiry: 5s, subscribe: {topic: t, qos: 1}}\n  - {name: p, publish: {topic: t, qos: 1}}\nstages:\n  - {duration: 0s, every: 1s, clients: {s: 0}}\n  - {duration: 10s, every: 1s, clients: {s: 2}}\n", want: "session_expiry (5s) must be at least the longest time a client is away (10s) + broker.connect_timeout (10s)"},
		{name: "with churn", plan: "groups:\n  - {name: d, count: 2, lifetime: 1s, publish: {topic: t}}\nstages:\n  - {duration: 2s, every: 1s, clients: {d: 1}}\n", want: "not supported yet with lifetime or churn on group d"},
		{name: "QoS 0 subscription", plan: "groups:\n  - {name: s, count: 2, clean_start: false, session_expiry: 1h, subscribe: {topic: t, qos: 0}}\nstages:\n  - {duration: 1s, every: 1s, clients: {s: 1}}\n  - {duration: 1s, every: 1s, clients: {s: 2}}\n", want: "groups[0].subscribe[0].qos: must be 1 or 2 in a group whose clients the stages move"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("x.yaml", []byte(head+tc.plan), LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "x.yaml:") {
				t.Errorf("error %v has no position", err)
			}
		})
	}
}

// TestStageClientsClean: a subscribing group with a clean session may be
// moved by the stages, and end them with clients away (nothing is queued
// for them: what is published while a client is away is not expected).
func TestStageClientsClean(t *testing.T) {
	for _, tc := range []struct{ name, stages string }{
		{name: "back to its count", stages: "  - {duration: 1s, every: 1s, clients: {s: 1}}\n  - {duration: 1s, every: 1s, clients: {s: 2}}\n"},
		{name: "away at the end", stages: "  - {duration: 1s, every: 1s, clients: {s: 1}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := "broker: {protocol: 5}\ngroups:\n  - {name: s, count: 2, clean_start: true, subscribe: {topic: t, qos: 1}}\n  - {name: p, publish: {topic: t, qos: 1}}\nstages:\n" + tc.stages
			p, err := LoadBytes("x.yaml", []byte(plan), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Compile(p, CompileOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
