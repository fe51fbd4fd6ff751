package partial

import (
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqplan/mqplan/stats"
)

// Collector keeps each second's latency histograms of a run, encoded, for
// its partial: the timeline itself holds only percentiles (a run keeps
// flat memory), and percentiles of parts cannot be merged. Its Latency
// and Second methods are runner.Options' hooks of the same names; they
// run on the snapshot goroutine once a second per receiving group, never
// per message. Its memory grows by one compressed histogram (a few KiB)
// per receiving group and second, which is why a run keeps one only when
// asked for a partial.
type Collector struct {
	mu      sync.Mutex
	pending map[int]string
	seconds []map[int]string
	err     error
}

// NewCollector returns an empty collector.
func NewCollector() *Collector { return &Collector{} }

// Latency takes one group's latency histogram of the second being taken
// (runner.Options.Latency); h is only read.
func (c *Collector) Latency(group int, h *hdrhistogram.Histogram) {
	s, err := encodeHist(h)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && c.err == nil {
		c.err = err
	}
	if s == "" {
		return
	}
	if c.pending == nil {
		c.pending = map[int]string{}
	}
	c.pending[group] = s
}

// Second closes the second whose histograms Latency was given
// (runner.Options.Second).
func (c *Collector) Second(stats.Second) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seconds = append(c.seconds, c.pending)
	c.pending = nil
}

// latency is second i's encoded histogram of group g, "" when none.
func (c *Collector) latency(i, g int) string {
	if c == nil || i >= len(c.seconds) {
		return ""
	}
	return c.seconds[i][g]
}
