package runner

import (
	"context"
	"fmt"
	"math"
	"time"
)

// What makes a shard's figures read as one process's once merged: the
// notices that count clients say whose, and shard 0, the one that
// watches the broker, reads its counters when the whole run is over.

// ofClients names the clients of group gi a count is out of: the
// group's ("4 clients"), or, sharded, this shard's of it ("2 clients of
// shard 1/2, of the group's 4"). A merge keeps one copy of equal
// notices, so a shard's count must say whose it is, or two shards' "2 of
// 4" would read as one.
func (r *run) ofClients(gi int) string {
	g := &r.prog.Groups[gi]
	sh := r.sh.shard
	if sh == nil {
		return fmt.Sprintf("%d clients", g.Count)
	}
	own := 0
	for i := g.First; i < g.First+g.Count; i++ {
		if sh.Owned[i] {
			own++
		}
	}
	return fmt.Sprintf("%d clients of shard %d/%d, of the group's %d", own, sh.Index, sh.Count, g.Count)
}

// shardWord is " of shard I/N" for a count of a sharded run's notice,
// "" for a single process's (see ofClients).
func (r *run) shardWord() string {
	if sh := r.sh.shard; sh != nil {
		return fmt.Sprintf(" of shard %d/%d", sh.Index, sh.Count)
	}
	return ""
}

// drainedSlack bounds allDrained's wait beyond the plan's drain: every
// shard's drain starts at the same offset from the epoch (publishing ends
// on the schedule) and lasts at most the drain, so this is a shard that
// hangs, whose loss the coordinator reports.
const drainedSlack = 10 * time.Second

// allDrained holds shard 0, the one that watches the broker
// (startCounters), until every shard has drained and disconnected, so
// that the broker's counters at the end are read after the whole run's
// deliveries, drops and disconnections, as one process reads them: read
// at shard 0's own end, they missed what the broker did for a shard still
// draining (broker.dropped, broker.publish.sent). Every shard of a plan
// with broker.metrics calls it, in the same place, so the barrier opens.
func (r *run) allDrained(ctx context.Context) {
	sh := r.sh.shard
	if sh == nil || r.prog.Plan.Broker.Metrics == nil || r.sh.err != nil {
		return
	}
	wait, cancel := context.WithTimeout(ctx, r.prog.Drain+drainedSlack)
	defer cancel()
	if _, _, err := sh.Sync.Barrier(wait, "drained", nil, 0); err != nil && sh.Index == 0 && ctx.Err() == nil {
		r.note(fmt.Sprintf("broker.metrics: the broker's counters at the end were read without knowing that every shard had drained (%v): what the broker did for a shard still draining may be missing", err))
	}
}

// sentHere reports whether publisher i, another shard's, sent this shard
// deliveries: its messages reach this shard's clients
// (ExpectedByShard), and the whole run's publishers sent this shard some
// (the expect barrier's sum). A share group's silence is then noted as
// one process notes it, although the publisher is not this shard's to
// see (noteSilentShare).
func (r *run) sentHere(i int) bool {
	sh := r.sh.shard
	if sh == nil || sh.Owned[i] || len(sh.ExpectedByShard[i]) <= sh.Index || sh.ExpectedByShard[i][sh.Index] == 0 {
		return false
	}
	exp := r.sh.expected.Load()
	return exp > 0 && exp != math.MaxInt64
}
