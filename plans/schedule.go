package plans

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Schedule is one publisher's open-loop timetable: the intended send time
// of its k-th message is a pure function of k, never "whenever the
// previous one finished", so a slow broker or generator shows up as
// latency and lag instead of silently lowering the rate.
//
// The rate is a piecewise-linear profile (see Profile): an ordered list of
// segments, each with a duration and a rate at its start and at its end, as
// multiples of the target rate 1/Interval. N(t), the expected number of
// messages sent by time t, is then piecewise quadratic, and message k
// (0-based) is intended at N⁻¹(k+Phase): Phase in [0,1) staggers the
// clients of a group so that they do not fire in lockstep (client j of m
// gets Phase j/m, which spaces a group's sends evenly at e/m).
//
// Without a Profile the schedule is the plan's timeline: the rate never
// falls. With a ramp (R > 0) it rises linearly from 0 at the start of
// warmup to the target at the end of the ramp, warmup being the rise's
// first, unmeasured part; without one, warmup publishes at the target.
// Either way it is the profile of a rise of length r from 0 to the target,
// preceded by a hold of length w at the target:
//
//	w, r = 0, W+R  when R > 0     (one rise over warmup and ramp)
//	w, r = W, 0    when R = 0     (warmup at the full rate)
//
//	hold    [0, w)        : 1
//	rise    [w, w+r)      : (t-w)/r      (linear from 0 to the target)
//	steady  [w+r, w+r+D)  : 1
//
// so that
//
//	N(t) = t/e                              for t ≤ w
//	     = w/e + (t-w)²/(2re)               for w ≤ t ≤ w+r
//	     = w/e + r/(2e) + (t-w-r)/e         for t ≥ w+r
//
// where e is Interval. The general code computes exactly these formulas,
// with their rounding, for those three segments (see Profile), so a
// Schedule with PhasesProfile times its messages to the nanosecond as one
// without. The phases stay where the plan puts them (warmup [0, W), ramp
// [W, W+R), steady after): only the rate within them follows the rise.
type Schedule struct {
	// Interval is the time between two messages at the target rate. With a
	// Profile it must be the profile's (Profile.Schedule sets it).
	Interval time.Duration
	// Phase in [0,1) shifts this client's messages by a fraction of Interval.
	Phase float64
	// Warmup, Ramp and Steady are the lengths of the publishing phases,
	// used when Profile is nil.
	Warmup, Ramp, Steady time.Duration
	// Count, when non-zero, caps the number of messages.
	Count int
	// Profile, when non-nil, is the rate profile, and Warmup, Ramp and
	// Steady are ignored. It is shared by the clients of a group and never
	// modified, so a Schedule stays a few words to copy.
	Profile *Profile
	// Burst, when positive, makes the schedule bursts (burst.go): BurstSize
	// messages every Burst from the start of warmup, all intended at the
	// burst's instant; Interval and Phase then only describe the mean rate.
	Burst     time.Duration
	BurstSize int
	// Poisson, when set, makes the arrivals a Poisson process in
	// operational time keyed by Arrivals (arrival.go); Phase is then unused.
	Poisson  bool
	Arrivals poissonArrivals
	// Delay moves every message of the schedule later by this much
	// (start_delay.go); what then falls past End is not sent.
	Delay time.Duration
}

// Segment is one piece of a rate profile: for Duration the rate goes
// linearly from From to To, as multiples of the target rate 1/Interval
// (1 is the target, 0 sends nothing). Stage is a label carried for the
// caller: a message can be traced to its segment (Schedule.SegmentOf) and
// so to the stage of the plan that made it.
type Segment struct {
	Duration time.Duration
	From, To float64
	Stage    int
}

