package partial

import (
	"slices"
	"time"

	"github.com/mqplan/mqplan/stats"
)

// fromShardsOf is a shard's stats.Clock (its deliveries by publisher
// shard) as the part carries it: one entry per shard of the run, nil when
// the run did not split them.
func fromShardsOf(c *stats.Clock, count int) []FromShard {
	if c == nil || len(c.Pairs) != count {
		return nil
	}
	out := make([]FromShard, count)
	for i, p := range c.Pairs {
		out[i] = FromShard{Shard: p.From, Deliveries: p.Deliveries, MinNS: int64(p.Min)}
	}
	return out
}

// mergeClock gathers the parts' time bases into the run's stats.Clock:
// a row per part, and every (publisher shard → receiver shard) pair with
// deliveries. Nil for a single process's part, which has one clock.
func mergeClock(files []*File) *stats.Clock {
	if files[0].Shard.Count < 2 {
		return nil
	}
	c := &stats.Clock{}
	for _, f := range files {
		fc := &f.Clock
		row := stats.ShardClock{Index: f.Shard.Index, Offset: time.Duration(fc.OffsetNS), Delay: time.Duration(fc.UncertaintyNS),
			Source: fc.Source, SameHost: fc.Source == SameHost, PairsKnown: len(fc.FromShards) > 0}
		if fc.DriftNS != nil {
			row.Drift, row.DriftDelay, row.DriftKnown = time.Duration(*fc.DriftNS), time.Duration(fc.DriftUncertaintyNS), true
		}
		if n := fc.NTP; n != nil {
			row.NTP = stats.NTP{Known: true, Synced: n.Synced, MaxError: time.Duration(n.MaxErrorNS), EstError: time.Duration(n.EstErrorNS)}
		}
		c.Shards = append(c.Shards, row)
		for _, p := range fc.FromShards {
			if p.Deliveries > 0 {
				c.Pairs = append(c.Pairs, stats.ShardPair{From: p.Shard, To: f.Shard.Index, Deliveries: p.Deliveries, Min: time.Duration(p.MinNS)})
			}
		}
	}
	slices.SortFunc(c.Pairs, func(a, b stats.ShardPair) int {
		if a.From != b.From {
			return a.From - b.From
		}
		return a.To - b.To
	})
	return c
}
