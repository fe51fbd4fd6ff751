package report

import (
	"fmt"

	"github.com/mqplan/mqplan/plans"
)

// startDelayNote is explain's word on a group's publish.start_delay: the
// range the plan gives and the delays its clients drew from it (each a pure
// function of the seed and the client, so the run's are these).
func startDelayNote(prog *plans.Program, group int, d *plans.StartDelay) string {
	lo, hi, n := d.Max, d.Min, 0
	for i := range prog.Clients {
		c := &prog.Clients[i]
		if c.Group != group || c.Publish == nil {
			continue
		}
		lo, hi, n = min(lo, c.Publish.Schedule.Delay), max(hi, c.Publish.Schedule.Delay), n+1
	}
	if d.Max <= d.Min {
		return fmt.Sprintf(" (start delay %s)", fmtDuration(d.Min))
	}
	if n == 0 {
		return fmt.Sprintf(" (start delays from [%s, %s), seed %d)", fmtDuration(d.Min), fmtDuration(d.Max), prog.Plan.Seed)
	}
	return fmt.Sprintf(" (start delays %s to %s, drawn from [%s, %s), seed %d)", fmtDuration(lo), fmtDuration(hi), fmtDuration(d.Min), fmtDuration(d.Max), prog.Plan.Seed)
}
