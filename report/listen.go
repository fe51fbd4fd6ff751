package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/plans"
	"github.com/mqplan/mqplan/stats"
)

// listenWarnings says which subscribing groups of a plan that only listens
// (plans.ListensOnly: mqplan sub) received nothing in the measured window,
// and what that likely means, beside the built-in check received > 0 that
// fails such a run: a $share/... filter that heard nothing most often
// meets a broker without shared subscriptions, which takes it for a plain
// topic nobody publishes to. A plan with publishers has its own account of
// this (lost, and the runner's notice on a silent share group); an
// incomplete run says why already.
func listenWarnings(p *plans.Plan, st *stats.Stats) []string {
	if p == nil || st.Incomplete != "" || !plans.ListensOnly(p) {
		return nil
	}
	steady := st.Phase(phase.Steady)
	if steady == nil {
		return nil
	}
	var ws []string
	for gi := range p.Groups {
		g := &p.Groups[gi]
		if len(g.Subscribe) == 0 || gi >= len(steady.Groups) || steady.Groups[gi].Received > 0 {
			continue
		}
		var plain []string
		for _, s := range g.Subscribe {
			f := s.Topic.String()
			if strings.HasPrefix(f, "$share/") {
				ws = append(ws, plans.SilentShare(f))
				continue
			}
			plain = append(plain, strconv.Quote(f))
		}
		if len(plain) > 0 {
			ws = append(ws, fmt.Sprintf("group %s received nothing on %s: nothing was published to a matching topic while it listened, or the broker did not deliver it",
				g.Name, strings.Join(plain, ", ")))
		}
	}
	return ws
}
