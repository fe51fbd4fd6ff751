package plans

import (
	"errors"
	"fmt"
	"github.com/mqplan/mqplan/phase"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// Threshold is one compiled pass condition of a plan.
//
// The language is a small, checked subset of expr-lang
// (https://expr-lang.org): metric names (see Metrics), numbers, Go duration
// literals (10ms, 1.5s, 1m30s), comparisons (== != < <= > >=), and or not
// (also && || !), arithmetic (+ - * / % **), parentheses, the conditional
// `a ? b : c`, and duration("10ms"). Everything else expr offers (variables,
// lists, maps, predicates, other functions, $env) is refused at compile time,
// because each would let an expression read something that Reads does not
// list, or fail only at run time, after the load test has been paid for.
//
// A compiled Threshold is immutable; Eval may be called concurrently.
type Threshold struct {
	// Source is the expression as written, with its position in the plan.
	Source ThresholdSource
	// Reads lists every metric the expression reads, in order of first use,
	// deduplicated.
	Reads []MetricRef
	// Builtin marks one of mqplan's own integrity checks (see
	// BuiltinThresholds), which no plan line wrote.
	Builtin bool

	program *vm.Program
	// arith is the text of each division or power of the expression, for
	// the reason of a threshold that met Inf or NaN (see thFiniteFunc).
	arith []string
}

// String returns the expression as the user wrote it.
func (t *Threshold) String() string { return t.Source.Expr }

// MetricRef names one metric in one scope, as a threshold reads it.
type MetricRef struct {
	// Scope is "" for the top level (the measured window), "groups" or
	// "phases".
	Scope string
	// Name is the group or phase name when Scope is not "".
	Name string
	// Metric is the canonical metric name, e.g. "latency.p99" (aliases
	// such as "p99" are resolved).
	Metric string
}

// String renders the reference in threshold syntax with the canonical
// metric name: "latency.p99", "groups.sub.recv_rate", and
// `groups["my-group"].latency.p99` for names that are not identifiers, so
// that what a report prints can be pasted back into a plan.
func (r MetricRef) String() string {
	if r.Scope == "" {
		return r.Metric
	}
	return r.Scope + thMemberSyntax(r.Name) + "." + r.Metric
}

// MetricSet holds measured values by canonical metric name: int for Count,
// float64 for Rate and Fraction, time.Duration for Duration. A name absent
// from the set had no samples.
type MetricSet map[string]any

// Measured is everything a run measured, in the three scopes thresholds
// can name: the top level (the steady window), each group and each phase.
type Measured struct {
	// Top covers the measured window: the steady phase, with the
	// deliveries of its messages that arrive during drain.
	Top MetricSet
	// Groups is keyed by group name; a group without a set had no samples.
	Groups map[string]MetricSet
	// Phases is keyed by phase name (phase.Phase.String()).
	Phases map[string]MetricSet
}

// ThresholdResult is the verdict of one threshold on one run.
type ThresholdResult struct {
	// Pass is true only when every metric read had samples and the
	// expression held.
	Pass bool
	// Values has one entry per Reads element: the measured value, or Missing.
	Values []MetricValue
	// Reason is empty on pass; otherwise e.g. "no samples for groups.sub.p99"
	// or "false".
	Reason string
}

// MetricValue is one metric a threshold read, with what was measured.
type MetricValue struct {
	Ref MetricRef
	// Value is the measured value in its kind's Go type (int, float64 or
	// time.Duration); nil when Missing.
	Value any
	// Missing means the metric had no samples in its scope.
	Missing bool
}

// CompileThresholds compiles every threshold of p against the metric
// catalogue and the plan's own group and phase names, so that a typo is a
// plan error (exit 2) before anything connects rather than a silent pass or
// a failure after the run. It returns the thresholds that compiled and one
// *Error (path thresholds[i], positioned at the offending column) for each
// that did not.
func CompileThresholds(p *Plan) ([]*Threshold, Errors) {
	if p == nil || len(p.Thresholds) == 0 {
		return nil, nil
	}
	env := newThresholdEnv(p)
	var ths []*Threshold
	var errs Errors
	for i, src := range p.Thresholds {
		t, err := env.compile(src)
		if err != nil {
			err.Path = "thresholds[" + strconv.Itoa(i) + "]"
			errs = append(errs, err)
			continue
		}
		ths = append(ths, t)
	}
	return ths, errs
}

// Eval judges the threshold on measured values. A metric the expression
// reads that has no samples fails the threshold (k6 passes such thresholds
// silently; a load test that measured nothing must not be green). Eval never
// panics, whatever the sets hold: a value of the wrong type fails the
// threshold with a reason.
func (t *Threshold) Eval(m Measured) ThresholdResult {
	if t == nil || t.program == nil {
		return ThresholdResult{Reason: "threshold was not compiled"}
	}
	res := ThresholdResult{Values: make([]MetricValue, len(t.Reads))}
	env := map[string]any{}
	var missing []string
	var bad string
	for i, ref := range t.Reads {
		mv := MetricValue{Ref: ref}
		var set MetricSet
		switch ref.Scope {
		case "":
			set = m.Top
		case "groups":
			set = m.Groups[ref.Name]
		case "phases":
			set = m.Phases[ref.Name]
		}
		raw, ok := set[ref.Metric]
		md, known := LookupMetric(ref.Metric)
		switch {
		case !known:
			// Only a hand-built Threshold can get here; refuse rather than guess.
			if bad == "" {
				bad = fmt.Sprintf("unknown metric %q", ref.Metric)
			}
		case !ok || raw == nil:
			mv.Missing = true
			missing = append(missing, ref.String())
		default:
			v, err := thConform(md.Kind, raw)
			if err != nil {
				mv.Value = raw
				if bad == "" {
					bad = ref.String() + ": " + err.Error()
				}
				break
			}
			if v == nil { // NaN: a ratio of nothing is no sample
				mv.Missing = true
				missing = append(missing, ref.String())
				break
			}
			mv.Value = v
			thPut(env, ref, v)
		}
		res.Values[i] = mv
	}
	if len(missing) > 0 {
		res.Reason = "no samples for " + strings.Join(missing, ", ")
		return res
	}
	if bad != "" {
		res.Reason = bad
		return res
	}
	out, err := expr.Run(t.program, env)
	if nf := (*thNonFinite)(nil); errors.As(err, &nf) {
		what := "a division or power"
		if nf.index >= 0 && nf.index < len(t.arith) {
			what = t.arith[nf.index]
		}
		res.Reason = fmt.Sprintf("%s is %v, not a finite number (a division by zero?): a threshold that is not a finite number fails", what, nf.value)
		return res
	}
	if err != nil {
		res.Reason = thCleanMessage(thErrorMessage(err))
		return res
	}
	pass, ok := out.(bool)
	if !ok {
		res.Reason = fmt.Sprintf("the expression gave %T, not true or false", out)
		return res
	}
	res.Pass = pass
	if !pass {
		res.Reason = "false"
	}
	return res
}

// thConform converts a measured value to the Go type its kind promises, so
// that the compiled program (type-checked against those types) never meets
// another. A NaN rate gives (nil, nil): it is a ratio of nothing, treated as
// no samples.
func thConform(kind MetricKind, v any) (any, error) {
	rv := reflect.ValueOf(v)
	switch kind {
	case Count:
		switch rv.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if _, isDur := v.(time.Duration); !isDur {
				return int(rv.Int()), nil
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			if u := rv.Uint(); u <= math.MaxInt {
				return int(u), nil
			}
			return nil, fmt.Errorf("count %d is too large", rv.Uint())
		case reflect.Float32, reflect.Float64:
			if f := rv.Float(); f == math.Trunc(f) && math.Abs(f) < 1<<62 {
				return int(f), nil
			}
		}
	case Rate, Fraction:
		switch rv.Kind() {
		case reflect.Float32, reflect.Float64:
			f := rv.Float()
			if math.IsNaN(f) {
				return nil, nil
			}
			if math.IsInf(f, 0) {
				// +Inf > 100 would hold: an infinite rate is a broken
				// measurement, which fails rather than passes.
				return nil, fmt.Errorf("measured %v, not a finite number", f)
			}
			return f, nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			if _, isDur := v.(time.Duration); !isDur {
				return float64(rv.Int()), nil
			}
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			return float64(rv.Uint()), nil
		}
	case Duration:
		if d, ok := v.(time.Duration); ok {
			return d, nil
		}
	}
	return nil, fmt.Errorf("measured a %T, which is not a %s", v, kind)
}

// thPut stores a value in the evaluation env under every spelling the
// program may use: the canonical path (latency → p99) and, for a latency
// percentile, its alias (p99), inside groups[name] or phases[name] when
// scoped. The env mirrors the compile-time types.Map shape exactly.
func thPut(env map[string]any, ref MetricRef, v any) {
	m := env
	if ref.Scope != "" {
		m = thSub(thSub(m, ref.Scope), ref.Name)
	}
	if fam, stat, ok := strings.Cut(ref.Metric, "."); ok {
		thSub(m, fam)[stat] = v
	} else {
		m[ref.Metric] = v
	}
	if alias, ok := thAliasOf[ref.Metric]; ok {
		m[alias] = v
	}
}

// thSub returns m[key] as a map, creating it when absent.
func thSub(m map[string]any, key string) map[string]any {
	if sub, ok := m[key].(map[string]any); ok {
		return sub
	}
	sub := map[string]any{}
	m[key] = sub
	return sub
}

// thAliasOf maps a canonical name back to its alias ("latency.p99" → "p99").
var thAliasOf = func() map[string]string {
	m := make(map[string]string, len(MetricAliases))
	for alias, canon := range MetricAliases {
		m[canon] = alias
	}
	return m
}()

// thresholdEnv is the compile-time world of one plan: the nested types.Map
// that expr type-checks against, and the names for error messages.
type thresholdEnv struct {
	groups   []string // plan order, deduplicated
	groupSet map[string]bool
	phaseSet map[string]bool
	types    types.Map
	metrics  types.Map // one scope's metrics (shared by every group and phase)
}

// newThresholdEnv builds the environment. Every level is a types.Map, which
// expr turns into a *strict* map nature (checker/nature: Strict = true
// unless the map has a types.Extra key), so that groups.typo.p99 or
// latency.p98 is a compile error; a Go map type (map[string]any) would type
// the same expression as `any` and let it evaluate to nil at run time.
func newThresholdEnv(p *Plan) *thresholdEnv {
	e := &thresholdEnv{groupSet: map[string]bool{}, phaseSet: map[string]bool{}}
	metrics := thMetricTypes()
	groups := types.Map{}
	for _, g := range p.Groups {
		if e.groupSet[g.Name] {
			continue
		}
		e.groupSet[g.Name] = true
		e.groups = append(e.groups, g.Name)
		groups[g.Name] = metrics
	}
	phases := types.Map{}
	for _, name := range phase.Names() {
		e.phaseSet[name] = true
		phases[name] = metrics
	}
	e.metrics = metrics
	e.types = types.Map{"groups": groups, "phases": phases}
	for k, v := range metrics {
		e.types[k] = v
	}
	return e
}

// thDurationType is the expr type of Duration metrics and duration literals.
var thDurationType = types.TypeOf(time.Duration(0))

// thMetricTypes is one scope's metrics as a types.Map: leaves and aliases at
// the top, each family (latency, ack, ...) as a nested types.Map.
func thMetricTypes() types.Map {
	m := types.Map{}
	for _, md := range Metrics {
		t := thKindType(md.Kind)
		if fam, stat, ok := strings.Cut(md.Name, "."); ok {
			sub, _ := m[fam].(types.Map)
			if sub == nil {
				sub = types.Map{}
				m[fam] = sub
			}
			sub[stat] = t
		} else {
			m[md.Name] = t
		}
	}
	for alias, canon := range MetricAliases {
		md, _ := LookupMetric(canon)
		m[alias] = thKindType(md.Kind)
	}
	return m
}

func thKindType(k MetricKind) types.Type {
	switch k {
	case Count:
		return types.Int
	case Duration:
		return thDurationType
	}
	return types.Float64
}

// compile turns one expression into a Threshold or one positioned error.
func (e *thresholdEnv) compile(src ThresholdSource) (*Threshold, *Error) {
	c := &thCompiler{env: e, src: src}
	if strings.TrimSpace(src.Expr) == "" {
		return nil, c.errAt(0, "empty threshold; write a condition such as p99 < 10ms")
	}
	c.rw = rewriteDurations(src.Expr)
	// The rewriter only checks the shape of a literal; overflow (1000000h)
	// is caught here so that duration() cannot fail at run time.
	for _, s := range c.rw.segs {
		lit := src.Expr[s.srcByte:s.srcByteEnd]
		if _, err := time.ParseDuration(lit); err != nil {
			return nil, c.errAt(s.srcRune, "duration %s is out of range", lit)
		}
	}
	tree, err := parser.Parse(c.rw.out)
	if err != nil {
		return nil, c.exprError(err)
	}
	if t := c.walk(tree.Node); c.err == nil && t.kind != thBool {
		c.fail(thStart(tree.Node), "%s", thNotACondition(t))
	}
	if c.err != nil {
		return nil, c.err
	}
	if len(c.reads) == 0 {
		// 1 < 2 or true gives the same verdict whatever the run measured:
		// most likely a metric name is missing.
		return nil, c.errAt(0, "reads no metric, so it gives the same verdict whatever the run measures; compare a metric, like p99 < 10ms")
	}
	// Our walk has checked names and types already; expr's checker runs
	// again over the same environment as a second line of defence (and to
	// compile), so that a gap in the walk still cannot reach a run.
	fin := &thFinitePatch{c: c}
	prog, err := expr.Compile(c.rw.out, expr.Env(e.narrowed(c.reads)), expr.AsBool(),
		expr.Function(thFiniteFunc, thFinite, new(func(float64, int) float64)), expr.Patch(fin))
	if err != nil {
		return nil, c.exprError(err)
	}
	return &Threshold{Source: src, Reads: c.reads, program: prog, arith: fin.texts}, nil
}

// thFiniteFunc is the function wrapped around every division and power of
// a threshold, so that a result that is not a finite number (sent / lost
// with lost == 0 is +Inf; 0 / 0 is NaN) stops the evaluation instead of
// comparing: +Inf > 5 holds and !(NaN < 5) holds, and a verdict resting on
// either would pass a run that proved nothing. The name cannot be written
// in a threshold (the walk refuses unknown functions before this runs).
const thFiniteFunc = "__mqplan_finite"

// thNonFinite is the error thFinite stops the evaluation with: which
// arithmetic gave what.
type thNonFinite struct {
	value float64
	index int // into Threshold.arith
}

func (e *thNonFinite) Error() string { return fmt.Sprintf("%v", e.value) }

// thFinite passes a finite value through and stops on Inf or NaN.
func thFinite(params ...any) (any, error) {
	f, _ := params[0].(float64)
	i, _ := params[1].(int)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &thNonFinite{value: f, index: i}
	}
	return f, nil
}

