package plans

import (
	"math"
	"strings"
	"testing"
	"time"
)

// awayOracle says, by walking the windows one by one, whether client j is
// away at t.
func awayOracle(s *Sessions, j int, t time.Duration) bool {
	for k := 0; k < s.Disconnects(j); k++ {
		d := s.DisconnectAt(j, k)
		if t >= d && t < d+s.Away {
			return true
		}
	}
	return false
}

func TestSessionsTimetable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		churn Churn
		count int
		end   time.Duration
		// disconnects per client, first disconnect of client 0, period
		want   []int
		first0 time.Duration
		period time.Duration
	}{
		{name: "churn rate: 2 clients at 1/s leave in turn every second", churn: Churn{Rate: 1, Away: 300 * time.Millisecond},
			count: 2, end: 5 * time.Second, want: []int{2, 2}, first0: time.Second, period: 2 * time.Second},
		{name: "lifetime 1s away 1s, 4 clients staggered by half a second", churn: Churn{Lifetime: time.Second, Away: time.Second},
			count: 4, end: 4 * time.Second, want: []int{2, 1, 1, 1}, first0: 500 * time.Millisecond, period: 2 * time.Second},
		{name: "a return at the end of publishing is too late: no disconnect", churn: Churn{Lifetime: 2 * time.Second, Away: time.Second},
			count: 1, end: 3 * time.Second, want: []int{0}, first0: 3 * time.Second, period: 3 * time.Second},
		{name: "away 0: reconnect at once", churn: Churn{Rate: 10},
			count: 3, end: time.Second, want: []int{3, 3, 3}, first0: 100 * time.Millisecond, period: 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSessions(&tc.churn, tc.count, tc.end)
			if s.Period != tc.period {
				t.Fatalf("period %v, want %v", s.Period, tc.period)
			}
			if got := s.DisconnectAt(0, 0); got != tc.first0 {
				t.Errorf("client 0 first leaves at %v, want %v", got, tc.first0)
			}
			total := 0
			for j, w := range tc.want {
				if got := s.Disconnects(j); got != w {
					t.Errorf("client %d: %d disconnects, want %d", j, got, w)
				}
				total += w
				for k := 0; k < s.Disconnects(j); k++ {
					if d := s.DisconnectAt(j, k); d+s.Away >= tc.end {
						t.Errorf("client %d leaves at %v and is back at or after the end %v", j, d, tc.end)
					}
					start, end := s.Session(j, k+1)
					if prevEnd := func() time.Duration { _, e := s.Session(j, k); return e }(); start != prevEnd+s.Away {
						t.Errorf("client %d session %d starts at %v, want %v", j, k+1, start, prevEnd+s.Away)
					}
					if k+1 == s.Disconnects(j) && end != math.MaxInt64 {
						t.Errorf("client %d's last session ends at %v, want the run's end", j, end)
					}
				}
			}
			if got := s.Total(); got != total {
				t.Errorf("Total %d, want %d", got, total)
			}
			if got := s.Reconnects(0, tc.end); got != total {
				t.Errorf("Reconnects over publishing %d, want every disconnect's %d", got, total)
			}
		})
	}
}

