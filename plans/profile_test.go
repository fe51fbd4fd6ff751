package plans

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// randomPhases is a random three-phase schedule, as
// TestScheduleMessagesOracle draws them, with extreme ones mixed in:
// phases of a few nanoseconds, of up to a year (past 2⁵³ ns, where float
// sums round), intervals of a few nanoseconds.
func randomPhases(rng *rand.Rand) Schedule {
	phaseLen := func() time.Duration {
		switch rng.IntN(5) {
		case 0:
			return 0
		case 1:
			return time.Duration(rng.Int64N(1000))
		case 2:
			return time.Duration(rng.Int64N(int64(365 * 24 * time.Hour)))
		}
		return time.Duration(rng.Int64N(int64(2 * time.Second)))
	}
	s := Schedule{
		Interval: time.Duration(1 + rng.Int64N(int64(50*time.Millisecond))),
		Phase:    rng.Float64(),
		Warmup:   phaseLen(),
		Ramp:     phaseLen(),
		Steady:   phaseLen(),
	}
	if rng.IntN(4) == 0 {
		s.Interval = time.Duration(1 + rng.Int64N(1000))
	}
	if rng.IntN(3) == 0 {
		s.Count = 1 + rng.IntN(300)
	}
	return s
}

// TestScheduleMatchesClosedForm is the differential test of the profile
// code against the three-phase closed form that a Schedule without a
// Profile still uses (every plan's schedule before profiles, and the
// pacer's fast path): for many random three-phase schedules, through a
// PhasesProfile, N⁻¹ and so every At value are bit-identical (the first messages, those around each phase
// boundary, the last, random ones, or all of a short schedule), and
// LastAt, the total and Messages on windows around them are identical.
func TestScheduleMatchesClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for i := 0; i < 2000; i++ {
		s := randomPhases(rng)
		o := s // the closed form: a Schedule without a Profile
		p, err := PhasesProfile(s.Interval, s.Warmup, s.Ramp, s.Steady)
		if err != nil {
			t.Fatal(err)
		}
		ps := p.Schedule(s.Phase, s.Count)
		total := o.total()
		if got := s.total(); got != total {
			t.Fatalf("%+v: total %d, closed form %d", s, got, total)
		}
		if got := ps.total(); got != total {
			t.Fatalf("%+v with a profile: total %d, closed form %d", s, got, total)
		}
		ks := []int{0, 1, 2, total - 2, total - 1, total, total + 1}
		for _, b := range []time.Duration{s.Warmup, s.Warmup + s.Ramp} {
			k := int(o.countBefore(b))
			for d := -3; d <= 3; d++ {
				ks = append(ks, k+d)
			}
		}
		for j := 0; j < 40 && total > 0; j++ {
			ks = append(ks, rng.IntN(total))
		}
		if total < 3000 {
			for k := 0; k <= total; k++ {
				ks = append(ks, k)
			}
		}
		for _, k := range ks {
			want, wok := o.At(k)
			got, gok := s.At(k)
			pgot, pok := ps.At(k)
			if got != want || gok != wok || pgot != want || pok != wok {
				t.Fatalf("%+v: At(%d) = %d,%v (profile %d,%v), closed form %d,%v", s, k, got, gok, pgot, pok, want, wok)
			}
			if k < 0 {
				continue
			}
			x := float64(k) + s.Phase
			w := math.Float64bits(o.inverse(x))
			if a, b := math.Float64bits(s.inverse(x)), math.Float64bits(ps.inverse(x)); a != w || b != w {
				t.Fatalf("%+v: N⁻¹(%d+Phase) = %v (profile %v), closed form %v", s, k, s.inverse(x), ps.inverse(x), o.inverse(x))
			}
		}
		if got, want := s.LastAt(), o.LastAt(); got != want {
			t.Fatalf("%+v: LastAt %v, closed form %v", s, got, want)
		}
		end := s.End()
		cuts := []time.Duration{0, 1, s.Warmup, s.Warmup + s.Ramp, end - 1, end, end + 1}
		for j := 0; j < 6; j++ {
			cuts = append(cuts, time.Duration(rng.Int64N(int64(end)+2)))
			if total > 0 {
				at, _ := o.At(rng.IntN(total))
				cuts = append(cuts, at-1, at, at+1)
			}
		}
		for _, from := range cuts {
			for _, to := range cuts {
				want := o.Messages(from, to)
				if got := s.Messages(from, to); got != want {
					t.Fatalf("%+v: Messages(%d, %d) = %d, closed form %d", s, from, to, got, want)
				}
				if got := ps.Messages(from, to); got != want {
					t.Fatalf("%+v with a profile: Messages(%d, %d) = %d, closed form %d", s, from, to, got, want)
				}
			}
		}
	}
}