// thFinitePatch wraps every /, ** and ^ of the expression in thFiniteFunc,
// recording each one's text as the user wrote it for the failure reason.
// The other operators cannot make Inf or NaN out of finite numbers short
// of overflowing float64, and metric values are finite (thConform).
type thFinitePatch struct {
	c     *thCompiler
	texts []string
}

// text is the operation as the user wrote it, from its left operand's
// start to its right operand's end (expr's node locations), or the whole
// expression when that slice does not stand on its own (parentheses cut).
func (p *thFinitePatch) text(n *ast.BinaryNode) string {
	whole := strings.TrimSpace(p.c.src.Expr)
	end := 0
	ast.Walk(&n.Right, thEndVisitor{&end})
	from, to := p.c.rw.srcOffset(thStart(n.Left)), p.c.rw.srcOffset(end)
	runes := []rune(p.c.src.Expr)
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

// thEndVisitor finds the furthest end of any node under the one walked.
type thEndVisitor struct{ end *int }

func (v thEndVisitor) Visit(node *ast.Node) {
	if to := (*node).Location().To; to > *v.end {
		*v.end = to
	}
}

func (p *thFinitePatch) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BinaryNode)
	if !ok || (n.Operator != "/" && n.Operator != "**" && n.Operator != "^") {
		return
	}
	p.texts = append(p.texts, p.text(n))
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: thFiniteFunc},
		Arguments: []ast.Node{n, &ast.IntegerNode{Value: len(p.texts) - 1}},
	})
}

