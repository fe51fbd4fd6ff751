package stats

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Quantiles reads a timeline second's P50, P99 and Max from its latency
// histogram (µs): one reading for the runner's seconds and for a merge's,
// which recomputes them from the shards' merged histograms.
func Quantiles(h *hdrhistogram.Histogram) (p50, p99, mx time.Duration) {
	return time.Duration(h.ValueAtQuantile(50)) * time.Microsecond,
		time.Duration(h.ValueAtQuantile(99)) * time.Microsecond,
		time.Duration(h.Max()) * time.Microsecond
}
