package runner

import (
	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/stats"
)

// recordClean books n messages of publisher group pub, intended in phase,
// stage (-1: none) and due slot b, as expected by a clean churning
// subscriber of group recv (clean_run.go), or as ambiguous for it: counted
// apart, neither expected nor lost. client is the subscriber's index.
func (r *recorder) recordClean(client, pub, recv int, ph phase.Phase, stage int, b, n int64, ambiguous bool) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapClean, client: client, ph: ph, group: pub, other: recv, expected: int64(stage), size: b, n: n, flag: ambiguous})
	}
	m := st.cell(r.nGroups, ph, recv)
	var sm *stats.Metrics
	if stage >= 0 && stage < r.nStages {
		sm = &st.stages[stage]
	}
	if ambiguous {
		m.ChurnAmbiguous += n
		if sm != nil {
			sm.ChurnAmbiguous += n
		}
	} else {
		m.Expected += n
		st.cell(r.nGroups, ph, pub).ExpectedOwn += n
		st.addDue(recv, b, n, 0)
		if sm != nil {
			sm.Expected += n
		}
	}
	st.mu.Unlock()
}

// recordAmbiguousReceived counts the first delivery of a message that was
// ambiguous for its clean churning subscriber: not in Received, so that
// it neither stands in for a lost one nor counts as a surplus.
func (r *recorder) recordAmbiguousReceived(client int, d *recvRecord) {
	st := r.stripeFor(client)
	st.mu.Lock()
	if r.tap != nil {
		r.tap.add(st, tapEvent{kind: tapAmbiguousReceived, client: client, recv: *d})
	}
	st.cell(r.nGroups, d.phase, d.group).ChurnAmbiguousReceived++
	if d.inStage > 0 {
		st.stages[d.inStage-1].ChurnAmbiguousReceived++
	}
	st.mu.Unlock()
}