// narrowed is the environment with only the groups the threshold reads:
// expr walks its whole environment on every compile, so with every group
// in it a plan of G groups and T thresholds cost O(G×T) (1,000 groups and
// 100 thresholds took over a second). The walk has already resolved every
// name against the full set, so nothing is lost.
func (e *thresholdEnv) narrowed(reads []MetricRef) types.Map {
	used := types.Map{}
	for _, r := range reads {
		if r.Scope == "groups" {
			used[r.Name] = e.metrics
		}
	}
	env := make(types.Map, len(e.types))
	for k, v := range e.types {
		env[k] = v
	}
	env["groups"] = used
	return env
}

// thCompiler holds the state of compiling one expression.
type thCompiler struct {
	env   *thresholdEnv
	src   ThresholdSource
	rw    thRewrite
	reads []MetricRef
	err   *Error
}

// errAt builds an error at a rune offset in the user's expression: the
// position is the expression's own plus the offset, on the same line. An
// expression that spans lines (a YAML | block, whose lines all start at the
// first line's column) moves down a line per newline before the offset.
// With no known line (a threshold from the command line) the column goes
// into the message instead.
func (c *thCompiler) errAt(srcRune int, format string, args ...any) *Error {
	msg := thCleanMessage(fmt.Sprintf(format, args...))
	pos := c.src.Pos
	if pos.Line > 0 {
		col := srcRune
		i := 0
		for _, r := range c.src.Expr {
			if i >= srcRune {
				break
			}
			i++
			if r == '\n' {
				pos.Line++
				col = srcRune - i
			}
		}
		pos.Col += col
	} else {
		msg += fmt.Sprintf(" (at column %d of the expression)", srcRune+1)
	}
	return &Error{Pos: pos, Msg: msg}
}

// fail records the first error of the walk, at an offset in the rewritten text.
func (c *thCompiler) fail(outRune int, format string, args ...any) thType {
	if c.err == nil {
		c.err = c.errAt(c.rw.srcOffset(outRune), format, args...)
	}
	return thType{kind: thInvalid}
}

// thCleanMessage keeps a message on one line: expr appends a source
// snippet after a newline, and user text may contain newlines.
func thCleanMessage(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.ReplaceAll(s, "\r", " "))
}

