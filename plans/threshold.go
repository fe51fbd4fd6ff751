package plans

import (
	"slices"
	"strconv"

	"github.com/mqplan/mqplan/phase"
	"github.com/mqplan/mqplan/threshold"
)

// Threshold is one compiled pass condition of a plan: the expression as
// package threshold compiled it (its Reads and Eval), where the plan
// wrote it, and whether mqplan added it as a built-in check.
type Threshold struct {
	*threshold.Threshold
	// Source is the expression as written, with its position in the plan.
	Source ThresholdSource
	// Builtin marks one of mqplan's own integrity checks (see
	// BuiltinThresholds), which no plan line wrote.
	Builtin bool
}

// String returns the expression as the user wrote it.
func (t *Threshold) String() string { return t.Source.Expr }

// Eval judges the threshold on measured values (threshold.Threshold.Eval);
// a nil or uncompiled Threshold fails with a reason rather than panicking.
func (t *Threshold) Eval(m threshold.Measured) threshold.Result {
	var th *threshold.Threshold
	if t != nil {
		th = t.Threshold
	}
	return th.Eval(m)
}

// CompileThresholds compiles every threshold of p against the metric
// catalogue and the plan's own group, phase and stage names, so that a typo is a
// plan error (exit 2) before anything connects rather than a silent pass or
// a failure after the run. It returns the thresholds that compiled and one
// *Error (path thresholds[i], positioned at the offending column) for each
// that did not.
//
// Load compiles a plan's thresholds once and keeps them with the plan;
// CompileThresholds (and so Compile) hands those out again while the plan's
// thresholds and group names are still the ones they were compiled from.
func CompileThresholds(p *Plan) ([]*Threshold, Errors) {
	if p == nil || len(p.Thresholds) == 0 {
		return nil, nil
	}
	if p.compiled.matches(p) {
		// Clipped, so that a caller appending (Compile adds the built-in
		// checks) never writes into the plan's own slice.
		return slices.Clip(p.compiled.ths), nil
	}
	return compileThresholds(p)
}

// compileThresholds compiles p's thresholds whatever was compiled before.
func compileThresholds(p *Plan) ([]*Threshold, Errors) {
	env := threshold.NewEnv(threshold.Scopes{Groups: groupNames(p), Phases: phase.Names(), Stages: StageNames(p)})
	var ths []*Threshold
	var errs Errors
	for i, src := range p.Thresholds {
		t, err := env.Compile(src.Expr)
		if err != nil {
			errs = append(errs, thresholdError(i, src, err))
			continue
		}
		ths = append(ths, &Threshold{Threshold: t, Source: src})
	}
	return ths, errs
}

// thresholdError places an error of thresholds[i] in the plan: the
// expression's own position plus the error's line and column within it.
// An expression that spans lines (a YAML | block, whose lines all start at
// the first line's column) moves down a line per newline before the
// culprit. With no known line (a threshold from the command line) the
// column goes into the message instead.
func thresholdError(i int, src ThresholdSource, e *threshold.Error) *Error {
	pos, msg := src.Pos, e.Msg
	if pos.Line > 0 {
		pos.Line += e.Line
		pos.Col += e.Col
	} else {
		msg = e.Error()
	}
	return &Error{Pos: pos, Path: "thresholds[" + strconv.Itoa(i) + "]", Msg: msg}
}

// groupNames lists the plan's group names in plan order.
func groupNames(p *Plan) []string {
	names := make([]string, len(p.Groups))
	for i, g := range p.Groups {
		names[i] = g.Name
	}
	return names
}

// compiledThresholds are a plan's thresholds as Load compiled them, with
// what they were compiled from, so that a plan changed since (by a caller
// editing its fields) is compiled afresh instead of judged by stale code.
type compiledThresholds struct {
	sources []ThresholdSource
	groups  []string
	stages  []string
	ths     []*Threshold
}

// keepCompiled records ths as p's compiled thresholds. Only Load calls it,
// before the plan is anyone else's, so that a plan is never written while
// another goroutine reads it.
func keepCompiled(p *Plan, ths []*Threshold) {
	p.compiled = &compiledThresholds{sources: slices.Clone(p.Thresholds), groups: groupNames(p), stages: StageNames(p), ths: ths}
}

// matches reports whether c was compiled from p's thresholds and groups as
// they are now.
func (c *compiledThresholds) matches(p *Plan) bool {
	if c == nil || !slices.Equal(c.sources, p.Thresholds) || len(c.groups) != len(p.Groups) || !slices.Equal(c.stages, StageNames(p)) {
		return false
	}
	for i := range p.Groups {
		if p.Groups[i].Name != c.groups[i] {
			return false
		}
	}
	return true
}
