package plans

import (
	"math"
	"path/filepath"
	"testing"
	"time"
)

// TestPoissonSchedule checks Poisson schedules against a walk over At:
// Messages exact for windows on a grid (phase and stage boundaries among
// them), times never decreasing, the same seed giving the same times and
// another seed others, and the count near its mean.
func TestPoissonSchedule(t *testing.T) {
	prof, err := NewProfile(10*time.Millisecond, []Segment{
		{Duration: time.Second, From: 0, To: 1},
		{Duration: 0, From: 1, To: 1},
		{Duration: 2 * time.Second, From: 0.5, To: 0.5},
		{Duration: 500 * time.Millisecond, From: 1, To: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	arr := poissonArrivals{seed: 3, client: 5}
	tests := []struct {
		name string
		s    Schedule
		mean float64
	}{
		{name: "three phases", s: Schedule{Interval: time.Millisecond, Warmup: 500 * time.Millisecond, Ramp: time.Second, Steady: 2 * time.Second, Poisson: true, Arrivals: arr}, mean: 1500/2 + 2000}, // the rise spans warmup and ramp
		{name: "a stage profile", s: Schedule{Interval: 10 * time.Millisecond, Profile: prof, Poisson: true, Arrivals: arr}, mean: 50 + 100 + 25},
		{name: "a count", s: Schedule{Interval: time.Millisecond, Steady: 2 * time.Second, Count: 700, Poisson: true, Arrivals: arr}, mean: 700},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var times []time.Duration
			for k := 0; ; k++ {
				at, ok := tc.s.At(k)
				if !ok {
					break
				}
				if len(times) > 0 && at < times[len(times)-1] {
					t.Fatalf("At(%d) = %v before At(%d) = %v", k, at, k-1, times[len(times)-1])
				}
				times = append(times, at)
			}
			if n := float64(len(times)); math.Abs(n-tc.mean) > 5*math.Sqrt(tc.mean) {
				t.Errorf("%d messages, the mean is %g", len(times), tc.mean)
			}
			step := tc.s.End() / 37 // off the boundaries, and on some
			for _, from := range append([]time.Duration{0, time.Second, 1500 * time.Millisecond}, step, 5*step) {
				for _, to := range []time.Duration{from, from + step, from + time.Second, tc.s.End(), tc.s.End() + time.Hour} {
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
			// Pure: the same key, the same times; another seed, others.
			other := tc.s
			other.Arrivals.seed++
			if a, _ := tc.s.At(10); func() bool { b, _ := tc.s.At(10); return a != b }() {
				t.Error("At(10) differs between two calls")
			}
			if a, _ := tc.s.At(10); func() bool { b, _ := other.At(10); return a == b }() {
				t.Error("another seed gives the same At(10)")
			}
		})
	}
}

// TestPoissonCompile checks that a plan's poisson arrivals are keyed by its
// seed (default 1, --set seed=N) and each client's index, and that the
// stages' exact counts are the walk's.
func TestPoissonCompile(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		seed int
	}{
		{name: "the plan's seed", seed: 7},
		{name: "--set seed", sets: []string{"seed=99"}, seed: 99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(filepath.Join(validDir, "poisson.yaml"), LoadOptions{Sets: tc.sets})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := Compile(p, CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range prog.Clients {
				c := &prog.Clients[i]
				if c.Publish == nil {
					continue
				}
				if s := c.Publish.Schedule; !s.Poisson || s.Arrivals != (poissonArrivals{seed: uint64(tc.seed), client: uint64(c.Index)}) {
					t.Errorf("%s: poisson %v keyed %+v", c, s.Poisson, s.Arrivals)
				}
			}
			walked := walkStages(t, prog)
			for i, st := range prog.Stages {
				if st.Messages != walked[i] {
					t.Errorf("stage %s: %d messages, the walk finds %d", st.Name, st.Messages, walked[i])
				}
			}
		})
	}
	p, err := Load(filepath.Join(validDir, "minimal.yaml"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Seed != DefaultSeed {
		t.Errorf("default seed %d, want %d", p.Seed, DefaultSeed)
	}
}

// TestScheduleAtDoesNotAllocate: the pacer calls At once per message, for
// every kind of schedule.
func TestScheduleAtDoesNotAllocate(t *testing.T) {
	p, err := Load(filepath.Join(validDir, "poisson.yaml"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	staged := prog.Clients[len(prog.Clients)-1].Publish.Schedule
	uniform := staged
	uniform.Poisson = false
	for _, tc := range []struct {
		name string
		s    Schedule
	}{
		{"poisson over stages", staged},
		{"uniform over stages", uniform},
		{"burst", Schedule{Interval: time.Millisecond, Burst: time.Second, BurstSize: 3, Steady: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := 0
			if n := testing.AllocsPerRun(1000, func() { _, _ = tc.s.At(k); _, _ = tc.s.SegmentOf(k); k++ }); n != 0 {
				t.Errorf("%g allocations per At and SegmentOf", n)
			}
		})
	}
}
