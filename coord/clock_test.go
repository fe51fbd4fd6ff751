package coord

import (
	"context"
	"testing"
	"time"
)

// TestClockHookOffsetAndDrift: a shard whose clock reads 5 ms ahead (the
// test hook) measures θ = -5ms within δ; the epoch instant it derives is
// the coordinator's epoch on its monotonic clock within δ, and the clock
// sampled again finds no drift (within the two samples' δ) when the
// offset is applied, and the whole 5 ms when it is not.
func TestClockHookOffsetAndDrift(t *testing.T) {
	const skew = 5 * time.Millisecond
	tests := []struct {
		name      string
		tc        TestClock
		wantDrift time.Duration
	}{
		{"offset applied", TestClock{Skew: skew}, 0},
		{"offset not applied", TestClock{Skew: skew, NoCorrection: true}, -skew},
		{"no hook", TestClock{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			h := testHello
			h.N = 1
			addr, done := serve(t, ctx, Config{Hello: h, JoinTimeout: 10 * time.Second, EpochDelay: 50 * time.Millisecond})
			s, err := JoinWith(ctx, addr, h, nil, 10*time.Second, 0, tt.tc)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			theta, delta := s.Clock()
			if hooked := tt.tc != (TestClock{}); s.SameHost() == hooked {
				t.Errorf("same host %v with the hook %v: a hooked shard stands for another host", s.SameHost(), tt.tc)
			}
			if (theta + tt.tc.Skew).Abs() > delta {
				t.Errorf("θ %v ± %v, want %v", theta, delta, -tt.tc.Skew)
			}
			epoch, err := s.Epoch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The coordinator's clock is this process's wall clock: the
			// epoch instant, read on it, is the epoch (within δ, when
			// applied; the skew early, when not).
			at := s.EpochInstant()
			got := time.Duration(at.UnixNano() - epoch)
			if want := tt.wantDrift; (got - want).Abs() > delta+time.Millisecond/10 {
				t.Errorf("epoch instant %v from the epoch, want %v ± %v", got, want, delta)
			}
			drift, d, err := s.Resample(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if (drift - tt.wantDrift).Abs() > delta+d {
				t.Errorf("drift %v ± %v, want %v ± %v", drift, d, tt.wantDrift, delta)
			}
			if err := s.HandIn([]byte(`{}`), 5*time.Second); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.err != nil {
				t.Fatal(r.err)
			}
		})
	}
}
