package plans

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mqplan/mqplan/phase"
)

// TestBurstSchedule checks a burst schedule against its definition: message
// k at burst k/size, every burst's messages at its instant, nothing at or
// past the end, Messages agreeing with a walk over At for every window.
func TestBurstSchedule(t *testing.T) {
	tests := []struct {
		name  string
		s     Schedule
		total int
	}{
		{name: "three per burst, 3.5s", s: Schedule{Interval: time.Second / 3, Burst: time.Second, BurstSize: 3, Steady: 3500 * time.Millisecond}, total: 12},
		{name: "end on a burst: excluded", s: Schedule{Interval: time.Second / 2, Burst: time.Second, BurstSize: 2, Warmup: time.Second, Steady: 2 * time.Second}, total: 6},
		{name: "count caps mid-burst", s: Schedule{Interval: time.Second / 4, Burst: time.Second, BurstSize: 4, Steady: 10 * time.Second, Count: 7}, total: 7},
		{name: "no share of the burst", s: Schedule{Interval: time.Second, Burst: time.Second, BurstSize: 0, Steady: 3 * time.Second}, total: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var times []time.Duration
			for k := 0; ; k++ {
				at, ok := tc.s.At(k)
				if !ok {
					break
				}
				if want := time.Duration(k/tc.s.BurstSize) * tc.s.Burst; at != want {
					t.Fatalf("At(%d) = %v, want %v", k, at, want)
				}
				times = append(times, at)
			}
			if len(times) != tc.total {
				t.Fatalf("%d messages, want %d", len(times), tc.total)
			}
			if got := tc.s.Messages(0, tc.s.End()); got != tc.total {
				t.Errorf("Messages over the schedule = %d, want %d", got, tc.total)
			}
			// Every window on a 250ms grid, bursts on its lines included.
			for from := time.Duration(0); from <= tc.s.End()+time.Second; from += 250 * time.Millisecond {
				for to := from; to <= tc.s.End()+time.Second; to += 250 * time.Millisecond {
					want := 0
					for _, at := range times {
						if at >= from && at < to {
							want++
						}
					}
					if got := tc.s.Messages(from, to); got != want {
						t.Errorf("Messages(%v, %v) = %d, the walk finds %d", from, to, got, want)
					}
				}
			}
			if tc.s.Count > 0 {
				if got, want := tc.s.LastAt(), times[len(times)-1]; got != want {
					t.Errorf("LastAt = %v, want %v", got, want)
				}
			}
		})
	}
}

// TestBurstCompile checks how a group's bursts are shared out: client j of
// n sends messages/n of each burst, one more when j < messages mod n, so
// the group sends exactly messages per burst; the phases count whole bursts.
func TestBurstCompile(t *testing.T) {
	p, err := Load(filepath.Join(validDir, "burst.yaml"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := prog.Groups[1]
	sum := 0
	for j := 0; j < g.Count; j++ {
		s := prog.Clients[g.First+j].Publish.Schedule
		want := 28
		if j < 4 { // 200 = 7×28 + 4
			want = 29
		}
		if s.BurstSize != want || s.Burst != time.Second {
			t.Errorf("client %d: %d every %v, want %d every 1s", j, s.BurstSize, s.Burst, want)
		}
		sum += s.BurstSize
	}
	if sum != 200 {
		t.Errorf("the clients share %d messages per burst, want 200", sum)
	}
	// Warmup [0, 500ms) holds the burst at 0; steady [500ms, 3.5s) those at 1s, 2s, 3s.
	if w, s := prog.Phases[phase.Warmup].Messages, prog.Phases[phase.Steady].Messages; w != 200 || s != 600 {
		t.Errorf("warmup %d steady %d messages, want 200 and 600", w, s)
	}
}
