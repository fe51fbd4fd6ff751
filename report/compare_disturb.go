package report

import "github.com/mqplan/mqplan/plans"

// A latency that grew in a run whose generator was short of CPU is not a
// regression of the broker's: mqplan's own lateness is in it (see
// disturbance.go). Such a change is marked Disturbed rather than Worse,
// so that mqplan compare --fail-on-regression and the baseline's summary
// do not count it, while the figures are still shown. Counts (loss,
// duplicates, errors) and rates are compared as usual: starvation
// cannot create or hide a message. Only B's disturbance matters: a
// latency that grew from a disturbed A is worse than a figure that was
// already too high.

// markDisturbed marks c's latency rows that are Worse as Disturbed when
// B, the run compared with A, was disturbed (and its plan does not ask
// for disturbance: fail).
func markDisturbed(c *Comparison, b *Result) {
	d := b.Disturbance
	if !d.Significant() || (b.Plan != nil && b.Plan.Disturbance == plans.DisturbanceFail) {
		return
	}
	c.Disturbed = d.Evidence()
	if c.applyDisturbed() > 0 {
		c.Notes = append(c.Notes, "B's latency changes marked disturbed are not regressions: "+c.Disturbed)
	}
}

// applyDisturbed marks the Worse latency rows Disturbed when c.Disturbed
// is set (on a comparison read back too), and counts them.
func (c *Comparison) applyDisturbed() int {
	if c.Disturbed == "" {
		return 0
	}
	n := 0
	for s := range c.Sections {
		rows := c.Sections[s].Rows
		for i := range rows {
			fam, _, _ := rows[i].Metric.Split()
			if rows[i].Mark == Worse && latencyFamily(fam) {
				rows[i].Mark = Disturbed
				n++
			}
		}
	}
	return n
}
