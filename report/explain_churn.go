package report

import (
	"fmt"
	"math"
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
		switch {
		case s.Staged:
			fmt.Fprintf(b, "  %s: connected clients over the stages %s (the highest-numbered leaves first, the lowest-numbered returns first; DISCONNECT, then a new session, same id); %d leaves, %d returns; %s leaves/s over publishing",
				gp.Name, stageCounts(prog, gi), total, s.Returns(), rate)
		case s.Drawn():
			fmt.Fprintf(b, "  %s: each session lasts %s to %s (uniform, drawn from seed %d and the client), then the client leaves for %s (DISCONNECT, then a new session, same id); %s sessions per client; %d reconnections, %s/s over publishing",
				gp.Name, fmtDuration(s.LifetimeMin), fmtDuration(s.LifetimeMax), prog.Plan.Seed, fmtDuration(s.Away), sessions, total, rate)
		default:
			fmt.Fprintf(b, "  %s: each client leaves every %s for %s (DISCONNECT, then a new session, same id); %s sessions per client; %d reconnections, %s/s over publishing",
				gp.Name, fmtDuration(s.Period), fmtDuration(s.Away), sessions, total, rate)
		}
		if gp.Publishes && (s.Away > 0 || s.Staged) {
			skipped := 0
			for i := gp.First; i < gp.First+gp.Count; i++ {
				c := &prog.Clients[i]
				skipped += c.Publish.Schedule.Messages(0, end) - prog.Sends(c, 0, end)
			}
			fmt.Fprintf(b, "; %d messages not published while away", skipped)
		}
		clean := gp.Subscribes && prog.Plan.Groups[gi].CleanStart
		switch {
		case clean:
			b.WriteString("; its clean sessions subscribe again on each return: what is published while a client is away is not expected\n")
			b.WriteString("    ambiguous (churn.ambiguous, neither expected nor lost): at each return, what was acknowledged after the CONNECT but written before the SUBACK; at each leave, what was acknowledged after the client's fence ($mqplan/fence/<client id>) but written before it stopped reading")
		case gp.Subscribes:
			b.WriteString("; its kept sessions queue what it misses (all expected)")
		}
		b.WriteString("\n")
		if s.Drawn() {
			writeDrawnTimetable(b, prog, gi, s.Staged)
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
func writeDrawnTimetable(b *strings.Builder, prog *plans.Program, gi int, staged bool) {
	gp := &prog.Groups[gi]
	s := gp.Churn
	for j := 0; j < min(s.Clients, explainTimetableClients); j++ {
		n := s.Disconnects(j)
		fmt.Fprintf(b, "    client %d leaves at", prog.Clients[gp.First+j].N)
		if n == 0 && staged {
			b.WriteString(" no time (connected throughout)")
		} else if n == 0 {
			b.WriteString(" no time (its first session outlasts publishing)")
		}
		for k := 0; k < min(n, explainTimetableLeaves); k++ {
			if k > 0 {
				b.WriteString(",")
			}
			b.WriteString(" " + fmtDuration(s.DisconnectAt(j, k)))
			if staged {
				if back := s.BackAt(j, k); back == math.MaxInt64 {
					b.WriteString(" (to the end)")
				} else {
					b.WriteString(" (back at " + fmtDuration(back) + ")")
				}
			}
		}
		if n > explainTimetableLeaves {
			fmt.Fprintf(b, ", … (%d in all)", n)
		}
		b.WriteString("\n")
	}
	if s.Clients > explainTimetableClients {
		fmt.Fprintf(b, "    … and %d more clients, each with its own timetable\n", s.Clients-explainTimetableClients)
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

// stageCounts is group gi's connected count before the stages and at the
// end of each stage, a stage that does not name the group keeping it:
// "6 → 2 (down) → 6 (up) → 6 (3)".
func stageCounts(prog *plans.Program, gi int) string {
	gp := &prog.Groups[gi]
	n := gp.Count
	parts := []string{fmt.Sprint(n)}
	for _, st := range prog.Plan.Stages {
		if c, ok := st.Clients[gp.Name]; ok {
			n = c
		}
		parts = append(parts, fmt.Sprintf("%d (%s)", n, st.Name))
	}
	return strings.Join(parts, " → ")
}
