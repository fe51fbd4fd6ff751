package threshold

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"

	"github.com/mqplan/mqplan/metric"
)

// The habits of neighbouring tools, answered: what a user of k6 or of
// mqplan's own tables writes first, and what to write here instead (or,
// where the meaning is plain, accepted as written).
//
//   - k6's percentile function, p(99) < 50: refused with the threshold to
//     write, p99 < 50ms (k6 reads a bare number as milliseconds; here a
//     duration carries its unit).
//   - k6's aggregations avg, med, min and max: refused naming the metric.
//   - The report's latency table calls end-to-end latency e2e: e2e.p99 is
//     latency.p99 (metric.Family), renamed by aliasPatch before expr
//     compiles.
//   - The tables print shares as percentages: 0.1% is the number 0.001
//     (see matchPercent), and compares with shares (metric.Fraction) only.

// k6Percentiles are the percentiles p(N) maps to, by k6's argument.
var k6Percentiles = map[string]string{"50": "p50", "90": "p90", "95": "p95", "99": "p99", "99.9": "p999"}

// k6Aggregations are k6's trend aggregations a threshold may name bare,
// and the metric that means the same here.
var k6Aggregations = map[string]string{"avg": "latency.mean", "med": "p50", "min": "latency.min", "max": "latency.max"}

// k6Call reports whether n is k6's p(N), and the alias p(N) stands for
// ("" when mqplan has no such percentile).
func k6Call(n ast.Node) (alias, arg string, ok bool) {
	call, isCall := n.(*ast.CallNode)
	if !isCall {
		return "", "", false
	}
	id, isID := call.Callee.(*ast.IdentifierNode)
	if !isID || id.Value != "p" || len(call.Arguments) != 1 {
		return "", "", false
	}
	arg, isNum := numberLiteral(call.Arguments[0])
	if !isNum {
		return "", "", false
	}
	return k6Percentiles[arg], arg, true
}

// k6Message is the answer to p(N): the threshold to write instead,
// example being the comparison's other side as it should be written
// ("50ms"), "" when there is none to show.
func k6Message(alias, arg, op, example string) string {
	if alias == "" {
		return fmt.Sprintf("p(%s) is k6's percentile function; here the latency percentiles are metrics: p50, p90, p95, p99 and p999 (latency.*, ack.*, rtt.*)", arg)
	}
	if op == "" || example == "" {
		op, example = "<", "50ms"
	}
	return fmt.Sprintf("p(%s) is k6's percentile function; write %s here: %s %s %s", arg, alias, alias, op, example)
}

// k6Compare answers a comparison with k6's p(N) on one side, giving the
// threshold rewritten: p(99) < 50 → p99 < 50ms (k6's bare numbers are
// milliseconds). ok is false when neither side is p(N).
func (c *checker) k6Compare(n *ast.BinaryNode) (typ, bool) {
	call, other, op := n.Left, n.Right, n.Operator
	alias, arg, ok := k6Call(call)
	if !ok {
		call, other, op = n.Right, n.Left, flipped[op]
		if alias, arg, ok = k6Call(call); !ok {
			return typ{}, false
		}
	}
	example := ""
	if lit, isNum := numberLiteral(other); isNum {
		example = lit + "ms"
	} else if b, isDur := other.(*ast.BuiltinNode); isDur && b.Name == "duration" && len(b.Arguments) == 1 {
		if s, isStr := b.Arguments[0].(*ast.StringNode); isStr {
			example = s.Value
		}
	}
	return c.fail(call.Location().From, "%s", k6Message(alias, arg, op, example)), true
}

// aliasedAt is one family alias written in a threshold (e2e in
// e2e.p99): where it is in the rewritten text, and the family it names.
type aliasedAt struct {
	at     file.Location
	family string
}

// noteFamily records a family alias written as the first part of a
// resolved metric name, for aliasPatch.
func (c *checker) noteFamily(p part) {
	if fam, ok := metric.Family(p.name); ok && fam != p.name {
		c.aliased = append(c.aliased, aliasedAt{at: p.loc, family: fam})
	}
}

// aliasPatch renames each family alias the checker resolved to its
// family (expr's ast.Visitor), so that e2e.p99 reads latency.p99, the
// key Eval puts the value under.
type aliasPatch struct{ at []aliasedAt }

// Visit patches one node.
func (p *aliasPatch) Visit(node *ast.Node) {
	for _, a := range p.at {
		if a.at != (*node).Location() {
			continue
		}
		switch (*node).(type) {
		case *ast.IdentifierNode:
			ast.Patch(node, &ast.IdentifierNode{Value: a.family})
		case *ast.StringNode:
			ast.Patch(node, &ast.StringNode{Value: a.family})
		}
		return
	}
}