// TestSessionsSends holds Sends and Back to a walk over every message of
// the schedule against the away windows, for phases, ramps and staggers.
func TestSessionsSends(t *testing.T) {
	for _, tc := range []struct {
		name  string
		churn Churn
		count int
		sched Schedule
	}{
		{name: "steady 10 ms, away 250 ms", churn: Churn{Lifetime: 700 * time.Millisecond, Away: 250 * time.Millisecond}, count: 3,
			sched: Schedule{Interval: 10 * time.Millisecond, Steady: 5 * time.Second}},
		{name: "warmup, ramp and steady, churn 5/s", churn: Churn{Rate: 5, Away: 130 * time.Millisecond}, count: 4,
			sched: Schedule{Interval: 7 * time.Millisecond, Warmup: 300 * time.Millisecond, Ramp: 900 * time.Millisecond, Steady: 2 * time.Second}},
		{name: "away shorter than the interval", churn: Churn{Lifetime: 90 * time.Millisecond, Away: 3 * time.Millisecond}, count: 2,
			sched: Schedule{Interval: 20 * time.Millisecond, Steady: time.Second}},
		{name: "random lifetime 200 ms to 900 ms, away 150 ms, with a ramp", churn: Churn{Lifetime: 200 * time.Millisecond, LifetimeMax: 900 * time.Millisecond, Away: 150 * time.Millisecond}, count: 4,
			sched: Schedule{Interval: 9 * time.Millisecond, Warmup: 200 * time.Millisecond, Ramp: 700 * time.Millisecond, Steady: 3 * time.Second}},
		{name: "random lifetime, away 0", churn: Churn{Lifetime: 50 * time.Millisecond, LifetimeMax: 400 * time.Millisecond}, count: 3,
			sched: Schedule{Interval: 10 * time.Millisecond, Steady: 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := compileSessions(&tc.churn, tc.count, 0, tc.sched.End(), 1)
			for j := 0; j < tc.count; j++ {
				sc := tc.sched
				sc.Phase = float64(j) / float64(tc.count)
				var times []time.Duration
				for k := 0; ; k++ {
					at, ok := sc.At(k)
					if !ok {
						break
					}
					times = append(times, at)
					back, away := s.Back(j, at)
					if away != awayOracle(s, j, at) {
						t.Fatalf("client %d message %d at %v: Back says away=%v", j, k, at, away)
					}
					if away && back <= at {
						t.Fatalf("client %d message %d at %v: back at %v", j, k, at, back)
					}
				}
				windows := []time.Duration{0, 1, tc.sched.Warmup, tc.sched.Warmup + tc.sched.Ramp, sc.End() / 3, sc.End() / 2, sc.End()}
				for k := 0; k < s.Disconnects(j); k++ {
					d := s.DisconnectAt(j, k)
					windows = append(windows, d-1, d, d+1, d+s.Away-1, d+s.Away, d+s.Away+1)
				}
				for _, from := range windows {
					for _, to := range windows {
						want := 0
						for _, at := range times {
							if at >= from && at < to && !awayOracle(s, j, at) {
								want++
							}
						}
						if got := s.Sends(sc, j, from, to); got != want {
							t.Fatalf("client %d: Sends[%v, %v) = %d, want %d", j, from, to, got, want)
						}
					}
				}
			}
		})
	}
}

