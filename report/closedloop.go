package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
)

// This file is what the report says of the closed loop (publish.rate:
// max): explain cannot count messages that depend on the broker's speed,
// so it says which figures are left to the run, and what the run's
// latency then measures.

// explainClosedGroup is a closed-loop group's row cells in explain's group
// table: what it publishes, its window, and its expected deliveries per
// message (exact before the run: a per-publisher figure).
func explainClosedGroup(pub *plans.Publish, gp plans.GroupProgram) (what, per, total, exp string) {
	what = fmt.Sprintf("%s q%d %dB", pub.Topic, pub.QoS, pub.Size)
	if pub.Count > 0 {
		what += fmt.Sprintf(" (≤ %d each)", pub.Count)
	}
	per = "max, 1 write at a time"
	if gp.Inflight > 0 {
		per = fmt.Sprintf("max, inflight %d", gp.Inflight)
	}
	return what, per, "as fast as possible", fmtFloat(gp.ExpectedPerMessage)
}

// closedPhaseCells marks, in a publishing phase's row of explain, the
// figures a closed loop adds after the run: "max" in the rate columns and
// "?" in the counts (added to what open-loop groups plan, shown first).
// cells are publishes/s, deliveries/s, out bytes/s, in bytes/s, messages,
// deliveries.
func closedPhaseCells(prog *plans.Program, ph plans.PhasePlan, cells *[6]string) {
	if !prog.ClosedLoop() || ph.Length <= 0 || (ph.Phase != phase.Warmup && ph.Phase != phase.Ramp && ph.Phase != phase.Steady) {
		return
	}
	delivers := false
	for i := range prog.Groups {
		if prog.Groups[i].Max && prog.Groups[i].ExpectedPerMessage > 0 {
			delivers = true
		}
	}
	for i := range cells {
		if (i == 1 || i == 3 || i == 5) && !delivers {
			continue
		}
		mark := "max"
		if i >= 4 {
			mark = "?"
		}
		if cells[i] == "-" {
			cells[i] = mark
		} else {
			cells[i] += " + " + mark
		}
	}
}

// explainClosedNote says, under explain's phase table, what the closed
// loop leaves to the run.
func explainClosedNote(b *strings.Builder, prog *plans.Program) {
	if !prog.ClosedLoop() {
		return
	}
	var names []string
	for i := range prog.Groups {
		if prog.Groups[i].Max {
			names = append(names, prog.Groups[i].Name)
		}
	}
	span := prog.Warmup + prog.Ramp + prog.Steady
	fmt.Fprintf(b, "\nclosed loop (rate: max): %s %s %s as fast as %s window allows for %s (warmup, ramp and steady): not a timetable, so "+
		"the messages, deliveries and bytes marked max and ? are known only after the run (send_rate is the achieved rate); "+
		"expected deliveries stay exact, sent × deliveries/msg per publisher; latency is service latency, from each message's actual send time\n",
		plural(len(names), "group"), strings.Join(names, ", "), pluralWord(len(names), "publishes", "publish"), pluralWord(len(names), "its", "their"), fmtDuration(time.Duration(span)))
}

// closedLoopRate describes a closed-loop group's publishing where a report
// describes a schedule's rate.
func closedLoopRate(p *plans.Publish) string {
	if p.Inflight > 0 {
		return fmt.Sprintf("as fast as possible (rate: max, inflight %d per client)", p.Inflight)
	}
	return "as fast as possible (rate: max, each write after the previous one)"
}