// thErrorMessage takes the bare message of an expr error (its Error()
// appends "(line:col)" and a snippet, which point into the rewritten text).
func thErrorMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}

var (
	thUnexpectedRe = regexp.MustCompile(`^unexpected token (\w+)\((".*")\)$`)
	thTypeWordRe   = regexp.MustCompile(`\b(time\.Duration|float64|int|bool)\b`)
	thTypeWordMap  = map[string]string{"time.Duration": "duration", "float64": "number", "int": "number", "bool": "condition"}
)

// exprError converts an error from expr's parser, checker or compiler into
// ours, mapping its column back through the rewrite and rewording the
// messages a user is likely to meet.
func (c *thCompiler) exprError(err error) *Error {
	msg := thErrorMessage(err)
	at := 0
	var fe *file.Error
	if errors.As(err, &fe) {
		from := fe.From
		// expr points a bad number at its last character; point at its
		// first, where the user has to look.
		if tok, ok := strings.CutPrefix(msg, "bad number syntax: "); ok {
			if q, err := strconv.Unquote(tok); err == nil {
				from = max(from-utf8.RuneCountInString(q)+1, 0)
			}
			msg = "bad number " + tok + "; durations are written like 10ms, 1.5s or 1m30s"
		}
		at = c.rw.srcOffset(from)
	}
	switch {
	case msg == "unexpected token EOF":
		msg = "unexpected end of expression"
	case strings.HasPrefix(msg, "expected bool, but got "):
		msg = "the threshold must be a condition (true or false), but it is a " +
			thTypeWords(strings.TrimPrefix(msg, "expected bool, but got "))
	case thUnexpectedRe.MatchString(msg):
		sm := thUnexpectedRe.FindStringSubmatch(msg)
		tok, qerr := strconv.Unquote(sm[2])
		if qerr != nil {
			tok = sm[2]
		}
		msg = fmt.Sprintf("unexpected %q", tok)
		if sm[1] == "Identifier" && thIsUnit(tok) && c.digitBefore(at) {
			msg += "; write a duration without a space, e.g. 10ms"
		}
	default:
		msg = thTypeWords(msg)
	}
	return c.errAt(at, "%s", msg)
}

// thTypeWords replaces Go type names in expr's messages with the words of
// the plan format (duration, number, condition).
func thTypeWords(msg string) string {
	return thTypeWordRe.ReplaceAllStringFunc(msg, func(w string) string { return thTypeWordMap[w] })
}

// digitBefore reports whether the user's text has a digit, then spaces,
// just before rune offset at: "10 ms".
func (c *thCompiler) digitBefore(at int) bool {
	runes := []rune(c.src.Expr)
	if at > len(runes) {
		return false
	}
	i := at - 1
	for i >= 0 && unicode.IsSpace(runes[i]) {
		i--
	}
	return i >= 0 && i < at-1 && runes[i] >= '0' && runes[i] <= '9'
}

// thType is the static type of a sub-expression in the walk.
type thType struct {
	kind thKind
	// metric is the catalogue entry when the sub-expression is a bare
	// metric name, for messages ("p99 is a duration").
	metric *Metric
	// spelled is the metric as written, for messages.
	spelled string
}

type thKind int

const (
	thInvalid thKind = iota
	thInt
	thFloat
	thDuration
	thBool
)

func (k thKind) numeric() bool { return k == thInt || k == thFloat }

// walk checks one node and returns its type. It accepts only the subset
// described on Threshold, resolves metric names (recording Reads in order
// of first use) and type-checks with messages that say what to write.
func (c *thCompiler) walk(n ast.Node) thType {
	if c.err != nil {
		return thType{}
	}
	switch n := n.(type) {
	case *ast.IntegerNode:
		return thType{kind: thInt}
	case *ast.FloatNode:
		return thType{kind: thFloat}
	case *ast.BoolNode:
		return thType{kind: thBool}
	case *ast.NilNode:
		return c.fail(n.Location().From, "nil is not supported: a metric without samples already fails its threshold")
	case *ast.StringNode:
		if _, err := time.ParseDuration(n.Value); err == nil {
			return c.fail(n.Location().From, "write a duration without quotes: %s", n.Value)
		}
		return c.fail(n.Location().From, "text %q cannot be compared; thresholds compare numbers and durations", n.Value)
	case *ast.IdentifierNode, *ast.MemberNode, *ast.ChainNode:
		return c.metric(n)
	case *ast.UnaryNode:
		return c.unary(n)
	case *ast.BinaryNode:
		return c.binary(n)
	case *ast.ConditionalNode:
		cond := c.walk(n.Cond)
		if c.err == nil && cond.kind != thBool {
			return c.fail(thStart(n.Cond), "the condition of ? : must be true or false, not %s", cond.describe())
		}
		a, b := c.walk(n.Exp1), c.walk(n.Exp2)
		if c.err != nil {
			return thType{}
		}
		switch {
		case a.kind.numeric() && b.kind.numeric():
			if a.kind == thFloat || b.kind == thFloat {
				return thType{kind: thFloat}
			}
			return thType{kind: thInt}
		case a.kind == b.kind:
			return thType{kind: a.kind}
		}
		return c.fail(thStart(n.Exp2), "both branches of ? : must have the same type, not %s and %s", a.describe(), b.describe())
	case *ast.BuiltinNode:
		if n.Name != "duration" {
			return c.fail(n.Location().From, "function %s is not supported in thresholds", n.Name)
		}
		if len(n.Arguments) != 1 {
			return c.fail(n.Location().From, "duration takes one argument, such as duration(\"10ms\")")
		}
		s, ok := n.Arguments[0].(*ast.StringNode)
		if !ok {
			return c.fail(thStart(n.Arguments[0]), "duration needs a quoted literal, such as duration(\"10ms\")")
		}
		if _, err := time.ParseDuration(s.Value); err != nil {
			return c.fail(s.Location().From, "invalid duration %q", s.Value)
		}
		return thType{kind: thDuration}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			return c.fail(n.Location().From, "unknown function %s", id.Value)
		}
		return c.fail(n.Location().From, "method calls are not supported in thresholds")
	case *ast.ArrayNode:
		return c.fail(n.Location().From, "lists are not supported in thresholds")
	case *ast.MapNode, *ast.PairNode:
		return c.fail(n.Location().From, "maps are not supported in thresholds")
	case *ast.VariableDeclaratorNode:
		return c.fail(n.Location().From, "let is not supported in thresholds")
	case *ast.SequenceNode:
		return c.fail(n.Location().From, "; is not supported: write one condition per threshold")
	case *ast.PointerNode, *ast.PredicateNode:
		return c.fail(n.Location().From, "predicates are not supported in thresholds")
	case *ast.SliceNode:
		return c.fail(n.Location().From, "slices are not supported in thresholds")
	case *ast.BytesNode:
		return c.fail(n.Location().From, "byte strings are not supported in thresholds")
	case nil:
		return c.fail(0, "empty expression")
	default:
		return c.fail(n.Location().From, "this expression is not supported in thresholds")
	}
}

