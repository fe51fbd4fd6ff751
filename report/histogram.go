package report

import (
	"math"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// Histogram is one latency histogram as counts per bucket, the HTML
// report's bar chart: where the percentile curve shows the tail, the bars
// show the body's shape (two modes, a cliff). It is computed from the
// run's HDR histograms and saved in the JSON result ("histograms"), so
// that a saved result renders the same page; a result written before
// the key has none, and the page says so.
type Histogram struct {
	// Name is e2e or ack, as in LatencyRow.
	Name string
	// Samples is the histogram's count, the sum of the buckets' counts.
	Samples int64
	// Buckets are the upper bounds and counts from the first bucket with
	// a count to the last, by increasing bound, on a 1-1.5-2-3-5-7 scale per decade, so that the
	// labels are round.
	Buckets []HistogramBucket
}

// HistogramBucket counts the samples in (the previous bucket's Upper, Upper].
type HistogramBucket struct {
	Upper time.Duration
	Count int64
}

// histSteps are a decade's bucket bounds: six per decade, round numbers a
// reader takes in at a glance, at most 50 % apart (finer than that and a
// short run's buckets hold a handful of samples each).
var histSteps = []float64{1, 1.5, 2, 3, 5, 7}

// maxHistBuckets bounds a histogram's buckets: 1 µs to 100 s is 48.
const maxHistBuckets = 64

// histograms are the steady phase's e2e and ack histograms, all groups
// together, as bucket counts.
func histograms(st *stats.Stats) []Histogram {
	ph := st.Phase(phase.Steady)
	if ph == nil {
		return nil
	}
	var out []Histogram
	for _, h := range []struct {
		name string
		h    *hdrhistogram.Histogram
	}{{"e2e", ph.Total.Latency}, {"ack", ph.Total.Ack}} {
		if hg, ok := histogram(h.name, h.h); ok {
			out = append(out, hg)
		}
	}
	return out
}

// histogram buckets h (values in microseconds) on histSteps, or false
// when it has no samples.
func histogram(name string, h *hdrhistogram.Histogram) (Histogram, bool) {
	if h == nil || h.TotalCount() == 0 {
		return Histogram{}, false
	}
	out := Histogram{Name: name, Samples: h.TotalCount()}
	bounds := histBounds(h.Min(), h.Max())
	counts := make([]int64, len(bounds))
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		// A HDR bucket's values are equivalent within its resolution (0.1 %):
		// its lowest decides which of ours it lands in.
		v := b.From
		i := 0
		for i < len(bounds)-1 && float64(v) > bounds[i] {
			i++
		}
		counts[i] += b.Count
	}
	// From the first bucket with a count to the last: the empty ones
	// between are a gap the bars must show.
	first, last := -1, -1
	for i, c := range counts {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	for i := first; i >= 0 && i <= last; i++ {
		out.Buckets = append(out.Buckets, HistogramBucket{Upper: time.Duration(math.Round(bounds[i] * float64(time.Microsecond))), Count: counts[i]})
	}
	return out, true
}

// histBounds are the bucket bounds in microseconds from the step at or
// above lo (the first bucket holds lo) to the first at or above hi, at most maxHistBuckets of them
// (the last then takes everything above).
func histBounds(lo, hi int64) []float64 {
	if lo < 1 {
		lo = 1
	}
	decade := math.Pow(10, math.Floor(math.Log10(float64(lo))))
	var out []float64
	for len(out) < maxHistBuckets {
		for _, s := range histSteps {
			b := s * decade
			if b < float64(lo) {
				continue
			}
			out = append(out, b)
			if b >= float64(hi) || len(out) == maxHistBuckets {
				return out
			}
		}
		decade *= 10
	}
	return out
}

// jsonHistogram is a Histogram in the JSON result ("histograms"): each
// bucket's upper bound (le, inclusive, as Prometheus names it) and count.
type jsonHistogram struct {
	Name    string                `json:"name"`
	Samples int64                 `json:"samples"`
	Buckets []jsonHistogramBucket `json:"buckets"`
}

type jsonHistogramBucket struct {
	Le    jsonDuration `json:"le"`
	Count int64        `json:"count"`
}

// histogramsJSON is r's histograms for the JSON result, [] for none.
func histogramsJSON(hs []Histogram) []jsonHistogram {
	out := []jsonHistogram{}
	for _, h := range hs {
		jh := jsonHistogram{Name: h.Name, Samples: h.Samples, Buckets: []jsonHistogramBucket{}}
		for _, b := range h.Buckets {
			jh.Buckets = append(jh.Buckets, jsonHistogramBucket{Le: jsonDuration(b.Upper), Count: b.Count})
		}
		out = append(out, jh)
	}
	return out
}

// histogramsOf reads the JSON result's histograms back.
func histogramsOf(jhs []jsonHistogram) []Histogram {
	var out []Histogram
	for _, jh := range jhs {
		h := Histogram{Name: jh.Name, Samples: jh.Samples}
		for _, b := range jh.Buckets {
			h.Buckets = append(h.Buckets, HistogramBucket{Upper: time.Duration(b.Le), Count: b.Count})
		}
		out = append(out, h)
	}
	return out
}

// histograms refuses histograms no run gives: a negative count or
// bound, bounds that do not grow, counts that do not add up to samples.
func (c *resultCheck) histograms(hs []Histogram) {
	for i, h := range hs {
		p := "histograms[" + strconv.Itoa(i) + "]"
		c.text(p+".name", h.Name, "")
		c.count(p+".samples", h.Samples)
		var sum int64
		for j, b := range h.Buckets {
			pb := p + ".buckets[" + strconv.Itoa(j) + "]"
			c.duration(pb+".le", b.Upper)
			c.count(pb+".count", b.Count)
			if j > 0 && b.Upper <= h.Buckets[j-1].Upper {
				c.fail(pb+".le", "%s comes after %s; the bounds only grow", b.Upper, h.Buckets[j-1].Upper)
			}
			sum += b.Count
		}
		if sum != h.Samples {
			c.fail(p+".buckets", "the counts add up to %d, not the %d samples", sum, h.Samples)
		}
	}
}
