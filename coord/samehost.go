package coord

import (
	"time"
)

// Shards on the coordinator's host (--workers, or --shard processes
// started side by side) read the very clocks the coordinator reads: one
// kernel's CLOCK_MONOTONIC and CLOCK_REALTIME. They need no clock
// samples over the network, whose half round trip (tens of µs on
// loopback) would be all of their uncertainty: the coordinator gives the
// common epoch as a CLOCK_MONOTONIC value too, and such a shard maps it
// onto its own monotonic clock by reading both clocks back to back. The
// error is that read's gap, well under a microsecond, and it cannot grow
// over the run (drift is 0 by construction: there is one clock).
//
// A shard counts as on the same host when the coordinator's boot id
// equals its own and the two processes see the same CLOCK_MONOTONIC −
// CLOCK_REALTIME (within their reads' gaps and sameHostSlack): a shard in
// another time namespace (whose CLOCK_MONOTONIC is offset) shares the
// boot id but not the clock, and aligns through the samples. A shard
// under the test clock hook never does: the hook stands for another
// host's clock.

// pairSamples is how many back-to-back reads monoPair makes; the one
// with the smallest gap is kept (a read preempted in between is not).
const pairSamples = 8

// sameHostSlack is how far CLOCK_MONOTONIC − CLOCK_REALTIME may differ
// between the coordinator and a shard of one host beyond their reads'
// gaps: NTP slewing CLOCK_REALTIME (at most 500 ppm) between the two
// reads, milliseconds apart. An NTP step in between exceeds it: the
// shard then aligns through the samples, which is merely less exact.
const sameHostSlack = 100 * time.Microsecond

// monoPair reads this process's clock (time.Now) and CLOCK_MONOTONIC at
// one instant: at is a time.Now reading (with its monotonic part), mono
// the CLOCK_MONOTONIC reading taken within ±gap of it. ok is false where
// CLOCK_MONOTONIC cannot be read.
func monoPair() (at time.Time, mono int64, gap time.Duration, ok bool) {
	gap = -1
	for range pairSamples {
		t1 := time.Now()
		m, ok := monoNow()
		if !ok {
			return time.Time{}, 0, 0, false
		}
		d := time.Since(t1)
		if gap < 0 || d/2 < gap {
			at, mono, gap = t1.Add(d/2), m, d/2
		}
	}
	return at, mono, gap, true
}

// sameHost decides, on the coordinator's welcome (its boot id, and its
// wall and CLOCK_MONOTONIC readings within ±its gap), whether this shard
// shares its clocks; when it does, it sets the shard's time base from a
// pair of its own readings: offset 0 (one CLOCK_REALTIME) and δ the two
// reads' gaps.
func (s *Shard) sameHost(w *frame) bool {
	if s.test != (TestClock{}) || w.Boot == "" || w.Mono == 0 || w.Boot != bootID() {
		return false
	}
	at, mono, gap, ok := monoPair()
	if !ok {
		return false
	}
	theirs, ours := w.Mono-w.At, mono-at.UnixNano()
	if time.Duration(theirs-ours).Abs() > time.Duration(w.Delay)+gap+sameHostSlack {
		return false
	}
	s.same, s.monoBase = true, mono
	s.offset, s.delay = 0, w.Delay+int64(gap)
	s.base, s.baseWall, s.applied = at, at.UnixNano(), 0
	return true
}

// SameHost reports whether this shard shares the coordinator's clocks
// (so its epoch is aligned within Clock's δ, well under a microsecond,
// and cannot drift).
func (s *Shard) SameHost() bool { return s.same }

// instantOfMono is the instant of this shard's clock at which
// CLOCK_MONOTONIC reads mono.
func (s *Shard) instantOfMono(mono int64) time.Time {
	return s.base.Add(time.Duration(mono - s.monoBase))
}