func (c *thCompiler) unary(n *ast.UnaryNode) thType {
	t := c.walk(n.Node)
	if c.err != nil {
		return thType{}
	}
	switch n.Operator {
	case "not", "!":
		if t.kind != thBool {
			return c.fail(thStart(n.Node), "%s needs a condition, not %s", n.Operator, t.describe())
		}
		return thType{kind: thBool}
	case "-", "+":
		if t.kind.numeric() {
			return thType{kind: t.kind}
		}
		return c.fail(n.Location().From, "unary %s needs a number, not %s", n.Operator, t.describe())
	}
	return c.fail(n.Location().From, "operator %s is not supported in thresholds", n.Operator)
}

// thBinaryOps are the binary operators thresholds accept; expr's others
// (in, matches, contains, .., ??, |) work on strings, lists and nil.
var thBinaryOps = map[string]bool{
	"and": true, "&&": true, "or": true, "||": true,
	"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true,
	"+": true, "-": true, "*": true, "/": true, "%": true, "**": true, "^": true,
}

func (c *thCompiler) binary(n *ast.BinaryNode) thType {
	if !thBinaryOps[n.Operator] {
		return c.fail(n.Location().From, "operator %s is not supported in thresholds", n.Operator)
	}
	l := c.walk(n.Left)
	r := c.walk(n.Right)
	if c.err != nil {
		return thType{}
	}
	op := n.Operator
	numeric := l.kind.numeric() && r.kind.numeric()
	promoted := thType{kind: thInt}
	if l.kind == thFloat || r.kind == thFloat {
		promoted.kind = thFloat
	}
	switch op {
	case "and", "&&", "or", "||":
		if l.kind != thBool {
			return c.fail(thStart(n.Left), "%s needs conditions on both sides, but the left is %s", op, l.describe())
		}
		if r.kind != thBool {
			return c.fail(thStart(n.Right), "%s needs conditions on both sides, but the right is %s", op, r.describe())
		}
		return thType{kind: thBool}
	case "==", "!=", "<", "<=", ">", ">=":
		if numeric || l.kind == thDuration && r.kind == thDuration ||
			(op == "==" || op == "!=") && l.kind == thBool && r.kind == thBool {
			return thType{kind: thBool}
		}
		return c.mismatch(n, l, r, "compare")
	case "+", "-":
		if numeric {
			return promoted
		}
		if l.kind == thDuration && r.kind == thDuration {
			return thType{kind: thDuration}
		}
		return c.mismatch(n, l, r, map[string]string{"+": "add", "-": "subtract"}[op])
	case "*":
		if numeric {
			return promoted
		}
		// expr multiplies a duration by an integer exactly; by a float it
		// yields a float at run time while its checker says duration, so
		// that case is refused here rather than failing after the run.
		if l.kind == thDuration && r.kind == thInt || l.kind == thInt && r.kind == thDuration {
			return thType{kind: thDuration}
		}
		if l.kind == thDuration || r.kind == thDuration {
			return c.fail(n.Location().From, "a duration can only be multiplied by a whole number")
		}
		return c.mismatch(n, l, r, "multiply")
	case "/":
		if numeric {
			return thType{kind: thFloat}
		}
		if l.kind == thDuration || r.kind == thDuration {
			return c.fail(n.Location().From, "durations cannot be divided; compare against a scaled duration instead (p99 < 2 * p50)")
		}
		return c.mismatch(n, l, r, "divide")
	case "%":
		if l.kind == thInt && r.kind == thInt {
			return thType{kind: thInt}
		}
		return c.fail(n.Location().From, "%% needs two whole numbers, not %s and %s", l.describe(), r.describe())
	case "**", "^":
		if numeric {
			return thType{kind: thFloat}
		}
		return c.mismatch(n, l, r, "raise")
	}
	return c.fail(n.Location().From, "operator %s is not supported in thresholds", op) // unreachable: thBinaryOps
}

// mismatch reports operands that do not go together. A duration against a
// number literal is the common slip (p99 < 10): the message points at the
// number and suggests writing its unit.
func (c *thCompiler) mismatch(n *ast.BinaryNode, l, r thType, verb string) thType {
	for _, side := range []struct {
		dur, num  thType
		numNode   ast.Node
		durIsLeft bool
	}{{l, r, n.Right, true}, {r, l, n.Left, false}} {
		if side.dur.kind != thDuration || !side.num.kind.numeric() {
			continue
		}
		if lit, ok := thNumberLiteral(side.numNode); ok {
			return c.fail(thStart(side.numNode), "cannot %s %s with the bare number %s; give it a unit, e.g. %sms",
				verb, side.dur.describe(), lit, lit)
		}
	}
	return c.fail(n.Location().From, "cannot %s %s with %s", verb, l.describe(), r.describe())
}

// thNotACondition explains a threshold that is a value rather than a
// condition, with a comparison that would make sense for its kind.
func thNotACondition(t thType) string {
	if t.metric == nil {
		return "the threshold must be a condition (true or false), but it is " + t.describe()
	}
	example := " > 0"
	switch t.metric.Kind {
	case Duration:
		example = " < 10ms"
	case Rate:
		example = " >= 100"
	case Fraction:
		example = " < 0.01"
	}
	return fmt.Sprintf("%s is a %s, not a condition; compare it, e.g. %s%s", t.spelled, t.metric.Kind, t.spelled, example)
}

// thNumberLiteral returns the text of a (possibly signed) number literal.
func thNumberLiteral(n ast.Node) (string, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return strconv.Itoa(n.Value), true
	case *ast.FloatNode:
		return strconv.FormatFloat(n.Value, 'f', -1, 64), true
	case *ast.UnaryNode:
		if n.Operator == "-" || n.Operator == "+" {
			if s, ok := thNumberLiteral(n.Node); ok {
				return n.Operator + s, true
			}
		}
	}
	return "", false
}

