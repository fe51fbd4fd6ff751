package plans

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDrawnSessions checks a random lifetime's timetable against its
// definition (sessions_random.go): each session's length within [min,
// max], the first cut to (j+1)/n of a drawn period, every return before
// publishing ends, the same draws for the same seed and other draws for
// another, and min == max giving the fixed lifetime's timetable.
func TestDrawnSessions(t *testing.T) {
	for _, tc := range []struct {
		name         string
		churn        Churn
		count, first int
		end          time.Duration
	}{
		{name: "10s to 60s, away 2s, 20 clients over 10 minutes", churn: Churn{Lifetime: 10 * time.Second, LifetimeMax: time.Minute, Away: 2 * time.Second}, count: 20, end: 10 * time.Minute},
		{name: "away 0, a group that is not the plan's first", churn: Churn{Lifetime: time.Second, LifetimeMax: 1500 * time.Millisecond}, count: 3, first: 40, end: time.Minute},
		{name: "sessions longer than publishing: no leave", churn: Churn{Lifetime: time.Hour, LifetimeMax: 2 * time.Hour, Away: time.Second}, count: 4, end: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.churn
			s := compileSessions(&c, tc.count, tc.first, tc.end, 42)
			if !s.Drawn() || s.Period != 0 {
				t.Fatalf("drawn %v, period %v: want a drawn timetable", s.Drawn(), s.Period)
			}
			total, lengths := 0, map[time.Duration]bool{}
			for j := 0; j < tc.count; j++ {
				n := s.Disconnects(j)
				total += n
				for k := 0; k < n; k++ {
					d := s.DisconnectAt(j, k)
					if d+c.Away >= tc.end {
						t.Errorf("client %d leaves at %v, back at or after the end %v", j, d, tc.end)
					}
					if k == 0 {
						lo := time.Duration(int64(j+1) * int64(c.Lifetime+c.Away) / int64(tc.count))
						hi := time.Duration(int64(j+1) * int64(c.LifetimeMax+c.Away) / int64(tc.count))
						if d < lo || d > hi {
							t.Errorf("client %d first leaves at %v, want within [%v, %v]", j, d, lo, hi)
						}
						continue
					}
					start, _ := s.Session(j, k)
					length := d - start
					lengths[length] = true
					if length < c.Lifetime || length > c.LifetimeMax {
						t.Errorf("client %d session %d lasts %v, want within [%v, %v]", j, k, length, c.Lifetime, c.LifetimeMax)
					}
				}
				// Even the longest next session would have ended with a
				// return after publishing: the timetable is not cut early.
				last := time.Duration(0)
				if n > 0 {
					last = s.DisconnectAt(j, n-1)
				}
				if n > 0 && last+c.Away+c.LifetimeMax+c.Away < tc.end {
					t.Errorf("client %d stops leaving at %v though even a session of %v would be back by %v", j, last, c.LifetimeMax, tc.end)
				}
			}
			if got := s.Total(); got != total {
				t.Errorf("Total %d, want %d", got, total)
			}
			if total > 10 && len(lengths) < 5 {
				t.Errorf("session lengths %v: not drawn", lengths)
			}
			again := compileSessions(&c, tc.count, tc.first, tc.end, 42)
			other := compileSessions(&c, tc.count, tc.first, tc.end, 43)
			same, differs := true, false
			for j := 0; j < tc.count; j++ {
				for k := 0; k < s.Disconnects(j); k++ {
					same = same && again.Disconnects(j) == s.Disconnects(j) && again.DisconnectAt(j, k) == s.DisconnectAt(j, k)
					differs = differs || k >= other.Disconnects(j) || other.DisconnectAt(j, k) != s.DisconnectAt(j, k)
				}
			}
			if !same {
				t.Error("the same seed drew another timetable")
			}
			if total > 0 && !differs {
				t.Error("another seed drew the same timetable")
			}
		})
	}
}

// TestDrawnSessionsFixedRange: {min: x, max: x} is the fixed lifetime x.
func TestDrawnSessionsFixedRange(t *testing.T) {
	fixed := newSessions(&Churn{Lifetime: 3 * time.Second, Away: time.Second}, 7, time.Minute)
	drawn := newDrawnSessions(&Churn{Lifetime: 3 * time.Second, LifetimeMax: 3 * time.Second, Away: time.Second}, 7, 0, time.Minute, 9)
	for j := 0; j < 7; j++ {
		var a, b []time.Duration
		for k := 0; k < fixed.Disconnects(j); k++ {
			a = append(a, fixed.DisconnectAt(j, k))
		}
		for k := 0; k < drawn.Disconnects(j); k++ {
			b = append(b, drawn.DisconnectAt(j, k))
		}
		if !slices.Equal(a, b) {
			t.Errorf("client %d: drawn %v, fixed %v", j, b, a)
		}
	}
}

func TestLifetimeRangePlan(t *testing.T) {
	const head = "duration: 20s\nseed: 5\ngroups:\n"
	for _, tc := range []struct {
		name, groups, want string
	}{
		{name: "min and max", groups: "  - {name: a, count: 3, lifetime: {min: 2s, max: 5s}, away: 1s, publish: {topic: t, every: 100ms, qos: 1}}\n"},
		{name: "max below min", groups: "  - {name: a, lifetime: {min: 5s, max: 2s}}\n", want: "groups[0].lifetime.max: must not be below min (5s)"},
		{name: "max missing", groups: "  - {name: a, lifetime: {min: 5s}}\n", want: "a lifetime range needs both min and max"},
		{name: "min zero", groups: "  - {name: a, lifetime: {min: 0s, max: 2s}}\n", want: "groups[0].lifetime.min: must be more than 0"},
		{name: "unknown key", groups: "  - {name: a, lifetime: {min: 1s, mx: 2s}}\n", want: `did you mean "max"`},
		{name: "too many drawn sessions", groups: "  - {name: a, count: 2000, lifetime: {min: 10ms, max: 1s}}\n", want: "more than the limit of 1,000,000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := LoadBytes("x.yaml", []byte(head+tc.groups), LoadOptions{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.Groups[0].Churn.Lifetime != 2*time.Second || p.Groups[0].Churn.LifetimeMax != 5*time.Second {
					t.Fatalf("churn %+v", p.Groups[0].Churn)
				}
				prog, err := Compile(p, CompileOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// The compiled timetable is the one drawn from the plan's
				// seed and each client's index.
				want := compileSessions(p.Groups[0].Churn, 3, 0, 20*time.Second, 5)
				got := prog.Groups[0].Churn
				for j := 0; j < 3; j++ {
					if got.Disconnects(j) != want.Disconnects(j) || got.Disconnects(j) == 0 || got.DisconnectAt(j, 0) != want.DisconnectAt(j, 0) {
						t.Errorf("client %d: compiled %d leaves, drawn %d", j, got.Disconnects(j), want.Disconnects(j))
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "x.yaml:") {
				t.Errorf("error %v has no position", err)
			}
		})
	}
}