func TestChurnPlanErrors(t *testing.T) {
	const head = "broker: {protocol: 5}\nduration: 10s\ngroups:\n"
	for _, tc := range []struct {
		name, groups, want string
	}{
		{name: "lifetime and churn together", groups: "  - {name: a, lifetime: 1s, churn: 1/s}\n", want: "set either lifetime or churn, not both"},
		{name: "away alone", groups: "  - {name: a, away: 1s}\n", want: "groups[0].away: is the time a churning client stays disconnected"},
		{name: "churn faster than away allows", groups: "  - {name: a, count: 2, churn: 4/s, away: 1s}\n", want: "each would be away longer than connected"},
		{name: "short session expiry", groups: "  - {name: a, lifetime: 1s, away: 1s, clean_start: false, session_expiry: 5s, subscribe: {topic: t, qos: 1}}\n", want: "session_expiry (5s) must be at least away + broker.connect_timeout (11s)"},
		{name: "QoS 0 subscription", groups: "  - {name: a, lifetime: 1s, clean_start: false, session_expiry: 1h, subscribe: {topic: t, qos: 0}}\n", want: "groups[0].subscribe[0].qos: must be 1 or 2 in a churning group"},
		{name: "shared subscription", groups: "  - {name: a, lifetime: 1s, clean_start: false, session_expiry: 1h, subscribe: {topic: $share/s/t, qos: 1}}\n", want: "a shared subscription in a churning group is not supported yet"},
		{name: "reconnect", groups: "  - {name: a, lifetime: 1s, reconnect: {after: 1s}}\n", want: "with reconnect is not supported yet"},
		{name: "publish count", groups: "  - {name: a, lifetime: 1s, publish: {topic: t, every: 1s, count: 3}}\n", want: "with publish.count is not supported yet"},
		{name: "responders", groups: "  - {name: a, lifetime: 1s, respond: {topic: c/%i, qos: 1}}\n  - {name: b, publish: {topic: c/1, every: 1s, qos: 1, response_topic: r/%i}}\n", want: "with request/response (respond or publish.response_topic) is not supported yet"},
		{name: "closed loop", groups: "  - {name: a, lifetime: 1s, publish: {topic: t, qos: 1, rate: max}}\n", want: "with publish.rate: max is not supported yet"},
		{name: "typo suggests the key", groups: "  - {name: a, lifetim: 1s}\n", want: `did you mean "lifetime"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes("x.yaml", []byte(head+tc.groups), LoadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "x.yaml:") {
				t.Errorf("error %v has no position", err)
			}
		})
	}
}

func TestChurnPublisherRefused(t *testing.T) {
	for _, tc := range []struct{ name, sub, pub, want string }{
		{name: "QoS 0 to a kept session", sub: "clean_start: false, session_expiry: 1h", pub: "every: 1s, qos: 0",
			want: "groups[1].publish.qos: must be 1 or 2: group pub's messages reach the churning group sub"},
		{name: "QoS 0 to a clean session", sub: "clean_start: true", pub: "every: 1s, qos: 0",
			want: "groups[1].publish.qos: must be 1 or 2: group pub's messages reach the churning group sub"},
		{name: "closed loop to a clean session", sub: "clean_start: true", pub: "rate: max, qos: 1",
			want: "groups[1].publish.rate: max is not supported yet with group pub's messages reaching sub, a churning group with a clean session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := "duration: 10s\ngroups:\n" +
				"  - {name: sub, lifetime: 2s, " + tc.sub + ", subscribe: {topic: t/+, qos: 1}}\n" +
				"  - {name: pub, publish: {topic: t/%i, " + tc.pub + "}}\n"
			p, err := LoadBytes("x.yaml", []byte(plan), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Compile(p, CompileOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestChurnCompile: a churning publisher's planned messages leave out its
// away windows, and the reconnections are the publishing phases' connects.
func TestChurnCompile(t *testing.T) {
	plan := "duration: 10s\ngroups:\n" +
		"  - {name: sub, subscribe: {topic: t/+, qos: 1}}\n" +
		"  - {name: pub, count: 2, churn: 1/s, away: 500ms, publish: {topic: t/%i, every: 100ms, qos: 1}}\n"
	p, err := LoadBytes("x.yaml", []byte(plan), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := prog.Phases[2+2] // connect, subscribe, warmup, ramp, steady
	if st.Phase.String() != "steady" {
		t.Fatalf("phase %v", st.Phase)
	}
	// Each client leaves every 2 s for 500 ms (5 messages): client 0 at
	// 1, 3, 5, 7 s (9 s + 500 ms is back too: also 9), client 1 at 2, 4,
	// 6, 8 s.
	s := prog.Groups[1].Churn
	if got := []int{s.Disconnects(0), s.Disconnects(1)}; got[0] != 5 || got[1] != 4 {
		t.Fatalf("disconnects %v, want [5 4]", got)
	}
	if st.Messages != 200-9*5 {
		t.Errorf("steady messages %d, want %d", st.Messages, 200-9*5)
	}
	if st.Connects != 9 {
		t.Errorf("steady connects %d, want the 9 reconnections", st.Connects)
	}
}