// describe names a type for messages: "p99 (a duration)" or "a number".
func (t thType) describe() string {
	var what string
	switch t.kind {
	case thInt, thFloat:
		what = "a number"
	case thDuration:
		what = "a duration"
	case thBool:
		what = "a condition"
	default:
		what = "an invalid value"
	}
	if t.metric != nil {
		return fmt.Sprintf("%s (a %s)", t.spelled, t.metric.Kind)
	}
	return what
}

// thStart is the offset of a node's first token: the location expr gives a
// binary node is its operator's, but a message about an operand should
// point at the operand.
func thStart(n ast.Node) int {
	for {
		switch m := n.(type) {
		case *ast.BinaryNode:
			n = m.Left
		case *ast.MemberNode:
			n = m.Node
		case *ast.ChainNode:
			n = m.Node
		case *ast.ConditionalNode:
			if !m.Ternary {
				return m.Location().From
			}
			n = m.Cond
		case nil:
			return 0
		default:
			return n.Location().From
		}
	}
}

// thPart is one segment of a metric name as written: groups, sub, p99.
type thPart struct {
	name string
	at   int // rune offset in the rewritten text
}

// metric resolves an identifier or member chain to a catalogue metric in a
// scope, records it in Reads and returns its type.
func (c *thCompiler) metric(n ast.Node) thType {
	parts, ok := c.chain(n)
	if !ok {
		return thType{}
	}
	ref := MetricRef{}
	rest := parts
	switch root := parts[0]; root.name {
	case "$env":
		return c.fail(root.at, "$env is not supported: name metrics directly")
	case "groups", "phases":
		kind, known, list := "group", c.env.groupSet, c.env.groups
		if root.name == "phases" {
			kind, known, list = "phase", c.env.phaseSet, phase.Names()
		}
		example := "sub"
		if len(list) > 0 {
			example = list[0]
		}
		if len(parts) == 1 {
			return c.fail(root.at, "%s needs a %s name and a metric, e.g. %s%s.p99", root.name, kind, root.name, thMemberSyntax(example))
		}
		name := parts[1]
		if !known[name.name] {
			return c.fail(name.at, "%s", thUnknownName(kind, name.name, list))
		}
		if len(parts) == 2 {
			return c.fail(name.at, "%s%s needs a metric, e.g. %s%s.p99", root.name, thMemberSyntax(name.name), root.name, thMemberSyntax(name.name))
		}
		ref.Scope, ref.Name = root.name, name.name
		rest = parts[2:]
	}
	md, ok := c.resolve(rest, ref.Scope != "")
	if !ok {
		return thType{}
	}
	ref.Metric = md.Name
	found := false
	for _, r := range c.reads {
		if r == ref {
			found = true
			break
		}
	}
	if !found {
		c.reads = append(c.reads, ref)
	}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	var spelled string
	if ref.Scope == "" {
		spelled = strings.Join(names, ".")
	} else {
		spelled = ref.Scope + thMemberSyntax(ref.Name) + "." + strings.Join(names[2:], ".")
	}
	t := thType{kind: thInt, metric: &md, spelled: spelled}
	switch md.Kind {
	case Rate, Fraction:
		t.kind = thFloat
	case Duration:
		t.kind = thDuration
	}
	return t
}

// chain flattens groups.sub.p99 or groups["a-b"].p99 into its parts. Only
// literal names are allowed: a computed index (groups[x]) would hide which
// metric is read from Reads and from the checker.
func (c *thCompiler) chain(n ast.Node) ([]thPart, bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return []thPart{{name: n.Value, at: n.Location().From}}, true
	case *ast.MemberNode:
		if n.Optional {
			c.fail(n.Location().From, "?. is not supported: a metric name either exists or is an error")
			return nil, false
		}
		base, ok := c.chain(n.Node)
		if !ok {
			return nil, false
		}
		prop, ok := n.Property.(*ast.StringNode)
		if !ok {
			c.fail(thStart(n.Property), "a name in [...] must be a quoted literal, such as groups[\"my-group\"]")
			return nil, false
		}
		return append(base, thPart{name: prop.Value, at: prop.Location().From}), true
	case *ast.ChainNode:
		return c.chain(n.Node)
	}
	if c.err == nil {
		c.walk(n) // report what the base is, or why it is refused
	}
	c.fail(thStart(n), "only metric names have fields")
	return nil, false
}

// resolve finds the metric named by parts (within a scope when scoped).
func (c *thCompiler) resolve(parts []thPart, scoped bool) (Metric, bool) {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	full := strings.Join(names, ".")
	if md, ok := LookupMetric(full); ok {
		return md, true
	}
	first := parts[0]
	if stats := thFamilyMembers(first.name); stats != nil {
		if len(parts) == 1 {
			c.fail(first.at, "%s is a family of metrics; name one of %s.{%s}", first.name, first.name, strings.Join(stats, ","))
			return Metric{}, false
		}
		member := first.name + "." + parts[1].name
		if _, ok := LookupMetric(member); ok {
			c.fail(parts[2].at, "unknown metric %q: %s has no fields", full, member)
			return Metric{}, false
		}
		cands := make([]string, len(stats))
		for i, s := range stats {
			cands[i] = first.name + "." + s
		}
		if s := thSuggest(member, cands); s != "" {
			c.fail(parts[1].at, "unknown metric %q; did you mean %q?", member, s)
		} else {
			c.fail(parts[1].at, "unknown metric %q (%s.*: %s)", member, first.name, strings.Join(stats, ", "))
		}
		return Metric{}, false
	}
	if _, ok := LookupMetric(first.name); ok && len(parts) > 1 {
		c.fail(parts[1].at, "unknown metric %q: %s has no fields", full, first.name)
		return Metric{}, false
	}
	cands := thAllNames
	if !scoped {
		cands = append(cands[:len(cands):len(cands)], "groups", "phases")
	}
	if s := thSuggest(full, cands); s != "" {
		c.fail(first.at, "unknown metric %q; did you mean %q?", full, s)
	} else if scoped {
		c.fail(first.at, "unknown metric %q (metrics: %s)", full, thTopList)
	} else {
		c.fail(first.at, "unknown metric %q (metrics: %s, groups.<name>.*, phases.<name>.*)", full, thTopList)
	}
	return Metric{}, false
}

