package threshold

import (
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"

	"github.com/mqplan/mqplan/metric"
)

// checker holds the state of compiling one expression: it walks expr's
// syntax tree of the rewritten text, accepts only the subset described in
// the package doc, resolves metric names (recording Reads in order of
// first use) and type-checks with messages that say what to write.
type checker struct {
	env   *Env
	src   string
	rw    rewrite
	reads []Ref
	err   *Error
	// scaled are the multiplications of a duration by a fraction
	// (baseline.p99 * 1.10), by their location in the rewritten text:
	// compile turns each into scaleFunc, which keeps the duration type.
	scaled []scaledAt
	// boolEq are the == and != that compare two conditions, for
	// constAlt; alts is constAlt's memo.
	boolEq map[*ast.BinaryNode]bool
	alts   map[altKey][]cond
	// renamed are the stage names written as an index (stages[0],
	// stages["0"]), by the location of the index: compile turns each
	// into the stage's name, the key its metrics are under.
	renamed []renamedAt
	// bounds are the comparisons of a bare metric with a number
	// (Threshold.Bounds).
	bounds []Bound
	// aliased are the family aliases written (e2e.p99), for aliasPatch.
	aliased []aliasedAt
}

// scaledAt is one duration × fraction: where, and which side is the
// duration.
type scaledAt struct {
	at           file.Location
	durationLeft bool
}

// typ is the static type of a sub-expression in the walk.
type typ struct {
	kind kind
	// metric is the catalogue entry when the sub-expression is a bare
	// metric name, for messages ("p99 is a duration").
	metric *metric.Metric
	// spelled is the metric as written, for messages.
	spelled string
	// ref is the metric read when the sub-expression is a bare metric
	// name, for Threshold.Bounds.
	ref *Ref
	// reads says the sub-expression's value comes from a metric: a number
	// that does not (1000, 2 * 1024, sent > 0 ? 5 : 0) may stand for bytes
	// beside a size, one that does (sent, recv_rate * 2) may not, since it
	// counts something else.
	reads bool
	// size is the literal as written when the sub-expression is a size
	// literal (2GiB), for messages.
	size string
	// percent is the percentage as written (0.1%) when the
	// sub-expression is one, for percentCompare.
	percent string
	// literal says a size literal takes part in the sub-expression. One
	// that has none is typed as before size literals existed, when a
	// byte metric was a count: received_bytes >= received * 1000 ran
	// then and runs still (see legacyBytes).
	literal bool
}

// legacyBytes reports whether l and r are a byte metric (or arithmetic on
// one) and a number, with no size literal on either side: thresholds
// written before size literals mixed them freely, and the plan format is
// changed additively only. Once a size literal takes part, sizes go with
// sizes and constant numbers only.
func legacyBytes(l, r typ) bool {
	if l.literal || r.literal {
		return false
	}
	return l.kind == kindBytes && r.kind.numeric() || l.kind.numeric() && r.kind == kindBytes
}

// kind is what a sub-expression evaluates to.
type kind int

const (
	kindInvalid kind = iota
	kindInt
	kindFloat
	kindDuration
	kindBool
	// kindBytes is a size: a size literal (2GiB) or a metric whose unit
	// is metric.Bytes (broker.rss.max). Its value is a number of bytes.
	kindBytes
)

func (k kind) numeric() bool { return k == kindInt || k == kindFloat }

// constNumber reports whether t is a number that reads no metric, which
// goes with a size as a number of bytes (broker.rss.max < 2000000000, as
// thresholds were written before size literals).
func (t typ) constNumber() bool { return t.kind.numeric() && !t.reads }

// bytesLike reports whether t goes with a size: a size, or a constant
// number of bytes.
func (t typ) bytesLike() bool { return t.kind == kindBytes || t.constNumber() }

