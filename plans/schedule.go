package plans

import (
	"math"
	"time"
)

// Schedule is one publisher's open-loop timetable: the intended send time
// of its k-th message is a pure function of k, never "whenever the
// previous one finished", so a slow broker or generator shows up as
// latency and lag instead of silently lowering the rate.
//
// The rate profile, as a multiple of the target rate 1/Interval, is
//
//	warmup  [0, W)        : 1            (full rate, not measured)
//	ramp    [W, W+R)      : (t-W)/R      (linear from 0 to the target)
//	steady  [W+R, W+R+D)  : 1
//
// so the expected number of messages sent by time t is
//
//	N(t) = t/e                              for t ≤ W
//	     = W/e + (t-W)²/(2Re)               for W ≤ t ≤ W+R
//	     = W/e + R/(2e) + (t-W-R)/e         for t ≥ W+R
//
// where e is Interval. Message k (0-based) is intended at N⁻¹(k+Phase):
// Phase in [0,1) staggers the clients of a group so that they do not fire
// in lockstep (client j of m gets Phase j/m, which spaces a group's sends
// evenly at e/m).
type Schedule struct {
	// Interval is the time between two messages at the target rate.
	Interval time.Duration
	// Phase in [0,1) shifts this client's messages by a fraction of Interval.
	Phase float64
	// Warmup, Ramp and Steady are the lengths of the publishing phases.
	Warmup, Ramp, Steady time.Duration
	// Count, when non-zero, caps the number of messages.
	Count int
}

// End is when publishing stops, relative to the start of warmup.
func (s Schedule) End() time.Duration { return s.Warmup + s.Ramp + s.Steady }

// At returns the intended offset of message k (0-based) from the start of
// warmup, and false when the schedule has no message k.
func (s Schedule) At(k int) (time.Duration, bool) {
	if k < 0 || s.Interval <= 0 || (s.Count > 0 && k >= s.Count) {
		return 0, false
	}
	t := s.inverse(float64(k) + s.Phase)
	if t >= float64(s.End()) {
		return 0, false
	}
	return time.Duration(t), true
}

// inverse is N⁻¹(n) in nanoseconds (see the type's comment), unbounded
// above: past the steady phase it keeps the target rate.
func (s Schedule) inverse(n float64) float64 {
	e := float64(s.Interval)
	w := float64(s.Warmup)
	r := float64(s.Ramp)
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
// exists and lies in the window. It is exact and costs O(1), whatever the
// window's length, so that explain, validate and the run's end can count
// the messages of a month-long plan without walking them.
//
// The closed form N (see the type's comment) gives the count to within
// float rounding; firstAt then moves the estimate by the one or two
// messages that rounding can misplace, checking At itself on each side of
// the boundary, so that the result agrees with a walk over At exactly
// (walkMessages in the tests is that oracle).
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
	n := s.firstAt(s.countBefore(x), func(k int) bool { return time.Duration(s.intended(k)) >= x })
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
func (s Schedule) intended(k int) float64 { return s.inverse(float64(k) + s.Phase) }

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
	e := float64(s.Interval)
	w := float64(s.Warmup)
	r := float64(s.Ramp)
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
	return time.Duration(s.inverse(float64(s.Count-1) + s.Phase))
}