// TestScheduleAtAllocatesNothing: the runner calls At once a message and
// promises no allocation per message; a Schedule without a Profile builds
// its three segments on the stack.
func TestScheduleAtAllocatesNothing(t *testing.T) {
	s := Schedule{Interval: time.Millisecond, Phase: 0.25, Warmup: time.Second, Ramp: time.Second, Steady: time.Second}
	p, err := PhasesProfile(s.Interval, s.Warmup, s.Ramp, s.Steady)
	if err != nil {
		t.Fatal(err)
	}
	ps := p.Schedule(0.25, 0)
	k := 0
	if n := testing.AllocsPerRun(1000, func() {
		s.At(k % 3000)
		ps.At(k % 3000)
		s.SegmentOf(k % 3000)
		s.Messages(0, time.Duration(k)*time.Millisecond)
		k += 7
	}); n != 0 {
		t.Errorf("%v allocations a call", n)
	}
}

func mustProfile(t *testing.T, e time.Duration, segs ...Segment) *Profile {
	t.Helper()
	p, err := NewProfile(e, segs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkAgainstWalk checks that At never goes back and Messages against a
// walk over At, on windows around segment boundaries (at most 12 of them,
// random ones for a long profile) and random messages.
func checkAgainstWalk(t *testing.T, s Schedule, rng *rand.Rand) {
	t.Helper()
	var bounds []time.Duration
	var b time.Duration
	for _, sg := range s.Profile.Segments() {
		bounds = append(bounds, b)
		b += sg.Duration
	}
	bounds = append(bounds, b)
	if len(bounds) > 12 {
		rng.Shuffle(len(bounds), func(i, j int) { bounds[i], bounds[j] = bounds[j], bounds[i] })
		bounds = append(bounds[:11], b)
	}
	var cuts []time.Duration
	for _, b := range bounds {
		cuts = append(cuts, b-1, b, b+1)
	}
	var times []time.Duration // the walk: every message's time
	for k := 0; ; k++ {
		at, ok := s.At(k)
		if !ok {
			break
		}
		if len(times) > 0 && at < times[len(times)-1] {
			t.Fatalf("message %d at %v before message %d at %v", k, at, k-1, times[len(times)-1])
		}
		times = append(times, at)
	}
	for i := 0; i < 10 && len(times) > 0; i++ {
		at := times[rng.IntN(len(times))]
		cuts = append(cuts, at-1, at, at+1)
	}
	below := func(c time.Duration) int { // messages before c, by the walk
		return sort.Search(len(times), func(i int) bool { return times[i] >= c })
	}
	for _, from := range cuts {
		for _, to := range cuts {
			if got, want := s.Messages(from, to), max(0, below(to)-below(from)); got != want {
				t.Fatalf("phase %v: Messages(%d, %d) = %d, walk %d", s.Phase, from, to, got, want)
			}
		}
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

// TestProfileSteps: 1k, 5k then 10k msg/s for a second each (a target of
// 10k/s: multipliers 0.1, 0.5, 1). Each second holds exactly its rate's
// messages, evenly spaced from its start, and SegmentOf attributes them.
func TestProfileSteps(t *testing.T) {
	p := mustProfile(t, 100*time.Microsecond,
		Segment{Duration: time.Second, From: 0.1, To: 0.1, Stage: 10},
		Segment{Duration: time.Second, From: 0.5, To: 0.5, Stage: 11},
		Segment{Duration: time.Second, From: 1, To: 1, Stage: 12},
	)
	for _, phase := range []float64{0, 0.5} {
		s := p.Schedule(phase, 0)
		for i, w := range []int{1000, 5000, 10000} {
			from, to := time.Duration(i)*time.Second, time.Duration(i+1)*time.Second
			if got := s.Messages(from, to); got != w {
				t.Errorf("phase %v: second %d has %d messages, want %d", phase, i, got, w)
			}
		}
		if got := s.Messages(0, s.End()); got != 16000 {
			t.Errorf("phase %v: %d messages in all, want 16000", phase, got)
		}
		// The gaps are 1 ms, 200 µs, 100 µs; Phase shifts by its fraction
		// of the gap in force.
		for _, c := range []struct {
			k   int
			at  time.Duration
			seg int
		}{
			{0, time.Duration(phase * 1e6), 0},
			{999, time.Duration((999 + phase) * 1e6), 0},
			{1000, time.Second + time.Duration(phase*200e3), 1},
			{1001, time.Second + time.Duration((1+phase)*200e3), 1},
			{5999, time.Second + time.Duration((4999+phase)*200e3), 1},
			{6000, 2*time.Second + time.Duration(phase*100e3), 2},
			{15999, 2*time.Second + time.Duration((9999+phase)*100e3), 2},
		} {
			at, ok := s.At(c.k)
			if !ok || absDur(at-c.at) > 1 {
				t.Errorf("phase %v: At(%d) = %v,%v, want %v", phase, c.k, at, ok, c.at)
			}
			if seg, _ := s.SegmentOf(c.k); seg != c.seg {
				t.Errorf("phase %v: message %d in segment %d, want %d", phase, c.k, seg, c.seg)
			}
		}
		if _, ok := s.At(16000); ok {
			t.Errorf("phase %v: message 16000 exists", phase)
		}
		if _, ok := s.SegmentOf(16000); ok {
			t.Errorf("phase %v: message 16000 has a segment", phase)
		}
		checkAgainstWalk(t, s, rand.New(rand.NewPCG(1, 1)))
	}
	if got := p.Segments()[1]; got != (Segment{Duration: time.Second, From: 0.5, To: 0.5, Stage: 11}) {
		t.Errorf("Segments()[1] = %+v", got)
	}
}

// TestProfileRampDownAndUp: from the target to 0 over a second and back up
// over the next. On the way down N(t) = (t − t²/2)/e (seconds), so message
// k is at 1 − √(1 − 2ke); on the way up at 1 + √(2(ke − ½)); each second
// has half a steady second's messages.
func TestProfileRampDownAndUp(t *testing.T) {
	p := mustProfile(t, time.Millisecond,
		Segment{Duration: time.Second, From: 1, To: 0},
		Segment{Duration: time.Second, From: 0, To: 1},
	)
	s := p.Schedule(0, 0)
	if got := s.Messages(0, time.Second); got != 500 {
		t.Errorf("down: %d messages, want 500", got)
	}
	if got := s.Messages(time.Second, 2*time.Second); got != 500 {
		t.Errorf("up: %d messages, want 500", got)
	}
	for k := 0; k < 1000; k++ {
		n := float64(k) * 1e-3
		want := 1 - math.Sqrt(1-2*n)
		if n > 0.5 {
			want = 1 + math.Sqrt(2*(n-0.5))
		}
		at, ok := s.At(k)
		if !ok || math.Abs(at.Seconds()-want) > 1e-6 {
			t.Fatalf("At(%d) = %v,%v, want %.9fs", k, at, ok, want)
		}
	}
	if at, _ := s.At(500); absDur(at-time.Second) > 1 {
		t.Errorf("At(500) = %v, want 1s (the bottom)", at)
	}
	checkAgainstWalk(t, s, rand.New(rand.NewPCG(2, 2)))
	checkAgainstWalk(t, p.Schedule(0.37, 0), rand.New(rand.NewPCG(2, 3)))
}

// TestProfileZeroRate: a segment at rate 0 has no messages and At skips
// it: the count reached at its start is the next sending segment's first
// message, at that segment's start. Also a zero rate first and last, and a
// zero-length segment at another rate.
func TestProfileZeroRate(t *testing.T) {
	p := mustProfile(t, 10*time.Millisecond,
		Segment{Duration: time.Second, From: 0, To: 0},
		Segment{Duration: time.Second, From: 1, To: 1},
		Segment{Duration: 0, From: 3, To: 3},
		Segment{Duration: time.Second, From: 0, To: 0},
		Segment{Duration: time.Second, From: 1, To: 1},
		Segment{Duration: time.Second, From: 0, To: 0},
	)
	s := p.Schedule(0, 0)
	for _, c := range []struct {
		from, to time.Duration
		want     int
	}{
		{0, time.Second, 0},
		{time.Second, 2 * time.Second, 100},
		{2 * time.Second, 3 * time.Second, 0},
		{3 * time.Second, 4 * time.Second, 100},
		{4 * time.Second, 5 * time.Second, 0},
		{0, 5 * time.Second, 200},
	} {
		if got := s.Messages(c.from, c.to); got != c.want {
			t.Errorf("Messages(%v, %v) = %d, want %d", c.from, c.to, got, c.want)
		}
	}
	for k, want := range map[int]time.Duration{0: time.Second, 99: 1990 * time.Millisecond, 100: 3 * time.Second, 199: 3990 * time.Millisecond} {
		if at, ok := s.At(k); !ok || at != want {
			t.Errorf("At(%d) = %v,%v, want %v", k, at, ok, want)
		}
	}
	for k, want := range map[int]int{0: 1, 99: 1, 100: 4, 199: 4} {
		if seg, _ := s.SegmentOf(k); seg != want {
			t.Errorf("message %d in segment %d, want %d", k, seg, want)
		}
	}
	if _, ok := s.At(200); ok {
		t.Error("message 200 exists: the profile ends at rate 0")
	}
	if got := p.Schedule(0, 500).LastAt(); got != math.MaxInt64 {
		t.Errorf("LastAt of a count the profile never reaches = %v", got)
	}
	for _, phase := range []float64{0, 0.5, 0.999} {
		checkAgainstWalk(t, p.Schedule(phase, 0), rand.New(rand.NewPCG(3, 3)))
	}
}

// TestProfileRandom: random profiles of up to 2,000 segments (steps, ramps
// either way, pauses, zero lengths): locate's binary search finds what a
// linear scan over the same test finds, N(At(k)) is k+Phase to rounding,
// and Messages agrees with a walk over At.
func TestProfileRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rate := func() float64 {
		switch rng.IntN(5) {
		case 0:
			return 0
		case 1:
			return 1
		}
		return rng.Float64() * 3
	}
	for i := 0; i < 200; i++ {
		nseg := 1 + rng.IntN(8)
		if i%20 == 0 {
			nseg = 2000
		}
		segs := make([]Segment, nseg)
		for j := range segs {
			segs[j] = Segment{From: rate(), To: rate(), Stage: j}
			switch rng.IntN(6) {
			case 0:
			case 1:
				segs[j].Duration = time.Duration(rng.Int64N(1000))
			default:
				segs[j].Duration = time.Duration(rng.Int64N(int64(time.Second)))
			}
		}
		e := time.Duration(1+rng.Int64N(int64(5*time.Millisecond))) * time.Duration(nseg/100+1)
		p := mustProfile(t, e, segs...)
		s := p.Schedule(rng.Float64(), 0)
		n := s.total()
		if n > 30000 {
			t.Logf("profile %d: %d messages, skipped", i, n)
			continue
		}
		for k := 0; k <= n+1; k++ {
			x := float64(k) + s.Phase
			got := locate(p.act, x)
			want := len(p.act) - 1
			for j := range p.act[:len(p.act)-1] {
				if p.act[j].local(x) <= p.act[j].c {
					want = j
					break
				}
			}
			if got != want {
				t.Fatalf("profile %d: count %v located in %d, a scan finds %d", i, x, got, want)
			}
			if k >= n {
				continue
			}
			at, ok := s.At(k)
			if !ok {
				t.Fatalf("profile %d: no message %d of %d", i, k, n)
			}
			// N(At(k)) is k+Phase up to the rounding of At to the
			// nanosecond: at most the peak rate's messages in 1 ns.
			if c := countAt(p.segs, float64(e), float64(at)); c > x+1e-9 || c < x-3/float64(e)-1e-9*x {
				t.Fatalf("profile %d: N(At(%d)) = %v, want %v", i, k, c, x)
			}
		}
		checkAgainstWalk(t, s, rng)
	}
}

// TestNewProfileRefuses: what a profile cannot be.
func TestNewProfileRefuses(t *testing.T) {
	for _, c := range []struct {
		e    time.Duration
		segs []Segment
	}{
		{0, []Segment{{Duration: time.Second, From: 1, To: 1}}},
		{time.Millisecond, nil},
		{time.Millisecond, []Segment{{Duration: -1, From: 1, To: 1}}},
		{time.Millisecond, []Segment{{Duration: time.Second, From: -1, To: 1}}},
		{time.Millisecond, []Segment{{Duration: time.Second, From: math.NaN(), To: 1}}},
		{time.Millisecond, []Segment{{Duration: time.Second, From: 1, To: math.Inf(1)}}},
		{time.Millisecond, []Segment{{Duration: math.MaxInt64, From: 1, To: 1}, {Duration: 1, From: 1, To: 1}}},
	} {
		if _, err := NewProfile(c.e, c.segs); err == nil {
			t.Errorf("NewProfile(%v, %+v) accepted", c.e, c.segs)
		}
	}
}
