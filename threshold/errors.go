package threshold

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"

	"github.com/mqplan/mqplan/internal/bytesize"
	"github.com/mqplan/mqplan/metric"
)

// Error is one problem with an expression, at a position within it. The
// caller knows where the expression is written (a plan line, the command
// line) and adds Line and Col to that position; Error itself names the
// column of the expression, for a caller with no position.
type Error struct {
	// Offset is the rune offset of the culprit from the expression's
	// start, counting runes as expr's lexer does (each byte of invalid
	// UTF-8 is one); it is at most the expression's length, which is where
	// "unexpected end of expression" points.
	Offset int
	// Line is the number of newlines before Offset: an expression written
	// as a YAML block spans lines.
	Line int
	// Col is the culprit's rune offset within its line (Offset when Line
	// is 0).
	Col int
	// Msg says what is wrong and what to write instead, on one line.
	Msg string
}

// Error is the message with the column of the expression it points at.
func (e *Error) Error() string {
	return fmt.Sprintf("%s (at column %d of the expression)", e.Msg, e.Offset+1)
}

// errAt builds an error at a rune offset in the user's expression,
// counting the lines before it so that a caller can place an expression
// that spans lines (a YAML | block, whose lines all start at the first
// line's column).
func (c *checker) errAt(offset int, format string, args ...any) *Error {
	e := &Error{Offset: offset, Col: offset, Msg: cleanMessage(fmt.Sprintf(format, args...))}
	i := 0
	for _, r := range c.src {
		if i >= offset {
			break
		}
		i++
		if r == '\n' {
			e.Line++
			e.Col = offset - i
		}
	}
	return e
}

// fail records the first error of the walk, at an offset in the rewritten text.
func (c *checker) fail(outRune int, format string, args ...any) typ {
	if c.err == nil {
		c.err = c.errAt(c.rw.srcOffset(outRune), format, args...)
	}
	return typ{kind: kindInvalid}
}

// cleanMessage keeps a message on one line: expr appends a source
// snippet after a newline, and user text may contain newlines.
func cleanMessage(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.ReplaceAll(s, "\r", " "))
}

// errorMessage takes the bare message of an expr error (its Error()
// appends "(line:col)" and a snippet, which point into the rewritten text).
func errorMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}

var (
	unexpectedRe = regexp.MustCompile(`^unexpected token (\w+)\((".*")\)$`)
	typeWordRe   = regexp.MustCompile(`\b(time\.Duration|float64|int|bool)\b`)
	typeWordMap  = map[string]string{"time.Duration": "duration", "float64": "number", "int": "number", "bool": "condition"}
)

// exprError converts an error from expr's parser, checker or compiler into
// ours, mapping its column back through the rewrite and rewording the
// messages a user is likely to meet.
func (c *checker) exprError(err error) *Error {
	msg := errorMessage(err)
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
			msg = "bad number " + tok + "; " + literalHint(tok)
		}
		at = c.rw.srcOffset(from)
	}
	switch {
	case msg == "unexpected token EOF":
		msg = "unexpected end of expression"
	case strings.HasPrefix(msg, "expected bool, but got "):
		msg = "the threshold must be a condition (true or false), but it is a " +
			typeWords(strings.TrimPrefix(msg, "expected bool, but got "))
	case unexpectedRe.MatchString(msg):
		sm := unexpectedRe.FindStringSubmatch(msg)
		tok, qerr := strconv.Unquote(sm[2])
		if qerr != nil {
			tok = sm[2]
		}
		msg = fmt.Sprintf("unexpected %q", tok)
		if sm[1] == "Identifier" && c.digitBefore(at) {
			switch {
			case isUnit(tok):
				msg += "; write a duration without a space, e.g. 10ms"
			case bytesize.IsUnit(tok):
				msg += "; write a size without a space, e.g. 2GiB"
			}
		}
	default:
		msg = typeWords(msg)
	}
	return c.errAt(at, "%s", msg)
}

