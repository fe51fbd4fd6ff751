package stats

import (
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// LocalLatency is the Latency of the deliveries whose publisher ran on
// the receiver's shard: Latency minus LatencyCross, bucket by bucket (both
// have NewHistogram's geometry), so it is as exact as Latency. In a
// single process it is Latency itself. Nil when there are no samples.
func (m *Metrics) LocalLatency() *hdrhistogram.Histogram {
	if m.LatencyCross == nil || m.LatencyCross.TotalCount() == 0 || m.Latency == nil {
		return m.Latency
	}
	a, b := m.Latency.Export(), m.LatencyCross.Export()
	counts := slices.Clone(a.Counts)
	for i, v := range b.Counts[:min(len(b.Counts), len(counts))] {
		counts[i] = max(0, counts[i]-v)
	}
	return hdrhistogram.Import(&hdrhistogram.Snapshot{LowestTrackableValue: a.LowestTrackableValue,
		HighestTrackableValue: a.HighestTrackableValue, SignificantFigures: a.SignificantFigures, Counts: counts})
}

// Clock is a sharded run's time base, as its parts reported it (nil for a
// single process, whose one clock needs no reconciling). A shard aligns
// its epoch on the coordinator's clock through its offset θ; an error e
// in that alignment adds e_pub − e_sub to a cross-shard delivery's
// latency and cancels on a same-shard one. These figures bound e and
// check it against the traffic itself.
type Clock struct {
	// Shards are the parts' rows, by shard index; a missing part's is
	// absent.
	Shards []ShardClock
	// Pairs are the (publisher shard → receiver shard) pairs with at
	// least one delivery, From then To ascending, same-shard ones
	// included.
	Pairs []ShardPair
}

// ShardClock is one shard's time base.
type ShardClock struct {
	Index int
	// Offset is θ, the coordinator's clock minus the shard's, and Delay
	// δ, half the round trip of the sample it came from: the alignment
	// error at the start is within ±Delay.
	Offset, Delay time.Duration
	// Drift is the coordinator's clock minus the shard's estimate of it,
	// sampled again once the run had drained: the alignment error that
	// built up over the run (plus the start's, within ±Delay), measured
	// within ±DriftDelay. DriftKnown is false when the part does not say
	// (an older mqplan, or the sample failed).
	Drift, DriftDelay time.Duration
	DriftKnown        bool
	// Source says where the offset came from ("coordinator"; a test hook
	// says so here).
	Source string
	// SameHost is a shard that read the coordinator's clocks (Source
	// SourceSameHost): its alignment error is within Delay, under a
	// microsecond, and its drift 0 by construction.
	SameHost bool
	// NTP is the shard's kernel clock discipline (adjtimex) as read once
	// in the run.
	NTP NTP
	// PairsKnown is false for a part without per-pair figures (an older
	// mqplan): its deliveries cannot be split into local and cross-shard.
	PairsKnown bool
}

// SourceSameHost is ShardClock.Source for a shard on the coordinator's
// host, which aligns its epoch on the one CLOCK_MONOTONIC they share.
const SourceSameHost = "same host"

// NTP is a host's clock discipline as the kernel reports it (adjtimex).
type NTP struct {
	// Known is false where it could not be read (not Linux, an older
	// part).
	Known bool
	// Synced is the kernel's own view (STA_UNSYNC clear); MaxError and
	// EstError its maximum and estimated error.
	Synced             bool
	MaxError, EstError time.Duration
}

// ShardPair is the deliveries from the publishers of one shard to the
// subscribers of another (or the same).
type ShardPair struct {
	From, To   int
	Deliveries int64
	// Min is the least latency measured on the pair, signed: from a shard
	// whose epoch is late it may be below zero. (Min(A→B) − Min(B→A))/2 is
	// the traffic's own estimate of the alignment error between A and B.
	Min time.Duration
}

// shard is shard i's row, nil when its part is missing.
func (c *Clock) shard(i int) *ShardClock {
	for k := range c.Shards {
		if c.Shards[k].Index == i {
			return &c.Shards[k]
		}
	}
	return nil
}

// MaxOffset is the largest |θ| of the shards.
func (c *Clock) MaxOffset() time.Duration {
	var m time.Duration
	for _, s := range c.Shards {
		m = max(m, s.Offset.Abs())
	}
	return m
}

// bound is the most the alignment of shards a and b can be off by:
// their start uncertainties and drifts; ok is false when a drift is not
// known or a part is missing.
func (c *Clock) bound(a, b int) (time.Duration, bool) {
	sa, sb := c.shard(a), c.shard(b)
	if sa == nil || sb == nil || !sa.DriftKnown || !sb.DriftKnown {
		return 0, false
	}
	if a == b {
		return 0, true
	}
	return sa.Delay + sb.Delay + sa.Drift.Abs() + sb.Drift.Abs(), true
}

// Uncertainty is how far a cross-shard latency may be off: the largest
// δ_pub + δ_sub + |drift_pub| + |drift_sub| over the pairs of shards that
// exchanged deliveries; 0 when none did. ok is false when a part lacks
// the figures (an older mqplan): unknown, never a made-up bound.
func (c *Clock) Uncertainty() (time.Duration, bool) {
	var u time.Duration
	for _, s := range c.Shards {
		if !s.PairsKnown {
			return 0, false
		}
	}
	for _, p := range c.Pairs {
		if p.From == p.To || p.Deliveries == 0 {
			continue
		}
		b, ok := c.bound(p.From, p.To)
		if !ok {
			return 0, false
		}
		u = max(u, b)
	}
	return u, true
}

// PairCheck is the traffic's cross-check of the alignment of two shards
// that exchanged deliveries both ways.
type PairCheck struct {
	A, B int
	// Residual is (Min(A→B) − Min(B→A))/2: how much later A's epoch is
	// than B's, as the traffic shows it, assuming the least delay is the
	// same both ways. The coordinator's offsets aligned them, so it
	// should be within Bound.
	Residual time.Duration
	// Bound is the pair's alignment uncertainty (δ and drift of both).
	Bound time.Duration
	// Known is false when a part lacks the drift.
	Known bool
}

// Agrees reports whether the traffic agrees with the offsets.
func (p PairCheck) Agrees() bool { return !p.Known || p.Residual.Abs() <= p.Bound }

// PairChecks lists, for every pair of shards with deliveries both ways
// (A < B), the traffic's cross-check. Pairs of same-host shards have
// none: one clock aligns them within a microsecond, finer than the
// traffic's estimate (least latencies each way) can resolve, so their
// residual would be the network's asymmetry, not the clocks'.
func (c *Clock) PairChecks() []PairCheck {
	var out []PairCheck
	for _, ab := range c.Pairs {
		if ab.From >= ab.To || ab.Deliveries == 0 {
			continue
		}
		for _, ba := range c.Pairs {
			if ba.From != ab.To || ba.To != ab.From || ba.Deliveries == 0 {
				continue
			}
			if sa, sb := c.shard(ab.From), c.shard(ab.To); sa != nil && sb != nil && sa.SameHost && sb.SameHost {
				continue
			}
			b, ok := c.bound(ab.From, ab.To)
			out = append(out, PairCheck{A: ab.From, B: ab.To, Residual: (ab.Min - ba.Min) / 2, Bound: b, Known: ok})
		}
	}
	return out
}

// Received and Cross are the deliveries shard i's subscribers received,
// and those of them from another shard's publishers.
func (c *Clock) Received(i int) (all, cross int64) {
	for _, p := range c.Pairs {
		if p.To == i {
			all += p.Deliveries
			if p.From != i {
				cross += p.Deliveries
			}
		}
	}
	return all, cross
}
