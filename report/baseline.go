package report

import (
	"bytes"

	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// Baseline is a saved run that this one is judged against (mqplan run
// --baseline FILE): its figures are what thresholds read as baseline.*
// (`p99 <= baseline.p99 * 1.10`), and the table ends with the comparison
// of the two runs, so that a failed "no worse than last release" gate
// shows by how much.
type Baseline struct {
	// File is where the baseline was read from, for the report.
	File string
	// Result is the saved run (ReadJSON).
	Result *Result
}

// EvaluateWithBaseline is Evaluate with a baseline run: thresholds that
// read baseline.* are judged against base's figures, in the same scopes
// (its groups and phases by name). A metric the baseline lacks fails the
// threshold that reads it; with base nil every such threshold fails,
// saying there is no baseline.
func EvaluateWithBaseline(p *plans.Plan, ths []*plans.Threshold, st *stats.Stats, base *Baseline) *Result {
	return evaluate(p, ths, st, base)
}

// writeBaseline writes the comparison with the baseline (Result.Comparison),
// when there is one: the same tables mqplan compare prints, baseline as A
// and this run as B, with mqplan compare's default tolerance.
func writeBaseline(b *bytes.Buffer, r *Result) error {
	c := r.Comparison
	if c == nil {
		return nil
	}
	section(b, "Compared with the baseline "+c.A.Label)
	return WriteComparison(b, c)
}
