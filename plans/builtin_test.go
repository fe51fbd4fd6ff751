package plans

import (
	"slices"
	"testing"

	"github.com/mqplan/mqplan/metric"
	"github.com/mqplan/mqplan/threshold"
)

// TestBuiltinThresholds checks which built-in integrity checks a plan gets:
// all of them, less those whose metric one of its own thresholds reads, in
// any scope.
func TestBuiltinThresholds(t *testing.T) {
	all := []string{"unsent == 0", "connect.failed == 0", "clients.lost == 0", "lost == 0", "duplicates == 0",
		"corrupted == 0", "unexpected == 0", "qos_downgrades == 0", "errors == 0"}
	without := func(drop ...string) []string {
		var out []string
		for _, e := range all {
			if !slices.Contains(drop, e) {
				out = append(out, e)
			}
		}
		return out
	}
	tests := []struct {
		name  string
		exprs []string
		want  []string
	}{
		{"no thresholds: every check", nil, all},
		{"unrelated thresholds: every check", []string{"p99 < 10ms", "recv_rate > 5"}, all},
		{"the plan's own unsent threshold decides", []string{"unsent < 100"}, without("unsent == 0")},
		{"a group-scoped threshold counts too", []string{"groups.sub.connect.failed <= 2"}, without("connect.failed == 0")},
		{"a phase-scoped threshold counts too", []string{"phases.warmup.corrupted == 0 and errors < 5"}, without("corrupted == 0", "errors == 0")},
		{"loss_rate replaces lost == 0", []string{"loss_rate < 0.001"}, without("lost == 0")},
		{"lost_broker replaces lost == 0", []string{"lost_broker == 0"}, without("lost == 0")},
		{"dup_rate replaces duplicates == 0", []string{"dup_rate < 0.01"}, without("duplicates == 0")},
		{"every metric covered: none", []string{"unsent < 1", "connect.failed < 1", "clients.lost < 1", "lost < 1",
			"duplicates < 1", "corrupted < 1", "unexpected < 1", "qos_downgrades < 1", "errors < 1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := thTestPlan(tt.exprs...)
			user, errs := CompileThresholds(p)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			var got []string
			for _, b := range BuiltinThresholds(user) {
				if !b.Builtin || len(b.Reads) != 1 {
					t.Errorf("%q: builtin %v, reads %v", b.Source.Expr, b.Builtin, b.Reads)
				}
				got = append(got, b.Source.Expr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("built-in checks %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBuiltinThresholdsJudge checks that each built-in check fails on its
// fault and passes on a clean run.
func TestBuiltinThresholdsJudge(t *testing.T) {
	ths := BuiltinThresholds(nil)
	if len(ths) != len(builtinChecks) {
		t.Fatalf("%d checks compiled, want %d: a built-in expression no longer compiles", len(ths), len(builtinChecks))
	}
	clean := metric.Set{"unsent": 0, "connect.failed": 0, "clients.lost": 0, "lost": 0, "duplicates": 0,
		"corrupted": 0, "unexpected": 0, "qos_downgrades": 0, "errors": 0}
	for _, th := range ths {
		m := threshold.Measured{Top: clean}
		if r := th.Eval(m); !r.Pass {
			t.Errorf("%s fails on a clean run: %s", th.Source.Expr, r.Reason)
		}
		faulty := metric.Set{}
		for k, v := range clean {
			faulty[k] = v
		}
		faulty[th.Reads[0].Metric] = 3
		if r := th.Eval(threshold.Measured{Top: faulty}); r.Pass {
			t.Errorf("%s passes with %s = 3", th.Source.Expr, th.Reads[0].Metric)
		}
	}
}