// Profile is a piecewise-linear rate profile with everything that does not
// depend on the client precomputed once: each segment's start, its number
// of messages and the number before it. It is immutable and meant to be
// shared by pointer between the clients of a group; nothing in it grows
// with the number of messages.
//
// N⁻¹(n) finds the segment holding count n by a binary search over the
// cumulative counts (O(log segments)), then solves the segment's quadratic.
// Two details keep the three-phase timeline exact to the bit:
//
//   - the count inside segment i is (n − C(i−1)) − c(i−1), where C(i) is the
//     count before segment i and c(i) the count in it, rather than n − C(i):
//     that is how the closed form subtracted the warmup's and the ramp's
//     counts in turn, and keeping its rounding keeps every existing
//     schedule's times to the nanosecond;
//   - count n belongs to the first segment i whose local count is at most
//     c(i) (so a count exactly at a boundary ends the earlier segment, as
//     before). The binary search only brackets that segment: every segment
//     whose cumulative end is more than a relative 10⁻¹⁴ below n is certainly
//     not it (the rounding above errs by a few units in the last place), and
//     the exact test then runs forward from there, normally one step.
//
// A segment with no messages (zero duration, or a rate of 0 throughout) is
// never chosen, so its time is skipped: the count at its boundary belongs
// to the start of the next segment that sends, not to the pause. Past the
// last segment the rate stays at the last segment's final rate (never, if
// it is 0), which Messages and At need only to find the end.
type Profile struct {
	interval time.Duration
	end      time.Duration
	segs     []segment // every segment, in order
	act      []segment // the segments that send, and the last one
}

// segment is a Segment with its precomputed figures (floats in ns and
// messages).
type segment struct {
	start, dur float64
	a, b       float64 // rate multipliers at start and end
	c          float64 // messages in the segment
	cum        float64 // messages before the segment
	cumEnd     float64 // cum + c
	// base and baseC are subtracted in turn from a count to make it local
	// to the segment: the previous segment's cum and c.
	base, baseC float64
	pauseAfter  bool // a pause (a segment sending nothing) follows before the next sending segment
	index       int  // position in the profile
	stage       int
	duration    time.Duration
	startNs     time.Duration // start as an exact offset
}

// NewProfile checks and precomputes a profile: at least one segment, no
// negative duration, rates finite and not negative, interval positive.
func NewProfile(interval time.Duration, segs []Segment) (*Profile, error) {
	if interval <= 0 {
		return nil, errors.New("profile: the interval must be positive")
	}
	if len(segs) == 0 {
		return nil, errors.New("profile: no segment")
	}
	var end time.Duration
	for i, s := range segs {
		if s.Duration < 0 {
			return nil, fmt.Errorf("profile: segment %d: negative duration %v", i, s.Duration)
		}
		if !(s.From >= 0 && s.To >= 0) || math.IsInf(s.From, 0) || math.IsInf(s.To, 0) {
			return nil, fmt.Errorf("profile: segment %d: rate %g→%g is not a finite rate ≥ 0", i, s.From, s.To)
		}
		if end > math.MaxInt64-s.Duration {
			return nil, fmt.Errorf("profile: segment %d: the profile is too long", i)
		}
		end += s.Duration
	}
	p := &Profile{interval: interval, end: end, segs: make([]segment, len(segs)), act: make([]segment, len(segs))}
	nAct := buildSegments(float64(interval), segs, p.segs, p.act)
	p.act = p.act[:nAct:nAct]
	return p, nil
}

// PhasesProfile is the profile of a plan's timeline (see Schedule): a hold
// at the target rate (stage 0: the warmup when there is no ramp), a rise
// from 0 to it (stage 1: the warmup and the ramp together), steady (stage
// 2). A Schedule with it times its messages exactly as one with the same
// Warmup, Ramp and Steady and no Profile.
func PhasesProfile(interval, warmup, ramp, steady time.Duration) (*Profile, error) {
	segs := phaseSegments(warmup, ramp, steady)
	return NewProfile(interval, segs[:])
}

func phaseSegments(warmup, ramp, steady time.Duration) [3]Segment {
	hold, rise := holdRise(warmup, ramp)
	return [3]Segment{
		{Duration: hold, From: 1, To: 1, Stage: 0},
		{Duration: rise, From: 0, To: 1, Stage: 1},
		{Duration: steady, From: 1, To: 1, Stage: 2},
	}
}

// holdRise splits warmup and ramp into the profile's hold at the target
// and its rise from 0 (see Schedule). With a ramp, the rise spans warmup
// and ramp: a warmup at the full rate followed by a ramp from 0 would make
// the rate fall back at the ramp's start, which reads as a stall of the
// broker; spreading the rise over both keeps the rate rising throughout
// and leaves steady (the measured window) exactly as it was.
func holdRise(warmup, ramp time.Duration) (hold, rise time.Duration) {
	if ramp > 0 {
		return 0, satAdd(warmup, ramp)
	}
	return warmup, 0
}

