package metric

import "slices"

// The metrics of a sharded run's clocks (package stats, clock.go). A
// shard aligns its epoch on the coordinator's clock; an error in that
// alignment moves the latency of a delivery between two shards and cancels
// on one within a shard. So latency_local is exact whatever the clocks,
// latency_cross is within clock.uncertainty, and latency (their union) is
// what a single process measures. In a single process every delivery is
// local: latency_local equals latency, latency_cross has no samples (a
// threshold on it fails) and clock.* are 0.
const (
	// LatencyLocalMin and the rest of latency_local are latency's
	// statistics over the deliveries whose publisher ran on the
	// receiver's shard.
	LatencyLocalMin    Name = "latency_local.min"
	LatencyLocalMean   Name = "latency_local.mean"
	LatencyLocalP50    Name = "latency_local.p50"
	LatencyLocalP90    Name = "latency_local.p90"
	LatencyLocalP95    Name = "latency_local.p95"
	LatencyLocalP99    Name = "latency_local.p99"
	LatencyLocalP999   Name = "latency_local.p999"
	LatencyLocalMax    Name = "latency_local.max"
	LatencyLocalStddev Name = "latency_local.stddev"

	// LatencyCrossMin and the rest of latency_cross are latency's
	// statistics over the deliveries whose publisher ran on another
	// shard: within ±clock.uncertainty.
	LatencyCrossMin    Name = "latency_cross.min"
	LatencyCrossMean   Name = "latency_cross.mean"
	LatencyCrossP50    Name = "latency_cross.p50"
	LatencyCrossP90    Name = "latency_cross.p90"
	LatencyCrossP95    Name = "latency_cross.p95"
	LatencyCrossP99    Name = "latency_cross.p99"
	LatencyCrossP999   Name = "latency_cross.p999"
	LatencyCrossMax    Name = "latency_cross.max"
	LatencyCrossStddev Name = "latency_cross.stddev"

	// LatencyCrossShare is the share of the deliveries (latency's
	// samples) that crossed shards.
	LatencyCrossShare Name = "latency.cross_share"

	// ClockUncertainty is how far a cross-shard latency may be off.
	ClockUncertainty Name = "clock.uncertainty"
	// ClockMaxOffset is the largest offset of a shard's clock to the
	// coordinator's.
	ClockMaxOffset Name = "clock.max_offset"
)

// The help of the latency_local and latency_cross families.
const (
	localHelp = "end-to-end latency of the deliveries within one shard (exact whatever the clocks), "
	crossHelp = "end-to-end latency of the deliveries between shards (within ±clock.uncertainty), "
)

// clockMetrics are the catalogue's entries of this file, in the order of
// plan-format.md, placed after latency's.
var clockMetrics = slices.Concat([]Metric{
	{Name: LatencyCrossShare, Kind: Fraction, Help: "share of the deliveries whose publisher ran on another shard than the subscriber (0 in one process)"},
}, durationFamily(localHelp, LatencyLocalMin, LatencyLocalMean, LatencyLocalP50, LatencyLocalP90, LatencyLocalP95, LatencyLocalP99, LatencyLocalP999, LatencyLocalMax, LatencyLocalStddev),
	durationFamily(crossHelp, LatencyCrossMin, LatencyCrossMean, LatencyCrossP50, LatencyCrossP90, LatencyCrossP95, LatencyCrossP99, LatencyCrossP999, LatencyCrossMax, LatencyCrossStddev),
	[]Metric{
		{Name: ClockUncertainty, Kind: Duration, WholeRun: true, Help: "how far a cross-shard latency may be off: the largest δ_pub + δ_sub + |drift_pub| + |drift_sub| over the shard pairs that exchanged deliveries (0 in one process; absent when a part does not say)"},
		{Name: ClockMaxOffset, Kind: Duration, WholeRun: true, Help: "the largest offset |θ| of a shard's clock to the coordinator's, as measured when it joined (0 in one process)"},
	})

// statHelp names a latency statistic for its help line.
var statHelp = map[string]string{"min": "minimum", "mean": "mean", "p50": "median", "p90": "90th percentile", "p95": "95th percentile",
	"p99": "99th percentile", "p999": "99.9th percentile", "max": "maximum", "stddev": "standard deviation"}

// durationFamily is the entries of a latency family's statistics, each
// helped by help and the statistic's name.
func durationFamily(help string, names ...Name) []Metric {
	out := make([]Metric, len(names))
	for i, n := range names {
		_, stat, _ := n.Split()
		out[i] = Metric{Name: n, Kind: Duration, Help: help + statHelp[stat]}
	}
	return out
}