// literalHint says how literals are written, for a number that runs into
// letters: the size forms when the letters start like a size unit (2G,
// 10K, 5M: GB or GiB meant), else the duration forms (10x, 1e3s).
func literalHint(tok string) string {
	q, err := strconv.Unquote(tok)
	if err != nil {
		q = tok
	}
	i := strings.IndexFunc(q, unicode.IsLetter)
	if i >= 0 {
		// m alone is a minute (1mx): only mb and mi start a size.
		if u := q[i:]; strings.ContainsRune("KkGgMBb", rune(u[0])) || strings.HasPrefix(u, "mb") || strings.HasPrefix(u, "mi") {
			return "sizes are written like 512B, 10KB (10×1000 bytes) or 2GiB (2×1024³ bytes)"
		}
	}
	return "durations are written like 10ms, 1.5s or 1m30s"
}

// typeWords replaces Go type names in expr's messages with the words of
// the plan format (duration, number, condition).
func typeWords(msg string) string {
	return typeWordRe.ReplaceAllStringFunc(msg, func(w string) string { return typeWordMap[w] })
}

// digitBefore reports whether the user's text has a digit, then spaces,
// just before rune offset at: "10 ms".
func (c *checker) digitBefore(at int) bool {
	runes := []rune(c.src)
	if at > len(runes) {
		return false
	}
	i := at - 1
	for i >= 0 && unicode.IsSpace(runes[i]) {
		i--
	}
	return i >= 0 && i < at-1 && runes[i] >= '0' && runes[i] <= '9'
}

// notACondition explains a threshold that is a value rather than a
// condition, with a comparison that would make sense for its kind.
func notACondition(t typ) string {
	if t.metric == nil {
		return "the threshold must be a condition (true or false), but it is " + t.describe()
	}
	example := " > 0"
	kind := t.metric.Kind.String()
	switch {
	case t.metric.Unit == metric.Bytes:
		example, kind = " < 1GiB", "size"
	case t.metric.Kind == metric.Duration:
		example = " < 10ms"
	case t.metric.Kind == metric.Rate:
		example = " >= 100"
	case t.metric.Kind == metric.Fraction:
		example = " < 0.01"
	}
	return fmt.Sprintf("%s is a %s, not a condition; compare it, e.g. %s%s", t.spelled, kind, t.spelled, example)
}

// numberLiteral returns the text of a (possibly signed) number literal.
func numberLiteral(n ast.Node) (string, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return strconv.Itoa(n.Value), true
	case *ast.FloatNode:
		return strconv.FormatFloat(n.Value, 'f', -1, 64), true
	case *ast.UnaryNode:
		if n.Operator == "-" || n.Operator == "+" {
			if s, ok := numberLiteral(n.Node); ok {
				return n.Operator + s, true
			}
		}
	}
	return "", false
}

// describe names a type for messages: "p99 (a duration)" or "a number".
func (t typ) describe() string {
	var what string
	switch t.kind {
	case kindInt, kindFloat:
		what = "a number"
		if t.reads {
			// sent + received_bytes: not a constant that may stand for
			// bytes beside a size.
			what = "a number computed from metrics"
		}
	case kindDuration:
		what = "a duration"
	case kindBool:
		what = "a condition"
	case kindBytes:
		what = "a size"
	default:
		what = "an invalid value"
	}
	if t.metric != nil {
		if t.metric.Unit == metric.Bytes {
			return fmt.Sprintf("%s (a size)", t.spelled)
		}
		return fmt.Sprintf("%s (a %s)", t.spelled, t.metric.Kind)
	}
	if t.size != "" {
		return "the size " + t.size
	}
	return what
}

// sizeMessage words why a size literal is not a size (bytesize.Parse's
// error names the text quoted, as a plan value; here it is the literal).
func sizeMessage(lit string, err error) string {
	msg := err.Error()
	switch {
	case strings.HasSuffix(msg, "is not a whole number of bytes"):
		return fmt.Sprintf("size %s is not a whole number of bytes", lit)
	case strings.HasSuffix(msg, "is too large"), strings.HasSuffix(msg, "has too many digits"):
		return fmt.Sprintf("size %s is out of range", lit)
	}
	return fmt.Sprintf("size %s: %s", lit, msg)
}
