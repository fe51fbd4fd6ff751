package report

import (
	"strings"

	"github.com/mqplan/mqplan/metric"
)

// ambiguousNote says, under the delivery table, how many deliveries to
// the groups with a clean session across churn were ambiguous (the
// broker's order decides them, runner/clean_run.go) and how many of
// those arrived: they are in none of the table's columns. "" when no
// group has them.
func ambiguousNote(r *Result) string {
	var parts []string
	for _, g := range r.Groups {
		m := r.Measured.Groups[g.Name]
		if _, ok := m[metric.ChurnAmbiguous]; !ok {
			continue
		}
		parts = append(parts, g.Name+" "+count(m, metric.ChurnAmbiguous)+" ("+count(m, metric.ChurnAmbiguousReceived)+" arrived)")
	}
	if len(parts) == 0 {
		return ""
	}
	return "ambiguous (clean sessions across churn: published as a session was being made or ended, neither expected nor lost; churn.ambiguous): " + strings.Join(parts, ", ")
}
