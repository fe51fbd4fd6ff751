// Package exposition reads a broker's counters from its Prometheus text
// exposition (EMQX's /api/v5/prometheus/stats and the like) onto
// brokerstat's normalised set. It is apart from brokerstat so that the
// packages that only hold or show counters (stats, report) do not pull in
// the Prometheus parser and its protobuf types; only the runner, which
// scrapes, imports it. Like brokerstat it is pure: the caller fetches the
// body, and bounds it with the limit it passes.
package exposition

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/mqplan/mqplan/brokerstat"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ErrTooLarge is Parse's error for a body past its limit.
var ErrTooLarge = errors.New("the exposition is larger than the limit")

// ErrNoCounters is Parse's error for an exposition that parses
// but holds none of the counters brokerstat knows.
var ErrNoCounters = errors.New("the exposition has none of the broker counters mqplan knows (emqx_messages_received, emqx_messages_sent, emqx_messages_dropped, emqx_connections_count, ...)")

// ErrUnusable is Parse's error for an exposition whose broker counters
// are all there but none has a usable value; the error names them.
var ErrUnusable = errors.New("the exposition's broker counters are unusable")

// maxNamed bounds the metric names an error lists.
const maxNamed = 6

// promNames maps the exposition's metric names onto the set; counters are
// also accepted with OpenMetrics' _total suffix.
var promNames = map[string]brokerstat.Counter{
	"emqx_connections_count":   brokerstat.Clients,
	"emqx_messages_received":   brokerstat.PublishReceived,
	"emqx_messages_sent":       brokerstat.PublishSent,
	"emqx_messages_dropped":    brokerstat.Dropped,
	"emqx_subscriptions_count": brokerstat.Subscriptions,
}

// Parse reads a Prometheus text exposition of at most limit
// bytes (more is ErrTooLarge, read no further) and returns the counters
// it holds, each summed over its series (EMQX labels them by node).
func Parse(r io.Reader, limit int64) (brokerstat.Counters, error) {
	var cs brokerstat.Counters
	lr := &io.LimitedReader{R: r, N: limit + 1}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(lr)
	if lr.N <= 0 {
		return cs, ErrTooLarge
	}
	if err != nil {
		return cs, fmt.Errorf("not a Prometheus text exposition: %w", err)
	}
	// unusable are the known families whose values are not finite
	// non-negative numbers, to say which when none is usable.
	var unusable []string
	for name, f := range fams {
		c, ok := promNames[name]
		if !ok {
			c, ok = promNames[strings.TrimSuffix(name, "_total")]
		}
		if !ok {
			continue
		}
		if v, ok := familySum(f); ok {
			cs.Put(c, v)
		} else {
			unusable = append(unusable, name)
		}
	}
	memName := "erlang_vm_memory_bytes_total"
	mem := fams[memName]
	if mem == nil {
		memName = "process_resident_memory_bytes"
		mem = fams[memName]
	}
	if mem != nil {
		if v, ok := familySum(mem); ok {
			cs.Put(brokerstat.MemoryBytes, v)
		} else {
			unusable = append(unusable, memName)
		}
	}
	if !cs.Sampled() {
		if len(unusable) > 0 {
			slices.Sort(unusable)
			if len(unusable) > maxNamed {
				unusable = append(unusable[:maxNamed], "...")
			}
			return cs, fmt.Errorf("%w: the values of %s are not finite non-negative numbers (NaN, Inf or negative)", ErrUnusable, strings.Join(unusable, ", "))
		}
		return cs, ErrNoCounters
	}
	return cs, nil
}

// familySum adds a family's series (counter, gauge or untyped) into a
// whole number; a value that is not a finite non-negative number makes
// the family unusable.
func familySum(f *dto.MetricFamily) (int64, bool) {
	var sum float64
	n := 0
	for _, m := range f.GetMetric() {
		var v float64
		switch {
		case m.GetCounter() != nil:
			v = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			v = m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, false
		}
		sum += v
		n++
	}
	if n == 0 || sum >= math.MaxInt64 {
		return 0, false
	}
	return int64(math.Round(sum)), true
}