// unknownHint is a hint for an unknown top-level name that no edit
// distance reaches: k6's aggregations, and a name whose last part is a
// metric (foo.p99 → p99). "" when there is none.
func unknownHint(parts []part) string {
	full := make([]string, len(parts))
	for i, p := range parts {
		full[i] = p.name
	}
	if len(parts) == 1 {
		if m, ok := k6Aggregations[parts[0].name]; ok {
			return fmt.Sprintf("unknown metric %q: k6's %s is %s here", parts[0].name, parts[0].name, m)
		}
		return ""
	}
	last := parts[len(parts)-1].name
	if _, ok := metric.Lookup(last); ok {
		return fmt.Sprintf("unknown metric %q; did you mean %q?", strings.Join(full, "."), last)
	}
	return ""
}

// percentCompare refuses a percentage compared with a metric that is not
// a share: 0.1% is 0.001, which means nothing beside a rate (send_rate is
// messages per second) or a figure already in percent (self.cpu.max is a
// percent of one core). ok is false when the comparison is fine.
func (c *checker) percentCompare(n *ast.BinaryNode, l, r typ) (typ, bool) {
	pct, other, at := l, r, n.Left
	if pct.percent == "" {
		pct, other, at = r, l, n.Right
	}
	if pct.percent == "" || other.metric == nil || other.metric.Kind == metric.Fraction {
		return typ{}, false
	}
	if strings.Contains(other.metric.Help, "percent") {
		num := strings.TrimSuffix(pct.percent, "%")
		return c.fail(start(at), "%s is already in percent: write the number without %%, e.g. %s %s %s", other.spelled, other.spelled, n.Operator, num), true
	}
	return c.fail(start(at), "%s is a share (%s = %s) and compares with shares such as loss_rate, dup_rate, ooo_rate or late_rate, not with %s",
		pct.percent, pct.percent, shiftPercent(strings.TrimSuffix(pct.percent, "%")), other.describe()), true
}

// matchPercent matches a percentage at byte i: digits with an optional
// fraction, then % with, after any spaces, the end of the expression or
// what may follow an operand (a closing bracket, a comparison, and, or,
// && or ||, ? or :). Anything else after % is expr's modulo (10%3,
// sent % 2 == 0), left alone. It returns the end of the percentage, %
// included.
func matchPercent(src string, i int) (end int, ok bool) {
	j := i
	for j < len(src) && src[j] >= '0' && src[j] <= '9' {
		j++
	}
	if j+1 < len(src) && src[j] == '.' && src[j+1] >= '0' && src[j+1] <= '9' {
		j++
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
	}
	if j == i || !percentAt(src, j) {
		return 0, false
	}
	return j + 1, true
}

// percentAt reports whether src has at byte j a % that ends a
// percentage: what follows it (see matchPercent) may follow an operand.
func percentAt(src string, j int) bool {
	if j >= len(src) || src[j] != '%' {
		return false
	}
	end := j + 1
	rest := strings.TrimLeft(src[end:], " \t\r\n")
	spaced := len(rest) < len(src[end:]) // and, or: a word apart from the %
	switch {
	case rest == "", strings.ContainsRune(")],?:<>=", rune(rest[0])),
		strings.HasPrefix(rest, "!="), strings.HasPrefix(rest, "&&"), strings.HasPrefix(rest, "||"),
		spaced && (isWord(rest, "and") || isWord(rest, "or")):
		return true
	}
	return false
}

// isWord reports whether s starts with the word w, not a longer name.
func isWord(s, w string) bool {
	if !strings.HasPrefix(s, w) {
		return false
	}
	if len(s) == len(w) {
		return true
	}
	r := rune(s[len(w)])
	return !isAlnum(r)
}

// shiftPercent divides a decimal number by 100 in its text, exactly (no
// float rounding: 0.1 → 0.001), always with a point so that expr reads a
// float.
func shiftPercent(num string) string {
	intPart, frac, _ := strings.Cut(num, ".")
	digits := intPart + frac
	point := len(intPart) - 2
	var out string
	if point <= 0 {
		out = "0." + strings.Repeat("0", -point) + digits
	} else {
		out = digits[:point] + "." + digits[point:]
	}
	out = strings.TrimRight(out, "0")
	whole, _, _ := strings.Cut(out, ".")
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	rest := out[strings.IndexByte(out, '.'):]
	if rest == "." {
		rest = ".0"
	}
	return whole + rest
}

// percentAt finds the percentage the rewrite put at rune offset at of
// the rewritten text (where expr's float node starts), if any.
func (c *checker) percentAt(at int) (string, bool) {
	for _, s := range c.rw.segs {
		if s.percent && s.outRune == at {
			return c.src[s.srcByte:s.srcByteEnd], true
		}
	}
	return "", false
}

// p999Hint answers the latency table's column name p99.9 written in a
// threshold (e2e.p99.9), which expr reads as p99 followed by .9.
func p999Hint(src string) (int, string, bool) {
	i := strings.Index(src, "p99.9")
	if i < 0 {
		return 0, "", false
	}
	if end := i + len("p99.9"); end < len(src) && src[end] >= '0' && src[end] <= '9' {
		return 0, "", false
	}
	return len([]rune(src[:i])), "write p999 for the 99.9th percentile (the table's p99.9 column): e.g. " + strconv.Quote(strings.Replace(strings.TrimSpace(src), "p99.9", "p999", 1)), true
}
