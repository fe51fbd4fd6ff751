package threshold

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/metric"
)

// TestBaselineCompile checks how baseline.* names compile: the same
// scopes and types as this run's, and the mistakes refused with a reason.
func TestBaselineCompile(t *testing.T) {
	tests := []struct {
		name, expr string
		reads      []string // Ref.String of each read, when it compiles
		err        string   // a substring of the error, when it does not
	}{
		{"top-level alias", "p99 <= baseline.p99 * 1.10", []string{"latency.p99", "baseline.latency.p99"}, ""},
		{"group rate", "groups.sub.recv_rate >= baseline.groups.sub.recv_rate * 0.95",
			[]string{"groups.sub.recv_rate", "baseline.groups.sub.recv_rate"}, ""},
		{"phase", "phases.steady.p99 < baseline.phases.steady.p99 + 1ms", []string{"phases.steady.latency.p99", "baseline.phases.steady.latency.p99"}, ""},
		{"group name that is not an identifier", `sent >= baseline.groups["my-group"].sent`, []string{"sent", `baseline.groups["my-group"].sent`}, ""},
		{"the same metric read twice counts once", "p99 <= baseline.p99 * 1.1 and p99 >= baseline.p99 * 0.5", []string{"latency.p99", "baseline.latency.p99"}, ""},
		{"baseline alone", "p99 < baseline", nil, "baseline needs a metric, e.g. baseline.p99"},
		{"unknown metric under baseline", "p99 < baseline.p98", nil, `unknown metric "p98"; did you mean "p99"?`},
		{"unknown group under baseline", "sent > baseline.groups.nope.sent", nil, `unknown group "nope"`},
		{"types still checked", "p99 < baseline.sent", nil, "compare"},
		{"only the baseline: refused", "baseline.p99 < 10ms", nil, "reads only the baseline"},
		{"a fraction before the duration", "p99 <= 1.1 * baseline.p99", []string{"latency.p99", "baseline.latency.p99"}, ""},
		{"no baseline.baseline", "p99 < baseline.baseline.p99", nil, `unknown metric "baseline.p99"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, err := testEnv().Compile(tt.expr)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range th.Reads {
				got = append(got, r.String())
			}
			if strings.Join(got, " ") != strings.Join(tt.reads, " ") {
				t.Errorf("reads %q, want %q", got, tt.reads)
			}
		})
	}
}

// TestBaselineEval checks the verdicts against a baseline: compared like
// any metric, and failed (never passed) when there is no baseline or it
// lacks what the threshold reads.
func TestBaselineEval(t *testing.T) {
	now := Measured{
		Top:    metric.Set{"latency.p99": 11 * time.Millisecond, "recv_rate": 1000.0},
		Groups: map[string]metric.Set{"sub": {"recv_rate": 960.0}},
	}
	base := &Measured{
		Top:    metric.Set{"latency.p99": 10 * time.Millisecond, "recv_rate": 1000.0},
		Groups: map[string]metric.Set{"sub": {"recv_rate": 1000.0}},
	}
	with := now
	with.Baseline = base
	tests := []struct {
		name   string
		expr   string
		m      Measured
		pass   bool
		reason string
	}{
		{"within 10% of the baseline's p99", "p99 <= baseline.p99 * 1.10", with, true, ""},
		{"beyond 5%", "p99 <= baseline.p99 * 1.05", with, false, "false"},
		{"group rate within 5%", "groups.sub.recv_rate >= baseline.groups.sub.recv_rate * 0.95", with, true, ""},
		{"group rate beyond 2%", "groups.sub.recv_rate >= baseline.groups.sub.recv_rate * 0.98", with, false, "false"},
		{"no baseline given: fails, saying so", "p99 <= baseline.p99 * 1.10", now, false, "no baseline to compare with (mqplan run --baseline FILE)"},
		{"the baseline lacks the group: fails", "groups.pub.sent >= baseline.groups.pub.sent", with, false, "no samples for groups.pub.sent, baseline.groups.pub.sent"},
		{"a fraction before the duration", "p99 <= 1.1 * baseline.p99", with, true, ""},
		{"a duration times a fraction of this run", "p99 * loss_rate < 1ms", Measured{Top: metric.Set{"latency.p99": 10 * time.Millisecond, "loss_rate": 0.05}}, true, ""},
		{"an infinite scale fails", "p99 * recv_rate < 1s", Measured{Top: metric.Set{"latency.p99": time.Hour, "recv_rate": 1e300}}, false,
			"a duration multiplied by a number is +Inf ns, beyond any duration: a threshold that is not a finite number fails"},
		{"the baseline lacks the metric: fails", "sent >= baseline.sent", Measured{Top: metric.Set{"sent": 5}, Baseline: base}, false, "no samples for baseline.sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCompile(t, tt.expr).Eval(tt.m)
			if res.Pass != tt.pass || res.Reason != tt.reason {
				t.Errorf("pass %v reason %q, want %v %q", res.Pass, res.Reason, tt.pass, tt.reason)
			}
		})
	}
}
