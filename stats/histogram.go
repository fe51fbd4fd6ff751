package stats

import "github.com/HdrHistogram/hdrhistogram-go"

// Histogram bounds: 1 µs to 60 s at 3 significant digits (docs/plan-format.md).
// Values are recorded in microseconds; larger values are counted in
// Metrics.OverRange instead of being lost silently.
const (
	// HistogramMin is the smallest value recorded, in microseconds:
	// smaller ones are recorded as it.
	HistogramMin = 1
	// HistogramMax is the largest value recorded, in microseconds (60 s):
	// larger ones are counted in Metrics.OverRange and recorded as it.
	HistogramMax = 60_000_000
	// histDigits is the precision, in significant decimal digits.
	histDigits = 3
)

// NewHistogram returns an empty latency histogram in microseconds with the
// bounds every mqplan histogram shares, so that they can be merged.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistogramMin, HistogramMax, histDigits)
}

// mergeHist merges src into dst, allocating dst on first use.
func mergeHist(dst, src *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if src == nil {
		return dst
	}
	if dst == nil {
		dst = NewHistogram()
	}
	dst.Merge(src)
	return dst
}
