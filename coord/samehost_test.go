package coord

import (
	"context"
	"sync"
	"testing"
	"time"
)

// sameHostDelta is how large a same-host shard's δ may be: the gaps of
// two back-to-back clock reads (best of pairSamples), well under a
// microsecond each on an idle machine; a few µs leave room for a loaded
// one, and are still a tenth of a loopback clock sample's.
const sameHostDelta = 5 * time.Microsecond

// TestSameHostShardsAlignExactly: two shards in this process share the
// coordinator's clocks: each finds so (SameHost), with θ 0 and δ under a
// few µs, and the two derive the same epoch instant, the coordinator's
// epoch, within their δs; the drift is 0 and nothing is sampled.
func TestSameHostShardsAlignExactly(t *testing.T) {
	if bootID() == "" {
		t.Skip("no boot id on this system: shards always align through the clock samples")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr, done := serve(t, ctx, Config{Hello: testHello, JoinTimeout: 10 * time.Second, EpochDelay: 50 * time.Millisecond})
	shards := make([]*Shard, 2)
	epochs := make([]int64, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if shards[i], errs[i] = Join(ctx, addr, shardHello(i), nil, 10*time.Second, 0); errs[i] != nil {
				return
			}
			epochs[i], errs[i] = shards[i].Epoch(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		defer shards[i].Close()
	}
	var deltas [2]time.Duration
	for i, s := range shards {
		theta, delta := s.Clock()
		deltas[i] = delta
		if !s.SameHost() || theta != 0 || delta < 0 || delta > sameHostDelta {
			t.Errorf("shard %d: same host %v, θ %v ± %v; want same host, θ 0 ± under %v", i, s.SameHost(), theta, delta, sameHostDelta)
		}
		// The epoch instant, read on the wall clock (the coordinator's
		// own), is the epoch.
		if got := time.Duration(s.EpochInstant().UnixNano() - epochs[i]); got.Abs() > delta {
			t.Errorf("shard %d: epoch instant %v from the epoch, want within ±%v", i, got, delta)
		}
		drift, d, err := s.Resample(time.Second)
		if err != nil || drift != 0 || d != 0 {
			t.Errorf("shard %d: drift %v ± %v (%v), want 0 by construction", i, drift, d, err)
		}
	}
	if epochs[0] != epochs[1] {
		t.Errorf("epochs %d and %d", epochs[0], epochs[1])
	}
	// On this process's monotonic clock the two instants agree within
	// both δs.
	if gap := shards[0].EpochInstant().Sub(shards[1].EpochInstant()); gap.Abs() > deltas[0]+deltas[1] {
		t.Errorf("the shards' epoch instants are %v apart, want within ±%v", gap, deltas[0]+deltas[1])
	}
	t.Logf("δ %v and %v", deltas[0], deltas[1])
	for i, s := range shards {
		if err := s.HandIn([]byte(`{}`), 5*time.Second); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	for i, d := range r.res.Delay {
		if time.Duration(d) != deltas[i] || r.res.Offset[i] != 0 {
			t.Errorf("the coordinator has shard %d's clock as %v ± %v, the shard %v ± %v", i, r.res.Offset[i], d, 0, deltas[i])
		}
	}
}

// TestSameHostDecision: a shard shares the coordinator's clocks only when
// the boot ids match, the two see the same CLOCK_MONOTONIC − wall (not
// so in another time namespace) and no test hook stands for another
// host's clock.
func TestSameHostDecision(t *testing.T) {
	boot := bootID()
	if boot == "" {
		t.Skip("no boot id on this system")
	}
	tests := []struct {
		name string
		tc   TestClock
		edit func(f *frame)
		want bool
	}{
		{"same boot, same clock", TestClock{}, func(*frame) {}, true},
		{"another boot id", TestClock{}, func(f *frame) { f.Boot = "another" }, false},
		{"no boot id (another system)", TestClock{}, func(f *frame) { f.Boot = "" }, false},
		{"an older coordinator", TestClock{}, func(f *frame) { f.Boot, f.Mono = "", 0 }, false},
		{"monotonic clock offset (a time namespace)", TestClock{}, func(f *frame) { f.Mono += int64(time.Second) }, false},
		{"offset just beyond the slack", TestClock{}, func(f *frame) { f.Mono += int64(2 * sameHostSlack) }, false},
		{"test hook", TestClock{Skew: time.Millisecond}, func(*frame) {}, false},
		{"test hook without correction", TestClock{NoCorrection: true}, func(*frame) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, mono, gap, ok := monoPair()
			if !ok {
				t.Fatal("CLOCK_MONOTONIC unreadable")
			}
			w := &frame{Type: tWelcome, Boot: boot, At: at.UnixNano(), Mono: mono, Delay: int64(gap)}
			tt.edit(w)
			s := &Shard{test: tt.tc}
			if got := s.sameHost(w); got != tt.want || s.SameHost() != tt.want {
				t.Errorf("same host %v, want %v", got, tt.want)
			}
			if !tt.want && (s.offset != 0 || s.delay != 0 || !s.base.IsZero()) {
				t.Errorf("the time base was set (%d ± %d) though not the same host", s.offset, s.delay)
			}
		})
	}
}
