package runner

import (
	"context"
	"testing"
	"time"

	"github.com/mqplan/mqplan/broker"
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
)

// lateWake is a shard that learns when publishing starts late (its
// process descheduled, its timer late): the publish barrier's answer
// reaches it after by.
type lateWake struct {
	Sync
	by time.Duration
}

func (l lateWake) Barrier(ctx context.Context, name string, vals []int64, at time.Duration) ([]int64, time.Duration, error) {
	sums, got, err := l.Sync.Barrier(ctx, name, vals, at)
	if name == "publish" {
		select {
		case <-time.After(l.by):
		case <-ctx.Done():
		}
	}
	return sums, got, err
}

// TestShardStartsLate: a shard that wakes for the common publish start
// after another shard's publishers have begun still attributes their
// early deliveries to the phase they were sent in (warmup), not to the
// one its own zero start would put them in: each phase receives exactly
// what its schedule sent, as one process would count. Every subscriber
// is on the other shard from its publisher (stripe), and shard 1 learns
// the start 300 ms late, after the whole warmup: counted from a zero
// start, every warmup message it receives would be read as sent later.
func TestShardStartsLate(t *testing.T) {
	p := e2ePlan(3, 1, 400*time.Millisecond)
	p.Warmup = 100 * time.Millisecond // shorter than the start's offset from the epoch (connect, subscribe, slack)
	p.Drain = 3 * time.Second
	p.Sharding = &plans.Sharding{Strategy: plans.ShardingStripe}
	prog := compile(t, p)
	b, err := broker.Start(broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(5 * time.Second)
	st, _ := runShards(t, prog, 2, b.URL(), func(i int, s Sync) Sync {
		if i == 1 {
			return lateWake{s, 300 * time.Millisecond}
		}
		return s
	})
	if st.Incomplete != "" {
		t.Fatalf("incomplete: %s", st.Incomplete)
	}
	for _, ph := range []phase.Phase{phase.Warmup, phase.Steady} {
		m := &st.Phases[ph].Total
		want := prog.Phases[ph].Messages
		if m.Sent != want || m.Expected != want || m.Received != want || m.Lost != 0 {
			t.Errorf("%s: sent %d, expected %d, received %d, lost %d; want %d of each and none lost", ph, m.Sent, m.Expected, m.Received, m.Lost, want)
		}
	}
}