// thFamilyMembers lists the statistics of a family ("latency" → min, mean,
// ...), or nil when name is not a family.
func thFamilyMembers(name string) []string {
	var out []string
	for _, md := range Metrics {
		if fam, stat, ok := strings.Cut(md.Name, "."); ok && fam == name {
			out = append(out, stat)
		}
	}
	return out
}

// thAllNames is every name a scope accepts: canonical names, then aliases.
var thAllNames = func() []string {
	var names []string
	for _, md := range Metrics {
		names = append(names, md.Name)
	}
	aliases := make([]string, 0, len(MetricAliases))
	for a := range MetricAliases {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	return append(names, aliases...)
}()

// thTopList is the short list of a scope's names for "unknown metric"
// messages: leaves and aliases, with families folded into latency.* etc.
var thTopList = func() string {
	var parts []string
	seen := map[string]bool{}
	for _, md := range Metrics {
		fam, _, ok := strings.Cut(md.Name, ".")
		switch {
		case !ok:
			parts = append(parts, md.Name)
		case !seen[fam]:
			seen[fam] = true
			parts = append(parts, fam+".*")
		}
	}
	aliases := make([]string, 0, len(MetricAliases))
	for a := range MetricAliases {
		aliases = append(aliases, a)
	}
	sort.Slice(aliases, func(i, j int) bool {
		return len(aliases[i]) < len(aliases[j]) || len(aliases[i]) == len(aliases[j]) && aliases[i] < aliases[j]
	})
	return strings.Join(append(parts, aliases...), ", ")
}()

// thUnknownName is the message for a group or phase name not in the plan:
// the closest name when one is close, else the whole list.
func thUnknownName(kind, name string, known []string) string {
	if s := thSuggest(name, known); s != "" {
		return fmt.Sprintf("unknown %s %q; did you mean %q?", kind, name, s)
	}
	if len(known) == 0 {
		return fmt.Sprintf("unknown %s %q (the plan has no %ss)", kind, name, kind)
	}
	shown := make([]string, len(known))
	for i, k := range known {
		shown[i] = thDisplayName(k)
	}
	return fmt.Sprintf("unknown %s %q (%ss: %s)", kind, name, kind, strings.Join(shown, ", "))
}

// thDisplayName prints a name bare when it is an identifier, else quoted,
// so a list of names stays readable and on one line.
func thDisplayName(s string) string {
	if thIsIdent(s) {
		return s
	}
	return strconv.Quote(s)
}

// thMemberSyntax is how a threshold reaches a name: .sub or ["my-group"].
func thMemberSyntax(name string) string {
	if thIsIdent(name) {
		return "." + name
	}
	return "[" + strconv.Quote(name) + "]"
}

// thIsIdent reports whether expr accepts s after a dot (its lexer's
// identifier rule: a letter, _ or $, then letters, digits, _ or $).
func thIsIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)) {
			return false
		}
	}
	return s != "" && utf8.ValidString(s)
}

// thSuggest returns the candidate closest to s by edit distance, or "" when
// none is close enough to be a likely typo. Ties go to the longer common
// prefix, then to the nearer trailing number, so that p98 suggests p99
// rather than p90.
func thSuggest(s string, cands []string) string {
	limit := 1
	switch n := utf8.RuneCountInString(s); {
	case n > 8:
		limit = 3
	case n > 4:
		limit = 2
	}
	best, bestKey := "", [3]int{limit + 1, 0, 0}
	for _, cand := range cands {
		d := keyDistance(s, cand)
		if d > limit {
			continue
		}
		key := [3]int{d, -thCommonPrefix(s, cand), thNumberGap(s, cand)}
		if best == "" || thLess(key, bestKey) {
			best, bestKey = cand, key
		}
	}
	return best
}

func thLess(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func thCommonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// thNumberGap is the distance between the trailing numbers of a and b
// (98 and 99 → 1), large when either has none.
func thNumberGap(a, b string) int {
	tail := func(s string) (int, bool) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		if i == len(s) || len(s)-i > 9 {
			return 0, false
		}
		n, err := strconv.Atoi(s[i:])
		return n, err == nil
	}
	x, ok1 := tail(a)
	y, ok2 := tail(b)
	if !ok1 || !ok2 {
		return math.MaxInt32
	}
	if x > y {
		return x - y
	}
	return y - x
}

// Duration literals.
//
// expr has no duration literals (it reads 10ms as a malformed number), so
// before parsing, every number+unit token outside string literals and
// comments is rewritten into a call of expr's duration builtin:
// 10ms → duration("10ms"). The segments of the rewrite are kept so that a
// column in the rewritten text maps back to the user's text.

const (
	thDurPrefix = `duration("`
	thDurSuffix = `")`
)

// thDurUnits are Go's duration units, longest first so that "ms" wins over
// "m". Both micro signs are accepted, as time.ParseDuration does.
var thDurUnits = []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}

// thSegment is one rewritten literal: source bytes and runes [srcX, srcXEnd)
// became runes [outRune, outRuneEnd) of the output.
type thSegment struct {
	srcByte, srcByteEnd int
	srcRune, srcRuneEnd int
	outRune, outRuneEnd int
}

// thRewrite is the result of rewriting one expression.
type thRewrite struct {
	out      string
	srcRunes int // rune count of the source, as expr's lexer counts
	segs     []thSegment
}

