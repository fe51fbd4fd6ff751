package stats

import "testing"

// TestFinishPhases: the derived figures come from the raw counters only
// (a stale Lost is overwritten, never added to), clamped at 0, and a
// phase's Total counts each delivery once (its *Own fields zeroed).
func TestFinishPhases(t *testing.T) {
	tests := []struct {
		name                          string
		cell                          Metrics
		lost, lostOwn, timeouts, tExp int64
	}{
		{"all arrived", Metrics{Expected: 10, Received: 10}, 0, 0, 0, 10},
		{"loss", Metrics{Expected: 10, Received: 7}, 3, 0, 0, 10},
		{"duplicates do not hide loss", Metrics{Expected: 10, Received: 10, Duplicates: 2}, 2, 0, 0, 10},
		{"more first deliveries than expected clamps at 0", Metrics{Expected: 1, Received: 3}, 0, 0, 0, 1},
		{"stale lost is overwritten", Metrics{Expected: 4, Received: 4, Lost: 9, LostOwn: 9}, 0, 0, 0, 4},
		{"publisher side", Metrics{ExpectedOwn: 5, ReceivedOwn: 2}, 0, 3, 0, 0},
		{"request timeouts", Metrics{ReqResp: ReqResp{Expected: 6, Responses: 4}}, 0, 0, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			phases := []PhaseStats{{Groups: []Metrics{tt.cell, {}}, Total: Metrics{Sent: 99}}}
			stages := []StageStats{{Metrics: tt.cell}}
			FinishPhases(phases, stages)
			g := phases[0].Groups[0]
			if g.Lost != tt.lost || g.LostOwn != tt.lostOwn || g.ReqResp.Timeouts != tt.timeouts {
				t.Errorf("lost %d lostOwn %d timeouts %d, want %d %d %d", g.Lost, g.LostOwn, g.ReqResp.Timeouts, tt.lost, tt.lostOwn, tt.timeouts)
			}
			tot := phases[0].Total
			if tot.Lost != tt.lost || tot.Expected != tt.tExp || tot.Sent != 0 || tot.ExpectedOwn != 0 || tot.LostOwn != 0 {
				t.Errorf("total: lost %d expected %d sent %d expectedOwn %d lostOwn %d, want %d %d 0 0 0", tot.Lost, tot.Expected, tot.Sent, tot.ExpectedOwn, tot.LostOwn, tt.lost, tt.tExp)
			}
			if s := stages[0].Metrics; s.Lost != tt.lost {
				t.Errorf("stage lost %d, want %d", s.Lost, tt.lost)
			}
		})
	}
}
