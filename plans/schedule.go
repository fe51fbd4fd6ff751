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
// (offsets from the start of warmup), exactly, by counting intended times.
// It is a slow, obviously-correct oracle for tests and for explain, not
// for hot paths.
func (s Schedule) Messages(from, to time.Duration) int {
	if s.Interval <= 0 || to <= from {
		return 0
	}
	// Start near `from` using the closed form, then walk.
	k := int(s.countBefore(from)) - 2
	if k < 0 {
		k = 0
	}
	n := 0
	for ; ; k++ {
		t, ok := s.At(k)
		if !ok || t >= to {
			break
		}
		if t >= from {
			n++
		}
	}
	return n
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
