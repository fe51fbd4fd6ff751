package runner

import (
	"math"
	"time"

	"github.com/mqplan/mqplan/stats"
)

// pairAcc is one stripe's deliveries from one publisher shard: how many,
// and the least latency among them (signed ns).
type pairAcc struct {
	n   int64
	min int64
}

// withShards makes the recorder of shard self of n split its deliveries
// by the publisher's shard (recvRecord.from): each stripe counts them per
// publisher shard with their least latency, and records the latency of a
// cross-shard one in its cell's LatencyCross too. A recorder never given
// this records neither (a single process: every delivery is local).
func (r *recorder) withShards(self, n int) {
	r.shardSelf = self
	for i := range r.stripes {
		r.stripes[i].from = make([]pairAcc, n)
	}
}

// recordFrom counts delivery d from publisher shard d.from into st (under
// st.mu) and m, its cell; us is its latency in microseconds. No
// allocation but a cell's first cross-shard sample's histogram.
func (r *recorder) recordFrom(st *stripe, m *stats.Metrics, d *recvRecord, us int64) {
	p := &st.from[d.from]
	if l := int64(d.latency); p.n == 0 || l < p.min {
		p.min = l
	}
	p.n++
	if int(d.from) != r.shardSelf {
		var over int64 // counted once, in OverRange, by Latency's record
		record(&m.LatencyCross, us, &over)
	}
}

// shardPairs is the run's deliveries to this shard by publisher shard,
// reduced over the stripes (nil when the recorder does not split them):
// the part of stats.Clock a shard knows alone.
func (r *recorder) shardPairs() *stats.Clock {
	if len(r.stripes) == 0 || r.stripes[0].from == nil {
		return nil
	}
	n := len(r.stripes[0].from)
	acc := make([]pairAcc, n)
	for i := range acc {
		acc[i].min = math.MaxInt64
	}
	for i := range r.stripes {
		st := &r.stripes[i]
		st.mu.Lock()
		for s, p := range st.from {
			if p.n > 0 {
				acc[s].n += p.n
				acc[s].min = min(acc[s].min, p.min)
			}
		}
		st.mu.Unlock()
	}
	c := &stats.Clock{Pairs: make([]stats.ShardPair, 0, n)}
	for s, p := range acc {
		sp := stats.ShardPair{From: s, To: r.shardSelf, Deliveries: p.n}
		if p.n > 0 {
			sp.Min = time.Duration(p.min)
		}
		c.Pairs = append(c.Pairs, sp)
	}
	return c
}
