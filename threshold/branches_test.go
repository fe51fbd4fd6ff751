package threshold

import (
	"fmt"
	"strings"
	"testing"
)

// TestCompileEveryAlternativeReadsThisRun checks the rule that every way
// for a threshold to pass reads this run: per branch of or, through not,
// parentheses, ? : and == of two conditions, and the error names the
// offending alternative at its column (plan column 5 + its offset).
func TestCompileEveryAlternativeReadsThisRun(t *testing.T) {
	const tail = " reads nothing of this run (only constants or the baseline), so the threshold could pass whatever this run measures; make every alternative compare this run, like p99 <= baseline.p99 * 1.10"
	tests := []struct {
		name string
		expr string
		col  int    // 0: it compiles
		alt  string // the alternative the error names
	}{
		{"or with a baseline-only branch", "p99 > 1h or baseline.p99 >= 0ms", 17, "baseline.p99 >= 0ms"},
		{"or with a constant branch", "p99 > 1h or 0 < 1", 17, "0 < 1"},
		{"constant branch first", "1 < 2 || p99 > 1h", 5, "1 < 2"},
		{"two constants of durations", "p99 > 1h or 10ms < 1s", 17, "10ms < 1s"},
		{"a literal true", "p99 > 1h or true", 17, "true"},
		{"a literal false, even though it can only fail", "p99 < 10ms or false", 19, "false"},
		{"nested parentheses", "p99 > 1h or ((1 + 2) < 4)", 19, "(1 + 2) < 4"},
		{"deeper or", "(p99 > 1h or (p50 > 1h or baseline.p50 < 1s)) and p50 > 1h", 0, ""},
		{"deeper or with a constant, and a constant", "(p99 > 1h or 0 < 1) and (p50 > 1h or 1 < 2)", 18, "0 < 1 and 1 < 2"},
		{"not of and: either side false passes", "not (p99 > 1h and 0 < 1)", 23, "not (0 < 1)"},
		{"not of or: both must be false", "not (p99 > 1h or 0 > 1)", 0, ""},
		{"double not", "not not (p99 > 1h or baseline.p99 > 0ms)", 26, "baseline.p99 > 0ms"},
		{"and of a constant with this run", "p99 < 10ms and 1 < 2", 0, ""},
		{"and of the baseline with this run", "baseline.p99 > 1ms and p99 < baseline.p99 * 2", 0, ""},
		{"ternary branch that is constant", "sent > 0 ? p99 < 1s : true", 0, ""},
		{"ternary on the baseline with a constant branch", "baseline.sent > 0 ? p99 < 1s : true", 5, "not (baseline.sent > 0) and true"},
		{"ternary on the baseline, both branches read this run", "baseline.sent > 0 ? p99 < 1s : p99 < 2s", 0, ""},
		{"ternary inside a comparison", "(baseline.p99 > 1ms ? p99 : 0ms) < 10ms", 6, "(baseline.p99 > 1ms ? p99 : 0ms) < 10ms"},
		{"equality of conditions, both read this run", "(p99 > 1h) == (p50 > 1h)", 0, ""},
		{"equality with a constant still needs this run", "(p99 > 1h) == (0 < 1)", 0, ""},
		{"inequality of two constants or this run", "(1 < 2) != (2 < 1) or p99 < 1s", 6, "1 < 2 and not (2 < 1)"},
		{"baseline comparison", "p99 <= baseline.p99 * 1.10", 0, ""},
		{"or of two comparisons of this run", "p99 < 10ms or p50 < 1ms", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, e := testEnv().Compile(tt.expr)
			if tt.col == 0 {
				if e != nil {
					t.Fatalf("Compile(%q): %v", tt.expr, e)
				}
				return
			}
			if e == nil || th != nil {
				t.Fatalf("Compile(%q) compiled; want the alternative %q refused", tt.expr, tt.alt)
			}
			want := fmt.Sprintf("the alternative %q", tt.alt) + tail
			if col := 5 + e.Col; col != tt.col || e.Msg != want {
				t.Errorf("Compile(%q) error\n got column %d: %s\nwant column %d: %s", tt.expr, col, e.Msg, tt.col, want)
			}
		})
	}
}

// TestCompileAlternativesNestedDeeply checks that the alternatives of a
// long chain of == between conditions are found in time (memoised) and
// that the one that reads nothing is found at the bottom.
func TestCompileAlternativesNestedDeeply(t *testing.T) {
	expr := strings.Repeat("(p99 > 1h) == (", 40) + "1 < 2" + strings.Repeat(")", 40)
	if _, e := testEnv().Compile(expr); e != nil {
		t.Fatalf("compiling 40 nested == : %v", e)
	}
	expr = strings.Repeat("(baseline.p99 > 1h) == (", 40) + "1 < 2" + strings.Repeat(")", 40) + " or p99 < 1s"
	if _, e := testEnv().Compile(expr); e == nil || !strings.Contains(e.Msg, "reads nothing of this run") {
		t.Fatalf("compiling 40 nested == of the baseline: %v", e)
	}
}