// Schedule is the schedule of one client of the profile.
func (p *Profile) Schedule(phase float64, count int) Schedule {
	return Schedule{Interval: p.interval, Phase: phase, Count: count, Profile: p}
}

// End is the profile's total duration.
func (p *Profile) End() time.Duration { return p.end }

// Segments returns a copy of the profile's segments, as given.
func (p *Profile) Segments() []Segment {
	out := make([]Segment, len(p.segs))
	for i, s := range p.segs {
		out[i] = Segment{Duration: s.duration, From: s.a, To: s.b, Stage: s.stage}
	}
	return out
}

// buildSegments fills segs (len(in)) and act (cap len(in)) and returns how
// many segments send. It writes into the caller's storage so that a
// Schedule without a Profile builds its three segments on the stack.
func buildSegments(e float64, in []Segment, segs, act []segment) int {
	var start, cum, prevCum, prevC float64
	var startNs time.Duration
	for i, s := range in {
		d := float64(s.Duration)
		a, b := s.From, s.To
		var c float64
		if a == b {
			c = d * a / e // d/e for the target rate, as the closed form had it
		} else {
			c = d * (a + b) / (2 * e) // d/(2e) for a ramp from 0 to 1
		}
		segs[i] = segment{start: start, dur: d, a: a, b: b, c: c, cum: cum, cumEnd: cum + c,
			base: prevCum, baseC: prevC, index: i, stage: s.Stage, duration: s.Duration, startNs: startNs}
		start += d
		startNs += s.Duration
		prevCum, prevC = cum, c
		cum += c
	}
	n := 0
	for i := range segs {
		if segs[i].c > 0 || i == len(segs)-1 {
			act[n] = segs[i]
			n++
		}
	}
	// A sending segment is followed by a pause when a segment that sends
	// nothing but lasts comes before the next sending one (or is the last).
	j := 0
	for i := range segs {
		if j < n && act[j].index == i {
			j++
			continue
		}
		if j > 0 && segs[i].dur > 0 && segs[i].c == 0 {
			act[j-1].pauseAfter = true
		}
	}
	if n > 1 && act[n-1].c == 0 && act[n-1].dur > 0 {
		act[n-2].pauseAfter = true
	}
	return n
}

// scanMargin is the relative distance below a count beyond which a
// segment's cumulative end certainly does not hold it (see Profile).
const scanMargin = 1e-14

// invert is N⁻¹(n) over the sending segments act (in ns, +Inf when the
// profile never reaches n), and the position in act of the segment that
// holds it.
func invert(act []segment, e, n float64) (float64, int) {
	return solve(act, locate(act, n), e, n)
}

// locate returns the position in act of the first segment whose local
// count for n is at most its own count, or the last one: a binary search
// brackets it, the exact test steps forward from there (see Profile).
func locate(act []segment, n float64) int {
	thr := n - math.Abs(n)*scanMargin
	i := sort.Search(len(act)-1, func(i int) bool { return act[i].cumEnd >= thr })
	for ; i < len(act)-1; i++ {
		if act[i].local(n) <= act[i].c {
			break
		}
	}
	return i
}

// local is count n made local to the segment (see Profile for the order).
func (s *segment) local(n float64) float64 { return (n - s.base) - s.baseC }

// solve is the time at which the segment act[i] reaches count n, and the
// segment it is sent in.
func solve(act []segment, i int, e, n float64) (float64, int) {
	s := &act[i]
	m := max(s.local(n), 0)
	var t float64
	switch {
	case s.a == s.b && s.a == 1:
		// The target rate: n·e, as the closed form (no division).
		t = s.start + m*e
	case s.a == s.b:
		if s.a == 0 {
			return math.Inf(1), i
		}
		t = s.start + m*e/s.a
	case m > s.c: // the last segment, past its end: its final rate
		if s.b == 0 {
			return math.Inf(1), i
		}
		t = s.start + (s.dur + (m-s.c)*e/s.b)
	case s.a == 0:
		t = s.start + math.Sqrt(2*s.dur*e*m/s.b)
	default:
		// (b−a)/(2d)·τ² + a·τ = m·e, in the form that does not cancel
		// whether the rate rises or falls.
		disc := max(s.a*s.a+2*(s.b-s.a)/s.dur*m*e, 0)
		t = s.start + 2*m*e/(s.a+math.Sqrt(disc))
	}
	if s.pauseAfter && t >= s.start+s.dur {
		// The count at the end of a segment followed by a pause is the
		// first of the next sending segment, at its start; never if the
		// pause is the end.
		next := &act[i+1]
		if next.c == 0 && next.b == 0 {
			return math.Inf(1), i + 1
		}
		return next.start, i + 1
	}
	return t, i
}

