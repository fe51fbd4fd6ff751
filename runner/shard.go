package runner

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Shard makes a run one part of a run split across processes (mqplan run
// --shard I/N): the runner compiles and holds the whole program, so that
// message headers, expectations and groups keep their global indices,
// but connects, subscribes and publishes with the clients it owns only,
// and meets the other shards at the run's barriers through Sync, so that
// what a single process decides alone (the epoch, whether a group failed,
// when publishing starts, when drain has everything) is decided once for
// the whole run.
type Shard struct {
	// Index is this shard's number, 0 ≤ Index < Count.
	Index, Count int
	// Owned says, by global client index (plans.Program.Clients), which
	// clients this shard runs (plans.Assignment.Mask). The others stay
	// in the program, never connected.
	Owned []bool
	// ExpectedByShard is plans.Assignment.ExpectedByShard: each
	// publisher's deliveries a message by the shard that receives them,
	// from which a shard tells every other what to wait for.
	ExpectedByShard [][]int
	// Sync is the way to the other shards (package coord).
	Sync Sync
	// ShardOf is the owning shard by global client index
	// (plans.Assignment.Shard): a receiver splits its deliveries by the
	// publisher's shard, so that cross-shard latency, the only one that
	// depends on two clocks, is kept apart (stats.Clock). Nil: not split.
	ShardOf []int32
}

// Sync is what a shard's run needs of the coordinator. Every shard makes
// the same calls in the same order, because each decision after one is
// taken from the same global figures; a call that fails (the coordinator
// lost, the run stopped) makes the run incomplete with its error.
type Sync interface {
	// Epoch blocks until the run's common epoch and returns it as a
	// coordinator-clock Unix ns: message headers carry intended times
	// from it, so a receiver on any shard attributes phases from numbers
	// alone, and no shard calls another's early messages foreign.
	Epoch(ctx context.Context) (int64, error)
	// Barrier waits for every shard to reach the barrier called name, and
	// returns vals summed over the shards element by element, and the
	// latest of their at (offsets from the epoch).
	Barrier(ctx context.Context, name string, vals []int64, at time.Duration) ([]int64, time.Duration, error)
}

// epochInstant is a Sync that knows the common epoch as an instant of
// this process's monotonic clock (coord.Shard.EpochInstant).
type epochInstant interface {
	EpochInstant() time.Time
}

// pubStartSlack is how far ahead of its own clock a shard proposes to
// start publishing: more than a barrier's round trip, so that the latest
// proposal is still ahead of every shard when the answer reaches it, and
// they all start on the same offset from the common epoch.
const pubStartSlack = 100 * time.Millisecond

// shardRun is a run's sharding state (nil fields when it is not sharded).
type shardRun struct {
	shard *Shard
	// err is the first failed Sync call: the run is incomplete with it.
	err error
	// expected is the deliveries the whole run's publishers sent to this
	// shard's clients, once the expect barrier has answered
	// (math.MaxInt64 before).
	expected atomic.Int64
	// started is closed once this shard knows when publishing starts
	// (run.pubStart), or once it never will; startOnce closes it.
	started   chan struct{}
	startOnce sync.Once
}

// markStarted says that run.pubStart is known, or never will be.
func (s *shardRun) markStarted() {
	if s.started != nil {
		s.startOnce.Do(func() { close(s.started) })
	}
}

// awaitPubStart holds a delivery that reached this shard before it knew
// when publishing starts: the shards wake for the common start on their
// own clocks, and a message another shard published on waking can be
// here first. Its phase and stage are read from its intended time less
// run.pubStart, which is 0 until then, and would put a warmup message
// in a later phase. The receiving goroutine waits (on one atomic load
// per delivery once known; never in a run that is not sharded).
func (r *run) awaitPubStart() {
	if r.sh.started != nil && r.pubStart.Load() == 0 {
		<-r.sh.started
	}
}

// owns reports whether this process runs client i.
func (r *run) owns(i int) bool {
	return r.sh.shard == nil || r.sh.shard.Owned[i]
}

// shardOf is publisher pub's shard when deliveries are split by it, -1
// otherwise (a single process, or no ShardOf).
func (r *run) shardOf(pub uint32) int32 {
	if sh := r.sh.shard; sh != nil && sh.ShardOf != nil {
		if s := sh.ShardOf[pub]; s >= 0 && int(s) < sh.Count {
			return s
		}
	}
	return -1
}

// checkShard refuses a shard that does not fit the program.
func checkShard(sh *Shard, clients int) error {
	if sh == nil {
		return nil
	}
	switch {
	case sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count:
		return fmt.Errorf("shard %d/%d: out of range", sh.Index, sh.Count)
	case len(sh.Owned) != clients || len(sh.ExpectedByShard) != clients || (sh.ShardOf != nil && len(sh.ShardOf) != clients):
		return fmt.Errorf("shard %d/%d: the assignment covers %d clients, the plan has %d", sh.Index, sh.Count, len(sh.Owned), clients)
	case sh.Sync == nil:
		return fmt.Errorf("shard %d/%d: no coordinator", sh.Index, sh.Count)
	}
	return nil
}

// startEpoch sets the run's epoch: now, or, sharded, the common epoch
// the coordinator gives.
func (r *run) startEpoch(ctx context.Context) error {
	if r.sh.shard == nil {
		r.epoch = time.Now()
		r.epochWall = r.epoch.UnixNano()
		return nil
	}
	wall, err := r.sh.shard.Sync.Epoch(ctx)
	r.epoch = time.Now()
	if ei, ok := r.sh.shard.Sync.(epochInstant); ok && err == nil {
		// The epoch's own instant, not when the sleep until it ended:
		// shards whose timers wake late by different amounts would
		// otherwise start their clocks apart by the difference.
		if at := ei.EpochInstant(); !at.IsZero() && !at.After(r.epoch) {
			r.epoch = at
		}
	}
	r.epochWall = wall
	if err != nil {
		r.epochWall = r.epoch.UnixNano()
		return fmt.Errorf("shard %d/%d: the common epoch: %w", r.sh.shard.Index, r.sh.shard.Count, err)
	}
	return nil
}

// sumOverShards returns counts summed over every shard at the barrier
// called name; counts themselves when the run is not sharded, and nil
// once a Sync call failed.
func (r *run) sumOverShards(ctx context.Context, name string, counts []int64) []int64 {
	if r.sh.shard == nil {
		return counts
	}
	if r.sh.err != nil {
		return nil
	}
	sums, _, err := r.sh.shard.Sync.Barrier(ctx, name, counts, 0)
	if err == nil && len(sums) != len(counts) {
		err = fmt.Errorf("barrier %s: %d figures back for %d", name, len(sums), len(counts))
	}
	if err != nil {
		r.sh.err = fmt.Errorf("shard %d/%d: %w", r.sh.shard.Index, r.sh.shard.Count, err)
		return nil
	}
	return sums
}

// syncFailed is the incomplete message of a run whose shards could not
// agree, or "".
func (r *run) syncFailed() string {
	if r.sh.err == nil {
		return ""
	}
	return r.sh.err.Error()
}

// publishStart returns the offset from the epoch at which publishing
// starts: now, or, sharded, the latest of every shard's proposal, waited
// for on the monotonic clock. Every SUBACK on every shard is in by then:
// each shard proposes only once its own are.
func (r *run) publishStart(ctx context.Context) (int64, bool) {
	if r.sh.shard == nil {
		return r.now(), true
	}
	_, at, err := r.sh.shard.Sync.Barrier(ctx, "publish", nil, r.at()+pubStartSlack)
	if err != nil {
		r.sh.err = fmt.Errorf("shard %d/%d: %w", r.sh.shard.Index, r.sh.shard.Count, err)
		return 0, false
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	r.sleepUntil(ctx, timer, at)
	return int64(at), true
}

// startExpect tells, once this shard's publishers have returned, every
// shard how many deliveries they sent it (messages sent ×
// ExpectedByShard, per publisher), and learns from the coordinator how
// many the whole run sent to this one: drain waits for exactly those.
func (r *run) startExpect(ctx context.Context) {
	sh := r.sh.shard
	if sh == nil {
		return
	}
	to := make([]int64, sh.Count)
	for i, n := range r.rec.sentBy {
		if n == 0 || !sh.Owned[i] {
			continue
		}
		for s, k := range sh.ExpectedByShard[i] {
			to[s] += n * int64(k)
		}
	}
	r.sh.expected.Store(math.MaxInt64)
	go func() {
		sums, _, err := sh.Sync.Barrier(ctx, "expect", to, 0)
		if err != nil || len(sums) != sh.Count {
			return // drain runs to its limit: what arrived is what was measured
		}
		r.sh.expected.Store(sums[sh.Index])
	}()
}

// expectedHere is what drain waits for: exp, this process's own
// expectation, when the run is not sharded; the coordinator's figure for
// this shard once known; until then more than can arrive.
func (r *run) expectedHere(exp int64) int64 {
	if r.sh.shard == nil {
		return exp
	}
	return r.sh.expected.Load()
}