// walk checks one node and returns its type; the first problem is kept in
// c.err and every later call returns at once.
func (c *checker) walk(n ast.Node) typ {
	if c.err != nil {
		return typ{}
	}
	switch n := n.(type) {
	case *ast.IntegerNode:
		if seg, ok := c.sizeAt(n.Location().From); ok {
			return typ{kind: kindBytes, size: c.src[seg.srcByte:seg.srcByteEnd], literal: true}
		}
		return typ{kind: kindInt}
	case *ast.FloatNode:
		pct, _ := c.percentAt(n.Location().From)
		return typ{kind: kindFloat, percent: pct}
	case *ast.BoolNode:
		return typ{kind: kindBool}
	case *ast.NilNode:
		return c.fail(n.Location().From, "nil is not supported: a metric without samples already fails its threshold")
	case *ast.StringNode:
		if _, err := time.ParseDuration(n.Value); err == nil {
			return c.fail(n.Location().From, "write a duration without quotes: %s", n.Value)
		}
		if end, ok := matchSize(n.Value, 0); ok && end == len(n.Value) {
			return c.fail(n.Location().From, "write a size without quotes: %s", n.Value)
		}
		return c.fail(n.Location().From, "text %q cannot be compared; thresholds compare numbers, durations and sizes", n.Value)
	case *ast.IdentifierNode, *ast.MemberNode, *ast.ChainNode:
		return c.metric(n)
	case *ast.UnaryNode:
		return c.unary(n)
	case *ast.BinaryNode:
		return c.binary(n)
	case *ast.ConditionalNode:
		cond := c.walk(n.Cond)
		if c.err == nil && cond.kind != kindBool {
			return c.fail(start(n.Cond), "the condition of ? : must be true or false, not %s", cond.describe())
		}
		a, b := c.walk(n.Exp1), c.walk(n.Exp2)
		if c.err != nil {
			return typ{}
		}
		// The value is a branch's: (sent > 0 ? 1GiB : 0) is a size.
		reads, literal := a.reads || b.reads, a.literal || b.literal
		switch {
		case a.kind.numeric() && b.kind.numeric():
			if a.kind == kindFloat || b.kind == kindFloat {
				return typ{kind: kindFloat, reads: reads}
			}
			return typ{kind: kindInt, reads: reads}
		case a.kind == b.kind:
			return typ{kind: a.kind, reads: reads, literal: literal}
		case a.kind == kindBytes && b.bytesLike() || b.kind == kindBytes && a.bytesLike():
			return typ{kind: kindBytes, reads: reads, literal: literal}
		}
		return c.fail(start(n.Exp2), "both branches of ? : must have the same type, not %s and %s", a.describe(), b.describe())
	case *ast.BuiltinNode:
		if n.Name != "duration" {
			return c.fail(n.Location().From, "function %s is not supported in thresholds", n.Name)
		}
		if len(n.Arguments) != 1 {
			return c.fail(n.Location().From, "duration takes one argument, such as duration(\"10ms\")")
		}
		s, ok := n.Arguments[0].(*ast.StringNode)
		if !ok {
			return c.fail(start(n.Arguments[0]), "duration needs a quoted literal, such as duration(\"10ms\")")
		}
		if _, err := time.ParseDuration(s.Value); err != nil {
			return c.fail(s.Location().From, "invalid duration %q", s.Value)
		}
		return typ{kind: kindDuration}
	case *ast.CallNode:
		if alias, arg, ok := k6Call(n); ok {
			return c.fail(n.Location().From, "%s", k6Message(alias, arg, "", ""))
		}
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

func (c *checker) unary(n *ast.UnaryNode) typ {
	t := c.walk(n.Node)
	if c.err != nil {
		return typ{}
	}
	switch n.Operator {
	case "not", "!":
		if t.kind != kindBool {
			return c.fail(start(n.Node), "%s needs a condition, not %s", n.Operator, t.describe())
		}
		return typ{kind: kindBool, reads: t.reads}
	case "-", "+":
		if t.kind.numeric() || t.kind == kindBytes {
			return typ{kind: t.kind, reads: t.reads, literal: t.literal}
		}
		return c.fail(n.Location().From, "unary %s needs a number, not %s", n.Operator, t.describe())
	}
	return c.fail(n.Location().From, "operator %s is not supported in thresholds", n.Operator)
}

// binaryOps are the binary operators thresholds accept; expr's others
// (in, matches, contains, .., ??, |) work on strings, lists and nil.
var binaryOps = map[string]bool{
	"and": true, "&&": true, "or": true, "||": true,
	"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true,
	"+": true, "-": true, "*": true, "/": true, "%": true, "**": true, "^": true,
}

func (c *checker) binary(n *ast.BinaryNode) typ {
	if !binaryOps[n.Operator] {
		return c.fail(n.Location().From, "operator %s is not supported in thresholds", n.Operator)
	}
	if _, ok := flipped[n.Operator]; ok {
		if t, k6 := c.k6Compare(n); k6 {
			return t
		}
	}
	l := c.walk(n.Left)
	r := c.walk(n.Right)
	if c.err != nil {
		return typ{}
	}
	if _, ok := flipped[n.Operator]; ok {
		if t, bad := c.percentCompare(n, l, r); bad {
			return t
		}
	}
	t := c.binaryType(n, l, r)
	if c.err == nil {
		c.noteBound(n, l, r)
	}
	t.reads = l.reads || r.reads
	t.literal = l.literal || r.literal
	return t
}

// binaryType is the type of a binary operation on operands of types l
// and r, or the failure that explains why they do not go together.
func (c *checker) binaryType(n *ast.BinaryNode, l, r typ) typ {
	op := n.Operator
	sizes := l.kind == kindBytes || r.kind == kindBytes
	numeric := l.kind.numeric() && r.kind.numeric()
	promoted := typ{kind: kindInt}
	if l.kind == kindFloat || r.kind == kindFloat {
		promoted.kind = kindFloat
	}
	switch op {
	case "and", "&&", "or", "||":
		if l.kind != kindBool {
			return c.fail(start(n.Left), "%s needs conditions on both sides, but the left is %s", op, l.describe())
		}
		if r.kind != kindBool {
			return c.fail(start(n.Right), "%s needs conditions on both sides, but the right is %s", op, r.describe())
		}
		return typ{kind: kindBool}
	case "==", "!=", "<", "<=", ">", ">=":
		if sizes && (l.bytesLike() && r.bytesLike() || legacyBytes(l, r)) {
			return typ{kind: kindBool}
		}
		if numeric || l.kind == kindDuration && r.kind == kindDuration ||
			(op == "==" || op == "!=") && l.kind == kindBool && r.kind == kindBool {
			if l.kind == kindBool {
				if c.boolEq == nil {
					c.boolEq = map[*ast.BinaryNode]bool{}
				}
				c.boolEq[n] = true
			}
			return typ{kind: kindBool}
		}
		return c.mismatch(n, l, r, "compare")
	case "+", "-":
		if numeric {
			return promoted
		}
		if sizes && l.bytesLike() && r.bytesLike() {
			return typ{kind: kindBytes}
		}
		if legacyBytes(l, r) {
			// A byte count plus a count is a count, as it always was.
			return promoted
		}
		if l.kind == kindDuration && r.kind == kindDuration {
			return typ{kind: kindDuration}
		}
		return c.mismatch(n, l, r, map[string]string{"+": "add", "-": "subtract"}[op])
	case "*":
		if numeric {
			return promoted
		}
		// A size times any number is a size: 100KB * broker.clients.max.
		if l.kind == kindBytes && r.kind.numeric() || l.kind.numeric() && r.kind == kindBytes {
			return typ{kind: kindBytes}
		}
		if l.kind == kindBytes && r.kind == kindBytes {
			return c.fail(n.Location().From, "a size can only be multiplied by a number, not by another size")
		}
		// expr multiplies a duration by an integer exactly; by a float it
		// would yield a float at run time while its checker says
		// duration, so that case becomes scaleFunc (see compile), which
		// rounds to the nanosecond and keeps the duration type:
		// p99 <= baseline.p99 * 1.10 compares two durations.
		if l.kind == kindDuration && r.kind == kindInt || l.kind == kindInt && r.kind == kindDuration {
			return typ{kind: kindDuration}
		}
		if l.kind == kindDuration && r.kind == kindFloat || l.kind == kindFloat && r.kind == kindDuration {
			c.scaled = append(c.scaled, scaledAt{at: n.Location(), durationLeft: l.kind == kindDuration})
			return typ{kind: kindDuration}
		}
		if l.kind == kindDuration || r.kind == kindDuration {
			return c.fail(n.Location().From, "a duration can only be multiplied by a number")
		}
		return c.mismatch(n, l, r, "multiply")
	case "/":
		if numeric {
			return typ{kind: kindFloat}
		}
		switch {
		case l.kind == kindBytes && r.kind.numeric():
			// received_bytes / received: bytes per message, a size.
			return typ{kind: kindBytes}
		case l.kind == kindBytes && r.kind == kindBytes:
			// broker.rss.max / baseline.broker.rss.max: a ratio.
			return typ{kind: kindFloat}
		case l.kind.numeric() && r.kind == kindBytes:
			return c.fail(n.Location().From, "a number cannot be divided by a size; divide the size by the number instead")
		}
		if l.kind == kindDuration || r.kind == kindDuration {
			return c.fail(n.Location().From, "durations cannot be divided; compare against a scaled duration instead (p99 < 2 * p50)")
		}
		return c.mismatch(n, l, r, "divide")
	case "%":
		if l.kind == kindInt && r.kind == kindInt || legacyBytes(l, r) && l.kind != kindFloat && r.kind != kindFloat {
			return typ{kind: kindInt}
		}
		return c.fail(n.Location().From, "%% needs two whole numbers, not %s and %s", l.describe(), r.describe())
	case "**", "^":
		if numeric {
			return typ{kind: kindFloat}
		}
		return c.mismatch(n, l, r, "raise")
	}
	return c.fail(n.Location().From, "operator %s is not supported in thresholds", op) // unreachable: binaryOps
}

// mismatch reports operands that do not go together. A duration against a
// number literal is the common slip (p99 < 10): the message points at the
// number and suggests writing its unit. A size literal against anything
// but a size (sent < 2GiB) points at the size and names the metrics it
// goes with.
func (c *checker) mismatch(n *ast.BinaryNode, l, r typ, verb string) typ {
	for _, side := range []struct {
		size, other typ
		sizeNode    ast.Node
	}{{l, r, n.Left}, {r, l, n.Right}} {
		if side.size.kind != kindBytes || side.other.kind == kindBytes {
			continue
		}
		if side.size.size != "" {
			return c.fail(start(side.sizeNode), "cannot %s %s with the size %s; sizes go with byte metrics (%s) and numbers",
				verb, side.other.describe(), side.size.size, byteMetrics)
		}
		if side.other.kind.numeric() && side.other.reads {
			return c.fail(n.Location().From, "cannot %s %s with %s, which is not a number of bytes; divide the size by it instead, e.g. broker.rss.max / broker.clients.max < 100KB",
				verb, side.size.describe(), side.other.describe())
		}
	}
	for _, side := range []struct {
		dur, num  typ
		numNode   ast.Node
		durIsLeft bool
	}{{l, r, n.Right, true}, {r, l, n.Left, false}} {
		if side.dur.kind != kindDuration || !side.num.kind.numeric() {
			continue
		}
		if lit, ok := numberLiteral(side.numNode); ok {
			return c.fail(start(side.numNode), "cannot %s %s with the bare number %s; give it a unit, e.g. %sms",
				verb, side.dur.describe(), lit, lit)
		}
	}
	return c.fail(n.Location().From, "cannot %s %s with %s", verb, l.describe(), r.describe())
}

// start is the offset of a node's first token: the location expr gives a
// binary node is its operator's, but a message about an operand should
// point at the operand.
func start(n ast.Node) int {
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

// part is one segment of a metric name as written: groups, sub, p99.
type part struct {
	name string
	at   int // rune offset in the rewritten text
	// index: written as an integer (stages[0]); loc is where, for the
	// stage scope to name it.
	index bool
	loc   file.Location
}

// metric resolves an identifier or member chain to a catalogue metric in a
// scope, records it in Reads and returns its type.
func (c *checker) metric(n ast.Node) typ {
	parts, ok := c.chain(n)
	if !ok {
		return typ{}
	}
	ref := Ref{}
	if parts[0].name == BaselineRoot {
		if len(parts) == 1 {
			return c.fail(parts[0].at, "%s needs a metric, e.g. %s.p99 (the baseline run's, from --baseline FILE)", BaselineRoot, BaselineRoot)
		}
		ref.Baseline = true
		parts = parts[1:]
	}
	rest := parts
	switch root := parts[0]; root.name {
	case "$env":
		return c.fail(root.at, "$env is not supported: name metrics directly")
	case string(Stages):
		name, ok := c.stage(parts)
		if !ok {
			return typ{}
		}
		ref.Scope, ref.Name = Stages, name
		rest = parts[2:]
	case string(Groups), string(Phases):
		what, known, list := "group", c.env.groupSet, c.env.groups
		if root.name == string(Phases) {
			what, known, list = "phase", c.env.phaseSet, c.env.phases
		}
		if len(parts) > 1 && parts[1].index {
			return c.fail(parts[1].at, "a %s is named, not numbered: write %s%s", what, root.name, memberSyntax(exampleOr(list, "sub")))
		}
		example := "sub"
		if len(list) > 0 {
			example = list[0]
		}
		if len(parts) == 1 {
			return c.fail(root.at, "%s needs a %s name and a metric, e.g. %s%s.p99", root.name, what, root.name, memberSyntax(example))
		}
		name := parts[1]
		if !known[name.name] {
			return c.fail(name.at, "%s", unknownName(what, name.name, list))
		}
		if len(parts) == 2 {
			return c.fail(name.at, "%s%s needs a metric, e.g. %s%s.p99", root.name, memberSyntax(name.name), root.name, memberSyntax(name.name))
		}
		ref.Scope, ref.Name = Scope(root.name), name.name
		rest = parts[2:]
	}
	md, ok := c.resolve(rest, ref.Scope != Top)
	if !ok {
		return typ{}
	}
	if md.WholeRun && ref.Scope != Top {
		// The broker's and mqplan's processes and the broker's own
		// counters are not split by group or phase: scoped, the metric
		// could only fail "no samples" after the run was paid for.
		bare := md.Name
		if ref.Baseline {
			bare = BaselineRoot + "." + bare
		}
		return c.fail(rest[0].at, "%s is a whole-run figure, not measured per %s: write %s, without %s%s.",
			md.Name, map[Scope]string{Groups: "group", Phases: "phase", Stages: "stage"}[ref.Scope], bare, ref.Scope, scopeMember(ref.Scope, ref.Name))
	}
	if ref.Scope == Stages && ShardSplit(md.Name) {
		return c.fail(rest[0].at, "%s is not measured per stage: a stage's latency is not split by shard; write %s for the whole run, or %s%s.latency.* for the stage's latency of every delivery",
			md.Name, md.Name, ref.Scope, scopeMember(ref.Scope, ref.Name))
	}
	if ref.Scope == Stages && !StageMetric(md.Name) {
		return c.fail(rest[0].at, "%s is not measured per stage (a stage counts the messages intended in its window: %s)", md.Name, stageMetricList())
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
	if ref.Scope == Top {
		spelled = strings.Join(names, ".")
	} else {
		spelled = string(ref.Scope) + scopeMember(ref.Scope, ref.Name) + "." + strings.Join(names[2:], ".")
	}
	if ref.Baseline {
		spelled = BaselineRoot + "." + spelled
	}
	t := typ{kind: kindInt, metric: &md, spelled: spelled, reads: true, ref: &ref}
	switch {
	case md.Unit == metric.Bytes:
		t.kind = kindBytes
	case md.Kind == metric.Rate, md.Kind == metric.Fraction:
		t.kind = kindFloat
	case md.Kind == metric.Duration:
		t.kind = kindDuration
	}
	return t
}

// chain flattens groups.sub.p99 or groups["a-b"].p99 into its parts. Only
// literal names are allowed: a computed index (groups[x]) would hide which
// metric is read from Reads and from the checker.
func (c *checker) chain(n ast.Node) ([]part, bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		return []part{{name: n.Value, at: n.Location().From, loc: n.Location()}}, true
	case *ast.MemberNode:
		if n.Optional {
			c.fail(n.Location().From, "?. is not supported: a metric name either exists or is an error")
			return nil, false
		}
		base, ok := c.chain(n.Node)
		if !ok {
			return nil, false
		}
		if ix, ok := n.Property.(*ast.IntegerNode); ok {
			// stages[0]: a stage by its index (metric picks the scope).
			return append(base, part{name: strconv.Itoa(ix.Value), at: ix.Location().From, index: true, loc: ix.Location()}), true
		}
		prop, ok := n.Property.(*ast.StringNode)
		if !ok {
			c.fail(start(n.Property), "a name in [...] must be a quoted literal, such as groups[\"my-group\"] (or a stage's index, stages[0])")
			return nil, false
		}
		return append(base, part{name: prop.Value, at: prop.Location().From, loc: prop.Location()}), true
	case *ast.ChainNode:
		return c.chain(n.Node)
	}
	if c.err == nil {
		c.walk(n) // report what the base is, or why it is refused
	}
	c.fail(start(n), "only metric names have fields")
	return nil, false
}

// resolve finds the metric named by parts (within a scope when scoped),
// or fails with the closest name there is.
func (c *checker) resolve(parts []part, scoped bool) (metric.Metric, bool) {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	full := strings.Join(names, ".")
	first := parts[0]
	if md, ok := metric.Lookup(full); ok {
		c.noteFamily(first)
		return md, true
	}
	if members := metric.Members(first.name); members != nil {
		if len(parts) == 1 {
			c.fail(first.at, "%s is a family of metrics; name one of %s.{%s}", first.name, first.name, strings.Join(members, ","))
			return metric.Metric{}, false
		}
		member := first.name + "." + parts[1].name
		if _, ok := metric.Lookup(member); ok {
			c.fail(parts[2].at, "unknown metric %q: %s has no fields", full, member)
			return metric.Metric{}, false
		}
		// A family nested one level deeper (broker.cpu.max): broker.cpu
		// alone names a family, broker.cpu.mx is judged whole.
		if deeper := deeperMembers(member); deeper != nil {
			if len(parts) == 2 {
				c.fail(parts[1].at, "%s is a family of metrics; name one of %s.{%s}", member, member, strings.Join(deeper, ","))
				return metric.Metric{}, false
			}
			last := parts[len(parts)-1]
			cands := make([]string, len(deeper))
			for i, s := range deeper {
				cands[i] = member + "." + s
			}
			if s := suggestName(full, cands); s != "" {
				c.fail(last.at, "unknown metric %q; did you mean %q?", full, s)
			} else {
				c.fail(last.at, "unknown metric %q (%s.*: %s)", full, member, strings.Join(deeper, ", "))
			}
			return metric.Metric{}, false
		}
		cands := make([]string, len(members))
		for i, s := range members {
			cands[i] = first.name + "." + s
		}
		if s := suggestName(member, cands); s != "" {
			c.fail(parts[1].at, "unknown metric %q; did you mean %q?", member, s)
		} else {
			c.fail(parts[1].at, "unknown metric %q (%s.*: %s)", member, first.name, strings.Join(members, ", "))
		}
		return metric.Metric{}, false
	}
	if _, ok := metric.Lookup(first.name); ok && len(parts) > 1 {
		c.fail(parts[1].at, "unknown metric %q: %s has no fields", full, first.name)
		return metric.Metric{}, false
	}
	cands := allNames
	if !scoped {
		cands = append(cands[:len(cands):len(cands)], string(Groups), string(Phases), string(Stages))
	}
	if s := suggestName(full, cands); s != "" {
		c.fail(first.at, "unknown metric %q; did you mean %q?", full, s)
	} else if hint := unknownHint(parts); hint != "" {
		c.fail(first.at, "%s", hint)
	} else if scoped {
		c.fail(first.at, "unknown metric %q (metrics: %s)", full, topList)
	} else {
		c.fail(first.at, "unknown metric %q (metrics: %s, groups.<name>.*, phases.<name>.*, stages.<name>.*)", full, topList)
	}
	return metric.Metric{}, false
}

// deeperMembers lists the last parts of the metrics named prefix.<x>
// (broker.cpu → max, mean), or nil when prefix is not a nested family.
func deeperMembers(prefix string) []string {
	var out []string
	for _, md := range metric.All() {
		if rest, ok := strings.CutPrefix(string(md.Name), prefix+"."); ok && !strings.Contains(rest, ".") {
			out = append(out, rest)
		}
	}
	return out
}

// sizeAt finds the size literal the rewrite put at rune offset at of the
// rewritten text (where expr's integer node starts), if any.
func (c *checker) sizeAt(at int) (segment, bool) {
	for _, s := range c.rw.segs {
		if s.size && s.outRune == at {
			return s, true
		}
	}
	return segment{}, false
}

// byteMetrics lists the metrics a size compares with, for messages.
var byteMetrics = func() string {
	var names []string
	for _, md := range metric.All() {
		if md.Unit == metric.Bytes {
			names = append(names, string(md.Name))
		}
	}
	return strings.Join(names, ", ")
}()
