package threshold

import (
	"strings"
	"testing"
	"time"

	"github.com/mqplan/mqplan/metric"
)

// TestHabits checks the answers to what users of neighbouring tools (and
// readers of mqplan's own tables) write first: each refused form names
// what to write instead, and each accepted form judges what it says.
func TestHabits(t *testing.T) {
	refused := []struct {
		name, expr string
		col        int // the rune offset the error points at, from 0
		msg        string
	}{
		{"k6's p(99) against a bare number", "p(99) < 50", 0, "p(99) is k6's percentile function; write p99 here: p99 < 50ms"},
		{"k6's p(95) against a duration", "p(95) <= 20ms", 0, "write p95 here: p95 <= 20ms"},
		{"k6's p(99.9), number first", "50 > p(99.9)", 5, "write p999 here: p999 < 50ms"},
		{"k6's p(N) in arithmetic", "p(99) * 2 < 50ms", 0, "write p99 here: p99 < 50ms"},
		{"k6's p(97): no such percentile", "p(97) < 50", 0, "p50, p90, p95, p99 and p999"},
		{"k6's avg", "avg < 50ms", 0, `unknown metric "avg": k6's avg is latency.mean here`},
		{"k6's med", "med < 50ms", 0, `k6's med is p50 here`},
		{"the table's p99.9 column", "e2e.p99.9 < 50ms", 4, `write p999 for the 99.9th percentile (the table's p99.9 column): e.g. "e2e.p999 < 50ms"`},
		{"a typo of the table's row name", "e2e.p98 < 50ms", 4, `unknown metric "e2e.p98"; did you mean "e2e.p99"?`},
		{"a metric under a name that is none", "foo.p99 < 50ms", 0, `unknown metric "foo.p99"; did you mean "p99"?`},
		{"a percentage with a rate", "send_rate > 10%", 12, "10% is a share (10% = 0.1) and compares with shares such as loss_rate"},
		{"a percentage with a percent metric", "self.cpu.max < 80%", 15, "self.cpu.max is already in percent: write the number without %, e.g. self.cpu.max < 80"},
		{"a percentage with a count", "lost < 1%", 7, "1% is a share (1% = 0.01)"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testEnv().Compile(tt.expr)
			if err == nil {
				t.Fatalf("Compile(%q) succeeded; want %q", tt.expr, tt.msg)
			}
			if !strings.Contains(err.Msg, tt.msg) || err.Offset != tt.col {
				t.Errorf("Compile(%q) = %q at %d; want %q at %d", tt.expr, err.Msg, err.Offset, tt.msg, tt.col)
			}
		})
	}

	m := Measured{
		Top: metric.Set{"latency.p99": 40 * time.Millisecond, "latency.max": 90 * time.Millisecond, "loss_rate": 0.0005,
			"dup_rate": 0.002, "sent": 10},
		Groups: map[string]metric.Set{"sub": {"latency.p99": 60 * time.Millisecond}},
	}
	accepted := []struct {
		name, expr string
		reads      string // the first metric read, canonical
		pass       bool
	}{
		{"e2e, the table's row name", "e2e.p99 < 50ms", "latency.p99", true},
		{"e2e fails as latency does", "e2e.p99 < 30ms", "latency.p99", false},
		{"e2e in a group", "groups.sub.e2e.p99 < 50ms", "groups.sub.latency.p99", false},
		{"e2e and latency together", "e2e.max < 100ms and latency.p99 < 50ms", "latency.max", true},
		{"a percentage of a share", "loss_rate < 0.1%", "loss_rate", true},
		{"a percentage fails as its fraction does", "dup_rate < 0.1%", "dup_rate", false},
		{"a percentage on the left", "0.1% > loss_rate and dup_rate <= 0.2%", "loss_rate", true},
		{"a percentage in parentheses", "(loss_rate < 1%) or sent == 0", "loss_rate", true},
		{"modulo stays modulo", "sent % 3 == 1 and sent%4 == 2", "sent", true},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			th, err := testEnv().Compile(tt.expr)
			if err != nil {
				t.Fatalf("Compile(%q): %v", tt.expr, err)
			}
			if got := th.Reads[0].String(); got != tt.reads {
				t.Errorf("reads %s first, want %s", got, tt.reads)
			}
			if r := th.Eval(m); r.Pass != tt.pass {
				t.Errorf("Eval(%q) pass %v (%s), want %v", tt.expr, r.Pass, r.Reason, tt.pass)
			}
		})
	}
}

// TestShiftPercent checks that a percentage becomes its fraction exactly,
// in the text expr reads as a float.
func TestShiftPercent(t *testing.T) {
	for in, want := range map[string]string{"0.1": "0.001", "5": "0.05", "100": "1.0", "12.5": "0.125", "0": "0.0", "000.5": "0.005", "1000": "10.0", "99.99": "0.9999"} {
		if got := shiftPercent(in); got != want {
			t.Errorf("shiftPercent(%q) = %q, want %q", in, got, want)
		}
	}
}
