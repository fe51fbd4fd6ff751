package runner

import (
	"testing"
	"time"
)

// TestStageHistogramsFold checks that a stage's histograms are folded
// into the recorder's at each snapshot and reused: after many seconds of
// deliveries over many stages, a stripe keeps as spares only what one
// second's stages needed, and every sample is in its stage's figures.
func TestStageHistogramsFold(t *testing.T) {
	const stages, clients = 50, 16
	r := newRecorder(1, time.Second)
	r.withStages(stages)
	sc := newSecondScratch(1)
	for s := 0; s < stages; s++ { // a stage a second
		for c := 0; c < clients; c++ {
			r.recordSend(c, &sendRecord{expected: 1, expectedBy: []int{1}, inStage: s + 1, lag: time.Duration(s) * time.Millisecond})
			r.recordReceive(c, &recvRecord{latency: time.Duration(s+1) * time.Millisecond, kind: deliveryFirst, inStage: s + 1})
		}
		r.second(sc, secondHooks{}, 0)
	}
	for i := range r.stripes {
		st := &r.stripes[i]
		held := len(st.spare)
		for s := range st.stages {
			if st.stages[s].Latency != nil {
				held++
			}
			if st.stages[s].Lag != nil {
				held++
			}
		}
		if held > 2 {
			t.Errorf("stripe %d holds %d histograms after %d stages; one stage at a time needs 2 (latency and lag)", i, held, stages)
		}
	}
	got := r.mergeStages()
	for s, m := range got {
		if m.Sent != clients || m.Received != clients || m.Expected != clients || m.Lost != 0 {
			t.Fatalf("stage %d: sent %d received %d expected %d lost %d, want %d, %d, %d, 0", s, m.Sent, m.Received, m.Expected, m.Lost, clients, clients, clients)
		}
		if m.Latency == nil || m.Latency.TotalCount() != clients || !m.Latency.ValuesAreEquivalent(m.Latency.Max(), int64(s+1)*1000) {
			t.Fatalf("stage %d: latency missing or not %d samples of %dms", s, clients, s+1)
		}
		if m.Lag == nil || m.Lag.TotalCount() != clients {
			t.Fatalf("stage %d: lag missing or not %d samples", s, clients)
		}
	}
}
