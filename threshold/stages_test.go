package threshold

import (
	"testing"
	"time"

	"github.com/mqplan/mqplan/metric"
)

// stagesEnv has three stages: two named, the middle one unnamed (its name
// is its index, 1).
func stagesEnv() *Env {
	return NewEnv(Scopes{Groups: []string{"sub"}, Phases: testPhases, Stages: []string{"base", "1", "peak"}})
}

// TestStageScope checks that a stage is read by its name or by its index
// (an integer, or digits quoted), and that all spellings read the same
// figures, those Eval finds under the stage's name.
func TestStageScope(t *testing.T) {
	m := Measured{
		Top: metric.Set{"latency.p99": time.Millisecond},
		Stages: map[string]metric.Set{
			"base": {"latency.p99": 2 * time.Millisecond, "loss_rate": 0.0, "sent": 10},
			"1":    {"latency.p99": 5 * time.Millisecond, "sent": 20},
			"peak": {"latency.p99": 9 * time.Millisecond, "sent": 30},
		},
		Baseline: &Measured{Stages: map[string]metric.Set{"peak": {"latency.p99": 10 * time.Millisecond}}},
	}
	tests := []struct {
		name, expr string
		ref        string // the first metric read, as reports print it
		pass       bool
	}{
		{"by name", "stages.base.p99 < 3ms", "stages.base.latency.p99", true},
		{"by name, fails", "stages.peak.p99 < 3ms", "stages.peak.latency.p99", false},
		{"quoted name", `stages["peak"].sent == 30`, "stages.peak.sent", true},
		{"index of a named stage", "stages[2].sent == 30", "stages.peak.sent", true},
		{"index of an unnamed stage", "stages[1].sent == 20", "stages[1].sent", true},
		{"quoted index", `stages["1"].sent == 20`, "stages[1].sent", true},
		{"quoted index of a named stage", `stages["0"].sent == 10`, "stages.base.sent", true},
		{"index and name in one", "stages[0].sent < stages.peak.sent and stages[2].p99 > stages.base.p99", "stages.base.sent", true},
		{"loss in a stage", "stages.base.loss_rate == 0", "stages.base.loss_rate", true},
		{"against the baseline", "stages[2].p99 <= baseline.stages.peak.p99", "stages.peak.latency.p99", true},
		{"no samples", "stages[1].loss_rate == 0", "stages[1].loss_rate", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, e := stagesEnv().Compile(tt.expr)
			if e != nil {
				t.Fatalf("Compile(%q): %v", tt.expr, e)
			}
			if got := th.Reads[0].String(); got != tt.ref {
				t.Errorf("reads %s, want %s", got, tt.ref)
			}
			if res := th.Eval(m); res.Pass != tt.pass {
				t.Errorf("Eval(%q) = %v (%s), want %v", tt.expr, res.Pass, res.Reason, tt.pass)
			}
		})
	}
}

// TestStageScopeErrors checks that a stage the plan does not have is an
// error at its column, with the closest name or the valid indexes.
func TestStageScopeErrors(t *testing.T) {
	tests := []struct {
		name, expr string
		scopes     *Scopes
		off        int
		msg        string
	}{
		{"unknown name", "stages.pek.p99 < 1s", nil, 7, `unknown stage "pek"; did you mean "peak"?`},
		{"unknown name, nothing close", "stages.zzzzzz.p99 < 1s", nil, 7, `unknown stage "zzzzzz" (stages: base, "1", peak)`},
		{"index past the end", "stages[3].p99 < 1s", nil, 7, "unknown stage index 3: the plan's 3 stages are numbered 0 to 2"},
		{"quoted index past the end", `stages["9"].p99 < 1s`, nil, 7, "unknown stage index 9: the plan's 3 stages are numbered 0 to 2"},
		{"no stages", "stages[0].p99 < 1s", &Scopes{Groups: []string{"sub"}}, 7, "unknown stage index 0 (the plan has no stages)"},
		{"no stages, by name", "stages.peak.p99 < 1s", &Scopes{Groups: []string{"sub"}}, 7, `unknown stage "peak" (the plan has no stages)`},
		{"stage alone", "stages > 1", nil, 0, "stages needs a stage name or index and a metric, e.g. stages.base.p99 or stages[0].p99"},
		{"stage without metric", "stages[1] > 1", nil, 7, "stages[1] needs a metric, e.g. stages[1].p99"},
		{"unknown metric in a stage", "stages.peak.p98 < 1s", nil, 12, `unknown metric "p98"; did you mean "p99"?`},
		{"whole-run metric", "stages.peak.broker.cpu.max < 50", nil, 12, "broker.cpu.max is a whole-run figure, not measured per stage: write broker.cpu.max, without stages.peak."},
		{"connections are not per stage", "stages[0].connect.failed == 0", nil, 10, "connect.failed is not measured per stage (a stage counts the messages intended in its window: sent, unsent, expected, received, lost, lost_unsent, lost_unacked, lost_broker, lost_late, loss_rate, duplicates, dup_rate, overlap_copies, out_of_order, ooo_rate, send_rate, recv_rate, sent_bytes, received_bytes, late_rate, latency.*, lag.*)"},
		{"local latency per stage", "stages.peak.latency_local.p99 < 1s", nil, 12, "latency_local.p99 is not measured per stage: a stage's latency is not split by shard; write latency_local.p99 for the whole run, or stages.peak.latency.* for the stage's latency of every delivery"},
		{"cross share per stage", "stages[2].latency.cross_share < 0.5", nil, 10, "latency.cross_share is not measured per stage: a stage's latency is not split by shard; write latency.cross_share for the whole run, or stages.peak.latency.* for the stage's latency of every delivery"},
		{"group by number", "groups[0].p99 < 1s", nil, 7, "a group is named, not numbered: write groups.sub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := stagesEnv()
			if tt.scopes != nil {
				env = NewEnv(*tt.scopes)
			}
			th, e := env.Compile(tt.expr)
			if e == nil || th != nil {
				t.Fatalf("Compile(%q) = %v, error %v; want one error", tt.expr, th, e)
			}
			if e.Col != tt.off || e.Msg != tt.msg {
				t.Errorf("Compile(%q) error at %d: %s\nwant at %d: %s", tt.expr, e.Col, e.Msg, tt.off, tt.msg)
			}
		})
	}
}
