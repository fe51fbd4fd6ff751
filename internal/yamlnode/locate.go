package yamlnode

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SyntaxError is a YAML syntax error pinned to the character at fault.
type SyntaxError struct {
	// Line and Col are 1-based; Col counts characters, not bytes, as an
	// editor does.
	Line, Col int
	// Msg is yaml.v3's message without its "yaml: line N: " prefix, e.g.
	// "did not find expected ',' or ']'".
	Msg string
}

// Error is the message with its position, as line:col: msg; callers that
// have a file name build their own positioned message from the fields.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg)
}

// maxLocateBytes bounds the inputs whose syntax errors are located by
// parsing prefixes (see Locate); plans are a few kilobytes.
const maxLocateBytes = 256 << 10

// yamlLineRE matches the prefix of yaml.v3 syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// Message returns the text of err, an error from [Parse], without
// yaml.v3's "yaml: " or "yaml: line N: " prefix: the line is
// approximate, and a caller that shows a position gets it from [Locate].
func Message(err error) string {
	msg, _ := splitMessage(err.Error())
	return msg
}

// splitMessage splits a yaml.v3 error text into its message and the line
// yaml.v3 reported (0 if none).
func splitMessage(full string) (msg string, reported int) {
	m := yamlLineRE.FindStringSubmatch(full)
	if m == nil {
		return full, 0
	}
	if m[1] != "" {
		reported, _ = strconv.Atoi(m[1])
	}
	return full[len(m[0]):], reported
}

// Locate pins err, the error [Parse] returned for data, to a line and
// column of data.
//
// yaml.v3 reports only a line, and not reliably: for parser errors (as
// opposed to scanner errors) it prints a 0-based line, sometimes the line
// where the enclosing block began rather than the one at fault. So the
// position is found by parsing prefixes of data: the shortest prefix that
// fails with the same message ends at the offending character. It costs a
// few dozen parses of an input that is already known to be broken; past
// maxLocateBytes it settles for yaml.v3's line.
func Locate(data []byte, err error) *SyntaxError {
	msg, reported := splitMessage(err.Error())
	line, col := locate(data, msg, reported)
	return &SyntaxError{Line: line, Col: col, Msg: msg}
}

// locate returns the 1-based line and column of the syntax error msg in
// data; reported is yaml.v3's own line, the fallback.
func locate(data []byte, msg string, reported int) (line, col int) {
	if len(data) > maxLocateBytes {
		// Each probe parses a prefix again: past this size, settle for
		// yaml.v3's line rather than seconds of parsing.
		line = max(reported, 1)
		lines := bytes.Split(data, []byte("\n"))
		if line > len(lines) {
			line = len(lines)
		}
		return line, FirstNonBlankCol(lines[line-1])
	}
	fails := func(n int) bool {
		_, err := Parse(data[:n], 2)
		if err == nil {
			return false
		}
		s, _ := splitMessage(err.Error())
		return s == msg
	}
	// ends[i] is the offset just past line i+1 (its newline included).
	var ends []int
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	// yaml.v3's line is usually right, or one short for parser errors:
	// try those first, and search only if neither is where the failure
	// starts.
	li := -1
	for _, c := range []int{reported - 1, reported} {
		if c >= 0 && c < len(ends) && fails(ends[c]) && (c == 0 || !fails(ends[c-1])) {
			li = c
			break
		}
	}
	if li < 0 {
		li = sort.Search(len(ends), func(i int) bool { return fails(ends[i]) })
	}
	if li == len(ends) {
		// The prefixes disagree with the whole input (it can happen when
		// a message depends on what follows): trust yaml.v3's line.
		li = min(max(reported, 1), len(ends)) - 1
		start := lineStart(ends, li)
		return li + 1, FirstNonBlankCol(data[start:ends[li]])
	}
	start := lineStart(ends, li)
	k := sort.Search(ends[li]-start, func(j int) bool { return fails(start + j + 1) })
	text := data[start:ends[li]]
	if k >= len(text) {
		return li + 1, FirstNonBlankCol(text)
	}
	// The parser notices a misplaced token only after reading some of it
	// (a key's ':' for instance): point at the token's first character.
	if strings.HasPrefix(msg, "did not find expected") {
		for k > 0 && !strings.ContainsRune(" \t[]{},", rune(text[k-1])) {
			k--
		}
	}
	// An unclosed [ or { is found at the end of what follows it: point
	// at the bracket itself, which is what needs fixing.
	if open := unclosedBracket(msg); open != 0 {
		if off := findUnclosed(data[:start+k], open); off >= 0 {
			ls := bytes.LastIndexByte(data[:off], '\n') + 1
			return bytes.Count(data[:off], []byte("\n")) + 1, utf8.RuneCount(data[ls:off]) + 1
		}
	}
	col = utf8.RuneCount(text[:k]) + 1
	// An unknown alias fails only once its whole name is read: point at
	// its *, where the name starts.
	if strings.HasPrefix(msg, "unknown anchor '") {
		if i := bytes.LastIndexByte(text[:k+1], '*'); i >= 0 {
			col = utf8.RuneCount(text[:i]) + 1
		}
	}
	return li + 1, col
}

// unclosedBracket returns the bracket a yaml.v3 message says is not
// closed, or 0.
func unclosedBracket(msg string) byte {
	switch msg {
	case "did not find expected ',' or ']'":
		return '['
	case "did not find expected ',' or '}'":
		return '{'
	}
	return 0
}

// findUnclosed returns the offset of the last open bracket in data that
// is not closed before its end, skipping quoted text and comments
// roughly; -1 if there is none.
func findUnclosed(data []byte, open byte) int {
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	var stack []int
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" \t\n[{,:", data[i-1]) >= 0):
			// A quote opens a quoted scalar only where a token starts,
			// not inside plain text like don't.
			quote = c
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == open:
			stack = append(stack, i)
		case c == closing && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return -1
	}
	return stack[len(stack)-1]
}

// lineStart is the offset where line i (0-based) starts, given the line
// ends of locate.
func lineStart(ends []int, i int) int {
	if i == 0 {
		return 0
	}
	return ends[i-1]
}

// FirstNonBlankCol is the 1-based column (in characters) of the first
// character of line that is not a space or tab, or 1 for a blank line:
// where an editor's cursor should land when only the line is known.
func FirstNonBlankCol(line []byte) int {
	for i, r := range string(line) {
		if r != ' ' && r != '\t' {
			return utf8.RuneCountInString(string(line[:i])) + 1
		}
	}
	return 1
}
