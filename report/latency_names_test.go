package report

import (
	"testing"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/stats"
)

// TestLatencyRowsAreMetricFamilies checks that every row of the latency
// table names a metric family a threshold accepts, so that a threshold
// copied from the table (e2e.p99, connect.max) means what the row shows.
func TestLatencyRowsAreMetricFamilies(t *testing.T) {
	names := []string{"rtt"} // the request/response row, present only with requests
	for _, r := range latencyRows(&stats.Stats{}) {
		names = append(names, r.Name)
	}
	for _, name := range names {
		for _, col := range []string{"p99", "max"} {
			if _, ok := metric.Lookup(name + "." + col); !ok {
				t.Errorf("the latency table's row %q, column %s, is no metric (%s.%s)", name, col, name, col)
			}
		}
	}
}
