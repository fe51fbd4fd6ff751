package report

import (
	"fmt"
	"strings"

	"github.com/mqplan/mqplan/plans"
)

// writeChurn prints, for each group with lifetime or churn, its timetable
// (plans.Sessions): how often a client leaves and for how long, the
// sessions per client, the reconnections per second over publishing, and
// the messages its publishers skip while away. Nothing when no group
// churns.
func writeChurn(b *strings.Builder, prog *plans.Program) {
	end := prog.Warmup + prog.Ramp + prog.Steady
	for gi, gp := range prog.Groups {
		s := gp.Churn
		if s == nil {
			continue
		}
		if gi == firstChurning(prog) {
			b.WriteString("\nclients over time\n")
		}
		minS, maxS := -1, 0
		for j := 0; j < s.Clients; j++ {
			n := s.Disconnects(j) + 1
			if minS < 0 || n < minS {
				minS = n
			}
			maxS = max(maxS, n)
		}
		sessions := fmt.Sprint(minS)
		if maxS != minS {
			sessions = fmt.Sprintf("%d–%d", minS, maxS)
		}
		total := s.Total()
		rate := "-"
		if end > 0 {
			rate = fmtFloat(float64(total) / end.Seconds())
		}
		if s.Drawn() {
			fmt.Fprintf(b, "  %s: each session lasts %s to %s (uniform, drawn from seed %d and the client), then the client leaves for %s (DISCONNECT, then a new session, same id); %s sessions per client; %d reconnections, %s/s over publishing",
				gp.Name, fmtDuration(s.LifetimeMin), fmtDuration(s.LifetimeMax), prog.Plan.Seed, fmtDuration(s.Away), sessions, total, rate)
		} else {
			fmt.Fprintf(b, "  %s: each client leaves every %s for %s (DISCONNECT, then a new session, same id); %s sessions per client; %d reconnections, %s/s over publishing",
				gp.Name, fmtDuration(s.Period), fmtDuration(s.Away), sessions, total, rate)
		}
		if gp.Publishes && s.Away > 0 {
			skipped := 0
			for i := gp.First; i < gp.First+gp.Count; i++ {
				c := &prog.Clients[i]
				skipped += c.Publish.Schedule.Messages(0, end) - prog.Sends(c, 0, end)
			}
			fmt.Fprintf(b, "; %d messages not published while away", skipped)
		}
		if gp.Subscribes {
			b.WriteString("; its kept sessions queue what it misses (all expected)")
		}
		b.WriteString("\n")
		if s.Drawn() {
			writeDrawnTimetable(b, prog, gi)
		}
	}
}

// Explain prints a drawn timetable's first leaves for the first clients
// of a group: the rest follows from the same seed, and a long list would
// drown the plan.
const (
	explainTimetableClients = 5
	explainTimetableLeaves  = 6
)

// writeDrawnTimetable prints when the first clients of group gi leave
// (offsets from the start of warmup), so that a reader sees the draws.
func writeDrawnTimetable(b *strings.Builder, prog *plans.Program, gi int) {
	gp := &prog.Groups[gi]
	s := gp.Churn
	for j := 0; j < min(s.Clients, explainTimetableClients); j++ {
		n := s.Disconnects(j)
		fmt.Fprintf(b, "    client %d leaves at", prog.Clients[gp.First+j].N)
		if n == 0 {
			b.WriteString(" no time (its first session outlasts publishing)")
		}
		for k := 0; k < min(n, explainTimetableLeaves); k++ {
			if k > 0 {
				b.WriteString(",")
			}
			b.WriteString(" " + fmtDuration(s.DisconnectAt(j, k)))
		}
		if n > explainTimetableLeaves {
			fmt.Fprintf(b, ", … (%d in all)", n)
		}
		b.WriteString("\n")
	}
	if s.Clients > explainTimetableClients {
		fmt.Fprintf(b, "    … and %d more clients, each with its own draws\n", s.Clients-explainTimetableClients)
	}
}

// firstChurning is the index of the first group with a churn timetable.
func firstChurning(prog *plans.Program) int {
	for gi, gp := range prog.Groups {
		if gp.Churn != nil {
			return gi
		}
	}
	return -1
}
