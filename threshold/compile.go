package threshold

import (
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"

	"github.com/mqplan/mqplan/metric"
)

// Scopes are the names a threshold may scope a metric to, as the caller's
// plan has them: groups.<group>.p99, phases.<phase>.p99.
type Scopes struct {
	// Groups are the group names in plan order; duplicates are ignored.
	Groups []string
	// Phases are the phase names in timeline order.
	Phases []string
	// Stages are the plan's stage names in timeline order (an unnamed
	// stage's name is its index), so that stages[i] names Stages[i].
	Stages []string
}

// Env is the compile-time world of one plan: the nested types.Map that
// expr type-checks against, and the names for error messages. It is
// read-only once built, so one Env compiles any number of expressions.
type Env struct {
	groups   []string // plan order, deduplicated
	groupSet map[string]bool
	phases   []string
	phaseSet map[string]bool
	stages   []string
	stageSet map[string]bool
	types    types.Map
	metrics  types.Map // the top scope's metrics
	scoped   types.Map // one group's or phase's: no whole-run metric (shared by all)
}

// NewEnv builds the environment for scopes. Every level is a types.Map,
// which expr turns into a *strict* map nature (checker/nature: Strict =
// true unless the map has a types.Extra key), so that groups.typo.p99 or
// latency.p98 is a compile error; a Go map type (map[string]any) would type
// the same expression as `any` and let it evaluate to nil at run time.
func NewEnv(s Scopes) *Env {
	e := &Env{groupSet: map[string]bool{}, phaseSet: map[string]bool{}, stageSet: map[string]bool{}}
	metrics, scoped := metricTypes(false), metricTypes(true)
	groups := types.Map{}
	for _, g := range s.Groups {
		if e.groupSet[g] {
			continue
		}
		e.groupSet[g] = true
		e.groups = append(e.groups, g)
		groups[g] = scoped
	}
	phases := types.Map{}
	for _, name := range s.Phases {
		if e.phaseSet[name] {
			continue
		}
		e.phaseSet[name] = true
		e.phases = append(e.phases, name)
		phases[name] = scoped
	}
	stages := types.Map{}
	for _, name := range s.Stages {
		if e.stageSet[name] {
			continue
		}
		e.stageSet[name] = true
		e.stages = append(e.stages, name)
		stages[name] = scoped
	}
	e.metrics, e.scoped = metrics, scoped
	e.types = scopeTypes(metrics, groups, phases, stages)
	return e
}

// scopeTypes is one run's scopes as a types.Map: the metrics at the top,
// groups, phases and stages below; the baseline is a second run of this
// shape.
func scopeTypes(metrics, groups, phases, stages types.Map) types.Map {
	m := types.Map{string(Groups): groups, string(Phases): phases, string(Stages): stages}
	for k, v := range metrics {
		m[k] = v
	}
	return m
}

// durationType is the expr type of Duration metrics and duration literals.
var durationType = types.TypeOf(time.Duration(0))

// metricTypes is one scope's metrics as a types.Map: leaves and aliases at
// the top, each family (latency, ack, ...) as a nested types.Map, and
// each further dot (broker.cpu.max) one level deeper. A group's or a
// phase's (scoped) has no whole-run metric (metric.Metric.WholeRun), so
// that expr's own check refuses groups.sub.broker.cpu.max too.
func metricTypes(scoped bool) types.Map {
	m := types.Map{}
	for _, md := range metric.All() {
		if scoped && md.WholeRun {
			continue
		}
		// A name with several dots (broker.cpu.max) nests as deep.
		parts := strings.Split(string(md.Name), ".")
		at := m
		for _, p := range parts[:len(parts)-1] {
			sub, _ := at[p].(types.Map)
			if sub == nil {
				sub = types.Map{}
				at[p] = sub
			}
			at = sub
		}
		at[parts[len(parts)-1]] = kindType(md.Kind)
	}
	for _, alias := range metric.Aliases() {
		md, _ := metric.Lookup(alias)
		m[alias] = kindType(md.Kind)
	}
	return m
}

// kindType is the expr type of a metric kind's Go type.
func kindType(k metric.Kind) types.Type {
	switch k {
	case metric.Count:
		return types.Int
	case metric.Duration:
		return durationType
	}
	return types.Float64
}