// countAt is N(x) over all segments: an estimate (firstAt corrects it).
func countAt(segs []segment, e, x float64) float64 {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].start > x }) - 1
	if i < 0 {
		return 0
	}
	s := &segs[i]
	tau := x - s.start
	if tau >= s.dur {
		if i == len(segs)-1 {
			return s.cumEnd + (tau-s.dur)*s.b/e
		}
		return s.cumEnd
	}
	return s.cum + (s.a*tau+(s.b-s.a)*tau*tau/(2*s.dur))/e
}

// End is when publishing stops, relative to the start of warmup.
func (s Schedule) End() time.Duration {
	if s.Profile != nil {
		return s.Profile.end
	}
	return s.Warmup + s.Ramp + s.Steady
}

// At returns the intended offset of message k (0-based) from the start of
// warmup, and false when the schedule has no message k.
func (s Schedule) At(k int) (time.Duration, bool) {
	if k < 0 || s.Interval <= 0 || (s.Count > 0 && k >= s.Count) {
		return 0, false
	}
	if s.Burst > 0 {
		return s.burstAt(k)
	}
	t := s.intended(k)
	if t >= float64(s.End()) {
		return 0, false
	}
	return time.Duration(t), true
}

// SegmentOf returns the index in the profile (without a Profile: 0 the
// hold at the target, 1 the rise, 2 steady; see Schedule) of the segment message k is sent in: the one whose
// span [start, end) holds At(k). It is false when the schedule has no
// message k.
func (s Schedule) SegmentOf(k int) (int, bool) {
	at, ok := s.At(k)
	if !ok {
		return 0, false
	}
	if p := s.Profile; p != nil {
		return segmentAt(p.segs, at), true
	}
	var segs, act [3]segment
	in := phaseSegments(s.Warmup, s.Ramp, s.Steady)
	buildSegments(float64(s.Interval), in[:], segs[:], act[:])
	return segmentAt(segs[:], at), true
}

// segmentAt is the last segment starting at or before t (a segment of no
// length holds no time).
func segmentAt(segs []segment, t time.Duration) int {
	return max(sort.Search(len(segs), func(i int) bool { return segs[i].startNs > t })-1, 0)
}

// inverse is N⁻¹(n) in nanoseconds (see the type's comment), unbounded
// above: past the profile it keeps the last segment's final rate.
func (s Schedule) inverse(n float64) float64 {
	if p := s.Profile; p != nil {
		t, _ := invert(p.act, float64(p.interval), n)
		return t
	}
	// Without a Profile: the three-phase closed form, which the pacer
	// calls once per message, three times faster than building the three
	// segments (TestScheduleMatchesClosedForm holds the two to the bit).
	e := float64(s.Interval)
	hold, rise := holdRise(s.Warmup, s.Ramp)
	w, r := float64(hold), float64(rise)
	if n <= w/e {
		return n * e
	}
	n -= w / e
	if r > 0 && n <= r/(2*e) {
		return w + math.Sqrt(2*r*e*n)
	}
	n -= r / (2 * e)
	return w + r + n*e
}

// Messages returns how many messages the schedule sends in [from, to)
// (offsets from the start of warmup): the number of k for which At(k)
// exists and lies in the window. It is exact and costs O(log segments),
// whatever the window's length, so that explain, validate and the run's
// end can count the messages of a month-long plan without walking them.
//
// N (see the type's comment) gives the count to within float rounding;
// firstAt then moves the estimate by the one or two messages that rounding
// can misplace, checking At itself on each side of the boundary, so that
// the result agrees with a walk over At exactly (walkMessages in the tests
// is that oracle).
func (s Schedule) Messages(from, to time.Duration) int {
	if s.Interval <= 0 || to <= from {
		return 0
	}
	return s.countUntil(to) - s.countUntil(from)
}