// rewriteDurations rewrites the duration literals of src. It mirrors expr's
// lexer (strings with escapes, raw strings with doubled backticks, //
// and /* */ comments, identifiers, numbers, #pointers, "..", "?.") just
// enough to know where a number starts, so that p99, groups.g1.p99 and
// "10ms" are left alone. Offsets count runes the way expr does: each byte
// of invalid UTF-8 is one rune. It never fails: what it cannot read it
// copies, and expr reports the problem.
func rewriteDurations(src string) thRewrite {
	var rw thRewrite
	var out strings.Builder
	outRunes := 0
	i, r := 0, 0       // byte and rune offsets in src
	copied, cr := 0, 0 // src copied to out up to this byte / rune
	at := func(b int) (rune, int) {
		if b >= len(src) {
			return -1, 0
		}
		return utf8.DecodeRuneInString(src[b:])
	}
	adv := func() { // one rune forward, never past the end
		if _, w := at(i); w > 0 {
			i += w
			r++
		}
	}
	for i < len(src) {
		c, w := at(i)
		next, _ := at(i + w)
		switch {
		case c == '"' || c == '\'':
			adv()
			for i < len(src) {
				d, _ := at(i)
				if d == c || d == '\n' {
					adv()
					break
				}
				if d == '\\' {
					adv()
				}
				adv()
			}
		case c == '`':
			adv()
			for i < len(src) {
				d, _ := at(i)
				adv()
				if d == '`' {
					if e, _ := at(i); e == '`' {
						adv()
						continue
					}
					break
				}
			}
		case c == '/' && next == '/':
			for i < len(src) {
				d, _ := at(i)
				adv()
				if d == '\n' {
					break
				}
			}
		case c == '/' && next == '*':
			adv()
			adv()
			for i < len(src) {
				d, _ := at(i)
				adv()
				if e, _ := at(i); d == '*' && e == '/' {
					adv()
					break
				}
			}
		case c == '#':
			adv()
			if d, _ := at(i); d == '#' {
				adv()
			}
			thSkipAlnum(src, &i, &r)
		case c == '?':
			adv()
			if d, _ := at(i); d == '.' || d == '?' {
				adv()
			}
		case c == '.' && next == '.':
			adv()
			adv()
		case c >= '0' && c <= '9' || c == '.' && next >= '0' && next <= '9':
			endB, endR, ok := thMatchDuration(src, i, r)
			if !ok {
				thSkipNumber(src, &i, &r)
				break
			}
			out.WriteString(src[copied:i])
			outRunes += r - cr
			seg := thSegment{srcByte: i, srcByteEnd: endB, srcRune: r, srcRuneEnd: endR, outRune: outRunes}
			out.WriteString(thDurPrefix)
			out.WriteString(src[i:endB])
			out.WriteString(thDurSuffix)
			outRunes += len(thDurPrefix) + (endR - r) + len(thDurSuffix)
			seg.outRuneEnd = outRunes
			rw.segs = append(rw.segs, seg)
			i, r = endB, endR
			copied, cr = i, r
		case c != utf8.RuneError && thIsAlnum(c):
			thSkipAlnum(src, &i, &r)
		default:
			adv()
		}
	}
	out.WriteString(src[copied:])
	rw.out = out.String()
	rw.srcRunes = r
	return rw
}

// thMatchDuration matches (number unit)+ at byte i (rune r), where a number
// is digits with an optional fraction, or a bare fraction (.5), and the
// literal must not run on into an identifier character (10msx is not a
// duration). It returns the end offsets.
func thMatchDuration(src string, i, r int) (endB, endR int, ok bool) {
	digits := func() int {
		n := 0
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
			r++
			n++
		}
		return n
	}
	for {
		n := digits()
		if i+1 < len(src) && src[i] == '.' && src[i+1] >= '0' && src[i+1] <= '9' {
			i++
			r++
			n += digits()
		}
		if n == 0 {
			return 0, 0, false
		}
		unit := ""
		for _, u := range thDurUnits {
			if strings.HasPrefix(src[i:], u) {
				unit = u
				break
			}
		}
		if unit == "" {
			return 0, 0, false
		}
		i += len(unit)
		r += utf8.RuneCountInString(unit)
		if i < len(src) && src[i] >= '0' && src[i] <= '9' ||
			i+1 < len(src) && src[i] == '.' && src[i+1] >= '0' && src[i+1] <= '9' {
			continue // 1m30s, 1h0.5m, 1s.5s
		}
		if d, _ := utf8.DecodeRuneInString(src[i:]); i < len(src) && d != utf8.RuneError && thIsAlnum(d) {
			return 0, 0, false
		}
		return i, r, true
	}
}

// thSkipNumber skips a number that is not a duration the way expr's lexer
// reads it (0x1F, 1_000, 1.5e3), then any identifier characters stuck to it
// (1e3s), which expr rejects as a bad number anyway.
func thSkipNumber(src string, i, r *int) {
	if src[*i] == '.' {
		*i++
		*r++
	}
	for *i < len(src) {
		c := src[*i]
		switch {
		case c >= '0' && c <= '9' || c == '_':
		case c == '.' && *i+1 < len(src) && src[*i+1] >= '0' && src[*i+1] <= '9':
		case c == 'e' || c == 'E':
			if *i+1 < len(src) && (src[*i+1] == '+' || src[*i+1] == '-') {
				*i++
				*r++
			}
		default:
			d, _ := utf8.DecodeRuneInString(src[*i:])
			if d == utf8.RuneError || !thIsAlnum(d) {
				return
			}
			thSkipAlnum(src, i, r)
			return
		}
		*i++
		*r++
	}
}

// thSkipAlnum skips identifier characters (expr's IsAlphaNumeric).
func thSkipAlnum(src string, i, r *int) {
	for *i < len(src) {
		d, w := utf8.DecodeRuneInString(src[*i:])
		if d == utf8.RuneError || !thIsAlnum(d) {
			return
		}
		*i += w
		*r++
	}
}

// thIsAlnum is expr's identifier character class.
func thIsAlnum(c rune) bool {
	return c == '_' || c == '$' || unicode.IsLetter(c) || unicode.IsDigit(c)
}

// thIsUnit reports whether s is a duration unit, for the "10 ms" hint.
func thIsUnit(s string) bool {
	for _, u := range thDurUnits {
		if s == u {
			return true
		}
	}
	return false
}

// srcOffset maps a rune offset in the rewritten text back to the user's
// text. An offset inside a rewritten literal maps into the literal (the
// duration(" prefix to its first rune, the ") suffix to its last); the
// result is always within [0, srcRunes], srcRunes being where "unexpected
// end of expression" points.
func (rw *thRewrite) srcOffset(out int) int {
	delta := 0
	for _, s := range rw.segs {
		if out < s.outRune {
			break
		}
		if out < s.outRuneEnd {
			k := out - s.outRune - len(thDurPrefix)
			switch {
			case k < 0:
				return s.srcRune
			case k >= s.srcRuneEnd-s.srcRune:
				return s.srcRuneEnd - 1
			}
			return s.srcRune + k
		}
		delta = s.srcRuneEnd - s.outRuneEnd
	}
	return min(max(out+delta, 0), rw.srcRunes)
}
