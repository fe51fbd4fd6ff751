package threshold

import (
	"strings"

	"github.com/expr-lang/expr/ast"
)

// Every way to pass must read this run.
//
// A threshold that reads this run somewhere can still pass whatever this
// run measured when one of its alternatives does not: p99 > 1h or
// baseline.p99 >= 0ms, p99 > 1h or 0 < 1. So the checker looks at the
// expression as the alternatives that can make it true (the branches of
// or, each side of not (a and b), each way through ? :, each way a == b of
// two conditions can hold) and refuses the first alternative whose every
// condition reads nothing of this run: only constants, only the baseline,
// or a literal true or false (a literal is refused even where it could
// only fail, as in p99 < 10ms or false: it is never what was meant). An
// alternative that combines a constant with a comparison of this run
// (p99 < 10ms and 1 < 2) is accepted: it still depends on this run. The
// rule is syntactic: a comparison of this run that always holds
// (p99 >= 0ms) is beyond it.

// cond is one condition of an alternative: a comparison or a literal as
// written, wanted true, or false when negated.
type cond struct {
	n       ast.Node
	negated bool
}

// constAlt returns an alternative of the boolean node n (a way for n to be
// want) made only of conditions that read nothing of this run, or nil
// when every alternative reads this run. The checker has type-checked n.
func (c *checker) constAlt(n ast.Node, want bool) []cond {
	// Memoised: a == b and ? : look at their operands both ways, which
	// nested would take exponential time.
	key := altKey{n, want}
	if a, ok := c.alts[key]; ok {
		return a
	}
	if c.alts == nil {
		c.alts = map[altKey][]cond{}
	}
	a := c.constAltOf(n, want)
	c.alts[key] = a
	return a
}

// altKey is a node wanted true or false.
type altKey struct {
	n    ast.Node
	want bool
}

// constAltOf is constAlt without the memo.
func (c *checker) constAltOf(n ast.Node, want bool) []cond {
	switch m := n.(type) {
	case *ast.UnaryNode:
		if m.Operator == "not" || m.Operator == "!" {
			return c.constAlt(m.Node, !want)
		}
	case *ast.BinaryNode:
		switch m.Operator {
		case "or", "||", "and", "&&":
			// a or b is true when either is, false when both are false;
			// a and b the other way round.
			if (m.Operator == "or" || m.Operator == "||") == want {
				if a := c.constAlt(m.Left, want); a != nil {
					return a
				}
				return c.constAlt(m.Right, want)
			}
			return both(c.constAlt(m.Left, want), c.constAlt(m.Right, want))
		case "==", "!=":
			if !c.boolEq[m] {
				break
			}
			// Two conditions are equal when both hold or both fail.
			same := (m.Operator == "==") == want
			if a := both(c.constAlt(m.Left, true), c.constAlt(m.Right, same)); a != nil {
				return a
			}
			return both(c.constAlt(m.Left, false), c.constAlt(m.Right, !same))
		}
	case *ast.ConditionalNode:
		if a := both(c.constAlt(m.Cond, true), c.constAlt(m.Exp1, want)); a != nil {
			return a
		}
		return both(c.constAlt(m.Cond, false), c.constAlt(m.Exp2, want))
	case *ast.BoolNode:
		return []cond{{n: n, negated: !want}}
	}
	if c.constValue(n) {
		return []cond{{n: n, negated: !want}}
	}
	return nil
}

// constValue reports whether a comparison, or a number or duration, has
// a way to be computed without reading this run: it holds no metric of
// this run, or one branch of a ? : in it holds none
// ((baseline.p99 > 1ms ? p99 : 0ms) < 10ms).
func (c *checker) constValue(n ast.Node) bool {
	switch m := n.(type) {
	case *ast.IdentifierNode:
		return m.Value == BaselineRoot
	case *ast.MemberNode:
		return c.constValue(m.Node)
	case *ast.ChainNode:
		return c.constValue(m.Node)
	case *ast.UnaryNode:
		return c.constValue(m.Node)
	case *ast.BinaryNode:
		return c.constValue(m.Left) && c.constValue(m.Right)
	case *ast.ConditionalNode:
		return c.constAlt(m.Cond, true) != nil && c.constValue(m.Exp1) ||
			c.constAlt(m.Cond, false) != nil && c.constValue(m.Exp2)
	}
	// Literals and duration("10ms").
	return true
}

// both is the alternative made of a and b, when each is one (nil when
// either side reads this run).
func both(a, b []cond) []cond {
	if a == nil || b == nil {
		return nil
	}
	return append(a[:len(a):len(a)], b...)
}

// checkAlternatives refuses the threshold when one of its ways to pass
// reads nothing of this run, naming that way and pointing at it.
func (c *checker) checkAlternatives(root ast.Node) *Error {
	alt := c.constAlt(root, true)
	if alt == nil {
		return nil
	}
	texts := make([]string, len(alt))
	for i, a := range alt {
		t := c.span(a.n)
		if a.negated {
			t = "not (" + t + ")"
		}
		texts[i] = t
	}
	return c.errAt(c.rw.srcOffset(start(alt[0].n)),
		"the alternative %q reads nothing of this run (only constants or the baseline), so the threshold could pass whatever this run measures; make every alternative compare this run, like p99 <= baseline.p99 * 1.10",
		strings.Join(texts, " and "))
}

// span is the text of a node as the user wrote it, with the parentheses
// that its operands need to stand alone.
func (c *checker) span(n ast.Node) string {
	end := 0
	ast.Walk(&n, endVisitor{&end})
	runes := []rune(c.src)
	from, to := c.rw.srcOffset(start(n)), c.rw.srcEnd(end)
	from, to = max(0, min(from, len(runes))), max(0, min(to, len(runes)))
	if from >= to {
		return strings.TrimSpace(c.src)
	}
	// Widen over the parentheses cut at either end ((a + b) < c starts at a).
	for {
		open, unclosed := parenBalance(runes[from:to])
		switch {
		case open > 0 && from > 0 && strings.ContainsRune("( \t\r\n", runes[from-1]):
			from--
		case unclosed > 0 && to < len(runes) && strings.ContainsRune(") \t\r\n", runes[to]):
			to++
		case open > 0 || unclosed > 0:
			return strings.TrimSpace(c.src)
		default:
			return strings.TrimSpace(string(runes[from:to]))
		}
	}
}

// parenBalance counts the closing parentheses of text that close nothing
// in it and the opening ones left unclosed.
func parenBalance(text []rune) (open, unclosed int) {
	for _, r := range text {
		switch r {
		case '(':
			unclosed++
		case ')':
			if unclosed > 0 {
				unclosed--
			} else {
				open++
			}
		}
	}
	return open, unclosed
}

// srcEnd maps the end of a node in the rewritten text (exclusive) back to
// the user's text: an end within a rewritten literal (its string's, its
// call's) is the literal's end.
func (rw *rewrite) srcEnd(out int) int {
	for _, s := range rw.segs {
		if out > s.outRune && out <= s.outRuneEnd {
			return s.srcRuneEnd
		}
	}
	return rw.srcOffset(out)
}
