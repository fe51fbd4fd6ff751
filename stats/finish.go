package stats

// FinishPhases fixes the figures of a run that are derived from its raw
// counters rather than counted: each cell's Lost (expected minus
// first-time deliveries, at least 0), LostOwn and request/response
// Timeouts, each phase's Total (every group merged, counting each
// delivery once: the subscriber view, so the publisher-side *Own fields
// are zeroed there) and each stage's Lost. A single run calls it once its
// recorder's stripes are summed, and a merge of partial results (package
// partial) once the shards' raw counters are added, so that both judge
// from the same arithmetic: a per-shard Lost is never summed, since a
// shard whose publishers' subscribers live elsewhere expects deliveries
// it never receives. Lost, LostOwn, Timeouts and Total are overwritten;
// every other field is left as counted.
func FinishPhases(phases []PhaseStats, stages []StageStats) {
	for p := range phases {
		ph := &phases[p]
		ph.Total = Metrics{}
		for g := range ph.Groups {
			finishCell(&ph.Groups[g])
			ph.Total.Merge(&ph.Groups[g])
		}
		t := &ph.Total
		t.ExpectedOwn, t.ReceivedOwn, t.LostOwn = 0, 0, 0
		t.LostUnsentOwn, t.LostUnackedOwn, t.LostLateOwn = 0, 0, 0
	}
	for s := range stages {
		finishCell(&stages[s].Metrics)
	}
}

// finishCell fixes one cell's derived figures from its raw counters.
func finishCell(m *Metrics) {
	m.Lost = max(0, m.Expected-(m.Received-m.Duplicates))
	m.LostOwn = max(0, m.ExpectedOwn-m.ReceivedOwn)
	m.ReqResp.Timeouts = max(0, m.ReqResp.Expected-m.ReqResp.Responses)
}
