package report

import (
	"fmt"
	"math"
)

// maxChartPoints bounds the points of each series over the timeline in
// the HTML page: one a second up to an hour, so that an hour's run
// charts every second, while a day's (86,400 seconds) would make a page
// of megabytes that the browser draws no better than a screen's width
// of points. Beyond it consecutive seconds are aggregated into buckets
// (thinning); the JSON and CSV results keep every second.
const maxChartPoints = 3600

// bucketSize is how many consecutive seconds of an n-second timeline
// each chart point aggregates: 1 up to maxChartPoints.
func bucketSize(n int) int {
	if n <= maxChartPoints {
		return 1
	}
	return (n + maxChartPoints - 1) / maxChartPoints
}

// aggregate is how a bucket of seconds becomes one chart point, chosen
// by what a reader looks for in the series: a rate's level (its mean),
// a latency's or a memory's peak (the maximum), a dip in connections
// (the minimum), every error (the sum), the bucket's place on the time
// axis (its first second).
type aggregate int

const (
	aggMean aggregate = iota
	aggMax
	aggMin
	aggSum
	aggFirst
)

// thinPtr aggregates vals by buckets of size: a null (no value that
// second) is left out of its bucket, and a bucket of nulls only is null.
// With size 1 vals is returned as it is.
func thinPtr(vals []*float64, size int, a aggregate) []*float64 {
	if size <= 1 {
		return vals
	}
	out := make([]*float64, 0, (len(vals)+size-1)/size)
	for start := 0; start < len(vals); start += size {
		var acc float64
		n := 0
		for _, v := range vals[start:min(start+size, len(vals))] {
			if v == nil {
				continue
			}
			switch {
			case n == 0:
				acc = *v
			case a == aggMax:
				acc = math.Max(acc, *v)
			case a == aggMin:
				acc = math.Min(acc, *v)
			case a == aggMean, a == aggSum:
				acc += *v
			}
			n++
		}
		if n == 0 {
			out = append(out, nil)
			continue
		}
		if a == aggMean {
			acc /= float64(n)
		}
		// Three decimals, as the page's other figures: a mean carries
		// the division's float noise.
		acc = math.Round(acc*1e3) / 1e3
		out = append(out, &acc)
	}
	return out
}

// thinNum is thinPtr for a series with a value every second.
func thinNum[T int | int64 | float64](vals []T, size int, a aggregate) []float64 {
	ptrs := make([]*float64, len(vals))
	for i, v := range vals {
		f := float64(v)
		ptrs[i] = &f
	}
	thinned := thinPtr(ptrs, size, a)
	out := make([]float64, len(thinned))
	for i, p := range thinned {
		out[i] = *p
	}
	return out
}

// bucketNote is the note under a thinned chart: what each point is.
func bucketNote(size int, what string) string {
	return fmt.Sprintf("Each point is %d s: %s. The JSON and CSV results have every second.", size, what)
}