// countUntil is the number of messages intended before offset x: since
// intended times never decrease with k, they are messages 0..n-1 for the
// first n whose time is at or after x, capped by the schedule's total.
func (s Schedule) countUntil(x time.Duration) int {
	if x <= 0 {
		return 0
	}
	if s.Burst > 0 {
		return s.burstCountUntil(x)
	}
	if s.Poisson {
		return s.poissonCountUntil(x)
	}
	n := s.firstAt(s.countBefore(x), func(k int) bool {
		t := s.intended(k)
		// A time past int64 (+Inf: a profile that stops sending) is after x;
		// converting it would not be.
		return t >= math.MaxInt64 || time.Duration(t) >= x
	})
	return min(n, s.total())
}

// total is the number of messages the schedule has: those intended before
// End (compared in float, as At does), at most Count.
func (s Schedule) total() int {
	end := float64(s.End())
	n := s.firstAt(s.countBefore(s.End()), func(k int) bool { return s.intended(k) >= end })
	if s.Count > 0 {
		n = min(n, s.Count)
	}
	return n
}

// intended is message k's intended offset in (unrounded) nanoseconds.
func (s Schedule) intended(k int) float64 {
	if s.Poisson {
		return s.delayed(s.inverse(s.Arrivals.poissonAt(uint64(k))))
	}
	return s.delayed(s.inverse(float64(k) + s.Phase))
}

// delayed is t moved by the schedule's Delay; without one, t itself, so
// that schedules without a delay keep their times to the bit.
func (s Schedule) delayed(t float64) float64 {
	if s.Delay == 0 {
		return t
	}
	return float64(s.Delay) + t
}

// maxScheduleMessages caps the estimates firstAt starts from, far beyond
// any plan (the loader caps a timeline at a year and an interval at 1 ns,
// about 3·10¹⁶ messages), so that converting a float estimate to int can
// never overflow.
const maxScheduleMessages = 1 << 60

// firstAt returns the smallest k ≥ 0 with reached(k), where reached is
// false then true as k grows (intended times never decrease), starting
// from the estimate est of that k. Float rounding puts est within a few
// messages of the answer, so each loop runs a step or two.
func (s Schedule) firstAt(est float64, reached func(k int) bool) int {
	var k int
	switch {
	case !(est > 0): // also NaN
		k = 0
	case est >= maxScheduleMessages:
		k = maxScheduleMessages
	default:
		k = int(math.Ceil(est))
	}
	for k > 0 && reached(k-1) {
		k--
	}
	for k < maxScheduleMessages && !reached(k) {
		k++
	}
	return k
}

// countBefore is N(t) - Phase: about how many messages precede offset t.
func (s Schedule) countBefore(t time.Duration) float64 {
	t -= s.Delay
	if p := s.Profile; p != nil {
		return countAt(p.segs, float64(p.interval), float64(t)) - s.Phase
	}
	// Without a Profile: the three-phase closed form, as inverse.
	e := float64(s.Interval)
	hold, rise := holdRise(s.Warmup, s.Ramp)
	w, r := float64(hold), float64(rise)
	x := float64(t)
	var n float64
	switch {
	case x <= w:
		n = x / e
	case x <= w+r:
		n = w/e + (x-w)*(x-w)/(2*r*e)
	default:
		n = w/e + r/(2*e) + (x-w-r)/e
	}
	return n - s.Phase
}

// LastAt is the intended time of the schedule's last message when it has
// a Count (ignoring Steady), used to size the steady phase of a plan whose
// publishers all have counts.
func (s Schedule) LastAt() time.Duration {
	if s.Count <= 0 || s.Interval <= 0 {
		return 0
	}
	if s.Burst > 0 {
		return s.burstLastAt()
	}
	t := s.intended(s.Count - 1)
	if t >= math.MaxInt64 { // a profile that stops sending before message Count-1
		return math.MaxInt64
	}
	return time.Duration(t)
}
