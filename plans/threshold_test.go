package plans

import (
	"os"
	"path/filepath"
	"testing"
)

// thTestPlan is the plan the compile tests run against: two plain groups
// and one whose name needs groups["..."].
func thTestPlan(exprs ...string) *Plan {
	p := &Plan{Groups: []Group{{Name: "sub"}, {Name: "pub"}, {Name: "my-group"}}}
	for i, e := range exprs {
		// Each threshold at line 20+i, column 5: "  - " before it.
		p.Thresholds = append(p.Thresholds, ThresholdSource{Expr: e, Pos: Pos{File: "plan.yaml", Line: 20 + i, Col: 5}})
	}
	return p
}

// The threshold language itself (names, types, messages, columns within
// an expression, evaluation) is tested in package threshold; these tests
// cover what plans adds: positions in the file, paths, the plan's groups
// and phases as scopes, and compiling once.

func TestCompileThresholdsScopes(t *testing.T) {
	// The plan's groups and the run's phases are what thresholds may name.
	tests := []struct {
		name, expr, msg string
	}{
		{"phase typo", "phases.stedy.sent > 0", `unknown phase "stedy"; did you mean "steady"?`},
		{"unknown phase", "phases.nope.sent > 0", `unknown phase "nope" (phases: connect, subscribe, warmup, ramp, steady, drain, disconnect)`},
		{"group typo", "groups.sbu.p99 < 1s", `unknown group "sbu"; did you mean "sub"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := CompileThresholds(thTestPlan(tt.expr))
			if len(errs) != 1 || errs[0].Msg != tt.msg {
				t.Errorf("CompileThresholds(%q) = %v, want %q", tt.expr, errs, tt.msg)
			}
		})
	}
	for _, expr := range []string{"phases.steady.sent > 0 and phases.connect.connect.p99 < 1s", `groups["my-group"].sent > 0`} {
		if _, errs := CompileThresholds(thTestPlan(expr)); len(errs) > 0 {
			t.Errorf("CompileThresholds(%q): %v", expr, errs)
		}
	}
}

// TestThresholdsCompiledOnce checks that Compile uses the thresholds Load
// compiled, and compiles afresh a plan whose thresholds or groups were
// changed since.
func TestThresholdsCompiledOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.yaml")
	yaml := "broker: {url: embedded}\nduration: 1s\ngroups:\n  - name: sub\n    subscribe: [{topic: t}]\n" +
		"  - name: pub\n    publish: {topic: t, rate: 1}\nthresholds:\n  - p99 < 10ms\n  - groups.sub.sent >= 0\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loaded := p.compiled
	if loaded == nil || len(loaded.ths) != 2 {
		t.Fatalf("Load kept %+v, want both thresholds", loaded)
	}
	prog, err := Compile(p, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if prog.Thresholds[0] != loaded.ths[0] || prog.Thresholds[1] != loaded.ths[1] {
		t.Errorf("Compile compiled the thresholds again")
	}
	if len(prog.Thresholds) <= 2 {
		t.Errorf("Compile added no built-in checks")
	}
	if ths, _ := CompileThresholds(p); cap(ths) != len(ths) {
		t.Errorf("CompileThresholds hands out the plan's own slice with room to append into")
	}

	tests := []struct {
		name string
		edit func(p *Plan)
		want string // the one error, or "" when every threshold compiles
	}{
		{"threshold edited", func(p *Plan) { p.Thresholds[0].Expr = "p98 < 10ms" }, `unknown metric "p98"; did you mean "p99"?`},
		{"threshold added", func(p *Plan) { p.Thresholds = append(p.Thresholds, ThresholdSource{Expr: "sent > 0"}) }, ""},
		{"group renamed", func(p *Plan) { p.Groups[0].Name = "subs" }, `unknown group "sub"; did you mean "subs"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Load(path, LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(q)
			ths, errs := CompileThresholds(q)
			if tt.want == "" {
				if len(errs) > 0 || len(ths) != len(q.Thresholds) || ths[0] == q.compiled.ths[0] {
					t.Errorf("got %v, %v; want the edited plan compiled afresh", ths, errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Msg != tt.want {
				t.Errorf("errors %v, want %q", errs, tt.want)
			}
		})
	}
}

func TestCompileThresholdsCollectsEveryError(t *testing.T) {
	p := thTestPlan("p99 < 10ms", "p98 < 1s", "loss_rate == 0", "groups.typo.sent > 0")
	ths, errs := CompileThresholds(p)
	if len(ths) != 2 || ths[0].Source.Expr != "p99 < 10ms" || ths[1].Source.Expr != "loss_rate == 0" {
		t.Errorf("compiled %v, want the first and third", ths)
	}
	if len(errs) != 2 {
		t.Fatalf("errors: %v", errs)
	}
	want := []string{
		`plan.yaml:21:5: thresholds[1]: unknown metric "p98"; did you mean "p99"?`,
		`plan.yaml:23:12: thresholds[3]: unknown group "typo" (groups: sub, pub, "my-group")`,
	}
	for i, e := range errs {
		if e.Error() != want[i] {
			t.Errorf("error %d = %q, want %q", i, e.Error(), want[i])
		}
	}
	if ths, errs := CompileThresholds(&Plan{}); ths != nil || errs != nil {
		t.Errorf("a plan without thresholds gave %v, %v", ths, errs)
	}
	if ths, errs := CompileThresholds(nil); ths != nil || errs != nil {
		t.Errorf("a nil plan gave %v, %v", ths, errs)
	}
}

func TestCompileThresholdMultiLine(t *testing.T) {
	// A YAML | block keeps its newlines; its lines all start at the column
	// of the first, so an error on a later line moves down and keeps the
	// column within that line.
	p := thTestPlan("p99 < 10ms and\nloss_rate == 0 and\n  p98 < 1s")
	_, errs := CompileThresholds(p)
	if len(errs) != 1 {
		t.Fatalf("errors: %v", errs)
	}
	if want := (Pos{File: "plan.yaml", Line: 22, Col: 7}); errs[0].Pos != want {
		t.Errorf("error at %v, want %v", errs[0].Pos, want)
	}
}

func TestCompileThresholdWithoutPosition(t *testing.T) {
	// A threshold given on the command line has no line: the column goes
	// into the message.
	p := &Plan{Thresholds: []ThresholdSource{{Expr: "sent > 0 or p98 < 1ms"}}}
	_, errs := CompileThresholds(p)
	if len(errs) != 1 {
		t.Fatalf("errors: %v", errs)
	}
	want := `-: thresholds[0]: unknown metric "p98"; did you mean "p99"? (at column 13 of the expression)`
	if errs[0].Error() != want {
		t.Errorf("got %q, want %q", errs[0].Error(), want)
	}
}
