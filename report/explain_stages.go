package report

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/mqplan/mqplan/plans"
)

// writeStages prints a staged plan's timeline (plans.StagePlan), one row
// per stage: its window from the start of warmup, each publishing group's
// rate from the stage's start to its end, and the stage's exact messages
// and deliveries, which sum to the steady phase's.
func writeStages(b *strings.Builder, prog *plans.Program) error {
	if len(prog.Stages) == 0 {
		return nil
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tstarts\tlength\trate (msg/s, group total)\tmessages\tdeliveries")
	for _, st := range prog.Stages {
		var rates []string
		for _, gr := range st.Groups {
			r := fmtFloat(gr.To)
			if gr.From != gr.To {
				r = fmtFloat(gr.From) + "→" + r
			}
			if len(st.Groups) > 1 {
				r = prog.Groups[gr.Group].Name + " " + r
			}
			rates = append(rates, r)
		}
		name := st.Name
		if name != fmt.Sprint(st.Index) {
			name = fmt.Sprintf("%d %s", st.Index, st.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", name, fmtDuration(st.Start), fmtDuration(st.Duration),
			strings.Join(rates, ", "), st.Messages, st.Deliveries)
	}
	return tw.Flush()
}
