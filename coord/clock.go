package coord

import (
	"errors"
	"fmt"
	"time"
)

// TestClock distorts a shard's clock, for the tests of how a sharded run
// measures and reports clock skew only: Skew is added to every reading of
// this shard's wall clock the protocol takes (the clock samples and the
// epoch), as a host whose clock is that far ahead would read it, and
// NoCorrection makes the shard take its own clock for the coordinator's
// (θ measured and reported, but not applied). cmd/mqplan sets it only
// under its hidden test switch (MQPLAN_TEST_HOOKS) and says so on every
// report; the zero value is a normal shard.
type TestClock struct {
	Skew         time.Duration
	NoCorrection bool
}

// String says what the hook does, for the reports of a run that used it.
func (tc TestClock) String() string {
	if tc == (TestClock{}) {
		return ""
	}
	sign := "+"
	if tc.Skew < 0 {
		sign = "" // Duration's String writes the minus
	}
	s := "test clock skew " + sign + tc.Skew.String()
	if tc.NoCorrection {
		s += ", offset not applied"
	}
	return s
}

// wall is t's wall reading as this shard's clock gives it (Unix ns).
func (s *Shard) wall(t time.Time) int64 { return t.UnixNano() + int64(s.test.Skew) }

// driftSamples is how many ping/pongs Resample makes; the one with the
// smallest round trip is kept.
const driftSamples = 4

// Resample measures the drift once the run has drained: the coordinator's
// clock minus this shard's estimate of it (the one its epoch was set by)
// at the same instant, within ±delay (half the best round trip). It is
// the error the epoch alignment had by the end: the start's (within the
// join's δ) plus what the two clocks drifted apart since. It needs the
// reader running (after Join) and waits at most within for the answers.
// A shard on the coordinator's host (SameHost) reads the coordinator's
// clock itself: its drift is 0 by construction, and it samples nothing.
func (s *Shard) Resample(within time.Duration) (drift, delay time.Duration, err error) {
	if s.same {
		return 0, 0, nil
	}
	timer := time.NewTimer(within)
	defer timer.Stop()
	best := int64(-1)
	for range driftSamples {
		t0 := time.Now()
		w0 := s.wall(t0)
		if err := s.c.write(&frame{Type: tPing, T0: w0}); err != nil {
			return 0, 0, fmt.Errorf("clock sample after the run: %w", err)
		}
		var f *frame
		for f == nil || f.T0 != w0 { // an earlier sample's late answer is skipped
			select {
			case f = <-s.pongs:
			case <-s.lost:
				return 0, 0, fmt.Errorf("clock sample after the run: %w", s.Lost())
			case <-timer.C:
				return 0, 0, errors.New("clock sample after the run: no answer in time")
			}
		}
		rtt := int64(time.Since(t0))
		d := (rtt - (f.T2 - f.T1)) / 2
		// This shard's estimate of the coordinator's clock at the middle
		// of the exchange, from the monotonic clock as coordinatorNow.
		est := s.baseWall + int64(t0.Sub(s.base)) + rtt/2 + s.applied
		if best < 0 || d < best {
			best = d
			drift, delay = time.Duration((f.T1+f.T2)/2-est), time.Duration(d)
		}
	}
	return drift, delay, nil
}

// NTPStatus is a host's clock discipline as the kernel reports it
// (adjtimex): whether the kernel deems its clock synchronised
// (STA_UNSYNC clear) and its maximum and estimated error. Known is false
// where it cannot be read (not Linux).
type NTPStatus struct {
	Known, Synced      bool
	MaxError, EstError time.Duration
}

// NTP reads this host's clock discipline, once a shard: a shard on a host
// whose clock is not disciplined depends on the coordinator's offset
// alone, and its report says so.
func NTP() NTPStatus { return readNTP() }
