package threshold

import (
	"github.com/expr-lang/expr/ast"
)

// Bound is one comparison of a metric with a constant number, as written
// in groups.sub.recv_rate >= 190 or 10000 < sent. A bound on a figure
// that grows with the load (a rate, a count of messages) holds at one
// load and not at another whatever the system under test does, which is
// what mqplan find-max, varying the load, must warn about; the compiled
// threshold lists its bounds so that a caller can tell without parsing
// the expression again.
type Bound struct {
	// Ref is the metric compared; Value the constant it is compared with
	// (a size literal in bytes).
	Ref   Ref
	Value float64
	// Op is the comparison read with the metric on the left: 190 < sent
	// is sent > 190.
	Op string
	// Text is the comparison as written.
	Text string
}

// Bounds lists the comparisons of a bare metric with a constant number,
// in the order written. Comparisons of a computed value (sent / 2 > 10),
// of two metrics, or with a duration are not bounds.
func (t *Threshold) Bounds() []Bound { return t.bounds }

// noteBound records n as a Bound when one side is a bare metric of this
// run and the other a number literal.
func (c *checker) noteBound(n *ast.BinaryNode, l, r typ) {
	switch n.Operator {
	case "==", "!=", "<", "<=", ">", ">=":
	default:
		return
	}
	m, other, op := l, n.Right, n.Operator
	if l.ref == nil {
		m, other, op = r, n.Left, flipped[op]
	}
	if m.ref == nil || m.ref.Baseline {
		return
	}
	v, ok := numberValue(other)
	if !ok {
		return
	}
	c.bounds = append(c.bounds, Bound{Ref: *m.ref, Value: v, Op: op, Text: c.span(n)})
}

// flipped is each comparison with its operands swapped.
var flipped = map[string]string{"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// numberValue is the value of a number literal, negative or not.
func numberValue(n ast.Node) (float64, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return float64(n.Value), true
	case *ast.FloatNode:
		return n.Value, true
	case *ast.UnaryNode:
		if v, ok := numberValue(n.Node); ok {
			switch n.Operator {
			case "-":
				return -v, true
			case "+":
				return v, true
			}
		}
	}
	return 0, false
}