// Compile turns one expression into a Threshold, or into one error at the
// offending offset of the expression. It never panics, whatever expr
// holds.
func (e *Env) Compile(src string) (*Threshold, *Error) {
	c := &checker{env: e, src: src}
	if strings.TrimSpace(src) == "" {
		return nil, c.errAt(0, "empty threshold; write a condition such as p99 < 10ms")
	}
	c.rw = rewriteDurations(src)
	// The rewriter only checks the shape of a literal; overflow (1000000h)
	// is caught here so that duration() cannot fail at run time.
	for _, s := range c.rw.segs {
		lit := src[s.srcByte:s.srcByteEnd]
		if s.size {
			if s.sizeErr != nil {
				return nil, c.errAt(s.srcRune, "%s", sizeMessage(lit, s.sizeErr))
			}
			continue
		}
		if s.percent {
			continue
		}
		if _, err := time.ParseDuration(lit); err != nil {
			return nil, c.errAt(s.srcRune, "duration %s is out of range", lit)
		}
	}
	tree, err := parser.Parse(c.rw.out)
	if err != nil {
		if at, msg, ok := p999Hint(src); ok {
			return nil, c.errAt(at, "%s", msg)
		}
		return nil, c.exprError(err)
	}
	if t := c.walk(tree.Node); c.err == nil && t.kind != kindBool {
		c.fail(start(tree.Node), "%s", notACondition(t))
	}
	if c.err != nil {
		return nil, c.err
	}
	if len(c.reads) == 0 {
		// 1 < 2 or true gives the same verdict whatever the run measured:
		// most likely a metric name is missing.
		return nil, c.errAt(0, "reads no metric, so it gives the same verdict whatever the run measures; compare a metric, like p99 < 10ms")
	}
	if !slices.ContainsFunc(c.reads, func(r Ref) bool { return !r.Baseline }) {
		// baseline.p99 < 10ms judges the old run, not this one.
		return nil, c.errAt(0, "reads only the baseline, so it gives the same verdict whatever this run measures; compare this run with it, like p99 <= baseline.p99 * 1.10")
	}
	if e := c.checkAlternatives(tree.Node); e != nil {
		return nil, e
	}
	// The checker has checked names and types already; expr's checker runs
	// again over the same environment as a second line of defence (and to
	// compile), so that a gap in ours still cannot reach a run.
	fin := &finitePatch{c: c}
	prog, err := expr.Compile(c.rw.out, expr.Env(e.narrowed(c.reads)), expr.AsBool(),
		expr.Function(finiteFunc, finite, new(func(float64, int) float64)),
		expr.Function(scaleFunc, scale, new(func(time.Duration, float64) time.Duration)),
		expr.Patch(&scalePatch{c.scaled}), expr.Patch(&renamePatch{c.renamed}), expr.Patch(&aliasPatch{c.aliased}), expr.Patch(fin))
	if err != nil {
		return nil, c.exprError(err)
	}
	return &Threshold{expr: src, Reads: c.reads, program: prog, arith: fin.texts, bounds: c.bounds}, nil
}

// finitePatch wraps every /, ** and ^ of the expression in finiteFunc,
// recording each one's text as the user wrote it for the failure reason.
// The other operators cannot make Inf or NaN out of finite numbers short
// of overflowing float64, and metric values are finite (conform).
type finitePatch struct {
	c     *checker
	texts []string
}

// text is the operation as the user wrote it, from its left operand's
// start to its right operand's end (expr's node locations), or the whole
// expression when that slice does not stand on its own (parentheses cut).
func (p *finitePatch) text(n *ast.BinaryNode) string {
	whole := strings.TrimSpace(p.c.src)
	end := 0
	ast.Walk(&n.Right, endVisitor{&end})
	from, to := p.c.rw.srcOffset(start(n.Left)), p.c.rw.srcOffset(end)
	runes := []rune(p.c.src)
	if from < 0 || to > len(runes) || from >= to {
		return whole
	}
	text := strings.TrimSpace(string(runes[from:to]))
	depth := 0
	for _, r := range text {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth < 0 {
			return whole
		}
	}
	if depth != 0 || !strings.Contains(text, n.Operator) {
		return whole
	}
	return text
}

// endVisitor finds the furthest end of any node under the one walked.
type endVisitor struct{ end *int }

// Visit records the node's end if it is the furthest yet.
func (v endVisitor) Visit(node *ast.Node) {
	if to := (*node).Location().To; to > *v.end {
		*v.end = to
	}
}

// Visit wraps a division or power in finiteFunc (expr's ast.Visitor).
func (p *finitePatch) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BinaryNode)
	if !ok || (n.Operator != "/" && n.Operator != "**" && n.Operator != "^") {
		return
	}
	p.texts = append(p.texts, p.text(n))
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: finiteFunc},
		Arguments: []ast.Node{n, &ast.IntegerNode{Value: len(p.texts) - 1}},
	})
}

// scalePatch turns each duration × fraction the checker found into
// scaleFunc(duration, fraction) (expr's ast.Visitor). The nodes are found
// again by location: expr parses the same text the checker walked.
type scalePatch struct{ at []scaledAt }

// Visit patches one node.
func (p *scalePatch) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BinaryNode)
	if !ok || n.Operator != "*" {
		return
	}
	for _, s := range p.at {
		if s.at != n.Location() {
			continue
		}
		d, f := n.Left, n.Right
		if !s.durationLeft {
			d, f = f, d
		}
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: scaleFunc}, Arguments: []ast.Node{d, f}})
		return
	}
}

// narrowed is the environment with only the groups the threshold reads:
// expr walks its whole environment on every compile, so with every group
// in it a plan of G groups and T thresholds cost O(G×T) (1,000 groups and
// 100 thresholds took over a second). The checker has already resolved
// every name against the full set, so nothing is lost.
func (e *Env) narrowed(reads []Ref) types.Map {
	used, usedBase := types.Map{}, types.Map{}
	baseline := false
	for _, r := range reads {
		baseline = baseline || r.Baseline
		if r.Scope != Groups {
			continue
		}
		if r.Baseline {
			usedBase[r.Name] = e.scoped
		} else {
			used[r.Name] = e.scoped
		}
	}
	phases := e.types[string(Phases)].(types.Map)
	stages := e.types[string(Stages)].(types.Map)
	env := scopeTypes(e.metrics, used, phases, stages)
	if baseline {
		env[BaselineRoot] = scopeTypes(e.metrics, usedBase, phases, stages)
	}
	return env
}
