package plans

import (
	"path/filepath"
	"testing"
	"time"
)

// cursorSchedules are Poisson schedules whose messages cross block
// boundaries (256 arrivals) and segment boundaries: the three phases, a
// profile of stages with a ramp, a pause and a falling rate, a count that
// ends a schedule in the middle of a block.
func cursorSchedules(t testing.TB) []struct {
	name string
	s    Schedule
} {
	prof, err := NewProfile(time.Millisecond, []Segment{
		{Duration: 300 * time.Millisecond, From: 1, To: 1, Stage: 0},
		{Duration: 400 * time.Millisecond, From: 0, To: 2, Stage: 1},
		{Duration: 0, From: 3, To: 3, Stage: 2},
		{Duration: 200 * time.Millisecond, From: 0, To: 0, Stage: 3}, // a pause
		{Duration: 500 * time.Millisecond, From: 1.5, To: 1.5, Stage: 4},
		{Duration: 300 * time.Millisecond, From: 2, To: 0.25, Stage: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		s    Schedule
	}{
		{"three phases", Schedule{Interval: time.Millisecond, Warmup: 200 * time.Millisecond, Ramp: 300 * time.Millisecond, Steady: 900 * time.Millisecond, Poisson: true}},
		{"stages", Schedule{Interval: time.Millisecond, Profile: prof, Poisson: true}},
		{"a count mid-block", Schedule{Interval: time.Millisecond, Steady: time.Hour, Count: 900, Poisson: true}},
		{"deep", Schedule{Interval: time.Microsecond, Steady: 24 * time.Hour, Poisson: true}},
	}
}

// TestCursorIsAt: a Cursor gives Schedule.At bit for bit, for many clients
// (each its own Poisson process), read in order across every block and
// segment boundary to the end of the schedule and past it, and read out of
// order (repeats, steps back, small and large jumps), which repositions it.
func TestCursorIsAt(t *testing.T) {
	for _, tc := range cursorSchedules(t) {
		t.Run(tc.name, func(t *testing.T) {
			clients := uint64(12)
			if tc.name == "deep" {
				clients = 2
			}
			for client := range clients {
				s := tc.s
				s.Arrivals = poissonArrivals{seed: 11, client: client}
				cur := s.Cursor()
				check := func(k int) {
					t.Helper()
					got, gotOK := cur.At(k)
					want, wantOK := s.At(k)
					if got != want || gotOK != wantOK {
						t.Fatalf("client %d: cursor At(%d) = %v, %v; Schedule.At = %v, %v", client, k, got, gotOK, want, wantOK)
					}
				}
				if tc.name == "deep" {
					// Far into a long schedule: reposition, then walk across blocks.
					for k := 1<<22 - 300; k < 1<<22+300; k++ {
						check(k)
					}
					continue
				}
				n := 0
				for ; ; n++ {
					check(n)
					if _, ok := s.At(n); !ok {
						break
					}
				}
				if n < 3*poissonBlock {
					t.Fatalf("client %d: %d messages: the test must cross block boundaries", client, n)
				}
				for _, k := range []int{n + 1, n + 300, -1, 0, 0, 5, 3, 3, 255, 256, 257, 100, 511, 512, 400, n - 1, n - 2, n, 1} {
					check(k)
				}
			}
		})
	}
}

// TestCursorAllocatesNothing: the runner asks a Cursor once per message.
func TestCursorAllocatesNothing(t *testing.T) {
	for _, tc := range cursorSchedules(t) {
		s := tc.s
		s.Arrivals = poissonArrivals{seed: 1, client: 2}
		cur := s.Cursor()
		k := 0
		if n := testing.AllocsPerRun(2000, func() {
			if _, ok := cur.At(k); ok {
				k++
			} else {
				k = 0
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per message", tc.name, n)
		}
	}
}

// benchSchedule is the last client of testdata poisson.yaml (stages), with
// its arrivals as given or made uniform.
func benchSchedule(b *testing.B, poisson bool) Schedule {
	p, err := Load(filepath.Join(validDir, "poisson.yaml"), LoadOptions{Sets: []string{"stages[2].duration=1000h"}})
	if err != nil {
		b.Fatal(err)
	}
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s := prog.Clients[len(prog.Clients)-1].Publish.Schedule
	s.Poisson = poisson
	return s
}

// BenchmarkScheduleAt is the intended time of one message, asked for in
// order, as the pacer and the publisher do: by random access
// (Schedule.At) and by a Cursor.
func BenchmarkScheduleAt(b *testing.B) {
	for _, bc := range []struct {
		name    string
		poisson bool
		cursor  bool
	}{
		{"uniform/At", false, false},
		{"uniform/Cursor", false, true},
		{"poisson/At", true, false},
		{"poisson/Cursor", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := benchSchedule(b, bc.poisson)
			cur := s.Cursor()
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				var ok bool
				if bc.cursor {
					_, ok = cur.At(k)
				} else {
					_, ok = s.At(k)
				}
				if !ok {
					b.Fatalf("no message %d", k)
				}
				k++
			}
		})
	}
}
