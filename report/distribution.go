package report

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// Distribution is one latency histogram as a percentile curve, the
// HdrHistogram "percentile distribution": the HTML report plots it on a
// log scale toward p99.99 so that the tail, which averages and a few fixed
// percentiles hide, can be seen. It is kept in the Result (and the JSON)
// rather than the histogram itself so that a saved result re-renders the
// same curve without the histograms.
type Distribution struct {
	// Name is e2e or ack, as in LatencyRow.
	Name string
	// Group is the plan group the histogram belongs to; "" for all groups
	// together.
	Group string
	// Samples is the histogram's count: a percentile finer than one in
	// Samples says nothing, so the curve stops there.
	Samples int64
	// Points are the curve, by increasing percentile; the last is the
	// maximum, at percentile 100.
	Points []PercentilePoint
}

// PercentilePoint is one point of a Distribution: Percentile per cent of
// the samples were at most Value.
type PercentilePoint struct {
	Percentile float64
	Value      time.Duration
}

// Bounds of the percentile curves. With distTicks points per halving of
// the distance to 100 % and at most distHalvings halvings, a curve has at
// most distTicks*distHalvings+2 points (102) whatever the run's length;
// the finest percentile is 100 - 100/2^20, about p99.9999.
const (
	distTicks    = 5
	distHalvings = 20
)

// distributions summarises the steady phase's e2e and ack histograms,
// all groups together first, then each group that has samples, in plan
// order.
func distributions(st *stats.Stats) []Distribution {
	ph := st.Phase(phase.Steady)
	if ph == nil {
		return nil
	}
	var out []Distribution
	add := func(name, group string, h *hdrhistogram.Histogram) {
		if d, ok := distribution(name, group, h); ok {
			out = append(out, d)
		}
	}
	for _, name := range []string{"e2e", "ack"} {
		pick := func(m *stats.Metrics) *hdrhistogram.Histogram {
			if name == "e2e" {
				return m.Latency
			}
			return m.Ack
		}
		add(name, "", pick(&ph.Total))
		for gi := range ph.Groups {
			if gi < len(st.Groups) {
				add(name, st.Groups[gi].Name, pick(&ph.Groups[gi]))
			}
		}
	}
	return out
}

// distribution computes the percentile curve of h, or false when it has
// no samples.
func distribution(name, group string, h *hdrhistogram.Histogram) (Distribution, bool) {
	if h == nil || h.TotalCount() == 0 {
		return Distribution{}, false
	}
	n := h.TotalCount()
	d := Distribution{Name: name, Group: group, Samples: n}
	for k := 0; k <= distTicks*distHalvings; k++ {
		rest := math.Pow(0.5, float64(k)/distTicks) // the share above the percentile
		if rest*float64(n) < 1 {
			break
		}
		p := math.Round((1-rest)*100*1e6) / 1e6
		d.Points = append(d.Points, PercentilePoint{Percentile: p, Value: micros(h.ValueAtQuantile(p))})
	}
	d.Points = append(d.Points, PercentilePoint{Percentile: 100, Value: micros(h.Max())})
	return d, true
}
